//! The bytes of one encoded image, as a walk over its structure asks for them.
//!
//! A stream may hold several images back to back, so the reader must find where each ends without
//! reading into the next. The walks over each container (JPEG markers, PNG chunks, TIFF
//! directories) ask a [`Source`] for exactly the bytes they need: from a slice that already holds
//! them (the input's buffer, no copy), or gathered from a reader into a vector, never past what the
//! walk asked for.
//!
//! A walk may also leave bytes out of the image: metadata the decoder does not use (JPEG APPn
//! segments, PNG ancillary chunks, what a BMP says follows its pixels). Those are read past and
//! never held, and the decoder gets the image without them, however it was read: from a reader
//! they are not gathered, and from a slice the bytes kept are copied out once the first is left
//! out, so that reading a file and reading a pipe decode the same bytes.

use std::io::{self, BufRead};

use crate::budget::{read_gather_bound, GatheredTooMuch};

/// Bytes from the first byte of an image, made available as a walk asks for them.
pub(crate) trait Source {
    /// The bytes made available so far.
    fn got(&self) -> &[u8];

    /// Makes the first `n` bytes available; false when the input ends first.
    fn want(&mut self, n: usize) -> io::Result<bool>;

    /// Bytes after [`Source::got`] that are at hand without waiting (empty at the end of the
    /// input); they are not taken until [`Source::take`].
    fn peek(&mut self) -> io::Result<&[u8]>;

    /// Takes the first `n` bytes of the last [`Source::peek`].
    fn take(&mut self, n: usize);

    /// Leaves the bytes from `from` (at most `got().len()`) to `to` out of the image: those
    /// gathered are forgotten and the rest read past, so that the bytes after `to` come next, at
    /// `from`. False when the input ends first.
    fn leave_out(&mut self, from: usize, to: usize) -> io::Result<bool>;

    /// Bytes of the input the image has taken, those left out included.
    fn taken(&self) -> usize;
}

/// An image in a slice: nothing is copied, until a byte is left out.
pub(crate) struct SliceSource<'a> {
    bytes: &'a [u8],
    /// Where the walk is in `bytes`: how far the image has taken.
    at: usize,
    /// The bytes kept, once some were left out; else `bytes[..at]`.
    kept: Option<Vec<u8>>,
}

impl<'a> SliceSource<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        SliceSource { bytes, at: 0, kept: None }
    }

    /// The image's bytes: in the slice, or the copy kept without those left out.
    pub fn into_kept(self) -> std::borrow::Cow<'a, [u8]> {
        match self.kept {
            Some(kept) => std::borrow::Cow::Owned(kept),
            None => std::borrow::Cow::Borrowed(&self.bytes[..self.at]),
        }
    }
}

impl Source for SliceSource<'_> {
    fn got(&self) -> &[u8] {
        match &self.kept {
            Some(kept) => kept,
            None => &self.bytes[..self.at],
        }
    }

    fn want(&mut self, n: usize) -> io::Result<bool> {
        let more = n.saturating_sub(self.got().len());
        if self.at + more > self.bytes.len() {
            return Ok(false);
        }
        self.take(more);
        Ok(true)
    }

    fn peek(&mut self) -> io::Result<&[u8]> {
        Ok(&self.bytes[self.at..])
    }

    fn take(&mut self, n: usize) {
        let end = (self.at + n).min(self.bytes.len());
        if let Some(kept) = self.kept.as_mut() {
            kept.extend_from_slice(&self.bytes[self.at..end]);
        }
        self.at = end;
    }

    fn leave_out(&mut self, from: usize, to: usize) -> io::Result<bool> {
        let got = self.got().len();
        let kept = self.kept.get_or_insert_with(|| self.bytes[..self.at].to_vec());
        kept.truncate(from);
        let end = self.at + to.saturating_sub(got);
        if end > self.bytes.len() {
            self.at = self.bytes.len();
            return Ok(false);
        }
        self.at = end;
        Ok(true)
    }

    fn taken(&self) -> usize {
        self.at
    }
}

/// An image gathered from a reader into a vector, taking from the reader only what was asked,
/// and never more than [`read_gather_bound`] of `--max-pixels`: asked for more, it fails with
/// [`GatheredTooMuch`] (which the frame's error says as too large), holding at most that.
pub(crate) struct ReadSource<'a, R> {
    input: &'a mut R,
    bytes: Vec<u8>,
    /// Bytes read past, left out of `bytes`.
    left_out: usize,
    max_pixels: u64,
    /// The most bytes gathered.
    limit: usize,
}

