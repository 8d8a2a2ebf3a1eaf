// equalize: the look-up table from the cumulative distribution (histogram.cu's scan), and the map
// of every sample through it. The rules are documented in docs/equalize.md and mirrored exactly by
// crates/ops/src/equalize.rs.
#include "histopipe.cuh"

// One thread per level i of the look-up table: lut[i] = map(N - cdf_min, cdf[i] - cdf_min) (0
// for levels below the lowest present). A constant frame (cdf_min == N) maps to itself.
template <typename T, typename Map>
__device__ __forceinline__ void lut_entry(const u64* __restrict__ cdf, const u64* __restrict__ cdf_min,
                                          u32 levels, u64 total, T* __restrict__ lut, Map map) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= levels) return;
    const u64 least = *cdf_min, c = cdf[i];
    lut[i] = least == total ? (T)i : map(total - least, c > least ? c - least : 0);
}

// 8-bit: OpenCV's equalizeHist arithmetic. scale = maxval / (N - cdf_min) and the product
// (cdf - cdf_min) * scale in single precision, each operation rounded to nearest (explicit _rn
// intrinsics, whatever the compiler flags), then rounded half to even and clamped to 0..maxval.
extern "C" __global__ void lut_u8(const u64* __restrict__ cdf, const u64* __restrict__ cdf_min, u32 levels,
                                  u64 total, u32 maxval, u8* __restrict__ lut) {
    lut_entry(cdf, cdf_min, levels, total, lut, [=](u64 span, u64 above) {
        const float scale = __fdiv_rn((float)maxval, __ull2float_rn(span));
        const int r = __float2int_rn(__fmul_rn(__ull2float_rn(above), scale));
        return (u8)(r < 0 ? 0 : r > (int)maxval ? maxval : r);
    });
}

// 16-bit: round half up of (cdf - cdf_min) * maxval / (N - cdf_min), in integers (exact while
// N < 2^46).
extern "C" __global__ void lut_u16(const u64* __restrict__ cdf, const u64* __restrict__ cdf_min, u32 levels,
                                   u64 total, u32 maxval, u16* __restrict__ lut) {
    lut_entry(cdf, cdf_min, levels, total, lut,
              [=](u64 span, u64 above) { return (u16)((2 * above * maxval + span) / (2 * span)); });
}

// out[i] = lut[in[i]]. 16 bytes per thread with vector loads and stores when both buffers are
// 16-byte aligned (pooled buffers are), a scalar grid-stride loop for the rest. An 8-bit table is
// staged in shared memory; a 16-bit one (128 KiB) is read through the read-only cache.
template <typename T, bool SHARED>
__device__ void map(const T* __restrict__ in, u64 n, const T* __restrict__ lut, u32 levels,
                    T* __restrict__ out) {
    constexpr u32 PER = 16 / sizeof(T);
    __shared__ T staged[SHARED ? 256 : 1];
    if constexpr (SHARED) {
        for (u32 i = threadIdx.x; i < levels; i += blockDim.x) staged[i] = lut[i];
        __syncthreads();
    }
    auto look_up = [&](T v) -> T {
        if constexpr (SHARED) return staged[v];
        else return __ldg(&lut[v]);
    };
    for_my_chunks<T>(
        n, aligned16(in) && aligned16(out),
        [&](u64 c) {
            Vec16<T> buf;
            buf.v = reinterpret_cast<const uint4*>(in)[c];
#pragma unroll
            for (u32 k = 0; k < PER; k++) buf.s[k] = look_up(buf.s[k]);
            reinterpret_cast<uint4*>(out)[c] = buf.v;
        },
        [&](u64 i) { out[i] = look_up(in[i]); });
}

extern "C" __global__ void map_u8(const u8* in, u64 n, const u8* lut, u32 levels, u8* out) {
    map<u8, true>(in, n, lut, levels, out);
}

extern "C" __global__ void map_u16(const u16* in, u64 n, const u16* lut, u32 levels, u16* out) {
    map<u16, false>(in, n, lut, levels, out);
}

// Float frames (crates/ops/src/equalize/float.rs, which documents the rules): numpy.histogram's 256
// bins of the counted float32 samples, each f32 operation an explicit _rn intrinsic in numpy's
// order; a sample outside lo..hi (NaN and infinities among them) or outside the mask (`masked`
// non-zero) is not counted. Per-block counts in shared memory, added to `counts` (zeroed).
extern "C" __global__ void float_counts(const float* __restrict__ in, const u8* __restrict__ mask, u32 masked,
                                        u64 n, const float* __restrict__ edges, float lo, float hi, float delta,
                                        u64* __restrict__ counts) {
    __shared__ u32 local[256];
    for (u32 i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
    __syncthreads();
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const float a = in[k];
        if (!(a >= lo && a <= hi) || (masked && !mask[k])) continue;
        u32 i = __float2uint_rz(__fmul_rn(__fdiv_rn(__fsub_rn(a, lo), delta), 256.0f));
        if (i > 255) i = 255;
        if (a < edges[i]) i -= 1;
        if (i != 255 && a >= edges[i + 1]) i += 1;
        atomicAdd(&local[i], 1u);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < 256; i += blockDim.x)
        if (local[i]) atomicAdd(&counts[i], (u64)local[i]);
}

// numpy.interp(x, centres, cdf) of every sample, in f64 with explicit _rn intrinsics, rounded to
// the nearest float; `table` holds the 256 centres, the 256 cdf values and the 255 slopes.
extern "C" __global__ void float_interp(const float* __restrict__ in, u64 n, const double* __restrict__ table,
                                        float* __restrict__ out) {
    __shared__ double dx[256], dy[256], slopes[255];
    for (u32 i = threadIdx.x; i < 256; i += blockDim.x) {
        dx[i] = table[i];
        dy[i] = table[256 + i];
        if (i < 255) slopes[i] = table[512 + i];
    }
    __syncthreads();
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const double x = (double)in[k];
        double r;
        if (x != x) r = x;
        else if (x > dx[255]) r = dy[255];
        else if (x < dx[0]) r = dy[0];
        else {
            // The last centre not above x: dx[lo] <= x, and dx[hi] > x or hi = 256.
            u32 lo = 0, hi = 256;
            while (hi - lo > 1) {
                const u32 mid = (lo + hi) >> 1;
                if (dx[mid] <= x) lo = mid;
                else hi = mid;
            }
            const u32 j = lo;
            if (j == 255 || dx[j] == x) r = dy[j];
            else {
                r = __dadd_rn(__dmul_rn(slopes[j], __dsub_rn(x, dx[j])), dy[j]);
                if (r != r) {
                    r = __dadd_rn(__dmul_rn(slopes[j], __dsub_rn(x, dx[j + 1])), dy[j + 1]);
                    if (r != r && dy[j] == dy[j + 1]) r = dy[j];
                }
            }
        }
        out[k] = canonical_nan(__double2float_rn(r));
    }
}
