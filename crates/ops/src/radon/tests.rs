//! `radon`'s tests: the row ranges and the bordered sums against their definitions, the geometry
//! against scikit-image's numbers, the thread count, and GPU = CPU bit for bit.

use histopipe_frame::{Frame, Pixels};

use super::*;
use crate::parallel;

fn params(angles: &str, circle: bool) -> RadonParams {
    RadonParams { angles: angles.parse().unwrap(), circle }
}

#[test]
fn squares_are_scikit_images() {
    // radon(np.zeros((5, 7)), circle=False).shape[0] == 10; circle=True: 5.
    let s = Square::new(7, 5, false).unwrap();
    assert_eq!((s.side, s.center, s.pad_x, s.pad_y), (10, 5, 2, 3));
    let s = Square::new(7, 5, true).unwrap();
    assert_eq!((s.side, s.center, s.x0, s.y0, s.width, s.height), (5, 2, 1, 0, 5, 5));
    // An excess of 3 starts the crop at ceil(3 / 2) = 2.
    let s = Square::new(4, 7, true).unwrap();
    assert_eq!((s.x0, s.y0), (0, 2));
    assert_eq!(Square::new(1, 1, false).unwrap().side, 2);
    assert_eq!(Square::new(640, 427, false).unwrap().side, 906);
    assert!(Square::new(0, 5, false).is_err());
    assert!(Square::new(MAX_SIDE, 1, false).is_err());
}

#[test]
fn fixed_point_angles() {
    assert_eq!(Trig::degrees(0.0), Trig { cos: 1 << FRAC, sin: 0 });
    assert_eq!(Trig::degrees(90.0), Trig { cos: 0, sin: 1 << FRAC });
    assert_eq!(Trig::degrees(-90.0), Trig { cos: 0, sin: -(1 << FRAC) });
    assert_eq!(Trig::degrees(180.0), Trig { cos: -(1 << FRAC), sin: 0 });
}

#[test]
fn row_ranges_are_their_definition() {
    let mut rng = fastrand::Rng::with_seed(28);
    for _ in 0..20000 {
        let n = rng.i64(0..40);
        let s = match rng.u8(0..4) {
            0 => 0,
            _ => rng.i64(-50..50),
        };
        let limit = rng.i64(1..400);
        let a = rng.i64(-1500..1500);
        let (lo, hi) = row_range(a, s, limit, n);
        let inside: Vec<i64> = (0..n).filter(|y| (0..limit).contains(&(a + s * y))).collect();
        let got: Vec<i64> = (lo..hi).collect();
        assert_eq!(got, inside, "a {a} s {s} limit {limit} n {n}");
    }
}

/// The definition without the border or the row range: every row of the square, each tap read
/// from the frame's part where it is inside and 0 elsewhere.
fn reference_sum(r: &Radon, samples: &[u16], width: usize, t: Trig, x: usize) -> u64 {
    let s = &r.square;
    let at = r.start(t, x);
    let tap = |i: i64, j: i64| -> u32 {
        // Bordered coordinates: the part's pixel (i - 1, j - 1).
        let (i, j) = (i - 1, j - 1);
        if i < 0 || j < 0 || i >= s.width as i64 || j >= s.height as i64 {
            return 0;
        }
        samples[(s.y0 + j as usize) * width + s.x0 + i as usize] as u32
    };
    let mut sum = 0u64;
    for y in 0..s.side as i64 {
        let (u, v) = (at.u + t.sin * y, at.v + t.cos * y);
        let (iu, iv) = (u >> FRAC, v >> FRAC);
        let wu = ((u >> (FRAC - WEIGHT_BITS)) & (ONE as i64 - 1)) as u64;
        let wv = ((v >> (FRAC - WEIGHT_BITS)) & (ONE as i64 - 1)) as u64;
        let one = ONE as u64;
        let top = tap(iu, iv) as u64 * (one - wu) + tap(iu + 1, iv) as u64 * wu;
        let bottom = tap(iu, iv + 1) as u64 * (one - wu) + tap(iu + 1, iv + 1) as u64 * wu;
        sum += top * (one - wv) + bottom * wv;
    }
    sum
}

