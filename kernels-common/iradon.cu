// iradon: filtered back-projection in scikit-image's geometry. The CPU reference is
// crates/ops/src/iradon/mod.rs (Iradon::pixel, interp): the host filters the sinogram once (its
// FFT, in f64) for both backends, and every expression here is the CPU's, in double with each
// product and sum rounded once (kernels are compiled with --fmad=false, and the double operations
// are spelt out), the angles added in their order, one thread an output pixel.
#include "histopipe.cuh"

// numpy's interp(t, xp, col, left=0, right=0), xp = -(s div 2) ... s - 1 - s div 2 (interp in
// mod.rs): 0 outside, col at a grid point, else slope (t - xp[j]) + col[j], and numpy's second
// try where that is NaN.
__device__ __forceinline__ double iradon_interp(const double* __restrict__ col, u32 s, double t) {
    const double h = (double)(s / 2);
    if (t < -h || t > __dsub_rn((double)(s - 1), h)) return 0.0;
    const double f = floor(t);
    const u64 j = (u64)(i64)__dadd_rn(f, h);
    const double frac = __dsub_rn(t, f);
    if (frac == 0.0) return __ldg(col + j);
    const double a = __ldg(col + j), b = __ldg(col + j + 1);
    const double slope = __dsub_rn(b, a);
    double v = __dadd_rn(__dmul_rn(slope, frac), a);
    if (!isnan(v)) return v;
    v = __dadd_rn(__dmul_rn(slope, __dsub_rn(frac, 1.0)), b);
    return (isnan(v) && a == b) ? a : v;
}

// filtered: `angles` columns of s values (angle-major); trig: (cos, sin) of each angle; out: the
// n x n frame. Grid: x over columns, y over rows (looping past the grid's rows).
extern "C" __global__ void iradon(const double* __restrict__ filtered, u32 s, const double* __restrict__ trig,
                                  u32 angles, u32 n, u32 circle, double scale, float* __restrict__ out) {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const i64 r = n / 2;
    const i64 dj = (i64)j - r;
    for (u32 i = blockIdx.y * blockDim.y + threadIdx.y; i < n; i += gridDim.y * blockDim.y) {
        const i64 di = (i64)i - r;
        float value = 0.0f;
        if (!circle || di * di + dj * dj <= r * r) {
            const double x = (double)dj, y = (double)di;
            double sum = 0.0;
            for (u32 a = 0; a < angles; ++a) {
                const double cs = __ldg(trig + 2 * (u64)a), sn = __ldg(trig + 2 * (u64)a + 1);
                const double t = __dsub_rn(__dmul_rn(x, cs), __dmul_rn(y, sn));
                sum = __dadd_rn(sum, iradon_interp(filtered + (u64)a * s, s, t));
            }
            value = canonical_nan(__double2float_rn(__dmul_rn(sum, scale)));
        }
        out[(u64)i * n + j] = value;
    }
}
