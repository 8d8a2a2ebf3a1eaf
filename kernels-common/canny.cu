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

// Stages 1-3 fused: each block loads its CANNY_TW x CANNY_TH tile of the input with a two-pixel
// halo (coordinates clamped: BORDER_REPLICATE) into shared memory, computes the magnitudes of the
// tile and a one-pixel halo there (0 outside the frame), then suppresses and thresholds each pixel
// of the tile, recomputing its gradient from shared memory (only where m > low, the only place
// the direction matters). Only the one-byte map leaves the block, and for kept pixels the label
// hysteresis starts from: its own index. Per pixel the arithmetic is the CPU backend's.
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
        const int gy = y0 + ty;
        if ((u32)gy >= h) break;
        for (int tx = threadIdx.x; tx < CANNY_TW; tx += CANNY_BX) {
            const int gx = x0 + tx;
            if ((u32)gx >= w) break;
            // The pixel is mag[ty + 1][tx + 1] and in[ty + 2][tx + 2].
            const int* ma = mag[ty];
            const int* mc = mag[ty + 1];
            const int* mb = mag[ty + 2];
            const int m = mc[tx + 1];
            u8 out = CANNY_NONE;
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
            const u64 i = (u64)gy * w + gx;
            map[i] = out;
            if (out != CANNY_NONE) labels[i] = (u32)i;
        }
    }
}

// Hysteresis as connected components: the edges are exactly the kept pixels whose 8-connected
// component of kept pixels holds a strong one. Union-find over `labels` (Playne & Hawick, 2018):
// a label only ever decreases and always names a pixel of the same component, a root names
// itself, and linking is one atomicMin on a root; a stale read only costs a retry. The
// components, and so the edges, do not depend on the order in which threads run.
__device__ __forceinline__ u32 canny_find(const u32* labels, u32 x) {
    u32 p;
    while ((p = labels[x]) != x) x = p;
    return x;
}

__device__ void canny_union(u32* labels, u32 a, u32 b) {
    for (;;) {
        a = canny_find(labels, a);
        b = canny_find(labels, b);
        if (a == b) return;
        // Link the larger root under the smaller; if it stopped being a root meanwhile, go on
        // from what it points at now.
        if (a < b) {
            const u32 old = atomicMin(&labels[b], a);
            if (old == b) return;
            b = old;
        } else {
            const u32 old = atomicMin(&labels[a], b);
            if (old == a) return;
            a = old;
        }
    }
}

// Joins each kept pixel with its kept neighbours on the left and in the row above (W, NW, N,
// NE): with every pixel doing so, each 8-connected pair is joined once.
extern "C" __global__ void canny_union_neighbours(const u8* __restrict__ map, u32 w, u32 h, u32* labels) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        if (map[i] == CANNY_NONE) continue;
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        if (x > 0 && map[i - 1] != CANNY_NONE) canny_union(labels, (u32)i, (u32)(i - 1));
        if (y > 0) {
            const u64 up = i - w;
            if (x > 0 && map[up - 1] != CANNY_NONE) canny_union(labels, (u32)i, (u32)(up - 1));
            if (map[up] != CANNY_NONE) canny_union(labels, (u32)i, (u32)up);
            if (x + 1 < w && map[up + 1] != CANNY_NONE) canny_union(labels, (u32)i, (u32)(up + 1));
        }
    }
}

// After every union: points each kept pixel's label straight at its root, and marks the root of
// every strong pixel's component STRONG. Concurrent writers of one label or one root write the
// same value, and map only changes WEAK -> STRONG, so which pixels are kept is never in doubt.
extern "C" __global__ void canny_flatten(u8* map, u64 n, u32* labels) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u8 v = map[i];
        if (v == CANNY_NONE) continue;
        const u32 r = canny_find(labels, (u32)i);
        labels[i] = r;
        if (v == CANNY_STRONG && r != (u32)i) map[r] = CANNY_STRONG;
    }
}

// 255 where the pixel is kept and its component's root is STRONG, else 0.
extern "C" __global__ void canny_finish(const u8* __restrict__ map, const u32* __restrict__ labels, u64 n,
                                        u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = map[i] != CANNY_NONE && map[labels[i]] == CANNY_STRONG ? 255 : 0;
}
