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
//! 2. a candidate whose votes, less those taken back (5.), are now under `threshold` is skipped;
//! 3. the others' line x cos θ + y sin θ = ρ is walked across the frame along its major axis with
//!    OpenCV's 16-bit fixed-point step; at each step the pixel on the line, else the one before it
//!    across, else the one after it (a band of three) is the step's edge pixel, if one is;
//! 4. the steps with an edge pixel make runs, split where more empty steps follow each other
//!    than span `max_gap` pixels of the line (√(1 + slope²) pixels a step); each run that spans
//!    at least the least of `min_length` and [`REFINE_SPAN`] steps (less 2) is refined
//!    ([`super::refine`]): the line fitted to its pixels by least squares is walked out from
//!    them with the same band and gaps, in rounds, to its first and last pixels on that line;
//! 5. the segment is then the line through those two pixels, walked from one to the other: where
//!    it has a longer gap, each of its runs is walked between its own first and last pixels in
//!    turn. A segment whose ends differ by at least `min_length` along x or along y (OpenCV's
//!    test) is kept, and every edge pixel of the band over its steps is removed from the edge
//!    map and its votes taken back from the accumulator (as OpenCV's walk does).
//!
//! At most [`walk_budget`] steps are walked (a frame whose lines need more is refused, naming
//! `threshold`) and [`MAX_SEGMENTS`] segments kept per frame, so an all-edge or a noisy frame
//! takes bounded time.
//!
//! The walks are what costs (a line crosses the whole frame), so they run ahead on the pool's
//! threads, a batch of candidates at a time, on the edge map as it is when the batch starts; each
//! candidate's steps are then brought up to date in order, before its segments are made. Edge
//! pixels are only ever removed, so a step's pixel that is still an edge is still the first edge
//! of its band, and one that was removed gives way to the next edge of the band in its order, if
//! any: the segments are those of walking every line in order, whatever the batches and threads.

use histopipe_frame::Frame;

use super::refine::{between, refine, Between, Pixel, REFINE_SPAN};
use super::space::vote_column;
use super::vote::{MAGIC_MAX_RHOS, ROUND_MAGIC, ROUND_MAGIC_BITS};
use super::walk::{EdgeBits, Hit, Walk, BAND};
use super::{edge_pixels, HoughParams, HoughSpace, HoughVote, HoughVotePlan, Strategy};
use crate::{parallel, with_samples, Gpu, GpuPart, Op, OpError, Sample, Work};

/// Steps walked per frame at most, over all lines: [`WALK_STEPS_PER_PIXEL`] a pixel, and at
/// least [`WALK_BUDGET`]. A frame whose lines need more is refused rather than cut short.
pub fn walk_budget(width: usize, height: usize) -> u64 {
    WALK_BUDGET.max((width as u64).saturating_mul(height as u64).saturating_mul(WALK_STEPS_PER_PIXEL))
}

/// The least [`walk_budget`] (a second or two of one core).
pub const WALK_BUDGET: u64 = 1 << 28;

/// [`walk_budget`]'s steps a pixel: a 7680 x 4320 photo's Canny edges (2.5% of the pixels) take
/// 15.
pub const WALK_STEPS_PER_PIXEL: u64 = 32;

/// Walks between a pair of ends ([`between`]) at most for one run of a candidate's walk: a run
/// that a straight line between its ends splits into more pieces than this is no segment worth
/// the time (each piece walked is at most the run long; with [`super::refine`]'s rounds a run
/// costs at most 20 walks of its span).
const PAIR_WALKS: usize = 16;

/// Segments kept per frame at most.
pub const MAX_SEGMENTS: usize = 1 << 16;

/// Steps walked ahead in one batch (besides its last walk): at first the least; twice as many
/// after a batch of which at least half the steps were used, half as many after one of which
/// less was (its walks' candidates fell under the threshold before their turn), within these
/// bounds. At most 4 bytes of memory a step.
const BATCH_STEPS: (u64, u64) = (1 << 17, 1 << 24);

