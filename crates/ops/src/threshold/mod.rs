//! `threshold`: a global threshold chosen from each frame's histogram, and the frame mapped through
//! it. Three steps: the histogram (one bin per level, [`histogram`](crate::histogram), on the CPU
//! or the GPU), the thresholds chosen from it by host code both backends share ([`choose`]), and
//! every sample through a look-up table ([`table`]; equalize's map, on the CPU or the GPU).
//!
//! - [`Method::Otsu`]: OpenCV's `THRESH_OTSU` (`getThreshVal_Otsu` in imgproc/src/thresh.cpp), its
//!   double-precision scan over all 256 (8-bit) or 65536 (16-bit) levels, operation for operation:
//!   the first level of the largest between-class variance, levels with either class under
//!   `FLT_EPSILON` of the pixels skipped (0 when every level is: a flat frame).
//! - [`Method::Triangle`]: OpenCV's `THRESH_TRIANGLE` (`getThreshVal_Triangle_8u`), 8-bit only
//!   as in OpenCV 5; its distances are integers, computed exactly.
//! - [`Method::MultiOtsu`]: scikit-image's `threshold_multiotsu(image, classes=K)`: an integer
//!   image's histogram has one bin per level from its smallest sample to its largest (its `nbins`
//!   applies to float images only); probabilities count / N rounded to `f32`, its single-precision
//!   moments and look-up table of between-class variances, its exhaustive search in its order,
//!   the first maximum kept.
//! - [`Method::Value`] and [`Method::Percentile`]: a given level, or numpy's
//!   `percentile(image, P, method="inverted_cdf")` computed exactly: the smallest level present
//!   whose cumulative count reaches P% of the pixels.
//!
//! The binary map is OpenCV's `THRESH_BINARY`: a sample above the threshold becomes maxval, any
//! other 0 (`THRESH_BINARY_INV` inverted); multi-Otsu's K - 1 thresholds give labels 0..K-1 as
//! `np.digitize(image, thresholds)`: the number of thresholds at or below the sample, an 8-bit
//! frame of maxval 255 ([`LABEL_MAXVAL`]).
//!
//! The operation's parts: this module (the methods' choice of thresholds, the table, the ops and
//! their parameters), `cpu` (the histogram and the map on the host), [`gpu`] (the device
//! plan, [`ThresholdPlan`]).

use histopipe_frame::{Frame, Pixels, Samples};

use crate::mask::{self, Mask};
use crate::{with_samples, Gpu, Op, OpError, Sample};

mod cpu;
mod float;
pub mod gpu;
pub mod local;
#[cfg(test)]
mod tests;

pub use float::{FloatScan, FloatThresholdPlan};
pub use gpu::ThresholdPlan;

/// How the thresholds are chosen from a frame's histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Otsu,
    Triangle,
    /// scikit-image's multi-Otsu into this many classes (2 or more): one threshold fewer.
    MultiOtsu(u16),
    /// This level.
    Value(u16),
    /// The smallest level present whose cumulative count reaches this percentage of the pixels.
    Percentile(Percent),
}

/// How a sample is mapped through the threshold t: OpenCV's `cv2.threshold` types
/// (`THRESH_BINARY` ... `THRESH_TOZERO_INV`), maxval being the frame's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// v > t: maxval, else 0.
    #[default]
    Binary,
    /// v > t: 0, else maxval.
    BinaryInv,
    /// v > t: t, else v (t below 0 counts as 0, as OpenCV's saturation makes it).
    Trunc,
    /// v > t: v, else 0.
    ToZero,
    /// v > t: 0, else v.
    ToZeroInv,
}

impl Mode {
    /// The sample `v` of a frame of `maxval` becomes, through threshold `t`.
    pub fn map(self, v: u16, t: i32, maxval: u16) -> u16 {
        let above = v as i32 > t;
        match self {
            Mode::Binary => {
                if above {
                    maxval
                } else {
                    0
                }
            }
            Mode::BinaryInv => {
                if above {
                    0
                } else {
                    maxval
                }
            }
            Mode::Trunc => {
                if above {
                    t.clamp(0, maxval as i32) as u16
                } else {
                    v
                }
            }
            Mode::ToZero => {
                if above {
                    v
                } else {
                    0
                }
            }
            Mode::ToZeroInv => {
                if above {
                    0
                } else {
                    v
                }
            }
        }
    }

    /// Whether this mode maps through the binary rule (inverted or not): the only modes label
    /// frames and the local methods take.
    pub fn binary(self) -> Option<bool> {
        match self {
            Mode::Binary => Some(false),
            Mode::BinaryInv => Some(true),
            _ => None,
        }
    }
}

