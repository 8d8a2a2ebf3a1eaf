//! Compressed and colour inputs, converted to gray.
//!
//! Colour becomes gray with Rec.601 luma, Y = 0.299 R + 0.587 G + 0.114 B, rounded half up in exact
//! integer arithmetic: (299 R + 587 G + 114 B + 500) / 1000. Alpha is dropped. 8-bit images stay
//! 8-bit (maxval 255), 16-bit ones become 16-bit (maxval 65535).

use std::io::{BufRead, Cursor, Read};

use image::{DynamicImage, ImageFormat, ImageReader};

use crate::pnm::{read_ascii_samples, read_full, HeaderCursor};
use crate::{Format, Frame, FrameError, Pixels};

/// Rec.601 luma of interleaved RGB samples.
pub(crate) fn rgb_to_gray(rgb: Pixels) -> Pixels {
    fn luma(r: u16, g: u16, b: u16) -> u32 {
        (299 * r as u32 + 587 * g as u32 + 114 * b as u32 + 500) / 1000
    }
    match rgb {
        Pixels::U8(v) => {
            Pixels::U8(v.chunks_exact(3).map(|p| luma(p[0] as u16, p[1] as u16, p[2] as u16) as u8).collect())
        }
        Pixels::U16(v) => Pixels::U16(v.chunks_exact(3).map(|p| luma(p[0], p[1], p[2]) as u16).collect()),
    }
}

/// The bytes of one image of `format` whose first two bytes, `magic`, were already read.
/// PNG and BMP say where they end, so a stream may hold several; JPEG and TIFF take the rest of
/// the input.
pub(crate) fn take_image<R: BufRead>(
    input: &mut R,
    index: usize,
    format: ImageFormat,
    magic: [u8; 2],
) -> Result<Vec<u8>, FrameError> {
    let io = |e: std::io::Error| FrameError::io(index, &e);
    let truncated = |what: &str| FrameError::invalid(index, format!("truncated {what}"));
    let mut bytes = magic.to_vec();
    let take = |input: &mut R, bytes: &mut Vec<u8>, n: usize| -> Result<bool, FrameError> {
        let start = bytes.len();
        input.take(n as u64).read_to_end(bytes).map_err(io)?;
        Ok(bytes.len() - start == n)
    };
    match format {
        ImageFormat::Png => {
            if !take(input, &mut bytes, 6)? || bytes != b"\x89PNG\r\n\x1a\n" {
                return Err(FrameError::invalid(index, "bad PNG signature"));
            }
            loop {
                let start = bytes.len();
                if !take(input, &mut bytes, 8)? {
                    return Err(truncated("PNG: no IEND chunk"));
                }
                let len =
                    u32::from_be_bytes([bytes[start], bytes[start + 1], bytes[start + 2], bytes[start + 3]]);
                let kind = [bytes[start + 4], bytes[start + 5], bytes[start + 6], bytes[start + 7]];
                if !take(input, &mut bytes, len as usize + 4)? {
                    return Err(truncated("PNG chunk"));
                }
                if &kind == b"IEND" {
                    break;
                }
            }
        }
        ImageFormat::Bmp => {
            let mut size = [0u8; 4];
            if read_full(input, &mut size).map_err(io)? < 4 {
                return Err(truncated("BMP header"));
            }
            bytes.extend_from_slice(&size);
            let size = u32::from_le_bytes(size) as usize;
            if size < 6 || !take(input, &mut bytes, size - 6)? {
                return Err(truncated("BMP file"));
            }
        }
        _ => {
            input.read_to_end(&mut bytes).map_err(io)?;
        }
    }
    Ok(bytes)
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    ImageReader::with_format(Cursor::new(bytes), format)
}

/// The image's size, read from its header alone.
pub(crate) fn dimensions(bytes: &[u8], format: ImageFormat) -> Result<(usize, usize), String> {
    let (w, h) = reader(bytes, format).into_dimensions().map_err(|e| format!("bad {format:?} image: {e}"))?;
    Ok((w as usize, h as usize))
}

/// Decodes a whole image to a gray frame (its size was checked already).
pub(crate) fn decode(bytes: &[u8], format: ImageFormat) -> Result<Frame, String> {
    let mut r = reader(bytes, format);
    r.no_limits();
    let img = r.decode().map_err(|e| format!("bad {format:?} image: {e}"))?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (maxval, pixels) = match img {
        DynamicImage::ImageLuma8(i) => (255, Pixels::U8(i.into_raw().into())),
        DynamicImage::ImageLumaA8(i) => {
            (255, Pixels::U8(i.into_raw().chunks_exact(2).map(|p| p[0]).collect()))
        }
        DynamicImage::ImageLuma16(i) => (65535, Pixels::U16(i.into_raw().into())),
        DynamicImage::ImageLumaA16(i) => {
            (65535, Pixels::U16(i.into_raw().chunks_exact(2).map(|p| p[0]).collect()))
        }
        DynamicImage::ImageRgb8(i) => (255, rgb_to_gray(Pixels::U8(i.into_raw().into()))),
        DynamicImage::ImageRgba8(i) => (
            255,
            rgb_to_gray(Pixels::U8(i.into_raw().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect())),
        ),
        DynamicImage::ImageRgb16(i) => (65535, rgb_to_gray(Pixels::U16(i.into_raw().into()))),
        other => (65535, rgb_to_gray(Pixels::U16(other.to_rgb16().into_raw().into()))),
    };
    let mut frame = Frame::new(w, h, maxval, pixels);
    frame.format = Format::Decoded;
    Ok(frame)
}