/// Steps worth a part of their own on the pool (about 0.2 ms of one thread's walking).
const MIN_PART_STEPS: usize = 1 << 14;

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

/// The cells of `acc` with at least `threshold` votes, in order. 16 at a time: a run that holds
/// none, nearly every run of a photo's accumulator, is passed over by one test that vectorizes
/// (cell by cell, the scan of a 4K frame's 1.6 million cells was 5% of hough-segments' time).
fn cells_at_least(acc: &[u32], threshold: u32) -> Vec<usize> {
    const RUN: usize = 16;
    let mut live = Vec::new();
    for (k, run) in acc.chunks(RUN).enumerate() {
        if run.iter().map(|&v| u32::from(v >= threshold)).sum::<u32>() > 0 {
            live.extend(run.iter().enumerate().filter(|&(_, &v)| v >= threshold).map(|(j, _)| k * RUN + j));
        }
    }
    live
}

/// The cells of `live` that are peaks of `acc` ([`is_peak`]), each as its sort key (missing
/// votes, then index), in `live`'s order: in parts on the pool's threads, joined in order.
fn peaks_among(space: &HoughSpace, acc: &[u32], live: &[usize]) -> Vec<u64> {
    let part = live.len().div_ceil(parallel::parts(live.len(), MIN_PART_PEAKS));
    let key = |&i: &usize| (u64::from(u32::MAX - acc[i]) << 32) | i as u64;
    let peaks = parallel::map_parts(live, part, |_, cells| {
        cells.iter().filter(|&&i| is_peak(space, acc, i)).map(key).collect::<Vec<u64>>()
    });
    peaks.concat()
}

/// The walks of a part of a batch, walked ahead ([`HoughSegments::walk_ahead`]): every walk's
/// steps with an edge pixel one after another in one vector, each walk's range of it (`None`:
/// it cannot keep a segment). One vector a part, not one a walk: a stream's workers, each
/// walking its own frame, waited on glibc's arena locks to grow and free a vector for every walk
/// (30 frames of 3840x2160 through `--backend cpu` on 16 cores: 1.6 million context switches, 33
/// s in the kernel; now 6,000 and 0.7 s).
struct Ahead {
    hits: Vec<Hit>,
    walks: Vec<Option<std::ops::Range<usize>>>,
}

impl HoughSegments {
    /// The accumulator's layout: OpenCV's `rho = 1`, `theta = π / 180` over [0°, 180°).
    pub fn space(frame: &Frame) -> Result<HoughSpace, OpError> {
        HoughSpace::new(HoughParams::default(), frame.width, frame.height)
    }

    /// The segments of the edge map `frame` with its accumulator `acc` (`space`'s counters,
    /// row-major), which the pixels of kept segments are taken back from: the host part that
    /// both backends share. Frames with a side of 2^30 or more are refused.
    pub fn segments(
        &self,
        space: &HoughSpace,
        acc: Vec<u32>,
        frame: &Frame,
    ) -> Result<Vec<Segment>, OpError> {
        self.segments_within(space, acc, frame, walk_budget(space.width, space.height))
    }

