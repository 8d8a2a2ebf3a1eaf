//! `deskew`: the skew angle of a scanned page, the angle that maximizes the variance of its
//! projection profile, and the page turned upright by it. See `docs/deskew.md` for the whole
//! definition; in short:
//!
//! 1. Ink ([`InkRule`]): a pixel is ink when it is darker than the mean of its window, the
//!    (2 [`WINDOW`] + 1)² pixels around it cut by the frame's edges, by more than
//!    [`MARGIN_NUM`] / [`MARGIN_DEN`] of maxval: with S the window's sum and n its pixels,
//!    `MARGIN_DEN (S - n v) > MARGIN_NUM maxval n`, in integers (OpenCV's `adaptiveThreshold`,
//!    `ADAPTIVE_THRESH_MEAN_C`, up to the edges). Local, so a page under uneven light keeps its
//!    shadows out of the ink. Light text on a dark page (the minority class of the frame's Otsu
//!    threshold is the light one, [`threshold::choose`]) is ink when lighter than its window's
//!    mean by that margin. No ink (a blank or flat frame): angle 0.
//! 2. The profile at a candidate angle θ (degrees): every ink pixel (x, y) counted in the 1-pixel
//!    bin `(x S + y C + o) >> 24`, with S = round(sin θ 2^24) and C = round(cos θ 2^24) as
//!    integers (cos and sin in `f64` on the host) and o = 2^23 - min over the frame's corners of
//!    (x S + y C): the point's distance across the lines of slope θ, rounded, in exact integer
//!    arithmetic. Counts are integers, so neither the order nor the backend changes them.
//! 3. The score: the sum of the squared counts, Σ c², exactly (u64: c ≤ the ink ≤ 2^32). The ink
//!    is the same at every angle, so over any fixed range of B bins the profile's variance
//!    Σ c² / B - (N / B)² orders the angles as Σ c² does.
//! 4. The search, coarse to fine ([`Schedule`]): every multiple of 0.25 degrees within ±max_angle
//!    (of `precision`, if that is coarser); then, around the best so far b, with step s' =
//!    max(s / 5, precision), the angles b + j s' for |j| ≤ ceil(s / s') within ±max_angle, until
//!    the step is the precision; the last level spans b ± 1.5 degrees (at most 75 steps each
//!    way). The best of a level: the largest score, then the smallest |θ|, then the smallest θ;
//!    of the last level, the middle of its peak at half height ([`search`]).
//!
//! The angle is the page's skew counter-clockwise as displayed, `rotate`'s sign: a straight page
//! turned by `rotate A` measures A, and is made upright by the turn by -A ([`Deskew`]: bilinear,
//! the same size, pixels from outside the fill, by default the most common sample).
//!
//! The parts: this module (the definition and the host's search), `cpu` (the ink's coordinates,
//! one profile an angle on the pool's threads), [`gpu`] (the device plan: the ink in two
//! separable passes, one launch a level for every angle of it, then the turn on the uploaded
//! frame).

use histopipe_frame::Frame;

use crate::bins::Bins;
use crate::histogram;
use crate::rotate::{Interpolation, Rotate, Turn};
use crate::threshold::{self, Method};
use crate::{with_samples, Fill, Gpu, Op, OpError};

pub use drawn::drawn_page_with;

mod cpu;
mod drawn;
pub mod gpu;
mod orient;
#[cfg(test)]
mod tests;

pub use gpu::DeskewPlan;
pub use orient::{above_below, orientation, peakiness, Orientation};

/// The fraction bits of the fixed-point cosines and sines (`FRAC_BITS` in deskew.cu).
pub const FRAC_BITS: u32 = 24;
/// The coarsest step of the search, degrees.
pub const COARSE_STEP: f64 = 0.25;
/// Each refinement divides the step by this (down to the precision).
pub const REFINE: f64 = 5.0;
/// The largest `max_angle`, degrees: beyond 45 a page's lines and columns trade places.
pub const MAX_ANGLE: f64 = 45.0;
/// The last level spans the best angle of the level before ± this (degrees), or ±
/// [`FINAL_MOST_STEPS`] steps of the precision if that is less (and at least ± the step before).
pub const FINAL_HALF_WIDTH: f64 = 1.5;
pub const FINAL_MOST_STEPS: i64 = 75;
/// The finest `precision`, degrees.
pub const MIN_PRECISION: f64 = 0.001;
/// The most bytes of profiles kept at once (angles are taken in groups that fit; at least one).
pub const PROFILE_BUDGET: usize = 256 << 20;

/// What the search looks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeskewParams {
    /// The largest skew searched, degrees: angles in [-max_angle, max_angle].
    pub max_angle: f64,
    /// The step of the last level of the search, degrees.
    pub precision: f64,
}

