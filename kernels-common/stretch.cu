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
    static_assert(OUT_BYTES == 8 || OUT_BYTES == 16 || OUT_BYTES == 32 || OUT_BYTES == 64, "output chunk");
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
// --out LO:HI of integer frames: a table of float32 values (to_float.rs), looked up alike.
extern "C" __global__ void map_u8_f32(const u8* in, u64 n, const float* lut, u32 levels, float* out) {
    map_lut(in, n, lut, levels, out);
}
extern "C" __global__ void map_u16_f32(const u16* in, u64 n, const float* lut, u32 levels, float* out) {
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

// f(t) of t in [0, 1], curve.rs's `Curve::f`: kind 0 linear, 1 log (param a), 2 sqrt, 3 asinh
// (param b); norm: the scale's numerator at t = 1.
__device__ double curve_f(double t, u32 kind, double param, double norm, double ln2, double sqrt2, u32 terms) {
    switch (kind) {
    case 1:
        return __ddiv_rn(ln_from_1(__dadd_rn(1.0, __dmul_rn(param, t)), ln2, sqrt2, terms), norm);
    case 2:
        return __dsqrt_rn(t);
    case 3: {
        const double y = __ddiv_rn(t, param);
        return __ddiv_rn(ln_from_1(__dadd_rn(y, __dsqrt_rn(__dadd_rn(__dmul_rn(y, y), 1.0))), ln2, sqrt2, terms), norm);
    }
    default:
        return t;
    }
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

// np.clip of one value (not NaN), to_float.rs's `clip`: NumPy's max(x, lo) is x > lo ? x : lo.
template <typename T> __device__ T np_clip(T x, T lo, T hi) {
    x = x > lo ? x : lo;
    return x < hi ? x : hi;
}

// --out LO:HI of float samples on the linear scale: scikit-image's float32 arithmetic,
// to_float.rs's `Float32::value`: x = clip(v, lo, hi); (x - lo) / span * out_span + out_lo, each
// operation rounded to float32; a flat range clip(x, out_lo, out_hi). NaN, given or made: the
// canonical NaN.
extern "C" __global__ void to_float_f32_linear(const float* __restrict__ in, u64 n, float lo, float hi, float span,
                                               float out_span, float out_lo, float out_hi, u32 flat,
                                               float* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const float v = in[i];
        float r;
        if (v != v) r = __uint_as_float(HP_CANONICAL_NAN);
        else {
            const float x = np_clip(v, lo, hi);
            r = flat ? np_clip(x, out_lo, out_hi)
                     : __fadd_rn(__fmul_rn(__fdiv_rn(__fsub_rn(x, lo), span), out_span), out_lo);
        }
        // 0 / 0 (a span of 0 in float32) or 0 * inf make a NaN: the canonical one, as the CPU's.
        out[i] = canonical_nan(r);
    }
}

// --out LO:HI of float samples on the other scales, to_float.rs's `StretchTo::value_with`:
// t as curve_level's, f(t) (ohi - olo) + olo in double, rounded to float32; a flat range
// clip(lo, olo, ohi). NaN: the canonical NaN.
extern "C" __global__ void to_float_f32_curve(const float* __restrict__ in, u64 n, double lo, double hi, u32 kind,
                                              double param, double norm, double olo, double ohi, double ln2,
                                              double sqrt2, u32 terms, float* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const float v = in[i];
        float r;
        if (v != v) r = __uint_as_float(HP_CANONICAL_NAN);
        else if (hi > lo) {
            double t = __ddiv_rn(__dsub_rn((double)v, lo), __dsub_rn(hi, lo));
            t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
            const double f = curve_f(t, kind, param, norm, ln2, sqrt2, terms);
            r = __double2float_rn(__dadd_rn(__dmul_rn(f, __dsub_rn(ohi, olo)), olo));
        } else {
            r = __double2float_rn(np_clip(lo, olo, ohi));
        }
        out[i] = canonical_nan(r);
    }
}

// The cuts of `--saturate` on float frames (crates/ops/src/stretch/cuts.rs, which states the rule):
// each finite sample's key, its bits made unsigned in f32::total_cmp's order, counted by its high
// 16 bits (`key_counts_high`), then, within the two buckets holding the ranks sought, by its low 16
// bits (`key_counts_low`). Counts are whole numbers, so the host finds the ranks the CPU finds.
// Lanes of a warp whose samples share a bin add once, with the group's size, as histogram.cu's
// global histogram; every lane of a warp runs the same iterations (its first index bounds the
// loop), as __match_any_sync needs. A lane with nothing to count gets a bin no sample has.
__device__ __forceinline__ bool float_key(float v, u32* key) {
    const u32 bits = __float_as_uint(v);
    if ((bits & 0x7f800000u) == 0x7f800000u) return false;
    *key = (bits >> 31) ? ~bits : (bits | 0x80000000u);
    return true;
}

// high[b] += the finite samples whose key's high 16 bits are b (high: 65536 counts, zeroed).
extern "C" __global__ void key_counts_high(const float* __restrict__ in, u64 n, u64* __restrict__ high) {
    const u32 lane = threadIdx.x & 31;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
        u32 key = 0;
        const bool counted = i < n && float_key(in[i], &key);
        const u32 b = counted ? key >> 16 : 0xffffffffu;
        const u32 group = __match_any_sync(FULL_MASK, b);
        if (counted && lane == (u32)(__ffs(group) - 1)) atomicAdd(&high[b], (u64)__popc(group));
    }
}

// For the finite samples whose key's high 16 bits are lo_high (hi_high), lo_low[l] (hi_low[l]) +=
// those whose low 16 bits are l; a sample in both buckets (lo_high == hi_high) counts in both.
// lo_low and hi_low: 65536 counts each, zeroed.
extern "C" __global__ void key_counts_low(const float* __restrict__ in, u64 n, u32 lo_high, u32 hi_high,
                                          u64* __restrict__ lo_low, u64* __restrict__ hi_low) {
    const u32 lane = threadIdx.x & 31;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
        u32 key = 0;
        const bool finite = i < n && float_key(in[i], &key);
        const bool lo = finite && key >> 16 == lo_high, hi = finite && key >> 16 == hi_high;
        // The low 16 bits, and which buckets: 1 << 16 for lo_high's, 1 << 17 for hi_high's.
        const u32 b = lo || hi ? (key & 0xffffu) | (lo ? 1u << 16 : 0u) | (hi ? 1u << 17 : 0u) : 0xffffffffu;
        const u32 group = __match_any_sync(FULL_MASK, b);
        if ((lo || hi) && lane == (u32)(__ffs(group) - 1)) {
            const u64 count = (u64)__popc(group);
            if (lo) atomicAdd(&lo_low[key & 0xffffu], count);
            if (hi) atomicAdd(&hi_low[key & 0xffffu], count);
        }
    }
}
