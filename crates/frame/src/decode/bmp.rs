//! BMP: where an image ends, what it keeps, whether its pixel data is there, and decoding with
//! `image`.
//!
//! A BMP says its length in its file header, and the walk takes that many bytes from the input;
//! but it keeps only its headers, palette and as much pixel data as its pixels can use, and the
//! rest (a file size far past the pixels, with whatever fills it) is read past, not held. The
//! pixel data may start at most [`MAX_GAP`] bytes after the headers and palette.
//!
//! An uncompressed image (BI_RGB, BI_BITFIELDS) needs all its rows, so one whose pixel data is
//! shorter than its size asks for is refused before the image is allocated. A run-length encoded
//! one (BI_RLE8, BI_RLE4) codes at most 255 pixels in a 2-byte run, and may leave the rest of a
//! row, a rectangle or the whole bitmap blank with an escape (end of line, delta, end of bitmap),
//! which the decoder still fills pixel by pixel. So an RLE bitmap may declare at most
//! [`RLE_PIXELS_PER_BYTE`] pixels per byte of its RLE data: room for every pixel coded in runs,
//! and as much blank again; more is refused before decoding as damaged or hostile (a 120-byte
//! file declaring 32768x32768 pixels would take seconds and gigabytes to fill with black).

use std::io::Cursor;

use image::codecs::bmp::BmpDecoder;
use image::{ColorType, ImageDecoder};

use super::source::Source;
use super::{guarded, library_error, too_short, Bound, Canvas, Encoded, Layout, Picture, Target, WalkError};
use crate::budget::Budget;
use crate::FrameError;

/// The most bytes kept between the end of the headers and palette and the start of the pixel
/// data (where some writers put a colour profile).
const MAX_GAP: u64 = 1 << 20;

/// The most pixels an RLE bitmap may declare for each byte of its RLE data: a 2-byte run codes
/// at most 255, and as many again may be left blank.
const RLE_PIXELS_PER_BYTE: u64 = 256;

/// What the walk over one BMP found.
#[derive(Debug)]
pub(crate) struct BmpWalk {}

/// Takes one BMP: as many bytes as its file header says it has, keeping those its pixels can use.
pub(crate) fn walk(src: &mut impl Source) -> Result<BmpWalk, WalkError> {
    if !src.want(18)? {
        return Err(WalkError::Ended("BMP header".into()));
    }
    let got = src.got();
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as u64;
    let (len, offset, header) = (u32_at(got, 2), u32_at(got, 10), u32_at(got, 14));
    if !matches!(header, 12 | 40 | 52 | 56 | 108 | 124) {
        return Err(WalkError::Invalid(format!("bad BMP: info header of {header} bytes")));
    }
    let headers = 14 + header;
    if len < headers {
        return Err(WalkError::Invalid(format!("bad BMP: file size {len} in its header")));
    }
    if !src.want(headers as usize)? {
        return Err(WalkError::Ended("BMP header".into()));
    }
    let d = pixel_data(src.got())
        .ok_or_else(|| WalkError::Invalid("bad BMP: its info header is cut short".into()))?;
    // BI_BITFIELDS after a BITMAPINFOHEADER: three masks; BI_ALPHABITFIELDS: four.
    let masks = match (header, d.compression) {
        (40, 3) => 12,
        (40, 6) => 16,
        _ => 0,
    };
    let palette = match d.bits {
        1 | 2 | 4 | 8 => {
            let colours = if d.colours == 0 { 1 << d.bits } else { d.colours.min(1 << d.bits) };
            colours * if header == 12 { 3 } else { 4 }
        }
        _ => 0,
    };
    let before_pixels = headers + masks + palette;
    if offset > before_pixels + MAX_GAP {
        return Err(WalkError::Invalid(format!(
            "bad BMP: its pixel data starts {} bytes after its headers and palette (at most {MAX_GAP})",
            offset - before_pixels
        )));
    }
    let (w, h) = (d.width, d.height);
    let most = match d.compression {
        // Padded rows.
        0 | 3 | 6 => (w * d.bits).div_ceil(32).saturating_mul(4 * h),
        // Every pixel a run of its own, an end of line a row, and an end of bitmap.
        1 | 2 => (w + 1).saturating_mul(2 * h).saturating_add(2),
        _ => 0,
    };
    let keep = len.min(offset.max(before_pixels).saturating_add(most));
    let keep = usize::try_from(keep).map_err(|_| WalkError::Invalid("bad BMP: too large".into()))?;
    if !src.want(keep)? {
        return Err(WalkError::Ended("BMP file".into()));
    }
    if (keep as u64) < len && !src.leave_out(keep, len as usize)? {
        return Err(WalkError::Ended("BMP file".into()));
    }
    Ok(BmpWalk {})
}