#[test]
fn bordered_sums_over_the_row_range_are_the_whole_sums() {
    let mut rng = fastrand::Rng::with_seed(5);
    let sizes = [(1, 1), (1, 9), (9, 1), (2, 3), (7, 5), (16, 16), (23, 40), (40, 23)];
    for (w, h) in sizes {
        let samples: Vec<u16> = (0..w * h).map(|_| rng.u16(..)).collect();
        for circle in [false, true] {
            let mut angles: Vec<f64> = vec![0.0, 90.0, 180.0, -90.0, 45.0, 30.0, 359.5, 1e-7];
            angles.extend((0..6).map(|_| rng.f64() * 720.0 - 360.0));
            let r = RadonParams { angles: Angles(angles), circle }.for_size(w, h).unwrap();
            let b = r.square.bordered(&samples, w);
            for &t in &r.trig {
                for x in 0..r.square.side {
                    let got = r.position_sum(&b, t, x);
                    assert_eq!(
                        got,
                        reference_sum(&r, &samples, w, t, x),
                        "{w}x{h} circle {circle} {t:?} x {x}"
                    );
                }
            }
        }
    }
}

/// The transform against scikit-image's formula in `f64` (exact coordinates, exact weights):
/// the fixed point moves a coordinate by at most 2^-13 pixel.
#[test]
fn values_are_close_to_the_exact_bilinear_sums() {
    let mut rng = fastrand::Rng::with_seed(9);
    let (w, h) = (31, 20);
    let samples: Vec<u8> = (0..w * h).map(|_| rng.u8(..)).collect();
    let frame = Frame::new(w, h, 255, Pixels::U8(samples.clone().into()));
    for circle in [false, true] {
        let r = params("0:180:7.5", circle).for_size(w, h).unwrap();
        let out = r.cpu(&frame).unwrap();
        let Pixels::F32(values) = &out.pixels else { panic!() };
        let s = r.square;
        let img = |i: i64, j: i64| -> f64 {
            let (i, j) = (i - s.pad_x as i64, j - s.pad_y as i64);
            if i < 0 || j < 0 || i >= s.width as i64 || j >= s.height as i64 {
                return 0.0;
            }
            samples[(s.y0 + j as usize) * w + s.x0 + i as usize] as f64 / 255.0
        };
        let c = s.center as f64;
        let mut worst = 0f64;
        for (k, deg) in r_angles("0:180:7.5").into_iter().enumerate() {
            let (sin, cos) = deg.to_radians().sin_cos();
            for x in 0..s.side {
                let mut sum = 0.0;
                for y in 0..s.side {
                    let (dx, dy) = (x as f64 - c, y as f64 - c);
                    let (sx, sy) = (c + cos * dx + sin * dy, c - sin * dx + cos * dy);
                    let (fx, fy) = (sx.floor(), sy.floor());
                    let (ax, ay) = (sx - fx, sy - fy);
                    let (ix, iy) = (fx as i64, fy as i64);
                    sum += (1.0 - ay) * ((1.0 - ax) * img(ix, iy) + ax * img(ix + 1, iy))
                        + ay * ((1.0 - ax) * img(ix, iy + 1) + ax * img(ix + 1, iy + 1));
                }
                worst = worst.max((values[x * r.trig.len() + k] as f64 - sum).abs());
            }
        }
        // Each of up to 31 rows off by at most 2^-13 pixel of a gradient of at most 1.
        assert!(worst < 31.0 * 2.0 / 8192.0, "circle {circle}: {worst}");
    }
}

fn r_angles(text: &str) -> Vec<f64> {
    text.parse::<Angles>().unwrap().0
}

