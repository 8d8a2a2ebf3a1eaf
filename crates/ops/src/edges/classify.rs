//! Stage 3 of `edges` on the CPU for one row, written as selects so that the loop runs on
//! vectors (compiled twice: for the baseline and, where the CPU has it, AVX2).

use super::{NONE, TG22, WEAK};

/// What stage 3 compares the magnitudes with: [`super::Canny::thresholds`], and which magnitude.
#[derive(Debug, Clone, Copy)]
pub(super) struct Thresholds {
    pub(super) l2: bool,
    pub(super) low: i32,
    pub(super) high: i32,
}

/// Stage 3 for one row: `line[x]` becomes NONE, WEAK or STRONG for frame column x, from the
/// padded magnitudes `m` of the rows above, at and below it (w + 2 each, column x + 1 is frame
/// column x) and the row's gradients. The module's stage 3 (the direction as OpenCV's sectors, then
/// its two neighbours), written as selects rather than branches: on noisy content the direction and the outcome change from
/// pixel to pixel, and the branches were mispredicted about half the time; without them the loop
/// runs on vectors (with AVX2, where the CPU has it: SSE2 has no 32-bit multiply or select).
pub(super) fn classify_row(t: Thresholds, m: [&[i32]; 3], dx: &[i32], dy: &[i32], line: &mut [u8]) {
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