/// The fields of the info header that say how much pixel data an uncompressed image needs.
struct PixelData {
    offset: u64,
    width: u64,
    height: u64,
    bits: u64,
    compression: u32,
    /// Colours in the palette; 0 for all that `bits` can index.
    colours: u64,
}

fn pixel_data(bytes: &[u8]) -> Option<PixelData> {
    let u16_at = |i: usize| bytes.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as u64);
    let u32_at = |i: usize| bytes.get(i..i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let offset = u32_at(10)? as u64;
    if u32_at(14)? == 12 {
        // BITMAPCOREHEADER: 16-bit sizes, never compressed.
        return Some(PixelData {
            offset,
            width: u16_at(18)?,
            height: u16_at(20)?,
            bits: u16_at(24)?,
            compression: 0,
            colours: 0,
        });
    }
    let width = (u32_at(18)? as i32).unsigned_abs() as u64;
    let height = (u32_at(22)? as i32).unsigned_abs() as u64;
    Some(PixelData {
        offset,
        width,
        height,
        bits: u16_at(28)?,
        compression: u32_at(30)?,
        colours: u32_at(46)? as u64,
    })
}

/// Decodes a BMP (exactly its bytes).
pub(crate) fn decode(
    bytes: &[u8],
    _walk: &BmpWalk,
    target: Target,
    budget: &Budget,
) -> Result<Picture, FrameError> {
    let index = budget.frame;
    let lib = |e: image::ImageError| library_error(index, Encoded::Bmp, e);
    guarded(index, "BMP", || {
        let decoder = BmpDecoder::new(Cursor::new(bytes)).map_err(lib)?;
        let (w, h) = decoder.dimensions();
        let pixels = budget.check_pixels(w as u64, h as u64)? as usize;
        if let Some(d) = pixel_data(bytes).filter(|d| matches!(d.compression, 1 | 2)) {
            let coded = (bytes.len() as u64).saturating_sub(d.offset);
            if d.width.saturating_mul(d.height) > RLE_PIXELS_PER_BYTE.saturating_mul(coded) {
                let most = Bound::AtMostPixelsPerByte(RLE_PIXELS_PER_BYTE);
                return Err(too_short(index, "BMP", (w.into(), h.into()), coded, "RLE data", most));
            }
        }
        if let Some(d) = pixel_data(bytes).filter(|d| matches!(d.compression, 0 | 3)) {
            // Rows are padded to 4 bytes; the last one's padding may be missing.
            let row = (d.width * d.bits).div_ceil(32) * 4;
            let need = d.offset + row * d.height.saturating_sub(1) + (d.width * d.bits).div_ceil(8);
            if need > bytes.len() as u64 {
                return Err(FrameError::invalid(
                    index,
                    format!(
                        "truncated BMP: its {w}x{h} pixels need {need} bytes, and it has {}",
                        bytes.len()
                    ),
                ));
            }
        }
        let layout = match decoder.color_type() {
            ColorType::L8 => Layout::L8,
            ColorType::Rgba8 => Layout::Rgba8,
            ColorType::Rgb8 => Layout::Rgb8,
            other => {
                return Err(FrameError::invalid(
                    index,
                    format!("bad BMP image: colour type {other:?} is not supported"),
                ))
            }
        };
        let buffer = pixels * layout.channels().max(layout.target_bytes(target));
        let need = (buffer + pixels * layout.target_bytes(target)) as u64 + (64 << 10);
        budget.check_memory(&format!("this {w}x{h} BMP"), need)?;
        let mut buf = vec![0u8; buffer];
        decoder.read_image(&mut buf[..pixels * layout.channels()]).map_err(lib)?;
        let canvas = Canvas::convert_in_place(buf, layout, target, pixels);
        Ok(Picture { width: w as usize, height: h as usize, canvas, maxval: None })
    })
}
