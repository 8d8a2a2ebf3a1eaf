//! JPEG: where an image ends, what its coded data can hold, and decoding with libjpeg-turbo.
//!
//! A JPEG says where it ends only by its EOI marker, so the walk follows its markers: segments by
//! their lengths, entropy-coded data up to the next marker that is not a stuffed 0xFF00 or a
//! restart marker (T.81 B.1.1.5, B.1.1.2). The walk also keeps the frame header (SOF) and the
//! scans' components, for checks before anything is decoded:
//!
//! - Huffman-coded data spends at least one bit on the DC coefficient of every block of every
//!   component that a DC scan covers (a code is at least one bit long, T.81 C; category 0 needs
//!   no extra bits), so a valid image has at least (those blocks) / 8 bytes of coded data. An
//!   image declaring more blocks than its bytes can hold is refused: decoding it would spend time
//!   and memory in proportion to a size its input does not have.
//! - At most [`MAX_SCANS`] scans, and the coefficients they go over in all (each scan passes
//!   over every block of each component it codes, however few bytes it has: a run of
//!   end-of-band codes covers 32767 blocks) within the input's [decoding
//!   work](crate::read_work_bound): one `--max-pixels` frame and 4096 a byte of the JPEG.
//! - The decoder's peak memory, estimated from the header after libjpeg-turbo's allocations: the
//!   output, the coefficient buffer of progressive and multi-scan images (2 bytes a
//!   coefficient), and its row buffers.
//!
//! Decoding is libjpeg-turbo's (built by the `mozjpeg` crate, its libjpeg API), set up as OpenCV's
//! `imread` sets it up, so the pixels are OpenCV's (and Pillow's) byte for byte: gray is libjpeg's
//! gray output (the Y plane of a YCbCr image), colour its RGB output, and CMYK or YCCK images are
//! converted from libjpeg's CMYK with OpenCV's integer formulas. Its errors, and the warnings that
//! mean lost data (after which libjpeg would go on with made-up blocks), fail the frame.

use std::os::raw::c_int;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use mozjpeg::decompress::DecompressBuilder;
use mozjpeg::ColorSpace;
use mozjpeg_sys::{
    jpeg_common_struct, jpeg_error_mgr as ErrorMgr, jpeg_std_error, JWRN_ADOBE_XFORM, JWRN_BOGUS_ICC,
    JWRN_EXTRANEOUS_DATA, JWRN_JFIF_MAJOR,
};

use super::source::{SliceSource, Source};
use super::{guarded, library_error, too_short, Bound, Canvas, Encoded, Picture, Target, WalkError};
use crate::budget::Budget;
use crate::{Channels, FrameError};

/// What the walk over one JPEG found.
#[derive(Debug)]
pub(crate) struct JpegWalk {
    frame: Option<FrameHeader>,
    /// Components (by identifier) whose DC coefficients some scan codes.
    dc_coded: Vec<u8>,
    /// Bytes of entropy-coded data in all scans, stuffing and restart markers included.
    coded_bytes: u64,
    scans: u32,
    /// Blocks the scans go over in all, each scan counting every block of each of its components.
    scan_blocks: u64,
    /// Bytes of the marker segments kept; APP14 segments of them.
    segment_bytes: u64,
    app14: u32,
}

/// The most bytes of marker segments (tables, frame and scan headers, APP14) a JPEG keeps. A
/// progressive image that redefines its Huffman tables for each of a few dozen scans takes some
/// tens of KiB.
const MAX_SEGMENT_BYTES: u64 = 1 << 20;

/// Whether the walk keeps a marker segment of `len` bytes for the decoder; those it does not are
/// read past. libjpeg reads the frame and scan headers, the tables (DHT, DQT, DRI; DAC and DNL
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

/// The baseline, extended and progressive Huffman-coded frames: those libjpeg, as built here,
/// decodes.
fn is_huffman(marker: u8) -> bool {
    matches!(marker, 0xc0..=0xc2)
}

