//! `deskew`'s tests: the schedule, the projection's arithmetic, drawn pages of known skew, the
//! split, the confidence, the orientation's rules and pages in each quarter turn, and the GPU
//! against the CPU.

use histopipe_frame::{Frame, Pixels};

use super::*;
use crate::parallel::testing::same_on_each_pool;

/// A drawn page of ink 20 on paper 235 ([`drawn_page_with`]): its skew is `degrees`.
pub(super) fn drawn_page(w: usize, h: usize, degrees: f64, seed: u64) -> Vec<u8> {
    drawn_page_with(w, h, degrees, seed, 20, 235)
}

fn gray(w: usize, h: usize, samples: Vec<u8>) -> Frame {
    Frame::new(w, h, 255, Pixels::U8(samples.into()))
}

fn skew_of(frame: &Frame) -> Skew {
    SkewAngle::default().cpu(frame).unwrap()
}

#[test]
fn the_schedule_scans_coarse_then_refines_to_the_precision() {
    let mut s = DeskewParams::default().schedule();
    let first = s.next(0.0).unwrap();
    assert_eq!((first.angles.len(), first.last), (121, false));
    assert_eq!((first.angles[0], first.angles[60], first.angles[120]), (-15.0, 0.0, 15.0));
    let second = s.next(2.25).unwrap();
    assert_eq!((second.angles.len(), second.last), (11, false));
    assert!((second.angles[0] - 2.0).abs() < 1e-12 && (second.angles[10] - 2.5).abs() < 1e-12);
    let third = s.next(2.3).unwrap();
    assert_eq!((third.angles.len(), third.last), (151, true));
    assert!((third.angles[0] - 0.8).abs() < 1e-12 && (third.angles[150] - 3.8).abs() < 1e-12);
    assert!(s.next(2.3).is_none());
    // At the edge of the range, angles beyond it are dropped.
    let mut s = DeskewParams { max_angle: 1.0, precision: 0.25 }.schedule();
    let only = s.next(0.0).unwrap();
    assert_eq!(only.angles, [-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0]);
    assert!(only.last && s.next(1.0).is_none());
    let mut s = DeskewParams { max_angle: 1.0, precision: 0.05 }.schedule();
    s.next(0.0);
    assert_eq!(s.next(1.0).unwrap().angles.len(), 31);
    // A fine precision: at most 75 steps each way at the last level.
    let mut s = DeskewParams { max_angle: 15.0, precision: 0.001 }.schedule();
    let sizes: Vec<usize> = std::iter::from_fn(|| s.next(0.0).map(|l| l.angles.len())).collect();
    assert_eq!(sizes, [121, 11, 11, 11, 151]);
}

#[test]
fn the_peak_centre_is_the_middle_at_half_height() {
    let angles: Vec<f64> = (0..9).map(|i| i as f64).collect();
    // Ends 10 and 0: half height 55 between 10 and 100; the run 2..=6 reaches it, centre 4.
    assert_eq!(peak_centre(&angles, &[10, 40, 60, 100, 70, 90, 55, 20, 0]), 4);
    // A dip at the top does not move the centre; two middles: the better.
    assert_eq!(peak_centre(&angles, &[0, 0, 60, 100, 99, 60, 0, 0, 0]), 3);
    // Flat: all of it, the middle.
    assert_eq!(peak_centre(&angles, &[5; 9]), 4);
    assert_eq!(peak_centre(&[3.0], &[7]), 0);
}

#[test]
fn parameters_out_of_range_are_refused_by_name() {
    for (m, p) in
        [(0.0, 0.02), (46.0, 0.02), (f64::NAN, 0.02), (15.0, 0.0), (15.0, 2.0), (15.0, f64::INFINITY)]
    {
        let e = DeskewParams { max_angle: m, precision: p }.check().unwrap_err();
        assert!(e.params().next().is_some(), "{e}");
    }
}

