//! `radon` on the CPU, the reference: every (angle, position) by [`Radon::position_sum`], runs of
//! positions of one angle on the pool's threads.

use super::{Radon, Tap};
use crate::parallel;

/// Positions of one angle in a piece of work: a run of them walks neighbouring columns of the
/// frame, whose cache lines the next position reads again.
const RUN: usize = 256;
/// Fewest taps (rows summed) for the work to be split at all: about 0.2 ms of one thread's work
/// at 1 to 2 ns a row.
const MIN_SPLIT: usize = 1 << 17;

impl Radon {
    /// The output values, position-major (row x, column angle), from the frame's samples, each
    /// divided by `unit` ([`Radon::unit`]). Each value is made by one thread, the same whichever:
    /// the thread count changes nothing.
    pub(super) fn cpu_values<T: Tap>(&self, samples: &[T], frame_width: usize, unit: f64) -> Vec<f32> {
        let bordered = self.square.bordered(samples, frame_width);
        let (angles, n) = self.out_size();
        let scale = Radon::scale(unit);
        let runs = n.div_ceil(RUN);
        let pieces: Vec<usize> = (0..angles * runs).collect();
        // Rows visited are at most n a position: about angles n^2 / 2 taps in all.
        let work = angles.saturating_mul(n).saturating_mul(n) / 2;
        let parts = parallel::parts_split_from(work, MIN_SPLIT, MIN_SPLIT).min(pieces.len()).max(1);
        let made = parallel::map_parts(&pieces, pieces.len().div_ceil(parts), |_, part| {
            let mut values = Vec::with_capacity(part.len() * RUN);
            for &piece in part {
                let (a, run) = (piece / runs, piece % runs);
                let t = self.trig[a];
                for x in run * RUN..((run + 1) * RUN).min(n) {
                    values.push(T::value(self.position_sum(&bordered, t, x), scale));
                }
            }
            values
        });
        // Angle-major pieces, transposed to the output's rows of positions.
        let mut out = vec![0f32; angles * n];
        for (i, v) in made.into_iter().flatten().enumerate() {
            out[(i % n) * angles + i / n] = v;
        }
        out
    }
}
