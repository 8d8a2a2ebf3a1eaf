//! BMP: where an image ends, whether its pixel data is there, and decoding with `image`.
//!
//! A BMP says its length in its file header. An uncompressed one (BI_RGB, BI_BITFIELDS) needs
//! all its rows, so one whose pixel data is shorter than its size asks for is refused before the
//! image is allocated. A run-length encoded one (BI_RLE8, BI_RLE4) may end the bitmap with an
//! escape and leave the rest of it blank, so its size is bounded by `--max-pixels` and the memory
//! budget alone; decoding it costs no more than filling the frame.

use std::io::Cursor;

use image::codecs::bmp::BmpDecoder;
use image::{ColorType, ImageDecoder};

use super::source::Source;
use super::{guarded, library_error, Canvas, Encoded, Layout, Picture, Target, WalkError};
use crate::budget::Budget;
use crate::FrameError;

/// What the walk over one BMP found: its length, from its file header.
#[derive(Debug)]
pub(crate) struct BmpWalk {
    pub len: usize,
}

/// Takes one BMP: as many bytes as its file header says it has.
pub(crate) fn walk(src: &mut impl Source) -> Result<BmpWalk, WalkError> {
    if !src.want(6)? {
        return Err(WalkError::Ended("BMP header".into()));
    }
    let got = src.got();
    let len = u32::from_le_bytes([got[2], got[3], got[4], got[5]]) as usize;
    if len < 6 {
        return Err(WalkError::Invalid(format!("bad BMP: file size {len} in its header")));
    }
    if !src.want(len)? {
        return Err(WalkError::Ended("BMP file".into()));
    }
    Ok(BmpWalk { len })
}

/// The fields of the info header that say how much pixel data an uncompressed image needs.
struct PixelData {
    offset: u64,
    width: u64,
    height: u64,
    bits: u64,
    compression: u32,
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
        });
    }
    let width = (u32_at(18)? as i32).unsigned_abs() as u64;
    let height = (u32_at(22)? as i32).unsigned_abs() as u64;
    Some(PixelData { offset, width, height, bits: u16_at(28)?, compression: u32_at(30)? })
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
