//! TIFF: where a file ends in a stream, its pages, and decoding one strip or tile at a time.
//!
//! A TIFF does not end with a marker: its directories (IFDs) point at data anywhere in the file.
//! The walk follows every directory (the chain of pages, and the sub-directories of SubIFDs, Exif,
//! GPS and Interoperability) and takes the file to the end of the furthest thing referenced:
//! directories, out-of-line values, strips and tiles. Bytes after that are the next frame; bytes a
//! TIFF keeps there without referencing them are not, and are named as following the TIFF.
//! Each page of the main chain is a frame of its own.
//!
//! Before the `tiff` crate parses a directory, its size is known from the walk; before a page is
//! decoded, each strip or tile must be able to expand to its pixels from its stored bytes (at most
//! 64:1 for PackBits, 3641:1 for LZW, 9-bit codes of at most 4096 bytes, 1032:1 for Deflate and
//! 2048:1 for JPEG; one bit a row for CCITT Group 4), and the page's peak memory must fit the
//! budget: the frame, one strip or tile of every plane, the decoder's tables.

use std::collections::{HashMap, HashSet};
use std::io::{Cursor, Read, Seek};

use tiff::decoder::{ChunkType, Decoder, Limits, TiffCodingUnit};
use tiff::tags::{CompressionMethod, PlanarConfiguration, SampleFormat, Tag};
use tiff::ColorType;

use super::source::Source;
use super::{guarded, jpeg, library_error, Canvas, Encoded, Layout, Order, Picture, Target, WalkError};
use crate::budget::Budget;
use crate::{Frame, FrameError};

/// Directories a walk follows at most; entries in all of them at most.
const MAX_DIRECTORIES: usize = 1 << 16;
const MAX_ENTRIES: u64 = 1 << 20;

/// Bytes the `tiff` crate keeps for a directory entry (a map node) and for a value it reads (an
/// enum of 32 bytes, and what it is converted to).
const ENTRY_MEMORY: u64 = 128;
const VALUE_MEMORY: u64 = 48;

/// The tags the `tiff` crate reads to set up a page; it must not find text in any of them.
const SETUP_TAGS: [u64; 19] =
    [256, 257, 258, 259, 262, 273, 277, 278, 279, 284, 317, 322, 323, 324, 325, 338, 339, 347, 530];

/// What the walk over one TIFF found.
#[derive(Debug)]
pub(crate) struct TiffWalk {
    /// For each page (directory of the main chain): memory the `tiff` crate takes to parse it.
    pages: Vec<u64>,
}

/// Reads integers of the file's byte order from the walked bytes.
#[derive(Clone, Copy)]
struct Endian {
    little: bool,
}

impl Endian {
    fn u16(self, b: &[u8], at: usize) -> u64 {
        let v = [b[at], b[at + 1]];
        (if self.little { u16::from_le_bytes(v) } else { u16::from_be_bytes(v) }) as u64
    }

    fn u32(self, b: &[u8], at: usize) -> u64 {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        (if self.little { u32::from_le_bytes(v) } else { u32::from_be_bytes(v) }) as u64
    }

    fn u64(self, b: &[u8], at: usize) -> u64 {
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[at..at + 8]);
        if self.little {
            u64::from_le_bytes(v)
        } else {
            u64::from_be_bytes(v)
        }
    }
}

