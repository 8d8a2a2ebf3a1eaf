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
// strong pixels within the tile (see the hysteresis below) and writes the tile's words of `kept`
// and `edge`. Per pixel the arithmetic is the CPU backend's.
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


// Hysteresis by growth from the strong pixels, on bits. The edges are exactly the kept pixels
// whose 8-connected component of kept pixels holds a strong one: the kept pixels reachable from a
// strong one through kept 8-neighbours, the smallest set E that holds the strong pixels and every
// kept pixel 8-adjacent to a pixel of E. Any sequence of steps that each add to E only kept pixels
// joined to E, run until no step can add one, ends at that set, whatever the steps' order: so the
// result does not depend on how threads are scheduled, and E can only grow (every update below is
// an OR, never a store of an older value).
//
// The maps are bit sets, one bit per pixel, in rows of `words` = ceil(w / 32) 32-bit words (bit b
// of word j of row y is pixel x = 32 j + b; bits past the frame's width are 0): `kept` (weak or
// strong) and `edge` (E). A tile (CANNY_TW x CANNY_TH = 128 x 16, four words a row, word-aligned)
// is held by one warp in registers: lane l holds row l / 2, half l % 2, as 64 bits (bit b is pixel
// 64 (l % 2) + b of the row). One step of canny_grow acts on the whole tile: E's rows ORed with
// those above and below, shifted one pixel left and right (the 8-neighbour dilation), ANDed with
// kept; then every run of kept pixels in a half-row that holds a pixel of E is filled, both ways,
// by carry propagation (canny_fill). A path through the tile costs one step per change of row,
// not one per pixel; the tile is iterated in registers until it is stable, with __any_sync for the
// "changed" flag (warp-synchronous: no barrier, no shared memory, no race).
//
// 1. canny_nms (stages 1-3 and the tiles' own hysteresis): after thresholds each block grows its
//    tile's strong pixels within the tile, writes `kept` and `edge`, and raises the `active` flag
//    of every neighbour tile beside an edge pixel on its border.
// 2. canny_link (across tiles): a warp claims an active tile (atomicExch of its flag to 0), grows
//    its E within the tile with the edge pixels of the ring around it (its neighbours' border, read
//    with relaxed loads) held fixed, ORs the new pixels into `edge` (atomicOr: neighbours read
//    those words meanwhile) and raises the flags of the neighbours beside new pixels on its border.
//    The warp then claims the tiles it woke itself, depth first from a small stack, so a chain of
//    tiles is followed within one launch; a tile it cannot stack stays active for the next launch.
//    Writes are fenced before a flag is raised, and a claim fenced before the reads: a tile whose
//    neighbour changed after it was read is woken again, so when no flag is left raised every tile
//    is stable given its neighbours, and E is the set above. active[0] counts the raised flags; the
//    host launches canny_link again while it is not 0 (gpu.rs), which is rare: only a warp's stack
//    overflowing leaves flags raised.
// 3. canny_finish: 255 where E's bit is set, else 0.
static_assert(CANNY_TW == 128 && CANNY_TH == 16, "a tile is 16 rows of two 64-bit halves, one per lane");

// In global memory a relaxed load at GPU scope is a strong access (no data race with the atomicOr
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

// The growth of `edge`, this lane's half-row of a tile's E (see above), to a fixpoint within the
// tile, the edge pixels around the tile fixed: `above` and `below` are E's bits of the row over the
// tile (used by the lanes of row 0) and under it (row CANNY_TH - 1), `side` the OR of E over rows
// r - 1, r, r + 1 of the pixel beside this half outside the tile (left of half 0, right of half 1).
// Every lane of the warp calls it.
__device__ u64 canny_grow(u64 kept, u64 edge, u64 above, u64 below, u64 side) {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    for (;;) {
        u64 up = __shfl_up_sync(FULL_MASK, edge, 2), down = __shfl_down_sync(FULL_MASK, edge, 2);
        if (row == 0) up = above;
        if (row == CANNY_TH - 1) down = below;
        const u64 v = edge | up | down;
        // The pixels just left and right of this half: the other half's or the outside one.
        const u64 other = __shfl_xor_sync(FULL_MASK, v, 1);
        const u64 left = half ? other >> 63 : side;
        const u64 right = half ? side : other & 1;
        const u64 seeds = edge | ((v | v << 1 | v >> 1 | left | right << 63) & kept);
        const u64 grown = canny_fill(kept, seeds) | __brevll(canny_fill(__brevll(kept), __brevll(seeds)));
        if (!__any_sync(FULL_MASK, grown != edge)) return edge;
        edge = grown;
    }
}

// Directions of the neighbour tiles, as bits of a mask: the row above, the row of the tile, below.
#define CANNY_UL 0x01u
#define CANNY_U 0x02u
#define CANNY_UR 0x04u
#define CANNY_L 0x08u
#define CANNY_R 0x10u
#define CANNY_DL 0x20u
#define CANNY_D 0x40u
#define CANNY_DR 0x80u

