//! The input range of `--saturate P`: order statistics of the samples, as ImageJ's "Enhance
//! Contrast" finds its min and max in the histogram. Of the N samples counted (every sample of the
//! channels asked for; of a float frame, its finite ones), sorted s_0 <= ... <= s_(N-1), with
//! k = floor(N P / 200) in double precision, at most (N - 1) / 2:
//! lo = s_k and hi = s_(N-1-k), so at most k samples lie below lo and at most k above hi.
//! (ImageJ: threshold = (int)(N * saturated / 200), hmin the first level whose cumulative count
//! exceeds it, hmax the last whose count from the top does.) Computed on the CPU, except a whole
//! float frame's where the stretch runs on the GPU ([`super::Saturated`]): its keys are counted
//! there, and the ranks found in the counts as here.

use histopipe_frame::{Frame, Pixels};

use crate::bins::Bins;
use crate::histogram;
use crate::mask::Mask;
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

/// (s_k, s_(n-1-k)) of the finite values of `values`, `None` for none: the values of those
/// ranks in `f32::total_cmp`'s order (where -0 comes before +0), found without sorting or
/// copying. Each value's bits are made a key whose unsigned order is that order ([`key`]); a
/// first pass counts the keys' high 16 bits and finds the bucket of each rank ([`Ranks`]), a
/// second counts the low 16 bits of the keys in those two buckets, which gives each rank's key
/// whole. Two passes over the samples and tables of 2^16 counts: 25 ms for a 4K float frame where
/// copying and selecting took 85 ms (one core of the 2-core build machine). The GPU counts the
/// same way ([`super::gpu::float_cuts`]); the counts are whole numbers, so it finds the same keys.
pub fn of_floats<I: Iterator<Item = f32> + Clone>(values: I, percent: f64) -> Option<(f32, f32)> {
    let keys = values.filter(|v| v.is_finite()).map(key);
    if saturated(usize::MAX, percent) == 0 {
        // k = 0 for any count (percent 0, or so small that no count reaches a sample): the
        // smallest and the largest key, one pass and no tables (on the 2-core build machine,
        // `--saturate 0 --out 0:1` of a 640x651 float frame: 2.1 ms with the two passes, 0.78).
        let (lo, hi) = keys.fold((u32::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)));
        return (lo <= hi).then(|| (of_key(lo), of_key(hi)));
    }
    let mut high = vec![0u64; BUCKETS];
    for key in keys.clone() {
        high[(key >> 16) as usize] += 1;
    }
    let ranks = Ranks::of_high(&high, percent)?;
    let (mut lo_low, mut hi_low) = (vec![0u64; BUCKETS], vec![0u64; BUCKETS]);
    for key in keys {
        let low = (key & 0xFFFF) as usize;
        if key >> 16 == ranks.lo.0 {
            lo_low[low] += 1;
        }
        if key >> 16 == ranks.hi.0 {
            hi_low[low] += 1;
        }
    }
    ranks.cuts(&lo_low, &hi_low)
}

/// The tables of [`of_floats`]' passes: one count for each value of a key's 16 bits.
pub(crate) const BUCKETS: usize = 1 << 16;

/// A finite float's key: its bits made unsigned in `f32::total_cmp`'s order (negative values'
/// bits inverted, positive ones' sign bit set).
fn key(v: f32) -> u32 {
    let bits = v.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

/// The float whose [`key`] is `key`.
fn of_key(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 { key & !(1 << 31) } else { !key })
}

/// The bucket of `counts` holding rank `r` of the values counted, and `r`'s rank within it;
/// `None` where fewer than r + 1 values were counted.
fn find(counts: &[u64], r: u64) -> Option<(u32, u64)> {
    let mut below = 0;
    for (bucket, &c) in counts.iter().enumerate() {
        if below + c > r {
            return Some((bucket as u32, r - below));
        }
        below += c;
    }
    None
}

/// The ranks `--saturate` seeks, k and n - 1 - k of n values: for each, the bucket of the keys'
/// high 16 bits holding it and its rank among that bucket's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ranks {
    pub lo: (u32, u64),
    pub hi: (u32, u64),
}