/// Bytes of one value of a TIFF field type; `None` for types the `tiff` crate skips.
fn type_size(kind: u64) -> Option<u64> {
    Some(match kind {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

/// Where an entry's values are, once the walk has made them available.
#[derive(Clone, Copy)]
struct Field {
    tag: u64,
    kind: u64,
    count: u64,
    at: usize,
}

struct Walker<'s, S> {
    src: &'s mut S,
    endian: Endian,
    big: bool,
    entries: u64,
    seen: HashSet<u64>,
}

impl<S: Source> Walker<'_, S> {
    fn want(&mut self, end: u64, what: &str) -> Result<(), WalkError> {
        let end = usize::try_from(end)
            .map_err(|_| WalkError::Invalid(format!("bad TIFF: {what} beyond any input")))?;
        if !self.src.want(end)? {
            return Err(WalkError::Ended(format!("TIFF: {what} is past the end of the input")));
        }
        Ok(())
    }

    /// Value `i` of an unsigned integer field.
    fn value(&self, f: Field, i: u64) -> u64 {
        let b = self.src.got();
        let at = f.at + (i * type_size(f.kind).unwrap_or(0)) as usize;
        match f.kind {
            1 | 7 => b[at] as u64,
            3 => self.endian.u16(b, at),
            4 | 13 => self.endian.u32(b, at),
            16 | 18 => self.endian.u64(b, at),
            _ => 0,
        }
    }

    /// Walks the directory at `offset`: its entries, their values, the data they reference.
    /// Returns the next directory's offset (0 at the end) and the memory it costs to parse.
    fn directory(&mut self, offset: u64, pending: &mut Vec<u64>) -> Result<(u64, u64), WalkError> {
        if self.seen.len() >= MAX_DIRECTORIES {
            return Err(WalkError::Invalid(format!("bad TIFF: more than {MAX_DIRECTORIES} directories")));
        }
        let (count_size, entry_size, next_size) = if self.big { (8, 20, 8) } else { (2, 12, 4) };
        self.want(offset.saturating_add(count_size), "a directory")?;
        let n = if self.big {
            self.endian.u64(self.src.got(), offset as usize)
        } else {
            self.endian.u16(self.src.got(), offset as usize)
        };
        self.entries = self.entries.saturating_add(n);
        if self.entries > MAX_ENTRIES {
            return Err(WalkError::Invalid(format!("bad TIFF: more than {MAX_ENTRIES} directory entries")));
        }
        let end = offset + count_size + n * entry_size;
        self.want(end + next_size, "a directory")?;
        let mut fields = Vec::new();
        let mut setup = n * ENTRY_MEMORY;
        for e in 0..n {
            let at = (offset + count_size + e * entry_size) as usize;
            let b = self.src.got();
            let tag = self.endian.u16(b, at);
            let kind = self.endian.u16(b, at + 2);
            let count = if self.big { self.endian.u64(b, at + 4) } else { self.endian.u32(b, at + 4) };
            let value_at = at + if self.big { 12 } else { 8 };
            let Some(size) = type_size(kind) else { continue };
            let bytes = count
                .checked_mul(size)
                .ok_or_else(|| WalkError::Invalid(format!("bad TIFF: tag {tag} has too many values")))?;
            let at = if bytes <= if self.big { 8 } else { 4 } {
                value_at as u64
            } else {
                let off = if self.big { self.endian.u64(b, value_at) } else { self.endian.u32(b, value_at) };
                self.want(off.saturating_add(bytes), &format!("the data of tag {tag}"))?;
                off
            };
            if SETUP_TAGS.contains(&tag) {
                if kind == 2 {
                    return Err(WalkError::Invalid(format!("bad TIFF: tag {tag} holds text")));
                }
                setup += count * VALUE_MEMORY;
            }
            fields.push(Field { tag, kind, count, at: at as usize });
        }
        let next = if self.big {
            self.endian.u64(self.src.got(), end as usize)
        } else {
            self.endian.u32(self.src.got(), end as usize)
        };
        // Data referenced as offsets and byte counts: strips, tiles, free space, an old-style JPEG.
        for (offsets, counts) in [(273, 279), (324, 325), (288, 289), (513, 514)] {
            let find = |tag| fields.iter().copied().find(|f| f.tag == tag && matches!(f.kind, 3 | 4 | 16));
            if let (Some(o), Some(c)) = (find(offsets), find(counts)) {
                for i in 0..o.count.min(c.count) {
                    let end = self.value(o, i).saturating_add(self.value(c, i));
                    self.want(end, "a strip or tile")?;
                }
            }
        }
        // Directories referenced from this one: SubIFDs, Exif, GPS, Interoperability.
        for f in fields.iter().filter(|f| matches!(f.tag, 330 | 34665 | 34853 | 40965)) {
            if matches!(f.kind, 4 | 13 | 16 | 18) {
                pending.extend((0..f.count.min(1 << 10)).map(|i| self.value(*f, i)));
            }
        }
        Ok((next, setup))
    }
}

/// Walks one TIFF: its header, every directory, and everything they reference.
pub(crate) fn walk(src: &mut impl Source) -> Result<TiffWalk, WalkError> {
    if !src.want(8)? {
        return Err(WalkError::Ended("TIFF header".into()));
    }
    let little = &src.got()[..2] == b"II";
    let endian = Endian { little };
    let (big, first) = match endian.u16(src.got(), 2) {
        42 => (false, endian.u32(src.got(), 4)),
        43 => {
            if !src.want(16)? {
                return Err(WalkError::Ended("TIFF header".into()));
            }
            let got = src.got();
            if endian.u16(got, 4) != 8 || endian.u16(got, 6) != 0 {
                return Err(WalkError::Invalid("bad BigTIFF header".into()));
            }
            (true, endian.u64(got, 8))
        }
        v => return Err(WalkError::Invalid(format!("bad TIFF header: version {v}"))),
    };
    let mut w = Walker { src, endian, big, entries: 0, seen: HashSet::new() };
    let mut pages = Vec::new();
    let mut pending = Vec::new();
    let mut next = first;
    while next != 0 {
        if !w.seen.insert(next) {
            return Err(WalkError::Invalid("bad TIFF: its directories form a cycle".into()));
        }
        let (after, setup) = w.directory(next, &mut pending)?;
        pages.push(setup);
        next = after;
    }
    if pages.is_empty() {
        return Err(WalkError::Invalid("bad TIFF: no image directory".into()));
    }
    while let Some(offset) = pending.pop() {
        let mut next = offset;
        while next != 0 && w.seen.insert(next) {
            next = w.directory(next, &mut pending)?.0;
        }
    }
    Ok(TiffWalk { pages })
}

/// The remaining pages of a multi-page TIFF, read one frame at a time from a copy of its bytes.
pub(crate) struct TiffPages {
    decoder: Decoder<Cursor<Vec<u8>>>,
    len: usize,
    setup: Vec<u64>,
    next: usize,
    target: Target,
    /// Pixels of the pages decoded so far: the input's work spent ([`Budget::after`]).
    spent: u64,
}

impl TiffPages {
    /// The TIFF's length in bytes, all held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The next page as a frame, or `None` after the last.
    pub fn next_page(&mut self, budget: &Budget) -> Result<Option<Frame>, FrameError> {
        let Some(&setup) = self.setup.get(self.next) else { return Ok(None) };
        self.next += 1;
        budget.check_memory("this TIFF directory", setup)?;
        let index = budget.frame;
        let budget = budget.after(self.spent);
        let decoder = &mut self.decoder;
        let picture = guarded(index, "TIFF", || {
            decoder.next_image().map_err(|e| library_error(index, Encoded::Tiff, e))?;
            decode_page(decoder, self.target, &budget, self.len)
        })?;
        self.spent = self.spent.saturating_add((picture.width * picture.height) as u64);
        Ok(Some(picture.into_frame()))
    }
}

/// Opens a TIFF at its first page, with limits that keep the `tiff` crate within the budget.
fn open<R: Read + Seek>(
    input: R,
    walk: &TiffWalk,
    len: usize,
    budget: &Budget,
) -> Result<Decoder<R>, FrameError> {
    budget.check_memory("this TIFF directory", walk.pages[0])?;
    let decoder = Decoder::new(input).map_err(|e| library_error(budget.frame, Encoded::Tiff, e))?;
    // Values lie within the file (the walk checked), so no text value is longer than it and the
    // crate's limit on text is never reached.
    let values = len.max(usize::try_from(budget.bytes / 4).unwrap_or(usize::MAX));
    let mut limits = Limits::unlimited();
    limits.decoding_buffer_size = values;
    limits.ifd_value_size = values;
    limits.intermediate_buffer_size = len;
    Ok(decoder.with_limits(limits))
}

/// Decodes the first page of a walked TIFF (exactly its bytes); for a multi-page one, also the
/// decoder of its other pages, over a copy of its bytes.
pub(crate) fn decode_first(
    bytes: &[u8],
    walk: &TiffWalk,
    target: Target,
    budget: &Budget,
) -> Result<(Picture, Option<TiffPages>), FrameError> {
    let index = budget.frame;
    let len = bytes.len();
    if walk.pages.len() == 1 || target == Target::Rgb8 {
        let picture = guarded(index, "TIFF", || {
            let mut decoder = open(Cursor::new(bytes), walk, len, budget)?;
            decode_page(&mut decoder, target, budget, len)
        })?;
        return Ok((picture, None));
    }
    let held = Budget::new(index, budget.max_pixels, len, len);
    let copy = bytes.to_vec();
    guarded(index, "TIFF", || {
        let mut decoder = open(Cursor::new(copy), walk, len, &held)?;
        let picture = decode_page(&mut decoder, target, &held, len)?;
        let spent = (picture.width * picture.height) as u64;
        Ok((picture, Some(TiffPages { decoder, len, setup: walk.pages.clone(), next: 1, target, spent })))
    })
}

/// How a page's samples become a layout the canvas takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Samples {
    /// Handed over as they are.
    As(Layout),
    /// 1-bit gray, each bit 0 or 255 (as `image` expands it).
    Bilevel,
    /// CMYK at 8 or 16 bits, converted to RGB as `image` converts it.
    Cmyk8,
    Cmyk16,
    /// Signed 16-bit integers (SampleFormat 2), each the float32 of its value (all are exact),
    /// in the float layout of their channels: as `cv2.imread` and `tifffile` give them, as
    /// numbers (an `int16` array), the tools that take float frames take them.
    Signed16(Layout),
}

