//! Sauvola's and Niblack's thresholds as scikit-image 0.26 computes them (`_mean_std`,
//! `threshold_sauvola`, `threshold_niblack`), in its float64 operations and their order, on the
//! CPU; `gpu.rs` has the same steps as kernels.
//!
//! The frame is padded by reflection (numpy's `reflect`: the edge sample not repeated) by
//! W/2 + 1 samples before and W/2 after on each axis; its integral image S (and Q, of the squared
//! samples) is numpy's `cumsum` down the columns, then along the rows, each a running f64 sum;
//! the window sum at (y, x) is ((S[y][x] − S[y][x+W]) − S[y+W][x]) + S[y+W][x+W], as
//! `_correlate_sparse` adds its four views. Then m = sum / W², g2 = sumsq / W²,
//! s = sqrt(max(g2 − m·m, 0)), and t = m − k·s (Niblack) or m·(1 + k·(s/r − 1)) (Sauvola); a
//! sample v becomes maxval where v > t (binary), else 0.

use super::Local;
use crate::parallel;

/// The parameters of the window statistics and the threshold from them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stats {
    pub window: usize,
    pub rule: Rule,
    pub inverted: bool,
}

/// How the threshold follows from m and s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    Niblack { k: f64 },
    Sauvola { k: f64, r: f64 },
}

impl Rule {
    /// The threshold of a window of mean `m` and deviation `s`, in scikit-image's order.
    pub fn threshold(self, m: f64, s: f64) -> f64 {
        match self {
            Rule::Niblack { k } => m - k * s,
            Rule::Sauvola { k, r } => m * (1.0 + k * ((s / r) - 1.0)),
        }
    }

    /// As the kernel takes it: 0 Niblack, 1 Sauvola; k; r (0 for Niblack).
    pub fn parts(self) -> (u32, f64, f64) {
        match self {
            Rule::Niblack { k } => (0, k, 0.0),
            Rule::Sauvola { k, r } => (1, k, r),
        }
    }
}

impl Stats {
    /// The statistics of `method` (Sauvola or Niblack) for frames of `bits`-bit samples (32:
    /// float): r, where not given, is half the sample type's range, as `dtype_limits` gives it
    /// (127.5, 32767.5; 1 for floats).
    pub fn of(method: Local, bits: u32, inverted: bool) -> Option<Stats> {
        // dtype_limits(clip_negative=False): 0..2^bits - 1 for integers, -1..1 for floats.
        let half_range = match bits {
            32 => 0.5 * (1.0 - -1.0),
            _ => 0.5 * (((1u32 << bits) - 1) as f64 - 0.0),
        };
        let (window, rule) = match method {
            Local::Niblack { window, k } => (window, Rule::Niblack { k }),
            Local::Sauvola { window, k, r } => (window, Rule::Sauvola { k, r: r.unwrap_or(half_range) }),
            _ => return None,
        };
        Some(Stats { window: window as usize, rule, inverted })
    }
}

/// numpy's `reflect` padding: the index in 0..len of padded position `i` (which may lie
/// before 0 or past the end by any amount).
pub(crate) fn reflect(i: i64, len: usize) -> usize {
    if len == 1 {
        return 0;
    }
    let period = 2 * (len as i64 - 1);
    let j = i.rem_euclid(period);
    (if j >= len as i64 { period - j } else { j }) as usize
}

/// A sample as `_mean_std` reads it: integers as float64 throughout; float32 samples squared in
/// float32 (`padded *= padded`), summed in float64, and the statistics after the sums in float32
/// (scikit-image's `float_dtype` of a float32 image).
pub(crate) trait StatSample: Copy + Send + Sync {
    fn value(self) -> f64;
    fn square(self) -> f64;
    /// Whether this sample lies above the threshold of its window's `sum` and `sumsq`.
    fn above(self, stats: &Stats, sum: f64, sumsq: f64) -> bool;
}

