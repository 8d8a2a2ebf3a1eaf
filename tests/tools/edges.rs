use histopipe_frame::{Frame, Pixels};
use histopipe_ops::edges::Canny;
use histopipe_ops::Op;

use crate::common::*;
use crate::opencv::{self, CannyCase};

/// Threshold pairs covering L1 and L2, fractional, swapped, zero and saturating thresholds.
const SETTINGS: &[(f64, f64, bool)] = &[
    (50.0, 150.0, false),
    (100.0, 200.0, true),
    (20.0, 40.0, false),
    (30.7, 90.2, true),
    (200.0, 100.0, false),
    (0.0, 0.0, false),
    (0.0, 10.0, true),
    (1000.0, 3000.0, false),
    (500.0, 40000.0, true),
];

fn samples(f: &Frame) -> Vec<u8> {
    match &f.pixels {
        Pixels::U8(v) => v.to_vec(),
        _ => panic!("edges writes 8-bit frames"),
    }
}

/// A frame with real structure: random blocks, smoothed by a box filter, plus a little noise.
fn structured_frame(rng: &mut fastrand::Rng, w: usize, h: usize) -> Frame {
    let cell = rng.usize(2..9);
    let levels: Vec<u8> = (0..(w / cell + 1) * (h / cell + 1)).map(|_| rng.u8(..)).collect();
    let px = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            levels[(y / cell) * (w / cell + 1) + x / cell].saturating_add(rng.u8(0..12))
        })
        .collect();
    Frame::new(w, h, 255, Pixels::U8(px))
}

fn random_frames(rng: &mut fastrand::Rng) -> Vec<Frame> {
    let mut sizes = vec![(1, 1), (1, 7), (9, 1), (2, 2), (3, 40), (64, 3)];
    sizes.extend((0..14).map(|_| (rng.usize(1..90), rng.usize(1..90))));
    sizes
        .into_iter()
        .enumerate()
        .map(
            |(i, (w, h))| if i % 2 == 0 { random_frame(rng, w, h, 255) } else { structured_frame(rng, w, h) },
        )
        .collect()
}

/// The binary equals cv2.Canny on every fixture, for every setting, borders included.
#[test]
fn binary_matches_opencv_on_fixtures() {
    let frames: Vec<Frame> = PGM_FIXTURES.iter().map(|n| fixture_frame(n)).collect();
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (name, frame) in PGM_FIXTURES.iter().zip(&frames) {
        for &(low, high, l2) in &SETTINGS[..4] {
            let mut args = vec!["--low".to_string(), low.to_string(), "--high".to_string(), high.to_string()];
            if l2 {
                args.push("--l2".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = read_frames(&run_ok("edges", "cpu", &args, &fixture_bytes(name))).remove(0);
            assert_eq!((out.width, out.height, out.maxval), (frame.width, frame.height, 255));
            ours.push((name, low, high, l2, samples(&out)));
            cases.push(CannyCase { frame, low, high, l2 });
        }
    }
    let mut edges = 0;
    for ((name, low, high, l2, got), want) in ours.into_iter().zip(opencv::canny(&cases)) {
        let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 0, "{name} --low {low} --high {high} l2 {l2}: {diff} pixels differ from cv2.Canny");
        edges += got.iter().filter(|&&v| v == 255).count();
    }
    assert!(edges > 100_000, "only {edges} edge pixels in all: the comparison would prove little");
}

/// The CPU operation equals cv2.Canny on random frames of every shape, thin ones included.
#[test]
fn matches_opencv_on_random_frames() {
    let mut rng = rng();
    let frames = random_frames(&mut rng);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        for &(low, high, l2) in SETTINGS.iter().skip(i % 3).step_by(3) {
            let canny = Canny { low, high, l2, blur: None };
            ours.push((frame.width, frame.height, canny, samples(&canny.cpu(frame).unwrap())));
            cases.push(CannyCase { frame, low, high, l2 });
        }
    }
    for ((w, h, canny, got), want) in ours.into_iter().zip(opencv::canny(&cases)) {
        assert!(got == want, "{w}x{h} {canny:?}: differs from cv2.Canny");
    }
}

#[test]
fn blur_smooths_before_detecting() {
    let input = fixture_bytes("camera.pgm");
    let plain = samples(&read_frames(&run_ok("edges", "cpu", &[], &input))[0]);
    let blurred = samples(&read_frames(&run_ok("edges", "cpu", &["--blur", "2"], &input))[0]);
    let count = |v: &[u8]| v.iter().filter(|&&p| p == 255).count();
    assert!(count(&blurred) > 0 && count(&blurred) < count(&plain), "blur should remove texture edges");
    // A stream of frames gives one edge map per frame.
    let two = stream(&[fixture_frame("page.pgm"), fixture_frame("camera.pgm")]);
    assert_eq!(read_frames(&run_ok("edges", "cpu", &[], &two)).len(), 2);
}

