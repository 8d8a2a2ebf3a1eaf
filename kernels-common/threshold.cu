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

// Sauvola's and Niblack's thresholds as scikit-image computes them (threshold/local/stats.rs):
// the frame padded by numpy's reflection (W/2 + 1 before, W/2 after), its integral images of the
// samples (S) and their squares (Q) as numpy's cumsum down the columns (stats_cols, a thread per
// padded column) then along the rows (stats_rows, a thread per padded row), each a running f64
// sum; then each window's sum ((a - b) - c) + d, m = sum / W^2, s = sqrt(max(g2 - m m, 0)),
// t = m - k s (Niblack) or m (1 + k (s / r - 1)) (Sauvola), every step rounded once; maxval where
// v > t (not, when inverted).
__device__ __forceinline__ u32 reflected(i64 i, u32 len) {
    if (len == 1) return 0;
    const i64 period = 2 * ((i64)len - 1);
    i64 j = i % period;
    if (j < 0) j += period;
    return (u32)(j >= (i64)len ? period - j : j);
}

// A sample as _mean_std reads it: its value, and its square (float32 samples squared in float32).
__device__ __forceinline__ double square_of(u8 v) { return __dmul_rn((double)v, (double)v); }
__device__ __forceinline__ double square_of(u16 v) { return __dmul_rn((double)v, (double)v); }
__device__ __forceinline__ double square_of(float v) { return (double)__fmul_rn(v, v); }

template <typename T>
__device__ void stats_cols(const T* __restrict__ in, u32 w, u32 h, u32 win, double* __restrict__ s,
                           double* __restrict__ q) {
    const u32 pw = w + win, ph = h + win;
    const i64 before = win / 2 + 1;
    for (u32 j = blockIdx.x * blockDim.x + threadIdx.x; j < pw; j += gridDim.x * blockDim.x) {
        const u32 x = reflected((i64)j - before, w);
        double c = 0.0, cq = 0.0;
        for (u32 i = 0; i < ph; i++) {
            const T sample = in[(u64)reflected((i64)i - before, h) * w + x];
            const double v = (double)sample, vv = square_of(sample);
            c = i == 0 ? v : __dadd_rn(c, v);
            cq = i == 0 ? vv : __dadd_rn(cq, vv);
            s[(u64)i * pw + j] = c;
            q[(u64)i * pw + j] = cq;
        }
    }
}

extern "C" __global__ void stats_cols_u8(const u8* in, u32 w, u32 h, u32 win, double* s, double* q) {
    stats_cols<u8>(in, w, h, win, s, q);
}

extern "C" __global__ void stats_cols_u16(const u16* in, u32 w, u32 h, u32 win, double* s, double* q) {
    stats_cols<u16>(in, w, h, win, s, q);
}

extern "C" __global__ void stats_cols_f32(const float* in, u32 w, u32 h, u32 win, double* s, double* q) {
    stats_cols<float>(in, w, h, win, s, q);
}

extern "C" __global__ void stats_rows(double* __restrict__ s, double* __restrict__ q, u32 pw, u32 ph) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < 2 * ph; i += gridDim.x * blockDim.x) {
        double* row = (i < ph ? s : q) + (u64)(i % ph) * pw;
        for (u32 j = 1; j < pw; j++) row[j] = __dadd_rn(row[j - 1], row[j]);
    }
}

__device__ __forceinline__ double window_sum(const double* t, u32 pw, u32 x, u32 y, u32 win) {
    const double a = t[(u64)y * pw + x], b = t[(u64)y * pw + x + win];
    const double c = t[(u64)(y + win) * pw + x], d = t[(u64)(y + win) * pw + x + win];
    return __dadd_rn(__dsub_rn(__dsub_rn(a, b), c), d);
}

