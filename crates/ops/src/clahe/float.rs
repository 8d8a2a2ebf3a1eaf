//! CLAHE of float frames: scikit-image's `exposure.equalize_adapthist(image, kernel_size,
//! clip_limit, nbins=256)` (0.26, exposure/_adapthist.py) on a float32 gray image, step for step
//! in its own arithmetic, returning float32 as it does. Host code, which both backends run.
//!
//! Parameters: kernel_size = (max(h div GY, 1), max(w div GX, 1)) from the grid (the default 8x8
//! is scikit-image's default kernel_size); clip_limit = C / 256, C the clip limit relative to a
//! bin's mean count, as for integer frames (0 or less: no clipping).
//!
//! 0. NaN and infinite samples are refused (scikit-image casts NaN to an integer, which is
//!    undefined, and refuses infinities). A frame with samples outside -1..1, which scikit-image's
//!    `img_as_uint` refuses, is first brought into 0..1 as its users do it, by
//!    `rescale_intensity(image, out_range=(0, 1))` in float32: x' = f32(f32(x - lo) / f32(hi - lo))
//!    with lo, hi its least and greatest (hi - lo in f64, then f32), or min(max(x, 0), 1) when they
//!    are equal. The answer is then `equalize_adapthist(rescale_intensity(image, out_range=(0.0,
//!    1.0)), ...)`.
//! 1. `img_as_uint`: u = clip(rint(f32(x * 65535)), 0, 65535), rint half to even.
//! 2. `rescale_intensity(u, out_range=(0, 2^14 - 1))`, rounded half to even: with lo, hi the least
//!    and greatest u, v = round(f64(u - lo) / f64(hi - lo) * 16383), or min(u, 16383) when lo = hi.
//! 3. `_clahe`: tiles of kh x kw pixels from (0, 0), ny = ceil(h / kh) down and nx = ceil(w / kw)
//!    across, the frame extended past its bottom and right by reflection (numpy.pad's `reflect`);
//!    each tile's histogram of v div 65 in 256 bins, clipped at
//!    limit = trunc(max(clip_limit kh kw, 1)) (kh kw without clipping) by `clip_histogram`'s
//!    redistribution, and mapped to lut(b) = trunc(min(f64(cdf(b)) * (16383 / (kh kw)), 16383)).
//!    Pixel (y, x) has py = y + kh div 2, by = py div kh, r = py mod kh (likewise px, bx, c); its
//!    four tables are of tile rows by - 1, by and columns bx - 1, bx (clamped to the grid), weighed
//!    by fy = r / kh, fx = c / kw (1 - f for the first of each): each term f32(lut * (wx * wy)) in
//!    f64, summed in f32 in the order (by - 1, bx - 1), (by - 1, bx), (by, bx - 1), (by, bx), and
//!    truncated to an integer o.
//! 4. `rescale_intensity` of o as float32: f32(o - lo) / f32(hi - lo) over its least and greatest,
//!    or min(o, 1) when they are equal.

use std::borrow::Cow;

use histopipe_frame::{Frame, Pixels};

use super::{Clahe, MAX_TABLE_ENTRIES};
use crate::OpError;

/// scikit-image's NR_OF_GRAY: the levels its CLAHE works in.
const GRAYS: usize = 1 << 14;
/// Its nbins (`equalize_adapthist`'s default, the one `clahe` uses).
const NBINS: usize = 256;
/// `bin_size = 1 + NR_OF_GRAY // nbins`.
const BIN_SIZE: u16 = (1 + GRAYS / NBINS) as u16;

/// scikit-image's kernel_size (rows, columns) for a `width x height` frame and the grid.
pub fn kernel_size(clahe: &Clahe, width: usize, height: usize) -> (usize, usize) {
    ((height / clahe.tiles.y).max(1), (width / clahe.tiles.x).max(1))
}

/// The float frame's CLAHE (the module's documentation); one plane of float samples.
pub fn clahe(clahe: &Clahe, frame: &Frame) -> Result<Frame, OpError> {
    let Pixels::F32(v) = &frame.pixels else {
        return Err(OpError::invalid("float CLAHE of a frame of integer samples"));
    };
    if frame.channels.count() != 1 {
        return Err(OpError::invalid("float CLAHE of a frame of several channels"));
    }
    let (w, h) = (frame.width, frame.height);
    if w == 0 || h == 0 {
        return Ok(frame.clone());
    }
    let levels = to_levels(&within_one(v)?);
    let kernel = kernel_size(clahe, w, h);
    let (ny, nx) = (h.div_ceil(kernel.0), w.div_ceil(kernel.1));
    let entries = ny as u128 * nx as u128 * NBINS as u128;
    if entries > MAX_TABLE_ENTRIES as u128 {
        return Err(OpError::param(
            "tiles",
            format!("{}x{}", clahe.tiles.x, clahe.tiles.y),
            format!("{nx}x{ny} tiles of {NBINS} bins, over the limit of {MAX_TABLE_ENTRIES} table entries"),
        ));
    }
    let equalized = Tiles { w, h, kernel, ny, nx }.apply(&levels, clip_limit(clahe.clip, kernel));
    let out = rescale_to_unit(&equalized);
    Ok(frame.derive(w, h, frame.maxval, Pixels::F32(out.into())))
}