#[test]
fn projections_count_every_pixel_in_range() {
    for (w, h) in [(1, 1), (3, 1), (1, 3), (127, 129), (2480, 7)] {
        for a in [-45.0, -14.0, -0.02, 0.0, 0.02, 9.5, 45.0] {
            let p = Projection::new(a, w, h);
            let corners = [(0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1)];
            let bins: Vec<usize> = corners.iter().map(|&(x, y)| p.bin(x as u32, y as u32)).collect();
            assert!(bins.iter().all(|&b| b < p.bins), "{w}x{h} at {a}: {bins:?} of {}", p.bins);
            assert!(bins.contains(&0), "{w}x{h} at {a}: {bins:?}");
        }
    }
    // At 0 the bin is the row.
    let p = Projection::new(0.0, 10, 20);
    assert_eq!((p.bin(9, 0), p.bin(0, 19), p.bins), (0, 19, 20));
}

#[test]
fn the_kernel_has_the_same_fraction_bits() {
    let cu = include_str!("../../../../kernels-common/deskew.cu");
    assert!(cu.contains(&format!("constexpr u32 FRAC_BITS = {FRAC_BITS};")));
}

#[test]
fn drawn_pages_give_their_skew() {
    let (w, h) = (600, 500);
    for (k, a) in [0.0, 0.7, -0.7, 2.3, -4.1, 9.5, 14.0, -14.0, 0.33].into_iter().enumerate() {
        let skew = skew_of(&gray(w, h, drawn_page(w, h, a, k as u64)));
        assert!((skew.angle - a).abs() <= 0.05, "drawn at {a}: measured {}", skew.angle);
    }
}

/// `page` under uneven light: the left third of the paper in shadow (paper 235 falling to 80 at
/// the left edge, ink 20 likewise darker), the light's edge a ramp of `w / 10` pixels.
fn shadowed(page: &[u8], w: usize) -> Vec<u8> {
    page.iter()
        .enumerate()
        .map(|(i, &v)| {
            let x = (i % w) as f64 / w as f64;
            let light = if x < 0.3 {
                0.35
            } else if x < 0.4 {
                0.35 + 0.65 * (x - 0.3) / 0.1
            } else {
                1.0
            };
            (v as f64 * light).round() as u8
        })
        .collect()
}

/// The ink by its definition: each pixel's window summed directly.
fn ink_by_definition(frame: &Frame, rule: InkRule) -> Vec<bool> {
    let (w, h) = (frame.width, frame.height);
    let v = |x: usize, y: usize| frame.pixels.get(y * w + x);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let ((x0, x1), (y0, y1)) = (window(x, w), window(y, h));
            let sum: u32 =
                (y0..y1).flat_map(|j| (x0..x1).map(move |i| (i, j))).map(|(i, j)| v(i, j) as u32).sum();
            out.push(rule.is_ink(v(x, y) as u32, sum, ((x1 - x0) * (y1 - y0)) as u32));
        }
    }
    out
}

/// The CPU's listed ink as flags.
fn listed_ink(frame: &Frame, rule: InkRule) -> Vec<bool> {
    let mut out = vec![false; frame.width * frame.height];
    let lists = match &frame.pixels {
        Pixels::U8(v) => cpu::ink_rows(v, frame, rule),
        Pixels::U16(v) => cpu::ink_rows(v, frame, rule),
        Pixels::F32(_) => unreachable!("integer frames only"),
    };
    for list in &lists {
        for (y, x) in list.pixels() {
            out[y as usize * frame.width + x as usize] = true;
        }
    }
    out
}

#[test]
fn the_ink_is_its_window_test_at_every_pixel() {
    let mut rng = fastrand::Rng::with_seed(17);
    let mut frames =
        vec![gray(1, 1, vec![9]), gray(5, 3, vec![200, 0, 200, 0, 0, 255, 3, 4, 5, 6, 7, 8, 9, 1, 2])];
    for (w, h) in [(1, 40), (40, 1), (21, 21), (22, 23), (57, 35), (130, 47)] {
        frames.push(gray(w, h, (0..w * h).map(|_| rng.u8(..)).collect()));
        frames.push(gray(w, h, drawn_page(w, h, 3.0, w as u64)));
        let deep: Vec<u16> = (0..w * h).map(|_| rng.u16(..)).collect();
        frames.push(Frame::new(w, h, 65535, Pixels::U16(deep.into())));
    }
    frames.push(gray(130, 47, shadowed(&drawn_page(130, 47, 1.0, 2), 130)));
    for f in &frames {
        for dark in [true, false] {
            let rule = InkRule { dark, threshold: 0, margin: MARGIN_NUM * f.maxval as i64 };
            let what = format!("{}x{} of {}, dark {dark}", f.width, f.height, f.maxval);
            same_on_each_pool(&what, || listed_ink(f, rule));
            assert_eq!(listed_ink(f, rule), ink_by_definition(f, rule), "{what}");
        }
    }
}

