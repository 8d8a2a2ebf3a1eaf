//! The map of `stretch` from one sample value to one output level, exactly (docs/stretch.md):
//! t = (v - lo) / (hi - lo) clamped to [0, 1], f(t) by the scale, out = f(t) * maxout rounded
//! half to even. Every step is one correctly rounded IEEE double operation (add, multiply,
//! divide, square root), in one order, and the logarithm is [`ln`] below, built from those
//! alone: the kernel of `stretch.cu` does the same operations in the same order, so the CPU and
//! the GPU give the same bits (`--fmad=false`, and `__d*_rn` intrinsics there; Rust never fuses).
//! The constants (a, b, ln 2, sqrt 2, the series' length) reach the kernel as arguments from here.

/// The display scale: f(t) for t in [0, 1], monotone, f(0) = 0 and f(1) = 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// f(t) = t.
    Linear,
    /// f(t) = ln(1 + a t) / ln(1 + a), a = [`LOG_A`] (astropy's `LogStretch`).
    Log,
    /// f(t) = sqrt(t) (astropy's `SqrtStretch`).
    Sqrt,
    /// f(t) = asinh(t / b) / asinh(1 / b), b = [`ASINH_B`] (astropy's `AsinhStretch`), asinh(y)
    /// taken as ln(y + sqrt(y y + 1)).
    Asinh,
}

impl Scale {
    /// The scale's number in the kernel (`curve_level` in stretch.cu).
    pub(crate) fn code(self) -> u32 {
        self as u32
    }

    /// The scale's parameter: a for `log`, b for `asinh`, 0 for the others.
    pub(crate) fn param(self) -> f64 {
        match self {
            Scale::Log => LOG_A,
            Scale::Asinh => ASINH_B,
            Scale::Linear | Scale::Sqrt => 0.0,
        }
    }
}

/// a of the log scale: astropy.visualization's `LogStretch` default.
pub const LOG_A: f64 = 1000.0;
/// b of the asinh scale: astropy.visualization's `AsinhStretch` default (`a` there).
pub const ASINH_B: f64 = 0.1;

/// ln 2 and sqrt 2, the doubles nearest them (given by their bits: no parser in between).
pub(crate) const LN2: f64 = f64::from_bits(0x3FE6_2E42_FEFA_39EF);
pub(crate) const SQRT2: f64 = f64::from_bits(0x3FF6_A09E_667F_3BCD);
/// Terms of the series of [`ln`]: s^(2k+1) / (2k+1) for k < 12; the first left out,
/// s^25 / 25 with |s| <= 0.1716, is under 2^-66.
pub(crate) const LN_TERMS: u32 = 12;

/// The natural logarithm of `x` >= 1 (finite), from correctly rounded operations only:
/// x = m 2^e with m in (sqrt(2)/2, sqrt(2)] (the exponent and mantissa split from the bits, exact),
/// then ln x = e ln 2 + 2 atanh(s), s = (m - 1) / (m + 1), atanh(s) = s (1 + s^2/3 + s^4/5 + ...),
/// the series by Horner's rule in s^2 with coefficients 1.0 / (2k + 1) (each one division).
/// Within 1e-15 of the true value on [1, 2^20] (the tests compare it with `f64::ln`).
pub fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = (bits >> 52) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    if m > SQRT2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let mut p = 1.0 / (2 * (LN_TERMS - 1) + 1) as f64;
    for k in (0..LN_TERMS - 1).rev() {
        p = p * z + 1.0 / (2 * k + 1) as f64;
    }
    e as f64 * LN2 + 2.0 * s * p
}

/// The map of one channel: input range [lo, hi], the scale, the output's maxval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Curve {
    /// The value that maps to 0 (finite).
    pub lo: f64,
    /// The value that maps to `maxout` (finite, at least `lo`, `hi - lo` finite).
    pub hi: f64,
    pub scale: Scale,
    /// The output's maxval: 255 or 65535 for `--depth`, or the input's.
    pub maxout: u16,
}

impl Curve {
    /// The identity of an integer channel of `maxval` onto `maxout` levels, linearly: what alpha
    /// gets (rint(v / maxval * maxout)), the identity when `maxout` is `maxval`.
    pub fn rescale(maxval: u16, maxout: u16) -> Curve {
        Curve { lo: 0.0, hi: maxval as f64, scale: Scale::Linear, maxout }
    }

    /// t of `x` (not NaN): (x - lo) / (hi - lo) clamped to [0, 1]; for lo = hi, 0 at or below lo
    /// and 1 above.
    #[inline(always)]
    pub fn t(&self, x: f64) -> f64 {
        if self.hi > self.lo {
            let t = (x - self.lo) / (self.hi - self.lo);
            if t > 0.0 {
                if t < 1.0 {
                    t
                } else {
                    1.0
                }
            } else {
                0.0
            }
        } else if x > self.lo {
            1.0
        } else {
            0.0
        }
    }

