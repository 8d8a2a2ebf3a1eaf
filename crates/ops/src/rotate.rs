//! `rotate`: turn a frame about its centre, keeping its size.
//!
//! Coordinates are pixel indices with y pointing down; the centre of a W x H frame is the point
//! ((W - 1) / 2, (H - 1) / 2). A positive angle turns the picture counter-clockwise as displayed.
//! Output pixel (x, y) takes its value from the input point (sx, sy) given by the inverse map
//!
//! sx = cos t x - sin t y + cx - (cos t cx - sin t cy)
//! sy = sin t x + cos t y + cy - (sin t cx + cos t cy)
//!
//! written as the [`Affine`] `new_to_old` and evaluated per pixel exactly as [`Affine::apply`]
//! evaluates it, in `f64`, by both backends (cos and sin are computed once, on the host). That map
//! is also what the output's geometry composes, so `colhist` finds the same pixels.
//!
//! Multiples of 90 degrees are never evaluated in floating point: they are pixel permutations in
//! integer arithmetic (with the same rounding as the general case where the centre falls between
//! pixels), whatever the interpolation.

use std::str::FromStr;

use histopipe_frame::{Affine, Frame, Geometry, Pixels};
use histopipe_gpu::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use histopipe_gpu::kernels;

use crate::{with_samples, Gpu, Op, OpError, Sample};

/// How a sample is read at a point between pixel centres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interpolation {
    /// The pixel at (floor(sx + 0.5), floor(sy + 0.5)).
    #[default]
    Nearest,
    /// The four pixels around the point, weighted by distance; see `docs/rotate.md`.
    Bilinear,
}

/// How far a frame is turned, counter-clockwise as displayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Turn {
    /// 0 to 3 quarter turns: an exact permutation of the pixels.
    Quarter(u8),
    /// Any other angle, by its cosine and sine.
    Angle { cos: f64, sin: f64 },
}

impl Turn {
    /// The turn by `degrees`; multiples of 90 (after reduction modulo 360, which is exact) are
    /// quarter turns.
    pub fn degrees(degrees: f64) -> Result<Turn, OpError> {
        if !degrees.is_finite() {
            return Err(OpError::invalid(format!("the angle {degrees} is not a finite number")));
        }
        let r = degrees % 360.0;
        if r % 90.0 == 0.0 {
            return Ok(Turn::Quarter(((r / 90.0) as i64).rem_euclid(4) as u8));
        }
        let (sin, cos) = r.to_radians().sin_cos();
        Ok(Turn::Angle { cos, sin })
    }

    /// The turn after which the direction (dx, dy) of the frame points straight down (+y), or
    /// `None` for the zero vector. Axis-parallel directions give exact quarter turns.
    pub fn making_vertical(dx: f64, dy: f64) -> Option<Turn> {
        // The forward map turns (dx, dy) into (cos dx + sin dy, -sin dx + cos dy); setting that to
        // (0, |v|) gives cos = dy / |v|, sin = -dx / |v|.
        match (dx == 0.0, dy == 0.0) {
            (true, true) => None,
            (true, false) => Some(Turn::Quarter(if dy > 0.0 { 0 } else { 2 })),
            (false, true) => Some(Turn::Quarter(if dx > 0.0 { 3 } else { 1 })),
            (false, false) => {
                let len = dx.hypot(dy);
                (len.is_finite() && len > 0.0).then(|| Turn::Angle { cos: dy / len, sin: -dx / len })
            }
        }
    }

    fn cos_sin(self) -> (f64, f64) {
        match self {
            Turn::Quarter(q) => [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][q as usize & 3],
            Turn::Angle { cos, sin } => (cos, sin),
        }
    }

    /// The map from output pixel coordinates to input ones for a `width x height` frame. For
    /// quarter turns every coefficient is an integer or a half-integer, so it is exact.
    pub fn new_to_old(self, width: usize, height: usize) -> Affine {
        let (cos, sin) = self.cos_sin();
        let (cx, cy) = ((width as f64 - 1.0) / 2.0, (height as f64 - 1.0) / 2.0);
        let (a, b, d, e) = (cos, -sin, sin, cos);
        Affine { a, b, c: cx - (a * cx + b * cy), d, e, f: cy - (d * cx + e * cy) }
    }
}

/// A point (x, y) in pixel coordinates.
pub type Point = (f64, f64);

/// A line of the original image, through two points: `X0,Y0,X1,Y1` on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub from: Point,
    pub to: Point,
}

impl FromStr for Line {
    type Err = String;

