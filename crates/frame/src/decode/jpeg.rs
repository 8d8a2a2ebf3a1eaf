//! JPEG: where an image ends, what its coded data can hold, and decoding with zune-jpeg.
//!
//! A JPEG says where it ends only by its EOI marker, so the walk follows its markers: segments by
//! their lengths, entropy-coded data up to the next marker that is not a stuffed 0xFF00 or a
//! restart marker (T.81 B.1.1.5, B.1.1.2). The walk also keeps the frame header (SOF) and the
//! scans' components, for two checks before anything is decoded:
//!
//! - Huffman-coded data spends at least one bit on the DC coefficient of every block of every
//!   component that a DC scan covers (a code is at least one bit long, T.81 C; category 0 needs
//!   no extra bits), so a valid image has at least (those blocks) / 8 bytes of coded data. An
//!   image declaring more blocks than its bytes can hold is refused: decoding it would spend time
//!   and memory in proportion to a size its input does not have.
//! - The decoder's peak memory, estimated from the header after zune-jpeg's own allocations: the
//!   output, coefficient planes for progressive and multi-scan images (2 bytes a coefficient),
//!   and its per-row buffers.

use zune_jpeg::zune_core::bytestream::ZCursor;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use super::source::{SliceSource, Source};
use super::{guarded, library_error, too_short, Bound, Canvas, Encoded, Layout, Picture, Target, WalkError};
use crate::budget::Budget;
use crate::FrameError;

/// What the walk over one JPEG found.
#[derive(Debug)]
pub(crate) struct JpegWalk {
    frame: Option<FrameHeader>,
    /// Components (by identifier) whose DC coefficients some scan codes.
    dc_coded: Vec<u8>,
    /// Bytes of entropy-coded data in all scans, stuffing and restart markers included.
    coded_bytes: u64,
    scans: u32,
    /// Bytes of the marker segments kept; APP14 segments of them.
    segment_bytes: u64,
    app14: u32,
}

/// The most bytes of marker segments (tables, frame and scan headers, APP14) a JPEG keeps. A
/// progressive image that redefines its Huffman tables for each of a few dozen scans takes some
/// tens of KiB.
const MAX_SEGMENT_BYTES: u64 = 1 << 20;

/// Whether the walk keeps a marker segment of `len` bytes for the decoder; those it does not are
/// read past. zune-jpeg reads the frame and scan headers, the tables (DHT, DQT, DRI; DAC and DNL
/// to refuse them) and the colour transform of an Adobe APP14 segment, which is 12 bytes long
/// (the first 16 APP14 segments of at most 64 bytes are kept). Everything else is metadata it
/// copies or skips: APP0 to APP13 (JFIF, Exif, XMP, ICC profiles, IPTC), APP15, comments, and
/// markers it does not know.
fn keeps(marker: u8, len: usize, walk: &mut JpegWalk) -> bool {
    match marker {
        0xc0..=0xcf if marker != 0xc8 => true,
        0xda..=0xdd => true,
        0xee if len <= 64 && walk.app14 < 16 => {
            walk.app14 += 1;
            true
        }
        _ => false,
    }
}

/// A frame header (SOFn).
#[derive(Debug)]
struct FrameHeader {
    marker: u8,
    width: u64,
    height: u64,
    components: Vec<Component>,
}

#[derive(Debug)]
struct Component {
    id: u8,
    /// Horizontal and vertical sampling factors, 1..=4.
    h: u64,
    v: u64,
}

impl FrameHeader {
    fn max_sampling(&self) -> (u64, u64) {
        let h = self.components.iter().map(|c| c.h).max().unwrap_or(1);
        let v = self.components.iter().map(|c| c.v).max().unwrap_or(1);
        (h, v)
    }

    /// Blocks of component `c` in a non-interleaved scan (T.81 A.1.1, A.2.2): the fewest a scan of
    /// it can code.
    fn blocks(&self, c: &Component) -> u64 {
        let (hmax, vmax) = self.max_sampling();
        let cols = (self.width * c.h).div_ceil(hmax).div_ceil(8);
        let rows = (self.height * c.v).div_ceil(vmax).div_ceil(8);
        cols * rows
    }
}

/// The baseline, extended and progressive Huffman-coded frames: those zune-jpeg decodes.
fn is_huffman(marker: u8) -> bool {
    matches!(marker, 0xc0..=0xc2)
}

