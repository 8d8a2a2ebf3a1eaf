//! `edges` on the GPU: the launches of the blur, the fused gradient / suppression / in-tile
//! hysteresis kernel, the union-find across tiles and the finish (canny.cu), and the device plan
//! that `Op::gpu` and the benchmark run.

use histopipe_gpu::cudarc::driver::sys::CUdevice_attribute;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, launch_dependent, Buffer, LaunchConfig};

use super::{gaussian_weights, Canny};
use crate::histogram::check_len;
use crate::{Gpu, OpError};

/// The tile of `canny_nms` (`CANNY_TW` x `CANNY_TH` in canny.cu) and its blocks' shape.
pub(super) const NMS_TILE: (u32, u32) = (128, 16);
pub(super) const NMS_BLOCK: (u32, u32) = (32, 8);
/// The blocks of `canny_nms_tall` and `canny_finish_tall` (`CANNY_TALL_BY` rows).
pub(super) const TALL_BLOCK: (u32, u32) = (32, 32);
/// The warps of a block of `canny_union` (`CANNY_UNION_WARPS`): a warp per tile, or, wide, a
/// block per tile (see [`Spread`]).
pub(super) const UNION_WARPS: u32 = 5;

/// How a tile's serial work (labelling its weak ring pixels, its unions, its finds) is spread
/// over the GPU, chosen by [`spread`] from the grid's waves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Spread {
    /// One warp of a tile does it, and the other warps leave their SM to the next tiles.
    Warp,
    /// `wide`: the frame waits on its slowest tiles, and each tile's serial work is spread over
    /// its block's warps (`canny_nms_wide`, [`NMS_BLOCK`]).
    Block,
    /// `wide` with blocks of [`TALL_BLOCK`] (`canny_nms_tall`, `canny_finish_tall`): the grid is one
    /// wave of them, and a tile's serial work is split four times finer.
    TallBlock,
}

impl Spread {
    /// The kernels' `wide` argument.
    fn wide(self) -> u32 {
        (self != Spread::Warp) as u32
    }

    /// The block of `canny_nms` and `canny_finish`, and the names of the kernels of this spread.
    fn nms_finish(self) -> ((u32, u32), &'static str, &'static str) {
        match self {
            Spread::TallBlock => (TALL_BLOCK, "canny_nms_tall", "canny_finish_tall"),
            Spread::Block => (NMS_BLOCK, "canny_nms_wide", "canny_finish"),
            Spread::Warp => (NMS_BLOCK, "canny_nms", "canny_finish"),
        }
    }
}

/// How the kernels spread a tile's serial work over a GPU of `sms` SMs of `threads_per_sm`
/// threads, for a grid of `tiles` blocks: [`Spread::TallBlock`] if the tiles fit one wave of
/// [`TALL_BLOCK`] blocks, [`Spread::Block`] if they fit at most [`WIDE_WAVES`] waves of
/// [`NMS_BLOCK`] blocks, else [`Spread::Warp`].
pub(super) fn spread(tiles: u32, sms: usize, threads_per_sm: usize) -> Spread {
    let wave = |block: (u32, u32)| sms * (threads_per_sm / (block.0 * block.1) as usize);
    if tiles as usize <= wave(TALL_BLOCK) {
        Spread::TallBlock
    } else if tiles as usize <= WIDE_WAVES * wave(NMS_BLOCK) {
        Spread::Block
    } else {
        Spread::Warp
    }
}

/// The most waves of `canny_nms` blocks that run wide: on the H200, 2560x1707 (2140 tiles, 2 waves)
/// took 65 µs wide and 78 µs not; 7680x4320 (16 waves) and larger lose 1-2% wide. Tall blocks
/// (32 x 32) took 38 µs for the kernels at 640x651 (205 tiles, the camera scaled) against 46 µs
/// for 32 x 8, but 105 µs against 74 µs at 2560x1707 (3 waves of them).
const WIDE_WAVES: usize = 3;

/// The tiles of `canny_nms` for a w x h frame, the length of its one-dimensional grid (tiles in
/// frame order; canny_tile in canny.cu finds a block's tile), or `None` beyond the grid's 2^31 - 1
/// blocks. A frame of fewer than 2^32 pixels has fewer than 2^29 tiles: (w / 128 + 1)(h / 16 + 1)
/// is at most 2^32 / 2048 + 2^32 / 16 + 2^32 / 128 + 1.
pub(super) fn nms_tiles(w: usize, h: usize) -> Option<u32> {
    let tiles = w.div_ceil(NMS_TILE.0 as usize).checked_mul(h.div_ceil(NMS_TILE.1 as usize))?;
    u32::try_from(tiles).ok().filter(|&t| t <= i32::MAX as u32)
}

