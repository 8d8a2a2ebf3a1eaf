//! The input range of `--zscale`: astropy.visualization's `ZScaleInterval` (IRAF's zscale), its
//! steps in its order and in double precision, as `get_limits` (astropy 8.0.2) takes them:
//!
//! 1. the N finite values, in order; stride = int(max(1, N / n_samples)); the samples are every
//!    stride-th value from the first, at most n_samples of them, sorted (npix of them);
//! 2. minpix = max(min_npixels, int(npix max_reject)), ngrow = max(1, int(npix 0.01));
//! 3. up to max_iterations times, while fewer pixels are good than before and at least minpix:
//!    the least-squares line through the good (i, sample_i) (`np.polyfit(x, s, 1, w=good)`),
//!    flat = s - (slope i + intercept), threshold = krej std(flat of the good ones) (NumPy's
//!    pairwise sums), every pixel with |flat| beyond it made bad, and the bad ones grown to their
//!    ngrow neighbours (`np.convolve(bad, ones(ngrow), 'same')`: pixel i is bad where one of
//!    i - ngrow/2 .. i - ngrow/2 + ngrow - 1 was);
//! 4. with at least minpix good: slope /= contrast (contrast > 0), c = (npix - 1) / 2, m the
//!    median (`np.median`: of a float32 sample, the mean of the middle two in float32), and
//!    lo = max(s_0, m - (c - 1) slope), hi = min(s_(npix-1), m + (npix - c) slope); otherwise
//!    lo = s_0 and hi = s_(npix-1).
//!
//! One step is not NumPy's to the bit: the line. `np.polyfit` solves its least squares with
//! LAPACK's `dgelsd` (an SVD), whose last bits depend on the BLAS and the CPU; here the line is
//! the exact least-squares solution (sums in double-double) rounded to double. With `np.polyfit`
//! made that exact line, astropy gives these limits bit for bit (tests/tools/stretch.rs runs it);
//! stock astropy's are within 1e-14 of their size, the same bits where a limit is a sample.
//! Computed on the host for both backends, from at most n_samples values.

use histopipe_frame::{Frame, Pixels};

use crate::mask::Mask;
use crate::OpError;

/// `ZScaleInterval`'s parameters, its defaults by [`Default`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZScale {
    /// At most this many samples (astropy's `n_samples`), at least 1.
    pub samples: usize,
    /// The slope is divided by it where it is above 0 (astropy's `contrast`).
    pub contrast: f64,
    /// The fit is given up when fewer than `samples max_reject` stay good (`max_reject`).
    pub max_reject: f64,
    /// ... or fewer than this (`min_npixels`).
    pub min_npixels: usize,
    /// The rejection threshold in standard deviations (`krej`).
    pub krej: f64,
    /// Rounds of fit and rejection (`max_iterations`), at least 1.
    pub max_iterations: usize,
}

impl Default for ZScale {
    /// astropy's: n_samples=1000, contrast=0.25, max_reject=0.5, min_npixels=5, krej=2.5,
    /// max_iterations=5.
    fn default() -> ZScale {
        ZScale {
            samples: 1000,
            contrast: 0.25,
            max_reject: 0.5,
            min_npixels: 5,
            krej: 2.5,
            max_iterations: 5,
        }
    }
}

/// The values sampled, as f64 (exact), and whether they are float32 (which `np.median` averages
/// in float32).
struct Sampled {
    values: Vec<f64>,
    float32: bool,
}

impl ZScale {
    /// The limits (lo, hi) of the finite values of `values` (`count` of them are finite), in
    /// their order; `None` where none is finite. `float32`: the values are float32 samples.
    pub fn limits<I: Iterator<Item = f64>>(
        &self,
        values: I,
        count: usize,
        float32: bool,
    ) -> Option<(f64, f64)> {
        if count == 0 {
            return None;
        }
        let n = self.samples.max(1);
        let stride = (count as f64 / n as f64).max(1.0) as usize;
        let mut values: Vec<f64> = values.filter(|v| v.is_finite()).step_by(stride).take(n).collect();
        values.sort_by(f64::total_cmp);
        Some(self.of_sorted(&Sampled { values, float32 }))
    }