impl std::fmt::Display for Mode {
    /// As `--mode` spells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Binary => "binary",
            Mode::BinaryInv => "binary-inv",
            Mode::Trunc => "trunc",
            Mode::ToZero => "tozero",
            Mode::ToZeroInv => "tozero-inv",
        })
    }
}

/// A percentage, 0 to 100, in millionths of a percent (a decimal with up to 6 places, exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percent {
    pub millionths: u32,
}

/// One hundred percent.
pub const HUNDRED_PERCENT: u32 = 100_000_000;

/// Most threshold combinations [`Method::MultiOtsu`] evaluates in its exhaustive search: with 256
/// levels, 5 classes (1.7e8); with 65536 levels, 2 classes only. scikit-image searches the same
/// way, without a bound.
pub const MAX_COMBINATIONS: u128 = 1 << 30;

impl std::fmt::Display for Method {
    /// As the option spells it and the table's `method` column shows it: `otsu`, `multiotsu:3`,
    /// `value:100`, `percentile:12.5`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Method::Otsu => write!(f, "otsu"),
            Method::Triangle => write!(f, "triangle"),
            Method::MultiOtsu(k) => write!(f, "multiotsu:{k}"),
            Method::Value(v) => write!(f, "value:{v}"),
            Method::Percentile(p) => {
                let (whole, part) = (p.millionths / 1_000_000, p.millionths % 1_000_000);
                let part = format!("{part:06}");
                let part = part.trim_end_matches('0');
                if part.is_empty() {
                    write!(f, "percentile:{whole}")
                } else {
                    write!(f, "percentile:{whole}.{part}")
                }
            }
        }
    }
}

impl Method {
    /// Whether the output is a label frame (0..K-1) rather than a binary one.
    pub fn labels(&self) -> Option<u16> {
        match *self {
            Method::MultiOtsu(k) => Some(k),
            _ => None,
        }
    }
}

/// The thresholds `method` chooses (levels; OpenCV's triangle may give -1) for a frame of `bits`-bit samples (8 or 16) whose histogram,
/// one count per level from 0, is `counts`: one threshold, or K - 1 increasing ones for
/// multi-Otsu. The host step both backends share.
pub fn choose(method: Method, counts: &[u64], bits: u32) -> Result<Vec<i32>, OpError> {
    let levels = 1usize << bits;
    Ok(match method {
        Method::Otsu => vec![otsu(counts, levels)],
        Method::Triangle if bits != 8 => {
            return Err(OpError::param(
                "method",
                method,
                "takes 8-bit frames only, as OpenCV's THRESH_TRIANGLE does, and this frame is 16-bit",
            ))
        }
        Method::Triangle => vec![triangle(counts)],
        Method::MultiOtsu(classes) => multi_otsu(counts, classes, method)?,
        Method::Value(v) => vec![v as i32],
        Method::Percentile(p) => vec![percentile(counts, p)],
    })
}

/// OpenCV's `getThreshVal_Otsu` over `levels` levels (256 or 65536), in the same double-precision
/// operations in the same order, so the same level wins every comparison.
fn otsu(counts: &[u64], levels: usize) -> i32 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let count = |i: usize| counts.get(i).copied().unwrap_or(0) as f64;
    let scale = 1.0 / total as f64;
    let mut mu = 0.0;
    for i in 0..levels {
        mu += i as f64 * count(i);
    }
    mu *= scale;
    let eps = f32::EPSILON as f64;
    let (mut mu1, mut q1, mut max_sigma, mut max_val) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for i in 0..levels {
        let p_i = count(i) * scale;
        mu1 *= q1;
        q1 += p_i;
        let q2 = 1.0 - q1;
        if q1.min(q2) < eps || q1.max(q2) > 1.0 - eps {
            continue;
        }
        mu1 = (mu1 + i as f64 * p_i) / q1;
        let mu2 = (mu - q1 * mu1) / q2;
        let sigma = q1 * q2 * (mu1 - mu2) * (mu1 - mu2);
        if sigma > max_sigma {
            max_sigma = sigma;
            max_val = i;
        }
    }
    max_val as i32
}

