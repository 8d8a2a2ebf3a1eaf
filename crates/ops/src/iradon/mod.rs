//! `iradon`: filtered back-projection, the inverse of [`radon`](crate::radon), as scikit-image's
//! `skimage.transform.iradon(radon_image, theta, output_size, filter_name, interpolation='linear',
//! circle)`, in an arithmetic that gives the same bytes on the CPU and the GPU.
//!
//! The sinogram holds S0 positions (rows) by A angles (columns). In scikit-image's steps:
//! 1. with `circle`, each column is padded with zeros to S = ceil(sqrt 2 S0), S0 div 2 moved to
//!    S div 2 (its `_sinogram_circle_to_square`); else S = S0;
//! 2. each column is padded with zeros to P = max(64, the power of two at or above 2 S), taken
//!    through the FFT, multiplied by the filter ([`fourier_filter`]), taken back, and its first
//!    S values kept (the real part): the filtered sinogram, `f64`;
//! 3. output pixel (i, j) of the n x n frame, radius r = n div 2, is the sum over the angles t of
//!    the filtered column read linearly (numpy's `interp`, 0 outside) at position
//!    p = (j - r) cos t - (i - r) sin t (centre S div 2), times pi / (2 A); with `circle`, 0
//!    outside the circle (i - r)^2 + (j - r)^2 <= r^2.
//!
//! The arithmetic: steps 1 and 2 run once on the host in `f64` (rustfft's scalar FFT, whose
//! output does not depend on the processor's vector instructions), for either backend: both read
//! the same filtered sinogram. Step 3 is `f64` with each product and sum rounded once (no fused
//! multiply-add; kernels-common/iradon.cu spells out `__dmul_rn`, `__dadd_rn`), cos t and sin t
//! computed once on the host, and the angles added in their order, one pixel by one thread:
//! [`Iradon::pixel`] is the definition both backends compute.

use std::f64::consts::PI;
use std::sync::Arc;

use histopipe_frame::{Frame, Pixels};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlannerScalar};

use crate::angles::{Angles, MAX_ANGLES};
use crate::{canonical_nan, parallel, Gpu, Op, OpError, Work};

mod cpu;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use gpu::IradonPlan;

/// The largest side of the output and the longest sinogram column: the FFT's length P (up to 4
/// times a column's) and every index stay far inside `usize`, `u32` and `f64`'s exact integers.
pub const MAX_SIDE: usize = 1 << 24;

/// The filters, by the names `--filter` takes (scikit-image's `filter_name`; `none` is its None).
pub const FILTER_NAMES: &[&str] = &["ramp", "shepp-logan", "cosine", "hamming", "hann", "none"];

/// scikit-image's `filter_name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Filter {
    #[default]
    Ramp,
    SheppLogan,
    Cosine,
    Hamming,
    Hann,
    /// No filter: every frequency times 1.
    None,
}

impl Filter {
    /// The filter `name` names ([`FILTER_NAMES`]).
    pub fn from_name(name: &str) -> Option<Filter> {
        let all =
            [Filter::Ramp, Filter::SheppLogan, Filter::Cosine, Filter::Hamming, Filter::Hann, Filter::None];
        FILTER_NAMES.iter().position(|n| *n == name).map(|i| all[i])
    }
}

/// `iradon`'s parameters, as the command line gives them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IradonParams {
    /// The sinogram's angles; `None`: scikit-image's default, A angles evenly spaced over
    /// [0, 180) ([`default_angles`]).
    pub angles: Option<Angles>,
    /// The output's side (scikit-image's `output_size`); `None`: its default ([`output_side`]).
    pub size: Option<usize>,
    pub filter: Filter,
    /// scikit-image's `circle=True`.
    pub circle: bool,
}

/// scikit-image's default `theta`: `np.linspace(0, 180, count, endpoint=False)`, angle k being
/// k (180 / count) (numpy's step, then the product, each rounded once).
pub fn default_angles(count: usize) -> Angles {
    let step = 180.0 / count as f64;
    Angles((0..count).map(|k| k as f64 * step).collect())
}