    fn of_sorted(&self, sampled: &Sampled) -> (f64, f64) {
        let s = &sampled.values;
        let npix = s.len();
        let (mut lo, mut hi) = (s[0], s[npix - 1]);
        let minpix = self.min_npixels.max((npix as f64 * self.max_reject) as usize);
        let ngrow = 1usize.max((npix as f64 * 0.01) as usize);
        let mut bad = vec![false; npix];
        let (mut good, mut last_good) = (npix, npix + 1);
        let mut fit = None;
        for _ in 0..self.max_iterations.max(1) {
            if good >= last_good || good < minpix {
                break;
            }
            let line = Line::through(s, &bad);
            let flat: Vec<f64> = s.iter().enumerate().map(|(i, &y)| y - line.at(i)).collect();
            let kept: Vec<f64> = flat.iter().zip(&bad).filter(|(_, &b)| !b).map(|(&f, _)| f).collect();
            let threshold = self.krej * std(&kept);
            for (b, &f) in bad.iter_mut().zip(&flat) {
                *b |= f < -threshold || f > threshold;
            }
            bad = grown(&bad, ngrow);
            last_good = good;
            good = bad.iter().filter(|&&b| !b).count();
            fit = Some(line);
        }
        if let (true, Some(line)) = (good >= minpix, fit) {
            let slope = if self.contrast > 0.0 { line.slope / self.contrast } else { line.slope };
            let centre = (npix as i64 - 1) / 2;
            let median = median(s, sampled.float32);
            let low = median - (centre - 1) as f64 * slope;
            let high = median + (npix as i64 - centre) as f64 * slope;
            // Python's max and min: the first argument unless the second is beyond it.
            if low > lo {
                lo = low;
            }
            if high < hi {
                hi = high;
            }
        }
        (lo, hi)
    }

    /// The limits of the samples of `samples` whose index `wanted` keeps (`None`: every one).
    fn of_samples<T: Copy + Into<f64>>(
        &self,
        samples: &[T],
        wanted: Option<&dyn Fn(usize) -> bool>,
        float32: bool,
    ) -> Option<(f64, f64)> {
        let finite = |v: &f64| v.is_finite();
        match wanted {
            // Every sample: straight through the slice, without the index test (a 3840x2160
            // float frame's whole --zscale run: 90 ms that way, 60-70 ms this way, on the 2-core
            // build machine).
            None => {
                let values = || samples.iter().map(|&s| s.into());
                self.limits(values(), values().filter(finite).count(), float32)
            }
            Some(wanted) => {
                let values =
                    || samples.iter().enumerate().filter(|&(i, _)| wanted(i)).map(|(_, &s)| s.into());
                self.limits(values(), values().filter(finite).count(), float32)
            }
        }
    }

    /// The limits of `frame`'s samples of channels `channels` (a pixel's channel c is its sample
    /// c) of the pixels `mask` selects (`None`: every pixel), in the frame's order; `None` where
    /// none is finite.
    pub fn of_frame(
        &self,
        frame: &Frame,
        channels: &[usize],
        mask: Option<Mask<'_>>,
    ) -> Result<Option<(f64, f64)>, OpError> {
        let count = frame.channels.count();
        let mask = mask.map(|m| m.fit(frame)).transpose()?;
        let wanted = |i: usize| channels.contains(&(i % count)) && mask.is_none_or(|m| m[i / count] != 0);
        let every = mask.is_none() && (0..count).all(|c| channels.contains(&c));
        let wanted: Option<&dyn Fn(usize) -> bool> = if every { None } else { Some(&wanted) };
        Ok(match &frame.pixels {
            Pixels::U8(v) => self.of_samples(v, wanted, false),
            Pixels::U16(v) => self.of_samples(v, wanted, false),
            Pixels::F32(v) => self.of_samples(v, wanted, true),
        })
    }
}

