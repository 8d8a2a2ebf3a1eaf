// clahe: contrast-limited adaptive histogram equalization, the arithmetic of OpenCV's
// CLAHE::apply (imgproc/src/clahe.cpp). The rules are documented in docs/clahe.md and mirrored
// exactly by crates/ops/src/clahe.rs; every float operation is an explicit _rn intrinsic, so no
// compiler flag can fuse or reorder one.
//
// Three kernels per frame: the tiles' histograms (of the frame extended by BORDER_REFLECT_101 when
// the grid does not divide it), each tile's clipped histogram turned into its look-up table, and
// each pixel mapped by bilinear interpolation between the tables of its four nearest tiles.
//
// With a mask (`clahe --mask`; `mask` not null: one byte a pixel of the frame, extended as the
// frame is), a tile counts only the pixels whose byte is non-zero, and its clip limit and scale
// come from its counted pixels N instead of its area (`masked_tiling` in clahe.rs): limit =
// max(trunc(clip * N / bins), 1) in double (saturated to 2^31 - 1), scale = float(bins - 1) /
// float(N); a tile of no counted pixel gets the identity table.
#include "histopipe.cuh"


// The tiling of one frame: `Tiling` in crates/ops/src/clahe.rs, field for field (all 4 bytes
// wide, so both sides lay it out without padding).
struct Tiling {
    u32 width, height;   // the frame
    u32 tiles_x, tiles_y;
    u32 tile_w, tile_h;  // tiles of the extended frame
    u32 bins;            // 256 or 65536
    u32 limit;           // clip limit per bin; 0: no clipping
    float scale;         // (bins - 1) / (tile_w * tile_h)
    float inv_tw, inv_th;  // 1 / tile_w, 1 / tile_h
};

// Position p (>= 0) of an extended axis on an axis of n samples, by BORDER_REFLECT_101 (OpenCV's
// borderInterpolate): reflected about the last sample, then about the first, as often as it
// takes, since the extension may be longer than the frame.
__device__ __forceinline__ u32 reflect101(u32 p, u32 n) {
    if (p < n) return p;
    if (n == 1) return 0;
    i64 q = p;
    while (q < 0 || q >= (i64)n) q = q < 0 ? -q : 2 * (i64)n - 2 - q;
    return (u32)q;
}