/// OpenCV's `getThreshVal_Triangle_8u`: the line from the histogram's peak to the far end of its
/// longer tail (one level past the last non-empty one), the level farthest below it, less one. Its
/// distances a * i + b * h[i] are integers below 2^53, exact in OpenCV's doubles and here.
fn triangle(counts: &[u64]) -> i32 {
    const N: usize = 256;
    let mut h: Vec<i64> = (0..N).map(|i| counts.get(i).copied().unwrap_or(0) as i64).collect();
    let mut left = h.iter().position(|&c| c > 0).unwrap_or(0).saturating_sub(1);
    let mut right = (1..N).rev().find(|&i| h[i] > 0).unwrap_or(0);
    if right < N - 1 {
        right += 1;
    }
    // The first level of the largest count.
    let (mut max, mut max_ind) = (0i64, 0usize);
    for (i, &c) in h.iter().enumerate() {
        if c > max {
            max = c;
            max_ind = i;
        }
    }
    let flipped = (max_ind as i64 - left as i64) < (right as i64 - max_ind as i64);
    if flipped {
        h.reverse();
        left = N - 1 - right;
        max_ind = N - 1 - max_ind;
    }
    let (a, b) = (max, left as i64 - max_ind as i64);
    let (mut thresh, mut dist) = (left as i64, 0i64);
    for (i, &c) in h.iter().enumerate().take(max_ind + 1).skip(left + 1) {
        let d = a * i as i64 + b * c;
        if d > dist {
            dist = d;
            thresh = i as i64;
        }
    }
    thresh -= 1;
    if flipped {
        thresh = N as i64 - 1 - thresh;
    }
    // -1 where the peak's side starts at level 0 and no level lies below the line (OpenCV returns
    // it as it is, and maps every sample to maxval, as -1 < v does).
    thresh as i32
}

/// numpy's `percentile(image, P, method="inverted_cdf")`, exactly: the smallest level present
/// whose cumulative count c satisfies c / N >= P / 100, in integers (c * 10^8 >= P_millionths * N).
fn percentile(counts: &[u64], p: Percent) -> i32 {
    let total: u128 = counts.iter().map(|&c| c as u128).sum();
    let target = p.millionths as u128 * total;
    let mut cumulative = 0u128;
    for (level, &c) in counts.iter().enumerate() {
        cumulative += c as u128;
        if c > 0 && cumulative * HUNDRED_PERCENT as u128 >= target {
            return level as i32;
        }
    }
    0
}

/// scikit-image's `threshold_multiotsu(image, classes)` (see the module's documentation).
fn multi_otsu(counts: &[u64], classes: u16, method: Method) -> Result<Vec<i32>, OpError> {
    let (Some(low), Some(high)) = (counts.iter().position(|&c| c > 0), counts.iter().rposition(|&c| c > 0))
    else {
        return Err(OpError::param("method", method, "a frame of no pixels has no classes"));
    };
    let total: u64 = counts.iter().sum();
    // skimage: hist / hist.sum() in float64, then cast to float32.
    let prob: Vec<f32> = counts[low..=high].iter().map(|&c| (c as f64 / total as f64) as f32).collect();
    let present: Vec<usize> = (0..prob.len()).filter(|&i| prob[i] != 0.0).collect();
    let classes = classes as usize;
    if present.len() < classes {
        return Err(OpError::param(
            "method",
            method,
            format!(
                "the frame has {} different values, too few for {classes} classes (scikit-image refuses \
                 it too)",
                present.len()
            ),
        ));
    }
    let indices = if present.len() == classes {
        present[..classes - 1].to_vec()
    } else {
        let combinations = choose_count(prob.len() - 1, classes - 1);
        if combinations > MAX_COMBINATIONS {
            return Err(OpError::param(
                "method",
                method,
                format!(
                    "the frame spans {} levels: the search would try {combinations} combinations of \
                     thresholds, over the limit of 2^30; give fewer classes",
                    prob.len()
                ),
            ));
        }
        MultiOtsuSearch::new(&prob, classes - 1).run()
    };
    Ok(indices.into_iter().map(|i| (low + i) as i32).collect())
}

/// C(n, k), saturating.
fn choose_count(n: usize, k: usize) -> u128 {
    let mut c = 1u128;
    for i in 0..k as u128 {
        c = c.saturating_mul(n as u128 - i) / (i + 1);
    }
    c
}

/// Most levels for which the search keeps scikit-image's table of variances (L (L + 1) / 2
/// floats, 8 MiB); above, each is computed when it is needed, to the same float.
const TABLE_MAX_LEVELS: usize = 2048;

