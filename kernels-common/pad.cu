// pad: copy a frame into a larger one at offset (left, top), filling the rest with `fill`.
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
