//! The local methods on the CPU: the row pass and the column pass over parts of the rows, on the
//! pool's threads ([`parallel`]), each sample computed by one thread in the same arithmetic.

use super::{box_mean, gaussian_mean, Filter, Kind};
use crate::parallel;

/// Fewest (sample × coefficient) steps in a part of either pass: some tens of microseconds of
/// one thread's work.
const MIN_PART_STEPS: usize = 1 << 17;

/// The binary frame of the `w x h` 8-bit `samples` (maxval `maxval`) through `filter`.
pub(crate) fn threshold(filter: &Filter, samples: &[u8], w: usize, h: usize, maxval: u8) -> Vec<u8> {
    let n = w * h;
    if n == 0 {
        return Vec::new();
    }
    let steps = match &filter.kind {
        Kind::Box { .. } => 4,
        Kind::Gaussian { kernel } => kernel.len(),
    };
    let parts = parallel::parts_warm(n * steps, MIN_PART_STEPS);
    let part = h.div_ceil(parts.max(1)) * w;
    let mut out = vec![0u8; n];
    let on = |v: u8, m: i32| if filter.on(v, m) { maxval } else { 0 };
    match &filter.kind {
        Kind::Box { side } => {
            let mut sums = vec![0u32; n];
            parallel::for_each_part(&mut sums, part, |first, rows| {
                for (k, row) in rows.chunks_mut(w).enumerate() {
                    let y = first / w + k;
                    box_row(*side as usize, &samples[y * w..(y + 1) * w], row);
                }
            });
            let d = *side as u64 * *side as u64;
            parallel::for_each_part(&mut out, part, |first, rows| {
                box_columns(*side as usize, &sums, w, h, first / w, rows.len() / w, |i, s| {
                    on(samples[first + i], box_mean(s, d))
                })
                .into_iter()
                .zip(rows.iter_mut())
                .for_each(|(v, o)| *o = v);
            });
        }
        Kind::Gaussian { kernel } => {
            let mut sums = vec![0f32; n];
            parallel::for_each_part(&mut sums, part, |first, rows| {
                gaussian_rows(kernel, samples, w, first, rows);
            });
            parallel::for_each_part(&mut out, part, |first, rows| {
                let means = gaussian_columns(kernel, &sums, w, h, first, rows.len());
                for ((o, &m), &v) in rows.iter_mut().zip(&means).zip(&samples[first..]) {
                    *o = on(v, m);
                }
            });
        }
    }
    out
}

/// The index of `x + offset` in 0..len, the border replicated.
fn clamped(x: usize, offset: isize, len: usize) -> usize {
    (x as isize + offset).clamp(0, len as isize - 1) as usize
}

/// Each sample's sum over the `side` samples of its row around it, sliding along the row.
fn box_row(side: usize, row: &[u8], out: &mut [u32]) {
    let (w, r) = (row.len(), (side / 2) as isize);
    let at = |x: usize, o: isize| row[clamped(x, o, w)] as u32;
    let mut s: u32 = (-r..=r).map(|o| at(0, o)).sum();
    for (x, o) in out.iter_mut().enumerate() {
        *o = s;
        s = s + at(x, r + 1) - at(x, -r);
    }
}

/// For `rows` output rows from `y0`: each sample's block sum (the row sums of the `side` rows
/// around it, sliding down), handed to `f(index in the part, sum)`.
fn box_columns(
    side: usize,
    sums: &[u32],
    w: usize,
    h: usize,
    y0: usize,
    rows: usize,
    f: impl Fn(usize, u32) -> u8,
) -> Vec<u8> {
    let r = (side / 2) as isize;
    let row = |y: usize, o: isize| {
        let y = clamped(y, o, h);
        &sums[y * w..(y + 1) * w]
    };
    let mut acc = vec![0u32; w];
    for o in -r..=r {
        acc.iter_mut().zip(row(y0, o)).for_each(|(a, &s)| *a += s);
    }
    let mut out = Vec::with_capacity(rows * w);
    for y in y0..y0 + rows {
        out.extend(acc.iter().enumerate().map(|(x, &s)| f((y - y0) * w + x, s)));
        let (add, sub) = (row(y, r + 1), row(y, -r));
        acc.iter_mut().zip(add).zip(sub).for_each(|((a, &p), &m)| *a = *a + p - m);
    }
    out
}

