// radon: the Radon transform (sinogram) in scikit-image's geometry. The CPU reference is
// crates/ops/src/radon/mod.rs (Radon::position_sum, row_range, Tap), and every expression here is
// the same one in the same type: integer frames in exact integers (the sum of a position cannot
// depend on an order), float frames in double with each product and sum rounded once, in the
// CPU's order (kernels are compiled with --fmad=false, and the double operations are spelt out).
//
// Two kernels: radon_border_* copies the part of the frame that is read into a buffer with a
// border of one 0 on each side, so that the main loop reads its four taps with no test; radon_*
// runs one thread per (angle, position), consecutive threads consecutive positions of one angle.
#include "histopipe.cuh"

// Mirrors FRAC, WEIGHT_BITS of crates/ops/src/radon/mod.rs (a test there reads these lines).
#define RADON_FRAC 30
#define RADON_WEIGHT_BITS 12
#define RADON_ONE (1u << RADON_WEIGHT_BITS)
#define RADON_HALF (1ll << (RADON_FRAC - RADON_WEIGHT_BITS - 1))

// out (sw + 2) x (sh + 2) = the frame's part from column x0, row y0, sw x sh, framed by zeros.
// Grid: x over the columns, y over the rows (looping past gridDim.y).
template <typename T>
__device__ void radon_border(const T* __restrict__ in, u32 w, u32 x0, u32 y0, u32 sw, u32 sh, T* __restrict__ out) {
    const u32 pitch = sw + 2;
    const u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= pitch) return;
    for (u32 r = blockIdx.y; r < sh + 2; r += gridDim.y) {
        T v = (T)0;
        if (r >= 1 && r <= sh && c >= 1 && c <= sw) v = __ldg(in + ((u64)(y0 + r - 1) * w + x0 + c - 1));
        out[(u64)r * pitch + c] = v;
    }
}

extern "C" __global__ void radon_border_u8(const u8* in, u32 w, u32 x0, u32 y0, u32 sw, u32 sh, u8* out) {
    radon_border<u8>(in, w, x0, y0, sw, sh, out);
}
extern "C" __global__ void radon_border_u16(const u16* in, u32 w, u32 x0, u32 y0, u32 sw, u32 sh, u16* out) {
    radon_border<u16>(in, w, x0, y0, sw, sh, out);
}
extern "C" __global__ void radon_border_f32(const float* in, u32 w, u32 x0, u32 y0, u32 sw, u32 sh, float* out) {
    radon_border<float>(in, w, x0, y0, sw, sh, out);
}

// floor(a / b) and ceil(a / b) for b > 0 (Rust's div_euclid for a positive divisor).
__device__ __forceinline__ i64 radon_floor_div(i64 a, i64 b) {
    const i64 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}
__device__ __forceinline__ i64 radon_ceil_div(i64 a, i64 b) { return -radon_floor_div(-a, b); }

// The integers y in [0, n) with 0 <= a + s y < limit: [*lo, *hi) (row_range in mod.rs).
__device__ __forceinline__ void radon_rows(i64 a, i64 s, i64 limit, i64 n, i64* lo, i64* hi) {
    i64 l, h;
    if (s == 0) {
        const bool in = a >= 0 && a < limit;
        l = 0;
        h = in ? n : 0;
    } else if (s > 0) {
        l = radon_ceil_div(-a, s);
        h = radon_floor_div(limit - 1 - a, s) + 1;
    } else {
        l = radon_ceil_div(a - limit + 1, -s);
        h = radon_floor_div(a, -s) + 1;
    }
    *lo = l < 0 ? 0 : (l > n ? n : l);
    *hi = h < 0 ? 0 : (h > n ? n : h);
}

// One row's bilinear value added to the sum (Tap::add). Integers: top and bottom below 2^28, the
// row below 2^40, the sum exact in u64.
__device__ __forceinline__ void radon_add(u64& sum, u32 s00, u32 s01, u32 s10, u32 s11, u32 wu, u32 wv) {
    const u32 top = s00 * (RADON_ONE - wu) + s01 * wu;
    const u32 bottom = s10 * (RADON_ONE - wu) + s11 * wu;
    sum += (u64)top * (RADON_ONE - wv) + (u64)bottom * wv;
}

