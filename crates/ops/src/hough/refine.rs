//! `hough-segments`' runs followed along their own pixels. A candidate's walk follows the
//! accumulator's line, whose angle is a whole degree: an edge half a degree off leaves that
//! line's band of three pixels 1.5 pixels from where the two cross, 170 pixels away, so the
//! walk alone stops short of a long edge's ends (a 1-pixel segment from (320, 20) to (330, 460)
//! was found from (321, 43)). A run is refined instead: the line fitted to its edge pixels by
//! least squares is walked out from them, in rounds, until its run stops changing; then the
//! segment is the line through its two end pixels, walked between them, so that what it
//! bridges is measured on the segment itself.

use super::walk::{EdgeBits, Hit, Walk, BAND};

/// Fits at most: a run's pixels settle in two or three (an edge's pixels are its own), and
/// the last round's run is kept whether or not it settled.
const ROUNDS: usize = 4;

/// Steps of a candidate's walk worth refining however long a segment must be: a run of an edge
/// that crosses the accumulator's line within half a degree covers at least this many of its
/// steps on one side of the crossing before leaving the band (1.5 / tan 0.5° = 172), so a
/// segment longer than that is never missed for want of it.
pub(super) const REFINE_SPAN: u32 = 128;

/// A pixel of the edge map, (x, y).
pub(super) type Pixel = (i64, i64);

/// The ends of the run `run` of `walk` (hits of steps no more than the bridged gap apart)
/// refined on `edges` as they are now, with gaps of at most `max_gap` pixels: the first and last
/// edge pixels, in the walk's order, on the line fitted to the run's pixels once they settle;
/// `None` when fewer than two of its pixels are left or they make no line.
pub(super) fn refine(walk: &Walk, run: &[Hit], edges: &EdgeBits, max_gap: u32) -> Option<(Pixel, Pixel)> {
    let pixel = |walk: &Walk, h: &Hit| walk.pixel(h.step(), BAND[h.band()]);
    let mut points: Vec<Pixel> =
        run.iter().map(|h| pixel(walk, h)).filter(|&(x, y)| edges.get(x, y)).collect();
    let mut x_major = walk.x_major;
    let mut ends = None;
    for _ in 0..ROUNDS {
        let Some(line) = fit(&points, x_major, edges.w, edges.h) else { break };
        let major = |&(x, y): &Pixel| if line.x_major { x } else { y };
        let lo = points.iter().map(major).min().unwrap_or(0) - line.first;
        let hi = points.iter().map(major).max().unwrap_or(0) - line.first;
        let hits = run_around(&line, edges, lo.max(0), hi.min(line.steps - 1), line.gap_steps(max_gap));
        // The ends on the fitted line itself: a band pixel for an end would tilt the segment
        // by up to 2 pixels over its length (a text line's letters, above and below it).
        let mut on = hits.iter().filter(|h| h.band() == 0);
        let Some(first) = on.next() else { break };
        let last = on.next_back().unwrap_or(first);
        ends = Some((pixel(&line, first), pixel(&line, last)));
        let next: Vec<Pixel> = hits.iter().map(|h| pixel(&line, h)).collect();
        let settled = next == points;
        (points, x_major) = (next, line.x_major);
        if settled {
            break;
        }
    }
    ends
}

/// What the walk between two end pixels gives ([`between`]).
pub(super) enum Between {
    /// A segment: the walk of the line through the ends and its hits from one end to the
    /// other (steps of that walk), no gap longer than `max_gap`.
    Segment(Walk, Vec<Hit>),
    /// The ends of the runs of that walk, in its order, where it has longer gaps (or an end is
    /// no longer an edge): each to be walked between its own ends in turn.
    Runs(Vec<(Pixel, Pixel)>),
}

