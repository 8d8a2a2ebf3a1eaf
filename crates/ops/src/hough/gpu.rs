//! `hough-vote` and `hough-lines` on the GPU: their device plans, kernels of
//! kernels-common/hough.cu.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::{HoughLines, HoughSpace, HoughVote, Strategy, SHARED_COLUMNS};
use crate::histogram::check_len;
use crate::{Gpu, OpError, Sample};
use histopipe_frame::Frame;

impl HoughVote {
    pub(super) fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        space: &HoughSpace,
        input: &[T],
    ) -> Result<Frame, OpError> {
        let src = gpu.upload::<T>("hough.in", input)?;
        let mut plan = HoughVotePlan::new(gpu, *space)?;
        let mut narrow = gpu.buffer::<u16>("hough.out", plan.cells())?;
        plan.queue(&src, self.strategy, &mut narrow)?;
        let most = plan.most()?;
        if most > 65535 {
            return Err(Self::too_many(most));
        }
        let out = gpu.download_samples(&narrow, plan.cells())?;
        Ok(Self::output(space, out, most))
    }
}

/// The device plan of `hough-vote` for one layout: the edge list and its length, the tables, the
/// u32 counters and the most votes, and the kernels (compaction, votes, narrowing to u16). The
/// one GPU sequence that `Op::gpu` and the benchmark run.
pub struct HoughVotePlan<'g> {
    gpu: &'g Gpu,
    space: HoughSpace,
    points: Buffer<'g, u32>,
    count: Buffer<'g, u32>,
    most: Buffer<'g, u32>,
    cos: Buffer<'g, f32>,
    sin: Buffer<'g, f32>,
    acc: Buffer<'g, u32>,
}

