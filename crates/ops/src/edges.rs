//! `edges`: Canny edge detection, pixel for pixel as OpenCV's `cv::Canny(img, low, high, 3, L2)`.
//!
//! 1. Gradients by the 3x3 Sobel kernels, the frame's border replicated (`BORDER_REPLICATE`):
//!    dx = (p[y-1][x+1] - p[y-1][x-1]) + 2 (p[y][x+1] - p[y][x-1]) + (p[y+1][x+1] - p[y+1][x-1]),
//!    dy likewise down the columns.
//! 2. Magnitude m = |dx| + |dy| (L1), or dx² + dy² (L2, compared with squared thresholds).
//! 3. Non-maximum suppression in integers: with tan(22.5°) as TG22 = round(0.41421356 · 2^15), the
//!    direction is horizontal when |dy|·2^15 < |dx|·TG22 (keep if m > left and m >= right),
//!    vertical when |dy|·2^15 > |dx|·(TG22 + 2^16) (keep if m > above and m >= below), else
//!    diagonal (keep if m is greater than both neighbours along the diagonal that dx·dy's sign
//!    picks). Magnitudes outside the frame count as 0. Only pixels with m > low are considered.
//! 4. Thresholds: `low`/`high` swapped if low > high; for L2 each is first capped at 32767 and
//!    squared when positive; then floored to integers. A kept pixel with m > high is strong, else
//!    weak; the edges are the strong pixels and every weak pixel 8-connected to one through weak
//!    pixels. That set is unique, so the order in which hysteresis visits pixels does not matter:
//!    the CPU floods from a stack; the GPU labels the 8-connected components of kept pixels by
//!    union-find and keeps the components that hold a strong pixel (the same set).
//!
//! An optional Gaussian blur first (`blur`) is histopipe's own, not OpenCV's (see
//! [`gaussian_weights`]): separable, f32, the same on both backends.

use std::mem::MaybeUninit;
use std::ops::Range;

use histopipe_frame::{Frame, Pixels, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use crate::histogram::check_len;
use crate::{parallel, Gpu, Op, OpError};

/// OpenCV's fixed-point tan(22.5°): round(0.4142135623730950488 · 2^15).
pub const TG22: i32 = 13573;

/// Map values between the stages (one byte per pixel).
const NONE: u8 = 0;
const WEAK: u8 = 1;
const STRONG: u8 = 2;

/// The largest blur sigma accepted: beyond it the kernel would be wider than any sensible frame.
pub const MAX_SIGMA: f64 = 100.0;

/// `edges`' parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Canny {
    /// Hysteresis thresholds on the gradient magnitude, as OpenCV takes them (any non-negative
    /// numbers; swapped if low > high).
    pub low: f64,
    pub high: f64,
    /// L2 magnitude sqrt(dx² + dy²) instead of |dx| + |dy|.
    pub l2: bool,
    /// Gaussian blur of this sigma first.
    pub blur: Option<f64>,
}

/// The Gaussian kernel for `sigma`: radius r = ceil(3 sigma), weights exp(-i² / (2 sigma²)) for
/// i = -r..=r, divided by their sum in f64, then rounded to f32. Both passes sum the products in
/// f32 in the order i = -r..=r from 0.0, and the result is rounded half to even and clamped to
/// 0..=255; borders are replicated.
pub fn gaussian_weights(sigma: f64) -> Vec<f32> {
    let r = (3.0 * sigma).ceil().max(1.0) as i64;
    let w: Vec<f64> = (-r..=r).map(|i| (-((i * i) as f64) / (2.0 * sigma * sigma)).exp()).collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|v| (v / sum) as f32).collect()
}

impl Canny {
    /// The integer thresholds the magnitudes are compared with, as OpenCV derives them.
    pub fn thresholds(&self) -> (i32, i32) {
        let (mut low, mut high) =
            if self.low > self.high { (self.high, self.low) } else { (self.low, self.high) };
        if self.l2 {
            low = low.min(32767.0);
            high = high.min(32767.0);
            if low > 0.0 {
                low *= low;
            }
            if high > 0.0 {
                high *= high;
            }
        }
        (low.floor() as i32, high.floor() as i32)
    }

    /// Checks the parameters, which hold for every frame.
    pub fn check(&self) -> Result<(), OpError> {
        for (name, v) in [("--low", self.low), ("--high", self.high)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(OpError::invalid(format!("{name} {v} must be a non-negative number")));
            }
        }
        if let Some(s) = self.blur {
            if !(s > 0.0 && s <= MAX_SIGMA) {
                return Err(OpError::invalid(format!("--blur {s} must be in (0, {MAX_SIGMA}]")));
            }
        }
        Ok(())
    }

    /// Checks the parameters and the frame, and returns its samples: Canny is defined here on
    /// 8-bit samples only.
    pub fn input<'f>(&self, frame: &'f Frame) -> Result<&'f [u8], OpError> {
        self.check()?;
        match &frame.pixels {
            Pixels::U8(v) => Ok(v),
            Pixels::U16(_) => Err(OpError::invalid(format!(
                "16-bit input (maxval {}) is not supported: the thresholds are for 8-bit gradients; \
                 convert the frame to 8 bits first",
                frame.maxval
            ))),
        }
    }

    fn output(&self, frame: &Frame, edges: impl Into<Samples<u8>>) -> Frame {
        frame.derive(frame.width, frame.height, 255, Pixels::U8(edges.into()))
    }
}

