//! `stretch --out A:B`: float32 output over [A, B], as scikit-image's
//! `rescale_intensity(image, in_range=(lo, hi), out_range=(A, B))` computes it (0.26):
//! `x = np.clip(image, lo, hi)`, then `(x - lo) / (hi - lo) * (B - A) + A`, in the image's float
//! type: double for 8- and 16-bit frames (the result rounded to float32 once), float32 for
//! float32 frames (lo, hi - lo, B - A, ... each a double first, rounded to float32 where NumPy
//! casts them, every operation rounded to float32). A flat range (lo = hi) gives
//! `np.clip(lo, A, B)`. The other scales ([`Scale`]): t = (v - lo) / (hi - lo) clamped as
//! [`Curve::t`], f(t) (B - A) + A in double, rounded to float32 (no peer: astropy's stretches).
//! NaN, given or made, is the canonical NaN. The GPU kernels of stretch.cu do the same correctly
//! rounded operations in the same order.

use std::mem::MaybeUninit;

use histopipe_frame::{Frame, Pixels};

use super::curve::{Curve, Scale};
use crate::sample::canonical_nan;
use crate::{Gpu, Op, OpError, Sample};

/// Every sample of a frame through `curve` (its `maxout` unused) onto [out.0, out.1], float32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StretchTo {
    pub curve: Curve,
    /// (A, B) of the output, finite, A below B, B - A finite.
    pub out: (f64, f64),
}

impl StretchTo {
    /// The output value of `v` in double arithmetic (integer samples, and float ones with a
    /// scale other than linear).
    pub fn value(&self, v: f64) -> f32 {
        self.value_with(v, self.curve.norm())
    }

    #[inline(always)]
    pub(crate) fn value_with(&self, v: f64, norm: f64) -> f32 {
        let (lo, hi) = (self.curve.lo, self.curve.hi);
        let (olo, ohi) = self.out;
        if v.is_nan() {
            return f32::NAN;
        }
        if hi > lo {
            let f = self.curve.f(self.curve.t(v), norm);
            (f * (ohi - olo) + olo) as f32
        } else {
            clip(lo, olo, ohi) as f32
        }
    }

    /// The output value of float32 sample `v` on the linear scale: scikit-image's float32
    /// arithmetic.
    #[inline(always)]
    pub fn value32(&self, v: f32) -> f32 {
        let k = Float32::of(self);
        k.value(v)
    }

    /// The levels of the integer values 0..=maxval: the look-up table of an integer channel.
    pub fn table(&self, maxval: u16) -> Vec<f32> {
        let norm = self.curve.norm();
        (0..=maxval).map(|v| self.value_with(v as f64, norm)).collect()
    }

    /// Whether float32 samples take scikit-image's float32 arithmetic (the linear scale).
    pub(crate) fn float32_arithmetic(&self) -> bool {
        self.curve.scale == Scale::Linear
    }

    /// Each float sample's value, in parts on the pool's threads ([`super::map_parts`]).
    fn cpu_float(&self, v: &[f32]) -> Vec<f32> {
        if self.float32_arithmetic() {
            let k = Float32::of(self);
            super::map_parts(v, |src: &[f32], out: &mut [MaybeUninit<f32>]| k.map(src, out))
        } else {
            let norm = self.curve.norm();
            super::map_parts(v, |src: &[f32], out: &mut [MaybeUninit<f32>]| {
                for (slot, &s) in out.iter_mut().zip(src) {
                    slot.write(canonical_nan(self.value_with(s as f64, norm)));
                }
            })
        }
    }

    /// Each integer sample's value from the table of 0..=maxval (samples above take maxval's).
    fn cpu_integer<I: Sample>(&self, v: &[I], maxval: u16) -> Vec<f32> {
        let table = self.table(maxval);
        let last = maxval as usize;
        super::map_parts(v, |src: &[I], out: &mut [MaybeUninit<f32>]| {
            for (slot, &s) in out.iter_mut().zip(src) {
                slot.write(table[(s.into() as usize).min(last)]);
            }
        })
    }

    fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        frame.derive_with(frame.width, frame.height, frame.channels, 1, pixels)
    }

    fn gpu_integer<I: Sample>(&self, gpu: &Gpu, samples: &[I], maxval: u16) -> Result<Pixels, OpError> {
        let n = samples.len();
        let src = gpu.upload("stretch.in", samples)?;
        let mut dst = gpu.buffer::<f32>("stretch.out", n)?;
        super::LutPlan::new(gpu, &self.table(maxval), n)?.queue(&src, &mut dst)?;
        Ok(Pixels::F32(gpu.download_samples(&dst, n)?))
    }
}

/// `np.clip(x, lo, hi)` of one value (not NaN): NumPy's `max(x, lo)` is `x > lo ? x : lo`, its
/// `min` `x < hi ? x : hi`.
#[inline(always)]
pub(crate) fn clip<T: PartialOrd + Copy>(x: T, lo: T, hi: T) -> T {
    let x = if x > lo { x } else { lo };
    if x < hi {
        x
    } else {
        hi
    }
}

/// scikit-image's float32 constants: lo and hi, hi - lo, HI - LO and LO, each computed in
/// double and rounded to float32 (NumPy's cast of a Python float next to a float32 array).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Float32 {
    pub lo: f32,
    pub hi: f32,
    pub span: f32,
    pub out_span: f32,
    pub out_lo: f32,
    pub out_hi: f32,
    pub flat: bool,
}

impl Float32 {
    pub(crate) fn of(s: &StretchTo) -> Float32 {
        let (lo, hi) = (s.curve.lo, s.curve.hi);
        let (olo, ohi) = s.out;
        Float32 {
            lo: lo as f32,
            hi: hi as f32,
            span: (hi - lo) as f32,
            out_span: (ohi - olo) as f32,
            out_lo: olo as f32,
            out_hi: ohi as f32,
            flat: hi <= lo,
        }
    }

    #[inline(always)]
    fn value(&self, v: f32) -> f32 {
        if v.is_nan() {
            return f32::NAN;
        }
        let x = clip(v, self.lo, self.hi);
        if self.flat {
            return clip(x, self.out_lo, self.out_hi);
        }
        (x - self.lo) / self.span * self.out_span + self.out_lo
    }
}