/// scikit-image's `_get_multiotsu_thresh_indices_lut` (filters/_multiotsu.pyx), in `f32` as there.
struct MultiOtsuSearch {
    /// P and S of Liao et al.: the cumulative probabilities and first moments. skimage starts S
    /// at prob[0] (not 0 * prob[0]); kept, as it changes the floats.
    zeroth: Vec<f32>,
    first: Vec<f32>,
    /// Its table of between-class variances, row after row of the upper triangle, where kept.
    table: Option<Vec<f32>>,
    levels: usize,
    count: usize,
    current: Vec<usize>,
    best: Vec<usize>,
}

impl MultiOtsuSearch {
    fn new(prob: &[f32], count: usize) -> MultiOtsuSearch {
        let levels = prob.len();
        let mut zeroth = vec![0f32; levels];
        let mut first = vec![0f32; levels];
        zeroth[0] = prob[0];
        first[0] = prob[0];
        for i in 1..levels {
            zeroth[i] = zeroth[i - 1] + prob[i];
            first[i] = first[i - 1] + i as f32 * prob[i];
        }
        let mut search = MultiOtsuSearch {
            zeroth,
            first,
            table: None,
            levels,
            count,
            current: vec![0; count],
            best: vec![0; count],
        };
        if levels <= TABLE_MAX_LEVELS {
            let mut table = Vec::with_capacity(levels * (levels + 1) / 2);
            for i in 0..levels {
                for j in i..levels {
                    table.push(search.compute(i, j));
                }
            }
            search.table = Some(table);
        }
        search
    }

    /// The variance term of the class of levels i..=j: S_ij^2 / P_ij, 0 where P_ij is not positive;
    /// and 0 for the class 0..=0, whose entry skimage never sets.
    fn compute(&self, i: usize, j: usize) -> f32 {
        if i == 0 {
            let p = self.zeroth[j];
            return if j > 0 && p > 0.0 { self.first[j] * self.first[j] / p } else { 0.0 };
        }
        let p = self.zeroth[j] - self.zeroth[i - 1];
        if p > 0.0 {
            let s = self.first[j] - self.first[i - 1];
            s * s / p
        } else {
            0.0
        }
    }

    fn var(&self, i: usize, j: usize) -> f32 {
        match &self.table {
            Some(t) => t[i * (2 * self.levels - i + 1) / 2 + j - i],
            None => self.compute(i, j),
        }
    }

    fn run(mut self) -> Vec<usize> {
        self.descend(0, 0, 0.0);
        self.best
    }

    /// `_set_thresh_indices_lut`: every increasing choice of the remaining thresholds, the first
    /// largest sum kept; returns the largest sum so far.
    fn descend(&mut self, from: usize, k: usize, mut sigma_max: f32) -> f32 {
        if k < self.count {
            for idx in from..self.levels - self.count + k {
                self.current[k] = idx;
                sigma_max = self.descend(idx + 1, k + 1, sigma_max);
            }
            return sigma_max;
        }
        let (c, n) = (&self.current, self.count);
        let mut sigma = self.var(0, c[0]) + self.var(c[n - 1] + 1, self.levels - 1);
        for idx in 0..n - 1 {
            sigma += self.var(c[idx] + 1, c[idx + 1]);
        }
        if sigma > sigma_max {
            self.best.copy_from_slice(&self.current);
            return sigma;
        }
        sigma_max
    }
}

/// The look-up table of a frame of `levels` levels (maxval + 1): each level through
/// `thresholds[0]` by `mode` ([`Mode::map`]), or with several thresholds the labels, the count
/// of thresholds at or below the level (from the top with [`Mode::BinaryInv`]; the other modes
/// are refused for labels by [`Threshold::check`]).
pub fn table<T: Sample>(method: Method, thresholds: &[i32], levels: usize, mode: Mode) -> Vec<T> {
    let maxval = (levels - 1) as u16;
    (0..levels)
        .map(|l| {
            let out = match method.labels() {
                Some(k) => {
                    let label = thresholds.iter().filter(|&&t| t <= l as i32).count() as u16;
                    if mode == Mode::BinaryInv {
                        k - 1 - label
                    } else {
                        label
                    }
                }
                None => mode.map(l as u16, thresholds[0], maxval),
            };
            T::from_u16(out)
        })
        .collect()
}

/// The thresholds alone: the histogram on the backend, the choice on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Levels<'m> {
    pub method: Method,
    /// The pixels counted in the histogram the thresholds are chosen from; `None`: every pixel.
    pub mask: Option<Mask<'m>>,
}

/// The thresholds, and the frame mapped through them (every pixel, masked or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold<'m> {
    pub method: Method,
    pub mode: Mode,
    /// As [`Levels::mask`].
    pub mask: Option<Mask<'m>>,
}

