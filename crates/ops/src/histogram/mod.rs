//! `histogram`: counts of equal-width bins over 0..=maxval and their cumulative distribution,
//! shared by `cdf`, `equalize` and every later histogram-based tool.
//!
//! The bins are [`Bins`]: with L = maxval + 1 levels and N bins, sample v falls in bin
//! floor(v * N / L).
//!
//! The operation's parts: this module (the distribution, the ops and their dispatch), `cpu` (the
//! counts on the pool's threads: [`count`], [`count_masked`]), [`gpu`] (the device plan,
//! [`DistributionPlan`], kernels-common/histogram.cu).

use histopipe_frame::Frame;

use crate::bins::Bins;
use crate::mask::Masked;
use crate::{with_samples, Gpu, Op, OpError};

mod cpu;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use cpu::{count, count_masked};
pub(crate) use gpu::check_len;
pub use gpu::DistributionPlan;

/// Most bins counted in per-thread registers (`PRIVATE_BINS` in histogram.cu).
pub const PRIVATE_MAX_BINS: u32 = 8;

/// Most bins a block can count in shared memory (4 bytes each, within the 48 KiB every GPU gives
/// without opting in, less 512 bytes for the static shared memory of the scan the kernels end
/// with); above it the histogram kernel uses global atomics.
pub const SHARED_MAX_BINS: u32 = 12 * 1024 - 128;

/// A frame's histogram and its cumulative distribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    pub bins: Bins,
    pub counts: Vec<u64>,
    /// cumulative[b] = counts[0] + ... + counts[b]; the last is the pixel count.
    pub cumulative: Vec<u64>,
}

impl Distribution {
    /// The distribution with these counts, accumulated on the CPU.
    pub fn from_counts(bins: Bins, counts: Vec<u64>) -> Distribution {
        let cumulative = counts
            .iter()
            .scan(0u64, |sum, &c| {
                *sum += c;
                Some(*sum)
            })
            .collect();
        Distribution { bins, counts, cumulative }
    }

    /// The smallest non-zero cumulative count (0 when there are no pixels).
    pub fn cdf_min(&self) -> u64 {
        self.cumulative.iter().copied().find(|&c| c != 0).unwrap_or(0)
    }
}

/// The histogram operation: `bins` equal-width bins (`None`: one per level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Histogram {
    pub bins: Option<usize>,
}

/// The histogram of the pixels a mask selects (of a gray frame: one byte a sample); bins as
/// [`Histogram`]'s.
impl Masked<'_, Histogram> {
    fn bins_for(&self, frame: &Frame) -> Result<(Bins, &[u8]), OpError> {
        let mask = self.mask.fit_samples(frame)?;
        Ok((self.op.bins_for(frame)?, mask))
    }
}

impl Op for Masked<'_, Histogram> {
    type Output = Distribution;

    fn cpu(&self, frame: &Frame) -> Result<Distribution, OpError> {
        let (bins, mask) = self.bins_for(frame)?;
        let counts = with_samples!(&frame.pixels, v => count_masked(v, mask, bins));
        Ok(Distribution::from_counts(bins, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Distribution, OpError> {
        let (bins, mask) = self.bins_for(frame)?;
        let mask = gpu.upload("histogram.mask", mask)?;
        let mut plan = DistributionPlan::new(gpu, bins)?;
        with_samples!(&frame.pixels, v => {
            let src = gpu.upload("histogram.in", v)?;
            plan.queue_masked(&src, &mask, v.len())
        })?;
        plan.download()
    }
}

impl Histogram {
    fn bins_for(&self, frame: &Frame) -> Result<Bins, OpError> {
        Bins::new(self.bins, frame.maxval)
    }
}

impl Op for Histogram {
    type Output = Distribution;

    fn cpu(&self, frame: &Frame) -> Result<Distribution, OpError> {
        let bins = self.bins_for(frame)?;
        let counts = with_samples!(&frame.pixels, v => count(v, bins));
        Ok(Distribution::from_counts(bins, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Distribution, OpError> {
        let bins = self.bins_for(frame)?;
        with_samples!(&frame.pixels, v => self.gpu_samples(gpu, v, bins))
    }
}