/// Separable Gaussian blur of an 8-bit frame (see [`gaussian_weights`]): each pass in bands of
/// rows on the pool's threads.
pub fn blur_cpu(src: &[u8], w: usize, h: usize, k: &[f32]) -> Vec<u8> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let r = (k.len() / 2) as isize;
    let clamp = |v: isize, n: usize| v.clamp(0, n as isize - 1) as usize;
    // Each pass costs about a multiply-add per tap and pixel.
    let band = h.div_ceil(parallel::parts(w * h * k.len(), BLUR_MIN_PART)) * w;
    let mut tmp = vec![0f32; w * h];
    parallel::for_each_part(&mut tmp, band, |first, part| {
        for (y, row) in (first / w..).zip(part.chunks_exact_mut(w)) {
            for (x, t) in row.iter_mut().enumerate() {
                let mut acc = 0f32;
                for (i, &kw) in k.iter().enumerate() {
                    acc += kw * src[y * w + clamp(x as isize + i as isize - r, w)] as f32;
                }
                *t = acc;
            }
        }
    });
    let mut out = vec![0u8; w * h];
    parallel::for_each_part(&mut out, band, |first, part| {
        for (y, row) in (first / w..).zip(part.chunks_exact_mut(w)) {
            for (x, o) in row.iter_mut().enumerate() {
                let mut acc = 0f32;
                for (i, &kw) in k.iter().enumerate() {
                    acc += kw * tmp[clamp(y as isize + i as isize - r, h) * w + x];
                }
                *o = acc.round_ties_even().clamp(0.0, 255.0) as u8;
            }
        }
    });
    out
}

/// Sobel gradients and magnitudes of row `y`, borders replicated: `dx`, `dy` and `mag` hold w
/// values; `mag` is the middle of a row of w + 2 whose two ends stay 0 (outside the frame).
/// Rows are summed first (the vertical [1 2 1] and [-1 0 1] kernels), then the columns, on whole
/// slices so that the loops vectorize; only the two end columns are clamped.
#[allow(clippy::too_many_arguments)]
fn gradient_row(
    src: &[u8],
    w: usize,
    h: usize,
    y: usize,
    l2: bool,
    sums: &mut [i32],
    diffs: &mut [i32],
    dx: &mut [i32],
    dy: &mut [i32],
    mag: &mut [i32],
) {
    let up = &src[y.saturating_sub(1) * w..][..w];
    let mid = &src[y * w..][..w];
    let down = &src[(y + 1).min(h - 1) * w..][..w];
    // sums / diffs are padded by one replicated column on each side.
    for (((s, d), (&u, &c)), &b) in
        sums[1..=w].iter_mut().zip(&mut diffs[1..=w]).zip(up.iter().zip(mid)).zip(down)
    {
        *s = u as i32 + 2 * c as i32 + b as i32;
        *d = b as i32 - u as i32;
    }
    sums[0] = sums[1];
    diffs[0] = diffs[1];
    sums[w + 1] = sums[w];
    diffs[w + 1] = diffs[w];
    // Shifted slices rather than indices: no bounds checks inside the loops.
    for ((gx, &l), &r) in dx.iter_mut().zip(&sums[..w]).zip(&sums[2..]) {
        *gx = r - l;
    }
    for (((gy, &l), &c), &r) in dy.iter_mut().zip(&diffs[..w]).zip(&diffs[1..=w]).zip(&diffs[2..]) {
        *gy = l + 2 * c + r;
    }
    let m = &mut mag[1..=w];
    if l2 {
        for ((m, &gx), &gy) in m.iter_mut().zip(&*dx).zip(&*dy) {
            *m = gx * gx + gy * gy;
        }
    } else {
        for ((m, &gx), &gy) in m.iter_mut().zip(&*dx).zip(&*dy) {
            *m = gx.abs() + gy.abs();
        }
    }
}

/// One row's gradients and magnitudes (see [`gradient_row`]).
struct GradientRow {
    dx: Vec<i32>,
    dy: Vec<i32>,
    /// w + 2 magnitudes, 0 at both ends.
    mag: Vec<i32>,
}

impl GradientRow {
    fn new(w: usize) -> Self {
        GradientRow { dx: vec![0; w], dy: vec![0; w], mag: vec![0; w + 2] }
    }
}

