//! `threshold` on the CPU: the histogram counted and the frame mapped through the table on the
//! host.

use histopipe_frame::Frame;

use super::{bits, choose, output_frame, table, Levels, Threshold, Thresholded};
use crate::bins::Bins;
use crate::equalize;
use crate::histogram;
use crate::{OpError, Sample};

impl Threshold<'_> {
    pub(super) fn cpu_samples<T: Sample>(
        &self,
        frame: &Frame,
        samples: &[T],
        mask: Option<&[u8]>,
    ) -> Result<Thresholded, OpError> {
        let levels = Levels { method: self.method, mask: self.mask };
        let thresholds = levels.cpu_counts(samples, mask, frame.maxval)?;
        let levels = frame.maxval as usize + 1;
        let lut = table::<T>(self.method, &thresholds, levels, self.mode);
        let mapped = match (T::bytes(samples), T::bytes(&lut)) {
            (Some(bytes), Some(lut)) => {
                equalize::map_bytes(bytes, lut).into_iter().map(|b| T::from_u16(b as u16)).collect()
            }
            _ => equalize::map(samples, &lut),
        };
        Ok(Thresholded {
            thresholds,
            float_thresholds: Vec::new(),
            frame: output_frame(self.method, frame, mapped),
        })
    }
}

impl Levels<'_> {
    /// The thresholds of `samples`, counting those whose byte in `mask` (the op's, fitted to the
    /// frame) is non-zero.
    pub(super) fn cpu_counts<T: Sample>(
        &self,
        samples: &[T],
        mask: Option<&[u8]>,
        maxval: u16,
    ) -> Result<Vec<i32>, OpError> {
        let bins = Bins::new(None, maxval)?;
        let counts = match mask {
            Some(mask) => histogram::count_masked(samples, mask, bins),
            None => histogram::count(samples, bins),
        };
        choose(self.method, &counts, bits::<T>())
    }
}
