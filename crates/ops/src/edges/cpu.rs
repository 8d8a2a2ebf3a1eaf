//! `edges` on the CPU, OpenCV's way: the blur and the gradients in bands of rows on the pool's
//! threads, suppression into a map, and hysteresis by floods from the strong pixels.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::classify::{classify_row, Thresholds};
use super::{NONE, STRONG, WEAK};
use crate::parallel;

/// Separable Gaussian blur of an 8-bit frame (see [`gaussian_weights`]): each pass in bands of
/// rows on the pool's threads.
pub fn blur_cpu(src: &[u8], w: usize, h: usize, k: &[f32]) -> Vec<u8> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let r = (k.len() / 2) as isize;
    let clamp = |v: isize, n: usize| v.clamp(0, n as isize - 1) as usize;
    // Each pass costs about a multiply-add per tap and pixel.
    let band = h.div_ceil(parallel::parts_warm(w * h * k.len(), BLUR_MIN_PART)) * w;
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
pub(super) fn canny_cpu(src: &[u8], w: usize, h: usize, l2: bool, low: i32, high: i32) -> Vec<u8> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let mw = w + 2;
    let n = mw * (h + 2);
    // Set band by band on the pool's threads: zeroed here, the whole map would be one thread's
    // memset (glibc serves a block of the last frame's size from its heap, not fresh pages).
    let mut map: Vec<u8> = parallel::output(n);
    let at_least =
        parallel::parts_split_finely(w * h, parallel::split_from(MIN_THREAD_PART), MIN_THREAD_PART, 1);
    let band = h.div_ceil(parallel::parts_warm(w * h, MIN_PART).max(at_least));
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

/// Fewest pixels in a band of the suppression and the floods ([`parallel::parts`]): 1.9 ns a pixel
/// on one core (a real 4096x3112 in 24 ms; uniform noise, all edges, takes ten times that), so a
/// band takes 0.25 ms or more. Smaller bands cost: each band's flood ends in notes that one thread
/// then floods from, and each band computes the gradients of the rows around it again (2560x1707
/// real took 3.1 to 3.2 ms on the GPU machine's 16 threads in 33 bands of 2^17 pixels, 3.6 in 64 of
/// 2^15). But a frame of fewer such bands than threads is cut into up to one a thread, of at
/// least [`MIN_THREAD_PART`] pixels.
const MIN_PART: usize = 1 << 17;
/// Fewest pixels in a band of a frame that [`MIN_PART`] would cut into fewer bands than threads:
/// 640x651 took 1.1 to 1.2 ms in 3 bands of 2^17 pixels, 0.47 to 0.54 in 12 (OpenCV: 0.68 to
/// 0.72), and 1280x720 real 1.5 to 1.6 in 7, 1.1 to 1.2 in 16; at most one a thread, as the
/// bands' work differs (uniform noise from 3932x4000 up took twice as long in one band a thread
/// as in bands of 2^17 pixels, up to 4 a thread).
const MIN_THREAD_PART: usize = 1 << 15;
/// Fewest pixel-taps (pixels times the kernel's length) in a part of a blur pass: about 0.4 ns
/// each, so a part takes 0.05 ms or more.
const BLUR_MIN_PART: usize = 1 << 17;

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

/// Pushes `base + x` for each STRONG `line[x]`, in order of x. Eight values at a time: NONE,
/// WEAK and STRONG are 0, 1 and 2, so a word's STRONG bytes are those with bit 1 set.
pub(super) fn push_strong(line: &[u8], base: usize, stack: &mut Vec<usize>) {
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
