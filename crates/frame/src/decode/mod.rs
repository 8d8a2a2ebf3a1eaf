//! Compressed and colour inputs, converted to gray (or to 8-bit RGB for drawing).
//!
//! Colour becomes gray with Rec.601 luma, Y = 0.299 R + 0.587 G + 0.114 B, rounded half up in exact
//! integer arithmetic: (299 R + 587 G + 114 B + 500) / 1000. Alpha is dropped. 8-bit images stay
//! 8-bit (maxval 255), 16-bit and floating-point ones become 16-bit (maxval 65535; a float sample
//! f becomes round(clamp(f, 0, 1) · 65535), NaN as 1, as the `image` crate converts it).
//!
//! Every image is first walked (its markers, chunks or directories) to find where it ends in the
//! stream and what its structure promises; then its size is checked against `--max-pixels`, its
//! declared size against what its compressed bytes can hold, and the decoder's estimated peak
//! memory against the [budget](crate::read_memory_bound), all before the decoder allocates
//! anything. Decoders write into the frame row by row, or into one buffer that is converted in
//! place; a decoder that panics fails its frame instead of the program.

mod bmp;
pub(crate) mod jpeg;
mod png;
pub(crate) mod source;
mod tiff;

use std::any::Any;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::budget::Budget;
use crate::{colour, Channels, Format, Frame, FrameError, Pixels, ReadOptions};
use source::{SliceSource, Source};

pub(crate) use self::tiff::TiffPages;

/// The containers decoded by a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoded {
    Png,
    Jpeg,
    Tiff,
    Bmp,
}

impl Encoded {
    /// The container that starts with these two bytes, if it is one of these.
    pub fn of_magic(magic: [u8; 2]) -> Option<Encoded> {
        match magic {
            [0x89, b'P'] => Some(Encoded::Png),
            [b'B', b'M'] => Some(Encoded::Bmp),
            [0xff, 0xd8] => Some(Encoded::Jpeg),
            [b'I', b'I'] | [b'M', b'M'] => Some(Encoded::Tiff),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoded::Png => "PNG",
            Encoded::Jpeg => "JPEG",
            Encoded::Tiff => "TIFF",
            Encoded::Bmp => "BMP",
        }
    }
}

/// Why a walk over an image's structure stopped short.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// The input ended inside the image; says what was being read.
    Ended(String),
    /// The structure is broken.
    Invalid(String),
    Io(io::Error),
}

impl From<io::Error> for WalkError {
    fn from(e: io::Error) -> Self {
        WalkError::Io(e)
    }
}

impl WalkError {
    pub fn into_frame_error(self, frame: usize) -> FrameError {
        match self {
            WalkError::Ended(what) => FrameError::invalid(frame, format!("truncated {what}")),
            WalkError::Invalid(what) => FrameError::invalid(frame, what),
            WalkError::Io(e) => FrameError::io(frame, &e),
        }
    }
}

/// What a walk found: where the image ends and what the decoder needs to know before it starts.
pub(crate) enum Walked {
    Png(png::PngWalk),
    Jpeg(jpeg::JpegWalk),
    Tiff(tiff::TiffWalk),
    Bmp(bmp::BmpWalk),
}

/// Walks one image of `kind` from the start of `src`, gathering exactly its bytes.
pub(crate) fn walk(src: &mut impl Source, kind: Encoded) -> Result<Walked, WalkError> {
    Ok(match kind {
        Encoded::Png => Walked::Png(png::walk(src)?),
        Encoded::Jpeg => Walked::Jpeg(jpeg::walk(src)?),
        Encoded::Tiff => Walked::Tiff(tiff::walk(src)?),
        Encoded::Bmp => Walked::Bmp(bmp::walk(src)?),
    })
}