/// Walks one JPEG from its SOI marker to its EOI marker.
pub(crate) fn walk(src: &mut impl Source) -> Result<JpegWalk, WalkError> {
    let ended = |what: &str| WalkError::Ended(format!("JPEG: the input ends {what}"));
    if !src.want(2)? || src.got()[..2] != [0xff, 0xd8] {
        return Err(WalkError::Invalid("bad JPEG signature".into()));
    }
    let mut walk =
        JpegWalk { frame: None, dc_coded: Vec::new(), coded_bytes: 0, scans: 0, segment_bytes: 0, app14: 0 };
    let mut pos = 2;
    loop {
        if !src.want(pos + 2)? {
            return Err(ended("before its EOI marker"));
        }
        let at = pos;
        if src.got()[pos] != 0xff {
            return Err(WalkError::Invalid(format!(
                "bad JPEG: expected a marker at byte {pos}, found 0x{:02x}",
                src.got()[pos]
            )));
        }
        let mut marker = src.got()[pos + 1];
        pos += 2;
        // Any number of 0xFF fill bytes may precede a marker (T.81 B.1.1.2); one is kept.
        while marker == 0xff {
            if !src.leave_out(pos - 1, pos)? || !src.want(pos)? {
                return Err(ended("before its EOI marker"));
            }
            marker = src.got()[pos - 1];
        }
        match marker {
            0xd9 => {
                return Ok(walk);
            }
            // Markers without a segment.
            0xd0..=0xd7 | 0x01 => continue,
            0x00 | 0xd8 => {
                return Err(WalkError::Invalid(format!(
                    "bad JPEG: marker 0xff{marker:02x} out of place at byte {at}"
                )))
            }
            _ => {}
        }
        if !src.want(pos + 2)? {
            return Err(ended("inside a marker segment"));
        }
        let len = u16::from_be_bytes([src.got()[pos], src.got()[pos + 1]]) as usize;
        if len < 2 {
            return Err(WalkError::Invalid(format!("bad JPEG: marker segment of length {len} at byte {at}")));
        }
        if !keeps(marker, len, &mut walk) {
            if !src.leave_out(at, pos + len)? {
                return Err(ended("inside a marker segment"));
            }
            pos = at;
            continue;
        }
        walk.segment_bytes += len as u64;
        if walk.segment_bytes > MAX_SEGMENT_BYTES {
            return Err(WalkError::Invalid(format!(
                "bad JPEG: more than {MAX_SEGMENT_BYTES} bytes of tables and headers"
            )));
        }
        if !src.want(pos + len)? {
            return Err(ended("inside a marker segment"));
        }
        let body = &src.got()[pos + 2..pos + len];
        pos += len;
        match marker {
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                if walk.frame.is_some() {
                    return Err(WalkError::Invalid("bad JPEG: more than one frame header (SOF)".into()));
                }
                walk.frame = Some(frame_header(marker, body)?);
            }
            0xda => {
                scan_header(&mut walk, body)?;
                let end = skip_coded_data(src, pos)?;
                walk.coded_bytes += (end - pos) as u64;
                pos = end;
            }
            _ => {}
        }
    }
}

fn frame_header(marker: u8, body: &[u8]) -> Result<FrameHeader, WalkError> {
    let bad = |what: &str| WalkError::Invalid(format!("bad JPEG frame header: {what}"));
    if body.len() < 6 || body.len() != 6 + 3 * body[5] as usize {
        return Err(bad("wrong length"));
    }
    let height = u16::from_be_bytes([body[1], body[2]]) as u64;
    let width = u16::from_be_bytes([body[3], body[4]]) as u64;
    if width == 0 {
        return Err(bad("width 0"));
    }
    if height == 0 {
        return Err(bad("height 0 (a height given by a later DNL marker is not supported)"));
    }
    let mut components = Vec::new();
    for c in body[6..].chunks_exact(3) {
        let (h, v) = ((c[1] >> 4) as u64, (c[1] & 15) as u64);
        if !(1..=4).contains(&h) || !(1..=4).contains(&v) {
            return Err(bad("sampling factor outside 1..4"));
        }
        components.push(Component { id: c[0], h, v });
    }
    if components.is_empty() {
        return Err(bad("no components"));
    }
    Ok(FrameHeader { marker, width, height, components })
}

fn scan_header(walk: &mut JpegWalk, body: &[u8]) -> Result<(), WalkError> {
    let bad = |what: &str| WalkError::Invalid(format!("bad JPEG scan header: {what}"));
    let n = *body.first().ok_or_else(|| bad("empty"))? as usize;
    if body.len() != 1 + 2 * n + 3 {
        return Err(bad("wrong length"));
    }
    let frame = walk.frame.as_ref().ok_or_else(|| bad("a scan before the frame header"))?;
    let spectral_start = body[1 + 2 * n];
    for c in body[1..1 + 2 * n].chunks_exact(2) {
        if !frame.components.iter().any(|k| k.id == c[0]) {
            return Err(bad("a component the frame does not have"));
        }
        if spectral_start == 0 && !walk.dc_coded.contains(&c[0]) {
            walk.dc_coded.push(c[0]);
        }
    }
    walk.scans += 1;
    Ok(())
}

