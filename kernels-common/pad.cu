// pad: copy a frame into a larger one at offset (left, top), filling the rest with `fill`
// (pad_*), or with the frame's pixels as OpenCV's copyMakeBorder does (pad_border_*).
//
// Each thread writes 16 consecutive bytes of the flat output with one vector store (the output
// buffer is 256-byte aligned, so flat offsets that are multiples of 16 bytes are aligned), and
// gathers their samples from the input; a grid-stride loop covers frames of any size.
#include "histopipe.cuh"

template <typename T>
__device__ void pad(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 ow, u32 oh, u32 left,
                    u32 top, T fill) {
    constexpr u32 PER = 16 / sizeof(T);
    const u64 total = (u64)ow * oh;
    for (u64 chunk = (u64)blockIdx.x * blockDim.x + threadIdx.x; chunk * PER < total;
         chunk += (u64)gridDim.x * blockDim.x) {
        const u64 i0 = chunk * PER;
        u32 y = (u32)(i0 / ow);
        u32 x = (u32)(i0 - (u64)y * ow);
        Vec16<T> buf;
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            // Unsigned wrap-around makes "left of the image" a huge value: one compare per axis.
            const u32 sx = x - left, sy = y - top;
            buf.s[k] = (sx < w && sy < h) ? in[(u64)sy * w + sx] : fill;
            if (++x == ow) {
                x = 0;
                ++y;
            }
        }
        if (i0 + PER <= total) {
            *reinterpret_cast<uint4*>(out + i0) = buf.v;
        } else {
            for (u32 k = 0; i0 + k < total; k++) out[i0 + k] = buf.s[k];
        }
    }
}

extern "C" __global__ void pad_u8(const u8* in, u32 w, u32 h, u8* out, u32 ow, u32 oh, u32 left, u32 top,
                                  u32 fill) {
    pad<u8>(in, w, h, out, ow, oh, left, top, (u8)fill);
}

extern "C" __global__ void pad_u16(const u16* in, u32 w, u32 h, u16* out, u32 ow, u32 oh, u32 left,
                                   u32 top, u32 fill) {
    pad<u16>(in, w, h, out, ow, oh, left, top, (u16)fill);
}

// Float samples are copied as they are: the fill comes as its IEEE bits.
extern "C" __global__ void pad_f32(const float* in, u32 w, u32 h, float* out, u32 ow, u32 oh, u32 left,
                                   u32 top, u32 fill) {
    pad<float>(in, w, h, out, ow, oh, left, top, __uint_as_float(fill));
}

// The border types of pad_border_*: histopipe_ops::pad::Border's kernel_mode() (the GPU tests
// compare each with the CPU).
#define BORDER_REPLICATE 1
#define BORDER_REFLECT 2
#define BORDER_REFLECT_101 3
#define BORDER_WRAP 4

// p mod m, in 0..m (m > 0).
__device__ __forceinline__ i64 modulo(i64 p, i64 m) {
    const i64 q = p % m;
    return q < 0 ? q + m : q;
}

// The frame's coordinate that coordinate p (of the padded frame, less the offset) copies along
// an axis of len >= 1 pixels: OpenCV's borderInterpolate in closed form, as
// histopipe_ops::pad::Border::source (whose doc gives the formulas).
__device__ __forceinline__ u32 border_source(i64 p, u32 len, u32 mode) {
    const i64 n = len;
    if (p >= 0 && p < n) return (u32)p;
    if (mode == BORDER_REPLICATE) return p < 0 ? 0 : len - 1;
    if (mode == BORDER_WRAP) return (u32)modulo(p, n);
    if (mode == BORDER_REFLECT) {
        const i64 q = modulo(p, 2 * n);
        return (u32)(q < n ? q : 2 * n - 1 - q);
    }
    if (n == 1) return 0;
    const i64 q = modulo(p, 2 * (n - 1));
    return (u32)(q < n ? q : 2 * (n - 1) - q);
}

// Each thread writes 16 consecutive bytes of the flat output, as pad's, gathering each sample
// from the frame's pixel its coordinates name; the row's offset is found once per output row.
template <typename T>
__device__ void pad_border(const T* __restrict__ in, u32 w, u32 h, T* __restrict__ out, u32 ow, u32 oh,
                           u32 left, u32 top, u32 mode) {
    constexpr u32 PER = 16 / sizeof(T);
    const u64 total = (u64)ow * oh;
    for (u64 chunk = (u64)blockIdx.x * blockDim.x + threadIdx.x; chunk * PER < total;
         chunk += (u64)gridDim.x * blockDim.x) {
        const u64 i0 = chunk * PER;
        u32 y = (u32)(i0 / ow);
        u32 x = (u32)(i0 - (u64)y * ow);
        u64 row = (u64)border_source((i64)y - top, h, mode) * w;
        Vec16<T> buf;
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            buf.s[k] = in[row + border_source((i64)x - left, w, mode)];
            if (++x == ow) {
                x = 0;
                ++y;
                // Past the last row only when the chunk ends the output: clamped, never read.
                row = (u64)border_source((i64)(y < oh ? y : oh - 1) - top, h, mode) * w;
            }
        }
        if (i0 + PER <= total) {
            *reinterpret_cast<uint4*>(out + i0) = buf.v;
        } else {
            for (u32 k = 0; i0 + k < total; k++) out[i0 + k] = buf.s[k];
        }
    }
}

extern "C" __global__ void pad_border_u8(const u8* in, u32 w, u32 h, u8* out, u32 ow, u32 oh, u32 left,
                                         u32 top, u32 mode) {
    pad_border<u8>(in, w, h, out, ow, oh, left, top, mode);
}

extern "C" __global__ void pad_border_u16(const u16* in, u32 w, u32 h, u16* out, u32 ow, u32 oh, u32 left,
                                          u32 top, u32 mode) {
    pad_border<u16>(in, w, h, out, ow, oh, left, top, mode);
}

// Float samples are copied as they are, bit for bit.
extern "C" __global__ void pad_border_f32(const float* in, u32 w, u32 h, float* out, u32 ow, u32 oh,
                                          u32 left, u32 top, u32 mode) {
    pad_border<float>(in, w, h, out, ow, oh, left, top, mode);
}