/// What a decoded image is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A gray frame (OpenCV's luma, see [`crate::colour`]), alpha dropped: 8-bit for 8-bit images,
    /// 16-bit for 16-bit ones, float for float ones.
    Gray,
    /// The image's own channels and sample type.
    Colour,
    /// 8-bit RGB, as the `image` crate's `to_rgb8` gives it.
    Rgb8,
}

/// The sample layouts decoders hand over, interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    L8,
    La8,
    Rgb8,
    Rgba8,
    L16,
    La16,
    Rgb16,
    Rgba16,
    L32F,
    La32F,
    Rgb32F,
    Rgba32F,
}

impl Layout {
    pub fn channels(self) -> usize {
        self.layout_channels().count()
    }

    pub fn layout_channels(self) -> Channels {
        match self {
            Layout::L8 | Layout::L16 | Layout::L32F => Channels::Gray,
            Layout::La8 | Layout::La16 | Layout::La32F => Channels::GrayAlpha,
            Layout::Rgb8 | Layout::Rgb16 | Layout::Rgb32F => Channels::Rgb,
            Layout::Rgba8 | Layout::Rgba16 | Layout::Rgba32F => Channels::RgbAlpha,
        }
    }

    pub fn sample_bytes(self) -> usize {
        match self {
            Layout::L8 | Layout::La8 | Layout::Rgb8 | Layout::Rgba8 => 1,
            Layout::L16 | Layout::La16 | Layout::Rgb16 | Layout::Rgba16 => 2,
            Layout::L32F | Layout::La32F | Layout::Rgb32F | Layout::Rgba32F => 4,
        }
    }

    pub fn pixel_bytes(self) -> usize {
        self.channels() * self.sample_bytes()
    }

    /// Bytes per pixel of the converted image.
    pub fn target_bytes(self, target: Target) -> usize {
        match target {
            Target::Rgb8 => 3,
            Target::Colour => self.pixel_bytes(),
            Target::Gray => self.sample_bytes(),
        }
    }
}

/// Byte order of multi-byte samples handed over by a decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    Native,
    Big,
}

/// A converted image being filled.
pub(crate) enum Canvas {
    Gray8(Vec<u8>),
    Gray16(Vec<u16>),
    GrayF32(Vec<f32>),
    Rgb8(Vec<u8>),
    /// The image's own samples, interleaved ([`Target::Colour`]).
    Native8(Vec<u8>, Channels),
    Native16(Vec<u16>, Channels),
    NativeF32(Vec<f32>, Channels),
}

/// A float sample as the `image` crate makes it an integer: clamped to 0..=1 (NaN as 1), scaled,
/// rounded.
fn float_to(v: f32, max: f32) -> f32 {
    let clamped = if v.is_nan() || v >= 1.0 { 1.0 } else { v.max(0.0) };
    (clamped * max).round()
}

/// A gray sample widened to 8-bit RGB as `image` does it, through f32.
fn gray8_to_rgb8(v: u8) -> u8 {
    (v as f32 * (1.0 / 255.0f32) * 255.0).round() as u8
}

fn gray16_to_rgb8(v: u16) -> u8 {
    (v as f32 * (1.0 / 65535.0f32) * 255.0).round() as u8
}

fn u16_to_u8(v: u16) -> u8 {
    ((v as u32 + 128) / 257) as u8
}

impl Canvas {
    /// What each pixel's samples are.
    pub fn channels(&self) -> Channels {
        match self {
            Canvas::Gray8(_) | Canvas::Gray16(_) | Canvas::GrayF32(_) => Channels::Gray,
            Canvas::Rgb8(_) => Channels::Rgb,
            Canvas::Native8(_, c) | Canvas::Native16(_, c) | Canvas::NativeF32(_, c) => *c,
        }
    }