#[test]
fn the_thread_count_changes_nothing() {
    let mut rng = fastrand::Rng::with_seed(11);
    for (i, (w, h)) in [(1, 1), (1, 97), (97, 1), (64, 64), (129, 65), (300, 11)].into_iter().enumerate() {
        let maxval = if i % 2 == 0 { 255 } else { 4095 };
        let f = parallel::testing::frame(&mut rng, w, h, maxval);
        let r = params("-30:200:17", i % 3 == 0).for_size(w, h).unwrap();
        parallel::testing::same_on_each_pool(&format!("{w}x{h}"), || r.cpu(&f).unwrap());
    }
}

fn float_frame(rng: &mut fastrand::Rng, w: usize, h: usize) -> Frame {
    let samples: Vec<f32> = (0..w * h)
        .map(|i| match i % 53 {
            7 => f32::NAN,
            19 => f32::INFINITY,
            31 => -0.0,
            // With +inf, a column makes inf - inf, a NaN of the arithmetic's own, beside the file's.
            43 => f32::NEG_INFINITY,
            _ => rng.f32() * 4.0 - 1.0,
        })
        .collect();
    Frame::new(w, h, 1, Pixels::F32(samples.into()))
}

#[test]
fn float_frames_match_integer_ones_where_they_hold_the_same_values() {
    // 8-bit samples as floats v / 255: the same taps and weights, sums within rounding.
    let mut rng = fastrand::Rng::with_seed(3);
    let (w, h) = (20, 13);
    let bytes: Vec<u8> = (0..w * h).map(|_| rng.u8(..)).collect();
    let floats: Vec<f32> = bytes.iter().map(|&b| b as f32 / 255.0).collect();
    let r = params("0:180:11", false).for_size(w, h).unwrap();
    let a = r.cpu(&Frame::new(w, h, 255, Pixels::U8(bytes.into()))).unwrap();
    let b = r.cpu(&Frame::new(w, h, 1, Pixels::F32(floats.into()))).unwrap();
    let (Pixels::F32(a), Pixels::F32(b)) = (&a.pixels, &b.pixels) else { panic!() };
    for (x, y) in a.iter().zip(b.iter()) {
        assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{x} {y}");
    }
    // NaN spreads only through taps of non-zero weight: an exact angle reads exact pixels.
    let f = float_frame(&mut rng, 9, 9);
    let out = params("0", true).for_size(9, 9).unwrap().cpu(&f).unwrap();
    let Pixels::F32(v) = &out.pixels else { panic!() };
    assert!(v.iter().any(|v| v.is_finite()));
}

/// Every NaN of the output is the quiet NaN 0x7FC00000, whichever NaNs met in the sum. x86 makes
/// 0xFFF8... of inf + -inf, and of two NaN operands keeps the one the compiler put first; so a
/// column reading +inf and -inf and a NaN of the file gave 0xFFC00000 at some positions and
/// 0x7FC00000 at others, and the GPU, whose double add keeps another of the two, the other one
/// (29 of issue 46's held-out cases). A NaN with its sign bit set in the file is made canonical too.
#[test]
fn every_nan_is_the_quiet_nan() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    // Columns read top to bottom at angle 0: inf - inf before the file's NaN, after it, a NaN with
    // its sign bit set alone, inf - inf alone.
    let columns: [[f32; 4]; 4] = [
        [inf, -inf, nan, 1.0],
        [nan, inf, -inf, 1.0],
        [1.0, f32::from_bits(0xFFC0_0000), 2.0, 3.0],
        [-inf, 2.0, inf, 0.5],
    ];
    for column in columns {
        // Every column of a 4x4 frame the same, so that the circle's crop holds them all.
        let samples: Vec<f32> = (0..16).map(|i| column[i / 4]).collect();
        let f = Frame::new(4, 4, 1, Pixels::F32(samples.into()));
        for (angles, circle) in [("0", false), ("0:180:2", false), ("0:180:4", true)] {
            let out = params(angles, circle).for_size(4, 4).unwrap().cpu(&f).unwrap();
            let Pixels::F32(v) = &out.pixels else { panic!() };
            assert!(v.iter().any(|v| v.is_nan()), "{column:?} {angles}: no NaN");
            for v in v.iter().filter(|v| v.is_nan()) {
                assert_eq!(v.to_bits(), 0x7FC0_0000, "{column:?} {angles} circle {circle}");
            }
        }
    }
}

