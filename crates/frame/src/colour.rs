//! OpenCV's colour conversions, sample for sample: what `cv2.cvtColor` gives for `COLOR_BGR2GRAY`
//! (`BGRA2GRAY`), `COLOR_BGR2YCrCb` and `COLOR_YCrCb2BGR` (OpenCV 5.0, imgproc's
//! `color_rgb.simd.hpp` and `color_yuv.simd.hpp`), on our interleaved R,G,B(,A) samples.
//!
//! OpenCV stores B,G,R; each function here is OpenCV's BGR one applied to the reversed channels.
//! `channels` is 3 (R,G,B) or 4 (R,G,B,A; alpha is never read, and never written).
//! Integer depths use OpenCV's fixed-point coefficients and `CV_DESCALE(x, n) = (x + 2^(n-1)) >> n`
//! (an arithmetic shift: it floors), then saturate; OpenCV's SIMD paths compute the same integers
//! as its scalar ones (16-bit lanes are corrected for their sign, sums kept in 32 bits), so one
//! scalar formula is exact for every pixel.
//!
//! | conversion | formula |
//! |---|---|
//! | gray, 8/16-bit | Y = (9798 R + 19235 G + 3735 B + 2^14) >> 15 |
//! | gray, f32 | Y = fma(R, 0.299, fma(B, 0.114, G · 0.587)) (as IPP computes it, see [`gray_f32`]) |
//! | to YCrCb | Y = (4899 R + 9617 G + 1868 B + 2^13) >> 14 |
//! | | Cr = sat((R − Y) · 11682 + d · 2^14 + 2^13) >> 14), Cb likewise with B and 9241 |
//! | from YCrCb | R = sat(Y + ((Cr − d) · 22987 + 2^13) >> 14) |
//! | | G = sat(Y + ((Cb − d) · −5636 + (Cr − d) · −11698 + 2^13) >> 14) |
//! | | B = sat(Y + ((Cb − d) · 29049 + 2^13) >> 14) |
//!
//! where d is half the range: 128 for 8-bit samples, 32768 for 16-bit ones, and sat clamps to the
//! sample's range.
//!
//! CIE L\*a\*b\* (`COLOR_BGR2Lab`, `COLOR_Lab2BGR`, 8-bit: [`to_lab_u8`], [`from_lab_u8`]) is
//! OpenCV's table-driven integer arithmetic, stated in colour/lab.rs.

mod lab;
#[cfg(test)]
mod opencv;

pub use lab::{from_lab_u8, to_lab_u8};

/// Runs `$body` compiled for AVX2 where the CPU has it (in `$name`, a function made for it with
/// the arguments named: the compiler vectorizes its blocks 8 lanes of 32 bits wide), else as the
/// build targets (SSE2 on x86-64: 4 lanes). Both compile the same integer arithmetic, so give the
/// same samples.
macro_rules! widest {
    ($name:ident($($arg:ident: $ty:ty),*) => $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            /// # Safety
            /// The CPU has AVX2 (an `unsafe fn`: safe functions with target features need Rust
            /// 1.86, and the workspace builds with 1.85).
            #[target_feature(enable = "avx2")]
            unsafe fn $name($($arg: $ty),*) {
                $body
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                return unsafe { $name($($arg),*) };
            }
        }
        $body
    }};
}

/// Rec.601 luma in 1/2^15 (OpenCV's `RY15`, `GY15`, `BY15`: 0.299, 0.587, 0.114, summing to 2^15).
const GRAY_R: u32 = 9798;
const GRAY_G: u32 = 19235;
const GRAY_B: u32 = 3735;
const GRAY_SHIFT: u32 = 15;

