// histogram: counts of equal-width bins over 0..maxval, and their inclusive scan (the cumulative
// distribution) with its smallest non-zero value.
//
// Sample v falls in bin v * bins / levels (integer division, levels = maxval + 1). v * bins is at
// most 65535 * 65536 < 2^32, so 32-bit arithmetic is exact. Counts are 64-bit: a frame may hold
// more than 2^32 pixels.
#include "histopipe.cuh"


template <typename Load>
__device__ void scan_block(u32 bins, Load load, u64* __restrict__ cdf, u64* __restrict__ cdf_min);

// The end of every histogram kernel; the blocks have added their counts into `acc`. Without
// `cdf` (null, and `hist` with it), `acc` is the caller's histogram, zeroed by the caller, and
// nothing more is done. With `cdf` (the same for the whole grid), the last block to finish moves
// the counts to `hist` and scans them, so `cdf` costs no second launch ("last block done", as in
// CUDA's threadFenceReduction sample): every thread fences its atomics on acc, the block then
// counts itself done in acc[bins], and the block that counts last sees every other block's
// atomics.
//
// `acc` (bins + 1 counts) is then the plan's accumulator (DistributionPlan in histogram.rs),
// zero whenever no kernel of the plan is running: zeroed once when the plan is made, and left
// zero by each kernel's last block. For each bin that block reads the count from L2 (__ldcg: the
// other blocks' atomics were performed there), writes it to hist[i] (every bin, zeros included,
// so hist needs no zeroing either), scans it, and sets acc[i] back to zero; the thread that reads
// acc[i] is the one that zeroes it, after its read, so no read sees a zero written in place of a
// count. No other block touches acc once it has counted itself done, and every block has, so
// acc[bins] is zeroed too. The plan's kernels run one after another on its one stream, each
// seeing the writes of the one before, so the next adds into zeros without a memset. A kernel
// that faults may leave counts in acc, but a fault leaves the context unusable (every later call
// on it fails), so no kernel reads them.
__device__ void scan_when_last(u64* acc, u32 bins, u64* __restrict__ hist, u64* __restrict__ cdf,
                               u64* __restrict__ cdf_min) {
    if (cdf == nullptr) return;
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd((unsigned long long*)&acc[bins], 1ull) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    scan_block(
        bins,
        [&](u32 i) {
            const u64 count = __ldcg(&acc[i]);
            hist[i] = count;
            acc[i] = 0;
            return count;
        },
        cdf, cdf_min);
    if (threadIdx.x == 0) acc[bins] = 0;
}

// Samples are read 16 bytes at a time when the input is 16-byte aligned (pooled buffers are);
// the rest, or all of a misaligned input, goes through the scalar grid-stride loop.
template <typename T>
__device__ __forceinline__ u64 vector_chunks(const T* in, u64 n) {
    return aligned16(in) ? n / (16 / sizeof(T)) : 0;
}

// Calls add(sample) for each sample of in[0, n) that this thread takes (for_my_chunks).
template <typename T, typename F>
__device__ __forceinline__ void for_my_samples(const T* __restrict__ in, u64 n, F add) {
    for_my_chunks<T>(
        n, aligned16(in),
        [&](u64 c) {
            Vec16<T> buf;
            buf.v = reinterpret_cast<const uint4*>(in)[c];
#pragma unroll
            for (u32 k = 0; k < 16 / sizeof(T); k++) add(buf.s[k]);
        },
        [&](u64 i) { add(in[i]); });
}

// At most PRIVATE_BINS bins (the 8-bin histograms of the published CPU/GPU comparison): with so
// few bins, shared-memory atomics would mostly wait on each other. Each thread counts in registers
// instead (one compare per bin and sample, the loop unrolled so the counters stay in registers),
// then each warp sums its lanes' counters by shuffles and one lane adds them to the histogram.
#define PRIVATE_BINS 8

