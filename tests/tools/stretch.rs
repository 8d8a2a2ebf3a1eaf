//! `stretch` against the documented map computed by NumPy (the order statistics of
//! docs/stretch.md for `--saturate`, scikit-image's `rescale_intensity` arithmetic for `--in`),
//! on 8-bit, 16-bit, float (NaN and infinities included) and colour frames; the GPU against the
//! CPU.

use histopipe_frame::{Channels, Format, Frame, Pixels};
use histopipe_ops::stretch::{Curve, Saturated, Scale, Stretch, StretchTo, ZScale};
use histopipe_ops::Op;

use crate::common::*;

const SCALES: [(&str, Scale); 4] =
    [("linear", Scale::Linear), ("log", Scale::Log), ("sqrt", Scale::Sqrt), ("asinh", Scale::Asinh)];

/// Every sample as f64 (exact for every sample type).
fn values(frame: &Frame) -> Vec<f64> {
    match &frame.pixels {
        Pixels::U8(v) => v.iter().map(|&s| s as f64).collect(),
        Pixels::U16(v) => v.iter().map(|&s| s as f64).collect(),
        Pixels::F32(v) => v.iter().map(|&s| s as f64).collect(),
    }
}

fn levels(frame: &Frame) -> Vec<u16> {
    match &frame.pixels {
        Pixels::U8(v) => v.iter().map(|&s| s as u16).collect(),
        Pixels::U16(v) => v.to_vec(),
        Pixels::F32(_) => panic!("stretch writes integer frames"),
    }
}

/// How NumPy gets the input range.
enum Range {
    Saturate(f64),
    In(f64, f64),
}

/// f(t) * maxout before rounding, for each sample of `samples` (a pixel's `channels` samples
/// together; the range from the samples of channels `counted`), in NumPy: the documented map.
fn numpy_map(
    samples: &[f64],
    channels: usize,
    counted: &[usize],
    range: &Range,
    scale: &str,
    maxout: u16,
) -> Vec<f64> {
    let range = match range {
        Range::Saturate(p) => format!(
            "s = np.sort(fin); n = len(s)\n\
             k = min(int(np.floor(n * {p:?} / 200)), (n - 1) // 2)\n\
             lo, hi = (s[k], s[n - 1 - k]) if n else (0.0, 0.0)\n"
        ),
        Range::In(lo, hi) => format!("lo, hi = {lo:?}, {hi:?}\n"),
    };
    let script = format!(
        "a = np.fromfile(sys.argv[1], '<f8').reshape(-1, {channels})\n\
         c = a[:, {counted:?}].ravel(); fin = c[np.isfinite(c)]\n\
         {range}\
         with np.errstate(invalid='ignore'):\n    \
             t = np.clip((a - lo) / (hi - lo), 0, 1) if hi > lo else (a > lo).astype(float)\n    \
             f = {{'linear': lambda t: t, 'sqrt': np.sqrt,\n          \
                  'log': lambda t: np.log1p(1000 * t) / np.log1p(1000),\n          \
                  'asinh': lambda t: np.arcsinh(t / 0.1) / np.arcsinh(1 / 0.1)}}['{scale}'](t)\n\
         y = f * {maxout}\n\
         y[np.isnan(a)] = 0\n\
         sys.stdout.buffer.write(y.astype('<f8').tobytes())\n"
    );
    let bytes: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = opencv(&script, &[&bytes]);
    out.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

/// `got` is NumPy's `want` rounded half to even: exactly for the linear scale (the same double
/// operations), and elsewhere where `want` is not within 1e-6 of a tie (NumPy's log1p and arcsinh
/// are not ours, to an ulp or so).
fn assert_rounds(got: &[u16], want: &[f64], exact: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let near_tie = (w - w.floor() - 0.5).abs() < 1e-6;
        let ok =
            g as f64 == w.round_ties_even() || (!exact && near_tie && (g as f64 - w).abs() <= 0.5 + 1e-6);
        assert!(ok, "{what}: sample {i} is {g}, NumPy's {w}");
    }
}

fn npy(frame: Frame) -> Frame {
    Frame { format: Format::Npy, ..frame }
}

#[test]
fn saturate_cuts_the_documented_order_statistics() {
    for (name, depth, p) in
        [("camera.pgm", None, None), ("moon.pgm", Some("16"), Some(2.0)), ("dem16.pgm", Some("8"), Some(0.0))]
    {
        let frame = fixture_frame(name);
        for (scale, _) in SCALES {
            let mut args = vec!["--scale", scale];
            let p_text = p.map(|p: f64| p.to_string());
            if let Some(p) = &p_text {
                args.extend(["--saturate", p]);
            }
            if let Some(d) = depth {
                args.extend(["--depth", d]);
            }
            let out = read_frames(&run_ok("stretch", "cpu", &args, &fixture_bytes(name))).remove(0);
            let maxout = match depth {
                Some("8") => 255,
                Some(_) => 65535,
                None => frame.maxval,
            };
            assert_eq!(out.maxval, maxout, "{name} {args:?}");
            let want =
                numpy_map(&values(&frame), 1, &[0], &Range::Saturate(p.unwrap_or(0.35)), scale, maxout);
            assert_rounds(&levels(&out), &want, scale == "linear", &format!("{name} {args:?}"));
        }
    }
}

#[test]
fn in_range_is_rescale_intensity_rounded() {
    let frame = fixture_frame("dem16.pgm");
    let out = read_frames(&run_ok(
        "stretch",
        "cpu",
        &["--in", "300:900", "--depth", "8"],
        &fixture_bytes("dem16.pgm"),
    ))
    .remove(0);
    // skimage.exposure.rescale_intensity(a, in_range=(300, 900), out_range=(0, 255)), before the cast.
    let want = numpy_map(&values(&frame), 1, &[0], &Range::In(300.0, 900.0), "linear", 255);
    assert_rounds(&levels(&out), &want, true, "dem16.pgm --in 300:900");
    let out = read_frames(&run_ok(
        "stretch",
        "cpu",
        &["--in=-10.5:1e3", "--scale", "sqrt"],
        &fixture_bytes("dem.npy"),
    ))
    .remove(0);
    let want = numpy_map(&values(&fixture_frame("dem.npy")), 1, &[0], &Range::In(-10.5, 1e3), "sqrt", 65535);
    assert_rounds(&levels(&out), &want, false, "dem.npy --in -10.5:1e3");
}

