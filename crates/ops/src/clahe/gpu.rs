//! `clahe` on the GPU: its device plan, the three kernels of kernels-common/clahe.cu (histograms,
//! tables, interpolation).

use histopipe_frame::Samples;
use histopipe_gpu::cudarc::driver::{CudaSlice, DeviceRepr};
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::{bins_of, Clahe, Tiling};
use crate::histogram::check_len;
use crate::{Gpu, OpError, Sample};

/// Pixels one block of the GPU's histogram kernel counts, about (64 per thread): a tile of a large
/// frame is shared by several blocks, so a grid of 8 x 8 tiles still fills the GPU.
const HISTOGRAM_PIXELS_PER_BLOCK: usize = 16 * 1024;
const HISTOGRAM_THREADS: u32 = 256;
/// Rows of the frame each block of the interpolation kernel maps, about.
const ROWS_PER_MAP_BLOCK: usize = 4;

// SAFETY: plain 4-byte fields, `repr(C)`: the kernels read it as their `struct Tiling`.
unsafe impl DeviceRepr for Tiling {}

impl Clahe {
    pub(super) fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        mask: Option<&[u8]>,
        width: usize,
        height: usize,
    ) -> Result<Samples<T>, OpError> {
        if samples.is_empty() {
            return Ok(Vec::new().into());
        }
        let mut plan = ClahePlan::<T>::new(gpu, self.tiling(width, height, bins_of::<T>())?)?;
        let n = samples.len();
        let src = gpu.upload("clahe.in", samples)?;
        let mut dst = gpu.buffer::<T>("clahe.out", n)?;
        match mask {
            Some(mask) => {
                let mask = gpu.upload("clahe.mask", mask)?;
                plan.queue_masked(&src, &mask, self.clip, &mut dst)?;
            }
            None => plan.queue(&src, &mut dst)?,
        }
        Ok(gpu.download_samples(&dst, n)?)
    }
}

/// The device plan of `clahe` for one tiling: the tiles' counts and tables as scratch, and the
/// three kernels. The one GPU sequence that `Op::gpu` and the benchmark run.
pub struct ClahePlan<'g, T: Sample> {
    gpu: &'g Gpu,
    tiling: Tiling,
    counts: Buffer<'g, u32>,
    tables: Buffer<'g, T>,
}

impl<'g, T: Sample> ClahePlan<'g, T> {
    pub fn new(gpu: &'g Gpu, tiling: Tiling) -> Result<ClahePlan<'g, T>, OpError> {
        if tiling.bins != bins_of::<T>() {
            return Err(OpError::invalid(format!(
                "a tiling of {} bins for {}-bit samples",
                tiling.bins,
                8 * std::mem::size_of::<T>()
            )));
        }
        Ok(ClahePlan {
            gpu,
            tiling,
            counts: gpu.buffer::<u32>("clahe.counts", tiling.table_len())?,
            tables: gpu.buffer::<T>("clahe.tables", tiling.table_len())?,
        })
    }

    /// Queues the whole of CLAHE: `src` (width x height samples) into `dst`.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        self.tiling.queue(self.gpu, src, None, &mut self.counts, &mut self.tables, dst)
    }

    /// [`ClahePlan::queue`] counting only the pixels whose byte in `mask` (one a pixel) is
    /// non-zero, each tile clipped at OpenCV's clip limit `clip` of its counted pixels
    /// ([`Masked`](crate::mask::Masked)`<Clahe>`).
    pub fn queue_masked(
        &mut self,
        src: &CudaSlice<T>,
        mask: &CudaSlice<u8>,
        clip: f64,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        self.tiling.queue(self.gpu, src, Some((mask, clip)), &mut self.counts, &mut self.tables, dst)
    }
}

impl Tiling {
    /// Queues the whole of CLAHE on the GPU: `src` (width x height samples) into `dst`, with
    /// `counts` and `tables` ([`Tiling::table_len`] entries each) as scratch ([`ClahePlan`]).
    fn queue<T: Sample>(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<T>,
        mask: Option<(&CudaSlice<u8>, f64)>,
        counts: &mut CudaSlice<u32>,
        tables: &mut CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        let n = self.width as usize * self.height as usize;
        check_len("clahe input", src.len(), n)?;
        check_len("clahe output", dst.len(), n)?;
        check_len("clahe counts", counts.len(), self.table_len())?;
        check_len("clahe tables", tables.len(), self.table_len())?;
        if let Some((mask, _)) = mask {
            check_len("clahe mask", mask.len(), n)?;
        }
        let suffix = T::KERNEL_SUFFIX;
        gpu.stream().memset_zeros(&mut counts.slice_mut(..self.table_len()))?;

        let (tw, th) = (self.tile_w as usize, self.tile_h as usize);
        let rows_per_slice = HISTOGRAM_PIXELS_PER_BLOCK.div_ceil(tw).clamp(1, th);
        let slices = th.div_ceil(rows_per_slice);
        let blocks = self.tiles() * slices;
        if blocks > i32::MAX as usize {
            return Err(OpError::invalid(format!("{blocks} histogram blocks: the frame is too large")));
        }
        let (rows_per_slice, slices) = (rows_per_slice as u32, slices as u32);
        let cfg = launch::linear(blocks as u32, HISTOGRAM_THREADS);
        let histograms = format!("histograms_{suffix}");
        // A null pointer for no mask.
        let null = 0u64;
        // SAFETY: histograms_*(in, mask, tiling, rows_per_slice, slices, counts) in clahe.cu; the
        // lengths are checked above, the mask's too (n bytes) where there is one.
        unsafe {
            match mask {
                Some((mask, _)) => launch!(gpu, kernels::CLAHE, histograms, cfg;
                    src, mask, self, &rows_per_slice, &slices, &mut *counts),
                None => launch!(gpu, kernels::CLAHE, histograms, cfg;
                    src, &null, self, &rows_per_slice, &slices, &mut *counts),
            }
        }?;

        // One thread per bin for 8-bit tables, 64 rounds of 1024 for 16-bit ones.
        let cfg = launch::linear(self.tiles() as u32, self.bins.min(1024));
        let (masked, clip) = match mask {
            Some((_, clip)) => (1u32, clip),
            None => (0u32, 0.0f64),
        };
        // SAFETY: tables_*(counts, tiling, masked, clip, tables) in clahe.cu; the lengths are
        // checked above.
        unsafe {
            launch!(gpu, kernels::CLAHE, format!("tables_{suffix}"), cfg;
                &*counts, self, &masked, &clip, &mut *tables)
        }?;

        let h = self.height as usize;
        let cfg = LaunchConfig {
            grid_dim: (
                (self.width as usize).div_ceil(256) as u32,
                h.div_ceil(ROWS_PER_MAP_BLOCK).min(65535) as u32,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: interpolate_*(in, tiling, tables, out) in clahe.cu; the lengths are checked
        // above.
        unsafe {
            launch!(gpu, kernels::CLAHE, format!("interpolate_{suffix}"), cfg; src, self, &*tables, dst)
        }?;
        Ok(())
    }
}