#[test]
fn the_window_test_counts_a_margin_of_ten_levels() {
    let rule = InkRule::of_histogram(&[1, 0, 3], 8, 255).unwrap();
    assert!(rule.dark);
    // A 3 x 3 window summing 9 · 100: a sample is ink below 90, exactly.
    assert!(rule.is_ink(89, 900, 9) && !rule.is_ink(90, 900, 9));
    let light = InkRule { dark: false, ..rule };
    assert!(light.is_ink(111, 900, 9) && !light.is_ink(110, 900, 9));
    // 16-bit: the margin is 10 / 255 of maxval.
    let deep = InkRule { margin: MARGIN_NUM * 65535, ..rule };
    assert!(deep.is_ink(89 * 257, 900 * 257, 9) && !deep.is_ink(90 * 257, 900 * 257, 9));
    // A flat window is never ink; a bitmap's black pixel among white ones is.
    assert!(!rule.is_ink(7, 7 * 441, 441) && !light.is_ink(7, 7 * 441, 441));
    let bitmap = InkRule { margin: MARGIN_NUM, ..rule };
    assert!(bitmap.is_ink(0, 400, 441) && !bitmap.is_ink(0, 17, 441));
}

#[test]
fn shadowed_drawn_pages_give_their_skew() {
    let (w, h) = (600, 500);
    for (k, a) in [0.0, 0.7, -4.1, 9.5, 0.33].into_iter().enumerate() {
        let skew = skew_of(&gray(w, h, shadowed(&drawn_page(w, h, a, 40 + k as u64), w)));
        assert!((skew.angle - a).abs() <= 0.05, "drawn at {a} in shadow: measured {}", skew.angle);
    }
}

#[test]
fn light_on_dark_and_16_bit_pages_give_the_same_skew() {
    let (w, h) = (400, 300);
    let page = drawn_page(w, h, 3.1, 7);
    let dark = skew_of(&gray(w, h, page.clone())).angle;
    assert!((dark - 3.1).abs() <= 0.05, "{dark}");
    let light = skew_of(&gray(w, h, page.iter().map(|&v| 255 - v).collect())).angle;
    assert_eq!(light, dark);
    // v · 257 of 65535: every window's test is the 8-bit one times 257.
    let deep = Frame::new(w, h, 65535, Pixels::U16(page.iter().map(|&v| v as u16 * 257).collect()));
    assert_eq!(skew_of(&deep).angle, dark);
}

#[test]
fn pages_without_ink_have_no_skew() {
    for v in [0u8, 128, 255] {
        let skew = skew_of(&gray(50, 40, vec![v; 2000]));
        assert_eq!((skew.angle, skew.ink, skew.score), (0.0, 0, 0));
    }
    let one = skew_of(&gray(1, 1, vec![7]));
    assert_eq!(one.angle, 0.0);
    let out = Deskew::default().cpu(&gray(3, 1, vec![0, 255, 255])).unwrap();
    assert!(out.skew.angle.is_finite());
}

#[test]
fn the_turn_makes_the_page_upright_with_the_background() {
    let (w, h) = (300, 240);
    let page = gray(w, h, drawn_page(w, h, -2.5, 3));
    let out = Deskew::default().cpu(&page).unwrap();
    assert!((out.skew.angle + 2.5).abs() <= 0.05);
    assert_eq!(out.frame.pixels.get(0), 235, "the corners take the paper's value");
    let again = skew_of(&out.frame);
    assert!(again.angle.abs() <= 0.05, "{}", again.angle);
    let black = Deskew { fill: Some(Fill::Int(0)), ..Deskew::default() }.cpu(&page).unwrap();
    assert_eq!(black.frame.pixels.get(0), 0);
    assert!(Deskew { fill: Some(Fill::Int(256)), ..Deskew::default() }.cpu(&page).is_err());
}

