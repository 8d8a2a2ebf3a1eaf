//! `histogram`: counts of equal-width bins over 0..=maxval and their cumulative distribution,
//! shared by `cdf`, `equalize` and every later histogram-based tool.
//!
//! The bins are [`Bins`]: with L = maxval + 1 levels and N bins, sample v falls in bin
//! floor(v * N / L).

use histopipe_frame::Frame;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use crate::bins::Bins;
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample};

/// Most bins counted in per-thread registers (`PRIVATE_BINS` in histogram.cu).
pub const PRIVATE_MAX_BINS: u32 = 8;

/// Most bins a block can count in shared memory (4 bytes each, within the 48 KiB every GPU gives
/// without opting in, less 512 bytes for the static shared memory of the scan the kernels end
/// with); above it the histogram kernel uses global atomics.
pub const SHARED_MAX_BINS: u32 = 12 * 1024 - 128;

/// Most bins whose scan the histogram kernel's last block runs itself ([`DistributionPlan::queue`]):
/// its 512 threads scan 512 counts per step, so 16-bit levels (128 steps) go to the 1024-thread
/// scan kernel instead. Up to this many bins a [`DistributionPlan`] keeps an accumulator.
const FUSED_SCAN_MAX_BINS: usize = 1024;

/// Threads per block of the histogram kernels.
const HISTOGRAM_THREADS: u32 = 512;
/// Most blocks of the histogram kernels: two of [`HISTOGRAM_THREADS`] per SM of an H100 or H200
/// (132 SMs), which measured fastest there (histogram.cu); each block adds its counts to the
/// global histogram once, so more blocks only add merges.
const HISTOGRAM_MAX_BLOCKS: usize = 256;
/// Most bins for which the shared-memory kernel keeps two copies of its block's histogram
/// (`SHARED_COPIES_MAX_BINS` in histogram.cu): two copies of 4 bytes a bin fit the 48 KiB.
const SHARED_COPIES_MAX_BINS: u32 = 4096;

/// Interleaved copies of the histogram counted on the CPU ([`count`]).
const CPU_COPIES: usize = 4;
/// Most bins counted in [`CPU_COPIES`] copies; 16-bit levels' copies would not stay in cache.
const CPU_COPY_MAX_BINS: usize = 4096;

/// Half the fewest samples for the CPU's count to be split at all ([`parallel::parts`]): about 0.6
/// ns a sample on one of the GPU machine's cores (`cdf` of 640x480 in 0.18 ms, 1280x720 in 0.54),
/// so a frame is split from about 0.05 ms of work. (At 2^19, 640x651 stayed on one thread: `cdf`
/// took 0.16 to 0.23 ms on 16 threads, against 0.05 split.)
const MIN_SPLIT: usize = 1 << 16;
/// Fewest samples in a part once a frame is split: 2560x1707 makes 64 parts, four for each of 16
/// threads (in parts of 2^19 samples it made 8, and half of a 16-thread pool sat idle).
const MIN_PART: usize = 1 << 13;
/// Fewest samples per bin in a part: each part's histogram is zeroed and added to the others', so
/// with many bins (65536 for 16-bit levels) a part must count many more samples than it has bins.
const PART_SAMPLES_PER_BIN: usize = 16;

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

/// The histogram of `samples` on the CPU.
///
/// Up to [`CPU_COPY_MAX_BINS`] bins, [`CPU_COPIES`] interleaved copies of the histogram are
/// counted and summed at the end: in a run of equal samples each increment would otherwise wait
/// for the previous one's store to reach the load (a store-to-load dependency of several cycles);
/// with the copies, consecutive samples go to different counters.
///
/// A large frame is split into parts counted on the pool's threads, whose histograms are then
/// added: integer sums, the same whatever the split.
pub fn count<T: Sample>(samples: &[T], bins: Bins) -> Vec<u64> {
    let n = bins.count();
    let parts = count_parts(samples.len(), n);
    if let (Some(bytes), true) = (T::bytes(samples), n <= 256) {
        return add_parts(bytes, parts, |part| count_bytes(part, bins));
    }
    // bin for every value a sample of this type can hold; valid samples are at most maxval.
    let all_values = 1u32 << (8 * std::mem::size_of::<T>());
    let lut: Vec<u32> = (0..all_values).map(|v| bins.of(v.min(bins.levels - 1)) as u32).collect();
    add_parts(samples, parts, |part| count_with(part, &lut, n))
}