/// Rec.601 luma in 1/2^14 (OpenCV's `R2Y`, `G2Y`, `B2Y`), used by YCrCb.
const Y_R: i32 = 4899;
const Y_G: i32 = 9617;
const Y_B: i32 = 1868;
/// 0.713 = 1 / (2 (1 − 0.299)) and 0.564 = 1 / (2 (1 − 0.114)), in 1/2^14 (`YCRI`, `YCBI`).
const CR_OF_R: i32 = 11682;
const CB_OF_B: i32 = 9241;
/// The inverse's 1.403, −0.714, −0.344, 1.773 in 1/2^14 (`CR2RI`, `CR2GI`, `CB2GI`, `CB2BI`).
const R_OF_CR: i32 = 22987;
const G_OF_CR: i32 = -11698;
const G_OF_CB: i32 = -5636;
const B_OF_CB: i32 = 29049;
const YCC_SHIFT: u32 = 14;

/// `CV_DESCALE(x, 14)`: x / 2^14 rounded half up (floor for negative x, as OpenCV's `>>`).
fn descale14(x: i32) -> i32 {
    (x + (1 << (YCC_SHIFT - 1))) >> YCC_SHIFT
}

/// Checks that `samples` holds whole pixels of `channels` samples and `pixels` outputs fit them.
fn check(samples: usize, channels: usize, pixels: usize) {
    assert!(channels == 3 || channels == 4, "colour pixels have 3 or 4 channels, not {channels}");
    assert_eq!(samples % channels, 0, "{samples} samples are not whole {channels}-channel pixels");
    assert_eq!(samples / channels, pixels, "one output per pixel");
}

/// Gray as `cv2.cvtColor(img, COLOR_BGR2GRAY)` on `CV_8U`:
/// Y = (9798 R + 19235 G + 3735 B + 2^14) >> 15.
///
/// # Example
/// ```
/// let mut y = [0u8; 2];
/// histopipe_frame::colour::gray_u8(&[255, 0, 0, 10, 20, 30], 3, &mut y);
/// assert_eq!(y, [76, 18]);
/// ```
pub fn gray_u8(rgb: &[u8], channels: usize, out: &mut [u8]) {
    check(rgb.len(), channels, out.len());
    widest!(gray_u8_avx2(rgb: &[u8], channels: usize, out: &mut [u8]) => gray(rgb, channels, out, |v| v as u8));
}

/// Gray as `cv2.cvtColor(img, COLOR_BGR2GRAY)` on `CV_16U`: the formula of [`gray_u8`].
pub fn gray_u16(rgb: &[u16], channels: usize, out: &mut [u16]) {
    check(rgb.len(), channels, out.len());
    widest!(gray_u16_avx2(rgb: &[u16], channels: usize, out: &mut [u16]) => gray(rgb, channels, out, |v| v as u16));
}

/// The gray of every pixel, a [`BLOCK`] at a time. The sum is at most 65535 · 2^15 + 2^14 < 2^32,
/// and the result at most the sample's largest value, so `narrow` loses nothing.
#[inline(always)]
fn gray<T: Copy + Into<u32>>(rgb: &[T], channels: usize, out: &mut [T], narrow: impl Fn(u32) -> T) {
    let convert = |[r, g, b]: [u32; 3]| narrow(gray_fixed(r, g, b));
    match channels {
        3 => blocks::<T, u32, T, 3, 1>(rgb, [out], |p| [convert(p)]),
        _ => blocks::<T, u32, T, 4, 1>(rgb, [out], |p| [convert(p)]),
    }
}

fn gray_fixed(r: u32, g: u32, b: u32) -> u32 {
    (r * GRAY_R + g * GRAY_G + b * GRAY_B + (1 << (GRAY_SHIFT - 1))) >> GRAY_SHIFT
}

