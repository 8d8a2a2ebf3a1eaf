// lightness: a colour frame's luma (the Y of YCrCb) as a plane, and the colour frame again from
// that plane once an operation has mapped it, for an operation on the luma of a colour frame with
// every step on the device. The arithmetic is OpenCV's integer cvtColor (COLOR_BGR2YCrCb and
// COLOR_YCrCb2BGR on CV_8U and CV_16U), exactly as crates/frame/src/colour.rs has it: weights in
// 1/2^14, each product summed in 32-bit integers and descaled by (x + 2^13) >> 14 (an arithmetic
// shift: floor for negative x).
#include "histopipe.cuh"

#define Y_R 4899
#define Y_G 9617
#define Y_B 1868
#define CR_OF_R 11682
#define CB_OF_B 9241
#define R_OF_CR 22987
#define G_OF_CR (-11698)
#define G_OF_CB (-5636)
#define B_OF_CB 29049

__device__ __forceinline__ int descale14(int x) {
    return (x + (1 << 13)) >> 14;
}

__device__ __forceinline__ int clamp_to(int v, int hi) {
    return v < 0 ? 0 : v > hi ? hi : v;
}

// y[i]: the luma of pixel i of `rgb` (`channels` samples a pixel, 3 or 4, R G B first).
template <typename T>
__device__ void luma(const T* __restrict__ rgb, u64 pixels, u32 channels, T* __restrict__ y) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < pixels; i += stride) {
        const T* p = rgb + i * channels;
        y[i] = (T)descale14((int)p[0] * Y_R + (int)p[1] * Y_G + (int)p[2] * Y_B);
    }
}

// out: `rgb` with each pixel's luma replaced by mapped[i], its Cr and Cb (made again from `rgb` as
// `luma` made its Y) kept: R, G and B clamped to 0..max (the sample type's range, as OpenCV's
// conversion clamps), then to `maxval`; alpha, the fourth sample of 4, copied. `half` is the
// chroma's offset, 2^(bits-1).
template <typename T>
__device__ void from_luma(const T* __restrict__ rgb, const T* __restrict__ mapped, u64 pixels, u32 channels,
                          int half, int max, int maxval, T* __restrict__ out) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const int delta = half << 14;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < pixels; i += stride) {
        const T* p = rgb + i * channels;
        const int r = p[0], g = p[1], b = p[2];
        const int y = descale14(r * Y_R + g * Y_G + b * Y_B);
        const int cr = clamp_to(descale14((r - y) * CR_OF_R + delta), max) - half;
        const int cb = clamp_to(descale14((b - y) * CB_OF_B + delta), max) - half;
        const int l = mapped[i];
        T* o = out + i * channels;
        o[0] = (T)min(clamp_to(l + descale14(cr * R_OF_CR), max), maxval);
        o[1] = (T)min(clamp_to(l + descale14(cb * G_OF_CB + cr * G_OF_CR), max), maxval);
        o[2] = (T)min(clamp_to(l + descale14(cb * B_OF_CB), max), maxval);
        if (channels == 4) o[3] = p[3];
    }
}

extern "C" __global__ void luma_u8(const u8* __restrict__ rgb, u64 pixels, u32 channels, u8* __restrict__ y) {
    luma(rgb, pixels, channels, y);
}

extern "C" __global__ void luma_u16(const u16* __restrict__ rgb, u64 pixels, u32 channels, u16* __restrict__ y) {
    luma(rgb, pixels, channels, y);
}

extern "C" __global__ void from_luma_u8(const u8* __restrict__ rgb, const u8* __restrict__ mapped, u64 pixels,
                                        u32 channels, u32 maxval, u8* __restrict__ out) {
    from_luma(rgb, mapped, pixels, channels, 128, 255, (int)maxval, out);
}

extern "C" __global__ void from_luma_u16(const u16* __restrict__ rgb, const u16* __restrict__ mapped, u64 pixels,
                                         u32 channels, u32 maxval, u16* __restrict__ out) {
    from_luma(rgb, mapped, pixels, channels, 32768, 65535, (int)maxval, out);
}
