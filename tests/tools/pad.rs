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

/// `--mode`'s words and OpenCV's border types of the same meaning.
const MODES: [(&str, &str); 5] = [
    ("constant", "BORDER_CONSTANT"),
    ("replicate", "BORDER_REPLICATE"),
    ("reflect", "BORDER_REFLECT"),
    ("reflect101", "BORDER_REFLECT_101"),
    ("wrap", "BORDER_WRAP"),
];

/// A frame's samples as little-endian bytes (floats as their bits), as NumPy's `tobytes()`.
fn raw(frame: &Frame) -> Vec<u8> {
    match &frame.pixels {
        Pixels::U8(v) => v.to_vec(),
        Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
        Pixels::F32(v) => v.iter().flat_map(|s| s.to_bits().to_le_bytes()).collect(),
    }
}

/// `cv2.copyMakeBorder` of `frame`'s samples with each border of `borders` ([top, bottom, left,
/// right]) in each mode of [`MODES`], in that order, the outputs' bytes one after another.
fn opencv_borders(frame: &Frame, borders: &[[usize; 4]]) -> Vec<Vec<u8>> {
    let dtype = match frame.pixels {
        Pixels::U8(_) => "u1",
        Pixels::U16(_) => "<u2",
        Pixels::F32(_) => "<f4",
    };
    let (w, h, c) = (frame.width, frame.height, frame.channels.count());
    let cases: Vec<String> = borders
        .iter()
        .flat_map(|[t, b, l, r]| MODES.iter().map(move |(_, cv)| format!("({t}, {b}, {l}, {r}, cv2.{cv})")))
        .collect();
    let out = opencv(
        &format!(
            "a = np.fromfile(sys.argv[1], '{dtype}').reshape({h}, {w}, {c})\n\
             if {c} == 1: a = a[:, :, 0]\n\
             for t, b, l, r, mode in [{}]:\n    \
                 o = cv2.copyMakeBorder(a, t, b, l, r, mode)\n    \
                 sys.stdout.buffer.write(len(o.tobytes()).to_bytes(8, 'little') + o.tobytes())",
            cases.join(", ")
        ),
        &[&raw(frame)],
    );
    let mut outputs = Vec::new();
    let mut rest = &out[..];
    while !rest.is_empty() {
        let n = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
        outputs.push(rest[8..8 + n].to_vec());
        rest = &rest[8 + n..];
    }
    assert_eq!(outputs.len(), cases.len());
    outputs
}

/// `pad --mode M` of `frame` (as `input`) with each border, on each backend (the GPU's where
/// there is one), is `cv2.copyMakeBorder` with the border type M, byte for byte (float frames bit
/// for bit): the sides given one by one, and `--border N` where all four are equal.
fn assert_modes_are_opencvs(name: &str, frame: &Frame, input: &[u8], borders: &[[usize; 4]]) {
    let expected = opencv_borders(frame, borders);
    let float = frame.depth() == Depth::F32;
    // The lease is held while the GPU binaries run (a test with the GPU alone waits for it).
    let lease = gpu();
    let backends: &[&str] = if lease.is_some() { &["cpu", "gpu"] } else { &["cpu"] };
    let cases = borders.iter().flat_map(|b| MODES.iter().map(move |m| (b, m)));
    for (([t, b, l, r], (mode, cv)), want) in cases.zip(&expected) {
        let sides = [t, b, l, r].map(|n| n.to_string());
        let mut args = vec!["--mode", mode, "--top", &sides[0], "--bottom", &sides[1]];
        args.extend(["--left", &sides[2], "--right", &sides[3]]);
        if t == b && b == l && l == r {
            args = vec!["--mode", mode, "--border", &sides[0]];
        }
        for backend in backends {
            let out = if float {
                run_to_tiff("pad", backend, &args, input)
            } else {
                read_frames(&run_ok("pad", backend, &args, input)).remove(0)
            };
            assert_eq!(
                (out.width, out.height),
                (frame.width + l + r, frame.height + t + b),
                "{name} {args:?}"
            );
            assert_eq!(out.channels, frame.channels, "{name} {args:?}");
            assert!(raw(&out) == *want, "{name} {args:?} --backend {backend}: not cv2.copyMakeBorder's {cv}");
        }
    }
}

/// Every mode is OpenCV's border type on the fixtures: 8-bit, 16-bit and colour, borders wider
/// than the frame (OpenCV's reflections and wraps repeat) among them.
#[test]
fn modes_are_copy_make_border_on_fixtures() {
    let borders = [[3, 1, 0, 5], [600, 2, 1, 700]];
    for name in ["camera.pgm", "dem16.pgm", "astronaut.png"] {
        let (frame, bytes) = (fixture_frame(name), fixture_bytes(name));
        let borders: &[[usize; 4]] = if name == "astronaut.png" { &borders[..1] } else { &borders };
        assert_modes_are_opencvs(name, &frame, &bytes, borders);
    }
}

/// Every mode is OpenCV's on fresh random frames of odd sizes (1x1, 1xN and Nx1 among them),
/// gray, gray + alpha and RGBA, 8- and 16-bit, with borders many times the frame.
#[test]
fn modes_are_copy_make_border_on_random_frames() {
    let mut rng = rng();
    let sizes = [(1, 1), (1, 7), (9, 1), (2, 3), (13, 5), (rng.usize(1..40), rng.usize(1..40))];
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let maxval = if i % 2 == 0 { 255 } else { 65535 };
        let frame = match i % 3 {
            0 => random_frame(&mut rng, w, h, maxval),
            1 => random_colour_frame(&mut rng, w, h, Channels::GrayAlpha, maxval),
            _ => random_colour_frame(&mut rng, w, h, Channels::RgbAlpha, maxval),
        };
        let wide = [4 * w + 3, 3 * h + 1, 5 * w + 2, 7 * h];
        let borders = [[1, 0, 2, 1], wide, [h + 2; 4]];
        assert_modes_are_opencvs(
            &format!("{w}x{h} {i}"),
            &frame,
            &stream(std::slice::from_ref(&frame)),
            &borders,
        );
    }
}

