//! Images whose samples may be floating point: PFM, NumPy `.npy` and FITS (its primary image),
//! read into a small neutral [`Decoded`] raster, and PFM and `.npy` written from one.
//!
//! These codecs know nothing of [`Frame`](crate::Frame): they are the bytes-to-samples layer that
//! the frame reader and writer build on. Reading keeps to the contract of every decoder here: a
//! walk reads an image's header from the stream and learns exactly how many bytes the image takes
//! (so images can follow each other in one stream), and refuses it over `--max-pixels` or over the
//! [memory bound](crate::read_memory_bound) before its data is gathered or anything is allocated
//! for it; then the gathered bytes are decoded. Pixels count width x height, as for every other
//! format; the channels and the sample width go into the memory estimate.
//!
//! A decoded raster is interleaved (channel fastest), row-major, top row first, whatever order the
//! container keeps. Float samples read as float32 keep their bits (NaN payloads and infinities
//! included); wider or scaled samples are rounded to the nearest float32, as each format's module
//! says.

mod fits;
pub(crate) mod npy;
mod pfm;

use std::io::BufRead;

use crate::budget::Budget;
use crate::decode::source::{ReadSource, SliceSource, Source};
use crate::{FrameError, FrameErrorKind};

pub(crate) use npy::encode_npy_array_noted;
pub use npy::{encode_npy, encode_npy_array, encode_npy_header, NpyData, NpyShapeError};
pub use pfm::encode_pfm;

/// Samples of one image, interleaved, row-major, top row first.
#[derive(Debug, Clone, PartialEq)]
pub enum Raster {
    U8(Vec<u8>),
    U16(Vec<u16>),
    F32(Vec<f32>),
}

impl Raster {
    /// The number of samples.
    pub fn len(&self) -> usize {
        match self {
            Raster::U8(v) => v.len(),
            Raster::U16(v) => v.len(),
            Raster::F32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One decoded image: `width * height * channels` samples in `raster`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub width: usize,
    pub height: usize,
    /// 1 (gray) to 4.
    pub channels: usize,
    pub raster: Raster,
    /// The samples' maxval: 255 for 8-bit ones, 65535 for 16-bit ones, 1 for NumPy's bool (0 and
    /// 1, as NumPy and scikit-image take False and True) and for floats (where it means nothing).
    pub maxval: u16,
}

/// The containers read here, told apart by their first two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatFormat {
    /// `PF` (RGB) or `Pf` (gray).
    Pfm,
    /// `\x93N` of `\x93NUMPY`.
    Npy,
    /// `SI` of `SIMPLE  =`.
    Fits,
}

impl FloatFormat {
    /// The container that starts with these two bytes, if it is one of these. None of them
    /// collides with netpbm's `P1`..`P7` or the containers of [`crate::decode`].
    pub fn of_magic(magic: [u8; 2]) -> Option<FloatFormat> {
        match magic {
            [b'P', b'F' | b'f'] => Some(FloatFormat::Pfm),
            [0x93, b'N'] => Some(FloatFormat::Npy),
            [b'S', b'I'] => Some(FloatFormat::Fits),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FloatFormat::Pfm => "PFM",
            FloatFormat::Npy => "NPY",
            FloatFormat::Fits => "FITS",
        }
    }
}

/// The limits one image is read under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The frame's number, for messages.
    pub frame: usize,
    /// `--max-pixels`.
    pub max_pixels: u64,
    /// Whether the image's bytes are copied onto the heap as they are gathered (from a reader),
    /// rather than read where they lie (a slice).
    pub copied: bool,
    /// Whether an image of more than one channel is converted to gray once decoded.
    pub gray: bool,
}

/// The size an image's header declares, checked against [`Limits`] before its data is gathered.
pub(crate) struct Declared<'a> {
    pub format: &'a str,
    pub width: u64,
    pub height: u64,
    pub channels: u64,
    /// Bytes of each decoded sample.
    pub sample_bytes: u64,
    /// Bytes the whole image takes in the stream, header and padding included.
    pub image_len: u64,
}