impl Default for DeskewParams {
    fn default() -> DeskewParams {
        DeskewParams { max_angle: 15.0, precision: 0.02 }
    }
}

impl DeskewParams {
    /// Refuses values the search cannot take.
    pub fn check(&self) -> Result<(), OpError> {
        let m = self.max_angle;
        if !(m.is_finite() && m > 0.0 && m <= MAX_ANGLE) {
            return Err(OpError::param(
                "max_angle",
                m,
                format!("degrees, more than 0 and at most {MAX_ANGLE}"),
            ));
        }
        let p = self.precision;
        if !(p.is_finite() && (MIN_PRECISION..=1.0).contains(&p)) {
            return Err(OpError::param("precision", p, format!("degrees, {MIN_PRECISION} to 1")));
        }
        Ok(())
    }

    /// The search's schedule.
    pub fn schedule(&self) -> Schedule {
        Schedule { params: *self, step: 0.0 }
    }
}

/// One level of the search: its angles, in increasing order, and whether it is the last.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub angles: Vec<f64>,
    pub last: bool,
}

/// The levels of the coarse-to-fine search (see the module's documentation): [`Schedule::next`]
/// gives each level's angles, given the best angle of the level before.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    params: DeskewParams,
    /// The step of the level given last; 0 before the first.
    step: f64,
}

impl Schedule {
    /// The next level, the best angle of the last being `best` (ignored for the first); `None`
    /// after the last.
    pub fn next(&mut self, best: f64) -> Option<Level> {
        let DeskewParams { max_angle: m, precision: p } = self.params;
        if self.step == 0.0 {
            let step = COARSE_STEP.max(p);
            self.step = step;
            let k = (m / step + 1e-9).floor() as i64;
            return Some(Level { angles: (-k..=k).map(|i| i as f64 * step).collect(), last: step <= p });
        }
        if self.step <= p {
            return None;
        }
        let step = (self.step / REFINE).max(p);
        let last = step <= p;
        let mut j = (self.step / step - 1e-9).ceil() as i64;
        if last {
            j = j.max(((FINAL_HALF_WIDTH / p - 1e-9).ceil() as i64).min(FINAL_MOST_STEPS));
        }
        self.step = step;
        let angles = (-j..=j).map(|i| best + i as f64 * step).filter(|a| a.abs() <= m + 1e-9).collect();
        Some(Level { angles, last })
    }
}

/// One candidate angle in fixed point: the bin of (x, y) is `(x s + y c + offset) >> FRAC_BITS`,
/// in `0..bins`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    pub s: i64,
    pub c: i64,
    pub offset: i64,
    pub bins: usize,
}

impl Projection {
    /// The projection at `degrees` of a `width x height` frame (both at least 1, below 2^31).
    pub fn new(degrees: f64, width: usize, height: usize) -> Projection {
        let (sin, cos) = degrees.to_radians().sin_cos();
        let one = (1i64 << FRAC_BITS) as f64;
        let (s, c) = ((sin * one).round() as i64, (cos * one).round() as i64);
        let (xs, yc) = ((width as i64 - 1) * s, (height as i64 - 1) * c);
        let low = xs.min(0) + yc.min(0);
        let high = xs.max(0) + yc.max(0);
        let offset = (1 << (FRAC_BITS - 1)) - low;
        Projection { s, c, offset, bins: ((high + offset) >> FRAC_BITS) as usize + 1 }
    }

    pub fn bin(&self, x: u32, y: u32) -> usize {
        ((x as i64 * self.s + y as i64 * self.c + self.offset) >> FRAC_BITS) as usize
    }
}

/// Σ c² of a profile.
pub fn score(profile: &[u32]) -> u64 {
    profile.iter().map(|&c| c as u64 * c as u64).sum()
}

/// The half side of the ink test's window: (2 WINDOW + 1)² = 441 pixels, a few strokes of text
/// at 100 to 300 dpi. The window's sums fit u32: 441 · 65535 < 2^32.
pub const WINDOW: u32 = 10;
/// The ink test's margin, MARGIN_NUM / MARGIN_DEN of maxval: 10 levels of 255.
pub const MARGIN_NUM: i64 = 10;
pub const MARGIN_DEN: i64 = 255;

/// The ink test of one frame (see the module's documentation, step 1): its polarity, chosen by
/// the frame's Otsu threshold, and its margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InkRule {
    /// Dark ink on light paper (else light on dark).
    pub dark: bool,
    /// Otsu's threshold of the frame, which chose the polarity.
    pub threshold: i32,
    /// MARGIN_NUM · maxval: the margin times MARGIN_DEN.
    pub margin: i64,
}

