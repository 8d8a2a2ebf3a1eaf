//! `histogram`'s tests: the CPU's copies and splits against one count, the GPU's grid, masked
//! counts, and the GPU's plan against the CPU frame after frame.

use super::gpu::{histogram_blocks, FUSED_SCAN_MAX_BINS, HISTOGRAM_MAX_BLOCKS, HISTOGRAM_THREADS};
use super::*;
use crate::mask::{Mask, Masked};
use histopipe_frame::Pixels;

use crate::Sample;

#[test]
fn interleaved_copies_count_as_one() {
    let bytes: Vec<u8> =
        (0..10_003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 / (1 + (i % 5) as u8)).collect();
    let words: Vec<u16> =
        (0..10_003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 20) as u16 % 1077).collect();
    for (maxval, count) in [(255u16, None), (255, Some(7)), (255, Some(1)), (1076, None), (1076, Some(300))] {
        let bins = Bins::new(count, maxval).unwrap();
        let naive = |values: &mut dyn Iterator<Item = u32>| {
            let mut counts = vec![0u64; bins.count()];
            values.for_each(|v| counts[bins.of(v)] += 1);
            counts
        };
        if maxval == 255 {
            assert_eq!(super::count(&bytes, bins), naive(&mut bytes.iter().map(|&v| v as u32)));
        } else {
            assert_eq!(super::count(&words, bins), naive(&mut words.iter().map(|&v| v as u32)));
        }
    }
}

/// Split over any number of threads, the counts are the one thread's.
#[test]
fn every_split_counts_as_one_thread() {
    let mut rng = fastrand::Rng::with_seed(19);
    for (w, h) in crate::parallel::testing::sizes(&mut rng) {
        for (maxval, bins) in
            [(255, None), (255, Some(7)), (100, None), (1076, None), (65535, None), (65535, Some(300))]
        {
            let f = crate::parallel::testing::frame(&mut rng, w, h, maxval);
            let what = format!("{w}x{h} maxval {maxval} {bins:?}");
            crate::parallel::testing::same_on_each_pool(&what, || Histogram { bins }.cpu(&f).unwrap());
        }
    }
}

#[test]
fn no_block_counts_2_to_the_31_samples() {
    for n in [1usize, 4096, 1 << 31, (1 << 31) + 65536, 1 << 32, 3 << 33, 1 << 40] {
        for (blocks, bytes) in [(histogram_blocks::<u8>(n), 1), (histogram_blocks::<u16>(n), 2)] {
            assert!(
                (1..=(HISTOGRAM_MAX_BLOCKS as u32).max((n >> 31) as u32 + 1)).contains(&blocks),
                "{n}: {blocks} blocks"
            );
            // Grid-stride over 16-byte chunks: a block's share is at most its chunks' samples.
            // (The masked kernels take units of 16 samples on the 8-bit grid, bytes 1 here.)
            let threads = blocks as usize * HISTOGRAM_THREADS as usize;
            let per_block =
                (n * bytes).div_ceil(16).div_ceil(threads) * HISTOGRAM_THREADS as usize * 16 / bytes;
            assert!(per_block < 1 << 31, "{n}: {per_block} samples per block");
        }
    }
}

/// Masked counts are the counts of the selected samples alone, whatever the split.
#[test]
fn masked_counts_are_those_of_the_selected_samples() {
    let mut rng = fastrand::Rng::with_seed(29);
    for (w, h) in crate::parallel::testing::sizes(&mut rng) {
        for (maxval, bins) in [(255, None), (255, Some(7)), (1076, None), (65535, Some(300))] {
            let f = crate::parallel::testing::frame(&mut rng, w, h, maxval);
            let mask: Vec<u8> = (0..f.pixels.len()).map(|_| rng.u8(..) % 3).collect();
            let selected: Vec<u16> =
                (0..f.pixels.len()).filter(|&i| mask[i] != 0).map(|i| f.pixels.get(i)).collect();
            let masked = Masked { op: Histogram { bins }, mask: Mask::of_frame(&mask, &f).unwrap() };
            let counted = masked.cpu(&f).unwrap();
            let pixels = if maxval <= 255 {
                Pixels::U8(selected.iter().map(|&v| v as u8).collect())
            } else {
                Pixels::U16(selected.into())
            };
            let alone = Frame::new(pixels.len(), 1, maxval, pixels);
            assert_eq!(counted, Histogram { bins }.cpu(&alone).unwrap(), "{w}x{h} maxval {maxval}");
            let what = format!("{w}x{h} maxval {maxval} {bins:?}");
            crate::parallel::testing::same_on_each_pool(&what, || masked.cpu(&f).unwrap());
        }
    }
    let f = Frame::new(2, 1, 255, Pixels::U8(vec![1, 2].into()));
    let e =
        Masked { op: Histogram { bins: None }, mask: Mask::new(&[1], 1, 1).unwrap() }.cpu(&f).unwrap_err();
    assert_eq!(e.to_string(), "a mask of 1x1 pixels for a frame of 2x1");
}

