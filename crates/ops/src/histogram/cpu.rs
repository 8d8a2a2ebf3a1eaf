//! `histogram` on the CPU: counts in interleaved copies, large frames split into parts on the
//! pool's threads and added up.

use super::Bins;
use crate::{parallel, Sample};

/// Interleaved copies of the histogram counted on the CPU ([`count`]).
const CPU_COPIES: usize = 4;
/// Most bins counted in [`CPU_COPIES`] copies; 16-bit levels' copies would not stay in cache.
const CPU_COPY_MAX_BINS: usize = 4096;

/// Half the fewest samples for the CPU's count to be split at all ([`parallel::parts`]): about 0.6
/// ns a sample on one of the GPU machine's cores (`cdf` of 640x480 in 0.18 ms, 1280x720 in 0.54),
/// so a frame is split from about 0.05 ms of work. (At 2^19, 640x651 stayed on one thread: `cdf`
/// took 0.16 to 0.23 ms on 16 threads, against 0.05 split.)
const MIN_SPLIT: usize = 1 << 16;
/// Fewest samples in a part once a frame is split: 2560x1707 makes 64 parts, four for each of 16
/// threads (in parts of 2^19 samples it made 8, and half of a 16-thread pool sat idle).
const MIN_PART: usize = 1 << 13;
/// Fewest samples per bin in a part: each part's histogram is zeroed and added to the others', so
/// with many bins (65536 for 16-bit levels) a part must count many more samples than it has bins.
const PART_SAMPLES_PER_BIN: usize = 16;

/// The histogram of `samples` on the CPU.
///
/// Up to [`CPU_COPY_MAX_BINS`] bins, [`CPU_COPIES`] interleaved copies of the histogram are
/// counted and summed at the end: in a run of equal samples each increment would otherwise wait
/// for the previous one's store to reach the load (a store-to-load dependency of several cycles);
/// with the copies, consecutive samples go to different counters.
///
/// A large frame is split into parts counted on the pool's threads, whose histograms are then
/// added: integer sums, the same whatever the split.
pub fn count<T: Sample>(samples: &[T], bins: Bins) -> Vec<u64> {
    let n = bins.count();
    let parts = count_parts(samples.len(), n);
    if let (Some(bytes), true) = (T::bytes(samples), n <= 256) {
        return add_parts(bytes, parts, |part| count_bytes(part, bins));
    }
    // bin for every value a sample of this type can hold; valid samples are at most maxval.
    let all_values = 1u32 << (8 * std::mem::size_of::<T>());
    let lut: Vec<u32> = (0..all_values).map(|v| bins.of(v.min(bins.levels - 1)) as u32).collect();
    add_parts(samples, parts, |part| count_with(part, &lut, n))
}

/// The parts [`count`] and [`count_masked`] split `len` samples into for `bins` bins: from
/// [`MIN_SPLIT`] samples ([`parallel::split_from`]), parts of [`MIN_PART`], and at least
/// [`PART_SAMPLES_PER_BIN`] samples a bin either way.
fn count_parts(len: usize, bins: usize) -> usize {
    let per_bin = PART_SAMPLES_PER_BIN * bins;
    parallel::parts_split_from(len, parallel::split_from(MIN_SPLIT).max(per_bin), MIN_PART.max(per_bin))
}

