//! The memory contract of reading: how much heap one frame may take, whatever its bytes say.
//!
//! Every size in a stream is untrusted, so the reader does not allocate what a header asks for
//! until it knows the whole of it fits the budget below. For decoded containers it estimates the
//! decoder's peak from the header (the output, the decoder's own planes and rows, the compressed
//! bytes it holds) and refuses the frame before decoding when the estimate is over.

use crate::{FrameError, FrameErrorKind};

/// Fixed room for what does not grow with the image: Huffman and quantisation tables, small
/// vectors, row state of the decoders' setup.
const FIXED: u64 = 1 << 20;

/// The most heap that reading one frame holds at any moment, beyond what the caller allocated:
/// 4 bytes per allowed pixel (the frame itself is at most 2, a 16-bit one; the rest is the
/// decoders' working memory), twice the frame's encoded bytes (a copy gathered from a pipe, and
/// what a decoder keeps in proportion to its input: metadata segments, compressed strips), and
/// 1 MiB.
///
/// `max_pixels` is `--max-pixels`; `input_len` is the length of the input the frame is read from
/// (a frame never uses more of it than it has). A frame whose estimated peak is over this bound is
/// refused with [`FrameErrorKind::TooLarge`] before anything is allocated for it.
pub fn read_memory_bound(max_pixels: u64, input_len: usize) -> u64 {
    max_pixels.saturating_mul(4).saturating_add((input_len as u64).saturating_mul(2)).saturating_add(FIXED)
}

/// What one frame may allocate while it is decoded: the bound less what the reader already holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// The frame's number, for messages.
    pub frame: usize,
    /// `--max-pixels`.
    pub max_pixels: u64,
    /// Bytes the decoder may take in all.
    pub bytes: u64,
}

impl Budget {
    /// The budget of a frame read from `len` encoded bytes, `held` of them copied onto the heap.
    pub fn new(frame: usize, max_pixels: u64, len: usize, held: usize) -> Budget {
        let bytes = read_memory_bound(max_pixels, len).saturating_sub(held as u64);
        Budget { frame, max_pixels, bytes }
    }

    /// Refuses a frame of `width` x `height` pixels over `--max-pixels`.
    pub fn check_pixels(&self, width: u64, height: u64) -> Result<u64, FrameError> {
        match width.checked_mul(height) {
            Some(n) if n <= self.max_pixels => Ok(n),
            _ => Err(FrameError {
                frame: self.frame,
                kind: FrameErrorKind::TooLarge,
                message: format!(
                    "{width}x{height} is {} pixels, over the limit of {} (--max-pixels)",
                    width as u128 * height as u128,
                    self.max_pixels
                ),
            }),
        }
    }

    /// Refuses to decode `what` when its estimated peak memory, `need` bytes, is over the budget.
    pub fn check_memory(&self, what: &str, need: u64) -> Result<(), FrameError> {
        if need <= self.bytes {
            return Ok(());
        }
        Err(FrameError {
            frame: self.frame,
            kind: FrameErrorKind::TooLarge,
            message: format!(
                "decoding {what} needs about {} of memory, over the {} that --max-pixels {} allows \
                 (raise --max-pixels to read it)",
                mib(need),
                mib(self.bytes),
                self.max_pixels
            ),
        })
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_is_four_bytes_a_pixel_two_an_input_byte_and_a_mebibyte() {
        assert_eq!(read_memory_bound(1 << 16, 1000), (1 << 18) + 2000 + (1 << 20));
        assert_eq!(read_memory_bound(u64::MAX, usize::MAX), u64::MAX);
    }

    #[test]
    fn memory_over_the_budget_is_refused_as_too_large() {
        let b = Budget::new(3, 1 << 10, 0, 0);
        assert!(b.check_memory("x", b.bytes).is_ok());
        let e = b.check_memory("a 9x9 JPEG", b.bytes + 1).unwrap_err();
        assert_eq!((e.frame, e.kind), (3, FrameErrorKind::TooLarge));
        assert!(e.message.contains("raise --max-pixels"), "{}", e.message);
        let held = Budget::new(1, 1 << 10, 100, 100);
        assert_eq!(held.bytes, read_memory_bound(1 << 10, 100) - 100);
    }
}
