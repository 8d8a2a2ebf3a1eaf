//! Float frames through `equalize`: scikit-image's `equalize_hist` bit for bit (float32 out, as it
//! returns for float32 in), its `mask=`, NaN and infinities left out of the counts, the options
//! that refuse float frames, and the GPU writing the CPU's bits (issue 49, 5). The frames shared
//! with `clahe`'s float tests are made here.

use histopipe_frame::{Channels, Format, Frame, Pixels};
use histopipe_ops::equalize::FloatEqualize;
use histopipe_ops::mask::Mask;
use histopipe_ops::{Op, CANONICAL_NAN};

use crate::common::*;

/// A gray float frame (PFM, which the tools write back to stdout).
pub fn float_frame(width: usize, height: usize, samples: Vec<f32>) -> Frame {
    let mut f = Frame::new(width, height, 1, Pixels::F32(samples.into()));
    f.format = Format::Pfm;
    f
}

pub fn floats(frame: &Frame) -> &[f32] {
    match &frame.pixels {
        Pixels::F32(v) => v,
        _ => panic!("expected a float frame"),
    }
}

/// The frames every float test runs: the fixtures as `img / 255` in float32, dem.npy, random
/// frames of awkward shapes, skewed and signed ones, frames of one and two values, and the 256
/// 8-bit levels (samples on bin edges).
pub fn float_frames(rng: &mut fastrand::Rng) -> Vec<(String, Frame)> {
    let mut frames = Vec::new();
    for name in PGM_FIXTURES {
        let f = fixture_frame(name);
        let v = (0..f.pixels.len()).map(|k| f.pixels.get(k) as f32 / 255.0).collect();
        frames.push((format!("{name}/255"), float_frame(f.width, f.height, v)));
    }
    frames.push(("dem.npy".into(), fixture_frame("dem.npy")));
    for (w, h) in [(1, 1), (1, 301), (257, 1), (31, 17), (5, 3), (127, 129), (640, 480)] {
        let v = (0..w * h).map(|_| rng.f32()).collect();
        frames.push((format!("random {w}x{h}"), float_frame(w, h, v)));
    }
    let (w, h) = (61, 50);
    let skewed = (0..w * h).map(|_| rng.f32().powi(8)).collect();
    frames.push(("skewed".into(), float_frame(w, h, skewed)));
    let signed = (0..w * h).map(|_| rng.f32() * 2.0 - 1.0).collect();
    frames.push(("signed -1..1".into(), float_frame(w, h, signed)));
    let wide = (0..w * h).map(|_| (rng.f32() - 0.3) * 1e4).collect();
    frames.push(("wide -3000..7000".into(), float_frame(w, h, wide)));
    for v in [0.3, 0.0, 1.0, -0.5] {
        frames.push((format!("flat {v}"), float_frame(9, 10, vec![v; 90])));
    }
    let two = (0..90).map(|k| if k % 3 == 0 { 0.25 } else { 0.75 }).collect();
    frames.push(("two values".into(), float_frame(9, 10, two)));
    let levels = (0..256 * 3).map(|k| (k % 256) as f32 / 255.0).collect();
    frames.push(("the 256 levels".into(), float_frame(64, 12, levels)));
    frames
}

/// `expr` (Python, of the float32 array `a` and the frame's `i`) for each frame, by scikit-image,
/// as float32; `extra` bytes per frame are `sys.argv[n + 1 + i]` (a mask, say).
pub fn skimage_floats(expr: &str, frames: &[&Frame], extra: &[Vec<u8>]) -> Vec<Vec<f32>> {
    let shapes: Vec<String> = frames.iter().map(|f| format!("({}, {})", f.height, f.width)).collect();
    let script = format!(
        "import warnings\nwarnings.simplefilter('ignore')\nshapes = [{}]\nn = len(shapes)\n\
         for i, shape in enumerate(shapes):\n    \
         a = np.fromfile(sys.argv[1 + i], '<f4').reshape(shape)\n    \
         out = np.asarray({expr}).astype(np.float32)\n    \
         assert out.shape == shape, out.shape\n    \
         sys.stdout.buffer.write(out.tobytes())\n",
        shapes.join(", ")
    );
    let raw: Vec<Vec<u8>> =
        frames.iter().map(|f| floats(f).iter().flat_map(|s| s.to_le_bytes()).collect()).collect();
    let inputs: Vec<&[u8]> = raw.iter().chain(extra).map(|v| &v[..]).collect();
    let out = skimage(&script, &inputs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|f| {
            let (this, next) = rest.split_at(4 * f.pixel_count());
            rest = next;
            this.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
        })
        .collect()
}

