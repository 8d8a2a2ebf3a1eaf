use histopipe_frame::{Channels, Format, Frame, Pixels, ReadOptions};
use histopipe_ops::bins::Bins;
use histopipe_ops::equalize::Equalize;
use histopipe_ops::histogram::{Histogram, PRIVATE_MAX_BINS, SHARED_MAX_BINS};
use histopipe_ops::Op;

pub mod float;
mod variants;

use crate::common::*;
use crate::opencv::{colour_recipe, pixels_like, sample_bytes, ColourRecipe};

fn samples_u8(frame: &Frame) -> &[u8] {
    match &frame.pixels {
        Pixels::U8(v) => v,
        _ => panic!("expected an 8-bit frame"),
    }
}

fn frame_u8(width: usize, height: usize, samples: Vec<u8>) -> Frame {
    let mut f = Frame::new(width, height, 255, Pixels::U8(samples.into()));
    f.format = Format::Pgm;
    f
}

fn frame_u16(width: usize, height: usize, maxval: u16, samples: Vec<u16>) -> Frame {
    let mut f = Frame::new(width, height, maxval, Pixels::U16(samples.into()));
    f.format = Format::Pgm;
    f
}

/// `cv2.equalizeHist` of each 8-bit frame, in one Python process.
fn opencv_equalize(frames: &[Frame]) -> Vec<Vec<u8>> {
    let shapes: Vec<String> = frames.iter().map(|f| format!("({}, {})", f.height, f.width)).collect();
    let script = format!(
        "for path, shape in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, np.uint8).reshape(shape)\n    \
         sys.stdout.buffer.write(cv2.equalizeHist(a).tobytes())\n",
        shapes.join(", ")
    );
    let inputs: Vec<&[u8]> = frames.iter().map(samples_u8).collect();
    let out = opencv(&script, &inputs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|f| {
            let (this, next) = rest.split_at(f.pixel_count());
            rest = next;
            this.to_vec()
        })
        .collect()
}

/// Frames of every shape and distribution the issue names, 8-bit or with samples up to `maxval`.
fn awkward_frames(rng: &mut fastrand::Rng, maxval: u16) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (w, h) in [(1, 1), (1, 301), (257, 1), (4097, 3), (31, 17), (640, 480)] {
        frames.extend(hard_frames(rng, w, h, maxval, 250));
    }
    for _ in 0..6 {
        let (w, h) = (rng.usize(1..300), rng.usize(1..300));
        frames.push(random_frame(rng, w, h, maxval));
    }
    frames
}

#[test]
fn matches_opencv_on_every_fixture() {
    let frames: Vec<Frame> = PGM_FIXTURES.iter().map(|n| fixture_frame(n)).collect();
    let expected = opencv_equalize(&frames);
    for ((name, frame), want) in PGM_FIXTURES.iter().zip(&frames).zip(expected) {
        let out = read_frames(&run_ok("equalize", "cpu", &[], &fixture_bytes(name))).remove(0);
        assert_eq!((out.width, out.height, out.maxval), (frame.width, frame.height, 255), "{name}");
        assert!(samples_u8(&out) == &want[..], "{name}: differs from cv2.equalizeHist");
    }
}

#[test]
fn matches_opencv_on_random_and_skewed_frames() {
    let mut rng = rng();
    let mut frames = awkward_frames(&mut rng, 255);
    // Over 2^24 pixels, N - cdf_min and the cumulative counts round when OpenCV converts them to
    // float: the CPU must round them the same way.
    let (w, h) = (4099, 4099);
    frames.push(frame_u8(w, h, (0..w * h).map(|_| if rng.u8(..) < 3 { rng.u8(..) } else { 9 }).collect()));
    frames.push(random_frame(&mut rng, w, h, 255));
    let expected = opencv_equalize(&frames);
    for (frame, want) in frames.iter().zip(expected) {
        let out = Equalize.cpu(frame).unwrap();
        assert!(
            samples_u8(&out) == &want[..],
            "{}x{}: differs from cv2.equalizeHist",
            frame.width,
            frame.height
        );
    }
}