/// One plan queued frame after frame, as the benchmark and a stream of frames queue it, with
/// no memset of the fused kernel's accumulator between frames: each frame's counts,
/// cumulative counts and cdf_min are the CPU's. This is what shows that each kernel's last
/// block leaves the accumulator zero: a count or a completion counter left over from the
/// frame before would show in the next one. Among the frames: one whose bins are all empty in
/// the frame before (and the reverse), grids of one block and of many, an empty frame (no
/// kernel), the counts alone queued on the same plan, and the same frame twice in a row.
#[test]
fn gpu_plan_queued_frame_after_frame_matches_cpu() {
    let Some(gpu) = crate::testing::gpu_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(41);
    // Fused (up to FUSED_SCAN_MAX_BINS bins): counted in registers (8), in two shared copies
    // (9, 256, FUSED_SCAN_MAX_BINS); two kernels, as before: FUSED_SCAN_MAX_BINS + 1 in
    // shared memory, 65536 with global atomics.
    let cases = [
        (255, Some(PRIVATE_MAX_BINS as usize)),
        (255, Some(9)),
        (255, None),
        (1076, Some(PRIVATE_MAX_BINS as usize)),
        (1076, Some(FUSED_SCAN_MAX_BINS)),
        (1076, Some(FUSED_SCAN_MAX_BINS + 1)),
        (65535, None),
    ];
    for (maxval, bins) in cases {
        let bins = Bins::new(bins, maxval).unwrap();
        if maxval <= 255 {
            frame_after_frame::<u8>(&gpu, &mut rng, bins);
        } else {
            frame_after_frame::<u16>(&gpu, &mut rng, bins);
        }
    }
}

/// [`gpu_plan_queued_frame_after_frame_matches_cpu`]'s frames, of samples `T`, on one plan of
/// `bins`.
fn frame_after_frame<T: Sample>(gpu: &Gpu, rng: &mut fastrand::Rng, bins: Bins) {
    let levels = bins.levels() as u32;
    // Samples in the lowest quarter of the levels, or the highest: no bin holds both (with 2
    // bins or more).
    let low = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
        (0..n).map(|_| T::from_u16(rng.u32(0..levels / 4) as u16)).collect()
    };
    let high = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
        (0..n).map(|_| T::from_u16(rng.u32((3 * levels).div_ceil(4)..levels) as u16)).collect()
    };
    let any = |rng: &mut fastrand::Rng, n: usize| -> Vec<T> {
        (0..n).map(|_| T::from_u16(rng.u32(0..levels) as u16)).collect()
    };
    let top = T::from_u16((levels - 1) as u16);
    let many = 3_000_001;
    let one_block = high(rng, 999);
    let frames: Vec<(&str, Vec<T>)> = vec![
        ("low, many blocks", low(rng, many)),
        ("high, many blocks", high(rng, many)),
        ("low, one block", low(rng, 1000)),
        ("high, one block", one_block.clone()),
        ("the same again", one_block),
        ("empty", Vec::new()),
        ("one level", vec![top; 777_777]),
        ("one sample", any(rng, 1)),
        ("any, many blocks", any(rng, many)),
        ("counts alone", any(rng, 12345)),
        ("low after the counts alone", low(rng, 54321)),
    ];
    let mut plan = DistributionPlan::new(gpu, bins).unwrap();
    let mut before: Option<Distribution> = None;
    for (label, samples) in frames {
        let what = format!("{} bins of {} levels, {label}", bins.count(), bins.levels());
        let src = gpu.upload("histogram.in", &samples).unwrap();
        let want = Distribution::from_counts(bins, count(&samples, bins));
        if label == "counts alone" {
            plan.queue_counts(&src, samples.len()).unwrap();
            assert_eq!(plan.download_counts().unwrap(), want.counts, "{what}");
            continue;
        }
        plan.queue(&src, samples.len()).unwrap();
        assert_eq!(plan.download().unwrap(), want, "{what}");
        let mut cdf_min = [u64::MAX];
        gpu.download(&plan.cdf_min, &mut cdf_min).unwrap();
        assert_eq!(cdf_min[0], want.cdf_min(), "{what}: cdf_min");
        if label == "high, many blocks" && bins.count() >= 2 {
            let low = before.as_ref().unwrap();
            let disjoint = low.counts.iter().zip(&want.counts).all(|(&a, &b)| a == 0 || b == 0);
            assert!(disjoint, "{what}: a bin counted in both frames");
        }
        before = Some(want);
    }
}

#[test]
fn cpu_counts_and_accumulates() {
    let f = Frame::new(3, 2, 255, Pixels::U8(vec![0, 31, 32, 255, 255, 100].into()));
    let d = Histogram { bins: Some(8) }.cpu(&f).unwrap();
    assert_eq!(d.counts, vec![2, 1, 0, 1, 0, 0, 0, 2]);
    assert_eq!(d.cumulative, vec![2, 3, 3, 4, 4, 4, 4, 6]);
    assert_eq!(d.cdf_min(), 2);
}
