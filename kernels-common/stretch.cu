// stretch: the map of every sample to its output level. Integer samples through a look-up table
// made on the host; float samples through the curve itself, the same double operations in the
// same order as crates/ops/src/stretch/curve.rs (each one correctly rounded: __d*_rn intrinsics,
// no fused multiply-add), so both backends give the same bits. docs/stretch.md states the map.
#include "histopipe.cuh"

// out[i] = lut[min(in[i], levels - 1)]. Each thread maps a chunk of 16 input bytes per step
// (PER = 16 / sizeof(I) samples) with one vector load and the matching vector store(s) of
// PER * sizeof(O) bytes (8, 16 or 32) when both buffers are 16-byte aligned (pooled buffers are),
// then a scalar grid-stride loop for the rest, as equalize.cu's map. The launch covers
// ceil(n / PER) threads (gpu.rs). An 8-bit input indexes at most 256 entries, staged in shared
// memory; a 16-bit one reads its table (up to 65536 entries) through the read-only cache.
template <typename I, typename O>
__device__ void map_lut(const I* __restrict__ in, u64 n, const O* __restrict__ lut, u32 levels,
                        O* __restrict__ out) {
    constexpr bool SHARED = sizeof(I) == 1;
    constexpr u32 PER = 16 / sizeof(I);
    constexpr u32 OUT_BYTES = PER * sizeof(O);
    static_assert(OUT_BYTES == 8 || OUT_BYTES == 16 || OUT_BYTES == 32, "output chunk");
    __shared__ O staged[SHARED ? 256 : 1];
    const u32 last = levels - 1;
    if constexpr (SHARED) {
        const u32 count = levels < 256 ? levels : 256;
        for (u32 i = threadIdx.x; i < count; i += blockDim.x) staged[i] = lut[i];
        __syncthreads();
    }
    auto look_up = [&](u32 v) -> O {
        const u32 k = v < levels ? v : last;
        if constexpr (SHARED) return staged[k];
        else return __ldg(&lut[k]);
    };
    union Out {
        uint4 v[OUT_BYTES >= 16 ? OUT_BYTES / 16 : 1];
        uint2 h;
        O s[PER];
    };
    for_my_chunks<I>(
        n, aligned16(in) && aligned16(out),
        [&](u64 c) {
            Vec16<I> src;
            src.v = reinterpret_cast<const uint4*>(in)[c];
            Out dst;
#pragma unroll
            for (u32 k = 0; k < PER; k++) dst.s[k] = look_up(src.s[k]);
            if constexpr (OUT_BYTES == 8) {
                reinterpret_cast<uint2*>(out)[c] = dst.h;
            } else {
                constexpr u32 W = OUT_BYTES / 16;
#pragma unroll
                for (u32 j = 0; j < W; j++) reinterpret_cast<uint4*>(out)[c * W + j] = dst.v[j];
            }
        },
        [&](u64 i) { out[i] = look_up(in[i]); });
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
