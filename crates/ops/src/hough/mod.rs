//! `hough-vote` and `hough-lines`: the standard Hough transform for lines, vote for vote and line
//! for line as OpenCV's `cv::HoughLines` (`HoughLinesStandard`).
//!
//! The accumulator has one row per angle and one column per distance. With the angles given in
//! degrees and converted to radians in f64 (`f64::to_radians`), θ_step as f32, ρ_step as f32:
//! - rows: n = floor((θ_max − θ_min) / θ_step) + 1, less one if n > 1 and
//!   |π − (n − 1) θ_step| < θ_step / 2 (so that θ and θ + π are not both voted for);
//! - columns: m = round_half_even(f32(2 (W + H) + 1) / ρ_step), column c holding distance
//!   (c − (m − 1) / 2) ρ_step (integer division): [`HoughSpace::rho_offset`] is (m − 1) / 2;
//! - tables: a = f32(θ_min), then a += θ_step in f32 after each row; cos_n = f32(cos(a) · (1 / ρ_step)),
//!   sin_n = f32(sin(a) · (1 / ρ_step)), the product taken in f64 and 1 / ρ_step in f32;
//! - each non-zero pixel (x, y) votes in every row n for column
//!   round_half_even(f32(x) · cos_n + f32(y) · sin_n) + (m − 1) / 2, in f32 without fused
//!   multiply-add.
//!
//! Lines are the cells with more than `threshold` votes that beat their 4 neighbours (cells
//! outside count as 0) strictly on the left and above and at least equally on the right and below,
//! ordered by votes, then by row-major index; a line's ρ is f32(c − (m − 1) / 2) · ρ_step and its θ
//! f32(θ_min) + f32(n) · θ_step, in f32 as OpenCV reports them. Distinct lines
//! ([`DistinctLines`]) are the accumulator's peaks after non-maximum suppression, as scikit-image's
//! `hough_line_peaks`, wrapping across a half-turn.
//!
//! The parts: `space` (the accumulator's axes and OpenCV's tables), `annotation` (the
//! `# histopipe-hough` comment that carries a layout from `hough-vote` to `hough-lines`), `vote`
//! (`hough-vote`, its CPU votes), `lines` (`hough-lines`, its CPU peak search), `distinct`
//! (non-maximum suppression), `gpu` (both device plans), `segments` (`hough-segments`: segments
//! walked from the accumulator's cells, host code over either backend's votes), `draw` (lines and
//! segments over a picture).

mod annotation;
mod distinct;
mod draw;
mod gpu;
mod lines;
mod refine;
mod segments;
mod space;
#[cfg(test)]
mod tests;
mod vote;
mod walk;

pub use annotation::ANNOTATION;
pub use distinct::{paired, DistinctLines, Suppression};
pub use draw::{draw_lines, draw_segments, Pen};
pub use gpu::{HoughLinesPlan, HoughVotePlan};
pub use lines::{HoughLines, Line};
pub use segments::{HoughSegments, Segment, MAX_SEGMENTS, WALK_BUDGET};
pub use space::{HoughParams, HoughSpace, MAX_CELLS};
pub use vote::{HoughVote, Strategy, AUTO_SHARED_MAX_POINTS, SHARED_COLUMNS};

/// Fewest accumulator cells in a part of the CPU's narrowing or peak search
/// ([`crate::parallel::parts`]): 0.7 ns a cell on one core (4096x3112's 180 x 14417 in 1.8 ms), so a
/// part takes 0.2 ms or more.
const MIN_PART_CELLS: usize = 1 << 18;

/// The edge pixels of an edge map (its non-zero samples; none in a float frame, which the votes
/// refuse): what a vote's work is in proportion to ([`Op::work`](crate::Op::work)).
fn edge_pixels(frame: &histopipe_frame::Frame) -> u128 {
    // Counted in chunks whose counts fit the samples' own width, which the compiler makes a
    // compare and a subtraction per vector (`filter().count()` took 6% of hough-segments' time
    // on a 4K edge map).
    let count = match &frame.pixels {
        histopipe_frame::Pixels::U8(v) => {
            v.chunks(255).map(|c| c.iter().map(|&p| u8::from(p != 0)).sum::<u8>() as usize).sum()
        }
        histopipe_frame::Pixels::U16(v) => {
            v.chunks(65535).map(|c| c.iter().map(|&p| u16::from(p != 0)).sum::<u16>() as usize).sum()
        }
        histopipe_frame::Pixels::F32(_) => 0,
    };
    count as u128
}