impl Limits {
    /// Refuses an image over `--max-pixels`, or whose decoding would take more memory than the
    /// bound allows for an image of its length; the image's length as a `usize`.
    pub fn check(&self, d: &Declared) -> Result<usize, FrameError> {
        let (w, h, c) = (d.width, d.height, d.channels);
        let too_large = || FrameError {
            frame: self.frame,
            kind: FrameErrorKind::TooLarge,
            message: format!("this {w}x{h}x{c} {} is too large to read", d.format),
        };
        let len = usize::try_from(d.image_len).map_err(|_| too_large())?;
        let held = if self.copied { len } else { 0 };
        let budget = Budget::new(self.frame, self.max_pixels, len, held);
        let pixels = budget.check_pixels(w, h)?;
        let need = pixels.checked_mul(c).and_then(|n| n.checked_mul(d.sample_bytes)).ok_or_else(too_large)?;
        let what = || format!("this {w}x{h}x{c} {}", d.format);
        budget.check_memory(&what(), need.saturating_add(64 << 10))?;
        if self.gray && c > 1 {
            // The conversion comes after the bytes are dropped, and holds the decoded image with
            // two gray planes (`colour::gray_frame` copies the first plane as its model): a float
            // image from 8-bit samples (FITS with BSCALE) is four times its bytes.
            let planes = pixels.saturating_mul(d.sample_bytes).saturating_mul(2);
            let convert = need.saturating_add(planes).saturating_add(64 << 10);
            Budget::new(self.frame, self.max_pixels, len, 0)
                .check_memory(&format!("{} as gray", what()), convert)?;
        }
        Ok(len)
    }
}

fn truncated(frame: usize, what: &str) -> FrameError {
    FrameError::invalid(frame, format!("truncated {what}"))
}

/// Makes the first `n` bytes of the image available, or says what was cut short.
pub(crate) fn want(src: &mut impl Source, n: usize, frame: usize, what: &str) -> Result<(), FrameError> {
    match src.want(n) {
        Ok(true) => Ok(()),
        Ok(false) => Err(truncated(frame, what)),
        Err(e) => Err(FrameError::io(frame, &e)),
    }
}

/// Makes as many of the first `n` bytes available as the input has: for trailing padding that
/// some writers leave out at the end of a file.
fn want_up_to(src: &mut impl Source, n: usize, frame: usize) -> Result<(), FrameError> {
    while src.got().len() < n {
        let at_hand = src.peek().map_err(|e| FrameError::io(frame, &e))?.len();
        if at_hand == 0 {
            break;
        }
        src.take(at_hand.min(n - src.got().len()));
    }
    Ok(())
}

/// Bytes of hostile input in a message: at most 40 of them, on one line, quotes, backslashes and
/// bytes that are not printable ASCII escaped.
fn shown(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(40)];
    let mut text = String::new();
    for &b in cut {
        match b {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            b'\n' => text.push_str("\\n"),
            b'\t' => text.push_str("\\t"),
            b'\r' => text.push_str("\\r"),
            0x20..=0x7e => text.push(b as char),
            _ => text.push_str(&format!("\\x{b:02x}")),
        }
    }
    if cut.len() < bytes.len() {
        text.push_str("...");
    }
    text
}

/// What a walk over one image found: everything its decoding needs besides its bytes.
pub(crate) enum Walked {
    Pfm(pfm::PfmWalk),
    Npy(npy::NpyWalk),
    Fits(fits::FitsWalk),
}

/// Walks one image of `format` from the start of `src` (which may already hold its magic),
/// gathering exactly its bytes once its size is known to fit `limits`.
pub(crate) fn walk(
    src: &mut impl Source,
    format: FloatFormat,
    limits: &Limits,
) -> Result<Walked, FrameError> {
    Ok(match format {
        FloatFormat::Pfm => Walked::Pfm(pfm::walk(src, limits)?),
        FloatFormat::Npy => Walked::Npy(npy::walk(src, limits)?),
        FloatFormat::Fits => Walked::Fits(fits::walk(src, limits)?),
    })
}

impl Walked {
    /// The image's `histopipe-*` annotations (an NPY header's comments; PFM and FITS have none).
    pub(crate) fn annotations(&self) -> Vec<crate::Annotation> {
        match self {
            Walked::Npy(w) => w.annotations.clone(),
            Walked::Pfm(_) | Walked::Fits(_) => Vec::new(),
        }
    }
}

/// Decodes the walked image in `bytes` (exactly the bytes its walk gathered).
pub(crate) fn decode(bytes: &[u8], walked: &Walked, frame: usize) -> Result<Decoded, FrameError> {
    match walked {
        Walked::Pfm(w) => pfm::decode(bytes, w, frame),
        Walked::Npy(w) => npy::decode(bytes, w, frame),
        Walked::Fits(w) => fits::decode(bytes, w, frame),
    }
}

