// rotate: turn a frame about its centre by inverse mapping; the CPU reference is
// crates/ops/src/rotate.rs, and every expression here is evaluated in the same type and order
// (kernels are compiled with --fmad=false, so no multiply-add is contracted).
//
// Both kernels work on output tiles through shared memory; the grid has a block per tile column
// and loops over tile rows past gridDim.y, so any frame size is covered.
#include "histopipe.cuh"

// Samples as the u32 of their bits (an integer's value, a float's IEEE bits), and back: quarter
// turns move bits, whatever the type (a float NaN keeps its payload). Kernels take the fill so.
__device__ __forceinline__ u32 rotate_bits(u8 v) { return v; }
__device__ __forceinline__ u32 rotate_bits(u16 v) { return v; }
__device__ __forceinline__ u32 rotate_bits(float v) { return __float_as_uint(v); }
template <typename T>
__device__ __forceinline__ T rotate_from_bits(u32 b) {
    return (T)b;
}
template <>
__device__ __forceinline__ float rotate_from_bits<float>(u32 b) {
    return __uint_as_float(b);
}

// Quarter turns of a W x H input into an OW x OH output (the same size, or with --expand H x W).
// Doubled offsets from the centres keep half-pixel centres in integers; the source of output
// (x, y) is the half-up rounding of the halved doubled coordinate, which comes to
//   q = 1: (floor((OH + W - 1) / 2) - y, x + floor((H - OW + 1) / 2))
//   q = 2: (floor((OW + W - 1) / 2) - x, floor((OH + H - 1) / 2) - y)
//   q = 3: (y + floor((W - OH + 1) / 2), floor((OW + H - 1) / 2) - x)
// (W - 1 - x, H - 1 - y for a half turn; W - 1 - y, x for a quarter turn into H x W), with floor
// an arithmetic shift (crates/ops/src/rotate.rs computes it per pixel from the doubled offsets).
// So a 32 x 32 output
// tile comes from a 32 x 32 input tile, read with coalesced rows into shared memory and written
// out turned: a tiled transpose (for q = 1 and 3) without the strided column reads.
#define QUARTER_TILE 32
#define QUARTER_PITCH 33  // u32 cells; 33 puts a tile column's cells in 32 distinct banks

// The input tile's origin (column c0, row r0) for the output tile at (x0, y0).
__device__ __forceinline__ void quarter_source(u32 w, u32 h, u32 ow, u32 oh, u32 q, i64 x0, i64 y0, i64* c0,
                                               i64* r0) {
    const i64 W = w, H = h, OW = ow, OH = oh;
    const i64 last = QUARTER_TILE - 1;
    switch (q & 3) {
        case 0: *c0 = x0; *r0 = y0; break;
        case 1: *c0 = ((OH + W - 1) >> 1) - y0 - last; *r0 = x0 + ((H - OW + 1) >> 1); break;
        case 2: *c0 = ((OW + W - 1) >> 1) - x0 - last; *r0 = ((OH + H - 1) >> 1) - y0 - last; break;
        default: *c0 = y0 + ((W - OH + 1) >> 1); *r0 = ((OW + H - 1) >> 1) - x0 - last; break;
    }
}

// Phase 1: input tile cell (i, j) = input pixel (c0 + j, r0 + i), or the fill value outside.
// Threads are 32 x 8 (tx, ty); tx walks a row.
template <typename T>
__device__ void quarter_tile_load(const T* __restrict__ in, u32 w, u32 h, u32 ow, u32 oh, u32 q, u32 fill, i64 x0,
                                  i64 y0, u32* tile, u32 tx, u32 ty) {
    i64 c0, r0;
    quarter_source(w, h, ow, oh, q, x0, y0, &c0, &r0);
    const i64 c = c0 + tx;
    for (u32 i = ty; i < QUARTER_TILE; i += 8) {
        const i64 r = r0 + i;
        const bool inside = c >= 0 && r >= 0 && c < (i64)w && r < (i64)h;
        tile[i * QUARTER_PITCH + tx] = inside ? rotate_bits(__ldg(in + ((u64)r * w + (u64)c))) : fill;
    }
}