/// Step 0: the samples within -1..1, as they are or rescaled onto 0..1; NaN and infinities
/// refused.
fn within_one(v: &[f32]) -> Result<Cow<'_, [f32]>, OpError> {
    if let Some(bad) = v.iter().find(|s| !s.is_finite()) {
        return Err(OpError::invalid(format!(
            "a sample {bad}: float frames take finite samples (scikit-image's equalize_adapthist \
             makes them integers, and NaN and infinities have no integer)"
        )));
    }
    let (lo, hi) = v.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
    if v.is_empty() || (lo >= -1.0 && hi <= 1.0) {
        return Ok(Cow::Borrowed(v));
    }
    if lo == hi {
        return Ok(Cow::Owned(v.iter().map(|&x| x.clamp(0.0, 1.0)).collect()));
    }
    let span = (hi as f64 - lo as f64) as f32;
    Ok(Cow::Owned(v.iter().map(|&x| (x - lo) / span).collect()))
}

/// Steps 1 and 2: samples within -1..1 as scikit-image's 14-bit levels.
fn to_levels(v: &[f32]) -> Vec<u16> {
    let u: Vec<u16> = v.iter().map(|&x| (x * 65535.0).round_ties_even().clamp(0.0, 65535.0) as u16).collect();
    let (lo, hi) = u.iter().fold((u16::MAX, 0), |(l, h), &x| (l.min(x), h.max(x)));
    if lo == hi {
        return u.iter().map(|&x| x.min(GRAYS as u16 - 1)).collect();
    }
    let (lo, span) = (lo as f64, (hi - lo) as f64);
    u.iter().map(|&x| ((x as f64 - lo) / span * (GRAYS - 1) as f64).round_ties_even() as u16).collect()
}

/// `_clahe`'s clip limit of a tile of `kernel` pixels: trunc(max(clip_limit * kh kw, 1)) with
/// clip_limit = clip / 256, no more than the tile's pixels (a limit it never reaches; so without
/// clipping).
fn clip_limit(clip: f64, kernel: (usize, usize)) -> i64 {
    let elements = (kernel.0 * kernel.1) as i64;
    if clip / NBINS as f64 > 0.0 {
        ((clip / NBINS as f64 * elements as f64).max(1.0) as i64).min(elements)
    } else {
        elements
    }
}

/// `clip_histogram`: scikit-image's clipping at `limit` and redistribution, statement for statement.
fn clip_histogram(hist: &mut [i64; NBINS], limit: i64) {
    let mut excess: i64 = hist.iter().filter(|&&c| c > limit).map(|&c| c - limit).sum();
    hist.iter_mut().filter(|c| **c > limit).for_each(|c| *c = limit);
    let incr = excess.div_euclid(NBINS as i64);
    let upper = limit - incr;
    for c in hist.iter_mut().filter(|c| **c < upper) {
        excess -= incr;
        *c += incr;
    }
    for c in hist.iter_mut().filter(|c| **c >= upper && **c < limit) {
        excess += *c - limit;
        *c = limit;
    }
    while excess > 0 {
        let before = excess;
        for index in 0..NBINS {
            let under = hist.iter().filter(|&&c| c < limit).count() as i64;
            let step = (under / excess).max(1) as usize;
            for c in hist[index..].iter_mut().step_by(step).filter(|c| **c < limit) {
                *c += 1;
                excess -= 1;
            }
            if excess <= 0 {
                break;
            }
        }
        if before == excess {
            break;
        }
    }
}

/// `numpy.pad(..., mode='reflect')`'s source index of `i` (which may lie before 0 or past n - 1).
fn reflect(i: isize, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let period = 2 * (n as isize - 1);
    let k = i.rem_euclid(period);
    (if k >= n as isize { period - k } else { k }) as usize
}

/// The tiling of step 3.
struct Tiles {
    w: usize,
    h: usize,
    /// kh, kw.
    kernel: (usize, usize),
    ny: usize,
    nx: usize,
}

impl Tiles {
    /// Each tile's table (`map_histogram` of its clipped histogram), tile rows by tile columns.
    fn tables(&self, v: &[u16], limit: i64) -> Vec<[u16; NBINS]> {
        use rayon::prelude::*;
        let (kh, kw) = self.kernel;
        let elements = (kh * kw) as f64;
        let scale = (GRAYS - 1) as f64 / elements;
        (0..self.ny * self.nx)
            .into_par_iter()
            .map(|t| {
                let (ty, tx) = (t / self.nx, t % self.nx);
                let mut hist = [0i64; NBINS];
                for y in ty * kh..(ty + 1) * kh {
                    let row = reflect(y as isize, self.h) * self.w;
                    for x in tx * kw..(tx + 1) * kw {
                        hist[(v[row + reflect(x as isize, self.w)] / BIN_SIZE) as usize] += 1;
                    }
                }
                clip_histogram(&mut hist, limit);
                let mut table = [0u16; NBINS];
                let mut cdf = 0i64;
                for (slot, &c) in table.iter_mut().zip(&hist) {
                    cdf += c;
                    *slot = (cdf as f64 * scale + 0.0).min((GRAYS - 1) as f64) as u16;
                }
                table
            })
            .collect()
    }

