//! `edges` on the GPU: the launches of the blur, gradient and suppression, hysteresis and finish
//! kernels (canny.cu), and the device plan that `Op::gpu` and the benchmark run.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::{gaussian_weights, Canny};
use crate::histogram::check_len;
use crate::{Gpu, OpError};

/// The tile of `canny_nms` (`CANNY_TW` x `CANNY_TH` in canny.cu) and its blocks' shape.
pub(super) const NMS_TILE: (u32, u32) = (128, 16);
pub(super) const NMS_BLOCK: (u32, u32) = (32, 8);

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

    /// Queues stages 1–3 as one kernel: the NONE / WEAK / STRONG map (one byte per pixel) of
    /// `src` (w x h) into `map`, and, for every kept pixel, the root of its component within its
    /// tile into `labels`, where [`Canny::launch_hysteresis`] goes on. Frames need fewer than
    /// 2^32 pixels (see [`Canny::gpu_size_ok`]).
    #[allow(clippy::too_many_arguments)]
    fn launch_gradient_nms(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<u8>,
        w: usize,
        h: usize,
        map: &mut CudaSlice<u8>,
        labels: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        if w == 0 || h == 0 {
            return Ok(());
        }
        let (low, high) = self.thresholds();
        let tiles = Self::checked_tiles(w, h)?;
        let n = w * h;
        check_len("edges' input", src.len(), n)?;
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        let cfg = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: (NMS_BLOCK.0, NMS_BLOCK.1, 1),
            shared_mem_bytes: 0,
        };
        let (w32, h32, l2) = (w as u32, h as u32, self.l2 as u32);
        // SAFETY: canny_nms(in, w, h, l2, low, high, map, labels) in canny.cu; the lengths are
        // checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_nms", cfg; src, &w32, &h32, &l2, &low, &high, map, labels)
        }?;
        Ok(())
    }

    /// Whether a w x h frame fits the GPU backend: `labels` holds pixel indices in 32 bits, so
    /// frames need fewer than 2^32 pixels (their tiles then fit the grid, see [`nms_tiles`]).
    pub fn gpu_size_ok(w: usize, h: usize) -> bool {
        w.checked_mul(h).is_some_and(|n| n <= u32::MAX as usize) && nms_tiles(w, h).is_some()
    }

    /// The grid of `canny_nms` and `canny_union_borders`, or the error for a frame too large.
    pub(super) fn checked_tiles(w: usize, h: usize) -> Result<u32, OpError> {
        match nms_tiles(w, h) {
            Some(tiles) if Self::gpu_size_ok(w, h) => Ok(tiles),
            _ => Err(OpError::invalid(format!(
                "{w}x{h} is too large for the GPU backend of edges: it takes frames of fewer than 2^32 pixels"
            ))),
        }
    }

    /// The length of the bit set of strong roots that [`Canny::launch_hysteresis`] and
    /// [`Canny::launch_finish`] share, for `n` pixels: one bit per pixel, in 32-bit words.
    pub(super) fn strong_words(n: usize) -> usize {
        n.div_ceil(32)
    }

    /// Queues the rest of hysteresis over the `map` and `labels` of [`Canny::launch_gradient_nms`]
    /// (w x h): union-find joins the tiles' components across tile borders, then every kept
    /// pixel's label is pointed at its component's root and the roots of components holding a
    /// strong pixel get their bit in `strong` (at least [`Canny::strong_words`] long; zeroed
    /// here). A memset and two kernels, no host round trip; the result does not depend on
    /// scheduling (the components are unique).
    fn launch_hysteresis(
        gpu: &Gpu,
        map: &CudaSlice<u8>,
        labels: &mut CudaSlice<u32>,
        strong: &mut CudaSlice<u32>,
        w: usize,
        h: usize,
    ) -> Result<(), OpError> {
        let n = w * h;
        if n == 0 {
            return Ok(());
        }
        let tiles = Self::checked_tiles(w, h)?;
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        check_len("edges' strong roots", strong.len(), Self::strong_words(n))?;
        gpu.stream().memset_zeros(&mut strong.slice_mut(..Self::strong_words(n)))?;
        let (w32, h32, n64) = (w as u32, h as u32, n as u64);
        // One block per tile of canny_nms, one thread per pixel of its top row and side columns.
        let border = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: ((NMS_TILE.0 + 2 * (NMS_TILE.1 - 1)).next_multiple_of(32), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: canny_union_borders(map, w, h, labels) and canny_flatten(map, n, labels,
        // strong) in canny.cu; the lengths are checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_union_borders", border; map, &w32, &h32, &mut *labels)?;
            launch!(gpu, kernels::CANNY, "canny_flatten", launch::cover(n, 256); map, &n64, labels, strong)
        }?;
        Ok(())
    }

    /// Queues the last step, after [`Canny::launch_hysteresis`]: for `n` pixels, 255 where the
    /// pixel is kept and its root (its label now) has its bit in `strong`, else 0.
    fn launch_finish(
        gpu: &Gpu,
        map: &CudaSlice<u8>,
        labels: &CudaSlice<u32>,
        strong: &CudaSlice<u32>,
        n: usize,
        dst: &mut CudaSlice<u8>,
    ) -> Result<(), OpError> {
        if n == 0 {
            return Ok(());
        }
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        check_len("edges' strong roots", strong.len(), Self::strong_words(n))?;
        check_len("edges' output", dst.len(), n)?;
        let n64 = n as u64;
        // SAFETY: canny_finish(map, labels, strong, n, out) in canny.cu; the lengths are checked
        // above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_finish", launch::cover(n, 256); map, labels, strong, &n64, dst)
        }?;
        Ok(())
    }
}