impl InkRule {
    /// The rule of a frame of `bits`-bit samples (8 or 16) up to `maxval` whose histogram is
    /// `counts`: dark ink unless the samples at or below Otsu's threshold are more than half.
    pub fn of_histogram(counts: &[u64], bits: u32, maxval: u16) -> Result<InkRule, OpError> {
        let t = threshold::choose(Method::Otsu, counts, bits)?[0];
        let top = counts.len().saturating_sub(1);
        let t = t.clamp(0, top as i32);
        let total: u64 = counts.iter().sum();
        let dark: u64 = counts[..=(t as usize).min(top)].iter().sum();
        Ok(InkRule { dark: dark <= total - dark, threshold: t, margin: MARGIN_NUM * maxval as i64 })
    }

    /// Whether sample `v`, whose window of `n` pixels sums to `sum`, is ink.
    #[inline]
    pub fn is_ink(&self, v: u32, sum: u32, n: u32) -> bool {
        let (nv, sum) = (n as i64 * v as i64, sum as i64);
        let excess = if self.dark { sum - nv } else { nv - sum };
        MARGIN_DEN * excess > self.margin * n as i64
    }
}

/// The window's span along one axis of `len` pixels about `i`: [i - WINDOW, i + WINDOW] within
/// [0, len), as `(first, end)`.
#[inline]
pub fn window(i: usize, len: usize) -> (usize, usize) {
    (i.saturating_sub(WINDOW as usize), (i + WINDOW as usize + 1).min(len))
}

/// A frame's skew, and how it was found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Skew {
    /// Degrees, counter-clockwise as displayed (0 for a frame without ink).
    pub angle: f64,
    /// Its score, Σ c² of its profile (0 without ink).
    pub score: u64,
    pub rule: InkRule,
    /// How many pixels are ink.
    pub ink: u64,
    /// How far the first level's best score stands above its median, (best - median) / best, in
    /// [0, 1]: 0 without ink or for a flat score ([`confidence`]).
    pub confidence: f64,
}

/// The confidence of a search whose first level scored `scores`: (s_best - s_median) / s_best,
/// s_median the lower median (the element (n - 1) / 2 of the sorted scores); 0 where s_best is 0.
/// Text lines make one angle's profile much peakier than the others' (about 1 - the share of the
/// text's height its lines fill); a photo or a blank page scores about alike at every angle.
pub fn confidence(scores: &[u64]) -> f64 {
    let mut sorted = scores.to_vec();
    sorted.sort_unstable();
    let (Some(&best), Some(&median)) = (sorted.last(), sorted.get(sorted.len().saturating_sub(1) / 2)) else {
        return 0.0;
    };
    if best == 0 {
        return 0.0;
    }
    (best - median) as f64 / best as f64
}

/// The better of two scored angles: the larger score, then the smaller |angle|, then the
/// smaller angle.
fn better(a: (f64, u64), b: (f64, u64)) -> bool {
    (a.1, -a.0.abs(), -a.0).partial_cmp(&(b.1, -b.0.abs(), -b.0)) == Some(std::cmp::Ordering::Greater)
}

/// The index of the best of `scores` by [`better`].
fn best_index(angles: &[f64], scores: &[u64]) -> usize {
    let mut best = 0;
    for i in 1..scores.len().min(angles.len()) {
        if better((angles[i], scores[i]), (angles[best], scores[best])) {
            best = i;
        }
    }
    best
}

/// The centre of the peak of the last level: the run of consecutive angles around the best
/// whose scores reach halfway from the larger of the level's two end scores to the best's,
/// 2 s >= s_best + s_end, and the angle in its middle (of the two middle ones, the better). A
/// peak's shape about the true skew is symmetric, its top is not (the pixel grid's aliasing),
/// so its middle at half height is the steadier estimate.
fn peak_centre(angles: &[f64], scores: &[u64]) -> usize {
    let top = best_index(angles, scores);
    let n = scores.len().min(angles.len());
    let end = scores[0].max(scores[n - 1]) as u128;
    let reaches = |i: usize| 2 * scores[i] as u128 >= scores[top] as u128 + end;
    let (mut lo, mut hi) = (top, top);
    while lo > 0 && reaches(lo - 1) {
        lo -= 1;
    }
    while hi + 1 < n && reaches(hi + 1) {
        hi += 1;
    }
    let (a, b) = ((lo + hi) / 2, (lo + hi).div_ceil(2));
    if better((angles[b], scores[b]), (angles[a], scores[a])) {
        b
    } else {
        a
    }
}

