// edges: Canny as OpenCV computes it (see crates/ops/src/edges.rs for the exact rules), and the
// optional Gaussian blur. Every kernel mirrors the CPU backend's arithmetic step for step, so the
// two give identical edges.
#include "histopipe.cuh"

#define CANNY_NONE 0
#define CANNY_WEAK 1
#define CANNY_STRONG 2
#define CANNY_TG22 13573
#define CANNY_TILE 32

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

// Sobel with replicated borders; the magnitude (L1 or L2) and the suppression direction:
// 0 left/right, 1 above/below, 2 diagonal (-1,-1)/(+1,+1), 3 diagonal (+1,-1)/(-1,+1).
extern "C" __global__ void canny_gradient(const u8* __restrict__ in, u32 w, u32 h, u32 l2, int* __restrict__ mag,
                                          u8* __restrict__ dir) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        const u32 xl = x > 0 ? x - 1 : 0, xr = x + 1 < w ? x + 1 : w - 1;
        const u32 yu = y > 0 ? y - 1 : 0, yd = y + 1 < h ? y + 1 : h - 1;
        const u8* ru = in + (u64)yu * w;
        const u8* rc = in + (u64)y * w;
        const u8* rd = in + (u64)yd * w;
        const int dx = ((int)ru[xr] - (int)ru[xl]) + 2 * ((int)rc[xr] - (int)rc[xl]) + ((int)rd[xr] - (int)rd[xl]);
        const int dy = ((int)rd[xl] - (int)ru[xl]) + 2 * ((int)rd[x] - (int)ru[x]) + ((int)rd[xr] - (int)ru[xr]);
        mag[i] = l2 ? dx * dx + dy * dy : abs(dx) + abs(dy);
        const int ax = abs(dx), ay = abs(dy) << 15;
        const int tg22x = ax * CANNY_TG22;
        u8 d;
        if (ay < tg22x) d = 0;
        else if (ay > tg22x + (ax << 16)) d = 1;
        else d = (dx ^ dy) < 0 ? 3 : 2;
        dir[i] = d;
    }
}

__device__ __forceinline__ int mag_at(const int* mag, u32 w, u32 h, int x, int y) {
    return (x < 0 || y < 0 || (u32)x >= w || (u32)y >= h) ? 0 : mag[(u64)y * w + x];
}

// Non-maximum suppression with OpenCV's strict/non-strict comparisons, then the thresholds.
extern "C" __global__ void canny_nms(const int* __restrict__ mag, const u8* __restrict__ dir, u32 w, u32 h, int low,
                                     int high, u8* __restrict__ map) {
    const u64 n = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const int y = (int)(i / w), x = (int)(i - (u64)y * w);
        const int m = mag[i];
        u8 out = CANNY_NONE;
        if (m > low) {
            bool keep;
            switch (dir[i]) {
                case 0: keep = m > mag_at(mag, w, h, x - 1, y) && m >= mag_at(mag, w, h, x + 1, y); break;
                case 1: keep = m > mag_at(mag, w, h, x, y - 1) && m >= mag_at(mag, w, h, x, y + 1); break;
                case 2: keep = m > mag_at(mag, w, h, x - 1, y - 1) && m > mag_at(mag, w, h, x + 1, y + 1); break;
                default: keep = m > mag_at(mag, w, h, x + 1, y - 1) && m > mag_at(mag, w, h, x - 1, y + 1); break;
            }
            if (keep) out = m > high ? CANNY_STRONG : CANNY_WEAK;
        }
        map[i] = out;
    }
}

// One hysteresis pass. Each block loads its 32x32 tile and a one-pixel halo into shared memory and
// promotes weak pixels next to strong ones until the tile is stable, then writes the promoted
// pixels back. Promotion only ever turns WEAK into STRONG, and only next to a STRONG pixel, so
// blocks racing on each other's halos can delay a promotion to a later pass but never make a wrong
// one; the host repeats passes until one changes nothing, which is the unique fixpoint. Each pass
// of a batch has its own flag, changed[slot].
extern "C" __global__ void canny_hysteresis(u8* map, u32 w, u32 h, u32* changed, u32 slot) {
    __shared__ u8 tile[CANNY_TILE + 2][CANNY_TILE + 2];
    __shared__ int again;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = (int)(blockIdx.x * CANNY_TILE) - 1, y0 = (int)(blockIdx.y * CANNY_TILE) - 1;
    for (int k = ty * CANNY_TILE + tx; k < (CANNY_TILE + 2) * (CANNY_TILE + 2); k += CANNY_TILE * CANNY_TILE) {
        const int lx = k % (CANNY_TILE + 2), ly = k / (CANNY_TILE + 2);
        const int gx = x0 + lx, gy = y0 + ly;
        tile[ly][lx] = (gx < 0 || gy < 0 || (u32)gx >= w || (u32)gy >= h) ? CANNY_NONE : map[(u64)gy * w + gx];
    }
    __syncthreads();
    const int lx = tx + 1, ly = ty + 1;
    const u8 before = tile[ly][lx];
    for (;;) {
        if (tx == 0 && ty == 0) again = 0;
        __syncthreads();
        if (tile[ly][lx] == CANNY_WEAK) {
            bool near = false;
            for (int oy = -1; oy <= 1; oy++)
                for (int ox = -1; ox <= 1; ox++) near |= tile[ly + oy][lx + ox] == CANNY_STRONG;
            if (near) {
                tile[ly][lx] = CANNY_STRONG;
                again = 1;
            }
        }
        __syncthreads();
        if (!again) break;
        __syncthreads();
    }
    const int gx = x0 + lx, gy = y0 + ly;
    if (before == CANNY_WEAK && tile[ly][lx] == CANNY_STRONG && (u32)gx < w && (u32)gy < h) {
        map[(u64)gy * w + gx] = CANNY_STRONG;
        changed[slot] = 1;
    }
}

extern "C" __global__ void canny_finish(const u8* __restrict__ map, u64 n, u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = map[i] == CANNY_STRONG ? 255 : 0;
}