impl<'g> HoughVotePlan<'g> {
    pub fn new(gpu: &'g Gpu, space: HoughSpace) -> Result<HoughVotePlan<'g>, OpError> {
        let pixels = space.width * space.height;
        if pixels > u32::MAX as usize {
            return Err(OpError::invalid("the GPU votes frames of fewer than 2^32 pixels"));
        }
        let (cos, sin) = space.tables();
        Ok(HoughVotePlan {
            gpu,
            space,
            points: gpu.buffer::<u32>("hough.points", pixels)?,
            count: gpu.buffer::<u32>("hough.count", 1)?,
            most: gpu.buffer::<u32>("hough.most", 1)?,
            cos: gpu.upload::<f32>("hough.cos", &cos)?,
            sin: gpu.upload::<f32>("hough.sin", &sin)?,
            acc: gpu.buffer::<u32>("hough.acc", space.thetas * space.rhos)?,
        })
    }

    /// Accumulator cells: thetas x rhos.
    pub fn cells(&self) -> usize {
        self.space.thetas * self.space.rhos
    }

    /// Queues the votes of the edge map `src` with `strategy` into `out` (the accumulator,
    /// [`HoughVotePlan::cells`] u16 counters, saturated) and the most votes: the compaction of
    /// the edge pixels, the votes, the narrowing. `auto` waits for the compaction's count to
    /// choose (a host round trip); a strategy resolved beforehand queues no wait.
    pub fn queue<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        strategy: Strategy,
        out: &mut CudaSlice<u16>,
    ) -> Result<(), OpError> {
        let gpu = self.gpu;
        let stream = gpu.stream();
        stream.memset_zeros(&mut *self.count)?;
        stream.memset_zeros(&mut *self.most)?;
        let n = self.space.width * self.space.height;
        check_len("edge map", src.len(), n)?;
        let n64 = n as u64;
        // SAFETY: hough_compact_*(in, n, points, count) in hough.cu; `src` holds n pixels,
        // `points` room for all of them, `count` is zeroed above.
        unsafe {
            launch!(gpu, kernels::HOUGH, format!("hough_compact_{}", T::KERNEL_SUFFIX), launch::cover(n, 256);
                src, &n64, &mut *self.points, &mut *self.count)
        }?;
        let strategy = match strategy {
            Strategy::Auto => {
                let mut found = [0u32];
                gpu.download(&self.count, &mut found)?;
                strategy.for_points(found[0] as u64)
            }
            chosen => chosen,
        };
        let space = &self.space;
        let (w, thetas, rhos, off) =
            (space.width as u32, space.thetas as u32, space.rhos as u32, space.rho_offset() as u32);
        let (points, count, cos, sin) = (&*self.points, &*self.count, &*self.cos, &*self.sin);
        match strategy {
            Strategy::Global => {
                // One atomic add per (edge pixel, angle) into the zeroed counters; enough blocks
                // along the points to fill the GPU even with few angles.
                let cells = self.cells();
                stream.memset_zeros(&mut self.acc.slice_mut(..cells))?;
                let cfg = LaunchConfig {
                    grid_dim: (64, space.thetas.min(65535) as u32, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: hough_vote_global(points, count, w, cos, sin, thetas, rhos, offset,
                // acc) in hough.cu; the tables hold `thetas` entries, `acc` thetas x rhos.
                unsafe {
                    launch!(gpu, kernels::HOUGH, "hough_vote_global", cfg;
                        points, count, &w, cos, sin, &thetas, &rhos, &off, &mut *self.acc)
                }?;
            }
            Strategy::Shared | Strategy::Auto => {
                // One block per (angle, range of SHARED_COLUMNS columns) counts in shared memory
                // and writes its part of the row (no zeroing needed).
                let columns = space.rhos.min(SHARED_COLUMNS);
                let cfg = LaunchConfig {
                    grid_dim: (thetas, space.rhos.div_ceil(columns) as u32, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: (columns * 4) as u32,
                };
                let cols = columns as u32;
                // SAFETY: hough_vote_shared(points, count, w, cos, sin, rhos, offset, columns,
                // acc) in hough.cu; the tables hold `thetas` entries, `acc` thetas x rhos.
                unsafe {
                    launch!(gpu, kernels::HOUGH, "hough_vote_shared", cfg;
                        points, count, &w, cos, sin, &rhos, &off, &cols, &mut *self.acc)
                }?;
            }
        }
        let cells = self.cells();
        check_len("accumulator", out.len(), cells)?;
        let cells64 = cells as u64;
        let cfg = launch::linear(launch::blocks(cells, 256, 4096), 256);
        // SAFETY: hough_narrow(acc, n, out, most) in hough.cu; `acc` and `out` hold `cells`
        // counters, `most` is zeroed above.
        unsafe {
            launch!(gpu, kernels::HOUGH, "hough_narrow", cfg; &*self.acc, &cells64, out, &mut *self.most)
        }?;
        Ok(())
    }

    /// The u32 counters of the accumulator queued last, not saturated (waits for the stream):
    /// what `hough-segments` walks from.
    pub fn counts(&self) -> Result<Vec<u32>, OpError> {
        Ok(self.gpu.download_vec(&self.acc, self.cells())?)
    }

    /// The most votes of a cell in the accumulator queued last (waits for the stream).
    pub fn most(&self) -> Result<u32, OpError> {
        let mut top = [0u32];
        self.gpu.download(&self.most, &mut top)?;
        Ok(top[0])
    }
}

/// The device plan of `hough-lines` for one layout: the peak search's list of cells and its
/// length. The one GPU sequence that `Op::gpu` and the benchmark run; the few peaks are sorted
/// on the host.
pub struct HoughLinesPlan<'g> {
    gpu: &'g Gpu,
    threshold: u32,
    space: HoughSpace,
    peaks: Buffer<'g, u32>,
    count: Buffer<'g, u32>,
}

impl<'g> HoughLinesPlan<'g> {
    pub fn new(gpu: &'g Gpu, lines: &HoughLines, space: HoughSpace) -> Result<HoughLinesPlan<'g>, OpError> {
        Ok(HoughLinesPlan {
            gpu,
            threshold: lines.threshold,
            space,
            peaks: gpu.buffer::<u32>("lines.peaks", space.thetas * space.rhos)?,
            count: gpu.buffer::<u32>("lines.count", 1)?,
        })
    }

    /// Queues the peak search over `acc` (thetas x rhos u16): the indices of the local maxima
    /// over the threshold, in no particular order, and their number.
    pub fn queue(&mut self, acc: &CudaSlice<u16>) -> Result<(), OpError> {
        let (cols, rows) = (self.space.rhos, self.space.thetas);
        check_len("accumulator", acc.len(), cols * rows)?;
        self.gpu.stream().memset_zeros(&mut *self.count)?;
        let (c, r, t) = (cols as u32, rows as u32, self.threshold);
        // SAFETY: hough_peaks(acc, cols, rows, threshold, peaks, count) in hough.cu; `acc` and
        // `peaks` hold cols x rows entries, `count` is zeroed above.
        unsafe {
            launch!(self.gpu, kernels::HOUGH, "hough_peaks", launch::cover(cols * rows, 256);
                acc, &c, &r, &t, &mut *self.peaks, &mut *self.count)
        }?;
        Ok(())
    }

    /// The indices of the peaks found last (waits for the stream).
    pub fn found(&self) -> Result<Vec<u32>, OpError> {
        let mut k = [0u32];
        self.gpu.download(&self.count, &mut k)?;
        Ok(self.gpu.download_vec(&self.peaks, k[0] as usize)?)
    }
}
