// colhist: a histogram of every column (or row), counts[bin * lines + line]; the CPU reference is
// crates/ops/src/colhist.rs.
//
// colhist_tiled_*: block (i, j) holds the histograms of lines [i * tile, i * tile + tile) in shared
// memory, laid out sh[bin * tile + line] so the lanes of a warp (neighbouring columns) hit
// different banks, counts the stretch [j * span, j * span + span) of those lines with shared
// atomics, then adds its non-zero counters to the global matrix. colhist_global_* is for bin
// counts whose histograms do not fit in shared memory even for one line: global atomics.
#include "histopipe.cuh"

// Which pixels count: those whose byte in `inside` (the user's mask, one byte a pixel of the w-wide
// frame; null: none given) is non-zero and, when `on`, that Geometry::is_original accepts,
// operation for operation: the pixel centre mapped into the original by (a x + b y + c,
// d x + e y + f), rounded half up, inside ow x oh.
struct Mask {
    u32 on;
    double a, b, c, d, e, f, ow, oh;
    const u8* inside;
    u32 w;

    // Whether any pixel may be left out: the kernels' MASKED instances.
    __device__ __forceinline__ bool any() const { return on || inside != nullptr; }

    __device__ __forceinline__ bool counts(u32 x, u32 y) const {
        if (inside != nullptr && inside[(u64)y * w + x] == 0) return false;
        if (!on) return true;
        const double fx = (double)x, fy = (double)y;
        const double ox = a * fx + b * fy + c;
        const double oy = d * fx + e * fy + f;
        const double rx = floor(ox + 0.5), ry = floor(oy + 0.5);
        return rx >= 0.0 && ry >= 0.0 && rx < ow && ry < oh;
    }
};

template <typename T, bool ROWS>
__device__ void colhist_tiled(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, u32 tile, u32 span,
                              const Mask& mask, u32* __restrict__ counts) {
    extern __shared__ u32 sh[];
    const u32 lines = ROWS ? h : w, along = ROWS ? w : h;
    const u32 l0 = blockIdx.x * tile, a0 = blockIdx.y * span;
    const u32 nl = min(tile, lines - l0), na = min(span, along - a0);
    for (u32 i = threadIdx.x; i < bins * tile; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    // The host keeps tile * span under 2^31, so 32-bit indices suffice (no 64-bit division).
    const u32 total = nl * na;
    for (u32 i = threadIdx.x; i < total; i += blockDim.x) {
        // Consecutive threads take consecutive x: coalesced reads in both directions.
        u32 l, a, x, y;
        if (ROWS) {
            l = i / na;
            a = i - l * na;
            x = a0 + a;
            y = l0 + l;
        } else {
            a = i / nl;
            l = i - a * nl;
            x = l0 + l;
            y = a0 + a;
        }
        if (!mask.counts(x, y)) continue;
        const u32 bin = bin_of((u32)px[(u64)y * w + x], bins, maxval + 1);
        atomicAdd(&sh[bin * tile + l], 1u);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < bins * tile; i += blockDim.x) {
        const u32 bin = i / tile, l = i - bin * tile;
        const u32 c = sh[i];
        if (l < nl && c != 0) atomicAdd(&counts[(u64)bin * lines + l0 + l], c);
    }
}

template <typename T, bool ROWS>
__device__ void colhist_global(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, const Mask& mask,
                               u32* __restrict__ counts) {
    const u32 lines = ROWS ? h : w;
    const u64 total = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        if (!mask.counts(x, y)) continue;
        const u32 bin = bin_of((u32)px[i], bins, maxval + 1);
        atomicAdd(&counts[(u64)bin * lines + (ROWS ? y : x)], 1u);
    }
}

