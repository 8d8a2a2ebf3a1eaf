//! `threshold`'s local methods: each sample compared with a threshold of its own, computed from
//! the block around it.
//!
//! - [`Local::Mean`] and [`Local::Gaussian`]: OpenCV's `adaptiveThreshold` (imgproc/src/thresh.cpp)
//!   with `ADAPTIVE_THRESH_MEAN_C` and `ADAPTIVE_THRESH_GAUSSIAN_C`, 8-bit only as there. The
//!   block's mean m: for the mean, `boxFilter` on the 8-bit samples (normalised,
//!   `BORDER_REPLICATE`), the block's sum s over d = BLOCK² samples rounded to the nearest
//!   integer, (2s + d) / (2d) (d is odd: no ties; OpenCV's fixed-point division by d gives that
//!   for every s an 8-bit block can have); for the Gaussian, `adaptiveThreshold` converts the
//!   samples to `f32`, blurs them with `GaussianBlur` (sigma 0, `BORDER_REPLICATE`) in `f32`
//!   ([`Kind::Gaussian`] says in which order) and rounds the result to 8 bits. Both filters
//!   replicate the border sample. A sample v becomes maxval where v − m > −ceil(C) (binary) or
//!   v − m ≤ −floor(C) (inverted), else 0: OpenCV's table, C being `adaptiveThreshold`'s delta.
//!
//! The same arithmetic on the CPU ([`cpu`]) and the GPU ([`gpu`], every `f32` step an explicit
//! `__fmaf_rn`, `__fadd_rn` or `__fmul_rn`): a row pass (one sum per sample) then a column pass
//! (its sum, the mean and the comparison).

use histopipe_frame::{Frame, Pixels};

use super::Mode;
use crate::{Element, Gpu, Op, OpError};
use stats::StatSample;

mod cpu;
pub mod gpu;
mod stats;

pub use gpu::{LocalPlan, StatsPlan};

/// The largest block: its coefficients are checked against OpenCV's up to it (the tests), and
/// a block's sum of 8-bit samples, 255 · BLOCK², fits 32 bits.
pub const MAX_BLOCK: u32 = 4001;

/// A decimal offset (`adaptiveThreshold`'s delta C), in millionths, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    pub millionths: i64,
}

impl Offset {
    pub fn ceil(self) -> i64 {
        self.millionths.div_euclid(1_000_000) + (self.millionths.rem_euclid(1_000_000) != 0) as i64
    }

    pub fn floor(self) -> i64 {
        self.millionths.div_euclid(1_000_000)
    }
}

impl std::fmt::Display for Offset {
    /// As written: `-2`, `0.5`, `-1.25`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.millionths < 0 { "-" } else { "" };
        let m = self.millionths.unsigned_abs();
        let part = format!("{:06}", m % 1_000_000);
        let part = part.trim_end_matches('0');
        match part.is_empty() {
            true => write!(f, "{sign}{}", m / 1_000_000),
            false => write!(f, "{sign}{}.{part}", m / 1_000_000),
        }
    }
}

/// A local method and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Local {
    /// OpenCV's `ADAPTIVE_THRESH_MEAN_C`: the block's mean, less C.
    Mean { block: u32, c: Offset },
    /// OpenCV's `ADAPTIVE_THRESH_GAUSSIAN_C`: the block's Gaussian-weighted mean, less C.
    Gaussian { block: u32, c: Offset },
    /// scikit-image's `threshold_sauvola(image, window, k, r)` (r `None`: half the sample type's
    /// range), and `image > t`.
    Sauvola { window: u32, k: f64, r: Option<f64> },
    /// scikit-image's `threshold_niblack(image, window, k)`, and `image > t`.
    Niblack { window: u32, k: f64 },
}

impl std::fmt::Display for Local {
    /// As `--method` spells it: `mean:11,2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Local::Mean { block, c } => write!(f, "mean:{block},{c}"),
            Local::Gaussian { block, c } => write!(f, "gaussian:{block},{c}"),
            Local::Sauvola { window, k, r: None } => write!(f, "sauvola:{window},{k}"),
            Local::Sauvola { window, k, r: Some(r) } => write!(f, "sauvola:{window},{k},{r}"),
            Local::Niblack { window, k } => write!(f, "niblack:{window},{k}"),
        }
    }
}

/// A frame thresholded by a local method: binary (or inverted) frames of the input's size and
/// maxval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalThreshold {
    pub method: Local,
    pub mode: Mode,
}

/// What the row and column passes compute, for both backends, and the comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Filter {
    pub kind: Kind,
    /// The sample v is maxval where v − m > limit (or v − m ≤ limit, inverted).
    pub limit: i32,
    pub inverted: bool,
}

