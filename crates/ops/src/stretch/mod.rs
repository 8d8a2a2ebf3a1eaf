//! `stretch`: contrast stretch and depth conversion, as ImageJ's "Enhance Contrast", netpbm's
//! `pnmnorm` and scikit-image's `rescale_intensity`: every sample v through a [`Curve`],
//! out = rint(f(t) * maxout) with t = (v - lo) / (hi - lo) clamped to [0, 1] and f a display
//! scale ([`Scale`]); NaN gives 0. The input range is given, or found by [`cuts`] (order
//! statistics) or [`zscale`] (astropy's `ZScaleInterval`), on the CPU for both backends; except
//! `--saturate` over a whole float frame, whose cuts [`Saturated`] counts on the GPU where the
//! stretch runs there.
//!
//! - Integer frames: the curve's levels of 0..=maxval are a look-up table made on the host
//!   ([`Curve::table`]), shared by both backends; each sample is looked up (CPU, or the
//!   `map_*` kernels of stretch.cu).
//! - Float frames: each sample through the curve itself, in double precision (CPU, or the
//!   `curve_f32_*` kernels, which do the same correctly rounded operations in the same order).
//!
//! The output is 8-bit for `maxout` <= 255, 16-bit otherwise, with the frame's channels; or
//! float32 over a range ([`StretchTo`], `--out`: scikit-image's `rescale_intensity` arithmetic).

mod curve;
pub mod cuts;
mod gpu;
mod to_float;
pub mod zscale;

pub use curve::{ln, Curve, Scale, ASINH_B, LOG_A};
pub use gpu::queue_to_float;
pub use gpu::{float_cuts, queue_curve, LutPlan};
pub use to_float::StretchTo;
pub use zscale::ZScale;

use std::mem::MaybeUninit;

use histopipe_frame::{Frame, Pixels};
use histopipe_gpu::cudarc::driver::CudaSlice;

use crate::{parallel, Gpu, Op, OpError, Sample};

/// Every sample of a frame through one [`Curve`] (every channel alike: a tool with several
/// curves runs one a channel).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stretch {
    pub curve: Curve,
}

/// Fewest samples for the CPU's map to be split over threads, and in a part once it is: as
/// `equalize`'s map (at 2^20 and 2^16, 1920x1080 stayed on one thread, 2.5 to 2.6 ms on 16
/// threads against 0.33 to 0.36 split; 640x651, 0.65 to 0.87 against 0.11).
const MIN_SPLIT: usize = 1 << 17;
const MIN_PART: usize = 1 << 13;

/// `map_part(src, out)` over the samples in parts on the pool's threads: it writes every slot of
/// `out` (as long as `src`) from `src`.
fn map_parts<I: Copy + Sync, O: Copy + Send>(
    samples: &[I],
    map_part: impl Fn(&[I], &mut [MaybeUninit<O>]) + Sync,
) -> Vec<O> {
    let n = samples.len();
    let part = n.div_ceil(parallel::parts_split_from(n, parallel::split_from(MIN_SPLIT), MIN_PART));
    let map_part =
        |first: usize, out: &mut [MaybeUninit<O>]| map_part(&samples[first..first + out.len()], out);
    // SAFETY: `map_part` writes every slot of its part.
    unsafe { parallel::output_in_parts(n, part, map_part) }
}