template <typename T>
__device__ void histogram_private(const T* __restrict__ in, u64 n, u32 bins, u32 levels,
                                  u64* __restrict__ hist) {
    u32 mine[PRIVATE_BINS];
#pragma unroll
    for (u32 j = 0; j < PRIVATE_BINS; j++) mine[j] = 0;
    auto add = [&](u32 v) {
        const u32 b = bin_of(v, bins, levels);
#pragma unroll
        for (u32 j = 0; j < PRIVATE_BINS; j++) mine[j] += b == j;
    };
    for_my_samples(in, n, add);
    // Every lane of every (full) warp gets here, as the full-mask shuffles need.
#pragma unroll
    for (u32 j = 0; j < PRIVATE_BINS; j++) {
        const u32 count = warp_reduce(mine[j], Plus());
        if ((threadIdx.x & 31) == 0 && j < bins && count)
            atomicAdd((unsigned long long*)&hist[j], (unsigned long long)count);
    }
}

// Each block counts in shared memory (dynamic, 4 bytes a bin), one atomic per sample, then adds
// its non-zero counts to the global histogram: one global atomic per bin and block. Up to
// SHARED_COPIES_MAX_BINS bins the block keeps two copies, the even warps counting in one and the
// odd in the other, so that half as many lanes meet on a bin; each thread has two 16-byte chunks
// in flight. With 512-thread blocks and 256 of them (histogram.rs), H100, 8-bit, 256 bins, CUB
// HistogramEven timed in the same process: one copy, one chunk, 512 blocks of 256 threads took
// 0.78-0.97x CUB's time from 2560x1707 to 16384x16384, this form 0.66-0.89x (fewer blocks: fewer
// adds to the global histogram, which meet on the same 256 counters); in histopipe-bench's runs
// (queued back to back), equalize's histogram went from 1.07-1.17x CUB to 0.90-0.98x at 2560x1707
// to 7680x4320, 1.03x on the camera photo at 16384x16384. (Earlier, on an H200: one copy per warp
// with runs of equal neighbours merged took 1.16-1.65x.)
// Up to SHARED_MAX_BINS bins (histogram.rs): 48 KiB less 512 bytes for scan_when_last's static
// shared memory.
#define SHARED_COPIES_MAX_BINS 4096

// The counting loop of histogram_shared into the block's copy `mine` (a 32-bit shared address).
// IDENTITY: one bin per level (bins == levels), so a sample's bin is the sample, clamped, with no
// division (as a select beside the division, bin_of cost every sample its division). A 16-byte
// chunk whose samples are all equal (flat regions: the scaled-up photo of the benchmark is made
// of them) adds its count with one atomic instead of one a sample, which on real content
// otherwise queue on the same counter; a chunk of mixed samples pays the test, one compare a
// word.
template <typename T, bool IDENTITY>
__device__ __forceinline__ void histogram_shared_count(const T* __restrict__ in, u64 n, u32 bins, u32 levels,
                                                       u32 mine) {
    constexpr u32 PER = 16 / sizeof(T);
    auto bin = [&](u32 v) -> u32 { return IDENTITY ? min(v, bins - 1) : bin_of(v, bins, levels); };
    auto red = [&](u32 b, u32 count) {
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(mine + 4 * b), "r"(count) : "memory");
    };
    auto add16 = [&](const Vec16<T>& a) {
        const u32 first = a.s[0];
        const u32 splat = sizeof(T) == 1 ? first * 0x01010101u : first * 0x00010001u;
        if (a.v.x == splat && a.v.y == splat && a.v.z == splat && a.v.w == splat) {
            red(bin(first), PER);
        } else {
#pragma unroll
            for (u32 k = 0; k < PER; k++) red(bin(a.s[k]), 1);
        }
    };
    const u64 chunks = vector_chunks(in, n);
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    const uint4* vec = reinterpret_cast<const uint4*>(in);
    u64 c = first;
    for (; c + stride < chunks; c += 2 * stride) {
        Vec16<T> a, b;
        a.v = vec[c];
        b.v = vec[c + stride];
        add16(a);
        add16(b);
    }
    if (c < chunks) {
        Vec16<T> a;
        a.v = vec[c];
        add16(a);
    }
    for (u64 i = chunks * PER + first; i < n; i += stride) red(bin(in[i]), 1);
}