/// Gray as `cv2.cvtColor(img, COLOR_BGR2GRAY)` on `CV_32F` (no clamping: any value, negative or
/// above 1, goes through): Y = fma(R, 0.299, fma(B, 0.114, G · 0.587)) with the coefficients
/// as f32 and every step rounded once, as Intel IPP's `ippiColorToGray` computes it; pip's cv2
/// calls IPP for this conversion.
///
/// OpenCV's own code (IPP off) sums fma(R, 0.299, fma(G, 0.587, B · 0.114)): a last-bit
/// difference in about a fifth of pixels. IPP itself uses that order too for the pixels at even
/// offsets of a row's last 4-pixel group when the row's width is 4 to 7 more than a multiple of 8;
/// rows are not known here, so those pixels may differ from cv2 by one unit in the last place.
pub fn gray_f32(rgb: &[f32], channels: usize, out: &mut [f32]) {
    check(rgb.len(), channels, out.len());
    let (r, g, b) = (0.299f32, 0.587f32, 0.114f32);
    let gray = |p: &[f32]| fma_f32(p[0], r, fma_f32(p[2], b, p[1] * g));
    match channels {
        3 => out.iter_mut().zip(rgb.chunks_exact(3)).for_each(|(o, p)| *o = gray(p)),
        _ => out.iter_mut().zip(rgb.chunks_exact(4)).for_each(|(o, p)| *o = gray(p)),
    }
}

/// a · b + c rounded once to f32, as a fused multiply-add, without the FMA instruction (which
/// `f32::mul_add` needs to be fast, and which a plain build does not assume).
///
/// a · b is exact in f64; the f64 sum is made round-to-odd (its last bit records any inexactness),
/// and rounding a round-to-odd value with 29 more bits to f32 is the correctly rounded result
/// (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
/// rounding to odd", IEEE TC 2008).
fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let (p, c) = (f64::from(a) * f64::from(b), f64::from(c));
    let s = p + c;
    // TwoSum: the exact error of s (Knuth); zero when s is exact.
    let v = s - p;
    let err = (p - (s - v)) + (c - v);
    let bits = s.to_bits();
    // Inexact and s even: the odd neighbour on err's side. Moving away from zero adds one to the
    // magnitude's bits when err has s's sign.
    let step = if (err > 0.0) == (s > 0.0) { 1 } else { u64::MAX };
    let odd = if err != 0.0 && s.is_finite() && bits & 1 == 0 { bits.wrapping_add(step) } else { bits };
    f64::from_bits(odd) as f32
}

/// YCrCb as `cv2.cvtColor(img, COLOR_BGR2YCrCb)` on `CV_8U`, into three planes (see the module's
/// formulas, d = 128).
pub fn to_ycrcb_u8(rgb: &[u8], channels: usize, y: &mut [u8], cr: &mut [u8], cb: &mut [u8]) {
    widest!(to_ycrcb_u8_avx2(rgb: &[u8], channels: usize, y: &mut [u8], cr: &mut [u8], cb: &mut [u8]) =>
        to_ycrcb(rgb, channels, [y, cr, cb], 128, u8::MAX.into(), |v| v as u8));
}

/// YCrCb as `cv2.cvtColor(img, COLOR_BGR2YCrCb)` on `CV_16U` (d = 32768).
pub fn to_ycrcb_u16(rgb: &[u16], channels: usize, y: &mut [u16], cr: &mut [u16], cb: &mut [u16]) {
    widest!(to_ycrcb_u16_avx2(rgb: &[u16], channels: usize, y: &mut [u16], cr: &mut [u16], cb: &mut [u16]) =>
        to_ycrcb(rgb, channels, [y, cr, cb], 32768, u16::MAX.into(), |v| v as u16));
}

/// R,G,B as `cv2.cvtColor(img, COLOR_YCrCb2BGR)` on `CV_8U` (d = 128). Only R, G and B are
/// written: a 4-channel pixel keeps its alpha (OpenCV's `dstCn=4` would set it to 255).
pub fn from_ycrcb_u8(y: &[u8], cr: &[u8], cb: &[u8], out_rgb: &mut [u8], channels: usize) {
    widest!(from_ycrcb_u8_avx2(y: &[u8], cr: &[u8], cb: &[u8], out_rgb: &mut [u8], channels: usize) =>
        from_ycrcb([y, cr, cb], out_rgb, channels, 128, u8::MAX.into(), |v| v as u8));
}