impl<'a, R: BufRead> ReadSource<'a, R> {
    /// Gathers after `start`, the image's first bytes already read, for a reader of
    /// `--max-pixels` `max_pixels`.
    pub fn new(input: &'a mut R, start: &[u8], max_pixels: u64) -> Self {
        let limit = usize::try_from(read_gather_bound(max_pixels)).unwrap_or(usize::MAX);
        ReadSource { input, bytes: start.to_vec(), left_out: 0, max_pixels, limit }
    }

    fn over_limit(&self) -> io::Error {
        io::Error::other(GatheredTooMuch { max_pixels: self.max_pixels })
    }

    /// The bytes gathered, without the slack of the vector's growth.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.bytes.shrink_to_fit();
        self.bytes
    }

    fn fill(&mut self) -> io::Result<&[u8]> {
        loop {
            match self.input.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.input.fill_buf()
    }
}

impl<R: BufRead> Source for ReadSource<'_, R> {
    fn got(&self) -> &[u8] {
        &self.bytes
    }

    fn want(&mut self, n: usize) -> io::Result<bool> {
        if n > self.limit {
            return Err(self.over_limit());
        }
        while self.bytes.len() < n {
            let need = n - self.bytes.len();
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let k = buf.len().min(need);
            self.take(k);
        }
        Ok(true)
    }

    fn peek(&mut self) -> io::Result<&[u8]> {
        if self.bytes.len() >= self.limit {
            return Err(self.over_limit());
        }
        self.fill()
    }

    fn take(&mut self, n: usize) {
        // Only ever called for bytes at hand in the reader's buffer (after `fill`).
        let room = self.limit - self.bytes.len().min(self.limit);
        if let Ok(buf) = self.input.fill_buf() {
            let n = n.min(buf.len()).min(room);
            self.bytes.extend_from_slice(&buf[..n]);
            self.input.consume(n);
        }
    }

    fn leave_out(&mut self, from: usize, to: usize) -> io::Result<bool> {
        let mut skip = to.saturating_sub(self.bytes.len());
        self.left_out += self.bytes.len() - from.min(self.bytes.len());
        self.bytes.truncate(from);
        while skip > 0 {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let n = buf.len().min(skip);
            self.input.consume(n);
            self.left_out += n;
            skip -= n;
        }
        Ok(true)
    }

    fn taken(&self) -> usize {
        self.bytes.len() + self.left_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_source_takes_only_what_was_asked() {
        let data = b"0123456789";
        let mut input = io::BufReader::with_capacity(3, &data[..]);
        let mut src = ReadSource::new(&mut input, b"ab", 1 << 20);
        assert!(src.want(7).unwrap());
        assert_eq!(src.got(), b"ab01234");
        let at_hand = src.peek().unwrap().to_vec();
        assert_eq!(at_hand, b"5");
        src.take(1);
        assert!(!src.want(20).unwrap());
        assert_eq!(src.into_bytes(), b"ab0123456789");
        let mut rest = Vec::new();
        io::Read::read_to_end(&mut input, &mut rest).unwrap();
        assert!(rest.is_empty());

        let mut input = &data[..];
        let mut src = ReadSource::new(&mut input, b"", 1 << 20);
        assert!(src.want(4).unwrap());
        drop(src);
        assert_eq!(input, b"456789", "bytes not asked for stay in the input");
    }

    #[test]
    fn a_slice_source_never_runs_past_its_slice() {
        let mut src = SliceSource::new(b"abc");
        assert!(src.want(2).unwrap());
        assert_eq!(src.peek().unwrap(), b"c");
        src.take(5);
        assert_eq!(src.got(), b"abc");
        assert!(!src.want(4).unwrap());
    }

    #[test]
    fn bytes_left_out_are_read_past_and_not_kept_whichever_the_source() {
        let data = b"0123456789abcdef";
        let mut input = io::BufReader::with_capacity(3, &data[..]);
        let mut read = ReadSource::new(&mut input, b"", 1 << 20);
        let mut slice = SliceSource::new(data);
        for src in [&mut read as &mut dyn Source, &mut slice] {
            assert!(src.want(4).unwrap());
            // Leave out "23456": two bytes gathered, three more read past.
            assert!(src.leave_out(2, 7).unwrap());
            assert_eq!(src.got(), b"01");
            assert!(src.want(4).unwrap());
            assert_eq!(src.got(), b"0178");
            assert_eq!(src.taken(), 9);
            assert!(!src.leave_out(4, 40).unwrap());
        }
        assert_eq!(slice.into_kept().as_ref(), b"0178");
        assert_eq!(read.into_bytes(), b"0178");
    }
}
