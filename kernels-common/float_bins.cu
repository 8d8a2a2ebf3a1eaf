// float_bins: each float sample's class for `cdf` and `colhist` over a range (crates/ops/src/range.rs,
// which documents the rule): numpy.histogram's bin in f64, or a class after the bins. Every f64
// operation is an explicit _rn intrinsic, so none is fused into a multiply-add, in the CPU's order.
#include "histopipe.cuh"

// Edge i of 0..=bins: numpy.linspace's i * step + lo, the last hi; (i / bins) * delta + lo when the
// step underflows to 0.
__device__ __forceinline__ double edge(u32 i, u32 bins, double lo, double hi, double delta, double step) {
    if (i == bins) return hi;
    if (step == 0.0) return __dadd_rn(__dmul_rn(__ddiv_rn((double)i, (double)bins), delta), lo);
    return __dadd_rn(__dmul_rn((double)i, step), lo);
}

extern "C" __global__ void float_bins(const float* __restrict__ in, u64 n, double lo, double hi, double delta,
                                      double step, u32 bins, u16* __restrict__ out) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const double a = (double)in[k];
        u32 c;
        if (a != a) c = bins + 2;
        else if (a == -__longlong_as_double(0x7ff0000000000000ll)) c = bins + 3;
        else if (a == __longlong_as_double(0x7ff0000000000000ll)) c = bins + 4;
        else if (a < lo) c = bins;
        else if (a > hi) c = bins + 1;
        else {
            const double f = __dmul_rn(__ddiv_rn(__dsub_rn(a, lo), delta), (double)bins);
            c = (u32)f;
            if (c > bins - 1) c = bins - 1;
            if (a < edge(c, bins, lo, hi, delta, step)) c -= 1;
            if (c != bins - 1 && a >= edge(c + 1, bins, lo, hi, delta, step)) c += 1;
        }
        out[k] = (u16)c;
    }
}