// Phase 2: output pixel (x0 + tx, y0 + j) of the w x h output from the cell its source fell in.
template <typename T>
__device__ void quarter_tile_store(const u32* tile, u32 w, u32 h, u32 q, i64 x0, i64 y0, T* __restrict__ out,
                                   u32 tx, u32 ty) {
    const u32 last = QUARTER_TILE - 1;
    const i64 x = x0 + tx;
    if (x >= (i64)w) return;
    for (u32 j = ty; j < QUARTER_TILE; j += 8) {
        const i64 y = y0 + j;
        if (y >= (i64)h) return;
        u32 cell;
        switch (q & 3) {
            case 0: cell = j * QUARTER_PITCH + tx; break;
            case 1: cell = tx * QUARTER_PITCH + (last - j); break;
            case 2: cell = (last - j) * QUARTER_PITCH + (last - tx); break;
            default: cell = (last - tx) * QUARTER_PITCH + j; break;
        }
        out[(u64)y * w + (u64)x] = rotate_from_bits<T>(tile[cell]);
    }
}

template <typename T>
__device__ void rotate_quarter(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 ow, u32 oh, u32 q,
                               u32 fill) {
    __shared__ u32 tile[QUARTER_TILE * QUARTER_PITCH];
    const i64 x0 = (i64)blockIdx.x * QUARTER_TILE;
    const u32 tiles_y = (u32)(((u64)oh + QUARTER_TILE - 1) / QUARTER_TILE);
    // Block-uniform loop (the barriers need every thread): tile rows beyond the grid's.
    for (u32 t = blockIdx.y; t < tiles_y; t += gridDim.y) {
        const i64 y0 = (i64)t * QUARTER_TILE;
        quarter_tile_load<T>(in, w, h, ow, oh, q, fill, x0, y0, tile, threadIdx.x, threadIdx.y);
        __syncthreads();
        quarter_tile_store<T>(tile, ow, oh, q, x0, y0, out, threadIdx.x, threadIdx.y);
        __syncthreads();
    }
}

// General turns. Each block makes one 64 x ROWS tile of the output with 256 threads, ROWS / 4
// pixels each: ROWS is 32 (8 pixels a thread), 16 or 8 (4 or 2), a template parameter that the
// host picks for the frame's size (crates/ops/src/rotate/gpu.rs, tile_rows): fewer rows make more
// blocks and shorter chains of dependent loads per thread, for small frames that would leave most
// of the GPU's thread slots empty. A warp computes 8 x 4 patches of the tile (lane = 8 ly + lx),
// ROWS / 4 of them down its 8 columns: the input points of such a patch lie close together, so a
// gather touches few cache lines whatever the angle (a 32 x 1 row of output at 30 degrees reads 16
// input rows). The tile goes through shared memory so that the output is written with 8-element
// vector stores.
#define ROTATE_TILE_W 64
#define ROTATE_THREADS 256
// Padded rows: a warp's 4 patch rows fall in distinct banks, and a thread's 8 samples stay aligned
// to their size: rows of 72 B for u8 (8-byte aligned), 144 B for u16 (16-byte aligned) and 288 B
// for f32 (32-byte aligned).
#define ROTATE_PITCH 72

// 1.5 * 2^52: for |v| < 2^51, v + M rounded down is M + floor(v) exactly (ulp 1 in [2^52, 2^53)),
// with floor(v) in the low bits. One full-rate add replaces floor and a double-to-integer
// conversion, both quarter-rate on recent GPUs.
#define ROTATE_FLOOR_MAGIC 6755399441055744.0
// 2^52 with an integer k < 2^32 in the low word is 2^52 + k: an exact u32 to double by one add.
#define ROTATE_TWO_52 4503599627370496.0

// floor(v) for |v| < 2^51, as a double and in *k as its low 32 bits (two's complement).
__device__ __forceinline__ double rotate_floor(double v, u32* k) {
    const double t = __dadd_rd(v, ROTATE_FLOOR_MAGIC);
    *k = (u32)__double2loint(t);
    return __dsub_rn(t, ROTATE_FLOOR_MAGIC);
}

__device__ __forceinline__ double rotate_u32_to_double(u32 v) {
    return __dsub_rn(__hiloint2double(0x43300000, (int)v), ROTATE_TWO_52);
}

// A bilinear tap as a double (exact for every type): Blend::tap in crates/ops/src/rotate/cpu.rs.
__device__ __forceinline__ double rotate_tap(u8 v) { return rotate_u32_to_double(v); }
__device__ __forceinline__ double rotate_tap(u16 v) { return rotate_u32_to_double(v); }
__device__ __forceinline__ double rotate_tap(float v) { return (double)v; }

