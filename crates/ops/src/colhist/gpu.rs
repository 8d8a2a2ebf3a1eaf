//! `colhist` on the GPU: the device plan, which picks the counting kernel for the frame's shape
//! and holds its scratch, and the kernels' launch shapes.

use histopipe_frame::{Affine, Geometry};
use histopipe_gpu::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use histopipe_gpu::cudarc::driver::{CudaSlice, DevicePtr, SyncOnDrop};
use histopipe_gpu::{kernels, launch, Buffer, GpuError, LaunchConfig};

use super::ColHist;
use crate::{Gpu, OpError, Sample};

/// u32 counters of shared memory a block may use: 48 KiB, the limit without opting in.
const SHARED_COUNTERS: u32 = 12 * 1024;
/// Lines (columns or rows) per block at most: one warp's worth of neighbouring columns.
const MAX_TILE: u32 = 32;
const THREADS: u32 = 256;

/// Most bins of the column kernels `colhist_pairs_*` (`PAIR_MAX_BINS` in colhist.cu): a 64-column
/// tile of 16-bit counters, bins x 128 bytes, within the 48 KiB of shared memory every GPU gives a
/// block without opting in.
const PAIR_MAX_BINS: u32 = 384;
/// Threads per block of `colhist_pairs_*` (`PAIR_THREADS`).
const PAIR_THREADS: u32 = 512;
/// Samples a lane of `colhist_pairs_*` (K in colhist.cu): two, in 64-column tiles...
const NARROW: usize = 2;
/// ...or four in `colhist_pairs_wide_*`, 128-column tiles.
const WIDE: usize = 4;
/// Shared memory a block may use without opting in.
const DEFAULT_SHARED: usize = 48 * 1024;
/// Shared memory the driver keeps per block, beside the kernel's (1 KiB from sm_80 on).
const RESERVED_SHARED: usize = 1024;
/// Threads per block of `colhist_warp_rows_*`: eight rows.
const ROW_THREADS: u32 = 256;
/// Blocks of `colhist_pairs_*` an SM holds at once at most: their `__launch_bounds__(512, 2)`
/// keeps two within its 65536 registers; shared memory may allow fewer ([`Pairs::shape`]).
const PAIR_BLOCKS_PER_SM: usize = 2;
/// Fewest rows per block of `colhist_pairs_*`: fewer would make the merge cost more than counting.
const PAIR_MIN_ROWS: usize = 256;

impl ColHist {
    pub(super) fn gpu_counts<T: Sample>(
        &self,
        gpu: &Gpu,
        w: usize,
        h: usize,
        input: &[T],
        mask: Option<&[u8]>,
    ) -> Result<Vec<u32>, OpError> {
        let n = self.bins as usize * self.lines(w, h);
        let src = gpu.upload::<T>("colhist.in", input)?;
        let mask = mask.map(|m| gpu.upload::<u8>("colhist.mask", m)).transpose()?;
        let mut counts = gpu.buffer::<u32>("colhist.counts", n)?;
        self.plan(gpu, w, h)?.queue(&src, mask.as_deref(), &mut counts)?;
        let out = gpu.download_vec(&counts, n)?;
        Ok(out)
    }

