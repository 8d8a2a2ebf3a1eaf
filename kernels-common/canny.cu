// edges: Canny as OpenCV computes it (see crates/ops/src/edges/mod.rs for the exact rules), and
// the optional Gaussian blur. Every kernel of stages 1-3 mirrors the CPU backend's arithmetic step
// for step, and hysteresis finds the same set by another route, so the two give identical edges.
#include "histopipe.cuh"

#define CANNY_NONE 0
#define CANNY_WEAK 1
#define CANNY_STRONG 2
#define CANNY_TG22 13573

// v clamped to 0..n-1. Coordinates are formed in 64 bits: a frame may be more than 2^31 pixels
// wide (one row), where x + t - r overflows an int.
__device__ __forceinline__ u32 clampi(i64 v, u32 n) { return v < 0 ? 0u : (v >= (i64)n ? n - 1 : (u32)v); }

// Horizontal pass: f32 products summed in tap order from 0.0f (no FMA: --fmad=false).
extern "C" __global__ void gauss_rows(const u8* __restrict__ in, u32 w, u32 h, const float* __restrict__ k,
                                      u32 r, float* __restrict__ tmp) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        const u8* row = in + (u64)y * w;
        float acc = 0.0f;
        for (u32 t = 0; t <= 2 * r; t++) acc = acc + k[t] * (float)row[clampi((i64)x + t - r, w)];
        tmp[i] = acc;
    }
}

extern "C" __global__ void gauss_cols(const float* __restrict__ tmp, u32 w, u32 h, const float* __restrict__ k,
                                      u32 r, u8* __restrict__ out) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        float acc = 0.0f;
        for (u32 t = 0; t <= 2 * r; t++) acc = acc + k[t] * tmp[(u64)clampi((i64)y + t - r, h) * w + x];
        int v = __float2int_rn(acc);
        out[i] = (u8)(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
}


// Stages 1-3 fused, and hysteresis within the tile: each block loads its CANNY_TW x CANNY_TH tile
// of the input with a two-pixel halo (coordinates clamped: BORDER_REPLICATE) into shared memory,
// computes the magnitudes of the tile and a one-pixel halo there (0 outside the frame), then
// suppresses and thresholds each pixel of the tile, recomputing its gradient from shared memory
// (only where m > low, the only place the direction matters). Each warp's 32 classified pixels are
// one word of the tile's kept and strong bit maps (two ballots); the first warp then grows the
// strong pixels within the tile (see the hysteresis below), writes the tile's words of `kept`
// and `edge` and labels the weak pixels of the tile's ring for the union-find across tiles. Per
// pixel the arithmetic is the CPU backend's.
// Blocks are 32 x 8 threads; thread (tx, ty) handles columns tx + 32 j and rows ty + 8 i, so a
// warp touches 32 consecutive bytes (one sector) and 32 consecutive shared words (no conflicts).
// The grid is one-dimensional, tiles in frame order (see canny_tile): a tall frame has more tile
// rows than a grid's y dimension (65535) allows.
#define CANNY_TW 128
#define CANNY_TH 16
#define CANNY_BX 32
#define CANNY_BY 8

// The origin of this block's tile. Both are below the frame's size, so x0 + a tile's width fits
// in 64 bits but not always in 32 (a frame one row high may be 2^32 - 2 pixels wide).
__device__ __forceinline__ void canny_tile(u32 w, u32* x0, u32* y0) {
    const u32 across = (w - 1) / CANNY_TW + 1;
    *x0 = (blockIdx.x % across) * CANNY_TW;
    *y0 = (blockIdx.x / across) * CANNY_TH;
}

