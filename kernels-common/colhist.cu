// colhist: a histogram of every column (or row), counts[bin * lines + line]; the CPU reference is
// crates/ops/src/colhist.rs.
//
// colhist_tiled_*: block (i, j) holds the histograms of lines [i * tile, i * tile + tile) in shared
// memory, laid out sh[bin * tile + line] so the lanes of a warp (neighbouring columns) hit
// different banks, counts the stretch [j * span, j * span + span) of those lines with shared
// atomics, then adds its non-zero counters to the global matrix. colhist_global_* is for bin
// counts whose histograms do not fit in shared memory even for one line: global atomics.
#include "histopipe.cuh"

// Geometry::is_original, operation for operation: the pixel centre mapped into the original by
// (a x + b y + c, d x + e y + f), rounded half up, inside ow x oh.
struct Mask {
    u32 on;
    double a, b, c, d, e, f, ow, oh;

    __device__ __forceinline__ bool counts(u32 x, u32 y) const {
        if (!on) return true;
        const double fx = (double)x, fy = (double)y;
        const double ox = a * fx + b * fy + c;
        const double oy = d * fx + e * fy + f;
        const double rx = floor(ox + 0.5), ry = floor(oy + 0.5);
        return rx >= 0.0 && ry >= 0.0 && rx < ow && ry < oh;
    }
};

// bin_of in colhist.rs: v * bins < 2^32 for 16-bit samples and bins <= 65536.
__device__ __forceinline__ u32 bin_of(u32 v, u32 bins, u32 maxval) {
    const u32 b = v * bins / (maxval + 1);
    return b < bins ? b : bins - 1;
}

template <typename T, bool ROWS>
__device__ void colhist_tiled(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, u32 tile, u32 span,
                              const Mask& mask, u32* __restrict__ counts) {
    extern __shared__ u32 sh[];
    const u32 lines = ROWS ? h : w, along = ROWS ? w : h;
    const u32 l0 = blockIdx.x * tile, a0 = blockIdx.y * span;
    const u32 nl = min(tile, lines - l0), na = min(span, along - a0);
    for (u32 i = threadIdx.x; i < bins * tile; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    // The host keeps tile * span under 2^31, so 32-bit indices suffice (no 64-bit division).
    const u32 total = nl * na;
    for (u32 i = threadIdx.x; i < total; i += blockDim.x) {
        // Consecutive threads take consecutive x: coalesced reads in both directions.
        u32 l, a, x, y;
        if (ROWS) {
            l = i / na;
            a = i - l * na;
            x = a0 + a;
            y = l0 + l;
        } else {
            a = i / nl;
            l = i - a * nl;
            x = l0 + l;
            y = a0 + a;
        }
        if (!mask.counts(x, y)) continue;
        const u32 bin = bin_of((u32)px[(u64)y * w + x], bins, maxval);
        atomicAdd(&sh[bin * tile + l], 1u);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < bins * tile; i += blockDim.x) {
        const u32 bin = i / tile, l = i - bin * tile;
        const u32 c = sh[i];
        if (l < nl && c != 0) atomicAdd(&counts[(u64)bin * lines + l0 + l], c);
    }
}

template <typename T, bool ROWS>
__device__ void colhist_global(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, const Mask& mask,
                               u32* __restrict__ counts) {
    const u32 lines = ROWS ? h : w;
    const u64 total = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        if (!mask.counts(x, y)) continue;
        const u32 bin = bin_of((u32)px[i], bins, maxval);
        atomicAdd(&counts[(u64)bin * lines + (ROWS ? y : x)], 1u);
    }
}

#define COLHIST_KERNELS(T, DIR, ROWS)                                                                          \
    extern "C" __global__ void colhist_tiled_##DIR##_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins,      \
                                                         u32 tile, u32 span, u32 masked, double a, double b,   \
                                                         double c, double d, double e, double f, double ow,    \
                                                         double oh, u32* counts) {                             \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh};                                                     \
        colhist_tiled<T, ROWS>(px, w, h, maxval, bins, tile, span, mask, counts);                             \
    }                                                                                                          \
    extern "C" __global__ void colhist_global_##DIR##_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins,     \
                                                          u32 tile, u32 span, u32 masked, double a, double b,  \
                                                          double c, double d, double e, double f, double ow,   \
                                                          double oh, u32* counts) {                            \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh};                                                     \
        colhist_global<T, ROWS>(px, w, h, maxval, bins, mask, counts);                                        \
    }

COLHIST_KERNELS(u8, cols, false)
COLHIST_KERNELS(u8, rows, true)
COLHIST_KERNELS(u16, cols, false)
COLHIST_KERNELS(u16, rows, true)
