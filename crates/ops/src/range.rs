//! `--range LO:HI`: equal bins over a range the user gives (or, for float frames, the finite
//! samples' own), and the samples outside it, counted apart: the binning `cdf` and `colhist` use
//! when a range is given or the samples are float.
//!
//! A frame is binned by making its *index frame*: each sample replaced by its class, one of the
//! N bins (0..N) or one of the [`Outside`] classes after them (N, N + 1, ...). The histogram ops
//! then count the index frame with one bin per level, on either backend; the counts are split
//! back with [`Layout::split`].
//!
//! Integer samples (LO and HI whole, 0 <= LO <= HI <= 65535, L = HI - LO + 1 levels, N bins with
//! 1 <= N <= L): v in LO..=HI falls in bin floor((v - LO) N / L), the rule of [`Bins`] shifted to
//! LO; v < LO is `below`, v > HI `above`. Mapped on the CPU through a table of every value.
//!
//! Float samples (`numpy.histogram(a.astype(np.float64), bins=N, range=(LO, HI))`, in f64, in
//! numpy 2's order of operations, numpy/lib/_histograms_impl.py): with d = HI - LO, the edges are
//! numpy.linspace's, e_i = i (d / N) + LO (e_N = HI); a finite sample a (as f64) with LO <= a <= HI
//! gets f = ((a - LO) / d) N, i = trunc(f) (N - 1 when it is N), one down if a < e_i, one up if
//! a >= e_{i+1} and i < N - 1: bin i covers [e_i, e_{i+1}), the last bin [e_{N-1}, HI]. NaN,
//! -inf and +inf are `nan`, `neg_inf`, `pos_inf`; finite samples below LO or above HI are
//! `below` and `above`. The GPU evaluates the same f64 operations, each rounded to nearest with
//! no fused multiply-add, so both backends give the same classes (float_bins.cu).

use histopipe_frame::{Frame, Pixels};
use histopipe_gpu::{kernels, launch};

use crate::bins::Bins;
use crate::{Gpu, Op, OpError};

/// Where a sample outside the bins goes, in the order of the index frame's classes after the bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// A finite sample under LO.
    Below,
    /// A finite sample over HI.
    Above,
    Nan,
    NegInf,
    PosInf,
}

impl Outside {
    /// Every class, in the order of the tables' columns (or rows).
    pub const ALL: [Outside; 5] =
        [Outside::Below, Outside::Above, Outside::Nan, Outside::NegInf, Outside::PosInf];

    /// The class's name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Outside::Below => "below",
            Outside::Above => "above",
            Outside::Nan => "nans",
            Outside::NegInf => "neg_inf",
            Outside::PosInf => "pos_inf",
        }
    }
}

/// Most bins of a float range: its index frame's 16-bit samples hold the bins and five classes.
pub const FLOAT_MAX_BINS: usize = 65536 - Outside::ALL.len();

/// Default bins of a float frame's range.
pub const FLOAT_DEFAULT_BINS: usize = 256;

/// The classes of an index frame: `bins` bins, then `outside` in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub bins: usize,
    pub outside: Vec<Outside>,
}

impl Layout {
    /// Every class: the index frame's levels.
    pub fn classes(&self) -> usize {
        self.bins + self.outside.len()
    }

    /// Splits counts by class (one per class, in order) into the bins' and each [`Outside`]
    /// class's (in [`Outside::ALL`] order; 0 for a class the layout lacks).
    pub fn split<T: Copy + Default>(&self, counts: &[T]) -> (Vec<T>, [T; 5]) {
        let mut outside = [T::default(); 5];
        for (k, class) in self.outside.iter().enumerate() {
            let at = Outside::ALL.iter().position(|c| c == class).expect("a class of ALL");
            outside[at] = counts[self.bins + k];
        }
        (counts[..self.bins].to_vec(), outside)
    }
}

/// Equal bins over LO..=HI of integer samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    pub lo: u32,
    pub hi: u32,
    bins: Bins,
}

