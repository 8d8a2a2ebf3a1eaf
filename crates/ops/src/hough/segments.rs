//! `hough-segments`: line segments of an edge map, with the parameters of OpenCV's
//! `HoughLinesP(edges, 1, π/180, threshold, minLineLength, maxLineGap)` but deterministic.
//!
//! OpenCV visits the edge pixels in random order, votes each into an accumulator and, when a cell
//! reaches the threshold, walks its line from the pixel. Here the accumulator is the whole edge
//! map's ([`HoughVote`], CPU or GPU, identical bit for bit), and everything after it is host code
//! that both backends share, so their segments are the same by construction:
//! 1. candidates, in rounds: the cells with at least `threshold` votes (at least 1) that beat
//!    their 8 neighbours in the accumulator as it is at the round's start (more votes, or as many
//!    and a smaller index; rows wrap across 0/180 degrees with the distance mirrored), not walked
//!    in an earlier round, strongest first, equal votes in row-major order; a round that keeps
//!    no segment ends the search (no votes changed, so no new candidates);
//! 2. a candidate whose votes, less those taken back (4.), are now under `threshold` is skipped;
//! 3. the others' line x cos θ + y sin θ = ρ is walked across the frame along its major axis with
//!    OpenCV's 16-bit fixed-point step; at each step the pixel on the line, else the one before it
//!    across, else the one after it (a band of three) is the step's edge pixel, if one is;
//! 4. the steps with an edge pixel make segments, split where more than `max_gap` steps in a row
//!    have none; a segment whose ends differ by at least `min_length` along x or along y
//!    (OpenCV's test) is kept, and every edge pixel of the band over its steps is removed from
//!    the edge map and its votes taken back from the accumulator (as OpenCV's walk does).
//!
//! At most [`WALK_BUDGET`] steps are walked and [`MAX_SEGMENTS`] segments kept per frame, so an
//! all-edge frame takes bounded time.

use histopipe_frame::Frame;

use super::space::vote_column;
use super::vote::{MAGIC_MAX_RHOS, ROUND_MAGIC, ROUND_MAGIC_BITS};
use super::{HoughParams, HoughSpace, HoughVote, HoughVotePlan, Strategy};
use crate::{with_samples, Gpu, Op, OpError, Sample};

/// Steps walked per frame at most, over all lines (about a second on one core): candidates
/// after the budget is spent are not walked.
pub const WALK_BUDGET: u64 = 1 << 28;

/// Segments kept per frame at most.
pub const MAX_SEGMENTS: usize = 1 << 16;

/// Bits of the walk's fixed-point minor coordinate, as OpenCV's `shift`.
const SHIFT: u32 = 16;

/// `hough-segments`: segments of an edge map (non-zero samples are edges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoughSegments {
    /// Lines need at least this many votes (OpenCV's `threshold`).
    pub threshold: u32,
    /// Kept segments span at least this many pixels along x or y (`minLineLength`).
    pub min_length: u32,
    /// Runs of at most this many steps without an edge pixel are bridged (`maxLineGap`).
    pub max_gap: u32,
}

impl Default for HoughSegments {
    /// OpenCV's tutorial call, `HoughLinesP(dst, 1, CV_PI / 180, 50, 50, 10)`.
    fn default() -> Self {
        HoughSegments { threshold: 50, min_length: 50, max_gap: 10 }
    }
}

/// One segment: its end pixels, first the one of smaller major coordinate (x for lines nearer
/// horizontal, y for the others), and its edge pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
    /// Steps of the walk that found an edge pixel between the ends, both included.
    pub votes: u32,
}

impl Segment {
    /// Euclidean distance between the ends.
    pub fn length(&self) -> f64 {
        let dx = self.x1 as f64 - self.x0 as f64;
        let dy = self.y1 as f64 - self.y0 as f64;
        dx.hypot(dy)
    }
}

/// A line's walk: `steps` positions along the major axis from `first`, the minor coordinate in
/// fixed point (`minor + t · slope`, pixel = value >> [`SHIFT`]).
struct Walk {
    /// x is the major axis.
    x_major: bool,
    first: i64,
    steps: i64,
    minor: i64,
    slope: i64,
}