/// Writes the level of each float sample of `src` to `out` (as long), compiled for AVX2 where
/// the CPU has it: the compiler then maps 4 doubles at a time and rounds with `vroundpd`, where
/// the build's baseline (SSE2) calls `rint` a sample; a loop for each scale, whose match is then
/// decided outside it. The same IEEE operations either way (Rust never fuses them), so the same
/// levels. On one core of the 2-core build machine, a 4K float frame's linear curve took 12 ms
/// (was 57 ms).
fn float_levels(curve: Curve, norm: f64, src: &[f32], out: &mut [MaybeUninit<u16>]) {
    #[inline(always)]
    fn each(curve: Curve, norm: f64, src: &[f32], out: &mut [MaybeUninit<u16>]) {
        for (slot, &v) in out.iter_mut().zip(src) {
            slot.write(curve.level_with(v as f64, norm));
        }
    }
    #[inline(always)]
    fn by_scale(curve: Curve, norm: f64, src: &[f32], out: &mut [MaybeUninit<u16>]) {
        match curve.scale {
            Scale::Linear => each(Curve { scale: Scale::Linear, ..curve }, norm, src, out),
            Scale::Sqrt => each(Curve { scale: Scale::Sqrt, ..curve }, norm, src, out),
            Scale::Log | Scale::Asinh => each(curve, norm, src, out),
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        /// # Safety
        /// The CPU has AVX2 (an `unsafe fn`: safe functions with target features need Rust 1.86,
        /// and the workspace builds with 1.85).
        #[target_feature(enable = "avx2")]
        unsafe fn wide(curve: Curve, norm: f64, src: &[f32], out: &mut [MaybeUninit<u16>]) {
            by_scale(curve, norm, src, out)
        }
        // SAFETY: the CPU has AVX2.
        return unsafe { wide(curve, norm, src, out) };
    }
    by_scale(curve, norm, src, out)
}

impl Stretch {
    /// The output's samples, 8-bit for a maxout up to 255.
    fn pixels(&self, levels: Vec<u16>) -> Pixels {
        if self.curve.maxout <= 255 {
            Pixels::U8(levels.into_iter().map(|l| l as u8).collect::<Vec<_>>().into())
        } else {
            Pixels::U16(levels.into())
        }
    }

    /// The look-up table of an integer frame of `maxval`, indexed by min(sample, maxval).
    fn table<O: Sample>(&self, maxval: u16) -> Vec<O> {
        self.curve.table(maxval).into_iter().map(O::from_u16).collect()
    }

    fn cpu_lut<I: Sample, O: Sample>(&self, samples: &[I], maxval: u16) -> Vec<O> {
        let lut = self.table::<O>(maxval);
        let last = maxval as usize;
        map_parts(samples, |src: &[I], out: &mut [MaybeUninit<O>]| {
            for (slot, &v) in out.iter_mut().zip(src) {
                slot.write(lut[(v.into() as usize).min(last)]);
            }
        })
    }

    fn cpu_integer<I: Sample>(&self, samples: &[I], maxval: u16) -> Pixels {
        if self.curve.maxout <= 255 {
            Pixels::U8(self.cpu_lut::<I, u8>(samples, maxval).into())
        } else {
            Pixels::U16(self.cpu_lut::<I, u16>(samples, maxval).into())
        }
    }

    /// The levels of float samples ([`float_levels`]).
    fn cpu_float(&self, samples: &[f32]) -> Vec<u16> {
        let (curve, norm) = (self.curve, self.curve.norm());
        map_parts(samples, |src, out| float_levels(curve, norm, src, out))
    }

    fn gpu_integer<I: Sample, O: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[I],
        maxval: u16,
    ) -> Result<Pixels, OpError> {
        let n = samples.len();
        let src = gpu.upload("stretch.in", samples)?;
        let mut dst = gpu.buffer::<O>("stretch.out", n)?;
        LutPlan::new(gpu, &self.table::<O>(maxval), n)?.queue(&src, &mut dst)?;
        Ok(O::into_pixels(gpu.download_samples(&dst, n)?))
    }

    /// The levels of the first `n` float samples of `src`, on the device, as `O`: 8-bit for a
    /// maxout up to 255.
    fn gpu_float(&self, gpu: &Gpu, src: &CudaSlice<f32>, n: usize) -> Result<Pixels, OpError> {
        fn levels<O: Sample>(
            curve: &Curve,
            gpu: &Gpu,
            src: &CudaSlice<f32>,
            n: usize,
        ) -> Result<Pixels, OpError> {
            let mut dst = gpu.buffer::<O>("stretch.out", n)?;
            queue_curve(gpu, curve, src, n, &mut dst)?;
            Ok(O::into_pixels(gpu.download_samples(&dst, n)?))
        }
        if self.curve.maxout <= 255 {
            levels::<u8>(&self.curve, gpu, src, n)
        } else {
            levels::<u16>(&self.curve, gpu, src, n)
        }
    }

    fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        frame.derive_with(frame.width, frame.height, frame.channels, self.curve.maxout, pixels)
    }
}

