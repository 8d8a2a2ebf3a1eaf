//! `rotate`'s tests: both kernels against the per-pixel reference, quarter turns, `--expand`.

use histopipe_frame::{Frame, Pixels};

use super::cpu::{first, sample_at, Blend, Kernel};
use super::*;
use crate::{parallel, Fill};

fn frame(w: usize, h: usize) -> Frame {
    Frame::new(w, h, 255, Pixels::U8((0..w * h).map(|i| i as u8).collect()))
}

fn rotate(f: &Frame, by: RotateBy, interpolation: Interpolation) -> Frame {
    RotateParams { by, interpolation, fill: Fill::Int(0), expand: false }
        .for_frame(f)
        .unwrap()
        .cpu(f)
        .unwrap()
}

#[test]
fn angles_reduce_to_quarter_turns_exactly() {
    assert_eq!(Turn::degrees(0.0).unwrap(), Turn::Quarter(0));
    assert_eq!(Turn::degrees(90.0).unwrap(), Turn::Quarter(1));
    assert_eq!(Turn::degrees(-90.0).unwrap(), Turn::Quarter(3));
    assert_eq!(Turn::degrees(540.0).unwrap(), Turn::Quarter(2));
    assert_eq!(Turn::degrees(-720.0).unwrap(), Turn::Quarter(0));
    assert!(matches!(Turn::degrees(45.0).unwrap(), Turn::Angle { .. }));
    assert!(Turn::degrees(f64::NAN).is_err());
}

#[test]
fn positive_angles_turn_counter_clockwise() {
    // 3x3, a quarter turn: the top-right corner goes to the top-left.
    let f = frame(3, 3);
    let out = rotate(&f, RotateBy::Degrees(90.0), Interpolation::Nearest);
    assert_eq!(out.pixels, Pixels::U8(vec![2, 5, 8, 1, 4, 7, 0, 3, 6].into()));
    // 30 degrees the general way agrees with the quarter-turn sign on the frame's axes.
    let m = Turn::degrees(30.0).unwrap().new_to_old(101, 101);
    let (sx, sy) = m.apply(50.0, 0.0); // output top centre comes from the right of the top
    assert!(sx > 50.0 && sy > 0.0, "{sx} {sy}");
}

#[test]
fn quarter_turns_match_the_general_formula_with_half_pixel_centres() {
    for (w, h) in [(4usize, 3usize), (5, 3), (2, 7), (1, 1), (6, 6)] {
        let f = frame(w, h);
        let Pixels::U8(input) = &f.pixels else { unreachable!() };
        for q in 0..4u8 {
            let rotate = Rotate::in_place(Turn::Quarter(q), w, h, Interpolation::Nearest, Fill::Int(0), 255);
            let quarter = rotate.cpu_samples(input);
            let m = Turn::Quarter(q).new_to_old(w, h);
            let general: Vec<u8> = (0..w * h)
                .map(|i| {
                    let (sx, sy) = m.apply((i % w) as f64, (i / w) as f64);
                    sample_at(input, w, h, sx, sy, 0u8, 255, false)
                })
                .collect();
            assert_eq!(quarter, general, "{w}x{h} q={q}");
        }
    }
}

