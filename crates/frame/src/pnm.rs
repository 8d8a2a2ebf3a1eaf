//! Netpbm headers (PBM P1/P4, PGM P2/P5, PPM P3/P6, PAM P7) and rasters.

use std::io::{self, BufRead};

use crate::geometry::Geometry;
use crate::{Annotation, Channels, FrameError, Source};

/// The most bytes of one header comment line that are held; longer lines stream by. A source
/// comment of a path of 4096 bytes, each escaped, fits.
pub(crate) const COMMENT_CAP: usize = 1 << 16;

/// The most bytes the annotations of one header may take, counting 64 for each one's keeping.
pub(crate) const ANNOTATIONS_CAP: usize = 1 << 16;

/// What a PNM/PAM header says.
pub(crate) struct Header {
    pub width: usize,
    pub height: usize,
    pub maxval: u16,
    /// What each pixel's samples are.
    pub channels: Channels,
    pub geometry: Option<Geometry>,
    pub annotations: Vec<Annotation>,
    pub source: Option<Source>,
}

/// Byte-level access to a header, with the frame number for error messages.
pub(crate) struct HeaderCursor<'a, R: BufRead> {
    input: &'a mut R,
    frame: usize,
    geometry: Option<Geometry>,
    annotations: Vec<Annotation>,
    source: Option<Source>,
}

impl<'a, R: BufRead> HeaderCursor<'a, R> {
    pub fn new(input: &'a mut R, frame: usize) -> Self {
        HeaderCursor { input, frame, geometry: None, annotations: Vec::new(), source: None }
    }

    fn peek(&mut self) -> Result<Option<u8>, FrameError> {
        loop {
            match self.input.fill_buf() {
                Ok(buf) => return Ok(buf.first().copied()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FrameError::io(self.frame, &e)),
            }
        }
    }

    fn next(&mut self) -> Result<Option<u8>, FrameError> {
        let b = self.peek()?;
        if b.is_some() {
            self.input.consume(1);
        }
        Ok(b)
    }

    fn invalid(&self, msg: impl Into<String>) -> FrameError {
        FrameError::invalid(self.frame, msg)
    }

    /// The header read, with the metadata its comments carried.
    fn header(self, width: usize, height: usize, maxval: u16, channels: Channels) -> Header {
        Header {
            width,
            height,
            maxval,
            channels,
            geometry: self.geometry,
            annotations: self.annotations,
            source: self.source,
        }
    }

    /// Reads the rest of a `#` comment line and keeps a geometry or other `histopipe-*` comment.
    /// Only the first [`COMMENT_CAP`] bytes of a line are held: the rest of a longer comment
    /// streams by, and such a comment is dropped, or refused if it is a `histopipe-*` one (its
    /// value would be cut). The annotations of a header are held up to [`ANNOTATIONS_CAP`].
    fn comment(&mut self) -> Result<(), FrameError> {
        let mut text = Vec::new();
        let mut longer = false;
        loop {
            let buf = loop {
                match self.input.fill_buf() {
                    Ok(buf) => break buf,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(FrameError::io(self.frame, &e)),
                }
            };
            if buf.is_empty() {
                break;
            }
            let end = buf.iter().position(|&b| b == b'\n' || b == b'\r');
            let line = &buf[..end.unwrap_or(buf.len())];
            let room = COMMENT_CAP - text.len();
            text.extend_from_slice(&line[..line.len().min(room)]);
            longer |= line.len() > room;
            let taken = line.len() + usize::from(end.is_some());
            self.input.consume(taken);
            if end.is_some() {
                break;
            }
        }
        if longer {
            let start = text.trim_ascii_start();
            if start.starts_with(b"histopipe-") {
                return Err(self.invalid(format!(
                    "header comment '{}...' is longer than {COMMENT_CAP} bytes",
                    shown(&start[..start.len().min(32)])
                )));
            }
            return Ok(());
        }
        let text = String::from_utf8_lossy(&text);
        if let Some(parsed) = Geometry::parse_comment(&text) {
            self.geometry = Some(parsed.map_err(|m| self.invalid(m))?);
        } else if let Some(parsed) = Source::parse_comment(&text) {
            self.source = Some(parsed.map_err(|m| self.invalid(m))?);
        } else if let Some(a) = Annotation::parse_comment(&text) {
            self.annotations.retain(|old| old.key != a.key);
            self.annotations.push(a);
            let held: usize = self.annotations.iter().map(|a| a.key.len() + a.value.len() + 64).sum();
            if held > ANNOTATIONS_CAP {
                return Err(self.invalid(format!(
                    "more than {ANNOTATIONS_CAP} bytes of histopipe-* annotations in one header"
                )));
            }
        }
        Ok(())
    }