impl Samples {
    fn of(colour: ColorType) -> Option<Samples> {
        Some(match colour {
            ColorType::Gray(1) => Samples::Bilevel,
            ColorType::Gray(8) => Samples::As(Layout::L8),
            ColorType::Gray(16) => Samples::As(Layout::L16),
            ColorType::GrayA(8) => Samples::As(Layout::La8),
            ColorType::GrayA(16) => Samples::As(Layout::La16),
            ColorType::RGB(8) => Samples::As(Layout::Rgb8),
            ColorType::RGB(16) => Samples::As(Layout::Rgb16),
            ColorType::RGBA(8) => Samples::As(Layout::Rgba8),
            ColorType::RGBA(16) => Samples::As(Layout::Rgba16),
            ColorType::CMYK(8) => Samples::Cmyk8,
            ColorType::CMYK(16) => Samples::Cmyk16,
            ColorType::Gray(32) => Samples::As(Layout::L32F),
            ColorType::GrayA(32) => Samples::As(Layout::La32F),
            ColorType::RGB(32) => Samples::As(Layout::Rgb32F),
            ColorType::RGBA(32) => Samples::As(Layout::Rgba32F),
            _ => return None,
        })
    }

    /// The samples of 16-bit integers read as signed, for layouts that have them.
    fn signed(self) -> Option<Samples> {
        Some(Samples::Signed16(match self {
            Samples::As(Layout::L16) => Layout::L32F,
            Samples::As(Layout::La16) => Layout::La32F,
            Samples::As(Layout::Rgb16) => Layout::Rgb32F,
            Samples::As(Layout::Rgba16) => Layout::Rgba32F,
            _ => return None,
        }))
    }

