// deskew (see crates/ops/src/deskew/mod.rs for the exact rules): the ink, in two separable
// passes (each row's sums over the window along x, then the window's sums down the columns and
// the test, one thread an output) and its count; the projection profiles of every candidate
// angle of one level of the search in one launch, then each profile's sum of squares. An ink
// pixel (x, y) counts in bin (x s + y c + offset) >> FRAC_BITS of its angle, s, c and offset the
// fixed-point projection the host made (Projection in mod.rs). Counts and sums are integers: the
// order of the atomics changes nothing.
#include "histopipe.cuh"

// Projection's FRAC_BITS in crates/ops/src/deskew/mod.rs (a test compares them).
constexpr u32 FRAC_BITS = 24;

// The window's span [*first, *end) about i along an axis of len pixels: [i - r, i + r] cut by
// [0, len) (window in mod.rs).
__device__ __forceinline__ void window(u32 i, u32 len, u32 r, u32* first, u32* end) {
    *first = i > r ? i - r : 0;
    const u64 e = (u64)i + r + 1;
    *end = e < len ? (u32)e : len;
}

// rows[y w + x]: the sum of row y's samples in x's window, exactly (at most (2r + 1) 65535).
template <typename T>
__device__ void row_sums(const T* __restrict__ in, u32 w, u32 h, u32 r, u32* __restrict__ rows) {
    const u64 n = (u64)w * h, stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 x = (u32)(i % w);
        const T* row = in + (i - x);
        u32 first, end;
        window(x, w, r, &first, &end);
        u32 sum = 0;
        for (u32 k = first; k < end; k++) sum += row[k];
        rows[i] = sum;
    }
}

// ink[y w + x]: 1 when the sample is ink by InkRule::is_ink, S being the sum of rows[.. x] over
// y's window of rows and n the window's pixels: den (S - n v) > margin n for dark ink, den (n v -
// S) > margin n for light; else 0.
template <typename T>
__device__ void ink_test(const T* __restrict__ in, const u32* __restrict__ rows, u32 w, u32 h, u32 r, u32 dark,
                         i64 margin, i64 den, u8* __restrict__ ink) {
    const u64 n = (u64)w * h, stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 x = (u32)(i % w), y = (u32)(i / w);
        u32 x0, x1, y0, y1;
        window(x, w, r, &x0, &x1);
        window(y, h, r, &y0, &y1);
        u32 sum = 0;
        for (u32 k = y0; k < y1; k++) sum += rows[(u64)k * w + x];
        const i64 count = (i64)(x1 - x0) * (y1 - y0), nv = count * (i64)in[i];
        const i64 excess = dark ? (i64)sum - nv : nv - (i64)sum;
        ink[i] = den * excess > margin * count ? 1 : 0;
    }
}

#define DESKEW_INK(T)                                                                                              \
    extern "C" __global__ void deskew_row_sums_##T(const T* in, u32 w, u32 h, u32 r, u32* rows) {                  \
        row_sums<T>(in, w, h, r, rows);                                                                            \
    }                                                                                                              \
    extern "C" __global__ void deskew_ink_##T(const T* in, const u32* rows, u32 w, u32 h, u32 r, u32 dark,       \
                                              i64 margin, i64 den, u8* out) {                                      \
        ink_test<T>(in, rows, w, h, r, dark, margin, den, out);                                                    \
    }
DESKEW_INK(u8)
DESKEW_INK(u16)

// partial[block]: the ink pixels among ink[0 .. n) this block's threads visit (grid-stride).
extern "C" __global__ void deskew_count(const u8* __restrict__ ink, u64 n, u64* __restrict__ partial) {
    __shared__ u64 scratch[33];
    u64 count = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) count += ink[i];
    count = block_reduce(count, scratch, Plus());
    if (threadIdx.x == 0) partial[blockIdx.x] = count;
}

// Block (band, angle): rows [band * band_rows, + band_rows) of the frame, angle blockIdx.y, whose
// projection is proj[3a .. 3a + 3] (s, c, offset) and whose profile is profiles[a * stride ..].
// With shared_bins > 0 (at least the band's span of bins, which the host bounds), the band counts
// into shared memory first and adds its non-zero bins to the profile; else straight into it.
extern "C" __global__ void deskew_profiles(const u8* __restrict__ ink, u32 w, u32 h, const i64* __restrict__ proj,
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
        const u8* row = ink + y * w;
        const i64 at = (i64)y * c + off;
        for (u32 x = threadIdx.x; x < w; x += blockDim.x) {
            if (row[x]) atomicAdd(&bins[(((i64)x * s + at) >> FRAC_BITS) - base], 1u);
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