    /// [`HoughSegments::segments`], walking at most `budget` steps.
    fn segments_within(
        &self,
        space: &HoughSpace,
        mut acc: Vec<u32>,
        frame: &Frame,
        mut budget: u64,
    ) -> Result<Vec<Segment>, OpError> {
        let (w, h) = (space.width, space.height);
        if w.max(h) >= 1 << 30 {
            return Err(OpError::invalid(format!(
                "a {w}x{h} edge map (segments are walked on sides under 2^30)"
            )));
        }
        let mut edges = with_samples!(&frame.pixels, v => EdgeBits::new(v, w, h));
        let threshold = self.threshold.max(1);
        let mut take_back = TakeBack::new(space);
        let all = budget;
        let mut found = Vec::new();
        // The pixels of a line's kept segments, taken back from the accumulator together.
        let mut taken: Vec<(u32, u32)> = Vec::new();
        // The walk being kept's steps, brought up to date (one vector for every walk).
        let mut hits: Vec<Hit> = Vec::new();
        let mut live = cells_at_least(&acc, threshold);
        let mut walked = parallel::written(acc.len(), false);
        let mut batch_steps = BATCH_STEPS.0;
        loop {
            take_back.flush(&mut acc);
            live.retain(|&i| !walked[i] && acc[i] >= threshold);
            let mut peaks = peaks_among(space, &acc, &live);
            if peaks.is_empty() {
                break;
            }
            peaks.sort_unstable();
            let kept = found.len();
            let mut rest = &peaks[..];
            while !rest.is_empty() {
                // The next batch's walks, ahead on the edge map as it is now. A candidate whose
                // votes are already under the threshold stays so and is left out.
                let mut batch = Vec::new();
                let mut steps = 0;
                while let Some((&key, tail)) = rest.split_first() {
                    if steps >= batch_steps {
                        break;
                    }
                    rest = tail;
                    let i = (key & 0xffff_ffff) as usize;
                    if acc[i] >= threshold {
                        let walk = Self::walk(space, i);
                        steps += walk.steps as u64;
                        batch.push((i, walk));
                    }
                }
                let ahead = self.walk_ahead(&batch, &edges, budget, steps);
                let ahead =
                    ahead.iter().flat_map(|part| part.walks.iter().map(|r| r.clone().map(|r| &part.hits[r])));
                let mut used = 0;
                for ((i, walk), walked_ahead) in batch.into_iter().zip(ahead) {
                    // The votes left once the pixels of the segments kept so far are taken back.
                    if take_back.under(&acc, i, threshold) {
                        continue;
                    }
                    walked[i] = true;
                    if walk.steps as u64 > budget {
                        let why = format!(
                            "this {w}x{h} edge map's lines need more than {all} steps of walking \
                             ({WALK_STEPS_PER_PIXEL} a pixel): raise it"
                        );
                        return Err(OpError::param("threshold", self.threshold, why));
                    }
                    budget -= walk.steps as u64;
                    used += walk.steps as u64;
                    let Some(ahead_hits) = walked_ahead else { continue };
                    hits.clear();
                    hits.extend_from_slice(ahead_hits);
                    walk.update(&mut hits, &edges);
                    let full = self.keep(&walk, &hits, &mut edges, &mut found, &mut taken);
                    for (x, y) in taken.drain(..) {
                        take_back.push(x, y);
                    }
                    if take_back.full() {
                        take_back.flush(&mut acc);
                    }
                    if full {
                        return Ok(found);
                    }
                }
                batch_steps = if 2 * used >= steps { batch_steps * 2 } else { batch_steps / 2 };
                batch_steps = batch_steps.clamp(BATCH_STEPS.0, BATCH_STEPS.1);
            }
            // Nothing taken back: no cell's votes changed, so no new peak.
            if found.len() == kept {
                break;
            }
        }
        Ok(found)
    }

    /// Each walk of `batch` (`steps` in all) on `edges`, on the pool's threads, in parts of
    /// consecutive walks ([`Ahead`]): its steps with an edge pixel; none for a walk over
    /// `budget`, which is not walked; `None` for a walk none of whose runs can ever make a kept
    /// segment ([`HoughSegments::may_keep`]).
    fn walk_ahead(&self, batch: &[(usize, Walk)], edges: &EdgeBits, budget: u64, steps: u64) -> Vec<Ahead> {
        let parts = parallel::parts(steps.min(usize::MAX as u64) as usize, MIN_PART_STEPS);
        let len = batch.len().div_ceil(parts.max(1));
        parallel::map_parts(batch, len, |_, part| {
            let mut ahead = Ahead { hits: Vec::new(), walks: Vec::with_capacity(part.len()) };
            for (_, walk) in part {
                let start = ahead.hits.len();
                if walk.steps as u64 <= budget {
                    walk.hits(edges, &mut ahead.hits);
                    if !self.may_keep(walk, &ahead.hits[start..]) {
                        ahead.hits.truncate(start);
                        ahead.walks.push(None);
                        continue;
                    }
                }
                ahead.walks.push(Some(start..ahead.hits.len()));
            }
            ahead
        })
    }