    /// The layout rows are put into the canvas in.
    fn layout(self) -> Layout {
        match self {
            Samples::As(l) | Samples::Signed16(l) => l,
            Samples::Bilevel => Layout::L8,
            Samples::Cmyk8 => Layout::Rgb8,
            Samples::Cmyk16 => Layout::Rgb16,
        }
    }

    /// Bits of one pixel as stored, all samples.
    fn stored_bits(self) -> u64 {
        match self {
            Samples::Bilevel => 1,
            Samples::Cmyk8 => 32,
            Samples::Cmyk16 => 64,
            Samples::Signed16(l) => 16 * l.channels() as u64,
            Samples::As(l) => 8 * l.pixel_bytes() as u64,
        }
    }

    fn channels(self) -> u64 {
        match self {
            Samples::Bilevel => 1,
            Samples::Cmyk8 | Samples::Cmyk16 => 4,
            Samples::As(l) | Samples::Signed16(l) => l.channels() as u64,
        }
    }

    /// Converts a row of a strip or tile, from `data` (its first byte; for planar samples, in
    /// the first plane, the others `plane` bytes on), into `out`, in the layout rows go into the
    /// canvas in.
    fn convert_row(self, data: &[u8], plane: usize, planar: bool, out: &mut [u8]) {
        match self {
            Samples::Bilevel => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = (data[k / 8] >> (7 - k % 8) & 1) * 255;
                }
            }
            Samples::Cmyk8 => {
                for (k, o) in out.chunks_exact_mut(3).enumerate() {
                    o.copy_from_slice(&cmyk_to_rgb(&data[4 * k..4 * k + 4]));
                }
            }
            Samples::Cmyk16 => {
                for (k, o) in out.chunks_exact_mut(6).enumerate() {
                    let s = |c: usize| u16::from_ne_bytes([data[8 * k + 2 * c], data[8 * k + 2 * c + 1]]);
                    let rgb = cmyk16_to_rgb([s(0), s(1), s(2), s(3)]);
                    for (c, v) in rgb.iter().enumerate() {
                        o[2 * c..2 * c + 2].copy_from_slice(&v.to_ne_bytes());
                    }
                }
            }
            Samples::Signed16(l) => {
                let ch = l.channels();
                for (k, o) in out.chunks_exact_mut(4).enumerate() {
                    let at = if planar { k % ch * plane + k / ch * 2 } else { 2 * k };
                    let v = i16::from_ne_bytes([data[at], data[at + 1]]) as f32;
                    o.copy_from_slice(&v.to_ne_bytes());
                }
            }
            Samples::As(l) if planar => {
                let sb = l.sample_bytes();
                for (k, o) in out.chunks_exact_mut(l.pixel_bytes()).enumerate() {
                    for c in 0..l.channels() {
                        let at = c * plane + k * sb;
                        o[c * sb..(c + 1) * sb].copy_from_slice(&data[at..at + sb]);
                    }
                }
            }
            Samples::As(_) => out.copy_from_slice(&data[..out.len()]),
        }
    }
}

/// The most bytes a strip or tile of `compression` can give for one stored byte, if bounded by a
/// ratio; `None` for none and for methods the `tiff` crate does not decode.
fn expansion(compression: CompressionMethod) -> Option<u64> {
    match compression {
        CompressionMethod::PackBits => Some(64),
        CompressionMethod::LZW => Some(3641),
        CompressionMethod::Deflate | CompressionMethod::OldDeflate => Some(1032),
        CompressionMethod::ModernJPEG => Some(2048),
        _ => None,
    }
}

/// The `tiff` crate's errors as errors of frame `index`.
fn tiff_error(index: usize) -> impl Fn(tiff::TiffError) -> FrameError {
    move |e| library_error(index, Encoded::Tiff, e)
}

/// Decodes the page the decoder is at. The checks run in a fixed order, and all before the pixels
/// are allocated, so that a hostile file gets the same error however it is read: size and
/// colour, sample format and planes, the strips or tiles, the page's peak memory.
fn decode_page<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    target: Target,
    budget: &Budget,
    len: usize,
) -> Result<Picture, FrameError> {
    let index = budget.frame;
    let mut page = check_size_and_colour(decoder, budget)?;
    let planar = check_format_and_planes(decoder, &mut page, index)?;
    let chunks = Chunks::read(decoder, &page, planar, index)?;
    check_chunks(decoder, &chunks, len, budget)?;
    let unit_len = check_memory(decoder, &page, &chunks, target, budget)?;
    decode_chunks(decoder, &page, &chunks, target, unit_len, index)
}

/// A page's size and colour, as its directory gives them.
#[derive(Debug, Clone, Copy)]
struct Page {
    width: u32,
    height: u32,
    /// `width * height`, within `--max-pixels`.
    pixels: usize,
    /// As the `tiff` crate reads it from the photometric interpretation, the samples per pixel
    /// and the bits per sample.
    colour: ColorType,
    samples: Samples,
}