/// The parts [`count`] and [`count_masked`] split `len` samples into for `bins` bins: from
/// [`MIN_SPLIT`] samples ([`parallel::split_from`]), parts of [`MIN_PART`], and at least
/// [`PART_SAMPLES_PER_BIN`] samples a bin either way.
fn count_parts(len: usize, bins: usize) -> usize {
    let per_bin = PART_SAMPLES_PER_BIN * bins;
    parallel::parts_split_from(len, parallel::split_from(MIN_SPLIT).max(per_bin), MIN_PART.max(per_bin))
}

/// The histogram of the samples of `samples` whose `mask` byte is non-zero (one byte a sample),
/// on the CPU: split into parts as [`count`] splits, the parts' counts added (the same whatever
/// the split).
pub fn count_masked<T: Sample>(samples: &[T], mask: &[u8], bins: Bins) -> Vec<u64> {
    assert_eq!(samples.len(), mask.len(), "one mask byte a sample");
    let n = bins.count();
    let parts = count_parts(samples.len(), n);
    let all_values = 1u32 << (8 * std::mem::size_of::<T>());
    let lut: Vec<u32> = (0..all_values).map(|v| bins.of(v.min(bins.levels - 1)) as u32).collect();
    let count_part = |samples: &[T], mask: &[u8]| {
        let mut counts = vec![0u64; n];
        for (&v, &m) in samples.iter().zip(mask) {
            counts[lut[Into::<u32>::into(v) as usize] as usize] += (m != 0) as u64;
        }
        counts
    };
    if parts <= 1 {
        return count_part(samples, mask);
    }
    use rayon::prelude::*;
    let part = samples.len().div_ceil(parts);
    let partial = samples.par_chunks(part).zip(mask.par_chunks(part)).map(|(s, m)| count_part(s, m));
    partial
        .reduce_with(|mut total, part| {
            for (t, c) in total.iter_mut().zip(part) {
                *t += c;
            }
            total
        })
        .unwrap_or_else(|| vec![0; n])
}

/// `count(part)` of `parts` consecutive parts of `samples`, on the pool's threads, added up (on
/// the calling thread for one part).
fn add_parts<S: Sync>(samples: &[S], parts: usize, count: impl Fn(&[S]) -> Vec<u64> + Sync) -> Vec<u64> {
    use rayon::prelude::*;
    if parts <= 1 {
        return count(samples);
    }
    let add = |mut total: Vec<u64>, part: Vec<u64>| {
        for (t, c) in total.iter_mut().zip(part) {
            *t += c;
        }
        total
    };
    let partial = samples.par_chunks(samples.len().div_ceil(parts)).map(&count);
    partial.reduce_with(add).unwrap_or_else(|| count(samples))
}

/// [`count`] of `samples` on one thread, `lut` holding every possible sample's bin, `n` bins.
fn count_with<T: Sample>(samples: &[T], lut: &[u32], n: usize) -> Vec<u64> {
    let bin = |v: T| lut[Into::<u32>::into(v) as usize] as usize;
    let copies = if n <= CPU_COPY_MAX_BINS { CPU_COPIES } else { 1 };
    let mut local = vec![0u64; copies * n];
    let mut groups = samples.chunks_exact(copies);
    for group in &mut groups {
        for (k, &v) in group.iter().enumerate() {
            local[k * n + bin(v)] += 1;
        }
    }
    for &v in groups.remainder() {
        local[bin(v)] += 1;
    }
    (0..n).map(|b| (0..copies).map(|k| local[k * n + b]).sum()).collect()
}