#[test]
fn float_dem_to_8_bit() {
    let frame = fixture_frame("dem.npy");
    assert_eq!(frame.depth(), histopipe_frame::Depth::F32);
    for (scale, _) in SCALES {
        let args = ["--saturate", "0.35", "--depth", "8", "--scale", scale];
        let out = read_frames(&run_ok("stretch", "cpu", &args, &fixture_bytes("dem.npy"))).remove(0);
        assert_eq!((out.width, out.height, out.maxval), (frame.width, frame.height, 255));
        let want = numpy_map(&values(&frame), 1, &[0], &Range::Saturate(0.35), scale, 255);
        assert_rounds(&levels(&out), &want, scale == "linear", &format!("dem.npy {scale}"));
    }
    // Float input is 16-bit out by default.
    let out = read_frames(&run_ok("stretch", "cpu", &[], &fixture_bytes("dem.npy"))).remove(0);
    assert_eq!(out.maxval, 65535);
}

/// NaN becomes 0, infinities clamp, and only finite samples are counted for the cuts.
#[test]
fn nan_and_infinities() {
    let mut rng = rng();
    let mut samples: Vec<f32> = (0..5000).map(|_| (rng.f32() - 0.3) * 1e4).collect();
    for (i, special) in
        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, f32::MIN_POSITIVE / 4.0].iter().enumerate()
    {
        for j in 0..50 {
            samples[(i * 997 + j * 89) % 5000] = *special;
        }
    }
    let frame = npy(Frame::new(100, 50, 1, Pixels::F32(samples.into())));
    for (scale, _) in SCALES {
        for depth in ["8", "16"] {
            let args = ["--saturate", "3", "--scale", scale, "--depth", depth];
            let out = read_frames(&run_ok("stretch", "cpu", &args, &stream(std::slice::from_ref(&frame))))
                .remove(0);
            let maxout = if depth == "8" { 255 } else { 65535 };
            let want = numpy_map(&values(&frame), 1, &[0], &Range::Saturate(3.0), scale, maxout);
            let got = levels(&out);
            assert_rounds(&got, &want, scale == "linear", &format!("{args:?}"));
            for (v, g) in values(&frame).iter().zip(&got) {
                let want = if v.is_nan() || *v == f64::NEG_INFINITY {
                    Some(0)
                } else if *v == f64::INFINITY {
                    Some(maxout)
                } else {
                    None
                };
                assert!(want.is_none() || want == Some(*g), "{v} -> {g}");
            }
        }
    }
    // No finite sample: NaN and -inf give 0, +inf the maximum.
    let frame =
        npy(Frame::new(3, 1, 1, Pixels::F32(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY].into())));
    let out = read_frames(&run_ok("stretch", "cpu", &["--depth", "8"], &stream(&[frame]))).remove(0);
    assert_eq!(levels(&out), [0, 255, 0]);
}

/// Colour: one range from every colour sample (hues stay), or one a channel with --colour each;
/// alpha rescaled, not stretched.
#[test]
fn colour_shared_and_each() {
    let frame =
        read_frames_with(&fixture_bytes("astronaut.png"), histopipe_frame::ReadOptions::default()).remove(0);
    assert_eq!(frame.channels, Channels::Rgb, "astronaut.png reads as colour");
    let v = values(&frame);
    let out = read_frames(&run_ok("stretch", "cpu", &["--saturate", "5"], &fixture_bytes("astronaut.png")))
        .remove(0);
    assert_eq!((out.channels, out.maxval), (Channels::Rgb, 255));
    assert_rounds(
        &levels(&out),
        &numpy_map(&v, 3, &[0, 1, 2], &Range::Saturate(5.0), "linear", 255),
        true,
        "shared",
    );
    let out = read_frames(&run_ok(
        "stretch",
        "cpu",
        &["--saturate", "5", "--colour", "each", "--depth", "16"],
        &fixture_bytes("astronaut.png"),
    ))
    .remove(0);
    let got = levels(&out);
    for c in 0..3 {
        let want = numpy_map(&v, 3, &[c], &Range::Saturate(5.0), "linear", 65535);
        let got_c: Vec<u16> = got.iter().skip(c).step_by(3).copied().collect();
        let want_c: Vec<f64> = want.iter().skip(c).step_by(3).copied().collect();
        assert_rounds(&got_c, &want_c, true, &format!("each, channel {c}"));
    }
    // RGBA, 16-bit in, 8-bit out: alpha rescaled, rint(a * 255 / maxval).
    let mut rng = rng();
    let px: Vec<u16> = (0..4 * 300).map(|_| rng.u16(0..=4095)).collect();
    let rgba = Frame {
        format: Format::Pam,
        ..Frame::with_channels(30, 10, Channels::RgbAlpha, 4095, Pixels::U16(px.into()))
    };
    let out = read_frames(&run_ok("stretch", "cpu", &["--depth", "8"], &stream(std::slice::from_ref(&rgba))))
        .remove(0);
    assert_eq!(out.channels, Channels::RgbAlpha);
    let rv = values(&rgba);
    let want = numpy_map(&rv, 4, &[0, 1, 2], &Range::Saturate(0.35), "linear", 255);
    let got = levels(&out);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let w = if i % 4 == 3 { (rv[i] / 4095.0 * 255.0).round_ties_even() } else { w.round_ties_even() };
        assert_eq!(g as f64, w, "sample {i}");
    }
}

/// A larger value never maps lower, on every scale and depth.
#[test]
fn monotone() {
    let mut rng = rng();
    let mut v: Vec<f32> = (0..100_000).map(|_| (rng.f32() - 0.5) * 3.0).collect();
    v.sort_by(f32::total_cmp);
    let frame = Frame::new(v.len(), 1, 1, Pixels::F32(v.into()));
    let all16: Vec<u16> = (0..=65535).collect();
    let int = Frame::new(all16.len(), 1, 65535, Pixels::U16(all16.into()));
    for (_, scale) in SCALES {
        for maxout in [255, 1000, 65535] {
            let curve = Curve { lo: -1.0, hi: 1.2, scale, maxout };
            for (f, what) in [(&frame, "float"), (&int, "16-bit")] {
                let curve = if what == "float" { curve } else { Curve { lo: 3000.0, hi: 60000.0, ..curve } };
                let out = levels(&Stretch { curve }.cpu(f).unwrap());
                assert!(out.windows(2).all(|w| w[0] <= w[1]), "{what} {scale:?} {maxout}");
                assert_eq!((out[0], out[out.len() - 1]), (0, maxout), "{what} {scale:?} {maxout}");
            }
        }
    }
}

