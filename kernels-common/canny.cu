// edges: Canny as OpenCV computes it (see crates/ops/src/edges.rs for the exact rules), and the
// optional Gaussian blur. Every kernel mirrors the CPU backend's arithmetic step for step, so the
// two give identical edges.
#include "histopipe.cuh"

#define CANNY_NONE 0
#define CANNY_WEAK 1
#define CANNY_STRONG 2
#define CANNY_TG22 13573

__device__ __forceinline__ u32 clampi(int v, u32 n) { return v < 0 ? 0u : ((u32)v >= n ? n - 1 : (u32)v); }

// Horizontal pass: f32 products summed in tap order from 0.0f (no FMA: --fmad=false).
extern "C" __global__ void gauss_rows(const u8* __restrict__ in, u32 w, u32 h, const float* __restrict__ k,
                                      u32 r, float* __restrict__ tmp) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        const u8* row = in + (u64)y * w;
        float acc = 0.0f;
        for (u32 t = 0; t <= 2 * r; t++) acc = acc + k[t] * (float)row[clampi((int)x + (int)t - (int)r, w)];
        tmp[i] = acc;
    }
}

extern "C" __global__ void gauss_cols(const float* __restrict__ tmp, u32 w, u32 h, const float* __restrict__ k,
                                      u32 r, u8* __restrict__ out) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        float acc = 0.0f;
        for (u32 t = 0; t <= 2 * r; t++) acc = acc + k[t] * tmp[(u64)clampi((int)y + (int)t - (int)r, h) * w + x];
        int v = __float2int_rn(acc);
        out[i] = (u8)(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
}

// Hysteresis as connected components: the edges are exactly the kept pixels whose 8-connected
// component of kept pixels holds a strong one. Union-find as in ECL-CC (Jaiganesh & Burtscher,
// 2018): a label always names a pixel of the same component with an index no larger than its own,
// a root names itself, a root is hooked under a smaller one by atomicCAS (which fails if it
// stopped being a root meanwhile), and finds shorten the paths they walk by pointing each node at
// its grandparent (an ancestor, so still in the component). The components, and so the edges, do
// not depend on the order in which threads run. Works on shared and global labels alike.
__device__ __forceinline__ u32 canny_find(u32* labels, u32 x) {
    u32 curr = labels[x];
    if (curr != x) {
        u32 prev = x, next;
        while (curr > (next = labels[curr])) {
            labels[prev] = next;
            prev = curr;
            curr = next;
        }
    }
    return curr;
}

__device__ void canny_union(u32* labels, u32 a, u32 b) {
    a = canny_find(labels, a);
    b = canny_find(labels, b);
    while (a != b) {
        if (a > b) {
            const u32 t = a;
            a = b;
            b = t;
        }
        const u32 old = atomicCAS(&labels[b], b, a);
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
#define CANNY_TW 128
#define CANNY_TH 16
#define CANNY_BX 32
#define CANNY_BY 8

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
    const int tid = threadIdx.y * CANNY_BX + threadIdx.x;
    const int x0 = (int)(blockIdx.x * CANNY_TW), y0 = (int)(blockIdx.y * CANNY_TH);
    for (int k = tid; k < (CANNY_TH + 4) * (CANNY_TW + 4); k += CANNY_BX * CANNY_BY) {
        const int ly = k / (CANNY_TW + 4), lx = k - ly * (CANNY_TW + 4);
        in[ly][lx] = src[(u64)clampi(y0 - 2 + ly, h) * w + clampi(x0 - 2 + lx, w)];
    }
    __syncthreads();
    for (int k = tid; k < (CANNY_TH + 2) * (CANNY_TW + 2); k += CANNY_BX * CANNY_BY) {
        const int ly = k / (CANNY_TW + 2), lx = k - ly * (CANNY_TW + 2);
        const int gx = x0 - 1 + lx, gy = y0 - 1 + ly;
        int m = 0;
        if (gx >= 0 && gy >= 0 && (u32)gx < w && (u32)gy < h) {
            int dx, dy;
            canny_sobel(in, lx + 1, ly + 1, dx, dy);
            m = l2 ? dx * dx + dy * dy : abs(dx) + abs(dy);
        }
        mag[ly][lx] = m;
    }
    __syncthreads();
    for (int ty = threadIdx.y; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = threadIdx.x; tx < CANNY_TW; tx += CANNY_BX) {
            const int gx = x0 + tx, gy = y0 + ty;
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
            if ((u32)gx < w && (u32)gy < h) map[(u64)gy * w + gx] = out;
        }
    }
    __syncthreads();
    // Each kept pixel joins its kept neighbours W, NW, N and NE inside the tile: every 8-connected
    // pair of the tile once.
    for (int ty = threadIdx.y; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = threadIdx.x; tx < CANNY_TW; tx += CANNY_BX) {
            if (kept[ty][tx] == CANNY_NONE) continue;
            const u32 k = ty * CANNY_TW + tx;
            if (tx > 0 && kept[ty][tx - 1] != CANNY_NONE) canny_union(local, k, k - 1);
            if (ty > 0) {
                if (tx > 0 && kept[ty - 1][tx - 1] != CANNY_NONE) canny_union(local, k, k - CANNY_TW - 1);
                if (kept[ty - 1][tx] != CANNY_NONE) canny_union(local, k, k - CANNY_TW);
                if (tx + 1 < CANNY_TW && kept[ty - 1][tx + 1] != CANNY_NONE) canny_union(local, k, k - CANNY_TW + 1);
            }
        }
    }
    __syncthreads();
    for (int ty = threadIdx.y; ty < CANNY_TH; ty += CANNY_BY) {
        for (int tx = threadIdx.x; tx < CANNY_TW; tx += CANNY_BX) {
            // Kept pixels are all inside the frame.
            if (kept[ty][tx] == CANNY_NONE) continue;
            const u32 r = canny_find(local, ty * CANNY_TW + tx);
            labels[(u64)(y0 + ty) * w + x0 + tx] = (u32)((u64)(y0 + r / CANNY_TW) * w + x0 + r % CANNY_TW);
        }
    }
}