/// [`count`] for 8-bit samples and at most 256 bins: 256-entry tables indexed by a byte, so no
/// index is checked at run time; 32-bit counters, added to the 64-bit totals every 2^32 - 1
/// samples at most.
fn count_bytes(samples: &[u8], bins: Bins) -> Vec<u64> {
    let mut lut = [0u8; 256];
    for (v, b) in (0u32..).zip(lut.iter_mut()) {
        *b = bins.of(v.min(bins.levels - 1)) as u8;
    }
    let mut totals = [0u64; 256];
    for part in samples.chunks(u32::MAX as usize) {
        let mut local = [[0u32; 256]; CPU_COPIES];
        // One bin per level (256 of them): the sample is its bin, no table load.
        if bins.count == 256 {
            count_copies(part, &mut local, |v| v);
        } else {
            count_copies(part, &mut local, |v| lut[v as usize]);
        }
        for (b, total) in totals.iter_mut().enumerate() {
            *total += local.iter().map(|copy| copy[b] as u64).sum::<u64>();
        }
    }
    totals[..bins.count()].to_vec()
}

/// Adds each sample's bin, `bin(v)`, to the copies in turn.
#[inline(always)]
fn count_copies(samples: &[u8], copies: &mut [[u32; 256]; CPU_COPIES], bin: impl Fn(u8) -> u8) {
    let mut groups = samples.chunks_exact(CPU_COPIES);
    for group in &mut groups {
        for (copy, &v) in copies.iter_mut().zip(group) {
            copy[bin(v) as usize] += 1;
        }
    }
    for &v in groups.remainder() {
        copies[0][bin(v) as usize] += 1;
    }
}

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
    cdf_min: Buffer<'g, u64>,
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
fn histogram_blocks<T>(n: usize) -> u32 {
    let chunks = n.div_ceil(16 / std::mem::size_of::<T>());
    let blocks =
        chunks.div_ceil(HISTOGRAM_THREADS as usize).clamp(1, HISTOGRAM_MAX_BLOCKS).max((n >> 31) + 1);
    blocks.min(i32::MAX as usize) as u32
}

/// The histogram of the pixels a mask selects: `mask` holds one byte a pixel, non-zero where the
/// pixel is counted (a frame of another pixel count is refused). Bins as [`Histogram`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskedHistogram<'m> {
    pub bins: Option<usize>,
    pub mask: &'m [u8],
}

impl MaskedHistogram<'_> {
    fn bins_for(&self, frame: &Frame) -> Result<Bins, OpError> {
        crate::op::check_mask(self.mask, frame.pixels.len())?;
        Bins::new(self.bins, frame.maxval)
    }
}