#[test]
fn constant_and_two_valued_frames_like_opencv() {
    for samples in
        [vec![0u8; 12], vec![255; 12], vec![77; 12], [3u8, 200].repeat(6), [0u8, 0, 0, 255].repeat(3)]
    {
        let frame = frame_u8(4, 3, samples);
        let out =
            read_frames(&run_ok("equalize", "cpu", &[], &stream(std::slice::from_ref(&frame)))).remove(0);
        assert_eq!(
            samples_u8(&out),
            &opencv_equalize(std::slice::from_ref(&frame))[0][..],
            "{:?}",
            samples_u8(&frame)
        );
    }
}

/// 16-bit: the documented integer formula, computed independently with NumPy.
#[test]
fn sixteen_bit_follows_the_documented_formula() {
    let mut rng = rng();
    let mut frames = vec![fixture_frame("dem16.pgm")];
    frames.extend(awkward_frames(&mut rng, 1076).into_iter().step_by(3));
    frames.push(random_frame(&mut rng, 300, 200, 65535));
    let script = "for path, maxval in zip(sys.argv[1:], [MAXVALS]):\n    \
                  a = np.fromfile(path, '<u2').astype(np.int64)\n    \
                  cdf = np.cumsum(np.bincount(a, minlength=maxval + 1))\n    \
                  cmin = cdf[cdf > 0].min(); d = len(a) - cmin\n    \
                  up = np.maximum(cdf - cmin, 0)\n    \
                  lut = np.arange(maxval + 1) if d == 0 else (2 * up * maxval + d) // (2 * d)\n    \
                  sys.stdout.buffer.write(lut[a].astype('<u2').tobytes())\n";
    let maxvals: Vec<String> = frames.iter().map(|f| f.maxval.to_string()).collect();
    let inputs: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| match &f.pixels {
            Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
            _ => panic!("expected 16-bit"),
        })
        .collect();
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let expected = opencv(&script.replace("MAXVALS", &maxvals.join(", ")), &input_refs);
    let mut rest = &expected[..];
    for (i, frame) in frames.iter().enumerate() {
        let out = if i == 0 {
            read_frames(&run_ok("equalize", "cpu", &[], &fixture_bytes("dem16.pgm"))).remove(0)
        } else {
            Equalize.cpu(frame).unwrap()
        };
        assert_eq!(out.maxval, frame.maxval);
        let (want, next) = rest.split_at(2 * frame.pixel_count());
        rest = next;
        let Pixels::U16(got) = &out.pixels else { panic!("16-bit in, 16-bit out") };
        let got: Vec<u8> = got.iter().flat_map(|s| s.to_le_bytes()).collect();
        assert!(got == want, "frame {i}, {}x{} maxval {}", frame.width, frame.height, frame.maxval);
    }
}

#[test]
fn eight_bit_below_255_keeps_its_maxval() {
    let mut rng = rng();
    let mut frame = random_frame(&mut rng, 50, 40, 100);
    frame.pixels = Pixels::U8(samples_u8(&frame).iter().map(|&v| v / 2 + 10).collect());
    let out = read_frames(&run_ok("equalize", "cpu", &[], &stream(&[frame]))).remove(0);
    assert_eq!(out.maxval, 100);
    let s = samples_u8(&out);
    assert_eq!((s.iter().min(), s.iter().max()), (Some(&0), Some(&100)));
}

#[test]
fn each_frame_of_a_stream_by_its_own_histogram() {
    let frames = [fixture_frame("moon.pgm"), fixture_frame("page.pgm"), fixture_frame("dem16.pgm")];
    let together = run_ok("equalize", "cpu", &[], &stream(&frames));
    let apart: Vec<u8> = frames
        .iter()
        .flat_map(|f| run_ok("equalize", "cpu", &[], &stream(std::slice::from_ref(f))))
        .collect();
    assert!(together == apart);
    assert_eq!(read_frames(&together).len(), 3);
}

