// rotate: turn a frame about its centre by inverse mapping; the CPU reference is
// crates/ops/src/rotate.rs, and every expression here is evaluated in the same type and order
// (kernels are compiled with --fmad=false, so no multiply-add is contracted).
//
// 32x8 blocks, grid-stride in both directions so any frame size is covered.
#include "histopipe.cuh"

// Quarter turns: doubled offsets from the centre keep half-pixel centres (W - H odd) in integers;
// the source is floor((s + 1) / 2) of the doubled coordinate s, the half-up rounding of s / 2.
template <typename T>
__device__ void rotate_quarter(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 q, T fill) {
    const i64 w2 = (i64)w - 1, h2 = (i64)h - 1;
    for (u32 y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        for (u32 x = blockIdx.x * blockDim.x + threadIdx.x; x < w; x += gridDim.x * blockDim.x) {
            const i64 dx = 2 * (i64)x - w2, dy = 2 * (i64)y - h2;
            i64 sx2, sy2;
            switch (q & 3) {
                case 0: sx2 = dx; sy2 = dy; break;
                case 1: sx2 = -dy; sy2 = dx; break;
                case 2: sx2 = -dx; sy2 = -dy; break;
                default: sx2 = dy; sy2 = -dx; break;
            }
            // Arithmetic shift: floor division by 2 for negative values too.
            const i64 sx = (sx2 + w2 + 1) >> 1, sy = (sy2 + h2 + 1) >> 1;
            const bool inside = sx >= 0 && sy >= 0 && sx < (i64)w && sy < (i64)h;
            out[(u64)y * w + x] = inside ? in[(u64)sy * w + (u64)sx] : fill;
        }
    }
}

// The sample at input pixel (x, y), or the fill value outside the input (bilinear neighbours).
template <typename T>
__device__ __forceinline__ double at(const T* __restrict__ in, u32 w, u32 h, double x, double y, u32 fill) {
    const bool inside = x >= 0.0 && y >= 0.0 && x < (double)w && y < (double)h;
    return inside ? (double)(u32)in[(u64)y * w + (u64)x] : (double)fill;
}

// Any other angle: (sx, sy) = (a x + b y + c, d x + e y + f), Affine::apply's order, in double.
template <typename T>
__device__ void rotate_affine(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, double a, double b,
                              double c, double d, double e, double f, u32 fill, u32 maxval, u32 bilinear) {
    for (u32 y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        for (u32 x = blockIdx.x * blockDim.x + threadIdx.x; x < w; x += gridDim.x * blockDim.x) {
            const double fx = (double)x, fy = (double)y;
            const double sx = a * fx + b * fy + c;
            const double sy = d * fx + e * fy + f;
            const double nx = floor(sx + 0.5), ny = floor(sy + 0.5);
            T v;
            if (!(nx >= 0.0 && ny >= 0.0 && nx < (double)w && ny < (double)h)) {
                v = (T)fill;
            } else if (!bilinear) {
                v = in[(u64)ny * w + (u64)nx];
            } else {
                const double x0 = floor(sx), y0 = floor(sy);
                const double tx = sx - x0, ty = sy - y0;
                const double p00 = at(in, w, h, x0, y0, fill), p10 = at(in, w, h, x0 + 1.0, y0, fill);
                const double p01 = at(in, w, h, x0, y0 + 1.0, fill), p11 = at(in, w, h, x0 + 1.0, y0 + 1.0, fill);
                const double top = (1.0 - tx) * p00 + tx * p10;
                const double bottom = (1.0 - tx) * p01 + tx * p11;
                const double r = fmin(floor((1.0 - ty) * top + ty * bottom + 0.5), (double)maxval);
                v = (T)(u32)r;
            }
            out[(u64)y * w + x] = v;
        }
    }
}

extern "C" __global__ void rotate_quarter_u8(const u8* in, u32 w, u32 h, u8* out, u32 q, u32 fill) {
    rotate_quarter<u8>(in, w, h, out, q, (u8)fill);
}

extern "C" __global__ void rotate_quarter_u16(const u16* in, u32 w, u32 h, u16* out, u32 q, u32 fill) {
    rotate_quarter<u16>(in, w, h, out, q, (u16)fill);
}

extern "C" __global__ void rotate_affine_u8(const u8* in, u32 w, u32 h, u8* out, double a, double b, double c,
                                            double d, double e, double f, u32 fill, u32 maxval, u32 bilinear) {
    rotate_affine<u8>(in, w, h, out, a, b, c, d, e, f, fill, maxval, bilinear);
}

extern "C" __global__ void rotate_affine_u16(const u16* in, u32 w, u32 h, u16* out, double a, double b, double c,
                                             double d, double e, double f, u32 fill, u32 maxval, u32 bilinear) {
    rotate_affine<u16>(in, w, h, out, a, b, c, d, e, f, fill, maxval, bilinear);
}
