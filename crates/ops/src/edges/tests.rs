use super::classify::{classify_row, Thresholds};
use super::cpu::push_strong;
use super::gpu::{nms_tiles, NMS_BLOCK, NMS_TILE};
use super::*;
use crate::parallel;
use histopipe_gpu::kernels;
/// Which neighbours non-maximum suppression compares with, from the gradient (OpenCV's sectors):
/// 0 left/right, 1 above/below, 2 the diagonal (-1,-1)/(+1,+1), 3 the diagonal (+1,-1)/(-1,+1).
fn direction(dx: i32, dy: i32) -> u8 {
    let x = dx.abs();
    let y = dy.abs() << 15;
    let tg22x = x * TG22;
    if y < tg22x {
        0
    } else if y > tg22x + (x << 16) {
        1
    } else if (dx ^ dy) < 0 {
        3
    } else {
        2
    }
}

/// Stage 3 pixel by pixel, with branches: the direction's sector, then its two neighbours.
fn classify_reference(t: Thresholds, [ma, mc, mb]: [&[i32]; 3], dx: &[i32], dy: &[i32]) -> Vec<u8> {
    (0..dx.len())
        .map(|x| {
            let m = mc[x + 1];
            if m <= t.low {
                return NONE;
            }
            let keep = match direction(dx[x], dy[x]) {
                0 => m > mc[x] && m >= mc[x + 2],
                1 => m > ma[x + 1] && m >= mb[x + 1],
                2 => m > ma[x] && m > mb[x + 2],
                _ => m > ma[x + 2] && m > mb[x],
            };
            match (keep, m > t.high) {
                (false, _) => NONE,
                (true, false) => WEAK,
                (true, true) => STRONG,
            }
        })
        .collect()
}

#[test]
fn branchless_suppression_is_the_sectors_test() {
    let mut rng = fastrand::Rng::with_seed(13);
    for w in [1, 7, 8, 9, 64, 333] {
        for spread in [3, 40, 1020] {
            let grad =
                |rng: &mut fastrand::Rng| (0..w).map(|_| rng.i32(-spread..=spread)).collect::<Vec<_>>();
            let (dx, dy) = (grad(&mut rng), grad(&mut rng));
            // Magnitudes often equal to their neighbours, and some at the thresholds.
            let mags: Vec<Vec<i32>> = (0..3)
                .map(|_| {
                    let mut m: Vec<i32> = (0..w + 2).map(|_| rng.i32(0..=12) * 10).collect();
                    (m[0], m[w + 1]) = (0, 0);
                    m
                })
                .collect();
            let t = Thresholds { l2: false, low: 40, high: 90 };
            let m = [&mags[0][..], &mags[1][..], &mags[2][..]];
            let mut line = vec![NONE; w];
            classify_row(t, m, &dx, &dy, &mut line);
            assert_eq!(line, classify_reference(t, m, &dx, &dy), "w {w}, spread {spread}");
            let mut stack = Vec::new();
            push_strong(&line, 5, &mut stack);
            let strong: Vec<usize> = (0..w).filter(|&x| line[x] == STRONG).map(|x| x + 5).collect();
            assert_eq!(stack, strong);
        }
    }
}

#[test]
fn tg22_is_opencvs_constant() {
    assert_eq!(TG22, (0.414_213_562_373_095_05_f64 * 32768.0 + 0.5) as i32);
}

#[test]
fn thresholds_follow_opencv() {
    let c = |low, high, l2| Canny { low, high, l2, blur: None }.thresholds();
    assert_eq!(c(50.7, 150.2, false), (50, 150));
    assert_eq!(c(150.0, 50.0, false), (50, 150));
    assert_eq!(c(10.5, 40000.0, true), (110, 32767 * 32767));
}

