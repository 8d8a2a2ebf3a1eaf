//! `deskew` on the CPU, the reference: the ink's coordinates listed once (bands of rows on the
//! pool's threads), then each angle's profile counted by one thread from the whole list. Counts
//! are integers, so the split changes nothing.

use histopipe_frame::Frame;

use super::{bits, search, DeskewParams, Ink, Projection, Skew, PROFILE_BUDGET};
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
    /// The ink pixels of rows `rows` of a `width`-wide frame.
    fn list<T: Sample>(samples: &[T], width: usize, rows: std::ops::Range<usize>, ink: Ink) -> InkRows {
        let mut list = InkRows::default();
        for y in rows {
            let before = list.xs.len();
            let row = &samples[y * width..(y + 1) * width];
            list.xs
                .extend(row.iter().enumerate().filter(|(_, &v)| ink.is_ink(v.into())).map(|(x, _)| x as u32));
            let count = list.xs.len() - before;
            if count > 0 {
                list.rows.push((y as u32, count as u32));
            }
        }
        list
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

/// The ink of `samples` (a `frame`-sized gray frame), listed in bands of rows.
pub(super) fn ink_rows<T: Sample>(samples: &[T], frame: &Frame, ink: Ink) -> Vec<InkRows> {
    let (w, h) = (frame.width, frame.height);
    if ink.count == 0 || w == 0 {
        return Vec::new();
    }
    let parts = parallel::parts(w * h, MIN_LIST_PART);
    let band = h.div_ceil(parts);
    let ys: Vec<usize> = (0..h).collect();
    parallel::map_parts(&ys, band, |first, rows| InkRows::list(samples, w, first..first + rows.len(), ink))
}

/// The score of every angle of `angles` over the ink `lists` of a `width x height` frame.
pub(super) fn scores(lists: &[InkRows], ink: u64, angles: &[f64], width: usize, height: usize) -> Vec<u64> {
    let projections: Vec<Projection> = angles.iter().map(|&a| Projection::new(a, width, height)).collect();
    let score = |p: &Projection| {
        let mut profile = vec![0u32; p.bins];
        for list in lists {
            list.count(p, &mut profile);
        }
        super::score(&profile)
    };
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
    let ink = Ink::of_histogram(&counts, bits::<T>())?;
    let lists = ink_rows(samples, frame, ink);
    let (w, h) = (frame.width, frame.height);
    let skew = search(*params, ink, |angles| Ok(scores(&lists, ink.count, angles, w, h)))?;
    Ok((skew, counts))
}