#[test]
fn the_split_changes_nothing() {
    let (w, h) = (257, 190);
    let page = gray(w, h, drawn_page(w, h, 5.2, 11));
    same_on_each_pool("deskew", || {
        let out = Deskew::default().cpu(&page).unwrap();
        (out.skew.angle.to_bits(), out.skew.score, out.frame.pixels)
    });
}

#[test]
fn gpu_equals_cpu() {
    let Some(gpu) = crate::testing::gpu_or_skip() else { return };
    let mut frames = vec![
        gray(1, 1, vec![3]),
        gray(3, 1, vec![0, 200, 200]),
        gray(127, 129, drawn_page(127, 129, 1.3, 1)),
        gray(600, 500, drawn_page(600, 500, -9.5, 2)),
        gray(2000, 60, drawn_page(2000, 60, 0.4, 3)),
        gray(600, 500, shadowed(&drawn_page(600, 500, 2.2, 6), 600)),
        gray(40, 30, vec![255; 1200]),
        gray(5, 3, vec![200, 0, 200, 0, 0, 255, 3, 4, 5, 6, 7, 8, 9, 1, 2]),
    ];
    let page = drawn_page(320, 256, 4.4, 4);
    frames.push(Frame::new(320, 256, 65535, Pixels::U16(page.iter().map(|&v| v as u16 * 257).collect())));
    let mut rng = fastrand::Rng::with_seed(5);
    frames.push(gray(131, 77, (0..131 * 77).map(|_| rng.u8(..)).collect()));
    for f in &frames {
        let what = format!("{}x{}", f.width, f.height);
        let (c, g) = (Deskew::default().cpu(f).unwrap(), Deskew::default().gpu(&gpu, f).unwrap());
        assert_eq!(c.skew.angle.to_bits(), g.skew.angle.to_bits(), "{what}");
        assert_eq!(c.skew, g.skew, "{what}");
        assert_eq!(c.frame, g.frame, "{what}");
        let params = DeskewParams { max_angle: 45.0, precision: 0.001 };
        let (c, g) = (SkewAngle { params }.cpu(f).unwrap(), SkewAngle { params }.gpu(&gpu, f).unwrap());
        assert_eq!(c, g, "{what} at 45 degrees, 0.001");
    }
}

#[test]
fn the_confidence_is_the_best_score_over_the_median() {
    assert_eq!(confidence(&[]), 0.0);
    assert_eq!(confidence(&[0, 0, 0]), 0.0);
    assert_eq!(confidence(&[5; 7]), 0.0);
    // Sorted 1, 2, 4, 8: the lower median 2, (8 - 2) / 8.
    assert_eq!(confidence(&[8, 1, 4, 2]), 0.75);
    assert_eq!(confidence(&[10, 40, 30]), 0.25);
    // A drawn page of text-like lines stands far above; a page of noise and a blank one do not.
    let (w, h) = (400, 300);
    let page = skew_of(&gray(w, h, drawn_page(w, h, 2.0, 8)));
    assert!(page.confidence > 0.5, "{}", page.confidence);
    let mut rng = fastrand::Rng::with_seed(3);
    let noise = skew_of(&gray(w, h, (0..w * h).map(|_| rng.u8(100..160)).collect()));
    assert!(noise.confidence < 0.1, "{}", noise.confidence);
    assert_eq!(skew_of(&gray(w, h, vec![200; w * h])).confidence, 0.0);
}

#[test]
fn above_and_below_the_cores_swap_when_the_profile_is_reversed() {
    // Two lines: cores of 4 bins at 40, their edges' bins 9 (left out), a little ink above
    // each (ascenders), less below.
    let line = [0, 5, 5, 9, 40, 40, 40, 40, 9, 2, 0, 0];
    let profile: Vec<u32> = line.iter().chain(&line).copied().collect();
    let (before, after) = above_below(&profile);
    assert_eq!((before, after), (20, 4));
    let reversed: Vec<u32> = profile.iter().rev().copied().collect();
    assert_eq!(above_below(&reversed), (after, before));
    // One core: its own length either side, less the edge's bin.
    assert_eq!(above_below(&[1, 1, 1, 9, 9, 2, 2, 2]), (1, 2));
    // A core's edge bin on its one side only is not counted there: the ink is 1 bin above.
    assert_eq!(above_below(&[0, 3, 30, 30, 30, 30, 0, 0, 0, 0, 0, 0]), (0, 0));
    assert_eq!(above_below(&[]), (0, 0));
    assert_eq!(above_below(&[0, 0]), (0, 0));
    let mut rng = fastrand::Rng::with_seed(9);
    for _ in 0..50 {
        let p: Vec<u32> = (0..rng.usize(1..60)).map(|_| rng.u32(0..20)).collect();
        let (b, a) = above_below(&p);
        let r: Vec<u32> = p.iter().rev().copied().collect();
        assert_eq!(above_below(&r), (a, b), "{p:?}");
    }
}