/// Walks one JPEG from its SOI marker to its EOI marker.
pub(crate) fn walk(src: &mut impl Source) -> Result<JpegWalk, WalkError> {
    let ended = |what: &str| WalkError::Ended(format!("JPEG: the input ends {what}"));
    if !src.want(2)? || src.got()[..2] != [0xff, 0xd8] {
        return Err(WalkError::Invalid("bad JPEG signature".into()));
    }
    let mut walk = JpegWalk {
        frame: None,
        dc_coded: Vec::new(),
        coded_bytes: 0,
        scans: 0,
        scan_blocks: 0,
        segment_bytes: 0,
        app14: 0,
    };
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
        let Some(component) = frame.components.iter().find(|k| k.id == c[0]) else {
            return Err(bad("a component the frame does not have"));
        };
        walk.scan_blocks = walk.scan_blocks.saturating_add(frame.blocks(component));
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
        // libjpeg (built without arithmetic decoding) refuses arithmetic, lossless and
        // hierarchical frames from their header.
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
/// its coded data able to hold its blocks. The message says what is wrong. Returns the
/// coefficients its scans go over ([`scan_work`]), for the TIFF's work.
pub(crate) fn check_nested(bytes: &[u8], width: u64, height: u64, budget: &Budget) -> Result<u64, String> {
    let walk = walk(&mut SliceSource::new(bytes)).map_err(|e| e.into_frame_error(budget.frame).message)?;
    let frame = walk.frame.as_ref().ok_or("a JPEG without a frame header (SOF)")?;
    if frame.width > width || frame.height > height {
        return Err(format!(
            "a JPEG of {}x{} pixels, more than its {width}x{height}: damaged or hostile input",
            frame.width, frame.height
        ));
    }
    check_coded_data(&walk, frame, budget).map_err(|e| e.message)?;
    Ok(scan_work(&walk))
}

/// The decoding work of a JPEG's scans: the coefficients they go over, 64 a block of each
/// component of each scan. A baseline image's one scan goes over each coefficient once; each scan
/// of a progressive image goes over all the blocks of its components again, however few bytes it
/// has, so it is its scans, not its pixels, that bound its time.
fn scan_work(walk: &JpegWalk) -> u64 {
    walk.scan_blocks.saturating_mul(64)
}

/// The most scans a JPEG may have. Each scan of a progressive image is a pass over the whole
/// coefficient buffer, so a few hundred bytes of scans can cost minutes; libjpeg-turbo's
/// TurboJPEG API refuses more than 500 for the same reason, and real encoders write at most a
/// few dozen (10 for libjpeg's `jpeg_simple_progression` of a colour image).
const MAX_SCANS: u32 = 500;

/// libjpeg-turbo's peak memory for this image, beyond an `output` buffer it writes rows into:
/// the whole coefficient buffer for progressive images and those whose components come in
/// separate scans (128 bytes a block: 64 coefficients of 2 bytes, blocks padded to whole MCUs),
/// the main buffer of each component (at most 12 sample rows a vertical sampling unit with the
/// context rows fancy upsampling keeps, counted as 16), the upsampled rows, row pointers, and
/// its tables.
fn decoder_memory(walk: &JpegWalk, frame: &FrameHeader, output: u64) -> u64 {
    let (w, h) = (frame.width, frame.height);
    let (hmax, vmax) = frame.max_sampling();
    let (mcu_x, mcu_y) = (w.div_ceil(8 * hmax), h.div_ceil(8 * vmax));
    let buffered = frame.marker == 0xc2 || walk.scans > 1;
    let widest = mcu_x * hmax * 8;
    let mut coefficients = 0;
    let mut rows = 0;
    for c in &frame.components {
        if buffered {
            coefficients += 128 * mcu_x * mcu_y * c.h * c.v;
        }
        let stride = mcu_x * c.h * 8;
        // The main buffer, and the component upsampled to the full width over a row group.
        rows += stride * 16 * c.v + widest * vmax * 8;
    }
    // One MCU of coefficients when not buffered, the output rows' spare row and the pointers
    // (8 bytes a row of every buffer), tables (Huffman, quantization, range limits) and the
    // library's own structures.
    output + coefficients + rows + 10 * 128 + 4 * widest + 8 * 64 * vmax * 8 + (256 << 10)
}

/// A libjpeg error, carried out of the library by unwinding (its `error_exit` may not return).
pub(crate) struct LibjpegError(pub(crate) String);

/// The libjpeg message for the error or warning now in `cinfo`'s error manager.
fn libjpeg_message(cinfo: &mut jpeg_common_struct) -> String {
    // SAFETY: `cinfo.err` is the error manager libjpeg calls us through, set up by
    // `jpeg_std_error`, so it is valid and its `format_message` is libjpeg's.
    let format = unsafe { (*cinfo.err).format_message };
    let Some(format) = format else {
        // SAFETY: as above.
        return format!("libjpeg message {}", unsafe { (*cinfo.err).msg_code });
    };
    let mut buffer = [0u8; 80];
    // SAFETY: libjpeg's `format_message` writes at most JMSG_LENGTH_MAX (80) bytes, a
    // NUL-terminated string, into the buffer it is given; the binding declares that buffer
    // `&[u8; 80]` where the C function takes `char *`, so it is called through the same
    // function type with a mutable reference, as the `mozjpeg` crate does.
    unsafe {
        let format = std::mem::transmute::<
            unsafe extern "C-unwind" fn(&mut jpeg_common_struct, &[u8; 80]),
            unsafe extern "C-unwind" fn(&mut jpeg_common_struct, &mut [u8; 80]),
        >(format);
        format(cinfo, &mut buffer);
    }
    let text = buffer.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(text).into_owned()
}

/// libjpeg's `error_exit`: carries its message out by unwinding (no panic hook runs).
extern "C-unwind" fn error_exit(cinfo: &mut jpeg_common_struct) {
    let message = libjpeg_message(cinfo);
    resume_unwind(Box::new(LibjpegError(message)));
}

/// libjpeg's `emit_message`: trace messages are ignored, and a warning is an error unless it
/// loses no image data. libjpeg warns, and then goes on with gray or repeated blocks, where the
/// data ends early (JWRN_JPEG_EOF), a code is corrupt or a marker interrupts a scan
/// (JWRN_HUFF_BAD_CODE, JWRN_HIT_MARKER, JWRN_MUST_RESYNC), or scans are out of order
/// (JWRN_NOT_SEQUENTIAL, JWRN_BOGUS_PROGRESSION): a decoded image would then not be the one
/// encoded. Harmless ones pass: bytes between a scan and the next marker
/// (JWRN_EXTRANEOUS_DATA), an unknown Adobe transform code or JFIF major version, a damaged ICC
/// profile (which is not read here).
extern "C-unwind" fn emit_message(cinfo: &mut jpeg_common_struct, level: c_int) {
    // SAFETY: `cinfo.err` is the error manager libjpeg calls us through (see above).
    let code = unsafe { (*cinfo.err).msg_code };
    let harmless = matches!(code, JWRN_EXTRANEOUS_DATA | JWRN_ADOBE_XFORM | JWRN_JFIF_MAJOR | JWRN_BOGUS_ICC);
    if level < 0 && !harmless {
        error_exit(cinfo);
    }
}

/// An error manager whose errors and data-losing warnings unwind with a [`LibjpegError`].
pub(crate) fn error_manager() -> ErrorMgr {
    // SAFETY: `jpeg_error_mgr` is a C struct of integers, pointers and optional function
    // pointers, for which all-zero bytes are valid (null, None); `jpeg_std_error` then fills it.
    let mut err: ErrorMgr = unsafe { std::mem::zeroed() };
    // SAFETY: `err` is a valid, writable error manager; the call only stores libjpeg's default
    // methods and message table into it.
    unsafe { jpeg_std_error(&mut err) };
    err.error_exit = Some(error_exit);
    err.emit_message = Some(emit_message);
    err
}

/// OpenCV's CMYK to RGB (imgcodecs `icvCvt_CMYK2BGR_8u_C4C3R`): each of C, M, Y as libjpeg
/// gives them (Adobe's inverted samples: 255 is no ink) becomes K - (255 - v)·K / 256, the
/// division a shift.
fn cmyk_channel(v: u8, k: u8) -> u8 {
    let (v, k) = (v as i32, k as i32);
    (k - (((255 - v) * k) >> 8)) as u8
}

/// OpenCV's CMYK to gray (`icvCvt_CMYK2Gray_8u_C4C1R`): the channels above weighed with its
/// 14-bit luma coefficients, round(0.299 · 2^14) for red and round(0.587 · 2^14) for green, blue
/// the rest, rounded half up.
fn cmyk_gray(p: &[u8]) -> u8 {
    const R: i32 = 4899;
    const G: i32 = 9617;
    const B: i32 = (1 << 14) - R - G;
    let k = p[3];
    let (r, g, b) =
        (cmyk_channel(p[0], k) as i32, cmyk_channel(p[1], k) as i32, cmyk_channel(p[2], k) as i32);
    ((b * B + g * G + r * R + (1 << 13)) >> 14) as u8
}

/// Decodes a walked JPEG (exactly its bytes) with libjpeg-turbo, as OpenCV's `imread` does:
/// gray is libjpeg's own gray output (the Y plane of a YCbCr image), colour its RGB output, and a
/// four-component (CMYK or YCCK) image is read as CMYK and converted with OpenCV's arithmetic.
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
    if walk.scans > MAX_SCANS {
        return Err(FrameError::invalid(
            index,
            format!("bad JPEG: {} scans, more than the {MAX_SCANS} this reader decodes", walk.scans),
        ));
    }
    let what = format!("this {}x{} JPEG's {} scans", frame.width, frame.height, walk.scans);
    budget.check_work(&what, scan_work(walk))?;
    let cmyk = frame.components.len() == 4;
    // A one-component JPEG stays gray as colour: a gray frame, not three equal channels.
    let gray = target == Target::Gray || (target == Target::Colour && frame.components.len() == 1);
    let (out_space, channels) = match (cmyk, gray) {
        (true, _) => (ColorSpace::JCS_CMYK, 4),
        (false, true) => (ColorSpace::JCS_GRAYSCALE, 1),
        (false, false) => (ColorSpace::JCS_RGB, 3),
    };
    let kept = if gray { 1 } else { 3 };
    let buffer = pixels * channels;
    // Converting CMYK in place ends by shrinking the buffer: count the new block too.
    let converted = if cmyk { buffer + pixels * kept } else { buffer } as u64;
    let need = decoder_memory(walk, frame, buffer as u64).max(converted);
    budget.check_memory(&format!("this {}x{} JPEG", frame.width, frame.height), need)?;
    let lib = |e: std::io::Error| library_error(index, Encoded::Jpeg, e);
    guarded(index, "JPEG", || {
        let run = || -> Result<Vec<u8>, FrameError> {
            let decoder = DecompressBuilder::new().with_err(error_manager()).from_mem(bytes).map_err(lib)?;
            if decoder.size() != (frame.width as usize, frame.height as usize)
                || decoder.components().len() != frame.components.len()
            {
                return Err(FrameError::invalid(
                    index,
                    "bad JPEG: its headers disagree with its frame header",
                ));
            }
            let mut started = decoder.to_colorspace(out_space).map_err(lib)?;
            let mut buf = vec![0u8; buffer];
            started.read_scanlines_into(&mut buf).map_err(lib)?;
            // Reads on to the EOI marker: damage after the last row is an error too.
            started.finish().map_err(lib)?;
            Ok(buf)
        };
        let mut buf = match catch_unwind(AssertUnwindSafe(run)) {
            Ok(result) => result?,
            Err(payload) => match payload.downcast::<LibjpegError>() {
                Ok(e) => return Err(library_error(index, Encoded::Jpeg, e.0)),
                Err(other) => resume_unwind(other),
            },
        };
        if cmyk {
            // Pixel i is written at kept·i, read from 4·i >= kept·i: forward never reads what it
            // wrote.
            for i in 0..pixels {
                let p = 4 * i;
                if kept == 1 {
                    buf[i] = cmyk_gray(&buf[p..p + 4]);
                } else {
                    let k = buf[p + 3];
                    let rgb =
                        [cmyk_channel(buf[p], k), cmyk_channel(buf[p + 1], k), cmyk_channel(buf[p + 2], k)];
                    buf[3 * i..3 * i + 3].copy_from_slice(&rgb);
                }
            }
            buf.truncate(pixels * kept);
            buf.shrink_to_fit();
        }
        let canvas = match (target, gray) {
            (Target::Rgb8, _) => Canvas::Rgb8(buf),
            (_, true) => Canvas::Gray8(buf),
            (_, false) => Canvas::Native8(buf, Channels::Rgb),
        };
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

    /// Walks and decodes one JPEG as the reader does.
    fn decoded(bytes: &[u8], target: Target) -> Result<Picture, FrameError> {
        let w = walked(bytes).map_err(|e| e.into_frame_error(1))?;
        decode(bytes, &w, target, &Budget::new(1, 1 << 30, bytes.len(), 0))
    }

    /// A gray or RGB noise JPEG by our encoder, and where its coded data starts and ends.
    fn noise_jpeg(channels: usize) -> (Vec<u8>, usize, usize) {
        let mut rng = fastrand::Rng::with_seed(7);
        let samples: Vec<u8> = (0..64 * 48 * channels).map(|_| rng.u8(..)).collect();
        let jpeg = crate::encode_jpeg(64, 48, channels, &samples, 90).unwrap();
        let sos = jpeg.windows(2).position(|m| m == [0xff, 0xda]).unwrap();
        let start = sos + 2 + u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]) as usize;
        (jpeg.clone(), start, jpeg.len() - 2)
    }

    fn message(r: Result<Picture, FrameError>) -> String {
        match r {
            Ok(_) => panic!("decoded"),
            Err(e) => e.message,
        }
    }

    #[test]
    fn clean_images_decode_to_gray_and_rgb() {
        for channels in [1, 3] {
            let (jpeg, _, _) = noise_jpeg(channels);
            let gray = decoded(&jpeg, Target::Gray).unwrap();
            assert!(matches!(gray.canvas, Canvas::Gray8(ref v) if v.len() == 64 * 48));
            let rgb = decoded(&jpeg, Target::Rgb8).unwrap();
            assert!(matches!(rgb.canvas, Canvas::Rgb8(ref v) if v.len() == 3 * 64 * 48));
        }
    }

    #[test]
    fn truncated_images_are_errors() {
        let (jpeg, start, end) = noise_jpeg(3);
        // Cut inside the coded data: the walk finds no EOI.
        let cut = &jpeg[..(start + end) / 2];
        assert!(message(decoded(cut, Target::Gray)).starts_with("truncated JPEG"));
        // Cut, then an EOI: libjpeg meets the marker before the last block.
        let mut ended = cut.to_vec();
        ended.extend_from_slice(b"\xff\xd9");
        let m = message(decoded(&ended, Target::Gray));
        assert!(m.starts_with("bad JPEG image: ") && m.contains("Corrupt JPEG data"), "{m}");
        assert_eq!(m.lines().count(), 1);
    }

    #[test]
    fn coded_data_cut_by_a_marker_is_an_error() {
        // A restart marker where the image has no restart interval: libjpeg meets a marker
        // inside the scan. (A bad Huffman code is not always caught: libjpeg-turbo's fast path
        // decodes it as 0, for OpenCV too.)
        let (jpeg, start, end) = noise_jpeg(1);
        let mid = (start + end) / 2;
        let cut = jpeg[..mid].iter().rposition(|&b| b != 0xff).unwrap() + 1;
        let mut damaged = jpeg[..cut].to_vec();
        damaged.extend_from_slice(b"\xff\xd3");
        damaged.extend_from_slice(&jpeg[cut..]);
        let m = message(decoded(&damaged, Target::Rgb8));
        assert!(m.starts_with("bad JPEG image: Corrupt JPEG data"), "{m}");
    }

    #[test]
    fn extraneous_bytes_before_a_marker_are_harmless() {
        let (jpeg, _, end) = noise_jpeg(3);
        let mut padded = jpeg[..end].to_vec();
        padded.extend_from_slice(b"\x12\x34\x56\xff\xd9");
        let (a, b) = (decoded(&jpeg, Target::Rgb8).unwrap(), decoded(&padded, Target::Rgb8).unwrap());
        let (Canvas::Rgb8(a), Canvas::Rgb8(b)) = (a.canvas, b.canvas) else { panic!() };
        assert_eq!(a, b);
    }

    #[test]
    fn too_many_scans_are_refused_before_decoding() {
        let (jpeg, start, end) = noise_jpeg(1);
        let sos = jpeg[..start].windows(2).rposition(|m| m == [0xff, 0xda]).unwrap();
        let mut many = jpeg[..end].to_vec();
        for _ in 0..MAX_SCANS {
            many.extend_from_slice(&jpeg[sos..end]);
        }
        many.extend_from_slice(b"\xff\xd9");
        assert_eq!(walked(&many).unwrap().scans, MAX_SCANS + 1);
        let m = message(decoded(&many, Target::Gray));
        assert_eq!(
            m,
            format!("bad JPEG: {} scans, more than the {MAX_SCANS} this reader decodes", MAX_SCANS + 1)
        );
    }

    /// A progressive gray JPEG of `side` x `side` mid-gray (`side` a multiple of 8, at most 1024): a
    /// DC scan of one bit a block, then for each of `bands` single coefficients a first scan at
    /// the coarsest bit and 13 refinements, each scan one end-of-band run over every block (two
    /// bytes). Real encoders split a band so finely for no image; each scan is a pass over every
    /// block all the same.
    fn many_scans(side: u16, bands: u8) -> Vec<u8> {
        let blocks = (side as u32 / 8).pow(2);
        let mut j = b"\xff\xd8\xff\xdb\x00\x43\x00".to_vec();
        j.extend_from_slice(&[1; 64]);
        j.extend_from_slice(b"\xff\xc2\x00\x0b\x08");
        j.extend_from_slice(&side.to_be_bytes());
        j.extend_from_slice(&side.to_be_bytes());
        j.extend_from_slice(b"\x01\x01\x11\x00");
        // One code each, "0": DC difference category 0; AC end-of-band run EOB14 (2^14 blocks and
        // 14 more bits of run).
        for (class, symbol) in [(0x00u8, 0x00u8), (0x10, 0xe0)] {
            j.extend_from_slice(&[0xff, 0xc4, 0x00, 0x14, class, 1]);
            j.extend_from_slice(&[0; 15]);
            j.push(symbol);
        }
        let scan = |j: &mut Vec<u8>, ss: u8, se: u8, ah: u8, al: u8| {
            j.extend_from_slice(&[0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, ss, se, ah << 4 | al]);
        };
        scan(&mut j, 0, 0, 0, 0);
        j.extend(std::iter::repeat_n(0u8, blocks.div_ceil(8) as usize));
        // EOB14's code "0", then its 14 bits (blocks - 2^14), then 1s to the byte.
        let run = (blocks.max(1 << 14) - (1 << 14)) << 1 | 1;
        for band in 1..=bands {
            for al in (0..=13u8).rev() {
                let ah = if al == 13 { 0 } else { al + 1 };
                scan(&mut j, band, band, ah, al);
                j.extend_from_slice(&(run as u16).to_be_bytes());
            }
        }
        j.extend_from_slice(b"\xff\xd9");
        j
    }

    #[test]
    fn scans_over_the_inputs_work_are_refused_before_decoding() {
        // 2 bands: 29 scans over 128x128, decoded as mid-gray (every coefficient 0).
        let few = many_scans(128, 2);
        let w = walked(&few).unwrap();
        assert_eq!((w.scans, w.scan_blocks), (29, 29 * 256));
        let Canvas::Gray8(pixels) = decoded(&few, Target::Gray).unwrap().canvas else { panic!() };
        assert!(pixels.len() == 128 * 128 && pixels.iter().all(|&p| p == 128));
        // 35 bands: 491 scans over 1024x1024 in 9 KB, 515 M coefficients to go over; a frame of
        // --max-pixels and 4096 a byte allow 37 M.
        let many = many_scans(1024, 35);
        let budget = Budget::new(1, 1 << 20, many.len(), 0);
        let w = walked(&many).unwrap();
        assert_eq!((w.scans, w.scan_blocks), (491, 491 * (1 << 14)));
        let e = decode(&many, &w, Target::Gray, &budget).map(drop).unwrap_err();
        assert_eq!(e.kind, crate::FrameErrorKind::TooLarge);
        assert_eq!(
            e.message,
            format!(
                "decoding this 1024x1024 JPEG's 491 scans is {} pixels of work, over the {} left of what \
                 --max-pixels 1048576 and the input's {} bytes allow (1048576 + 4096 a byte; raise \
                 --max-pixels to read it)",
                491u64 << 20,
                (1u64 << 20) + 4096 * many.len() as u64,
                many.len()
            )
        );
    }

    #[test]
    fn cmyk_converts_as_opencv_does() {
        // OpenCV's integer formulas, worked by hand.
        assert_eq!(cmyk_channel(255, 255), 255);
        assert_eq!(cmyk_channel(0, 255), 1);
        assert_eq!(cmyk_channel(100, 200), 200 - 121); // 155 · 200 = 31000, >> 8 = 121
        assert_eq!(cmyk_gray(&[255, 255, 255, 255]), 255);
        assert_eq!(cmyk_gray(&[0, 0, 0, 0]), 0);
        // A CMYK JPEG (libjpeg writes the Adobe marker) decodes to the formulas over libjpeg's CMYK.
        let mut rng = fastrand::Rng::with_seed(3);
        let cmyk: Vec<u8> = (0..16 * 8 * 4).map(|_| rng.u8(..)).collect();
        let mut c = mozjpeg::Compress::new(ColorSpace::JCS_CMYK);
        c.set_size(16, 8);
        let mut started = c.start_compress(Vec::new()).unwrap();
        started.write_scanlines(&cmyk).unwrap();
        let jpeg = started.finish().unwrap();
        let mut raw =
            mozjpeg::Decompress::new_mem(&jpeg).unwrap().to_colorspace(ColorSpace::JCS_CMYK).unwrap();
        let raw: Vec<u8> = raw.read_scanlines().unwrap();
        let Canvas::Gray8(gray) = decoded(&jpeg, Target::Gray).unwrap().canvas else { panic!() };
        let Canvas::Rgb8(rgb) = decoded(&jpeg, Target::Rgb8).unwrap().canvas else { panic!() };
        for (i, p) in raw.chunks_exact(4).enumerate() {
            assert_eq!(gray[i], cmyk_gray(p));
            assert_eq!(rgb[3 * i..3 * i + 3], [0, 1, 2].map(|k| cmyk_channel(p[k], p[3])));
        }
    }
}
