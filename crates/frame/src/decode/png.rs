//! PNG: where an image ends, what its compressed data can hold, and decoding row by row.
//!
//! A PNG ends with its IEND chunk; the walk follows the chunks' lengths to it and adds up the
//! IDAT bytes, and keeps the `histopipe-maxval` text the writer records (`png_scale.rs`), by which
//! a gray frame's samples are scaled back to their maxval. Deflate expands at most 1032:1 (a length/distance pair, two bits at the least,
//! gives at most 258 bytes: RFC 1951 3.2.5), so an image whose scanlines (RFC 2083 2.3, a filter
//! byte and the packed samples of each row, each Adam7 pass for an interlaced one) need more than
//! 1032 times its IDAT bytes cannot be valid, and is refused before decoding. Rows are converted
//! into the frame as the `png` crate hands them over, with the transformations `image` asks for.

use std::io::Cursor;

use png::{Adam7Info, BitDepth, ColorType, InterlaceInfo, Transformations};

use super::source::Source;
use super::{
    guarded, library_error, too_short, Bound, Canvas, Encoded, Layout, Order, Picture, Target, WalkError,
};
use crate::budget::Budget;
use crate::png_scale::{PngScale, MAXVAL_KEYWORD};
use crate::pnm::shown;
use crate::{Channels, FrameError};

/// The most bytes deflate can give for one compressed byte.
const DEFLATE_RATIO: u64 = 1032;

/// Adam7 passes: (x offset, x step, y offset, y step) (PNG 8.2).
const PASSES: [(u64, u64, u64, u64); 7] =
    [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)];

/// What the walk over one PNG found.
#[derive(Debug)]
pub(crate) struct PngWalk {
    header: Option<Header>,
    idat_bytes: u64,
    /// The text of the first `tEXt` chunk named `histopipe-maxval`, at most 32 bytes of it.
    maxval_text: Option<Vec<u8>>,
    /// Whether an IDAT chunk has come; `tRNS`, `acTL` and `fcTL` chunks kept.
    seen_idat: bool,
    kept: [u8; 3],
    /// The IHDR and PLTE chunks seen.
    critical: Vec<[u8; 4]>,
}

/// The IHDR chunk.
#[derive(Debug, Clone, Copy)]
struct Header {
    width: u64,
    height: u64,
    bit_depth: u64,
    colour_type: u8,
    interlaced: bool,
}

impl Header {
    /// Bytes of all scanlines as deflate must produce them.
    fn raw_bytes(&self) -> u64 {
        let channels = match self.colour_type {
            2 => 3,
            4 => 2,
            6 => 4,
            _ => 1,
        };
        let row = |w: u64| if w == 0 { 0 } else { 1 + (w * channels * self.bit_depth).div_ceil(8) };
        if !self.interlaced {
            return self.height * row(self.width);
        }
        PASSES
            .iter()
            .map(|&(x0, dx, y0, dy)| {
                let (w, h) =
                    (self.width.saturating_sub(x0).div_ceil(dx), self.height.saturating_sub(y0).div_ceil(dy));
                if w == 0 {
                    0
                } else {
                    h * row(w)
                }
            })
            .sum()
    }
}