/// The row-wise evaluation (runs found by bisection, no per-pixel tests inside them) gives
/// exactly the per-pixel reference: `sample_at` of `Affine::apply`, at every pixel.
#[test]
fn general_turns_match_the_per_pixel_reference() {
    let mut rng = fastrand::Rng::with_seed(6);
    let mut sizes = vec![(1usize, 1usize), (1, 9), (9, 1), (2, 2), (3, 70), (70, 3), (64, 64)];
    sizes.extend((0..12).map(|_| (rng.usize(1..160), rng.usize(1..160))));
    let mut angles = vec![30.0, -30.0, 45.0, 135.0, -135.0, 89.999999, 90.000001, 1e-9, -1e-9, 179.9999];
    angles.extend((0..12).map(|_| rng.f64() * 720.0 - 360.0));
    for (w, h) in sizes {
        let input: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=1000)).collect();
        for &angle in &angles {
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                let turn = Turn::degrees(angle).unwrap();
                let rotate = Rotate::in_place(turn, w, h, interpolation, Fill::Int(7), 1000);
                let m = rotate.new_to_old();
                let bilinear = interpolation == Interpolation::Bilinear;
                let reference: Vec<u16> = (0..w * h)
                    .map(|i| {
                        let (sx, sy) = m.apply((i % w) as f64, (i / w) as f64);
                        sample_at(&input, w, h, sx, sy, 7, 1000, bilinear)
                    })
                    .collect();
                assert!(rotate.cpu_samples(&input) == reference, "{w}x{h} {angle} {interpolation:?}");
            }
        }
    }
}

/// The general turn pixel by pixel: [`sample_at`] (which the GPU kernel repeats operation for
/// operation) at `Affine::apply` of every pixel, without the kernels' row-by-row coordinates.
mod reference {
    use super::*;

    pub fn samples<T: Blend>(r: &Rotate, input: &[T]) -> Vec<T> {
        let (m, ow) = (r.new_to_old(), r.out_width);
        let (bilinear, fill) = (r.interpolation == Interpolation::Bilinear, T::from_fill(r.fill));
        (0..ow * r.out_height)
            .map(|i| {
                let (sx, sy) = m.apply((i % ow) as f64, (i / ow) as f64);
                sample_at(input, r.width, r.height, sx, sy, fill, r.maxval, bilinear)
            })
            .collect()
    }
}

/// Every kernel this CPU can run: the portable one, and the SIMD ones it has.
fn kernels() -> Vec<Kernel> {
    let mut all = vec![Kernel::Scalar];
    if Kernel::detect() != Kernel::Scalar {
        all.push(Kernel::detect());
    }
    all
}

/// Compares every kernel with the reference on `input` (maxval `maxval`) turned by each of
/// `angles`, both interpolations, with a random fill.
fn check_kernels<T: Blend + std::fmt::Debug + PartialEq>(
    rng: &mut fastrand::Rng,
    input: &[T],
    (w, h): (usize, usize),
    maxval: u16,
    angles: &[f64],
) {
    for &angle in angles {
        let turn = Turn::degrees(angle).unwrap();
        for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
            let fill = rng.u16(0..=maxval);
            let rotate = Rotate::in_place(turn, w, h, interpolation, Fill::Int(fill), maxval);
            let expected = reference::samples(&rotate, input);
            for kernel in kernels() {
                let got = rotate.cpu_samples_with(input, kernel);
                assert!(got == expected, "{w}x{h} {angle} {interpolation:?} fill {fill} {kernel:?}");
            }
        }
    }
}

fn test_angles(rng: &mut fastrand::Rng) -> Vec<f64> {
    let mut angles = vec![
        30.0,
        -30.0,
        1e-9,
        -1e-9,
        0.001,
        44.999999,
        45.0,
        45.000001,
        -45.0,
        89.9999999,
        90.0000001,
        135.0,
        179.99999,
        180.00001,
        -135.0,
        270.5,
        359.9999,
        390.0,
        725.25,
        -400.0,
        1e6 + 0.5,
    ];
    angles.extend((0..10).map(|_| rng.f64() * 1440.0 - 720.0));
    angles
}

