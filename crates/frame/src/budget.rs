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

/// Decoding work one encoded byte may cause beyond one `--max-pixels` frame, in pixels (or, for a
/// JPEG's scans, coefficients): 4096, about 4 times the most that deflate expands (1032:1), so
/// that every real image is within it, while a few bytes that a decoder must go over many times
/// (pages that all point at one strip, scans that each pass over every block) are not.
pub const WORK_PER_BYTE: u64 = 4096;

/// The most decoding work reading one encoded input (a PNG, a JPEG, a TIFF and all its pages)
/// may cause, in pixels decoded (a progressive JPEG: coefficients its scans go over): one frame of
/// `--max-pixels`, and [`WORK_PER_BYTE`] for each of its `input_len` bytes. An input whose work
/// is over it is refused with [`FrameErrorKind::TooLarge`] before the work that would go over.
pub fn read_work_bound(max_pixels: u64, input_len: usize) -> u64 {
    max_pixels.saturating_add((input_len as u64).saturating_mul(WORK_PER_BYTE))
}

/// The most bytes of one encoded image the reader gathers from its input before the image is
/// decoded: 16 bytes a pixel of `--max-pixels` (four 32-bit float samples stored uncompressed,
/// the widest pixel any container here holds), and 1 MiB of headers and tables. No image within
/// `--max-pixels` needs more; an input that would make the reader hold more (a TIFF directory far
/// into a pipe, a JPEG's coded data that never ends) is refused as it comes, holding at most this.
pub fn read_gather_bound(max_pixels: u64) -> u64 {
    max_pixels.saturating_mul(16).saturating_add(FIXED)
}

/// What a source of an image's bytes fails with when asked for more than [`read_gather_bound`]:
/// an I/O error that [`FrameError::io`] makes [`FrameErrorKind::TooLarge`].
#[derive(Debug)]
pub(crate) struct GatheredTooMuch {
    pub max_pixels: u64,
}

impl std::fmt::Display for GatheredTooMuch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the image goes on past {}, more than an image of --max-pixels {} takes \
             (raise --max-pixels to read it)",
            mib(read_gather_bound(self.max_pixels)),
            self.max_pixels
        )
    }
}

impl std::error::Error for GatheredTooMuch {}

/// What one frame may allocate while it is decoded: the bound less what the reader already holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// The frame's number, for messages.
    pub frame: usize,
    /// `--max-pixels`.
    pub max_pixels: u64,
    /// Bytes the decoder may take in all.
    pub bytes: u64,
    /// The encoded input's length, for messages.
    pub len: usize,
    /// Decoding work the input may still cause ([`read_work_bound`] less what its earlier frames
    /// took).
    pub work: u64,
}

impl Budget {
    /// The budget of a frame read from `len` encoded bytes, `held` of them copied onto the heap.
    pub fn new(frame: usize, max_pixels: u64, len: usize, held: usize) -> Budget {
        let bytes = read_memory_bound(max_pixels, len).saturating_sub(held as u64);
        Budget { frame, max_pixels, bytes, len, work: read_work_bound(max_pixels, len) }
    }

    /// The same budget, `spent` of its work taken by the input's earlier frames.
    pub fn after(self, spent: u64) -> Budget {
        Budget { work: self.work.saturating_sub(spent), ..self }
    }

    /// Refuses to decode `what` when its `work` (pixels, or coefficients) is over what the input
    /// may still cause.
    pub fn check_work(&self, what: &str, work: u64) -> Result<(), FrameError> {
        if work <= self.work {
            return Ok(());
        }
        Err(FrameError {
            frame: self.frame,
            kind: FrameErrorKind::TooLarge,
            message: format!(
                "decoding {what} is {work} pixels of work, over the {} left of what --max-pixels {} \
                 and the input's {} bytes allow ({} + {WORK_PER_BYTE} a byte; raise --max-pixels to \
                 read it)",
                self.work, self.max_pixels, self.len, self.max_pixels
            ),
        })
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

    #[test]
    fn work_is_one_frame_and_4096_pixels_a_byte_less_what_was_spent() {
        assert_eq!(read_work_bound(1 << 10, 3), (1 << 10) + 3 * 4096);
        assert_eq!(read_work_bound(u64::MAX, usize::MAX), u64::MAX);
        let b = Budget::new(2, 1 << 10, 3, 0);
        assert!(b.check_work("x", b.work).is_ok());
        let e = b.after(1).check_work("page 2 of this TIFF", b.work).unwrap_err();
        assert_eq!((e.frame, e.kind), (2, FrameErrorKind::TooLarge));
        assert!(e.message.contains("raise --max-pixels"), "{}", e.message);
        assert_eq!(read_gather_bound(1 << 10), (1 << 14) + (1 << 20));
    }
}