/// Checks the page's size against `--max-pixels` and its colour type against those decoded.
fn check_size_and_colour<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    budget: &Budget,
) -> Result<Page, FrameError> {
    let index = budget.frame;
    let (width, height) = decoder.dimensions().map_err(tiff_error(index))?;
    let pixels = budget.check_pixels(width as u64, height as u64)? as usize;
    // Pages may all point at one strip: each is decoded from the input's own bytes, so their
    // pixels in all count against its work.
    budget.check_work(&format!("this {width}x{height} TIFF page"), pixels as u64)?;
    let colour = decoder.colortype().map_err(tiff_error(index))?;
    let samples = Samples::of(colour).ok_or_else(|| {
        FrameError::invalid(index, format!("bad TIFF image: colour type {colour:?} is not supported"))
    })?;
    Ok(Page { width, height, pixels, colour, samples })
}

/// Checks the page's sample formats and planar configuration, making its samples signed where
/// they are; returns whether its samples are planar (each in a plane of its own).
fn check_format_and_planes<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    page: &mut Page,
    index: usize,
) -> Result<bool, FrameError> {
    let lib = tiff_error(index);
    let float = page.samples.layout().sample_bytes() == 4;
    let signed = page.samples.signed();
    // As `image`: unsigned integers of 16 bits at most, or 32-bit floats; and signed 16-bit
    // integers, as OpenCV reads them (CV_16S).
    let formats = decoder.find_tag_unsigned_vec::<u16>(Tag::SampleFormat).map_err(&lib)?.unwrap_or_default();
    // The `tiff` crate refuses a page whose samples' formats differ.
    for format in formats {
        match (SampleFormat::from_u16_exhaustive(format), float, signed) {
            (SampleFormat::Uint, false, _) | (SampleFormat::IEEEFP, true, _) => {}
            (SampleFormat::Int, false, Some(samples)) => page.samples = samples,
            _ => {
                return Err(FrameError::invalid(
                    index,
                    format!("bad TIFF image: sample format {format} of {:?} is not supported", page.colour),
                ))
            }
        }
    }
    let planar = decoder
        .find_tag_unsigned::<u16>(Tag::PlanarConfiguration)
        .map_err(&lib)?
        .and_then(PlanarConfiguration::from_u16)
        == Some(PlanarConfiguration::Planar);
    if planar && matches!(page.samples, Samples::Cmyk8 | Samples::Cmyk16) {
        return Err(FrameError::invalid(index, "bad TIFF image: planar CMYK is not supported"));
    }
    Ok(planar)
}

/// How a page's pixels are stored: a grid of strips or tiles (one grid a plane when planar),
/// their stored bytes and their compression.
struct Chunks {
    /// Pixels of a strip or tile, at least 1 each way.
    width: u64,
    height: u64,
    /// The page's pixels, for the strips and tiles at its edges.
    page_width: u64,
    page_height: u64,
    /// Strips or tiles across and down a plane.
    across: u64,
    down: u64,
    planar: bool,
    /// Bits of one pixel as stored in one plane.
    plane_bits: u64,
    /// Stored bytes of each strip or tile, as the directory gives them.
    counts: Vec<u64>,
    compression: CompressionMethod,
    /// Strips or tiles checked: those of every plane that have a byte count.
    checked: u64,
}

impl Chunks {
    fn read<T: AsRef<[u8]>>(
        decoder: &mut Decoder<Cursor<T>>,
        page: &Page,
        planar: bool,
        index: usize,
    ) -> Result<Chunks, FrameError> {
        let lib = tiff_error(index);
        let (cw, ch) = decoder.chunk_dimensions();
        let (width, height) = (cw.max(1) as u64, ch.max(1) as u64);
        let (page_width, page_height) = (page.width as u64, page.height as u64);
        let (across, down) = (page_width.div_ceil(width), page_height.div_ceil(height));
        let planes = if planar { page.samples.channels() } else { 1 };
        let counts_tag = match decoder.get_chunk_type() {
            ChunkType::Strip => Tag::StripByteCounts,
            ChunkType::Tile => Tag::TileByteCounts,
        };
        let counts = decoder.find_tag_unsigned_vec::<u64>(counts_tag).map_err(&lib)?.unwrap_or_default();
        let compression = decoder
            .find_tag_unsigned::<u16>(Tag::Compression)
            .map_err(&lib)?
            .map_or(CompressionMethod::None, CompressionMethod::from_u16_exhaustive);
        Ok(Chunks {
            width,
            height,
            page_width,
            page_height,
            across,
            down,
            planar,
            plane_bits: page.samples.stored_bits() / planes,
            checked: (across * down * planes).min(counts.len() as u64),
            counts,
            compression,
        })
    }

    /// Bytes of strip or tile `i`'s data as stored in one plane; the data of the last strip or of
    /// edge tiles is cut to the page.
    fn stored(&self, i: u64) -> u64 {
        let (x, y) = (i % self.across, i / self.across % self.down);
        let dw = self.width.min(self.page_width - x * self.width);
        let dh = self.height.min(self.page_height - y * self.height);
        dh * (dw * self.plane_bits).div_ceil(8)
    }

