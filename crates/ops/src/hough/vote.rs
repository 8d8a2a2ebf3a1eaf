//! `hough-vote`: the accumulator of an edge map, and its CPU votes.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

use histopipe_frame::{Frame, Pixels, Samples};

use super::space::vote_column;
use super::{edge_pixels, HoughParams, HoughSpace, ANNOTATION, MIN_PART_CELLS};
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample, Work};

/// How the GPU votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Edge pixels compacted into a list, each (pixel, angle) adds 1 to a global counter atomically.
    Global,
    /// Edge list as above; one block per angle (and range of distances) counts in shared memory,
    /// then writes its row of the accumulator: no global atomics.
    Shared,
    /// The one measured faster for the number of edge pixels: see docs/hough-vote.md.
    Auto,
}

/// The most edge pixels `auto` votes with the shared strategy. Every block of that strategy reads
/// the whole edge list (4 bytes a pixel), so it wins while the list stays in L2 and loses once it
/// spills. On an H200 (60 MB of L2), shared against global: 0.39 / 1.10 ms with 0.5 M points,
/// 2.8 / 7.0 ms with 4.7 M, 10.2 / 16.7 ms with 12.2 M, 5.3 / 5.1 ms with 2.3 M points of a
/// 16384 x 16384 frame (whose wide accumulator makes shared read the list 6 times), and
/// 234 / 112 ms with 99 M (docs/BENCHMARKS.md, docs/hough-vote.md).
pub const AUTO_SHARED_MAX_POINTS: u64 = 16 << 20;

impl Strategy {
    /// The strategy to vote `points` edge pixels with: `auto` resolved, the others as they are.
    pub fn for_points(self, points: u64) -> Strategy {
        match self {
            Strategy::Auto if points <= AUTO_SHARED_MAX_POINTS => Strategy::Shared,
            Strategy::Auto => Strategy::Global,
            other => other,
        }
    }

    pub fn parse(text: &str) -> Result<Strategy, String> {
        match text {
            "global" => Ok(Strategy::Global),
            "shared" => Ok(Strategy::Shared),
            "auto" => Ok(Strategy::Auto),
            _ => Err(format!("unknown strategy '{text}' (global, shared or auto)")),
        }
    }
}

/// `hough-vote` for frames of any size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughVote {
    pub params: HoughParams,
    pub strategy: Strategy,
}

/// Shared memory per block of the shared strategy: 12288 counters, 48 KiB, the limit every
/// architecture grants without opting in. Wider accumulators are split into column ranges.
pub const SHARED_COLUMNS: usize = 12288;

impl HoughVote {
    pub fn space(&self, frame: &Frame) -> Result<HoughSpace, OpError> {
        HoughSpace::new(self.params, frame.width, frame.height)
    }

    /// The counters, row-major, `thetas x rhos`.
    pub fn votes_cpu(space: &HoughSpace, frame: &Frame) -> Result<Vec<u32>, OpError> {
        // Written now: the cells no vote reaches are read by the peak search (`parallel::written`).
        let mut acc = crate::parallel::written(space.thetas * space.rhos, 0u32);
        with_samples!(&frame.pixels, v => vote_samples(space, v, &mut acc));
        Ok(acc)
    }

    /// The accumulator frame: 16-bit, maxval max(256, most votes), the layout as annotation.
    pub(super) fn output(space: &HoughSpace, counts: impl Into<Samples<u16>>, most: u32) -> Frame {
        let mut f = Frame::new(space.rhos, space.thetas, most.max(256) as u16, Pixels::U16(counts.into()));
        f.set_annotation(ANNOTATION, &space.annotation());
        f
    }

    pub(super) fn too_many(most: u32) -> OpError {
        OpError::invalid(format!(
            "a cell has {most} votes, more than a 16-bit accumulator holds (65535): split the frame"
        ))
    }
}

/// Edge-map columns voted together. Along a row of a strip, each angle's votes move through about
/// `STRIP |cos θ|` columns of its accumulator row, and the next row shifts them by at most one: the
/// cells in use (one such run per angle) stay in the L1/L2 cache, where whole edge-map rows would
/// sweep the entire accumulator (10 MiB for 4096 x 3112) once per row.
const STRIP: usize = 256;

/// Samples tested at once for being all 0, which most of an edge map is.
const EDGE_RUN: usize = 32;