impl Threshold<'_> {
    /// Whether the method takes the mode: labels (multi-Otsu) are binary or inverted only.
    pub fn check(&self) -> Result<(), OpError> {
        if self.method.labels().is_some() && self.mode.binary().is_none() {
            return Err(OpError::param(
                "mode",
                self.mode,
                format!("{} gives labels: it takes binary or binary-inv only", self.method),
            ));
        }
        Ok(())
    }
}

/// The table of thresholds holds integers: a float frame's are not tabled.
fn refuse_float_table(frame: &Frame, method: Method) -> Result<(), OpError> {
    match frame.pixels {
        Pixels::F32(_) => Err(OpError::param(
            "method",
            method,
            "of a float frame gives a frame, not a table of thresholds (a table holds integer thresholds)",
        )),
        _ => Ok(()),
    }
}

impl Threshold<'_> {
    /// A float frame's output: the 8-bit binary (or label) frame, maxval 255; the thresholds,
    /// floats, as the nearest integers below them (the table refuses float frames).
    fn float_output(&self, frame: &Frame, thresholds: Vec<f32>, out: Vec<u8>) -> Thresholded {
        Thresholded {
            thresholds: thresholds.iter().map(|t| t.floor() as i32).collect(),
            float_thresholds: thresholds,
            frame: frame.derive(frame.width, frame.height, 255, Pixels::U8(out.into())),
        }
    }
}

/// What [`Threshold`] gives: the thresholds chosen, and the binary (or label) frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholded {
    pub thresholds: Vec<i32>,
    /// A float frame's thresholds as chosen (empty for integer frames).
    pub float_thresholds: Vec<f32>,
    pub frame: Frame,
}

fn bits<T>() -> u32 {
    8 * std::mem::size_of::<T>() as u32
}

/// The maxval of a label frame. Labels are numbers, not intensities: at maxval 255 every container
/// holds them as they are (a PNG of maxval K - 1 would scale them to 0, 128, 255 for viewing),
/// so `cv2.imread` of any output gives `np.digitize`'s 0..K-1.
pub const LABEL_MAXVAL: u16 = 255;

/// The frame's output: the mapped samples as a frame of the input's maxval, or for labels an
/// 8-bit frame of maxval [`LABEL_MAXVAL`].
fn output_frame<T: Sample>(method: Method, frame: &Frame, mapped: impl Into<Samples<T>>) -> Frame {
    let mapped = mapped.into();
    match method.labels() {
        Some(_) => {
            let labels: Vec<u8> = mapped.iter().map(|&v| Into::<u32>::into(v) as u8).collect();
            frame.derive(frame.width, frame.height, LABEL_MAXVAL, Pixels::U8(labels.into()))
        }
        None => frame.derive(frame.width, frame.height, frame.maxval, T::into_pixels(mapped)),
    }
}

impl Op for Levels<'_> {
    type Output = Vec<i32>;

    fn cpu(&self, frame: &Frame) -> Result<Vec<i32>, OpError> {
        let mask = mask::fit_samples(self.mask, frame)?;
        refuse_float_table(frame, self.method)?;
        with_samples!(&frame.pixels, v => self.cpu_counts(v, mask, frame.maxval))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Vec<i32>, OpError> {
        mask::fit_samples(self.mask, frame)?;
        refuse_float_table(frame, self.method)?;
        with_samples!(&frame.pixels, v => self.gpu_samples(gpu, v, frame.maxval))
    }
}

impl Op for Threshold<'_> {
    type Output = Thresholded;

    fn cpu(&self, frame: &Frame) -> Result<Thresholded, OpError> {
        self.check()?;
        let mask = mask::fit_samples(self.mask, frame)?;
        if let Pixels::F32(v) = &frame.pixels {
            let (thresholds, out) = float::cpu(self.method, self.mode, v, mask)?;
            return Ok(self.float_output(frame, thresholds, out));
        }
        with_samples!(&frame.pixels, v => self.cpu_samples(frame, v, mask))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Thresholded, OpError> {
        self.check()?;
        let mask = mask::fit_samples(self.mask, frame)?;
        if let Pixels::F32(v) = &frame.pixels {
            let (thresholds, out) = float::gpu(gpu, self.method, self.mode, v, mask)?;
            return Ok(self.float_output(frame, thresholds, out));
        }
        with_samples!(&frame.pixels, v => self.gpu_samples(gpu, frame, v))
    }
}
