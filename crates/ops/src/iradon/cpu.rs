//! `iradon` on the CPU, the reference: every output pixel by [`Iradon::pixel`], runs of rows on
//! the pool's threads.

use super::Iradon;
use crate::parallel;

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
            for &i in part {
                values.extend((0..n).map(|j| self.pixel(filtered, i, j)));
            }
            values
        });
        made.concat()
    }
}