/// A frame of maxval 1 (a NumPy bool array) is 0 and 1, as scikit-image takes booleans: the same
/// bits as the float frame of its values, where an 8-bit frame of other maxval is divided by 255.
#[test]
fn frames_of_maxval_1_are_0_and_1() {
    let mut rng = fastrand::Rng::with_seed(46);
    let (w, h) = (17, 12);
    let bits = parallel::testing::frame(&mut rng, w, h, 1);
    let Pixels::U8(v) = &bits.pixels else { panic!() };
    let floats = Frame::new(w, h, 1, Pixels::F32(v.iter().map(|&b| b as f32).collect()));
    let bytes = Frame::new(w, h, 2, bits.pixels.clone());
    for circle in [false, true] {
        let r = params("0:180:7", circle).for_size(w, h).unwrap();
        let values = |f: &Frame| match r.cpu(f).unwrap().pixels {
            Pixels::F32(v) => v.to_vec(),
            _ => unreachable!(),
        };
        let (ones, float, of_255) = (values(&bits), values(&floats), values(&bytes));
        assert!(ones.iter().map(|v| v.to_bits()).eq(float.iter().map(|v| v.to_bits())), "circle {circle}");
        // Each rounded once from the same exact sum: within two f32 roundings (2^-24 each) of each other.
        for (a, b) in ones.iter().zip(&of_255) {
            assert!((*a as f64 / 255.0 - *b as f64).abs() <= *b as f64 * 2.5e-7, "circle {circle}: {a} {b}");
        }
    }
}

#[test]
fn constants_match_the_kernels() {
    let text = histopipe_gpu::kernels::RADON.text;
    assert!(text.contains(&format!("#define RADON_FRAC {FRAC}\n")));
    assert!(text.contains(&format!("#define RADON_WEIGHT_BITS {WEIGHT_BITS}\n")));
}

#[test]
fn circle_warning_follows_scikit_image() {
    let mut f = Frame::new(5, 5, 255, Pixels::U8(vec![0; 25].into()));
    assert!(!outside_circle(&f));
    // (0, 2) is at distance 2 from (2, 2): on the circle of radius 2, inside.
    if let Pixels::U8(v) = &mut f.pixels {
        v[2 * 5] = 1;
    }
    assert!(!outside_circle(&f));
    if let Pixels::U8(v) = &mut f.pixels {
        v[0] = 1;
    }
    assert!(outside_circle(&f));
}

/// GPU = CPU, bit for bit: 8-bit, 16-bit, float (NaN, infinities, -0) and 0/1, both modes, odd and thin
/// sizes, angles of every quadrant.
#[test]
fn gpu_matches_cpu() {
    let Some(gpu) = crate::testing::gpu_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(12);
    let mut sizes = vec![(1, 1), (1, 40), (40, 1), (2, 3), (33, 17), (64, 64), (257, 130)];
    sizes.extend((0..6).map(|_| (rng.usize(1..300), rng.usize(1..300))));
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let frames = [
            parallel::testing::frame(&mut rng, w, h, 255),
            parallel::testing::frame(&mut rng, w, h, 65535),
            float_frame(&mut rng, w, h),
            // Booleans: divided by 1, not 255 (Radon::unit).
            parallel::testing::frame(&mut rng, w, h, 1),
        ];
        for circle in [false, true] {
            let angles = if i % 2 == 0 { "0:180:1" } else { "-91,0,0.1,45,90,179.9,270,1000" };
            let r = params(angles, circle).for_size(w, h).unwrap();
            for f in &frames {
                let (cpu, gpu_out) = (r.cpu(f).unwrap(), r.gpu(&gpu, f).unwrap());
                let bits = |f: &Frame| match &f.pixels {
                    Pixels::F32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    _ => unreachable!(),
                };
                assert!(bits(&cpu) == bits(&gpu_out), "{w}x{h} circle {circle} {:?}", f.depth());
            }
        }
    }
}