    /// Skips whitespace and comments before a header field.
    fn skip_space(&mut self) -> Result<(), FrameError> {
        while let Some(b) = self.peek()? {
            if b == b'#' {
                self.input.consume(1);
                self.comment()?;
            } else if b.is_ascii_whitespace() {
                self.input.consume(1);
            } else {
                break;
            }
        }
        Ok(())
    }

    /// A whitespace-delimited token of at most 64 bytes; empty at end of input.
    fn token(&mut self) -> Result<Vec<u8>, FrameError> {
        let mut tok = Vec::new();
        while let Some(b) = self.peek()? {
            if b.is_ascii_whitespace() || b == b'#' {
                break;
            }
            if tok.len() == 64 {
                break;
            }
            tok.push(b);
            self.input.consume(1);
        }
        Ok(tok)
    }

    /// A header number: decimal digits only, in 1..=max.
    fn number(&mut self, what: &str, max: u64) -> Result<u64, FrameError> {
        self.skip_space()?;
        let tok = self.token()?;
        if tok.is_empty() {
            return Err(self.invalid(format!("truncated header: no {what}")));
        }
        let shown = shown(&tok);
        if !tok.iter().all(|b| b.is_ascii_digit()) {
            return Err(self.invalid(format!("bad {what} '{shown}': not a decimal number")));
        }
        match shown.parse::<u64>() {
            Ok(0) => Err(self.invalid(format!("{what} is 0"))),
            Ok(v) if v <= max => Ok(v),
            _ => Err(self.invalid(format!("{what} {shown} is too large (at most {max})"))),
        }
    }

    /// The rest of a PNM header after its magic (`channels`: gray for PGM, RGB for PPM).
    pub fn pnm(mut self, channels: Channels) -> Result<Header, FrameError> {
        let width = self.number("width", u32::MAX as u64)? as usize;
        let height = self.number("height", u32::MAX as u64)? as usize;
        let maxval = self.number("maxval", 65535)? as u16;
        // Exactly one whitespace byte separates the header from the raster.
        match self.next()? {
            Some(b) if b.is_ascii_whitespace() => {}
            Some(_) => return Err(self.invalid("bad maxval: garbage after the number")),
            None => return Err(self.invalid("truncated header: no raster after maxval")),
        }
        Ok(self.header(width, height, maxval, channels))
    }

    /// The rest of a PBM header after its magic: width and height, no maxval. A packed raster
    /// (P4) follows exactly one whitespace byte, as after a PGM's maxval; a plain one (P1) may
    /// follow at once, its bits needing no space before them. The frame it makes is 8-bit gray,
    /// maxval 255 (see [`bit_sample`]).
    pub fn pbm(mut self, packed: bool) -> Result<Header, FrameError> {
        let width = self.number("width", u32::MAX as u64)? as usize;
        let height = self.number("height", u32::MAX as u64)? as usize;
        if packed {
            match self.next()? {
                Some(b) if b.is_ascii_whitespace() => {}
                Some(_) => return Err(self.invalid("bad height: garbage after the number")),
                None => return Err(self.invalid("truncated header: no raster after the height")),
            }
        }
        Ok(self.header(width, height, 255, Channels::Gray))
    }

    /// The rest of a PAM header after `P7`.
    pub fn pam(mut self) -> Result<Header, FrameError> {
        let (mut width, mut height, mut depth, mut maxval) = (None, None, None, None);
        let mut tupltype = Vec::new();
        loop {
            self.skip_space()?;
            let key = self.token()?;
            match key.as_slice() {
                b"" => return Err(self.invalid("truncated PAM header: no ENDHDR")),
                b"ENDHDR" => break,
                b"WIDTH" => width = Some(self.number("width", u32::MAX as u64)? as usize),
                b"HEIGHT" => height = Some(self.number("height", u32::MAX as u64)? as usize),
                b"DEPTH" => depth = Some(self.number("depth", 16)? as usize),
                b"MAXVAL" => maxval = Some(self.number("maxval", 65535)? as u16),
                b"TUPLTYPE" => {
                    while let Some(b) = self.peek()? {
                        if b == b' ' || b == b'\t' {
                            self.input.consume(1);
                        } else {
                            break;
                        }
                    }
                    tupltype = self.token()?;
                }
                other => return Err(self.invalid(format!("unknown PAM header field '{}'", shown(other)))),
            }
        }
        match self.next()? {
            Some(b'\n') => {}
            _ => return Err(self.invalid("bad PAM header: ENDHDR must end its line")),
        }
        let missing = |f: &str| self.invalid(format!("PAM header has no {f}"));
        let (width, height) =
            (width.ok_or_else(|| missing("WIDTH"))?, height.ok_or_else(|| missing("HEIGHT"))?);
        let depth = depth.ok_or_else(|| missing("DEPTH"))?;
        let maxval = maxval.ok_or_else(|| missing("MAXVAL"))?;
        let named = match tupltype.as_slice() {
            b"" => Channels::of_count(depth),
            t => Channels::of_tupltype(t),
        };
        let channels = match named {
            Some(c) if c.count() == depth => c,
            _ => {
                return Err(self.invalid(format!(
                    "PAM with DEPTH {depth} and TUPLTYPE '{}' is not supported (GRAYSCALE, GRAYSCALE_ALPHA, RGB or RGB_ALPHA, with their depth)",
                    shown(&tupltype)
                )))
            }
        };
        Ok(self.header(width, height, maxval, channels))
    }
}

