//! `iradon` on the CPU, the reference: runs of output rows on the pool's threads, each row's
//! pixels by [`Iradon::pixel`]'s operations, the angles outermost so that one column of the
//! filtered sinogram is read at a time (each pixel's sum still adds the angles in their order:
//! the same bits as `pixel`).

use super::{interp, Iradon};
use crate::{canonical_nan, parallel};

/// Fewest reads (pixels times angles) for the work to be split at all: about 0.2 ms of one
/// thread's work at 2 ns a read.
const MIN_SPLIT: usize = 1 << 17;

impl Iradon {
    /// The output values, row-major, from the filtered sinogram ([`Iradon::filtered`]). Each
    /// value is made by one thread, the same whichever: the thread count changes nothing.
    pub(super) fn cpu_values(&self, filtered: &[f64]) -> Vec<f32> {
        let n = self.side;
        let rows: Vec<usize> = (0..n).collect();
        let work = self.trig.len().saturating_mul(n).saturating_mul(n);
        let parts = parallel::parts_split_from(work, MIN_SPLIT, MIN_SPLIT / 4).clamp(1, n);
        let made = parallel::map_parts(&rows, n.div_ceil(parts), |_, part| {
            let mut values = Vec::with_capacity(part.len() * n);
            let mut sums = vec![0f64; n];
            for &i in part {
                self.row(filtered, i, &mut sums);
                values.extend(sums.iter().map(|&sum| canonical_nan((sum * self.scale()) as f32)));
            }
            values
        });
        made.concat()
    }

    /// Row i's sums (before the scale) into `sums`: 0 outside `circle`'s circle, else for each
    /// angle in order sum += interp(column, (j - r) cos - (i - r) sin), as [`Iradon::pixel`].
    fn row(&self, filtered: &[f64], i: usize, sums: &mut [f64]) {
        let n = self.side;
        let r = (n / 2) as i64;
        let di = i as i64 - r;
        // The pixels of the row inside the circle: a run about column r.
        let inside = |j: usize| !self.circle || di * di + (j as i64 - r) * (j as i64 - r) <= r * r;
        let first = (0..n).find(|&j| inside(j)).unwrap_or(n);
        let end = (first..n).find(|&j| !inside(j)).unwrap_or(n);
        sums.fill(0.0);
        let s = self.padded;
        let y = di as f64;
        for (k, &[cos, sin]) in self.trig.iter().enumerate() {
            let column = &filtered[k * s..(k + 1) * s];
            let ys = y * sin;
            for (j, sum) in sums.iter_mut().enumerate().take(end).skip(first) {
                let t = (j as i64 - r) as f64 * cos - ys;
                *sum += interp(column, t);
            }
        }
    }
}