#[test]
fn bad_options_are_one_line_errors() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("stretch", &["--in", "5:1"], &camera, 2).contains("--in"));
    assert!(run_err("stretch", &["--in", "nan:1"], &camera, 2).contains("--in"));
    assert!(run_err("stretch", &["--saturate", "101"], &camera, 2).contains("--saturate"));
    assert!(run_err("stretch", &["--depth", "12"], &camera, 2).contains("--depth"));
    assert!(run_err("stretch", &["--scale", "cube"], &camera, 2).contains("--scale"));
    assert!(
        run_err("stretch", &["--saturate", "1", "--in", "0:9"], &camera, 2).contains("cannot be combined")
    );
    let e = run_err("stretch", &["--zscale", "--in", "0:9"], &camera, 2);
    assert!(e.contains("--in and --zscale cannot be combined"), "{e}");
    let e = run_err("stretch", &["--contrast", "0.5"], &camera, 2);
    assert!(e.contains("--contrast is a parameter of --zscale"), "{e}");
    assert!(run_err("stretch", &["--zscale", "--contrast", "0"], &camera, 2).contains("--contrast"));
    assert!(run_err("stretch", &["--zscale", "--samples", "0"], &camera, 2).contains("--samples"));
    let e = run_err("stretch", &["--out", "1:0"], &camera, 2);
    assert!(e.contains("--out: bad value '1:0': give A:B, two numbers with A below B"), "{e}");
    let e = run_err("stretch", &["--out", "0:1", "--depth", "8"], &camera, 2);
    assert!(e.contains("--out writes float32 samples and --depth integer ones"), "{e}");
}

/// Float frames the GPU finds hard: NaN, infinities, zeros of both signs, subnormals, huge and
/// tiny values, with every scale and depth, cut ranges and given ones, and a flat range.
#[test]
fn gpu_matches_cpu_on_float_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let specials =
        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MIN_POSITIVE / 3.0, f32::MAX, f32::MIN];
    let mut v: Vec<f32> = (0..1 << 18).map(|_| f32::from_bits(rng.u32(..))).collect();
    v.extend((0..1 << 18).map(|_| (rng.f32() - 0.2) * 500.0));
    v.extend(specials);
    let frame = Frame::new(v.len(), 1, 1, Pixels::F32(v.into()));
    for (_, scale) in SCALES {
        for maxout in [255, 65535, 4095] {
            for (lo, hi) in [(-100.0, 300.0), (0.0, 1e-30), (-3e38, 3e38), (7.0, 7.0)] {
                let op = Stretch { curve: Curve { lo, hi, scale, maxout } };
                assert!(
                    op.cpu(&frame).unwrap() == op.gpu(&gpu, &frame).unwrap(),
                    "{scale:?} {maxout} {lo}:{hi}"
                );
            }
        }
    }
}

/// `--saturate` over a whole float frame on the GPU (`Saturated`, its keys counted there) finds
/// the CPU's cuts and gives its bytes: specials, -0 against +0, one value everywhere (every lane
/// of a warp in one bucket), values a bucket apart, lengths off a warp, no finite sample, and every
/// share from none to all.
#[test]
fn saturate_cuts_on_the_gpu_are_the_cpus() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MIN_POSITIVE / 3.0, f32::MAX];
    let mut frames: Vec<Vec<f32>> = vec![
        (0..1 << 18).map(|_| f32::from_bits(rng.u32(..))).chain(specials).collect(),
        (0..300_001).map(|_| (rng.f32() - 0.2) * 500.0).collect(),
        vec![0.25; 70_000],
        (0..4099).map(|i| [-0.0, 0.0, f32::NAN, 1.0][i % 4]).collect(),
        // Keys one apart at each bucket's edge: 0x3f80_ffff and 0x3f81_0000 as bits.
        (0..10_000).map(|i| f32::from_bits(0x3f80_fffe + (i % 3) as u32)).collect(),
        vec![f32::NAN, f32::INFINITY],
        vec![-2.5],
        (0..33).map(|_| rng.f32()).collect(),
    ];
    frames.push((0..1 << 16).map(|i| if i % 97 == 0 { f32::NAN } else { rng.i32(-3..3) as f32 }).collect());
    for v in frames {
        let n = v.len();
        let frame = Frame::new(n, 1, 1, Pixels::F32(v.clone().into()));
        for percent in [0.0, 1e-9, 0.35, 7.0, 50.0, 99.9, 100.0] {
            let src = gpu.upload("test.in", &v).unwrap();
            let on_gpu = histopipe_ops::stretch::float_cuts(&gpu, &src, n, percent).unwrap();
            let on_cpu = histopipe_ops::stretch::cuts::of_floats(v.iter().copied(), percent);
            let bits = |c: Option<(f32, f32)>| c.map(|(lo, hi)| (lo.to_bits(), hi.to_bits()));
            assert_eq!(bits(on_gpu), bits(on_cpu), "{n} samples, {percent}%");
            for maxout in [255, 65535] {
                let op = Saturated { percent, scale: Scale::Linear, maxout };
                assert!(op.cpu(&frame).unwrap() == op.gpu(&gpu, &frame).unwrap(), "{n} {percent}% {maxout}");
            }
        }
    }
    // Integer and colour frames: the cuts of their histograms on the CPU, the map on the GPU.
    let samples: Vec<u16> = (0..31 * 17 * 3).map(|_| rng.u16(..4096)).collect();
    let colour = Frame::with_channels(31, 17, Channels::Rgb, 4095, Pixels::U16(samples.into()));
    for frame in [random_frame(&mut rng, 1023, 77, 255), colour] {
        let op = Saturated { percent: 2.0, scale: Scale::Sqrt, maxout: 255 };
        assert_eq!(op.cpu(&frame).unwrap(), op.gpu(&gpu, &frame).unwrap());
    }
}

#[test]
fn gpu_matches_cpu_on_integer_frames_and_through_the_tool() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for maxval in [255, 100, 4095, 65535] {
        let frame = random_frame(&mut rng, 1023, 77, maxval);
        for (_, scale) in SCALES {
            for maxout in [255, 65535, maxval] {
                let op = Stretch { curve: Curve { lo: 3.0, hi: maxval as f64 * 0.8, scale, maxout } };
                assert_eq!(
                    op.cpu(&frame).unwrap(),
                    op.gpu(&gpu, &frame).unwrap(),
                    "{maxval} {scale:?} {maxout}"
                );
            }
        }
    }
    drop(gpu);
    for (name, args) in [
        ("dem.npy", &["--depth", "8", "--scale", "asinh"][..]),
        ("dem16.pgm", &["--scale", "log"][..]),
        ("astronaut.png", &["--colour", "each", "--scale", "sqrt"][..]),
        ("camera.pgm", &[][..]),
        ("dem.npy", &["--zscale", "--scale", "asinh"][..]),
        ("hubble_deep_field.jpg", &["--zscale", "--contrast", "0.1", "--depth", "16"][..]),
    ] {
        let input = fixture_bytes(name);
        assert!(
            run_ok("stretch", "gpu", args, &input) == run_ok("stretch", "cpu", args, &input),
            "{name} {args:?}"
        );
    }
}

