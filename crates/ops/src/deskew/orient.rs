//! `deskew --orient`: which way up a page of text is, 0, 90, 180 or 270 degrees (see
//! `docs/deskew.md`, *Orientation*). Decided on the CPU for both backends, from the ink (the
//! same definition as the skew's) and its integer profiles:
//!
//! 1. Lines across or down: the first level of the skew's search is scored for lines across
//!    (angles θ) and for lines down (θ + 90); each family's best angle's profile gives its
//!    [`peakiness`], Σc² E / N² (E the profile's extent holding all but 1% of the ink at either
//!    end). Text lines make the profile across them peaky (lines and gaps: about 1 / the share of
//!    the height the lines fill), the profile along them nearly flat (about 1). Lines down where
//!    their peakiness is the larger.
//! 2. Which side is up: the family's best first-level angle refined once (its neighbours a
//!    fifth of the step apart, ±5 of them) gives its skew θ; in the profile at θ (or θ + 90),
//!    [`above_below`] adds the ink just before each line's core and just after it (the bins at
//!    the core's edges left out). Latin letters rise above the x-height (b d f h k l t,
//!    capitals, digits, the dots of i and j) more often than they fall below the baseline
//!    (g j p q y), so the side holding more is the top.
//!
//! The page's orientation O is the counter-clockwise turn (rotate's sign) that the upright page
//! was given: the direction (sin O, cos O) (x right, y down) is its down, the direction in which
//! the projection at O counts bins upward. It is made upright by the quarter turn -O.

use histopipe_frame::Frame;

use super::{bits, check_frame, cpu, DeskewParams, InkRule, Projection, COARSE_STEP, REFINE};
use crate::bins::Bins;
use crate::rotate::{Interpolation, Rotate, Turn};
use crate::{histogram, with_samples, Fill, OpError, Sample};

/// A page's orientation, and the numbers that decided it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Orientation {
    /// The quarter turns counter-clockwise (0 to 3) the upright page was given.
    pub quarters: u8,
    /// The peakiness of the best profile with lines across, and with lines down.
    pub peakiness: [f64; 2],
    /// The ink before and after the lines' cores in the chosen family's profile at its skew.
    pub before: u64,
    pub after: u64,
}

impl Orientation {
    /// Degrees: 0, 90, 180 or 270.
    pub fn degrees(&self) -> u32 {
        self.quarters as u32 * 90
    }

    /// The quarter turn that makes a `width x height` page of this orientation upright: exact,
    /// its output `height x width` for an odd number of quarters.
    pub fn upright(&self, width: usize, height: usize, maxval: u16) -> Rotate {
        let quarters = (4 - self.quarters) % 4;
        let turn = Turn::Quarter(quarters);
        let (out_width, out_height) = if quarters % 2 == 1 { (height, width) } else { (width, height) };
        Rotate {
            turn,
            width,
            height,
            out_width,
            out_height,
            interpolation: Interpolation::Nearest,
            fill: Fill::Int(0),
            maxval,
            flip: None,
            centre: None,
        }
    }
}

/// Σc² E / N² of `profile` (N its total): E the bins from the first whose running total
/// reaches N / 100 to the last whose total from the end does. About 1 for ink spread evenly
/// over E bins; 1 / f for lines filling a share f of E. 0 for an empty profile.
pub fn peakiness(profile: &[u32]) -> f64 {
    let n: u64 = profile.iter().map(|&c| c as u64).sum();
    if n == 0 {
        return 0.0;
    }
    let tail = n.div_ceil(100);
    fn reach<'a>(mut bins: impl Iterator<Item = (usize, &'a u32)>, tail: u64) -> usize {
        let mut total = 0u64;
        bins.find(|(_, &c)| {
            total += c as u64;
            total >= tail
        })
        .map_or(0, |(i, _)| i)
    }
    let first = reach(profile.iter().enumerate(), tail);
    let last = reach(profile.iter().enumerate().rev(), tail);
    let extent = last.saturating_sub(first) + 1;
    super::score(profile) as f64 * extent as f64 / (n as f64 * n as f64)
}

/// The bins next to a core on either side that neither sum counts: the bin a core's edge
/// crosses part-way holds the ends of the strokes that stop at the x-height's top or at the
/// baseline, and whether it reaches the core's level depends on where the line falls on the
/// pixel grid, not on which side is up. Counted, it decided level pages of thin script, whose
/// ascenders and descenders are a few pixels each, by chance: 6 of 1,600 drawn pages read 180
/// degrees off once upright (the least margin (B - A) / (B + A), -0.04). Left out, none of
/// 4,800 did, as they came or upright (the least margin 0.02; see `docs/deskew.md`).
const CORE_EDGE: usize = 1;