/// Walks one PNG from its signature to its IEND chunk.
pub(crate) fn walk(src: &mut impl Source) -> Result<PngWalk, WalkError> {
    // A short input is the end of the data (from a buffer: more may follow), not a bad signature.
    if !src.want(8)? {
        return Err(WalkError::Ended("PNG signature".into()));
    }
    if &src.got()[..8] != b"\x89PNG\r\n\x1a\n" {
        return Err(WalkError::Invalid("bad PNG signature".into()));
    }
    let mut walk = PngWalk {
        header: None,
        idat_bytes: 0,
        maxval_text: None,
        seen_idat: false,
        kept: [0; 3],
        critical: Vec::new(),
    };
    let mut pos = 8;
    loop {
        if !src.want(pos + 8)? {
            return Err(WalkError::Ended("PNG: no IEND chunk".into()));
        }
        let got = src.got();
        let len = u32::from_be_bytes([got[pos], got[pos + 1], got[pos + 2], got[pos + 3]]) as u64;
        let kind = [got[pos + 4], got[pos + 5], got[pos + 6], got[pos + 7]];
        if len > i32::MAX as u64 {
            return Err(WalkError::Invalid(format!("bad PNG: chunk length {len} over 2^31 - 1")));
        }
        let end = pos + 8 + len as usize + 4;
        let bad_length =
            |what: &str| Err(WalkError::Invalid(format!("bad PNG: {what} chunk of length {len}")));
        match &kind {
            // The png crate refuses a second IHDR or PLTE too; refused here, none is held first.
            b"IHDR" | b"PLTE" if walk.critical.contains(&kind) => {
                return Err(WalkError::Invalid(format!("bad PNG: a second {} chunk", shown(&kind))))
            }
            b"IHDR" if len != 13 => return bad_length("IHDR"),
            b"PLTE" if len > 768 => return bad_length("PLTE"),
            b"IEND" if len != 0 => return bad_length("IEND"),
            b"fcTL" if len != 26 && !walk.seen_idat => return bad_length("fcTL"),
            _ => {}
        }
        if kind[0] & 0x20 == 0 && !matches!(&kind, b"IHDR" | b"PLTE" | b"IDAT" | b"IEND") {
            // The png crate refuses it too; refused here, it is not held first.
            return Err(WalkError::Invalid(format!("bad PNG: unknown critical chunk '{}'", shown(&kind))));
        }
        if !keeps(&kind, len, &mut walk) {
            if &kind == b"tEXt" && walk.maxval_text.is_none() {
                // Only its keyword and the first bytes of its text are looked at.
                let look = (MAXVAL_KEYWORD.len() as u64 + 1 + 32).min(len) as usize;
                if !src.want(pos + 8 + look)? {
                    return Err(WalkError::Ended("PNG chunk".into()));
                }
                let data = &src.got()[pos + 8..pos + 8 + look];
                if let Some(text) =
                    data.strip_prefix(MAXVAL_KEYWORD.as_bytes()).and_then(|t| t.strip_prefix(b"\0"))
                {
                    walk.maxval_text = Some(text.to_vec());
                }
            }
            if !src.leave_out(pos, end)? {
                return Err(WalkError::Ended("PNG chunk".into()));
            }
            continue;
        }
        if !src.want(end)? {
            return Err(WalkError::Ended("PNG chunk".into()));
        }
        if matches!(&kind, b"IHDR" | b"PLTE") {
            walk.critical.push(kind);
        }
        match &kind {
            b"IHDR" if walk.header.is_none() => {
                let d = &src.got()[pos + 8..pos + 8 + 13];
                walk.header = Some(Header {
                    width: u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as u64,
                    height: u32::from_be_bytes([d[4], d[5], d[6], d[7]]) as u64,
                    bit_depth: d[8] as u64,
                    colour_type: d[9],
                    interlaced: d[12] == 1,
                });
            }
            b"IDAT" => {
                walk.idat_bytes += len;
                walk.seen_idat = true;
            }
            b"IEND" => {
                return Ok(walk);
            }
            _ => {}
        }
        pos = end;
    }
}

/// Whether the walk keeps a chunk of `len` bytes for the decoder; those it does not are read
/// past. The png crate decodes from the critical chunks, `tRNS` (transparency, which the
/// expansion to 8 bits turns into alpha) and, before the image data, `acTL` and `fcTL` (an
/// animated PNG's first frame may be a part of the image); the first four of each, of the sizes
/// it accepts, are kept (it refuses repeats). Text, colour profiles, Exif and every other
/// ancillary chunk are metadata a gray frame does not use.
fn keeps(kind: &[u8; 4], len: u64, walk: &mut PngWalk) -> bool {
    let (count, fits) = match kind {
        b"IHDR" | b"PLTE" | b"IDAT" | b"IEND" => return true,
        b"tRNS" => (&mut walk.kept[0], (1..=256).contains(&len)),
        b"acTL" => (&mut walk.kept[1], len == 8 && !walk.seen_idat),
        b"fcTL" => (&mut walk.kept[2], len == 26 && !walk.seen_idat),
        _ => return false,
    };
    if !fits || *count >= 4 {
        return false;
    }
    *count += 1;
    true
}

