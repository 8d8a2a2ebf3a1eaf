//! `hough-lines`' distinct lines: the peaks of an accumulator after non-maximum suppression in
//! (ρ, θ), as scikit-image's `hough_line_peaks`, with the angle axis wrapping across a half-turn.
//!
//! Host code from the accumulator for both backends: it is small (180 rows by a few thousand
//! columns), and the backends then agree by construction.

use histopipe_frame::Frame;

use super::{HoughLines, HoughSpace, Line};
use crate::{Gpu, Op, OpError};

/// How far apart two distinct lines are at least, in accumulator cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suppression {
    /// Columns (distance steps) either side: scikit-image's `min_distance`.
    pub rho_cells: usize,
    /// Rows (angle steps) either side: scikit-image's `min_angle`.
    pub theta_cells: usize,
}

impl Default for Suppression {
    /// scikit-image's defaults: 9 distance steps, 10 angle steps.
    fn default() -> Self {
        Suppression { rho_cells: 9, theta_cells: 10 }
    }
}

/// `hough-lines`' distinct lines: the cells with more than `threshold` votes that are the largest
/// of their window of (2 `theta_cells` + 1) rows by (2 `rho_cells` + 1) columns (equal ones
/// allowed), each plateau of equal such cells (8-connected, as scikit-image labels them) taken
/// at its centroid rounded half to even; then, strongest first, each one kept unless it lies in
/// the window of one kept before, and at most `top` kept. When the rows span a half-turn, the
/// window wraps: the row before the first is the last, with the distance negated (column
/// 2 · offset − c). Lines are ordered by votes, most first, then by row-major index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistinctLines {
    pub threshold: u32,
    pub suppression: Suppression,
    pub top: Option<usize>,
    /// Look for the lines in the accumulator's [`paired`] counts rather than its own.
    pub pairs: bool,
}

/// The accumulator's counts (`cols` a row) with each cell that has at least as many votes as
/// both its neighbours in distance given the larger neighbour's votes too (saturated at 65535);
/// the other cells keep their own. A line whose distance falls between two columns then counts
/// all its votes, and the pixel grid's lines stop winning: at 45° a column of 1 pixel's width
/// holds one or two diagonals of pixels (of √2 / 2 pixel's pitch), so in texture the columns
/// of two hold √2 times the votes of a column at another angle, where two columns of 45° (three
/// diagonals) hold 1.06 times two columns' at another angle (2.12 / 2).
pub fn paired(counts: &[u16], cols: usize) -> Vec<u16> {
    let mut out = counts.to_vec();
    for (row, out) in counts.chunks_exact(cols.max(1)).zip(out.chunks_exact_mut(cols.max(1))) {
        for (c, slot) in out.iter_mut().enumerate() {
            let left = if c > 0 { row[c - 1] } else { 0 };
            let right = row.get(c + 1).copied().unwrap_or(0);
            let side = left.max(right);
            if row[c] >= side {
                *slot = row[c].saturating_add(side);
            }
        }
    }
    out
}

/// The accumulator's cells and how its rows wrap.
struct Cells<'a> {
    acc: &'a [u16],
    rows: usize,
    cols: usize,
    /// The column of distance 0, twice: column c's mirror is `mirror − c`.
    mirror: i64,
    /// Whether the rows span a half-turn, so that row `rows` is row 0 with distances negated.
    wraps: bool,
    /// The column of distance 0 ([`HoughSpace::rho_offset`]) less scikit-image's,
    /// ⌈√(W² + H²)⌉ (`hough_line`'s distance k is its index k + that): a plateau's centroid
    /// column is rounded in scikit-image's index, as `np.round` rounds it there.
    peer_shift: i64,
}

impl Cells<'_> {
    /// Row `r` (any integer) and the column `c` is in it: outside 0..rows, the row a half-turn
    /// away and the mirrored column where the axis wraps, `None` where it does not.
    fn place(&self, r: i64, c: i64) -> Option<(usize, i64)> {
        let rows = self.rows as i64;
        if (0..rows).contains(&r) {
            return Some((r as usize, c));
        }
        if !self.wraps {
            return None;
        }
        let turns = r.div_euclid(rows);
        let c = if turns % 2 == 0 { c } else { self.mirror - c };
        Some((r.rem_euclid(rows) as usize, c))
    }
}