impl IntRange {
    /// `count` bins (`None`: one per level) over `lo..=hi`, given as `--range`; both must be whole
    /// numbers with 0 <= lo <= hi <= 65535.
    pub fn new(lo: f64, hi: f64, count: Option<usize>) -> Result<IntRange, OpError> {
        let whole = |v: f64| v.fract() == 0.0 && (0.0..=65535.0).contains(&v);
        if !whole(lo) || !whole(hi) {
            return Err(OpError::param(
                "range",
                format!("{lo}:{hi}"),
                "an integer frame's range is of whole numbers 0 to 65535",
            ));
        }
        let (lo, hi) = (lo as u32, hi as u32);
        let levels = hi - lo + 1;
        let bins = Bins::of_levels(count, levels, || format!("a range of {levels} levels"))?;
        Ok(IntRange { lo, hi, bins })
    }

    pub fn count(&self) -> usize {
        self.bins.count()
    }

    /// The lowest and highest value of bin `b`.
    pub fn range(&self, b: usize) -> (u32, u32) {
        let (l, h) = self.bins.range(b);
        (l + self.lo, h + self.lo)
    }

    /// The classes of a frame whose samples are at most `type_max`: `below` only when LO > 0,
    /// `above` only when HI < `type_max` (the others cannot happen), so that the classes of any
    /// range fit 16 bits.
    pub fn layout(&self, type_max: u32) -> Layout {
        let mut outside = Vec::new();
        if self.lo > 0 {
            outside.push(Outside::Below);
        }
        if self.hi < type_max {
            outside.push(Outside::Above);
        }
        Layout { bins: self.count(), outside }
    }

    /// The class of sample `v` in [`IntRange::layout`]`(type_max)`.
    fn class(&self, v: u32, layout: &Layout) -> u32 {
        let at = |c: Outside| {
            (layout.bins + layout.outside.iter().position(|&o| o == c).expect("possible")) as u32
        };
        if v < self.lo {
            at(Outside::Below)
        } else if v > self.hi {
            at(Outside::Above)
        } else {
            self.bins.of(v - self.lo) as u32
        }
    }

    /// The index frame of an integer gray frame (its classes as samples, maxval the last class;
    /// 8-bit while they fit), and its layout.
    pub fn index_frame(&self, frame: &Frame) -> Result<(Frame, Layout), OpError> {
        fn map<T: Copy + Into<u32> + Sync, U: Copy + Send + Sync>(v: &[T], lut: &[U]) -> Vec<U> {
            use rayon::prelude::*;
            v.par_iter().with_min_len(1 << 16).map(|&s| lut[s.into() as usize]).collect()
        }
        let type_max = match &frame.pixels {
            Pixels::U8(_) => 255,
            Pixels::U16(_) => 65535,
            Pixels::F32(_) => return Err(OpError::needs_integers()),
        };
        let layout = self.layout(type_max);
        let lut: Vec<u32> = (0..=type_max).map(|v| self.class(v, &layout)).collect();
        let maxval = (layout.classes() - 1) as u16;
        // Samples as wide as the classes need: 8-bit up to 256 classes.
        let pixels = match (&frame.pixels, layout.classes() <= 256) {
            (Pixels::U8(v), true) => {
                Pixels::U8(map(v, &lut.iter().map(|&c| c as u8).collect::<Vec<_>>()).into())
            }
            (Pixels::U16(v), true) => {
                Pixels::U8(map(v, &lut.iter().map(|&c| c as u8).collect::<Vec<_>>()).into())
            }
            (Pixels::U8(v), false) => {
                Pixels::U16(map(v, &lut.iter().map(|&c| c as u16).collect::<Vec<_>>()).into())
            }
            (Pixels::U16(v), false) => {
                Pixels::U16(map(v, &lut.iter().map(|&c| c as u16).collect::<Vec<_>>()).into())
            }
            (Pixels::F32(_), _) => unreachable!("refused above"),
        };
        Ok((frame.derive(frame.width, frame.height, maxval, pixels), layout))
    }
}

/// Equal bins over LO..HI of float samples, as numpy.histogram assigns them (the module's doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatRange {
    pub lo: f64,
    pub hi: f64,
    count: u32,
    /// HI - LO.
    delta: f64,
    /// delta / N: linspace's step.
    step: f64,
}