/// Reads as many bytes as are there, up to `buf.len()`; returns how many.
pub(crate) fn read_full<R: BufRead>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match input.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Input bytes as a message may quote them: printable ASCII as is, anything else escaped
/// (`\xff`), so that no byte of the input reaches a terminal unescaped.
pub(crate) fn shown(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// The samples of an ASCII raster (P2, P3), one at a time: nothing is allocated for them here.
pub(crate) struct AsciiSamples<'a, R: BufRead> {
    cursor: HeaderCursor<'a, R>,
    read: usize,
    count: usize,
}

impl<'a, R: BufRead> AsciiSamples<'a, R> {
    /// A raster of `count` samples.
    pub fn new(input: &'a mut R, frame: usize, count: usize) -> Self {
        AsciiSamples { cursor: HeaderCursor::new(input, frame), read: 0, count }
    }

    /// The next sample (a decimal number up to 65535).
    pub fn next(&mut self) -> Result<u16, FrameError> {
        let cur = &mut self.cursor;
        cur.skip_space()?;
        let tok = cur.token()?;
        let at = self.read;
        if tok.is_empty() {
            return Err(cur.invalid(format!("truncated pixel data: {at} of {} samples", self.count)));
        }
        match std::str::from_utf8(&tok).ok().filter(|t| t.bytes().all(|b| b.is_ascii_digit())) {
            Some(t) => match t.parse::<u16>() {
                Ok(v) => {
                    self.read += 1;
                    Ok(v)
                }
                Err(_) => Err(cur.invalid(format!("bad sample '{}' at sample {at}", shown(&tok)))),
            },
            None => Err(cur.invalid(format!("bad sample '{}' at sample {at}", shown(&tok)))),
        }
    }
}

/// A PBM bit as a sample of an 8-bit gray frame: netpbm's 1 is black, 0 white, and they become 0
/// and 255, as OpenCV's `cv2.imread` gives them (and netpbm's `pbmtopgm` at maxval 255).
pub(crate) const fn bit_sample(bit: u8) -> u8 {
    if bit & 1 == 1 {
        0
    } else {
        255
    }
}

/// The bits of a plain PBM raster (P1), one at a time, as samples ([`bit_sample`]): each `0` or
/// `1` is one pixel, with whitespace and comments allowed between any two but not needed, as
/// netpbm reads them.
pub(crate) struct AsciiBits<'a, R: BufRead> {
    cursor: HeaderCursor<'a, R>,
    read: usize,
    count: usize,
}

impl<'a, R: BufRead> AsciiBits<'a, R> {
    /// A raster of `count` pixels.
    pub fn new(input: &'a mut R, frame: usize, count: usize) -> Self {
        AsciiBits { cursor: HeaderCursor::new(input, frame), read: 0, count }
    }

    /// The next pixels' samples, `out.len()` of them: the bits and whitespace the input holds
    /// already taken in bulk, anything else (a comment, a bad byte, the end) by [`Self::next`].
    pub fn fill(&mut self, out: &mut [u8]) -> Result<(), FrameError> {
        let mut k = 0;
        while k < out.len() {
            let buf = self.cursor.input.fill_buf().unwrap_or_default();
            let mut used = 0;
            for &b in buf {
                if k == out.len() {
                    break;
                }
                match b {
                    b'0' | b'1' => {
                        out[k] = bit_sample(b - b'0');
                        k += 1;
                        self.read += 1;
                    }
                    b if b.is_ascii_whitespace() => {}
                    _ => break,
                }
                used += 1;
            }
            self.cursor.input.consume(used);
            if used == 0 {
                out[k] = self.next()?;
                k += 1;
            }
        }
        Ok(())
    }

    /// The next pixel's sample.
    pub fn next(&mut self) -> Result<u8, FrameError> {
        let cur = &mut self.cursor;
        cur.skip_space()?;
        let at = self.read;
        match cur.next()? {
            Some(b @ (b'0' | b'1')) => {
                self.read += 1;
                Ok(bit_sample(b - b'0'))
            }
            Some(b) => Err(cur.invalid(format!("bad bit '{}' at pixel {at} (0 or 1)", shown(&[b])))),
            None => Err(cur.invalid(format!("truncated pixel data: {at} of {} bits", self.count))),
        }
    }
}