/// The SIMD and portable kernels give exactly the old per-pixel evaluation on random frames,
/// 8- and 16-bit, of many shapes (tiny, odd, wide, tall; every width modulo the SIMD width).
#[test]
fn kernels_match_the_reference_on_random_frames() {
    let mut rng = fastrand::Rng::with_seed(0x7261_6e64);
    let mut sizes = vec![
        (1usize, 1usize),
        (1, 7),
        (7, 1),
        (2, 3),
        (3, 2),
        (2, 2),
        (4, 9),
        (5, 5),
        (129, 65),
        (65, 129),
        (300, 11),
        (11, 300),
    ];
    sizes.extend((0..12).map(|_| (rng.usize(1..200), rng.usize(1..200))));
    for (w, h) in sizes {
        let angles = test_angles(&mut rng);
        let maxval = if rng.bool() { 255 } else { rng.u16(1..=255) };
        let bytes: Vec<u8> = (0..w * h).map(|_| rng.u8(0..=maxval as u8)).collect();
        check_kernels(&mut rng, &bytes, (w, h), maxval, &angles);
        let maxval = [65535, 1000, 256, rng.u16(256..=65535)][rng.usize(..4)];
        let words: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=maxval)).collect();
        check_kernels(&mut rng, &words, (w, h), maxval, &angles);
    }
}

/// Every kernel gives the same samples over whole runs of rows, not only over the 64-pixel spans
/// of a tile: many groups of quads per call, and every remainder (random widths and angles,
/// 8- and 16-bit).
#[test]
fn kernels_agree_on_whole_rows() {
    let mut rng = fastrand::Rng::with_seed(0x726f_7773);
    for _ in 0..12 {
        let (w, h) = (rng.usize(300..2000), rng.usize(2..40));
        // Small angles keep the runs long in these wide, short frames.
        let turn = Turn::degrees(rng.f64() * 4.0 - 2.0 + [0.0, 180.0][rng.usize(..2)]).unwrap();
        let bytes: Vec<u8> = (0..w * h).map(|_| rng.u8(..)).collect();
        let words: Vec<u16> = (0..w * h).map(|_| rng.u16(..)).collect();
        check_whole_rows(turn, (w, h), &bytes, 255);
        check_whole_rows(turn, (w, h), &words, 65535);
    }
}

fn check_whole_rows<T: Blend + std::fmt::Debug + PartialEq>(
    turn: Turn,
    (w, h): (usize, usize),
    input: &[T],
    maxval: u16,
) {
    use std::mem::MaybeUninit;
    let run = |kernel: Kernel, interpolation, y| -> Vec<T> {
        let r = Rotate::in_place(turn, w, h, interpolation, Fill::Int(0), maxval).row(y);
        let xs = if interpolation == Interpolation::Nearest { r.nearest } else { r.inner };
        let mut out = vec![MaybeUninit::uninit(); xs.len()];
        match interpolation {
            Interpolation::Nearest => kernel.nearest(input, w, &r.map, xs, &mut out),
            Interpolation::Bilinear => kernel.bilinear(input, w, &r.map, maxval, xs, &mut out),
        }
        // SAFETY: the kernels write every sample of `out`.
        out.into_iter().map(|v| unsafe { v.assume_init() }).collect()
    };
    for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
        for y in 0..h {
            let scalar = run(Kernel::Scalar, interpolation, y);
            for kernel in kernels() {
                let got = run(kernel, interpolation, y);
                assert!(got == scalar, "{w}x{h} {turn:?} {interpolation:?} row {y} {kernel:?}");
            }
        }
    }
}

/// Split over any number of threads, the output is the one thread's, quarter turns included.
#[test]
fn every_split_turns_as_one_thread() {
    let mut rng = fastrand::Rng::with_seed(0x636f_7265);
    for (w, h) in parallel::testing::sizes(&mut rng) {
        for maxval in [255, 4000] {
            let f = parallel::testing::frame(&mut rng, w, h, maxval);
            for angle in [90.0, 180.0, 270.0, 30.0, -100.5, rng.f64() * 360.0] {
                for (interpolation, expand) in [
                    (Interpolation::Nearest, false),
                    (Interpolation::Bilinear, false),
                    (Interpolation::Nearest, true),
                    (Interpolation::Bilinear, true),
                ] {
                    let by = RotateBy::Degrees(angle);
                    let op =
                        RotateParams { by, interpolation, fill: Fill::Int(3), expand }.for_frame(&f).unwrap();
                    let what = format!("{w}x{h} maxval {maxval} {angle} {interpolation:?} expand {expand}");
                    parallel::testing::same_on_each_pool(&what, || op.cpu(&f).unwrap());
                }
            }
        }
    }
}

