use std::borrow::Cow;
use std::io::{self, BufRead};

use crate::budget::Budget;
use crate::colour;
use crate::decode::source::{ReadSource, SliceSource, Source as _};
use crate::decode::{self, Encoded, Target, TiffPages, WalkError};
use crate::float::{self, FloatFormat, Raster};
use crate::pnm::{bit_sample, read_full, shown, AsciiBits, AsciiSamples, Header, HeaderCursor};
use crate::samples::{Filling, NoMemory};
use crate::{Channels, Depth, Format, Frame, FrameError, FrameErrorKind, Pixels, SampleMemory, Samples};

/// Colour binary rasters read as gray are read in pieces of this many bytes (a multiple of 6 and
/// of 8: whole pixels of 3 or 4 samples at 8 and at 16 bits) and converted at once: only the gray
/// frame is held whole. Packed PBM rasters are read in pieces of the same size.
const COLOUR_PIECE: usize = 24 << 12;

/// The samples of the eight pixels of each PBM byte, the first in the high bit ([`bit_sample`]).
const BIT_SAMPLES: [[u8; 8]; 256] = {
    let mut table = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            table[b][k] = bit_sample((b >> (7 - k)) as u8);
            k += 1;
        }
        b += 1;
    }
    table
};

/// The default `--max-pixels`: 2^30 samples (1 GiB at 8 bits), far above any camera frame.
pub const DEFAULT_MAX_PIXELS: u64 = 1 << 30;

/// Headerless raw frames: `width x height` samples, 8-bit or 16-bit little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSpec {
    pub width: usize,
    pub height: usize,
    pub depth: Depth,
}

impl RawSpec {
    /// Parses `WxH` (8-bit) or `WxH:16` (16-bit little-endian), as `--raw` takes it.
    pub fn parse(text: &str) -> Result<RawSpec, String> {
        let (size, depth) = match text.split_once(':') {
            None => (text, Depth::U8),
            Some((size, "8")) => (size, Depth::U8),
            Some((size, "16")) => (size, Depth::U16),
            Some((_, bits)) => return Err(format!("bad sample width '{bits}' (8 or 16)")),
        };
        let (width, height) = parse_size(size)?;
        Ok(RawSpec { width, height, depth })
    }
}

/// Parses `WxH`, both positive decimal numbers.
pub fn parse_size(text: &str) -> Result<(usize, usize), String> {
    let bad = || format!("bad size '{text}' (expected WxH, e.g. 640x480)");
    let (w, h) = text.split_once('x').ok_or_else(bad)?;
    let num = |s: &str| -> Result<usize, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match s.parse::<usize>() {
            Ok(0) => Err(format!("bad size '{text}': width and height must be positive")),
            Ok(v) if v <= u32::MAX as usize => Ok(v),
            _ => Err(format!("bad size '{text}': too large")),
        }
    };
    Ok((num(w)?, num(h)?))
}

/// How to read a stream.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Headerless frames of this shape instead of self-describing ones.
    pub raw: Option<RawSpec>,
    /// Frames with more samples than this are refused before anything is allocated.
    pub max_pixels: u64,
    /// Colour images become gray as they are read, alpha dropped: a JPEG's own luma, as libjpeg
    /// decodes it to gray (`cv2.imread(IMREAD_GRAYSCALE)`), anything else by OpenCV's
    /// `cvtColor(BGR2GRAY)` ([`crate::colour`]). Otherwise frames keep their channels.
    pub gray: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { raw: None, max_pixels: DEFAULT_MAX_PIXELS, gray: false }
    }
}

/// Reads the frames of a stream one at a time, in order, holding at most one frame.
pub struct FrameReader<R> {
    input: R,
    options: ReadOptions,
    /// Where binary rasters are read into.
    memory: SampleMemory,
    /// Frames returned so far.
    count: usize,
    /// The pages after the first of a multi-page TIFF, each a frame of its own.
    pages: Option<TiffPages>,
    /// The container of the last frame, when it was decoded by a library: bytes after it that are
    /// no frame are named as following it.
    after: Option<(usize, Encoded)>,
    /// How many bytes the input holds beyond what it has handed out, where that is known.
    unread: Option<Unread>,
}

/// Says how many bytes an input still holds beyond those it has handed out (a regular file's
/// rest, read from the file itself); `None` where that cannot be known (a pipe). A frame whose
/// raster the input is known to hold whole gets its memory at once rather than as its bytes come.
pub type Unread = Box<dyn FnMut() -> Option<u64> + Send>;

impl<R: BufRead> FrameReader<R> {
    pub fn new(input: R, options: ReadOptions) -> Self {
        FrameReader {
            input,
            options,
            memory: SampleMemory::default(),
            count: 0,
            pages: None,
            after: None,
            unread: None,
        }
    }

    /// Tells the reader how to learn how many bytes its input holds beyond those handed out.
    pub fn with_unread(mut self, unread: Unread) -> Self {
        self.unread = Some(unread);
        self
    }

    /// Reads binary rasters into `memory` (page-locked memory once a GPU lends it) instead of
    /// the heap.
    pub fn with_memory(mut self, memory: SampleMemory) -> Self {
        self.memory = memory;
        self
    }

