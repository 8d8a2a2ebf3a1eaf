// Shared by every histopipe kernel. NVRTC gets this header by name (see crates/gpu/build.rs);
// kernels include no system headers, so they compile the same on every NVRTC.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;


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