/// How the block's mean m is computed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// `boxFilter` on 8-bit samples: the block's integer sum s, m = (2s + d) / (2d) for the
    /// block of `side`² = d samples.
    Box { side: u32 },
    /// `GaussianBlur` on the samples as `f32` (OpenCV's `adaptiveThreshold` converts them): the
    /// row pass s = x₀·k₀, then s = fma(xᵢ, kᵢ, s) from left to right; the column pass
    /// s = r₀·k₀, then s = fma(r₋ᵢ + rᵢ, kᵢ, s) outwards, every step rounded to `f32` once, as
    /// OpenCV's vectorised filters compute it; m = s rounded to the nearest integer, ties to even
    /// (`convertTo` 8U).
    Gaussian { kernel: Vec<f32> },
}

impl Filter {
    /// Whether sample `v` of mean `m` becomes maxval.
    pub fn on(&self, v: u8, m: i32) -> bool {
        let d = v as i32 - m;
        if self.inverted {
            d <= self.limit
        } else {
            d > self.limit
        }
    }
}

/// The box's mean of a sum `s` over `d` samples, rounded (d is odd: no ties).
pub(crate) fn box_mean(s: u32, d: u64) -> i32 {
    ((2 * s as u64 + d) / (2 * d)) as i32
}

/// The Gaussian's mean: `s` to the nearest integer, ties to even, saturated to 0..=255.
pub(crate) fn gaussian_mean(s: f32) -> i32 {
    s.round_ties_even().clamp(0.0, 255.0) as i32
}

impl LocalThreshold {
    /// The 8-bit samples of `frame`, or why it is refused.
    fn samples<'f>(&self, frame: &'f Frame) -> Result<&'f [u8], OpError> {
        match &frame.pixels {
            Pixels::U8(samples) => Ok(samples),
            _ => Err(OpError::param(
                "method",
                self.method,
                "takes 8-bit frames only, as OpenCV's adaptiveThreshold does",
            )),
        }
    }

    /// Whether the output is inverted, or why the mode or block is refused.
    fn check(&self) -> Result<bool, OpError> {
        let Some(inverted) = self.mode.binary() else {
            return Err(OpError::param(
                "mode",
                self.mode,
                format!("{} takes binary or binary-inv only", self.method),
            ));
        };
        let (least, size) = match self.method {
            Local::Mean { block, .. } | Local::Gaussian { block, .. } => (3, block),
            Local::Sauvola { window, .. } | Local::Niblack { window, .. } => (1, window),
        };
        if size % 2 == 0 || !(least..=MAX_BLOCK).contains(&size) {
            return Err(OpError::param(
                "method",
                self.method,
                format!("the window is odd, {least} to {MAX_BLOCK}"),
            ));
        }
        Ok(inverted)
    }

    /// Sauvola's or Niblack's statistics for frames of `bits`-bit samples; `None` for OpenCV's
    /// methods.
    pub(crate) fn stats(&self, bits: u32) -> Result<Option<stats::Stats>, OpError> {
        let inverted = self.check()?;
        Ok(stats::Stats::of(self.method, bits, inverted))
    }

    /// The passes' parameters of OpenCV's methods, or why the mode or block is refused.
    pub(crate) fn filter(&self) -> Result<Filter, OpError> {
        let inverted = self.check()?;
        let (Local::Mean { block, c } | Local::Gaussian { block, c }) = self.method else {
            return Err(OpError::param("method", self.method, "is scikit-image's, not adaptiveThreshold's"));
        };
        // OpenCV: idelta = ceil(C) for THRESH_BINARY, floor(C) for THRESH_BINARY_INV; its table
        // compares v - m with -idelta. v - m lies in -255..=255: a limit beyond ±256 decides as
        // ±256 does.
        let limit = (-if inverted { c.floor() } else { c.ceil() }).clamp(-256, 256) as i32;
        let kind = match self.method {
            Local::Mean { .. } => Kind::Box { side: block },
            _ => Kind::Gaussian { kernel: gaussian_kernel(block as usize) },
        };
        Ok(Filter { kind, limit, inverted })
    }
}

/// OpenCV's Gaussian coefficients for a block of `n` (odd) with sigma 0, as `f32` (what its
/// filter on `f32` samples multiplies by): its binomial tables for n ≤ 9, else the sampled
/// Gaussian of sigma = 0.15 n + 0.35 (one rounding, OpenCV's fused `mulAdd`) normalised in double
/// precision (`getGaussianKernelBitExact`), each rounded to `f32`.
pub fn gaussian_kernel(n: usize) -> Vec<f32> {
    let exact: Vec<f64> = match n {
        1 => vec![1.0],
        3 => [1.0, 2.0, 1.0].map(|v| v / 4.0).to_vec(),
        5 => [1.0, 4.0, 6.0, 4.0, 1.0].map(|v| v / 16.0).to_vec(),
        7 => [1.0, 3.5, 7.0, 9.0, 7.0, 3.5, 1.0].map(|v| v / 32.0).to_vec(),
        9 => [4.0, 13.0, 30.0, 51.0, 60.0, 51.0, 30.0, 13.0, 4.0].map(|v| v / 256.0).to_vec(),
        _ => sampled_gaussian(n),
    };
    exact.into_iter().map(|v| v as f32).collect()
}