template <typename T>
__device__ void histogram_shared(const T* __restrict__ in, u64 n, u32 bins, u32 levels,
                                 u64* __restrict__ hist) {
    extern __shared__ u32 local[];
    const u32 copies = bins <= SHARED_COPIES_MAX_BINS ? 2 : 1;
    for (u32 b = threadIdx.x; b < copies * bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    const u32 mine = (u32)__cvta_generic_to_shared(local + (copies == 2 ? ((threadIdx.x >> 5) & 1) * bins : 0));
    if (bins == levels)
        histogram_shared_count<T, true>(in, n, bins, levels, mine);
    else
        histogram_shared_count<T, false>(in, n, bins, levels, mine);
    __syncthreads();
    for (u32 b = threadIdx.x; b < bins; b += blockDim.x) {
        const u32 count = local[b] + (copies == 2 ? local[bins + b] : 0);
        if (count) atomicAdd((unsigned long long*)&hist[b], (unsigned long long)count);
    }
}

// Too many bins for shared memory (16-bit levels): atomics straight to the global histogram.
// Lanes of a warp whose samples share a bin add once, with the group's size, so a skewed frame
// (one value everywhere) costs one atomic per warp instead of 32. Every lane of a warp runs the
// same number of iterations (the loop bound is the warp's first chunk), as __match_any_sync needs.
template <typename T>
__device__ void histogram_global(const T* __restrict__ in, u64 n, u32 bins, u32 levels,
                                 u64* __restrict__ hist) {
    constexpr u32 PER = 16 / sizeof(T);
    const u32 lane = threadIdx.x & 31;
    const u64 chunks = vector_chunks(in, n);
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    for (u64 c = first; c - lane < chunks; c += stride) {
        const bool valid = c < chunks;
        Vec16<T> buf;
        buf.v = valid ? reinterpret_cast<const uint4*>(in)[c] : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            // An idle lane gets a bin no real sample has, so it groups only with itself.
            const u32 b = valid ? bin_of(buf.s[k], bins, levels) : 0xffffffffu;
            const u32 group = __match_any_sync(FULL_MASK, b);
            if (valid && lane == (u32)(__ffs(group) - 1))
                atomicAdd((unsigned long long*)&hist[b], (unsigned long long)__popc(group));
        }
    }
    for (u64 i = chunks * PER + first; i < n; i += stride)
        atomicAdd((unsigned long long*)&hist[bin_of(in[i], bins, levels)], 1ull);
}

// The exported kernels: histogram_{private,shared,global}_{u8,u16}(in, n, bins, levels, acc, hist,
// cdf, cdf_min), counting into `acc`; with `cdf` not null, the last block moves the counts to
// `hist`, scans them into `cdf` and `cdf_min`, and leaves `acc` zero (scan_when_last).
#define HISTOGRAM_KERNEL(KIND, T)                                                                     \
    extern "C" __global__ void histogram_##KIND##_##T(const T* in, u64 n, u32 bins, u32 levels, u64* acc,  \
                                                      u64* hist, u64* cdf, u64* cdf_min) {           \
        histogram_##KIND<T>(in, n, bins, levels, acc);                                               \
        scan_when_last(acc, bins, hist, cdf, cdf_min);                                               \
    }
HISTOGRAM_KERNEL(private, u8)
HISTOGRAM_KERNEL(private, u16)
HISTOGRAM_KERNEL(shared, u8)
HISTOGRAM_KERNEL(shared, u16)
HISTOGRAM_KERNEL(global, u8)
HISTOGRAM_KERNEL(global, u16)

// Masked histograms: only samples whose mask byte is non-zero are counted (the mask holds one
// byte a pixel, as the samples do). The unmasked kernels' forms, reading a unit of 16 samples at a
// time: their 16 mask bytes in one 16-byte load and the samples in sizeof(T) 16-byte loads, when
// both buffers are 16-byte aligned (pooled buffers are); the rest, or all of a misaligned input,
// one sample and its mask byte at a time. hist is zeroed by the caller; the scan is the `scan`
// kernel's. The grid is histogram.rs's for 8-bit samples (one thread per unit of 16 samples, at
// most HISTOGRAM_MAX_BLOCKS blocks), whatever T.
#define MASK_UNIT 16

template <typename T>
__device__ __forceinline__ u64 masked_units(const T* in, const u8* mask, u64 n) {
    return aligned16(in) && aligned16(mask) ? n / MASK_UNIT : 0;
}

// One unit: 16 mask bytes and their 16 samples.
template <typename T>
struct MaskedUnit {
    Vec16<u8> m;
    Vec16<T> s[sizeof(T)];
};