    /// The device plan of these counts for `w x h` frames.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> Result<ColHistPlan<'g>, OpError> {
        let pairs = if self.uses_pairs(w, h) {
            Some(Pairs::new(gpu, w, h, self.bins, self.sample_bytes())?)
        } else {
            None
        };
        // colhist_pairs_*'s scratch: each part's packed counters (bins x 16 k words per block), and
        // per tile the count of its blocks done.
        let several = pairs.filter(|p| p.parts > 1);
        let (partials, done) = match several {
            Some(p) => (p.tiles * p.parts * p.words(self.bins), p.tiles),
            None => (1, 1),
        };
        let mut done = gpu.buffer::<u32>("colhist.done", done)?;
        // Zeroed once: each launch's last blocks leave their tile's count zero again (colhist.cu).
        gpu.stream().memset_zeros(&mut *done)?;
        Ok(ColHistPlan {
            gpu,
            op: self.clone(),
            w,
            h,
            pairs,
            partials: gpu.buffer::<u32>("colhist.partials", partials)?,
            done,
        })
    }

    /// Bytes a sample of these frames takes on the device (2 above 8 bits).
    fn sample_bytes(&self) -> usize {
        if self.maxval > u8::MAX as u16 {
            2
        } else {
            1
        }
    }

    /// Whether the columns of a `w x h` frame are counted by `colhist_pairs_*`.
    fn uses_pairs(&self, w: usize, h: usize) -> bool {
        !self.rows && self.bins <= PAIR_MAX_BINS && w > 0 && h > 0
    }

    /// The kernels' mask arguments: whether to mask, the map to the original and the original's
    /// size (the identity of a `w x h` frame when there is no mask).
    fn mask_args(&self, w: usize, h: usize) -> (u32, Affine, f64, f64) {
        let (masked, g) = match &self.mask {
            Some(g) => (1u32, g.clone()),
            None => (0u32, Geometry::identity(w, h)),
        };
        (masked, g.to_original, g.original_width as f64, g.original_height as f64)
    }
}

/// The launch shape of `colhist_pairs_*` for a frame: blocks of `32 k` columns by `span` rows,
/// `tiles x parts` of them, `k` samples a lane.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pairs {
    pub(super) k: usize,
    tiles: usize,
    pub(super) parts: usize,
    span: usize,
}

impl Pairs {
    /// The shape for a `w x h` frame of `sample_bytes`-byte samples counted into `bins` bins: the
    /// wide kernels (k = 4) where the GPU gives a block their shared memory and, when the frame
    /// is split along its rows, the parts' partial counts (stored, then read back by each tile's
    /// last block) come to at most half the frame's bytes; else k = 2. Measured on an H200 (8-bit,
    /// 256 bins; 2560x1707 to 16384x16384), this picks the faster of the two at every size: the
    /// wide kernels took 0.151 ms against 0.198 at 16384x16384 (one part a tile: no partials)
    /// and 0.0412 against 0.0430 at 7680x4320 (partials 47% of the frame), but 0.0336 against
    /// 0.0256 at 4096x3112 (131%).
    fn new(gpu: &Gpu, w: usize, h: usize, bins: u32, sample_bytes: usize) -> Result<Pairs, OpError> {
        let attribute = |a: CUdevice_attribute, default: usize| gpu.attribute(a).unwrap_or(default);
        let sms = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132);
        let block_shared = attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            DEFAULT_SHARED,
        );
        let sm_shared = attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            DEFAULT_SHARED,
        );
        if shared_bytes(bins, WIDE) <= block_shared {
            let wide = Pairs::shape(w, h, bins, WIDE, sms, sm_shared)?;
            let partials = if wide.parts > 1 { wide.tiles * wide.parts * wide.words(bins) * 4 } else { 0 };
            if partials.saturating_mul(2) <= w * h * sample_bytes {
                return Ok(wide);
            }
        }
        Pairs::shape(w, h, bins, NARROW, sms, sm_shared)
    }

    /// The shape with `k` samples a lane on a GPU of `sms` SMs of `sm_shared` bytes of shared
    /// memory each.
    fn shape(
        w: usize,
        h: usize,
        bins: u32,
        k: usize,
        sms: usize,
        sm_shared: usize,
    ) -> Result<Pairs, OpError> {
        let tiles = w.div_ceil(32 * k);
        // Enough blocks to cover the GPU, but no more: every extra part along the rows adds
        // bins x 64 k bytes of partial counts, stored, then read by the tile's last block. At
        // least PAIR_MIN_ROWS rows per block, at most 65535 (a 16-bit counter's limit). Fill
        // the GPU in one wave of the blocks an SM holds at once.
        let per_sm = (sm_shared / (shared_bytes(bins, k) + RESERVED_SHARED)).clamp(1, PAIR_BLOCKS_PER_SM);
        let parts =
            (per_sm * sms / tiles).clamp(1, h.div_ceil(PAIR_MIN_ROWS)).max(h.div_ceil(u16::MAX as usize));
        let span = h.div_ceil(parts);
        let parts = h.div_ceil(span);
        if parts > u16::MAX as usize {
            return Err(OpError::invalid("frames taller than 65535 x 65535 rows are not supported"));
        }
        Ok(Pairs { k, tiles, parts, span })
    }

    /// 32-bit words of a block's packed counters (two 16-bit counters each).
    fn words(&self, bins: u32) -> usize {
        bins as usize * 16 * self.k
    }
}