impl DistinctLines {
    /// The distinct lines of `acc` (`space.thetas` rows of `space.rhos` counts).
    fn find(&self, space: &HoughSpace, acc: &[u16]) -> Vec<Line> {
        let (rows, cols) = (space.thetas, space.rhos);
        if rows == 0 || cols == 0 {
            return Vec::new();
        }
        let step = space.params.theta_step;
        let cells = Cells {
            acc,
            rows,
            cols,
            mirror: 2 * space.rho_offset() as i64,
            wraps: (rows as f64 * step - 180.0).abs() < step / 2.0,
            peer_shift: space.rho_offset() as i64
                - (space.width as f64).hypot(space.height as f64).ceil() as i64,
        };
        let (dr, dc) = (self.suppression.theta_cells as i64, self.suppression.rho_cells as i64);
        // The largest count of each row's window of columns, for columns -1..cols: a mirrored
        // column may be -1 (an even number of columns has no mirror for the last one).
        let row_max = window_max_rows(acc, cols, self.suppression.rho_cells);
        let row_max_at = |r: usize, c: i64| -> u16 {
            if (-1..cols as i64).contains(&c) {
                row_max[r * (cols + 1) + (c + 1) as usize]
            } else {
                0
            }
        };
        let mut candidates = Vec::new();
        for (i, &v) in acc.iter().enumerate() {
            if u32::from(v) <= self.threshold {
                continue;
            }
            let (n, c) = (i / cols, (i % cols) as i64);
            if v < row_max_at(n, c) {
                continue;
            }
            let top = (-dr..=dr).all(|d| match cells.place(n as i64 + d, c) {
                Some((r, c)) => row_max_at(r, c) <= v,
                None => true,
            });
            if top {
                candidates.push(i);
            }
        }
        let mut peaks = plateaus(&cells, &candidates);
        peaks.sort_unstable_by_key(|p| (std::cmp::Reverse(p.votes), p.index));
        let limit = self.top.unwrap_or(usize::MAX);
        let mut suppressed = vec![false; rows * cols];
        let mut lines = Vec::new();
        for p in peaks {
            if lines.len() >= limit {
                break;
            }
            if suppressed[p.index] {
                continue;
            }
            let (n, c) = (p.index / cols, (p.index % cols) as i64);
            for d in -dr..=dr {
                for e in -dc..=dc {
                    if let Some((r, c)) = cells.place(n as i64 + d, c + e) {
                        if (0..cols as i64).contains(&c) {
                            suppressed[r * cols + c as usize] = true;
                        }
                    }
                }
            }
            let column = c as usize;
            lines.push(Line {
                rho: space.rho(column),
                theta: space.theta(n),
                theta_degrees: space.theta_degrees(n),
                votes: p.votes,
                row: n,
                column,
            });
        }
        lines
    }
}

/// For each row of `acc` (`cols` wide), the largest count in the columns `k - radius..=k +
/// radius` for each k in -1..cols (counts outside the row are 0), as rows of `cols + 1`:
/// van Herk's block maxima, three comparisons a cell whatever the radius.
fn window_max_rows(acc: &[u16], cols: usize, radius: usize) -> Vec<u16> {
    let w = 2 * radius + 1;
    let rows = acc.len() / cols;
    // Window j (of column j - 1) covers padded[j..j + w], padded[i] = acc[i - radius - 1].
    let len = cols + w;
    let mut out = Vec::with_capacity(rows * (cols + 1));
    let (mut padded, mut ahead, mut behind) = (vec![0u16; len], vec![0u16; len], vec![0u16; len]);
    for row in acc.chunks_exact(cols) {
        padded[radius + 1..radius + 1 + cols].copy_from_slice(row);
        for i in 0..len {
            ahead[i] = if i % w == 0 { padded[i] } else { ahead[i - 1].max(padded[i]) };
        }
        for i in (0..len).rev() {
            behind[i] = if i % w == w - 1 || i + 1 == len { padded[i] } else { behind[i + 1].max(padded[i]) };
        }
        out.extend((0..=cols).map(|j| behind[j].max(ahead[j + w - 1])));
    }
    debug_assert_eq!(out.len(), rows * (cols + 1));
    out
}

/// A plateau of equal candidates, at its centroid.
struct Peak {
    votes: u32,
    /// The row-major index of the centroid's cell.
    index: usize,
}

