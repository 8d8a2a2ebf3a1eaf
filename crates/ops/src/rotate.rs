//! `rotate`: turn a frame about its centre, keeping its size or (`--expand`) in a frame the size of
//! the turned one's bounding box.
//!
//! Coordinates are pixel indices with y pointing down; the centre of a W x H frame is the point
//! ((W - 1) / 2, (H - 1) / 2). A positive angle turns the picture counter-clockwise as displayed.
//! Output pixel (x, y) takes its value from the input point (sx, sy) given by the inverse map
//!
//! sx = cos t x - sin t y + cx - (cos t cx - sin t cy)
//! sy = sin t x + cos t y + cy - (sin t cx + cos t cy)
//!
//! (with `--expand`, x and y are taken from the output's centre, which maps to the input's: see
//! [`Turn::new_to_old_sized`]), written as the [`Affine`] `new_to_old` and evaluated per pixel
//! exactly as [`Affine::apply`]
//! evaluates it, in `f64`, by both backends (cos and sin are computed once, on the host). That map
//! is also what the output's geometry composes, so `colhist` finds the same pixels.
//!
//! Multiples of 90 degrees are never evaluated in floating point: they are pixel permutations in
//! integer arithmetic (with the same rounding as the general case where the centre falls between
//! pixels), whatever the interpolation.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::str::FromStr;

use histopipe_frame::{Affine, Frame, Geometry, Pixels, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, LaunchConfig};