/// `np.median` of sorted samples: the middle one, or the mean of the middle two (for float32
/// samples, their sum and its half each rounded to float32, as NumPy's mean of float32 does).
fn median(s: &[f64], float32: bool) -> f64 {
    let n = s.len();
    if n % 2 == 1 {
        return s[n / 2];
    }
    let (a, b) = (s[n / 2 - 1], s[n / 2]);
    if float32 {
        ((a as f32 + b as f32) / 2.0) as f64
    } else {
        (a + b) / 2.0
    }
}

/// NumPy's sum of float64 (`pairwise_sum`): below 8 values one by one from 0; up to 128, eight
/// running sums of every eighth value, added ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)),
/// then the rest one by one; above, the two halves (the first a multiple of 8 long) each so.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, &v| s + v);
    }
    if n <= 128 {
        let mut r: [f64; 8] = a[..8].try_into().expect("eight values");
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (r, &v) in r.iter_mut().zip(chunk) {
                *r += v;
            }
        }
        let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in &a[whole..] {
            s += v;
        }
        return s;
    }
    let half = n / 2;
    let half = half - half % 8;
    pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
}

/// NumPy's `a.std()`: sqrt(sum((a - mean)^2) / n), mean = sum(a) / n, both sums pairwise.
fn std(a: &[f64]) -> f64 {
    let n = a.len() as f64;
    let mean = pairwise_sum(a) / n;
    let squares: Vec<f64> = a.iter().map(|&v| (v - mean) * (v - mean)).collect();
    (pairwise_sum(&squares) / n).sqrt()
}

/// `np.convolve(bad, np.ones(ngrow, bool), mode='same')`: pixel i is bad where one of
/// bad[i - ngrow/2 ..= i - ngrow/2 + ngrow - 1] (those inside) is.
fn grown(bad: &[bool], ngrow: usize) -> Vec<bool> {
    let n = bad.len();
    // before[j]: bad ones among the first j.
    let mut before = Vec::with_capacity(n + 1);
    before.push(0usize);
    for &b in bad {
        before.push(before[before.len() - 1] + b as usize);
    }
    (0..n)
        .map(|i| {
            let first = i.saturating_sub(ngrow / 2);
            let end = (i + ngrow - ngrow / 2).min(n);
            first < end && before[end] > before[first]
        })
        .collect()
}

/// A line fitted to the good (i, s_i).
#[derive(Debug, Clone, Copy)]
struct Line {
    slope: f64,
    intercept: f64,
}

impl Line {
    /// The least-squares line through the points (i, s[i]) not `bad` (at least two of them): with
    /// n of them and the sums X = sum i, Q = sum i^2 (integers, exact), Y = sum s_i and
    /// P = sum i s_i (double-double), D = n Q - X^2, slope = (n P - X Y) / D and
    /// intercept = (Q Y - X P) / D, each rounded once to double.
    fn through(s: &[f64], bad: &[bool]) -> Line {
        let (mut n, mut x, mut q) = (0i128, 0i128, 0i128);
        let (mut y, mut p) = (Dd::ZERO, Dd::ZERO);
        for (i, (&v, &b)) in s.iter().zip(bad).enumerate() {
            if b {
                continue;
            }
            let i = i as i128;
            n += 1;
            x += i;
            q += i * i;
            y = y.add(Dd::of(v));
            p = p.add(Dd::product(i as f64, v));
        }
        let d = (n * q - x * x) as f64;
        let slope = p.scale(n as f64).add(y.scale(-(x as f64))).divide(d);
        let intercept = y.scale(q as f64).add(p.scale(-(x as f64))).divide(d);
        Line { slope, intercept }
    }

    /// `np.poly1d((slope, intercept))(i)`: slope i + intercept, each step rounded.
    fn at(&self, i: usize) -> f64 {
        self.slope * i as f64 + self.intercept
    }
}