// Floats: a tap of weight 0 is not read (its NaN does not spread).
__device__ __forceinline__ double radon_blend(float a, float b, u32 w) {
    if (w == 0) return __dmul_rn((double)a, (double)RADON_ONE);
    return __dadd_rn(__dmul_rn((double)a, (double)(RADON_ONE - w)), __dmul_rn((double)b, (double)w));
}
__device__ __forceinline__ void radon_add(double& sum, float s00, float s01, float s10, float s11, u32 wu, u32 wv) {
    const double top = radon_blend(s00, s01, wu);
    double row;
    if (wv == 0) {
        row = __dmul_rn(top, (double)RADON_ONE);
    } else {
        row = __dadd_rn(__dmul_rn(top, (double)(RADON_ONE - wv)), __dmul_rn(radon_blend(s10, s11, wu), (double)wv));
    }
    sum = __dadd_rn(sum, row);
}

__device__ __forceinline__ float radon_value(u64 sum, double scale) {
    return __double2float_rn(__dmul_rn(__ull2double_rn(sum), scale));
}
// A NaN sum is the quiet NaN 0x7FC00000 (Tap::value): which NaN the sum holds depends on the
// order of its NaN operands, which the two backends' compilers choose differently.
__device__ __forceinline__ float radon_value(double sum, double scale) {
    return canonical_nan(__double2float_rn(__dmul_rn(sum, scale)));
}

template <typename T> struct RadonSum { typedef u64 type; };
template <> struct RadonSum<float> { typedef double type; };

// b: the bordered samples, (sw + 2) x (sh + 2); trig: (cos, sin) of each angle in fixed point;
// n: the square's side, c its centre, (pad_x, pad_y) where the part's top-left pixel sits in it;
// out: n rows of `angles` values. Grid: x over positions, y over angles (looping past gridDim.y).
template <typename T>
__device__ void radon(const T* __restrict__ b, u32 sw, u32 sh, const i64* __restrict__ trig, u32 angles, u32 n,
                      u32 center, u32 pad_x, u32 pad_y, double scale, float* __restrict__ out) {
    const u32 x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    const u32 pitch = sw + 2;
    const i64 c = center, dx = (i64)x - c;
    const i64 u_off = ((c - (i64)pad_x + 1) << RADON_FRAC) + RADON_HALF;
    const i64 v_off = ((c - (i64)pad_y + 1) << RADON_FRAC) + RADON_HALF;
    const i64 u_limit = ((i64)sw + 1) << RADON_FRAC, v_limit = ((i64)sh + 1) << RADON_FRAC;
    for (u32 a = blockIdx.y; a < angles; a += gridDim.y) {
        const i64 cs = __ldg(trig + 2 * (u64)a), sn = __ldg(trig + 2 * (u64)a + 1);
        i64 u = cs * dx - sn * c + u_off;
        i64 v = -sn * dx - cs * c + v_off;
        i64 u0, u1, v0, v1;
        radon_rows(u, sn, u_limit, n, &u0, &u1);
        radon_rows(v, cs, v_limit, n, &v0, &v1);
        const i64 lo = u0 > v0 ? u0 : v0, hi = u1 < v1 ? u1 : v1;
        u += sn * lo;
        v += cs * lo;
        typename RadonSum<T>::type sum = 0;
        for (i64 y = lo; y < hi; ++y) {
            const u32 iu = (u32)(u >> RADON_FRAC), iv = (u32)(v >> RADON_FRAC);
            const u32 wu = (u32)(u >> (RADON_FRAC - RADON_WEIGHT_BITS)) & (RADON_ONE - 1);
            const u32 wv = (u32)(v >> (RADON_FRAC - RADON_WEIGHT_BITS)) & (RADON_ONE - 1);
            const T* p = b + ((u64)iv * pitch + iu);
            radon_add(sum, __ldg(p), __ldg(p + 1), __ldg(p + pitch), __ldg(p + pitch + 1), wu, wv);
            u += sn;
            v += cs;
        }
        out[(u64)x * angles + a] = radon_value(sum, scale);
    }
}

extern "C" __global__ void radon_u8(const u8* b, u32 sw, u32 sh, const i64* trig, u32 angles, u32 n, u32 center,
                                    u32 pad_x, u32 pad_y, double scale, float* out) {
    radon<u8>(b, sw, sh, trig, angles, n, center, pad_x, pad_y, scale, out);
}
extern "C" __global__ void radon_u16(const u16* b, u32 sw, u32 sh, const i64* trig, u32 angles, u32 n, u32 center,
                                     u32 pad_x, u32 pad_y, double scale, float* out) {
    radon<u16>(b, sw, sh, trig, angles, n, center, pad_x, pad_y, scale, out);
}
extern "C" __global__ void radon_f32(const float* b, u32 sw, u32 sh, const i64* trig, u32 angles, u32 n,
                                     u32 center, u32 pad_x, u32 pad_y, double scale, float* out) {
    radon<float>(b, sw, sh, trig, angles, n, center, pad_x, pad_y, scale, out);
}