    /// A canvas of `pixels` pixels for images of `layout`, zeroed. The caller has checked that
    /// it fits the budget.
    pub fn new(target: Target, layout: Layout, pixels: usize) -> Canvas {
        let ch = layout.layout_channels();
        match (target, layout.sample_bytes()) {
            (Target::Rgb8, _) => Canvas::Rgb8(vec![0; 3 * pixels]),
            (Target::Gray, 1) => Canvas::Gray8(vec![0; pixels]),
            (Target::Gray, 2) => Canvas::Gray16(vec![0; pixels]),
            (Target::Gray, _) => Canvas::GrayF32(vec![0.0; pixels]),
            (Target::Colour, 1) => Canvas::Native8(vec![0; ch.count() * pixels], ch),
            (Target::Colour, 2) => Canvas::Native16(vec![0; ch.count() * pixels], ch),
            (Target::Colour, _) => Canvas::NativeF32(vec![0.0; ch.count() * pixels], ch),
        }
    }

    /// Converts the pixels in `bytes` (whole pixels of `layout`) and stores pixel `i` of them at
    /// pixel `at(i)` of the canvas.
    pub fn put(&mut self, layout: Layout, order: Order, bytes: &[u8], at: impl Fn(usize) -> usize) {
        let ch = layout.channels();
        let u16_at = |p: &[u8], c: usize| match order {
            Order::Native => u16::from_ne_bytes([p[2 * c], p[2 * c + 1]]),
            Order::Big => u16::from_be_bytes([p[2 * c], p[2 * c + 1]]),
        };
        let f32_at = |p: &[u8], c: usize| {
            let b = [p[4 * c], p[4 * c + 1], p[4 * c + 2], p[4 * c + 3]];
            match order {
                Order::Native => f32::from_ne_bytes(b),
                Order::Big => f32::from_be_bytes(b),
            }
        };
        let pixels = bytes.chunks_exact(layout.pixel_bytes()).enumerate();
        match self {
            Canvas::Gray8(out) => {
                for (i, p) in pixels {
                    out[at(i)] = if ch < 3 { p[0] } else { colour::gray_u8_of(p[0], p[1], p[2]) };
                }
            }
            Canvas::Gray16(out) => {
                for (i, p) in pixels {
                    out[at(i)] = if ch < 3 {
                        u16_at(p, 0)
                    } else {
                        colour::gray_u16_of(u16_at(p, 0), u16_at(p, 1), u16_at(p, 2))
                    };
                }
            }
            Canvas::GrayF32(out) => {
                for (i, p) in pixels {
                    out[at(i)] = if ch < 3 {
                        f32_at(p, 0)
                    } else {
                        colour::gray_f32_of(f32_at(p, 0), f32_at(p, 1), f32_at(p, 2))
                    };
                }
            }
            Canvas::Native8(out, _) => {
                for (i, p) in pixels {
                    out[ch * at(i)..][..ch].copy_from_slice(p);
                }
            }
            Canvas::Native16(out, _) => {
                for (i, p) in pixels {
                    let o = ch * at(i);
                    for c in 0..ch {
                        out[o + c] = u16_at(p, c);
                    }
                }
            }
            Canvas::NativeF32(out, _) => {
                for (i, p) in pixels {
                    let o = ch * at(i);
                    for c in 0..ch {
                        out[o + c] = f32_at(p, c);
                    }
                }
            }
            Canvas::Rgb8(out) => {
                for (i, p) in pixels {
                    let rgb = match (layout.sample_bytes(), ch < 3) {
                        (1, true) => [gray8_to_rgb8(p[0]); 3],
                        (1, false) => [p[0], p[1], p[2]],
                        (2, true) => [gray16_to_rgb8(u16_at(p, 0)); 3],
                        (2, false) => {
                            [u16_to_u8(u16_at(p, 0)), u16_to_u8(u16_at(p, 1)), u16_to_u8(u16_at(p, 2))]
                        }
                        (_, true) => [float_to(f32_at(p, 0), 255.0) as u8; 3],
                        _ => {
                            let c = |k| float_to(f32_at(p, k), 255.0) as u8;
                            [c(0), c(1), c(2)]
                        }
                    };
                    let o = 3 * at(i);
                    out[o..o + 3].copy_from_slice(&rgb);
                }
            }
        }
    }

