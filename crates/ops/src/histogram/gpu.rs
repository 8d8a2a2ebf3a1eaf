//! `histogram` on the GPU: its device plan, the histogram and scan kernels of
//! kernels-common/histogram.cu.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::{Bins, Distribution, Histogram, PRIVATE_MAX_BINS, SHARED_MAX_BINS};
use crate::{Gpu, OpError, Sample};

/// Most bins whose scan the histogram kernel's last block runs itself ([`DistributionPlan::queue`]):
/// its 512 threads scan 512 counts per step, so 16-bit levels (128 steps) go to the 1024-thread
/// scan kernel instead. Up to this many bins a [`DistributionPlan`] keeps an accumulator.
pub(super) const FUSED_SCAN_MAX_BINS: usize = 1024;

/// Threads per block of the histogram kernels.
pub(super) const HISTOGRAM_THREADS: u32 = 512;
/// Most blocks of the histogram kernels: two of [`HISTOGRAM_THREADS`] per SM of an H100 or H200
/// (132 SMs), which measured fastest there (histogram.cu); each block adds its counts to the
/// global histogram once, so more blocks only add merges.
pub(super) const HISTOGRAM_MAX_BLOCKS: usize = 256;
/// Most bins for which the shared-memory kernel keeps two copies of its block's histogram
/// (`SHARED_COPIES_MAX_BINS` in histogram.cu): two copies of 4 bytes a bin fit the 48 KiB.
const SHARED_COPIES_MAX_BINS: u32 = 4096;

/// Refuses device buffers shorter than a launch needs (the kernels would read or write past them).
pub(crate) fn check_len(what: &str, len: usize, needed: usize) -> Result<(), OpError> {
    if len < needed {
        return Err(OpError::invalid(format!(
            "{what}: a buffer of {len} elements where {needed} are needed"
        )));
    }
    Ok(())
}

/// The device plan of a histogram and its cumulative distribution: the counts, the cumulative
/// counts and cdf_min, on the device, and (up to [`FUSED_SCAN_MAX_BINS`] bins) the fused kernel's
/// accumulator. The one GPU sequence of `cdf` and `equalize`'s first steps, which `Op::gpu` and
/// the benchmark run.
pub struct DistributionPlan<'g> {
    gpu: &'g Gpu,
    bins: Bins,
    hist: Buffer<'g, u64>,
    /// Where the fused kernel's blocks add their counts ([`DistributionPlan::queue`]): one count
    /// a bin, then the blocks' completion counter. Zero whenever no kernel of this plan is
    /// running: zeroed here when the plan is made, then left zero by each kernel's last block,
    /// which moves the counts to `hist` and zeroes what it read (`scan_when_last` in
    /// histogram.cu), so a frame needs no memset before its kernel. `None` above
    /// [`FUSED_SCAN_MAX_BINS`] bins, where the histogram and its scan are two kernels.
    acc: Option<Buffer<'g, u64>>,
    cdf: Buffer<'g, u64>,
    pub(super) cdf_min: Buffer<'g, u64>,
}

