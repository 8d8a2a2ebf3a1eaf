//! The input range of `--saturate P`: order statistics of the samples, as ImageJ's "Enhance
//! Contrast" finds its min and max in the histogram. Of the N samples counted (every sample of the
//! channels asked for; of a float frame, its finite ones), sorted s_0 <= ... <= s_(N-1), with
//! k = floor(N P / 200) in double precision, at most (N - 1) / 2:
//! lo = s_k and hi = s_(N-1-k), so at most k samples lie below lo and at most k above hi.
//! (ImageJ: threshold = (int)(N * saturated / 200), hmin the first level whose cumulative count
//! exceeds it, hmax the last whose count from the top does.) Computed on the CPU, for both
//! backends: the GPU's share of `stretch` is the map, the bulk of the work.

use histopipe_frame::{Frame, Pixels};

use crate::bins::Bins;
use crate::histogram;
use crate::OpError;

/// k: the samples saturated at each end, floor(n percent / 200), at most (n - 1) / 2.
pub fn saturated(n: usize, percent: f64) -> usize {
    let k = (n as f64 * percent / 200.0).floor();
    (k as usize).min(n.saturating_sub(1) / 2)
}

/// (s_k, s_(n-1-k)) of the samples counted in `counts` (one count a level), `None` for none.
pub fn of_counts(counts: &[u64], percent: f64) -> Option<(u16, u16)> {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    let k = saturated(n as usize, percent) as u64;
    // s_j is the first level whose cumulative count exceeds j.
    let nth = |j: u64| {
        let mut cum = 0;
        counts.iter().position(|&c| {
            cum += c;
            cum > j
        })
    };
    Some((nth(k)? as u16, nth(n - 1 - k)? as u16))
}

/// (s_k, s_(n-1-k)) of the finite values of `values` (reordered), `None` for none.
pub fn of_floats(mut values: Vec<f32>, percent: f64) -> Option<(f32, f32)> {
    values.retain(|v| v.is_finite());
    let n = values.len();
    if n == 0 {
        return None;
    }
    let k = saturated(n, percent);
    let (_, &mut lo, above) = values.select_nth_unstable_by(k, f32::total_cmp);
    let hi = if n - 1 - k == k {
        lo
    } else {
        *above.select_nth_unstable_by(n - 1 - k - (k + 1), f32::total_cmp).1
    };
    Some((lo, hi))
}

/// The range (lo, hi) of `--saturate percent` over the samples of `frame`'s channels
/// `channels` (a pixel's channel c is its sample c) of the pixels `mask` selects (one byte a
/// pixel, non-zero where counted; `None`: every pixel), as the module says; `None` where there is
/// no sample to count (an empty frame or mask, or no finite float).
pub fn of_frame(
    frame: &Frame,
    channels: &[usize],
    percent: f64,
    mask: Option<&[u8]>,
) -> Result<Option<(f64, f64)>, OpError> {
    let count = frame.channels.count();
    if let Some(mask) = mask {
        crate::op::check_mask(mask, frame.pixel_count())?;
    }
    let every = (0..count).all(|c| channels.contains(&c));
    let wanted =
        |i: usize| (every || channels.contains(&(i % count))) && mask.is_none_or(|m| m[i / count] != 0);
    let widen = |cut: Option<(u16, u16)>| cut.map(|(lo, hi)| (lo as f64, hi as f64));
    let all = every && (mask.is_none() || count == 1);
    Ok(match &frame.pixels {
        Pixels::F32(v) => {
            let values = v.iter().enumerate().filter(|&(i, _)| wanted(i)).map(|(_, &s)| s).collect();
            of_floats(values, percent).map(|(lo, hi)| (lo as f64, hi as f64))
        }
        Pixels::U8(v) => widen(of_counts(&counts(v, frame.maxval, all, mask, wanted)?, percent)),
        Pixels::U16(v) => widen(of_counts(&counts(v, frame.maxval, all, mask, wanted)?, percent)),
    })
}

/// The histogram, one bin a level, of the samples `wanted` keeps: where `all`, every sample (of
/// the pixels `mask` selects, one sample a pixel).
fn counts<T: crate::Sample>(
    samples: &[T],
    maxval: u16,
    all: bool,
    mask: Option<&[u8]>,
    wanted: impl Fn(usize) -> bool,
) -> Result<Vec<u64>, OpError> {
    let bins = Bins::new(None, maxval)?;
    match (all, mask) {
        (true, Some(mask)) => return Ok(histogram::count_masked(samples, mask, bins)),
        (true, None) => return Ok(histogram::count(samples, bins)),
        _ => {}
    }
    let mut counts = vec![0u64; maxval as usize + 1];
    for (_, &s) in samples.iter().enumerate().filter(|&(i, _)| wanted(i)) {
        counts[(s.into() as usize).min(maxval as usize)] += 1;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuts_are_the_order_statistics_imagej_finds() {
        // N = 1000, P = 0.35: k = floor(1.75) = 1.
        let values: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        assert_eq!(of_floats(values.clone(), 0.35), Some((1.0, 998.0)));
        assert_eq!(of_floats(values.clone(), 0.0), Some((0.0, 999.0)));
        assert_eq!(of_floats(values, 100.0), Some((499.0, 500.0)));
        let mut counts = vec![0u64; 256];
        counts[3] = 1;
        counts[10] = 998;
        counts[200] = 1;
        assert_eq!(of_counts(&counts, 0.35), Some((10, 10)));
        assert_eq!(of_counts(&counts, 0.0), Some((3, 200)));
        assert_eq!(of_counts(&[0; 4], 1.0), None);
    }

    #[test]
    fn floats_count_only_finite_values() {
        let values = vec![f32::NAN, 5.0, f32::INFINITY, -1.0, f32::NEG_INFINITY, 2.0];
        assert_eq!(of_floats(values, 0.0), Some((-1.0, 5.0)));
        assert_eq!(of_floats(vec![f32::NAN], 0.0), None);
    }

    #[test]
    fn one_sample_is_both_cuts() {
        assert_eq!(saturated(1, 99.0), 0);
        assert_eq!(saturated(2, 100.0), 0);
        assert_eq!(saturated(3, 100.0), 1);
        assert_eq!(of_floats(vec![7.0], 50.0), Some((7.0, 7.0)));
    }
}
