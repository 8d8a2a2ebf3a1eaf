//! `radon`: the Radon transform (sinogram) of a frame, in scikit-image's geometry
//! (`skimage.transform.radon(image, theta, circle)`), computed in an arithmetic that gives the same
//! bytes on the CPU and the GPU.
//!
//! The frame is placed in an N x N square, centre c = N div 2 (scikit-image's padding or, with
//! `circle`, its crop); for each angle t the square is turned by the inverse map
//!
//! sx = c + cos t (x - c) + sin t (y - c),   sy = c - sin t (x - c) + cos t (y - c)
//!
//! (scikit-image's rotation matrix), read bilinearly with 0 outside the frame, and each column x
//! summed over the rows y: value (x, t) = sum over y of bilinear(sx, sy). Position x is the output's
//! row, angle t its column.
//!
//! The arithmetic (docs/radon.md says it with every width):
//! - cos t and sin t once per angle on the host in `f64`, rounded to fixed point with [`FRAC`]
//!   fraction bits; each source coordinate an exact `i64` from the integer x and y, rounded half up
//!   to [`WEIGHT_BITS`] fraction bits: its floor picks the taps, the fraction is the tap weight.
//! - Integer frames: each row's bilinear value is an exact integer (sample x weight x weight), each
//!   position's sum an exact `u64`, so the order of the additions cannot change it; the one
//!   rounding is `sum as f64 * scale` to `f32`, with `scale` = 1 / (unit 2^24) and unit 255 for
//!   8-bit frames, 65535 for 16-bit ones (scikit-image's `img_as_float`), 1 for frames of maxval 1
//!   (NumPy's bool arrays, 0 and 1: `img_as_float` makes True 1.0) ([`Radon::unit`]).
//! - Float frames: the same taps and weights, the blend and the sum in `f64` in one order (rows
//!   top to bottom), no fused multiply-add; a tap of weight 0 is not read (so a NaN beside an
//!   exact pixel does not spread, as it does not in scikit-image).
//! - Only the rows where a tap can be inside the frame are visited: the range comes from the
//!   same integer formula on both backends ([`row_range`]); outside it every tap reads 0.
//!
//! The operation's parts: this module (the geometry and the per-position definition,
//! [`Radon::position_sum`]), `cpu` (positions on the pool's threads), [`gpu`] (the device plan,
//! kernels-common/radon.cu).

use histopipe_frame::{Frame, Pixels};

use crate::angles::Angles;
use crate::{canonical_nan, Gpu, Op, OpError, Work};

mod cpu;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use gpu::RadonPlan;

/// Fraction bits of the fixed-point cos and sin (and so of the exact source coordinates).
pub const FRAC: u32 = 30;
/// Fraction bits of a source coordinate once rounded: the bilinear weights are k / 2^12.
pub const WEIGHT_BITS: u32 = 12;
/// The weight of a whole pixel, 2^[`WEIGHT_BITS`].
pub const ONE: u32 = 1 << WEIGHT_BITS;
/// The largest side N of the square: the exact sums then fit `u64` (N 65535 2^24 < 2^64) and the
/// coordinates `i64` (below 2^57).
pub const MAX_SIDE: usize = 1 << 24;

/// `radon`'s parameters, as the command line gives them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RadonParams {
    pub angles: Angles,
    /// scikit-image's `circle=True`: crop to the centred square of the shorter side.
    pub circle: bool,
}

/// One angle's cos and sin in fixed point: round(cos t 2^[`FRAC`]), round(sin t 2^[`FRAC`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Trig {
    pub cos: i64,
    pub sin: i64,
}

impl Trig {
    /// The angle `degrees` (t = degrees pi / 180 in `f64`, as numpy's `deg2rad`).
    pub fn degrees(degrees: f64) -> Trig {
        let (sin, cos) = degrees.to_radians().sin_cos();
        let fixed = |v: f64| (v * (1u64 << FRAC) as f64).round() as i64;
        Trig { cos: fixed(cos), sin: fixed(sin) }
    }
}

/// Where the frame's pixels sit in the N x N square, and which of them are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Square {
    /// The side N, and the centre c = N div 2.
    pub side: usize,
    pub center: usize,
    /// The part of the frame that is read: its first column and row, and its size (the whole
    /// frame, or with `circle` the centred square of the shorter side).
    pub x0: usize,
    pub y0: usize,
    pub width: usize,
    pub height: usize,
    /// Where that part's top-left pixel sits in the square.
    pub pad_x: usize,
    pub pad_y: usize,
}

