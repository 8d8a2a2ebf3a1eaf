// threshold's local methods (crates/ops/src/threshold/local): OpenCV's adaptiveThreshold, MEAN_C
// and GAUSSIAN_C, on 8-bit frames, in the arithmetic of the CPU's passes. One thread per output
// sample, a grid-stride loop over the frame; the border sample (row) is replicated.
//
// box_rows / box_cols: each sample's row sum over `side` samples (u32), then the block's sum of
// those, the mean (2s + d) / (2d) for d = side^2 samples, and the comparison.
// gauss_rows / gauss_cols: the samples as floats, the row pass s = x0 k0 then fma(xi, ki, s) left
// to right; the column pass s = r0 kc then fma(r-i + ri, kc+i, s) outwards (kc the centre), each
// step rounded once (__fmul_rn, __fmaf_rn, __fadd_rn: no contraction the CPU does not do); the
// mean s rounded to the nearest integer, ties to even, saturated to 0..255.
// The output: maxval where v - m > limit (v - m <= limit when inverted), else 0.
#include "histopipe.cuh"

__device__ __forceinline__ u32 clamped(int i, u32 len) { return (u32)min(max(i, 0), (int)len - 1); }

__device__ __forceinline__ u8 decide(int v, int m, int limit, u32 inverted, u32 maxval) {
    const int d = v - m;
    const bool on = inverted ? d <= limit : d > limit;
    return on ? (u8)maxval : (u8)0;
}

extern "C" __global__ void box_rows(const u8* __restrict__ in, u32 w, u32 h, u32 side, u32* __restrict__ sums) {
    const u64 total = (u64)w * h;
    const int r = (int)(side / 2);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w);
        const int x = (int)(i - (u64)y * w);
        const u8* row = in + (u64)y * w;
        u32 s = 0;
        for (int o = -r; o <= r; o++) s += row[clamped(x + o, w)];
        sums[i] = s;
    }
}

extern "C" __global__ void box_cols(const u8* __restrict__ in, const u32* __restrict__ sums, u32 w, u32 h,
                                    u32 side, int limit, u32 inverted, u32 maxval, u8* __restrict__ out) {
    const u64 total = (u64)w * h;
    const int r = (int)(side / 2);
    const u64 d = (u64)side * side;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w);
        const u32 x = (u32)(i - (u64)y * w);
        u32 s = 0;
        for (int o = -r; o <= r; o++) s += sums[(u64)clamped((int)y + o, h) * w + x];
        const int m = (int)((2 * (u64)s + d) / (2 * d));
        out[i] = decide(in[i], m, limit, inverted, maxval);
    }
}

extern "C" __global__ void gauss_rows(const u8* __restrict__ in, u32 w, u32 h, const float* __restrict__ k,
                                      u32 n, float* __restrict__ sums) {
    const u64 total = (u64)w * h;
    const int r = (int)(n / 2);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w);
        const int x = (int)(i - (u64)y * w);
        const u8* row = in + (u64)y * w;
        float s = __fmul_rn((float)row[clamped(x - r, w)], k[0]);
        for (u32 j = 1; j < n; j++) s = __fmaf_rn((float)row[clamped(x + (int)j - r, w)], k[j], s);
        sums[i] = s;
    }
}

extern "C" __global__ void gauss_cols(const u8* __restrict__ in, const float* __restrict__ sums, u32 w, u32 h,
                                      const float* __restrict__ k, u32 n, int limit, u32 inverted, u32 maxval,
                                      u8* __restrict__ out) {
    const u64 total = (u64)w * h;
    const int r = (int)(n / 2);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w);
        const u32 x = (u32)(i - (u64)y * w);
        float s = __fmul_rn(sums[i], k[r]);
        for (int j = 1; j <= r; j++) {
            const float a = sums[(u64)clamped((int)y + j, h) * w + x];
            const float b = sums[(u64)clamped((int)y - j, h) * w + x];
            s = __fmaf_rn(__fadd_rn(a, b), k[r + j], s);
        }
        const int m = min(max(__float2int_rn(s), 0), 255);
        out[i] = decide(in[i], m, limit, inverted, maxval);
    }
}