#[test]
fn errors() {
    let dem = fixture_bytes("dem16.pgm");
    assert!(run_err("edges", &[], &dem, 2).contains("frame 1: 16-bit input (maxval 1076) is not supported"));
    let cam = fixture_bytes("camera.pgm");
    assert!(run_err("edges", &["--low", "-3"], &cam, 2).contains("--low -3 must be a non-negative number"));
    assert!(run_err("edges", &["--blur", "0"], &cam, 2).contains("--blur 0 must be in"));
    assert!(run_err("edges", &["--high", "x"], &cam, 2).contains("--high: bad value 'x'"));
}

/// CPU and GPU give the same edges on random frames, every setting, with and without blur.
#[test]
fn gpu_matches_cpu_on_random_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = random_frames(&mut rng);
    frames.push(structured_frame(&mut rng, 1500, 1100));
    for (i, frame) in frames.iter().enumerate() {
        for &(low, high, l2) in SETTINGS {
            let blur = (i % 4 == 1).then(|| rng.f64() * 3.0 + 0.3);
            let canny = Canny { low, high, l2, blur };
            let cpu = canny.cpu(frame).unwrap();
            assert_eq!(cpu, canny.gpu(&gpu, frame).unwrap(), "{}x{} {canny:?}", frame.width, frame.height);
        }
    }
}

/// A long weak spiral must be followed across many GPU tiles: components joined across tile borders.
#[test]
fn gpu_hysteresis_follows_long_weak_chains() {
    let Some(gpu) = gpu() else { return };
    let (w, h) = (300, 300);
    let mut px = vec![0u8; w * h];
    // A comb of level 60 (its outline is weak for high = 400) whose outline is one curve of
    // ~28000 pixels going back and forth across the tiles, started by one bright corner.
    for y in 4..h - 4 {
        for x in 4..w - 4 {
            let tooth = (y - 4) % 6 < 3;
            if tooth || x < 7 {
                px[y * w + x] = if y < 7 && x < 10 { 255 } else { 60 };
            }
        }
    }
    let frame = Frame::new(w, h, 255, Pixels::U8(px.into()));
    let canny = Canny { low: 100.0, high: 400.0, l2: false, blur: None };
    let cpu = canny.cpu(&frame).unwrap();
    assert!(samples(&cpu).iter().filter(|&&v| v == 255).count() > 20000);
    assert_eq!(cpu, canny.gpu(&gpu, &frame).unwrap());
}

/// Frames of more tile rows than a grid dimension holds (65535 rows of 16-pixel tiles), a pixel
/// or three wide: the GPU's tiles are numbered along one grid dimension.
#[test]
fn gpu_matches_cpu_on_frames_taller_than_65535_tile_rows() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for (w, h) in [(1, 65535 * 16 + 1), (3, 1 << 20 | 77)] {
        let frame = structured_frame(&mut rng, w, h);
        for blur in [None, Some(1.0)] {
            let canny = Canny { low: 20.0, high: 60.0, l2: false, blur };
            let cpu = canny.cpu(&frame).unwrap();
            assert!(samples(&cpu).contains(&255), "{w}x{h}: no edges to compare");
            assert!(cpu == canny.gpu(&gpu, &frame).unwrap(), "{w}x{h} {canny:?}");
        }
    }
}

/// The binaries agree on every fixture, and on a stream through one process.
#[test]
fn gpu_backend_matches_cpu_backend_on_fixtures() {
    let Some(_gpu) = gpu() else { return };
    for name in PGM_FIXTURES {
        let input = fixture_bytes(name);
        for args in [&["--low", "30", "--high", "90"][..], &["--l2", "--blur", "1.5"]] {
            assert!(
                run_ok("edges", "cpu", args, &input) == run_ok("edges", "gpu", args, &input),
                "{name} {args:?}"
            );
        }
    }
    let input =
        stream(&[fixture_frame("camera.pgm"), fixture_frame("page.pgm"), fixture_frame("camera.pgm")]);
    assert_eq!(run_ok("edges", "gpu", &[], &input), run_ok("edges", "cpu", &[], &input));
}