// The output sample of the blend r = (1 - ty) top + ty bottom: Blend::finish. Integers:
// floor(r + 0.5), at most maxval (r + 0.5 >= 0.5, far below 2^51; min commutes with floor).
template <typename T>
__device__ __forceinline__ T rotate_finish(double r, u32 maxval) {
    u32 k;
    rotate_floor(__dadd_rn(r, 0.5), &k);
    return (T)(k < maxval ? k : maxval);
}
// Floats: r rounded to the nearest float (ties to even); a NaN is the quiet NaN 0x7FC00000, as
// on the CPU, whatever payload the double arithmetic kept.
template <>
__device__ __forceinline__ float rotate_finish<float>(double r, u32) {
    return canonical_nan(__double2float_rn(r));
}

// The map's coefficients and the frame, as every thread needs them.
struct RotateMap {
    double a, b, c, d, e, f;
    double wf, hf;
    u32 w, h;
};

// Output pixel (fx, fy), with ax = a fx and dx = d fx hoisted by the caller (the same products):
// (sx, sy) = ((a x + b y) + c, (d x + e y) + f), Affine::apply's order, each operation rounded on
// its own (the _rn intrinsics are never contracted). Nearest: the pixel floor(s + 0.5) when
// 0 <= s + 0.5 < W (W an integer: the same test as on the floor). Bilinear: sample_at in
// crates/ops/src/rotate.rs, operation for operation.
template <typename T, bool BILINEAR>
__device__ __forceinline__ T rotate_pixel(const T* __restrict__ in, const RotateMap& m, double ax, double dx,
                                          double fy, T fill, double fillf, u32 maxval) {
    const double sx = __dadd_rn(__dadd_rn(ax, __dmul_rn(m.b, fy)), m.c);
    const double sy = __dadd_rn(__dadd_rn(dx, __dmul_rn(m.e, fy)), m.f);
    const double vx = __dadd_rn(sx, 0.5), vy = __dadd_rn(sy, 0.5);
    const bool inside = vx >= 0.0 && vy >= 0.0 && vx < m.wf && vy < m.hf;
    if (!BILINEAR) {
        u32 nx, ny;
        rotate_floor(vx, &nx);
        rotate_floor(vy, &ny);
        // The load is unconditional (pixel 0 when outside) so a thread's loads can all be in flight;
        // the coordinates are zeroed outside before the index is formed, so no address is ever
        // formed from them there, however the compiler schedules the load.
        nx = inside ? nx : 0;
        ny = inside ? ny : 0;
        const T v = __ldg(in + ((u64)ny * m.w + nx));
        return inside ? v : fill;
    } else {
        // Inside: -0.5 <= s < W - 0.5, so the taps' coordinates are -1..W; as u32, -1 is >= W.
        u32 ix, iy;
        const double x0 = rotate_floor(sx, &ix), y0 = rotate_floor(sy, &iy);
        const double tx = __dsub_rn(sx, x0), ty = __dsub_rn(sy, y0);
        const u32 ix1 = ix + 1, iy1 = iy + 1;
        const bool x0in = ix < m.w, x1in = ix1 < m.w, y0in = iy < m.h, y1in = iy1 < m.h;
        const bool i00 = inside && x0in && y0in, i10 = inside && x1in && y0in;
        const bool i01 = inside && x0in && y1in, i11 = inside && x1in && y1in;
        const u64 r0 = (u64)iy * m.w, r1 = (u64)iy1 * m.w;
        const T v00 = __ldg(in + (i00 ? r0 + ix : 0)), v10 = __ldg(in + (i10 ? r0 + ix1 : 0));
        const T v01 = __ldg(in + (i01 ? r1 + ix : 0)), v11 = __ldg(in + (i11 ? r1 + ix1 : 0));
        const double p00 = i00 ? rotate_tap(v00) : fillf;
        const double p10 = i10 ? rotate_tap(v10) : fillf;
        const double p01 = i01 ? rotate_tap(v01) : fillf;
        const double p11 = i11 ? rotate_tap(v11) : fillf;
        const double ux = __dsub_rn(1.0, tx);
        const double top = __dadd_rn(__dmul_rn(ux, p00), __dmul_rn(tx, p10));
        const double bottom = __dadd_rn(__dmul_rn(ux, p01), __dmul_rn(tx, p11));
        const double r = __dadd_rn(__dmul_rn(__dsub_rn(1.0, ty), top), __dmul_rn(ty, bottom));
        return inside ? rotate_finish<T>(r, maxval) : fill;
    }
}