// The neighbour tiles 8-adjacent to a pixel of `fresh` (this lane's half-row, see above), over the
// warp. Every lane of the warp calls it.
__device__ __forceinline__ u32 canny_touched(u64 fresh) {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    const bool top = row == 0, bottom = row == CANNY_TH - 1;
    u32 dirs = 0;
    if (fresh && top) dirs |= CANNY_U;
    if (fresh && bottom) dirs |= CANNY_D;
    // The tile's left column (bit 0 of half 0) or right column (bit 63 of half 1).
    if (half ? fresh >> 63 : fresh & 1) {
        dirs |= half ? CANNY_R : CANNY_L;
        if (top) dirs |= half ? CANNY_UR : CANNY_UL;
        if (bottom) dirs |= half ? CANNY_DR : CANNY_DL;
    }
    return warp_reduce(dirs, BitOr());
}

// Raises the flags (active[1 + tile]) of the neighbours in `dirs` of `tile`, in a grid of
// `across` x `down` tiles; counts in active[0] each flag it raises, and hands the tile to `woken`.
template <typename Woken>
__device__ void canny_wake(u32 dirs, u32 tile, u32 across, u32 down, u32* active, Woken woken) {
    const u32 tx = tile % across, ty = tile / across;
    for (u32 d = 0; d < 8; d++) {
        if (!(dirs >> d & 1)) continue;
        const u32 bit = 1u << d;
        const int dx = bit & (CANNY_UL | CANNY_L | CANNY_DL) ? -1 : (bit & (CANNY_UR | CANNY_R | CANNY_DR) ? 1 : 0);
        const int dy = bit & (CANNY_UL | CANNY_U | CANNY_UR) ? -1 : (bit & (CANNY_DL | CANNY_D | CANNY_DR) ? 1 : 0);
        if ((dx < 0 && tx == 0) || (dx > 0 && tx + 1 >= across) || (dy < 0 && ty == 0) || (dy > 0 && ty + 1 >= down))
            continue;
        const u32 u = (ty + dy) * across + tx + dx;
        if (atomicExch(active + 1 + u, 1u) == 0) {
            atomicAdd(active, 1u);
            woken(u);
        }
    }
}

struct CannyNobody {
    __device__ void operator()(u32) const {}
};

extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_nms(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u32 words,
              u32* __restrict__ kept_words, u32* __restrict__ edge, u32* __restrict__ active) {
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
    // The first warp grows the strong pixels within the tile and writes the tile's words; the
    // others are done (no barrier follows).
    if (by != 0) return;
    const u32 row = bx >> 1, half = bx & 1;
    const u64 kept = (u64)kept_bits[row][2 * half + 1] << 32 | kept_bits[row][2 * half];
    const u64 strong = (u64)strong_bits[row][2 * half + 1] << 32 | strong_bits[row][2 * half];
    const u64 grown = canny_grow(kept, strong, 0, 0, 0);
    const u64 y = (u64)y0 + row;
    const u32 wx = x0 / 32 + 2 * half;
    if (y < h) {
        const u64 at = y * words + wx;
        if (wx < words) edge[at] = (u32)grown, kept_words[at] = (u32)kept;
        if (wx + 1 < words) edge[at + 1] = (u32)(grown >> 32), kept_words[at + 1] = (u32)(kept >> 32);
    }
    const u32 dirs = canny_touched(grown);
    if (bx == 0 && dirs)
        canny_wake(dirs, blockIdx.x, (w - 1) / CANNY_TW + 1, (h - 1) / CANNY_TH + 1, active, CannyNobody());
}

// This half's 64 bits of the row at `at` (the index of the half's first word) of a bit map, 0 past
// the row's `words - wx` words (relaxed loads).
__device__ __forceinline__ u64 canny_half(const u32* bits, u64 at, u32 wx, u32 words) {
    const u32 lo = wx < words ? load_relaxed(bits + at) : 0;
    const u32 hi = wx + 1 < words ? load_relaxed(bits + at + 1) : 0;
    return (u64)hi << 32 | lo;
}

// The bit of the pixel beside this half outside the tile (left of half 0, right of half 1) in the
// row that starts at `row_at`, 0 if it is outside the frame.
__device__ __forceinline__ u32 canny_beside(const u32* bits, u64 row_at, u32 x0, u32 wx, u32 words, u32 half) {
    if (half) return wx + 2 < words ? load_relaxed(bits + row_at + wx + 2) & 1 : 0;
    return x0 > 0 ? load_relaxed(bits + row_at + wx - 1) >> 31 : 0;
}