/// `got` has the bits of `want`, NaN for NaN (ours the one quiet NaN); the largest difference
/// in ULPs is in the message otherwise.
pub fn assert_same_floats(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut differ = 0;
    let mut ulps = 0i64;
    for (g, w) in got.iter().zip(want) {
        if w.is_nan() {
            assert_eq!(g.to_bits(), CANONICAL_NAN, "{what}: NaN expected, got {g}");
        } else if g.to_bits() != w.to_bits() {
            differ += 1;
            ulps = ulps.max((g.to_bits() as i64 - w.to_bits() as i64).abs());
        }
    }
    assert_eq!(differ, 0, "{what}: {differ} samples differ from scikit-image's, by up to {ulps} ULPs");
}

fn equalize_floats(backend: &str, args: &[&str], frames: &[&Frame]) -> Vec<Frame> {
    let owned: Vec<Frame> = frames.iter().map(|&f| f.clone()).collect();
    read_frames(&run_ok("equalize", backend, args, &stream(&owned)))
}

#[test]
fn float_frames_are_skimages_equalize_hist_bit_for_bit() {
    let frames = float_frames(&mut rng());
    let inputs: Vec<&Frame> = frames.iter().map(|(_, f)| f).collect();
    let want = skimage_floats("skimage.exposure.equalize_hist(a)", &inputs, &[]);
    let outs = equalize_floats("cpu", &[], &inputs);
    assert_eq!(outs.len(), frames.len());
    for (((name, input), out), want) in frames.iter().zip(&outs).zip(&want) {
        assert_eq!((out.width, out.height, out.channels), (input.width, input.height, Channels::Gray));
        assert_same_floats(name, floats(out), want);
    }
}

/// `--mask` is equalize_hist's `mask=`; NaN and infinities (counted or not) are left out, as
/// `mask & isfinite(a)`; NaN stays NaN; a mask of no finite sample makes every sample NaN.
#[test]
fn the_mask_and_non_finite_samples_are_skimages_mask() {
    let mut rng = rng();
    let dir = temp_dir("equalize-float-mask");
    let (w, h) = (47, 33);
    let mask = random_mask(&mut rng, w, h);
    let path = mask_file(&dir, "mask.pgm", w, h, &mask);
    let plain = float_frame(w, h, (0..w * h).map(|_| rng.f32() * 3.0 - 1.0).collect());
    let mut sprinkled = plain.clone();
    if let Pixels::F32(v) = &mut sprinkled.pixels {
        for (k, s) in v.iter_mut().enumerate() {
            *s = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, *s][k * 7 % 11 % 5];
        }
    }
    let none_finite =
        float_frame(w, h, (0..w * h).map(|k| if mask[k] != 0 { f32::NAN } else { 0.5 }).collect());
    let frames = [&plain, &sprinkled, &none_finite];
    let masks = vec![mask.clone(); 3];
    let expr = "skimage.exposure.equalize_hist(a, mask=np.fromfile(sys.argv[1 + n + i], np.uint8)\
                .reshape(shape).astype(bool) & np.isfinite(a))";
    let want = skimage_floats(expr, &frames, &masks);
    let outs = equalize_floats("cpu", &["--mask", path.to_str().unwrap()], &frames);
    for (i, (out, want)) in outs.iter().zip(&want).enumerate() {
        assert_same_floats(&format!("masked frame {i}"), floats(out), want);
    }
    assert!(floats(&outs[2]).iter().all(|s| s.to_bits() == CANONICAL_NAN), "nothing counted: all NaN");
    // Without a mask, the sprinkled frame is the finite samples' equalize_hist.
    let want = skimage_floats("skimage.exposure.equalize_hist(a, mask=np.isfinite(a))", &[&sprinkled], &[]);
    let out = equalize_floats("cpu", &[], &[&sprinkled]);
    assert_same_floats("NaN and infinities", floats(&out[0]), &want[0]);
}