macro_rules! integer_stat_sample {
    ($t:ty) => {
        impl StatSample for $t {
            fn value(self) -> f64 {
                self as f64
            }
            fn square(self) -> f64 {
                let v = self as f64;
                v * v
            }
            fn above(self, stats: &Stats, sum: f64, sumsq: f64) -> bool {
                let size = (stats.window * stats.window) as f64;
                let (m, g2) = (sum / size, sumsq / size);
                let var = g2 - m * m;
                let sd = (if var < 0.0 { 0.0 } else { var }).sqrt();
                self as f64 > stats.rule.threshold(m, sd)
            }
        }
    };
}
integer_stat_sample!(u8);
integer_stat_sample!(u16);

impl StatSample for f32 {
    fn value(self) -> f64 {
        self as f64
    }
    fn square(self) -> f64 {
        (self * self) as f64
    }
    fn above(self, stats: &Stats, sum: f64, sumsq: f64) -> bool {
        let size = (stats.window * stats.window) as f32;
        let (m, g2) = (sum as f32 / size, sumsq as f32 / size);
        let var = g2 - m * m;
        // np.clip keeps a NaN.
        let sd = (if var < 0.0 { 0.0 } else { var }).sqrt();
        let t = match stats.rule {
            Rule::Niblack { k } => m - k as f32 * sd,
            Rule::Sauvola { k, r } => m * (1.0 + k as f32 * ((sd / r as f32) - 1.0)),
        };
        self > t
    }
}

/// Whether each of the `w x h` `samples` is on in the output (above its threshold, or not when
/// inverted): 1 or 0.
pub(crate) fn on<S: StatSample>(stats: &Stats, samples: &[S], w: usize, h: usize) -> Vec<u8> {
    let n = w * h;
    if n == 0 {
        return Vec::new();
    }
    let win = stats.window;
    let (pw, ph) = (w + win, h + win);
    let before = (win / 2 + 1) as i64;
    let cols: Vec<usize> = (0..pw).map(|j| reflect(j as i64 - before, w)).collect();
    // Down the columns (numpy's cumsum along axis 0), one padded row after another.
    let mut s = vec![0f64; pw * ph];
    let mut q = vec![0f64; pw * ph];
    for i in 0..ph {
        let src = reflect(i as i64 - before, h) * w;
        for j in 0..pw {
            let v = samples[src + cols[j]];
            let (value, square) = (v.value(), v.square());
            if i == 0 {
                s[j] = value;
                q[j] = square;
            } else {
                s[i * pw + j] = s[(i - 1) * pw + j] + value;
                q[i * pw + j] = q[(i - 1) * pw + j] + square;
            }
        }
    }
    // Along the rows (cumsum along axis 1), each row on its own.
    let part = parallel::parts_warm(pw * ph, 1 << 16);
    let rows_per_part = ph.div_ceil(part.max(1)) * pw;
    for table in [&mut s, &mut q] {
        parallel::for_each_part(table, rows_per_part, |_, rows| {
            for row in rows.chunks_mut(pw) {
                for j in 1..pw {
                    row[j] += row[j - 1];
                }
            }
        });
    }
    let mut out = vec![0u8; n];
    let part = parallel::parts_warm(n * 4, 1 << 15);
    parallel::for_each_part(&mut out, h.div_ceil(part.max(1)) * w, |first, rows| {
        for (k, row) in rows.chunks_mut(w).enumerate() {
            let y = first / w + k;
            for (x, o) in row.iter_mut().enumerate() {
                let sum = |t: &[f64]| {
                    let (a, b) = (t[y * pw + x], t[y * pw + x + win]);
                    let (c, d) = (t[(y + win) * pw + x], t[(y + win) * pw + x + win]);
                    ((a - b) - c) + d
                };
                *o = (samples[y * w + x].above(stats, sum(&s), sum(&q)) != stats.inverted) as u8;
            }
        }
    });
    out
}