/// The search over the schedule of `params`, each level's scores given by `scores(angles)`.
pub fn search(
    params: DeskewParams,
    rule: InkRule,
    ink: u64,
    mut scores: impl FnMut(&[f64]) -> Result<Vec<u64>, OpError>,
) -> Result<Skew, OpError> {
    if ink == 0 {
        return Ok(Skew { angle: 0.0, score: 0, rule, ink, confidence: 0.0 });
    }
    let mut schedule = params.schedule();
    let mut best = (0.0, 0u64);
    let mut first = None;
    while let Some(level) = schedule.next(best.0) {
        let level_scores = scores(&level.angles)?;
        if level.angles.is_empty() || level_scores.len() != level.angles.len() {
            return Err(OpError::invalid("deskew: a level of the search without its scores"));
        }
        first.get_or_insert_with(|| confidence(&level_scores));
        let i = if level.last {
            peak_centre(&level.angles, &level_scores)
        } else {
            best_index(&level.angles, &level_scores)
        };
        best = (level.angles[i], level_scores[i]);
    }
    Ok(Skew { angle: best.0, score: best.1, rule, ink, confidence: first.unwrap_or(0.0) })
}

/// Refuses frames whose coordinates or counts would not fit the arithmetic: at most u32::MAX
/// pixels (so Σ c² < 2^64), sides below 2^31.
fn check_size(width: usize, height: usize) -> Result<(), OpError> {
    if width as u64 * height as u64 > u32::MAX as u64 || width >= 1 << 31 || height >= 1 << 31 {
        return Err(OpError::invalid(format!(
            "a {width}x{height} frame: deskew takes at most 2^32 - 1 pixels"
        )));
    }
    Ok(())
}

/// The most common sample of a histogram (the smallest such); 0 for an empty one.
pub fn most_common(counts: &[u64]) -> u16 {
    let mut best = 0;
    for (v, &c) in counts.iter().enumerate() {
        if c > counts[best] {
            best = v;
        }
    }
    best as u16
}

/// The most common sample of each channel of `frame` (integer samples): `deskew`'s default fill.
pub fn background(frame: &Frame) -> Result<Vec<Fill>, OpError> {
    let bins = Bins::new(None, frame.maxval)?;
    (0..frame.channels.count())
        .map(|c| {
            let plane = if frame.channels.count() == 1 { frame.clone() } else { frame.plane(c) };
            let counts = with_samples!(&plane.pixels, v => histogram::count(v, bins));
            Ok(Fill::Int(most_common(&counts)))
        })
        .collect()
}

/// The turn that makes a page of skew `angle` upright: `rotate -angle`, bilinear, the same size.
pub fn upright(angle: f64, width: usize, height: usize, fill: Fill, maxval: u16) -> Result<Rotate, OpError> {
    let turn = Turn::degrees(-angle)?;
    Ok(Rotate::in_place(turn, width, height, Interpolation::Bilinear, fill, maxval))
}

/// The skew of a gray frame of integer samples (colour: measure its luma).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SkewAngle {
    pub params: DeskewParams,
}

/// The skew of a gray frame, and the frame turned upright.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Deskew {
    pub params: DeskewParams,
    /// The fill of the turn; `None`: the frame's most common sample.
    pub fill: Option<Fill>,
}

/// What [`Deskew`] gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Deskewed {
    pub skew: Skew,
    pub frame: Frame,
}

fn bits<T>() -> u32 {
    8 * std::mem::size_of::<T>() as u32
}

fn check_frame(params: &DeskewParams, frame: &Frame) -> Result<(), OpError> {
    params.check()?;
    if frame.channels.count() != 1 {
        return Err(OpError::invalid("deskew measures gray frames: give it the luma of a colour frame"));
    }
    check_size(frame.width, frame.height)
}

impl Deskew {
    /// The fill of the turn, given the frame's histogram.
    fn fill_for(&self, counts: &[u64], maxval: u16) -> Result<Fill, OpError> {
        match self.fill {
            Some(f) => f.for_samples("fill", false, maxval),
            None => Ok(Fill::Int(most_common(counts))),
        }
    }
}

impl Op for SkewAngle {
    type Output = Skew;

    fn cpu(&self, frame: &Frame) -> Result<Skew, OpError> {
        check_frame(&self.params, frame)?;
        with_samples!(&frame.pixels, v => cpu::measure(&self.params, v, frame).map(|(s, _)| s))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Skew, OpError> {
        check_frame(&self.params, frame)?;
        with_samples!(&frame.pixels, v => gpu::measure(gpu, &self.params, v, frame))
    }
}

impl Op for Deskew {
    type Output = Deskewed;

    fn cpu(&self, frame: &Frame) -> Result<Deskewed, OpError> {
        check_frame(&self.params, frame)?;
        let (skew, counts) = with_samples!(&frame.pixels, v => cpu::measure(&self.params, v, frame)?);
        let fill = self.fill_for(&counts, frame.maxval)?;
        let turn = upright(skew.angle, frame.width, frame.height, fill, frame.maxval)?;
        Ok(Deskewed { skew, frame: turn.cpu(frame)? })
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Deskewed, OpError> {
        check_frame(&self.params, frame)?;
        with_samples!(&frame.pixels, v => gpu::deskew(gpu, self, v, frame))
    }
}
