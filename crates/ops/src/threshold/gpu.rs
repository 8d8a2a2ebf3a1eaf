//! `threshold` on the GPU: its device plan, the histogram ([`DistributionPlan`]) and equalize's
//! map around the host's choice.

use histopipe_frame::Frame;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::Buffer;

use super::{bits, choose, output_frame, table, Levels, Method, Mode, Threshold, Thresholded};
use crate::bins::Bins;
use crate::equalize;
use crate::histogram::DistributionPlan;
use crate::{Gpu, OpError, Sample};

/// The device plan of `threshold`: the histogram ([`DistributionPlan`], counts only), its download
/// and the host's choice, the table's upload, and the map of every sample through it. The one
/// GPU sequence of `Op::gpu` and the benchmark.
pub struct ThresholdPlan<'g, T: Sample> {
    gpu: &'g Gpu,
    method: Method,
    mode: Mode,
    /// The op's mask, on the device.
    mask: Option<Buffer<'g, u8>>,
    distribution: DistributionPlan<'g>,
    n: usize,
    _sample: std::marker::PhantomData<T>,
}

impl<'g, T: Sample> ThresholdPlan<'g, T> {
    /// The plan for frames of `n` samples of at most `maxval` (and of the size of `op`'s mask,
    /// if it has one).
    pub fn new(gpu: &'g Gpu, op: Threshold, maxval: u16, n: usize) -> Result<ThresholdPlan<'g, T>, OpError> {
        let bins = Bins::new(None, maxval)?;
        let mask = match op.mask {
            Some(mask) => Some(gpu.upload("threshold.mask", mask.inside())?),
            None => None,
        };
        Ok(ThresholdPlan {
            gpu,
            method: op.method,
            mode: op.mode,
            mask,
            distribution: DistributionPlan::new(gpu, bins)?,
            n,
            _sample: std::marker::PhantomData,
        })
    }

    /// The thresholds of `src`: its histogram on the device, then the choice on the host (waits for
    /// the stream).
    pub fn thresholds(&mut self, src: &CudaSlice<T>) -> Result<Vec<i32>, OpError> {
        match &self.mask {
            Some(mask) => self.distribution.queue_masked(src, mask, self.n)?,
            None => self.distribution.queue_counts(src, self.n)?,
        }
        choose(self.method, &self.distribution.download_counts()?, bits::<T>())
    }

    /// The whole operation on `src` into `dst`: the thresholds ([`ThresholdPlan::thresholds`]),
    /// then the table and the map queued; returns the thresholds.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<Vec<i32>, OpError> {
        let thresholds = self.thresholds(src)?;
        let levels = self.distribution.bins().levels();
        let lut =
            self.gpu.upload("threshold.lut", &table::<T>(self.method, &thresholds, levels, self.mode))?;
        equalize::queue_map(self.gpu, src, self.n, &lut, levels, dst)?;
        Ok(thresholds)
    }
}

impl Threshold<'_> {
    pub(super) fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        frame: &Frame,
        samples: &[T],
    ) -> Result<Thresholded, OpError> {
        let n = samples.len();
        let src = gpu.upload("threshold.in", samples)?;
        let mut dst = gpu.buffer::<T>("threshold.out", n)?;
        let thresholds = ThresholdPlan::<T>::new(gpu, *self, frame.maxval, n)?.queue(&src, &mut dst)?;
        // Kept in page-locked memory: a copy to the heap here would hold the GPU for it.
        let mapped = gpu.download_samples(&dst, n)?;
        Ok(Thresholded {
            thresholds,
            float_thresholds: Vec::new(),
            frame: output_frame(self.method, frame, mapped),
        })
    }
}

impl Levels<'_> {
    pub(super) fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        maxval: u16,
    ) -> Result<Vec<i32>, OpError> {
        let src = gpu.upload("threshold.in", samples)?;
        let op = Threshold { method: self.method, mode: Mode::Binary, mask: self.mask };
        ThresholdPlan::<T>::new(gpu, op, maxval, samples.len())?.thresholds(&src)
    }
}