impl Square {
    /// scikit-image's square for a `width x height` frame: padded to the diagonal
    /// N = ceil(sqrt 2 max(W, H)), the frame's pixel (W div 2, H div 2) at the centre; or with
    /// `circle` cropped to N = min(W, H), from column ceil((W - N) / 2) and row ceil((H - N) / 2).
    pub fn new(width: usize, height: usize, circle: bool) -> Result<Square, OpError> {
        if width == 0 || height == 0 {
            return Err(OpError::invalid(format!("a {width}x{height} frame has no Radon transform")));
        }
        let side = if circle {
            width.min(height)
        } else {
            // numpy: pad = ceil(sqrt(2) * max - s), so s + pad = ceil(sqrt(2) * max) (the
            // subtraction of an integer below the diagonal is exact).
            let d = (std::f64::consts::SQRT_2 * width.max(height) as f64).ceil();
            if d > MAX_SIDE as f64 {
                MAX_SIDE + 1
            } else {
                d as usize
            }
        };
        if side > MAX_SIDE {
            return Err(OpError::invalid(format!(
                "a {width}x{height} frame makes a square of side {side}, over the {MAX_SIDE} allowed"
            )));
        }
        let center = side / 2;
        Ok(if circle {
            let (x0, y0) = ((width - side).div_ceil(2), (height - side).div_ceil(2));
            Square { side, center, x0, y0, width: side, height: side, pad_x: 0, pad_y: 0 }
        } else {
            let (pad_x, pad_y) = (center - width / 2, center - height / 2);
            Square { side, center, x0: 0, y0: 0, width, height, pad_x, pad_y }
        })
    }

    /// The samples read, with a border of one 0 on each side: `(width + 2) x (height + 2)`, the
    /// part's pixel (i, j) at (i + 1, j + 1). Within [`row_range`] every tap is inside it.
    pub fn bordered<T: Copy + Default>(&self, samples: &[T], frame_width: usize) -> Vec<T> {
        let pitch = self.width + 2;
        let mut out = vec![T::default(); pitch * (self.height + 2)];
        for j in 0..self.height {
            let from = (self.y0 + j) * frame_width + self.x0;
            out[(j + 1) * pitch + 1..][..self.width].copy_from_slice(&samples[from..from + self.width]);
        }
        out
    }
}

/// The position's fixed-point source coordinates at row 0, and their steps per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// 2^FRAC times the bordered column and row at y = 0, plus 2^(FRAC - WEIGHT_BITS - 1) so that
    /// truncating to WEIGHT_BITS fraction bits rounds half up.
    pub u: i64,
    pub v: i64,
}

/// `radon` for frames of one size.
#[derive(Debug, Clone, PartialEq)]
pub struct Radon {
    pub square: Square,
    pub trig: Vec<Trig>,
    /// The frame's size.
    pub width: usize,
    pub height: usize,
}

impl RadonParams {
    /// The transform of `width x height` frames.
    pub fn for_size(&self, width: usize, height: usize) -> Result<Radon, OpError> {
        if self.angles.is_empty() {
            return Err(OpError::param("angles", "(none)", "give at least one angle"));
        }
        let square = Square::new(width, height, self.circle)?;
        Ok(Radon { square, trig: self.angles.iter().map(Trig::degrees).collect(), width, height })
    }
}

/// The half of the last kept bit: added before truncation, it rounds the coordinates half up.
const HALF: i64 = 1 << (FRAC - WEIGHT_BITS - 1);

impl Radon {
    /// The output's size: angles wide, N high.
    pub fn out_size(&self) -> (usize, usize) {
        (self.trig.len(), self.square.side)
    }

    /// Where position `x` of the angle `t` starts (row 0): with dx = x - c and dy = -c,
    /// u = cos dx + sin dy + ((c - pad_x + 1) << FRAC) + HALF, v = -sin dx + cos dy + ((c - pad_y + 1)
    /// << FRAC) + HALF; each row adds (sin, cos).
    pub fn start(&self, t: Trig, x: usize) -> Start {
        let s = &self.square;
        let (c, dx) = (s.center as i64, x as i64 - s.center as i64);
        let u = t.cos * dx - t.sin * c + ((c - s.pad_x as i64 + 1) << FRAC) + HALF;
        let v = -t.sin * dx - t.cos * c + ((c - s.pad_y as i64 + 1) << FRAC) + HALF;
        Start { u, v }
    }