impl Op for Stretch {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let pixels = match &frame.pixels {
            Pixels::U8(v) => self.cpu_integer(v, frame.maxval),
            Pixels::U16(v) => self.cpu_integer(v, frame.maxval),
            Pixels::F32(v) => self.pixels(self.cpu_float(v)),
        };
        Ok(self.output(frame, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let eight = self.curve.maxout <= 255;
        let pixels = match (&frame.pixels, eight) {
            (Pixels::U8(v), true) => self.gpu_integer::<u8, u8>(gpu, v, frame.maxval)?,
            (Pixels::U8(v), false) => self.gpu_integer::<u8, u16>(gpu, v, frame.maxval)?,
            (Pixels::U16(v), true) => self.gpu_integer::<u16, u8>(gpu, v, frame.maxval)?,
            (Pixels::U16(v), false) => self.gpu_integer::<u16, u16>(gpu, v, frame.maxval)?,
            (Pixels::F32(v), _) => self.gpu_float(gpu, &*gpu.upload("stretch.in", v)?, v.len())?,
        };
        Ok(self.output(frame, pixels))
    }
}

/// `--saturate percent` over every sample of a frame, and the [`Stretch`] of every sample through
/// the curve (`scale`, `maxout`) from those cuts ([`cuts::of_frame`] of all its channels; no
/// sample to count, as no finite float: lo = hi = 0). One operation, so that on the GPU a float
/// frame is uploaded once and its cuts counted there ([`float_cuts`]), the same cuts as the
/// CPU's; an integer frame's come from its histogram on the CPU, for both backends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Saturated {
    pub percent: f64,
    pub scale: Scale,
    pub maxout: u16,
}

impl Saturated {
    fn stretch(&self, (lo, hi): (f64, f64)) -> Stretch {
        Stretch { curve: Curve { lo, hi, scale: self.scale, maxout: self.maxout } }
    }

    fn on_cpu(&self, frame: &Frame) -> Result<Stretch, OpError> {
        let every: Vec<usize> = (0..frame.channels.count()).collect();
        Ok(self.stretch(cuts::of_frame(frame, &every, self.percent, None)?.unwrap_or((0.0, 0.0))))
    }
}

impl Op for Saturated {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.on_cpu(frame)?.cpu(frame)
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let Pixels::F32(v) = &frame.pixels else {
            return self.on_cpu(frame)?.gpu(gpu, frame);
        };
        let (src, n) = (gpu.upload("stretch.in", v)?, v.len());
        let cuts = float_cuts(gpu, &src, n, self.percent)?;
        let stretch = self.stretch(cuts.map_or((0.0, 0.0), |(lo, hi)| (lo as f64, hi as f64)));
        let pixels = stretch.gpu_float(gpu, &src, n)?;
        Ok(stretch.output(frame, pixels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(curve: Curve, frame: Frame) -> Frame {
        Stretch { curve }.cpu(&frame).unwrap()
    }

    #[test]
    fn sixteen_bit_to_eight_bit_by_the_table() {
        let curve = Curve { lo: 100.0, hi: 1100.0, scale: Scale::Linear, maxout: 255 };
        let out = stretch(curve, Frame::new(4, 1, 4095, Pixels::U16(vec![0, 100, 600, 4095].into())));
        assert_eq!((out.maxval, out.pixels), (255, Pixels::U8(vec![0, 0, 128, 255].into())));
    }

    #[test]
    fn floats_map_each_sample_and_nan_is_0() {
        let curve = Curve { lo: -1.0, hi: 1.0, scale: Scale::Linear, maxout: 65535 };
        let f = Frame::new(5, 1, 1, Pixels::F32(vec![f32::NAN, -1.0, 0.0, 1.0, f32::INFINITY].into()));
        assert_eq!(stretch(curve, f).pixels, Pixels::U16(vec![0, 0, 32768, 65535, 65535].into()));
    }

    /// Split over any number of threads, the output is the one thread's.
    #[test]
    fn every_split_stretches_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(29);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            let f = parallel::testing::frame(&mut rng, w, h, 1076);
            let curve = Curve { lo: 10.0, hi: 900.0, scale: Scale::Asinh, maxout: 255 };
            parallel::testing::same_on_each_pool(&format!("{w}x{h}"), || Stretch { curve }.cpu(&f).unwrap());
        }
    }
}