/// The same on a real picture (tests/fixtures/camera.pgm), as is and widened to 16 bits.
#[test]
fn kernels_match_the_reference_on_the_camera_fixture() {
    use histopipe_frame::{FrameReader, ReadOptions};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/camera.pgm");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let frame = FrameReader::new(file, ReadOptions::default()).next_frame().unwrap().unwrap();
    let Pixels::U8(bytes) = &frame.pixels else { panic!("camera.pgm is 8-bit") };
    let mut rng = fastrand::Rng::with_seed(0x0063_616d);
    let mut angles = vec![30.0, -30.0, 45.0, 0.5, 179.5];
    angles.extend((0..4).map(|_| rng.f64() * 720.0 - 360.0));
    let size = (frame.width, frame.height);
    check_kernels(&mut rng, bytes, size, 255, &angles);
    let words: Vec<u16> = bytes.iter().map(|&v| v as u16 * 257).collect();
    check_kernels(&mut rng, &words, size, 65535, &angles[..4]);
}

/// The general kernels' tile height: the tallest of 32, 16 and 8 rows whose grid of 64-column
/// tiles holds 8 blocks per SM, else 8; partial tiles count as whole ones.
#[test]
fn tile_rows_keep_eight_blocks_per_sm() {
    use super::gpu::tile_rows;
    // 132 SMs (an H100 SXM): 1056 blocks wanted.
    assert_eq!(tile_rows(2560, 1707, 132), 32); // 40 x 54 = 2160 tiles of 32 rows
    assert_eq!(tile_rows(1920, 1080, 132), 16); // 30 x 34 = 1020 of 32 rows, 30 x 68 of 16
    assert_eq!(tile_rows(640, 651, 132), 8); // 10 x 82 = 820 even of 8 rows
    assert_eq!(tile_rows(704, 768, 132), 8); // 11 x 48 = 528 of 16 rows, 11 x 96 = 1056 of 8

    // At the boundary: 32 columns of 64 and 33 rows of tiles are 1056 blocks; 32 rows of tiles
    // are too few, 64 of 16 rows enough.
    assert_eq!(tile_rows(2048, 1056, 132), 32);
    assert_eq!(tile_rows(2048, 1025, 132), 32); // the last tile row partial
    assert_eq!(tile_rows(2048, 1024, 132), 16);
    assert_eq!(tile_rows(1985, 1024, 132), 16); // 31 columns and a partial one
    assert_eq!(tile_rows(1984, 1056, 132), 16); // 31 x 33 = 1023 of 32 rows
    assert_eq!(tile_rows(1984, 1065, 132), 16); // 31 x 34 = 1054: still short of 1056

    // Tiny frames, any GPU: 8 rows.
    assert_eq!(tile_rows(1, 1, 1), 8);
    assert_eq!(tile_rows(64, 32, 132), 8);

    // One SM wants 8 blocks: 64 x 225 is 8 tiles of 32 rows (the last of one row), 64 x 224
    // is 7 of 32 rows and 14 of 16; 64 x 113 is 8 tiles of 16 rows, 64 x 112 7 of them.
    assert_eq!(tile_rows(64, 225, 1), 32);
    assert_eq!(tile_rows(64, 224, 1), 16);
    assert_eq!(tile_rows(64, 113, 1), 16);
    assert_eq!(tile_rows(64, 112, 1), 8);

    // No overflow at the largest sizes.
    assert_eq!(tile_rows(u32::MAX, u32::MAX, u32::MAX), 32);
    assert_eq!(tile_rows(u32::MAX, 1, u32::MAX), 8);
}