// canny_link's work on one claimed tile: its E grown with the ring of edge pixels around it held
// fixed, the new pixels ORed into `edge`; returns the neighbours beside new pixels on its border
// (canny_touched). Every lane of the warp calls it.
__device__ u32 canny_link_tile(u32 tile, u32 across, u32 h, u32 words, const u32* __restrict__ kept, u32* edge) {
    const u32 lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    const u32 x0 = (tile % across) * CANNY_TW, y0 = (tile / across) * CANNY_TH;
    const u32 wx = x0 / 32 + 2 * half;
    const u64 y = (u64)y0 + row;
    u64 k = 0, e = 0, above = 0, below = 0;
    u32 beside = 0, beside_above = 0, beside_below = 0;
    if (y < h) {
        const u64 row_at = y * words;
        // `kept` is not written during this kernel: plain loads.
        if (wx < words) k = kept[row_at + wx];
        if (wx + 1 < words) k |= (u64)kept[row_at + wx + 1] << 32;
        e = canny_half(edge, row_at + wx, wx, words);
        beside = canny_beside(edge, row_at, x0, wx, words, half);
    }
    if (row == 0 && y0 > 0) {
        const u64 row_at = (y - 1) * words;
        above = canny_half(edge, row_at + wx, wx, words);
        beside_above = canny_beside(edge, row_at, x0, wx, words, half);
    }
    if (row == CANNY_TH - 1 && y + 1 < h) {
        const u64 row_at = (y + 1) * words;
        below = canny_half(edge, row_at + wx, wx, words);
        beside_below = canny_beside(edge, row_at, x0, wx, words, half);
    }
    u32 up = __shfl_up_sync(FULL_MASK, beside, 2), down = __shfl_down_sync(FULL_MASK, beside, 2);
    if (row == 0) up = beside_above;
    if (row == CANNY_TH - 1) down = beside_below;
    const u64 grown = canny_grow(k, e, above, below, beside | up | down);
    // Kept bits lie inside the frame, so the new ones do.
    const u64 fresh = grown & ~e;
    if ((u32)fresh) atomicOr(edge + y * words + wx, (u32)fresh);
    if (fresh >> 32) atomicOr(edge + y * words + wx + 1, (u32)(fresh >> 32));
    // Before any flag is raised: the new pixels are visible to whoever claims a tile woken here.
    __threadfence();
    __syncwarp();
    return canny_touched(fresh);
}

// Hysteresis across tiles (step 2 above): CANNY_LINK_WARPS warps a block, warp i of block b
// starting at tile CANNY_LINK_WARPS b + i (the grid covers the tiles of canny_nms), each claiming
// its tile if it is active, then the tiles it wakes itself. The warps are independent: no barrier.
#define CANNY_LINK_WARPS 4
#define CANNY_STACK 32
#define CANNY_NO_TILE 0xffffffffu
extern "C" __global__ void __launch_bounds__(32 * CANNY_LINK_WARPS)
    canny_link(u32 w, u32 h, u32 words, const u32* __restrict__ kept, u32* edge, u32* active) {
    // Each warp's stack, read and written by its lane 0 alone.
    __shared__ u32 stacks[CANNY_LINK_WARPS][CANNY_STACK];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 across = (w - 1) / CANNY_TW + 1, tiles = across * ((h - 1) / CANNY_TH + 1);
    u32* stack = stacks[warp];
    u32 depth = 0;
    u32 tile = blockIdx.x * CANNY_LINK_WARPS + warp;
    // Warp-uniform.
    if (tile >= tiles) return;
    for (;;) {
        u32 claimed = 0;
        if (lane == 0) {
            claimed = atomicExch(active + 1 + tile, 0u);
            if (claimed) atomicAdd(active, FULL_MASK);  // minus one
            // After the claim: the reads below see what the waker wrote before raising the flag.
            __threadfence();
        }
        __syncwarp();
        if (__shfl_sync(FULL_MASK, claimed, 0)) {
            const u32 dirs = canny_link_tile(tile, across, h, words, kept, edge);
            if (lane == 0 && dirs) {
                canny_wake(dirs, tile, across, (h - 1) / CANNY_TH + 1, active, [&](u32 u) {
                    // A tile that does not fit stays active, for the next launch.
                    if (depth < CANNY_STACK) stack[depth++] = u;
                });
            }
        }
        u32 next = CANNY_NO_TILE;
        if (lane == 0 && depth > 0) next = stack[--depth];
        tile = __shfl_sync(FULL_MASK, next, 0);
        if (tile == CANNY_NO_TILE) return;
    }
}

// 255 where the pixel's bit of E is set, else 0; n = w h < 2^32 pixels.
extern "C" __global__ void canny_finish(const u32* __restrict__ edge, u32 w, u32 words, u64 n, u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)i / w, x = (u32)i - y * w;
        out[i] = (edge[(u64)y * words + x / 32] >> (x & 31)) & 1 ? 255 : 0;
    }
}
