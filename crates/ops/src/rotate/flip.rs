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
                    for (slot, &s) in row.iter_mut().zip(from.iter().rev()) {
                        slot.write(s);
                    }
                } else {
                    for (slot, &s) in row.iter_mut().zip(from) {
                        slot.write(s);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