/// Stages 1–4 on the CPU, OpenCV's way: three rows of magnitudes at a time, suppression into a
/// map with a one-pixel NONE border, strong pixels pushed on a stack as they are found, then a
/// flood from the stack through weak pixels. Returns the 0/255 edges.
///
/// Bands of rows are worked on by the pool's threads. Each computes the gradients of the rows just
/// outside it too, so its part of the map is the one a single pass makes ([`suppress_rows`]),
/// then floods from its strong pixels within its rows ([`flood`]), noting the neighbours outside
/// them of the pixels it made strong. A flood over the whole map from those of them that are weak
/// ends hysteresis. Every pixel so marked is 8-connected to a strong one through kept pixels,
/// and every such pixel is marked (where a path from a strong pixel first meets an unmarked one,
/// the marked pixel before it was flooded from: in its band, or from the notes), so the edges are
/// the set one flood makes, whatever the bands.
fn canny_cpu(src: &[u8], w: usize, h: usize, l2: bool, low: i32, high: i32) -> Vec<u8> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let mw = w + 2;
    let n = mw * (h + 2);
    // Set band by band on the pool's threads: zeroed here, the whole map would be one thread's
    // memset (glibc serves a block of the last frame's size from its heap, not fresh pages).
    let mut map: Vec<u8> = parallel::output(n);
    let band = h.div_ceil(parallel::parts(w * h, MIN_PART));
    let thresholds = Thresholds { l2, low, high };
    // Frame rows y0.. are map rows y0 + 1..: a band's bytes start at (y0 + 1) mw in the map.
    let in_band = |y0: usize, rows: &mut [MaybeUninit<u8>]| {
        let rows = parallel::filled(rows, NONE);
        let strong = suppress_rows(src, w, h, thresholds, y0..y0 + rows.len() / mw, rows);
        let mut outside = Vec::new();
        flood(rows, mw, (y0 + 1) * mw, strong, &mut outside);
        outside
    };
    let (top, rest) = map.spare_capacity_mut()[..n].split_at_mut(mw);
    let (interior, bottom) = rest.split_at_mut(h * mw);
    parallel::filled(top, NONE);
    parallel::filled(bottom, NONE);
    let outside: Vec<Vec<usize>> = if band >= h {
        vec![in_band(0, interior)]
    } else {
        use rayon::prelude::*;
        interior.par_chunks_mut(band * mw).enumerate().map(|(k, rows)| in_band(k * band, rows)).collect()
    };
    // SAFETY: `filled` wrote the top and bottom rows and every band's rows, which cover the rest.
    unsafe { map.set_len(n) };
    let mut seeds = Vec::new();
    for j in outside.into_iter().flatten() {
        if map[j] == WEAK {
            map[j] = STRONG;
            seeds.push(j);
        }
    }
    // The border ring is NONE: this flood never leaves the map.
    flood(&mut map, mw, 0, seeds, &mut Vec::new());
    let rows_of = |first: usize, part: &mut [MaybeUninit<u8>]| {
        let rows = map[mw..].chunks_exact(mw).skip(first / w);
        for (dst, m) in part.chunks_exact_mut(w).zip(rows) {
            for (d, &v) in dst.iter_mut().zip(&m[1..=w]) {
                d.write(if v == STRONG { 255 } else { 0 });
            }
        }
    };
    // SAFETY: the parts are of whole rows, and each row of a part is written: the map has a row
    // for each.
    unsafe { parallel::output_in_parts(w * h, band * w, rows_of) }
}

/// Hysteresis within `map`, whole rows of `mw` bytes that start at index `base` of the whole map:
/// pops the strong pixels of `stack` (indices in `map`) and makes every weak 8-neighbour strong,
/// pushing it in turn. The neighbours outside `map` of the pixels popped go to `outside`, as
/// indices in the whole map.
fn flood(map: &mut [u8], mw: usize, base: usize, mut stack: Vec<usize>, outside: &mut Vec<usize>) {
    let offsets = [mw + 1, mw, mw - 1, 1];
    while let Some(i) = stack.pop() {
        for &o in &offsets {
            // Below `map`, i - o wraps around to an index past its end: one test for both sides.
            for j in [i.wrapping_sub(o), i + o] {
                match map.get_mut(j) {
                    Some(v) if *v == WEAK => {
                        *v = STRONG;
                        stack.push(j);
                    }
                    Some(_) => {}
                    None => outside.push(base.wrapping_add(j)),
                }
            }
        }
    }
}

/// Fewest pixels in a part of the CPU's work ([`parallel::parts`]): 1.9 ns a pixel on one core
/// (a real 4096x3112 in 24 ms; uniform noise, all edges, takes ten times that), so a part takes
/// 0.25 ms or more.
const MIN_PART: usize = 1 << 17;
/// Fewest pixel-taps (pixels times the kernel's length) in a part of a blur pass: about 0.4 ns
/// each, so a part takes 0.2 ms or more.
const BLUR_MIN_PART: usize = 1 << 19;

/// What stage 3 compares the magnitudes with: [`Canny::thresholds`], and which magnitude.
#[derive(Debug, Clone, Copy)]
struct Thresholds {
    l2: bool,
    low: i32,
    high: i32,
}