__device__ __forceinline__ void canny_sobel(const u8 (*in)[CANNY_TW + 4], int lx, int ly, int& dx, int& dy) {
    // (lx, ly) is the pixel's place in `in`, whose origin is two pixels up and left of the tile.
    const u8* ru = in[ly - 1];
    const u8* rc = in[ly];
    const u8* rd = in[ly + 1];
    dx = ((int)ru[lx + 1] - (int)ru[lx - 1]) + 2 * ((int)rc[lx + 1] - (int)rc[lx - 1]) +
         ((int)rd[lx + 1] - (int)rd[lx - 1]);
    dy = ((int)rd[lx - 1] - (int)ru[lx - 1]) + 2 * ((int)rd[lx] - (int)ru[lx]) + ((int)rd[lx + 1] - (int)ru[lx + 1]);
}


// Hysteresis, on bits within a tile and by union-find across tiles. The edges are exactly the kept
// pixels whose 8-connected component of kept pixels holds a strong one.
//
// The maps are bit sets, one bit per pixel, in rows of `words` = ceil(w / 32) 32-bit words (bit b
// of word j of row y is pixel x = 32 j + b; bits past the frame's width are 0): `kept` (weak or
// strong) and `edge` (E, the strong pixels grown within their tile). A tile (CANNY_TW x CANNY_TH =
// 128 x 16, four words a row, word-aligned) is held by one warp in registers: lane l holds row
// l / 2, half l % 2, as 64 bits (bit b is pixel 64 (l % 2) + b of the row). One step of canny_grow
// acts on the whole tile: E's rows ORed with those above and below, shifted one pixel left and
// right (the 8-neighbour dilation), ANDed with kept; then every run of kept pixels in a half-row
// that holds a pixel of E is filled, both ways, by carry propagation (canny_fill). A path through
// the tile costs one step per change of row, not one per pixel; the tile is iterated in registers
// until it is stable, with __any_sync for the "changed" flag (warp-synchronous: no barrier, no
// shared memory, no race). Within a tile, E is then a union of whole in-tile components.
//
// 1. canny_nms (stages 1-3 and the tiles' own hysteresis): after thresholds the first warp grows
//    the tile's strong pixels within the tile (E) and writes `kept` and `edge`. The tile's ring
//    (its first and last rows and columns) may join other tiles; of its kept pixels outside E (the
//    weak ring pixels) the warp labels each in-tile component: it grows one from its first weak ring
//    pixel (the representative) through the kept pixels outside E, and points the parent entry of
//    every weak ring pixel it reached at the representative. The elements of the union-find are
//    these pixels, numbered 1 + y w + x (`parent` has w h + 1 entries, only theirs written), and
//    element 0, STRONG, its own root, which stands for every pixel of E.
// 2. canny_union, a warp per tile: every pair of 8-adjacent kept pixels across the tile's right
//    and bottom borders (the tiles right, below-left, below and below-right; a pair above-right
//    is that tile's below-left one) with at least one outside E is united: two weak pixels with
//    each other, a weak one beside a pixel of E with STRONG. Union-find as ECL-CC: roots hooked by
//    atomicCAS, the larger index onto the smaller (so STRONG, 0, is the root of its set), finds
//    by relaxed loads with path halving by atomicCAS. No sequence of tiles is followed: a long
//    path through many tiles is joined in a few hooks, whatever the order of the warps.
// 3. canny_finish, a block per tile: the first warp reads the tile's E and, for each weak ring
//    pixel whose root is STRONG, adds it to E and grows E within the tile once more (the pixel's
//    in-tile component joins E); then the block writes 255 where E's bit is set, else 0.
// A weak pixel is an edge iff its component reaches a strong pixel, then by a path that leaves
// its in-tile component (which holds none) across a tile border: from a weak ring pixel of its
// component through pairs united in step 2 to a pixel of E. So its component's ring pixels have
// the root STRONG exactly when it is an edge, and the finish adds exactly those components.
static_assert(CANNY_TW == 128 && CANNY_TH == 16, "a tile is 16 rows of two 64-bit halves, one per lane");
#define CANNY_STRONG_ROOT 0u

// In global memory a relaxed load at GPU scope is a strong access (no data race with the atomicCAS
// of another warp) and, unlike an atomic update, needs no round trip through an atomic unit.
__device__ __forceinline__ u32 load_relaxed(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
    return v;
}