/// The histogram of the samples of `samples` whose `mask` byte is non-zero (one byte a sample),
/// on the CPU: split into parts as [`count`] splits, the parts' counts added (the same whatever
/// the split).
pub fn count_masked<T: Sample>(samples: &[T], mask: &[u8], bins: Bins) -> Vec<u64> {
    assert_eq!(samples.len(), mask.len(), "one mask byte a sample");
    let n = bins.count();
    let parts = count_parts(samples.len(), n);
    let all_values = 1u32 << (8 * std::mem::size_of::<T>());
    let lut: Vec<u32> = (0..all_values).map(|v| bins.of(v.min(bins.levels - 1)) as u32).collect();
    let count_part = |samples: &[T], mask: &[u8]| {
        let mut counts = vec![0u64; n];
        for (&v, &m) in samples.iter().zip(mask) {
            counts[lut[Into::<u32>::into(v) as usize] as usize] += (m != 0) as u64;
        }
        counts
    };
    if parts <= 1 {
        return count_part(samples, mask);
    }
    use rayon::prelude::*;
    let part = samples.len().div_ceil(parts);
    let partial = samples.par_chunks(part).zip(mask.par_chunks(part)).map(|(s, m)| count_part(s, m));
    partial
        .reduce_with(|mut total, part| {
            for (t, c) in total.iter_mut().zip(part) {
                *t += c;
            }
            total
        })
        .unwrap_or_else(|| vec![0; n])
}

/// `count(part)` of `parts` consecutive parts of `samples`, on the pool's threads, added up (on
/// the calling thread for one part).
fn add_parts<S: Sync>(samples: &[S], parts: usize, count: impl Fn(&[S]) -> Vec<u64> + Sync) -> Vec<u64> {
    use rayon::prelude::*;
    if parts <= 1 {
        return count(samples);
    }
    let add = |mut total: Vec<u64>, part: Vec<u64>| {
        for (t, c) in total.iter_mut().zip(part) {
            *t += c;
        }
        total
    };
    let partial = samples.par_chunks(samples.len().div_ceil(parts)).map(&count);
    partial.reduce_with(add).unwrap_or_else(|| count(samples))
}

/// [`count`] of `samples` on one thread, `lut` holding every possible sample's bin, `n` bins.
fn count_with<T: Sample>(samples: &[T], lut: &[u32], n: usize) -> Vec<u64> {
    let bin = |v: T| lut[Into::<u32>::into(v) as usize] as usize;
    let copies = if n <= CPU_COPY_MAX_BINS { CPU_COPIES } else { 1 };
    let mut local = vec![0u64; copies * n];
    let mut groups = samples.chunks_exact(copies);
    for group in &mut groups {
        for (k, &v) in group.iter().enumerate() {
            local[k * n + bin(v)] += 1;
        }
    }
    for &v in groups.remainder() {
        local[bin(v)] += 1;
    }
    (0..n).map(|b| (0..copies).map(|k| local[k * n + b]).sum()).collect()
}

/// [`count`] for 8-bit samples and at most 256 bins: 256-entry tables indexed by a byte, so no
/// index is checked at run time; 32-bit counters, added to the 64-bit totals every 2^32 - 1
/// samples at most.
fn count_bytes(samples: &[u8], bins: Bins) -> Vec<u64> {
    let mut lut = [0u8; 256];
    for (v, b) in (0u32..).zip(lut.iter_mut()) {
        *b = bins.of(v.min(bins.levels - 1)) as u8;
    }
    let mut totals = [0u64; 256];
    for part in samples.chunks(u32::MAX as usize) {
        let mut local = [[0u32; 256]; CPU_COPIES];
        // One bin per level (256 of them): the sample is its bin, no table load.
        if bins.count == 256 {
            count_copies(part, &mut local, |v| v);
        } else {
            count_copies(part, &mut local, |v| lut[v as usize]);
        }
        for (b, total) in totals.iter_mut().enumerate() {
            *total += local.iter().map(|copy| copy[b] as u64).sum::<u64>();
        }
    }
    totals[..bins.count()].to_vec()
}

/// Adds each sample's bin, `bin(v)`, to the copies in turn.
#[inline(always)]
fn count_copies(samples: &[u8], copies: &mut [[u32; 256]; CPU_COPIES], bin: impl Fn(u8) -> u8) {
    let mut groups = samples.chunks_exact(CPU_COPIES);
    for group in &mut groups {
        for (copy, &v) in copies.iter_mut().zip(group) {
            copy[bin(v) as usize] += 1;
        }
    }
    for &v in groups.remainder() {
        copies[0][bin(v) as usize] += 1;
    }
}