/// CPU and GPU give the same frames: odd sizes, skewed distributions, both depths, every 16-bit
/// value at once.
#[test]
fn gpu_matches_cpu_on_awkward_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = awkward_frames(&mut rng, 255);
    frames.extend(awkward_frames(&mut rng, 65535));
    for maxval in [rng.u16(256..65535), rng.u16(1..255)] {
        frames.extend(awkward_frames(&mut rng, maxval));
    }
    let mut all: Vec<u16> = (0..=65535).collect();
    rng.shuffle(&mut all);
    frames.push(frame_u16(256, 256, 65535, all.clone()));
    frames.push(frame_u16(511, 129, 65535, all.iter().cycle().take(511 * 129).copied().collect()));
    for frame in &frames {
        let what = format!("{}x{} maxval {}", frame.width, frame.height, frame.maxval);
        assert_eq!(Equalize.cpu(frame).unwrap(), Equalize.gpu(&gpu, frame).unwrap(), "{what}");
        // At most one bin per level: a frame with maxval under 7 has fewer than 8 levels.
        let levels = frame.maxval as usize + 1;
        for bins in [None, Some(1), Some(8.min(levels)), Some(frame.maxval as usize / 3 + 1)] {
            let h = Histogram { bins };
            assert_eq!(h.cpu(frame).unwrap(), h.gpu(&gpu, frame).unwrap(), "{what}, {bins:?} bins");
        }
    }
    // Every histogram kernel (registers, shared-memory copies, global atomics) on the same frame,
    // at the bin counts where the choice changes.
    let frame = &frames[frames.len() - 1];
    let edges = [PRIVATE_MAX_BINS, PRIVATE_MAX_BINS + 1, SHARED_MAX_BINS, SHARED_MAX_BINS + 1];
    for n in edges.map(|n| n as usize) {
        assert!(Bins::new(Some(n), 65535).is_ok());
        let h = Histogram { bins: Some(n) };
        assert_eq!(h.cpu(frame).unwrap(), h.gpu(&gpu, frame).unwrap(), "{n} bins");
    }
}

#[test]
fn gpu_backend_matches_opencv_and_cpu_on_fixtures() {
    let Some(_gpu) = gpu() else { return };
    let frames: Vec<Frame> = PGM_FIXTURES.iter().map(|n| fixture_frame(n)).collect();
    let expected = opencv_equalize(&frames);
    for (name, want) in PGM_FIXTURES.iter().zip(expected) {
        let out = read_frames(&run_ok("equalize", "gpu", &[], &fixture_bytes(name))).remove(0);
        assert!(samples_u8(&out) == &want[..], "{name}: GPU differs from cv2.equalizeHist");
    }
    // One process, several frames of both depths: pooled buffers are reused across frames.
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("dem16.pgm"), fixture_frame("page.pgm")]);
    assert!(run_ok("equalize", "gpu", &[], &input) == run_ok("equalize", "cpu", &[], &input));
}

/// The tool's output frames for `frames` as one stream, with `args`.
fn equalize_stream(backend: &str, args: &[&str], frames: &[Frame]) -> Vec<Frame> {
    read_frames(&run_ok("equalize", backend, args, &stream(frames)))
}

/// Each output has its input's size, channels and maxval, and the samples of `want`.
fn assert_frames(what: &str, inputs: &[Frame], outs: &[Frame], want: &[Pixels]) {
    assert_eq!(outs.len(), inputs.len(), "{what}");
    for (i, ((input, out), want)) in inputs.iter().zip(outs).zip(want).enumerate() {
        let shape = |f: &Frame| (f.width, f.height, f.channels, f.maxval);
        assert_eq!(shape(out), shape(input), "{what}: frame {i}");
        let differ = (0..want.len()).filter(|&k| out.pixels.get(k) != want.get(k)).count();
        assert!(
            &out.pixels == want,
            "{what}: frame {i} ({}x{} {}): {differ} samples differ from OpenCV's recipe",
            input.width,
            input.height,
            input.channels.name()
        );
    }
}

/// OpenCV's `equalizeHist` for `n` frames, as `colour_recipe` takes it.
fn equalize_hist(n: usize) -> Vec<String> {
    vec!["cv2.equalizeHist(g)".to_owned(); n]
}

/// `--colour luma` (the default) on the colour fixtures: OpenCV's recipe, byte for byte, on the
/// RGB samples our reader gives (rocket.jpg: the same decoder for the tool and for cv2's input).
#[test]
fn colour_luma_matches_opencv_recipe_on_fixtures() {
    for name in ["astronaut.png", "rocket.jpg"] {
        let frame = fixture_frame(name);
        assert_eq!(frame.channels, Channels::Rgb, "{name} is read as colour");
        let want = colour_recipe(std::slice::from_ref(&frame), ColourRecipe::Luma, &equalize_hist(1));
        for args in [&[][..], &["--colour", "luma"]] {
            let out = read_frames(&run_ok("equalize", "cpu", args, &fixture_bytes(name)));
            assert_frames(&format!("{name} {args:?}"), std::slice::from_ref(&frame), &out, &want);
        }
    }
}

