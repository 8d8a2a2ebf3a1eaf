//! `radon` on the GPU: its device plan, the two kernels of kernels-common/radon.cu.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::{Radon, Tap};
use crate::histogram::check_len;
use crate::{Element, Gpu, OpError};

/// Positions per block: consecutive threads take consecutive positions of one angle, whose taps
/// are neighbours in the frame.
const BLOCK: u32 = 128;

impl Radon {
    /// The output values, as [`Radon::cpu_values`]'s, on the GPU.
    pub(super) fn gpu_values<T: Tap + Element>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        unit: f64,
    ) -> Result<Vec<f32>, OpError> {
        let (angles, n) = self.out_size();
        let src = gpu.upload::<T>("radon.in", samples)?;
        let mut dst = gpu.buffer::<f32>("radon.out", angles * n)?;
        self.plan_with_unit::<T>(gpu, unit)?.queue(&src, &mut dst)?;
        Ok(gpu.download_vec(&dst, angles * n)?)
    }

    /// The device plan of this transform for samples divided by their type's unit ([`Tap::UNIT`]):
    /// the bordered copy's buffer and the angles' table, uploaded here.
    pub fn plan<'g, T: Tap + Element>(&self, gpu: &'g Gpu) -> Result<RadonPlan<'g, T>, OpError> {
        self.plan_with_unit(gpu, T::UNIT)
    }

    /// [`Radon::plan`] for samples divided by `unit` ([`Radon::unit`]).
    fn plan_with_unit<'g, T: Tap + Element>(
        &self,
        gpu: &'g Gpu,
        unit: f64,
    ) -> Result<RadonPlan<'g, T>, OpError> {
        let s = &self.square;
        let bordered = gpu.buffer::<T>("radon.bordered", (s.width + 2) * (s.height + 2))?;
        let table: Vec<i64> = self.trig.iter().flat_map(|t| [t.cos, t.sin]).collect();
        let trig = gpu.upload::<i64>("radon.trig", &table)?;
        Ok(RadonPlan { gpu, radon: self.clone(), bordered, trig, scale: Radon::scale(unit) })
    }
}

/// The device plan of `radon`: the border kernel, then every angle in one launch. The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct RadonPlan<'g, T: Element> {
    gpu: &'g Gpu,
    radon: Radon,
    bordered: Buffer<'g, T>,
    trig: Buffer<'g, i64>,
    /// [`Radon::scale`] of the samples' unit.
    scale: f64,
}

impl<T: Tap + Element> RadonPlan<'_, T> {
    /// Queues the transform of the `width x height` frame in `src` into `dst`: N rows of one value
    /// per angle.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<f32>) -> Result<(), OpError> {
        let r = &self.radon;
        let s = r.square;
        let (angles, n) = r.out_size();
        check_len("radon input", src.len(), r.width * r.height)?;
        check_len("radon output", dst.len(), angles * n)?;
        // Every size below is under 2^25 (MAX_SIDE, and a frame's side is at most the square's
        // for the part read), so u32 holds it.
        let (w, x0, y0, sw, sh) = (r.width as u32, s.x0 as u32, s.y0 as u32, s.width as u32, s.height as u32);
        let pitch = sw + 2;
        let cfg = LaunchConfig {
            grid_dim: (pitch.div_ceil(256), (sh + 2).min(65535), 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let name = format!("radon_border_{}", T::KERNEL_SUFFIX);
        // SAFETY: radon_border_*(in, w, x0, y0, sw, sh, out) in radon.cu; `src` holds the w x h
        // frame (checked above), of which the sw x sh part at (x0, y0) is read (Square::new keeps
        // it inside), and `bordered` (sw + 2) x (sh + 2) samples (allocated so in `plan`).
        unsafe {
            launch!(self.gpu, kernels::RADON, name, cfg; src, &w, &x0, &y0, &sw, &sh, &mut *self.bordered)
        }?;
        let (a, nn) = (angles as u32, n as u32);
        let (center, pad_x, pad_y) = (s.center as u32, s.pad_x as u32, s.pad_y as u32);
        let scale = self.scale;
        let cfg = LaunchConfig {
            grid_dim: (nn.div_ceil(BLOCK), a.min(65535), 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let name = format!("radon_{}", T::KERNEL_SUFFIX);
        // SAFETY: radon_*(b, sw, sh, trig, angles, n, center, pad_x, pad_y, scale, out) in
        // radon.cu; `bordered` holds (sw + 2) x (sh + 2) samples, written by the kernel above, and
        // every tap the kernel reads is inside it (row_range); `trig` holds 2 x angles i64s, `dst`
        // n x angles floats (checked above).
        unsafe {
            launch!(self.gpu, kernels::RADON, name, cfg;
                &*self.bordered, &sw, &sh, &*self.trig, &a, &nn, &center, &pad_x, &pad_y, &scale, dst)
        }?;
        Ok(())
    }
}