impl Walk {
    /// The walk of x cos θ + y sin θ = ρ over a `width x height` frame, limited to the steps
    /// whose band can touch it.
    fn new(rho: f64, theta: f64, width: usize, height: usize) -> Walk {
        let (c, s) = (theta.cos(), theta.sin());
        let x_major = s.abs() >= c.abs();
        // Along the major axis t, the minor one is (ρ − t a) / b.
        let (a, b, major, minor_len) = if x_major { (c, s, width, height) } else { (s, c, height, width) };
        let one = (1i64 << SHIFT) as f64;
        // + 1/2: the pixel is the minor coordinate rounded, OpenCV's `(1 << (shift - 1))`.
        let minor = ((rho / b + 0.5) * one).round() as i64;
        let slope = (-a / b * one).round() as i64;
        // Steps where the minor pixel is within [-1, minor_len]: the band reaches the frame.
        let (lo, hi) = (-(2i64 << SHIFT), (minor_len as i64 + 2) << SHIFT);
        let (mut first, mut last) = (0i64, major as i64 - 1);
        if slope == 0 {
            if minor < lo || minor >= hi {
                last = -1;
            }
        } else {
            let t_lo = (lo - minor) as f64 / slope as f64;
            let t_hi = (hi - minor) as f64 / slope as f64;
            let (t0, t1) = if t_lo < t_hi { (t_lo, t_hi) } else { (t_hi, t_lo) };
            first = first.max(t0.floor() as i64 - 1);
            last = last.min(t1.ceil() as i64 + 1);
        }
        let steps = (last - first + 1).max(0);
        Walk { x_major, first, steps, minor: minor + first * slope, slope }
    }

    /// The pixel of step `k` (0-based from `first`) at `across` pixels from the line.
    #[inline(always)]
    fn pixel(&self, k: i64, across: i64) -> (i64, i64) {
        let t = self.first + k;
        let m = ((self.minor + k * self.slope) >> SHIFT) + across;
        if self.x_major {
            (t, m)
        } else {
            (m, t)
        }
    }
}

/// Whether cell `i` of `acc` beats its 8 neighbours (more votes, or as many and a smaller
/// index). Rows wrap where the angles span 180 degrees: the row before the first is the last,
/// distances mirrored (θ + 180° with −ρ is the same line).
fn is_peak(space: &HoughSpace, acc: &[u32], i: usize) -> bool {
    let (rows, cols) = (space.thetas as i64, space.rhos as i64);
    let wraps = space.params == HoughParams::default();
    let (r, c) = ((i / space.rhos) as i64, (i % space.rhos) as i64);
    let v = acc[i];
    let mirror = 2 * space.rho_offset() as i64;
    for dr in -1..=1 {
        for dc in -1..=1 {
            if dr == 0 && dc == 0 {
                continue;
            }
            let (mut nr, mut nc) = (r + dr, c + dc);
            if nr < 0 || nr >= rows {
                if !wraps {
                    continue;
                }
                nr = nr.rem_euclid(rows);
                nc = mirror - nc;
            }
            if nc < 0 || nc >= cols {
                continue;
            }
            let n = (nr * cols + nc) as usize;
            if acc[n] > v || (acc[n] == v && n < i) {
                return false;
            }
        }
    }
    true
}

/// A step of a walk with an edge pixel, and that pixel.
#[derive(Clone, Copy)]
struct Hit {
    step: i64,
    x: u32,
    y: u32,
}

/// The band's order at a step: on the line, then before it, then after it.
const BAND: [i64; 3] = [0, -1, 1];

impl HoughSegments {
    /// The accumulator's layout: OpenCV's `rho = 1`, `theta = π / 180` over [0°, 180°).
    pub fn space(frame: &Frame) -> Result<HoughSpace, OpError> {
        HoughSpace::new(HoughParams::default(), frame.width, frame.height)
    }