fn unknown_magic(frame: usize, magic: &[u8]) -> FrameError {
    FrameError::invalid(frame, format!("not a PFM, NPY or FITS image (it starts with \"{}\")", shown(magic)))
}

/// Reads the next PFM, NPY or FITS image of a stream, taking exactly its bytes from `input`; `None`
/// at the end of the input. `frame` numbers the image in messages; `max_pixels` is `--max-pixels`.
pub fn read_float<R: BufRead>(
    input: &mut R,
    frame: usize,
    max_pixels: u64,
) -> Result<Option<Decoded>, FrameError> {
    let mut src = ReadSource::new(input, b"", max_pixels);
    match src.want(2) {
        Ok(true) => {}
        Ok(false) if src.got().is_empty() => return Ok(None),
        Ok(false) => return Err(truncated(frame, "image: one byte")),
        Err(e) => return Err(FrameError::io(frame, &e)),
    }
    let magic = [src.got()[0], src.got()[1]];
    let format = FloatFormat::of_magic(magic).ok_or_else(|| unknown_magic(frame, &magic))?;
    let limits = Limits { frame, max_pixels, copied: true, gray: false };
    let walked = walk(&mut src, format, &limits)?;
    let bytes = src.into_bytes();
    decode(&bytes, &walked, frame).map(Some)
}

/// Decodes the PFM, NPY or FITS image at the start of `bytes`; with it, how many bytes it takes
/// (the next image of a stream starts there).
pub fn decode_float(bytes: &[u8], frame: usize, max_pixels: u64) -> Result<(Decoded, usize), FrameError> {
    let magic = match bytes {
        [a, b, ..] => [*a, *b],
        _ => return Err(truncated(frame, "image: fewer than two bytes")),
    };
    let format = FloatFormat::of_magic(magic).ok_or_else(|| unknown_magic(frame, &magic))?;
    let mut src = SliceSource::new(bytes);
    let limits = Limits { frame, max_pixels, copied: false, gray: false };
    let walked = walk(&mut src, format, &limits)?;
    let taken = src.taken();
    let image = src.into_kept();
    Ok((decode(&image, &walked, frame)?, taken))
}

/// The samples of `size` bytes each in `bytes`, each read with `read`.
fn samples<T>(bytes: &[u8], size: usize, read: impl Fn(&[u8]) -> T) -> Vec<T> {
    bytes.chunks_exact(size).map(read).collect()
}

