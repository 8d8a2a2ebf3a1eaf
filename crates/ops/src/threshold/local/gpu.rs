//! The local methods on the GPU: [`LocalPlan`], the row pass and the column pass of
//! kernels-common/threshold.cu, the CPU's arithmetic step for step.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use super::stats::Stats;
use super::{Filter, Kind, LocalThreshold};
use crate::{Element, Gpu, OpError};

/// The row pass's sums on the device: integers for the box, floats for the Gaussian (with its
/// coefficients).
enum Scratch<'g> {
    Box { sums: Buffer<'g, u32>, side: u32 },
    Gaussian { sums: Buffer<'g, f32>, kernel: Buffer<'g, f32>, n: u32 },
}

/// The device plan of a local method for frames of one size: the coefficients uploaded once, the
/// row sums' scratch, the two kernels. The one GPU sequence of `Op::gpu` and the benchmark.
pub struct LocalPlan<'g> {
    gpu: &'g Gpu,
    scratch: Scratch<'g>,
    limit: i32,
    inverted: u32,
    w: usize,
    h: usize,
    maxval: u32,
}

impl<'g> LocalPlan<'g> {
    /// The plan for 8-bit frames of `w x h` samples of at most `maxval`.
    pub fn new(
        gpu: &'g Gpu,
        op: &LocalThreshold,
        w: usize,
        h: usize,
        maxval: u8,
    ) -> Result<LocalPlan<'g>, OpError> {
        let Filter { kind, limit, inverted } = op.filter()?;
        let n = (w * h).max(1);
        let scratch = match kind {
            Kind::Box { side } => Scratch::Box { sums: gpu.buffer("threshold.local.sums", n)?, side },
            Kind::Gaussian { kernel } => Scratch::Gaussian {
                sums: gpu.buffer("threshold.local.fsums", n)?,
                n: kernel.len() as u32,
                kernel: gpu.upload("threshold.local.kernel", &kernel)?,
            },
        };
        Ok(LocalPlan { gpu, scratch, limit, inverted: inverted as u32, w, h, maxval: maxval as u32 })
    }

    /// Queues the thresholding of the frame in `src` into `dst`.
    pub fn queue(&mut self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<(), OpError> {
        let total = self.w * self.h;
        if total == 0 {
            return Ok(());
        }
        let (gpu, w, h) = (self.gpu, self.w as u32, self.h as u32);
        let (limit, inverted, maxval) = (self.limit, self.inverted, self.maxval);
        let cfg = || histopipe_gpu::launch::cover(total, 256);
        match &mut self.scratch {
            Scratch::Box { sums, side } => {
                // SAFETY: box_rows(in, w, h, side, sums) and box_cols(in, sums, w, h, side, limit,
                // inverted, maxval, out) in threshold.cu; `src`, `sums` and `dst` hold w x h.
                unsafe {
                    launch!(gpu, kernels::THRESHOLD, "box_rows", cfg(); src, &w, &h, &*side, &mut **sums)
                }?;
                // SAFETY: as above.
                unsafe {
                    launch!(gpu, kernels::THRESHOLD, "box_cols", cfg();
                        src, &**sums, &w, &h, &*side, &limit, &inverted, &maxval, dst)
                }?;
            }
            Scratch::Gaussian { sums, kernel, n } => {
                // SAFETY: gauss_rows(in, w, h, k, n, sums) and gauss_cols(in, sums, w, h, k, n,
                // limit, inverted, maxval, out) in threshold.cu; `kernel` holds n coefficients,
                // `src`, `sums` and `dst` w x h.
                unsafe {
                    launch!(gpu, kernels::THRESHOLD, "gauss_rows", cfg(); src, &w, &h, &**kernel, &*n, &mut **sums)
                }?;
                // SAFETY: as above.
                unsafe {
                    launch!(gpu, kernels::THRESHOLD, "gauss_cols", cfg();
                        src, &**sums, &w, &h, &**kernel, &*n, &limit, &inverted, &maxval, dst)
                }?;
            }
        }
        Ok(())
    }
}

/// The device plan of Sauvola's or Niblack's threshold for frames of one size: the integral
/// images' scratch (two f64 tables of the padded size) and the three kernels (`stats_cols`,
/// `stats_rows`, `stats_out`), which write each sample's on (1) or off (0). The one GPU sequence
/// of `Op::gpu` and the benchmark.
pub struct StatsPlan<'g, T: Element> {
    gpu: &'g Gpu,
    stats: Stats,
    s: Buffer<'g, f64>,
    q: Buffer<'g, f64>,
    w: usize,
    h: usize,
    _sample: std::marker::PhantomData<T>,
}

impl<'g, T: Element> StatsPlan<'g, T> {
    /// The plan for frames of `w x h` samples of `T` (u8, u16 or f32); Sauvola or Niblack only.
    pub fn new(gpu: &'g Gpu, op: &LocalThreshold, w: usize, h: usize) -> Result<StatsPlan<'g, T>, OpError> {
        let bits = 8 * std::mem::size_of::<T>() as u32;
        let Some(stats) = op.stats(bits)? else {
            return Err(OpError::param("method", op.method, "is adaptiveThreshold's: LocalPlan runs it"));
        };
        let padded = ((w + stats.window) * (h + stats.window)).max(1);
        let s = gpu.buffer("threshold.local.integral", padded)?;
        let q = gpu.buffer("threshold.local.integral_sq", padded)?;
        Ok(StatsPlan { gpu, stats, s, q, w, h, _sample: std::marker::PhantomData })
    }

    /// Queues the on/off flags of the frame in `src` into `dst`.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<u8>) -> Result<(), OpError> {
        if self.w * self.h == 0 {
            return Ok(());
        }
        let (gpu, w, h, win) = (self.gpu, self.w as u32, self.h as u32, self.stats.window as u32);
        let (pw, ph) = (w + win, h + win);
        let (sauvola, k, r) = self.stats.rule.parts();
        let inverted = self.stats.inverted as u32;
        let suffix = T::KERNEL_SUFFIX;
        // SAFETY: stats_cols_*(in, w, h, win, s, q) in threshold.cu; `src` holds w x h samples,
        // `s` and `q` (w + win) x (h + win) doubles.
        unsafe {
            launch!(gpu, kernels::THRESHOLD, format!("stats_cols_{suffix}"), histopipe_gpu::launch::cover(pw as usize, 128);
                src, &w, &h, &win, &mut *self.s, &mut *self.q)
        }?;
        // SAFETY: stats_rows(s, q, pw, ph): the two tables of ph rows of pw.
        unsafe {
            launch!(gpu, kernels::THRESHOLD, "stats_rows", histopipe_gpu::launch::cover(2 * ph as usize, 128);
                &mut *self.s, &mut *self.q, &pw, &ph)
        }?;
        // SAFETY: stats_out_*(in, s, q, w, h, win, sauvola, k, r, inverted, out); `dst` holds
        // w x h bytes.
        unsafe {
            launch!(gpu, kernels::THRESHOLD, format!("stats_out_{suffix}"), histopipe_gpu::launch::cover(self.w * self.h, 256);
                src, &*self.s, &*self.q, &w, &h, &win, &sauvola, &k, &r, &inverted, dst)
        }?;
        Ok(())
    }
}
