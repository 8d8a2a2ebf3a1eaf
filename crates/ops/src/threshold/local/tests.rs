//! The local methods' own tests: the coefficients, the offsets' rounding, the passes against a
//! direct sum, and the same bytes on every pool.

use super::*;
use crate::parallel::testing;
use crate::threshold::local::stats;

fn op(method: Local, mode: Mode) -> LocalThreshold {
    LocalThreshold { method, mode }
}

/// The box's mean of every sample straight from the definition: the sum over the block of
/// replicated samples, no passes.
fn direct_box(filter: &Filter, side: usize, samples: &[u8], w: usize, h: usize, maxval: u8) -> Vec<u8> {
    let r = side as isize / 2;
    let at = |x: isize, y: isize| {
        samples[y.clamp(0, h as isize - 1) as usize * w + x.clamp(0, w as isize - 1) as usize] as u32
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h as isize {
        for x in 0..w as isize {
            let s: u32 =
                (-r..=r).flat_map(|j| (-r..=r).map(move |i| (i, j))).map(|(i, j)| at(x + i, y + j)).sum();
            let v = samples[y as usize * w + x as usize];
            out.push(if filter.on(v, box_mean(s, (side * side) as u64)) { maxval } else { 0 });
        }
    }
    out
}

#[test]
fn gaussian_coefficients_are_opencvs_tables_and_sum_to_about_one() {
    assert_eq!(gaussian_kernel(3), [0.25, 0.5, 0.25]);
    assert_eq!(gaussian_kernel(9)[4], 60.0 / 256.0);
    for n in (11..=MAX_BLOCK as usize).step_by(400) {
        let k = gaussian_kernel(n);
        let sum: f64 = k.iter().map(|&v| v as f64).sum();
        assert!((sum - 1.0).abs() < 1e-5, "{n}: {sum}");
        assert!(k.iter().zip(k.iter().rev()).all(|(a, b)| a == b), "{n}: symmetric");
    }
}

#[test]
fn offsets_round_as_opencvs_ceil_and_floor() {
    let o = |m| Offset { millionths: m };
    assert_eq!((o(2_500_000).ceil(), o(2_500_000).floor()), (3, 2));
    assert_eq!((o(-2_500_000).ceil(), o(-2_500_000).floor()), (-2, -3));
    assert_eq!((o(-3_000_000).ceil(), o(-3_000_000).floor()), (-3, -3));
    assert_eq!(o(-1_250_000).to_string(), "-1.25");
    assert_eq!(o(7_000_000).to_string(), "7");
}

#[test]
fn passes_give_the_same_bytes_on_every_pool_and_the_box_its_direct_sums() {
    let mut rng = fastrand::Rng::with_seed(49);
    for (w, h) in testing::sizes(&mut rng).into_iter().filter(|&(w, h)| w * h <= 20_000) {
        let frame = testing::frame(&mut rng, w, h, 255);
        let Pixels::U8(samples) = &frame.pixels else { unreachable!() };
        for method in [
            Local::Mean { block: 3, c: Offset { millionths: 0 } },
            Local::Mean { block: 7, c: Offset { millionths: -2_500_000 } },
            Local::Gaussian { block: 5, c: Offset { millionths: 1_000_000 } },
            Local::Gaussian { block: 13, c: Offset { millionths: -500_000 } },
        ] {
            for mode in [Mode::Binary, Mode::BinaryInv] {
                let op = op(method, mode);
                let filter = op.filter().unwrap();
                let what = format!("{method} {mode} {w}x{h}");
                testing::same_on_each_pool(&what, || op.cpu(&frame).unwrap());
                let got = op.cpu(&frame).unwrap();
                if let Local::Mean { block, .. } = method {
                    let want = direct_box(&filter, block as usize, samples, w, h, 255);
                    assert_eq!(got.pixels, Pixels::U8(want.into()), "{what}");
                }
            }
        }
    }
}

#[test]
fn modes_depths_and_blocks_are_checked() {
    let mean = Local::Mean { block: 3, c: Offset { millionths: 0 } };
    let eight = testing::frame(&mut fastrand::Rng::with_seed(1), 4, 4, 255);
    let sixteen = testing::frame(&mut fastrand::Rng::with_seed(1), 4, 4, 1000);
    assert!(op(mean, Mode::Trunc).cpu(&eight).unwrap_err().to_string().contains("binary or binary-inv"));
    assert!(op(mean, Mode::Binary).cpu(&sixteen).unwrap_err().to_string().contains("8-bit frames only"));
    for block in [1, 4, MAX_BLOCK + 2] {
        let bad = Local::Gaussian { block, c: Offset { millionths: 0 } };
        assert!(op(bad, Mode::Binary).cpu(&eight).is_err(), "{block}");
    }
}

#[test]
fn reflection_is_numpys() {
    // np.pad(np.arange(4), 6, mode='reflect'): 0 1 2 3 2 1 | 0 1 2 3 | 2 1 0 1 2 3
    let padded: Vec<usize> = (-6..10).map(|i| stats::reflect(i, 4)).collect();
    assert_eq!(padded, [0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3]);
    assert!((-5..5).all(|i| stats::reflect(i, 1) == 0));
    assert_eq!((-3..5).map(|i| stats::reflect(i, 2)).collect::<Vec<_>>(), [1, 0, 1, 0, 1, 0, 1, 0]);
}

#[test]
fn sauvola_and_niblack_give_the_same_bytes_on_every_pool() {
    let mut rng = fastrand::Rng::with_seed(7);
    for (w, h) in testing::sizes(&mut rng).into_iter().filter(|&(w, h)| w * h <= 20_000) {
        for maxval in [255, 4095] {
            let frame = testing::frame(&mut rng, w, h, maxval);
            for method in
                [Local::Sauvola { window: 15, k: 0.2, r: None }, Local::Niblack { window: 5, k: -0.3 }]
            {
                let op = op(method, Mode::Binary);
                testing::same_on_each_pool(&format!("{method} {w}x{h}"), || op.cpu(&frame).unwrap());
            }
        }
    }
}