// colhist_pairs_*: columns, at most PAIR_MAX_BINS bins (colhist.rs keeps the two equal). Lane l of
// every warp owns K neighbouring columns, so block (i, j) counts the 32 K columns
// [32 K i, 32 K i + 32 K) over the rows [j span, j span + span), and a warp reads 32 K samples of a
// row with one K-sample vector load per lane (scalar loads on rows not aligned to the vector, and
// past the frame's right edge). Counters are 16-bit, two to a 32-bit word: the counters of bin b
// for lane l's columns 2p and 2p + 1 (p < K / 2) share the word sh[(b K / 2 + p) 32 + l] (low
// half: column 2p). So the 32 atomics of one warp instruction always go to 32 different banks and
// never to the same word, whatever the image (constant regions included). A half gains at most
// one count per row and the host keeps span <= 65535, so it never carries into the other. Each
// warp takes every warps-th row, UNROLL rows' loads issued before their atomics so that several
// loads are in flight per thread.
//
// K is 2 (64-column tiles, 128 bytes of shared memory a bin) or 4 (128 columns, 256 bytes a bin:
// past the 48 KiB every block gets, so the host opts in). A warp's request is then 128 bytes of a
// row instead of 64, but each block's partial counts (below) double, so the host takes K = 4 only
// where those stay small next to the frame (Pairs::new in colhist/gpu.rs). Measured on an H200
// (histopipe-bench, 8-bit, 256 bins, 16384x16384; a copy of the frame took 0.129 ms): 0.506 ms
// for the kernel this one replaced (K = 2, generic atomics, every column and bin tested per sample),
// 0.270 with each row's load kept packed until its atomics, 0.198 with red.shared and the tests hoisted
// (colhist_pairs_count), 0.151 with K = 4; K = 8 (one block an SM, 128 KiB) took 0.157.
//
// The merge: a grid of one block per tile (gridDim.y == 1) stores every counter, zeros included.
// With several parts along the rows, each block stores its packed counters (bins x 16 K words) in
// partials[tile][part] with plain coalesced stores, and the tile's last block to finish (counted in
// done[tile]; "last block done" as in CUDA's threadFenceReduction sample) adds the parts up and
// stores the tile's final counts: no global atomics on the matrix (global atomics on every
// non-zero counter of every part would cost more than the counting on random content), and no
// zeroing of the matrix. done[] is zero whenever no launch of the plan runs: the host zeroes it
// once, when the plan is made, and each tile's last block sets its count back to zero (the
// plan's launches run one after another on its stream), so no launch needs a memset first.
#define PAIR_MAX_BINS 384
// Threads of a block (colhist/gpu.rs launches this many), and at most 64 registers each
// (__launch_bounds__): two blocks fit an SM's registers whatever the compiler's choices.
#define PAIR_THREADS 512

// K samples of type T as one load of N = K sizeof(T) bytes (2 to 16).
template <u32 N> struct Bytes;
template <> struct Bytes<2> { typedef u16 type; };
template <> struct Bytes<4> { typedef u32 type; };
template <> struct Bytes<8> { typedef uint2 type; };
template <> struct Bytes<16> { typedef uint4 type; };
template <typename T, u32 K>
union Samples {
    typename Bytes<K * sizeof(T)>::type v;
    T s[K];
};

// Stores the final counts c0, c1 of shared word i of the K-column-a-lane tile at column x0: bin
// i / (16 K), lane i % 32, columns x0 + K lane + 2 p and the next one, p = (i / 32) % (K / 2).
template <u32 K>
__device__ __forceinline__ void store_pair(u32* counts, u32 w, u32 bins, u32 x0, u32 i, u32 c0, u32 c1) {
    const u32 b = i / (16 * K), p = (i >> 5) % (K / 2), xl = x0 + K * (i & 31) + 2 * p;
    if (b >= bins || xl >= w) return;
    u32* at = counts + (u64)b * w + xl;
    at[0] = c0;
    if (xl + 1 < w) at[1] = c1;
}