    /// Whether a segment may be kept from `hits`, `walk`'s steps with an edge pixel, now or
    /// once edge pixels are removed: removals only take steps away (runs split, never join), so
    /// a run that is refined ([`refine`]) spans, now, at least [`HoughSegments::span_to_refine`]
    /// steps less 2 (its ends may move a pixel across).
    fn may_keep(&self, walk: &Walk, hits: &[Hit]) -> bool {
        let gap = walk.gap_steps(self.max_gap);
        let least = i64::from(self.span_to_refine());
        hits.chunk_by(|a, b| b.step() - a.step() - 1 <= gap)
            .any(|run| run[run.len() - 1].step() - run[0].step() + 2 >= least)
    }

    /// The span of a candidate's run, in steps of its walk along x or y, from which it is
    /// refined: the least of `min_length` and [`REFINE_SPAN`].
    fn span_to_refine(&self) -> u32 {
        self.min_length.min(REFINE_SPAN)
    }

    /// The walk of accumulator cell `i`'s line.
    fn walk(space: &HoughSpace, i: usize) -> Walk {
        let (row, column) = (i / space.rhos, i % space.rhos);
        let rho = (column as i64 - space.rho_offset() as i64) as f64 * space.params.rho_step;
        Walk::new(rho, space.theta_degrees(row).to_radians(), space.width, space.height)
    }

    /// Makes `walk`'s segments from its steps with an edge pixel, `hits`: each run that spans
    /// [`HoughSegments::span_to_refine`] steps (less 2) is refined on the edges as they are
    /// ([`refine`]), then walked between its ends ([`between`]), and where that walk has longer
    /// gaps each of its runs between its own ends, in order; each segment whose ends differ by
    /// `min_length` along x or y is pushed into `found`, and the edge pixels of its line's band
    /// over its steps are removed from `edges`, each into `taken`. Whether `found` is full
    /// ([`MAX_SEGMENTS`]).
    fn keep(
        &self,
        walk: &Walk,
        hits: &[Hit],
        edges: &mut EdgeBits,
        found: &mut Vec<Segment>,
        taken: &mut Vec<(u32, u32)>,
    ) -> bool {
        let gap = walk.gap_steps(self.max_gap);
        let least = i64::from(self.span_to_refine());
        for run in hits.chunk_by(|a, b| b.step() - a.step() - 1 <= gap) {
            if run[run.len() - 1].step() - run[0].step() + 2 < least {
                continue;
            }
            let Some(ends) = refine(walk, run, edges, self.max_gap) else { continue };
            // Each pair is walked once, or split into pairs no further apart; at most
            // [`PAIR_WALKS`] a run, so that a run costs a bounded multiple of its steps.
            let mut pending = vec![ends];
            let mut walks = PAIR_WALKS;
            while let Some((p, q)) = pending.pop() {
                if p.0.abs_diff(q.0).max(p.1.abs_diff(q.1)) + 2 < u64::from(self.min_length) || walks == 0 {
                    continue;
                }
                walks -= 1;
                let (line, hits) = if p == q {
                    // One pixel, a segment when min_length is 0: its band is itself.
                    (Walk::through(p, (p.0 + 1, p.1), edges.w, edges.h).0, vec![])
                } else {
                    match between(p, q, edges, self.max_gap) {
                        Between::Segment(line, hits) => (line, hits),
                        Between::Runs(runs) => {
                            // Last first: popped in the walk's order.
                            pending.extend(runs.into_iter().rev());
                            continue;
                        }
                    }
                };
                if self.keep_segment(p, q, &line, &hits, edges, found, taken) {
                    return true;
                }
            }
        }
        false
    }