    /// Converts a whole image of 8-bit `layout` in `buf` in place, keeping its memory.
    pub fn convert_in_place(mut buf: Vec<u8>, layout: Layout, target: Target, pixels: usize) -> Canvas {
        let ch = layout.channels();
        match target {
            Target::Colour => {
                buf.truncate(ch * pixels);
                buf.shrink_to_fit();
                Canvas::Native8(buf, layout.layout_channels())
            }
            Target::Gray => {
                // Pixel i is written at i, read from ch·i >= i: forward never reads what it wrote.
                for i in 0..pixels {
                    let p = ch * i;
                    buf[i] = if ch < 3 { buf[p] } else { colour::gray_u8_of(buf[p], buf[p + 1], buf[p + 2]) };
                }
                buf.truncate(pixels);
                buf.shrink_to_fit();
                Canvas::Gray8(buf)
            }
            Target::Rgb8 => {
                // The buffer holds max(ch, 3) bytes a pixel. Widening (ch < 3) runs backwards, as
                // pixel i goes to 3·i >= ch·i; narrowing RGBA runs forwards, as 3·i <= 4·i.
                if ch < 3 {
                    for i in (0..pixels).rev() {
                        let v = gray8_to_rgb8(buf[ch * i]);
                        buf[3 * i..3 * i + 3].fill(v);
                    }
                } else if ch == 4 {
                    for i in 0..pixels {
                        buf.copy_within(4 * i..4 * i + 3, 3 * i);
                    }
                }
                buf.truncate(3 * pixels);
                buf.shrink_to_fit();
                Canvas::Rgb8(buf)
            }
        }
    }
}

/// A decoded image: its size and pixels.
pub(crate) struct Picture {
    pub width: usize,
    pub height: usize,
    pub canvas: Canvas,
    /// The maxval the image records for its samples (a PNG written by histopipe, scaled back to
    /// it); otherwise 255 or 65535 by the sample width.
    pub maxval: Option<u16>,
}

impl Picture {
    pub fn into_frame(self) -> Frame {
        let (full, channels, pixels) = match self.canvas {
            Canvas::Gray8(v) => (255, Channels::Gray, Pixels::U8(v.into())),
            Canvas::Gray16(v) => (65535, Channels::Gray, Pixels::U16(v.into())),
            Canvas::GrayF32(v) => (1, Channels::Gray, Pixels::F32(v.into())),
            Canvas::Native8(v, ch) => (255, ch, Pixels::U8(v.into())),
            Canvas::Native16(v, ch) => (65535, ch, Pixels::U16(v.into())),
            Canvas::NativeF32(v, ch) => (1, ch, Pixels::F32(v.into())),
            Canvas::Rgb8(v) => (255, Channels::Rgb, Pixels::U8(v.into())),
        };
        let maxval = self.maxval.unwrap_or(full);
        let mut frame = Frame::with_channels(self.width, self.height, channels, maxval, pixels);
        frame.format = Format::Decoded;
        frame
    }
}

/// Decodes the walked image in `bytes` (exactly its bytes). A multi-page TIFF also gives the
/// decoder of its remaining pages.
pub(crate) fn decode(
    bytes: &[u8],
    walked: &Walked,
    target: Target,
    budget: &Budget,
) -> Result<(Picture, Option<TiffPages>), FrameError> {
    match walked {
        Walked::Png(w) => png::decode(bytes, w, target, budget).map(|p| (p, None)),
        Walked::Jpeg(w) => jpeg::decode(bytes, w, target, budget).map(|p| (p, None)),
        Walked::Tiff(w) => tiff::decode_first(bytes, w, target, budget),
        Walked::Bmp(w) => bmp::decode(bytes, w, target, budget).map(|p| (p, None)),
    }
}