// Counts the rows [y0, y1) of the block's tile into the shared counters at sh (see colhist_pairs).
// IDENTITY: one bin per sample value (bins == maxval + 1), so a sample's bin is the sample, clamped;
// else bin_of. WHOLE: every column of the tile is inside the frame (all tiles but the last), so no
// column is tested. The atomics are red.shared on 32-bit shared addresses formed once per lane: the
// generic pointer form recomputed the shared window's base for every atomic.
template <typename T, bool MASKED, u32 K, u32 UNROLL, bool IDENTITY, bool WHOLE>
__device__ __forceinline__ void colhist_pairs_count(const T* __restrict__ px, u32 w, u32 maxval, u32 bins, u32 y0,
                                                    u32 y1, const Mask& mask, u32* sh) {
    typedef Samples<T, K> S;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u32 x = blockIdx.x * 32 * K + K * lane;
    // Whether all K columns of this lane are inside the frame (else each is tested on its own).
    const bool whole = WHOLE || x + K <= w;
    // Byte address of this lane's word for bin 0, pair 0; bin b, pair p is b K 64 + p 128 further.
    const u32 base = (u32)__cvta_generic_to_shared(sh) + 4 * lane;
    for (u32 y = y0 + warp; y < y1; y += warps * UNROLL) {
        // Whether all UNROLL rows are inside the block's stretch (warp-uniform).
        const bool full = y + (UNROLL - 1) * warps < y1;
        S got[UNROLL];
#pragma unroll
        for (u32 u = 0; u < UNROLL; u++) {
            const u32 row = y + u * warps;
            if (!full && row >= y1) continue;
            const T* r = px + (u64)row * w + x;
            // x is a multiple of K: every lane's columns are aligned alike (warp-uniform but for
            // the lane past the right edge).
            if (whole && ((size_t)r & (sizeof(S) - 1)) == 0) {
                got[u].v = *reinterpret_cast<const decltype(got[u].v)*>(r);
            } else {
#pragma unroll
                for (u32 k = 0; k < K; k++) got[u].s[k] = x + k < w ? r[k] : (T)0;
            }
        }
#pragma unroll
        for (u32 u = 0; u < UNROLL; u++) {
            const u32 row = y + u * warps;
            if (!full && row >= y1) continue;
#pragma unroll
            for (u32 k = 0; k < K; k++) {
                if ((!WHOLE && x + k >= w) || (MASKED && !mask.counts(x + k, row))) continue;
                const u32 v = got[u].s[k];
                const u32 b = IDENTITY ? min(v, bins - 1) : bin_of(v, bins, maxval + 1);
                asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(base + b * (K * 64) + (k / 2) * 128),
                             "r"(1u << (16 * (k & 1)))
                             : "memory");
            }
        }
    }
}