/// `getGaussianKernelBitExact` for an odd n past OpenCV's tables. OpenCV's exp is its own soft
/// float one; this one's differs from it in the last bits of the doubles, never in their `f32`
/// roundings for n up to [`MAX_BLOCK`] (checked against `cv2.getGaussianKernel`).
fn sampled_gaussian(n: usize) -> Vec<f64> {
    let sigma = (n as f64).mul_add(0.15, 0.35);
    let scale = -0.125 / (sigma * sigma);
    let half = (n - 1) / 2;
    let mut values = Vec::with_capacity(half);
    let mut sum = 0.0f64;
    for i in 0..half {
        let x = 1 - n as i64 + 2 * i as i64;
        let t = ((x * x) as f64 * scale).exp();
        values.push(t);
        sum += t;
    }
    sum = sum * 2.0 + 1.0;
    let mul = 1.0 / sum;
    let mut out = vec![0.0; n];
    for (i, v) in values.iter().enumerate() {
        out[i] = v * mul;
        out[n - 1 - i] = v * mul;
    }
    out[half] = mul;
    out
}

impl Op for LocalThreshold {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let (w, h) = (frame.width, frame.height);
        if let Some(stats) = self.stats(bits_of(&frame.pixels))? {
            let on = match &frame.pixels {
                Pixels::U8(v) => stats::on(&stats, v, w, h),
                Pixels::U16(v) => stats::on(&stats, v, w, h),
                Pixels::F32(v) => stats::on(&stats, v, w, h),
            };
            return Ok(stats_output(frame, on));
        }
        let filter = self.filter()?;
        let samples = self.samples(frame)?;
        let out = cpu::threshold(&filter, samples, w, h, frame.maxval as u8);
        Ok(frame.derive(w, h, frame.maxval, Pixels::U8(out.into())))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let (w, h) = (frame.width, frame.height);
        if self.stats(bits_of(&frame.pixels))?.is_some() {
            let on = match &frame.pixels {
                Pixels::U8(v) => self.gpu_stats(gpu, v, w, h)?,
                Pixels::U16(v) => self.gpu_stats(gpu, v, w, h)?,
                Pixels::F32(v) => self.gpu_stats(gpu, v, w, h)?,
            };
            return Ok(stats_output(frame, on));
        }
        let samples = self.samples(frame)?;
        let mut plan = LocalPlan::new(gpu, self, w, h, frame.maxval as u8)?;
        let n = samples.len();
        let src = gpu.upload("threshold.local.in", samples)?;
        let mut dst = gpu.buffer::<u8>("threshold.local.out", n)?;
        plan.queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(frame.derive(w, h, frame.maxval, Pixels::U8(out)))
    }
}

/// Sauvola's or Niblack's output from each sample's on (1) or off (0): a frame of the input's
/// samples and maxval for integer frames, an 8-bit frame of 0 and 255 for float ones.
fn stats_output(frame: &Frame, on: Vec<u8>) -> Frame {
    let (w, h, maxval) = (frame.width, frame.height, frame.maxval);
    match frame.pixels {
        Pixels::U8(_) => {
            frame.derive(w, h, maxval, Pixels::U8(on.iter().map(|&o| o * maxval as u8).collect()))
        }
        Pixels::U16(_) => {
            frame.derive(w, h, maxval, Pixels::U16(on.iter().map(|&o| o as u16 * maxval).collect()))
        }
        Pixels::F32(_) => frame.derive(w, h, 255, Pixels::U8(on.iter().map(|&o| o * 255).collect())),
    }
}

impl LocalThreshold {
    fn gpu_stats<T: Element + StatSample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        w: usize,
        h: usize,
    ) -> Result<Vec<u8>, OpError> {
        let n = samples.len();
        let mut plan = StatsPlan::<T>::new(gpu, self, w, h)?;
        let src = gpu.upload("threshold.local.in", samples)?;
        let mut dst = gpu.buffer::<u8>("threshold.local.out", n.max(1))?;
        plan.queue(&src, &mut dst)?;
        Ok(gpu.download_samples(&dst, n)?.into_vec())
    }
}

/// The bits of a frame's samples: 8, 16, or 32 for floats.
fn bits_of(pixels: &Pixels) -> u32 {
    match pixels {
        Pixels::U8(_) => 8,
        Pixels::U16(_) => 16,
        Pixels::F32(_) => 32,
    }
}

#[cfg(test)]
mod tests;