#[test]
fn peakiness_is_one_for_even_ink_and_more_for_lines() {
    assert_eq!(peakiness(&[]), 0.0);
    assert_eq!(peakiness(&[7; 50]), 1.0);
    // Five lines of 5 bins every 20: Σc² 2500, N 250, the extent bins 0 to 84.
    let lines: Vec<u32> = (0..100).map(|b| if b % 20 < 5 { 10 } else { 0 }).collect();
    assert_eq!(peakiness(&lines), 2500.0 * 85.0 / 62500.0);
}

/// The page turned by `quarters` quarter turns counter-clockwise.
fn quarter_turned(page: &Frame, quarters: u8) -> Frame {
    let turned = Orientation { quarters: (4 - quarters) % 4, peakiness: [0.0; 2], before: 0, after: 0 };
    turned.upright(page.width, page.height, page.maxval).cpu(page).unwrap()
}

#[test]
fn lines_down_are_found_and_the_turn_upright_is_exact() {
    let (w, h) = (420, 300);
    let page = gray(w, h, drawn_page(w, h, 1.5, 12));
    let params = DeskewParams::default();
    for q in 0..4u8 {
        let turned = quarter_turned(&page, q);
        let found = orientation(&params, &turned).unwrap();
        // Blocks have no ascenders: which way up is a guess, across or down is not.
        assert_eq!(found.quarters % 2, q % 2, "turned {q}: {found:?}");
        let upright = found.upright(turned.width, turned.height, 255).cpu(&turned).unwrap();
        assert_eq!((upright.width, upright.height), (w, h));
        let back = if (found.quarters + 4 - q) % 4 == 0 { page.clone() } else { quarter_turned(&page, 2) };
        assert_eq!(upright.pixels, back.pixels, "turned {q}");
    }
    let blank = orientation(&params, &gray(30, 20, vec![9; 600])).unwrap();
    assert_eq!(blank.quarters, 0);
}

/// A `w x h` page of lines of blocks 10 pixels high (the x-height) with stems on top of one block
/// in three (ascenders, 6 pixels) and under one in ten (descenders, 6 pixels), ink 20 on 235.
fn page_with_ascenders(w: usize, h: usize, seed: u64) -> Frame {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut page = vec![235u8; w * h];
    let mut fill = |x0: usize, x1: usize, y0: usize, y1: usize| {
        for y in y0..y1.min(h) {
            for x in x0..x1.min(w) {
                page[y * w + x] = 20;
            }
        }
    };
    let mut top = 20;
    while top + 30 < h {
        let mut x = 20 + rng.usize(0..10);
        while x + 40 < w {
            let len = rng.usize(4..14);
            fill(x, x + len, top + 6, top + 16);
            match rng.usize(0..30) {
                0..=9 => fill(x, x + 2, top, top + 6),
                10..=12 => fill(x + len - 2, x + len, top + 16, top + 22),
                _ => {}
            }
            x += len + rng.usize(2..6);
        }
        top += 34;
    }
    gray(w, h, page)
}

#[test]
fn ascenders_tell_the_top_in_every_quarter_turn() {
    let params = DeskewParams::default();
    for seed in 0..3 {
        let page = page_with_ascenders(360 + 40 * seed as usize, 300, seed);
        for q in 0..4u8 {
            let found = orientation(&params, &quarter_turned(&page, q)).unwrap();
            assert_eq!(found.quarters, q, "seed {seed}, turned {q}: {found:?}");
            assert!(found.before > 2 * found.after || found.after > 2 * found.before, "{found:?}");
        }
    }
}
