// Shared by every histopipe kernel. NVRTC gets this header by name (see crates/gpu/build.rs);
// kernels include no system headers, so they compile the same on every NVRTC.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// Every lane of a warp, for the *_sync intrinsics.
constexpr u32 FULL_MASK = 0xffffffffu;

// The one NaN the tools write (histopipe_ops::CANONICAL_NAN; a test there reads this line): the
// double arithmetic's NaNs differ from the CPU's in sign and in which of two NaN operands is kept,
// so a computed float goes through canonical_nan before it is stored: a select, no branch.
#define HP_CANONICAL_NAN 0x7FC00000u
__device__ __forceinline__ float canonical_nan(float v) { return isnan(v) ? __uint_as_float(HP_CANONICAL_NAN) : v; }

// Block-wide scans and reductions, shared by every kernel that needs one (histogram.cu's scan of
// a histogram, clahe.cu's clip and look-up tables, hough.cu's maximum). Integer types only: the
// order of additions then cannot change a result.

// The inclusive scan of x over a warp: Hillis-Steele, by register shuffles (no shared memory, so
// no bank conflicts). Every lane of the warp must call it.
template <typename T>
__device__ __forceinline__ T warp_scan(T x) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        const T y = __shfl_up_sync(FULL_MASK, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

// x combined over a warp by `op` (associative and commutative: a sum, a minimum, a maximum),
// returned to every lane. Every lane of the warp must call it.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T x, Op op) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) x = op(x, __shfl_xor_sync(FULL_MASK, x, d));
    return x;
}

struct Plus {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct Least {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Most {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// The inclusive scan of x over the block (blockDim.x a multiple of 32, at most 1024) and, in
// *total, the block's sum: a scan within each warp, then over the warps' totals by the first
// warp. `scratch` holds 32 values; the block must not touch it again before its next
// __syncthreads.
template <typename T>
__device__ T block_scan(T x, T* scratch, T* total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = warp_scan(x);
    if (lane == 31) scratch[warp] = x;
    __syncthreads();
    if (warp == 0) scratch[lane] = warp_scan(lane < warps ? scratch[lane] : (T)0);
    __syncthreads();
    *total = scratch[warps - 1];
    return x + (warp > 0 ? scratch[warp - 1] : (T)0);
}

// x combined over the block by `op` (blockDim.x a multiple of 32), returned to every thread.
// `scratch` holds 33 values; the block must not touch it again before its next __syncthreads.
template <typename T, typename Op>
__device__ T block_reduce(T x, T* scratch, Op op) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = warp_reduce(x, op);
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = scratch[0];
        for (u32 w = 1; w < warps; w++) s = op(s, scratch[w]);
        scratch[32] = s;
    }
    __syncthreads();
    return scratch[32];
}


// The bin of sample v among `bins` equal-width bins over `levels` levels (maxval + 1):
// floor(v * bins / levels), the last bin for a sample over maxval; `Bins::of` in
// crates/ops/src/bins.rs. v * bins < 2^32 for 16-bit samples and bins <= 65536. One bin per level
// needs no division.
__device__ __forceinline__ u32 bin_of(u32 v, u32 bins, u32 levels) {
    const u32 b = bins == levels ? v : v * bins / levels;
    return b < bins ? b : bins - 1;
}

// 16 bytes of samples, loaded or stored as one vector.
template <typename T>
union Vec16 {
    uint4 v;
    T s[16 / sizeof(T)];
};

// Whether p can be read or written 16 bytes at a time (pooled buffers can).
__device__ __forceinline__ bool aligned16(const void* p) {
    return ((size_t)p & 15) == 0;
}

// The grid-stride loop of the kernels that read samples [0, n) 16 bytes at a time: this thread's
// 16-byte chunks, chunk(c) with c counting uint4s, while `aligned`; then its samples of the rest
// (all of them when not aligned), one(i).
template <typename T, typename Chunk, typename One>
__device__ __forceinline__ void for_my_chunks(u64 n, bool aligned, Chunk chunk, One one) {
    constexpr u32 PER = 16 / sizeof(T);
    const u64 chunks = aligned ? n / PER : 0;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    for (u64 c = first; c < chunks; c += stride) chunk(c);
    for (u64 i = chunks * PER + first; i < n; i += stride) one(i);
}

// Waits until the kernels queued before this one have completed and their writes are visible: the
// first thing a kernel launched by launch_dependent! (crates/gpu) does before it touches memory
// that they use. Before compute capability 9.0 that launch is an ordinary one: nothing to wait for.
__device__ __forceinline__ void wait_for_prior_grid() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