/// Stages 1–3 for the frame rows `rows`: their NONE / WEAK / STRONG values into `out` (those
/// rows of the map, `w + 2` bytes each, the first and last left NONE), and the indices in `out`
/// of their strong pixels, in the order found.
fn suppress_rows(
    src: &[u8],
    w: usize,
    h: usize,
    t: Thresholds,
    rows: Range<usize>,
    out: &mut [u8],
) -> Vec<usize> {
    let mw = w + 2;
    let mut stack = Vec::new();
    let (mut sums, mut diffs) = (vec![0i32; w + 2], vec![0i32; w + 2]);
    // grad[0..3]: the gradients of rows y - 1, y and y + 1; a row outside the frame has m = 0.
    let mut grad = [GradientRow::new(w), GradientRow::new(w), GradientRow::new(w)];
    let mut gradient = |y: usize, g: &mut GradientRow| {
        gradient_row(src, w, h, y, t.l2, &mut sums, &mut diffs, &mut g.dx, &mut g.dy, &mut g.mag)
    };
    if rows.start > 0 {
        gradient(rows.start - 1, &mut grad[0]);
    }
    gradient(rows.start, &mut grad[1]);
    for (y, line) in rows.clone().zip(out.chunks_exact_mut(mw)) {
        if y + 1 < h {
            gradient(y + 1, &mut grad[2]);
        } else {
            grad[2].mag.fill(0);
        }
        let [above, row, below] = &grad;
        let (ma, mc, mb) = (&above.mag[..], &row.mag[..], &below.mag[..]);
        let line = &mut line[1..=w];
        classify_row(t, [ma, mc, mb], &row.dx, &row.dy, line);
        push_strong(line, (y - rows.start) * mw + 1, &mut stack);
        grad.rotate_left(1);
    }
    stack
}

/// Stage 3 for one row: `line[x]` becomes NONE, WEAK or STRONG for frame column x, from the
/// padded magnitudes `m` of the rows above, at and below it (w + 2 each, column x + 1 is frame
/// column x) and the row's gradients. The module's stage 3 (the direction as OpenCV's sectors, then
/// its two neighbours), written as selects rather than branches: on noisy content the direction and the outcome change from
/// pixel to pixel, and the branches were mispredicted about half the time; without them the loop
/// runs on vectors (with AVX2, where the CPU has it: SSE2 has no 32-bit multiply or select).
fn classify_row(t: Thresholds, m: [&[i32]; 3], dx: &[i32], dy: &[i32], line: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { classify_row_avx2(t, m, dx, dy, line) };
        return;
    }
    classify_row_body(t, m, dx, dy, line);
}

/// [`classify_row`] compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn classify_row_avx2(t: Thresholds, m: [&[i32]; 3], dx: &[i32], dy: &[i32], line: &mut [u8]) {
    classify_row_body(t, m, dx, dy, line);
}

/// Pixels [`classify_row_body`] takes at a time: a run of them all at or below the low threshold
/// (most of a photo) is passed over with one test.
const CLASSIFY_RUN: usize = 16;

/// The body of [`classify_row`], inlined into each of its compilations: run by run of
/// [`CLASSIFY_RUN`] pixels.
#[inline(always)]
fn classify_row_body(t: Thresholds, m: [&[i32]; 3], dx: &[i32], dy: &[i32], line: &mut [u8]) {
    let w = line.len();
    let mut x0 = 0;
    while x0 < w {
        let n = CLASSIFY_RUN.min(w - x0);
        let run = |r: usize, k: usize| &m[r][x0 + k..x0 + k + n];
        let out = &mut line[x0..x0 + n];
        if run(1, 1).iter().all(|&v| v <= t.low) {
            out.fill(NONE);
        } else {
            classify_run(
                t,
                [run(0, 0), run(0, 1), run(0, 2)],
                [run(1, 0), run(1, 1), run(1, 2)],
                [run(2, 0), run(2, 1), run(2, 2)],
                &dx[x0..x0 + n],
                &dy[x0..x0 + n],
                out,
            );
        }
        x0 += n;
    }
}

/// [`classify_row_body`] on a run: `a`, `c` and `b` the magnitudes of the rows above, at and below
/// at columns x - 1, x and x + 1, each as long as `out`. Every value is loaded, then chosen with
/// masks: chosen by branches or by address, the compiler loaded them one at a time.
#[inline(always)]
fn classify_run(
    t: Thresholds,
    a: [&[i32]; 3],
    c: [&[i32]; 3],
    b: [&[i32]; 3],
    dx: &[i32],
    dy: &[i32],
    out: &mut [u8],
) {
    let n = out.len();
    let sel = |mask: i32, yes: i32, no: i32| (yes & mask) | (no & !mask);
    for x in 0..n.min(dx.len()).min(dy.len()) {
        let (gx, gy) = (dx[x], dy[x]);
        let (a0, a1, a2) = (a[0][..n][x], a[1][..n][x], a[2][..n][x]);
        let (c0, v, c2) = (c[0][..n][x], c[1][..n][x], c[2][..n][x]);
        let (b0, b1, b2) = (b[0][..n][x], b[1][..n][x], b[2][..n][x]);
        let ax = gx.abs();
        let ay = gy.abs() << 15;
        let tg22x = ax * TG22;
        // All ones where true.
        let horizontal = -((ay < tg22x) as i32);
        // Never true with `horizontal`: (ax << 16) >= 0.
        let vertical = -((ay > tg22x + (ax << 16)) as i32);
        let falling = (gx ^ gy) >> 31;
        let n1 = sel(horizontal, c0, sel(vertical, a1, sel(falling, a2, a0)));
        let n2 = sel(horizontal, c2, sel(vertical, b1, sel(falling, b0, b2)));
        // Along a row or a column the second neighbour may equal v (m >= it): v + 1 > n2.
        let second = v + ((horizontal | vertical) & 1) > n2;
        let keep = (v > t.low) & (v > n1) & second;
        out[x] = keep as u8 * (WEAK + (v > t.high) as u8);
    }
}