/// Runs a third-party decoder: a panic in it fails the frame, with the panic's message.
pub(crate) fn guarded<T>(
    frame: usize,
    what: &str,
    f: impl FnOnce() -> Result<T, FrameError>,
) -> Result<T, FrameError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(FrameError::invalid(
            frame,
            format!("the {what} decoder failed on this input: {}", panic_text(payload.as_ref())),
        ))
    })
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "panic"
    };
    one_line(text)
}

/// A library's message as one line: its lines joined, surrounding space trimmed.
pub(crate) fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join("; ")
}

/// A library's error for an image of `kind`, as a frame error.
pub(crate) fn library_error(frame: usize, kind: Encoded, err: impl std::fmt::Display) -> FrameError {
    FrameError::invalid(frame, format!("bad {} image: {}", kind.name(), one_line(&err.to_string())))
}

/// What the coded data of an image refused by [`too_short`] could at best give.
pub(crate) enum Bound {
    /// The fewest bytes that could hold the declared pixels.
    AtLeastBytes(u64),
    /// The most pixels a byte codes.
    AtMostPixelsPerByte(u64),
}

/// The error for a `format` image declaring `width x height` pixels that `bytes` bytes of its
/// `data` (as "compressed data") cannot give: refused before decoding, a decompression bomb or
/// damage.
pub(crate) fn too_short(
    frame: usize,
    format: &str,
    (width, height): (u64, u64),
    bytes: u64,
    data: &str,
    bound: Bound,
) -> FrameError {
    let bound = match bound {
        Bound::AtLeastBytes(n) => format!("hold that many (at least {n} bytes)"),
        Bound::AtMostPixelsPerByte(n) => format!("code that many (at most {n} pixels a byte)"),
    };
    FrameError::invalid(
        frame,
        format!(
            "bad {format}: it declares {width}x{height} pixels, but its {bytes} bytes of {data} cannot {bound}: \
             damaged or hostile input"
        ),
    )
}

/// Decoded images and colour netpbm images read in full for drawing: 8-bit RGB, row-major.
pub type Rgb8Image = (usize, usize, Vec<u8>);