    /// The segments of the edge map `frame` with its accumulator `acc` (`space`'s counters,
    /// row-major), which the pixels of kept segments are taken back from: the host part that
    /// both backends share.
    pub fn segments(
        &self,
        space: &HoughSpace,
        mut acc: Vec<u32>,
        frame: &Frame,
    ) -> Result<Vec<Segment>, OpError> {
        let (w, h) = (space.width, space.height);
        let mut edges = with_samples!(&frame.pixels, v => EdgeBits::new(v, w * h));
        let threshold = self.threshold.max(1);
        let take_back = TakeBack::new(space);
        let mut budget = WALK_BUDGET;
        let mut found = Vec::new();
        // The steps with an edge pixel, in walk order: reused for every line.
        let mut hits: Vec<Hit> = Vec::new();
        let mut live: Vec<usize> = (0..acc.len()).filter(|&i| acc[i] >= threshold).collect();
        let mut walked = vec![false; acc.len()];
        loop {
            live.retain(|&i| !walked[i] && acc[i] >= threshold);
            let mut peaks: Vec<u64> = live
                .iter()
                .filter(|&&i| is_peak(space, &acc, i))
                .map(|&i| (u64::from(u32::MAX - acc[i]) << 32) | i as u64)
                .collect();
            if peaks.is_empty() {
                break;
            }
            peaks.sort_unstable();
            let kept = found.len();
            for key in peaks {
                let i = (key & 0xffff_ffff) as usize;
                // The votes left once the pixels of the segments kept so far are taken back.
                if acc[i] < threshold {
                    continue;
                }
                walked[i] = true;
                let (row, column) = (i / space.rhos, i % space.rhos);
                let rho = (column as i64 - space.rho_offset() as i64) as f64 * space.params.rho_step;
                let walk = Walk::new(rho, space.theta_degrees(row).to_radians(), w, h);
                if walk.steps as u64 > budget {
                    return Ok(found);
                }
                budget -= walk.steps as u64;
                // Negative coordinates wrap to huge ones and fail the same test.
                let inside = |(x, y): (i64, i64)| (x as u64) < w as u64 && (y as u64) < h as u64;
                hits.clear();
                for k in 0..walk.steps {
                    for across in BAND {
                        let (x, y) = walk.pixel(k, across);
                        if inside((x, y)) && edges.get(y as usize * w + x as usize) {
                            hits.push(Hit { step: k, x: x as u32, y: y as u32 });
                            break;
                        }
                    }
                }
                let mut start = 0;
                for j in 1..=hits.len() {
                    if j < hits.len() && hits[j].step - hits[j - 1].step - 1 <= i64::from(self.max_gap) {
                        continue;
                    }
                    let (first, last) = (hits[start], hits[j - 1]);
                    let s = Segment {
                        x0: first.x,
                        y0: first.y,
                        x1: last.x,
                        y1: last.y,
                        votes: (j - start) as u32,
                    };
                    start = j;
                    if s.x0.abs_diff(s.x1).max(s.y0.abs_diff(s.y1)) < self.min_length {
                        continue;
                    }
                    for k in first.step..=last.step {
                        for across in BAND {
                            let p = walk.pixel(k, across);
                            if inside(p) && edges.take(p.1 as usize * w + p.0 as usize) {
                                take_back.pixel(&mut acc, p.0 as usize, p.1 as usize);
                            }
                        }
                    }
                    found.push(s);
                    if found.len() == MAX_SEGMENTS {
                        return Ok(found);
                    }
                }
            }
            // Nothing taken back: no cell's votes changed, so no new peak.
            if found.len() == kept {
                break;
            }
        }
        Ok(found)
    }
}

/// Takes the votes of edge pixels back from an accumulator, as OpenCV's walk does for the
/// pixels of a segment it keeps: the cells [`HoughVote`]'s CPU votes counted, by its arithmetic.
struct TakeBack {
    cos: Vec<f32>,
    sin: Vec<f32>,
    rhos: usize,
    offset: usize,
    /// Each angle's cell of distance 0 less [`ROUND_MAGIC_BITS`], where [`ROUND_MAGIC`] rounds
    /// every vote exactly (as `vote_rounded`, which spares `round_ties_even`'s library call).
    base: Option<Vec<u32>>,
}

impl TakeBack {
    fn new(space: &HoughSpace) -> TakeBack {
        let (cos, sin) = space.tables();
        let (rhos, offset) = (space.rhos, space.rho_offset());
        let base = (rhos <= MAGIC_MAX_RHOS).then(|| {
            (0..cos.len()).map(|n| ((n * rhos + offset) as u32).wrapping_sub(ROUND_MAGIC_BITS)).collect()
        });
        TakeBack { cos, sin, rhos, offset, base }
    }