/// The plateaus of `candidates` (row-major indices, ascending): 8-connected cells of equal
/// counts, not across the wrap (as scikit-image's `label`), each at its centroid, rows and
/// columns averaged and rounded half to even (`np.round`) in scikit-image's indices: rows
/// from the first angle, as ours; columns from distance −⌈√(W² + H²)⌉ ([`Cells::peer_shift`]),
/// so that a tie between two distances goes the way scikit-image's goes on the same edge map.
fn plateaus(cells: &Cells<'_>, candidates: &[usize]) -> Vec<Peak> {
    let cols = cells.cols;
    let slot: std::collections::HashMap<usize, usize> =
        candidates.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut parent: Vec<usize> = (0..candidates.len()).collect();
    fn root(parent: &mut [usize], mut k: usize) -> usize {
        while parent[k] != k {
            parent[k] = parent[parent[k]];
            k = parent[k];
        }
        k
    }
    for (k, &i) in candidates.iter().enumerate() {
        let (n, c) = (i / cols, i % cols);
        let earlier = [(0, -1), (-1, -1), (-1, 0), (-1, 1)];
        for (dn, dc) in earlier {
            let (m, d) = (n as i64 + dn, c as i64 + dc);
            if m < 0 || d < 0 || d >= cols as i64 {
                continue;
            }
            let j = m as usize * cols + d as usize;
            if let Some(&l) = slot.get(&j) {
                if cells.acc[j] == cells.acc[i] {
                    let (a, b) = (root(&mut parent, k), root(&mut parent, l));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
    }
    // Per plateau: its count, and the sums of its rows and columns.
    let mut sums: std::collections::BTreeMap<usize, (u32, f64, f64, f64)> = Default::default();
    for (k, &i) in candidates.iter().enumerate() {
        let r = root(&mut parent, k);
        let e = sums.entry(r).or_insert((cells.acc[i].into(), 0.0, 0.0, 0.0));
        e.1 += (i / cols) as f64;
        e.2 += (i % cols) as f64;
        e.3 += 1.0;
    }
    sums.into_values()
        .map(|(votes, rows, columns, count)| {
            let shift = cells.peer_shift as f64;
            let n = (rows / count).round_ties_even();
            let c = (columns / count - shift).round_ties_even() + shift;
            Peak { votes, index: n as usize * cols + c as usize }
        })
        .collect()
}

impl Op for DistinctLines {
    type Output = Vec<Line>;

    fn cpu(&self, frame: &Frame) -> Result<Vec<Line>, OpError> {
        let space = HoughSpace::of_frame(frame)?;
        let counts = HoughLines::counts(frame);
        if self.pairs {
            return Ok(self.find(&space, &paired(&counts, space.rhos)));
        }
        Ok(self.find(&space, &counts))
    }

    /// The same host code: the accumulator is already on the host.
    fn gpu(&self, _gpu: &Gpu, frame: &Frame) -> Result<Vec<Line>, OpError> {
        self.cpu(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hough::HoughParams;

    fn space() -> HoughSpace {
        HoughSpace::new(HoughParams::default(), 20, 10).unwrap()
    }

    fn find(acc: &[u16], top: Option<usize>) -> Vec<(usize, usize, u32)> {
        let op = DistinctLines { threshold: 0, suppression: Suppression::default(), top, pairs: false };
        op.find(&space(), acc).iter().map(|l| (l.row, l.column, l.votes)).collect()
    }

    #[test]
    fn window_maxima_cover_the_radius_and_the_column_before_the_first() {
        let acc = [1u16, 5, 2, 0, 0, 3, 0];
        let max = window_max_rows(&acc, 7, 1);
        assert_eq!(max, [1, 5, 5, 5, 2, 3, 3, 3]);
        assert_eq!(window_max_rows(&acc, 7, 0)[1..], acc);
    }

    #[test]
    fn a_line_near_180_degrees_and_its_mirror_near_0_are_one() {
        let s = space();
        let mut acc = vec![0u16; s.thetas * s.rhos];
        let at = |n: usize, rho: i64| n * s.rhos + (s.rho_offset() as i64 + rho) as usize;
        acc[at(179, -12)] = 50; // 179°, ρ = -12: 1° from 0°, ρ = 12
        acc[at(0, 12)] = 40;
        acc[at(0, -12)] = 30; // another line: far in ρ across the wrap
        assert_eq!(find(&acc, None), [(179, at(179, -12) % s.rhos, 50), (0, at(0, -12) % s.rhos, 30)]);
        assert_eq!(find(&acc, Some(1)).len(), 1);
    }

    #[test]
    fn plateaus_are_taken_at_their_centroid() {
        let s = space();
        let mut acc = vec![0u16; s.thetas * s.rhos];
        for c in 30..33 {
            acc[90 * s.rhos + c] = 7;
        }
        acc[91 * s.rhos + 31] = 7;
        // rows 90, 90, 90, 91: 90.25 -> 90; columns 30, 31, 32, 31: 31
        assert_eq!(find(&acc, None), [(90, 31, 7)]);
    }

    #[test]
    fn a_tie_between_two_distances_is_rounded_in_scikit_images_index() {
        // 20x10: our offset 30, scikit-image's ⌈√500⌉ = 23; columns 40 and 41 (ρ 10 and 11) are
        // its indices 33 and 34, whose mean 33.5 rounds to 34: ρ 11 (our own index rounds to 40).
        let s = space();
        let mut acc = vec![0u16; s.thetas * s.rhos];
        acc[90 * s.rhos + 40] = 7;
        acc[90 * s.rhos + 41] = 7;
        assert_eq!(find(&acc, None), [(90, 41, 7)]);
        acc[90 * s.rhos + 40] = 0;
        acc[90 * s.rhos + 42] = 7;
        // 41 and 42: indices 34 and 35, 34.5 rounds to 34, column 41.
        assert_eq!(find(&acc, None), [(90, 41, 7)]);
    }

    #[test]
    fn pairs_give_a_peak_its_larger_neighbour_in_distance() {
        let counts = [3u16, 9, 5, 5, 0, 7, 7, 65535, 2];
        assert_eq!(paired(&counts, 9), [3, 14, 5, 10, 0, 14, 7, 65535, 2]);
        // Rows do not reach into each other.
        assert_eq!(paired(&[1, 0, 0, 4], 2), [1, 0, 0, 4]);
    }
}