/// Skips entropy-coded data from `pos`; returns where the next marker's 0xFF is.
fn skip_coded_data(src: &mut impl Source, mut pos: usize) -> Result<usize, WalkError> {
    let ended = || WalkError::Ended("JPEG: the input ends inside coded data, before its EOI marker".into());
    loop {
        if pos >= src.got().len() {
            let at_hand = src.peek()?;
            if at_hand.is_empty() {
                return Err(ended());
            }
            // Take up to the first 0xFF: the byte after it decides whether a marker starts.
            let n = at_hand.iter().position(|&b| b == 0xff).map_or(at_hand.len(), |k| k + 1);
            src.take(n);
        }
        let Some(k) = src.got()[pos..].iter().position(|&b| b == 0xff) else {
            pos = src.got().len();
            continue;
        };
        let ff = pos + k;
        if !src.want(ff + 2)? {
            return Err(ended());
        }
        match src.got()[ff + 1] {
            // Stuffing and restart markers belong to the coded data.
            0x00 | 0xd0..=0xd7 => pos = ff + 2,
            // A fill byte: the marker starts at a later 0xFF.
            0xff => pos = ff + 1,
            _ => return Ok(ff),
        }
    }
}

/// Refuses an image whose coded data is too short for the blocks it declares.
fn check_coded_data(walk: &JpegWalk, frame: &FrameHeader, budget: &Budget) -> Result<(), FrameError> {
    if !is_huffman(frame.marker) {
        // zune-jpeg refuses arithmetic, lossless and hierarchical frames from their header.
        return Ok(());
    }
    let coded = frame.components.iter().filter(|c| walk.dc_coded.contains(&c.id));
    let blocks: u64 = coded.map(|c| frame.blocks(c)).sum();
    if blocks == 0 {
        return Err(FrameError::invalid(
            budget.frame,
            "bad JPEG: no scan codes the DC coefficients of any component",
        ));
    }
    if blocks.div_ceil(8) > walk.coded_bytes {
        let need = Bound::AtLeastBytes(blocks.div_ceil(8));
        let declared = (frame.width, frame.height);
        return Err(too_short(budget.frame, "JPEG", declared, walk.coded_bytes, "coded data", need));
    }
    Ok(())
}

/// Checks a JPEG held inside another image (a TIFF strip or tile, `bytes` as its decoder gets
/// them) before that decoder sees it: its decoder sizes its output by its own header, so the
/// JPEG must be no larger than the `width` x `height` it stands for (libtiff's rule), whole, and
/// its coded data able to hold its blocks. The message says what is wrong.
pub(crate) fn check_nested(bytes: &[u8], width: u64, height: u64, budget: &Budget) -> Result<(), String> {
    let walk = walk(&mut SliceSource::new(bytes)).map_err(|e| e.into_frame_error(budget.frame).message)?;
    let frame = walk.frame.as_ref().ok_or("a JPEG without a frame header (SOF)")?;
    if frame.width > width || frame.height > height {
        return Err(format!(
            "a JPEG of {}x{} pixels, more than its {width}x{height}: damaged or hostile input",
            frame.width, frame.height
        ));
    }
    check_coded_data(&walk, frame, budget).map_err(|e| e.message)
}

/// zune-jpeg's peak memory for this image with `channels` output channels, from its allocations:
/// the output, the coefficient planes (progressive images, and baseline ones whose components
/// come in separate scans), per-component row and upsampling buffers.
fn decoder_memory(walk: &JpegWalk, frame: &FrameHeader, output: u64) -> u64 {
    let (w, h) = (frame.width, frame.height);
    let (hmax, vmax) = frame.max_sampling();
    let interleaved = hmax != 1 || vmax != 1;
    let (mcu_x, mcu_y) = (w.div_ceil(8 * hmax), h.div_ceil(8 * vmax));
    let plain_blocks = w.div_ceil(8) * h.div_ceil(8);
    let single = frame.components.len() == 1;
    let planes_needed = frame.marker == 0xc2 || walk.scans > 1;
    let mut planes = 0;
    let mut rows = 0;
    let mut widest = 0;
    for c in &frame.components {
        let blocks = match (interleaved, single) {
            (true, true) => (mcu_x * mcu_y * c.h * c.v).max(plain_blocks),
            (true, false) => mcu_x * mcu_y * c.h * c.v,
            (false, _) => plain_blocks,
        };
        if planes_needed {
            planes += 128 * blocks;
        }
        let stride = if interleaved { mcu_x * c.h * 8 } else { w.div_ceil(8) * 8 };
        let ratio = hmax.div_ceil(c.h) * vmax.div_ceil(c.v);
        // Coefficient rows (16 bytes a column a sample row), the rows kept for upsampling, and
        // the upsampled rows (i16 samples).
        rows += stride * (c.v * (20 + 2 * ratio) + 32 * ratio);
        widest = widest.max(stride);
    }
    output + planes + rows + 16 * widest + (256 << 10)
}