/// Pushes `base + x` for each STRONG `line[x]`, in order of x. Eight values at a time: NONE,
/// WEAK and STRONG are 0, 1 and 2, so a word's STRONG bytes are those with bit 1 set.
fn push_strong(line: &[u8], base: usize, stack: &mut Vec<usize>) {
    const _: () = assert!(NONE == 0 && WEAK == 1 && STRONG == 2);
    let mut words = line.chunks_exact(8);
    for (k, word) in (&mut words).enumerate() {
        let mut bits = u64::from_le_bytes(std::array::from_fn(|i| word[i])) & 0x0202_0202_0202_0202;
        while bits != 0 {
            stack.push(base + k * 8 + bits.trailing_zeros() as usize / 8);
            bits &= bits - 1;
        }
    }
    let done = line.len() - words.remainder().len();
    for (x, &v) in (done..).zip(words.remainder()) {
        if v == STRONG {
            stack.push(base + x);
        }
    }
}

/// The tile of `canny_nms` (`CANNY_TW` x `CANNY_TH` in canny.cu) and its blocks' shape.
const NMS_TILE: (u32, u32) = (128, 16);
const NMS_BLOCK: (u32, u32) = (32, 8);

/// The tiles of `canny_nms` for a w x h frame, the length of its one-dimensional grid (tiles in
/// frame order; canny_tile in canny.cu finds a block's tile), or `None` beyond the grid's 2^31 - 1
/// blocks. A frame of fewer than 2^32 pixels has fewer than 2^29 tiles: (w / 128 + 1)(h / 16 + 1)
/// is at most 2^32 / 2048 + 2^32 / 16 + 2^32 / 128 + 1.
fn nms_tiles(w: usize, h: usize) -> Option<u32> {
    let tiles = w.div_ceil(NMS_TILE.0 as usize).checked_mul(h.div_ceil(NMS_TILE.1 as usize))?;
    u32::try_from(tiles).ok().filter(|&t| t <= i32::MAX as u32)
}