/// R,G,B as `cv2.cvtColor(img, COLOR_YCrCb2BGR)` on `CV_16U` (d = 32768); alpha is kept.
pub fn from_ycrcb_u16(y: &[u16], cr: &[u16], cb: &[u16], out_rgb: &mut [u16], channels: usize) {
    widest!(from_ycrcb_u16_avx2(y: &[u16], cr: &[u16], cb: &[u16], out_rgb: &mut [u16], channels: usize) =>
        from_ycrcb([y, cr, cb], out_rgb, channels, 32768, u16::MAX.into(), |v| v as u16));
}

/// Every intermediate fits an i32: |R − Y| · 11682 + 2^29 + 2^13 < 2^31 for 16-bit samples.
#[inline(always)]
fn to_ycrcb<T: Copy + Into<i32>>(
    rgb: &[T],
    channels: usize,
    [y, cr, cb]: [&mut [T]; 3],
    half: i32,
    max: i32,
    narrow: impl Fn(i32) -> T,
) {
    check(rgb.len(), channels, y.len());
    assert!(cr.len() == y.len() && cb.len() == y.len(), "Y, Cr and Cb planes of one size");
    let delta = half << YCC_SHIFT;
    let convert = |[r, g, b]: [i32; 3]| {
        let luma = descale14(r * Y_R + g * Y_G + b * Y_B);
        [
            narrow(luma),
            narrow(descale14((r - luma) * CR_OF_R + delta).clamp(0, max)),
            narrow(descale14((b - luma) * CB_OF_B + delta).clamp(0, max)),
        ]
    };
    match channels {
        3 => blocks::<T, i32, T, 3, 3>(rgb, [y, cr, cb], convert),
        _ => blocks::<T, i32, T, 4, 3>(rgb, [y, cr, cb], convert),
    }
}

#[inline(always)]
fn from_ycrcb<T: Copy + Into<i32>>(
    [y, cr, cb]: [&[T]; 3],
    out: &mut [T],
    channels: usize,
    half: i32,
    max: i32,
    narrow: impl Fn(i32) -> T,
) {
    check(out.len(), channels, y.len());
    assert!(cr.len() == y.len() && cb.len() == y.len(), "Y, Cr and Cb planes of one size");
    let convert = |[y, cr, cb]: [i32; 3]| {
        let (cr, cb) = (cr - half, cb - half);
        [
            narrow((y + descale14(cr * R_OF_CR)).clamp(0, max)),
            narrow((y + descale14(cb * G_OF_CB + cr * G_OF_CR)).clamp(0, max)),
            narrow((y + descale14(cb * B_OF_CB)).clamp(0, max)),
        ]
    };
    match channels {
        3 => planes_to_pixels::<T, 3>([y, cr, cb], out, convert),
        _ => planes_to_pixels::<T, 4>([y, cr, cb], out, convert),
    }
}

/// Pixels converted at a time: each block's samples are gathered into arrays of this length,
/// converted lane by lane and scattered, so the compiler keeps them in vector registers; the
/// conversions are integer arithmetic, so every width gives the same samples.
const BLOCK: usize = 16;

/// Converts each `N`-sample pixel of `pixels` (its first three samples) to `M` samples, the
/// `m`th into `planes[m]`: a [`BLOCK`] at a time, the rest one by one.
#[inline(always)]
fn blocks<T, U, V, const N: usize, const M: usize>(
    pixels: &[T],
    mut planes: [&mut [V]; M],
    convert: impl Fn([U; 3]) -> [V; M],
) where
    T: Copy + Into<U>,
    V: Copy,
{
    let count = planes[0].len();
    let whole = count / BLOCK * BLOCK;
    let of = |p: &[T]| [p[0].into(), p[1].into(), p[2].into()];
    for start in (0..whole).step_by(BLOCK) {
        let block = &pixels[start * N..(start + BLOCK) * N];
        let mut outs = planes
            .each_mut()
            .map(|o| -> &mut [V; BLOCK] { (&mut o[start..start + BLOCK]).try_into().expect("a block") });
        for (i, p) in block.chunks_exact(N).enumerate() {
            for (plane, v) in outs.iter_mut().zip(convert(of(p))) {
                plane[i] = v;
            }
        }
    }
    for (i, p) in pixels[..count * N].chunks_exact(N).enumerate().skip(whole) {
        for (plane, v) in planes.iter_mut().zip(convert(of(p))) {
            plane[i] = v;
        }
    }
}