    fn from_str(s: &str) -> Result<Line, String> {
        let v: Vec<f64> = s
            .split(',')
            .map(|t| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or("expected four numbers X0,Y0,X1,Y1")?;
        let [x0, y0, x1, y1] = v[..] else {
            return Err(format!("expected four numbers X0,Y0,X1,Y1, got {}", v.len()));
        };
        if (x0, y0) == (x1, y1) {
            return Err("the line's two points are the same".into());
        }
        Ok(Line { from: (x0, y0), to: (x1, y1) })
    }
}

impl Line {
    /// The two points in the coordinates of a frame with geometry `geometry`.
    pub fn in_frame(&self, geometry: &Geometry) -> Result<(Point, Point), OpError> {
        let inv = geometry
            .to_original
            .inverse()
            .ok_or_else(|| OpError::invalid("the frame's geometry cannot be inverted"))?;
        Ok((inv.apply(self.from.0, self.from.1), inv.apply(self.to.0, self.to.1)))
    }
}

/// What `rotate` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RotateBy {
    /// This many degrees, counter-clockwise as displayed.
    Degrees(f64),
    /// As far as makes this line of the original point straight down, first point on top.
    Line(Line),
}

/// `rotate`'s parameters, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RotateParams {
    pub by: RotateBy,
    pub interpolation: Interpolation,
    pub fill: u16,
}

impl RotateParams {
    /// The rotation of `frame`, which needs the frame for `--line` (its geometry) and `--fill`.
    pub fn for_frame(&self, frame: &Frame) -> Result<Rotate, OpError> {
        if self.fill > frame.maxval {
            return Err(OpError::invalid(format!(
                "--fill {} is over the frame's maxval {}",
                self.fill, frame.maxval
            )));
        }
        if frame.width > u32::MAX as usize || frame.height > u32::MAX as usize {
            return Err(OpError::invalid("frames wider or taller than 2^32 - 1 pixels are not supported"));
        }
        let turn = match self.by {
            RotateBy::Degrees(d) => Turn::degrees(d)?,
            RotateBy::Line(line) => {
                let ((x0, y0), (x1, y1)) = line.in_frame(&frame.geometry_or_identity())?;
                Turn::making_vertical(x1 - x0, y1 - y0)
                    .ok_or_else(|| OpError::invalid("the line has no direction in this frame"))?
            }
        };
        Ok(Rotate {
            turn,
            width: frame.width,
            height: frame.height,
            interpolation: self.interpolation,
            fill: self.fill,
            maxval: frame.maxval,
        })
    }
}

/// `rotate` for one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotate {
    pub turn: Turn,
    pub width: usize,
    pub height: usize,
    pub interpolation: Interpolation,
    pub fill: u16,
    pub maxval: u16,
}

/// Exact floor((s + 1) / 2) for a doubled coordinate s: the half-up rounding of s / 2.
fn halve_rounding_up(s: i64) -> i64 {
    (s + 1).div_euclid(2)
}

impl Rotate {
    pub fn new_to_old(&self) -> Affine {
        self.turn.new_to_old(self.width, self.height)
    }

    fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        let mut out = frame.derive(self.width, self.height, frame.maxval, pixels);
        if self.turn != Turn::Quarter(0) {
            out.geometry = Some(frame.geometry_or_identity().then(&self.new_to_old()));
        }
        out
    }

    fn cpu_samples<T: Sample>(&self, input: &[T]) -> Vec<T> {
        let (w, h) = (self.width, self.height);
        let fill = T::from_u16(self.fill);
        let mut out = Vec::with_capacity(w * h);
        match self.turn {
            Turn::Quarter(q) => {
                let (w2, h2) = (w as i64 - 1, h as i64 - 1);
                for y in 0..h as i64 {
                    for x in 0..w as i64 {
                        // Doubled offsets from the centre keep half-pixel centres in integers.
                        let (dx, dy) = (2 * x - w2, 2 * y - h2);
                        let (sx2, sy2) = match q & 3 {
                            0 => (dx, dy),
                            1 => (-dy, dx),
                            2 => (-dx, -dy),
                            _ => (dy, -dx),
                        };
                        let (sx, sy) = (halve_rounding_up(sx2 + w2), halve_rounding_up(sy2 + h2));
                        let inside = sx >= 0 && sy >= 0 && sx < w as i64 && sy < h as i64;
                        out.push(if inside { input[sy as usize * w + sx as usize] } else { fill });
                    }
                }
            }
            Turn::Angle { .. } => {
                let bilinear = self.interpolation == Interpolation::Bilinear;
                for y in 0..h {
                    self.affine_row(input, y, bilinear, &mut out);
                }
            }
        }
        out
    }

    /// Appends output row `y` of a general turn to `out`. Each pixel is exactly [`sample_at`] of
    /// `new_to_old().apply(x, y)`; the row is only split where that is cheaper to evaluate.
    ///
    /// `a x + b y + c` is evaluated as `(a x + B) + c` with `B = b y` computed once per row: the
    /// same operations in the same order as `Affine::apply`. Each coordinate, and each rounded
    /// step after it, is a monotone function of x, so the pixels whose nearest source pixel is
    /// inside (and, for bilinear, those whose four taps are) form one run of the row, found by
    /// binary search with the exact per-pixel test. Outside it is the fill value; inside it, no
    /// test and no `floor` (a library call without SSE4.1) is needed, since the coordinates there
    /// are non-negative and `floor` is truncation.
    fn affine_row<T: Sample>(&self, input: &[T], y: usize, bilinear: bool, out: &mut Vec<T>) {
        let (w, h) = (self.width, self.height);
        let (wf, hf) = (w as f64, h as f64);
        let m = self.new_to_old();
        let fill = T::from_u16(self.fill);
        let fy = y as f64;
        let (by, ey) = (m.b * fy, m.e * fy);
        // Through i64: exact below 2^53, and one instruction where usize to f64 is a sequence.
        let sx = |x: usize| m.a * x as i64 as f64 + by + m.c;
        let sy = |x: usize| m.d * x as i64 as f64 + ey + m.f;
        // The nearest pixel floor(s + 0.5) is in 0..W exactly when 0 <= s + 0.5 < W (W integer).
        let (lo, hi) = intersect(
            run_within(w, m.a >= 0.0, |x| sx(x) + 0.5, wf),
            run_within(w, m.d >= 0.0, |x| sy(x) + 0.5, hf),
        );
        out.extend(std::iter::repeat_n(fill, lo));
        if !bilinear {
            let Affine { a, c, d, f, .. } = m;
            out.extend((lo..hi).map(move |x| {
                let fx = x as i64 as f64;
                let (sx, sy) = (a * fx + by + c, d * fx + ey + f);
                // SAFETY: in the run, 0 <= s + 0.5 < W (resp. H) <= 2^32.
                let (nx, ny) = unsafe { (to_index(sx + 0.5), to_index(sy + 0.5)) };
                input[ny * w + nx]
            }));
        } else {
            // All four taps are inside when 0 <= s and floor(s) + 1 < W, that is s < W - 1; such
            // points are also inside for nearest, so this run lies within (lo, hi).
            let (i0, i1) =
                intersect(run_within(w, m.a >= 0.0, sx, wf - 1.0), run_within(w, m.d >= 0.0, sy, hf - 1.0));
            let ilo = i0.clamp(lo, hi);
            let ihi = i1.clamp(ilo, hi);
            let maxval = self.maxval as u32;
            let edge = |x: usize| sample_at(input, w, h, sx(x), sy(x), fill, self.maxval, true);
            out.extend((lo..ilo).map(edge));
            // In chunks, two passes: the coordinates (short, independent chains), then the
            // gathers and blends. One pass per pixel makes a chain so long (conversions, a load,
            // more conversions) that the out-of-order window holds only three or four pixels.
            let Affine { a, c, d, f, .. } = m;
            let maxval = maxval as usize;
            for start in (ilo..ihi).step_by(CHUNK) {
                let end = (start + CHUNK).min(ihi);
                let mut at = [(0usize, 0.0f64, 0.0f64); CHUNK];
                for (x, slot) in (start..end).zip(&mut at) {
                    let fx = x as i64 as f64;
                    let (sx, sy) = (a * fx + by + c, d * fx + ey + f);
                    // SAFETY: in the run, 0 <= s < W - 1 (resp. H - 1) < 2^32.
                    let (ix, iy) = unsafe { (to_index(sx), to_index(sy)) };
                    *slot = (iy * w + ix, sx - ix as i64 as f64, sy - iy as i64 as f64);
                }
                out.extend(at[..end - start].iter().map(move |&(i, tx, ty)| {
                    let tap = |v: T| Into::<u32>::into(v) as f64;
                    let (r0, r1) = (&input[i..i + 2], &input[i + w..i + w + 2]);
                    let (p00, p10, p01, p11) = (tap(r0[0]), tap(r0[1]), tap(r1[0]), tap(r1[1]));
                    let top = (1.0 - tx) * p00 + tx * p10;
                    let bottom = (1.0 - tx) * p01 + tx * p11;
                    // At least 0.5 (non-negative taps and weights), at most 65535.5: the floor
                    // is a truncation, and the clamp commutes with it.
                    // SAFETY: that range.
                    let v = unsafe { to_index((1.0 - ty) * top + ty * bottom + 0.5) }.min(maxval);
                    T::from_u16(v as u16)
                }));
            }
            out.extend((ihi..hi).map(edge));
        }
        out.extend(std::iter::repeat_n(fill, w - hi));
    }

    fn gpu_samples<T: Sample>(&self, gpu: &Gpu, input: &[T]) -> Result<Vec<T>, OpError> {
        let n = self.width * self.height;
        let src = gpu.upload::<T>("rotate.in", input)?;
        let mut dst = gpu.buffer::<T>("rotate.out", n)?;
        self.launch(gpu, &src, &mut dst)?;
        let out = gpu.download_vec(&dst, n)?;
        Ok(out)
    }

    /// Queues the rotate kernel on the GPU's stream: `src` holds the `width x height` input,
    /// `dst` receives the output of the same size. Device buffers in, device buffers out, so
    /// benchmarks can time the kernel alone.
    pub fn launch<T: Sample>(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        if self.width == 0 || self.height == 0 {
            return Ok(());
        }
        let (w, h, fill) = (self.width as u32, self.height as u32, self.fill as u32);
        match self.turn {
            Turn::Quarter(q) => {
                // One block of 32 x 8 threads per 32 x 32 output tile (QUARTER_TILE in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (w.div_ceil(32), h.div_ceil(32).min(65535), 1),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                };
                let f = gpu.function(&kernels::ROTATE, &format!("rotate_quarter_{}", T::KERNEL_SUFFIX))?;
                let q = q as u32 & 3;
                let mut launch = gpu.stream().launch_builder(&f);
                launch.arg(src).arg(&w).arg(&h).arg(dst).arg(&q).arg(&fill);
                unsafe { launch.launch(cfg) }?;
            }
            Turn::Angle { .. } => {
                // One block of 256 threads per 64 x 32 output tile (TILE_W, TILE_H in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (w.div_ceil(64), h.div_ceil(32).min(65535), 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let kind = match self.interpolation {
                    Interpolation::Nearest => "nearest",
                    Interpolation::Bilinear => "bilinear",
                };
                let f = gpu.function(&kernels::ROTATE, &format!("rotate_{kind}_{}", T::KERNEL_SUFFIX))?;
                let m = self.new_to_old();
                let maxval = self.maxval as u32;
                let mut launch = gpu.stream().launch_builder(&f);
                launch.arg(src).arg(&w).arg(&h).arg(dst);
                launch.arg(&m.a).arg(&m.b).arg(&m.c).arg(&m.d).arg(&m.e).arg(&m.f);
                launch.arg(&fill).arg(&maxval);
                unsafe { launch.launch(cfg) }?;
            }
        }
        Ok(())
    }
}