// Phase 1: the 64 x ROWS tile at (tile_x, tile_y) into shared memory. Every thread computes its
// ROWS / 4 pixels (column lx, rows ly, ly + 4, ...), also those past the frame's edge (their reads
// are tested like any other; phase 2 drops them).
template <typename T, bool BILINEAR, u32 ROWS>
__device__ void rotate_tile_compute(const T* __restrict__ in, const RotateMap& m, u32 tile_x, u32 tile_y,
                                    T* tile, u32 tid, T fill, u32 maxval) {
    const u32 lane = tid & 31, lx = (tid >> 5) * 8 + (lane & 7), ly = lane >> 3;
    const double fx = (double)tile_x + (double)lx;
    const double ax = __dmul_rn(m.a, fx), dx = __dmul_rn(m.d, fx);
    const double fy0 = (double)tile_y + (double)ly;
    const double fillf = rotate_tap(fill);
#pragma unroll
    for (u32 i = 0; i < ROWS / 4; i++) {
        // Integers below 2^53: the sum is exact, the same as converting y.
        const double fy = __dadd_rn(fy0, (double)(4 * i));
        tile[(4 * i + ly) * ROTATE_PITCH + lx] = rotate_pixel<T, BILINEAR>(in, m, ax, dx, fy, fill, fillf, maxval);
    }
}

// `bytes` bytes from `src` to `dst`, both aligned to U, as U's.
template <typename U>
__device__ __forceinline__ void rotate_copy_as(const void* src, void* dst, u32 bytes) {
#pragma unroll
    for (u32 k = 0; k < bytes / sizeof(U); k++) ((U*)dst)[k] = ((const U*)src)[k];
}

// Phase 2: the 64 x ROWS tile's pixels inside the frame to the output, 8 consecutive ones per
// thread (8 threads a row, so the first 8 x ROWS threads; for ROWS < 32 the others have nothing to
// store), in the widest stores the destination's alignment allows: a row of a frame whose width is
// not a multiple of 8 starts at any alignment (a 3932-byte row at 4 bytes in every other row: with
// byte stores there, 3932x4000 took 1.9x as long as 4096x3112 turned nearest, for 1.2x the
// pixels). A thread's 8 samples in the tile are aligned to their whole size (ROTATE_PITCH), so
// `src` is aligned for any of these.
template <typename T, u32 ROWS>
__device__ void rotate_tile_store(const T* tile, u32 w, u32 h, u32 tile_x, u32 tile_y, T* __restrict__ out,
                                  u32 tid) {
    const u32 r = tid >> 3, col = (tid & 7) * 8;
    if (ROWS < 32 && r >= ROWS) return;
    const u64 y = (u64)tile_y + r, x = (u64)tile_x + col;
    if (y >= h) return;
    T* dst = out + y * w + x;
    const T* src = tile + r * ROTATE_PITCH + col;
    constexpr u32 BYTES = 8 * sizeof(T);
    if (x + 8 <= w) {
        const u64 at = (u64)dst;
        if (BYTES >= 16 && (at & 15) == 0) {
            rotate_copy_as<uint4>(src, dst, BYTES);
        } else if ((at & 7) == 0) {
            rotate_copy_as<uint2>(src, dst, BYTES);
        } else if ((at & 3) == 0) {
            rotate_copy_as<u32>(src, dst, BYTES);
        } else if ((at & 1) == 0) {
            rotate_copy_as<u16>(src, dst, BYTES);
        } else {
            rotate_copy_as<u8>(src, dst, BYTES);
        }
    } else {
        for (u32 k = 0; k < 8 && x + k < w; k++) dst[k] = src[k];
    }
}

