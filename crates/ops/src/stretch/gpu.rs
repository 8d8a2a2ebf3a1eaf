//! The device side of `stretch`: the look-up of integer samples in a table made on the host
//! ([`LutPlan`]), the curve of float samples computed per sample ([`queue_curve`]), and the
//! cuts of `--saturate` on float samples counted on the device ([`float_cuts`]), all in
//! stretch.cu.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use super::curve::{Curve, LN2, LN_TERMS, SQRT2};
use super::cuts::{Ranks, BUCKETS};
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

/// The cuts of `--saturate percent` of the first `n` float samples of `src`: [`super::cuts::of_floats`]
/// of them all, its two passes on the device. `key_counts_high` counts the keys' high 16 bits;
/// the host finds the bucket of each rank in those counts ([`Ranks`]); `key_counts_low` counts the
/// low 16 bits of the keys in those two buckets, where the host finds each rank's key. The counts
/// are whole numbers, so the cuts are the CPU's. `None` for no finite sample.
pub fn float_cuts(
    gpu: &Gpu,
    src: &CudaSlice<f32>,
    n: usize,
    percent: f64,
) -> Result<Option<(f32, f32)>, OpError> {
    check_len("stretch input", src.len(), n)?;
    let count = n as u64;
    let cover = histopipe_gpu::launch::cover(n.max(1), 256);
    let mut high = gpu.buffer::<u64>("stretch.keys", BUCKETS)?;
    gpu.stream().memset_zeros(&mut high.slice_mut(..BUCKETS))?;
    if n > 0 {
        // SAFETY: key_counts_high(in, n, high) in stretch.cu; `src` holds `n` samples, `high`
        // BUCKETS counts (a key's high 16 bits index it).
        unsafe { launch!(gpu, kernels::STRETCH, "key_counts_high", cover; src, &count, &mut *high) }?;
    }
    let Some(ranks) = Ranks::of_high(&gpu.download_vec(&high, BUCKETS)?, percent) else {
        return Ok(None);
    };
    let mut lo_low = gpu.buffer::<u64>("stretch.keys.lo", BUCKETS)?;
    let mut hi_low = gpu.buffer::<u64>("stretch.keys.hi", BUCKETS)?;
    gpu.stream().memset_zeros(&mut lo_low.slice_mut(..BUCKETS))?;
    gpu.stream().memset_zeros(&mut hi_low.slice_mut(..BUCKETS))?;
    let (lo_high, hi_high) = (ranks.lo.0, ranks.hi.0);
    // SAFETY: key_counts_low(in, n, lo_high, hi_high, lo_low, hi_low) in stretch.cu; `src` holds
    // `n` samples (n > 0: a rank was found), `lo_low` and `hi_low` BUCKETS counts each (a key's
    // low 16 bits index them).
    unsafe {
        launch!(gpu, kernels::STRETCH, "key_counts_low", cover;
            src, &count, &lo_high, &hi_high, &mut *lo_low, &mut *hi_low)
    }?;
    let lo_low = gpu.download_vec(&lo_low, BUCKETS)?;
    let hi_low = gpu.download_vec(&hi_low, BUCKETS)?;
    match ranks.cuts(&lo_low, &hi_low) {
        Some(cuts) => Ok(Some(cuts)),
        None => {
            Err(OpError::gpu("the device's counts of the keys do not hold the ranks its first counts found"))
        }
    }
}