impl Canny {
    /// The device plan of this detector for `w x h` frames, or the error for a frame too large.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> Result<CannyPlan<'g>, OpError> {
        Self::checked_tiles(w, h)?;
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
            blur,
            map: gpu.buffer::<u8>("edges.map", n)?,
            labels: gpu.buffer::<u32>("edges.labels", n)?,
            strong: gpu.buffer::<u32>("edges.strong", Self::strong_words(n))?,
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

/// The device plan of `edges`: the blur's buffers (if it blurs), the NONE / WEAK / STRONG map,
/// the labels of union-find and the bit set of strong roots, and the kernels. The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct CannyPlan<'g> {
    gpu: &'g Gpu,
    canny: Canny,
    w: usize,
    h: usize,
    blur: Option<Blur<'g>>,
    map: Buffer<'g, u8>,
    labels: Buffer<'g, u32>,
    strong: Buffer<'g, u32>,
}

impl CannyPlan<'_> {
    /// Queues the edges of the `w x h` frame in `src` into `dst`: the blur (if any), stages 1-3
    /// in one kernel, hysteresis by union-find (a memset and two kernels) and the 0/255 output;
    /// nothing waits on the host.
    pub fn queue(&mut self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<(), OpError> {
        let (gpu, w, h) = (self.gpu, self.w, self.h);
        let src = match &mut self.blur {
            Some(b) => {
                Canny::launch_blur(gpu, src, w, h, &b.weights, b.taps, &mut b.rows, &mut b.out)?;
                &*b.out
            }
            None => src,
        };
        self.canny.launch_gradient_nms(gpu, src, w, h, &mut self.map, &mut self.labels)?;
        Canny::launch_hysteresis(gpu, &self.map, &mut self.labels, &mut self.strong, w, h)?;
        Canny::launch_finish(gpu, &self.map, &self.labels, &self.strong, w * h, dst)
    }

    /// Queues stages 1-3 alone, unblurred: the fused gradient / suppression / threshold kernel
    /// from `src` to the plan's map and starting labels.
    pub fn queue_gradient(&mut self, src: &CudaSlice<u8>) -> Result<(), OpError> {
        self.canny.launch_gradient_nms(self.gpu, src, self.w, self.h, &mut self.map, &mut self.labels)
    }
}