template <typename T>
__device__ __forceinline__ void load_unit(const T* __restrict__ in, const u8* __restrict__ mask, u64 u,
                                          MaskedUnit<T>& x) {
    x.m.v = reinterpret_cast<const uint4*>(mask)[u];
#pragma unroll
    for (u32 j = 0; j < sizeof(T); j++) x.s[j].v = reinterpret_cast<const uint4*>(in)[u * sizeof(T) + j];
}

// Calls add(sample, mask byte) for each sample of a unit, in order.
template <typename T, typename F>
__device__ __forceinline__ void each_of_unit(const MaskedUnit<T>& x, F add) {
    constexpr u32 PER = 16 / sizeof(T);
#pragma unroll
    for (u32 j = 0; j < sizeof(T); j++)
#pragma unroll
        for (u32 k = 0; k < PER; k++) add((u32)x.s[j].s[k], (u32)x.m.s[j * PER + k]);
}

// Calls add(sample, mask byte) for each sample of in[0, n) that this thread takes: grid-stride over
// the units, two in flight (as histogram_shared's chunks), then over the samples after the last
// whole unit.
template <typename T, typename F>
__device__ __forceinline__ void for_my_masked(const T* __restrict__ in, const u8* __restrict__ mask, u64 n,
                                              F add) {
    const u64 units = masked_units(in, mask, n);
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    u64 u = first;
    for (; u + stride < units; u += 2 * stride) {
        MaskedUnit<T> a, b;
        load_unit(in, mask, u, a);
        load_unit(in, mask, u + stride, b);
        each_of_unit(a, add);
        each_of_unit(b, add);
    }
    if (u < units) {
        MaskedUnit<T> a;
        load_unit(in, mask, u, a);
        each_of_unit(a, add);
    }
    for (u64 i = units * MASK_UNIT + first; i < n; i += stride) add((u32)in[i], (u32)mask[i]);
}

// histogram_private's counting: a sample masked off goes to bin PRIVATE_BINS, which no counter has.
template <typename T>
__device__ void masked_private(const T* __restrict__ in, const u8* __restrict__ mask, u64 n, u32 bins,
                               u32 levels, u64* __restrict__ hist) {
    u32 mine[PRIVATE_BINS];
#pragma unroll
    for (u32 j = 0; j < PRIVATE_BINS; j++) mine[j] = 0;
    for_my_masked(in, mask, n, [&](u32 v, u32 m) {
        const u32 b = m ? bin_of(v, bins, levels) : PRIVATE_BINS;
#pragma unroll
        for (u32 j = 0; j < PRIVATE_BINS; j++) mine[j] += b == j;
    });
    // Every lane of every (full) warp gets here, as the full-mask shuffles need.
#pragma unroll
    for (u32 j = 0; j < PRIVATE_BINS; j++) {
        const u32 count = warp_reduce(mine[j], Plus());
        if ((threadIdx.x & 31) == 0 && j < bins && count)
            atomicAdd((unsigned long long*)&hist[j], (unsigned long long)count);
    }
}