/// The integer maps read 16 input bytes a thread (16 8-bit samples, 8 16-bit ones) and map the
/// rest one sample at a time: every length from 1 to 70 (tails alone, a chunk and a tail, whole
/// chunks) and a long one of odd length, through each of the four maps (8- and 16-bit in and out).
#[test]
fn gpu_matches_cpu_on_integer_frames_of_every_short_length() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let lengths: Vec<(usize, usize)> = (1..=70).map(|w| (w, 1)).chain([(4099, 3)]).collect();
    for maxval in [255, 200, 4095, 65535] {
        for &(w, h) in &lengths {
            let frame = random_frame(&mut rng, w, h, maxval);
            for maxout in [255, 65535] {
                let op =
                    Stretch { curve: Curve { lo: 1.0, hi: maxval as f64 * 0.9, scale: Scale::Sqrt, maxout } };
                assert_eq!(
                    op.cpu(&frame).unwrap(),
                    op.gpu(&gpu, &frame).unwrap(),
                    "{maxval} {w}x{h} {maxout}"
                );
            }
        }
    }
}

/// `--mask`: the cuts are the order statistics of the masked samples alone (NumPy), and the map
/// applies to every pixel: the output is `--in LO:HI`'s with those cuts; 8-bit gray, 16-bit, colour
/// (one range, and one a channel), float; the GPU the CPU's.
#[test]
fn mask_cuts_from_the_masked_samples_as_numpy() {
    let dir = temp_dir("stretch-mask");
    let mut rng = rng();
    let (w, h) = (53, 41);
    let mask = random_mask(&mut rng, w, h);
    let path = mask_file(&dir, "mask.pgm", w, h, &mask);
    let m = path.to_str().unwrap();
    let gray = random_frame(&mut rng, w, h, 255);
    let deep = random_frame(&mut rng, w, h, 65535);
    let colour = random_colour_frame(&mut rng, w, h, Channels::Rgb, 255);
    let floats: Vec<f32> = (0..w * h).map(|i| (i as f32 * 0.61).cos() * 9.0 + (i % 17) as f32).collect();
    let tiff = float_tiff(&floats, w, h);
    let inside = |i: usize| mask[i] != 0;
    // (lo, hi) of --saturate 5 over `values`, as docs/stretch.md says: k = floor(N 5 / 200).
    let cut = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let k = (n * 5 / 200).min((n - 1) / 2);
        (values[k], values[n - 1 - k])
    };
    let of = |f: &Frame, channels: &[usize]| {
        let n = f.channels.count();
        cut((0..f.pixels.len())
            .filter(|&i| inside(i / n) && channels.contains(&(i % n)))
            .map(|i| f.pixels.get(i) as f64)
            .collect())
    };
    for (what, input, cuts, each) in [
        ("gray", stream(std::slice::from_ref(&gray)), vec![of(&gray, &[0])], false),
        ("16-bit", stream(std::slice::from_ref(&deep)), vec![of(&deep, &[0])], false),
        ("colour", stream(std::slice::from_ref(&colour)), vec![of(&colour, &[0, 1, 2])], false),
        (
            "colour each",
            stream(std::slice::from_ref(&colour)),
            (0..3).map(|c| of(&colour, &[c])).collect(),
            true,
        ),
    ] {
        let mut args = vec!["--saturate", "5", "--mask", m];
        if each {
            args.extend(["--colour", "each"]);
        }
        let out = run_ok("stretch", "cpu", &args, &input);
        let got = read_frames(&out).remove(0);
        let frame = read_frames(&input).remove(0);
        for (c, &(lo, hi)) in cuts.iter().enumerate() {
            let range = format!("{lo}:{hi}");
            let plane = if each { frame.plane(c) } else { frame.clone() };
            let want = read_frames(&run_ok("stretch", "cpu", &["--in", &range], &stream(&[plane]))).remove(0);
            let got = if each { got.plane(c) } else { got.clone() };
            assert_eq!(got.pixels, want.pixels, "{what}: channel {c}, cuts {range}");
        }
        if let Some(_gpu) = gpu() {
            assert_eq!(run_ok("stretch", "gpu", &args, &input), out, "{what}: GPU and CPU");
        }
    }
    let (lo, hi) = cut((0..w * h).filter(|&i| inside(i)).map(|i| floats[i] as f64).collect());
    let got = run_to_tiff("stretch", "cpu", &["--saturate", "5", "--mask", m, "--depth", "8"], &tiff);
    let want = run_to_tiff("stretch", "cpu", &["--in", &format!("{lo}:{hi}"), "--depth", "8"], &tiff);
    assert!(same_bits(&got, &want), "float: cuts {lo}:{hi}");
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    assert_mask_size_refused("stretch", &[]);
    let e = run_err("stretch", &["--mask", "m.pgm", "--in", "0:9"], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains("--mask chooses the samples --saturate cuts from"), "{e}");
}

/// A frame's colour samples (`channels` of each pixel) as NumPy reads them, in the frame's order:
/// (dtype, little-endian bytes).
fn raw_samples(frame: &Frame, channels: &[usize]) -> (&'static str, Vec<u8>) {
    let n = frame.channels.count();
    let keep = |i: &usize| channels.contains(&(i % n));
    match &frame.pixels {
        Pixels::U8(v) => ("u1", (0..v.len()).filter(keep).map(|i| v[i]).collect()),
        Pixels::U16(v) => ("<u2", (0..v.len()).filter(keep).flat_map(|i| v[i].to_le_bytes()).collect()),
        Pixels::F32(v) => ("<f4", (0..v.len()).filter(keep).flat_map(|i| v[i].to_le_bytes()).collect()),
    }
}

/// astropy's `ZScaleInterval(n_samples, contrast).get_limits` of each frame's `channels`
/// samples (in the frame's order, the dtype of its samples), `None` for a frame without a finite
/// sample (where astropy fails): as astropy computes them, and with `np.polyfit` made the exact
/// least-squares line rounded to double (by Python's rationals), the only step we take otherwise.
#[allow(clippy::type_complexity)]
fn astropy_zscale(cases: &[(&Frame, &[usize], ZScale)]) -> Vec<Option<((f64, f64), (f64, f64))>> {
    let mut blob = Vec::new();
    let mut specs = String::new();
    for (frame, channels, z) in cases {
        let (dtype, bytes) = raw_samples(frame, channels);
        specs += &format!("('{dtype}', {}, {}, {:?}),", bytes.len(), z.samples, z.contrast);
        blob.extend(bytes);
    }
    let script = format!(
        "from astropy.visualization import ZScaleInterval\n\
         from fractions import Fraction as F\n\
         stock = np.polyfit\n\
         def exact(x, y, deg, w):\n    \
             k = [(int(i), F(float(v))) for i, v, g in zip(x, y, w) if g]\n    \
             n = len(k); X = sum(i for i, _ in k); Q = sum(i * i for i, _ in k)\n    \
             Y = sum(v for _, v in k); P = sum(i * v for i, v in k); D = n * Q - X * X\n    \
             return np.array([float((n * P - X * Y) / D), float((Q * Y - X * P) / D)])\n\
         blob = open(sys.argv[1], 'rb').read(); at = 0\n\
         for dtype, size, n, c in [{specs}]:\n    \
             a = np.frombuffer(blob[at:at + size], dtype); at += size\n    \
             if not np.isfinite(a).any():\n        print('none'); continue\n    \
             z = ZScaleInterval(n_samples=n, contrast=c)\n    \
             np.polyfit = stock; lo, hi = z.get_limits(a)\n    \
             np.polyfit = exact; elo, ehi = z.get_limits(a)\n    \
             print(*(float(v).hex() for v in (lo, hi, elo, ehi)))\n"
    );
    let out = String::from_utf8(opencv(&script, &[&blob])).unwrap();
    out.lines()
        .map(|line| {
            let w: Vec<f64> = line.split(' ').filter(|w| *w != "none").map(from_hex).collect();
            (w.len() == 4).then(|| ((w[0], w[1]), (w[2], w[3])))
        })
        .collect()
}