    /// Keeps the segment from `p` to `q` (in `line`'s order) with `hits`, steps of `line`, if
    /// its ends differ by `min_length` along x or y: pushes it into `found` and removes the
    /// edge pixels of the band over its steps from `edges`, each into `taken` (for one pixel,
    /// `hits` empty, that pixel). Whether `found` is full ([`MAX_SEGMENTS`]).
    #[allow(clippy::too_many_arguments)]
    fn keep_segment(
        &self,
        p: Pixel,
        q: Pixel,
        line: &Walk,
        hits: &[Hit],
        edges: &mut EdgeBits,
        found: &mut Vec<Segment>,
        taken: &mut Vec<(u32, u32)>,
    ) -> bool {
        let votes = hits.len().max(1) as u32;
        let s = Segment { x0: p.0 as u32, y0: p.1 as u32, x1: q.0 as u32, y1: q.1 as u32, votes };
        if s.x0.abs_diff(s.x1).max(s.y0.abs_diff(s.y1)) < self.min_length || !edges.get(p.0, p.1) {
            return false;
        }
        let steps = match (hits.first(), hits.last()) {
            (Some(first), Some(last)) => first.step()..=last.step(),
            _ => {
                edges.take(p.0, p.1);
                taken.push((p.0 as u32, p.1 as u32));
                found.push(s);
                return found.len() == MAX_SEGMENTS;
            }
        };
        for k in steps {
            for across in BAND {
                let (x, y) = line.pixel(k, across);
                if edges.take(x, y) {
                    taken.push((x as u32, y as u32));
                }
            }
        }
        found.push(s);
        found.len() == MAX_SEGMENTS
    }
}

/// Takes the votes of edge pixels back from an accumulator, as OpenCV's walk does for the
/// pixels of a segment it keeps: the cells [`HoughVote`]'s CPU votes counted, by its arithmetic.
/// Lazily: removed pixels wait in `pending` until [`TakeBack::flush`] takes them back from every
/// row at once, the rows split over the pool's threads; meanwhile [`TakeBack::under`] gives a
/// cell's exact votes, less the pending pixels' share of them.
struct TakeBack {
    cos: Vec<f32>,
    sin: Vec<f32>,
    rhos: usize,
    offset: usize,
    /// Each angle's cell of distance 0 less [`ROUND_MAGIC_BITS`], where [`ROUND_MAGIC`] rounds
    /// every vote exactly (as `vote_rounded`, which spares `round_ties_even`'s library call).
    base: Option<Vec<u32>>,
    /// The removed pixels whose votes are still in the accumulator, and their coordinates as
    /// the votes' arithmetic takes them.
    pending: Vec<(u32, u32)>,
    xs: Vec<f32>,
    ys: Vec<f32>,
}

/// Pending pixels at most before [`TakeBack::flush`]: [`TakeBack::under`] reads them all.
const PENDING: usize = 1024;

/// Votes worth a part of their own on the pool when taking back (a few microseconds).
const MIN_PART_VOTES: usize = 1 << 12;

/// Live cells worth a part of their own on the pool when looking for peaks (a tenth of a
/// millisecond: 8 neighbours each).
const MIN_PART_PEAKS: usize = 1 << 13;

impl TakeBack {
    fn new(space: &HoughSpace) -> TakeBack {
        let (cos, sin) = space.tables();
        let (rhos, offset) = (space.rhos, space.rho_offset());
        let base = (rhos <= MAGIC_MAX_RHOS).then(|| {
            (0..cos.len()).map(|n| ((n * rhos + offset) as u32).wrapping_sub(ROUND_MAGIC_BITS)).collect()
        });
        TakeBack { cos, sin, rhos, offset, base, pending: Vec::new(), xs: Vec::new(), ys: Vec::new() }
    }

    /// The column of pixel (x, y)'s vote at angle `n`.
    #[inline(always)]
    fn column(&self, n: usize, x: u32, y: u32) -> usize {
        let (c, s) = (self.cos[n], self.sin[n]);
        match &self.base {
            Some(base) => {
                let cell = (x as f32 * c + y as f32 * s + ROUND_MAGIC).to_bits().wrapping_add(base[n]);
                cell as usize - n * self.rhos
            }
            None => vote_column(x as usize, y as usize, c, s, self.offset) as usize,
        }
    }