/// scikit-image's default `output_size` for S0 positions: S0 with `circle`, else
/// floor(sqrt(S0^2 / 2)) (in `f64`).
pub fn output_side(positions: usize, circle: bool) -> usize {
    if circle {
        positions
    } else {
        let s = positions as f64;
        (s * s / 2.0).sqrt().floor() as usize
    }
}

/// The FFT's length for S positions: max(64, the power of two at or above 2 S) (scikit-image's
/// `max(64, int(2 ** np.ceil(np.log2(2 * img_shape))))`).
pub fn fft_len(positions: usize) -> usize {
    (2 * positions).next_power_of_two().max(64)
}

/// scikit-image's `_get_fourier_filter(size, filter_name)`, times 1 / `size` (numpy's inverse
/// FFT's factor, exact: `size` is a power of two): f(0) = 1/4, f(k) = -1 / (pi n_k)^2 at odd k
/// (n_k = k for k <= size / 2, size - k above), 0 at even k; the ramp is 2 Re FFT(f), and the
/// other filters multiply it by their window (in numpy's order of operations).
pub fn fourier_filter(size: usize, filter: Filter, fft: &dyn Fft<f64>) -> Vec<f64> {
    let half = size / 2;
    let mut f = vec![Complex::new(0.0, 0.0); size];
    f[0].re = 0.25;
    for k in (1..size).step_by(2) {
        let n = if k <= half { k } else { size - k } as f64;
        let pn = PI * n;
        f[k].re = -1.0 / (pn * pn);
    }
    fft.process(&mut f);
    let mut ramp: Vec<f64> = f.iter().map(|c| 2.0 * c.re).collect();
    // fftshift: element m of the shifted array is element (m + size / 2) mod size.
    let shifted = |window: &dyn Fn(usize) -> f64, m: usize| window((m + half) % size);
    let m1 = size as f64 - 1.0;
    match filter {
        Filter::Ramp => {}
        Filter::SheppLogan => {
            let val = 1.0 / size as f64;
            for (k, r) in ramp.iter_mut().enumerate().skip(1) {
                let freq = if k < half { k as f64 } else { k as f64 - size as f64 } * val;
                let omega = PI * freq;
                *r *= omega.sin() / omega;
            }
        }
        Filter::Cosine => {
            let step = PI / size as f64;
            let window = |k: usize| (k as f64 * step).sin();
            ramp.iter_mut().enumerate().for_each(|(m, r)| *r *= shifted(&window, m));
        }
        Filter::Hamming | Filter::Hann => {
            let (a, b) = if filter == Filter::Hamming { (0.54, 0.46) } else { (0.5, 0.5) };
            let window = |k: usize| {
                let n = (1.0 - size as f64) + 2.0 * k as f64;
                a + b * (PI * n / m1).cos()
            };
            ramp.iter_mut().enumerate().for_each(|(m, r)| *r *= shifted(&window, m));
        }
        Filter::None => ramp.iter_mut().for_each(|r| *r = 1.0),
    }
    let inverse = 1.0 / size as f64;
    ramp.iter_mut().for_each(|r| *r *= inverse);
    ramp
}

/// `iradon` for sinograms of one size.
#[derive(Debug, Clone, PartialEq)]
pub struct Iradon {
    /// The sinogram's positions S0 (its height) and angles A (its width).
    pub positions: usize,
    /// The column's length once padded (S: S0, or with `circle` ceil(sqrt 2 S0)), and where its
    /// first value sits in it.
    pub padded: usize,
    pub pad_before: usize,
    /// The FFT's length P ([`fft_len`]).
    pub fft_len: usize,
    /// The output's side n.
    pub side: usize,
    pub circle: bool,
    pub filter: Filter,
    /// Each angle's cos and sin, in `f64` (numpy's `cos(deg2rad(theta))`).
    pub trig: Vec<[f64; 2]>,
}