impl<'g> DistributionPlan<'g> {
    pub fn new(gpu: &'g Gpu, bins: Bins) -> Result<DistributionPlan<'g>, OpError> {
        let count = bins.count();
        let acc = if count <= FUSED_SCAN_MAX_BINS {
            // A pooled buffer holds whatever was there: zeroed once, here, on the stream every
            // kernel of the plan is queued on, so before the first of them.
            let mut acc = gpu.buffer::<u64>("histogram.accumulator", count + 1)?;
            gpu.stream().memset_zeros(&mut acc.slice_mut(..count + 1))?;
            Some(acc)
        } else {
            None
        };
        Ok(DistributionPlan {
            gpu,
            bins,
            hist: gpu.buffer::<u64>("histogram.counts", count)?,
            acc,
            cdf: gpu.buffer::<u64>("histogram.cdf", count)?,
            cdf_min: gpu.buffer::<u64>("histogram.cdf_min", 1)?,
        })
    }

    /// Queues the histogram of the first `n` samples of `src` into the counts and its scan into
    /// the cumulative counts and cdf_min: up to [`FUSED_SCAN_MAX_BINS`] bins one kernel, no
    /// memset (its blocks add into the plan's accumulator, and the last block to finish moves the
    /// counts out, scans them, and leaves the accumulator zero for the next frame); above, the
    /// histogram (zeroed first) and the scan kernel.
    /// Samples must be at most the maxval the bins were made for.
    pub fn queue<T: Sample>(&mut self, src: &CudaSlice<T>, n: usize) -> Result<(), OpError> {
        let (gpu, bins, count) = (self.gpu, self.bins, self.bins.count());
        if n == 0 {
            // No kernel runs: the scan of an empty histogram is zeros, and so is cdf_min. The
            // accumulator is not touched, and stays zero.
            gpu.stream().memset_zeros(&mut self.hist.slice_mut(..count))?;
            gpu.stream().memset_zeros(&mut self.cdf.slice_mut(..count))?;
            gpu.stream().memset_zeros(&mut self.cdf_min.slice_mut(..1))?;
            return Ok(());
        }
        let Some(acc) = &mut self.acc else {
            queue_histogram(gpu, src, n, bins, &mut self.hist, None)?;
            return self.queue_scan();
        };
        let fused = Fused { acc, cdf: &mut self.cdf, cdf_min: &mut self.cdf_min };
        queue_histogram(gpu, src, n, bins, &mut self.hist, Some(fused))
    }

    /// Queues the histogram of the samples among the first `n` of `src` whose byte in `mask` is
    /// non-zero, then its scan (two kernels: `histogram_masked_*`, `scan`).
    pub fn queue_masked<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        mask: &CudaSlice<u8>,
        n: usize,
    ) -> Result<(), OpError> {
        let (gpu, bins) = (self.gpu, self.bins);
        check_len("histogram input", src.len(), n)?;
        check_len("histogram mask", mask.len(), n)?;
        gpu.stream().memset_zeros(&mut self.hist.slice_mut(..bins.count()))?;
        if n > 0 {
            let shared = bins.count <= SHARED_MAX_BINS;
            // A thread reads 16 mask bytes and their 16 samples at a time, whatever the sample
            // size: the 8-bit kernels' grid. Up to PRIVATE_MAX_BINS bins the shared kernel counts
            // in registers; up to SHARED_COPIES_MAX_BINS it keeps two copies in shared memory.
            let cfg = LaunchConfig {
                grid_dim: (histogram_blocks::<u8>(n), 1, 1),
                block_dim: (HISTOGRAM_THREADS, 1, 1),
                shared_mem_bytes: match bins.count {
                    c if c <= PRIVATE_MAX_BINS || !shared => 0,
                    c if c <= SHARED_COPIES_MAX_BINS => 2 * c * 4,
                    c => c * 4,
                },
            };
            let kind = if shared { "shared" } else { "global" };
            let name = format!("histogram_masked_{kind}_{}", T::KERNEL_SUFFIX);
            let (n, count, levels) = (n as u64, bins.count, bins.levels);
            // SAFETY: histogram_masked_*(in, mask, n, bins, levels, hist) in histogram.cu; `src`
            // and `mask` hold `n` elements, `hist` `bins` counts, zeroed above.
            unsafe {
                launch!(gpu, kernels::HISTOGRAM, name, cfg; src, mask, &n, &count, &levels, &mut *self.hist)
            }?;
        }
        self.queue_scan()
    }

    /// Queues the histogram alone (zeroing included), without the scan: the first step of
    /// [`DistributionPlan::queue`] as the benchmark times it next to CUB's HistogramEven.
    pub fn queue_counts<T: Sample>(&mut self, src: &CudaSlice<T>, n: usize) -> Result<(), OpError> {
        queue_histogram(self.gpu, src, n, self.bins, &mut self.hist, None)
    }

    /// Queues the inclusive scan of the counts into the cumulative counts, and the smallest
    /// non-zero cumulative count (0 if none) into cdf_min, by the one-block scan kernel.
    pub fn queue_scan(&mut self) -> Result<(), OpError> {
        let bins = self.bins.count();
        // The threads scan 1024 counts a step; a block of 32 to 1024 threads.
        let threads = bins.next_multiple_of(32).clamp(32, 1024) as u32;
        let bins = bins as u32;
        // SAFETY: scan(hist, bins, cdf, cdf_min) in histogram.cu; the buffers hold `bins` counts
        // (cdf_min one).
        unsafe {
            launch!(self.gpu, kernels::HISTOGRAM, "scan", launch::linear(1, threads);
                &*self.hist, &bins, &mut *self.cdf, &mut *self.cdf_min)
        }?;
        Ok(())
    }

    pub fn bins(&self) -> Bins {
        self.bins
    }

    /// The cumulative counts (of `bins().count()` levels) and cdf_min, for the next kernels.
    pub fn cumulative(&self) -> (&CudaSlice<u64>, &CudaSlice<u64>) {
        (&self.cdf, &self.cdf_min)
    }

    /// The distribution queued last (waits for the stream).
    pub fn download(&self) -> Result<Distribution, OpError> {
        let mut counts = vec![0u64; self.bins.count()];
        let mut cumulative = vec![0u64; self.bins.count()];
        self.gpu.download(&self.hist, &mut counts)?;
        self.gpu.download(&self.cdf, &mut cumulative)?;
        Ok(Distribution { bins: self.bins, counts, cumulative })
    }