fn f32_le(b: &[u8]) -> f32 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn f32_be(b: &[u8]) -> f32 {
    f32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn f64_le(b: &[u8]) -> f64 {
    f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

fn f64_be(b: &[u8]) -> f64 {
    f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn magics_are_told_apart_from_netpbm() {
        assert_eq!(FloatFormat::of_magic(*b"PF"), Some(FloatFormat::Pfm));
        assert_eq!(FloatFormat::of_magic(*b"Pf"), Some(FloatFormat::Pfm));
        assert_eq!(FloatFormat::of_magic([0x93, b'N']), Some(FloatFormat::Npy));
        assert_eq!(FloatFormat::of_magic(*b"SI"), Some(FloatFormat::Fits));
        for p in [b"P2", b"P5", b"P6", b"P7"] {
            assert_eq!(FloatFormat::of_magic(*p), None);
        }
    }

    #[test]
    fn images_of_all_three_formats_follow_each_other_in_one_stream() {
        let gray = Raster::F32(vec![1.5, -2.0, f32::NAN, f32::INFINITY]);
        let mut stream = encode_pfm(2, 2, 1, &[0.25, 0.5, 0.75, 1.0]);
        stream.extend(encode_npy(2, 2, 1, &gray));
        stream.extend(include_bytes!("../../tests/data/fits_u8.fits"));
        stream.extend(encode_npy(1, 1, 3, &Raster::U8(vec![1, 2, 3])));

        let mut input = io::BufReader::with_capacity(7, &stream[..]);
        let mut read = Vec::new();
        while let Some(d) = read_float(&mut input, read.len() + 1, 1 << 20).unwrap() {
            read.push(d);
        }
        let mut sliced = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            let (d, taken) = decode_float(&stream[at..], sliced.len() + 1, 1 << 20).unwrap();
            sliced.push(d);
            at += taken;
        }
        assert_eq!(read.len(), 4);
        // NaN != NaN: compare debug text, which tells NaN apart from every number.
        assert_eq!(format!("{read:?}"), format!("{sliced:?}"));
        assert_eq!(read[0].raster, Raster::F32(vec![0.25, 0.5, 0.75, 1.0]));
        assert_eq!((read[2].width, read[2].height, read[2].channels), (5, 3, 1));
        assert_eq!(read[3].raster, Raster::U8(vec![1, 2, 3]));
    }

    #[test]
    fn damaged_files_fail_without_panicking() {
        let seeds: [&[u8]; 4] = [
            &encode_pfm(3, 2, 3, &[0.5; 18]),
            &encode_npy(3, 2, 2, &Raster::U16(vec![7; 12])),
            include_bytes!("../../tests/data/numpy_f8_be_2x2.npy"),
            include_bytes!("../../tests/data/fits_rgb_cube.fits"),
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for seed in seeds {
            for _ in 0..2000 {
                let mut bytes = seed.to_vec();
                // Damage the header, where the sizes are, more often than the samples.
                let span = if rng.bool() { bytes.len() } else { bytes.len().min(640) };
                for _ in 0..rng.usize(1..4) {
                    let at = rng.usize(2..span);
                    bytes[at] = if rng.bool() { rng.u8(..) } else { b"0123456789 (),'\n"[rng.usize(..16)] };
                }
                bytes.truncate(rng.usize(2..=bytes.len()));
                if let Ok((d, taken)) = decode_float(&bytes, 1, 1 << 12) {
                    assert!(taken <= bytes.len());
                    assert_eq!(d.raster.len(), d.width * d.height * d.channels);
                }
            }
        }
    }

    #[test]
    fn unknown_and_cut_magics_are_refused() {
        let e = decode_float(b"P5 1 1 255\n\0", 2, 100).unwrap_err();
        assert_eq!(e.to_string(), "frame 2: not a PFM, NPY or FITS image (it starts with \"P5\")");
        let mut one = &b"P"[..];
        assert_eq!(read_float(&mut one, 1, 100).unwrap_err().message, "truncated image: one byte");
        let mut none = &b""[..];
        assert!(read_float(&mut none, 1, 100).unwrap().is_none());
    }

    #[test]
    fn the_memory_estimate_counts_channels_and_sample_width() {
        let limits = Limits { frame: 1, max_pixels: 100, copied: false, gray: false };
        let d = |channels, sample_bytes, image_len| Declared {
            format: "X",
            width: 10,
            height: 10,
            channels,
            sample_bytes,
            image_len,
        };
        assert!(limits.check(&d(4, 4, 0)).is_ok());
        let big = Limits { max_pixels: u64::MAX / 2, ..limits };
        let huge = Declared { width: 1 << 31, height: 1 << 31, ..d(4, 4, 0) };
        assert_eq!(big.check(&huge).unwrap_err().kind, FrameErrorKind::TooLarge);
        let e = limits.check(&Declared { width: 11, ..d(1, 1, 0) }).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
    }

    /// A 656x656 RGBA FITS of 8-bit samples with BSCALE: 6.9 MB of float32 from 1.7 MB fits the
    /// bound at 2^20 pixels kept in colour, but not with the two gray planes of its conversion
    /// (the reader held 10.3 MB of a bound of 8.7 MB before the conversion was counted).
    #[test]
    fn the_memory_estimate_counts_the_conversion_to_gray() {
        let fits = Declared {
            format: "FITS",
            width: 656,
            height: 656,
            channels: 4,
            sample_bytes: 4,
            image_len: 2880 + 4 * 656 * 656,
        };
        let colour = Limits { frame: 1, max_pixels: 1 << 20, copied: true, gray: false };
        assert!(colour.check(&fits).is_ok());
        let e = Limits { gray: true, ..colour }.check(&fits).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
        assert!(
            e.message.starts_with("decoding this 656x656x4 FITS as gray needs about 9.9 MiB"),
            "{}",
            e.message
        );
        let gray = Declared { channels: 1, image_len: 2880 + 656 * 656, ..fits };
        assert!(Limits { gray: true, ..colour }.check(&gray).is_ok(), "a gray image is not converted");
    }
}