/// Python's `float.hex` read back: `[-]0x1.hhhp±e`, `0x0.0p+0` and the subnormals' `0x0.hhhp-1022`.
fn from_hex(text: &str) -> f64 {
    let (sign, rest) = text.strip_prefix('-').map_or((1.0, text), |r| (-1.0, r));
    let rest = rest.strip_prefix("0x").expect("0x");
    let (mantissa, exp) = rest.split_once('p').expect("p");
    let (lead, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let bits = u64::from_str_radix(&format!("{frac:0<13}"), 16).expect("hex digits");
    let exp: i32 = exp.parse().expect("exponent");
    let m = lead.parse::<u64>().expect("lead") as f64 + bits as f64 / 2f64.powi(52);
    sign * m * 2f64.powi(exp)
}

/// Frames for `--zscale`: the fixtures (8-bit, 16-bit, float, colour), fresh random ones with NaN
/// and infinities, tiny ones (fewer samples than min_npixels) and one without a finite sample.
fn zscale_frames() -> Vec<(String, Frame)> {
    let mut frames: Vec<(String, Frame)> = ["camera.pgm", "moon.pgm", "dem16.pgm", "dem.npy", "coins.pgm"]
        .iter()
        .map(|name| (name.to_string(), fixture_frame(name)))
        .collect();
    let hubble =
        read_frames_with(&fixture_bytes("hubble_deep_field.jpg"), histopipe_frame::ReadOptions::default())
            .remove(0);
    frames.push(("hubble_deep_field.jpg".into(), hubble));
    let mut rng = rng();
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    for (w, h) in [(1, 1), (2, 2), (3, 1), (5, 1), (7, 3), (40, 30), (333, 97), (1200, 901)] {
        let sky: Vec<f32> = (0..w * h)
            .map(|i| match rng.u32(..100) {
                0 => specials[i % 3],
                1 => (rng.f32() * 5e4) + 1e3,
                _ => 100.0 + (rng.f32() + rng.f32() + rng.f32() - 1.5) * 8.0,
            })
            .collect();
        frames.push((format!("sky {w}x{h}"), npy(Frame::new(w, h, 1, Pixels::F32(sky.into())))));
        frames.push((format!("16-bit {w}x{h}"), random_frame(&mut rng, w, h, 65535)));
    }
    frames.push((
        "no finite".into(),
        npy(Frame::new(2, 1, 1, Pixels::F32(vec![f32::NAN, f32::INFINITY].into()))),
    ));
    frames
}

/// `--zscale`'s limits are astropy's ZScaleInterval's: bit for bit those astropy computes with
/// `np.polyfit` made exact (the same samples, rejections, median and arithmetic; the line the
/// exact least squares rounded); within 1e-14 of their size of stock astropy's, whose line is
/// LAPACK's (its last bits depend on the BLAS and the CPU), and bit for bit where a limit is a
/// sample's end (counted).
#[test]
fn zscale_limits_are_astropys() {
    let frames = zscale_frames();
    let tunings = [
        ZScale::default(),
        ZScale { contrast: 0.1, samples: 600, ..ZScale::default() },
        ZScale { contrast: 1.0, samples: 5000, ..ZScale::default() },
    ];
    let mut cases = Vec::new();
    for (name, frame) in &frames {
        let colours: Vec<usize> = (0..frame.channels.colour_count()).collect();
        for z in tunings {
            cases.push((name.clone(), frame, colours.clone(), z));
        }
    }
    let peer: Vec<(&Frame, &[usize], ZScale)> = cases.iter().map(|(_, f, c, z)| (*f, &c[..], *z)).collect();
    let want = astropy_zscale(&peer);
    // Limits bit for bit stock astropy's, of them limits that are no sample's end (fitted ones).
    let (mut same, mut limits, mut fitted, mut fitted_same, mut ulps) = (0, 0, 0, 0, 0);
    for ((name, frame, colours, z), want) in cases.iter().zip(want) {
        let got = z.of_frame(frame, colours, None).unwrap();
        let what = format!("{name} {z:?}: ours {got:?}, astropy's (stock, exact fit) {want:?}");
        let bits = |(lo, hi): (f64, f64)| (lo.to_bits(), hi.to_bits());
        match (got, want) {
            (None, None) => {}
            (Some(got), Some((stock, exact))) => {
                assert_eq!(bits(got), bits(exact), "{what}");
                let size = stock.0.abs() + stock.1.abs() + (stock.1 - stock.0);
                for (g, w) in [(got.0, stock.0), (got.1, stock.1)] {
                    assert!((g - w).abs() <= 1e-14 * size, "{what}");
                    limits += 1;
                    same += (g == w) as usize;
                    let sample = values(frame).contains(&w);
                    if !sample {
                        fitted += 1;
                        fitted_same += (g == w) as usize;
                        ulps = ulps.max((g.to_bits() as i64 - w.to_bits() as i64).unsigned_abs());
                    }
                }
            }
            _ => panic!("{what}"),
        }
    }
    eprintln!(
        "zscale: {same} of {limits} limits bit for bit stock astropy's; of the {fitted} fitted ones (no \
         sample), {fitted_same}, the others at most {ulps} units in the last place off"
    );
    assert!(same * 2 > limits, "{same} of {limits} limits bit for bit astropy's");
}

/// `--zscale` maps as `--in LO:HI` with its limits, with every scale, through the tool (and
/// as the manual's map computed by NumPy with those limits); a frame without a finite sample as
/// LO = HI = 0.
#[test]
fn zscale_maps_as_its_limits_given() {
    let picked = ["camera.pgm", "dem.npy", "hubble_deep_field.jpg", "sky 40x30", "sky 3x1", "16-bit 333x97"];
    for (name, frame) in
        zscale_frames().into_iter().filter(|(n, _)| picked.contains(&&n[..]) || n == "no finite")
    {
        let input = stream(std::slice::from_ref(&frame));
        let colours: Vec<usize> = (0..frame.channels.colour_count()).collect();
        for (scale, tuning) in [
            ("linear", &[][..]),
            ("log", &[][..]),
            ("sqrt", &[][..]),
            ("asinh", &[][..]),
            ("asinh", &["--contrast", "0.5", "--samples", "300"][..]),
        ] {
            let mut args = vec!["--zscale", "--scale", scale, "--depth", "8"];
            args.extend(tuning);
            let out = read_frames(&run_ok("stretch", "cpu", &args, &input)).remove(0);
            let z = if tuning.is_empty() {
                ZScale::default()
            } else {
                ZScale { contrast: 0.5, samples: 300, ..ZScale::default() }
            };
            let (lo, hi) = z.of_frame(&frame, &colours, None).unwrap().unwrap_or((0.0, 0.0));
            if lo < hi {
                let range = format!("{lo:?}:{hi:?}");
                let given = ["--in", &range, "--scale", scale, "--depth", "8"];
                let want = read_frames(&run_ok("stretch", "cpu", &given, &input)).remove(0);
                assert_eq!(out.pixels, want.pixels, "{name} {args:?}: --in {range}");
            }
            let want =
                numpy_map(&values(&frame), frame.channels.count(), &colours, &Range::In(lo, hi), scale, 255);
            assert_rounds(&levels(&out), &want, scale == "linear", &format!("{name} {args:?}"));
        }
    }
}

/// scikit-image's `rescale_intensity(a, in_range=(lo, hi), out_range=(out_lo, out_hi))` of a
/// frame's samples (in their dtype: float64 arithmetic for integers, float32 for float32), as
/// float32.
fn skimage_rescale(frame: &Frame, range: (f64, f64), out: (f64, f64)) -> Vec<f32> {
    let (dtype, bytes) = raw_samples(frame, &(0..frame.channels.count()).collect::<Vec<_>>());
    let script = format!(
        "import warnings; warnings.simplefilter('ignore')\n\
         a = np.fromfile(sys.argv[1], '{dtype}')\n\
         r = skimage.exposure.rescale_intensity(a, in_range=({:?}, {:?}), out_range=({:?}, {:?}))\n\
         sys.stdout.buffer.write(r.astype('<f4').tobytes())\n",
        range.0, range.1, out.0, out.1
    );
    skimage(&script, &[&bytes]).chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

fn floats(frame: &Frame) -> Vec<f32> {
    match &frame.pixels {
        Pixels::F32(v) => v.to_vec(),
        _ => panic!("--out writes float frames"),
    }
}

/// `got` is `want` bit for bit, NaN where `want` is NaN (the canonical one).
fn assert_same_floats(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok =
            if w.is_nan() { g.to_bits() == histopipe_ops::CANONICAL_NAN } else { g.to_bits() == w.to_bits() };
        assert!(ok, "{what}: sample {i} is {g:e}, scikit-image's {w:e}");
    }
}

/// Float samples a rescale finds hard: NaN, infinities, signed zeros, subnormals, the extremes,
/// values at and beyond the ends of the range, and fresh random ones.
fn hard_floats(rng: &mut fastrand::Rng, n: usize) -> Vec<f32> {
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-45,
        -1e-40,
        f32::MAX,
        f32::MIN,
        -10.5,
        1000.0,
        0.1,
    ];
    let mut v: Vec<f32> = (0..n).map(|_| (rng.f32() - 0.2) * 1200.0).collect();
    for (i, s) in specials.iter().enumerate() {
        v[i * 7 % n] = *s;
    }
    v
}