/// Converts three planes' samples, one of each a pixel, to the first three samples of each
/// `N`-sample pixel of `pixels` (a fourth is left as it is): a [`BLOCK`] at a time, the rest one
/// by one.
#[inline(always)]
fn planes_to_pixels<T: Copy + Into<i32>, const N: usize>(
    planes: [&[T]; 3],
    pixels: &mut [T],
    convert: impl Fn([i32; 3]) -> [T; 3],
) {
    let count = planes[0].len();
    let whole = count / BLOCK * BLOCK;
    let write = |p: &mut [T], [a, b, c]: [T; 3]| {
        p[0] = a;
        p[1] = b;
        p[2] = c;
    };
    for start in (0..whole).step_by(BLOCK) {
        let block = &mut pixels[start * N..(start + BLOCK) * N];
        let ins =
            planes.map(|plane| -> &[T; BLOCK] { plane[start..start + BLOCK].try_into().expect("a block") });
        for (i, p) in block.chunks_exact_mut(N).enumerate() {
            write(p, convert([ins[0][i].into(), ins[1][i].into(), ins[2][i].into()]));
        }
    }
    for (i, p) in pixels[..count * N].chunks_exact_mut(N).enumerate().skip(whole) {
        write(p, convert([planes[0][i].into(), planes[1][i].into(), planes[2][i].into()]));
    }
}

/// Gray of one 8-bit RGB pixel, as [`gray_u8`] gives it.
pub fn gray_u8_of(r: u8, g: u8, b: u8) -> u8 {
    gray_fixed(r.into(), g.into(), b.into()) as u8
}

/// Gray of one 16-bit RGB pixel, as [`gray_u16`] gives it.
pub fn gray_u16_of(r: u16, g: u16, b: u16) -> u16 {
    gray_fixed(r.into(), g.into(), b.into()) as u16
}

/// Gray of one float RGB pixel, as [`gray_f32`] gives it.
pub fn gray_f32_of(r: f32, g: f32, b: f32) -> f32 {
    fma_f32(r, 0.299, fma_f32(b, 0.114, g * 0.587))
}

/// [`gray_frame`] of `frame`, which a gray frame is itself: its samples are not copied (a
/// padded 4K frame's copy held up `colhist --angles` by most of 10 ms on the 16-core GPU host).
pub fn into_gray(frame: crate::Frame) -> crate::Frame {
    if frame.channels == crate::Channels::Gray {
        return frame;
    }
    gray_frame(&frame)
}