    /// The stream being read, for what it counts (reading from it directly loses frames).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.input
    }

    /// The number of the next frame, counting from 1.
    pub fn next_index(&self) -> usize {
        self.count + 1
    }

    /// The next frame, or `None` at the end of a stream that held at least one frame.
    /// An empty stream is an error: no filter has anything to do with it.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let index = self.next_index();
        let frame = match self.options.raw {
            Some(spec) => self.raw_frame(index, spec)?,
            None => self.described_frame(index)?,
        };
        match frame {
            Some(f) => {
                self.count += 1;
                Ok(Some(f))
            }
            None if self.count == 0 => Err(FrameError::invalid(index, "empty input: no frame to read")),
            None => Ok(None),
        }
    }

    fn check_size(&self, index: usize, width: usize, height: usize) -> Result<usize, FrameError> {
        let pixels = (width as u64).checked_mul(height as u64).filter(|&n| n <= self.options.max_pixels);
        pixels.map(|n| n as usize).ok_or_else(|| FrameError {
            frame: index,
            kind: FrameErrorKind::TooLarge,
            message: format!(
                "{width}x{height} is {} pixels, over the limit of {} (--max-pixels)",
                width as u128 * height as u128,
                self.options.max_pixels
            ),
        })
    }

    fn raw_frame(&mut self, index: usize, spec: RawSpec) -> Result<Option<Frame>, FrameError> {
        let count = self.check_size(index, spec.width, spec.height)?;
        let (got, pixels) = self.binary_raster(index, spec.depth, count, false, true)?;
        if got == 0 {
            return Ok(None);
        }
        let bytes = count * spec.depth.bytes();
        if got < bytes {
            return Err(FrameError::invalid(
                index,
                format!(
                    "raw stream ends {got} bytes into a frame of {bytes} bytes: not a whole number of {}x{}{} frames",
                    spec.width,
                    spec.height,
                    if spec.depth == Depth::U16 { ":16" } else { "" }
                ),
            ));
        }
        let maxval = if spec.depth == Depth::U8 { 255 } else { 65535 };
        let mut frame = Frame::new(spec.width, spec.height, maxval, pixels);
        frame.format = Format::Raw;
        Ok(Some(frame))
    }

    /// Reads `samples` binary samples into new memory: bytes as they come, 16-bit samples in big-
    /// (PNM) or little-endian (raw) byte order. Also says how many bytes came: fewer than asked
    /// only at the end of the input, and then the samples are not converted (nor kept). `lent`:
    /// into the reader's memory (page-locked once a GPU lends it), else the heap. Memory grows
    /// with the bytes that come (see [`Filling`]).
    fn binary_raster(
        &mut self,
        index: usize,
        depth: Depth,
        samples: usize,
        big_endian: bool,
        lent: bool,
    ) -> Result<(usize, Pixels), FrameError> {
        let heap = SampleMemory::default();
        let memory = if lent { &self.memory } else { &heap };
        let buffered = at_hand(&mut self.input).map_err(|e| FrameError::io(index, &e))?;
        let rest = self.unread.as_mut().and_then(|unread| unread()).unwrap_or(0);
        let at_hand = buffered.saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
        Ok(match depth {
            Depth::U8 => {
                let (got, v) = read_filling::<_, u8>(&mut self.input, index, memory, samples, at_hand)?;
                (got, Pixels::U8(v))
            }
            Depth::U16 => {
                let (got, mut v) =
                    read_filling::<_, u16>(&mut self.input, index, memory, samples, at_hand / 2)?;
                if got == 2 * samples {
                    // One loop per order: a function pointer chosen once is called per sample
                    // (not inlined, not vectorised: a fifth of reading a 16-bit frame).
                    if big_endian {
                        v.iter_mut().for_each(|s| *s = u16::from_be(*s));
                    } else {
                        v.iter_mut().for_each(|s| *s = u16::from_le(*s));
                    }
                }
                (got, Pixels::U16(v))
            }
            Depth::F32 => {
                let (got, mut v) =
                    read_filling::<_, f32>(&mut self.input, index, memory, samples, at_hand / 4)?;
                if got == 4 * samples && big_endian {
                    v.iter_mut().for_each(|s| *s = f32::from_bits(u32::from_be(s.to_bits())));
                } else if got == 4 * samples {
                    v.iter_mut().for_each(|s| *s = f32::from_bits(u32::from_le(s.to_bits())));
                }
                (got, Pixels::F32(v))
            }
        })
    }

    fn described_frame(&mut self, index: usize) -> Result<Option<Frame>, FrameError> {
        let io_err = |e: io::Error| FrameError::io(index, &e);
        if let Some(pages) = self.pages.as_mut() {
            let budget = Budget::new(index, self.options.max_pixels, pages.len(), pages.len());
            match pages.next_page(&budget) {
                Ok(Some(frame)) => {
                    self.after = Some((index, Encoded::Tiff));
                    return Ok(Some(frame));
                }
                Ok(None) => self.pages = None,
                Err(e) => {
                    self.pages = None;
                    return Err(e);
                }
            }
        }
        // Whitespace may separate the frames of a stream.
        let magic = loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(e)),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let skip = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if skip == 0 {
                break buf.get(..2).map(|m| [m[0], m[1]]);
            }
            self.input.consume(skip);
        };
        // Two bytes tell every supported container apart. They stay in the input when its buffer
        // holds them, so that an image wholly in the buffer is decoded where it lies.
        let (magic, got, peeked) = match magic {
            Some(m) => (m, 2, true),
            None => {
                let mut m = [0u8; 2];
                let got = read_full(&mut self.input, &mut m).map_err(io_err)?;
                (m, got, false)
            }
        };
        if let (Some(kind), 2) = (Encoded::of_magic(magic), got) {
            let start: &[u8] = if peeked { &[] } else { &magic };
            let frame = self.encoded(index, kind, start)?;
            self.after = Some((index, kind));
            return Ok(Some(frame));
        }
        if let (Some(format), 2) = (FloatFormat::of_magic(magic), got) {
            let start: &[u8] = if peeked { &[] } else { &magic };
            let frame = self.float_image(index, format, start)?;
            self.after = None;
            return Ok(Some(frame));
        }
        if peeked {
            self.input.consume(2);
        }
        let after = self.after.take();
        let cursor = HeaderCursor::new(&mut self.input, index);
        let (header, format, coding) = match (got, magic) {
            (2, [b'P', b'5']) => (cursor.pnm(Channels::Gray)?, Format::Pgm, Coding::Binary),
            (2, [b'P', b'2']) => (cursor.pnm(Channels::Gray)?, Format::PlainPgm, Coding::Ascii),
            (2, [b'P', b'6']) => (cursor.pnm(Channels::Rgb)?, Format::Ppm, Coding::Binary),
            (2, [b'P', b'3']) => (cursor.pnm(Channels::Rgb)?, Format::Ppm, Coding::Ascii),
            (2, [b'P', b'7']) => (cursor.pam()?, Format::Pam, Coding::Binary),
            // PBM becomes 8-bit gray, written back as PGM.
            (2, [b'P', b'4']) => (cursor.pbm(true)?, Format::Decoded, Coding::PackedBits),
            (2, [b'P', b'1']) => (cursor.pbm(false)?, Format::Decoded, Coding::PlainBits),
            _ => {
                let following = match after {
                    Some((frame, kind)) => format!(" after the {} image of frame {frame}", kind.name()),
                    None => String::new(),
                };
                return Err(FrameError::invalid(
                    index,
                    format!(
                        "unrecognized input starting '{}'{following}: expected PGM, PBM, PAM, PPM, PNG, JPEG, TIFF or BMP (or give --raw WxH)",
                        shown(&magic[..got])
                    ),
                ));
            }
        };
        self.pnm_raster(index, header, format, coding).map(Some)
    }

    /// A PFM, NPY or FITS image, `start` its first bytes already taken from the input.
    fn float_image(&mut self, index: usize, format: FloatFormat, start: &[u8]) -> Result<Frame, FrameError> {
        let mut src = ReadSource::new(&mut self.input, start, self.options.max_pixels);
        let limits = float::Limits {
            frame: index,
            max_pixels: self.options.max_pixels,
            copied: true,
            gray: self.options.gray,
        };
        // An NPY of bytes, 16-bit integers or 32-bit floats: its samples are read straight into
        // the frame's memory after its header (a 4K float32 array was gathered onto the heap,
        // then converted into new memory: two fresh 33 MB buffers, whose pages the kernel zeroes,
        // where one does).
        let (annotations, image) = match format {
            FloatFormat::Npy => {
                let (walk, len) = float::npy::walk_header(&mut src, &limits)?;
                match walk.read_as_they_lie() {
                    Some((depth, big_endian)) => {
                        drop(src);
                        (walk.annotations.clone(), self.npy_samples(index, &walk, depth, big_endian)?)
                    }
                    None => {
                        float::want(&mut src, len, index, "NPY samples")?;
                        let walked = float::Walked::Npy(walk);
                        (walked.annotations(), FloatImage::decoded(&walked, src.into_bytes(), index)?)
                    }
                }
            }
            _ => {
                let walked = float::walk(&mut src, format, &limits)?;
                (walked.annotations(), FloatImage::decoded(&walked, src.into_bytes(), index)?)
            }
        };
        let FloatImage { width, height, channels, maxval, pixels } = image;
        let channels = Channels::of_count(channels)
            .ok_or_else(|| FrameError::invalid(index, format!("{channels} channels are not supported")))?;
        let mut frame = Frame::with_channels(width, height, channels, maxval, pixels);
        frame.format = match format {
            FloatFormat::Pfm => Format::Pfm,
            FloatFormat::Npy => Format::Npy,
            FloatFormat::Fits => Format::Decoded,
        };
        frame.annotations = annotations;
        if self.options.gray && channels != Channels::Gray {
            frame = colour::gray_frame(&frame);
        }
        Ok(frame)
    }

    /// The samples of the NPY `walk` found (of `depth`, in `big_endian` byte order or not), read
    /// from the input as they lie, into the frame's memory.
    fn npy_samples(
        &mut self,
        index: usize,
        walk: &float::npy::NpyWalk,
        depth: Depth,
        big_endian: bool,
    ) -> Result<FloatImage, FrameError> {
        let (width, height, channels) = walk.shape();
        let samples = width * height * channels;
        let (got, pixels) = self.binary_raster(index, depth, samples, big_endian, true)?;
        if got < samples * depth.bytes() {
            return Err(FrameError::invalid(index, "truncated NPY samples"));
        }
        Ok(FloatImage { width, height, channels, maxval: walk.maxval(), pixels })
    }

    /// What decoded images become.
    fn target(&self) -> Target {
        if self.options.gray {
            Target::Gray
        } else {
            Target::Colour
        }
    }

    /// An image decoded by a library, `start` its first bytes already taken from the input.
    fn encoded(&mut self, index: usize, kind: Encoded, start: &[u8]) -> Result<Frame, FrameError> {
        let max_pixels = self.options.max_pixels;
        let target = self.target();
        if start.is_empty() {
            // The whole image may be in the input's buffer already (always, reading a slice).
            let buf = self.input.fill_buf().map_err(|e| FrameError::io(index, &e))?;
            let mut src = SliceSource::new(buf);
            match decode::walk(&mut src, kind) {
                Ok(walked) => {
                    let taken = src.taken();
                    let image = src.into_kept();
                    // A copy is held when the walk left metadata out.
                    let held = if matches!(image, Cow::Owned(_)) { image.len() } else { 0 };
                    let budget = Budget::new(index, max_pixels, taken, held);
                    let decoded = decode::decode(&image, &walked, target, &budget);
                    drop(image);
                    self.input.consume(taken);
                    let (picture, pages) = decoded?;
                    self.pages = pages;
                    return Ok(picture.into_frame());
                }
                Err(WalkError::Ended(_)) => {}
                Err(e) => return Err(e.into_frame_error(index)),
            }
        }
        let mut src = ReadSource::new(&mut self.input, start, max_pixels);
        let walked = decode::walk(&mut src, kind).map_err(|e| e.into_frame_error(index))?;
        let taken = src.taken();
        let bytes = src.into_bytes();
        let budget = Budget::new(index, max_pixels, taken, bytes.len());
        let (picture, pages) = decode::decode(&bytes, &walked, target, &budget)?;
        self.pages = pages;
        Ok(picture.into_frame())
    }

    fn pnm_raster(
        &mut self,
        index: usize,
        h: Header,
        format: Format,
        coding: Coding,
    ) -> Result<Frame, FrameError> {
        let count = self.check_size(index, h.width, h.height)?;
        let depth = Depth::for_maxval(h.maxval);
        let to_gray = self.options.gray && h.channels != Channels::Gray;
        let channels = if to_gray { Channels::Gray } else { h.channels };
        let pixels = match (coding, to_gray) {
            (Coding::PlainBits, _) => {
                let mut bits = AsciiBits::new(&mut self.input, index, count);
                Pixels::U8(fill_slices(&self.memory, index, count, |room| bits.fill(room))?)
            }
            (Coding::PackedBits, _) => self.packed_bits(index, &h)?,
            (Coding::Ascii, _) => self.ascii_raster(index, &h, to_gray)?,
            (Coding::Binary, false) => {
                let samples = count
                    .checked_mul(h.channels.count())
                    .ok_or_else(|| FrameError::invalid(index, "raster too large"))?;
                let (got, pixels) = self.binary_raster(index, depth, samples, true, true)?;
                let bytes = samples * depth.bytes();
                if got < bytes {
                    return Err(FrameError::invalid(
                        index,
                        format!("truncated pixel data: {got} of {bytes} bytes for {}x{}", h.width, h.height),
                    ));
                }
                match &pixels {
                    Pixels::U8(v) if h.maxval < 255 => {
                        check_maxval(index, v.iter().map(|&b| b as u16), h.maxval)?
                    }
                    Pixels::U16(v) if h.maxval < 65535 => check_maxval(index, v.iter().copied(), h.maxval)?,
                    _ => {}
                }
                pixels
            }
            (Coding::Binary, true) => self.colour_raster(index, &h)?,
        };
        let mut frame = Frame::with_channels(h.width, h.height, channels, h.maxval, pixels);
        frame.format = match format {
            _ if to_gray => Format::Decoded,
            Format::Ppm => Format::Ppm,
            f => f,
        };
        frame.geometry = h.geometry;
        frame.annotations = h.annotations;
        frame.source = h.source;
        Ok(frame)
    }

    /// An ASCII raster (P2, P3), colour converted pixel by pixel as it is read when `to_gray`.
    /// `h`'s size was checked ([`FrameReader::check_size`]).
    fn ascii_raster(&mut self, index: usize, h: &Header, to_gray: bool) -> Result<Pixels, FrameError> {
        let depth = Depth::for_maxval(h.maxval);
        let ch = h.channels.count();
        let count = h.width * h.height * if to_gray { 1 } else { ch };
        let samples = (h.width * h.height)
            .checked_mul(ch)
            .ok_or_else(|| FrameError::invalid(index, "raster too large"))?;
        let mut raster = AsciiSamples::new(&mut self.input, index, samples);
        let mut next = |i: usize| -> Result<u16, FrameError> {
            let v = raster.next()?;
            if v > h.maxval {
                return Err(FrameError::invalid(
                    index,
                    format!("sample {i} is {v}, over maxval {}", h.maxval),
                ));
            }
            Ok(v)
        };
        let mut sample = |p: usize| -> Result<u16, FrameError> {
            if !to_gray {
                return next(p);
            }
            let (r, g, b) = (next(ch * p)?, next(ch * p + 1)?, next(ch * p + 2)?);
            if ch == 4 {
                next(ch * p + 3)?;
            }
            Ok(match depth {
                Depth::U8 => colour::gray_u8_of(r as u8, g as u8, b as u8) as u16,
                _ => colour::gray_u16_of(r, g, b),
            })
        };
        Ok(match depth {
            Depth::U8 => Pixels::U8(fill_with(&self.memory, index, count, |p| sample(p).map(|v| v as u8))?),
            _ => Pixels::U16(fill_with(&self.memory, index, count, sample)?),
        })
    }

    /// A packed PBM raster (P4): rows of bits, the first pixel in the high bit, each row padded to
    /// whole bytes; read in pieces and expanded as they come, into memory that grows with them.
    /// `h`'s size was checked ([`FrameReader::check_size`]).
    fn packed_bits(&mut self, index: usize, h: &Header) -> Result<Pixels, FrameError> {
        let (width, count) = (h.width, h.width * h.height);
        let total = width
            .div_ceil(8)
            .checked_mul(h.height)
            .ok_or_else(|| FrameError::invalid(index, "raster too large"))?;
        let mut piece = vec![0u8; COLOUR_PIECE.min(total)];
        let (mut at, mut len, mut got_bytes) = (0, 0, 0);
        let input = &mut self.input;
        let mut next_byte = || -> Result<u8, FrameError> {
            if at == len {
                let want = piece.len().min(total - got_bytes);
                len = read_full(input, &mut piece[..want]).map_err(|e| FrameError::io(index, &e))?;
                got_bytes += len;
                if len < want {
                    return Err(FrameError::invalid(
                        index,
                        format!(
                            "truncated pixel data: {got_bytes} of {total} bytes for {}x{}",
                            h.width, h.height
                        ),
                    ));
                }
                at = 0;
            }
            at += 1;
            Ok(piece[at - 1])
        };
        // x: the column of the next pixel; byte: the byte its bit is in.
        let (mut x, mut byte) = (0, 0u8);
        let samples = fill_slices(&self.memory, index, count, |room| {
            let mut k = 0;
            while k < room.len() {
                if x % 8 == 0 && x + 8 <= width && k + 8 <= room.len() {
                    room[k..k + 8].copy_from_slice(&BIT_SAMPLES[next_byte()? as usize]);
                    (k, x) = (k + 8, if x + 8 == width { 0 } else { x + 8 });
                    continue;
                }
                if x % 8 == 0 {
                    byte = next_byte()?;
                }
                room[k] = BIT_SAMPLES[byte as usize][x % 8];
                (k, x) = (k + 1, if x + 1 == width { 0 } else { x + 1 });
            }
            Ok(())
        })?;
        Ok(Pixels::U8(samples))
    }

    /// A binary raster of more than one channel (P6, PAM RGB, RGB_ALPHA and GRAYSCALE_ALPHA) read
    /// as gray, in pieces converted as they come. `h`'s size was checked ([`FrameReader::check_size`]).
    fn colour_raster(&mut self, index: usize, h: &Header) -> Result<Pixels, FrameError> {
        let (count, depth) = (h.width * h.height, Depth::for_maxval(h.maxval));
        let ch = h.channels.count();
        let pixel_bytes = ch * depth.bytes();
        let total =
            count.checked_mul(pixel_bytes).ok_or_else(|| FrameError::invalid(index, "raster too large"))?;
        let mut piece = vec![0u8; COLOUR_PIECE.min(total)];
        let oom = |e| no_memory(index, e);
        let mut gray = match depth {
            Depth::U8 => Gray::U8(Filling::new(&self.memory, count, 0).map_err(oom)?),
            _ => Gray::U16(Filling::new(&self.memory, count, 0).map_err(oom)?),
        };
        let (mut done, mut got_bytes) = (0, 0);
        while done < count {
            let room = match &mut gray {
                Gray::U8(v) => v.room().map_err(oom)?.len(),
                Gray::U16(v) => v.room().map_err(oom)?.len(),
            };
            let n = room.min(piece.len() / pixel_bytes);
            let want = &mut piece[..n * pixel_bytes];
            let got = read_full(&mut self.input, want).map_err(|e| FrameError::io(index, &e))?;
            got_bytes += got;
            if got < want.len() {
                return Err(FrameError::invalid(
                    index,
                    format!(
                        "truncated pixel data: {got_bytes} of {total} bytes for {}x{}",
                        h.width, h.height
                    ),
                ));
            }
            let mut out8: &mut [u8] = &mut [];
            let mut out16: &mut [u16] = &mut [];
            match &mut gray {
                Gray::U8(v) => out8 = v.room().map_err(oom)?,
                Gray::U16(v) => out16 = v.room().map_err(oom)?,
            }
            for (k, p) in want.chunks_exact(pixel_bytes).enumerate() {
                let sample = |c: usize| match depth {
                    Depth::U8 => p[c] as u16,
                    _ => u16::from_be_bytes([p[2 * c], p[2 * c + 1]]),
                };
                if let Some((c, v)) = (0..ch).map(|c| (c, sample(c))).find(|&(_, v)| v > h.maxval) {
                    let i = ch * (done + k) + c;
                    return Err(FrameError::invalid(
                        index,
                        format!("sample {i} is {v}, over maxval {}", h.maxval),
                    ));
                }
                // Gray and alpha: the gray sample, alpha dropped, as `colour::gray_frame` does.
                if ch < 3 {
                    match depth {
                        Depth::U8 => out8[k] = sample(0) as u8,
                        _ => out16[k] = sample(0),
                    }
                    continue;
                }
                let (r, g, b) = (sample(0), sample(1), sample(2));
                match depth {
                    Depth::U8 => out8[k] = colour::gray_u8_of(r as u8, g as u8, b as u8),
                    _ => out16[k] = colour::gray_u16_of(r, g, b),
                }
            }
            match &mut gray {
                Gray::U8(v) => v.filled(n),
                Gray::U16(v) => v.filled(n),
            }
            done += n;
        }
        Ok(match gray {
            Gray::U8(v) => Pixels::U8(v.finish()),
            Gray::U16(v) => Pixels::U16(v.finish()),
        })
    }
}

