// edges: Canny as OpenCV computes it (see crates/ops/src/edges.rs for the exact rules), and the
// optional Gaussian blur. Every kernel mirrors the CPU backend's arithmetic step for step, so the
// two give identical edges.
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

// Hysteresis as connected components: the edges are exactly the kept pixels whose 8-connected
// component of kept pixels holds a strong one. Union-find as in ECL-CC (Jaiganesh & Burtscher,
// 2018): a label always names a pixel of the same component with an index no larger than its own,
// a root names itself, a root is hooked under a smaller one by atomicCAS (which fails if it
// stopped being a root meanwhile), and finds shorten the paths they walk by pointing each node at
// its grandparent. The components, and so the edges, do not depend on the order in which threads
// run; the root of a component ends as its smallest index.
//
// Threads read labels that others are changing, so every access that can meet a concurrent write
// is an atomic one (a plain access racing with an atomic is a data race: its value is undefined in
// the PTX memory model, and compute-sanitizer's racecheck reports it in shared memory). Shortening
// is atomicMin, not a store: labels only ever decrease, each value naming an ancestor, so a
// shortening that arrives late cannot lengthen a path another thread shortened meanwhile. In
// shared memory a load is a compare-and-swap of 0 for 0 (a no-op write): an idempotent atomic
// update such as adding 0 may be turned back into a plain load by the compiler.
struct SharedLabels {
    u32* at;
    __device__ __forceinline__ u32 load(u32 i) const { return atomicCAS(at + i, 0u, 0u); }
    __device__ __forceinline__ void lower(u32 i, u32 v) const { atomicMin(at + i, v); }
    __device__ __forceinline__ u32 hook(u32 root, u32 under) const { return atomicCAS(at + root, root, under); }
};

// In global memory a relaxed load at GPU scope is a strong access (no data race with the atomics)
// and, unlike an atomic update, needs no round trip through an atomic unit.
__device__ __forceinline__ u32 load_relaxed(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
    return v;
}

struct GlobalLabels {
    u32* at;
    __device__ __forceinline__ u32 load(u32 i) const { return load_relaxed(at + i); }
    __device__ __forceinline__ void lower(u32 i, u32 v) const { atomicMin(at + i, v); }
    __device__ __forceinline__ u32 hook(u32 root, u32 under) const { return atomicCAS(at + root, root, under); }
};

// The root of x's tree, shortening the path on the way.
template <typename Labels>
__device__ __forceinline__ u32 canny_find(const Labels& labels, u32 x) {
    u32 curr = labels.load(x);
    if (curr != x) {
        u32 prev = x, next;
        while (curr > (next = labels.load(curr))) {
            labels.lower(prev, next);
            prev = curr;
            curr = next;
        }
    }
    return curr;
}

template <typename Labels>
__device__ void canny_union(const Labels& labels, u32 a, u32 b) {
    a = canny_find(labels, a);
    b = canny_find(labels, b);
    while (a != b) {
        if (a > b) {
            const u32 t = a;
            a = b;
            b = t;
        }
        const u32 old = labels.hook(b, a);
        if (old == b) return;
        b = canny_find(labels, old);
    }
}

// Stages 1-3 fused, and hysteresis within the tile: each block loads its CANNY_TW x CANNY_TH tile
// of the input with a two-pixel halo (coordinates clamped: BORDER_REPLICATE) into shared memory,
// computes the magnitudes of the tile and a one-pixel halo there (0 outside the frame), then
// suppresses and thresholds each pixel of the tile, recomputing its gradient from shared memory
// (only where m > low, the only place the direction matters), and writes the one-byte map. Then
// it joins the tile's kept pixels into components in shared memory and writes, for each kept
// pixel, the global index of its component's root within the tile (the smallest index, as tile
// order is frame order) into `labels`: the trees stay one level deep until components are joined
// across tiles. Per pixel the arithmetic is the CPU backend's.
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

