use histopipe_frame::{Channels, Depth, Frame, Pixels};
use histopipe_ops::pad::{PadParams, PadSize};
use histopipe_ops::Op;

use crate::common::*;

fn check_placement(out: &Frame, input: &Frame, left: usize, top: usize, fill: u16) {
    for y in 0..out.height {
        for x in 0..out.width {
            let inside = x >= left && y >= top && x - left < input.width && y - top < input.height;
            let expected = if inside { input.pixels.get((y - top) * input.width + x - left) } else { fill };
            assert_eq!(out.pixels.get(y * out.width + x), expected, "at ({x}, {y})");
        }
    }
}

#[test]
fn camera_padded_to_its_diagonal() {
    let camera = fixture_frame("camera.pgm");
    let out = read_frames(&run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"))).remove(0);
    // ceil(sqrt(512^2 + 512^2)) = ceil(724.08) = 725; offset floor(213 / 2) = 106.
    assert_eq!((out.width, out.height), (725, 725));
    check_placement(&out, &camera, 106, 106, 0);
    let g = out.geometry.unwrap();
    assert_eq!(g.to_original.apply(106.0, 106.0), (0.0, 0.0));
    assert_eq!((g.original_width, g.original_height), (512, 512));
    assert!(g.is_original(106.0, 617.0) && !g.is_original(105.0, 300.0) && !g.is_original(300.0, 618.0));
}

#[test]
fn sizes_borders_and_fill_on_16_bit() {
    let dem = fixture_frame("dem16.pgm"); // 403x344, maxval 1076
    let bytes = fixture_bytes("dem16.pgm");
    let out = read_frames(&run_ok("pad", "cpu", &["--to", "500x400", "--fill", "1076"], &bytes)).remove(0);
    assert_eq!((out.width, out.height, out.maxval), (500, 400, 1076));
    check_placement(&out, &dem, 48, 28, 1076);
    let out = read_frames(&run_ok("pad", "cpu", &["--border", "3", "--left", "1"], &bytes)).remove(0);
    assert_eq!((out.width, out.height), (403 + 4, 344 + 6));
    check_placement(&out, &dem, 1, 3, 0);
    let out = read_frames(&run_ok("pad", "cpu", &["--bottom", "2"], &bytes)).remove(0);
    check_placement(&out, &dem, 0, 0, 0);
    assert_eq!(out.height, 346);
}

#[test]
fn pad_composes_its_geometry() {
    let once = run_ok("pad", "cpu", &["--border", "5"], &fixture_bytes("coins.pgm"));
    let twice = read_frames(&run_ok("pad", "cpu", &["--left", "2", "--top", "7"], &once)).remove(0);
    let g = twice.geometry.unwrap();
    assert_eq!(g.to_original.apply(7.0, 12.0), (0.0, 0.0));
    assert_eq!((g.original_width, g.original_height), (384, 303));
}

#[test]
fn option_errors() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("pad", &["--fill", "256"], &camera, 2)
        .contains("frame 1: --fill 256 is over the frame's maxval 255"));
    assert!(run_err("pad", &["--to", "100x600"], &camera, 2).contains("smaller than the 512x512 frame"));
    assert!(run_err("pad", &["--to", "600x600", "--border", "1"], &camera, 2).contains("cannot be combined"));
    assert!(run_err("pad", &["--max-pixels", "300000"], &camera, 2).contains("the output would be 725x725"));
}

/// CPU and GPU give the same frames, on random sizes (thin ones included), depths and layouts.
#[test]
fn gpu_matches_cpu_on_random_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut sizes = vec![(1, 1), (1, 257), (263, 1), (4097, 3), (31, 17)];
    sizes.extend((0..12).map(|_| (rng.usize(1..700), rng.usize(1..700))));
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let maxval = if i % 2 == 0 { 255 } else { rng.u16(256..=65535) };
        let frame = random_frame(&mut rng, w, h, maxval);
        let size = match i % 3 {
            0 => PadSize::Diagonal,
            1 => PadSize::To { width: w + rng.usize(0..40), height: h + rng.usize(0..40) },
            _ => PadSize::Border {
                left: rng.usize(0..9),
                top: rng.usize(0..9),
                right: rng.usize(0..9),
                bottom: rng.usize(0..9),
            },
        };
        let pad = PadParams { size, fill: rng.u16(0..=maxval).into() }.for_frame(w, h, maxval).unwrap();
        let cpu = pad.cpu(&frame).unwrap();
        let gpu_out = pad.gpu(&gpu, &frame).unwrap();
        assert_eq!(cpu, gpu_out, "{w}x{h} maxval {maxval} {pad:?}");
    }
}