template <typename T, bool MASKED, u32 K, u32 UNROLL>
__device__ void colhist_pairs(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, u32 span,
                              const Mask& mask, u32* __restrict__ counts, u32* __restrict__ partials,
                              u32* __restrict__ done) {
    extern __shared__ u32 sh[];
    const u32 x0 = blockIdx.x * 32 * K, y0 = blockIdx.y * span;
    const u32 y1 = min(h, y0 + span);
    const u32 words = bins * 16 * K;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    const bool identity = bins == maxval + 1, whole = x0 + 32 * K <= w;
    if (identity && whole)
        colhist_pairs_count<T, MASKED, K, UNROLL, true, true>(px, w, maxval, bins, y0, y1, mask, sh);
    else if (identity)
        colhist_pairs_count<T, MASKED, K, UNROLL, true, false>(px, w, maxval, bins, y0, y1, mask, sh);
    else if (whole)
        colhist_pairs_count<T, MASKED, K, UNROLL, false, true>(px, w, maxval, bins, y0, y1, mask, sh);
    else
        colhist_pairs_count<T, MASKED, K, UNROLL, false, false>(px, w, maxval, bins, y0, y1, mask, sh);
    __syncthreads();
    if (gridDim.y == 1) {
        for (u32 i = threadIdx.x; i < words; i += blockDim.x)
            store_pair<K>(counts, w, bins, x0, i, sh[i] & 0xffffu, sh[i] >> 16);
        return;
    }
    // Several parts along the rows: publish this block's packed counters, and let the tile's last
    // block to finish add the parts up (see the comment above colhist_pairs).
    u32* mine = partials + ((u64)blockIdx.x * gridDim.y + blockIdx.y) * words;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) mine[i] = sh[i];
    __threadfence();
    __syncthreads();
    // sh is free now: its first word carries the verdict to the whole block.
    if (threadIdx.x == 0) sh[0] = atomicAdd(&done[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!sh[0]) return;
    __threadfence();
    // Every block of the tile has counted itself: its count goes back to zero for the next launch.
    if (threadIdx.x == 0) done[blockIdx.x] = 0;
    const u32* parts = partials + (u64)blockIdx.x * gridDim.y * words;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) {
        // Each half of a part is at most 65535; their sums, a column's counts, at most h < 2^32.
        u32 c0 = 0, c1 = 0;
        for (u32 p = 0; p < gridDim.y; p++) {
            const u32 word = __ldcg(&parts[(u64)p * words + i]);
            c0 += word & 0xffffu;
            c1 += word >> 16;
        }
        store_pair<K>(counts, w, bins, x0, i, c0, c1);
    }
}

// colhist_warp_rows_*: rows, at most PAIR_MAX_BINS bins. Warp k of block i counts row
// i * warps + k alone, into its own histogram in shared memory (bins x 4 bytes per warp), then
// stores all of it, zeros included, into the row's column of the matrix: no global atomics and no
// zeroing. The row is read 16 bytes per lane (two loads in flight) between a scalar head up to
// the first 16-byte boundary and a scalar tail; without a mask, each lane adds each run of equal
// bins among its 16 bytes with one atomic (neighbouring pixels are often equal).
template <typename T, bool MASKED>
__device__ void colhist_warp_rows(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, const Mask& mask,
                                  u32* __restrict__ counts) {
    extern __shared__ u32 sh[];
    constexpr u32 PER = 16 / sizeof(T);
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u32 y = blockIdx.x * warps + warp;
    u32* hist = sh + warp * bins;
    for (u32 b = lane; b < bins; b += 32) hist[b] = 0;
    __syncwarp();
    const bool identity = bins == maxval + 1;
    auto bin = [&](u32 v) -> u32 { return identity ? min(v, bins - 1) : bin_of(v, bins, maxval + 1); };
    if (y < h) {
        const T* row = px + (u64)y * w;
        auto add = [&](u32 x, u32 v) {
            if (!MASKED || mask.counts(x, y)) atomicAdd(&hist[bin(v)], 1u);
        };
        auto add16 = [&](uint4 v, u32 x) {
            Vec16<T> buf;
            buf.v = v;
            if (MASKED) {
#pragma unroll
                for (u32 k = 0; k < PER; k++) add(x + k, buf.s[k]);
                return;
            }
            u32 prev = bin(buf.s[0]), run = 1;
#pragma unroll
            for (u32 k = 1; k < PER; k++) {
                const u32 b = bin(buf.s[k]);
                if (b == prev) {
                    run++;
                } else {
                    atomicAdd(&hist[prev], run);
                    prev = b;
                    run = 1;
                }
            }
            atomicAdd(&hist[prev], run);
        };
        // A T pointer is a multiple of sizeof(T), and so is 16 - (its address mod 16).
        const u32 r = (u32)((size_t)row & 15);
        const u32 head = min(w, r ? (16 - r) / (u32)sizeof(T) : 0u);
        if (lane < head) add(lane, row[lane]);
        const u32 chunks = (w - head) / PER;
        const uint4* body = reinterpret_cast<const uint4*>(row + head);
        u32 c = lane;
        for (; c + 32 < chunks; c += 64) {
            const uint4 a = body[c], b = body[c + 32];
            add16(a, head + c * PER);
            add16(b, head + (c + 32) * PER);
        }
        if (c < chunks) add16(body[c], head + c * PER);
        for (u32 x = head + chunks * PER + lane; x < w; x += 32) add(x, row[x]);
    }
    __syncwarp();
    if (y < h)
        for (u32 b = lane; b < bins; b += 32) counts[(u64)b * h + y] = hist[b];
}

