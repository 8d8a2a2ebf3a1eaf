//! How `pad` makes its border: the fill value, or one of OpenCV's border types, each output pixel
//! outside the frame copying the frame's pixel that `cv2.borderInterpolate` names.
//!
//! OpenCV's `borderInterpolate(p, len, type)` reflects (or wraps) a coordinate p outside 0..len
//! again and again until it is inside; [`Border::source`] is the same index in closed form (one
//! remainder), so that a border wider than the frame costs no more than a narrow one:
//!
//! - replicate (`BORDER_REPLICATE`, `aaaaaa|abcdefgh|hhhhhhh`): p clamped to 0..len-1;
//! - reflect (`BORDER_REFLECT`, `fedcba|abcdefgh|hgfedcb`): q = p mod 2 len, then q if q < len,
//!   else 2 len - 1 - q;
//! - reflect101 (`BORDER_REFLECT_101`, `gfedcb|abcdefgh|gfedcba`): q = p mod 2 (len - 1), then q if
//!   q < len, else 2 (len - 1) - q; 0 when len is 1;
//! - wrap (`BORDER_WRAP`, `cdefgh|abcdefgh|abcdefg`): p mod len.
//!
//! (mod: the remainder of Euclid's division, in 0..m.) The tests compare it with OpenCV's loop for
//! every p in -70..70 and len in 1..14, and the tool with `cv2.copyMakeBorder` itself.

use std::mem::MaybeUninit;

use super::Pad;
use crate::rotate::flip;
use crate::{parallel, Element, OpError};

/// What the border outside the frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Border {
    /// The fill value (`BORDER_CONSTANT`).
    #[default]
    Constant,
    /// The nearest edge pixel (`BORDER_REPLICATE`).
    Replicate,
    /// The frame mirrored, its edge pixels repeated (`BORDER_REFLECT`).
    Reflect,
    /// The frame mirrored about its edge pixels (`BORDER_REFLECT_101`, OpenCV's default).
    Reflect101,
    /// The frame repeated (`BORDER_WRAP`).
    Wrap,
}

impl Border {
    /// The mode's number in pad.cu's `pad_border_*` kernels (`BORDER_*` there; the GPU tests
    /// compare every mode with the CPU, so a mismatch fails them).
    pub(super) fn kernel_mode(self) -> u32 {
        match self {
            Border::Constant => 0,
            Border::Replicate => 1,
            Border::Reflect => 2,
            Border::Reflect101 => 3,
            Border::Wrap => 4,
        }
    }

    /// The frame's coordinate that coordinate `p` of the padded frame copies along an axis of
    /// `len >= 1` pixels: p itself inside 0..len, else `cv2.borderInterpolate(p, len, type)`
    /// (see the module's doc); `None` for a constant border outside the frame.
    pub fn source(self, p: i64, len: usize) -> Option<usize> {
        let n = len as i64;
        if (0..n).contains(&p) {
            return Some(p as usize);
        }
        let q = match self {
            Border::Constant => return None,
            Border::Replicate => p.clamp(0, n - 1),
            Border::Reflect => {
                let q = p.rem_euclid(2 * n);
                if q < n {
                    q
                } else {
                    2 * n - 1 - q
                }
            }
            Border::Reflect101 if n == 1 => 0,
            Border::Reflect101 => {
                let q = p.rem_euclid(2 * (n - 1));
                if q < n {
                    q
                } else {
                    2 * (n - 1) - q
                }
            }
            Border::Wrap => p.rem_euclid(n),
        };
        Some(q as usize)
    }
}

impl Pad {
    /// This padding with its border made by `border`, for `width x height` frames: any border
    /// but the constant one needs a frame of at least one pixel to copy from (OpenCV's
    /// `copyMakeBorder` loops forever on an empty one).
    pub fn with_border(self, border: Border, width: usize, height: usize) -> Result<Pad, OpError> {
        let empty = width == 0 || height == 0;
        let border_needed = self.width > width || self.height > height;
        if border != Border::Constant && empty && border_needed {
            return Err(OpError::invalid(format!(
                "a {width}x{height} frame has no pixels for a border that copies them (only a constant one)"
            )));
        }
        Ok(Pad { border, ..self })
    }