use crate::{parallel, with_samples, Gpu, Op, OpError, Sample};

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
        self.new_to_old_sized((width, height), (width, height))
    }

    /// The map from the pixel coordinates of an `output`-sized frame to those of the `input`-sized
    /// one it is turned from, centre onto centre. With `output == input` it is
    /// [`Turn::new_to_old`], bit for bit (the same operations).
    pub fn new_to_old_sized(self, input: (usize, usize), output: (usize, usize)) -> Affine {
        let (cos, sin) = self.cos_sin();
        let centre = |(w, h): (usize, usize)| ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
        let ((cx, cy), (ox, oy)) = (centre(input), centre(output));
        let (a, b, d, e) = (cos, -sin, sin, cos);
        Affine { a, b, c: cx - (a * ox + b * oy), d, e, f: cy - (d * ox + e * oy) }
    }

    /// The size of the bounding box of a `width x height` frame turned this far: its pixels are
    /// unit squares, so the box is |cos| W + |sin| H by |sin| W + |cos| H, rounded up (after
    /// taking off 10^-6, so that the rounding of cos and sin never adds a pixel: a turn by 10^-9
    /// degrees keeps the size). Quarter turns give exactly H x W or W x H.
    pub fn bounding_size(self, width: usize, height: usize) -> (usize, usize) {
        let (cos, sin) = self.cos_sin();
        let (c, s) = (cos.abs(), sin.abs());
        let (w, h) = (width as f64, height as f64);
        let side = |v: f64| ((v - 1e-6).ceil() as usize).max(1);
        (side(c * w + s * h), side(s * w + c * h))
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
    /// Make the output the turned frame's bounding box ([`Turn::bounding_size`]) instead of the
    /// input's size.
    pub expand: bool,
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
        let (out_width, out_height) = if self.expand {
            turn.bounding_size(frame.width, frame.height)
        } else {
            (frame.width, frame.height)
        };
        if out_width > u32::MAX as usize || out_height > u32::MAX as usize {
            return Err(OpError::invalid(format!(
                "the turned frame would be {out_width}x{out_height}, wider or taller than 2^32 - 1 pixels"
            )));
        }
        Ok(Rotate {
            turn,
            width: frame.width,
            height: frame.height,
            out_width,
            out_height,
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
    /// The input's size.
    pub width: usize,
    pub height: usize,
    /// The output's size: the input's, or a turned frame's bounding box.
    pub out_width: usize,
    pub out_height: usize,
    pub interpolation: Interpolation,
    pub fill: u16,
    pub maxval: u16,
}

/// Exact floor((s + 1) / 2) for a doubled coordinate s: the half-up rounding of s / 2.
fn halve_rounding_up(s: i64) -> i64 {
    (s + 1).div_euclid(2)
}

impl Rotate {
    /// A turn whose output keeps the input's `width` x `height` (what `rotate` does without
    /// `--expand`).
    pub fn in_place(
        turn: Turn,
        width: usize,
        height: usize,
        interpolation: Interpolation,
        fill: u16,
        maxval: u16,
    ) -> Rotate {
        Rotate { turn, width, height, out_width: width, out_height: height, interpolation, fill, maxval }
    }

    pub fn new_to_old(&self) -> Affine {
        self.turn.new_to_old_sized((self.width, self.height), (self.out_width, self.out_height))
    }

    fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        let mut out = frame.derive(self.out_width, self.out_height, frame.maxval, pixels);
        if self.turn != Turn::Quarter(0) {
            out.geometry = Some(frame.geometry_or_identity().then(&self.new_to_old()));
        }
        out
    }

    fn cpu_samples<T: Sample>(&self, input: &[T]) -> Vec<T> {
        self.cpu_samples_with(input, Kernel::detect())
    }

    /// [`Self::cpu_samples`] with the interior runs of general turns evaluated by `kernel`. Bands
    /// of output rows are made on the pool's threads (see [`MIN_PART`]); each pixel is the same
    /// function of the input whichever band it is in.
    fn cpu_samples_with<T: Sample>(&self, input: &[T], kernel: Kernel) -> Vec<T> {
        let (w, h) = (self.width, self.height);
        let (ow, oh) = (self.out_width, self.out_height);
        let n = ow * oh;
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        // The SIMD kernels form indices y w + x in f64, exact (and below 2^52) only here, and read
        // the input unchecked (the portable kernel checks, as it always did).
        let fits = (w as u64).saturating_mul(h as u64) < 1 << 52 && input.len() >= w * h;
        let kernel = if fits { kernel } else { Kernel::Scalar };
        let band = oh.div_ceil(parallel::parts(n, MIN_PART)) * ow;
        parallel::for_each_part(&mut out.spare_capacity_mut()[..n], band, |first, part| {
            let rows = first / ow..(first + part.len()) / ow;
            match self.turn {
                Turn::Quarter(q) => self.quarter(input, q, rows, part),
                Turn::Angle { .. } => self.affine(input, kernel, rows, part),
            }
        });
        // SAFETY: the bands cover the n samples, and `quarter` and `affine` write every sample of
        // theirs.
        unsafe { out.set_len(n) };
        out
    }

    /// Writes the output rows `rows` of the quarter turn `q` to `out` (those rows' samples).
    fn quarter<T: Sample>(&self, input: &[T], q: u8, rows: Range<usize>, out: &mut [MaybeUninit<T>]) {
        let (w, h) = (self.width, self.height);
        let (ow, oh) = (self.out_width as i64, self.out_height as i64);
        let fill = T::from_u16(self.fill);
        let (w2, h2) = (w as i64 - 1, h as i64 - 1);
        for (y, line) in (rows.start as i64..).zip(out.chunks_exact_mut(ow as usize)) {
            for (x, slot) in (0..).zip(line) {
                // Doubled offsets from the output's centre keep half-pixel centres in integers;
                // they are the input's offsets from its own centre, turned.
                let (dx, dy) = (2 * x - (ow - 1), 2 * y - (oh - 1));
                let (sx2, sy2) = match q & 3 {
                    0 => (dx, dy),
                    1 => (-dy, dx),
                    2 => (-dx, -dy),
                    _ => (dy, -dx),
                };
                let (sx, sy) = (halve_rounding_up(sx2 + w2), halve_rounding_up(sy2 + h2));
                let inside = sx >= 0 && sy >= 0 && sx < w as i64 && sy < h as i64;
                slot.write(if inside { input[sy as usize * w + sx as usize] } else { fill });
            }
        }
    }

    /// Writes the output rows `rows` of a general turn to `out` (those rows' samples), tile by
    /// tile: [`TILE_H`] rows at a time, in [`TILE_W`]-pixel columns. A tile's source points lie
    /// in a small turned square, whose cache lines (and pages) stay cached while the tile is
    /// made; a whole output row would read across a different input row every pixel or two,
    /// thousands of lines and pages.
    fn affine<T: Sample>(&self, input: &[T], kernel: Kernel, rows: Range<usize>, out: &mut [MaybeUninit<T>]) {
        let w = self.out_width;
        let mut tile = Vec::with_capacity(TILE_H);
        for y0 in rows.clone().step_by(TILE_H) {
            tile.clear();
            tile.extend((y0..(y0 + TILE_H).min(rows.end)).map(|y| self.row(y)));
            for x0 in (0..w).step_by(TILE_W) {
                let xs = x0..(x0 + TILE_W).min(w);
                for (y, row) in (y0 - rows.start..).zip(&tile) {
                    self.affine_span(input, row, xs.clone(), kernel, &mut out[y * w..][xs.clone()]);
                }
            }
        }
    }

    /// Output row `y` of a general turn, split into the parts evaluated differently. Each pixel
    /// is exactly [`sample_at`] of `new_to_old().apply(x, y)`.
    ///
    /// `a x + b y + c` is evaluated as `(a x + B) + c` with `B = b y` computed once per row: the
    /// same operations in the same order as `Affine::apply`. Each coordinate, and each rounded
    /// step after it, is a monotone function of x, so the pixels whose nearest source pixel is
    /// inside (and, for bilinear, those whose four taps are) form one run of the row, found by
    /// binary search with the exact per-pixel test. Outside it is the fill value; inside it, no
    /// test and no `floor` (a library call without SSE4.1) is needed, since the coordinates there
    /// are non-negative and `floor` is truncation.
    fn row(&self, y: usize) -> Row {
        let (w, h) = (self.width, self.height);
        let (wf, hf) = (w as f64, h as f64);
        let m = self.new_to_old();
        let map = RowMap::new(&m, y);
        let (sx, sy) = (|x| map.sx(x), |x| map.sy(x));
        let (x_at_0, y_at_0) = (sx(0), sy(0));
        // The nearest pixel floor(s + 0.5) is in 0..W exactly when 0 <= s + 0.5 < W (W integer).
        let ow = self.out_width;
        let (lo, hi) = intersect(
            run_within(ow, (m.a, x_at_0 + 0.5), |x| sx(x) + 0.5, wf),
            run_within(ow, (m.d, y_at_0 + 0.5), |x| sy(x) + 0.5, hf),
        );
        let (ilo, ihi) = if self.interpolation == Interpolation::Bilinear {
            // All four taps are inside when 0 <= s and floor(s) + 1 < W, that is s < W - 1; such
            // points are also inside for nearest, so this run lies within (lo, hi).
            let (i0, i1) = intersect(
                run_within(ow, (m.a, x_at_0), sx, wf - 1.0),
                run_within(ow, (m.d, y_at_0), sy, hf - 1.0),
            );
            let ilo = i0.clamp(lo, hi);
            (ilo, i1.clamp(ilo, hi))
        } else {
            (lo, hi)
        };
        Row { map, nearest: lo..hi, inner: ilo..ihi }
    }

    /// Writes the pixels `xs` of `row` to `out` (as long as `xs`).
    fn affine_span<T: Sample>(
        &self,
        input: &[T],
        row: &Row,
        xs: Range<usize>,
        kernel: Kernel,
        out: &mut [MaybeUninit<T>],
    ) {
        let (w, h) = (self.width, self.height);
        let fill = T::from_u16(self.fill);
        let map = &row.map;
        let part = |r: &Range<usize>| {
            let lo = r.start.clamp(xs.start, xs.end);
            lo..r.end.clamp(lo, xs.end)
        };
        let (near, inner) = (part(&row.nearest), part(&row.inner));
        let (left, right) = (xs.start..near.start, near.end..xs.end);
        let (edge_l, edge_r) = (near.start..inner.start, inner.end..near.end);
        let slots = |r: &Range<usize>| r.start - xs.start..r.end - xs.start;
        let edge = |x: usize| sample_at(input, w, h, map.sx(x), map.sy(x), fill, self.maxval, true);
        for (slot, x) in out[slots(&edge_l)].iter_mut().zip(edge_l) {
            slot.write(edge(x));
        }
        for (slot, x) in out[slots(&edge_r)].iter_mut().zip(edge_r) {
            slot.write(edge(x));
        }
        out[slots(&left)].fill(MaybeUninit::new(fill));
        out[slots(&right)].fill(MaybeUninit::new(fill));
        let run = &mut out[slots(&inner)];
        match self.interpolation {
            Interpolation::Nearest => kernel.nearest(input, w, map, inner, run),
            Interpolation::Bilinear => kernel.bilinear(input, w, map, self.maxval, inner, run),
        }
    }

    fn gpu_samples<T: Sample>(&self, gpu: &Gpu, input: &[T]) -> Result<Samples<T>, OpError> {
        let n = self.out_width * self.out_height;
        let src = gpu.upload::<T>("rotate.in", input)?;
        let mut dst = gpu.buffer::<T>("rotate.out", n)?;
        self.plan(gpu).queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(out)
    }

    /// The device plan of this turn.
    pub fn plan<'g>(&self, gpu: &'g Gpu) -> RotatePlan<'g> {
        RotatePlan { gpu, rotate: *self }
    }
}