impl Canny {
    /// Queues the blur kernels: `src` (w x h) through `tmp` (f32, w x h) into `dst`; `weights`
    /// holds [`gaussian_weights`].
    #[allow(clippy::too_many_arguments)]
    fn launch_blur(
        gpu: &Gpu,
        src: &CudaSlice<u8>,
        w: usize,
        h: usize,
        weights: &CudaSlice<f32>,
        taps: usize,
        tmp: &mut CudaSlice<f32>,
        dst: &mut CudaSlice<u8>,
    ) -> Result<(), OpError> {
        let n = w * h;
        if n == 0 {
            return Ok(());
        }
        Self::checked_tiles(w, h)?;
        check_len("blur input", src.len(), n)?;
        check_len("blur weights", weights.len(), taps)?;
        check_len("blur rows", tmp.len(), n)?;
        check_len("blur output", dst.len(), n)?;
        if taps % 2 == 0 {
            return Err(OpError::invalid(format!("a blur of {taps} taps (an odd number is needed)")));
        }
        let (w32, h32, r) = (w as u32, h as u32, (taps / 2) as u32);
        // SAFETY: gauss_rows(in, w, h, weights, r, out) and gauss_cols(in, w, h, weights, r, out)
        // in canny.cu; the lengths are checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "gauss_rows", launch::cover(n, 256); src, &w32, &h32, weights, &r, &mut *tmp)?;
            launch!(gpu, kernels::CANNY, "gauss_cols", launch::cover(n, 256); &*tmp, &w32, &h32, weights, &r, dst)
        }?;
        Ok(())
    }

    /// Queues stages 1–3 as one kernel: the NONE / WEAK / STRONG map (one byte per pixel) of
    /// `src` (w x h) into `map`, and, for every kept pixel, the root of its component within its
    /// tile into `labels`, where [`Canny::launch_hysteresis`] goes on. Frames need fewer than
    /// 2^32 pixels (see [`Canny::gpu_size_ok`]).
    #[allow(clippy::too_many_arguments)]
    fn launch_gradient_nms(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<u8>,
        w: usize,
        h: usize,
        map: &mut CudaSlice<u8>,
        labels: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        if w == 0 || h == 0 {
            return Ok(());
        }
        let (low, high) = self.thresholds();
        let tiles = Self::checked_tiles(w, h)?;
        let n = w * h;
        check_len("edges' input", src.len(), n)?;
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        let cfg = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: (NMS_BLOCK.0, NMS_BLOCK.1, 1),
            shared_mem_bytes: 0,
        };
        let (w32, h32, l2) = (w as u32, h as u32, self.l2 as u32);
        // SAFETY: canny_nms(in, w, h, l2, low, high, map, labels) in canny.cu; the lengths are
        // checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_nms", cfg; src, &w32, &h32, &l2, &low, &high, map, labels)
        }?;
        Ok(())
    }

    /// Whether a w x h frame fits the GPU backend: `labels` holds pixel indices in 32 bits, so
    /// frames need fewer than 2^32 pixels (their tiles then fit the grid, see [`nms_tiles`]).
    pub fn gpu_size_ok(w: usize, h: usize) -> bool {
        w.checked_mul(h).is_some_and(|n| n <= u32::MAX as usize) && nms_tiles(w, h).is_some()
    }

    /// The grid of `canny_nms` and `canny_union_borders`, or the error for a frame too large.
    fn checked_tiles(w: usize, h: usize) -> Result<u32, OpError> {
        match nms_tiles(w, h) {
            Some(tiles) if Self::gpu_size_ok(w, h) => Ok(tiles),
            _ => Err(OpError::invalid(format!(
                "{w}x{h} is too large for the GPU backend of edges: it takes frames of fewer than 2^32 pixels"
            ))),
        }
    }

    /// The length of the bit set of strong roots that [`Canny::launch_hysteresis`] and
    /// [`Canny::launch_finish`] share, for `n` pixels: one bit per pixel, in 32-bit words.
    fn strong_words(n: usize) -> usize {
        n.div_ceil(32)
    }

    /// Queues the rest of hysteresis over the `map` and `labels` of [`Canny::launch_gradient_nms`]
    /// (w x h): union-find joins the tiles' components across tile borders, then every kept
    /// pixel's label is pointed at its component's root and the roots of components holding a
    /// strong pixel get their bit in `strong` (at least [`Canny::strong_words`] long; zeroed
    /// here). A memset and two kernels, no host round trip; the result does not depend on
    /// scheduling (the components are unique).
    fn launch_hysteresis(
        gpu: &Gpu,
        map: &CudaSlice<u8>,
        labels: &mut CudaSlice<u32>,
        strong: &mut CudaSlice<u32>,
        w: usize,
        h: usize,
    ) -> Result<(), OpError> {
        let n = w * h;
        if n == 0 {
            return Ok(());
        }
        let tiles = Self::checked_tiles(w, h)?;
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        check_len("edges' strong roots", strong.len(), Self::strong_words(n))?;
        gpu.stream().memset_zeros(&mut strong.slice_mut(..Self::strong_words(n)))?;
        let (w32, h32, n64) = (w as u32, h as u32, n as u64);
        // One block per tile of canny_nms, one thread per pixel of its top row and side columns.
        let border = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: ((NMS_TILE.0 + 2 * (NMS_TILE.1 - 1)).next_multiple_of(32), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: canny_union_borders(map, w, h, labels) and canny_flatten(map, n, labels,
        // strong) in canny.cu; the lengths are checked above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_union_borders", border; map, &w32, &h32, &mut *labels)?;
            launch!(gpu, kernels::CANNY, "canny_flatten", launch::cover(n, 256); map, &n64, labels, strong)
        }?;
        Ok(())
    }

    /// Queues the last step, after [`Canny::launch_hysteresis`]: for `n` pixels, 255 where the
    /// pixel is kept and its root (its label now) has its bit in `strong`, else 0.
    fn launch_finish(
        gpu: &Gpu,
        map: &CudaSlice<u8>,
        labels: &CudaSlice<u32>,
        strong: &CudaSlice<u32>,
        n: usize,
        dst: &mut CudaSlice<u8>,
    ) -> Result<(), OpError> {
        if n == 0 {
            return Ok(());
        }
        check_len("edges' map", map.len(), n)?;
        check_len("edges' labels", labels.len(), n)?;
        check_len("edges' strong roots", strong.len(), Self::strong_words(n))?;
        check_len("edges' output", dst.len(), n)?;
        let n64 = n as u64;
        // SAFETY: canny_finish(map, labels, strong, n, out) in canny.cu; the lengths are checked
        // above.
        unsafe {
            launch!(gpu, kernels::CANNY, "canny_finish", launch::cover(n, 256); map, labels, strong, &n64, dst)
        }?;
        Ok(())
    }
}

impl Op for Canny {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let mut src = self.input(frame)?;
        let (w, h) = (frame.width, frame.height);
        let blurred;
        if let Some(sigma) = self.blur {
            blurred = blur_cpu(src, w, h, &gaussian_weights(sigma));
            src = &blurred;
        }
        let (low, high) = self.thresholds();
        Ok(self.output(frame, canny_cpu(src, w, h, self.l2, low, high)))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let input = self.input(frame)?;
        let n = frame.width * frame.height;
        // Refused before anything is allocated.
        let mut plan = self.plan(gpu, frame.width, frame.height)?;
        let src = gpu.upload::<u8>("edges.in", input)?;
        let mut dst = gpu.buffer::<u8>("edges.out", n)?;
        plan.queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(self.output(frame, out))
    }
}