    /// The rows of position `x` of angle `t` whose taps can be inside the frame.
    pub fn rows(&self, t: Trig, x: usize) -> (usize, usize) {
        let s = &self.square;
        let at = self.start(t, x);
        let (u0, u1) = row_range(at.u, t.sin, ((s.width + 1) as i64) << FRAC, s.side as i64);
        let (v0, v1) = row_range(at.v, t.cos, ((s.height + 1) as i64) << FRAC, s.side as i64);
        let (lo, hi) = (u0.max(v0), u1.min(v1));
        (lo as usize, hi.max(lo) as usize)
    }

    /// The unit a sample of `frame` is divided by ([`Tap::UNIT`] of its type), but 1 for a frame of
    /// maxval 1: a NumPy bool array's False and True, which scikit-image's `img_as_float` makes
    /// 0.0 and 1.0 (not the 1/255 of a `uint8` 1).
    pub fn unit<T: Tap>(frame: &Frame) -> f64 {
        if frame.maxval == 1 {
            1.0
        } else {
            T::UNIT
        }
    }

    /// The scale from a sum to the output value: 1 / (unit 2^(2 WEIGHT_BITS)), unit 255 for 8-bit
    /// samples, 65535 for 16-bit ones and 1 for floats and booleans ([`Radon::unit`]).
    pub fn scale(unit: f64) -> f64 {
        1.0 / (unit * (ONE as f64 * ONE as f64))
    }

    /// The sum of position `x` for angle `t` over the bordered samples `b` ([`Square::bordered`]):
    /// the per-position definition both backends compute.
    pub fn position_sum<T: Tap>(&self, b: &[T], t: Trig, x: usize) -> T::Sum {
        let pitch = self.square.width + 2;
        let (lo, hi) = self.rows(t, x);
        let at = self.start(t, x);
        let (mut u, mut v) = (at.u + t.sin * lo as i64, at.v + t.cos * lo as i64);
        let mut sum = T::Sum::default();
        for _ in lo..hi {
            let (iu, iv) = ((u >> FRAC) as usize, (v >> FRAC) as usize);
            let wu = ((u >> (FRAC - WEIGHT_BITS)) as u32) & (ONE - 1);
            let wv = ((v >> (FRAC - WEIGHT_BITS)) as u32) & (ONE - 1);
            let k = iv * pitch + iu;
            T::add(&mut sum, [b[k], b[k + 1], b[k + pitch], b[k + pitch + 1]], wu, wv);
            u += t.sin;
            v += t.cos;
        }
        sum
    }
}

/// The integers y in [0, n) with 0 <= a + s y < limit, as [lo, hi) (empty: lo >= hi), by exact
/// integer division (radon.cu's `radon_rows` is the same formula).
pub fn row_range(a: i64, s: i64, limit: i64, n: i64) -> (i64, i64) {
    let (lo, hi) = match s {
        0 if (0..limit).contains(&a) => (0, n),
        0 => (0, 0),
        // a + s y >= 0 and a + s y <= limit - 1.
        s if s > 0 => (ceil_div(-a, s), (limit - 1 - a).div_euclid(s) + 1),
        s => (ceil_div(a - limit + 1, -s), a.div_euclid(-s) + 1),
    };
    (lo.clamp(0, n), hi.clamp(0, n))
}

/// ceil(a / b) for b > 0.
fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// A sample type's tap arithmetic: one row's bilinear value added to the position's sum.
pub trait Tap: Copy + Default + Send + Sync {
    type Sum: Copy + Default + Send;
    /// scikit-image's `img_as_float` unit of the type: 255 for 8-bit samples, 65535 for 16-bit
    /// ones (whatever the frame's maxval, but 1: [`Radon::unit`]), 1 for floats.
    const UNIT: f64;
    /// Adds the blend of the taps (top left, top right, bottom left, bottom right) with column
    /// weight `wu` and row weight `wv` (of [`ONE`]) to `sum`.
    fn add(sum: &mut Self::Sum, taps: [Self; 4], wu: u32, wv: u32);
    /// The output value of a sum.
    fn value(sum: Self::Sum, scale: f64) -> f32;
}

/// Integers: top = s00 (ONE - wu) + s01 wu, bottom likewise (below 2^28), the row
/// top (ONE - wv) + bottom wv (below 2^40) added to a `u64`.
fn add_integers(sum: &mut u64, [s00, s01, s10, s11]: [u32; 4], wu: u32, wv: u32) {
    let top = s00 * (ONE - wu) + s01 * wu;
    let bottom = s10 * (ONE - wu) + s11 * wu;
    *sum += top as u64 * (ONE - wv) as u64 + bottom as u64 * wv as u64;
}