impl FloatRange {
    /// `count` bins (`None`: [`FLOAT_DEFAULT_BINS`]) over `range`, or by default over the finite
    /// samples' least to greatest (0..1 when there are none; v - 0.5..v + 0.5 when all are v, as
    /// numpy widens an empty range).
    pub fn new(
        range: Option<(f64, f64)>,
        count: Option<usize>,
        samples: &[f32],
    ) -> Result<FloatRange, OpError> {
        let count = count.unwrap_or(FLOAT_DEFAULT_BINS);
        if !(1..=FLOAT_MAX_BINS).contains(&count) {
            return Err(OpError::param(
                "bins",
                count,
                format!("a float frame has 1 to {FLOAT_MAX_BINS} bins"),
            ));
        }
        let (mut lo, mut hi) = match range {
            Some(r) => r,
            None => finite_extremes(samples).unwrap_or((0.0, 1.0)),
        };
        if lo == hi {
            (lo, hi) = (lo - 0.5, hi + 0.5);
        }
        let delta = hi - lo;
        if !(lo.is_finite() && hi.is_finite() && delta.is_finite() && lo < hi) {
            return Err(OpError::param("range", format!("{lo}:{hi}"), "needs LO < HI, and HI - LO finite"));
        }
        Ok(FloatRange { lo, hi, count: count as u32, delta, step: delta / count as f64 })
    }

    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Edge `i` of `0..=N`: numpy.linspace(LO, HI, N + 1)[i] (i * step + LO, the last HI).
    pub fn edge(&self, i: usize) -> f64 {
        if i == self.count as usize {
            self.hi
        } else if self.step == 0.0 {
            // linspace when the step underflows: (i / N) * delta + LO.
            i as f64 / self.count as f64 * self.delta + self.lo
        } else {
            i as f64 * self.step + self.lo
        }
    }

    pub fn layout(&self) -> Layout {
        Layout { bins: self.count(), outside: Outside::ALL.to_vec() }
    }

    /// The class of sample `v`: its bin, or N + its [`Outside`] class's place in [`Outside::ALL`].
    pub fn class(&self, v: f32) -> u32 {
        let n = self.count;
        let a = v as f64;
        if a.is_nan() {
            return n + 2;
        }
        if a == f64::NEG_INFINITY {
            return n + 3;
        }
        if a == f64::INFINITY {
            return n + 4;
        }
        if a < self.lo {
            return n;
        }
        if a > self.hi {
            return n + 1;
        }
        let f = (a - self.lo) / self.delta * n as f64;
        let mut i = (f as u32).min(n - 1);
        if a < self.edge(i as usize) {
            i -= 1;
        }
        if i != n - 1 && a >= self.edge(i as usize + 1) {
            i += 1;
        }
        i
    }

    /// The index frame of these classes: 8-bit samples up to 256 classes.
    fn index_frame(&self, frame: &Frame, classes: Vec<u16>) -> Frame {
        let maxval = (self.count() + Outside::ALL.len() - 1) as u16;
        let pixels = match maxval <= 255 {
            true => Pixels::U8(classes.iter().map(|&c| c as u8).collect::<Vec<_>>().into()),
            false => Pixels::U16(classes.into()),
        };
        frame.derive(frame.width, frame.height, maxval, pixels)
    }
}

/// The least and greatest finite sample, if any.
pub fn finite_extremes(samples: &[f32]) -> Option<(f64, f64)> {
    use rayon::prelude::*;
    let fold = |a: Option<(f32, f32)>, b: Option<(f32, f32)>| match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (a, b) => a.or(b),
    };
    samples
        .par_chunks(1 << 16)
        .map(|part| part.iter().filter(|v| v.is_finite()).fold(None, |m, &v| fold(m, Some((v, v)))))
        .reduce(|| None, fold)
        .map(|(lo, hi)| (lo as f64, hi as f64))
}

/// The op that makes a float gray frame's index frame: 16-bit classes of [`FloatRange::class`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatClasses {
    pub range: FloatRange,
}

