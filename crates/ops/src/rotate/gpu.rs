//! `rotate` on the GPU: its device plan, one kernel of kernels-common/rotate.cu.

use histopipe_frame::Samples;
use histopipe_gpu::cudarc::driver::sys::CUdevice_attribute;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, LaunchConfig};

use super::{Interpolation, Rotate, Turn};
use crate::{Element, Gpu, OpError};

impl Rotate {
    /// The output's samples: the input mirrored first where [`Rotate::flip`] says (flip.rs's
    /// kernel, into a buffer of its own), then turned (not at all for no turn).
    pub(super) fn gpu_samples<T: Element>(&self, gpu: &Gpu, input: &[T]) -> Result<Samples<T>, OpError> {
        let n = self.out_width * self.out_height;
        let mut src = gpu.upload::<T>("rotate.in", input)?;
        if let Some(flip) = self.flip {
            let mut flipped = gpu.buffer::<T>("rotate.flipped", self.width * self.height)?;
            flip.queue(gpu, self.width, self.height, &src, &mut flipped)?;
            if self.turn == Turn::Quarter(0) {
                return Ok(gpu.download_samples(&flipped, n)?);
            }
            src = flipped;
        }
        let mut dst = gpu.buffer::<T>("rotate.out", n)?;
        self.plan(gpu).queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(out)
    }

    /// The device plan of this turn.
    pub fn plan<'g>(&self, gpu: &'g Gpu) -> RotatePlan<'g> {
        let sms = gpu
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_or(132, |n| n as u32);
        let rows = tile_rows(self.out_width as u32, self.out_height as u32, sms);
        RotatePlan { gpu, rotate: *self, rows }
    }
}

/// Blocks per SM that the general kernels' grid should hold: the tallest tile that keeps this
/// many is taken (see [`tile_rows`]).
const BLOCKS_PER_SM: u64 = 8;

/// Rows per output tile of the general (affine) kernels for an `ow x oh` output on a GPU of `sms`
/// SMs: 32 (`rotate_{nearest,bilinear}_*`), 16 (`_r16`) or 8 (`_r8`), the largest whose grid of
/// 64-column tiles, `ceil(ow / 64) * ceil(oh / rows)` blocks, holds at least 8 blocks per SM;
/// else 8. A tile of 64 x rows is made by 256 threads, rows / 4 pixels each: on small frames,
/// fewer rows give more blocks to fill the GPU and shorter chains of loads per thread. Measured on
/// an H200 (histopipe-bench, each height forced in turn): 640x651 bilinear took 8.1, 7.4 and 7.3
/// us in tiles of 32, 16 and 8 rows, nearest 5.8, 6.1 and 5.7; from 2560x1707 up, 32 rows were the
/// fastest for both (2560x1707 bilinear 23.5, 24.2 and 26.1 us).
pub fn tile_rows(ow: u32, oh: u32, sms: u32) -> u32 {
    let columns = u64::from(ow.div_ceil(64));
    let wanted = BLOCKS_PER_SM * u64::from(sms);
    [32, 16, 8].into_iter().find(|&rows| columns * u64::from(oh.div_ceil(rows)) >= wanted).unwrap_or(8)
}

/// The device plan of `rotate`: one kernel (quarter turns, or the general one), no scratch. The
/// one GPU sequence that `Op::gpu` and the benchmark run.
pub struct RotatePlan<'g> {
    gpu: &'g Gpu,
    rotate: Rotate,
    /// Rows per tile of the general kernels ([`tile_rows`]); quarter turns have their own tiles.
    rows: u32,
}

impl RotatePlan<'_> {
    /// The rows per output tile of the general kernels (8, 16 or 32) for this turn's output on
    /// this GPU; unused by quarter turns.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Queues the turn of the `width x height` input in `src` into `dst` (`out_width x
    /// out_height`).
    pub fn queue<T: Element>(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        let r = &self.rotate;
        if r.out_width == 0 || r.out_height == 0 {
            return Ok(());
        }
        // The fill as the sample's bits (an integer's value, a float's IEEE bits).
        let (w, h, fill) = (r.width as u32, r.height as u32, r.fill.bits());
        let (ow, oh) = (r.out_width as u32, r.out_height as u32);
        match r.turn {
            Turn::Quarter(q) => {
                // One block of 32 x 8 threads per 32 x 32 output tile (QUARTER_TILE in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (ow.div_ceil(32), oh.div_ceil(32).min(65535), 1),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                };
                let name = format!("rotate_quarter_{}", T::KERNEL_SUFFIX);
                let q = q as u32 & 3;
                // SAFETY: rotate_quarter_*(in, w, h, out, ow, oh, q, fill) in rotate.cu; `src`
                // holds the w x h input, `dst` the ow x oh output.
                unsafe {
                    launch!(self.gpu, kernels::ROTATE, name, cfg; src, &w, &h, dst, &ow, &oh, &q, &fill)
                }?;
            }
            Turn::Angle { .. } => {
                // One block of 256 threads per 64 x rows output tile (ROTATE_TILE_W and ROWS in
                // rotate.cu), the kernel of those rows; it loops over tile rows beyond the grid's
                // 65535.
                let rows = self.rows;
                let cfg = LaunchConfig {
                    grid_dim: (ow.div_ceil(64), oh.div_ceil(rows).min(65535), 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let kind = match r.interpolation {
                    Interpolation::Nearest => "nearest",
                    Interpolation::Bilinear => "bilinear",
                };
                let tile = match rows {
                    32 => "",
                    16 => "_r16",
                    _ => "_r8",
                };
                let name = format!("rotate_{kind}_{}{tile}", T::KERNEL_SUFFIX);
                let m = r.new_to_old();
                let maxval = r.maxval as u32;
                // SAFETY: rotate_{nearest,bilinear}_*[_r16|_r8](in, w, h, out, ow, oh, a..f, fill,
                // maxval) in rotate.cu; `src` holds the w x h input, `dst` the ow x oh output; the
                // grid's rows of blocks are of the kernel's tile rows (any count covers the frame).
                unsafe {
                    launch!(self.gpu, kernels::ROTATE, name, cfg;
                        src, &w, &h, dst, &ow, &oh, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &fill, &maxval)
                }?;
            }
        }
        Ok(())
    }
}