/// `--in LO:HI --out A:B` is scikit-image's rescale_intensity(in_range, out_range) bit for bit:
/// 8-bit and 16-bit frames (its double arithmetic, rounded to float32), float frames (its float32
/// arithmetic); odd ranges whose ends are not float32 values, and a range out beyond the values.
#[test]
fn out_range_is_rescale_intensity_bit_for_bit() {
    let mut rng = rng();
    let float = npy(Frame::new(300, 200, 1, Pixels::F32(hard_floats(&mut rng, 60_000).into())));
    let frames = [
        ("camera.pgm", fixture_frame("camera.pgm"), (30.0, 200.5)),
        ("dem16.pgm", fixture_frame("dem16.pgm"), (300.0, 900.0)),
        ("dem.npy", fixture_frame("dem.npy"), (-10.5, 1e3)),
        ("hard floats", float.clone(), (-0.1, 999.9)),
        // A range of no float32 width: 0 / 0 is NaN in scikit-image too.
        ("hard floats, a range of 0 in float32", float, (0.0, 1e-50)),
    ];
    for (name, frame, range) in &frames {
        for out in [(0.0, 1.0), (-1.0, 1.0), (0.1, 0.7), (-3.3e5, 1e-3)] {
            let r = format!("{:?}:{:?}", range.0, range.1);
            let o = format!("{:?}:{:?}", out.0, out.1);
            let args = ["--in", &r, "--out", &o];
            let got =
                read_frames(&run_ok("stretch", "cpu", &args, &stream(std::slice::from_ref(frame)))).remove(0);
            assert_eq!(
                (got.width, got.height, got.depth()),
                (frame.width, frame.height, histopipe_frame::Depth::F32)
            );
            assert_same_floats(
                &floats(&got),
                &skimage_rescale(frame, *range, out),
                &format!("{name} {args:?}"),
            );
        }
    }
}

/// The other scales: f(t) (B - A) + A in double, rounded to float32: NumPy's, to its log1p's and
/// arcsinh's last bits; a flat range (a constant frame's cuts) gives np.clip(LO, A, B), as
/// scikit-image's; --out takes its limits from --saturate, --zscale and --mask as the levels do.
#[test]
fn out_range_with_scales_cuts_and_flat_frames() {
    let frame = fixture_frame("dem.npy");
    for (scale, _) in SCALES {
        let args = ["--in", "-10.5:1000", "--out", "-1:2", "--scale", scale];
        let got = floats(&read_frames(&run_ok("stretch", "cpu", &args, &fixture_bytes("dem.npy"))).remove(0));
        let want = numpy_map(&values(&frame), 1, &[0], &Range::In(-10.5, 1000.0), scale, 1);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let w = (w * 3.0 - 1.0) as f32;
            assert!((g - w).abs() <= 4e-7, "{scale}: sample {i} is {g}, NumPy's {w}");
        }
    }
    // A constant frame: --saturate's cuts meet, LO = HI = 7: np.clip(7, A, B).
    let flat = Frame::new(5, 3, 255, Pixels::U8(vec![7; 15].into()));
    for (out, want) in [("0:1", 1.0), ("10:20", 10.0), ("-5:9", 7.0)] {
        let got =
            read_frames(&run_ok("stretch", "cpu", &["--out", out], &stream(std::slice::from_ref(&flat))))
                .remove(0);
        assert!(floats(&got).iter().all(|&v| v == want), "flat frame --out {out}");
    }
    // --zscale and --saturate choose LO and HI as for levels.
    for (name, cut) in [("dem.npy", "--zscale"), ("camera.pgm", "--saturate")] {
        let input = fixture_bytes(name);
        let f = fixture_frame(name);
        let (lo, hi) = if cut == "--zscale" {
            ZScale::default().of_frame(&f, &[0], None).unwrap().unwrap()
        } else {
            histopipe_ops::stretch::cuts::of_frame(&f, &[0], 2.0, None).unwrap().unwrap()
        };
        let mut args = vec![cut, "--out", "0:1"];
        if cut == "--saturate" {
            args.insert(1, "2");
        }
        let got = read_frames(&run_ok("stretch", "cpu", &args, &input)).remove(0);
        assert_same_floats(
            &floats(&got),
            &skimage_rescale(&f, (lo, hi), (0.0, 1.0)),
            &format!("{name} {args:?}"),
        );
    }
}

