//! `iradon` on the GPU: its device plan, the kernel of kernels-common/iradon.cu. The filtered
//! sinogram is made on the host ([`Iradon::filtered`], the same for both backends) and uploaded.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use super::Iradon;
use crate::histogram::check_len;
use crate::{Gpu, OpError};

/// Output columns per block (consecutive threads, consecutive pixels of a row: their reads of a
/// column are neighbours), and rows per block.
const BLOCK_X: u32 = 32;
const BLOCK_Y: u32 = 4;

impl Iradon {
    /// The output values, as [`Iradon::cpu_values`]'s, on the GPU.
    pub(super) fn gpu_values(&self, gpu: &Gpu, filtered: &[f64]) -> Result<Vec<f32>, OpError> {
        let n = self.side * self.side;
        let src = gpu.upload::<f64>("iradon.filtered", filtered)?;
        let mut dst = gpu.buffer::<f32>("iradon.out", n)?;
        self.plan(gpu)?.queue(&src, &mut dst)?;
        Ok(gpu.download_vec(&dst, n)?)
    }

    /// The device plan of this reconstruction: the angles' table, uploaded here.
    pub fn plan<'g>(&self, gpu: &'g Gpu) -> Result<IradonPlan<'g>, OpError> {
        let table: Vec<f64> = self.trig.iter().flatten().copied().collect();
        let trig = gpu.upload::<f64>("iradon.trig", &table)?;
        Ok(IradonPlan { gpu, iradon: self.clone(), trig })
    }
}

/// The device plan of `iradon`: the back-projection of every pixel in one launch. The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct IradonPlan<'g> {
    gpu: &'g Gpu,
    iradon: Iradon,
    trig: Buffer<'g, f64>,
}

impl IradonPlan<'_> {
    /// Queues the back-projection of the filtered sinogram in `filtered` (angles x S, angle-major)
    /// into `dst`, the n x n frame.
    pub fn queue(&mut self, filtered: &CudaSlice<f64>, dst: &mut CudaSlice<f32>) -> Result<(), OpError> {
        let r = &self.iradon;
        let (angles, s, n) = (r.trig.len(), r.padded, r.side);
        check_len("iradon input", filtered.len(), angles * s)?;
        check_len("iradon output", dst.len(), n * n)?;
        // Every size is at most MAX_SIDE (2^24) but the angles, which are a frame's width: u32.
        let (a, s, nn) = (angles as u32, s as u32, n as u32);
        let circle = r.circle as u32;
        let scale = r.scale();
        let cfg = LaunchConfig {
            grid_dim: (nn.div_ceil(BLOCK_X), nn.div_ceil(BLOCK_Y).min(65535), 1),
            block_dim: (BLOCK_X, BLOCK_Y, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: iradon(filtered, s, trig, angles, n, circle, scale, out) in iradon.cu; `filtered`
        // holds angles x s doubles and `dst` n x n floats (checked above), `trig` 2 x angles
        // doubles (uploaded so in `plan`); every column index the kernel reads is in [0, s).
        unsafe {
            launch!(self.gpu, kernels::IRADON, "iradon", cfg;
                filtered, &s, &*self.trig, &a, &nn, &circle, &scale, dst)
        }?;
        Ok(())
    }
}