impl Ranks {
    /// The ranks of `percent` among the values counted in `high` ([`BUCKETS`] counts of the keys'
    /// high 16 bits), `None` for none counted.
    pub(crate) fn of_high(high: &[u64], percent: f64) -> Option<Ranks> {
        let n: u64 = high.iter().sum();
        let k = saturated(usize::try_from(n).ok()?, percent) as u64;
        Some(Ranks { lo: find(high, k)?, hi: find(high, n.checked_sub(1 + k)?)? })
    }

    /// The two values, from the counts of the low 16 bits of the keys in each rank's bucket;
    /// `None` where those counts hold too few values for the ranks.
    pub(crate) fn cuts(&self, lo_low: &[u64], hi_low: &[u64]) -> Option<(f32, f32)> {
        let (lo, _) = find(lo_low, self.lo.1)?;
        let (hi, _) = find(hi_low, self.hi.1)?;
        Some((of_key(self.lo.0 << 16 | lo), of_key(self.hi.0 << 16 | hi)))
    }
}

/// [`of_floats`] of every value of `values` with k = 0: the smallest and the largest finite value
/// in `f32::total_cmp`'s order (the least and the greatest key), `None` for none. In parts over
/// the pool's threads (as stretch's map), each part's loop built for AVX2 where the CPU has it,
/// 8 keys at a time with no branch. With [`super::StretchTo`]'s float32 loop built the same
/// way, `--saturate 0 --out 0:1` of float frames on 2 threads of the build machine took 0.09 to
/// 0.14 ms at 640x651 (was 0.74 to 0.80) and 1.3 to 2.3 at 2560x1707 (was 8.8 to 13.1), this pass
/// on one thread and the map's loop on SSE2 before; scikit-image's `rescale_intensity` 3.0 and 20.
pub fn extremes(values: &[f32]) -> Option<(f32, f32)> {
    let n = values.len();
    let parts =
        crate::parallel::parts_split_from(n, crate::parallel::split_from(super::MIN_SPLIT), super::MIN_PART);
    let each = crate::parallel::map_parts(values, n.div_ceil(parts), |_, part| key_extremes(part));
    let (lo, hi) = each.into_iter().fold((u32::MAX, 0), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
    (lo <= hi).then(|| (of_key(lo), of_key(hi)))
}

/// The least and the greatest key of the finite values of `values` (of_floats's keys: unsigned
/// in `f32::total_cmp`'s order); (u32::MAX, 0) for none (no finite value has either key).
fn key_extremes(values: &[f32]) -> (u32, u32) {
    #[inline(always)]
    fn each(values: &[f32]) -> (u32, u32) {
        const LANES: usize = 16;
        #[inline(always)]
        fn keys(v: f32) -> (u32, u32) {
            let bits = v.to_bits();
            // !bits for a negative value, bits | 1 << 31 for a positive one.
            let key = bits ^ ((bits as i32 >> 31) as u32 | 1 << 31);
            if bits & 0x7F80_0000 == 0x7F80_0000 {
                (u32::MAX, 0)
            } else {
                (key, key)
            }
        }
        let (mut lo, mut hi) = ([u32::MAX; LANES], [0u32; LANES]);
        let chunks = values.chunks_exact(LANES);
        let rest = chunks.remainder();
        for chunk in chunks {
            for i in 0..LANES {
                let (l, h) = keys(chunk[i]);
                lo[i] = lo[i].min(l);
                hi[i] = hi[i].max(h);
            }
        }
        for &v in rest {
            let (l, h) = keys(v);
            lo[0] = lo[0].min(l);
            hi[0] = hi[0].max(h);
        }
        (lo.into_iter().fold(u32::MAX, u32::min), hi.into_iter().fold(0, u32::max))
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        /// # Safety
        /// The CPU has AVX2 (an `unsafe fn`: safe functions with target features need Rust 1.86,
        /// and the workspace builds with 1.85).
        #[target_feature(enable = "avx2")]
        unsafe fn wide(values: &[f32]) -> (u32, u32) {
            each(values)
        }
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { wide(values) };
    }
    each(values)
}

/// The range (lo, hi) of `--saturate percent` over the samples of `frame`'s channels
/// `channels` (a pixel's channel c is its sample c) of the pixels `mask` (of the frame's size)
/// selects (`None`: every pixel), as the module says; `None` where there is
/// no sample to count (an empty frame or mask, or no finite float).
pub fn of_frame(
    frame: &Frame,
    channels: &[usize],
    percent: f64,
    mask: Option<Mask<'_>>,
) -> Result<Option<(f64, f64)>, OpError> {
    let count = frame.channels.count();
    let mask = mask.map(|m| m.fit(frame)).transpose()?;
    let every = (0..count).all(|c| channels.contains(&c));
    let wanted =
        |i: usize| (every || channels.contains(&(i % count))) && mask.is_none_or(|m| m[i / count] != 0);
    let widen = |cut: Option<(u16, u16)>| cut.map(|(lo, hi)| (lo as f64, hi as f64));
    let all = every && (mask.is_none() || count == 1);
    Ok(match &frame.pixels {
        Pixels::F32(v) => {
            let cuts = if all && mask.is_none() && saturated(usize::MAX, percent) == 0 {
                extremes(v)
            } else if all && mask.is_none() {
                of_floats(v.iter().copied(), percent)
            } else {
                of_floats(v.iter().enumerate().filter(|&(i, _)| wanted(i)).map(|(_, &s)| s), percent)
            };
            cuts.map(|(lo, hi)| (lo as f64, hi as f64))
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
        assert_eq!(of_floats(values.iter().copied(), 0.35), Some((1.0, 998.0)));
        assert_eq!(of_floats(values.iter().copied(), 0.0), Some((0.0, 999.0)));
        assert_eq!(of_floats(values.into_iter(), 100.0), Some((499.0, 500.0)));
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
        assert_eq!(of_floats(values.into_iter(), 0.0), Some((-1.0, 5.0)));
        assert_eq!(of_floats([f32::NAN].into_iter(), 0.0), None);
    }

    /// The two passes of counts give the values a full sort gives at the same ranks, bit for
    /// bit (-0 before +0, subnormals, the extremes, many equal values, few distinct keys in one
    /// bucket), for fresh random samples of every kind.
    #[test]
    fn the_counts_find_what_sorting_finds() {
        let mut rng = fastrand::Rng::with_seed(46);
        let special =
            [0.0, -0.0, 1e-45, -1e-45, f32::MIN_POSITIVE, f32::MAX, f32::MIN, 1.0, 1.0 + f32::EPSILON];
        for round in 0..300 {
            let n = [1, 2, 3, 17, 1000, 40_000][round % 6];
            let kind = round % 5;
            let values: Vec<f32> = (0..n)
                .map(|_| match kind {
                    0 => f32::from_bits(rng.u32(..)),
                    1 => special[rng.usize(..special.len())],
                    2 => rng.u8(..4) as f32 * 0.5 - 1.0,
                    3 => f32::from_bits(0x3F80_0000 | rng.u32(..16)),
                    _ => (rng.f32() - 0.5) * 2f32.powi(rng.i32(-140..120)),
                })
                .collect();
            let mut sorted: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();
            sorted.sort_by(f32::total_cmp);
            for percent in [0.0, 0.35, 2.0, 50.0, 100.0] {
                let want = (!sorted.is_empty()).then(|| {
                    let k = saturated(sorted.len(), percent);
                    (sorted[k].to_bits(), sorted[sorted.len() - 1 - k].to_bits())
                });
                let got =
                    of_floats(values.iter().copied(), percent).map(|(lo, hi)| (lo.to_bits(), hi.to_bits()));
                assert_eq!(got, want, "round {round}, {n} values of kind {kind}, {percent}%");
                if percent == 0.0 {
                    crate::parallel::testing::same_on_each_pool(&format!("round {round}"), || {
                        let got = extremes(&values).map(|(lo, hi)| (lo.to_bits(), hi.to_bits()));
                        assert_eq!(got, want, "extremes: round {round}, {n} values of kind {kind}");
                    });
                }
            }
        }
    }

    #[test]
    fn one_sample_is_both_cuts() {
        assert_eq!(saturated(1, 99.0), 0);
        assert_eq!(saturated(2, 100.0), 0);
        assert_eq!(saturated(3, 100.0), 1);
        assert_eq!(of_floats([7.0].into_iter(), 50.0), Some((7.0, 7.0)));
    }
}