/// RGBA: the colours rescaled, alpha a float from [0, maxval] onto [0, 1].
#[test]
fn out_range_of_colour_with_alpha() {
    let mut rng = rng();
    let px: Vec<u16> = (0..4 * 300).map(|_| rng.u16(0..=4095)).collect();
    let rgba = Frame {
        format: Format::Pam,
        ..Frame::with_channels(30, 10, Channels::RgbAlpha, 4095, Pixels::U16(px.into()))
    };
    let out = run_to_tiff(
        "stretch",
        "cpu",
        &["--in", "100:4000", "--out", "-1:1"],
        &stream(std::slice::from_ref(&rgba)),
    );
    assert_eq!((out.channels, out.depth()), (Channels::RgbAlpha, histopipe_frame::Depth::F32));
    let got = floats(&out);
    let colours = skimage_rescale(&rgba, (100.0, 4000.0), (-1.0, 1.0));
    for (i, &g) in got.iter().enumerate() {
        let v = rgba.pixels.get(i) as f64;
        let want = if i % 4 == 3 { (v / 4095.0) as f32 } else { colours[i] };
        assert_eq!(g.to_bits(), want.to_bits(), "sample {i}");
    }
}

/// Gray+alpha made float by `--out`: on stdout an NPY (as docs/formats.md says of float frames
/// with alpha: PFM holds none), the gray samples rescaled and alpha from [0, maxval] onto [0, 1];
/// to a container that cannot hold it, one line naming the one that can (the fuzz finding
/// crates/fuzz/regressions/tools/panic-f26802da3066fed5.bin had ended in "internal error in the
/// writer: a PFM has 1 or 3 channels, not 2").
#[test]
fn out_range_of_gray_with_alpha() {
    let mut rng = rng();
    let px: Vec<u16> = (0..2 * 60).map(|_| rng.u16(0..=1000)).collect();
    let ga = Frame {
        format: Format::Pam,
        ..Frame::with_channels(12, 5, Channels::GrayAlpha, 1000, Pixels::U16(px.into()))
    };
    let input = stream(std::slice::from_ref(&ga));
    let args = ["--out", "-1:1", "--saturate", "0"];
    let out = read_frames(&run_ok("stretch", "cpu", &args, &input));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].format, out[0].channels), (Format::Npy, Channels::GrayAlpha));
    let (lo, hi) =
        (0..60).map(|i| ga.pixels.get(2 * i)).fold((u16::MAX, 0), |(l, h), v| (l.min(v), h.max(v)));
    let colours = skimage_rescale(&ga, (lo as f64, hi as f64), (-1.0, 1.0));
    for (i, &g) in floats(&out[0]).iter().enumerate() {
        let v = ga.pixels.get(i) as f64;
        let want = if i % 2 == 1 { (v / 1000.0) as f32 } else { colours[i] };
        assert_eq!(g.to_bits(), want.to_bits(), "sample {i}");
    }
    let dir = temp_dir("stretch-out-gray-alpha");
    for ext in ["pfm", "tif", "pam", "png"] {
        let path = dir.join(format!("out.{ext}"));
        let mut all = args.to_vec();
        all.extend(["-o", path.to_str().unwrap()]);
        let e = run_err("stretch", &all, &input, 2);
        assert!(e.contains("cannot hold this 32-bit float gray+alpha frame: write .npy"), "{ext}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{ext}: {e}");
        assert!(!e.contains("internal error"), "{ext}: {e}");
    }
}

/// The GPU's float output is the CPU's bit for bit: float frames (the float32 arithmetic of the
/// linear scale, the double one of the others; NaN, infinities, zeros, subnormals, random bits;
/// flat ranges), and the tables of 8- and 16-bit frames of every short length (a chunk of 16
/// 8-bit samples is 64 output bytes); through the tool.
#[test]
fn gpu_out_range_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut v = hard_floats(&mut rng, 1 << 18);
    v.extend((0..1 << 16).map(|_| f32::from_bits(rng.u32(..))));
    let frame = Frame::new(v.len(), 1, 1, Pixels::F32(v.into()));
    for (_, scale) in SCALES {
        for (lo, hi) in
            [(-100.0, 300.0), (0.0, 1e-30), (0.0, 1e-50), (-3e38, 3e38), (7.0, 7.0), (0.1, 0.1000000001)]
        {
            // The last: B - A beyond float32, infinite there (0 times it is NaN).
            for out in [(0.0, 1.0), (-1.5, 1e6), (0.3, 0.30000001), (0.0, 1e39)] {
                let op = StretchTo { curve: Curve { lo, hi, scale, maxout: 0 }, out };
                assert!(
                    same_bits(&op.cpu(&frame).unwrap(), &op.gpu(&gpu, &frame).unwrap()),
                    "{scale:?} {lo}:{hi} {out:?}"
                );
            }
        }
    }
    for maxval in [255, 200, 4095, 65535] {
        for w in (1..=70).chain([4099]) {
            let frame = random_frame(&mut rng, w, 1, maxval);
            let op = StretchTo {
                curve: Curve { lo: 1.0, hi: maxval as f64 * 0.9, scale: Scale::Asinh, maxout: 0 },
                out: (-1.0, 1.0),
            };
            assert!(same_bits(&op.cpu(&frame).unwrap(), &op.gpu(&gpu, &frame).unwrap()), "{maxval} {w}");
        }
    }
    drop(gpu);
    for (name, args) in [
        ("dem.npy", &["--out", "0:1", "--zscale"][..]),
        ("dem.npy", &["--out", "-1:1", "--scale", "log"][..]),
        ("dem16.pgm", &["--out", "0:1"][..]),
        ("astronaut.png", &["--colour", "each", "--out", "0:255"][..]),
    ] {
        let input = fixture_bytes(name);
        assert!(
            run_ok("stretch", "gpu", args, &input) == run_ok("stretch", "cpu", args, &input),
            "{name} {args:?}"
        );
    }
    // RGBA, 16-bit: the colours and alpha (a map each) through the float table kernel.
    let px: Vec<u16> = (0..4 * 300).map(|_| rng.u16(0..=4095)).collect();
    let rgba = Frame {
        format: Format::Pam,
        ..Frame::with_channels(30, 10, Channels::RgbAlpha, 4095, Pixels::U16(px.into()))
    };
    let input = stream(&[rgba]);
    let args = ["--zscale", "--out", "-1:1"];
    let (gpu_out, cpu_out) =
        (run_to_tiff("stretch", "gpu", &args, &input), run_to_tiff("stretch", "cpu", &args, &input));
    assert!(same_bits(&gpu_out, &cpu_out), "RGBA {args:?}");
}