/// [`Tap`] for an integer sample type of `unit`: [`add_integers`] into a `u64`.
macro_rules! integer_tap {
    ($t:ty, $unit:expr) => {
        impl Tap for $t {
            type Sum = u64;
            const UNIT: f64 = $unit;
            fn add(sum: &mut u64, taps: [$t; 4], wu: u32, wv: u32) {
                add_integers(sum, taps.map(u32::from), wu, wv)
            }
            fn value(sum: u64, scale: f64) -> f32 {
                (sum as f64 * scale) as f32
            }
        }
    };
}

integer_tap!(u8, 255.0);
integer_tap!(u16, 65535.0);

impl Tap for f32 {
    type Sum = f64;
    const UNIT: f64 = 1.0;
    /// In `f64`, each operation rounded once (radon.cu: `__dmul_rn`, `__dadd_rn`); a weight-0
    /// tap is not read.
    fn add(sum: &mut f64, [s00, s01, s10, s11]: [f32; 4], wu: u32, wv: u32) {
        let blend = |a: f32, b: f32, w: u32| {
            if w == 0 {
                a as f64 * ONE as f64
            } else {
                a as f64 * (ONE - w) as f64 + b as f64 * w as f64
            }
        };
        let top = blend(s00, s01, wu);
        let row = if wv == 0 {
            top * ONE as f64
        } else {
            top * (ONE - wv) as f64 + blend(s10, s11, wu) * wv as f64
        };
        *sum += row;
    }
    /// A NaN is the quiet NaN [`CANONICAL_NAN`](crate::CANONICAL_NAN): which NaN a sum holds
    /// depends on which of its NaN operands (the file's, or inf - inf) the compiler put first.
    fn value(sum: f64, scale: f64) -> f32 {
        canonical_nan((sum * scale) as f32)
    }
}

/// Whether a sample of `frame` outside scikit-image's reconstruction circle is not 0 (NaN counts):
/// a pixel (x, y) with (x - W div 2)^2 + (y - H div 2)^2 > (min(W, H) div 2)^2. scikit-image warns
/// then, with `circle=True`.
pub fn outside_circle(frame: &Frame) -> bool {
    let (w, h) = (frame.width as i64, frame.height as i64);
    let r = w.min(h) / 2;
    let (cx, cy) = (w / 2, h / 2);
    (0..h).any(|y| {
        (0..w).any(|x| {
            let d = (x - cx) * (x - cx) + (y - cy) * (y - cy);
            let i = (y * w + x) as usize;
            d > r * r
                && match &frame.pixels {
                    Pixels::F32(v) => v[i] != 0.0,
                    p => p.get(i) != 0,
                }
        })
    })
}

impl Radon {
    fn output(&self, frame: &Frame, values: Vec<f32>) -> Frame {
        let (w, h) = self.out_size();
        let mut out = frame.derive(w, h, 1, Pixels::F32(values.into()));
        out.geometry = None;
        out
    }

    fn check(&self, frame: &Frame) -> Result<(), OpError> {
        if frame.channels.count() != 1 || (frame.width, frame.height) != (self.width, self.height) {
            return Err(OpError::invalid(format!(
                "a transform of {}x{} gray frames given a {}x{} {} one",
                self.width,
                self.height,
                frame.width,
                frame.height,
                frame.channels.name()
            )));
        }
        Ok(())
    }
}

impl Op for Radon {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        let values = match &frame.pixels {
            Pixels::U8(v) => self.cpu_values(v, self.width, Radon::unit::<u8>(frame)),
            Pixels::U16(v) => self.cpu_values(v, self.width, Radon::unit::<u16>(frame)),
            Pixels::F32(v) => self.cpu_values(v, self.width, Radon::unit::<f32>(frame)),
        };
        Ok(self.output(frame, values))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        let values = match &frame.pixels {
            Pixels::U8(v) => self.gpu_values(gpu, v, Radon::unit::<u8>(frame))?,
            Pixels::U16(v) => self.gpu_values(gpu, v, Radon::unit::<u16>(frame))?,
            Pixels::F32(v) => self.gpu_values(gpu, v, Radon::unit::<f32>(frame))?,
        };
        Ok(self.output(frame, values))
    }

    /// Every pixel is read (by its four taps) once per angle.
    fn visits_per_pixel(&self, _: &Frame) -> f64 {
        self.trig.len() as f64
    }

    /// A read of the padded square (its N^2 positions) per angle, zeros included.
    fn work(&self, _: &Frame) -> Work {
        let n = self.square.side as u128;
        Work {
            amount: self.trig.len() as u128 * n * n,
            what: format!("{} angles x {n}^2 reads", self.trig.len()),
        }
    }
}