fn layout_of(colour: ColorType, depth: BitDepth) -> Option<Layout> {
    Some(match (colour, depth) {
        (ColorType::Grayscale, BitDepth::Eight) => Layout::L8,
        (ColorType::Grayscale, BitDepth::Sixteen) => Layout::L16,
        (ColorType::GrayscaleAlpha, BitDepth::Eight) => Layout::La8,
        (ColorType::GrayscaleAlpha, BitDepth::Sixteen) => Layout::La16,
        (ColorType::Rgb, BitDepth::Eight) => Layout::Rgb8,
        (ColorType::Rgb, BitDepth::Sixteen) => Layout::Rgb16,
        (ColorType::Rgba, BitDepth::Eight) => Layout::Rgba8,
        (ColorType::Rgba, BitDepth::Sixteen) => Layout::Rgba16,
        _ => return None,
    })
}

/// Decodes a walked PNG (exactly its bytes).
pub(crate) fn decode(
    bytes: &[u8],
    walk: &PngWalk,
    target: Target,
    budget: &Budget,
) -> Result<Picture, FrameError> {
    let index = budget.frame;
    let header = walk.header.ok_or_else(|| FrameError::invalid(index, "bad PNG: no IHDR chunk"))?;
    let pixels = budget.check_pixels(header.width, header.height)? as usize;
    let raw = header.raw_bytes();
    if raw > DEFLATE_RATIO.saturating_mul(walk.idat_bytes) {
        let need = Bound::AtLeastBytes(raw.div_ceil(DEFLATE_RATIO));
        let declared = (header.width, header.height);
        return Err(too_short(index, "PNG", declared, walk.idat_bytes, "compressed data", need));
    }
    let lib = |e: png::DecodingError| library_error(index, Encoded::Png, e);
    let picture = guarded(index, "PNG", || {
        let limits = png::Limits { bytes: usize::try_from(budget.bytes).unwrap_or(usize::MAX) };
        let mut decoder = png::Decoder::new_with_limits(Cursor::new(bytes), limits);
        // Neither text nor colour profiles matter to a gray frame; both can be compressed.
        decoder.set_ignore_text_chunk(true);
        decoder.set_ignore_iccp_chunk(true);
        // As `image` decodes: palettes and depths under 8 bits expanded, 16 bits kept.
        decoder.set_transformations(Transformations::EXPAND);
        let mut reader = decoder.read_info().map_err(lib)?;
        let (colour, depth) = reader.output_color_type();
        let layout = layout_of(colour, depth).ok_or_else(|| {
            FrameError::invalid(
                index,
                format!("bad PNG image: {colour:?} at {depth:?} bits is not supported"),
            )
        })?;
        let (w, h) = (header.width as usize, header.height as usize);
        if reader.info().size() != (header.width as u32, header.height as u32) {
            return Err(FrameError::invalid(index, "bad PNG: its headers disagree"));
        }
        // The png crate keeps a few raw rows, an output row and its inflater's window and buffer.
        let raw_row = 1 + (w as u64 * 8 * layout.pixel_bytes() as u64).div_ceil(8);
        let need = (pixels * layout.target_bytes(target)) as u64 + 12 * raw_row + (512 << 10);
        budget.check_memory(&format!("this {w}x{h} PNG"), need)?;
        let mut canvas = Canvas::new(target, layout, pixels);
        let mut passes = PASSES.iter().enumerate().flat_map(|(p, &(x0, dx, y0, dy))| {
            let cols = (w as u64).saturating_sub(x0).div_ceil(dx);
            let rows = if cols == 0 { 0 } else { (h as u64).saturating_sub(y0).div_ceil(dy) };
            (0..rows).map(move |line| (p as u8 + 1, line, x0, dx, y0 + line * dy))
        });
        let mut row_number = 0;
        while let Some(row) = reader.next_interlaced_row().map_err(lib)? {
            match row.interlace() {
                InterlaceInfo::Null(_) => {
                    let y = row_number;
                    if y >= h {
                        return Err(FrameError::invalid(index, "bad PNG: more rows than its height"));
                    }
                    canvas.put(layout, Order::Big, row.data(), |i| y * w + i);
                }
                InterlaceInfo::Adam7(info) => {
                    let expected = passes.next().map(|(pass, line, x0, dx, y)| {
                        (Adam7Info::new(pass, line as u32, w as u32), x0 as usize, dx as usize, y as usize)
                    });
                    let Some((_, x0, dx, y)) = expected.filter(|e| e.0 == *info) else {
                        return Err(FrameError::invalid(index, "bad PNG: interlaced rows out of order"));
                    };
                    canvas.put(layout, Order::Big, row.data(), |i| y * w + x0 + i * dx);
                }
            }
            row_number += 1;
        }
        if !header.interlaced && row_number < h {
            return Err(FrameError::invalid(index, format!("truncated PNG: {row_number} of {h} rows")));
        }
        Ok(Picture { width: w, height: h, canvas, maxval: None })
    })?;
    match (&walk.maxval_text, target) {
        (Some(text), Target::Gray | Target::Colour) => scale_back(index, picture, text),
        _ => Ok(picture),
    }
}

