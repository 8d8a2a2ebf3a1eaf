//! OpenCV's colour arithmetic, so that gray and colour frames come out as OpenCV's make them.
//!
//! Provisional per-pixel forms; the whole-frame conversions live beside them.

/// OpenCV's luma weights in 14-bit fixed point (`cvtColor(BGR2GRAY)`, CV_8U and CV_16U).
const R2Y: u32 = 4899;
const G2Y: u32 = 9617;
const B2Y: u32 = 1868;
const SHIFT: u32 = 14;

/// Gray of one 8-bit RGB pixel, as `cv2.cvtColor(BGR2GRAY)`.
pub fn gray_u8_of(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * R2Y + g as u32 * G2Y + b as u32 * B2Y + (1 << (SHIFT - 1))) >> SHIFT) as u8
}

/// Gray of one 16-bit RGB pixel, as `cv2.cvtColor(BGR2GRAY)` on CV_16U.
pub fn gray_u16_of(r: u16, g: u16, b: u16) -> u16 {
    ((r as u32 * R2Y + g as u32 * G2Y + b as u32 * B2Y + (1 << (SHIFT - 1))) >> SHIFT) as u16
}

/// Gray of one float RGB pixel, as `cv2.cvtColor(BGR2GRAY)` on CV_32F.
pub fn gray_f32_of(r: f32, g: f32, b: f32) -> f32 {
    b * 0.114 + g * 0.587 + r * 0.299
}

/// A gray frame of `frame`'s luma (OpenCV's `cvtColor(BGR2GRAY)`), alpha dropped; a gray frame's
/// own samples when it has no colour. The frame's metadata is kept.
pub fn gray_frame(frame: &crate::Frame) -> crate::Frame {
    use crate::{Channels, Pixels};
    let n = frame.channels.count();
    if !frame.channels.is_colour() {
        return frame.plane(0);
    }
    let pixels = match &frame.pixels {
        Pixels::U8(v) => Pixels::U8(v.chunks_exact(n).map(|p| gray_u8_of(p[0], p[1], p[2])).collect::<Vec<_>>().into()),
        Pixels::U16(v) => Pixels::U16(v.chunks_exact(n).map(|p| gray_u16_of(p[0], p[1], p[2])).collect::<Vec<_>>().into()),
        Pixels::F32(v) => Pixels::F32(v.chunks_exact(n).map(|p| gray_f32_of(p[0], p[1], p[2])).collect::<Vec<_>>().into()),
    };
    let mut gray = frame.plane(0);
    gray.pixels = pixels;
    gray.channels = Channels::Gray;
    gray
}