impl Canny {
    /// Queues the blur kernels: `src` (w x h) through `tmp` (f32, w x h) into `dst`; `weights`
    /// holds [`gaussian_weights`].
    #[allow(clippy::too_many_arguments)]
    fn launch_blur(
        gpu: &Gpu,
        src: &CudaSlice<u8>,
        w: usize,
        h: usize,
        weights: &CudaSlice<f32>,
        taps: usize,
        tmp: &mut CudaSlice<f32>,
        dst: &mut CudaSlice<u8>,
    ) -> Result<(), OpError> {
        let n = w * h;
        if n == 0 {
            return Ok(());
        }
        Self::checked_tiles(w, h)?;
        check_len("blur input", src.len(), n)?;
        check_len("blur weights", weights.len(), taps)?;
        check_len("blur rows", tmp.len(), n)?;
        check_len("blur output", dst.len(), n)?;
        if taps % 2 == 0 {
            return Err(OpError::invalid(format!("a blur of {taps} taps (an odd number is needed)")));
        }
        let (w32, h32, r) = (w as u32, h as u32, (taps / 2) as u32);
        // SAFETY: gauss_rows(in, w, h, weights, r, out) and gauss_cols(in, w, h, weights, r, out)
        // in canny.cu; the lengths are checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "gauss_rows", launch::cover(n, 256); src, &w32, &h32, weights, &r, &mut *tmp)?;
            launch!(gpu, kernels::CANNY, "gauss_cols", launch::cover(n, 256); &*tmp, &w32, &h32, weights, &r, dst)
        }?;
        Ok(())
    }

    /// Queues stages 1–3 and the tiles' own hysteresis as one kernel: from `src` (w x h), the bit
    /// maps `kept` (weak or strong) and `edge` (the strong pixels grown within their tile), each
    /// [`Canny::bit_words`] long, and in `parent` ([`Canny::parent_len`] long) the union-find's
    /// element 0 (STRONG) and, for each kept pixel outside `edge` on a tile's first or last row or
    /// column, its in-tile component's representative, where [`Canny::launch_union`] goes on.
    /// Frames need fewer than 2^32 pixels (see [`Canny::gpu_size_ok`]).
    #[allow(clippy::too_many_arguments)]
    fn launch_gradient_nms(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<u8>,
        w: usize,
        h: usize,
        spread: Spread,
        kept: &mut CudaSlice<u32>,
        edge: &mut CudaSlice<u32>,
        parent: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        if w == 0 || h == 0 {
            return Ok(());
        }
        let (low, high) = self.thresholds();
        let tiles = Self::checked_tiles(w, h)?;
        check_len("edges' input", src.len(), w * h)?;
        Self::check_bits(w, h, kept, edge, parent)?;
        let (block, name, _) = spread.nms_finish();
        let cfg =
            LaunchConfig { grid_dim: (tiles, 1, 1), block_dim: (block.0, block.1, 1), shared_mem_bytes: 0 };
        let (w32, h32, l2, words) = (w as u32, h as u32, self.l2 as u32, w.div_ceil(32) as u32);
        // SAFETY: canny_nms, canny_nms_wide and canny_nms_tall(in, w, h, l2, low, high, words, kept,
        // edge, parent) in canny.cu; the lengths are checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, name, cfg; src, &w32, &h32, &l2, &low, &high, &words, kept, edge, &mut *parent)
        }?;
        Ok(())
    }

    /// The bit maps' and the union-find's lengths, checked for a w x h frame (w, h > 0).
    fn check_bits(
        w: usize,
        h: usize,
        kept: &CudaSlice<u32>,
        edge: &CudaSlice<u32>,
        parent: &CudaSlice<u32>,
    ) -> Result<(), OpError> {
        Self::checked_tiles(w, h)?;
        check_len("edges' kept pixels", kept.len(), Self::bit_words(w, h))?;
        check_len("edges' edge pixels", edge.len(), Self::bit_words(w, h))?;
        check_len("edges' union-find", parent.len(), Self::parent_len(w, h))
    }

    /// Whether a w x h frame fits the GPU backend: `canny_finish` indexes pixels in 32 bits, so
    /// frames need fewer than 2^32 pixels (their tiles then fit the grid, see [`nms_tiles`]).
    pub fn gpu_size_ok(w: usize, h: usize) -> bool {
        w.checked_mul(h).is_some_and(|n| n <= u32::MAX as usize) && nms_tiles(w, h).is_some()
    }

    /// The grid of `canny_nms` and `canny_finish` (a block per tile), or the error
    /// for a frame too large.
    pub(super) fn checked_tiles(w: usize, h: usize) -> Result<u32, OpError> {
        match nms_tiles(w, h) {
            Some(tiles) if Self::gpu_size_ok(w, h) => Ok(tiles),
            _ => Err(OpError::invalid(format!(
                "{w}x{h} is too large for the GPU backend of edges: it takes frames of fewer than 2^32 pixels"
            ))),
        }
    }

    /// The length of the bit maps `kept` and `edge` of a w x h frame: rows of ceil(w / 32) 32-bit
    /// words (bit b of word j is pixel 32 j + b of the row).
    pub(super) fn bit_words(w: usize, h: usize) -> usize {
        w.div_ceil(32) * h
    }

    /// The length of the union-find's `parent` for a w x h frame: element 0 (STRONG), then one per
    /// pixel (1 + y w + x; only those of the tiles' weak ring pixels are written and read).
    pub(super) fn parent_len(w: usize, h: usize) -> usize {
        w * h + 1
    }

    /// Queues hysteresis across tiles over the bit maps and union-find of
    /// [`Canny::launch_gradient_nms`] (w x h): a warp per tile (wide: a block) unites the kept
    /// pixels 8-adjacent across its right and bottom borders (a weak pixel beside an edge pixel
    /// with STRONG). Launched as a dependent of `canny_nms` (see [`launch_dependent!`]), as is
    /// the finish of this one: the GPU starts each while the one before ends.
    fn launch_union(
        gpu: &Gpu,
        kept: &CudaSlice<u32>,
        edge: &CudaSlice<u32>,
        parent: &mut CudaSlice<u32>,
        (w, h): (usize, usize),
        spread: Spread,
    ) -> Result<(), OpError> {
        if w == 0 || h == 0 {
            return Ok(());
        }
        let tiles = Self::checked_tiles(w, h)?;
        Self::check_bits(w, h, kept, edge, parent)?;
        // Wide, a block of UNION_WARPS warps per tile of canny_nms; else a warp per tile.
        let cfg = LaunchConfig {
            grid_dim: (if spread == Spread::Warp { tiles.div_ceil(UNION_WARPS) } else { tiles }, 1, 1),
            block_dim: (32 * UNION_WARPS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (w32, h32, words) = (w as u32, h as u32, w.div_ceil(32) as u32);
        let wide = spread.wide();
        // SAFETY: canny_union(w, h, words, wide, kept, edge, parent) in canny.cu; the lengths are
        // checked above. It waits for the grid before it (canny_nms, or the tall one) first.
        unsafe {
            launch_dependent!(gpu, kernels::CANNY, "canny_union", cfg; &w32, &h32, &words, &wide, kept, edge, parent)
        }?;
        Ok(())
    }

    /// Queues the last step, a block per tile: the weak ring pixels whose root is STRONG join
    /// `edge` with their in-tile components, then 255 where the pixel is an edge, else 0, into
    /// `dst` (w x h).
    fn launch_finish(
        gpu: &Gpu,
        kept: &CudaSlice<u32>,
        edge: &CudaSlice<u32>,
        parent: &CudaSlice<u32>,
        (w, h): (usize, usize),
        spread: Spread,
        dst: &mut CudaSlice<u8>,
    ) -> Result<(), OpError> {
        let n = w * h;
        if n == 0 {
            return Ok(());
        }
        let tiles = Self::checked_tiles(w, h)?;
        Self::check_bits(w, h, kept, edge, parent)?;
        check_len("edges' output", dst.len(), n)?;
        let (block, _, name) = spread.nms_finish();
        let cfg =
            LaunchConfig { grid_dim: (tiles, 1, 1), block_dim: (block.0, block.1, 1), shared_mem_bytes: 0 };
        let (w32, h32, words) = (w as u32, h as u32, w.div_ceil(32) as u32);
        let wide = spread.wide();
        // SAFETY: canny_finish and canny_finish_tall(w, h, words, wide, kept, edge, parent, out) in
        // canny.cu; the lengths are checked above. They wait for the grid before them (canny_union)
        // first.
        unsafe {
            launch_dependent!(gpu, kernels::CANNY, name, cfg; &w32, &h32, &words, &wide, kept, edge, parent, dst)
        }?;
        Ok(())
    }
}

impl Canny {
    /// The device plan of this detector for `w x h` frames, or the error for a frame too large.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> Result<CannyPlan<'g>, OpError> {
        let tiles = Self::checked_tiles(w, h)?;
        let attribute = |a: CUdevice_attribute, default: usize| gpu.attribute(a).unwrap_or(default);
        let spread = spread(
            tiles,
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132),
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048),
        );
        let n = w * h;
        let blur = match self.blur {
            Some(sigma) => {
                let weights = gaussian_weights(sigma);
                Some(Blur {
                    taps: weights.len(),
                    weights: gpu.upload::<f32>("edges.weights", &weights)?,
                    rows: gpu.buffer::<f32>("edges.blur", n)?,
                    out: gpu.buffer::<u8>("edges.blurred", n)?,
                })
            }
            None => None,
        };
        Ok(CannyPlan {
            gpu,
            canny: *self,
            w,
            h,
            spread,
            blur,
            kept: gpu.buffer::<u32>("edges.kept", Self::bit_words(w, h))?,
            edge: gpu.buffer::<u32>("edges.edge", Self::bit_words(w, h))?,
            parent: gpu.buffer::<u32>("edges.parent", Self::parent_len(w, h))?,
        })
    }
}

