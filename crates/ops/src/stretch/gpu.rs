//! The device side of `stretch`: the look-up of integer samples in a table made on the host
//! ([`LutPlan`]), and the curve of float samples computed per sample ([`queue_curve`]), both in
//! stretch.cu.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use super::curve::{Curve, LN2, LN_TERMS, SQRT2};
use super::to_float::{Float32, StretchTo};
use crate::histogram::check_len;
use crate::{Element, Gpu, OpError, Sample};

/// The map of `n` integer samples of type `I` through a table of `O` levels, made on the host
/// ([`Curve::table`]) and uploaded once: the one GPU sequence `Op::gpu` and the benchmark run.
pub struct LutPlan<'g, O: Element> {
    gpu: &'g Gpu,
    lut: Buffer<'g, O>,
    levels: u32,
    n: usize,
}

impl<'g, O: Element> LutPlan<'g, O> {
    /// The plan for frames of `n` samples, with `table` (one entry a level, 0..=maxval).
    pub fn new(gpu: &'g Gpu, table: &[O], n: usize) -> Result<LutPlan<'g, O>, OpError> {
        if table.is_empty() {
            return Err(OpError::invalid("a look-up table of no levels"));
        }
        Ok(LutPlan { gpu, lut: gpu.upload("stretch.lut", table)?, levels: table.len() as u32, n })
    }

    /// Queues `dst[i] = lut[min(src[i], levels - 1)]` for the `n` samples of `src`.
    pub fn queue<I: Sample>(&mut self, src: &CudaSlice<I>, dst: &mut CudaSlice<O>) -> Result<(), OpError> {
        let n = self.n;
        check_len("stretch input", src.len(), n)?;
        check_len("stretch output", dst.len(), n)?;
        if n == 0 {
            return Ok(());
        }
        // Each thread maps 16 input bytes per step.
        let chunks = n.div_ceil(16 / std::mem::size_of::<I>());
        let name = format!("map_{}_{}", I::KERNEL_SUFFIX, O::KERNEL_SUFFIX);
        let (count, levels) = (n as u64, self.levels);
        // SAFETY: map_*_*(in, n, lut, levels, out) in stretch.cu; `src` and `dst` hold `n`
        // samples, the table `levels` entries (the kernel clamps its index to levels - 1, and an
        // 8-bit input's shared copy takes at most 256 of them).
        unsafe {
            launch!(self.gpu, kernels::STRETCH, name, histopipe_gpu::launch::cover(chunks, 256);
                src, &count, &*self.lut, &levels, dst)
        }?;
        Ok(())
    }
}

/// Queues `dst[i]` = `curve`'s level of float sample `src[i]` for `n` samples: the same double
/// operations as [`Curve::level`], with its constants passed from here.
pub fn queue_curve<O: Sample>(
    gpu: &Gpu,
    curve: &Curve,
    src: &CudaSlice<f32>,
    n: usize,
    dst: &mut CudaSlice<O>,
) -> Result<(), OpError> {
    check_len("stretch input", src.len(), n)?;
    check_len("stretch output", dst.len(), n)?;
    if n == 0 {
        return Ok(());
    }
    let name = format!("curve_f32_{}", O::KERNEL_SUFFIX);
    let (count, kind, param, norm) = (n as u64, curve.scale.code(), curve.scale.param(), curve.norm());
    let (maxout, ln2, sqrt2, terms) = (curve.maxout as f64, LN2, SQRT2, LN_TERMS);
    // SAFETY: curve_f32_*(in, n, lo, hi, kind, param, norm, maxout, ln2, sqrt2, terms, out) in
    // stretch.cu; `src` and `dst` hold `n` samples.
    unsafe {
        launch!(gpu, kernels::STRETCH, name, histopipe_gpu::launch::cover(n, 256);
            src, &count, &curve.lo, &curve.hi, &kind, &param, &norm, &maxout, &ln2, &sqrt2, &terms, dst)
    }?;
    Ok(())
}

/// Queues `dst[i]` = `to`'s float32 value of float sample `src[i]` for `n` samples: on the
/// linear scale scikit-image's float32 arithmetic (`to_float_f32_linear`), on the others the
/// double curve (`to_float_f32_curve`), the operations of [`StretchTo`]'s, in its order.
pub fn queue_to_float(
    gpu: &Gpu,
    to: &StretchTo,
    src: &CudaSlice<f32>,
    n: usize,
    dst: &mut CudaSlice<f32>,
) -> Result<(), OpError> {
    check_len("stretch input", src.len(), n)?;
    check_len("stretch output", dst.len(), n)?;
    if n == 0 {
        return Ok(());
    }
    let count = n as u64;
    let cover = histopipe_gpu::launch::cover(n, 256);
    if to.float32_arithmetic() {
        let k = Float32::of(to);
        let flat = k.flat as u32;
        // SAFETY: to_float_f32_linear(in, n, lo, hi, span, out_span, out_lo, out_hi, flat, out) in
        // stretch.cu; `src` and `dst` hold `n` samples.
        unsafe {
            launch!(gpu, kernels::STRETCH, "to_float_f32_linear", cover;
                src, &count, &k.lo, &k.hi, &k.span, &k.out_span, &k.out_lo, &k.out_hi, &flat, dst)
        }?;
        return Ok(());
    }
    let curve = &to.curve;
    let (kind, param, norm) = (curve.scale.code(), curve.scale.param(), curve.norm());
    let (olo, ohi, ln2, sqrt2, terms) = (to.out.0, to.out.1, LN2, SQRT2, LN_TERMS);
    // SAFETY: to_float_f32_curve(in, n, lo, hi, kind, param, norm, olo, ohi, ln2, sqrt2, terms,
    // out) in stretch.cu; `src` and `dst` hold `n` samples.
    unsafe {
        launch!(gpu, kernels::STRETCH, "to_float_f32_curve", cover;
            src, &count, &curve.lo, &curve.hi, &kind, &param, &norm, &olo, &ohi, &ln2, &sqrt2, &terms, dst)
    }?;
    Ok(())
}
