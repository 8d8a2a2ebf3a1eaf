// stretch: the map of every sample to its output level. Integer samples through a look-up table
// made on the host; float samples through the curve itself, the same double operations in the
// same order as crates/ops/src/stretch/curve.rs (each one correctly rounded: __d*_rn intrinsics,
// no fused multiply-add), so both backends give the same bits. docs/stretch.md states the map.
#include "histopipe.cuh"

// out[i] = lut[min(in[i], levels - 1)], a grid-stride loop.
template <typename I, typename O>
__device__ void map_lut(const I* __restrict__ in, u64 n, const O* __restrict__ lut, u32 levels,
                        O* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 v = in[i];
        out[i] = __ldg(&lut[v < levels ? v : levels - 1]);
    }
}

extern "C" __global__ void map_u8_u8(const u8* in, u64 n, const u8* lut, u32 levels, u8* out) {
    map_lut(in, n, lut, levels, out);
}
extern "C" __global__ void map_u8_u16(const u8* in, u64 n, const u16* lut, u32 levels, u16* out) {
    map_lut(in, n, lut, levels, out);
}
extern "C" __global__ void map_u16_u8(const u16* in, u64 n, const u8* lut, u32 levels, u8* out) {
    map_lut(in, n, lut, levels, out);
}
extern "C" __global__ void map_u16_u16(const u16* in, u64 n, const u16* lut, u32 levels, u16* out) {
    map_lut(in, n, lut, levels, out);
}

// ln x for x >= 1, curve.rs's `ln`: x = m 2^e with m in (sqrt2/2, sqrt2], s = (m - 1) / (m + 1),
// ln x = e ln2 + 2 s P(s^2), P by Horner's rule with coefficients 1 / (2k + 1), k < terms.
__device__ double ln_from_1(double x, double ln2, double sqrt2, u32 terms) {
    const u64 bits = (u64)__double_as_longlong(x);
    i64 e = (i64)(bits >> 52) - 1023;
    double m = __longlong_as_double((i64)((bits & ((1ull << 52) - 1)) | (1023ull << 52)));
    if (m > sqrt2) {
        m = __dmul_rn(m, 0.5);
        e += 1;
    }
    const double s = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
    const double z = __dmul_rn(s, s);
    double p = __ddiv_rn(1.0, (double)(2 * (terms - 1) + 1));
    for (u32 k = terms - 1; k-- > 0;) p = __dadd_rn(__dmul_rn(p, z), __ddiv_rn(1.0, (double)(2 * k + 1)));
    return __dadd_rn(__dmul_rn((double)e, ln2), __dmul_rn(__dmul_rn(2.0, s), p));
}

// The level of one float sample, curve.rs's `Curve::level_with`. kind: 0 linear, 1 log
// (param a), 2 sqrt, 3 asinh (param b); norm: the scale's numerator at t = 1.
__device__ u32 curve_level(float v, double lo, double hi, u32 kind, double param, double norm, double maxout,
                           double ln2, double sqrt2, u32 terms) {
    if (v != v) return 0;
    const double x = (double)v;
    double t;
    if (hi > lo) {
        t = __ddiv_rn(__dsub_rn(x, lo), __dsub_rn(hi, lo));
        t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
    } else {
        t = x > lo ? 1.0 : 0.0;
    }
    double f;
    switch (kind) {
    case 1:
        f = __ddiv_rn(ln_from_1(__dadd_rn(1.0, __dmul_rn(param, t)), ln2, sqrt2, terms), norm);
        break;
    case 2:
        f = __dsqrt_rn(t);
        break;
    case 3: {
        const double y = __ddiv_rn(t, param);
        f = __ddiv_rn(ln_from_1(__dadd_rn(y, __dsqrt_rn(__dadd_rn(__dmul_rn(y, y), 1.0))), ln2, sqrt2, terms), norm);
        break;
    }
    default:
        f = t;
    }
    const int r = __double2int_rn(__dmul_rn(f, maxout));
    return r < 0 ? 0 : r > (int)maxout ? (u32)maxout : (u32)r;
}

template <typename O>
__device__ void curve(const float* __restrict__ in, u64 n, double lo, double hi, u32 kind, double param,
                      double norm, double maxout, double ln2, double sqrt2, u32 terms, O* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = (O)curve_level(in[i], lo, hi, kind, param, norm, maxout, ln2, sqrt2, terms);
}

extern "C" __global__ void curve_f32_u8(const float* in, u64 n, double lo, double hi, u32 kind, double param,
                                        double norm, double maxout, double ln2, double sqrt2, u32 terms, u8* out) {
    curve(in, n, lo, hi, kind, param, norm, maxout, ln2, sqrt2, terms, out);
}
extern "C" __global__ void curve_f32_u16(const float* in, u64 n, double lo, double hi, u32 kind, double param,
                                         double norm, double maxout, double ln2, double sqrt2, u32 terms,
                                         u16* out) {
    curve(in, n, lo, hi, kind, param, norm, maxout, ln2, sqrt2, terms, out);
}
