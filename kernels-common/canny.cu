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
// Blocks are 32 x 8 threads (canny_nms), or 32 x 32 (canny_nms_tall, for a grid of one wave of
// such blocks, where the frame waits on its slowest tile: a tile's serial work is split four times
// finer); thread (tx, ty) handles columns tx + 32 j and rows ty + BY i (BY its block's rows), so a
// warp touches 32 consecutive bytes (one sector) and 32 consecutive shared words (no conflicts).
// The grid is one-dimensional, tiles in frame order (see canny_tile): a tall frame has more tile
// rows than a grid's y dimension (65535) allows.
#define CANNY_TW 128
#define CANNY_TH 16
#define CANNY_BX 32
#define CANNY_BY 8
#define CANNY_TALL_BY 32

// The origin of this block's tile. Both are below the frame's size, so x0 + a tile's width fits
// in 64 bits but not always in 32 (a frame one row high may be 2^32 - 2 pixels wide).
__device__ __forceinline__ void canny_tile_at(u32 tile, u32 w, u32* x0, u32* y0) {
    const u32 across = (w - 1) / CANNY_TW + 1;
    *x0 = (tile % across) * CANNY_TW;
    *y0 = (tile / across) * CANNY_TH;
}
__device__ __forceinline__ void canny_tile(u32 w, u32* x0, u32* y0) { canny_tile_at(blockIdx.x, w, x0, y0); }

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
//    weak ring pixels) each in-tile component is labelled: a warp grows one from a weak ring pixel
//    through the kept pixels outside E and points the parent entry of every weak ring pixel it
//    reached at the component's first (the representative); the first warp alone, one component
//    after another, or, `wide` (canny_nms_wide, canny_nms_tall), every warp of the block, two
//    components a warp: 16 at once (64 in canny_nms_tall).
//    The elements of the union-find are these pixels, numbered 1 + y w + x (`parent` has w h + 1
//    entries, only theirs written), and element 0, STRONG, its own root, which stands for every
//    pixel of E.
// 2. canny_union, a warp per tile (`wide`: a block): the pairs of 8-adjacent kept pixels across
//    the tile's right and bottom borders (the tiles right, below-left, below and below-right; a
//    pair above-right is that tile's below-left one) with at least one outside E are united, one
//    pair for any two runs that touch (canny_link): two weak pixels with each other, a weak one
//    beside a pixel of E with STRONG. Union-find as ECL-CC: roots hooked by atomicCAS, the larger
//    index onto the smaller (so STRONG, 0, is the root of its set), finds by relaxed loads with
//    path halving by atomicCAS. No sequence of tiles is followed: a long path through many tiles
//    is joined in a few hooks, whatever the order of the warps.
// 3. canny_finish, a block per tile: the roots of the tile's weak ring pixels (one a run along
//    the ring) are found (`wide`: by every thread at once); the first warp adds those whose root is
//    STRONG to E and grows E within the tile once more (their in-tile components join E); then the
//    block writes 255 where E's bit is set, else 0.
// `wide` is the host's choice for a grid of few waves, where a frame waits on its slowest tiles:
// each tile's serial work is then spread over its block (see Spread in crates/ops/src/edges/gpu.rs).
// Steps 2 and 3 are launched as dependents of the step before (launch_dependent!): each first
// waits for it (wait_for_prior_grid), and the GPU starts its blocks while that step ends.
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

// One step of the growth of `edge` (a subset of `kept`), this lane's half-row of a tile (see
// above): the 8-neighbour dilation of `edge` through `kept`, then its runs filled both ways. Every
// lane of the warp calls it.
__device__ __forceinline__ u64 canny_grow_step(u64 kept, u64 edge) {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    u64 up = __shfl_up_sync(FULL_MASK, edge, 2), down = __shfl_down_sync(FULL_MASK, edge, 2);
    if (row == 0) up = 0;
    if (row == CANNY_TH - 1) down = 0;
    const u64 v = edge | up | down;
    // The pixels just left and right of this half: the other half's (none outside the tile).
    const u64 other = __shfl_xor_sync(FULL_MASK, v, 1);
    const u64 left = half ? other >> 63 : 0;
    const u64 right = half ? 0 : other & 1;
    const u64 seeds = edge | ((v | v << 1 | v >> 1 | left | right << 63) & kept);
    return canny_fill(kept, seeds) | __brevll(canny_fill(__brevll(kept), __brevll(seeds)));
}