/// The line through `p` and `q` (two pixels) walked from one to the other on `edges` as they
/// are, its gaps of at most `max_gap` pixels bridged.
pub(super) fn between(p: Pixel, q: Pixel, edges: &EdgeBits, max_gap: u32) -> Between {
    let end = |walk: &Walk, h: &Hit| walk.pixel(h.step(), BAND[h.band()]);
    let (walk, k0, k1) = Walk::through(p, q, edges.w, edges.h);
    let mut part = Vec::new();
    walk.part(k0, k1 - k0 + 1).hits(edges, &mut part);
    let hits: Vec<Hit> = part.iter().map(|h| Hit::new(k0 + h.step(), h.band())).collect();
    let gap = walk.gap_steps(max_gap);
    let runs: Vec<&[Hit]> = hits.chunk_by(|a, b| b.step() - a.step() - 1 <= gap).collect();
    // The ends are on the line at steps k0 and k1: while edges, their steps' first pixels.
    let (Some(first), Some(last)) = (hits.first(), hits.last()) else { return Between::Runs(Vec::new()) };
    let on = |h: &Hit, k: i64| h.step() == k && h.band() == 0;
    if runs.len() == 1 && on(first, k0) && on(last, k1) {
        return Between::Segment(walk, hits);
    }
    Between::Runs(runs.iter().map(|run| (end(&walk, &run[0]), end(&walk, &run[run.len() - 1]))).collect())
}

/// The walk of the least-squares line through `points` over a `w x h` frame: the minor
/// coordinate regressed on the major one, the axis along which the points spread further
/// (`x_major` where they spread as far), or the other when the slope would pass 1 (the fit is
/// then steeper than the axes' diagonal: the product of the two regressions' slopes is at
/// most 1, so the other's is under 1). `None` for fewer than two distinct points.
fn fit(points: &[(i64, i64)], x_major: bool, w: usize, h: usize) -> Option<Walk> {
    let spread = |f: fn(&(i64, i64)) -> i64| {
        let (lo, hi) = points.iter().map(f).fold((i64::MAX, i64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        hi.saturating_sub(lo)
    };
    let (sx, sy) = (spread(|p| p.0), spread(|p| p.1));
    if points.len() < 2 || sx.max(sy) <= 0 {
        return None;
    }
    let first_axis = if sx == sy { x_major } else { sx > sy };
    for x_major in [first_axis, !first_axis] {
        let tm = |&(x, y): &(i64, i64)| if x_major { (x as f64, y as f64) } else { (y as f64, x as f64) };
        let n = points.len() as f64;
        let (st, sm) = points.iter().map(tm).fold((0.0, 0.0), |(a, b), (t, m)| (a + t, b + m));
        let (mt, mm) = (st / n, sm / n);
        let (stt, stm) = points
            .iter()
            .map(tm)
            .fold((0.0, 0.0), |(a, b), (t, m)| (a + (t - mt) * (t - mt), b + (t - mt) * (m - mm)));
        if stt <= 0.0 {
            continue;
        }
        let slope = stm / stt;
        if slope.abs() <= 1.0 {
            return Some(Walk::along(x_major, mm - slope * mt, slope, w, h));
        }
    }
    None
}

/// The hits of `line` around its steps `lo..=hi`: from the first there to the last, carried
/// on along the line both ways while its gaps stay bridged (at most `gap` empty steps); steps
/// of `line`.
fn run_around(line: &Walk, edges: &EdgeBits, lo: i64, hi: i64, gap: i64) -> Vec<Hit> {
    if hi < lo {
        return Vec::new();
    }
    let mut core = Vec::new();
    line.part(lo, hi - lo + 1).hits(edges, &mut core);
    let (Some(first), Some(last)) = (core.first(), core.last()) else { return Vec::new() };
    let (mut a, mut b) = (lo + first.step(), lo + last.step());
    let mut k = b + 1;
    while k < line.steps && k - b - 1 <= gap {
        if line.band_edge(edges, k).is_some() {
            b = k;
        }
        k += 1;
    }
    let mut k = a - 1;
    while k >= 0 && a - k - 1 <= gap {
        if line.band_edge(edges, k).is_some() {
            a = k;
        }
        k -= 1;
    }
    let mut hits = Vec::new();
    line.part(a, b - a + 1).hits(edges, &mut hits);
    hits.iter().map(|h| Hit::new(a + h.step(), h.band())).collect()
}