/// Decodes a walked JPEG (exactly its bytes).
pub(crate) fn decode(
    bytes: &[u8],
    walk: &JpegWalk,
    target: Target,
    budget: &Budget,
) -> Result<Picture, FrameError> {
    let index = budget.frame;
    let frame = walk
        .frame
        .as_ref()
        .ok_or_else(|| FrameError::invalid(index, "bad JPEG: no frame header (SOF) before its EOI marker"))?;
    let pixels = budget.check_pixels(frame.width, frame.height)? as usize;
    check_coded_data(walk, frame, budget)?;
    let lib = |e: zune_jpeg::errors::DecodeErrors| library_error(index, Encoded::Jpeg, e);
    guarded(index, "JPEG", || {
        // As `image` decodes, but strict: corrupt or truncated coded data is an error, not gray.
        let options = DecoderOptions::default()
            .set_strict_mode(true)
            .set_max_width(usize::MAX)
            .set_max_height(usize::MAX);
        let mut decoder = JpegDecoder::new_with_options(ZCursor::new(bytes), options);
        decoder.decode_headers().map_err(lib)?;
        let input = decoder
            .input_colorspace()
            .ok_or_else(|| FrameError::invalid(index, "bad JPEG: no colour space"))?;
        let (out, layout) = match input {
            ColorSpace::Luma => (input, Layout::L8),
            ColorSpace::LumaA => (input, Layout::La8),
            ColorSpace::RGBA => (input, Layout::Rgba8),
            ColorSpace::RGB => (input, Layout::Rgb8),
            _ => (ColorSpace::RGB, Layout::Rgb8),
        };
        decoder.set_options(options.jpeg_set_out_colorspace(out));
        let size = decoder.output_buffer_size();
        if decoder.dimensions() != Some((frame.width as usize, frame.height as usize))
            || size != Some(pixels * layout.channels())
        {
            return Err(FrameError::invalid(index, "bad JPEG: its headers disagree with its frame header"));
        }
        let buffer = pixels * layout.channels().max(layout.target_bytes(target));
        // Converting to gray in place ends by shrinking the buffer: count the new block too.
        let converted = buffer as u64 + (pixels * layout.target_bytes(target)) as u64;
        let need = decoder_memory(walk, frame, buffer as u64).max(converted);
        budget.check_memory(&format!("this {}x{} JPEG", frame.width, frame.height), need)?;
        let mut buf = vec![0u8; buffer];
        decoder.decode_into(&mut buf).map_err(lib)?;
        drop(decoder);
        let canvas = Canvas::convert_in_place(buf, layout, target, pixels);
        Ok(Picture { width: frame.width as usize, height: frame.height as usize, canvas, maxval: None })
    })
}

#[cfg(test)]
mod tests {
    use super::super::source::Source as _;
    use super::*;

    fn walked(bytes: &[u8]) -> Result<JpegWalk, WalkError> {
        walk(&mut SliceSource::new(bytes))
    }

    /// The bytes of the JPEG at the start of `bytes` the walk takes from the input.
    fn taken(bytes: &[u8]) -> usize {
        let mut src = SliceSource::new(bytes);
        walk(&mut src).unwrap();
        src.taken()
    }

    #[test]
    fn the_walk_ends_at_eoi_past_stuffing_restarts_and_fill_bytes() {
        // SOI, COM "hi", SOF0 1x1 gray, SOS, data with FF00, RST0, fill bytes, EOI; then more.
        let jpeg = b"\xff\xd8\xff\xfe\x00\x04hi\xff\xc0\x00\x0b\x08\x00\x01\x00\x01\x01\x01\x11\x00\
            \xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00\x12\xff\x00\x34\xff\xd0\x56\xff\xff\xff\xd9";
        let mut stream = jpeg.to_vec();
        stream.extend_from_slice(b"P5 1 1 255\n\0");
        let w = walked(&stream).unwrap();
        assert_eq!(taken(&stream), jpeg.len());
        assert_eq!(w.dc_coded, vec![1]);
        assert_eq!(w.coded_bytes, 9);
        assert!(matches!(walked(&jpeg[..jpeg.len() - 1]), Err(WalkError::Ended(_))));
        assert!(matches!(walked(&jpeg[..20]), Err(WalkError::Ended(_))));
        assert!(matches!(walked(b"\xff\xd8\x00\x00"), Err(WalkError::Invalid(_))));
    }
}