    /// Removed pixel (x, y), its votes to be taken back.
    fn push(&mut self, x: u32, y: u32) {
        self.pending.push((x, y));
        self.xs.push(x as f32);
        self.ys.push(y as f32);
    }

    /// Whether cell `i` has fewer than `threshold` votes once the pending pixels' are taken back.
    fn under(&self, acc: &[u32], i: usize, threshold: u32) -> bool {
        let votes = acc[i] as usize;
        // Each pending pixel holds at most one of the cell's votes.
        if votes < threshold as usize || votes.saturating_sub(self.pending.len()) >= threshold as usize {
            return votes < threshold as usize;
        }
        let (n, column) = (i / self.rhos, i % self.rhos);
        let theirs = match &self.base {
            // The cell's rounded sum's bits, compared in a loop that vectorizes.
            Some(base) => {
                let bits = (i as u32).wrapping_sub(base[n]);
                let (c, s) = (self.cos[n], self.sin[n]);
                let on =
                    |(&x, &y): (&f32, &f32)| usize::from((x * c + y * s + ROUND_MAGIC).to_bits() == bits);
                self.xs.iter().zip(&self.ys).map(on).sum()
            }
            None => self.pending.iter().filter(|&&(x, y)| self.column(n, x, y) == column).count(),
        };
        votes - theirs < threshold as usize
    }

    /// Whether enough pixels wait for [`TakeBack::flush`].
    fn full(&self) -> bool {
        self.pending.len() >= PENDING
    }

    /// Takes the pending pixels' votes back from `acc` (`cos.len()` rows of `rhos`).
    fn flush(&mut self, acc: &mut [u32]) {
        if self.pending.is_empty() {
            return;
        }
        let this = &*self;
        let rows = this.cos.len();
        let parts = parallel::parts(this.pending.len() * rows, MIN_PART_VOTES);
        parallel::for_each_part(acc, rows.div_ceil(parts) * this.rhos, |first, part| {
            let mut columns = Vec::new();
            for (r, row) in part.chunks_mut(this.rhos).enumerate() {
                let n = first / this.rhos + r;
                match &this.base {
                    Some(base) => {
                        // The cell's bits less the row's first cell, as `column` has them.
                        let to_column = base[n].wrapping_sub((n * this.rhos) as u32);
                        rounded_columns(
                            &this.xs,
                            &this.ys,
                            this.cos[n],
                            this.sin[n],
                            to_column,
                            &mut columns,
                        );
                        take_back_row(row, &columns);
                    }
                    None => {
                        for &(x, y) in &this.pending {
                            let cell = &mut row[this.column(n, x, y)];
                            *cell = cell.saturating_sub(1);
                        }
                    }
                }
            }
        });
        self.pending.clear();
        self.xs.clear();
        self.ys.clear();
    }
}

/// The columns of the votes of the pixels `(xs[k], ys[k])` at the angle of cosine `c` and sine
/// `s`, rounded with [`ROUND_MAGIC`] as [`TakeBack::column`] rounds them, `to_column` taking a
/// sum's bits to its column: all of them first, in a loop that vectorizes (8 pixels at a time
/// with AVX2), then the decrements in [`take_back_row`]. One pixel at a time, each column
/// computed beside its decrement, took back a quarter of a batch's CPU time.
fn rounded_columns(xs: &[f32], ys: &[f32], c: f32, s: f32, to_column: u32, columns: &mut Vec<u32>) {
    columns.clear();
    columns.resize(xs.len(), 0);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { rounded_columns_avx2(xs, ys, c, s, to_column, columns) };
        return;
    }
    rounded_columns_into(xs, ys, c, s, to_column, columns);
}

/// [`rounded_columns_into`] compiled for AVX2 (no FMA: each product and sum rounded on its own,
/// as Rust never contracts them, so the same bits as one pixel at a time).
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rounded_columns_avx2(xs: &[f32], ys: &[f32], c: f32, s: f32, to_column: u32, columns: &mut [u32]) {
    rounded_columns_into(xs, ys, c, s, to_column, columns)
}