// The growth of `edge` (a subset of `kept`), this lane's half-row of a tile, through `kept` to a
// fixpoint within the tile. Every lane of the warp calls it.
__device__ u64 canny_grow(u64 kept, u64 edge) {
    for (;;) {
        const u64 grown = canny_grow_step(kept, edge);
        if (!__any_sync(FULL_MASK, grown != edge)) return edge;
        edge = grown;
    }
}

// Two growths through the same `kept` at once, each to its fixpoint (as canny_grow): their steps
// are independent, so the warp issues one's while the other's shuffles are in flight, and two
// growths take about the time of the longer one.
__device__ void canny_grow2(u64 kept, u64& a, u64& b) {
    for (;;) {
        const u64 ga = canny_grow_step(kept, a), gb = canny_grow_step(kept, b);
        if (!__any_sync(FULL_MASK, ga != a || gb != b)) return;
        a = ga;
        b = gb;
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

// Whether pixel (r, c) of a tile's bit map (CANNY_TH rows of CANNY_TW / 32 words) is set; none
// is outside the tile.
__device__ __forceinline__ bool canny_weak_at(const u32 (*bits)[CANNY_TW / 32], int r, int c) {
    return r >= 0 && r < CANNY_TH && c >= 0 && c < CANNY_TW && (bits[r][c / 32] >> (c & 31) & 1);
}

// The pairs canny_union joins across a border: of the 8-adjacent pairs (p, q), p at x on the
// border's line and q at x - 1, x or x + 1 on the next, where a run is a maximal stretch of kept
// pixels along a line (cut where the line crosses from one tile to another, so that a run lies in
// one in-tile component, one set of the union-find), only these: q at x - 1 if p starts its run;
// q at x if both start theirs; q at x + 1 if q starts its run. Any two runs that touch have
// exactly one such pair: with P starting at a and Q at b, q = max(b, a - 1) and p = max(a, q - 1).
struct CannyLink {
    bool before, beside, after;
};
__device__ __forceinline__ CannyLink canny_link(bool p_starts, bool q_before, bool q_beside, bool q_beside_starts,
                                                bool q_after, bool q_after_starts) {
    return {p_starts && q_before, p_starts && q_beside && q_beside_starts, q_after && q_after_starts};
}

// The n-th set bit of a warp's bit sets (lane order, then bit order; the lanes before this one hold
// `before` of them), if this lane holds it, else 0.
__device__ __forceinline__ u64 canny_nth(u64 bits, u32 before, u32 n) {
    if (n < before || n >= before + __popcll(bits)) return 0;
    for (u32 k = before; k < n; k++) bits &= bits - 1;
    return bits & (0 - bits);
}

// The labelling of canny_nms (below): `reached`, the pending pixels of the in-tile component grown
// from `seed` (one pixel of the warp), point at the component's first pending pixel if `seed` is
// that pixel; else another seed's warp labels them. Every lane of the warp calls it.
__device__ __forceinline__ void canny_label(u32* parent, u64 reached, u64 seed, u64 x_half, u64 y, u32 w) {
    const u32 first = __ffs(__ballot_sync(FULL_MASK, reached != 0)) - 1;
    const u32 seed_lane = __ffs(__ballot_sync(FULL_MASK, seed != 0)) - 1;
    const u64 lowest = __shfl_sync(FULL_MASK, reached & (0 - reached), first);
    if (first == seed_lane && lowest == __shfl_sync(FULL_MASK, seed, seed_lane)) {
        const u32 rep = __shfl_sync(FULL_MASK, canny_element(x_half + __ffsll(reached) - 1, y, w), first);
        for (u64 r = reached; r; r &= r - 1) parent[canny_element(x_half + __ffsll(r) - 1, y, w)] = rep;
    }
}

// canny_nms for blocks of CANNY_BX x BY threads, labelling `WIDE` or not (a kernel each: the
// wide rounds' registers would otherwise cost the many-wave grids' blocks their occupancy).
template <int BY, bool WIDE>
__device__ __forceinline__ void canny_nms_tile(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high,
                                               u32 words, u32* __restrict__ kept_words,
                                               u32* __restrict__ edge, u32* __restrict__ parent) {
    __shared__ u8 in[CANNY_TH + 4][CANNY_TW + 4];
    __shared__ int mag[CANNY_TH + 2][CANNY_TW + 2];
    __shared__ u32 kept_bits[CANNY_TH][CANNY_TW / 32];
    __shared__ u32 strong_bits[CANNY_TH][CANNY_TW / 32];
    const int bx = threadIdx.x, by = threadIdx.y;
    u32 x0, y0;
    canny_tile(w, &x0, &y0);
    // Thread (bx, by) loads columns bx + 32 j and rows by + BY i of `in`: the clamped frame
    // coordinates are worked out once per column and per row, in 64 bits (x0 + a column may pass
    // 2^32 on a frame one row high).
    constexpr int IN_COLS = (CANNY_TW + 4 + CANNY_BX - 1) / CANNY_BX, IN_ROWS = (CANNY_TH + 4 + BY - 1) / BY;
    u32 cx[IN_COLS];
#pragma unroll
    for (int j = 0; j < IN_COLS; j++) cx[j] = clampi((i64)x0 - 2 + bx + CANNY_BX * j, w);
#pragma unroll
    for (int i = 0; i < IN_ROWS; i++) {
        const int ly = by + BY * i;
        if (ly >= CANNY_TH + 4) break;
        const u8* row = src + (u64)clampi((i64)y0 - 2 + ly, h) * w;
#pragma unroll
        for (int j = 0; j < IN_COLS; j++) {
            const int lx = bx + CANNY_BX * j;
            if (lx < CANNY_TW + 4) in[ly][lx] = row[cx[j]];
        }
    }
    __syncthreads();
    constexpr int MAG_COLS = (CANNY_TW + 2 + CANNY_BX - 1) / CANNY_BX, MAG_ROWS = (CANNY_TH + 2 + BY - 1) / BY;
    bool col_inside[MAG_COLS];
#pragma unroll
    for (int j = 0; j < MAG_COLS; j++) col_inside[j] = (i64)x0 - 1 + bx + CANNY_BX * j >= 0 && (i64)x0 - 1 + bx + CANNY_BX * j < (i64)w;
#pragma unroll
    for (int i = 0; i < MAG_ROWS; i++) {
        const int ly = by + BY * i;
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
    for (int ty = by; ty < CANNY_TH; ty += BY) {
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
    // The first warp grows the strong pixels within the tile and writes the tile's words.
    __shared__ u64 weak_rows[32], pending_rows[32];
    __shared__ u32 any_pending;
    const u32 row = bx >> 1, half = bx & 1;
    const u64 y = (u64)y0 + row;
    const u64 x_half = (u64)x0 + 64 * half;
    u64 weak = 0, pending = 0;
    if (by == 0) {
        const u64 kept = (u64)kept_bits[row][2 * half + 1] << 32 | kept_bits[row][2 * half];
        const u64 strong = (u64)strong_bits[row][2 * half + 1] << 32 | strong_bits[row][2 * half];
        const u64 grown = canny_grow(kept, strong);
        const u32 wx = x0 / 32 + 2 * half;
        if (y < h) {
            const u64 at = y * words + wx;
            if (wx < words) edge[at] = (u32)grown, kept_words[at] = (u32)kept;
            if (wx + 1 < words) edge[at + 1] = (u32)(grown >> 32), kept_words[at + 1] = (u32)(kept >> 32);
        }
        if (blockIdx.x == 0 && bx == 0) parent[CANNY_STRONG_ROOT] = CANNY_STRONG_ROOT;
        // Kept bits lie inside the frame: so do the weak ring pixels.
        weak = kept & ~grown;
        pending = weak & canny_ring();
    }
    if (!WIDE) {
        // A grid of many waves: the first warp labels alone, one in-tile component at a time
        // from its first pending pixel, and the other warps leave their SM to the next tiles.
        if (by != 0) return;
        for (;;) {
            const u32 lanes = __ballot_sync(FULL_MASK, pending != 0);
            if (!lanes) return;
            const u32 first = __ffs(lanes) - 1;
            const u64 seed = bx == first ? pending & (0 - pending) : 0;
            const u32 rep =
                __shfl_sync(FULL_MASK, bx == first ? canny_element(x_half + __ffsll(pending) - 1, y, w) : 0, first);
            const u64 reached = canny_grow(weak, seed) & pending;
            pending &= ~reached;
            for (u64 r = reached; r; r &= r - 1) parent[canny_element(x_half + __ffsll(r) - 1, y, w)] = rep;
        }
    }
    // Wide (a grid of few waves, where the frame waits on its slowest tiles): every warp labels, in
    // rounds. A component's first pending pixel (in frame order) has no pending pixel just before
    // it in its row, nor just above it: it starts a run of them, and only such starts are seeds. In
    // each round warp i grows, at once (canny_grow2), the in-tile components of the i-th and the
    // (i + BY)-th starts through the weak pixels; the warp whose seed is its component's first
    // pending pixel (the lowest start in it: the round's seeds are the first starts in frame order)
    // points the component's pending pixels at that pixel (canny_label), and every warp takes its
    // components out of `pending`. Lane l holds row l / 2, half l % 2, as in canny_grow.
    if (by == 0) {
        weak_rows[bx] = weak;
        pending_rows[bx] = pending;
        const bool any = __any_sync(FULL_MASK, pending != 0);
        if (bx == 0) any_pending = any;
    }
    __syncthreads();
    if (!any_pending) return;
    weak = weak_rows[bx];
    for (;;) {
        pending = pending_rows[bx];
        const u64 above = __shfl_up_sync(FULL_MASK, pending, 2), beside = __shfl_xor_sync(FULL_MASK, pending, 1);
        const u64 starts = pending & ~(pending << 1) & ~(row ? above : 0) & ~(half ? beside >> 63 : 0);
        const u32 count = __popcll(starts), through = warp_scan(count);
        const u32 total = __shfl_sync(FULL_MASK, through, 31);
        // `total` is the block's: every thread read the same rows since the last barrier.
        if (total == 0) return;
        u64 reached = 0;
        if ((u32)by < total) {
            const u32 second = by + BY;
            const u64 seed_a = canny_nth(starts, through - count, by);
            const u64 seed_b = second < total ? canny_nth(starts, through - count, second) : 0;
            u64 a = seed_a, b = seed_b;
            canny_grow2(weak, a, b);
            a &= pending;
            b &= pending;
            canny_label(parent, a, seed_a, x_half, y, w);
            if (second < total) canny_label(parent, b, seed_b, x_half, y, w);
            reached = a | b;
        }
        __syncthreads();
        if (reached) atomicAnd(&pending_rows[bx], ~reached);
        __syncthreads();
    }
}
// canny_nms for a grid of many waves, canny_nms_wide for one of few (Spread::Block on the host),
// canny_nms_tall for one wave of tall blocks (Spread::TallBlock).
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_nms(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u32 words,
              u32* __restrict__ kept_words, u32* __restrict__ edge, u32* __restrict__ parent) {
    canny_nms_tile<CANNY_BY, false>(src, w, h, l2, low, high, words, kept_words, edge, parent);
}
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_nms_wide(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u32 words,
                   u32* __restrict__ kept_words, u32* __restrict__ edge, u32* __restrict__ parent) {
    canny_nms_tile<CANNY_BY, true>(src, w, h, l2, low, high, words, kept_words, edge, parent);
}
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_TALL_BY)
    canny_nms_tall(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u32 words,
                   u32* __restrict__ kept_words, u32* __restrict__ edge, u32* __restrict__ parent) {
    canny_nms_tile<CANNY_TALL_BY, true>(src, w, h, l2, low, high, words, kept_words, edge, parent);
}

// Word j of row y of a bit map, 0 outside the rows' words (plain loads: the maps are not written
// meanwhile).
__device__ __forceinline__ u32 canny_word(const u32* bits, u32 words, u64 y, i64 j) {
    return j >= 0 && j < (i64)words ? bits[y * words + j] : 0u;
}

// A pixel's kept and edge bits, from a map's words.
struct CannyPx {
    bool kept, edge;
};
__device__ __forceinline__ CannyPx canny_px(u32 kept, u32 edge, u32 bit) {
    return {(kept >> bit & 1) != 0, (edge >> bit & 1) != 0};
}

// Unites pixels p and q (8-adjacent, in different tiles) if both are kept and one at least is
// weak: a weak one by its element, one of E by STRONG.
__device__ __forceinline__ void canny_pair(u32* parent, CannyPx p, u32 pe, CannyPx q, u32 qe) {
    if (!p.kept || !q.kept || (p.edge && q.edge)) return;
    canny_unite(parent, p.edge ? CANNY_STRONG_ROOT : pe, q.edge ? CANNY_STRONG_ROOT : qe);
}

// Step 2 above, for the tile at (x0, y0): its last row's word j (lane l its column 32 j + l with
// the three pixels below it), or, with canny_union_right, its last column (lane l < CANNY_TH its row
// l with the pixels right of it in rows l - 1 .. l + 1 of the tile). Every word a lane tests is
// loaded first, all at once; then each lane makes at most three unions (whose finds are chains of
// dependent loads), each joining two runs that touch across the border (canny_link: one pair per
// two runs, a run of the border's line within this tile, of the next line within each tile it
// crosses). Lanes are independent (canny_union_right's shuffles aside: every lane calls it).
__device__ void canny_union_below(u32 w, u32 h, u32 words, const u32* kept, const u32* edge, u32* parent, u32 x0,
                                  u32 y0, int j) {
    const u32 lane = threadIdx.x & 31;
    const i64 wx = (i64)(x0 / 32);
    // Bits past the frame's width are 0 in every map: no pixel outside the frame is kept.
    const u64 yb = (u64)y0 + CANNY_TH - 1;
    if (yb + 1 >= h) return;
    const u32 kp = canny_word(kept, words, yb, wx + j), ep = canny_word(edge, words, yb, wx + j);
    const u32 kp_before = j ? canny_word(kept, words, yb, wx + j - 1) : 0;
    u32 kq[3], eq[3];
#pragma unroll
    for (int i = 0; i < 3; i++) {
        kq[i] = canny_word(kept, words, yb + 1, wx + j + i - 1);
        eq[i] = canny_word(edge, words, yb + 1, wx + j + i - 1);
    }
    const CannyPx p = canny_px(kp, ep, lane);
    if (!p.kept) return;
    const u64 x = (u64)x0 + lane + 32 * j;
    const bool tile_first = lane == 0 && j == 0, tile_last = lane == 31 && j == CANNY_TW / 32 - 1;
    const bool p_starts = tile_first || !(lane ? kp >> (lane - 1) & 1 : kp_before >> 31 & 1);
    const CannyPx left = lane ? canny_px(kq[1], eq[1], lane - 1) : canny_px(kq[0], eq[0], 31);
    const CannyPx mid = canny_px(kq[1], eq[1], lane);
    const CannyPx rt = lane < 31 ? canny_px(kq[1], eq[1], lane + 1) : canny_px(kq[2], eq[2], 0);
    // The row below is cut at x0 (x0 - 1 is the tile below-left's) and after x0 + TW - 1.
    const CannyLink l =
        canny_link(p_starts, left.kept, mid.kept, tile_first || !left.kept, rt.kept, tile_last || !mid.kept);
    const u32 pe = canny_element(x, yb, w);
    if (l.before) canny_pair(parent, p, pe, left, canny_element(x - 1, yb + 1, w));
    if (l.beside) canny_pair(parent, p, pe, mid, canny_element(x, yb + 1, w));
    if (l.after) canny_pair(parent, p, pe, rt, canny_element(x + 1, yb + 1, w));
}
__device__ void canny_union_right(u32 w, u32 h, u32 words, const u32* kept, const u32* edge, u32* parent, u32 x0,
                                  u32 y0) {
    const u32 lane = threadIdx.x & 31;
    const i64 wx = (i64)(x0 / 32);
    constexpr int J = CANNY_TW / 32;
    // Bit 31 of word wx + J - 1 and bit 0 of word wx + J of this lane's row; the rows above and
    // below come from the neighbouring lanes.
    const u64 y = (u64)y0 + lane;
    const bool right = lane < CANNY_TH && y < h && wx + J < (i64)words;
    const u32 kr = right ? canny_word(kept, words, y, wx + J - 1) : 0, er = right ? canny_word(edge, words, y, wx + J - 1) : 0;
    const u32 kn = right ? canny_word(kept, words, y, wx + J) : 0, en = right ? canny_word(edge, words, y, wx + J) : 0;
    const u32 kn_up = __shfl_up_sync(FULL_MASK, kn, 1), en_up = __shfl_up_sync(FULL_MASK, en, 1);
    const u32 kn_down = __shfl_down_sync(FULL_MASK, kn, 1), en_down = __shfl_down_sync(FULL_MASK, en, 1);
    const u32 kr_up = __shfl_up_sync(FULL_MASK, kr, 1);
    const CannyPx p = canny_px(kr, er, 31);
    if (!right || !p.kept) return;
    const u64 xr = (u64)x0 + CANNY_TW - 1;
    const bool has_down = lane + 1 < CANNY_TH && y + 1 < h;
    const CannyPx up = canny_px(lane ? kn_up : 0, en_up, 0), mid = canny_px(kn, en, 0);
    const CannyPx down = canny_px(has_down ? kn_down : 0, en_down, 0);
    const CannyLink l =
        canny_link(lane == 0 || !(kr_up >> 31 & 1), up.kept, mid.kept, lane == 0 || !up.kept, down.kept, !mid.kept);
    const u32 pe = canny_element(xr, y, w);
    if (l.before) canny_pair(parent, p, pe, up, canny_element(xr + 1, y - 1, w));
    if (l.beside) canny_pair(parent, p, pe, mid, canny_element(xr + 1, y, w));
    if (l.after) canny_pair(parent, p, pe, down, canny_element(xr + 1, y + 1, w));
}

// Step 2 above, CANNY_UNION_WARPS warps a block. `wide` (a grid of one wave): a block per tile,
// warp j < 4 on the last row's word j, warp 4 on the last column, so that a tile's unions are made
// at once. Else a warp per tile (warp i of block b on tile CANNY_UNION_WARPS b + i), the five parts
// one after another.
#define CANNY_UNION_WARPS 5
extern "C" __global__ void __launch_bounds__(32 * CANNY_UNION_WARPS)
    canny_union(u32 w, u32 h, u32 words, u32 wide, const u32* __restrict__ kept, const u32* __restrict__ edge,
                u32* parent) {
    wait_for_prior_grid();
    static_assert(CANNY_UNION_WARPS == CANNY_TW / 32 + 1, "a warp a word of the last row, one for the last column");
    const u32 warp = threadIdx.x >> 5;
    u32 x0, y0;
    if (wide) {
        canny_tile(w, &x0, &y0);
        if (warp < CANNY_TW / 32) canny_union_below(w, h, words, kept, edge, parent, x0, y0, warp);
        else canny_union_right(w, h, words, kept, edge, parent, x0, y0);
        return;
    }
    const u32 tiles = ((w - 1) / CANNY_TW + 1) * ((h - 1) / CANNY_TH + 1);
    const u32 tile = blockIdx.x * CANNY_UNION_WARPS + warp;
    if (tile >= tiles) return;
    canny_tile_at(tile, w, &x0, &y0);
    for (int j = 0; j < CANNY_TW / 32; j++) canny_union_below(w, h, words, kept, edge, parent, x0, y0, j);
    canny_union_right(w, h, words, kept, edge, parent, x0, y0);
}

// Step 3 above, a block of CANNY_BX x CANNY_BY threads per tile (the grid of canny_nms; of
// CANNY_BX x CANNY_TALL_BY, canny_finish_tall, after canny_nms_tall): the
// roots of the tile's weak ring pixels that start a run along the ring (the others are in the same
// component) are found, and those whose root is STRONG marked: `wide` (a grid of one wave) by every
// thread at once, else by the first warp, each lane its own half-row's. The first warp grows E
// from them within the tile; then the block writes 255 where E's bit is set, else 0. The unions
// are done: the finds are plain loads (through the L1 cache, where the pixels of one tile find
// their shared representative; halving the paths as canny_find does gained nothing).
__device__ __forceinline__ u32 canny_root(const u32* __restrict__ parent, u32 x) {
    for (u32 p = parent[x]; p != x; p = parent[p]) x = p;
    return x;
}
template <int BY>
__device__ __forceinline__ void canny_finish_tile(u32 w, u32 h, u32 words, u32 wide,
                                                  const u32* __restrict__ kept_words, const u32* __restrict__ edge,
                                                  const u32* __restrict__ parent, u8* __restrict__ out) {
    wait_for_prior_grid();
    __shared__ u32 weak[CANNY_TH][CANNY_TW / 32];
    __shared__ u32 bits[CANNY_TH][CANNY_TW / 32];
    __shared__ u32 seeds[CANNY_TH][CANNY_TW / 32];
    __shared__ u32 ring_weak;
    const int bx = threadIdx.x, by = threadIdx.y;
    u32 x0, y0;
    canny_tile(w, &x0, &y0);
    const u32 row = bx >> 1, half = bx & 1;
    const u64 y = (u64)y0 + row;
    u64 kept = 0, e = 0, s = 0;
    if (by == 0) {
        const u32 wx = x0 / 32 + 2 * half;
        if (y < h) {
            const u64 at = y * words + wx;
            if (wx < words) kept = kept_words[at], e = edge[at];
            if (wx + 1 < words) kept |= (u64)kept_words[at + 1] << 32, e |= (u64)edge[at + 1] << 32;
        }
        const u64 ring_weak_here = kept & ~e & canny_ring();
        if (!wide) {
            // Each run's first pixel within this lane's half-row.
            const u64 x_half = (u64)x0 + 64 * half;
            for (u64 r = ring_weak_here & ~(ring_weak_here << 1); r; r &= r - 1) {
                const u32 b = __ffsll(r) - 1;
                if (canny_root(parent, canny_element(x_half + b, y, w)) == CANNY_STRONG_ROOT) s |= 1ull << b;
            }
        } else {
            const u64 wk = kept & ~e;
            weak[row][2 * half] = (u32)wk;
            weak[row][2 * half + 1] = (u32)(wk >> 32);
            seeds[row][2 * half] = 0;
            seeds[row][2 * half + 1] = 0;
            const bool any = __any_sync(FULL_MASK, ring_weak_here != 0);
            if (bx == 0) ring_weak = any;
        }
    }
    if (wide) {
        __syncthreads();
        if (ring_weak) {
            // Ring place r: row 0 (r < TW), the last row, then the first and last columns' other rows.
            constexpr u32 RING = 2 * CANNY_TW + 2 * (CANNY_TH - 2);
            for (u32 r = by * CANNY_BX + bx; r < RING; r += CANNY_BX * BY) {
                int ty, tx;
                if (r < 2 * CANNY_TW) ty = r < CANNY_TW ? 0 : CANNY_TH - 1, tx = r % CANNY_TW;
                else ty = 1 + (r - 2 * CANNY_TW) % (CANNY_TH - 2), tx = r < 2 * CANNY_TW + CANNY_TH - 2 ? 0 : CANNY_TW - 1;
                if (!canny_weak_at(weak, ty, tx)) continue;
                // A run along a row, or down a column from the row above, is one component.
                if (ty == 0 || ty == CANNY_TH - 1 ? canny_weak_at(weak, ty, tx - 1) : canny_weak_at(weak, ty - 1, tx)) continue;
                if (canny_root(parent, canny_element((u64)x0 + tx, (u64)y0 + ty, w)) == CANNY_STRONG_ROOT)
                    atomicOr(&seeds[ty][tx / 32], 1u << (tx & 31));
            }
            __syncthreads();
        }
        if (by == 0) s = (u64)seeds[row][2 * half + 1] << 32 | seeds[row][2 * half];
    }
    if (by == 0) {
        if (__any_sync(FULL_MASK, s != 0)) e = canny_grow(kept, e | s);
        bits[row][2 * half] = (u32)e;
        bits[row][2 * half + 1] = (u32)(e >> 32);
    }
    __syncthreads();
    for (int ty = by; ty < CANNY_TH; ty += BY) {
        const u64 y = (u64)y0 + ty;
        if (y >= h) break;
        for (int tx = bx; tx < CANNY_TW; tx += CANNY_BX) {
            const u64 x = (u64)x0 + tx;
            if (x >= w) break;
            out[y * w + x] = bits[ty][tx / 32] >> (tx & 31) & 1 ? 255 : 0;
        }
    }
}
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_finish(u32 w, u32 h, u32 words, u32 wide, const u32* __restrict__ kept_words, const u32* __restrict__ edge,
                 const u32* __restrict__ parent, u8* __restrict__ out) {
    canny_finish_tile<CANNY_BY>(w, h, words, wide, kept_words, edge, parent, out);
}
extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_TALL_BY)
    canny_finish_tall(u32 w, u32 h, u32 words, u32 wide, const u32* __restrict__ kept_words,
                      const u32* __restrict__ edge, const u32* __restrict__ parent, u8* __restrict__ out) {
    canny_finish_tile<CANNY_TALL_BY>(w, h, words, wide, kept_words, edge, parent, out);
}