// histogram_shared's counting: two copies in shared memory up to SHARED_COPIES_MAX_BINS bins (the
// launch's shared memory is 2 * 4 bytes a bin there, 4 bytes a bin above), one atomic per sample
// counted.
template <typename T>
__device__ void masked_shared(const T* __restrict__ in, const u8* __restrict__ mask, u64 n, u32 bins,
                              u32 levels, u64* __restrict__ hist) {
    extern __shared__ u32 local[];
    const u32 copies = bins <= SHARED_COPIES_MAX_BINS ? 2 : 1;
    for (u32 b = threadIdx.x; b < copies * bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    u32* mine = local + (copies == 2 ? ((threadIdx.x >> 5) & 1) * bins : 0);
    for_my_masked(in, mask, n, [&](u32 v, u32 m) {
        if (m) atomicAdd(&mine[bin_of(v, bins, levels)], 1u);
    });
    __syncthreads();
    for (u32 b = threadIdx.x; b < bins; b += blockDim.x) {
        const u32 count = local[b] + (copies == 2 ? local[bins + b] : 0);
        if (count) atomicAdd((unsigned long long*)&hist[b], (unsigned long long)count);
    }
}

// histogram_global's counting: lanes of a warp whose counted samples share a bin add once, with the
// group's size; a sample masked off (or an idle lane's) gets a bin no counted sample has. Every
// lane of a warp runs the same number of iterations (the loop bound is the warp's first unit).
template <typename T>
__device__ void masked_global(const T* __restrict__ in, const u8* __restrict__ mask, u64 n, u32 bins,
                              u32 levels, u64* __restrict__ hist) {
    const u32 lane = threadIdx.x & 31;
    const u64 units = masked_units(in, mask, n);
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    for (u64 u = first; u - lane < units; u += stride) {
        const bool valid = u < units;
        MaskedUnit<T> x;
        if (valid) {
            load_unit(in, mask, u, x);
        } else {
            x.m.v = make_uint4(0, 0, 0, 0);
#pragma unroll
            for (u32 j = 0; j < sizeof(T); j++) x.s[j].v = make_uint4(0, 0, 0, 0);
        }
        each_of_unit(x, [&](u32 v, u32 m) {
            const u32 b = m ? bin_of(v, bins, levels) : 0xffffffffu;
            const u32 group = __match_any_sync(FULL_MASK, b);
            if (m && lane == (u32)(__ffs(group) - 1))
                atomicAdd((unsigned long long*)&hist[b], (unsigned long long)__popc(group));
        });
    }
    for (u64 i = units * MASK_UNIT + first; i < n; i += stride)
        if (mask[i]) atomicAdd((unsigned long long*)&hist[bin_of(in[i], bins, levels)], 1ull);
}

// SHARED (up to SHARED_MAX_BINS bins): in registers up to PRIVATE_BINS bins, else in shared
// memory; otherwise global atomics.
template <typename T, bool SHARED>
__device__ void histogram_masked(const T* __restrict__ in, const u8* __restrict__ mask, u64 n, u32 bins,
                                 u32 levels, u64* __restrict__ hist) {
    if constexpr (SHARED) {
        if (bins <= PRIVATE_BINS) masked_private(in, mask, n, bins, levels, hist);
        else masked_shared(in, mask, n, bins, levels, hist);
    } else {
        masked_global(in, mask, n, bins, levels, hist);
    }
}

// The exported kernels: histogram_masked_{shared,global}_{u8,u16}.
#define MASKED_KERNEL(KIND, SHARED, T)                                                                \
    extern "C" __global__ void histogram_masked_##KIND##_##T(const T* in, const u8* mask, u64 n, u32 bins, \
                                                             u32 levels, u64* hist) {                  \
        histogram_masked<T, SHARED>(in, mask, n, bins, levels, hist);                                  \
    }
MASKED_KERNEL(shared, true, u8)
MASKED_KERNEL(shared, true, u16)
MASKED_KERNEL(global, false, u8)
MASKED_KERNEL(global, false, u16)

// Inclusive scan of `bins` counts by one block (blockDim.x a multiple of 32, at most 1024), tile by
// tile of blockDim.x counts with a running carry: a Hillis-Steele scan within each warp by
// shuffles (no shared memory, so no bank conflicts), then the same over the warps' totals. Also
// writes the smallest non-zero cumulative count (0 for an empty histogram) to *cdf_min. The count
// of bin i is load(i), called once for each i < bins, by thread i % blockDim.x.
template <typename Load>
__device__ void scan_block(u32 bins, Load load, u64* __restrict__ cdf, u64* __restrict__ cdf_min) {
    __shared__ u64 warp_sums[32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    u64 carry = 0;
    u64 least = ~0ull;
    for (u32 base = 0; base < bins; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        u64 tile;
        const u64 x = carry + block_scan(i < bins ? load(i) : 0, warp_sums, &tile);
        if (i < bins) {
            cdf[i] = x;
            if (x != 0 && x < least) least = x;
        }
        carry += tile;
        // warp_sums is rewritten by the next tile.
        __syncthreads();
    }
    least = warp_reduce(least, Least());
    if (lane == 0) warp_sums[warp] = least;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 m = ~0ull;
        for (u32 w = 0; w < warps; w++)
            if (warp_sums[w] < m) m = warp_sums[w];
        *cdf_min = m == ~0ull ? 0 : m;
    }
}

// The scan of `bins` counts as a kernel of its own (one block). Counts are read from L2
// (__ldcg), as the fused kernels' last block reads them.
extern "C" __global__ void scan(const u64* __restrict__ counts, u32 bins, u64* __restrict__ cdf,
                                u64* __restrict__ cdf_min) {
    scan_block(bins, [&](u32 i) { return __ldcg(&counts[i]); }, cdf, cdf_min);
}