/// The bracketing search finds the flip of any monotone test, whatever the guess.
#[test]
fn first_finds_the_flip_from_any_guess() {
    for n in 0usize..40 {
        for flip in 0..=n {
            for guess in [0, 1, flip.saturating_sub(1), flip, flip + 1, n / 2, n, n + 5, usize::MAX] {
                assert_eq!(first(n, guess, |x| x >= flip), flip, "n {n} flip {flip} guess {guess}");
            }
        }
    }
}

#[test]
fn line_directions() {
    assert_eq!(Turn::making_vertical(0.0, 5.0), Some(Turn::Quarter(0)));
    assert_eq!(Turn::making_vertical(0.0, -5.0), Some(Turn::Quarter(2)));
    assert_eq!(Turn::making_vertical(5.0, 0.0), Some(Turn::Quarter(3)));
    assert_eq!(Turn::making_vertical(-5.0, 0.0), Some(Turn::Quarter(1)));
    assert_eq!(Turn::making_vertical(0.0, 0.0), None);
    let Some(Turn::Angle { cos, sin }) = Turn::making_vertical(3.0, 4.0) else { panic!() };
    // The forward map sends (3, 4) to (0, 5).
    assert!((cos * 3.0 + sin * 4.0).abs() < 1e-12 && (-sin * 3.0 + cos * 4.0 - 5.0).abs() < 1e-12);
}

/// `--expand`: quarter turns are transposes and flips into H x W (or W x H), and every other
/// turn, evaluated by every kernel, is the reference's `sample_at` of the expanded map.
#[test]
fn expanded_turns() {
    let (w, h) = (7usize, 4usize);
    let f = frame(w, h);
    let at = |x: usize, y: usize| f.pixels.get(y * w + x);
    let turned = |degrees: f64| {
        let params = RotateParams {
            by: RotateBy::Degrees(degrees),
            interpolation: Interpolation::Bilinear,
            fill: Fill::Int(0),
            expand: true,
        };
        params.for_frame(&f).unwrap().cpu(&f).unwrap()
    };
    // A quarter turn counter-clockwise: output (x, y) <- input (W - 1 - y, x).
    for (degrees, size, source) in [
        (90.0, (h, w), &(|x, y| at(w - 1 - y, x)) as &dyn Fn(usize, usize) -> u16),
        (-270.0, (h, w), &|x, y| at(w - 1 - y, x)),
        (180.0, (w, h), &|x, y| at(w - 1 - x, h - 1 - y)),
        (270.0, (h, w), &|x, y| at(y, h - 1 - x)),
        (-90.0, (h, w), &|x, y| at(y, h - 1 - x)),
    ] {
        let out = turned(degrees);
        assert_eq!((out.width, out.height), size, "{degrees}");
        for y in 0..out.height {
            for x in 0..out.width {
                assert_eq!(out.pixels.get(y * out.width + x), source(x, y), "{degrees} at ({x}, {y})");
            }
        }
        let g = out.geometry.unwrap().to_original;
        assert!([g.a, g.b, g.c, g.d, g.e, g.f].iter().all(|v| v.fract() == 0.0), "{degrees}: {g:?}");
    }
    assert_eq!(turned(0.0), f);
    assert_eq!(Turn::degrees(45.0).unwrap().bounding_size(10, 10), (15, 15)); // 14.14...
    assert_eq!(Turn::degrees(1e-9).unwrap().bounding_size(400, 328), (400, 328));
    assert_eq!(Turn::degrees(30.0).unwrap().bounding_size(400, 328), (511, 485));
    let mut rng = fastrand::Rng::with_seed(0x6578_7061);
    for _ in 0..24 {
        let (w, h) = (rng.usize(1..90), rng.usize(1..90));
        let turn = Turn::degrees(rng.f64() * 720.0 - 360.0).unwrap();
        let (ow, oh) = turn.bounding_size(w, h);
        let input: Vec<u16> = (0..w * h).map(|_| rng.u16(0..=999)).collect();
        for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
            let fill = rng.u16(0..=999);
            let r = Rotate {
                turn,
                width: w,
                height: h,
                out_width: ow,
                out_height: oh,
                interpolation,
                fill: Fill::Int(fill),
                maxval: 999,
                flip: None,
                centre: None,
            };
            let expected = reference::samples(&r, &input);
            for kernel in kernels() {
                assert!(r.cpu_samples_with(&input, kernel) == expected, "{w}x{h} {turn:?} {kernel:?}");
            }
        }
    }
}