/// GPU = CPU where hysteresis is hardest for the GPU's tiles: weak paths that snake through many
/// tiles (a spiral, a vertical comb), all-weak frames with one strong pixel, checkerboards, noise,
/// frames one pixel wide or high and frames that are not multiples of the 128 x 16 tile.
#[test]
fn gpu_hysteresis_matches_cpu_on_adversarial_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut cases: Vec<(String, Frame, Canny)> = Vec::new();
    let weak_path = Canny { low: 100.0, high: 400.0, l2: false, blur: None };
    // Paths of level 60 on 0 (their outlines are weak), lit by one pixel of 255 (strong).
    let (w, h) = (1021, 707);
    let mut spiral = vec![0u8; w * h];
    let (mut x, mut y, mut len, mut dir) = (w as isize / 2, h as isize / 2, 1, 0);
    'outer: loop {
        for _ in 0..2 {
            let (dx, dy) = [(1, 0), (0, 1), (-1, 0), (0, -1)][dir % 4];
            for _ in 0..4 * len {
                (x, y) = (x + dx, y + dy);
                if x < 2 || y < 2 || x >= w as isize - 2 || y >= h as isize - 2 {
                    break 'outer;
                }
                spiral[y as usize * w + x as usize] = 60;
            }
            dir += 1;
        }
        len += 1;
    }
    spiral[(h / 2) * w + w / 2] = 255;
    cases.push(("spiral".into(), Frame::new(w, h, 255, Pixels::U8(spiral.into())), weak_path));
    // A vertical comb: one path down and up every fourth column, across all the tiles of a column.
    let mut comb = vec![0u8; w * h];
    for x in (4..w - 4).step_by(4) {
        for y in 4..h - 4 {
            comb[y * w + x] = 60;
        }
        let turn = if (x / 4) % 2 == 0 { h - 5 } else { 4 };
        for t in x..(x + 4).min(w - 4) {
            comb[turn * w + t] = 60;
        }
    }
    // Lit in the first column of the comb (a pixel of the path), far from its last.
    comb[(h / 2) * w + 4] = 255;
    cases.push(("vertical comb".into(), Frame::new(w, h, 255, Pixels::U8(comb.into())), weak_path));
    // Weak lines along the tiles' borders (rows 16 k - 1, columns 128 k - 1) and diagonals through
    // their corners, lit by one pixel: every join is across a tile border.
    let mut grid = vec![0u8; w * h];
    for y in 0..h {
        for x in 0..w {
            if y % 16 == 15 || x % 128 == 127 || (x + 2 * y) % 97 == 0 || (3 * x).abs_diff(y) % 131 == 0 {
                grid[y * w + x] = 60;
            }
        }
    }
    grid[(h / 2) * w + w / 3] = 255;
    cases.push(("tile-border grid".into(), Frame::new(w, h, 255, Pixels::U8(grid.into())), weak_path));
    // Noise whose every edge is weak, with one strong pixel; at the frame's middle and corner.
    for at in [(h / 2) * w + w / 2, w * h - 1] {
        let mut px: Vec<u8> = (0..w * h).map(|_| rng.u8(0..40)).collect();
        px[at] = 255;
        let canny = Canny { low: 10.0, high: 500.0, l2: false, blur: None };
        cases.push((format!("weak noise lit at {at}"), Frame::new(w, h, 255, Pixels::U8(px.into())), canny));
    }
    // Checkerboards of 1- and 3-pixel squares, and one of 0 / 60 lit by one pixel.
    for (cell, hi, lit) in [(1, 255, false), (3, 255, false), (1, 60, true), (2, 60, true)] {
        let mut px: Vec<u8> =
            (0..w * h).map(|i| if (i % w / cell + i / w / cell) % 2 == 0 { hi } else { 0 }).collect();
        if lit {
            px[(h / 3) * w + w / 3] = 255;
        }
        for canny in [weak_path, Canny { low: 50.0, high: 150.0, l2: true, blur: None }] {
            let f = Frame::new(w, h, 255, Pixels::U8(px.clone().into()));
            cases.push((format!("checkerboard {cell} {hi} {lit}"), f, canny));
        }
    }
    // Dense noise, and frames thin or not multiples of the tile.
    for (w, h) in
        [(1031, 517), (1, 5000), (5000, 1), (2, 3001), (3001, 2), (129, 17), (127, 15), (257, 33), (128, 16)]
    {
        for (low, high, l2) in
            [(50.0, 150.0, false), (20.0, 40.0, false), (5.0, 2000.0, false), (10.0, 300.0, true)]
        {
            let canny = Canny { low, high, l2, blur: None };
            cases.push((format!("noise {w}x{h}"), random_frame(&mut rng, w, h, 255), canny));
            cases.push((format!("structured {w}x{h}"), structured_frame(&mut rng, w, h), canny));
        }
    }
    for (what, frame, canny) in &cases {
        let cpu = canny.cpu(frame).unwrap();
        let gpu_out = canny.gpu(&gpu, frame).unwrap();
        let diff = samples(&cpu).iter().zip(samples(&gpu_out).iter()).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 0, "{what} {}x{} {canny:?}: {diff} pixels differ", frame.width, frame.height);
    }
    // The spiral's path is followed: most of its pixels are edges. (The comb's outline breaks at
    // its first turn under these thresholds, OpenCV's too: its weak columns cross 44 tiles each.)
    for (what, frame, canny) in &cases[..1] {
        let on = samples(&canny.cpu(frame).unwrap()).iter().filter(|&&v| v == 255).count();
        assert!(on > 20_000, "{what}: only {on} edge pixels");
    }
}
