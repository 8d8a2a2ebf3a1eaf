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

// colhist_pairs_*: columns, at most PAIR_MAX_BINS bins (colhist.rs keeps the two equal). Block
// (i, j) counts the 64 columns [64 i, 64 i + 64) over the rows [j span, j span + span). Lane l of
// every warp owns the pair of columns 2l, 2l + 1 of the tile, read with one two-sample load per
// row; the pair's two 16-bit counters of bin b share the 32-bit word sh[32 b + l] (low half:
// column 2l, high half: 2l + 1). So the 32 atomics of one warp instruction always go to 32
// different banks and never to the same word, whatever the image (constant regions included).
// A half gains at most one count per row and the host keeps span <= 65535, so it never carries
// into the other. Each warp takes every warps-th row, PAIR_UNROLL rows' loads issued before their
// atomics so that several loads are in flight per thread.
//
// The merge: a grid of one block per tile (gridDim.y == 1) stores every counter, zeros included.
// With several parts along the rows, each block stores its packed counters (bins x 32 words) in
// partials[tile][part] with plain coalesced stores, and the tile's last block to finish (counted in
// done[tile], which the host zeroes; "last block done" as in CUDA's threadFenceReduction sample)
// adds the parts up and stores the tile's final counts: no global atomics on the matrix (global
// atomics on every non-zero counter of every part would cost more than the counting on random
// content), and no zeroing of the matrix.
#define PAIR_MAX_BINS 384
#define PAIR_TILE 64
#define PAIR_UNROLL 8

template <typename T> struct Pair;
template <> struct Pair<u8> {
    typedef u16 type;
};
template <> struct Pair<u16> {
    typedef u32 type;
};

// Stores the final counts c0, c1 of shared word i of the tile at column x0: bin i / 32, columns
// x0 + 2 (i % 32) and the next one.
__device__ __forceinline__ void store_pair(u32* counts, u32 w, u32 bins, u32 x0, u32 i, u32 c0, u32 c1) {
    const u32 b = i >> 5, xl = x0 + 2 * (i & 31);
    if (b >= bins || xl >= w) return;
    u32* at = counts + (u64)b * w + xl;
    at[0] = c0;
    if (xl + 1 < w) at[1] = c1;
}

template <typename T, bool MASKED>
__device__ void colhist_pairs(const T* __restrict__ px, u32 w, u32 h, u32 maxval, u32 bins, u32 span,
                              const Mask& mask, u32* __restrict__ counts, u32* __restrict__ partials,
                              u32* __restrict__ done) {
    typedef typename Pair<T>::type P;
    extern __shared__ u32 sh[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u32 x0 = blockIdx.x * PAIR_TILE, y0 = blockIdx.y * span;
    const u32 y1 = min(h, y0 + span);
    for (u32 i = threadIdx.x; i < bins * 32; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    const u32 x = x0 + 2 * lane;
    const bool left = x < w, right = x + 1 < w;
    // One aligned P load per row when every row starts on a P boundary (x is even).
    const bool paired = right && (w & 1) == 0 && ((size_t)px & (sizeof(P) - 1)) == 0;
    const bool identity = bins == maxval + 1;
    auto bin = [&](u32 v) -> u32 { return identity ? min(v, bins - 1) : bin_of(v, bins, maxval + 1); };
    for (u32 y = y0 + warp; y < y1; y += warps * PAIR_UNROLL) {
        u32 lo[PAIR_UNROLL], hi[PAIR_UNROLL];
#pragma unroll
        for (u32 u = 0; u < PAIR_UNROLL; u++) {
            const u32 row = y + u * warps;
            lo[u] = hi[u] = 0;
            if (row >= y1) continue;
            const T* r = px + (u64)row * w;
            if (paired) {
                const P two = *reinterpret_cast<const P*>(r + x);
                // Little-endian: the lower address, column x, is the low half.
                lo[u] = (u32)(two & (P)((1u << (8 * sizeof(T))) - 1));
                hi[u] = (u32)(two >> (8 * sizeof(T)));
            } else {
                if (left) lo[u] = r[x];
                if (right) hi[u] = r[x + 1];
            }
        }
#pragma unroll
        for (u32 u = 0; u < PAIR_UNROLL; u++) {
            const u32 row = y + u * warps;
            if (row >= y1) continue;
            if (left && (!MASKED || mask.counts(x, row))) atomicAdd(&sh[bin(lo[u]) * 32 + lane], 1u);
            if (right && (!MASKED || mask.counts(x + 1, row))) atomicAdd(&sh[bin(hi[u]) * 32 + lane], 1u << 16);
        }
    }
    __syncthreads();
    if (gridDim.y == 1) {
        for (u32 i = threadIdx.x; i < bins * 32; i += blockDim.x)
            store_pair(counts, w, bins, x0, i, sh[i] & 0xffffu, sh[i] >> 16);
        return;
    }
    // Several parts along the rows: publish this block's packed counters, and let the tile's last
    // block to finish add the parts up (see the comment above colhist_pairs).
    const u64 words = (u64)bins * 32;
    u32* mine = partials + ((u64)blockIdx.x * gridDim.y + blockIdx.y) * words;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) mine[i] = sh[i];
    __threadfence();
    __syncthreads();
    // sh is free now: its first word carries the verdict to the whole block.
    if (threadIdx.x == 0) sh[0] = atomicAdd(&done[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!sh[0]) return;
    __threadfence();
    const u32* parts = partials + (u64)blockIdx.x * gridDim.y * words;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) {
        // Each half of a part is at most 65535; their sums, a column's counts, at most h < 2^32.
        u32 c0 = 0, c1 = 0;
        for (u32 p = 0; p < gridDim.y; p++) {
            const u32 word = __ldcg(&parts[p * words + i]);
            c0 += word & 0xffffu;
            c1 += word >> 16;
        }
        store_pair(counts, w, bins, x0, i, c0, c1);
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

#define COLHIST_PAIR_KERNELS(T)                                                                                \
    extern "C" __global__ void colhist_pairs_##T(const T* px, u32 w, u32 h, u32 maxval, u32 bins, u32 tile,    \
                                                 u32 span, u32 masked, double a, double b, double c, double d, \
                                                 double e, double f, double ow, double oh, const u8* inside,   \
                                                 u32* counts, u32* partials, u32* done) {                      \
        const Mask mask{masked, a, b, c, d, e, f, ow, oh, inside, w};                                          \
        if (mask.any())                                                                                        \
            colhist_pairs<T, true>(px, w, h, maxval, bins, span, mask, counts, partials, done);                \
        else                                                                                                   \
            colhist_pairs<T, false>(px, w, h, maxval, bins, span, mask, counts, partials, done);               \
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

COLHIST_PAIR_KERNELS(u8)
COLHIST_PAIR_KERNELS(u16)

COLHIST_KERNELS(u8, cols, false)
COLHIST_KERNELS(u8, rows, true)
COLHIST_KERNELS(u16, cols, false)
COLHIST_KERNELS(u16, rows, true)