/// 1.5 · 2^23. For |v| < 2^22 the f32 sum v + ROUND_MAGIC lies in [2^23, 2^24), where the floats
/// are the integers: the addition rounds v half to even (the default rounding mode, which Rust
/// assumes) and the sum's bits are [`ROUND_MAGIC_BITS`] + round_half_even(v). That is OpenCV's
/// `cvRound` (`cvtss2si`) in plain SSE2 arithmetic that vectorizes, where `f32::round_ties_even`
/// is a library call on x86-64 without SSE4.1.
pub(super) const ROUND_MAGIC: f32 = 12_582_912.0;
pub(super) const ROUND_MAGIC_BITS: u32 = 0x4B40_0000;

/// The most distance columns for which [`ROUND_MAGIC`] rounds exactly: every vote lands in
/// [0, rhos) ([`HoughSpace::check_votes_fit`]), so |v| ≤ rhos + 1/2, below 2^22 with room to spare.
pub(super) const MAGIC_MAX_RHOS: usize = 1 << 21;

/// Adds the votes of `px` (the edge map of `space`, row-major) to `acc` (`thetas x rhos`). The
/// order of the additions does not matter: the counts are those of `HoughLinesStandard`.
///
/// The angles are split into ranges voted for on the pool's threads, each owning its rows of
/// the accumulator: a cell is counted by one thread, so nothing is merged. Every thread reads the
/// whole edge map, so the angles are split into no more ranges than there are threads.
fn vote_samples<T: Sample>(space: &HoughSpace, px: &[T], acc: &mut [u32]) {
    let (cos, sin) = space.tables();
    let rhos = space.rhos;
    // Checked here again, not trusted from `HoughSpace::new`: the fields are public.
    let fits = rhos <= MAGIC_MAX_RHOS
        && space.check_votes_fit().is_ok()
        && acc.len() == space.thetas * rhos
        && px.len() >= space.width * space.height;
    let votes = (space.width * space.height).saturating_mul(space.thetas);
    let parts = parallel::parts(votes, MIN_PART_VOTES).min(parallel::threads()).min(space.thetas);
    let row = rhos.max(1);
    parallel::for_each_part(acc, space.thetas.div_ceil(parts.max(1)) * row, |first, rows| {
        let n = (first / row).min(space.thetas)..((first + rows.len()) / row).min(space.thetas);
        vote_angles(space, px, (&cos[n.clone()], &sin[n]), fits, rows);
    });
}

/// Fewest (pixel, angle) pairs in a part of the CPU's voting ([`parallel::parts`]): 0.03 to 0.1 ns
/// a pair on one core (a real 4096x3112's edge map, 4% edges, in 67 ms; 320x240's, denser, in
/// 1.3 ms), so a part takes 0.1 to 0.4 ms.
const MIN_PART_VOTES: usize = 1 << 22;

/// The votes of `px` for the angles whose tables are `cos` and `sin` (a range of the space's),
/// into `acc`, those angles' rows of the accumulator; `fits`: every vote of the space falls in it
/// and rounds exactly with [`ROUND_MAGIC`] (see [`vote_rounded`]).
fn vote_angles<T: Sample>(
    space: &HoughSpace,
    px: &[T],
    (cos, sin): (&[f32], &[f32]),
    fits: bool,
    acc: &mut [u32],
) {
    let (width, height, rhos, offset) = (space.width, space.height, space.rhos, space.rho_offset());
    if !fits {
        for_each_edge(px, width, height, |x, y| {
            for (n, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                acc[n * rhos + vote_column(x, y, c, s, offset) as usize] += 1;
            }
        });
        return;
    }
    // Cell of (angle n, distance 0) less the magic bits: a vote's cell is its rounded sum's bits
    // plus this, in wrapping u32 (cells < 2^28).
    let base: Vec<u32> =
        (0..cos.len()).map(|n| ((n * rhos + offset) as u32).wrapping_sub(ROUND_MAGIC_BITS)).collect();
    let votes = Votes { px, width, height, cos, sin };
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the votes fit (the caller's `fits`).
        unsafe { vote_rounded_avx2(votes, &base, acc) };
        return;
    }
    // SAFETY: the votes fit (the caller's `fits`).
    unsafe { vote_rounded(votes, &base, acc) };
}

/// What a pass of rounded votes reads: the `width x height` edge map `px`, and the cosines and
/// sines of its angles.
#[derive(Clone, Copy)]
struct Votes<'a, T> {
    px: &'a [T],
    width: usize,
    height: usize,
    cos: &'a [f32],
    sin: &'a [f32],
}