/// The binaries agree too, on every real fixture and a 16-bit one.
#[test]
fn gpu_backend_matches_cpu_backend_on_fixtures() {
    let Some(_gpu) = gpu() else { return };
    for name in PGM_FIXTURES.iter().chain(&["dem16.pgm"]) {
        let input = fixture_bytes(name);
        let cpu = run_ok("pad", "cpu", &["--fill", "7"], &input);
        let gpu = run_ok("pad", "gpu", &["--fill", "7"], &input);
        assert!(cpu == gpu, "{name}: GPU output differs");
    }
    // A stream of several frames through one process reuses the GPU buffers.
    let frames = [fixture_frame("camera.pgm"), fixture_frame("page.pgm"), fixture_frame("camera.pgm")];
    let input = stream(&frames);
    assert_eq!(run_ok("pad", "gpu", &[], &input), run_ok("pad", "cpu", &[], &input));
}

/// The first GPU run compiles and caches its kernels; an unwritable cache is skipped silently.
#[test]
fn gpu_kernel_cache_is_written_and_an_unwritable_one_is_skipped() {
    let Some(_gpu) = gpu() else { return };
    let input = fixture_bytes("coins.pgm");
    let dir = std::env::temp_dir().join(format!("histopipe-cache-{}", std::process::id()));
    let run = |cache: &std::path::Path| {
        let out = tool("pad")
            .args(["--backend", "gpu"])
            .env("XDG_CACHE_HOME", cache)
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let first = run(&dir);
    let cached: Vec<_> = std::fs::read_dir(dir.join("histopipe/kernels")).unwrap().collect();
    assert_eq!(cached.len(), 1, "one module compiled and cached");
    assert_eq!(run(&dir), first, "the cached kernel gives the same output");
    assert_eq!(run(std::path::Path::new("/proc/no-such-dir")), first);
    let _ = std::fs::remove_dir_all(dir);
}

/// A colour frame stays colour: `-o x.ppm` of a PNG is RGB, each channel padded as that channel
/// alone would be with its own fill, and the whole is OpenCV's `copyMakeBorder` (constant border,
/// the fill as a BGR value).
#[test]
fn colour_pads_every_channel_with_its_fill() {
    let png = fixture_bytes("astronaut.png");
    let astronaut = read_frames(&png).remove(0);
    assert_eq!(astronaut.channels, Channels::Rgb);
    let dir = temp_dir("pad-colour");
    let out_path = dir.join("x.ppm");
    let input = dir.join("astronaut.png");
    std::fs::write(&input, &png).unwrap();
    let args = ["--left", "3", "--top", "1", "--right", "4", "--bottom", "2", "--fill", "1,2,3"];
    let mut all = args.to_vec();
    all.extend(["-o", out_path.to_str().unwrap(), input.to_str().unwrap()]);
    run_ok("pad", "cpu", &all, &[]);
    let out = read_frames(&std::fs::read(&out_path).unwrap()).remove(0);
    assert_eq!(out.channels, Channels::Rgb, "-o x.ppm keeps the colour");
    assert_eq!((out.width, out.height), (astronaut.width + 7, astronaut.height + 3));
    let size = PadSize::Border { left: 3, top: 1, right: 4, bottom: 2 };
    for c in 0..3 {
        let plane = astronaut.plane(c);
        let pad = PadParams { size, fill: (c as u16 + 1).into() }
            .for_frame(plane.width, plane.height, 255)
            .unwrap();
        assert_eq!(out.plane(c).pixels, pad.cpu(&plane).unwrap().pixels, "channel {c}");
    }
    let raw: Vec<u8> = (0..out.pixels.len()).map(|i| out.pixels.get(i) as u8).collect();
    let cv = opencv(
        "a = cv2.imread(sys.argv[1], cv2.IMREAD_COLOR)\n\
         b = cv2.copyMakeBorder(a, 1, 2, 3, 4, cv2.BORDER_CONSTANT, value=(3, 2, 1))\n\
         sys.stdout.buffer.write(cv2.cvtColor(b, cv2.COLOR_BGR2RGB).tobytes())",
        &[&png],
    );
    assert!(raw == cv, "not cv2.copyMakeBorder's output");
    // One value fills every channel, alpha included.
    let white = read_frames(&run_ok("pad", "cpu", &["--border", "1", "--fill", "255"], &png)).remove(0);
    assert!((0..3).all(|c| white.pixels.get(c) == 255));
}

#[test]
fn a_fill_per_channel_must_match_the_channels() {
    let png = fixture_bytes("astronaut.png");
    let e = run_err("pad", &["--fill", "1,2"], &png, 2);
    assert!(e.contains("frame 1: --fill 1,2 gives 2 values for a frame of 3 channels"), "{e}");
    let e = run_err("pad", &["--fill", "1,2,3"], &fixture_bytes("camera.pgm"), 2);
    assert!(e.contains("--fill 1,2,3 gives 3 values for a frame of 1 channel:"), "{e}");
    let e = run_err("pad", &["--fill", "0.5"], &fixture_bytes("camera.pgm"), 2);
    assert!(e.contains("--fill 0.5 is not a sample of this integer frame"), "{e}");
    assert!(run_err("pad", &["--fill", "1e40"], &png, 2).contains("--fill: bad value '1e40'"));
}

/// Float frames stay float and are copied bit for bit (NaN, infinities, -0); the fill is any
/// float, NaN too.
#[test]
fn float_frames_are_copied_with_any_fill() {
    let input = [1.5f32, f32::NAN, -0.0, f32::INFINITY, 0.25, -7.0];
    let tiff = float_tiff(&input, 3, 2);
    for (fill, expected) in [("nan", f32::NAN), ("0.25", 0.25), ("-inf", f32::NEG_INFINITY), ("3", 3.0)] {
        let out = run_to_tiff("pad", "cpu", &["--border", "1", "--fill", fill], &tiff);
        assert_eq!((out.width, out.height, out.depth()), (5, 4, Depth::F32));
        let Pixels::F32(v) = &out.pixels else { panic!("float in, float out") };
        for y in 0..4 {
            for x in 0..5 {
                let inside = (1..4).contains(&x) && (1..3).contains(&y);
                let want = if inside { input[(y - 1) * 3 + x - 1] } else { expected };
                assert_eq!(v[y * 5 + x].to_bits(), want.to_bits(), "--fill {fill} at ({x}, {y})");
            }
        }
    }
}

/// CPU and GPU give the same bits on colour and float frames.
#[test]
fn gpu_matches_cpu_on_colour_and_float() {
    let Some(_gpu) = gpu() else { return };
    let png = fixture_bytes("astronaut.png");
    for args in [&[][..], &["--border", "5", "--fill", "9,8,7"], &["--to", "601x577", "--fill", "255"]] {
        assert!(run_ok("pad", "cpu", args, &png) == run_ok("pad", "gpu", args, &png), "{args:?}");
    }
    let mut rng = rng();
    let mut values: Vec<f32> = (0..97 * 61).map(|_| rng.f32() * 4.0 - 2.0).collect();
    values[5] = f32::NAN;
    values[77] = f32::NEG_INFINITY;
    values[300] = -0.0;
    let tiff = float_tiff(&values, 97, 61);
    for args in [&[][..], &["--border", "3", "--fill", "nan"], &["--to", "131x70", "--fill", "-0.5"]] {
        let (cpu, gpu) = (run_to_tiff("pad", "cpu", args, &tiff), run_to_tiff("pad", "gpu", args, &tiff));
        assert!(same_bits(&cpu, &gpu), "float {args:?}: GPU output differs");
    }
}
