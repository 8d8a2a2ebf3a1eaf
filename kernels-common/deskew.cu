// deskew (see crates/ops/src/deskew/mod.rs for the exact rules): the projection profiles of
// every candidate angle of one level of the search in one launch, then each profile's sum of
// squares. An ink pixel (x, y), lo <= sample <= hi, counts in bin (x s + y c + offset) >> FRAC_BITS
// of its angle, s, c and offset the fixed-point projection the host made (Projection in
// mod.rs). Counts and sums are integers: the order of the atomics changes nothing.
#include "histopipe.cuh"

// Projection's FRAC_BITS in crates/ops/src/deskew/mod.rs (a test compares them).
constexpr u32 FRAC_BITS = 24;

// Block (band, angle): rows [band * band_rows, + band_rows) of the frame, angle blockIdx.y, whose
// projection is proj[3a .. 3a + 3] (s, c, offset) and whose profile is profiles[a * stride ..].
// With shared_bins > 0 (at least the band's span of bins, which the host bounds), the band counts
// into shared memory first and adds its non-zero bins to the profile; else straight into it.
template <typename T>
__device__ void profiles(const T* __restrict__ in, u32 w, u32 h, u32 lo, u32 hi, const i64* __restrict__ proj,
                         u32 band_rows, u32 shared_bins, u64 stride, u32* __restrict__ profiles) {
    extern __shared__ u32 local[];
    const u32 a = blockIdx.y;
    const i64 s = proj[3 * a], c = proj[3 * a + 1], off = proj[3 * a + 2];
    u32* out = profiles + (u64)a * stride;
    const u64 y0 = (u64)blockIdx.x * band_rows;
    if (y0 >= h) return;
    const u64 y1 = y0 + band_rows < h ? y0 + band_rows : h;
    i64 base = 0;
    u32* bins = out;
    if (shared_bins > 0) {
        // The band's first bin: its top row's, at the frame's leftmost or rightmost column.
        const i64 low = s < 0 ? (i64)(w - 1) * s : 0;
        base = ((i64)y0 * c + low + off) >> FRAC_BITS;
        for (u32 i = threadIdx.x; i < shared_bins; i += blockDim.x) local[i] = 0;
        __syncthreads();
        bins = local;
    }
    for (u64 y = y0; y < y1; y++) {
        const T* row = in + y * w;
        const i64 at = (i64)y * c + off;
        for (u32 x = threadIdx.x; x < w; x += blockDim.x) {
            const u32 v = row[x];
            if (v >= lo && v <= hi) atomicAdd(&bins[(((i64)x * s + at) >> FRAC_BITS) - base], 1u);
        }
    }
    if (shared_bins > 0) {
        __syncthreads();
        for (u32 i = threadIdx.x; i < shared_bins; i += blockDim.x) {
            const u32 n = local[i];
            if (n != 0) atomicAdd(&out[base + i], n);
        }
    }
}

extern "C" __global__ void deskew_profiles_u8(const u8* in, u32 w, u32 h, u32 lo, u32 hi, const i64* proj,
                                              u32 band_rows, u32 shared_bins, u64 stride, u32* out) {
    profiles<u8>(in, w, h, lo, hi, proj, band_rows, shared_bins, stride, out);
}

extern "C" __global__ void deskew_profiles_u16(const u16* in, u32 w, u32 h, u32 lo, u32 hi, const i64* proj,
                                               u32 band_rows, u32 shared_bins, u64 stride, u32* out) {
    profiles<u16>(in, w, h, lo, hi, proj, band_rows, shared_bins, stride, out);
}

// Block a: the sum of the squared counts of profile a (stride counts; bins past the angle's own
// are zero), exactly in u64.
extern "C" __global__ void deskew_scores(const u32* __restrict__ profiles, u64 stride, u64* __restrict__ scores) {
    __shared__ u64 scratch[33];
    const u32* p = profiles + (u64)blockIdx.x * stride;
    u64 sum = 0;
    for (u64 i = threadIdx.x; i < stride; i += blockDim.x) {
        const u64 v = p[i];
        sum += v * v;
    }
    sum = block_reduce(sum, scratch, Plus());
    if (threadIdx.x == 0) scores[blockIdx.x] = sum;
}