// The pixels of `kept` in a run (consecutive set bits) that holds a bit of `seeds` (a subset of
// kept) at or below them. Adding the seeds to kept carries from the lowest seed of a run up to the
// bit past its top: those bits flip, except the seeds above the lowest one (1 + 1 + carry), put
// back by the OR.
__device__ __forceinline__ u64 canny_fill(u64 kept, u64 seeds) { return (((kept + seeds) ^ kept) | seeds) & kept; }

// The growth of `edge` (a subset of `kept`), this lane's half-row of a tile (see above), through
// `kept` to a fixpoint within the tile. Every lane of the warp calls it.
__device__ u64 canny_grow(u64 kept, u64 edge) {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    for (;;) {
        u64 up = __shfl_up_sync(FULL_MASK, edge, 2), down = __shfl_down_sync(FULL_MASK, edge, 2);
        if (row == 0) up = 0;
        if (row == CANNY_TH - 1) down = 0;
        const u64 v = edge | up | down;
        // The pixels just left and right of this half: the other half's (none outside the tile).
        const u64 other = __shfl_xor_sync(FULL_MASK, v, 1);
        const u64 left = half ? other >> 63 : 0;
        const u64 right = half ? 0 : other & 1;
        const u64 seeds = edge | ((v | v << 1 | v >> 1 | left | right << 63) & kept);
        const u64 grown = canny_fill(kept, seeds) | __brevll(canny_fill(__brevll(kept), __brevll(seeds)));
        if (!__any_sync(FULL_MASK, grown != edge)) return edge;
        edge = grown;
    }
}

// This lane's pixels of the tile's ring: all of rows 0 and CANNY_TH - 1, the first column (bit 0
// of half 0) and the last (bit 63 of half 1).
__device__ __forceinline__ u64 canny_ring() {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    if (row == 0 || row == CANNY_TH - 1) return ~0ull;
    return half ? 1ull << 63 : 1ull;
}

// The union-find element of pixel (x, y): 1 + y w + x (at most w h < 2^32).
__device__ __forceinline__ u32 canny_element(u64 x, u64 y, u32 w) { return (u32)(1 + y * w + x); }

// The root of x's set, halving the path on the way (a parent only ever moves to an ancestor, so a
// failed atomicCAS loses nothing).
__device__ u32 canny_find(u32* parent, u32 x) {
    u32 p = load_relaxed(parent + x);
    while (p != x) {
        const u32 g = load_relaxed(parent + p);
        if (g != p) atomicCAS(parent + x, p, g);
        x = p;
        p = g;
    }
    return x;
}

// Unites the sets of a and b: the larger root hooked onto the smaller (retried if it stopped being
// a root meanwhile).
__device__ void canny_unite(u32* parent, u32 a, u32 b) {
    for (;;) {
        a = canny_find(parent, a);
        b = canny_find(parent, b);
        if (a == b) return;
        const u32 lo = a < b ? a : b, hi = a < b ? b : a;
        if (atomicCAS(parent + hi, hi, lo) == hi) return;
        a = lo;
        b = hi;
    }
}

extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_nms(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u32 words,
              u32* __restrict__ kept_words, u32* __restrict__ edge, u32* __restrict__ parent) {
    __shared__ u8 in[CANNY_TH + 4][CANNY_TW + 4];
    __shared__ int mag[CANNY_TH + 2][CANNY_TW + 2];
    __shared__ u32 kept_bits[CANNY_TH][CANNY_TW / 32];
    __shared__ u32 strong_bits[CANNY_TH][CANNY_TW / 32];
    const int bx = threadIdx.x, by = threadIdx.y;
    u32 x0, y0;
    canny_tile(w, &x0, &y0);
    // Thread (bx, by) loads columns bx + 32 j and rows by + 8 i of `in`: the clamped frame
    // coordinates are worked out once per column and per row, in 64 bits (x0 + a column may pass
    // 2^32 on a frame one row high).
    constexpr int IN_COLS = (CANNY_TW + 4 + CANNY_BX - 1) / CANNY_BX, IN_ROWS = (CANNY_TH + 4 + CANNY_BY - 1) / CANNY_BY;
    u32 cx[IN_COLS];
#pragma unroll
    for (int j = 0; j < IN_COLS; j++) cx[j] = clampi((i64)x0 - 2 + bx + CANNY_BX * j, w);
#pragma unroll
    for (int i = 0; i < IN_ROWS; i++) {
        const int ly = by + CANNY_BY * i;
        if (ly >= CANNY_TH + 4) break;
        const u8* row = src + (u64)clampi((i64)y0 - 2 + ly, h) * w;
#pragma unroll
        for (int j = 0; j < IN_COLS; j++) {
            const int lx = bx + CANNY_BX * j;
            if (lx < CANNY_TW + 4) in[ly][lx] = row[cx[j]];
        }
    }
    __syncthreads();
    constexpr int MAG_COLS = (CANNY_TW + 2 + CANNY_BX - 1) / CANNY_BX, MAG_ROWS = (CANNY_TH + 2 + CANNY_BY - 1) / CANNY_BY;
    bool col_inside[MAG_COLS];
#pragma unroll
    for (int j = 0; j < MAG_COLS; j++) col_inside[j] = (i64)x0 - 1 + bx + CANNY_BX * j >= 0 && (i64)x0 - 1 + bx + CANNY_BX * j < (i64)w;
#pragma unroll
    for (int i = 0; i < MAG_ROWS; i++) {
        const int ly = by + CANNY_BY * i;
        if (ly >= CANNY_TH + 2) break;
        const bool row_inside = (i64)y0 - 1 + ly >= 0 && (i64)y0 - 1 + ly < (i64)h;
#pragma unroll
        for (int j = 0; j < MAG_COLS; j++) {
            const int lx = bx + CANNY_BX * j;
            if (lx >= CANNY_TW + 2) break;
            int m = 0;
            if (row_inside && col_inside[j]) {
                int dx, dy;
                canny_sobel(in, lx + 1, ly + 1, dx, dy);
                m = l2 ? dx * dx + dy * dy : abs(dx) + abs(dy);
            }
            mag[ly][lx] = m;
        }
    }
    __syncthreads();
    for (int ty = by; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = bx; tx < CANNY_TW; tx += CANNY_BX) {
            // The pixel is mag[ty + 1][tx + 1] and in[ty + 2][tx + 2].
            const int* ma = mag[ty];
            const int* mc = mag[ty + 1];
            const int* mb = mag[ty + 2];
            const int m = mc[tx + 1];
            u8 out = CANNY_NONE;
            // Outside the frame m is 0, and low >= 0: such places stay NONE.
            if (m > low) {
                int dx, dy;
                canny_sobel(in, tx + 2, ty + 2, dx, dy);
                const int ax = abs(dx), ay = abs(dy) << 15;
                const int tg22x = ax * CANNY_TG22;
                bool keep;
                if (ay < tg22x) keep = m > mc[tx] && m >= mc[tx + 2];
                else if (ay > tg22x + (ax << 16)) keep = m > ma[tx + 1] && m >= mb[tx + 1];
                else if ((dx ^ dy) < 0) keep = m > ma[tx + 2] && m > mb[tx];
                else keep = m > ma[tx] && m > mb[tx + 2];
                if (keep) out = m > high ? CANNY_STRONG : CANNY_WEAK;
            }
            // The warp's 32 pixels are word tx / 32 of row ty: lane b is bit b.
            const u32 k = __ballot_sync(FULL_MASK, out != CANNY_NONE), s = __ballot_sync(FULL_MASK, out == CANNY_STRONG);
            if (bx == 0) {
                kept_bits[ty][tx / 32] = k;
                strong_bits[ty][tx / 32] = s;
            }
        }
    }
    __syncthreads();
    // The first warp grows the strong pixels within the tile, writes the tile's words and labels
    // its weak ring pixels; the others are done (no barrier follows).
    if (by != 0) return;
    const u32 row = bx >> 1, half = bx & 1;
    const u64 kept = (u64)kept_bits[row][2 * half + 1] << 32 | kept_bits[row][2 * half];
    const u64 strong = (u64)strong_bits[row][2 * half + 1] << 32 | strong_bits[row][2 * half];
    const u64 grown = canny_grow(kept, strong);
    const u64 y = (u64)y0 + row;
    const u32 wx = x0 / 32 + 2 * half;
    if (y < h) {
        const u64 at = y * words + wx;
        if (wx < words) edge[at] = (u32)grown, kept_words[at] = (u32)kept;
        if (wx + 1 < words) edge[at + 1] = (u32)(grown >> 32), kept_words[at + 1] = (u32)(kept >> 32);
    }
    if (blockIdx.x == 0 && bx == 0) parent[CANNY_STRONG_ROOT] = CANNY_STRONG_ROOT;
    // Kept bits lie inside the frame: so do the weak ring pixels. One in-tile component at a time,
    // from the first lane's lowest pending pixel.
    const u64 weak = kept & ~grown;
    const u64 x_half = (u64)x0 + 64 * half;
    u64 pending = weak & canny_ring();
    for (;;) {
        const u32 lanes = __ballot_sync(FULL_MASK, pending != 0);
        if (!lanes) break;
        const u32 first = __ffs(lanes) - 1;
        const u64 seed = bx == first ? pending & (0 - pending) : 0;
        const u32 rep = __shfl_sync(FULL_MASK, bx == first ? canny_element(x_half + __ffsll(pending) - 1, y, w) : 0, first);
        u64 reached = canny_grow(weak, seed) & pending;
        pending &= ~reached;
        while (reached) {
            parent[canny_element(x_half + __ffsll(reached) - 1, y, w)] = rep;
            reached &= reached - 1;
        }
    }
}