/// Random, flat, few-coloured and skewed 8-bit frames, RGB and RGBA (PAM RGB_ALPHA): the
/// recipe on R, G, B; alpha carried unchanged.
#[test]
fn colour_luma_matches_opencv_recipe_with_and_without_alpha() {
    let mut rng = rng();
    let mut frames = hard_colour_frames(&mut rng, Channels::Rgb, 255);
    frames.extend(hard_colour_frames(&mut rng, Channels::RgbAlpha, 255));
    let want = colour_recipe(&frames, ColourRecipe::Luma, &equalize_hist(frames.len()));
    assert_frames("luma", &frames, &equalize_stream("cpu", &[], &frames), &want);
}

/// `--colour each`: `cv2.equalizeHist` of R, G and B on their own; alpha carried.
#[test]
fn colour_each_matches_opencv_per_channel() {
    let mut rng = rng();
    let mut frames = vec![fixture_frame("astronaut.png"), fixture_frame("rocket.jpg")];
    frames.extend(hard_colour_frames(&mut rng, Channels::RgbAlpha, 255).into_iter().step_by(2));
    frames.extend(hard_colour_frames(&mut rng, Channels::Rgb, 255).into_iter().step_by(3));
    let want = colour_recipe(&frames, ColourRecipe::Each, &equalize_hist(frames.len()));
    assert_frames("each", &frames, &equalize_stream("cpu", &["--colour", "each"], &frames), &want);
}

/// 16-bit luma: OpenCV's 16-bit YCrCb conversions around our 16-bit equalization of Y (equalizeHist
/// takes 8-bit images only), itself tested above; samples over a maxval under 65535 are clamped.
#[test]
fn sixteen_bit_luma_is_opencv_ycrcb_around_our_equalize() {
    let mut rng = rng();
    let mut frames =
        hard_colour_frames(&mut rng, Channels::RgbAlpha, 65535).into_iter().step_by(2).collect::<Vec<_>>();
    frames.extend(hard_colour_frames(&mut rng, Channels::Rgb, 65535).into_iter().step_by(3));
    frames.push(random_colour_frame(&mut rng, 64, 48, Channels::Rgb, 4000));
    frames.push(random_colour_frame(&mut rng, 33, 9, Channels::RgbAlpha, 1076));
    let inputs: Vec<Vec<u8>> = frames.iter().map(|f| sample_bytes(&f.pixels)).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let shapes: Vec<String> =
        frames.iter().map(|f| format!("({}, {}, {})", f.height, f.width, f.channels.count())).collect();
    // Y, Cr, Cb planes of every frame, one after another.
    let ycc = opencv(
        &format!(
            "for path, (h, w, n) in zip(sys.argv[1:], [{}]):\n    \
             a = np.fromfile(path, '<u2').reshape(h, w, n)\n    \
             ycc = cv2.cvtColor(np.ascontiguousarray(a[..., 2::-1]), cv2.COLOR_BGR2YCrCb)\n    \
             sys.stdout.buffer.write(np.moveaxis(ycc, 2, 0).astype('<u2').tobytes())\n",
            shapes.join(", ")
        ),
        &refs,
    );
    // Y equalized by our gray path; Cr and Cb as they were.
    let mut rest = &ycc[..];
    let mut planes = Vec::new();
    for f in &frames {
        let (this, next) = rest.split_at(6 * f.pixel_count());
        rest = next;
        let (y, chroma) = this.split_at(2 * f.pixel_count());
        let y = frame_u16(f.width, f.height, f.maxval, pixels_u16(y));
        let Pixels::U16(eq) = Equalize.cpu(&y).unwrap().pixels else { panic!("16-bit") };
        planes.push([eq.iter().flat_map(|s| s.to_le_bytes()).collect(), chroma.to_vec()].concat());
    }
    let params: Vec<String> = frames
        .iter()
        .map(|f| format!("({}, {}, {}, {})", f.height, f.width, f.channels.count(), f.maxval))
        .collect();
    let mut scripts_inputs: Vec<&[u8]> = planes.iter().map(Vec::as_slice).collect();
    scripts_inputs.extend(&refs);
    let back = opencv(
        &format!(
            "k = len(sys.argv[1:]) // 2\n\
             for path, orig, (h, w, n, m) in zip(sys.argv[1:k + 1], sys.argv[k + 1:], [{}]):\n    \
             ycc = np.ascontiguousarray(np.moveaxis(np.fromfile(path, '<u2').reshape(3, h, w), 0, 2))\n    \
             res = np.fromfile(orig, '<u2').reshape(h, w, n)\n    \
             res[..., :3] = np.minimum(cv2.cvtColor(ycc, cv2.COLOR_YCrCb2BGR), m)[..., ::-1]\n    \
             sys.stdout.buffer.write(res.astype('<u2').tobytes())\n",
            params.join(", ")
        ),
        &scripts_inputs,
    );
    let mut rest = &back[..];
    let want: Vec<Pixels> = frames
        .iter()
        .map(|f| {
            let (this, next) = rest.split_at(2 * f.pixels.len());
            rest = next;
            pixels_like(&f.pixels, this)
        })
        .collect();
    assert_frames("16-bit luma", &frames, &equalize_stream("cpu", &[], &frames), &want);
}