extern "C" __global__ void __launch_bounds__(CANNY_BX * CANNY_BY)
    canny_nms(const u8* __restrict__ src, u32 w, u32 h, u32 l2, int low, int high, u8* __restrict__ map,
              u32* __restrict__ labels) {
    __shared__ u8 in[CANNY_TH + 4][CANNY_TW + 4];
    __shared__ int mag[CANNY_TH + 2][CANNY_TW + 2];
    __shared__ u8 kept[CANNY_TH][CANNY_TW];
    __shared__ u32 local[CANNY_TH * CANNY_TW];
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
            const u64 gx = (u64)x0 + tx, gy = (u64)y0 + ty;
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
            kept[ty][tx] = out;
            local[ty * CANNY_TW + tx] = ty * CANNY_TW + tx;
            if (gx < w && gy < h) map[gy * w + gx] = out;
        }
    }
    __syncthreads();
    // Each kept pixel joins some of its kept neighbours NW, N, NE and W inside the tile, those
    // that the decision tree of Wu, Otoo and Suzuki (2009) for 8-connected scans picks: N alone
    // if it is kept; else NE if kept, and NW if kept, else W. The others are joined to the picked
    // ones by their own turns (NW is N's west neighbour, N is NE's and W's; NW is W's north one),
    // so by induction in raster order every pair of kept neighbours ends up joined, with at most
    // two unions a pixel instead of four.
    const SharedLabels tile{local};
    for (int ty = by; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = bx; tx < CANNY_TW; tx += CANNY_BX) {
            if (kept[ty][tx] == CANNY_NONE) continue;
            const u32 k = ty * CANNY_TW + tx;
            const bool w_ = tx > 0 && kept[ty][tx - 1] != CANNY_NONE;
            const bool nw = ty > 0 && tx > 0 && kept[ty - 1][tx - 1] != CANNY_NONE;
            const bool n = ty > 0 && kept[ty - 1][tx] != CANNY_NONE;
            const bool ne = ty > 0 && tx + 1 < CANNY_TW && kept[ty - 1][tx + 1] != CANNY_NONE;
            if (n) {
                canny_union(tile, k, k - CANNY_TW);
            } else {
                if (ne) canny_union(tile, k, k - CANNY_TW + 1);
                if (nw) canny_union(tile, k, k - CANNY_TW - 1);
                else if (w_) canny_union(tile, k, k - 1);
            }
        }
    }
    __syncthreads();
    // Every union is done: from here `local` is only read, so plain loads walk to the roots (no
    // shortening, which would write).
    for (int ty = by; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = bx; tx < CANNY_TW; tx += CANNY_BX) {
            // Kept pixels are all inside the frame.
            if (kept[ty][tx] == CANNY_NONE) continue;
            u32 r = ty * CANNY_TW + tx, p;
            while ((p = local[r]) != r) r = p;
            labels[(u64)(y0 + ty) * w + x0 + tx] = (u32)((u64)(y0 + r / CANNY_TW) * w + x0 + r % CANNY_TW);
        }
    }
}

// Joins the components of neighbouring tiles: one block per tile of canny_nms (the same
// one-dimensional grid), one thread per pixel of its top row, left column and right column, each
// joining its kept neighbours W, NW, N and NE that lie in another tile (every 8-connected pair
// across tiles has its lower or side pixel there).
#define CANNY_BORDER (CANNY_TW + 2 * (CANNY_TH - 1))
extern "C" __global__ void canny_union_borders(const u8* __restrict__ map, u32 w, u32 h, u32* labels) {
    const u32 k = threadIdx.x;
    if (k >= CANNY_BORDER) return;
    u32 x0, y0;
    canny_tile(w, &x0, &y0);
    u64 x, y;
    if (k < CANNY_TW) x = (u64)x0 + k, y = y0;
    else if (k < CANNY_TW + CANNY_TH - 1) x = x0, y = (u64)y0 + 1 + (k - CANNY_TW);
    else x = (u64)x0 + CANNY_TW - 1, y = (u64)y0 + 1 + (k - CANNY_TW - (CANNY_TH - 1));
    if (x >= w || y >= h) return;
    const u64 i = y * w + x;
    if (map[i] == CANNY_NONE) return;
    const GlobalLabels all{labels};
    const int dxs[4] = {-1, -1, 0, 1}, dys[4] = {0, -1, -1, -1};
    for (int d = 0; d < 4; d++) {
        const i64 nx = (i64)x + dxs[d], ny = (i64)y + dys[d];
        if (nx < 0 || ny < 0 || nx >= (i64)w) continue;
        if (nx >= x0 && nx < (i64)x0 + CANNY_TW && ny >= y0) continue;  // in this tile
        const u64 j = (u64)ny * w + (u64)nx;
        // Indices of a frame of fewer than 2^32 pixels.
        if (map[j] != CANNY_NONE) canny_union(all, (u32)i, (u32)j);
    }
}

// After every union (the roots are final now): points each kept pixel at its component's root
// (the next kernel reads the root there in one step), and sets the bit of the root of every strong
// pixel's component in `strong` (one bit per pixel, zeroed beforehand). Pixels whose labels name
// their root already are left alone, and a bit is tested before it is set: a large component's
// strong pixels would otherwise all queue atomics on one word.
extern "C" __global__ void canny_flatten(const u8* __restrict__ map, u64 n, u32* labels, u32* strong) {
    const GlobalLabels all{labels};
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u8 v = map[i];
        if (v == CANNY_NONE) continue;
        const u32 parent = all.load((u32)i);
        u32 r = parent;
        if (parent != (u32)i) {
            r = canny_find(all, parent);
            if (r != parent) all.lower((u32)i, r);
        }
        if (v == CANNY_STRONG) {
            const u32 bit = 1u << (r & 31);
            u32* word = strong + (r >> 5);
            if (!(load_relaxed(word) & bit)) atomicOr(word, bit);
        }
    }
}

// 255 where the pixel is kept and its component's root has its bit in `strong`, else 0. Labels
// only decrease, and canny_flatten lowered each kept pixel's to its root, the smallest index of
// the component: one load finds it.
extern "C" __global__ void canny_finish(const u8* __restrict__ map, const u32* __restrict__ labels,
                                        const u32* __restrict__ strong, u64 n, u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u8 v = 0;
        if (map[i] != CANNY_NONE) {
            const u32 r = labels[i];
            v = (strong[r >> 5] >> (r & 31)) & 1 ? 255 : 0;
        }
        out[i] = v;
    }
}