/// Bytes of shared memory a block of `colhist_pairs_*` with `k` samples a lane uses for `bins`.
fn shared_bytes(bins: u32, k: usize) -> usize {
    bins as usize * 64 * k
}

/// The device plan of `colhist`: the counting kernel for the frame's shape and the scratch of
/// `colhist_pairs_*` (each part's packed counters, each tile's count of blocks done). The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct ColHistPlan<'g> {
    gpu: &'g Gpu,
    op: ColHist,
    w: usize,
    h: usize,
    /// The shape of `colhist_pairs_*`, when it counts the columns.
    pub(super) pairs: Option<Pairs>,
    partials: Buffer<'g, u32>,
    done: Buffer<'g, u32>,
}

/// The kernels' `inside` argument: the device address of a mask's bytes, null without one, and
/// the guard that orders the launch after the mask's upload (drop it once the launch is queued).
fn inside<'a>(gpu: &'a Gpu, mask: Option<&'a CudaSlice<u8>>) -> (u64, Option<SyncOnDrop<'a>>) {
    match mask {
        Some(m) => {
            let (ptr, sync) = m.device_ptr(gpu.stream());
            (ptr, Some(sync))
        }
        None => (0, None),
    }
}

impl ColHistPlan<'_> {
    /// The frame size this plan counts.
    pub fn shape(&self) -> (usize, usize) {
        (self.w, self.h)
    }

    /// Counts the pixels `mask` maps into the original from now on (every pixel with `None`): the
    /// one part of the op that the plan's kernels and scratch do not depend on, so that one plan
    /// serves the turned frames of a sweep, each with its geometry.
    pub fn set_mask(&mut self, mask: Option<Geometry>) {
        self.op.mask = mask;
    }

    /// Queues the counts of the `w x h` frame in `src` into the first `bins x lines` counters of
    /// `counts` (zeroed first where the kernel adds to them), of the pixels whose byte in `mask`
    /// (one a pixel) is non-zero if given.
    pub fn queue<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        mask: Option<&CudaSlice<u8>>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        let (op, w, h) = (&self.op, self.w, self.h);
        let lines = op.lines(w, h);
        let along = if op.rows { w } else { h };
        if lines == 0 || along == 0 {
            return Ok(());
        }
        if let Some(mask) = mask {
            if mask.len() < w * h {
                return Err(OpError::invalid(format!(
                    "a mask of {} pixels for a frame of {}",
                    mask.len(),
                    w * h
                )));
            }
        }
        if op.bins <= PAIR_MAX_BINS {
            return self.queue_small(src, mask, counts);
        }
        self.gpu.stream().memset_zeros(&mut counts.slice_mut(..op.bins as usize * lines))?;
        let direction = if op.rows { "rows" } else { "cols" };
        let tile = (SHARED_COUNTERS / op.bins).min(MAX_TILE);
        let (name, cfg, tile, span) = if tile == 0 {
            let blocks = launch::blocks(w * h, THREADS, 1 << 16);
            ("global", launch::linear(blocks, THREADS), 0, 0)
        } else {
            let tiles = (lines as u32).div_ceil(tile);
            // Enough blocks to fill a large GPU, each still covering a long stretch of its lines
            // so that merging its shared counts stays cheap next to counting.
            // The kernel indexes a block's tile * span pixels in 32 bits: keep them under 2^31.
            let fewest = ((along as u64 * tile as u64) >> 31) as u32 + 1;
            let parts = 2048u32
                .div_ceil(tiles)
                .max(fewest)
                .clamp(1, (along as u32).div_ceil(64).clamp(fewest, 65535));
            let span = (along as u32).div_ceil(parts);
            let parts = (along as u32).div_ceil(span);
            let cfg = LaunchConfig {
                grid_dim: (tiles, parts, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: op.bins * tile * 4,
            };
            ("tiled", cfg, tile, span)
        };
        let name = format!("colhist_{name}_{direction}_{}", T::KERNEL_SUFFIX);
        let (w32, h32, maxval, bins) = (w as u32, h as u32, op.maxval as u32, op.bins);
        let (masked, m, ow, oh) = op.mask_args(w, h);
        let (inside, _read) = inside(self.gpu, mask);
        // SAFETY: colhist_{global,tiled}_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow,
        // oh, inside, counts) in colhist.cu; `src` holds the w x h frame, `inside` null or the
        // address of w x h mask bytes (checked above), `counts` bins x lines counters.
        unsafe {
            launch!(self.gpu, kernels::COLHIST, name, cfg;
                src, &w32, &h32, &maxval, &bins, &tile, &span,
                &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, &inside, counts)
        }?;
        Ok(())
    }

    /// [`ColHistPlan::queue`] for at most [`PAIR_MAX_BINS`] bins: columns by `colhist_pairs_*` in
    /// colhist.cu, blocks of 64 or 128 columns by `span` rows ([`Pairs`]); rows by
    /// `colhist_warp_rows_*`, a warp per row.
    fn queue_small<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        mask: Option<&CudaSlice<u8>>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        let (op, w, h) = (&self.op, self.w, self.h);
        let (masked, m, ow, oh) = op.mask_args(w, h);
        let (inside, _read) = inside(self.gpu, mask);
        let (w32, h32, maxval, bins) = (w as u32, h as u32, op.maxval as u32, op.bins);
        let Some(pairs) = self.pairs else {
            // Each warp stores its row's whole histogram: nothing to zero.
            let warps = (ROW_THREADS / 32) as usize;
            // h < 2^32 (for_frame), so at most 2^29 blocks: within the grid's 2^31 - 1.
            let blocks = h.div_ceil(warps);
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (ROW_THREADS, 1, 1),
                shared_mem_bytes: op.bins * warps as u32 * 4,
            };
            let name = format!("colhist_warp_rows_{}", T::KERNEL_SUFFIX);
            let (tile, span) = (0u32, 0u32);
            // SAFETY: colhist_warp_rows_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow,
            // oh, inside, counts) in colhist.cu; `src` holds the w x h frame, `inside` null or
            // the address of w x h mask bytes (checked in `queue`), `counts` bins x h counters.
            unsafe {
                launch!(self.gpu, kernels::COLHIST, name, cfg;
                    src, &w32, &h32, &maxval, &bins, &tile, &span,
                    &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, &inside, counts)
            }?;
            return Ok(());
        };
        let shared = shared_bytes(op.bins, pairs.k);
        let cfg = LaunchConfig {
            grid_dim: (pairs.tiles as u32, pairs.parts as u32, 1),
            block_dim: (PAIR_THREADS, 1, 1),
            shared_mem_bytes: shared as u32,
        };
        let wide = if pairs.k == WIDE { "wide_" } else { "" };
        let name = format!("colhist_pairs_{wide}{}", T::KERNEL_SUFFIX);
        if shared > DEFAULT_SHARED {
            // Pairs::new took this shape only where the GPU allows it.
            let function = self.gpu.function(&kernels::COLHIST, &name)?;
            function
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
                .map_err(GpuError::from)?;
        }
        let tile = (32 * pairs.k) as u32;
        let span = pairs.span as u32;
        // SAFETY: colhist_pairs_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow, oh,
        // inside, counts, partials, done) in colhist.cu; `src` holds the w x h frame, `inside`
        // null or the address of w x h mask bytes (checked in `queue`), `counts` bins x w
        // counters, the scratch was sized for this shape (`ColHist::plan`).
        unsafe {
            launch!(self.gpu, kernels::COLHIST, name, cfg;
                src, &w32, &h32, &maxval, &bins, &tile, &span,
                &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, &inside, counts,
                &mut *self.partials, &mut *self.done)
        }?;
        Ok(())
    }
}