    /// The denominator of the scale: f's numerator at t = 1, so that f(1) is exactly 1.
    pub(crate) fn norm(&self) -> f64 {
        self.numerator(1.0)
    }

    /// f(t) before the division by [`Curve::norm`] (log, asinh), or f(t) itself.
    #[inline(always)]
    fn numerator(&self, t: f64) -> f64 {
        match self.scale {
            Scale::Linear => t,
            Scale::Sqrt => t.sqrt(),
            Scale::Log => ln(1.0 + LOG_A * t),
            Scale::Asinh => {
                let y = t / ASINH_B;
                ln(y + (y * y + 1.0).sqrt())
            }
        }
    }

    /// f(t) of the scale, with `norm` = [`Curve::norm`].
    #[inline(always)]
    pub(crate) fn f(&self, t: f64, norm: f64) -> f64 {
        match self.scale {
            Scale::Linear | Scale::Sqrt => self.numerator(t),
            Scale::Log | Scale::Asinh => self.numerator(t) / norm,
        }
    }

    /// The output level of `v`: NaN gives 0, otherwise rint(f(t(v)) * maxout), ties to even.
    pub fn level(&self, v: f64) -> u16 {
        self.level_with(v, self.norm())
    }

    /// [`Curve::level`], with `norm` = [`Curve::norm`] computed once.
    #[inline(always)]
    pub(crate) fn level_with(&self, v: f64, norm: f64) -> u16 {
        if v.is_nan() {
            return 0;
        }
        let out = (self.f(self.t(v), norm) * self.maxout as f64).round_ties_even();
        out.clamp(0.0, self.maxout as f64) as u16
    }

    /// The levels of the integer values 0..=maxval: the look-up table of an integer channel.
    pub fn table(&self, maxval: u16) -> Vec<u16> {
        let norm = self.norm();
        (0..=maxval).map(|v| self.level_with(v as f64, norm)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_is_within_1e_15_of_the_true_logarithm() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut xs: Vec<f64> = vec![1.0, 1.0 + f64::EPSILON, 2.0, SQRT2, 1001.0, 20.05, 1e6];
        xs.extend((0..100_000).map(|_| 1.0 + rng.f64() * 1000.0));
        xs.extend((0..10_000).map(|_| 1.0 + rng.f64() * 1e-6));
        for x in xs {
            let (got, want) = (ln(x), x.ln());
            assert!((got - want).abs() <= 1e-15 * want.max(1.0), "ln {x}: {got} against {want}");
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn the_scales_go_from_0_to_1_exactly_and_never_down() {
        for scale in [Scale::Linear, Scale::Log, Scale::Sqrt, Scale::Asinh] {
            let c = Curve { lo: 0.0, hi: 1.0, scale, maxout: 65535 };
            let norm = c.norm();
            assert_eq!(c.f(0.0, norm), 0.0, "{scale:?}");
            assert_eq!(c.f(1.0, norm), 1.0, "{scale:?}");
            let levels: Vec<u16> = (0..=1_000_000).map(|i| c.level(i as f64 / 1e6)).collect();
            assert!(levels.windows(2).all(|w| w[0] <= w[1]), "{scale:?}");
            assert_eq!((levels[0], levels[1_000_000]), (0, 65535));
        }
    }

    #[test]
    fn nan_is_0_and_infinities_clamp() {
        let c = Curve { lo: -2.0, hi: 5.0, scale: Scale::Asinh, maxout: 255 };
        assert_eq!(c.level(f64::NAN), 0);
        assert_eq!(c.level(f64::INFINITY), 255);
        assert_eq!(c.level(f64::NEG_INFINITY), 0);
        let flat = Curve { lo: 3.0, hi: 3.0, scale: Scale::Linear, maxout: 255 };
        assert_eq!([flat.level(2.0), flat.level(3.0), flat.level(3.5)], [0, 0, 255]);
    }

    #[test]
    fn linear_rounds_half_to_even() {
        // t = 1/2 of 255 levels: 127.5 -> 128; of 5 levels, 2.5 -> 2.
        assert_eq!(Curve { lo: 0.0, hi: 2.0, scale: Scale::Linear, maxout: 255 }.level(1.0), 128);
        assert_eq!(Curve { lo: 0.0, hi: 2.0, scale: Scale::Linear, maxout: 5 }.level(1.0), 2);
        let same = Curve::rescale(1076, 1076).table(1076);
        assert!(same.iter().enumerate().all(|(i, &v)| v as usize == i));
    }
}