#[test]
fn a_step_gives_one_thin_edge() {
    // Left half 0, right half 200: the step between columns 3 and 4.
    let (w, h) = (8, 5);
    let px: Vec<u8> = (0..w * h).map(|i| if i % w >= 4 { 200 } else { 0 }).collect();
    let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
    let out = Canny { low: 50.0, high: 100.0, l2: false, blur: None }.cpu(&f).unwrap();
    let Pixels::U8(e) = out.pixels else { panic!() };
    for y in 0..h {
        let row: Vec<u8> = e[y * w..(y + 1) * w].to_vec();
        assert_eq!(row, vec![0, 0, 0, 255, 0, 0, 0, 0], "row {y}");
    }
}

#[test]
fn tile_shapes_match_the_kernel() {
    let text = kernels::CANNY.text;
    for (name, v) in [
        ("CANNY_TW", NMS_TILE.0),
        ("CANNY_TH", NMS_TILE.1),
        ("CANNY_BX", NMS_BLOCK.0),
        ("CANNY_BY", NMS_BLOCK.1),
    ] {
        assert!(text.contains(&format!("#define {name} {v}\n")), "{name} is not {v} in canny.cu");
    }
}

#[test]
fn the_gpu_takes_frames_of_fewer_than_2_to_the_32_pixels_of_any_shape() {
    let most = u32::MAX as usize;
    for (w, h) in [(65536, 32769), (most, 1), (1, most), (3, most / 3), (most / 4096, 4096), (1, 1)] {
        assert!(Canny::gpu_size_ok(w, h), "{w}x{h}");
        let tiles = nms_tiles(w, h).unwrap();
        assert_eq!(tiles as usize, w.div_ceil(128) * h.div_ceil(16), "{w}x{h}");
        assert!(tiles < 1 << 29);
    }
    // Taller than 65535 tile rows: the grid is one-dimensional.
    assert_eq!(nms_tiles(1, 1 << 31), Some(1 << 27));
    for (w, h) in [(65536, 65536), (most + 1, 1), (1, most + 1), (usize::MAX, 2)] {
        assert!(!Canny::gpu_size_ok(w, h), "{w}x{h}");
        assert!(Canny::checked_tiles(w, h).unwrap_err().to_string().contains("fewer than 2^32 pixels"));
    }
    assert_eq!(Canny::strong_words(0), 0);
    assert_eq!(Canny::strong_words(most), 1 << 27);
}

/// Split over any number of threads, the edges are the one thread's: random frames (dense,
/// short edges) and smooth ones whose long edges cross many bands, with and without blur.
#[test]
fn every_split_finds_the_edges_of_one_thread() {
    let mut rng = fastrand::Rng::with_seed(29);
    for (w, h) in parallel::testing::sizes(&mut rng) {
        let noise = parallel::testing::frame(&mut rng, w, h, 255);
        let rings: Vec<u8> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f64 - w as f64 / 3.0, (i / w) as f64 - h as f64 / 2.0);
                let ring = ((x * x + y * y).sqrt() / 9.0).sin();
                (128.0 + 100.0 * ring + rng.f64() * 20.0) as u8
            })
            .collect();
        let rings = Frame::new(w, h, 255, Pixels::U8(rings.into()));
        for (f, low, high) in [(&noise, 50.0, 150.0), (&rings, 20.0, 90.0), (&rings, 5.0, 200.0)] {
            for (l2, blur) in [(false, None), (true, None), (false, Some(1.2))] {
                let canny = Canny { low, high, l2, blur };
                let what = format!("{w}x{h} {canny:?}");
                parallel::testing::same_on_each_pool(&what, || canny.cpu(f).unwrap());
            }
        }
    }
}

#[test]
fn blur_weights_sum_to_one() {
    let k = gaussian_weights(1.4);
    assert_eq!(k.len(), 2 * 5 + 1);
    assert!((k.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-6);
    let flat = blur_cpu(&[77; 12], 4, 3, &k);
    assert!(flat.iter().all(|&v| v == 77));
}