/// [`vote_rounded`] compiled for AVX2: the cells of 8 angles at a time. (No FMA: the products and
/// the sum stay rounded one by one, as Rust never contracts them.)
///
/// # Safety
/// The CPU has AVX2, and [`vote_rounded`]'s conditions hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn vote_rounded_avx2<T: Sample>(votes: Votes<'_, T>, base: &[u32], acc: &mut [u32]) {
    // SAFETY: the caller's contract, which is vote_rounded's.
    unsafe { vote_rounded(votes, base, acc) }
}

/// The votes of the edge map, rounded with [`ROUND_MAGIC`], `base` the cells of distance 0 less
/// [`ROUND_MAGIC_BITS`].
///
/// # Safety
/// Every pixel's vote falls inside `acc` and rounds exactly: the space's distances are at most
/// [`MAGIC_MAX_RHOS`] and pass [`HoughSpace::check_votes_fit`], and `acc` has its cells.
#[inline(always)]
unsafe fn vote_rounded<T: Sample>(votes: Votes<'_, T>, base: &[u32], acc: &mut [u32]) {
    let Votes { px, width, height, cos, sin } = votes;
    let mut cells = vec![0u32; base.len()];
    for_each_edge(px, width, height, |x, y| {
        // All angles' cells first, in a loop that vectorizes; then the increments, independent of
        // each other (one per accumulator row), so that they overlap.
        let (xf, yf) = (x as f32, y as f32);
        for (((cell, &c), &s), &b) in cells.iter_mut().zip(cos).zip(sin).zip(base) {
            *cell = (xf * c + yf * s + ROUND_MAGIC).to_bits().wrapping_add(b);
        }
        for &cell in &cells {
            // SAFETY: the cell is in `acc` (the caller's condition); no bounds check here saves
            // a third of the voting time.
            unsafe { *acc.get_unchecked_mut(cell as usize) += 1 };
        }
    });
}

/// Calls `vote(x, y)` for every non-zero sample of the `width x height` edge map `px`, strip by
/// strip of [`STRIP`] columns, each strip top to bottom.
#[inline(always)]
fn for_each_edge<T: Sample>(px: &[T], width: usize, height: usize, mut vote: impl FnMut(usize, usize)) {
    if width == 0 {
        return;
    }
    for x0 in (0..width).step_by(STRIP) {
        let x1 = (x0 + STRIP).min(width);
        for (y, row) in px.chunks_exact(width).take(height).enumerate() {
            for (x, run) in (x0..).step_by(EDGE_RUN).zip(row[x0..x1].chunks(EDGE_RUN)) {
                // Most of an edge map is 0: a run of zeros costs one vectorized test.
                if run.iter().fold(0u32, |any, &p| any | p.into()) == 0 {
                    continue;
                }
                for (x, &p) in (x..).zip(run) {
                    if p.into() != 0 {
                        vote(x, y);
                    }
                }
            }
        }
    }
}

impl Op for HoughVote {
    type Output = Frame;

    /// A vote per edge pixel and angle, after a read of every pixel.
    fn work(&self, frame: &Frame) -> Work {
        let pixels = (frame.width * frame.height) as u128;
        let Ok(space) = self.space(frame) else { return Work { amount: pixels, what: "its pixels".into() } };
        let edges = edge_pixels(frame);
        Work {
            amount: edges * space.thetas as u128 + pixels,
            what: format!("{edges} edge pixels x {} angles of votes", space.thetas),
        }
    }

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let space = self.space(frame)?;
        let acc = Self::votes_cpu(&space, frame)?;
        // The counters narrowed to 16 bits, and the most votes, in parts on the pool's threads.
        let cells = acc.len();
        let most = AtomicU32::new(0);
        let part = cells.div_ceil(parallel::parts(cells, MIN_PART_CELLS));
        let narrow_part = |first: usize, out: &mut [MaybeUninit<u16>]| {
            let mut top = 0;
            for (slot, &v) in out.iter_mut().zip(&acc[first..]) {
                top = top.max(v);
                slot.write(v as u16);
            }
            most.fetch_max(top, Ordering::Relaxed);
        };
        // SAFETY: each slot of a part is written: `acc` has a counter for each of the cells.
        let narrow = unsafe { parallel::output_in_parts(cells, part, narrow_part) };
        let most = most.into_inner();
        if most > 65535 {
            return Err(Self::too_many(most));
        }
        Ok(Self::output(&space, narrow, most))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let space = self.space(frame)?;
        with_samples!(&frame.pixels, v => self.gpu_samples(gpu, &space, v))
    }
}