/// The gray `picture` scaled back to the maxval its `histopipe-maxval` text records.
fn scale_back(index: usize, picture: Picture, text: &[u8]) -> Result<Picture, FrameError> {
    let bad = |why: &str| {
        let shown: String = text.iter().map(|&b| (b as char).escape_default().to_string()).collect();
        FrameError::invalid(index, format!("bad PNG: its {MAXVAL_KEYWORD} text '{shown}' {why}"))
    };
    let maxval = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<u16>().ok())
        .filter(|&m| m >= 1)
        .ok_or_else(|| bad("is not a maxval (1..=65535)"))?;
    let narrow = |v: Vec<u16>, scale: PngScale| v.iter().map(|&s| scale.read_back(s) as u8).collect();
    let ch = picture.canvas.channels();
    let canvas = match picture.canvas {
        Canvas::Gray8(_) | Canvas::Native8(..) if maxval > 255 => {
            return Err(bad("is over the 255 an 8-bit PNG holds"))
        }
        Canvas::Gray8(mut v) | Canvas::Native8(mut v, _) => {
            let scale = PngScale { maxval, png_max: 255 };
            v.iter_mut().for_each(|s| *s = scale.read_back(*s as u16) as u8);
            if ch == Channels::Gray {
                Canvas::Gray8(v)
            } else {
                Canvas::Native8(v, ch)
            }
        }
        Canvas::Gray16(v) | Canvas::Native16(v, _) => {
            let scale = PngScale { maxval, png_max: 65535 };
            match (maxval <= 255, ch) {
                (true, Channels::Gray) => Canvas::Gray8(narrow(v, scale)),
                (true, ch) => Canvas::Native8(narrow(v, scale), ch),
                (false, ch) => {
                    let mut v = v;
                    v.iter_mut().for_each(|s| *s = scale.read_back(*s));
                    if ch == Channels::Gray {
                        Canvas::Gray16(v)
                    } else {
                        Canvas::Native16(v, ch)
                    }
                }
            }
        }
        Canvas::Rgb8(_) | Canvas::GrayF32(_) | Canvas::NativeF32(..) => {
            return Err(FrameError::invalid(index, "internal error: a PNG decoded as RGB or float"))
        }
    };
    Ok(Picture { canvas, maxval: Some(maxval), ..picture })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bytes_count_filter_bytes_and_adam7_passes() {
        let h = |w, ht, depth, colour, interlaced| Header {
            width: w,
            height: ht,
            bit_depth: depth,
            colour_type: colour,
            interlaced,
        };
        assert_eq!(h(3, 2, 8, 2, false).raw_bytes(), 2 * (1 + 9));
        assert_eq!(h(9, 1, 1, 0, false).raw_bytes(), 1 + 2);
        // A 1x1 interlaced image has one pixel, in pass 1.
        assert_eq!(h(1, 1, 16, 6, true).raw_bytes(), 1 + 8);
        // 8x8: passes of 1x1, 1x1, 2x1, 2x2, 4x2, 4x4, 8x4 pixels.
        assert_eq!(h(8, 8, 8, 0, true).raw_bytes(), 2 + 2 + 3 + 2 * 3 + 2 * 5 + 4 * 5 + 4 * 9);
    }
}
