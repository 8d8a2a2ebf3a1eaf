// hough-vote and hough-lines (see crates/ops/src/hough/ for the exact rules). A vote is
// round_half_even(f32(x) * cos[n] + f32(y) * sin[n]) + offset, products and sum rounded separately
// (--fmad=false), exactly as the CPU backend and OpenCV compute it; the tables come from the host.
#include "histopipe.cuh"

// Edge list: the indices of non-zero pixels, in no particular order (voting does not care). One
// atomic per warp: the leader reserves room for the warp's edges, each lane writes at its rank.
template <typename T>
__device__ void compact(const T* __restrict__ in, u64 n, u32* __restrict__ points, u32* count) {
    const u32 lane = threadIdx.x & 31;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += (u64)gridDim.x * blockDim.x) {
        const u64 i = base + threadIdx.x;
        const bool edge = i < n && in[i] != 0;
        const u32 mask = __ballot_sync(0xffffffffu, edge);
        if (mask == 0) continue;
        const u32 leader = __ffs(mask) - 1;
        u32 start = 0;
        if (lane == leader) start = atomicAdd(count, (u32)__popc(mask));
        start = __shfl_sync(FULL_MASK, start, leader);
        if (edge) points[start + __popc(mask & ((1u << lane) - 1))] = (u32)i;
    }
}

extern "C" __global__ void hough_compact_u8(const u8* in, u64 n, u32* points, u32* count) {
    compact<u8>(in, n, points, count);
}

extern "C" __global__ void hough_compact_u16(const u16* in, u64 n, u32* points, u32* count) {
    compact<u16>(in, n, points, count);
}

__device__ __forceinline__ u32 vote(u32 p, u32 w, float c, float s, u32 offset) {
    const u32 y = p / w, x = p - y * w;
    return (u32)(__float2int_rn((float)x * c + (float)y * s) + (int)offset);
}

// Strategy (a): blocks stride over the edge list along x and over the angles along y; every
// (pixel, angle) adds one to its cell with a global atomic.
extern "C" __global__ void hough_vote_global(const u32* __restrict__ points, const u32* __restrict__ count, u32 w,
                                             const float* __restrict__ cosT, const float* __restrict__ sinT,
                                             u32 numangle, u32 numrho, u32 offset, u32* acc) {
    // 64-bit steps: a list of nearly 2^32 points would wrap a 32-bit index past its end.
    const u64 total = *count;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (u64)gridDim.x * blockDim.x) {
        const u32 p = points[k];
        for (u32 a = blockIdx.y; a < numangle; a += gridDim.y)
            atomicAdd(&acc[(u64)a * numrho + vote(p, w, cosT[a], sinT[a], offset)], 1u);
    }
}

// Strategy (b): block (a, part) owns angle a and columns [part * cols, part * cols + cols): it
// counts the whole edge list's votes for them in shared memory, then writes them out, so the
// accumulator needs neither zeroing nor global atomics.
extern "C" __global__ void hough_vote_shared(const u32* __restrict__ points, const u32* __restrict__ count, u32 w,
                                             const float* __restrict__ cosT, const float* __restrict__ sinT,
                                             u32 numrho, u32 offset, u32 cols, u32* __restrict__ acc) {
    extern __shared__ u32 hist[];
    const u32 a = blockIdx.x;
    const u32 first = blockIdx.y * cols;
    const u32 len = min(cols, numrho - first);
    for (u32 k = threadIdx.x; k < len; k += blockDim.x) hist[k] = 0;
    __syncthreads();
    const float c = cosT[a], s = sinT[a];
    const u64 total = *count;
    for (u64 k = threadIdx.x; k < total; k += blockDim.x) {
        const u32 r = vote(points[k], w, c, s, offset) - first;  // wraps when below the range
        if (r < len) atomicAdd(&hist[r], 1u);
    }
    __syncthreads();
    u32* row = acc + (u64)a * numrho + first;
    for (u32 k = threadIdx.x; k < len; k += blockDim.x) row[k] = hist[k];
}

// u32 counters to u16 (saturated: the host refuses the frame when the maximum is over 65535).
extern "C" __global__ void hough_narrow(const u32* __restrict__ acc, u64 n, u16* __restrict__ out, u32* most) {
    u32 m = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 v = acc[i];
        m = max(m, v);
        out[i] = (u16)min(v, 65535u);
    }
    m = warp_reduce(m, Most());
    if ((threadIdx.x & 31) == 0) atomicMax(most, m);
}

// Local maxima over the threshold, OpenCV's comparisons: strictly above the left and upper
// neighbours, at least the right and lower ones; cells outside the accumulator count as 0.
extern "C" __global__ void hough_peaks(const u16* __restrict__ acc, u32 cols, u32 rows, u32 threshold,
                                       u32* __restrict__ peaks, u32* count) {
    const u64 n = (u64)cols * rows;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 r = (u32)(i / cols), c = (u32)(i - (u64)r * cols);
        const u32 v = acc[i];
        if (v <= threshold) continue;
        const u32 left = c > 0 ? acc[i - 1] : 0, right = c + 1 < cols ? acc[i + 1] : 0;
        const u32 up = r > 0 ? acc[i - cols] : 0, down = r + 1 < rows ? acc[i + cols] : 0;
        if (v > left && v >= right && v > up && v >= down) peaks[atomicAdd(count, 1u)] = (u32)i;
    }
}
