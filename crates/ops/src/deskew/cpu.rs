//! `deskew` on the CPU, the reference: the ink's coordinates listed once (bands of rows on the
//! pool's threads, each band sliding its window's sums down its rows), then each angle's profile
//! counted by one thread from the whole list. Sums and counts are integers, so the split changes
//! nothing.

use histopipe_frame::Frame;

use super::{bits, search, window, DeskewParams, InkRule, Projection, Skew, PROFILE_BUDGET};
use crate::bins::Bins;
use crate::{histogram, parallel, OpError, Sample};

/// Fewest pixels in a band of the ink's listing once a frame is split (about 0.1 ms of one
/// thread's compares).
const MIN_LIST_PART: usize = 1 << 18;
/// Fewest ink pixels times angles worth waking the pool for (about 0.2 ms of counting).
const MIN_COUNT_SPLIT: usize = 1 << 18;

/// The ink of some rows: the x of each ink pixel, row after row, and each row's y and count.
#[derive(Debug, Default)]
pub(super) struct InkRows {
    xs: Vec<u32>,
    rows: Vec<(u32, u32)>,
}

impl InkRows {
    /// The ink pixels of rows `rows` of a `width x height` frame by `rule`: the window's sums
    /// of each column kept for the row at hand, a row's sums added as the window reaches it and
    /// taken away as it leaves.
    fn list<T: Sample>(
        samples: &[T],
        (width, height): (usize, usize),
        rows: std::ops::Range<usize>,
        rule: InkRule,
    ) -> InkRows {
        let mut list = InkRows::default();
        let (mut columns, mut row) = (vec![0u32; width], vec![0u32; width]);
        let mut prefix = vec![0u32; width + 1];
        // Adds (or takes away) row y's sums over the window along x to `columns`. Sums wrap
        // in u32 (a row's prefix may pass 2^32); their differences and the window's sums, at
        // most 441 · 65535, are exact.
        let mut add_row = |columns: &mut [u32], y: usize, sign: bool| {
            let line = &samples[y * width..(y + 1) * width];
            for (x, &v) in line.iter().enumerate() {
                prefix[x + 1] = prefix[x].wrapping_add(v.into());
            }
            for (x, sum) in row.iter_mut().enumerate() {
                let (a, b) = window(x, width);
                *sum = prefix[b].wrapping_sub(prefix[a]);
            }
            for (c, &r) in columns.iter_mut().zip(&row) {
                *c = if sign { c.wrapping_add(r) } else { c.wrapping_sub(r) };
            }
        };
        let (first, end) = window(rows.start, height);
        for y in first..end {
            add_row(&mut columns, y, true);
        }
        let widths: Vec<u32> = (0..width).map(|x| window(x, width)).map(|(a, b)| (b - a) as u32).collect();
        for y in rows.clone() {
            if y > rows.start {
                let ((first, end), (was_first, was_end)) = (window(y, height), window(y - 1, height));
                if first > was_first {
                    add_row(&mut columns, was_first, false);
                }
                if end > was_end {
                    add_row(&mut columns, end - 1, true);
                }
            }
            let (top, bottom) = window(y, height);
            let tall = (bottom - top) as u32;
            let before = list.xs.len();
            let line = &samples[y * width..(y + 1) * width];
            for (x, ((&v, &sum), &wide)) in line.iter().zip(&columns).zip(&widths).enumerate() {
                if rule.is_ink(v.into(), sum, wide * tall) {
                    list.xs.push(x as u32);
                }
            }
            let count = list.xs.len() - before;
            if count > 0 {
                list.rows.push((y as u32, count as u32));
            }
        }
        list
    }

    /// The listed pixels, (y, x) in order.
    #[cfg(test)]
    pub(super) fn pixels(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut xs = self.xs.iter();
        self.rows.iter().flat_map(move |&(y, count)| {
            xs.by_ref().take(count as usize).map(move |&x| (y, x)).collect::<Vec<_>>()
        })
    }

    /// Adds this list's pixels to `profile` at projection `p`.
    fn count(&self, p: &Projection, profile: &mut [u32]) {
        let mut xs = &self.xs[..];
        for &(y, count) in &self.rows {
            let (row, rest) = xs.split_at(count as usize);
            xs = rest;
            let base = y as i64 * p.c + p.offset;
            for &x in row {
                profile[((x as i64 * p.s + base) >> super::FRAC_BITS) as usize] += 1;
            }
        }
    }
}

/// The ink of `samples` (a `frame`-sized gray frame) by `rule`, listed in bands of rows.
pub(super) fn ink_rows<T: Sample>(samples: &[T], frame: &Frame, rule: InkRule) -> Vec<InkRows> {
    let (w, h) = (frame.width, frame.height);
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let parts = parallel::parts(w * h, MIN_LIST_PART);
    let band = h.div_ceil(parts);
    let ys: Vec<usize> = (0..h).collect();
    parallel::map_parts(&ys, band, |first, rows| {
        InkRows::list(samples, (w, h), first..first + rows.len(), rule)
    })
}

/// The profile of the ink `lists` at projection `p`.
pub(super) fn profile(lists: &[InkRows], p: &Projection) -> Vec<u32> {
    let mut profile = vec![0u32; p.bins];
    for list in lists {
        list.count(p, &mut profile);
    }
    profile
}

/// How many pixels the ink `lists` hold.
pub(super) fn ink_count(lists: &[InkRows]) -> u64 {
    lists.iter().map(|l| l.xs.len() as u64).sum()
}

/// The score of every angle of `angles` over the ink `lists` of a `width x height` frame.
pub(super) fn scores(lists: &[InkRows], ink: u64, angles: &[f64], width: usize, height: usize) -> Vec<u64> {
    let projections: Vec<Projection> = angles.iter().map(|&a| Projection::new(a, width, height)).collect();
    let score = |p: &Projection| super::score(&profile(lists, p));
    let work = (ink as usize).saturating_mul(angles.len());
    if parallel::parts(work, MIN_COUNT_SPLIT) == 1 {
        return projections.iter().map(score).collect();
    }
    // Groups of angles whose profiles fit the budget together, one angle a task.
    let most_bins = projections.iter().map(|p| p.bins).max().unwrap_or(1);
    let group = (PROFILE_BUDGET / (4 * most_bins).max(1)).max(1);
    projections.chunks(group).flat_map(|chunk| parallel::map_parts(chunk, 1, |_, p| score(&p[0]))).collect()
}

/// The skew of the gray frame `frame` whose samples are `samples`, and its histogram.
pub(super) fn measure<T: Sample>(
    params: &DeskewParams,
    samples: &[T],
    frame: &Frame,
) -> Result<(Skew, Vec<u64>), OpError> {
    let counts = histogram::count(samples, Bins::new(None, frame.maxval)?);
    let rule = InkRule::of_histogram(&counts, bits::<T>(), frame.maxval)?;
    let lists = ink_rows(samples, frame, rule);
    let ink = ink_count(&lists);
    let (w, h) = (frame.width, frame.height);
    let skew = search(*params, rule, ink, |angles| Ok(scores(&lists, ink, angles, w, h)))?;
    Ok((skew, counts))
}
