//! `rotate` on the GPU: its device plan, one kernel of kernels-common/rotate.cu.

use histopipe_frame::Samples;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, LaunchConfig};

use super::{Interpolation, Rotate, Turn};
use crate::{Element, Gpu, OpError};

impl Rotate {
    pub(super) fn gpu_samples<T: Element>(&self, gpu: &Gpu, input: &[T]) -> Result<Samples<T>, OpError> {
        let n = self.out_width * self.out_height;
        let src = gpu.upload::<T>("rotate.in", input)?;
        let mut dst = gpu.buffer::<T>("rotate.out", n)?;
        self.plan(gpu).queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(out)
    }

    /// The device plan of this turn.
    pub fn plan<'g>(&self, gpu: &'g Gpu) -> RotatePlan<'g> {
        RotatePlan { gpu, rotate: *self }
    }
}

/// The device plan of `rotate`: one kernel (quarter turns, or the general one), no scratch. The
/// one GPU sequence that `Op::gpu` and the benchmark run.
pub struct RotatePlan<'g> {
    gpu: &'g Gpu,
    rotate: Rotate,
}

impl RotatePlan<'_> {
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
                // One block of 256 threads per 64 x 32 output tile (TILE_W, TILE_H in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (ow.div_ceil(64), oh.div_ceil(32).min(65535), 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let kind = match r.interpolation {
                    Interpolation::Nearest => "nearest",
                    Interpolation::Bilinear => "bilinear",
                };
                let name = format!("rotate_{kind}_{}", T::KERNEL_SUFFIX);
                let m = r.new_to_old();
                let maxval = r.maxval as u32;
                // SAFETY: rotate_{nearest,bilinear}_*(in, w, h, out, ow, oh, a..f, fill, maxval)
                // in rotate.cu; `src` holds the w x h input, `dst` the ow x oh output.
                unsafe {
                    launch!(self.gpu, kernels::ROTATE, name, cfg;
                        src, &w, &h, dst, &ow, &oh, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &fill, &maxval)
                }?;
            }
        }
        Ok(())
    }
}