/// An image file's pixels as 8-bit RGB, for tools that draw on a picture. Colour stays colour:
/// PNG, JPEG, TIFF and BMP through the `image` crate (16-bit samples narrowed by it), PPM (P6, P3)
/// and PAM RGB here; gray images (PGM, PAM GRAYSCALE) become gray RGB. Netpbm samples are scaled
/// to 0..=255 as round(v · 255 / maxval), halves up.
pub fn read_rgb8(bytes: &[u8]) -> Result<(usize, usize, Vec<u8>), String> {
    if let Ok(format) = image::guess_format(bytes) {
        if matches!(format, ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Tiff | ImageFormat::Bmp) {
            let img = reader(bytes, format).decode().map_err(|e| format!("bad {format:?} image: {e}"))?;
            let rgb = img.to_rgb8();
            return Ok((rgb.width() as usize, rgb.height() as usize, rgb.into_raw()));
        }
    }
    if let Some(rgb) = netpbm_rgb8(bytes)? {
        return Ok(rgb);
    }
    let mut r = crate::FrameReader::new(bytes, crate::ReadOptions::default());
    let frame = r.next_frame().map_err(|e| e.message)?.ok_or("empty image")?;
    let m = frame.maxval as u32;
    let rgb = (0..frame.pixel_count())
        .flat_map(|i| {
            let v = ((frame.pixels.get(i) as u32 * 255 + m / 2) / m) as u8;
            [v, v, v]
        })
        .collect();
    Ok((frame.width, frame.height, rgb))
}

/// A colour PPM or PAM image as 8-bit RGB; `None` for any other input (gray ones included).
fn netpbm_rgb8(bytes: &[u8]) -> Result<Option<(usize, usize, Vec<u8>)>, String> {
    let mut input = bytes.get(2..).unwrap_or_default();
    let cursor = HeaderCursor::new(&mut input, 1);
    let (header, ascii) = match bytes.get(..2) {
        Some(b"P6") => (cursor.pnm(3), false),
        Some(b"P3") => (cursor.pnm(3), true),
        Some(b"P7") => (cursor.pam(), false),
        _ => return Ok(None),
    };
    let h = header.map_err(|e| e.message)?;
    if h.channels != 3 {
        return Ok(None);
    }
    let n = h.width.checked_mul(h.height).and_then(|n| n.checked_mul(3)).ok_or("image too large")?;
    let samples: Vec<u16> = if ascii {
        read_ascii_samples(&mut input, 1, n).map_err(|e| e.message)?
    } else if h.maxval <= 255 {
        input.get(..n).ok_or("truncated pixel data")?.iter().map(|&b| b as u16).collect()
    } else {
        let raw = input.get(..2 * n).ok_or("truncated pixel data")?;
        raw.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect()
    };
    let m = h.maxval as u32;
    let rgb = samples.iter().map(|&v| ((v.min(h.maxval) as u32 * 255 + m / 2) / m) as u8).collect();
    Ok(Some((h.width, h.height, rgb)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgb8_of_colour_and_gray_netpbm() {
        assert_eq!(
            read_rgb8(b"P6 2 1 255\n\x01\x02\x03\x04\x05\x06").unwrap(),
            (2, 1, vec![1, 2, 3, 4, 5, 6])
        );
        assert_eq!(read_rgb8(b"P3 1 1 10 10 5 0").unwrap(), (1, 1, vec![255, 128, 0]));
        assert_eq!(read_rgb8(b"P5 2 1 255\n\x07\x09").unwrap(), (2, 1, vec![7, 7, 7, 9, 9, 9]));
        assert!(read_rgb8(b"P6 2 1 255\n\x01").unwrap_err().contains("truncated"));
    }

    #[test]
    fn luma_rounds_half_up_exactly() {
        // 0.299*1 + 0.587*1 + 0.114*1 = 1; 0.299*255 = 76.245 -> 76; 0.587*255 = 149.685 -> 150.
        assert_eq!(
            rgb_to_gray(Pixels::U8(vec![1, 1, 1, 255, 0, 0, 0, 255, 0].into())),
            Pixels::U8(vec![1, 76, 150].into())
        );
        assert_eq!(
            rgb_to_gray(Pixels::U16(vec![65535, 65535, 65535].into())),
            Pixels::U16(vec![65535].into())
        );
    }
}