/// The device plan of `rotate`: one kernel (quarter turns, or the general one), no scratch. The
/// one GPU sequence that `Op::gpu` and the benchmark run.
pub struct RotatePlan<'g> {
    gpu: &'g Gpu,
    rotate: Rotate,
}

impl RotatePlan<'_> {
    /// Queues the turn of the `width x height` input in `src` into `dst` (`out_width x
    /// out_height`).
    pub fn queue<T: Sample>(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        let r = &self.rotate;
        if r.out_width == 0 || r.out_height == 0 {
            return Ok(());
        }
        let (w, h, fill) = (r.width as u32, r.height as u32, r.fill as u32);
        let (ow, oh) = (r.out_width as u32, r.out_height as u32);
        match r.turn {
            Turn::Quarter(q) => {
                // One block of 32 x 8 threads per 32 x 32 output tile (QUARTER_TILE in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (ow.div_ceil(32), oh.div_ceil(32).min(65535), 1),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                };
                let name = format!("rotate_quarter_{}", T::KERNEL_SUFFIX);
                let q = q as u32 & 3;
                // SAFETY: rotate_quarter_*(in, w, h, out, ow, oh, q, fill) in rotate.cu; `src`
                // holds the w x h input, `dst` the ow x oh output.
                unsafe {
                    launch!(self.gpu, kernels::ROTATE, name, cfg; src, &w, &h, dst, &ow, &oh, &q, &fill)
                }?;
            }
            Turn::Angle { .. } => {
                // One block of 256 threads per 64 x 32 output tile (TILE_W, TILE_H in rotate.cu);
                // the kernel loops over tile rows beyond the grid's 65535.
                let cfg = LaunchConfig {
                    grid_dim: (ow.div_ceil(64), oh.div_ceil(32).min(65535), 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let kind = match r.interpolation {
                    Interpolation::Nearest => "nearest",
                    Interpolation::Bilinear => "bilinear",
                };
                let name = format!("rotate_{kind}_{}", T::KERNEL_SUFFIX);
                let m = r.new_to_old();
                let maxval = r.maxval as u32;
                // SAFETY: rotate_{nearest,bilinear}_*(in, w, h, out, ow, oh, a..f, fill, maxval)
                // in rotate.cu; `src` holds the w x h input, `dst` the ow x oh output.
                unsafe {
                    launch!(self.gpu, kernels::ROTATE, name, cfg;
                        src, &w, &h, dst, &ow, &oh, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &fill, &maxval)
                }?;
            }
        }
        Ok(())
    }
}

/// Fewest output pixels in a part of the CPU's work ([`parallel::parts`]): 0.74 ns a pixel on one
/// core for nearest, 1.6 for bilinear (4096x3112 turned 30 degrees in 9.4 and 21 ms), so a part
/// takes 0.2 ms or more.
const MIN_PART: usize = 1 << 18;

/// Output rows per tile of a general turn (see `Rotate::affine`).
const TILE_H: usize = 64;
/// Output columns per tile of a general turn.
const TILE_W: usize = 64;

/// An output row of a general turn: its map, and where it is evaluated how. Outside `nearest`
/// the output is the fill value; inside `inner` (within `nearest`) a kernel evaluates it (for
/// nearest, `inner` is `nearest`); between them, for bilinear, `sample_at` does.
struct Row {
    map: RowMap,
    nearest: Range<usize>,
    inner: Range<usize>,
}

/// One output row's part of the map: `new_to_old().apply(x, y)` for its `y`, with the products
/// `b y` and `e y` computed once.
struct RowMap {
    a: f64,
    c: f64,
    d: f64,
    f: f64,
    by: f64,
    ey: f64,
}

impl RowMap {
    fn new(m: &Affine, y: usize) -> RowMap {
        let fy = y as f64;
        RowMap { a: m.a, c: m.c, d: m.d, f: m.f, by: m.b * fy, ey: m.e * fy }
    }

    /// `(a x + b y) + c`, as `Affine::apply` evaluates it.
    fn sx(&self, x: usize) -> f64 {
        // Through i64: exact below 2^53, and one instruction where usize to f64 is a sequence.
        self.a * x as i64 as f64 + self.by + self.c
    }

    /// `(d x + e y) + f`, as `Affine::apply` evaluates it.
    fn sy(&self, x: usize) -> f64 {
        self.d * x as i64 as f64 + self.ey + self.f
    }
}

/// What evaluates the interior runs of general turns (see `Rotate::row`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// Portable code, one pixel at a time.
    Scalar,
    /// Four pixels at a time in AVX2 registers (`avx2`), on CPUs that have it.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }

    /// Writes the nearest samples of the pixels `xs` of `row` to `out` (as long as `xs`).
    ///
    /// `xs` must lie in the row's nearest run: 0 <= s + 0.5 < W (resp. H) for both coordinates.
    fn nearest<T: Sample>(
        self,
        input: &[T],
        w: usize,
        row: &RowMap,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        #[cfg(target_arch = "x86_64")]
        if self == Kernel::Avx2 {
            // SAFETY: the CPU has AVX2 (`detect`); `xs` is in the run (the caller's condition), and
            // `cpu_samples_with` picks this kernel only for frames of fewer than 2^52 pixels whose
            // input holds them all.
            unsafe { avx2::nearest(input, w, row, xs, out) };
            return;
        }
        for (slot, x) in out.iter_mut().zip(xs) {
            slot.write(nearest_at(input, w, row, x));
        }
    }

    /// Writes the bilinear samples of the pixels `xs` of `row` to `out` (as long as `xs`), at
    /// most `maxval`.
    ///
    /// `xs` must lie in the row's bilinear run: 0 <= s < W - 1 (resp. H - 1) for both coordinates.
    fn bilinear<T: Sample>(
        self,
        input: &[T],
        w: usize,
        row: &RowMap,
        maxval: u16,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        #[cfg(target_arch = "x86_64")]
        if self == Kernel::Avx2 {
            // SAFETY: as in `nearest`, with the bilinear run.
            unsafe { avx2::bilinear(input, w, row, maxval, xs, out) };
            return;
        }
        // In chunks, two passes: the coordinates (short, independent chains), then the gathers
        // and blends. One pass per pixel makes a chain so long (conversions, a load, more
        // conversions) that the out-of-order window holds only three or four pixels.
        let end = xs.end;
        for (xs, out) in xs.step_by(CHUNK).map(|x| x..(x + CHUNK).min(end)).zip(out.chunks_mut(CHUNK)) {
            let mut at = [(0usize, 0.0f64, 0.0f64); CHUNK];
            for (x, slot) in xs.zip(&mut at) {
                *slot = bilinear_point(w, row, x);
            }
            for (slot, &(i, tx, ty)) in out.iter_mut().zip(&at) {
                slot.write(blend_at(input, w, i, tx, ty, maxval));
            }
        }
    }
}