    fn too_small(&self, i: u64, least: u64, index: usize) -> FrameError {
        FrameError::invalid(
            index,
            format!(
                "bad TIFF: strip or tile {i} holds {} stored bytes, too few for its pixels (at least {least}): \
                 damaged or hostile input",
                self.counts.get(i as usize).copied().unwrap_or(0)
            ),
        )
    }
}

/// Checks the strips or tiles against the file's length and their pixels: their stored bytes
/// in all, each JPEG inside them, and each one's expansion from its stored bytes.
fn check_chunks<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    chunks: &Chunks,
    len: usize,
    budget: &Budget,
) -> Result<(), FrameError> {
    let index = budget.frame;
    // Strips and tiles may share their bytes, but not so that reading them costs more than the
    // file and its pixels: their stored bytes add up to at most the file's length and four times
    // the page's uncompressed bytes (a small JPEG strip is larger than its pixels).
    let counted: u64 =
        chunks.counts.iter().take(chunks.checked as usize).fold(0u64, |a, &c| a.saturating_add(c));
    let output: u64 = (0..chunks.checked).map(|i| chunks.stored(i)).fold(0u64, |a, s| a.saturating_add(s));
    if counted > (len as u64).saturating_add(output.saturating_mul(4)) {
        return Err(FrameError::invalid(
            index,
            format!(
                "bad TIFF: its strips or tiles hold {counted} stored bytes in all, more than its {len} bytes \
                 and four times its {output} bytes of pixels: damaged or hostile input"
            ),
        ));
    }
    if chunks.compression == CompressionMethod::ModernJPEG {
        check_jpeg_chunks(decoder, chunks, budget)?;
    }
    match chunks.compression {
        CompressionMethod::None => {
            let total: u64 = (0..chunks.checked).map(|i| chunks.stored(i)).sum();
            if total > len as u64 {
                return Err(FrameError::invalid(
                    index,
                    format!("truncated TIFF: its pixels need {total} bytes, and it has {len}"),
                ));
            }
        }
        CompressionMethod::Fax4 => {
            // CCITT Group 4 codes a row in one bit at the least.
            for i in 0..chunks.checked {
                let rows = chunks.stored(i) / (chunks.width * chunks.plane_bits).div_ceil(8).max(1);
                if rows.div_ceil(8) > chunks.counts[i as usize] {
                    return Err(chunks.too_small(i, rows.div_ceil(8), index));
                }
            }
        }
        compression => {
            if let Some(ratio) = expansion(compression) {
                for i in 0..chunks.checked {
                    if chunks.stored(i) > ratio.saturating_mul(chunks.counts[i as usize]) {
                        return Err(chunks.too_small(i, chunks.stored(i).div_ceil(ratio), index));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks the page's peak memory against the budget: the frame, a strip or tile as read (its
/// bytes are returned), a row, the byte counts, and for JPEG, zune-jpeg's buffers.
fn check_memory<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    page: &Page,
    chunks: &Chunks,
    target: Target,
    budget: &Budget,
) -> Result<usize, FrameError> {
    let layout = page.samples.layout();
    let unit = decoder.image_coding_unit_layout(TiffCodingUnit(0)).map_err(tiff_error(budget.frame))?;
    let unit_len = unit.complete_len.max(unit.len) as u64;
    let row_pixels = chunks.width as usize;
    let mut need =
        (page.pixels * layout.target_bytes(target)) as u64 + unit_len + 16 * chunks.counts.len() as u64;
    need += (row_pixels * layout.pixel_bytes()) as u64 + (256 << 10);
    if chunks.compression == CompressionMethod::ModernJPEG {
        // zune-jpeg inside the tiff crate: the stored chunk, its output and planes, its rows.
        need += chunks.counts.iter().copied().max().unwrap_or(0) + 4 * unit_len + 512 * chunks.width;
    }
    budget.check_memory(&format!("this {}x{} TIFF", page.width, page.height), need)?;
    Ok(unit_len as usize)
}

/// Decodes the checked page, a strip or tile at a time into a buffer of `unit_len` bytes.
fn decode_chunks<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    page: &Page,
    chunks: &Chunks,
    target: Target,
    unit_len: usize,
    index: usize,
) -> Result<Picture, FrameError> {
    let lib = tiff_error(index);
    let layout = page.samples.layout();
    let (w, cw, ch) = (page.width as usize, chunks.width, chunks.height);
    let mut canvas = Canvas::new(target, layout, page.pixels);
    let mut buffer = vec![0u8; unit_len];
    let mut row = vec![0u8; cw as usize * layout.pixel_bytes()];
    for i in 0..(chunks.across * chunks.down) as u32 {
        let unit = decoder.image_coding_unit_layout(TiffCodingUnit(i)).map_err(&lib)?;
        let size = unit.complete_len.max(unit.len);
        let buf = buffer
            .get_mut(..size)
            .ok_or_else(|| FrameError::invalid(index, "bad TIFF: a chunk larger than the first"))?;
        decoder.read_coding_unit_bytes(TiffCodingUnit(i), buf).map_err(&lib)?;
        let (dw, dh) = decoder.chunk_data_dimensions(i);
        let (x0, y0) = ((i as u64 % chunks.across * cw) as usize, (i as u64 / chunks.across * ch) as usize);
        let stride = unit.row_stride.map_or(0, |s| s.get());
        let plane = unit.plane_stride.map_or(0, |s| s.get());
        for r in 0..dh as usize {
            let y = y0 + r;
            let data = &buf[r * stride..];
            let out = &mut row[..dw as usize * layout.pixel_bytes()];
            page.samples.convert_row(data, plane, chunks.planar, out);
            canvas.put(layout, Order::Native, out, |k| y * w + x0 + k);
        }
    }
    Ok(Picture { width: w, height: page.height as usize, canvas, maxval: None })
}

/// Checks the JPEG of each strip or tile checked as the `tiff` crate will hand it to zune-jpeg
/// (the JPEGTables without their EOI marker, then the chunk without its SOI marker): see
/// [`jpeg::check_nested`]. Chunks at the same bytes are checked once.
fn check_jpeg_chunks<T: AsRef<[u8]>>(
    decoder: &mut Decoder<Cursor<T>>,
    chunks: &Chunks,
    budget: &Budget,
) -> Result<(), FrameError> {
    let index = budget.frame;
    let lib = tiff_error(index);
    let offsets_tag = match decoder.get_chunk_type() {
        ChunkType::Strip => Tag::StripOffsets,
        ChunkType::Tile => Tag::TileOffsets,
    };
    let offsets = decoder.find_tag_unsigned_vec::<u64>(offsets_tag).map_err(&lib)?.unwrap_or_default();
    let counts = &chunks.counts;
    let tables = match decoder.find_tag(Tag::JPEGTables).map_err(&lib)? {
        Some(v) => Some(v.into_u8_vec().map_err(&lib)?),
        None => None,
    };
    let file = decoder.inner().get_ref().as_ref();
    // Each strip or tile's JPEG, checked once however many point at it, and its scans' work.
    let mut seen = HashMap::new();
    let mut jpeg = Vec::new();
    let mut work = 0u64;
    for i in 0..chunks.checked as usize {
        let (Some(&at), Some(&count)) = (offsets.get(i), counts.get(i)) else { break };
        if let Some(&w) = seen.get(&(at, count)) {
            work = work.saturating_add(w);
            continue;
        }
        let Some(data) = usize::try_from(at)
            .ok()
            .zip(usize::try_from(count).ok())
            .and_then(|(at, count)| file.get(at..at.checked_add(count)?))
        else {
            // The tiff crate fails on it when it gets there.
            continue;
        };
        let data = match &tables {
            Some(t) => {
                jpeg.clear();
                jpeg.extend_from_slice(&t[..t.len().saturating_sub(2)]);
                jpeg.extend_from_slice(data.get(2..).unwrap_or_default());
                &jpeg[..]
            }
            None => data,
        };
        let w = jpeg::check_nested(data, chunks.width, chunks.height, budget)
            .map_err(|m| FrameError::invalid(index, format!("bad TIFF: strip or tile {i} holds {m}")))?;
        seen.insert((at, count), w);
        work = work.saturating_add(w);
    }
    let what = format!("the JPEG scans of this {}x{} TIFF page", chunks.page_width, chunks.page_height);
    budget.check_work(&what, work)
}

/// CMYK to RGB as `image` converts it, truncating.
fn cmyk_to_rgb(cmyk: &[u8]) -> [u8; 3] {
    let k = 1.0 - cmyk[3] as f32 / 255.0;
    [
        ((255.0 - cmyk[0] as f32) * k) as u8,
        ((255.0 - cmyk[1] as f32) * k) as u8,
        ((255.0 - cmyk[2] as f32) * k) as u8,
    ]
}

fn cmyk16_to_rgb(cmyk: [u16; 4]) -> [u16; 3] {
    let k = 1.0 - cmyk[3] as f32 / 65535.0;
    [
        ((65535.0 - cmyk[0] as f32) * k) as u16,
        ((65535.0 - cmyk[1] as f32) * k) as u16,
        ((65535.0 - cmyk[2] as f32) * k) as u16,
    ]
}

#[cfg(test)]
mod tests {
    use crate::{Channels, Frame, FrameReader, Pixels, ReadOptions};

    fn read_all(bytes: &[u8], gray: bool) -> Result<Vec<Frame>, String> {
        let mut r = FrameReader::new(bytes, ReadOptions { gray, ..Default::default() });
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().map_err(|e| e.message)? {
            out.push(f);
        }
        Ok(out)
    }

    /// A little-endian TIFF of 16-bit samples, uncompressed, one strip a plane: `format` its
    /// SampleFormat for every sample, `planar` its samples in planes (`samples` plane by plane).
    fn tiff16(w: u32, h: u32, spp: u16, format: u16, planar: bool, samples: &[i16]) -> Vec<u8> {
        let data: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
        let planes = if planar { spp as u32 } else { 1 };
        let plane = data.len() as u32 / planes;
        let shorts = |v: u16| vec![v; spp as usize];
        let alpha = spp % 2 == 0;
        let count = 11 + alpha as u32;
        let mut blobs: Vec<u8> = Vec::new();
        let blobs_at = 8 + 2 + 12 * count + 4;
        // A field's value: in the entry when it fits in 4 bytes, else among the blobs.
        let mut value = |bytes: Vec<u8>| -> u32 {
            if bytes.len() <= 4 {
                let mut v = [0u8; 4];
                v[..bytes.len()].copy_from_slice(&bytes);
                return u32::from_le_bytes(v);
            }
            blobs.extend(&bytes);
            blobs_at + (blobs.len() - bytes.len()) as u32
        };
        let le16 = |v: Vec<u16>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let le32 = |v: Vec<u32>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let data_at = blobs_at + 4 * 1024;
        let mut fields = vec![
            (256, 4, 1, value(le32(vec![w]))),
            (257, 4, 1, value(le32(vec![h]))),
            (258, 3, spp as u32, value(le16(shorts(16)))),
            (259, 3, 1, 1),
            (262, 3, 1, if spp >= 3 { 2 } else { 1 }),
            (273, 4, planes, value(le32((0..planes).map(|p| data_at + p * plane).collect()))),
            (277, 3, 1, spp as u32),
            (278, 4, 1, h),
            (279, 4, planes, value(le32(vec![plane; planes as usize]))),
            (284, 3, 1, if planar { 2 } else { 1 }),
            (339, 3, spp as u32, value(le16(shorts(format)))),
        ];
        if alpha {
            // ExtraSamples: unassociated alpha.
            fields.insert(10, (338, 3, 1, 2));
        }
        let mut out = b"II*\0\x08\0\0\0".to_vec();
        out.extend((count as u16).to_le_bytes());
        for (tag, kind, n, v) in fields {
            out.extend((tag as u16).to_le_bytes());
            out.extend((kind as u16).to_le_bytes());
            out.extend(n.to_le_bytes());
            out.extend(v.to_le_bytes());
        }
        out.extend(0u32.to_le_bytes());
        out.extend(blobs);
        out.resize(data_at as usize, 0);
        out.extend(data);
        out
    }

    const VALUES: [i16; 6] = [-32768, -5, 0, 7, 32767, -1];

    fn floats(v: &[i16]) -> Pixels {
        Pixels::F32(v.iter().map(|&s| s as f32).collect::<Vec<f32>>().into())
    }

    /// Signed 16-bit samples (SampleFormat 2) are float32 of their values, gray or colour, chunky
    /// or planar, by hand and as the `tiff` crate writes them (LZW with the horizontal predictor,
    /// whose differences wrap); unsigned ones stay 16-bit.
    #[test]
    fn signed_16_bit_samples_are_their_values() {
        let gray = read_all(&tiff16(3, 2, 1, 2, false, &VALUES), false).unwrap();
        assert_eq!(
            (gray[0].channels, gray[0].maxval, &gray[0].pixels),
            (Channels::Gray, 1, &floats(&VALUES))
        );
        let rgb = [1i16, -2, 3, -400, 500, -32768];
        let chunky = read_all(&tiff16(2, 1, 3, 2, false, &rgb), false).unwrap();
        assert_eq!((chunky[0].channels, &chunky[0].pixels), (Channels::Rgb, &floats(&rgb)));
        // Planes R, G, B of the same two pixels.
        let planes = [1i16, -400, -2, 500, 3, -32768];
        let planar = read_all(&tiff16(2, 1, 3, 2, true, &planes), false).unwrap();
        assert_eq!(planar[0].pixels, chunky[0].pixels);
        let rgba = [VALUES, [9, -9, 99, -99, 999, -999]].concat();
        let alpha = read_all(&tiff16(3, 1, 4, 2, false, &rgba), false).unwrap();
        assert_eq!((alpha[0].channels, &alpha[0].pixels), (Channels::RgbAlpha, &floats(&rgba)));
        let unsigned = read_all(&tiff16(3, 2, 1, 1, false, &VALUES), false).unwrap();
        let want: Vec<u16> = VALUES.iter().map(|&v| v as u16).collect();
        assert_eq!(unsigned[0].pixels, Pixels::U16(want.into()));

        use tiff::encoder::{colortype::GrayI16, Compression, Predictor, TiffEncoder};
        let ramp: Vec<i16> = (0..64 * 8).map(|i| (i as i16).wrapping_mul(977) ^ -3).collect();
        let mut bytes = Vec::new();
        let mut enc = TiffEncoder::new(std::io::Cursor::new(&mut bytes))
            .unwrap()
            .with_compression(Compression::Lzw)
            .with_predictor(Predictor::Horizontal);
        enc.write_image::<GrayI16>(64, 8, &ramp).unwrap();
        let f = read_all(&bytes, false).unwrap();
        assert_eq!((f[0].width, f[0].height, &f[0].pixels), (64, 8, &floats(&ramp)));
    }

    #[test]
    fn signed_samples_other_than_16_bit_are_refused() {
        let mut eight = tiff16(3, 2, 1, 2, false, &VALUES);
        // BitsPerSample 8: the third entry's value, after the header, the count and two entries.
        eight[8 + 2 + 2 * 12 + 8] = 8;
        let e = read_all(&eight, false).unwrap_err();
        assert_eq!(e, "bad TIFF image: sample format 2 of Gray(8) is not supported");
    }
}