fn pixels_u16(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect()
}

/// `--colour gray`: colour read as gray (the reader's BGR2GRAY), equalized, written gray.
#[test]
fn colour_gray_reads_and_writes_gray() {
    let gray = ReadOptions { gray: true, ..Default::default() };
    for name in ["astronaut.png", "rocket.jpg"] {
        let frame = read_frames_with(&fixture_bytes(name), gray).remove(0);
        let out =
            read_frames(&run_ok("equalize", "cpu", &["--colour", "gray"], &fixture_bytes(name))).remove(0);
        assert_eq!(out.channels, Channels::Gray, "{name}");
        assert!(samples_u8(&out) == &opencv_equalize(std::slice::from_ref(&frame))[0][..], "{name}");
    }
}

/// Gray frames come out the same in every mode; a gray frame with alpha has its gray equalized
/// and its alpha carried.
#[test]
fn gray_frames_alike_in_every_mode_and_gray_alpha_keeps_alpha() {
    let mut rng = rng();
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("dem16.pgm")]);
    let default = run_ok("equalize", "cpu", &[], &input);
    for mode in ["luma", "each", "gray"] {
        assert!(run_ok("equalize", "cpu", &["--colour", mode], &input) == default, "--colour {mode}");
    }
    for maxval in [255, 65535] {
        let frame = random_colour_frame(&mut rng, 37, 23, Channels::GrayAlpha, maxval);
        let want = Equalize.cpu(&frame.plane(0)).unwrap();
        for mode in ["luma", "each"] {
            let out = equalize_stream("cpu", &["--colour", mode], std::slice::from_ref(&frame)).remove(0);
            assert_eq!((out.channels, out.maxval), (Channels::GrayAlpha, maxval));
            assert_eq!(out.plane(0).pixels, want.pixels, "--colour {mode}, maxval {maxval}: gray");
            assert_eq!(out.plane(1).pixels, frame.plane(1).pixels, "--colour {mode}, maxval {maxval}: alpha");
        }
    }
}

#[test]
fn bad_colour_modes_are_refused() {
    for mode in ["rgb", "", "Luma"] {
        let e = run_err("equalize", &["--colour", mode], &fixture_bytes("camera.pgm"), 2);
        assert!(e.contains("--colour"), "{mode:?}: {e}");
    }
}

/// Colour frames on the GPU: the same bytes as the CPU's in every mode (under `luma` every step
/// on the GPU, the conversions too; under the others the planes' work on the GPU), maxvals under
/// the sample type's included.
#[test]
fn gpu_matches_cpu_on_colour_frames() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = gpu_colour_frames(&mut rng);
    frames.extend(hard_colour_frames(&mut rng, Channels::Rgb, 200).into_iter().step_by(2));
    frames.extend(hard_colour_frames(&mut rng, Channels::RgbAlpha, 4000).into_iter().step_by(2));
    let input = stream(&frames);
    for mode in ["luma", "each"] {
        let args = ["--colour", mode];
        assert!(
            run_ok("equalize", "gpu", &args, &input) == run_ok("equalize", "cpu", &args, &input),
            "{mode}"
        );
    }
    let jpg = fixture_bytes("rocket.jpg");
    let args = ["--colour", "gray"];
    assert!(run_ok("equalize", "gpu", &args, &jpg) == run_ok("equalize", "cpu", &args, &jpg));
}