/// The nearest sample of pixel `x` of `row`, which must be in the row's nearest run.
#[inline(always)]
fn nearest_at<T: Sample>(input: &[T], w: usize, row: &RowMap, x: usize) -> T {
    // SAFETY: in the run, 0 <= s + 0.5 < W (resp. H) <= 2^32.
    let (nx, ny) = unsafe { (to_index(row.sx(x) + 0.5), to_index(row.sy(x) + 0.5)) };
    input[ny * w + nx]
}

/// The top-left tap's index and the weights `(tx, ty)` of pixel `x` of `row`, which must be in
/// the row's bilinear run: `floor(s)` and `s - floor(s)` for both coordinates.
#[inline(always)]
fn bilinear_point(w: usize, row: &RowMap, x: usize) -> (usize, f64, f64) {
    let (sx, sy) = (row.sx(x), row.sy(x));
    // SAFETY: in the run, 0 <= s < W - 1 (resp. H - 1) < 2^32.
    let (ix, iy) = unsafe { (to_index(sx), to_index(sy)) };
    (iy * w + ix, sx - ix as i64 as f64, sy - iy as i64 as f64)
}

/// Pixels per pass of the portable bilinear loop (see `Kernel::bilinear`).
const CHUNK: usize = 64;

/// The bilinear blend of the four pixels `i`, `i + 1`, `i + w`, `i + w + 1` with weights `tx`,
/// `ty` in 0..1, rounded half up and at most `maxval`: the end of [`sample_at`] when all four
/// taps are inside.
#[inline(always)]
fn blend_at<T: Sample>(input: &[T], w: usize, i: usize, tx: f64, ty: f64, maxval: u16) -> T {
    let tap = |v: T| Into::<u32>::into(v) as f64;
    let (r0, r1) = (&input[i..i + 2], &input[i + w..i + w + 2]);
    let (p00, p10, p01, p11) = (tap(r0[0]), tap(r0[1]), tap(r1[0]), tap(r1[1]));
    let top = (1.0 - tx) * p00 + tx * p10;
    let bottom = (1.0 - tx) * p01 + tx * p11;
    // At least 0.5 (non-negative taps and weights), at most 65535.5: the floor is a truncation,
    // and the clamp commutes with it.
    // SAFETY: that range.
    let v = unsafe { to_index((1.0 - ty) * top + ty * bottom + 0.5) }.min(maxval as usize);
    T::from_u16(v as u16)
}