// One block counts `rows_per_slice` rows of one tile: blockIdx.x = tile * slices + slice. Thread i
// takes the tile's samples i, i + blockDim.x, ... in row-major order, its (row, column) advanced
// without a division. 8-bit: into a copy in shared memory, then one global atomic per non-zero
// bin; 16-bit (65536 bins, too many for shared memory): straight to the tile's global histogram,
// lanes of a warp holding the same value adding once with the group's size (a flat tile costs one
// atomic per warp, not 32); every lane runs the same iterations, as __match_any_sync needs.
template <typename T, bool SHARED>
__device__ void histograms(const T* __restrict__ in, const u8* __restrict__ mask, Tiling t, u32 rows_per_slice,
                           u32 slices, u32* __restrict__ counts) {
    __shared__ u32 local[SHARED ? 256 : 1];
    const u32 tile = blockIdx.x / slices, slice = blockIdx.x - tile * slices;
    const u32 tx = tile % t.tiles_x, ty = tile / t.tiles_x;
    const u32 first_row = slice * rows_per_slice;
    const u32 rows = min(rows_per_slice, t.tile_h - first_row);
    const u32 x0 = tx * t.tile_w, y0 = ty * t.tile_h + first_row;
    const u32 total = rows * t.tile_w;  // < 2^31: a tile holds fewer pixels (clahe.rs)
    u32* __restrict__ hist = counts + (u64)tile * t.bins;
    if (SHARED) {
        for (u32 b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
        __syncthreads();
    }
    const u32 lane = threadIdx.x & 31;
    const u32 step_rows = blockDim.x / t.tile_w, step_cols = blockDim.x % t.tile_w;
    u32 r = threadIdx.x / t.tile_w, c = threadIdx.x % t.tile_w;
    for (u32 i = threadIdx.x; i - lane < total; i += blockDim.x) {
        bool valid = i < total;
        u32 v = 0xffffffffu;
        if (valid) {
            const u32 sx = reflect101(x0 + c, t.width), sy = reflect101(y0 + r, t.height);
            const u64 at = (u64)sy * t.width + sx;
            // A pixel the mask leaves out is an idle lane.
            valid = mask == nullptr || mask[at] != 0;
            if (valid) v = in[at];
        }
        if (SHARED) {
            if (valid) atomicAdd(&local[v], 1u);
        } else {
            // An idle lane holds a value no sample has, so it groups only with itself.
            const u32 group = __match_any_sync(FULL_MASK, v);
            if (valid && lane == (u32)(__ffs(group) - 1)) atomicAdd(&hist[v], (u32)__popc(group));
        }
        r += step_rows;
        c += step_cols;
        if (c >= t.tile_w) {
            c -= t.tile_w;
            r++;
        }
    }
    if (SHARED) {
        __syncthreads();
        for (u32 b = threadIdx.x; b < 256; b += blockDim.x)
            if (local[b]) atomicAdd(&hist[b], local[b]);
    }
}

extern "C" __global__ void histograms_u8(const u8* in, const u8* mask, Tiling t, u32 rows_per_slice, u32 slices,
                                         u32* counts) {
    histograms<u8, true>(in, mask, t, rows_per_slice, slices, counts);
}

extern "C" __global__ void histograms_u16(const u16* in, const u8* mask, Tiling t, u32 rows_per_slice, u32 slices,
                                          u32* counts) {
    histograms<u16, false>(in, mask, t, rows_per_slice, slices, counts);
}

// One block per tile turns its histogram into its look-up table, blockDim.x bins at a time.
// Clipping (limit > 0): each bin is cut to the limit; of the E counts cut off, E div bins go to
// every bin, and the remaining R = E mod bins one each to bins 0, s, 2s, ... (R of them, s =
// max(bins div R, 1)). Then lut[b] = saturate(round_half_even(float(cdf(b)) * scale)), the sum
// converted to float rounding to nearest.
template <typename T>
__device__ void tables(const u32* __restrict__ counts, Tiling t, u32 masked, double clip, T* __restrict__ luts) {
    __shared__ u32 scratch[33];
    const u32* __restrict__ hist = counts + (u64)blockIdx.x * t.bins;
    T* __restrict__ lut = luts + (u64)blockIdx.x * t.bins;
    if (masked) {
        // The tile's counted pixels (< 2^31, as its area) set its limit and scale.
        u32 part = 0;
        for (u32 b = threadIdx.x; b < t.bins; b += blockDim.x) part += hist[b];
        const u32 counted = block_reduce(part, scratch, Plus());
        __syncthreads();
        if (counted == 0) {
            for (u32 b = threadIdx.x; b < t.bins; b += blockDim.x) lut[b] = (T)b;
            return;
        }
        t.scale = __fdiv_rn(__uint2float_rn(t.bins - 1), __uint2float_rn(counted));
        if (clip > 0.0) {
            const double limit = __ddiv_rn(__dmul_rn(clip, (double)counted), (double)t.bins);
            t.limit = limit >= 2147483647.0 ? 2147483647u : max((u32)limit, 1u);
        }
    }
    u32 batch = 0, residual = 0, step = 1;
    if (t.limit > 0) {
        u32 excess = 0;
        for (u32 b = threadIdx.x; b < t.bins; b += blockDim.x) {
            const u32 h = hist[b];
            excess += h > t.limit ? h - t.limit : 0;
        }
        const u32 clipped = block_reduce(excess, scratch, Plus());
        batch = clipped / t.bins;
        residual = clipped - batch * t.bins;
        step = residual ? max(t.bins / residual, 1u) : 1;
        // scratch is rewritten by the scans below.
        __syncthreads();
    }
    u32 carry = 0;
    for (u32 base = 0; base < t.bins; base += blockDim.x) {
        const u32 b = base + threadIdx.x;
        u32 h = b < t.bins ? hist[b] : 0;
        if (t.limit > 0 && b < t.bins) h = min(h, t.limit) + batch + (b % step == 0 && b / step < residual);
        u32 round_total;
        const u32 cdf = carry + block_scan(h, scratch, &round_total);
        if (b < t.bins) {
            const int v = __float2int_rn(__fmul_rn(__uint2float_rn(cdf), t.scale));
            lut[b] = (T)(v < 0 ? 0 : v > (int)(t.bins - 1) ? t.bins - 1 : v);
        }
        carry += round_total;
        // scratch is rewritten by the next round.
        __syncthreads();
    }
}

extern "C" __global__ void tables_u8(const u32* counts, Tiling t, u32 masked, double clip, u8* luts) {
    tables<u8>(counts, t, masked, clip, luts);
}

extern "C" __global__ void tables_u16(const u32* counts, Tiling t, u32 masked, double clip, u16* luts) {
    tables<u16>(counts, t, masked, clip, luts);
}

// The weights of position p on an axis of tiles of size 1 / inv: OpenCV's
// pf = p * inv - 0.5, i1 = floor(pf), a = pf - i1; the nearer tiles i1 and i1 + 1 clamped to
// 0..tiles - 1, weighted 1 - a and a.
struct Weights {
    u32 first, second;
    float a, a1;
};

__device__ __forceinline__ Weights weights(u32 p, float inv, u32 tiles) {
    const float pf = __fsub_rn(__fmul_rn(__uint2float_rn(p), inv), 0.5f);
    const int i1 = (int)floorf(pf);
    Weights w;
    w.a = __fsub_rn(pf, __int2float_rn(i1));
    w.a1 = __fsub_rn(1.0f, w.a);
    w.first = i1 < 0 ? 0 : (u32)i1;
    w.second = min((u32)(i1 + 1), tiles - 1);
    return w;
}

// One thread per column (its weights computed once), blocks striding over rows:
// out = round_half_even((l11 * xa1 + l12 * xa) * ya1 + (l21 * xa1 + l22 * xa) * ya), saturated,
// with lRC the table of tile row R and column C at the pixel's value, in OpenCV's order.
template <typename T>
__device__ void interpolate(const T* __restrict__ in, Tiling t, const T* __restrict__ luts,
                            T* __restrict__ out) {
    const u32 x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= t.width) return;
    const Weights wx = weights(x, t.inv_tw, t.tiles_x);
    const u64 col1 = (u64)wx.first * t.bins, col2 = (u64)wx.second * t.bins;
    const u64 row_tables = (u64)t.tiles_x * t.bins;
    for (u32 y = blockIdx.y; y < t.height; y += gridDim.y) {
        const Weights wy = weights(y, t.inv_th, t.tiles_y);
        const u64 i = (u64)y * t.width + x;
        const u32 v = in[i];
        const T* __restrict__ plane1 = luts + wy.first * row_tables;
        const T* __restrict__ plane2 = luts + wy.second * row_tables;
        const float l11 = __ldg(&plane1[col1 + v]), l12 = __ldg(&plane1[col2 + v]);
        const float l21 = __ldg(&plane2[col1 + v]), l22 = __ldg(&plane2[col2 + v]);
        const float top = __fadd_rn(__fmul_rn(l11, wx.a1), __fmul_rn(l12, wx.a));
        const float bottom = __fadd_rn(__fmul_rn(l21, wx.a1), __fmul_rn(l22, wx.a));
        const float res = __fadd_rn(__fmul_rn(top, wy.a1), __fmul_rn(bottom, wy.a));
        const int r = __float2int_rn(res);
        out[i] = (T)(r < 0 ? 0 : r > (int)(t.bins - 1) ? t.bins - 1 : r);
    }
}

extern "C" __global__ void interpolate_u8(const u8* in, Tiling t, const u8* luts, u8* out) {
    interpolate<u8>(in, t, luts, out);
}

extern "C" __global__ void interpolate_u16(const u16* in, Tiling t, const u16* luts, u16* out) {
    interpolate<u16>(in, t, luts, out);
}