impl Canny {
    /// The device plan of this detector for `w x h` frames, or the error for a frame too large.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> Result<CannyPlan<'g>, OpError> {
        Self::checked_tiles(w, h)?;
        let n = w * h;
        let blur = match self.blur {
            Some(sigma) => {
                let weights = gaussian_weights(sigma);
                Some(Blur {
                    taps: weights.len(),
                    weights: gpu.upload::<f32>("edges.weights", &weights)?,
                    rows: gpu.buffer::<f32>("edges.blur", n)?,
                    out: gpu.buffer::<u8>("edges.blurred", n)?,
                })
            }
            None => None,
        };
        Ok(CannyPlan {
            gpu,
            canny: *self,
            w,
            h,
            blur,
            map: gpu.buffer::<u8>("edges.map", n)?,
            labels: gpu.buffer::<u32>("edges.labels", n)?,
            strong: gpu.buffer::<u32>("edges.strong", Self::strong_words(n))?,
        })
    }
}

/// The blur's weights and its two passes' outputs on the device.
struct Blur<'g> {
    taps: usize,
    weights: Buffer<'g, f32>,
    rows: Buffer<'g, f32>,
    out: Buffer<'g, u8>,
}

/// The device plan of `edges`: the blur's buffers (if it blurs), the NONE / WEAK / STRONG map,
/// the labels of union-find and the bit set of strong roots, and the kernels. The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct CannyPlan<'g> {
    gpu: &'g Gpu,
    canny: Canny,
    w: usize,
    h: usize,
    blur: Option<Blur<'g>>,
    map: Buffer<'g, u8>,
    labels: Buffer<'g, u32>,
    strong: Buffer<'g, u32>,
}