    /// The counts queued last by [`DistributionPlan::queue_counts`] (or [`DistributionPlan::queue`]),
    /// without their scan (waits for the stream).
    pub fn download_counts(&self) -> Result<Vec<u64>, OpError> {
        let mut counts = vec![0u64; self.bins.count()];
        self.gpu.download(&self.hist, &mut counts)?;
        Ok(counts)
    }
}

/// The fused histogram kernel's accumulator and the outputs of the scan its last block runs.
struct Fused<'a> {
    /// `bins + 1` counts, all zero when the kernel starts; the kernel leaves them zero.
    acc: &'a mut CudaSlice<u64>,
    cdf: &'a mut CudaSlice<u64>,
    cdf_min: &'a mut CudaSlice<u64>,
}

/// The histogram kernel over the first `n` samples of `src` into `hist`. Without `fused`, the
/// blocks add into `hist`, zeroed first by a memset. With `fused`, they add into its accumulator,
/// which needs no zeroing (zero on entry, left zero), and the last block to finish copies every
/// count to `hist`, scans them into its `cdf` and `cdf_min` and zeroes the accumulator; `n` is
/// then not 0 ([`DistributionPlan::queue`] writes an empty frame's outputs itself: with no
/// kernel, there is no last block to write them).
fn queue_histogram<T: Sample>(
    gpu: &Gpu,
    src: &CudaSlice<T>,
    n: usize,
    bins: Bins,
    hist: &mut CudaSlice<u64>,
    fused: Option<Fused<'_>>,
) -> Result<(), OpError> {
    check_len("histogram input", src.len(), n)?;
    debug_assert!(n > 0 || fused.is_none(), "the fused histogram of no samples");
    if fused.is_none() {
        gpu.stream().memset_zeros(&mut hist.slice_mut(..bins.count()))?;
    }
    if n == 0 {
        return Ok(());
    }
    let kind = match bins.count {
        c if c <= PRIVATE_MAX_BINS => "private",
        c if c <= SHARED_MAX_BINS => "shared",
        _ => "global",
    };
    let cfg = LaunchConfig {
        grid_dim: (histogram_blocks::<T>(n), 1, 1),
        block_dim: (HISTOGRAM_THREADS, 1, 1),
        shared_mem_bytes: match kind {
            "shared" if bins.count <= SHARED_COPIES_MAX_BINS => 2 * bins.count * 4,
            "shared" => bins.count * 4,
            _ => 0,
        },
    };
    let name = format!("histogram_{kind}_{}", T::KERNEL_SUFFIX);
    let (n, count, levels) = (n as u64, bins.count, bins.levels);
    // A null pointer for the scan's outputs: the kernels then skip the scan, and count into
    // their `acc` argument, here `hist`.
    let null = 0u64;
    // SAFETY: histogram_*(in, n, bins, levels, acc, hist, cdf, cdf_min) in histogram.cu; `src`
    // holds `n` samples. Fused: `acc` holds `bins + 1` counts, all zero (the plan's accumulator:
    // zeroed when it was made, left zero by each kernel of the plan, which run one after another
    // on the one stream), `hist` and `cdf` `bins` counts, `cdf_min` one. Otherwise `hist` holds
    // `bins` counts, zeroed above.
    unsafe {
        match fused {
            Some(Fused { acc, cdf, cdf_min }) => launch!(gpu, kernels::HISTOGRAM, name, cfg;
                src, &n, &count, &levels, acc, hist, cdf, cdf_min),
            None => launch!(gpu, kernels::HISTOGRAM, name, cfg;
                src, &n, &count, &levels, hist, &null, &null, &null),
        }
    }?;
    Ok(())
}

/// The grid of the histogram kernels for `n` samples. A few blocks per SM keep every SM busy;
/// more would only add merges of the per-block copies. A block counts in 32 bits (shared memory,
/// registers) before it adds to the 64-bit histogram, so no block takes 2^31 samples or more.
pub(super) fn histogram_blocks<T>(n: usize) -> u32 {
    let chunks = n.div_ceil(16 / std::mem::size_of::<T>());
    let blocks =
        chunks.div_ceil(HISTOGRAM_THREADS as usize).clamp(1, HISTOGRAM_MAX_BLOCKS).max((n >> 31) + 1);
    blocks.min(i32::MAX as usize) as u32
}

impl Histogram {
    pub(super) fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        bins: Bins,
    ) -> Result<Distribution, OpError> {
        let src = gpu.upload("histogram.in", samples)?;
        let mut plan = DistributionPlan::new(gpu, bins)?;
        plan.queue(&src, samples.len())?;
        plan.download()
    }
}
