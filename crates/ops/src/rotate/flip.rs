//! `rotate --flip`: the frame mirrored before it is turned, as `cv2.flip` mirrors it (flipCode 1
//! horizontally, 0 vertically, -1 both). A flip is an exact permutation of the pixels: output
//! (x, y) takes input (W - 1 - x, y), (x, H - 1 - y) or both; the turn then takes the mirrored
//! frame as its input, exactly as a turn of that frame alone would.

use std::mem::MaybeUninit;

use histopipe_frame::Affine;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch};

use crate::{parallel, Element, Gpu, OpError};

/// Which way a frame is mirrored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flip {
    /// Left to right (`cv2.flip(a, 1)`).
    Horizontal,
    /// Top to bottom (`cv2.flip(a, 0)`).
    Vertical,
    /// Both, a half turn (`cv2.flip(a, -1)`).
    Both,
}

/// Half the fewest samples for the CPU's flip to be split at all, and the fewest in a part once
/// split ([`parallel::parts_split_from`]): a flip costs about one copy of the frame, as `pad`'s
/// border does.
const MIN_SPLIT: usize = 1 << 20;
const MIN_PART: usize = 1 << 17;

impl Flip {
    fn mirrors(self) -> (bool, bool) {
        match self {
            Flip::Horizontal => (true, false),
            Flip::Vertical => (false, true),
            Flip::Both => (true, true),
        }
    }

    /// The number of rotate.cu's `flip_*` kernels for this flip: bit 0 horizontal, bit 1
    /// vertical.
    fn kernel_mode(self) -> u32 {
        let (h, v) = self.mirrors();
        u32::from(h) | u32::from(v) << 1
    }

    /// The map from the mirrored `width x height` frame's pixel coordinates to the frame's: its
    /// coefficients are 0, ±1 and W - 1, H - 1, exact.
    pub fn new_to_old(self, width: usize, height: usize) -> Affine {
        let (h, v) = self.mirrors();
        let (a, c) = if h { (-1.0, width as f64 - 1.0) } else { (1.0, 0.0) };
        let (e, f) = if v { (-1.0, height as f64 - 1.0) } else { (1.0, 0.0) };
        Affine { a, b: 0.0, c, d: 0.0, e, f }
    }

    /// The `width x height` samples `input` mirrored, in bands of rows over the cores.
    pub(super) fn cpu_samples<T: Element>(self, width: usize, height: usize, input: &[T]) -> Vec<T> {
        let n = width * height;
        if n == 0 {
            return Vec::new();
        }
        let (h, v) = self.mirrors();
        let band = height.div_ceil(parallel::parts_split_from(n, MIN_SPLIT, MIN_PART)) * width;
        let rows_of = |first: usize, part: &mut [MaybeUninit<T>]| {
            for (y, row) in (first / width..).zip(part.chunks_exact_mut(width)) {
                let from = &input[if v { height - 1 - y } else { y } * width..][..width];
                if h {
                    copy_reversed(row, from);
                } else {
                    copy(row, from);
                }
            }
        };
        // SAFETY: the parts are of whole rows, and every slot of a row is written.
        unsafe { parallel::output_in_parts(n, band, rows_of) }
    }

    /// Queues the mirroring of the `width x height` frame in `src` into `dst` (as large).
    pub fn queue<T: Element>(
        self,
        gpu: &Gpu,
        width: usize,
        height: usize,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        if width == 0 || height == 0 {
            return Ok(());
        }
        let (w, h, mode) = (width as u32, height as u32, self.kernel_mode());
        let cfg = launch::cover(width * height, 256);
        let name = format!("flip_{}", T::KERNEL_SUFFIX);
        // SAFETY: flip_*(in, w, h, out, mode) in rotate.cu; `src` and `dst` hold w x h samples
        // each, and are distinct buffers.
        unsafe { launch!(gpu, kernels::ROTATE, name, cfg; src, &w, &h, dst, &mode) }?;
        Ok(())
    }
}