/// The row pass of the Gaussian over the whole rows of `out` from sample `first`; with the CPU's
/// fused multiply-add instruction where it has one (`mul_add` is the same correctly rounded fma
/// either way; the library call it is otherwise costs ten times as much).
fn gaussian_rows(kernel: &[f32], samples: &[u8], w: usize, first: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the FMA instructions, as just detected.
        return unsafe { gaussian_rows_fma(kernel, samples, w, first, out) };
    }
    gaussian_rows_any(kernel, samples, w, first, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn gaussian_rows_fma(kernel: &[f32], samples: &[u8], w: usize, first: usize, out: &mut [f32]) {
    gaussian_rows_any(kernel, samples, w, first, out)
}

/// Along each row: s = x₀·k₀, then s = fma(xᵢ, kᵢ, s), left to right, over the row with its
/// border replicated.
#[inline(always)]
fn gaussian_rows_any(kernel: &[f32], samples: &[u8], w: usize, first: usize, out: &mut [f32]) {
    let r = kernel.len() / 2;
    let mut padded = vec![0f32; w + 2 * r];
    for (k, row_out) in out.chunks_mut(w).enumerate() {
        let y = first / w + k;
        let row = &samples[y * w..(y + 1) * w];
        for (i, p) in padded.iter_mut().enumerate() {
            *p = row[clamped(i, -(r as isize), w)] as f32;
        }
        for (x, o) in row_out.iter_mut().enumerate() {
            let taps = &padded[x..x + kernel.len()];
            let mut s = taps[0] * kernel[0];
            for (&t, &c) in taps.iter().zip(kernel).skip(1) {
                s = t.mul_add(c, s);
            }
            *o = s;
        }
    }
}

/// The column pass of the Gaussian for `len` samples from `first` (whole rows): the means.
fn gaussian_columns(kernel: &[f32], sums: &[f32], w: usize, h: usize, first: usize, len: usize) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the FMA instructions, as just detected.
        return unsafe { gaussian_columns_fma(kernel, sums, w, h, first, len) };
    }
    gaussian_columns_any(kernel, sums, w, h, first, len)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn gaussian_columns_fma(
    kernel: &[f32],
    sums: &[f32],
    w: usize,
    h: usize,
    first: usize,
    len: usize,
) -> Vec<i32> {
    gaussian_columns_any(kernel, sums, w, h, first, len)
}

/// Down each column: s = r₀·k_c, then s = fma(r₋ᵢ + rᵢ, k_c+ᵢ, s) outwards, a whole row of
/// columns at a time; the means rounded.
#[inline(always)]
fn gaussian_columns_any(
    kernel: &[f32],
    sums: &[f32],
    w: usize,
    h: usize,
    first: usize,
    len: usize,
) -> Vec<i32> {
    let r = kernel.len() / 2;
    let row = |y: usize, o: isize| {
        let y = clamped(y, o, h);
        &sums[y * w..(y + 1) * w]
    };
    let mut means = Vec::with_capacity(len);
    let mut acc = vec![0f32; w];
    for y in first / w..(first + len) / w {
        for (a, &c) in acc.iter_mut().zip(row(y, 0)) {
            *a = c * kernel[r];
        }
        for j in 1..=r {
            let (below, above, k) = (row(y, j as isize), row(y, -(j as isize)), kernel[r + j]);
            for ((a, &p), &q) in acc.iter_mut().zip(below).zip(above) {
                *a = (p + q).mul_add(k, *a);
            }
        }
        means.extend(acc.iter().map(|&s| gaussian_mean(s)));
    }
    means
}