    /// The padded samples of a border that copies the frame's (not [`Border::Constant`]), in
    /// bands of output rows over the cores as the constant border's: each output row is the
    /// frame's row its y names, copied through the runs ([`Run`]) of a table of the frame's
    /// column for each output column, made once: a mirrored run reversed, a repeated one filled,
    /// the rest copied, with no table look-up a sample (`pad --mode reflect101` to the diagonal,
    /// 2 threads of the build machine: 640x651 in 0.025 to 0.037 ms, was 0.10 to 0.16 by the
    /// table, `cv2.copyMakeBorder` 0.097; 2560x1707 in 0.21 to 0.25, was 0.75 to 1.26, OpenCV
    /// 0.70).
    pub(super) fn cpu_copied_border<T: Element>(
        &self,
        w: usize,
        h: usize,
        input: &[T],
        band: usize,
    ) -> Vec<T> {
        let n = self.width * self.height;
        let source = |p: usize, shift: usize, len: usize| {
            // Coordinates of the padded frame and of the frame are both below 2^32.
            self.border.source(p as i64 - shift as i64, len).unwrap_or(0)
        };
        let columns: Vec<usize> = (0..self.width).map(|x| source(x, self.left, w)).collect();
        let runs = Run::of(&columns);
        let rows_of = |first: usize, part: &mut [MaybeUninit<T>]| {
            for (y, row) in (first / self.width..).zip(part.chunks_exact_mut(self.width)) {
                let frame = &input[source(y, self.top, h) * w..][..w];
                for run in &runs {
                    run.copy(row, frame);
                }
            }
        };
        // SAFETY: the parts are of whole rows, and every slot of a row is written: the runs
        // cover the row's columns.
        unsafe { parallel::output_in_parts(n, band, rows_of) }
    }
}

/// Output columns `at..at + len` of a row, taking the frame's columns `from`, `from + step`, ...
/// (`step` 1: a copy; -1: mirrored; 0: one column repeated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    at: usize,
    from: usize,
    len: usize,
    step: isize,
}

impl Run {
    /// The runs that `columns` (the frame's column for each output column) falls into, in order,
    /// covering every output column: each as long as the step between columns stays 1, -1 or 0.
    fn of(columns: &[usize]) -> Vec<Run> {
        let mut runs = Vec::new();
        let mut at = 0;
        while at < columns.len() {
            let from = columns[at];
            let step = match columns.get(at + 1) {
                Some(&next) if next == from + 1 => 1,
                Some(&next) if next + 1 == from => -1,
                Some(&next) if next == from => 0,
                _ => 1,
            };
            let mut len = 1;
            while columns.get(at + len).is_some_and(|&c| c as isize == from as isize + step * len as isize) {
                len += 1;
            }
            runs.push(Run { at, from, len, step });
            at += len;
        }
        runs
    }