/// The ink just before and just after the lines' cores in `profile`, (before, after). A core
/// is a run of bins whose counts reach half the ink's mean count, Σc² / Σc (an ink pixel's
/// bin's count, on average): 2 c Σc >= Σc². Between two cores, each takes floor(gap / 2) bins
/// of the gap on its side; the first core takes as many before it as it takes after it, the
/// last as many after it as before (a lone core: its own length on either side); of those, the
/// [`CORE_EDGE`] bins next to the core are left out. Reversing the profile swaps the two sums
/// exactly.
pub fn above_below(profile: &[u32]) -> (u64, u64) {
    let n: u128 = profile.iter().map(|&c| c as u128).sum();
    let squares = super::score(profile) as u128;
    let core = |c: u32| n > 0 && 2 * c as u128 * n >= squares;
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (b, &c) in profile.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if core(c) && run.1 == b => run.1 = b + 1,
            _ if core(c) => runs.push((b, b + 1)),
            _ => {}
        }
    }
    let sum = |from: usize, to: usize| profile[from..to].iter().map(|&c| c as u64).sum::<u64>();
    let (mut before, mut after) = (0u64, 0u64);
    for (k, &(start, end)) in runs.iter().enumerate() {
        let gap_before = (k > 0).then(|| (start - runs[k - 1].1) / 2);
        let gap_after = runs.get(k + 1).map(|next| (next.0 - end) / 2);
        let (reach_before, reach_after) = match (gap_before, gap_after) {
            (Some(b), Some(a)) => (b, a),
            (None, Some(a)) => (a, a),
            (Some(b), None) => (b, b),
            (None, None) => (end - start, end - start),
        };
        let len = profile.len();
        before += sum(start.saturating_sub(reach_before), start.saturating_sub(CORE_EDGE.min(reach_before)));
        after += sum((end + CORE_EDGE.min(reach_after)).min(len), (end + reach_after).min(len));
    }
    (before, after)
}

/// The orientation of the gray frame `frame` of integer samples (a colour frame: its luma),
/// searched with the skew's `params`; a frame without ink is upright.
pub fn orientation(params: &DeskewParams, frame: &Frame) -> Result<Orientation, OpError> {
    check_frame(params, frame)?;
    with_samples!(&frame.pixels, v => orient(params, v, frame))
}

fn orient<T: Sample>(params: &DeskewParams, samples: &[T], frame: &Frame) -> Result<Orientation, OpError> {
    let (w, h) = (frame.width, frame.height);
    let counts = histogram::count(samples, Bins::new(None, frame.maxval)?);
    let rule = InkRule::of_histogram(&counts, bits::<T>(), frame.maxval)?;
    let lists = cpu::ink_rows(samples, frame, rule);
    let ink = cpu::ink_count(&lists);
    let upright = Orientation { quarters: 0, peakiness: [0.0; 2], before: 0, after: 0 };
    if ink == 0 {
        return Ok(upright);
    }
    let scores = |base: f64, angles: &[f64]| {
        let turned: Vec<f64> = angles.iter().map(|a| a + base).collect();
        cpu::scores(&lists, ink, &turned, w, h)
    };
    let first = params.schedule().next(0.0).map(|l| l.angles).unwrap_or_default();
    let mut families = [(0.0, 0.0); 2];
    for (family, base) in [0.0, 90.0].into_iter().enumerate() {
        let level = scores(base, &first);
        let best = first[super::best_index(&first, &level)];
        families[family] = (best, peakiness(&cpu::profile(&lists, &Projection::new(best + base, w, h))));
    }
    let down = families[1].1 > families[0].1;
    let (base, (coarse, _)) = if down { (90.0, families[1]) } else { (0.0, families[0]) };
    // The best of the coarse angle's neighbours a fifth of a step apart: within 0.025 degrees.
    let step = COARSE_STEP.max(params.precision) / REFINE;
    let near: Vec<f64> = (-5..=5).map(|j| coarse + j as f64 * step).collect();
    let skew = near[super::best_index(&near, &scores(base, &near))];
    let (before, after) = above_below(&cpu::profile(&lists, &Projection::new(skew + base, w, h)));
    let peakiness = [families[0].1, families[1].1];
    let quarters = (base / 90.0) as u8 + if after > before { 2 } else { 0 };
    Ok(Orientation { quarters, peakiness, before, after })
}