    /// Every pixel interpolated between its four tiles' tables, as integers (o of step 3).
    fn apply(&self, v: &[u16], limit: i64) -> Vec<u16> {
        use rayon::prelude::*;
        let tables = self.tables(v, limit);
        let (kh, kw) = self.kernel;
        // A tile row or column before the first and after the last is the grid's edge.
        let clamp = |t: usize, n: usize| t.saturating_sub(1).min(n - 1);
        let mut out = vec![0u16; v.len()];
        out.par_chunks_mut(self.w).enumerate().for_each(|(y, row)| {
            let py = y + kh / 2;
            let (by, r) = (py / kh, py % kh);
            let fy = r as f64 / kh as f64;
            let (t0, t1) = (clamp(by, self.ny), clamp(by + 1, self.ny));
            for (x, slot) in row.iter_mut().enumerate() {
                let px = x + kw / 2;
                let (bx, c) = (px / kw, px % kw);
                let fx = c as f64 / kw as f64;
                let (s0, s1) = (clamp(bx, self.nx), clamp(bx + 1, self.nx));
                let b = (v[y * self.w + x] / BIN_SIZE) as usize;
                let term = |ty: usize, tx: usize, wx: f64, wy: f64| {
                    (tables[ty * self.nx + tx][b] as f64 * (wx * wy)) as f32
                };
                let mut sum = 0f32;
                sum += term(t0, s0, 1.0 - fx, 1.0 - fy);
                sum += term(t0, s1, fx, 1.0 - fy);
                sum += term(t1, s0, 1.0 - fx, fy);
                sum += term(t1, s1, fx, fy);
                *slot = sum as u16;
            }
        });
        out
    }
}

/// Step 4: `rescale_intensity` of the integers as float32, onto 0..1.
fn rescale_to_unit(o: &[u16]) -> Vec<f32> {
    let (lo, hi) = o.iter().fold((u16::MAX, 0), |(l, h), &x| (l.min(x), h.max(x)));
    if lo == hi {
        return o.iter().map(|&x| (x as f32).min(1.0)).collect();
    }
    let span = (hi - lo) as f32;
    o.iter().map(|&x| (x - lo) as f32 / span).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_is_numpys() {
        // np.pad(np.arange(3), (2, 4), mode='reflect') = [2 1 0 1 2 1 0 1 2]
        let got: Vec<usize> = (-2..7).map(|i| reflect(i, 3)).collect();
        assert_eq!(got, [2, 1, 0, 1, 2, 1, 0, 1, 2]);
        assert_eq!(reflect(5, 1), 0);
    }

    /// scikit-image's clip_histogram on a histogram of one full bin (its output, from Python):
    /// clipped to 10, 3 handed to every other bin, then 1 more to each of the 255 under the
    /// limit for the 225 left, 30 more than there were (its loop hands a whole pass at a time).
    #[test]
    fn clipping_is_scikit_images() {
        let mut h = [0i64; NBINS];
        h[3] = 1000;
        clip_histogram(&mut h, 10);
        assert_eq!(h.iter().sum::<i64>(), 1030);
        assert_eq!(h[..6], [4, 4, 4, 10, 4, 4]);
    }

    #[test]
    fn a_frame_of_no_pixel_is_itself() {
        let f = Frame::new(0, 3, 1, Pixels::F32(Vec::new().into()));
        assert_eq!(clahe(&Clahe::default(), &f).unwrap(), f);
    }

    #[test]
    fn nan_and_infinities_are_refused() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let f = Frame::new(2, 1, 1, Pixels::F32(vec![0.5, bad].into()));
            assert!(clahe(&Clahe::default(), &f).is_err(), "{bad}");
        }
    }

    /// Within -1..1 as they are; otherwise onto 0..1 (a flat frame clipped to it).
    #[test]
    fn samples_outside_minus_one_to_one_are_rescaled() {
        assert_eq!(within_one(&[-1.0, 1.0]).unwrap().as_ref(), [-1.0, 1.0]);
        assert_eq!(within_one(&[2.0, 4.0, 3.0]).unwrap().as_ref(), [0.0, 1.0, 0.5]);
        assert_eq!(within_one(&[-5.0, -5.0]).unwrap().as_ref(), [0.0, 0.0]);
        assert_eq!(within_one(&[5.0]).unwrap().as_ref(), [1.0]);
    }
}