/// `--colour each` is equalize_hist of each channel; `gray` of the frame read as gray.
#[test]
fn colour_float_frames_by_channel_and_the_modes_that_refuse_them() {
    let mut rng = rng();
    let (w, h) = (23, 19);
    let mut rgb = Frame::with_channels(
        w,
        h,
        Channels::Rgb,
        1,
        Pixels::F32((0..w * h * 3).map(|_| rng.f32()).collect::<Vec<_>>().into()),
    );
    rgb.format = Format::Pfm;
    let planes: Vec<Frame> = (0..3).map(|c| rgb.plane(c)).collect();
    let want = skimage_floats("skimage.exposure.equalize_hist(a)", &planes.iter().collect::<Vec<_>>(), &[]);
    let out = equalize_floats("cpu", &["--colour", "each"], &[&rgb]).remove(0);
    assert_eq!(out.channels, Channels::Rgb);
    for (c, want) in want.iter().enumerate() {
        assert_same_floats(&format!("channel {c}"), floats(&out.plane(c)), want);
    }
    let e = run_err("equalize", &[], &stream(&[rgb]), 2);
    assert!(e.contains("--colour luma of a float colour frame: give --colour each"), "{e}");
}

#[test]
fn options_of_integer_levels_and_too_narrow_a_range_are_refused_in_one_line() {
    let dir = temp_dir("equalize-float-refused");
    let table = dir.join("t.csv");
    std::fs::write(&table, "level,mapped\n0,0\n").unwrap();
    let input = stream(&[float_frame(2, 2, vec![0.0, 0.5, 0.25, 1.0])]);
    let moon = fixture("moon.pgm");
    let csv = dir.join("saved.csv");
    for (flag, value) in [("--reference", &moon), ("--table", &table), ("--save-table", &csv)] {
        let e = run_err("equalize", &[flag, value.to_str().unwrap()], &input, 2);
        assert!(e.contains(&format!("{flag} maps integer levels, and the frame has 32-bit float")), "{e}");
    }
    let narrow = stream(&[float_frame(2, 1, vec![1000.0, 1000.01])]);
    let e = run_err("equalize", &[], &narrow, 2);
    assert!(e.contains("too narrow for 256 float32 bins"), "{e}");
}

/// The GPU's counts and interpolation give the CPU's bits, through the op (masked too) and the
/// tool.
#[test]
fn gpu_writes_the_cpus_float_bits() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = float_frames(&mut rng);
    let (w, h) = (333, 257);
    let mut sprinkled: Vec<f32> = (0..w * h).map(|_| rng.f32() * 8.0 - 4.0).collect();
    for k in (0..w * h).step_by(13) {
        sprinkled[k] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][k % 3];
    }
    frames.push(("sprinkled".into(), float_frame(w, h, sprinkled)));
    for (name, f) in &frames {
        let cpu = FloatEqualize::default().cpu(f).unwrap();
        assert!(same_bits(&cpu, &FloatEqualize::default().gpu(&gpu, f).unwrap()), "{name}: gpu differs");
        let bytes = random_mask(&mut rng, f.width, f.height);
        let op = FloatEqualize { mask: Some(Mask::of_frame(&bytes, f).unwrap()) };
        assert!(same_bits(&op.cpu(f).unwrap(), &op.gpu(&gpu, f).unwrap()), "{name} masked: gpu differs");
    }
    let inputs: Vec<Frame> = frames.iter().map(|(_, f)| f.clone()).collect();
    let input = stream(&inputs);
    assert!(run_ok("equalize", "gpu", &[], &input) == run_ok("equalize", "cpu", &[], &input));
}
