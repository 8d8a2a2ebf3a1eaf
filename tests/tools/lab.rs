//! `--colour lab` in `equalize` and `clahe`: OpenCV's recipe on L of L*a*b* (cvtColor BGR2Lab,
//! equalizeHist or CLAHE of L, cvtColor Lab2BGR), byte for byte, on both backends; the conversions
//! themselves are tested over every colour in crates/frame (colour/opencv.rs).

use histopipe_frame::{Channels, Frame, Pixels};

use crate::common::*;
use crate::opencv::{pixels_like, sample_bytes};

/// OpenCV's recipe for each 8-bit colour frame (RGB or RGBA) as the samples of our frame:
/// `lab = cvtColor(bgr, COLOR_BGR2Lab)`, L replaced by `maps[i]` (a Python expression of the 2-D
/// array `g`), `cvtColor(lab, COLOR_Lab2BGR)`. Alpha, which the recipe has no place for, is the
/// input's. All in one Python process.
fn lab_recipe(frames: &[Frame], maps: &[String]) -> Vec<Pixels> {
    assert_eq!(frames.len(), maps.len(), "one expression a frame");
    let params: Vec<String> = frames
        .iter()
        .zip(maps)
        .map(|(f, e)| format!("({}, {}, {}, {:?})", f.height, f.width, f.channels.count(), e))
        .collect();
    let script = format!(
        "for path, (h, w, n, f) in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, np.uint8).reshape(h, w, n)\n    \
         bgr = np.ascontiguousarray(a[..., 2::-1])\n    \
         eq = eval('lambda g: ' + f)\n    \
         lab = cv2.cvtColor(bgr, cv2.COLOR_BGR2Lab)\n    \
         lab[..., 0] = eq(np.ascontiguousarray(lab[..., 0]))\n    \
         out = cv2.cvtColor(lab, cv2.COLOR_Lab2BGR)\n    \
         res = a.copy()\n    \
         res[..., :3] = out[..., ::-1]\n    \
         sys.stdout.buffer.write(res.tobytes())\n",
        params.join(", ")
    );
    let inputs: Vec<Vec<u8>> = frames.iter().map(|f| sample_bytes(&f.pixels)).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|f| {
            let (this, next) = rest.split_at(f.pixels.len());
            rest = next;
            pixels_like(&f.pixels, this)
        })
        .collect()
}

/// `cv2.createCLAHE` with `clahe`'s `--clip` and `--tiles`, as `lab_recipe` takes it.
fn create_clahe(clip: f64, gx: usize, gy: usize) -> String {
    format!("cv2.createCLAHE(clipLimit={clip:?}, tileGridSize=({gx}, {gy})).apply(g)")
}

