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
                for (k, row) in rows.chunks_mut(w).enumerate() {
                    let y = first / w + k;
                    gaussian_row(kernel, &samples[y * w..(y + 1) * w], row);
                }
            });
            parallel::for_each_part(&mut out, part, |first, rows| {
                for (k, row) in rows.chunks_mut(w).enumerate() {
                    let y = first / w + k;
                    for (x, o) in row.iter_mut().enumerate() {
                        let s = gaussian_column(kernel, &sums, w, h, x, y);
                        *o = on(samples[y * w + x], gaussian_mean(s));
                    }
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

/// The row pass of the Gaussian: s = x₀·k₀, then s = fma(xᵢ, kᵢ, s), left to right.
fn gaussian_row(kernel: &[f32], row: &[u8], out: &mut [f32]) {
    let (w, r) = (row.len(), (kernel.len() / 2) as isize);
    for (x, o) in out.iter_mut().enumerate() {
        let at = |i: usize| row[clamped(x, i as isize - r, w)] as f32;
        let mut s = at(0) * kernel[0];
        for (i, &k) in kernel.iter().enumerate().skip(1) {
            s = at(i).mul_add(k, s);
        }
        *o = s;
    }
}

/// The column pass of the Gaussian at (x, y): s = r₀·k₀, then s = fma(r₋ᵢ + rᵢ, kᵢ, s) outwards.
fn gaussian_column(kernel: &[f32], sums: &[f32], w: usize, h: usize, x: usize, y: usize) -> f32 {
    let r = kernel.len() / 2;
    let at = |o: isize| sums[clamped(y, o, h) * w + x];
    let mut s = at(0) * kernel[r];
    for i in 1..=r {
        s = (at(i as isize) + at(-(i as isize))).mul_add(kernel[r + i], s);
    }
    s
}