// Whether pixel (x, y) of a bit map is set (plain loads: the maps are not written meanwhile).
__device__ __forceinline__ bool canny_bit(const u32* bits, u32 words, u64 x, u64 y) {
    return bits[y * words + x / 32] >> (x & 31) & 1;
}

// Unites p and q (8-adjacent, in different tiles) if both are kept and one at least is weak.
__device__ __forceinline__ void canny_pair(const u32* kept, const u32* edge, u32* parent, u32 w, u32 words, u64 px,
                                           u64 py, u64 qx, u64 qy) {
    if (!canny_bit(kept, words, px, py) || !canny_bit(kept, words, qx, qy)) return;
    const bool ep = canny_bit(edge, words, px, py), eq = canny_bit(edge, words, qx, qy);
    if (ep && eq) return;
    canny_unite(parent, ep ? CANNY_STRONG_ROOT : canny_element(px, py, w),
                eq ? CANNY_STRONG_ROOT : canny_element(qx, qy, w));
}

// Step 2 above: CANNY_UNION_WARPS warps a block, warp i of block b on tile CANNY_UNION_WARPS b + i
// (the grid covers the tiles of canny_nms). Lane l takes columns l + 32 j of the tile's last row
// (each with the three pixels below it) and, if l < CANNY_TH, row l of its last column (with the
// pixels right of it in rows l - 1 .. l + 1 of the tile). The lanes are independent: no barrier.
#define CANNY_UNION_WARPS 4
extern "C" __global__ void __launch_bounds__(32 * CANNY_UNION_WARPS)
    canny_union(u32 w, u32 h, u32 words, const u32* __restrict__ kept, const u32* __restrict__ edge, u32* parent) {
    const u32 lane = threadIdx.x & 31;
    const u32 across = (w - 1) / CANNY_TW + 1, tiles = across * ((h - 1) / CANNY_TH + 1);
    const u32 tile = blockIdx.x * CANNY_UNION_WARPS + (threadIdx.x >> 5);
    if (tile >= tiles) return;
    const u64 x0 = (u64)(tile % across) * CANNY_TW, y0 = (u64)(tile / across) * CANNY_TH;
    const u64 yb = y0 + CANNY_TH - 1, xr = x0 + CANNY_TW - 1;
    if (yb + 1 < h) {
        for (u32 j = 0; j < CANNY_TW / 32; j++) {
            const u64 x = x0 + lane + 32 * j;
            if (x >= w) break;
            if (x > 0) canny_pair(kept, edge, parent, w, words, x, yb, x - 1, yb + 1);
            canny_pair(kept, edge, parent, w, words, x, yb, x, yb + 1);
            if (x + 1 < w) canny_pair(kept, edge, parent, w, words, x, yb, x + 1, yb + 1);
        }
    }
    const u64 y = y0 + lane;
    if (xr + 1 < w && lane < CANNY_TH && y < h) {
        if (lane > 0) canny_pair(kept, edge, parent, w, words, xr, y, xr + 1, y - 1);
        canny_pair(kept, edge, parent, w, words, xr, y, xr + 1, y);
        if (lane + 1 < CANNY_TH && y + 1 < h) canny_pair(kept, edge, parent, w, words, xr, y, xr + 1, y + 1);
    }
}