/// A double-double: hi + lo, |lo| at most half an ulp of hi.
#[derive(Debug, Clone, Copy)]
struct Dd {
    hi: f64,
    lo: f64,
}

impl Dd {
    const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };

    fn of(v: f64) -> Dd {
        Dd { hi: v, lo: 0.0 }
    }

    /// a b exactly (where it neither overflows nor underflows), by a fused multiply-add.
    fn product(a: f64, b: f64) -> Dd {
        let hi = a * b;
        Dd { hi, lo: a.mul_add(b, -hi) }
    }

    /// Knuth's two-sum of the high parts, then the low parts added.
    fn add(self, o: Dd) -> Dd {
        let s = self.hi + o.hi;
        let bb = s - self.hi;
        let e = (self.hi - (s - bb)) + (o.hi - bb);
        let lo = e + self.lo + o.lo;
        let hi = s + lo;
        Dd { hi, lo: lo - (hi - s) }
    }

    /// self k, k a double that is an integer of at most 53 bits.
    fn scale(self, k: f64) -> Dd {
        let p = Dd::product(self.hi, k);
        let lo = p.lo + self.lo * k;
        let hi = p.hi + lo;
        Dd { hi, lo: lo - (hi - p.hi) }
    }

    /// self / d, rounded to double: the quotient of the high part, corrected by the remainder.
    fn divide(self, d: f64) -> f64 {
        let q = self.hi / d;
        let r = (-q).mul_add(d, self.hi) + self.lo;
        q + r / d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grown_is_numpys_same_convolution() {
        // np.convolve(b, np.ones(n, bool), 'same') of one bad pixel at 3 of 9.
        let mut bad = vec![false; 9];
        bad[3] = true;
        let marked =
            |n| grown(&bad, n).iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(marked(1), [3]);
        assert_eq!(marked(2), [3, 4]);
        assert_eq!(marked(3), [2, 3, 4]);
        assert_eq!(marked(4), [2, 3, 4, 5]);
        assert_eq!(grown(&[true, false], 2), [true, true]);
        assert_eq!(grown(&[false, true], 2), [false, true]);
    }

    #[test]
    fn pairwise_sum_adds_in_numpys_order() {
        // 1e16 and fifteen ones (NumPy's np.sum): the ones added one by one are lost (ties to
        // even), seven running sums of two keep theirs: 1e16 + 14.
        let mut a = vec![1.0; 16];
        a[0] = 1e16;
        assert_eq!(pairwise_sum(&a), 1.0000000000000014e16);
        assert_eq!(pairwise_sum(&a[..7]), 1e16);
        assert_eq!(pairwise_sum(&[]), 0.0);
    }

    #[test]
    fn the_line_through_points_on_a_line_is_that_line() {
        let s: Vec<f64> = (0..100).map(|i| 0.375 * i as f64 - 7.5).collect();
        let mut bad = vec![false; 100];
        bad[10] = true;
        let line = Line::through(&s, &bad);
        assert_eq!((line.slope, line.intercept), (0.375, -7.5));
    }

    #[test]
    fn few_samples_give_the_minimum_and_the_maximum() {
        let z = ZScale::default();
        assert_eq!(z.limits([3.0, f64::NAN, 1.0, 2.0].into_iter(), 3, false), Some((1.0, 3.0)));
        assert_eq!(z.limits([f64::INFINITY].into_iter(), 0, true), None);
        assert_eq!(z.limits([5.0].into_iter(), 1, false), Some((5.0, 5.0)));
    }

    #[test]
    fn a_ramp_keeps_its_ends_and_a_flat_frame_its_value() {
        let z = ZScale::default();
        let ramp: Vec<f64> = (0..5000).map(|i| i as f64).collect();
        let (lo, hi) = z.limits(ramp.iter().copied(), 5000, false).unwrap();
        assert_eq!((lo, hi), (0.0, 4995.0));
        assert_eq!(z.limits(std::iter::repeat_n(7.0, 50), 50, true), Some((7.0, 7.0)));
    }
}