    /// Writes this run's columns of `row` from the frame's row `frame`.
    #[inline]
    fn copy<T: Copy>(&self, row: &mut [MaybeUninit<T>], frame: &[T]) {
        let to = &mut row[self.at..][..self.len];
        match self.step {
            0 => {
                parallel::filled(to, frame[self.from]);
            }
            1 => flip::copy(to, &frame[self.from..][..self.len]),
            _ => flip::copy_reversed(to, &frame[self.from + 1 - self.len..=self.from]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenCV's `borderInterpolate` (modules/core/src/copy.cpp), as written there: the loop the
    /// closed form replaces.
    fn opencv_border_interpolate(mut p: i64, len: i64, border: Border) -> Option<i64> {
        if (0..len).contains(&p) {
            return Some(p);
        }
        match border {
            Border::Constant => None,
            Border::Replicate => Some(if p < 0 { 0 } else { len - 1 }),
            Border::Reflect | Border::Reflect101 => {
                let delta = i64::from(border == Border::Reflect101);
                if len == 1 {
                    return Some(0);
                }
                loop {
                    if p < 0 {
                        p = -p - 1 + delta;
                    } else {
                        p = len - 1 - (p - len) - delta;
                    }
                    if (0..len).contains(&p) {
                        return Some(p);
                    }
                }
            }
            Border::Wrap => {
                if p < 0 {
                    // C's division truncates toward zero.
                    p -= ((p - len + 1) / len) * len;
                }
                if p >= len {
                    p %= len;
                }
                Some(p)
            }
        }
    }

    #[test]
    fn the_closed_form_is_opencvs_loop() {
        let modes = [Border::Constant, Border::Replicate, Border::Reflect, Border::Reflect101, Border::Wrap];
        for border in modes {
            for len in 1..14 {
                for p in -70..70 {
                    let ours = border.source(p, len as usize).map(|q| q as i64);
                    assert_eq!(ours, opencv_border_interpolate(p, len, border), "{border:?} p {p} len {len}");
                }
            }
        }
        // Far outside: the one remainder, where the loop would take billions of steps.
        let far = -(1i64 << 33) - 5;
        assert_eq!(Border::Reflect.source(far, 3), Some(0)); // -2^33 - 5 = 5 (mod 6): 6 - 1 - 5
        assert_eq!(Border::Reflect101.source(far, 3), Some(1)); // -2^33 - 5 = 3 (mod 4): 4 - 3
        assert_eq!(Border::Wrap.source(far, 7), Some(1)); // -2^33 - 5 = 1 (mod 7)
        assert_eq!(Border::Replicate.source(far, 7), Some(0));
    }

    /// Each output pixel is the frame's pixel [`Border::source`] names on both axes, whatever
    /// the split over the threads, with borders up to three times the frame.
    #[test]
    fn every_split_copies_the_named_pixels() {
        use crate::pad::{PadParams, PadSize};
        use crate::{Fill, Op};
        let mut rng = fastrand::Rng::with_seed(31);
        let modes = [Border::Replicate, Border::Reflect, Border::Reflect101, Border::Wrap];
        for (w, h) in parallel::testing::sizes(&mut rng) {
            let f = parallel::testing::frame(&mut rng, w, h, 1000);
            let (left, right) = (rng.usize(..3 * w + 2), rng.usize(..3 * w + 2));
            let (top, bottom) = (rng.usize(..3 * h + 2), rng.usize(..3 * h + 2));
            for size in [PadSize::Border { left, top, right, bottom }, PadSize::Diagonal] {
                for mode in modes {
                    let p = PadParams { size, fill: Fill::Int(7) }.for_frame(w, h, 1000).unwrap();
                    let p = p.with_border(mode, w, h).unwrap();
                    let out = p.cpu(&f).unwrap().pixels;
                    for i in 0..p.width * p.height {
                        let (x, y) = ((i % p.width) as i64, (i / p.width) as i64);
                        let sx = mode.source(x - p.left as i64, w).unwrap();
                        let sy = mode.source(y - p.top as i64, h).unwrap();
                        assert_eq!(out.get(i), f.pixels.get(sy * w + sx), "{w}x{h} {p:?} at {i}");
                    }
                    parallel::testing::same_on_each_pool(&format!("{w}x{h} {p:?}"), || p.cpu(&f).unwrap());
                }
            }
        }
    }

    /// The runs of a table of columns cover its output columns in order and name each column's
    /// source: mirrored, repeated and copied stretches, and jumps between them.
    #[test]
    fn runs_expand_to_their_table() {
        let modes = [Border::Replicate, Border::Reflect, Border::Reflect101, Border::Wrap];
        for border in modes {
            for w in 1..9 {
                for (left, right) in [(0, 0), (1, 0), (0, 2), (3, 5), (7, 1), (20, 17)] {
                    let columns: Vec<usize> = (0..left + w + right)
                        .map(|x| border.source(x as i64 - left as i64, w).unwrap())
                        .collect();
                    let runs = Run::of(&columns);
                    let mut at = 0;
                    let mut expanded = Vec::new();
                    for r in &runs {
                        assert_eq!(r.at, at, "{border:?} w {w}: {runs:?}");
                        assert!(r.len > 0 && (r.len == 1 || r.step != 1 || r.from + r.len <= w));
                        expanded.extend((0..r.len).map(|i| (r.from as isize + r.step * i as isize) as usize));
                        at += r.len;
                    }
                    assert_eq!(expanded, columns, "{border:?} w {w} left {left} right {right}");
                }
            }
        }
        // Reflect101 of a frame of 5 columns, 3 on each side: dcb|abcde|dcb, the columns 3 2 1 0,
        // then 1 2 3 4, then 3 2 1.
        let columns: Vec<usize> = (0..11).map(|x| Border::Reflect101.source(x - 3, 5).unwrap()).collect();
        let run = |at, from, len, step| Run { at, from, len, step };
        assert_eq!(Run::of(&columns), [run(0, 3, 4, -1), run(4, 1, 4, 1), run(8, 3, 3, -1)]);
    }

    /// A frame of no pixels has none to copy: refused (OpenCV would loop forever), unless
    /// nothing is padded.
    #[test]
    fn an_empty_frame_takes_only_a_constant_border() {
        use crate::pad::{PadParams, PadSize};
        use crate::Fill;
        let size = PadSize::Border { left: 1, top: 0, right: 0, bottom: 0 };
        let pad = PadParams { size, fill: Fill::Int(0) }.for_frame(0, 3, 255).unwrap();
        let e = pad.with_border(Border::Reflect, 0, 3).unwrap_err().to_string();
        assert!(e.contains("a 0x3 frame has no pixels for a border that copies them"), "{e}");
        assert!(pad.with_border(Border::Constant, 0, 3).is_ok());
        let none = PadParams { size: PadSize::To { width: 0, height: 3 }, fill: Fill::Int(0) };
        assert!(none.for_frame(0, 3, 255).unwrap().with_border(Border::Wrap, 0, 3).is_ok());
    }

    #[test]
    fn kernel_modes_are_distinct() {
        let modes = [Border::Constant, Border::Replicate, Border::Reflect, Border::Reflect101, Border::Wrap];
        let numbers: Vec<u32> = modes.iter().map(|m| m.kernel_mode()).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4], "pad.cu's BORDER_* numbers");
    }
}
