//! `edges`: Canny edge detection, pixel for pixel as OpenCV's `cv::Canny(img, low, high, 3, L2)`.
//!
//! 1. Gradients by the 3x3 Sobel kernels, the frame's border replicated (`BORDER_REPLICATE`):
//!    dx = (p[y-1][x+1] - p[y-1][x-1]) + 2 (p[y][x+1] - p[y][x-1]) + (p[y+1][x+1] - p[y+1][x-1]),
//!    dy likewise down the columns.
//! 2. Magnitude m = |dx| + |dy| (L1), or dx² + dy² (L2, compared with squared thresholds).
//! 3. Non-maximum suppression in integers: with tan(22.5°) as TG22 = round(0.41421356 · 2^15), the
//!    direction is horizontal when |dy|·2^15 < |dx|·TG22 (keep if m > left and m >= right),
//!    vertical when |dy|·2^15 > |dx|·(TG22 + 2^16) (keep if m > above and m >= below), else
//!    diagonal (keep if m is greater than both neighbours along the diagonal that dx·dy's sign
//!    picks). Magnitudes outside the frame count as 0. Only pixels with m > low are considered.
//! 4. Thresholds: `low`/`high` swapped if low > high; for L2 each is first capped at 32767 and
//!    squared when positive; then floored to integers. A kept pixel with m > high is strong, else
//!    weak; the edges are the strong pixels and every weak pixel 8-connected to one through weak
//!    pixels. That set is unique, so the order in which hysteresis visits pixels does not matter:
//!    the CPU floods from a stack; the GPU grows the strong pixels through the kept ones on bit
//!    maps, tile by tile in registers, then joins the tiles' weak components across tile borders
//!    by union-find and grows the ones joined to a strong pixel (the same set).
//!
//! An optional Gaussian blur first (`blur`) is histopipe's own, not OpenCV's (see
//! [`gaussian_weights`]): separable, f32, the same on both backends.
//!
//! The operation's parts: this module (the detector's parameters, thresholds and the op),
//! `cpu` (the reference: blur, gradients, suppression and hysteresis in bands of rows),
//! `classify` (stage 3 for one row, as selects on vectors, with AVX2 where the CPU has it),
//! [`gpu`] (the kernels' launches and the device plan).

use histopipe_frame::{Frame, Pixels, Samples};

use crate::{Gpu, Op, OpError};

mod classify;
mod cpu;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use cpu::blur_cpu;
use cpu::canny_cpu;
pub use gpu::CannyPlan;

/// OpenCV's fixed-point tan(22.5°): round(0.4142135623730950488 · 2^15).
pub const TG22: i32 = 13573;

/// Map values between the stages (one byte per pixel).
const NONE: u8 = 0;
const WEAK: u8 = 1;
const STRONG: u8 = 2;

/// The largest blur sigma accepted: beyond it the kernel would be wider than any sensible frame.
pub const MAX_SIGMA: f64 = 100.0;

/// `edges`' parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Canny {
    /// Hysteresis thresholds on the gradient magnitude, as OpenCV takes them (any non-negative
    /// numbers; swapped if low > high).
    pub low: f64,
    pub high: f64,
    /// L2 magnitude sqrt(dx² + dy²) instead of |dx| + |dy|.
    pub l2: bool,
    /// Gaussian blur of this sigma first.
    pub blur: Option<f64>,
}

/// The Gaussian kernel for `sigma`: radius r = ceil(3 sigma), weights exp(-i² / (2 sigma²)) for
/// i = -r..=r, divided by their sum in f64, then rounded to f32. Both passes sum the products in
/// f32 in the order i = -r..=r from 0.0, and the result is rounded half to even and clamped to
/// 0..=255; borders are replicated.
pub fn gaussian_weights(sigma: f64) -> Vec<f32> {
    let r = (3.0 * sigma).ceil().max(1.0) as i64;
    let w: Vec<f64> = (-r..=r).map(|i| (-((i * i) as f64) / (2.0 * sigma * sigma)).exp()).collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|v| (v / sum) as f32).collect()
}

impl Canny {
    /// The integer thresholds the magnitudes are compared with, as OpenCV derives them.
    pub fn thresholds(&self) -> (i32, i32) {
        let (mut low, mut high) =
            if self.low > self.high { (self.high, self.low) } else { (self.low, self.high) };
        if self.l2 {
            low = low.min(32767.0);
            high = high.min(32767.0);
            if low > 0.0 {
                low *= low;
            }
            if high > 0.0 {
                high *= high;
            }
        }
        (low.floor() as i32, high.floor() as i32)
    }

    /// Checks the parameters, which hold for every frame.
    pub fn check(&self) -> Result<(), OpError> {
        for (name, v) in [("low", self.low), ("high", self.high)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(OpError::param_is(name, v, "must be a non-negative number"));
            }
        }
        if let Some(s) = self.blur {
            if !(s > 0.0 && s <= MAX_SIGMA) {
                return Err(OpError::param_is("blur", s, format!("must be in (0, {MAX_SIGMA}]")));
            }
        }
        Ok(())
    }

    /// Checks the parameters and the frame, and returns its samples: Canny is defined here on
    /// 8-bit samples only.
    pub fn input<'f>(&self, frame: &'f Frame) -> Result<&'f [u8], OpError> {
        self.check()?;
        match &frame.pixels {
            Pixels::U8(v) => Ok(v),
            Pixels::U16(_) => Err(OpError::invalid(format!(
                "16-bit input (maxval {}) is not supported: the thresholds are for 8-bit gradients; \
                 convert the frame to 8 bits first (the stretch tool does)",
                frame.maxval
            ))),
            Pixels::F32(_) => Err(OpError::needs_integers()),
        }
    }

    fn output(&self, frame: &Frame, edges: impl Into<Samples<u8>>) -> Frame {
        frame.derive(frame.width, frame.height, 255, Pixels::U8(edges.into()))
    }
}

impl Op for Canny {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let mut src = self.input(frame)?;
        let (w, h) = (frame.width, frame.height);
        let blurred;
        if let Some(sigma) = self.blur {
            blurred = blur_cpu(src, w, h, &gaussian_weights(sigma));
            src = &blurred;
        }
        let (low, high) = self.thresholds();
        Ok(self.output(frame, canny_cpu(src, w, h, self.l2, low, high)))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let input = self.input(frame)?;
        let n = frame.width * frame.height;
        // Refused before anything is allocated.
        let mut plan = self.plan(gpu, frame.width, frame.height)?;
        let src = gpu.upload::<u8>("edges.in", input)?;
        let mut dst = gpu.buffer::<u8>("edges.out", n)?;
        plan.queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(self.output(frame, out))
    }
}