#[inline(always)]
fn rounded_columns_into(xs: &[f32], ys: &[f32], c: f32, s: f32, to_column: u32, columns: &mut [u32]) {
    for ((column, &x), &y) in columns.iter_mut().zip(xs).zip(ys) {
        *column = (x * c + y * s + ROUND_MAGIC).to_bits().wrapping_add(to_column);
    }
}

/// Takes a vote back from each cell of `row` that `columns` names (a cell at 0 stays 0).
fn take_back_row(row: &mut [u32], columns: &[u32]) {
    for &column in columns {
        let cell = &mut row[column as usize];
        *cell = cell.saturating_sub(1);
    }
}

impl Op for HoughSegments {
    type Output = Vec<Segment>;

    /// Each edge pixel's votes, once voted and once taken back when a kept segment removes it (on
    /// the host, whichever backend voted: as much as the vote itself), and the walks' steps: at
    /// most [`walk_budget`], and no more than a walk across the frame for each cell the votes
    /// could bring to `threshold`.
    fn work(&self, frame: &Frame) -> Work {
        let (w, h) = (frame.width, frame.height);
        let pixels = (w * h) as u128;
        let Ok(space) = Self::space(frame) else { return Work { amount: pixels, what: "its pixels".into() } };
        let (edges, thetas) = (edge_pixels(frame), space.thetas as u128);
        let cells = edges * thetas / self.threshold.max(1) as u128;
        let steps = (walk_budget(w, h) as u128).min(cells * w.max(h) as u128);
        Work {
            amount: 2 * edges * thetas + steps + pixels,
            what: format!(
                "{edges} edge pixels x {thetas} angles of votes, twice, and {steps} steps of walks"
            ),
        }
    }