    /// Takes the votes of edge pixel (x, y) back from `acc`.
    fn pixel(&self, acc: &mut [u32], x: usize, y: usize) {
        let (cos, sin) = (&self.cos, &self.sin);
        match &self.base {
            Some(base) => {
                let (xf, yf) = (x as f32, y as f32);
                for ((&c, &s), &b) in cos.iter().zip(sin).zip(base) {
                    let cell = &mut acc[(xf * c + yf * s + ROUND_MAGIC).to_bits().wrapping_add(b) as usize];
                    *cell = cell.saturating_sub(1);
                }
            }
            None => {
                for (n, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                    let cell = &mut acc[n * self.rhos + vote_column(x, y, c, s, self.offset) as usize];
                    *cell = cell.saturating_sub(1);
                }
            }
        }
    }
}

/// The edge map as one bit a pixel (row-major): a walk across a large frame steps from row to
/// row, and the bits of a 4096 x 4096 frame (2 MiB) stay in the caches where bytes would not.
struct EdgeBits(Vec<u64>);

impl EdgeBits {
    /// The non-zero samples among the first `n` of `px`.
    fn new<T: Sample>(px: &[T], n: usize) -> EdgeBits {
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (i, &p) in px.iter().take(n).enumerate() {
            if p.into() != 0 {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        EdgeBits(bits)
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 != 0
    }

    /// Clears pixel `i`; whether it was an edge.
    fn take(&mut self, i: usize) -> bool {
        let was = self.get(i);
        self.0[i / 64] &= !(1 << (i % 64));
        was
    }
}

impl Op for HoughSegments {
    type Output = Vec<Segment>;

    fn cpu(&self, frame: &Frame) -> Result<Vec<Segment>, OpError> {
        let space = Self::space(frame)?;
        let acc = HoughVote::votes_cpu(&space, frame)?;
        self.segments(&space, acc, frame)
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Vec<Segment>, OpError> {
        let space = Self::space(frame)?;
        let acc = with_samples!(&frame.pixels, v => gpu_votes(gpu, &space, v))?;
        self.segments(&space, acc, frame)
    }

    /// The votes visit each pixel once per angle, as `hough-vote`'s.
    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        Self::space(frame).map_or(1.0, |s| s.thetas as f64)
    }
}

/// The u32 accumulator of `input` voted on the GPU.
fn gpu_votes<T: Sample>(gpu: &Gpu, space: &HoughSpace, input: &[T]) -> Result<Vec<u32>, OpError> {
    let src = gpu.upload::<T>("segments.in", input)?;
    let mut plan = HoughVotePlan::new(gpu, *space)?;
    let mut narrow = gpu.buffer::<u16>("segments.narrow", plan.cells())?;
    plan.queue(&src, Strategy::Auto, &mut narrow)?;
    plan.counts()
}

#[cfg(test)]
mod tests {
    use histopipe_frame::Pixels;

    use super::*;

    fn frame(w: usize, h: usize, on: &[(usize, usize)]) -> Frame {
        let mut px = vec![0u8; w * h];
        for &(x, y) in on {
            px[y * w + x] = 255;
        }
        Frame::new(w, h, 255, Pixels::U8(px.into()))
    }

    #[test]
    fn a_horizontal_run_is_one_segment() {
        let on: Vec<_> = (10..90).map(|x| (x, 20)).collect();
        let segs = HoughSegments::default().cpu(&frame(100, 40, &on)).unwrap();
        assert_eq!(segs, vec![Segment { x0: 10, y0: 20, x1: 89, y1: 20, votes: 80 }]);
    }

    #[test]
    fn gaps_split_over_max_gap() {
        // 40 on, 10 off, 40 on: bridged with max_gap 10, split with 9.
        let on: Vec<_> = (0..40).chain(50..90).map(|y| (7, y)).collect();
        let f = frame(20, 100, &on);
        let p = HoughSegments { threshold: 30, min_length: 20, max_gap: 10 };
        assert_eq!(p.cpu(&f).unwrap(), vec![Segment { x0: 7, y0: 0, x1: 7, y1: 89, votes: 80 }]);
        let split = HoughSegments { max_gap: 9, ..p }.cpu(&f).unwrap();
        assert_eq!(split.len(), 2, "{split:?}");
    }

    #[test]
    fn hostile_frames_end() {
        for (w, h) in [(0, 0), (1, 1), (3, 1)] {
            let all: Vec<_> = (0..w * h).map(|i| (i % w.max(1), i / w.max(1))).collect();
            let p = HoughSegments { threshold: 1, min_length: 0, max_gap: 0 };
            let segs = p.cpu(&frame(w, h, &all)).unwrap();
            assert!(segs.len() <= w * h, "{w}x{h}: {segs:?}");
        }
    }
}