impl IradonParams {
    /// The reconstruction from sinograms of `positions` rows and `angles` columns.
    pub fn for_size(&self, positions: usize, angles: usize) -> Result<Iradon, OpError> {
        if positions == 0 || angles == 0 {
            return Err(OpError::invalid(format!(
                "a sinogram of {positions} positions and {angles} angles has no reconstruction"
            )));
        }
        let list = match &self.angles {
            Some(list) if list.len() != angles => {
                return Err(OpError::param(
                    "angles",
                    format!("({} of them)", list.len()),
                    format!("the sinogram has {angles} angles (columns)"),
                ))
            }
            Some(list) => list.clone(),
            None => default_angles(angles),
        };
        if angles > MAX_ANGLES {
            return Err(OpError::invalid(format!(
                "a sinogram of {angles} angles, over the {MAX_ANGLES} allowed"
            )));
        }
        if positions > MAX_SIDE {
            return Err(OpError::invalid(format!(
                "a sinogram of {positions} positions, over the {MAX_SIDE} allowed"
            )));
        }
        let side = self.size.unwrap_or_else(|| output_side(positions, self.circle));
        if side == 0 {
            return Err(OpError::invalid(format!(
                "a sinogram of {positions} positions makes an output of side 0 (floor(sqrt({positions}^2 / 2))): give "
            ))
            .and_param("size"));
        }
        if side > MAX_SIDE {
            return Err(OpError::param("size", side, format!("give 1 to {MAX_SIDE}")));
        }
        let (padded, pad_before) = if self.circle {
            // numpy: int(np.ceil(np.sqrt(2) * S0)), the old centre S0 div 2 moved to S div 2.
            let s = (std::f64::consts::SQRT_2 * positions as f64).ceil() as usize;
            (s, s / 2 - positions / 2)
        } else {
            (positions, 0)
        };
        let trig = list
            .iter()
            .map(|deg| {
                let t = deg.to_radians();
                [t.cos(), t.sin()]
            })
            .collect();
        Ok(Iradon {
            positions,
            padded,
            pad_before,
            fft_len: fft_len(padded),
            side,
            circle: self.circle,
            filter: self.filter,
            trig,
        })
    }
}

/// Columns of the sinogram filtered in one piece of work (each column's FFT is independent).
const COLUMNS_PER_PART: usize = 8;

impl Iradon {
    /// The output's size: n x n.
    pub fn out_size(&self) -> (usize, usize) {
        (self.side, self.side)
    }

    /// The factor of the sum: pi / (2 A), in `f64`.
    pub fn scale(&self) -> f64 {
        PI / (2 * self.trig.len()) as f64
    }

    /// The filtered sinogram, angle-major (column k's S values, then column k + 1's), from the
    /// sinogram's samples (`S0 x A`, row-major) as `f64`: steps 1 and 2 of the module's doc. One
    /// column is made by one thread, the same whichever.
    pub fn filtered(&self, samples: &[f64]) -> Vec<f64> {
        let (s0, angles, p) = (self.positions, self.trig.len(), self.fft_len);
        let mut planner = FftPlannerScalar::<f64>::new();
        let forward: Arc<dyn Fft<f64>> = planner.plan_fft_forward(p);
        let inverse: Arc<dyn Fft<f64>> = planner.plan_fft_inverse(p);
        let filter = fourier_filter(p, self.filter, forward.as_ref());
        let columns: Vec<usize> = (0..angles).collect();
        let work = angles.saturating_mul(p).saturating_mul(p.trailing_zeros() as usize + 1);
        let parts = parallel::parts_split_from(work, 1 << 17, 1 << 15).min(angles.div_ceil(COLUMNS_PER_PART));
        let made = parallel::map_parts(&columns, angles.div_ceil(parts.max(1)), |_, part| {
            let mut buffer = vec![Complex::new(0.0, 0.0); p];
            let mut scratch = vec![
                Complex::new(0.0, 0.0);
                forward.get_inplace_scratch_len().max(inverse.get_inplace_scratch_len())
            ];
            let mut out = Vec::with_capacity(part.len() * self.padded);
            for &k in part {
                buffer.iter_mut().for_each(|c| *c = Complex::new(0.0, 0.0));
                for x in 0..s0 {
                    buffer[self.pad_before + x].re = samples[x * angles + k];
                }
                forward.process_with_scratch(&mut buffer, &mut scratch);
                buffer.iter_mut().zip(&filter).for_each(|(c, &f)| *c *= f);
                inverse.process_with_scratch(&mut buffer, &mut scratch);
                out.extend(buffer[..self.padded].iter().map(|c| c.re));
            }
            out
        });
        made.concat()
    }