/// A FITS image end to end, as an astronomer would display it with astropy and scikit-image:
/// `d = fits.getdata(f)`, `lo, hi = ZScaleInterval().get_limits(d)`,
/// `rescale_intensity(d, in_range=(lo, hi), out_range=(0, 1))`; float32 (BITPIX -32, NaN and
/// infinities among the values) and 16-bit (BITPIX 16, BZERO 32768) images written by astropy.
/// Where our limits are astropy's bits the output is scikit-image's bits; elsewhere within
/// 1e-6.
#[test]
fn zscale_of_fits_is_astropy_then_rescale_intensity() {
    let script = "from astropy.io import fits\nfrom astropy.visualization import ZScaleInterval\n\
         import io, warnings; warnings.simplefilter('ignore')\n\
         rng = np.random.default_rng(7)\n\
         kind = open(sys.argv[1]).read()\n\
         if kind == 'f4':\n    \
             d = (100 + rng.normal(0, 5, (97, 131)) + 3e3 * (rng.random((97, 131)) < 0.01)).astype('>f4')\n    \
             d[3, 4] = np.nan; d[50, 7] = np.inf; d[9, 90] = -np.inf\n\
         else:\n    \
             d = (1000 + rng.normal(0, 40, (97, 131)) + 5e4 * (rng.random((97, 131)) < 0.01)).clip(0, 65535).astype(np.uint16)\n\
         b = io.BytesIO(); fits.PrimaryHDU(d).writeto(b)\n\
         lo, hi = ZScaleInterval().get_limits(fits.getdata(io.BytesIO(b.getvalue())))\n\
         r = skimage.exposure.rescale_intensity(fits.getdata(io.BytesIO(b.getvalue())), in_range=(float(lo), float(hi)), out_range=(0.0, 1.0))\n\
         head = ('%s %s\\n' % (float(lo).hex(), float(hi).hex())).encode()\n\
         sys.stdout.buffer.write(head + r.astype('<f4').tobytes() + b.getvalue())\n";
    for kind in ["f4", "u2"] {
        let out = skimage(script, &[kind.as_bytes()]);
        let line = out.iter().position(|&b| b == b'\n').unwrap();
        let limits: Vec<f64> = std::str::from_utf8(&out[..line]).unwrap().split(' ').map(from_hex).collect();
        let n = 97 * 131;
        let want: Vec<f32> = out[line + 1..line + 1 + 4 * n]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let fits = &out[line + 1 + 4 * n..];
        let frame = read_frames(fits).remove(0);
        assert_eq!((frame.width, frame.height), (131, 97), "{kind}");
        let ours = ZScale::default().of_frame(&frame, &[0], None).unwrap().unwrap();
        let got = floats(&run_to_tiff("stretch", "cpu", &["--zscale", "--out", "0:1"], fits));
        if (ours.0.to_bits(), ours.1.to_bits()) == (limits[0].to_bits(), limits[1].to_bits()) {
            assert_same_floats(&got, &want, kind);
        } else {
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g.is_nan() == w.is_nan() && (w.is_nan() || (g - w).abs() <= 1e-6),
                    "{kind}: sample {i}, {g} against {w}"
                );
            }
        }
        eprintln!("{kind}: limits {ours:?}, astropy's {limits:?}");
    }
}

/// `--zscale --mask`: astropy's limits of the masked samples alone (what it makes of a masked
/// array: the values where the mask is false, in order), here of the pixels the mask file keeps;
/// the map then applies to every pixel: `--out 0:1` is scikit-image's rescale with those limits,
/// bit for bit (astropy's line made exact, as in zscale_limits_are_astropys); gray float and
/// 16-bit frames, and a colour one with a range a channel.
#[test]
fn zscale_with_a_mask_counts_the_pixels_in() {
    let dir = temp_dir("stretch-zscale-mask");
    let mut rng = rng();
    let (w, h) = (61, 43);
    let mask = random_mask(&mut rng, w, h);
    let path = mask_file(&dir, "mask.pgm", w, h, &mask);
    let sky: Vec<f32> = (0..w * h)
        .map(|i| if i % 97 == 5 { f32::NAN } else { 50.0 + (i as f32 * 0.37).sin() * 9.0 })
        .collect();
    let frames = [
        npy(Frame::new(w, h, 1, Pixels::F32(sky.into()))),
        random_frame(&mut rng, w, h, 65535),
        random_colour_frame(&mut rng, w, h, Channels::Rgb, 255),
    ];
    for frame in frames {
        let n = frame.channels.count();
        let each = n > 1;
        let mut args = vec!["--zscale", "--mask", path.to_str().unwrap(), "--out", "0:1"];
        if each {
            args.extend(["--colour", "each"]);
        }
        let got = floats(
            &read_frames(&run_ok("stretch", "cpu", &args, &stream(std::slice::from_ref(&frame)))).remove(0),
        );
        for c in 0..n {
            let plane = frame.plane(c);
            let kept: Vec<usize> = (0..w * h).filter(|&i| mask[i] != 0).collect();
            let inside = match &plane.pixels {
                Pixels::U8(v) => Pixels::U8(kept.iter().map(|&i| v[i]).collect::<Vec<_>>().into()),
                Pixels::U16(v) => Pixels::U16(kept.iter().map(|&i| v[i]).collect::<Vec<_>>().into()),
                Pixels::F32(v) => Pixels::F32(kept.iter().map(|&i| v[i]).collect::<Vec<_>>().into()),
            };
            let inside = Frame::new(kept.len(), 1, plane.maxval, inside);
            let (_, exact) = astropy_zscale(&[(&inside, &[0], ZScale::default())]).remove(0).unwrap();
            let want = skimage_rescale(&plane, exact, (0.0, 1.0));
            let got_c: Vec<f32> = got.iter().skip(c).step_by(n).copied().collect();
            assert_same_floats(&got_c, &want, &format!("{:?} channel {c}, limits {exact:?}", frame.depth()));
        }
    }
}