// Joins the components of neighbouring tiles: one block per tile of canny_nms, one thread per
// pixel of its top row, left column and right column, each joining its kept neighbours W, NW, N
// and NE that lie in another tile (every 8-connected pair across tiles has its lower or side
// pixel there).
#define CANNY_BORDER (CANNY_TW + 2 * (CANNY_TH - 1))
extern "C" __global__ void canny_union_borders(const u8* __restrict__ map, u32 w, u32 h, u32* labels) {
    const u32 k = threadIdx.x;
    if (k >= CANNY_BORDER) return;
    const u32 x0 = blockIdx.x * CANNY_TW, y0 = blockIdx.y * CANNY_TH;
    u32 x, y;
    if (k < CANNY_TW) x = x0 + k, y = y0;
    else if (k < CANNY_TW + CANNY_TH - 1) x = x0, y = y0 + 1 + (k - CANNY_TW);
    else x = x0 + CANNY_TW - 1, y = y0 + 1 + (k - CANNY_TW - (CANNY_TH - 1));
    if (x >= w || y >= h) return;
    const u64 i = (u64)y * w + x;
    if (map[i] == CANNY_NONE) return;
    const int dxs[4] = {-1, -1, 0, 1}, dys[4] = {0, -1, -1, -1};
    for (int d = 0; d < 4; d++) {
        const int nx = (int)x + dxs[d], ny = (int)y + dys[d];
        if (nx < 0 || ny < 0 || (u32)nx >= w) continue;
        if ((u32)nx / CANNY_TW == blockIdx.x && (u32)ny / CANNY_TH == blockIdx.y) continue;
        const u64 j = (u64)ny * w + nx;
        if (map[j] != CANNY_NONE) canny_union(labels, (u32)i, (u32)j);
    }
}

// After every union (the roots are fixed now): shortens each kept pixel's path to its root, and
// marks the root of every strong pixel's component STRONG. Concurrent writers of one root write
// the same value, and map only changes WEAK -> STRONG, so which pixels are kept is never in doubt.
extern "C" __global__ void canny_flatten(u8* map, u64 n, u32* labels) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u8 v = map[i];
        if (v == CANNY_NONE) continue;
        const u32 r = canny_find(labels, (u32)i);
        labels[i] = r;
        if (v == CANNY_STRONG && r != (u32)i) map[r] = CANNY_STRONG;
    }
}

// 255 where the pixel is kept and its component's root is STRONG, else 0. The root is walked to,
// not read as labels[i]: in canny_flatten a finder that read labels[i] before it was set may
// still overwrite it with an older ancestor (paths are short by now, so the walk is too).
extern "C" __global__ void canny_finish(const u8* __restrict__ map, const u32* __restrict__ labels, u64 n,
                                        u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u8 v = 0;
        if (map[i] != CANNY_NONE) {
            u32 x = (u32)i, p;
            while ((p = labels[x]) != x) x = p;
            v = map[x] == CANNY_STRONG ? 255 : 0;
        }
        out[i] = v;
    }
}