/// How a netpbm raster is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    /// Samples as bytes (P5, P6, P7).
    Binary,
    /// Samples as decimal numbers (P2, P3).
    Ascii,
    /// Bits as `0` and `1` characters (P1).
    PlainBits,
    /// Bits packed eight a byte, rows padded to a byte (P4).
    PackedBits,
}

/// A gray frame being filled, at either sample width.
enum Gray<'m> {
    U8(Filling<'m, u8>),
    U16(Filling<'m, u16>),
}

/// Bytes the input holds already, without waiting for more.
fn at_hand<R: BufRead>(input: &mut R) -> io::Result<usize> {
    loop {
        match input.fill_buf() {
            Ok(buf) => return Ok(buf.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `count` samples, sample p from `sample(p)` in order, into memory that grows as they come.
fn fill_with<T: Copy + Default + Send + Sync + 'static>(
    memory: &SampleMemory,
    index: usize,
    count: usize,
    mut sample: impl FnMut(usize) -> Result<T, FrameError>,
) -> Result<Samples<T>, FrameError> {
    let mut p = 0;
    fill_slices(memory, index, count, |room| {
        for s in room.iter_mut() {
            *s = sample(p)?;
            p += 1;
        }
        Ok(())
    })
}

/// `count` samples into memory that grows as they come, filled a slice at a time by `fill` in
/// order.
fn fill_slices<T: Copy + Default + Send + Sync + 'static>(
    memory: &SampleMemory,
    index: usize,
    count: usize,
    mut fill: impl FnMut(&mut [T]) -> Result<(), FrameError>,
) -> Result<Samples<T>, FrameError> {
    let mut v = Filling::<T>::new(memory, count, 0).map_err(|e| no_memory(index, e))?;
    loop {
        let room = v.room().map_err(|e| no_memory(index, e))?;
        if room.is_empty() {
            return Ok(v.finish());
        }
        fill(room)?;
        let n = room.len();
        v.filled(n);
    }
}

/// Reads `len` samples of `T` as bytes, in the machine's order, into memory that grows as they
/// come. Returns how many bytes came, and the samples when all did (else none).
fn read_filling<R: BufRead, T: Copy + Default + Send + Sync + 'static>(
    input: &mut R,
    index: usize,
    memory: &SampleMemory,
    len: usize,
    at_hand: usize,
) -> Result<(usize, Samples<T>), FrameError> {
    let mut v = Filling::<T>::new(memory, len, at_hand).map_err(|e| no_memory(index, e))?;
    let mut got = 0;
    loop {
        let room = v.room().map_err(|e| no_memory(index, e))?;
        if room.is_empty() {
            return Ok((got, v.finish()));
        }
        let size = std::mem::size_of_val(room);
        // SAFETY: the same memory as bytes; any bytes make valid samples (u8, u16, f32).
        let bytes = unsafe { std::slice::from_raw_parts_mut(room.as_mut_ptr().cast::<u8>(), size) };
        let n = read_full(input, bytes).map_err(|e| FrameError::io(index, &e))?;
        got += n;
        if n < size {
            return Ok((got, Vec::new().into()));
        }
        let samples = room.len();
        v.filled(samples);
    }
}

/// A PFM, NPY or FITS image read: its shape, its samples' maxval (see [`float::Decoded`]) and
/// its samples.
struct FloatImage {
    width: usize,
    height: usize,
    channels: usize,
    maxval: u16,
    pixels: Pixels,
}

impl FloatImage {
    /// The image `walked` found, decoded from its `bytes` (dropped once decoded).
    fn decoded(walked: &float::Walked, bytes: Vec<u8>, index: usize) -> Result<FloatImage, FrameError> {
        let decoded = float::decode(&bytes, walked, index)?;
        drop(bytes);
        let pixels = match decoded.raster {
            Raster::U8(v) => Pixels::U8(v.into()),
            Raster::U16(v) => Pixels::U16(v.into()),
            Raster::F32(v) => Pixels::F32(v.into()),
        };
        let (width, height, channels, maxval) =
            (decoded.width, decoded.height, decoded.channels, decoded.maxval);
        Ok(FloatImage { width, height, channels, maxval, pixels })
    }
}

/// No memory for a frame: an error of the machine, not of the input.
fn no_memory(index: usize, e: NoMemory) -> FrameError {
    let err = io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("out of memory: no room for the frame's {} MiB", e.0.div_ceil(1 << 20)),
    );
    FrameError::io(index, &err)
}

/// A sample over maxval makes the frame invalid: nothing downstream could trust it.
fn check_maxval(index: usize, values: impl Iterator<Item = u16>, maxval: u16) -> Result<(), FrameError> {
    for (i, v) in values.enumerate() {
        if v > maxval {
            return Err(FrameError::invalid(index, format!("sample {i} is {v}, over maxval {maxval}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;
    use crate::budget::{read_gather_bound, read_work_bound};

    fn read_all(bytes: &[u8], options: ReadOptions) -> Result<Vec<Frame>, FrameError> {
        let mut r = FrameReader::new(bytes, options);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame()? {
            out.push(f);
        }
        Ok(out)
    }

    fn err(bytes: &[u8]) -> String {
        read_all(bytes, ReadOptions::default()).unwrap_err().to_string()
    }

    #[test]
    fn binary_and_plain_pgm() {
        let frames =
            read_all(b"P5\n# c\n3 1\n255\n\x01\x02\x03P2 2 1 7 6\n7\n", ReadOptions::default()).unwrap();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].pixels, Pixels::U8(vec![1, 2, 3].into()));
        assert_eq!(frames[0].format, Format::Pgm);
        assert_eq!(frames[1].pixels, Pixels::U8(vec![6, 7].into()));
        assert_eq!(frames[1].format, Format::PlainPgm);
        assert_eq!(frames[1].maxval, 7);
    }

    /// PBM: 1 is black (0), 0 white (255), as `cv2.imread` reads it; P1's bits with or without
    /// whitespace and comments between them, P4's rows padded to a byte; frames follow each other.
    #[test]
    fn pbm_plain_and_packed() {
        let stream = b"P1\n# c\n3 2\n1 0 1\n0#x\n11P4 10 2\n\xb0\xc0\x00\x7fP1 2 1 01\n";
        let frames = read_all(stream, ReadOptions::default()).unwrap();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0].pixels, Pixels::U8(vec![0, 255, 0, 255, 0, 0].into()));
        assert_eq!((frames[0].width, frames[0].height, frames[0].maxval), (3, 2, 255));
        assert_eq!((frames[0].channels, frames[0].format), (Channels::Gray, Format::Decoded));
        let row = |bits: &str| bits.bytes().map(|b| if b == b'1' { 0 } else { 255 }).collect::<Vec<u8>>();
        let want = [row("1011000011"), row("0000000001")].concat();
        assert_eq!(frames[1].pixels, Pixels::U8(want.into()));
        assert_eq!(frames[2].pixels, Pixels::U8(vec![255, 0].into()));
        // Read through a small buffer, bit by bit and piece by piece.
        let mut r = FrameReader::new(io::BufReader::with_capacity(3, &stream[..]), ReadOptions::default());
        let mut again = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            again.push(f);
        }
        assert_eq!(again, frames);
        let gray = ReadOptions { gray: true, ..Default::default() };
        assert_eq!(read_all(stream, gray).unwrap(), frames);
    }

    /// A PBM over the first piece of memory (1 MiB) is filled in several slices, one of them
    /// ending inside a byte of P4 (pixel 2^20 is column 985 of 1503): the same pixels either way.
    #[test]
    fn a_large_pbm_is_the_same_across_the_pieces_it_is_filled_in() {
        let (w, h) = (1503, 1001);
        let mut rng = fastrand::Rng::with_seed(49);
        let bits: Vec<u8> = (0..w * h).map(|_| rng.u8(..2)).collect();
        let want: Vec<u8> = bits.iter().map(|&b| 255 * (1 - b)).collect();
        let mut p4 = format!("P4 {w} {h}\n").into_bytes();
        for row in bits.chunks(w) {
            p4.extend(row.chunks(8).map(|b| b.iter().chain(&[1; 8]).take(8).fold(0, |a, &x| a << 1 | x)));
        }
        let mut p1 = format!("P1 {w} {h}\n").into_bytes();
        for line in bits.chunks(70) {
            p1.extend(line.iter().map(|b| b'0' + b));
            p1.push(b'\n');
        }
        for input in [p4, p1] {
            let mut r =
                FrameReader::new(io::BufReader::with_capacity(4096, &input[..]), ReadOptions::default());
            let f = r.next_frame().unwrap().unwrap();
            assert!(f.pixels == Pixels::U8(want.clone().into()), "{}", shown(&input[..2]));
            assert!(r.next_frame().unwrap().is_none());
        }
    }

    #[test]
    fn pbm_errors_name_the_problem() {
        let cases: [(&[u8], &str); 8] = [
            (b"P1 2 2 1 0 1", "truncated pixel data: 3 of 4 bits"),
            (b"P1 2 1 1 2", "bad bit '2' at pixel 1 (0 or 1)"),
            (b"P1 2 1 1\x1b", r"bad bit '\x1b' at pixel 1"),
            (b"P4 9 2\n\x00\x00\x00", "truncated pixel data: 3 of 4 bytes for 9x2"),
            (b"P4 9 2", "truncated header: no raster after the height"),
            (b"P4 9 2x", "bad height '2x'"),
            (b"P4 0 2\n", "width is 0"),
            (b"P1 3", "truncated header: no height"),
        ];
        for (input, says) in cases {
            let e = err(input);
            assert!(e.contains(says), "{input:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = read_all(b"P4 4294967295 4294967295\n", ReadOptions::default()).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
        let e = read_all(b"P1 4294967295 4294967295 1", ReadOptions::default()).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
    }

    #[test]
    fn sixteen_bit_is_big_endian() {
        let frames = read_all(b"P5 2 1 1000\n\x03\xe8\x00\x01", ReadOptions::default()).unwrap();
        assert_eq!(frames[0].pixels, Pixels::U16(vec![1000, 1].into()));
    }

    #[test]
    fn pam_gray_and_rgb() {
        let f = read_all(
            b"P7\nWIDTH 2\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n\x05\x06",
            ReadOptions::default(),
        )
        .unwrap();
        assert_eq!(f[0].pixels, Pixels::U8(vec![5, 6].into()));
        assert_eq!(f[0].format, Format::Pam);
        let f = read_all(
            b"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n\xff\x00\x00",
            ReadOptions::default(),
        )
        .unwrap();
        assert_eq!((f[0].channels, &f[0].pixels), (Channels::Rgb, &Pixels::U8(vec![255, 0, 0].into())));
        let gray = ReadOptions { gray: true, ..Default::default() };
        let f = read_all(
            b"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n\xff\x00\x00\x07",
            gray,
        )
        .unwrap();
        assert_eq!((f[0].channels, &f[0].pixels), (Channels::Gray, &Pixels::U8(vec![76].into())));
        let f = read_all(
            b"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 2\nMAXVAL 255\nTUPLTYPE GRAYSCALE_ALPHA\nENDHDR\n\x05\x06",
            ReadOptions::default(),
        )
        .unwrap();
        assert_eq!((f[0].channels, &f[0].pixels), (Channels::GrayAlpha, &Pixels::U8(vec![5, 6].into())));
    }

    /// Read as gray, a GRAYSCALE_ALPHA PAM keeps its gray samples and drops alpha, at 8 and 16
    /// bits (it indexed a third sample of a two-sample pixel: a panic found by the fuzz harness).
    #[test]
    fn pam_gray_alpha_read_as_gray_drops_alpha() {
        let gray = ReadOptions { gray: true, ..Default::default() };
        let pam = |maxval: u16, raster: &[u8]| {
            let header = format!(
                "P7\nWIDTH 2\nHEIGHT 1\nDEPTH 2\nMAXVAL {maxval}\nTUPLTYPE GRAYSCALE_ALPHA\nENDHDR\n"
            );
            [header.as_bytes(), raster].concat()
        };
        let f = read_all(&pam(255, &[5, 6, 7, 8]), gray).unwrap();
        assert_eq!((f[0].channels, &f[0].pixels), (Channels::Gray, &Pixels::U8(vec![5, 7].into())));
        let f = read_all(&pam(1000, &[3, 0xe8, 0, 1, 0, 9, 3, 0xe7]), gray).unwrap();
        assert_eq!((f[0].channels, &f[0].pixels), (Channels::Gray, &Pixels::U16(vec![1000, 9].into())));
        let e = read_all(&pam(1000, &[3, 0xe8, 3, 0xe9, 0, 9, 0, 0]), gray).unwrap_err();
        assert!(e.message.contains("sample 1 is 1001, over maxval 1000"), "{}", e.message);
    }

    #[test]
    fn header_errors_name_the_problem() {
        let cases: [(&[u8], &str); 15] = [
            (b"", "frame 1: empty input"),
            (b"P9 1 1 255\n", "unrecognized input"),
            (b"P5 3", "truncated header: no height"),
            (b"P5 3 1 0\n", "maxval is 0"),
            (b"P5 3 1 65536\n", "maxval 65536 is too large"),
            (b"P5 0 1 255\n", "width is 0"),
            (b"P5 1 0 255\n", "height is 0"),
            (b"P5 3x 1 255\n", "bad width '3x'"),
            (b"P5 3 1 25a5\n\x00", "bad maxval '25a5'"),
            (b"P5 3 1 255\n\x00", "truncated pixel data: 1 of 3 bytes"),
            (b"P5 2 1 9\n\x01\x0a", "sample 1 is 10, over maxval 9"),
            (b"P2 2 1 255 1 2x", "bad sample '2x'"),
            // Quoted input is escaped.
            (b"P5 3\x1b[2J 1 255\n", r"bad width '3\x1b[2J'"),
            (b"P5\n# histopipe-geometry \x07\n1 1 255\n\0", r"'histopipe-geometry \u{7}'"),
            (b"\xff\xfe", r"unrecognized input starting '\xff\xfe'"),
        ];
        for (input, says) in cases {
            let e = err(input);
            assert!(e.contains(says), "{input:?}: {e}");
        }
        assert!(err(b"P5 1 1 255\n\x00P5 2 1 255\n\x00").starts_with("frame 2: truncated pixel data"));
    }

    #[test]
    fn size_limit_is_checked_before_allocation() {
        let e = read_all(b"P5 4294967295 4294967295 255\n", ReadOptions::default()).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
        let small = ReadOptions { max_pixels: 5, ..Default::default() };
        assert!(read_all(b"P5 3 2 255\n", small)
            .unwrap_err()
            .to_string()
            .contains("6 pixels, over the limit of 5"));
    }

    #[test]
    fn memory_refused_is_one_line_of_the_machine_not_of_the_input() {
        let heap = SampleMemory::default();
        // More than any allocator gives (the layout itself is refused), with every byte at hand.
        let e = Filling::<u16>::new(&heap, usize::MAX / 4, usize::MAX).map(|_| ()).unwrap_err();
        let e = no_memory(3, e);
        assert_eq!(e.kind, FrameErrorKind::Io(io::ErrorKind::OutOfMemory));
        assert!(e.to_string().starts_with("frame 3: out of memory: no room for the frame's "), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn raw_frames() {
        let spec = RawSpec::parse("2x1:16").unwrap();
        let opts = ReadOptions { raw: Some(spec), ..Default::default() };
        let frames = read_all(&[1, 0, 0, 1, 2, 0, 3, 0], opts).unwrap();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].pixels, Pixels::U16(vec![1, 256].into()));
        assert_eq!(frames[1].maxval, 65535);
        let e = read_all(&[1, 0, 0, 1, 2], opts).unwrap_err().to_string();
        assert!(e.starts_with("frame 2: raw stream ends 1 bytes into a frame of 4 bytes"), "{e}");
    }

    #[test]
    fn raw_spec_parsing() {
        assert_eq!(RawSpec::parse("640x480").unwrap(), RawSpec { width: 640, height: 480, depth: Depth::U8 });
        assert!(RawSpec::parse("640x").is_err());
        assert!(RawSpec::parse("0x5").is_err());
        assert!(RawSpec::parse("6x5:12").is_err());
        assert!(RawSpec::parse("6 x5").is_err());
    }

    /// A little-endian TIFF of `pages` pages of 8-bit gray `side` x `side` zeros, every page's
    /// one strip the same Deflate stream (at most 1032:1), stored once.
    fn pages_of_one_strip(side: u32, pages: u32) -> Vec<u8> {
        use tiff::encoder::{colortype::Gray8, Compression, DeflateLevel, TiffEncoder};
        let mut one = Vec::new();
        let mut encoder = TiffEncoder::new(io::Cursor::new(&mut one))
            .unwrap()
            .with_compression(Compression::Deflate(DeflateLevel::Best));
        let mut image = encoder.new_image::<Gray8>(side, side).unwrap();
        image.rows_per_strip(side).unwrap();
        image.write_data(&vec![0; (side * side) as usize]).unwrap();
        let mut decoder = tiff::decoder::Decoder::new(io::Cursor::new(&one)).unwrap();
        let at = decoder.get_tag_u32(tiff::tags::Tag::StripOffsets).unwrap();
        let count = decoder.get_tag_u32(tiff::tags::Tag::StripByteCounts).unwrap();
        let strip = &one[at as usize..(at + count) as usize];
        let mut out = b"II*\0".to_vec();
        out.extend_from_slice(&(8 + count).to_le_bytes());
        out.extend_from_slice(strip);
        for page in 0..pages {
            let next = if page + 1 < pages { out.len() as u32 + 2 + 8 * 12 + 4 } else { 0 };
            out.extend_from_slice(&8u16.to_le_bytes());
            for (tag, kind, value) in
                [(256, 4, side), (257, 4, side), (258, 3, 8), (259, 3, 8), (262, 3, 1), (273, 4, 8)]
                    .into_iter()
                    .chain([(278, 4, side), (279, 4, count)])
            {
                out.extend_from_slice(&(tag as u16).to_le_bytes());
                out.extend_from_slice(&(kind as u16).to_le_bytes());
                out.extend_from_slice(&1u32.to_le_bytes());
                out.extend_from_slice(&value.to_le_bytes());
            }
            out.extend_from_slice(&next.to_le_bytes());
        }
        out
    }

    #[test]
    fn tiff_pages_sharing_one_strip_are_decoded_within_the_inputs_work() {
        let few = pages_of_one_strip(1024, 3);
        let options = ReadOptions { max_pixels: 1 << 20, ..Default::default() };
        assert_eq!(read_all(&few, options).unwrap().len(), 3);
        // 16 pages of 2^20 pixels from 2.6 KB (a 0.9 KB strip and 16 directories): a frame of
        // --max-pixels and 4096 pixels a byte allow 11.6 M pixels, the first 11 pages.
        let many = pages_of_one_strip(1024, 16);
        let allowed = read_work_bound(1 << 20, many.len());
        let mut r = FrameReader::new(&many[..], options);
        let mut decoded = 0;
        let e = loop {
            match r.next_frame() {
                Ok(Some(f)) => decoded += f.pixel_count() as u64,
                Ok(None) => panic!("{decoded} pixels decoded from {} bytes, none refused", many.len()),
                Err(e) => break e,
            }
        };
        assert!(decoded <= allowed && decoded + (1 << 20) > allowed, "{decoded} of {allowed}");
        assert_eq!((e.frame as u64, e.kind), (decoded / (1 << 20) + 1, FrameErrorKind::TooLarge));
        assert!(e.message.starts_with("decoding this 1024x1024 TIFF page is 1048576 pixels of work"), "{e}");
        assert!(e.message.ends_with("raise --max-pixels to read it)"), "{e}");
    }

    /// `head`, then 64 MiB of zeros, through a small buffer, as a pipe gives them.
    fn long(head: &[u8]) -> io::BufReader<io::Chain<&[u8], io::Take<io::Repeat>>> {
        io::BufReader::with_capacity(1 << 12, head.chain(io::repeat(0).take(64 << 20)))
    }

    #[test]
    fn an_image_is_gathered_no_further_than_max_pixels_allow() {
        let options = ReadOptions { max_pixels: 1 << 10, ..Default::default() };
        let limit = read_gather_bound(1 << 10);
        // A TIFF whose first directory is 1.5 GB in; a JPEG whose coded data goes on (64 MiB,
        // which were gathered whole before the input ended).
        let tiff = b"II*\0\x00\x2f\x68\x59".to_vec();
        let jpeg = b"\xff\xd8\xff\xc0\x00\x0b\x08\x00\x10\x00\x10\x01\x01\x11\x00\
            \xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00";
        for head in [&tiff[..], &jpeg[..]] {
            let mut r = FrameReader::new(long(head), options);
            let e = r.next_frame().unwrap_err();
            assert_eq!(e.kind, FrameErrorKind::TooLarge, "{e}");
            assert_eq!(
                e.to_string(),
                format!(
                    "frame 1: the image goes on past 1.0 MiB, more than an image of --max-pixels 1024 \
                     takes (raise --max-pixels to read it)"
                )
            );
            let buffer = r.get_mut().buffer().len();
            assert!(buffer <= 1 << 12, "{buffer}");
        }
        assert_eq!(limit, (1 << 14) + (1 << 20));
    }

    /// An NPY's samples read straight into the frame's memory are those its bytes decode to
    /// (bytes, 16-bit integers and floats of either byte order; bools, as before, gathered and
    /// converted), in a stream read a few bytes at a time; cut short, they are an error.
    #[test]
    fn npy_samples_read_as_they_lie_are_those_decoded() {
        let files: [&[u8]; 6] = [
            include_bytes!("../tests/data/numpy_u1_2x3x3.npy"),
            include_bytes!("../tests/data/numpy_u2_1x1x4.npy"),
            include_bytes!("../tests/data/numpy_u2_be_1x3x1.npy"),
            include_bytes!("../tests/data/numpy_f4_3x4.npy"),
            include_bytes!("../tests/data/numpy_f4_be_v2_3x1.npy"),
            include_bytes!("../tests/data/numpy_b1_2x3.npy"),
        ];
        let stream = files.concat();
        let mut r = FrameReader::new(io::BufReader::with_capacity(7, &stream[..]), ReadOptions::default());
        for bytes in files {
            let frame = r.next_frame().unwrap().unwrap();
            let (want, _) = float::decode_float(bytes, 1, 1 << 20).unwrap();
            let got = match &frame.pixels {
                Pixels::U8(s) => Raster::U8(s.to_vec()),
                Pixels::U16(s) => Raster::U16(s.to_vec()),
                Pixels::F32(s) => Raster::F32(s.to_vec()),
            };
            assert_eq!(
                (frame.width, frame.height, frame.channels.count()),
                (want.width, want.height, want.channels)
            );
            assert_eq!((frame.maxval, frame.format), (want.maxval, Format::Npy));
            assert_eq!(format!("{got:?}"), format!("{:?}", want.raster));
        }
        assert!(r.next_frame().unwrap().is_none());
        for bytes in &files[..5] {
            let mut r = FrameReader::new(&bytes[..bytes.len() - 1], ReadOptions::default());
            assert_eq!(r.next_frame().unwrap_err().to_string(), "frame 1: truncated NPY samples");
        }
    }

    /// One of `seeds` with one to three mutations: a byte changed, the rest cut off, or a byte of
    /// `alphabet` put in.
    fn mutated(rng: &mut fastrand::Rng, seeds: &[&[u8]], alphabet: &[u8; 16]) -> Vec<u8> {
        let mut input = seeds[rng.usize(..seeds.len())].to_vec();
        for _ in 0..rng.usize(1..4) {
            let i = rng.usize(..input.len());
            match rng.u8(..3) {
                0 => input[i] = rng.u8(..),
                1 => input.truncate(i),
                _ => input.insert(i, alphabet[rng.usize(..16)]),
            }
            if input.is_empty() {
                break;
            }
        }
        input
    }

    /// Mangled PBM headers and rasters are errors, never panics or endless loops.
    #[test]
    fn mutated_pbm_never_panics() {
        let seeds: [&[u8]; 3] = [
            b"P1\n# c\n5 3\n10101 01010\n11100\n",
            b"P4\n11 3\n\xff\xe0\x12\x34\x56\x78",
            b"P1 3 1 011P4 1 1\n\x80",
        ];
        let mut rng = fastrand::Rng::with_seed(0x9b3);
        for _ in 0..20000 {
            let input = mutated(&mut rng, &seeds, b"0123456789 #\nP4x");
            let options = ReadOptions { max_pixels: 1 << 16, ..Default::default() };
            if let Ok(frames) = read_all(&input, options) {
                for f in frames {
                    assert_eq!(f.pixels.len(), f.width * f.height);
                }
            }
        }
    }

    /// Mangled headers and rasters are errors, never panics or endless loops.
    #[test]
    fn mutated_inputs_never_panic() {
        let seeds: [&[u8]; 5] = [
            b"P5\n# histopipe-geometry 1 0 -2 0 1 -3 4 4\n3 2\n255\n\x01\x02\x03\x04\x05\x06",
            b"P2 2 2 300 1 2 3 299\n",
            b"P7\nWIDTH 2\nHEIGHT 1\nDEPTH 1\nMAXVAL 65535\nTUPLTYPE GRAYSCALE\nENDHDR\n\x01\x02\x03\x04",
            b"P6 1 1 255\n\x01\x02\x03",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00",
        ];
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        for _ in 0..20000 {
            let input = mutated(&mut rng, &seeds, b"0123456789 #\nP5x");
            let options = ReadOptions { max_pixels: 1 << 16, ..Default::default() };
            let _ = read_all(&input, options);
        }
    }
}