#define COLHIST_KERNELS(T, DIR, ROWS)                                                                          \
    extern "C" __global__ void colhist_tiled_##DIR##_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins,      \
                                                         u32 tile, u32 span, u32 masked, double a, double b,   \
                                                         double c, double d, double e, double f, double ow,    \
                                                         double oh, const u8* inside, u32* counts) {           \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh, inside, w};                                          \
        colhist_tiled<T, ROWS>(px, w, h, maxval, bins, tile, span, mask, counts);                              \
    }                                                                                                          \
    extern "C" __global__ void colhist_global_##DIR##_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins,     \
                                                          u32 tile, u32 span, u32 masked, double a, double b,  \
                                                          double c, double d, double e, double f, double ow,   \
                                                          double oh, const u8* inside, u32* counts) {          \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh, inside, w};                                          \
        colhist_global<T, ROWS>(px, w, h, maxval, bins, mask, counts);                                         \
    }

#define COLHIST_PAIR_KERNELS(NAME, T, K, UNROLL)                                                               \
    extern "C" __global__ void __launch_bounds__(PAIR_THREADS, 2)                                              \
        NAME(const T* px, u32 w, u32 h, u32 maxval, u32 bins, u32 tile, u32 span, u32 masked, double a,       \
             double b, double c, double d, double e, double f, double ow, double oh, const u8* inside,         \
             u32* counts, u32* partials, u32* done) {                                                         \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh, inside, w};                                          \
        if (mask.any())                                                                                        \
            colhist_pairs<T, true, K, UNROLL>(px, w, h, maxval, bins, span, mask, counts, partials, done);     \
        else                                                                                                   \
            colhist_pairs<T, false, K, UNROLL>(px, w, h, maxval, bins, span, mask, counts, partials, done);    \
    }

#define COLHIST_WARP_ROW_KERNELS(T)                                                                            \
    extern "C" __global__ void colhist_warp_rows_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins,          \
                                                     u32 tile, u32 span, u32 masked, double a, double b,       \
                                                     double c, double d, double e, double f, double ow,        \
                                                     double oh, const u8* inside, u32* counts) {               \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh, inside, w};                                          \
        if (mask.any())                                                                                        \
            colhist_warp_rows<T, true>(px, w, h, maxval, bins, mask, counts);                                  \
        else                                                                                                   \
            colhist_warp_rows<T, false>(px, w, h, maxval, bins, mask, counts);                                 \
    }

COLHIST_WARP_ROW_KERNELS(u8)
COLHIST_WARP_ROW_KERNELS(u16)

// Two samples a lane (64-column tiles) and four (128-column tiles, "wide"): colhist/gpu.rs picks
// one for the frame (Pairs::new).
COLHIST_PAIR_KERNELS(colhist_pairs_u8, u8, 2, 8)
COLHIST_PAIR_KERNELS(colhist_pairs_u16, u16, 2, 8)
COLHIST_PAIR_KERNELS(colhist_pairs_wide_u8, u8, 4, 8)
COLHIST_PAIR_KERNELS(colhist_pairs_wide_u16, u16, 4, 8)

COLHIST_KERNELS(u8, cols, false)
COLHIST_KERNELS(u8, rows, true)
COLHIST_KERNELS(u16, cols, false)
COLHIST_KERNELS(u16, rows, true)