// A W x H input into an OW x OH output, in 64 x ROWS tiles: the grid has ceil(OH / ROWS) rows of
// blocks (at most 65535; the loop covers the rest).
template <typename T, bool BILINEAR, u32 ROWS>
__device__ void rotate_affine(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 ow, u32 oh, double a,
                              double b, double c, double d, double e, double f, u32 fill, u32 maxval) {
    static_assert(ROWS == 8 || ROWS == 16 || ROWS == 32, "tiles of 8, 16 or 32 rows");
    // 8 x ROWS threads store the tile, 8 samples each (rotate_tile_store).
    static_assert(8 * ROWS <= ROTATE_THREADS, "a thread per 8 samples of the tile");
    __shared__ __align__(16) T tile[ROWS * ROTATE_PITCH];
    const RotateMap m = {a, b, c, d, e, f, (double)w, (double)h, w, h};
    // The grid has ceil(OW / 64) columns, so tile_x < OW, and tile_y < OH below: no u32 overflow.
    const u32 tile_x = blockIdx.x * ROTATE_TILE_W, tiles_y = (u32)(((u64)oh + ROWS - 1) / ROWS);
    // Block-uniform loop (the barriers need every thread): tile rows beyond the grid's.
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        const u32 tile_y = ty * ROWS;
        rotate_tile_compute<T, BILINEAR, ROWS>(in, m, tile_x, tile_y, tile, threadIdx.x, rotate_from_bits<T>(fill),
                                               maxval);
        __syncthreads();
        rotate_tile_store<T, ROWS>(tile, ow, oh, tile_x, tile_y, out, threadIdx.x);
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(256) rotate_quarter_u8(const u8* in, u32 w, u32 h, u8* out, u32 ow,
                                                                     u32 oh, u32 q, u32 fill) {
    rotate_quarter<u8>(in, w, h, out, ow, oh, q, fill);
}

extern "C" __global__ void __launch_bounds__(256) rotate_quarter_u16(const u16* in, u32 w, u32 h, u16* out, u32 ow,
                                                                      u32 oh, u32 q, u32 fill) {
    rotate_quarter<u16>(in, w, h, out, ow, oh, q, fill);
}

extern "C" __global__ void __launch_bounds__(256) rotate_quarter_f32(const float* in, u32 w, u32 h, float* out,
                                                                      u32 ow, u32 oh, u32 q, u32 fill) {
    rotate_quarter<float>(in, w, h, out, ow, oh, q, fill);
}

// NAME for tiles of 32 rows, NAME_r16 and NAME_r8 for 16 and 8 (the host picks one by the frame's
// size: tile_rows in crates/ops/src/rotate/gpu.rs).
#define ROTATE_AFFINE_KERNEL_ROWS(NAME, T, BILINEAR, ROWS)                                                   \
    extern "C" __global__ void __launch_bounds__(ROTATE_THREADS)                                           \
        NAME(const T* in, u32 w, u32 h, T* out, u32 ow, u32 oh, double a, double b, double c, double d,      \
             double e, double f, u32 fill, u32 maxval) {                                                   \
        rotate_affine<T, BILINEAR, ROWS>(in, w, h, out, ow, oh, a, b, c, d, e, f, fill, maxval);           \
    }
#define ROTATE_AFFINE_KERNEL(NAME, T, BILINEAR)                  \
    ROTATE_AFFINE_KERNEL_ROWS(NAME, T, BILINEAR, 32)             \
    ROTATE_AFFINE_KERNEL_ROWS(NAME##_r16, T, BILINEAR, 16)       \
    ROTATE_AFFINE_KERNEL_ROWS(NAME##_r8, T, BILINEAR, 8)

ROTATE_AFFINE_KERNEL(rotate_nearest_u8, u8, false)
ROTATE_AFFINE_KERNEL(rotate_nearest_u16, u16, false)
ROTATE_AFFINE_KERNEL(rotate_bilinear_u8, u8, true)
ROTATE_AFFINE_KERNEL(rotate_bilinear_u16, u16, true)
ROTATE_AFFINE_KERNEL(rotate_nearest_f32, float, false)
ROTATE_AFFINE_KERNEL(rotate_bilinear_f32, float, true)

// --flip: the frame mirrored before it is turned (histopipe_ops::rotate::Flip; cv2.flip). Output
// (x, y) takes input (w - 1 - x, y) where bit 0 of `mode` is set, (x, h - 1 - y) where bit 1 is,
// or both: a permutation, one sample a thread in a grid-stride loop (consecutive threads write
// consecutive samples, and read consecutive ones backwards or forwards).
template <typename T>
__device__ void flip(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 mode) {
    const u64 total = (u64)w * h;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 y = (u32)(i / w), x = (u32)(i - (u64)y * w);
        const u32 sx = (mode & 1) ? w - 1 - x : x, sy = (mode & 2) ? h - 1 - y : y;
        out[i] = in[(u64)sy * w + sx];
    }
}

extern "C" __global__ void flip_u8(const u8* in, u32 w, u32 h, u8* out, u32 mode) { flip<u8>(in, w, h, out, mode); }

extern "C" __global__ void flip_u16(const u16* in, u32 w, u32 h, u16* out, u32 mode) {
    flip<u16>(in, w, h, out, mode);
}

// Float samples are moved as they are, bit for bit.
extern "C" __global__ void flip_f32(const float* in, u32 w, u32 h, float* out, u32 mode) {
    flip<float>(in, w, h, out, mode);
}