/// An image file's pixels as 8-bit RGB, for tools that draw on a picture. Colour stays colour:
/// PNG, JPEG, TIFF (its first page) and BMP as the `image` crate's `to_rgb8` converts them
/// (16-bit samples narrowed), PPM (P6, P3) and PAM RGB here; gray images (PGM, PAM GRAYSCALE)
/// become gray RGB. Netpbm samples are scaled to 0..=255 as round(v · 255 / maxval), halves up.
///
/// Images of more than `max_pixels` pixels are refused, and reading keeps to the memory bound of
/// [`read_memory_bound`](crate::read_memory_bound) beyond the RGB image returned.
pub fn read_rgb8(bytes: &[u8], max_pixels: u64) -> Result<Rgb8Image, String> {
    let magic = bytes.get(..2).map(|m| [m[0], m[1]]);
    if let Some(kind) = magic.and_then(Encoded::of_magic) {
        let mut src = SliceSource::new(bytes);
        let walked = walk(&mut src, kind).map_err(|e| e.into_frame_error(1).message)?;
        let taken = src.taken();
        let image = src.into_kept();
        let held = if matches!(image, std::borrow::Cow::Owned(_)) { image.len() } else { 0 };
        let budget = Budget::new(1, max_pixels, taken, held);
        let (picture, _) = decode(&image, &walked, Target::Rgb8, &budget).map_err(|e| e.message)?;
        let Canvas::Rgb8(rgb) = picture.canvas else {
            return Err("internal error: RGB decoding gave no RGB".into());
        };
        return Ok((picture.width, picture.height, rgb));
    }
    let mut r = crate::FrameReader::new(bytes, ReadOptions { max_pixels, ..ReadOptions::default() });
    let frame = r.next_frame().map_err(|e| e.message)?.ok_or("empty image")?;
    let m = frame.maxval as u32;
    let ch = frame.channels.count();
    let n = frame.pixel_count();
    let mut rgb = Vec::new();
    let bytes = n.checked_mul(3).ok_or("image too large")?;
    crate::fallibly(|| rgb.try_reserve_exact(bytes)).map_err(|_| "out of memory")?;
    let scale = |i: usize| match &frame.pixels {
        Pixels::F32(v) => float_to(v[i], 255.0) as u8,
        p => ((p.get(i) as u32 * 255 + m / 2) / m) as u8,
    };
    for i in 0..n {
        if frame.channels.is_colour() {
            rgb.extend([scale(ch * i), scale(ch * i + 1), scale(ch * i + 2)]);
        } else {
            rgb.extend([scale(ch * i); 3]);
        }
    }
    Ok((frame.width, frame.height, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgb8_of_colour_and_gray_netpbm() {
        let max = crate::DEFAULT_MAX_PIXELS;
        assert_eq!(
            read_rgb8(b"P6 2 1 255\n\x01\x02\x03\x04\x05\x06", max).unwrap(),
            (2, 1, vec![1, 2, 3, 4, 5, 6])
        );
        assert_eq!(read_rgb8(b"P3 1 1 10 10 5 0", max).unwrap(), (1, 1, vec![255, 128, 0]));
        assert_eq!(read_rgb8(b"P5 2 1 255\n\x07\x09", max).unwrap(), (2, 1, vec![7, 7, 7, 9, 9, 9]));
        assert!(read_rgb8(b"P6 2 1 255\n\x01", max).unwrap_err().contains("truncated"));
    }

    #[test]
    fn rgb8_refuses_sizes_over_the_limit_before_allocating() {
        // 65536 x 65536 x 3 bytes would be 12 GiB; the width times height times 3 of the second
        // overflows 64 bits.
        let e = read_rgb8(b"P3 65536 65536 255 ", crate::DEFAULT_MAX_PIXELS).unwrap_err();
        assert!(e.contains("over the limit"), "{e}");
        let e = read_rgb8(b"P3 4294967295 1431655765 255 ", crate::DEFAULT_MAX_PIXELS).unwrap_err();
        assert!(e.contains("over the limit"), "{e}");
        assert!(read_rgb8(b"P5 3 2 255\n\0\0\0\0\0\0", 5).unwrap_err().contains("over the limit"));
    }

    #[test]
    fn luma_is_opencvs() {
        // (4899 R + 9617 G + 1868 B + 2^13) >> 14: 1, 76, 150.
        let mut c = Canvas::new(Target::Gray, Layout::Rgb8, 3);
        c.put(Layout::Rgb8, Order::Native, &[1, 1, 1, 255, 0, 0, 0, 255, 0], |i| i);
        assert!(matches!(c, Canvas::Gray8(ref v) if v == &[1, 76, 150]));
        let mut c = Canvas::new(Target::Gray, Layout::Rgb16, 1);
        c.put(Layout::Rgb16, Order::Big, &[255; 6], |i| i);
        assert!(matches!(c, Canvas::Gray16(ref v) if v == &[65535]));
    }

    /// The conversions agree with what `image` gives through `to_rgb16` / `to_rgb8`, which is
    /// what the reader used before it converted straight from the decoders' buffers.
    #[test]
    fn conversions_match_the_image_crate() {
        use image::{DynamicImage, ImageBuffer};
        let mut rng = fastrand::Rng::with_seed(7);
        let floats: Vec<f32> = (0..4 * 64)
            .map(|i| match i % 9 {
                0 => f32::NAN,
                1 => -0.5,
                2 => 1.5,
                3 => f32::INFINITY,
                _ => rng.f32(),
            })
            .collect();
        let u16s: Vec<u16> = (0..4 * 64).map(|_| rng.u16(..)).collect();
        let u8s: Vec<u8> = (0..4 * 64).map(|_| rng.u8(..)).collect();
        let ne = |v: &[u16]| v.iter().flat_map(|s| s.to_ne_bytes()).collect::<Vec<u8>>();
        let fne = |v: &[f32]| v.iter().flat_map(|s| s.to_ne_bytes()).collect::<Vec<u8>>();
        let cases: Vec<(DynamicImage, Layout, Vec<u8>)> = vec![
            (
                DynamicImage::ImageRgba32F(ImageBuffer::from_raw(8, 8, floats.clone()).unwrap()),
                Layout::Rgba32F,
                fne(&floats),
            ),
            (
                DynamicImage::ImageRgb32F(ImageBuffer::from_raw(8, 8, floats[..192].to_vec()).unwrap()),
                Layout::Rgb32F,
                fne(&floats[..192]),
            ),
            (
                DynamicImage::ImageRgba16(ImageBuffer::from_raw(8, 8, u16s.clone()).unwrap()),
                Layout::Rgba16,
                ne(&u16s),
            ),
            (
                DynamicImage::ImageRgb16(ImageBuffer::from_raw(8, 8, u16s[..192].to_vec()).unwrap()),
                Layout::Rgb16,
                ne(&u16s[..192]),
            ),
            (
                DynamicImage::ImageLuma16(ImageBuffer::from_raw(8, 8, u16s[..64].to_vec()).unwrap()),
                Layout::L16,
                ne(&u16s[..64]),
            ),
            (
                DynamicImage::ImageLumaA16(ImageBuffer::from_raw(8, 8, u16s[..128].to_vec()).unwrap()),
                Layout::La16,
                ne(&u16s[..128]),
            ),
            (
                DynamicImage::ImageLuma8(ImageBuffer::from_raw(8, 8, u8s[..64].to_vec()).unwrap()),
                Layout::L8,
                u8s[..64].to_vec(),
            ),
            (
                DynamicImage::ImageLumaA8(ImageBuffer::from_raw(8, 8, u8s[..128].to_vec()).unwrap()),
                Layout::La8,
                u8s[..128].to_vec(),
            ),
            (
                DynamicImage::ImageRgba8(ImageBuffer::from_raw(8, 8, u8s.clone()).unwrap()),
                Layout::Rgba8,
                u8s.clone(),
            ),
        ];
        for (img, layout, bytes) in cases {
            let mut rgb = Canvas::new(Target::Rgb8, layout, 64);
            rgb.put(layout, Order::Native, &bytes, |i| i);
            let Canvas::Rgb8(rgb) = rgb else { panic!() };
            assert_eq!(rgb, img.to_rgb8().into_raw(), "{layout:?} to RGB8");
            if layout.sample_bytes() == 4 {
                let mut gray = Canvas::new(Target::Gray, layout, 64);
                gray.put(layout, Order::Native, &bytes, |i| i);
                assert!(matches!(gray, Canvas::GrayF32(_)), "float stays float");
            }
            if layout.sample_bytes() == 1 {
                let in_place = Canvas::convert_in_place(
                    [bytes.clone(), vec![0; 64 * 3]].concat(),
                    layout,
                    Target::Rgb8,
                    64,
                );
                assert!(
                    matches!(in_place, Canvas::Rgb8(ref v) if v == &img.to_rgb8().into_raw()),
                    "{layout:?}"
                );
            }
        }
    }

    #[test]
    fn library_messages_are_one_line() {
        assert_eq!(one_line("Format error\n"), "Format error");
        assert_eq!(one_line(" a\r\n\n b \n"), "a; b");
    }

    #[test]
    fn a_panicking_decoder_fails_its_frame() {
        let e =
            guarded(4, "JPEG", || -> Result<(), FrameError> { panic!("index out of bounds\n") }).unwrap_err();
        assert_eq!((e.frame, e.kind), (4, crate::FrameErrorKind::Invalid));
        assert_eq!(e.message, "the JPEG decoder failed on this input: index out of bounds");
    }
}