    /// Output pixel (i, j) (row i, column j) from the filtered sinogram `filtered`: the
    /// per-pixel definition both backends compute.
    pub fn pixel(&self, filtered: &[f64], i: usize, j: usize) -> f32 {
        let r = (self.side / 2) as i64;
        let (di, dj) = (i as i64 - r, j as i64 - r);
        if self.circle && di * di + dj * dj > r * r {
            return 0.0;
        }
        let (di, dj) = (di as f64, dj as f64);
        let s = self.padded;
        let mut sum = 0f64;
        for (k, &[cos, sin]) in self.trig.iter().enumerate() {
            let t = dj * cos - di * sin;
            sum += interp(&filtered[k * s..(k + 1) * s], t);
        }
        canonical_nan((sum * self.scale()) as f32)
    }
}

/// numpy's `interp(t, xp, column, left=0, right=0)` with xp = -(S div 2), ..., S - 1 - S div 2:
/// 0 outside, the column's value where t is one of xp (its end included), else
/// slope (t - xp[j]) + column[j], slope = column[j + 1] - column[j], and where that is NaN (an
/// infinity) numpy's second try slope (t - xp[j + 1]) + column[j + 1], and column[j] when the
/// two are equal (iradon.cu's `iradon_interp` is the same expressions).
pub fn interp(column: &[f64], t: f64) -> f64 {
    let s = column.len();
    let h = s / 2;
    if t < -(h as f64) || t > (s - 1 - h) as f64 {
        return 0.0;
    }
    // floor(t), exactly, without a call to libm's floor (x86-64's baseline has no instruction
    // for it): |t| < 2^25 here, so the truncation is exact.
    let truncated = t as i64;
    let floor = if truncated as f64 > t { truncated - 1 } else { truncated };
    let frac = t - floor as f64;
    let j = (floor + h as i64) as usize;
    if frac == 0.0 {
        return column[j];
    }
    let (a, b) = (column[j], column[j + 1]);
    let slope = b - a;
    let v = slope * frac + a;
    if !v.is_nan() {
        return v;
    }
    let v = slope * (frac - 1.0) + b;
    if v.is_nan() && a == b {
        a
    } else {
        v
    }
}

impl Iradon {
    fn check(&self, frame: &Frame) -> Result<(), OpError> {
        if frame.channels.count() != 1 || (frame.height, frame.width) != (self.positions, self.trig.len()) {
            return Err(OpError::invalid(format!(
                "a reconstruction from sinograms of {} positions x {} angles given a {}x{} {} frame",
                self.positions,
                self.trig.len(),
                frame.width,
                frame.height,
                frame.channels.name()
            )));
        }
        Ok(())
    }

    /// The frame's samples as `f64`, as they are (scikit-image's `preserve_range=True`).
    fn samples(frame: &Frame) -> Vec<f64> {
        match &frame.pixels {
            Pixels::U8(v) => v.iter().map(|&s| s as f64).collect(),
            Pixels::U16(v) => v.iter().map(|&s| s as f64).collect(),
            Pixels::F32(v) => v.iter().map(|&s| s as f64).collect(),
        }
    }

    fn output(&self, frame: &Frame, values: Vec<f32>) -> Frame {
        let mut out = frame.derive(self.side, self.side, 1, Pixels::F32(values.into()));
        out.geometry = None;
        out
    }
}

impl Op for Iradon {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        let filtered = self.filtered(&Iradon::samples(frame));
        Ok(self.output(frame, self.cpu_values(&filtered)))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        let filtered = self.filtered(&Iradon::samples(frame));
        Ok(self.output(frame, self.gpu_values(gpu, &filtered)?))
    }

    /// Every output pixel reads each angle's column once.
    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        let out = (self.side as f64) * (self.side as f64);
        self.trig.len() as f64 * out / (frame.width as f64 * frame.height as f64).max(1.0)
    }

    /// One linear read per output pixel and angle, and the angles' FFTs (P log2 P each, twice).
    fn work(&self, _: &Frame) -> Work {
        let (a, n, p) = (self.trig.len() as u128, self.side as u128, self.fft_len as u128);
        let log = self.fft_len.trailing_zeros() as u128;
        Work {
            amount: a * n * n + 2 * a * p * log,
            what: format!("{a} angles x ({n}^2 reads + 2 FFTs of {p})"),
        }
    }
}