/// Pixels per pass of the bilinear loop (see `Rotate::affine_row`).
const CHUNK: usize = 64;

/// The run `lo..hi` of `0..n` where `0 <= v(x) < limit`, for `v` non-decreasing in x when
/// `increasing`, else non-increasing (constant either way): each bound is where a monotone test
/// flips, found by bisection with the exact test.
fn run_within(n: usize, increasing: bool, v: impl Fn(usize) -> f64, limit: f64) -> (usize, usize) {
    let (at_least_zero, below_limit) = (|x| v(x) >= 0.0, |x| v(x) < limit);
    let (lo, hi) = if increasing {
        (first(n, at_least_zero), first(n, |x| !below_limit(x)))
    } else {
        (first(n, below_limit), first(n, |x| !at_least_zero(x)))
    };
    (lo, hi.max(lo))
}

/// The first x in `0..n` where `test` holds (`n` if none), for a test that is false, then true.
fn first(n: usize, test: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if test(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The common part of two runs, as a run `lo..hi` with `lo <= hi`.
fn intersect((a0, a1): (usize, usize), (b0, b1): (usize, usize)) -> (usize, usize) {
    let lo = a0.max(b0);
    (lo, a1.min(b1).max(lo))
}

/// floor(v) for v in `0..2^52`, where it is truncation: one instruction, where `as` adds the
/// saturation and NaN tests (a seventh of the bilinear loop's time).
///
/// # Safety
/// `v` must be in `0..2^52` (finite and representable, as `f64::to_int_unchecked` requires).
unsafe fn to_index(v: f64) -> usize {
    debug_assert!((0.0..4503599627370496.0).contains(&v), "{v}");
    unsafe { v.to_int_unchecked::<i64>() as usize }
}

/// The sample at input point (sx, sy). A point whose nearest pixel is outside the input takes the
/// fill value; for bilinear, neighbours outside the input count as the fill value. The kernel
/// `rotate_pixel` in rotate.cu repeats this operation for operation.
#[allow(clippy::too_many_arguments)]
fn sample_at<T: Sample>(
    input: &[T],
    w: usize,
    h: usize,
    sx: f64,
    sy: f64,
    fill: T,
    maxval: u16,
    bilinear: bool,
) -> T {
    let (wf, hf) = (w as f64, h as f64);
    let (nx, ny) = ((sx + 0.5).floor(), (sy + 0.5).floor());
    if !(nx >= 0.0 && ny >= 0.0 && nx < wf && ny < hf) {
        return fill;
    }
    if !bilinear {
        return input[ny as usize * w + nx as usize];
    }
    let (x0, y0) = (sx.floor(), sy.floor());
    let (tx, ty) = (sx - x0, sy - y0);
    let at = |x: f64, y: f64| -> f64 {
        let v =
            if x >= 0.0 && y >= 0.0 && x < wf && y < hf { input[y as usize * w + x as usize] } else { fill };
        Into::<u32>::into(v) as f64
    };
    let (p00, p10, p01, p11) = (at(x0, y0), at(x0 + 1.0, y0), at(x0, y0 + 1.0), at(x0 + 1.0, y0 + 1.0));
    let top = (1.0 - tx) * p00 + tx * p10;
    let bottom = (1.0 - tx) * p01 + tx * p11;
    let v = ((1.0 - ty) * top + ty * bottom + 0.5).floor().min(maxval as f64);
    T::from_u16(v as u16)
}

impl Op for Rotate {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        if self.turn == Turn::Quarter(0) {
            return Ok(frame.clone());
        }
        let pixels = with_samples!(&frame.pixels, v => Sample::into_pixels(self.cpu_samples(v)));
        Ok(self.output(frame, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        if self.turn == Turn::Quarter(0) {
            return Ok(frame.clone());
        }
        let pixels = with_samples!(&frame.pixels, v => Sample::into_pixels(self.gpu_samples(gpu, v)?));
        Ok(self.output(frame, pixels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(w: usize, h: usize) -> Frame {
        Frame::new(w, h, 255, Pixels::U8((0..w * h).map(|i| i as u8).collect()))
    }

    fn rotate(f: &Frame, by: RotateBy, interpolation: Interpolation) -> Frame {
        RotateParams { by, interpolation, fill: 0 }.for_frame(f).unwrap().cpu(f).unwrap()
    }

    #[test]
    fn angles_reduce_to_quarter_turns_exactly() {
        assert_eq!(Turn::degrees(0.0).unwrap(), Turn::Quarter(0));
        assert_eq!(Turn::degrees(90.0).unwrap(), Turn::Quarter(1));
        assert_eq!(Turn::degrees(-90.0).unwrap(), Turn::Quarter(3));
        assert_eq!(Turn::degrees(540.0).unwrap(), Turn::Quarter(2));
        assert_eq!(Turn::degrees(-720.0).unwrap(), Turn::Quarter(0));
        assert!(matches!(Turn::degrees(45.0).unwrap(), Turn::Angle { .. }));
        assert!(Turn::degrees(f64::NAN).is_err());
    }

    #[test]
    fn positive_angles_turn_counter_clockwise() {
        // 3x3, a quarter turn: the top-right corner goes to the top-left.
        let f = frame(3, 3);
        let out = rotate(&f, RotateBy::Degrees(90.0), Interpolation::Nearest);
        assert_eq!(out.pixels, Pixels::U8(vec![2, 5, 8, 1, 4, 7, 0, 3, 6]));
        // 30 degrees the general way agrees with the quarter-turn sign on the frame's axes.
        let m = Turn::degrees(30.0).unwrap().new_to_old(101, 101);
        let (sx, sy) = m.apply(50.0, 0.0); // output top centre comes from the right of the top
        assert!(sx > 50.0 && sy > 0.0, "{sx} {sy}");
    }

    #[test]
    fn quarter_turns_match_the_general_formula_with_half_pixel_centres() {
        for (w, h) in [(4usize, 3usize), (5, 3), (2, 7), (1, 1), (6, 6)] {
            let f = frame(w, h);
            let Pixels::U8(input) = &f.pixels else { unreachable!() };
            for q in 0..4u8 {
                let rotate = Rotate {
                    turn: Turn::Quarter(q),
                    width: w,
                    height: h,
                    interpolation: Interpolation::Nearest,
                    fill: 0,
                    maxval: 255,
                };
                let quarter = rotate.cpu_samples(input);
                let m = Turn::Quarter(q).new_to_old(w, h);
                let general: Vec<u8> = (0..w * h)
                    .map(|i| {
                        let (sx, sy) = m.apply((i % w) as f64, (i / w) as f64);
                        sample_at(input, w, h, sx, sy, 0u8, 255, false)
                    })
                    .collect();
                assert_eq!(quarter, general, "{w}x{h} q={q}");
            }
        }
    }

    /// The row-wise evaluation (runs found by bisection, no per-pixel tests inside them) gives
    /// exactly the per-pixel reference: `sample_at` of `Affine::apply`, at every pixel.
    #[test]
    fn general_turns_match_the_per_pixel_reference() {
        let mut rng = fastrand::Rng::with_seed(6);
        let mut sizes = vec![(1usize, 1usize), (1, 9), (9, 1), (2, 2), (3, 70), (70, 3), (64, 64)];
        sizes.extend((0..12).map(|_| (rng.usize(1..160), rng.usize(1..160))));
        let mut angles = vec![30.0, -30.0, 45.0, 135.0, -135.0, 89.999999, 90.000001, 1e-9, -1e-9, 179.9999];
        angles.extend((0..12).map(|_| rng.f64() * 720.0 - 360.0));
        for (w, h) in sizes {
            let input: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=1000)).collect();
            for &angle in &angles {
                for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                    let turn = Turn::degrees(angle).unwrap();
                    let rotate = Rotate { turn, width: w, height: h, interpolation, fill: 7, maxval: 1000 };
                    let m = rotate.new_to_old();
                    let bilinear = interpolation == Interpolation::Bilinear;
                    let reference: Vec<u16> = (0..w * h)
                        .map(|i| {
                            let (sx, sy) = m.apply((i % w) as f64, (i / w) as f64);
                            sample_at(&input, w, h, sx, sy, 7, 1000, bilinear)
                        })
                        .collect();
                    assert!(rotate.cpu_samples(&input) == reference, "{w}x{h} {angle} {interpolation:?}");
                }
            }
        }
    }

    #[test]
    fn line_directions() {
        assert_eq!(Turn::making_vertical(0.0, 5.0), Some(Turn::Quarter(0)));
        assert_eq!(Turn::making_vertical(0.0, -5.0), Some(Turn::Quarter(2)));
        assert_eq!(Turn::making_vertical(5.0, 0.0), Some(Turn::Quarter(3)));
        assert_eq!(Turn::making_vertical(-5.0, 0.0), Some(Turn::Quarter(1)));
        assert_eq!(Turn::making_vertical(0.0, 0.0), None);
        let Some(Turn::Angle { cos, sin }) = Turn::making_vertical(3.0, 4.0) else { panic!() };
        // The forward map sends (3, 4) to (0, 5).
        assert!((cos * 3.0 + sin * 4.0).abs() < 1e-12 && (-sin * 3.0 + cos * 4.0 - 5.0).abs() < 1e-12);
        assert!("1,2,3".parse::<Line>().is_err());
        assert!("1,2,1,2".parse::<Line>().unwrap_err().contains("same"));
        assert_eq!("0, 0,4,4.5".parse::<Line>().unwrap(), Line { from: (0.0, 0.0), to: (4.0, 4.5) });
    }

    #[test]
    fn bilinear_halfway_rounds_half_up_and_blends_the_fill() {
        let input = [10u8, 21, 30, 40];
        assert_eq!(sample_at(&input, 2, 2, 0.5, 0.0, 0, 255, true), 16); // 15.5 -> 16
        assert_eq!(sample_at(&input, 2, 2, 0.25, 0.0, 0, 255, true), 13); // 12.75 -> 13
        assert_eq!(sample_at(&input, 2, 2, 1.25, 0.0, 100, 255, true), 41); // 21 * .75 + 100 * .25
        assert_eq!(sample_at(&input, 2, 2, 1.5, 0.0, 100, 255, true), 100); // nearest is outside
    }
}