/// A gray frame of `frame`'s luma ([`gray_u8`], [`gray_u16`], [`gray_f32`]), alpha dropped; a
/// frame with no colour gives its gray channel. The frame's metadata is kept.
pub fn gray_frame(frame: &crate::Frame) -> crate::Frame {
    use crate::Pixels;
    let mut gray = frame.plane(0);
    if !frame.channels.is_colour() {
        return gray;
    }
    let (n, pixels) = (frame.channels.count(), frame.pixel_count());
    gray.pixels = match &frame.pixels {
        Pixels::U8(v) => {
            let mut out = vec![0; pixels];
            gray_u8(v, n, &mut out);
            Pixels::U8(out.into())
        }
        Pixels::U16(v) => {
            let mut out = vec![0; pixels];
            gray_u16(v, n, &mut out);
            Pixels::U16(out.into())
        }
        Pixels::F32(v) => {
            let mut out = vec![0.0; pixels];
            gray_f32(v, n, &mut out);
            Pixels::F32(out.into())
        }
    };
    gray
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_by_hand() {
        let mut y = [0u8; 4];
        // White: 2^15 · 255 + 2^14 >> 15 = 255; red: (9798 · 255 + 16384) >> 15 = 76.75 -> 76;
        // green: 19235 · 255 = 4904925, + 16384 >> 15 = 150; (10,20,30): 18.72 + 0.5 -> 18.
        gray_u8(&[255, 255, 255, 9, 255, 0, 0, 7, 0, 255, 0, 7, 10, 20, 30, 0], 4, &mut y);
        assert_eq!(y, [255, 76, 150, 18]);
        let mut y16 = [0u16; 2];
        // 9798 · 65535 = 642111930, + 16384 >> 15 = 19596.
        gray_u16(&[65535, 0, 0, 65535, 65535, 65535], 3, &mut y16);
        assert_eq!(y16, [19596, 65535]);
        let mut f = [0f32; 2];
        gray_f32(&[1.0, 1.0, 1.0, -2.0, 0.0, 0.0], 3, &mut f);
        // −2 · 0.299f is exact, and is the f32 nearest −0.598.
        assert_eq!(f[1], -0.598);
        assert!((f[0] - 1.0).abs() <= f32::EPSILON);
    }

    #[test]
    fn ycrcb_by_hand() {
        let (mut y, mut cr, mut cb) = ([0u8; 3], [0u8; 3], [0u8; 3]);
        // Red: Y = (4899 · 255 + 8192) >> 14 = 76; Cr = ((255 − 76) · 11682 + 128 · 2^14 + 2^13)
        // >> 14 = 256, saturated to 255; Cb = (−76 · 9241 + ...) >> 14 = 85.63 -> 85.
        // Gray 100: Y = 100, Cr = Cb = 128. Blue: Y = 29, Cr = (−29 · 11682 ...) >> 14 = 107,
        // Cb = (226 · 9241 + ...) >> 14 = 255.97 -> 255.
        to_ycrcb_u8(&[255, 0, 0, 100, 100, 100, 0, 0, 255], 3, &mut y, &mut cr, &mut cb);
        assert_eq!((y, cr, cb), ([76, 100, 29], [255, 128, 107], [85, 128, 255]));
        let mut rgb = [0u8, 0, 0, 42, 0, 0, 0, 42];
        // (76, 255, 85): R = 76 + (127 · 22987 + 2^13) >> 14 = 76 + 178 = 254;
        // G = 76 + (−43 · −5636 + 127 · −11698 + 2^13) >> 14 = 76 − 76 = 0;
        // B = 76 + (−43 · 29049 + 2^13) >> 14 = 76 − 76 = 0.
        from_ycrcb_u8(&[76, 16], &[255, 128], &[85, 128], &mut rgb, 4);
        assert_eq!(rgb, [254, 0, 0, 42, 16, 16, 16, 42]);
        let (mut y, mut cr, mut cb) = ([0u16; 1], [0u16; 1], [0u16; 1]);
        to_ycrcb_u16(&[0, 0, 65535], 3, &mut y, &mut cr, &mut cb);
        // Y = (1868 · 65535 + 8192) >> 14 = 7472; Cb = ((65535 − 7472) · 9241 + 2^29 + 2^13) >> 14
        // = 65517; Cr = (−7472 · 11682 + 2^29 + 2^13) >> 14 = 27440.
        assert_eq!((y, cr, cb), ([7472], [27440], [65517]));
    }

    /// The bodies as the build targets them (SSE2 on x86-64) give the samples that the public
    /// functions give (AVX2 where the CPU has it, which the tests against cv2 check), for every
    /// length around a block's and both pixel widths.
    #[test]
    fn every_vector_width_gives_the_same_samples() {
        let mut rng = fastrand::Rng::with_seed(44);
        for len in (0..3 * BLOCK + 2).chain([4096 + 7]) {
            for n in [3, 4] {
                let rgb8: Vec<u8> = (0..len * n).map(|_| rng.u8(..)).collect();
                let rgb16: Vec<u16> = (0..len * n).map(|_| [0, 65535, rng.u16(..)][rng.usize(..3)]).collect();
                let mut wide = [vec![0u8; len], vec![0u8; len], vec![0u8; len]];
                let mut plain = wide.clone();
                let [y, cr, cb] = &mut wide;
                to_ycrcb_u8(&rgb8, n, y, cr, cb);
                let [y, cr, cb] = &mut plain;
                to_ycrcb(&rgb8, n, [y, cr, cb], 128, 255, |v| v as u8);
                assert_eq!(wide, plain, "YCrCb of {len} 8-bit pixels of {n}");
                let (mut back_wide, mut back_plain) = (rgb8.clone(), rgb8.clone());
                from_ycrcb_u8(&wide[0], &wide[2], &wide[1], &mut back_wide, n);
                from_ycrcb([&wide[0], &wide[2], &wide[1]], &mut back_plain, n, 128, 255, |v| v as u8);
                assert_eq!(back_wide, back_plain, "RGB of {len} 8-bit pixels of {n}");
                let (mut gray_wide, mut gray_plain) = (vec![0u16; len], vec![0u16; len]);
                gray_u16(&rgb16, n, &mut gray_wide);
                gray(&rgb16, n, &mut gray_plain, |v| v as u16);
                assert_eq!(gray_wide, gray_plain, "gray of {len} 16-bit pixels of {n}");
                let mut wide = [vec![0u16; len], vec![0u16; len], vec![0u16; len]];
                let mut plain = wide.clone();
                let [y, cr, cb] = &mut wide;
                to_ycrcb_u16(&rgb16, n, y, cr, cb);
                let [y, cr, cb] = &mut plain;
                to_ycrcb(&rgb16, n, [y, cr, cb], 32768, 65535, |v| v as u16);
                assert_eq!(wide, plain, "YCrCb of {len} 16-bit pixels of {n}");
                let (mut back_wide, mut back_plain) = (rgb16.clone(), rgb16.clone());
                from_ycrcb_u16(&wide[1], &wide[0], &wide[2], &mut back_wide, n);
                from_ycrcb([&wide[1], &wide[0], &wide[2]], &mut back_plain, n, 32768, 65535, |v| v as u16);
                assert_eq!(back_wide, back_plain, "RGB of {len} 16-bit pixels of {n}");
            }
        }
    }

    #[test]
    fn fma_is_rounded_once() {
        let mut rng = fastrand::Rng::with_seed(7);
        let special = [0.0, -0.0, 1.0, -1.0, f32::MIN_POSITIVE, 1e-45, 3.0e38, 1.0 + f32::EPSILON];
        for i in 0..2_000_000u32 {
            let pick = |rng: &mut fastrand::Rng| match rng.u8(0..8) {
                0 => special[rng.usize(..special.len())],
                1 => f32::from_bits(rng.u32(..)),
                _ => (rng.f32() - 0.5) * 2f32.powi(rng.i32(-30..30)),
            };
            let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let (want, got) = (a.mul_add(b, c), fma_f32(a, b, c));
            assert!(want.to_bits() == got.to_bits() || want.is_nan() && got.is_nan(), "{i}: {a} {b} {c}");
        }
        // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 lies halfway between two f32s; a tiny addend decides
        // the rounding upwards, which rounding the f64 sum (where the addend is lost) would not.
        let a = 1.0 + 2f32.powi(-12);
        assert_eq!(fma_f32(a, a, 1e-30), 1.0 + 2f32.powi(-11) + 2f32.powi(-23));
        assert_eq!(fma_f32(a, a, -1e-30), 1.0 + 2f32.powi(-11));
        assert_eq!(fma_f32(a, a, 0.0), 1.0 + 2f32.powi(-11));
    }
}