// Step 3 above, a block of CANNY_BX x CANNY_BY threads per tile (the grid of canny_nms): the
// tile's final E, then 255 where its bit is set, else 0.
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_finish(u32 w, u32 h, u32 words, const u32* __restrict__ kept_words, const u32* __restrict__ edge,
                 const u32* __restrict__ parent, u8* __restrict__ out) {
    __shared__ u32 bits[CANNY_TH][CANNY_TW / 32];
    const int bx = threadIdx.x, by = threadIdx.y;
    u32 x0, y0;
    canny_tile(w, &x0, &y0);
    if (by == 0) {
        const u32 row = bx >> 1, half = bx & 1;
        const u64 y = (u64)y0 + row;
        const u32 wx = x0 / 32 + 2 * half;
        u64 kept = 0, e = 0;
        if (y < h) {
            const u64 at = y * words + wx;
            if (wx < words) kept = kept_words[at], e = edge[at];
            if (wx + 1 < words) kept |= (u64)kept_words[at + 1] << 32, e |= (u64)edge[at + 1] << 32;
        }
        // The union-find is done: plain loads (canny_find's halving needs writes, not done here).
        // A run of weak pixels in the half-row is one in-tile component, and the growth fills a
        // component from any of its pixels: the first pixel of each run is enough.
        const u64 ring_weak = kept & ~e & canny_ring();
        u64 weak = ring_weak & ~(ring_weak << 1), seeds = 0;
        const u64 x_half = (u64)x0 + 64 * half;
        while (weak) {
            const u32 b = __ffsll(weak) - 1;
            u32 x = canny_element(x_half + b, y, w), p = parent[x];
            while (p != x) x = p, p = parent[p];
            if (x == CANNY_STRONG_ROOT) seeds |= 1ull << b;
            weak &= weak - 1;
        }
        if (__any_sync(FULL_MASK, seeds != 0)) e = canny_grow(kept, e | seeds);
        bits[row][2 * half] = (u32)e;
        bits[row][2 * half + 1] = (u32)(e >> 32);
    }
    __syncthreads();
    for (int ty = by; ty < CANNY_TH; ty += CANNY_BY) {
        const u64 y = (u64)y0 + ty;
        if (y >= h) break;
        for (int tx = bx; tx < CANNY_TW; tx += CANNY_BX) {
            const u64 x = (u64)x0 + tx;
            if (x >= w) break;
            out[y * w + x] = bits[ty][tx / 32] >> (tx & 31) & 1 ? 255 : 0;
        }
    }
}