/// Float frames: every sample copied bit for bit (NaN payloads, infinities, -0), as OpenCV
/// copies them, in every mode.
#[test]
fn modes_are_copy_make_border_on_float_frames() {
    let mut rng = rng();
    for (w, h) in [(1, 1), (1, 6), (5, 1), (23, 11)] {
        let mut values: Vec<f32> = (0..w * h).map(|_| rng.f32() * 4.0 - 2.0).collect();
        let specials = [f32::from_bits(0x7FC0_1234), f32::NEG_INFINITY, -0.0, f32::NAN];
        for (v, s) in values.iter_mut().step_by(3).zip(specials) {
            *v = s;
        }
        let tiff = float_tiff(&values, w, h);
        let frame = read_frames(&tiff).remove(0);
        assert_eq!(frame.depth(), Depth::F32);
        assert_modes_are_opencvs(&format!("float {w}x{h}"), &frame, &tiff, &[[2, 3 * h + 1, 4 * w, 1]]);
    }
}

/// The mode applies to every way of giving the size: the diagonal and `--to` pad as the same
/// borders given side by side do.
#[test]
fn modes_apply_to_every_size() {
    let bytes = fixture_bytes("coins.pgm"); // 384x303: diagonal 490, at (53, 93)
    for (mode, _) in MODES {
        let diagonal = run_ok("pad", "cpu", &["--mode", mode], &bytes);
        let sides = ["--left", "53", "--top", "93", "--right", "53", "--bottom", "94"];
        let by_sides = run_ok("pad", "cpu", &[&["--mode", mode][..], &sides].concat(), &bytes);
        assert!(read_frames(&diagonal)[0].pixels == read_frames(&by_sides)[0].pixels, "{mode}: diagonal");
        let to = run_ok("pad", "cpu", &["--mode", mode, "--to", "1001x400"], &bytes);
        let sides = ["--left", "308", "--top", "48", "--right", "309", "--bottom", "49"];
        let by_sides = run_ok("pad", "cpu", &[&["--mode", mode][..], &sides].concat(), &bytes);
        assert!(read_frames(&to)[0].pixels == read_frames(&by_sides)[0].pixels, "{mode}: --to");
    }
    // constant is the default, byte for byte.
    assert_eq!(run_ok("pad", "cpu", &["--mode", "constant"], &bytes), run_ok("pad", "cpu", &[], &bytes));
}

#[test]
fn mode_errors() {
    let camera = fixture_bytes("camera.pgm");
    let e = run_err("pad", &["--mode", "mirror"], &camera, 2);
    assert!(
        e.contains("--mode: unknown mode 'mirror' (constant, replicate, reflect, reflect101 or wrap)"),
        "{e}"
    );
    let e = run_err("pad", &["--mode", "wrap", "--fill", "3"], &camera, 2);
    assert!(e.contains("--fill is the constant border's; --mode wrap copies the frame's pixels"), "{e}");
}

/// CPU and GPU give the same samples in every mode, on random sizes and depths, borders wider
/// than the frame included (the operation itself, without the binaries).
#[test]
fn gpu_matches_cpu_in_every_mode() {
    use histopipe_ops::pad::Border;
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let modes = [Border::Replicate, Border::Reflect, Border::Reflect101, Border::Wrap];
    let mut sizes = vec![(1, 1), (1, 257), (263, 1), (4097, 3), (31, 17)];
    sizes.extend((0..8).map(|_| (rng.usize(1..700), rng.usize(1..700))));
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let mut frame = random_frame(&mut rng, w, h, if i % 2 == 0 { 255 } else { 4095 });
        if i % 3 == 2 {
            let v: Vec<f32> = (0..w * h).map(|k| f32::from_bits(rng.u32(..) ^ k as u32)).collect();
            frame = Frame::new(w, h, 1, Pixels::F32(v.into()));
        }
        let size = match i % 3 {
            0 => PadSize::Diagonal,
            1 => PadSize::To { width: w + rng.usize(0..40), height: h + rng.usize(0..40) },
            _ => PadSize::Border {
                left: rng.usize(0..3 * w + 9),
                top: rng.usize(0..3 * h + 9),
                right: rng.usize(0..3 * w + 9),
                bottom: rng.usize(0..3 * h + 9),
            },
        };
        for mode in modes {
            let pad = PadParams { size, fill: 0u16.into() }.for_frame_of(&frame).unwrap();
            let pad = pad.with_border(mode, w, h).unwrap();
            let (cpu, gpu_out) = (pad.cpu(&frame).unwrap(), pad.gpu(&gpu, &frame).unwrap());
            assert!(same_bits(&cpu, &gpu_out), "{w}x{h} {pad:?}");
        }
    }
}

/// A border copied from the frame is still border: `pad --mode M | rotate 30 | colhist` counts
/// what it counts after the constant border (the original's pixels only), in every mode.
#[test]
fn colhist_leaves_out_a_copied_border() {
    let coins = fixture_bytes("coins.pgm");
    let counts = |mode: &str| {
        let padded = run_ok("pad", "cpu", &["--mode", mode], &coins);
        run_ok("colhist", "cpu", &[], &run_ok("rotate", "cpu", &["30"], &padded))
    };
    let constant = counts("constant");
    for (mode, _) in &MODES[1..] {
        assert!(counts(mode) == constant, "--mode {mode}");
    }
}