impl Float32 {
    /// Writes [`Float32::value`] of each sample of `src` to `out` (as long), NaN canonical: the
    /// same operations with the NaN test a select after them rather than a branch before, so
    /// that the compiler maps 8 samples at a time, built for AVX2 where the CPU has it (no fused
    /// multiply-add: Rust never fuses). Measured with the range's pass ([`super::cuts::extremes`]).
    fn map(&self, src: &[f32], out: &mut [MaybeUninit<f32>]) {
        #[inline(always)]
        fn each(k: &Float32, src: &[f32], out: &mut [MaybeUninit<f32>]) {
            if k.flat {
                for (slot, &v) in out.iter_mut().zip(src) {
                    slot.write(canonical_nan(k.value(v)));
                }
                return;
            }
            for (slot, &v) in out.iter_mut().zip(src) {
                // Float32::value's steps, the NaN given (whose clip is lo) replaced after them.
                let y = (clip(v, k.lo, k.hi) - k.lo) / k.span * k.out_span + k.out_lo;
                slot.write(canonical_nan(if v.is_nan() { f32::NAN } else { y }));
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            /// # Safety
            /// The CPU has AVX2 (an `unsafe fn`: safe functions with target features need Rust
            /// 1.86, and the workspace builds with 1.85).
            #[target_feature(enable = "avx2")]
            unsafe fn wide(k: &Float32, src: &[f32], out: &mut [MaybeUninit<f32>]) {
                each(k, src, out)
            }
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { wide(self, src, out) };
        }
        each(self, src, out)
    }
}

impl Op for StretchTo {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let v = match &frame.pixels {
            Pixels::U8(v) => self.cpu_integer(v, frame.maxval),
            Pixels::U16(v) => self.cpu_integer(v, frame.maxval),
            Pixels::F32(v) => self.cpu_float(v),
        };
        Ok(self.output(frame, Pixels::F32(v.into())))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let v = match &frame.pixels {
            Pixels::U8(v) => self.gpu_integer(gpu, v, frame.maxval)?,
            Pixels::U16(v) => self.gpu_integer(gpu, v, frame.maxval)?,
            Pixels::F32(v) => {
                let n = v.len();
                let src = gpu.upload("stretch.in", v)?;
                let mut dst = gpu.buffer::<f32>("stretch.out", n)?;
                super::gpu::queue_to_float(gpu, self, &src, n, &mut dst)?;
                Pixels::F32(gpu.download_samples(&dst, n)?)
            }
        };
        Ok(self.output(frame, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(lo: f64, hi: f64, scale: Scale, out: (f64, f64)) -> StretchTo {
        StretchTo { curve: Curve { lo, hi, scale, maxout: 0 }, out }
    }

    #[test]
    fn integers_rescale_in_double_floats_in_float32() {
        let s = to(10.0, 20.0, Scale::Linear, (-1.0, 1.0));
        assert_eq!(s.table(30)[15], 0.0);
        assert_eq!(s.table(30)[0], -1.0);
        assert_eq!(s.table(30)[25], 1.0);
        assert_eq!(s.value32(15.0), 0.0);
        assert!(s.value32(f32::NAN).is_nan() && s.value(f64::NAN).is_nan());
        assert_eq!(s.value32(f32::INFINITY), 1.0);
        // A flat range: np.clip(lo, LO, HI).
        assert_eq!(to(5.0, 5.0, Scale::Sqrt, (0.0, 1.0)).value(7.0), 1.0);
        assert_eq!(to(0.5, 0.5, Scale::Linear, (0.0, 1.0)).value32(-3.0), 0.5);
    }

    /// The loop of every sample gives each one's [`Float32::value`], NaN canonical, bit for bit:
    /// NaNs of any bits, infinities, signed zeros, subnormals, ranges flat and too wide for
    /// float32's hi - lo.
    #[test]
    fn the_map_is_each_value() {
        let mut rng = fastrand::Rng::with_seed(49);
        let special = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1e-45,
            -1e-45,
            f32::MAX,
            f32::MIN,
            10.0,
            20.0,
        ];
        let mut src: Vec<f32> = special.to_vec();
        src.extend((0..1000).map(|_| f32::from_bits(rng.u32(..))));
        src.extend((0..1000).map(|_| rng.f32() * 40.0 - 10.0));
        let ranges =
            [(10.0, 20.0), (-0.0, 0.0), (5.0, 5.0), (-3e38, 3e38), (f32::MIN as f64, f32::MAX as f64)];
        for (lo, hi) in ranges {
            for out in [(0.0, 1.0), (-1.0, 1.0), (-1e38, 3e38)] {
                let k = Float32::of(&to(lo, hi, Scale::Linear, out));
                // From each of 40 starts, so that every sample passes through each lane.
                for start in 0..40 {
                    let src = &src[start..];
                    let mut dst = vec![MaybeUninit::uninit(); src.len()];
                    k.map(src, &mut dst);
                    for (d, &v) in dst.iter().zip(src) {
                        // SAFETY: `map` wrote every slot.
                        let d = unsafe { d.assume_init() };
                        let want = canonical_nan(k.value(v));
                        assert_eq!(d.to_bits(), want.to_bits(), "{v:e} of {lo}..{hi} onto {out:?}");
                    }
                }
            }
        }
    }

    /// Split over any number of threads, the output is the one thread's.
    #[test]
    fn every_split_rescales_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(31);
        for (w, h) in crate::parallel::testing::sizes(&mut rng) {
            let f = crate::parallel::testing::frame(&mut rng, w, h, 1076);
            let floats: Vec<f32> = (0..w * h).map(|i| (i as f32 * 0.37).sin() * 50.0).collect();
            let g = Frame::new(w, h, 1, Pixels::F32(floats.into()));
            for scale in [Scale::Linear, Scale::Log] {
                let op = to(-20.0, 900.0, scale, (-1.0, 1.0));
                crate::parallel::testing::same_on_each_pool(&format!("{w}x{h}"), || op.cpu(&f).unwrap());
                crate::parallel::testing::same_on_each_pool(&format!("{w}x{h} float"), || {
                    op.cpu(&g).unwrap()
                });
            }
        }
    }
}