impl CannyPlan<'_> {
    /// Queues the edges of the `w x h` frame in `src` into `dst`: the blur (if any), stages 1-3
    /// in one kernel, hysteresis by union-find (a memset and two kernels) and the 0/255 output;
    /// nothing waits on the host.
    pub fn queue(&mut self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<(), OpError> {
        let (gpu, w, h) = (self.gpu, self.w, self.h);
        let src = match &mut self.blur {
            Some(b) => {
                Canny::launch_blur(gpu, src, w, h, &b.weights, b.taps, &mut b.rows, &mut b.out)?;
                &*b.out
            }
            None => src,
        };
        self.canny.launch_gradient_nms(gpu, src, w, h, &mut self.map, &mut self.labels)?;
        Canny::launch_hysteresis(gpu, &self.map, &mut self.labels, &mut self.strong, w, h)?;
        Canny::launch_finish(gpu, &self.map, &self.labels, &self.strong, w * h, dst)
    }

    /// Queues stages 1-3 alone, unblurred: the fused gradient / suppression / threshold kernel
    /// from `src` to the plan's map and starting labels.
    pub fn queue_gradient(&mut self, src: &CudaSlice<u8>) -> Result<(), OpError> {
        self.canny.launch_gradient_nms(self.gpu, src, self.w, self.h, &mut self.map, &mut self.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Which neighbours non-maximum suppression compares with, from the gradient (OpenCV's sectors):
    /// 0 left/right, 1 above/below, 2 the diagonal (-1,-1)/(+1,+1), 3 the diagonal (+1,-1)/(-1,+1).
    fn direction(dx: i32, dy: i32) -> u8 {
        let x = dx.abs();
        let y = dy.abs() << 15;
        let tg22x = x * TG22;
        if y < tg22x {
            0
        } else if y > tg22x + (x << 16) {
            1
        } else if (dx ^ dy) < 0 {
            3
        } else {
            2
        }
    }

    /// Stage 3 pixel by pixel, with branches: the direction's sector, then its two neighbours.
    fn classify_reference(t: Thresholds, [ma, mc, mb]: [&[i32]; 3], dx: &[i32], dy: &[i32]) -> Vec<u8> {
        (0..dx.len())
            .map(|x| {
                let m = mc[x + 1];
                if m <= t.low {
                    return NONE;
                }
                let keep = match direction(dx[x], dy[x]) {
                    0 => m > mc[x] && m >= mc[x + 2],
                    1 => m > ma[x + 1] && m >= mb[x + 1],
                    2 => m > ma[x] && m > mb[x + 2],
                    _ => m > ma[x + 2] && m > mb[x],
                };
                match (keep, m > t.high) {
                    (false, _) => NONE,
                    (true, false) => WEAK,
                    (true, true) => STRONG,
                }
            })
            .collect()
    }

    #[test]
    fn branchless_suppression_is_the_sectors_test() {
        let mut rng = fastrand::Rng::with_seed(13);
        for w in [1, 7, 8, 9, 64, 333] {
            for spread in [3, 40, 1020] {
                let grad =
                    |rng: &mut fastrand::Rng| (0..w).map(|_| rng.i32(-spread..=spread)).collect::<Vec<_>>();
                let (dx, dy) = (grad(&mut rng), grad(&mut rng));
                // Magnitudes often equal to their neighbours, and some at the thresholds.
                let mags: Vec<Vec<i32>> = (0..3)
                    .map(|_| {
                        let mut m: Vec<i32> = (0..w + 2).map(|_| rng.i32(0..=12) * 10).collect();
                        (m[0], m[w + 1]) = (0, 0);
                        m
                    })
                    .collect();
                let t = Thresholds { l2: false, low: 40, high: 90 };
                let m = [&mags[0][..], &mags[1][..], &mags[2][..]];
                let mut line = vec![NONE; w];
                classify_row(t, m, &dx, &dy, &mut line);
                assert_eq!(line, classify_reference(t, m, &dx, &dy), "w {w}, spread {spread}");
                let mut stack = Vec::new();
                push_strong(&line, 5, &mut stack);
                let strong: Vec<usize> = (0..w).filter(|&x| line[x] == STRONG).map(|x| x + 5).collect();
                assert_eq!(stack, strong);
            }
        }
    }

    #[test]
    fn tg22_is_opencvs_constant() {
        assert_eq!(TG22, (0.414_213_562_373_095_05_f64 * 32768.0 + 0.5) as i32);
    }

    #[test]
    fn thresholds_follow_opencv() {
        let c = |low, high, l2| Canny { low, high, l2, blur: None }.thresholds();
        assert_eq!(c(50.7, 150.2, false), (50, 150));
        assert_eq!(c(150.0, 50.0, false), (50, 150));
        assert_eq!(c(10.5, 40000.0, true), (110, 32767 * 32767));
    }

    #[test]
    fn a_step_gives_one_thin_edge() {
        // Left half 0, right half 200: the step between columns 3 and 4.
        let (w, h) = (8, 5);
        let px: Vec<u8> = (0..w * h).map(|i| if i % w >= 4 { 200 } else { 0 }).collect();
        let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
        let out = Canny { low: 50.0, high: 100.0, l2: false, blur: None }.cpu(&f).unwrap();
        let Pixels::U8(e) = out.pixels else { panic!() };
        for y in 0..h {
            let row: Vec<u8> = e[y * w..(y + 1) * w].to_vec();
            assert_eq!(row, vec![0, 0, 0, 255, 0, 0, 0, 0], "row {y}");
        }
    }

    #[test]
    fn tile_shapes_match_the_kernel() {
        let text = kernels::CANNY.text;
        for (name, v) in [
            ("CANNY_TW", NMS_TILE.0),
            ("CANNY_TH", NMS_TILE.1),
            ("CANNY_BX", NMS_BLOCK.0),
            ("CANNY_BY", NMS_BLOCK.1),
        ] {
            assert!(text.contains(&format!("#define {name} {v}\n")), "{name} is not {v} in canny.cu");
        }
    }

    #[test]
    fn the_gpu_takes_frames_of_fewer_than_2_to_the_32_pixels_of_any_shape() {
        let most = u32::MAX as usize;
        for (w, h) in [(65536, 32769), (most, 1), (1, most), (3, most / 3), (most / 4096, 4096), (1, 1)] {
            assert!(Canny::gpu_size_ok(w, h), "{w}x{h}");
            let tiles = nms_tiles(w, h).unwrap();
            assert_eq!(tiles as usize, w.div_ceil(128) * h.div_ceil(16), "{w}x{h}");
            assert!(tiles < 1 << 29);
        }
        // Taller than 65535 tile rows: the grid is one-dimensional.
        assert_eq!(nms_tiles(1, 1 << 31), Some(1 << 27));
        for (w, h) in [(65536, 65536), (most + 1, 1), (1, most + 1), (usize::MAX, 2)] {
            assert!(!Canny::gpu_size_ok(w, h), "{w}x{h}");
            assert!(Canny::checked_tiles(w, h).unwrap_err().message.contains("fewer than 2^32 pixels"));
        }
        assert_eq!(Canny::strong_words(0), 0);
        assert_eq!(Canny::strong_words(most), 1 << 27);
    }

    /// Split over any number of threads, the edges are the one thread's: random frames (dense,
    /// short edges) and smooth ones whose long edges cross many bands, with and without blur.
    #[test]
    fn every_split_finds_the_edges_of_one_thread() {
        let mut rng = fastrand::Rng::with_seed(29);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            let noise = parallel::testing::frame(&mut rng, w, h, 255);
            let rings: Vec<u8> = (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as f64 - w as f64 / 3.0, (i / w) as f64 - h as f64 / 2.0);
                    let ring = ((x * x + y * y).sqrt() / 9.0).sin();
                    (128.0 + 100.0 * ring + rng.f64() * 20.0) as u8
                })
                .collect();
            let rings = Frame::new(w, h, 255, Pixels::U8(rings.into()));
            for (f, low, high) in [(&noise, 50.0, 150.0), (&rings, 20.0, 90.0), (&rings, 5.0, 200.0)] {
                for (l2, blur) in [(false, None), (true, None), (false, Some(1.2))] {
                    let canny = Canny { low, high, l2, blur };
                    let what = format!("{w}x{h} {canny:?}");
                    parallel::testing::same_on_each_pool(&what, || canny.cpu(f).unwrap());
                }
            }
        }
    }

    #[test]
    fn blur_weights_sum_to_one() {
        let k = gaussian_weights(1.4);
        assert_eq!(k.len(), 2 * 5 + 1);
        assert!((k.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-6);
        let flat = blur_cpu(&[77; 12], 4, 3, &k);
        assert!(flat.iter().all(|&v| v == 77));
    }
}