/// `to[i] = from[i]` for every element of `to` (as long as `from`): a `memcpy`.
pub(crate) fn copy<T: Copy>(to: &mut [MaybeUninit<T>], from: &[T]) {
    let from = &from[..to.len()];
    // SAFETY: `to` and `from` are as long, and distinct (`to` is an output being written).
    unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_mut_ptr().cast::<T>(), to.len()) };
}

/// `to[i] = from[n - 1 - i]` for the n elements of `to` (as long as `from`): a row mirrored.
/// Built for AVX2 where the CPU has it, so that the compiler reverses 32 bytes at a time with
/// `vpshufb` and `vpermq`; the build's baseline (SSE2) has no byte shuffle, and reversed 8-bit
/// rows at a third of the speed (`rotate 0 --flip h` on 2 threads of the build machine, by
/// `histopipe-bench cpu`: 640x651 in 0.0073 ms, was 0.0205, `cv2.flip` 0.0113; 2560x1707 in 0.10
/// to 0.12 ms, was 0.23 to 0.66, `cv2.flip` 0.086).
pub(crate) fn copy_reversed<T: Copy>(to: &mut [MaybeUninit<T>], from: &[T]) {
    #[inline(always)]
    fn each<T: Copy>(to: &mut [MaybeUninit<T>], from: &[T]) {
        let n = to.len();
        let from = &from[..n];
        for (i, slot) in to.iter_mut().enumerate() {
            slot.write(from[n - 1 - i]);
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        /// # Safety
        /// The CPU has AVX2 (an `unsafe fn`: safe functions with target features need Rust 1.86,
        /// and the workspace builds with 1.85).
        #[target_feature(enable = "avx2")]
        unsafe fn wide<T: Copy>(to: &mut [MaybeUninit<T>], from: &[T]) {
            each(to, from)
        }
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { wide(to, from) };
    }
    each(to, from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of every sample type and of every length up to 100 (each remainder of the wide
    /// loop) are reversed.
    #[test]
    fn rows_reverse_at_every_length() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(row: &[T]) {
            for n in 0..row.len() {
                let mut to = vec![MaybeUninit::uninit(); n];
                copy_reversed(&mut to, &row[..n]);
                // SAFETY: `copy_reversed` wrote every slot.
                let to: Vec<T> = to.into_iter().map(|v| unsafe { v.assume_init() }).collect();
                assert_eq!(to, row[..n].iter().rev().copied().collect::<Vec<T>>(), "{n}");
            }
        }
        check(&(0..100).map(|i| i as u8).collect::<Vec<u8>>());
        check(&(0..100).map(|i| i as u16 * 517).collect::<Vec<u16>>());
        check(&(0..100).map(|i| i as f32 * -0.25).collect::<Vec<f32>>());
    }

    /// Each flip is NumPy's `a[:, ::-1]`, `a[::-1]` or `a[::-1, ::-1]`, and its map says where
    /// each pixel came from, whatever the split over the threads.
    #[test]
    fn flips_mirror_the_rows_and_columns() {
        let mut rng = fastrand::Rng::with_seed(41);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            let input: Vec<u16> = (0..w * h).map(|_| rng.u16(..)).collect();
            for flip in [Flip::Horizontal, Flip::Vertical, Flip::Both] {
                let out = flip.cpu_samples(w, h, &input);
                let m = flip.new_to_old(w, h);
                for (i, &s) in out.iter().enumerate() {
                    let (sx, sy) = m.apply((i % w) as f64, (i / w) as f64);
                    let (fh, fv) = flip.mirrors();
                    let (x, y) = (i % w, i / w);
                    let expected = (if fh { w - 1 - x } else { x }, if fv { h - 1 - y } else { y });
                    assert_eq!((sx, sy), (expected.0 as f64, expected.1 as f64));
                    assert_eq!(s, input[expected.1 * w + expected.0], "{w}x{h} {flip:?} at {i}");
                }
                parallel::testing::same_on_each_pool(&format!("{w}x{h} {flip:?}"), || {
                    flip.cpu_samples(w, h, &input)
                });
            }
        }
    }
}