/// The run `lo..hi` of `0..n` where `0 <= v(x) < limit`, for `v` non-decreasing in x when
/// `slope >= 0`, else non-increasing (constant either way): each bound is where a monotone test
/// flips, found with the exact test. `(slope, intercept)` is a line close to `v`, which only
/// says where to look first: the bounds are exact whatever it is.
fn run_within(
    n: usize,
    (slope, intercept): (f64, f64),
    v: impl Fn(usize) -> f64,
    limit: f64,
) -> (usize, usize) {
    let (at_least_zero, below_limit) = (|x| v(x) >= 0.0, |x| v(x) < limit);
    // Where the line crosses `t`; `as` saturates (NaN, for a constant line, is 0).
    let near = |t: f64| ((t - intercept) / slope) as usize;
    let (lo, hi) = if slope >= 0.0 {
        (first(n, near(0.0), at_least_zero), first(n, near(limit), |x| !below_limit(x)))
    } else {
        (first(n, near(limit), below_limit), first(n, near(0.0), |x| !at_least_zero(x)))
    };
    (lo, hi.max(lo))
}

/// The first x in `0..n` where `test` holds (`n` if none), for a test that is false, then true:
/// bracketed by steps doubling away from `guess`, then found by bisection. A few tests when the
/// guess is off by a pixel or two, about 2 log2 n at worst.
fn first(n: usize, guess: usize, test: impl Fn(usize) -> bool) -> usize {
    if n == 0 {
        return 0;
    }
    let g = guess.min(n - 1);
    // The answer is in lo..=hi: the test fails below lo, and holds at hi (or hi = n).
    let (mut lo, mut hi) = (0, n);
    let mut step = 1;
    if test(g) {
        hi = g;
        while hi > 0 {
            let probe = hi.saturating_sub(step);
            if !test(probe) {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step *= 2;
        }
    } else {
        lo = g + 1;
        while lo < n {
            let probe = (g + step).min(n - 1);
            if test(probe) {
                hi = probe;
                break;
            }
            lo = probe + 1;
            step *= 2;
        }
    }
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

/// The interior runs four pixels at a time, in AVX2 registers: per lane, the same `f64`
/// operations in the same order as the portable code (Rust never contracts a product and a sum
/// into an FMA, and these functions do not enable FMA anyway), so the same bits.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::any::TypeId;
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;
    use std::ops::Range;

    use super::{bilinear_point, blend_at, nearest_at, RowMap, Sample};

    /// A row's map on four lanes, and the constants the loops need.
    struct Lanes {
        a: __m256d,
        c: __m256d,
        d: __m256d,
        f: __m256d,
        by: __m256d,
        ey: __m256d,
        /// The frame's width, for indices.
        w: __m256d,
    }

    impl Lanes {
        #[inline]
        #[target_feature(enable = "avx2")]
        fn new(row: &RowMap, w: usize) -> Lanes {
            let v = _mm256_set1_pd;
            Lanes {
                a: v(row.a),
                c: v(row.c),
                d: v(row.d),
                f: v(row.f),
                by: v(row.by),
                ey: v(row.ey),
                w: v(w as f64),
            }
        }

        /// `(sx, sy)` of the four pixels whose x coordinates are the lanes of `fx`: as
        /// `RowMap::sx` and `RowMap::sy` compute them, the product `a x` per pixel.
        #[inline]
        #[target_feature(enable = "avx2")]
        fn at(&self, fx: __m256d) -> (__m256d, __m256d) {
            let sx = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(self.a, fx), self.by), self.c);
            let sy = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(self.d, fx), self.ey), self.f);
            (sx, sy)
        }

        /// The indices `y w + x` of the four pixels whose coordinates are the lanes of `x` and
        /// `y`, integers with `y w + x` in `0..2^52`.
        #[inline]
        #[target_feature(enable = "avx2")]
        fn indices(&self, x: __m256d, y: __m256d) -> [u64; 4] {
            // Integers below 2^52, so the product and the sums are exact (no rounding, whatever
            // the order), and the bits of i + 2^52 are those of 2^52 with i in the low 52.
            let two_52 = _mm256_set1_pd(4503599627370496.0);
            let biased = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(y, self.w), x), two_52);
            let i = _mm256_xor_si256(_mm256_castpd_si256(biased), _mm256_castpd_si256(two_52));
            // SAFETY: any 256 bits are four u64.
            unsafe { std::mem::transmute::<__m256i, [u64; 4]>(i) }
        }
    }

    /// The x coordinates `x0..x0 + 4` as `f64` lanes (exact: below 2^32).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn first_lanes(x0: usize) -> __m256d {
        _mm256_add_pd(_mm256_set1_pd(x0 as i64 as f64), _mm256_setr_pd(0.0, 1.0, 2.0, 3.0))
    }

    /// Writes the nearest samples of the pixels `xs` of `row` to `out`: `Kernel::nearest`.
    ///
    /// # Safety
    /// The CPU has AVX2; `input` holds the `w`-wide frame, of fewer than 2^52 pixels, and `xs`
    /// lies in the row's nearest run (0 <= s + 0.5 < W, resp. H, for both coordinates).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn nearest<T: Sample>(
        input: &[T],
        w: usize,
        row: &RowMap,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        let lanes = Lanes::new(row, w);
        let half = _mm256_set1_pd(0.5);
        let mut fx = first_lanes(xs.start);
        let mut quads = out[..xs.len()].chunks_exact_mut(4);
        for quad in &mut quads {
            let (sx, sy) = lanes.at(fx);
            // floor(s + 0.5), as the portable code's truncation (s + 0.5 >= 0 in the run).
            let (nx, ny) =
                (_mm256_floor_pd(_mm256_add_pd(sx, half)), _mm256_floor_pd(_mm256_add_pd(sy, half)));
            for (slot, i) in quad.iter_mut().zip(lanes.indices(nx, ny)) {
                // SAFETY: the pixel (nx, ny) is inside the frame (the run), so i < W H.
                slot.write(unsafe { *input.get_unchecked(i as usize) });
            }
            // Exact: integers below 2^53. Only x advances this way; `a x` is a product per pixel.
            fx = _mm256_add_pd(fx, _mm256_set1_pd(4.0));
        }
        let tail = quads.into_remainder();
        let first = xs.end - tail.len();
        for (slot, x) in tail.iter_mut().zip(first..) {
            slot.write(nearest_at(input, w, row, x));
        }
    }

    /// Writes the bilinear samples of the pixels `xs` of `row` to `out`, at most `maxval`:
    /// `Kernel::bilinear`.
    ///
    /// # Safety
    /// The CPU has AVX2; `input` holds the `w`-wide frame, of fewer than 2^52 pixels, and `xs`
    /// lies in the row's bilinear run (0 <= s < W - 1, resp. H - 1, for both coordinates).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bilinear<T: Sample>(
        input: &[T],
        w: usize,
        row: &RowMap,
        maxval: u16,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        let lanes = Lanes::new(row, w);
        let (one, half) = (_mm256_set1_pd(1.0), _mm256_set1_pd(0.5));
        let top_of = _mm_set1_epi32(maxval as i32);
        let mut fx = first_lanes(xs.start);
        let whole = xs.len() / 4 * 4;
        // In groups of QUADS quads, two passes: the points (indices and weights), then the taps
        // and blends. In one pass, each quad is a chain so long (the map, floor, index, loads,
        // conversions, blend) that the out-of-order window holds only a few quads.
        // Not initialised: zeroing it would cost a tenth of a 64-pixel span.
        let mut points = [const { MaybeUninit::<([u64; 4], __m256d, __m256d)>::uninit() }; QUADS];
        for group in out[..whole].chunks_mut(4 * QUADS) {
            let quads = group.len() / 4;
            for point in &mut points[..quads] {
                let (sx, sy) = lanes.at(fx);
                // floor(s), as the portable code's truncation (s >= 0 in the run).
                let (x0, y0) = (_mm256_floor_pd(sx), _mm256_floor_pd(sy));
                point.write((lanes.indices(x0, y0), _mm256_sub_pd(sx, x0), _mm256_sub_pd(sy, y0)));
                // Exact: integers below 2^53. Only x advances this way; `a x` is a product per
                // pixel.
                fx = _mm256_add_pd(fx, _mm256_set1_pd(4.0));
            }
            for (quad, point) in group.chunks_exact_mut(4).zip(&points[..quads]) {
                // SAFETY: the first `quads` points are written above.
                let &(i, tx, ty) = unsafe { point.assume_init_ref() };
                // SAFETY: each pixel's four taps are inside the frame (the run): i + w + 1 < W H.
                let (p00, p10) = unsafe { taps(input, i, 0) };
                let (p01, p11) = unsafe { taps(input, i, w) };
                // `blend_at`, operation for operation.
                let ux = _mm256_sub_pd(one, tx);
                let top = _mm256_add_pd(_mm256_mul_pd(ux, p00), _mm256_mul_pd(tx, p10));
                let bottom = _mm256_add_pd(_mm256_mul_pd(ux, p01), _mm256_mul_pd(tx, p11));
                let uy = _mm256_sub_pd(one, ty);
                let v = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(uy, top), _mm256_mul_pd(ty, bottom)), half);
                // v is in 0.5..=65535.5 (non-negative taps and weights summing to 1), where the
                // truncating conversion to i32 is the floor, exactly; the clamp commutes with it.
                store(quad, _mm_min_epi32(_mm256_cvttpd_epi32(v), top_of));
            }
        }
        let tail = &mut out[whole..xs.len()];
        let first = xs.start + whole;
        for (slot, x) in tail.iter_mut().zip(first..) {
            let (i, tx, ty) = bilinear_point(w, row, x);
            slot.write(blend_at(input, w, i, tx, ty, maxval));
        }
    }

    /// Quads per pass of the bilinear loop.
    const QUADS: usize = 16;

    /// The pixels `i[k] + offset` and `i[k] + offset + 1` of the four lanes, as `f64` lanes.
    ///
    /// # Safety
    /// All eight are in `input`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn taps<T: Sample>(input: &[T], i: [u64; 4], offset: usize) -> (__m256d, __m256d) {
        // Each pair as one u32, left |right << bits: two adjacent loads, which the compiler
        // merges into one.
        let bits = 8 * size_of::<T>() as u32;
        let pair = |k: usize| {
            let at = i[k] as usize + offset;
            // SAFETY: the caller's condition.
            let (l, r) = unsafe { (*input.get_unchecked(at), *input.get_unchecked(at + 1)) };
            (Into::<u32>::into(l) | Into::<u32>::into(r) << bits) as i32
        };
        let pairs = _mm_setr_epi32(pair(0), pair(1), pair(2), pair(3));
        let (left, right) = if bits == 8 {
            (_mm_and_si128(pairs, _mm_set1_epi32(0xff)), _mm_srli_epi32::<8>(pairs))
        } else {
            (_mm_and_si128(pairs, _mm_set1_epi32(0xffff)), _mm_srli_epi32::<16>(pairs))
        };
        (_mm256_cvtepi32_pd(left), _mm256_cvtepi32_pd(right))
    }

    /// Writes the four lanes of `v` (in 0..=65535, at most the frame's maxval) to `quad`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store<T: Sample>(quad: &mut [MaybeUninit<T>], v: __m128i) {
        assert_eq!(quad.len(), 4);
        let words = _mm_packus_epi32(v, v);
        if TypeId::of::<T>() == TypeId::of::<u8>() {
            let bytes = _mm_cvtsi128_si32(_mm_packus_epi16(words, words));
            // SAFETY: `quad` is four u8 slots: four bytes.
            unsafe { quad.as_mut_ptr().cast::<i32>().write_unaligned(bytes) };
        } else if TypeId::of::<T>() == TypeId::of::<u16>() {
            // SAFETY: `quad` is four u16 slots: eight bytes.
            unsafe { _mm_storel_epi64(quad.as_mut_ptr().cast(), words) };
        } else {
            // SAFETY: any 128 bits are four i32.
            let lanes = unsafe { std::mem::transmute::<__m128i, [i32; 4]>(v) };
            for (slot, v) in quad.iter_mut().zip(lanes) {
                slot.write(T::from_u16(v as u16));
            }
        }
    }
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
        RotateParams { by, interpolation, fill: 0, expand: false }.for_frame(f).unwrap().cpu(f).unwrap()
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
        assert_eq!(out.pixels, Pixels::U8(vec![2, 5, 8, 1, 4, 7, 0, 3, 6].into()));
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
                let rotate = Rotate::in_place(Turn::Quarter(q), w, h, Interpolation::Nearest, 0, 255);
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
                    let rotate = Rotate::in_place(turn, w, h, interpolation, 7, 1000);
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

    /// The general turn as the CPU backend computed it before its SIMD kernels (which the GPU
    /// kernel matches): a frozen copy of `sample_at` at `Affine::apply` of every pixel.
    mod reference {
        use super::*;

        pub fn samples<T: Sample>(r: &Rotate, input: &[T]) -> Vec<T> {
            let (w, h, m) = (r.width, r.height, r.new_to_old());
            let bilinear = r.interpolation == Interpolation::Bilinear;
            let fill = T::from_u16(r.fill);
            let (wf, hf) = (w as f64, h as f64);
            let sample = |sx: f64, sy: f64| -> T {
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
                    let inside = x >= 0.0 && y >= 0.0 && x < wf && y < hf;
                    Into::<u32>::into(if inside { input[y as usize * w + x as usize] } else { fill }) as f64
                };
                let (p00, p10, p01, p11) =
                    (at(x0, y0), at(x0 + 1.0, y0), at(x0, y0 + 1.0), at(x0 + 1.0, y0 + 1.0));
                let top = (1.0 - tx) * p00 + tx * p10;
                let bottom = (1.0 - tx) * p01 + tx * p11;
                let v = ((1.0 - ty) * top + ty * bottom + 0.5).floor().min(r.maxval as f64);
                T::from_u16(v as u16)
            };
            let ow = r.out_width;
            (0..ow * r.out_height)
                .map(|i| {
                    let (sx, sy) = m.apply((i % ow) as f64, (i / ow) as f64);
                    sample(sx, sy)
                })
                .collect()
        }
    }

    /// Every kernel this CPU can run: the portable one, and the SIMD ones it has.
    fn kernels() -> Vec<Kernel> {
        let mut all = vec![Kernel::Scalar];
        if Kernel::detect() != Kernel::Scalar {
            all.push(Kernel::detect());
        }
        all
    }

    /// Compares every kernel with the reference on `input` (maxval `maxval`) turned by each of
    /// `angles`, both interpolations, with a random fill.
    fn check_kernels<T: Sample + std::fmt::Debug + PartialEq>(
        rng: &mut fastrand::Rng,
        input: &[T],
        (w, h): (usize, usize),
        maxval: u16,
        angles: &[f64],
    ) {
        for &angle in angles {
            let turn = Turn::degrees(angle).unwrap();
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                let fill = rng.u16(0..=maxval);
                let rotate = Rotate::in_place(turn, w, h, interpolation, fill, maxval);
                let expected = reference::samples(&rotate, input);
                for kernel in kernels() {
                    let got = rotate.cpu_samples_with(input, kernel);
                    assert!(got == expected, "{w}x{h} {angle} {interpolation:?} fill {fill} {kernel:?}");
                }
            }
        }
    }

    fn test_angles(rng: &mut fastrand::Rng) -> Vec<f64> {
        let mut angles = vec![
            30.0,
            -30.0,
            1e-9,
            -1e-9,
            0.001,
            44.999999,
            45.0,
            45.000001,
            -45.0,
            89.9999999,
            90.0000001,
            135.0,
            179.99999,
            180.00001,
            -135.0,
            270.5,
            359.9999,
            390.0,
            725.25,
            -400.0,
            1e6 + 0.5,
        ];
        angles.extend((0..10).map(|_| rng.f64() * 1440.0 - 720.0));
        angles
    }

    /// The SIMD and portable kernels give exactly the old per-pixel evaluation on random frames,
    /// 8- and 16-bit, of many shapes (tiny, odd, wide, tall; every width modulo the SIMD width).
    #[test]
    fn kernels_match_the_reference_on_random_frames() {
        let mut rng = fastrand::Rng::with_seed(0x7261_6e64);
        let mut sizes = vec![
            (1usize, 1usize),
            (1, 7),
            (7, 1),
            (2, 3),
            (3, 2),
            (2, 2),
            (4, 9),
            (5, 5),
            (129, 65),
            (65, 129),
            (300, 11),
            (11, 300),
        ];
        sizes.extend((0..12).map(|_| (rng.usize(1..200), rng.usize(1..200))));
        for (w, h) in sizes {
            let angles = test_angles(&mut rng);
            let maxval = if rng.bool() { 255 } else { rng.u16(1..=255) };
            let bytes: Vec<u8> = (0..w * h).map(|_| rng.u8(0..=maxval as u8)).collect();
            check_kernels(&mut rng, &bytes, (w, h), maxval, &angles);
            let maxval = [65535, 1000, 256, rng.u16(256..=65535)][rng.usize(..4)];
            let words: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=maxval)).collect();
            check_kernels(&mut rng, &words, (w, h), maxval, &angles);
        }
    }

    /// Split over any number of threads, the output is the one thread's, quarter turns included.
    #[test]
    fn every_split_turns_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(0x636f_7265);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            for maxval in [255, 4000] {
                let f = parallel::testing::frame(&mut rng, w, h, maxval);
                for angle in [90.0, 180.0, 270.0, 30.0, -100.5, rng.f64() * 360.0] {
                    for (interpolation, expand) in [
                        (Interpolation::Nearest, false),
                        (Interpolation::Bilinear, false),
                        (Interpolation::Nearest, true),
                        (Interpolation::Bilinear, true),
                    ] {
                        let by = RotateBy::Degrees(angle);
                        let op = RotateParams { by, interpolation, fill: 3, expand }.for_frame(&f).unwrap();
                        let what =
                            format!("{w}x{h} maxval {maxval} {angle} {interpolation:?} expand {expand}");
                        parallel::testing::same_on_each_pool(&what, || op.cpu(&f).unwrap());
                    }
                }
            }
        }
    }

    /// The same on a real picture (tests/fixtures/camera.pgm), as is and widened to 16 bits.
    #[test]
    fn kernels_match_the_reference_on_the_camera_fixture() {
        use histopipe_frame::{FrameReader, ReadOptions};
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/camera.pgm");
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let frame = FrameReader::new(file, ReadOptions::default()).next_frame().unwrap().unwrap();
        let Pixels::U8(bytes) = &frame.pixels else { panic!("camera.pgm is 8-bit") };
        let mut rng = fastrand::Rng::with_seed(0x0063_616d);
        let mut angles = vec![30.0, -30.0, 45.0, 0.5, 179.5];
        angles.extend((0..4).map(|_| rng.f64() * 720.0 - 360.0));
        let size = (frame.width, frame.height);
        check_kernels(&mut rng, bytes, size, 255, &angles);
        let words: Vec<u16> = bytes.iter().map(|&v| v as u16 * 257).collect();
        check_kernels(&mut rng, &words, size, 65535, &angles[..4]);
    }

    /// The bracketing search finds the flip of any monotone test, whatever the guess.
    #[test]
    fn first_finds_the_flip_from_any_guess() {
        for n in 0usize..40 {
            for flip in 0..=n {
                for guess in [0, 1, flip.saturating_sub(1), flip, flip + 1, n / 2, n, n + 5, usize::MAX] {
                    assert_eq!(first(n, guess, |x| x >= flip), flip, "n {n} flip {flip} guess {guess}");
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

    /// `--expand`: quarter turns are transposes and flips into H x W (or W x H), and every other
    /// turn, evaluated by every kernel, is the reference's `sample_at` of the expanded map.
    #[test]
    fn expanded_turns() {
        let (w, h) = (7usize, 4usize);
        let f = frame(w, h);
        let at = |x: usize, y: usize| f.pixels.get(y * w + x);
        let turned = |degrees: f64| {
            let params = RotateParams {
                by: RotateBy::Degrees(degrees),
                interpolation: Interpolation::Bilinear,
                fill: 0,
                expand: true,
            };
            params.for_frame(&f).unwrap().cpu(&f).unwrap()
        };
        // A quarter turn counter-clockwise: output (x, y) <- input (W - 1 - y, x).
        for (degrees, size, source) in [
            (90.0, (h, w), &(|x, y| at(w - 1 - y, x)) as &dyn Fn(usize, usize) -> u16),
            (-270.0, (h, w), &|x, y| at(w - 1 - y, x)),
            (180.0, (w, h), &|x, y| at(w - 1 - x, h - 1 - y)),
            (270.0, (h, w), &|x, y| at(y, h - 1 - x)),
            (-90.0, (h, w), &|x, y| at(y, h - 1 - x)),
        ] {
            let out = turned(degrees);
            assert_eq!((out.width, out.height), size, "{degrees}");
            for y in 0..out.height {
                for x in 0..out.width {
                    assert_eq!(out.pixels.get(y * out.width + x), source(x, y), "{degrees} at ({x}, {y})");
                }
            }
            let g = out.geometry.unwrap().to_original;
            assert!([g.a, g.b, g.c, g.d, g.e, g.f].iter().all(|v| v.fract() == 0.0), "{degrees}: {g:?}");
        }
        assert_eq!(turned(0.0), f);
        assert_eq!(Turn::degrees(45.0).unwrap().bounding_size(10, 10), (15, 15)); // 14.14...
        assert_eq!(Turn::degrees(1e-9).unwrap().bounding_size(400, 328), (400, 328));
        assert_eq!(Turn::degrees(30.0).unwrap().bounding_size(400, 328), (511, 485));
        let mut rng = fastrand::Rng::with_seed(0x6578_7061);
        for _ in 0..24 {
            let (w, h) = (rng.usize(1..90), rng.usize(1..90));
            let turn = Turn::degrees(rng.f64() * 720.0 - 360.0).unwrap();
            let (ow, oh) = turn.bounding_size(w, h);
            let input: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=999)).collect();
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                let fill = rng.u16(0..=999);
                let r = Rotate {
                    turn,
                    width: w,
                    height: h,
                    out_width: ow,
                    out_height: oh,
                    interpolation,
                    fill,
                    maxval: 999,
                };
                let expected = reference::samples(&r, &input);
                for kernel in kernels() {
                    assert!(r.cpu_samples_with(&input, kernel) == expected, "{w}x{h} {turn:?} {kernel:?}");
                }
            }
        }
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