#[test]
fn bilinear_halfway_rounds_half_up_and_blends_the_fill() {
    let input = [10u8, 21, 30, 40];
    assert_eq!(sample_at(&input, 2, 2, 0.5, 0.0, 0, 255, true), 16); // 15.5 -> 16
    assert_eq!(sample_at(&input, 2, 2, 0.25, 0.0, 0, 255, true), 13); // 12.75 -> 13
    assert_eq!(sample_at(&input, 2, 2, 1.25, 0.0, 100, 255, true), 41); // 21 * .75 + 100 * .25
    assert_eq!(sample_at(&input, 2, 2, 1.5, 0.0, 100, 255, true), 100); // nearest is outside
}

/// Float frames: every kernel gives the reference's bits (NaN and infinities included), for
/// turns of every kind, and the bilinear blend rounds the `f64` blend to `f32`.
#[test]
fn float_kernels_match_the_reference_bit_for_bit() {
    let mut rng = fastrand::Rng::with_seed(0xf1_0a7);
    let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
    for (w, h) in [(1, 1), (3, 7), (37, 23), (130, 66)] {
        let mut input: Vec<f32> = (0..w * h).map(|_| rng.f32() * 3.0 - 1.0).collect();
        input[rng.usize(..w * h)] = f32::from_bits(0x7FC0_0F00);
        input[rng.usize(..w * h)] = f32::NEG_INFINITY;
        for angle in [90.0, 180.0, 30.0, -71.5, 200.25] {
            let turn = Turn::degrees(angle).unwrap();
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                for fill in [Fill::Float(0.5), Fill::Float(f32::NAN), Fill::Int(3)] {
                    let rotate = Rotate::in_place(turn, w, h, interpolation, fill, 1);
                    let expected = match turn {
                        Turn::Quarter(_) => rotate.cpu_samples_with(&input, Kernel::Scalar),
                        Turn::Angle { .. } => reference::samples(&rotate, &input),
                    };
                    for kernel in kernels() {
                        let got = rotate.cpu_samples_with(&input, kernel);
                        assert!(
                            bits(&got) == bits(&expected),
                            "{w}x{h} {angle} {interpolation:?} {kernel:?}"
                        );
                    }
                }
            }
        }
    }
    let input = [10.0f32, 21.0, 30.0, 40.0];
    assert_eq!(sample_at(&input, 2, 2, 0.5, 0.0, 0.0, 1, true), 15.5);
    assert_eq!(sample_at(&input, 2, 2, 0.25, 0.0, 0.0, 1, true), 12.75);
    assert_eq!(sample_at(&input, 2, 2, 1.25, 0.0, 100.0, 1, true), 40.75); // 21 * .75 + 100 * .25
                                                                           // A NaN tap makes the blend NaN even at weight 0 (0 * NaN is NaN): the quiet NaN.
    let input = [10.0f32, 21.0, 30.0, f32::NAN];
    assert_eq!(sample_at(&input, 2, 2, 0.0, 0.0, 0.0, 1, true).to_bits(), 0x7FC0_0000);
    assert_eq!(sample_at(&input, 2, 2, 1.5, 0.0, f32::NEG_INFINITY, 1, true), f32::NEG_INFINITY);
}