impl Op for MaskedHistogram<'_> {
    type Output = Distribution;

    fn cpu(&self, frame: &Frame) -> Result<Distribution, OpError> {
        let bins = self.bins_for(frame)?;
        let counts = with_samples!(&frame.pixels, v => count_masked(v, self.mask, bins));
        Ok(Distribution::from_counts(bins, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Distribution, OpError> {
        let bins = self.bins_for(frame)?;
        let mask = gpu.upload("histogram.mask", self.mask)?;
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

    fn gpu_samples<T: Sample>(&self, gpu: &Gpu, samples: &[T], bins: Bins) -> Result<Distribution, OpError> {
        let src = gpu.upload("histogram.in", samples)?;
        let mut plan = DistributionPlan::new(gpu, bins)?;
        plan.queue(&src, samples.len())?;
        plan.download()
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

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::Pixels;

    #[test]
    fn interleaved_copies_count_as_one() {
        let bytes: Vec<u8> = (0..10_003u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 / (1 + (i % 5) as u8))
            .collect();
        let words: Vec<u16> =
            (0..10_003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 20) as u16 % 1077).collect();
        for (maxval, count) in
            [(255u16, None), (255, Some(7)), (255, Some(1)), (1076, None), (1076, Some(300))]
        {
            let bins = Bins::new(count, maxval).unwrap();
            let naive = |values: &mut dyn Iterator<Item = u32>| {
                let mut counts = vec![0u64; bins.count()];
                values.for_each(|v| counts[bins.of(v)] += 1);
                counts
            };
            if maxval == 255 {
                assert_eq!(super::count(&bytes, bins), naive(&mut bytes.iter().map(|&v| v as u32)));
            } else {
                assert_eq!(super::count(&words, bins), naive(&mut words.iter().map(|&v| v as u32)));
            }
        }
    }

    /// Split over any number of threads, the counts are the one thread's.
    #[test]
    fn every_split_counts_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(19);
        for (w, h) in crate::parallel::testing::sizes(&mut rng) {
            for (maxval, bins) in
                [(255, None), (255, Some(7)), (100, None), (1076, None), (65535, None), (65535, Some(300))]
            {
                let f = crate::parallel::testing::frame(&mut rng, w, h, maxval);
                let what = format!("{w}x{h} maxval {maxval} {bins:?}");
                crate::parallel::testing::same_on_each_pool(&what, || Histogram { bins }.cpu(&f).unwrap());
            }
        }
    }

    #[test]
    fn no_block_counts_2_to_the_31_samples() {
        for n in [1usize, 4096, 1 << 31, (1 << 31) + 65536, 1 << 32, 3 << 33, 1 << 40] {
            for (blocks, bytes) in [(histogram_blocks::<u8>(n), 1), (histogram_blocks::<u16>(n), 2)] {
                assert!(
                    (1..=(HISTOGRAM_MAX_BLOCKS as u32).max((n >> 31) as u32 + 1)).contains(&blocks),
                    "{n}: {blocks} blocks"
                );
                // Grid-stride over 16-byte chunks: a block's share is at most its chunks' samples.
                // (The masked kernels take units of 16 samples on the 8-bit grid, bytes 1 here.)
                let threads = blocks as usize * HISTOGRAM_THREADS as usize;
                let per_block =
                    (n * bytes).div_ceil(16).div_ceil(threads) * HISTOGRAM_THREADS as usize * 16 / bytes;
                assert!(per_block < 1 << 31, "{n}: {per_block} samples per block");
            }
        }
    }

    /// Masked counts are the counts of the selected samples alone, whatever the split.
    #[test]
    fn masked_counts_are_those_of_the_selected_samples() {
        let mut rng = fastrand::Rng::with_seed(29);
        for (w, h) in crate::parallel::testing::sizes(&mut rng) {
            for (maxval, bins) in [(255, None), (255, Some(7)), (1076, None), (65535, Some(300))] {
                let f = crate::parallel::testing::frame(&mut rng, w, h, maxval);
                let mask: Vec<u8> = (0..f.pixels.len()).map(|_| rng.u8(..) % 3).collect();
                let selected: Vec<u16> =
                    (0..f.pixels.len()).filter(|&i| mask[i] != 0).map(|i| f.pixels.get(i)).collect();
                let masked = MaskedHistogram { bins, mask: &mask }.cpu(&f).unwrap();
                let pixels = if maxval <= 255 {
                    Pixels::U8(selected.iter().map(|&v| v as u8).collect())
                } else {
                    Pixels::U16(selected.into())
                };
                let alone = Frame::new(pixels.len(), 1, maxval, pixels);
                assert_eq!(masked, Histogram { bins }.cpu(&alone).unwrap(), "{w}x{h} maxval {maxval}");
                let what = format!("{w}x{h} maxval {maxval} {bins:?}");
                crate::parallel::testing::same_on_each_pool(&what, || {
                    MaskedHistogram { bins, mask: &mask }.cpu(&f).unwrap()
                });
            }
        }
        let f = Frame::new(2, 1, 255, Pixels::U8(vec![1, 2].into()));
        let e = MaskedHistogram { bins: None, mask: &[1] }.cpu(&f).unwrap_err();
        assert_eq!(e.to_string(), "a mask of 1 pixels for a frame of 2");
    }

    /// One plan queued frame after frame, as the benchmark and a stream of frames queue it, with
    /// no memset of the fused kernel's accumulator between frames: each frame's counts,
    /// cumulative counts and cdf_min are the CPU's. This is what shows that each kernel's last
    /// block leaves the accumulator zero: a count or a completion counter left over from the
    /// frame before would show in the next one. Among the frames: one whose bins are all empty in
    /// the frame before (and the reverse), grids of one block and of many, an empty frame (no
    /// kernel), the counts alone queued on the same plan, and the same frame twice in a row.
    #[test]
    fn gpu_plan_queued_frame_after_frame_matches_cpu() {
        let Some(gpu) = crate::testing::gpu_or_skip() else { return };
        let mut rng = fastrand::Rng::with_seed(41);
        // Fused (up to FUSED_SCAN_MAX_BINS bins): counted in registers (8), in two shared copies
        // (9, 256, FUSED_SCAN_MAX_BINS); two kernels, as before: FUSED_SCAN_MAX_BINS + 1 in
        // shared memory, 65536 with global atomics.
        let cases = [
            (255, Some(PRIVATE_MAX_BINS as usize)),
            (255, Some(9)),
            (255, None),
            (1076, Some(PRIVATE_MAX_BINS as usize)),
            (1076, Some(FUSED_SCAN_MAX_BINS)),
            (1076, Some(FUSED_SCAN_MAX_BINS + 1)),
            (65535, None),
        ];
        for (maxval, bins) in cases {
            let bins = Bins::new(bins, maxval).unwrap();
            if maxval <= 255 {
                frame_after_frame::<u8>(&gpu, &mut rng, bins);
            } else {
                frame_after_frame::<u16>(&gpu, &mut rng, bins);
            }
        }
    }

    /// [`gpu_plan_queued_frame_after_frame_matches_cpu`]'s frames, of samples `T`, on one plan of
    /// `bins`.
    fn frame_after_frame<T: Sample>(gpu: &Gpu, rng: &mut fastrand::Rng, bins: Bins) {
        let levels = bins.levels() as u32;
        // Samples in the lowest quarter of the levels, or the highest: no bin holds both (with 2
        // bins or more).
        let low = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
            (0..n).map(|_| T::from_u16(rng.u32(0..levels / 4) as u16)).collect()
        };
        let high = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
            (0..n).map(|_| T::from_u16(rng.u32((3 * levels).div_ceil(4)..levels) as u16)).collect()
        };
        let any = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
            (0..n).map(|_| T::from_u16(rng.u32(0..levels) as u16)).collect()
        };
        let top = T::from_u16((levels - 1) as u16);
        let many = 3_000_001;
        let one_block = high(rng, 999);
        let frames: Vec<(&str, Vec<T>)> = vec![
            ("low, many blocks", low(rng, many)),
            ("high, many blocks", high(rng, many)),
            ("low, one block", low(rng, 1000)),
            ("high, one block", one_block.clone()),
            ("the same again", one_block),
            ("empty", Vec::new()),
            ("one level", vec![top; 777_777]),
            ("one sample", any(rng, 1)),
            ("any, many blocks", any(rng, many)),
            ("counts alone", any(rng, 12345)),
            ("low after the counts alone", low(rng, 54321)),
        ];
        let mut plan = DistributionPlan::new(gpu, bins).unwrap();
        let mut before: Option<Distribution> = None;
        for (label, samples) in frames {
            let what = format!("{} bins of {} levels, {label}", bins.count(), bins.levels());
            let src = gpu.upload("histogram.in", &samples).unwrap();
            let want = Distribution::from_counts(bins, count(&samples, bins));
            if label == "counts alone" {
                plan.queue_counts(&src, samples.len()).unwrap();
                assert_eq!(plan.download_counts().unwrap(), want.counts, "{what}");
                continue;
            }
            plan.queue(&src, samples.len()).unwrap();
            assert_eq!(plan.download().unwrap(), want, "{what}");
            let mut cdf_min = [u64::MAX];
            gpu.download(&plan.cdf_min, &mut cdf_min).unwrap();
            assert_eq!(cdf_min[0], want.cdf_min(), "{what}: cdf_min");
            if label == "high, many blocks" && bins.count() >= 2 {
                let low = before.as_ref().unwrap();
                let disjoint = low.counts.iter().zip(&want.counts).all(|(&a, &b)| a == 0 || b == 0);
                assert!(disjoint, "{what}: a bin counted in both frames");
            }
            before = Some(want);
        }
    }

    #[test]
    fn cpu_counts_and_accumulates() {
        let f = Frame::new(3, 2, 255, Pixels::U8(vec![0, 31, 32, 255, 255, 100].into()));
        let d = Histogram { bins: Some(8) }.cpu(&f).unwrap();
        assert_eq!(d.counts, vec![2, 1, 0, 1, 0, 0, 0, 2]);
        assert_eq!(d.cumulative, vec![2, 3, 3, 4, 4, 4, 4, 6]);
        assert_eq!(d.cdf_min(), 2);
    }
}