/// The blur's weights and its two passes' outputs on the device.
struct Blur<'g> {
    taps: usize,
    weights: Buffer<'g, f32>,
    rows: Buffer<'g, f32>,
    out: Buffer<'g, u8>,
}

/// The device plan of `edges`: the blur's buffers (if it blurs), the bit maps of kept and edge
/// pixels and the union-find of the tiles' weak ring pixels, and the kernels. The one GPU sequence that `Op::gpu` and
/// the benchmark run.
pub struct CannyPlan<'g> {
    gpu: &'g Gpu,
    canny: Canny,
    w: usize,
    h: usize,
    /// How the kernels spread each tile's serial work (see [`Spread`]).
    spread: Spread,
    blur: Option<Blur<'g>>,
    kept: Buffer<'g, u32>,
    edge: Buffer<'g, u32>,
    parent: Buffer<'g, u32>,
}

impl CannyPlan<'_> {
    /// Spreads the tiles' work this way, whatever the frame's size: for the tests of every way.
    #[cfg(test)]
    pub(super) fn set_spread(&mut self, spread: Spread) {
        self.spread = spread;
    }

    /// Queues the edges of the `w x h` frame in `src` into `dst`: the blur (if any), stages 1-3
    /// and the tiles' own hysteresis in one kernel, the union-find across tiles, the tiles' last
    /// growth and the 0/255 output. Nothing waits on the host.
    pub fn queue(&mut self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<(), OpError> {
        let (gpu, w, h) = (self.gpu, self.w, self.h);
        if w == 0 || h == 0 {
            return Ok(());
        }
        let src = match &mut self.blur {
            Some(b) => {
                Canny::launch_blur(gpu, src, w, h, &b.weights, b.taps, &mut b.rows, &mut b.out)?;
                &*b.out
            }
            None => src,
        };
        let spread = self.spread;
        self.canny.launch_gradient_nms(
            gpu,
            src,
            w,
            h,
            spread,
            &mut self.kept,
            &mut self.edge,
            &mut self.parent,
        )?;
        Canny::launch_union(gpu, &self.kept, &self.edge, &mut self.parent, (w, h), spread)?;
        Canny::launch_finish(gpu, &self.kept, &self.edge, &self.parent, (w, h), spread, dst)
    }

    /// Queues stages 1-3 alone, unblurred, with the tiles' own hysteresis and labels (the same
    /// kernel): from `src` to the plan's bit maps of kept and edge pixels and its union-find.
    pub fn queue_gradient(&mut self, src: &CudaSlice<u8>) -> Result<(), OpError> {
        let (w, h) = (self.w, self.h);
        let spread = self.spread;
        self.canny.launch_gradient_nms(
            self.gpu,
            src,
            w,
            h,
            spread,
            &mut self.kept,
            &mut self.edge,
            &mut self.parent,
        )
    }
}