/// Each output has its input's size and channels, the maxval `maxval(input)`, and `want`'s
/// samples.
fn assert_recipe(what: &str, inputs: &[Frame], outs: &[Frame], want: &[Pixels], maxval: fn(&Frame) -> u16) {
    assert_eq!(outs.len(), inputs.len(), "{what}");
    for (i, ((input, out), want)) in inputs.iter().zip(outs).zip(want).enumerate() {
        assert_eq!(
            (out.width, out.height, out.channels, out.maxval),
            (input.width, input.height, input.channels, maxval(input)),
            "{what}: frame {i}"
        );
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

/// The 8-bit colour frames of the tests: the colour fixtures (astronaut.png, rocket.jpg,
/// hubble_deep_field.jpg) and random, flat, few-coloured and skewed frames, RGB and RGBA.
fn colour_frames(rng: &mut fastrand::Rng) -> Vec<Frame> {
    let mut frames: Vec<Frame> =
        ["astronaut.png", "rocket.jpg", "hubble_deep_field.jpg"].into_iter().map(fixture_frame).collect();
    for f in &frames {
        assert_eq!(f.channels, Channels::Rgb, "fixtures read as colour");
    }
    frames.extend(hard_colour_frames(rng, Channels::Rgb, 255));
    frames.extend(hard_colour_frames(rng, Channels::RgbAlpha, 255));
    frames
}

#[test]
fn equalize_lab_matches_opencv_recipe() {
    let mut rng = rng();
    let frames = colour_frames(&mut rng);
    let want = lab_recipe(&frames, &vec!["cv2.equalizeHist(g)".to_owned(); frames.len()]);
    let out = read_frames(&run_ok("equalize", "cpu", &["--colour", "lab"], &stream(&frames)));
    assert_recipe("equalize --colour lab", &frames, &out, &want, |f| f.maxval);
}

#[test]
fn clahe_lab_matches_opencv_recipe() {
    let mut rng = rng();
    let frames = colour_frames(&mut rng);
    let settings: [(&[&str], f64, usize, usize); 2] =
        [(&[], 40.0, 8, 8), (&["--clip", "2", "--tiles", "3x5"], 2.0, 3, 5)];
    for (args, clip, gx, gy) in settings {
        let want = lab_recipe(&frames, &vec![create_clahe(clip, gx, gy); frames.len()]);
        let args: Vec<&str> = ["--colour", "lab"].iter().chain(args).copied().collect();
        let out = read_frames(&run_ok("clahe", "cpu", &args, &stream(&frames)));
        assert_recipe(&format!("clahe {args:?}"), &frames, &out, &want, |_| 255);
    }
}

/// Gray frames, with alpha or not, are mapped as in every mode; a 16-bit colour frame is refused
/// in one line that says why; an 8-bit frame of maxval under 255 is read as OpenCV reads it, 0..255.
#[test]
fn gray_frames_as_luma_and_16_bit_refused() {
    let mut rng = rng();
    let gray = stream(&[
        fixture_frame("camera.pgm"),
        random_colour_frame(&mut rng, 37, 23, Channels::GrayAlpha, 255),
    ]);
    for tool in ["equalize", "clahe"] {
        assert!(
            run_ok(tool, "cpu", &["--colour", "lab"], &gray)
                == run_ok(tool, "cpu", &["--colour", "luma"], &gray),
            "{tool}"
        );
        let deep = stream(&[random_colour_frame(&mut rng, 8, 8, Channels::Rgb, 65535)]);
        let e = run_err(tool, &["--colour", "lab"], &deep, 2);
        assert!(e.contains("--colour lab takes 8-bit frames") && e.lines().count() == 1, "{tool}: {e}");
    }
    // A maxval under 255: the samples are OpenCV's 8-bit ones, L spans 0..255 and so does the
    // output (both tools), the recipe's; alpha scaled from 0..100.
    let frame = random_colour_frame(&mut rng, 40, 30, Channels::RgbAlpha, 100);
    let input = stream(std::slice::from_ref(&frame));
    for (tool, map) in [("equalize", "cv2.equalizeHist(g)".to_owned()), ("clahe", create_clahe(40.0, 8, 8))] {
        let want = lab_recipe(std::slice::from_ref(&frame), &[map]).remove(0);
        let out = read_frames(&run_ok(tool, "cpu", &["--colour", "lab"], &input)).remove(0);
        assert_eq!((out.channels, out.maxval), (Channels::RgbAlpha, 255), "{tool}");
        for i in 0..frame.pixels.len() {
            let want =
                if i % 4 == 3 { (frame.pixels.get(i) as u32 * 510 + 100) / 200 } else { want.get(i) as u32 };
            assert_eq!(out.pixels.get(i) as u32, want, "{tool}: sample {i}");
        }
    }
}

/// `--mask` selects pixels of L: a mask of every pixel maps as no mask; a mask of none leaves L
/// as it is, so the frame comes out as OpenCV's round trip through L*a*b* (`Lab2BGR(BGR2Lab)`,
/// which is not the identity); the GPU gives the CPU's bytes.
#[test]
fn a_mask_selects_pixels_of_l() {
    let dir = temp_dir("lab-mask");
    let mut rng = rng();
    let frame = random_colour_frame(&mut rng, 64, 48, Channels::RgbAlpha, 255);
    let input = stream(std::slice::from_ref(&frame));
    let all = mask_file(&dir, "all.pgm", 64, 48, &[255; 64 * 48]);
    let none = mask_file(&dir, "none.pgm", 64, 48, &[0; 64 * 48]);
    let some = mask_file(&dir, "some.pgm", 64, 48, &random_mask(&mut rng, 64, 48));
    let round_trip = lab_recipe(std::slice::from_ref(&frame), &["g".to_owned()]).remove(0);
    assert!(round_trip != frame.pixels, "the round trip changes some pixels");
    for tool in ["equalize", "clahe"] {
        let args =
            |m: &std::path::Path| ["--colour", "lab", "--mask", m.to_str().unwrap()].map(str::to_owned);
        let run = |backend: &str, m: &std::path::Path| {
            run_ok(tool, backend, &args(m).each_ref().map(|s| &s[..]), &input)
        };
        assert!(run("cpu", &all) == run_ok(tool, "cpu", &["--colour", "lab"], &input), "{tool}: all");
        let out = read_frames(&run("cpu", &none)).remove(0);
        assert!(out.pixels == round_trip, "{tool}: none");
        if let Some(_gpu) = gpu() {
            assert!(run("gpu", &some) == run("cpu", &some), "{tool}: some, GPU");
        }
    }
}

/// A frame over the size at which the conversions are split over the CPU's threads gives the
/// bytes of the recipe, on one thread and on several.
#[test]
fn split_conversions_match_opencv_recipe() {
    let mut rng = rng();
    let frames = vec![random_colour_frame(&mut rng, 613, 389, Channels::RgbAlpha, 255)];
    let want = lab_recipe(&frames, &["cv2.equalizeHist(g)".to_owned()]);
    for threads in ["1", "3"] {
        let args = ["--colour", "lab", "--threads", threads];
        let out = read_frames(&run_ok("equalize", "cpu", &args, &stream(&frames)));
        assert_recipe(&format!("--threads {threads}"), &frames, &out, &want, |f| f.maxval);
    }
}

/// On the GPU the L plane's equalization or CLAHE runs on the device and the conversions on the
/// host: the same bytes as the CPU's.
#[test]
fn gpu_matches_cpu_under_lab() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = colour_frames(&mut rng);
    frames.push(random_colour_frame(&mut rng, 613, 389, Channels::RgbAlpha, 255));
    frames.push(random_colour_frame(&mut rng, 64, 48, Channels::RgbAlpha, 100));
    let input = stream(&frames);
    for (tool, args) in [
        ("equalize", &["--colour", "lab"][..]),
        ("clahe", &["--colour", "lab"][..]),
        ("clahe", &["--colour", "lab", "--clip", "2", "--tiles", "3x5"][..]),
    ] {
        assert!(run_ok(tool, "gpu", args, &input) == run_ok(tool, "cpu", args, &input), "{tool} {args:?}");
    }
}

/// `--reference` under `lab` matches the frame's L to the reference's L: a frame matched to
/// itself keeps its L, and comes out as OpenCV's round trip through L*a*b*; a 16-bit colour
/// reference is refused in one line.
#[test]
fn a_reference_is_matched_by_its_l() {
    let dir = temp_dir("lab-reference");
    let frame = fixture_frame("astronaut.png");
    let path = dir.join("astronaut.png");
    std::fs::write(&path, fixture_bytes("astronaut.png")).unwrap();
    let args = ["--colour", "lab", "--reference", path.to_str().unwrap()];
    let out = read_frames(&run_ok("equalize", "cpu", &args, &fixture_bytes("astronaut.png"))).remove(0);
    let round_trip = lab_recipe(std::slice::from_ref(&frame), &["g".to_owned()]).remove(0);
    assert!(out.pixels == round_trip, "astronaut matched to itself under lab");
    let mut rng = rng();
    let deep = dir.join("deep.pam");
    std::fs::write(&deep, stream(&[random_colour_frame(&mut rng, 8, 8, Channels::Rgb, 65535)])).unwrap();
    let args = ["--colour", "lab", "--reference", deep.to_str().unwrap()];
    let e = run_err("equalize", &args, &fixture_bytes("astronaut.png"), 2);
    assert!(e.contains("--colour lab takes 8-bit images"), "{e}");
}