impl Op for FloatClasses {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        use rayon::prelude::*;
        let Pixels::F32(v) = &frame.pixels else {
            return Err(OpError::invalid("float classes of a frame of integer samples"));
        };
        let classes = v.par_iter().with_min_len(1 << 15).map(|&s| self.range.class(s) as u16).collect();
        Ok(self.range.index_frame(frame, classes))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let Pixels::F32(v) = &frame.pixels else {
            return Err(OpError::invalid("float classes of a frame of integer samples"));
        };
        let n = v.len();
        if n == 0 {
            return Ok(self.range.index_frame(frame, Vec::new()));
        }
        let src = gpu.upload::<f32>("float_bins.in", v)?;
        let mut out = gpu.buffer::<u16>("float_bins.out", n)?;
        let r = &self.range;
        let (n64, bins) = (n as u64, r.count);
        // SAFETY: float_bins(in, n, lo, hi, delta, step, bins, out) in float_bins.cu; `src` and
        // `out` hold `n` samples.
        unsafe {
            launch!(gpu, kernels::FLOAT_BINS, "float_bins", histopipe_gpu::launch::cover(n, 256);
                &*src, &n64, &r.lo, &r.hi, &r.delta, &r.step, &bins, &mut *out)
        }?;
        let classes = gpu.download_vec(&out, n)?;
        Ok(self.range.index_frame(frame, classes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_edges_and_classes() {
        let r = FloatRange::new(Some((0.0, 1.0)), Some(10), &[]).unwrap();
        assert_eq!(r.edge(0), 0.0);
        assert_eq!(r.edge(10), 1.0);
        assert_eq!(r.edge(7), 7.0 * 0.1);
        // 0.7f32 lies under the f64 edge 0.7000000000000001: bin 6.
        assert_eq!(r.class(0.7), 6);
        assert_eq!(r.class(1.0), 9);
        assert_eq!(r.class(0.0), 0);
        assert_eq!(r.class(-0.0), 0);
        assert_eq!(r.class(-1e-30), 10);
        assert_eq!(r.class(1.5), 11);
        assert_eq!(r.class(f32::NAN), 12);
        assert_eq!(r.class(f32::NEG_INFINITY), 13);
        assert_eq!(r.class(f32::INFINITY), 14);
    }

    #[test]
    fn float_default_range_is_the_finite_extremes() {
        let r = FloatRange::new(None, Some(4), &[f32::NAN, 2.0, f32::INFINITY, -1.0]).unwrap();
        assert_eq!((r.lo, r.hi), (-1.0, 2.0));
        let r = FloatRange::new(None, Some(4), &[3.0, 3.0]).unwrap();
        assert_eq!((r.lo, r.hi), (2.5, 3.5));
        let r = FloatRange::new(None, None, &[f32::NAN]).unwrap();
        assert_eq!((r.lo, r.hi, r.count()), (0.0, 1.0, 256));
        assert!(FloatRange::new(Some((1.0, 0.0)), None, &[]).is_err());
        assert!(FloatRange::new(Some((-1e308, 1e308)), None, &[]).is_err());
    }

    #[test]
    fn int_range_classes() {
        let r = IntRange::new(10.0, 19.0, Some(5)).unwrap();
        assert_eq!(r.range(0), (10, 11));
        assert_eq!(r.range(4), (18, 19));
        let f = Frame::new(4, 1, 255, Pixels::U8(vec![0, 10, 19, 200].into()));
        let (idx, layout) = r.index_frame(&f).unwrap();
        assert_eq!(layout.outside, vec![Outside::Below, Outside::Above]);
        assert_eq!(idx.pixels, Pixels::U8(vec![5, 0, 4, 6].into()));
        assert_eq!(idx.maxval, 6);
        let (bins, outside) = layout.split(&[1u64, 0, 0, 0, 1, 1, 1]);
        assert_eq!((bins, outside), (vec![1, 0, 0, 0, 1], [1, 1, 0, 0, 0]));
        // The whole 16-bit range: no outside classes, 65536 bins.
        assert_eq!(IntRange::new(0.0, 65535.0, None).unwrap().layout(65535).classes(), 65536);
        assert!(IntRange::new(0.5, 3.0, None).is_err());
        assert!(IntRange::new(0.0, 3.0, Some(5)).is_err());
    }
}
