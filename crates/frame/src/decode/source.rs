//! The bytes of one encoded image, as a walk over its structure asks for them.
//!
//! A stream may hold several images back to back, so the reader must find where each ends without
//! reading into the next. The walks over each container (JPEG markers, PNG chunks, TIFF
//! directories) ask a [`Source`] for exactly the bytes they need: from a slice that already holds
//! them (the input's buffer, no copy), or gathered from a reader into a vector, never past what the
//! walk asked for.

use std::io::{self, BufRead};

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
}

/// An image in a slice: nothing is copied.
pub(crate) struct SliceSource<'a> {
    bytes: &'a [u8],
    len: usize,
}

impl<'a> SliceSource<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        SliceSource { bytes, len: 0 }
    }
}

impl Source for SliceSource<'_> {
    fn got(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn want(&mut self, n: usize) -> io::Result<bool> {
        if n > self.bytes.len() {
            return Ok(false);
        }
        self.len = self.len.max(n);
        Ok(true)
    }

    fn peek(&mut self) -> io::Result<&[u8]> {
        Ok(&self.bytes[self.len..])
    }

    fn take(&mut self, n: usize) {
        self.len = (self.len + n).min(self.bytes.len());
    }
}

/// An image gathered from a reader into a vector, taking from the reader only what was asked.
pub(crate) struct ReadSource<'a, R> {
    input: &'a mut R,
    bytes: Vec<u8>,
}

impl<'a, R: BufRead> ReadSource<'a, R> {
    /// Gathers after `start`, the image's first bytes already read.
    pub fn new(input: &'a mut R, start: &[u8]) -> Self {
        ReadSource { input, bytes: start.to_vec() }
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
        self.fill()
    }

    fn take(&mut self, n: usize) {
        // Only ever called for bytes at hand in the reader's buffer (after `fill`).
        if let Ok(buf) = self.input.fill_buf() {
            let n = n.min(buf.len());
            self.bytes.extend_from_slice(&buf[..n]);
            self.input.consume(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_source_takes_only_what_was_asked() {
        let data = b"0123456789";
        let mut input = io::BufReader::with_capacity(3, &data[..]);
        let mut src = ReadSource::new(&mut input, b"ab");
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
        let mut src = ReadSource::new(&mut input, b"");
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
}