    fn cpu(&self, frame: &Frame) -> Result<Vec<Segment>, OpError> {
        let space = Self::space(frame)?;
        let acc = HoughVote::votes_cpu(&space, frame)?;
        self.segments(&space, acc, frame)
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Vec<Segment>, OpError> {
        self.gpu_parts(gpu, frame)?.finish()
    }

    /// The votes on the GPU (read back before this returns); the walks, on the host, apart.
    fn gpu_parts<'a>(&'a self, gpu: &Gpu, frame: &'a Frame) -> Result<GpuPart<'a, Vec<Segment>>, OpError> {
        let space = Self::space(frame)?;
        let acc = with_samples!(&frame.pixels, v => gpu_votes(gpu, &space, v))?;
        Ok(GpuPart::Host(Box::new(move || self.segments(&space, acc, frame))))
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
    fn cells_at_least_are_the_cells_filtered() {
        let mut rng = fastrand::Rng::with_seed(fastrand::u64(..));
        for len in [0, 1, 15, 16, 17, 100, 1000] {
            let acc: Vec<u32> = (0..len).map(|_| if rng.u8(..) < 20 { rng.u32(0..9) } else { 0 }).collect();
            for threshold in [0, 1, 3, 8, 9] {
                let want: Vec<usize> = (0..len).filter(|&i| acc[i] >= threshold).collect();
                assert_eq!(cells_at_least(&acc, threshold), want, "{len} cells, threshold {threshold}");
            }
        }
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

    /// The walks ahead, in batches on the pool's threads, give the segments of walking every
    /// line in order, whatever the threads; a frame whose walks need more than the budget is
    /// refused, naming the threshold.
    #[test]
    fn threads_agree_and_the_budget_holds() {
        let mut rng = fastrand::Rng::with_seed(29);
        let (w, h) = (203, 157);
        let mut on: Vec<_> = (0..w * h / 20).map(|_| (rng.usize(..w), rng.usize(..h))).collect();
        on.extend((0..150).map(|x| (x + 20, 30 + x / 3)));
        on.extend((0..120).map(|y| (170 - y / 5, y + 10)));
        let f = frame(w, h, &on);
        let p = HoughSegments { threshold: 12, min_length: 15, max_gap: 3 };
        let segs = p.cpu(&f).unwrap();
        assert!(segs.len() >= 2, "{segs:?}");
        crate::parallel::testing::same_on_each_pool("hough-segments", || p.cpu(&f).unwrap());
        let space = HoughSegments::space(&f).unwrap();
        let acc = HoughVote::votes_cpu(&space, &f).unwrap();
        let e = p.segments_within(&space, acc, &f, 1000).unwrap_err();
        let text = e.naming(|n| n);
        assert!(text.contains("threshold 12") && text.contains("more than 1000 steps"), "{text}");
    }

    /// The rules of the module's documentation followed as written, one line at a time: each
    /// candidate's whole walk, step by step, on the edge map as it is, then its segments made
    /// and their votes taken back at once; no batches, bit runs or tiles.
    fn walking_each_line(p: &HoughSegments, f: &Frame) -> Vec<Segment> {
        let space = HoughSegments::space(f).unwrap();
        let mut acc = HoughVote::votes_cpu(&space, f).unwrap();
        let Pixels::U8(px) = &f.pixels else { unreachable!() };
        let mut edges = EdgeBits::new(&px[..], f.width, f.height);
        let take_back = TakeBack::new(&space);
        let (threshold, mut walked, mut found) = (p.threshold.max(1), vec![false; acc.len()], Vec::new());
        loop {
            let mut peaks: Vec<usize> = (0..acc.len())
                .filter(|&i| !walked[i] && acc[i] >= threshold && is_peak(&space, &acc, i))
                .collect();
            peaks.sort_by_key(|&i| (u32::MAX - acc[i], i));
            let kept = found.len();
            for &i in &peaks {
                if acc[i] < threshold {
                    continue;
                }
                walked[i] = true;
                let walk = HoughSegments::walk(&space, i);
                let hits: Vec<Hit> = (0..walk.steps)
                    .filter_map(|k| walk.band_edge(&edges, k).map(|b| Hit::new(k, b)))
                    .collect();
                let mut taken = Vec::new();
                p.keep(&walk, &hits, &mut edges, &mut found, &mut taken);
                for (x, y) in taken {
                    for n in 0..space.thetas {
                        acc[n * space.rhos + take_back.column(n, x, y)] -= 1;
                    }
                }
            }
            if found.len() == kept {
                return found;
            }
        }
    }

    /// The walks ahead (batches, threads, bit maps, runs, skipped tiles) give the segments of
    /// walking each line in turn, on random edge maps of several densities and sizes, with
    /// straight runs among the noise.
    #[test]
    fn the_walks_ahead_are_each_lines_walk() {
        let mut rng = fastrand::Rng::with_seed(2929);
        for round in 0..12 {
            let (w, h) = (rng.usize(1..260), rng.usize(1..260));
            let density = [0.002, 0.02, 0.1, 0.3][round % 4];
            let mut on: Vec<_> =
                (0..((w * h) as f64 * density) as usize).map(|_| (rng.usize(..w), rng.usize(..h))).collect();
            for _ in 0..rng.usize(0..6) {
                let (x0, y0, dx, dy) =
                    (rng.f64() * w as f64, rng.f64() * h as f64, rng.f64() - 0.5, rng.f64() - 0.5);
                for t in 0..400 {
                    let (x, y) = (x0 + dx * t as f64, y0 + dy * t as f64);
                    if x >= 0.0 && y >= 0.0 && (x as usize) < w && (y as usize) < h && rng.u32(..10) > 0 {
                        on.push((x as usize, y as usize));
                    }
                }
            }
            let f = frame(w, h, &on);
            for p in [
                HoughSegments::default(),
                HoughSegments { threshold: 8, min_length: 6, max_gap: 2 },
                HoughSegments { threshold: 1, min_length: 0, max_gap: 0 },
            ] {
                assert_eq!(
                    p.cpu(&f).unwrap(),
                    walking_each_line(&p, &f),
                    "{w}x{h}, density {density}, {p:?}"
                );
            }
        }
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