// Whether v lies above its window's threshold: integers in float64 throughout, float32 samples'
// statistics in float32 after the float64 sums (np.clip keeps a NaN: var < 0 ? 0 : var).
__device__ __forceinline__ bool above(double v, double sum, double sumsq, u32 win, u32 sauvola, double k, double r) {
    const double size = __dmul_rn((double)win, (double)win);
    const double m = __ddiv_rn(sum, size), g2 = __ddiv_rn(sumsq, size);
    const double var = __dsub_rn(g2, __dmul_rn(m, m));
    const double sd = __dsqrt_rn(var < 0.0 ? 0.0 : var);
    const double t = sauvola ? __dmul_rn(m, __dadd_rn(1.0, __dmul_rn(k, __dsub_rn(__ddiv_rn(sd, r), 1.0))))
                             : __dsub_rn(m, __dmul_rn(k, sd));
    return v > t;
}

__device__ __forceinline__ bool above(float v, double sum, double sumsq, u32 win, u32 sauvola, double k, double r) {
    const float size = (float)(win * win);
    const float m = __fdiv_rn((float)sum, size), g2 = __fdiv_rn((float)sumsq, size);
    const float var = __fsub_rn(g2, __fmul_rn(m, m));
    const float sd = __fsqrt_rn(var < 0.0f ? 0.0f : var);
    const float kf = (float)k, rf = (float)r;
    const float t = sauvola ? __fmul_rn(m, __fadd_rn(1.0f, __fmul_rn(kf, __fsub_rn(__fdiv_rn(sd, rf), 1.0f))))
                            : __fsub_rn(m, __fmul_rn(kf, sd));
    return v > t;
}

template <typename T>
__device__ void stats_out(const T* __restrict__ in, const double* __restrict__ s, const double* __restrict__ q,
                          u32 w, u32 h, u32 win, u32 sauvola, double k, double r, u32 inverted,
                          u8* __restrict__ out) {
    const u64 total = (u64)w * h;
    const u32 pw = w + win;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        const double sum = window_sum(s, pw, x, y, win), sumsq = window_sum(q, pw, x, y, win);
        bool on;
        if constexpr (sizeof(T) == 4) on = above((float)in[i], sum, sumsq, win, sauvola, k, r);
        else on = above((double)in[i], sum, sumsq, win, sauvola, k, r);
        out[i] = on != (inverted != 0) ? (u8)1 : (u8)0;
    }
}

extern "C" __global__ void stats_out_u8(const u8* in, const double* s, const double* q, u32 w, u32 h, u32 win,
                                        u32 sauvola, double k, double r, u32 inverted, u8* out) {
    stats_out<u8>(in, s, q, w, h, win, sauvola, k, r, inverted, out);
}

extern "C" __global__ void stats_out_u16(const u16* in, const double* s, const double* q, u32 w, u32 h, u32 win,
                                         u32 sauvola, double k, double r, u32 inverted, u8* out) {
    stats_out<u16>(in, s, q, w, h, win, sauvola, k, r, inverted, out);
}

extern "C" __global__ void stats_out_f32(const float* in, const double* s, const double* q, u32 w, u32 h,
                                         u32 win, u32 sauvola, double k, double r, u32 inverted, u8* out) {
    stats_out<float>(in, s, q, w, h, win, sauvola, k, r, inverted, out);
}

// A float frame through scikit-image's thresholds (threshold/float.rs): binary, 255 where
// v > t[0] (a NaN never), or labels, np.digitize's count of thresholds at or below v (a NaN the
// last, `count`), numbered from the top when inverted.
extern "C" __global__ void float_map(const float* __restrict__ in, u64 n, const float* __restrict__ t, u32 count,
                                     u32 labels, u32 inverted, u8* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const float v = in[i];
        if (!labels) {
            out[i] = ((v > t[0]) != (inverted != 0)) ? (u8)255 : (u8)0;
            continue;
        }
        u32 label = count;
        if (v == v) {
            label = 0;
            for (u32 j = 0; j < count; j++) label += t[j] <= v;
        }
        out[i] = (u8)(inverted ? count - label : label);
    }
}
