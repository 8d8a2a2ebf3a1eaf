//! Float frames through `clahe`: scikit-image's `equalize_adapthist(a, kernel_size=(max(H // GY,
//! 1), max(W // GX, 1)), clip_limit=C / 256)` bit for bit (float32 out), frames outside -1..1
//! rescaled onto 0..1 first, NaN and infinities, `--mask` and luma refused in one line, and the
//! GPU backend writing the CPU's bytes (issue 49, 5).

use histopipe_frame::{Channels, Format, Frame, Pixels};

use crate::common::*;
use crate::equalize::float::{assert_same_floats, float_frame, float_frames, floats, skimage_floats};

/// scikit-image's answer for `clahe --tiles GXxGY --clip C`, as a Python expression of `a`.
fn adapthist(gx: usize, gy: usize, clip: f64) -> String {
    format!(
        "skimage.exposure.equalize_adapthist(a if a.min() >= -1 and a.max() <= 1 else \
         skimage.exposure.rescale_intensity(a, out_range=(0.0, 1.0)), kernel_size=(max(a.shape[0] // {gy}, 1), \
         max(a.shape[1] // {gx}, 1)), clip_limit={clip:?} / 256)"
    )
}

fn clahe_floats(backend: &str, args: &[&str], frames: &[&Frame]) -> Vec<Frame> {
    let owned: Vec<Frame> = frames.iter().map(|&f| f.clone()).collect();
    read_frames(&run_ok("clahe", backend, args, &stream(&owned)))
}

/// Every float frame at the default, a few grids and clip limits (skimage's default 0.01 is
/// --clip 2.56; 0 is no clipping), and a grid finer than small frames (kernels of one pixel).
#[test]
fn float_frames_are_skimages_equalize_adapthist_bit_for_bit() {
    let frames = float_frames(&mut rng());
    let inputs: Vec<&Frame> = frames.iter().map(|(_, f)| f).collect();
    for (gx, gy, clip) in [(8, 8, 40.0), (3, 5, 2.0), (1, 1, 2.56), (16, 4, 0.0), (200, 3, 1.0)] {
        let (tiles, clip_arg) = (format!("{gx}x{gy}"), format!("{clip}"));
        let args = ["--tiles", &tiles, "--clip", &clip_arg];
        let want = skimage_floats(&adapthist(gx, gy, clip), &inputs, &[]);
        let outs = clahe_floats("cpu", &args, &inputs);
        assert_eq!(outs.len(), frames.len());
        for (((name, input), out), want) in frames.iter().zip(&outs).zip(&want) {
            assert_eq!((out.width, out.height, out.channels), (input.width, input.height, Channels::Gray));
            assert_same_floats(&format!("{name} {args:?}"), floats(out), want);
        }
    }
}

/// `--colour each` is equalize_adapthist of each channel.
#[test]
fn colour_float_frames_by_channel() {
    let mut rng = rng();
    let (w, h) = (41, 29);
    let samples: Vec<f32> = (0..w * h * 3).map(|_| rng.f32()).collect();
    let mut rgb = Frame::with_channels(w, h, Channels::Rgb, 1, Pixels::F32(samples.into()));
    rgb.format = Format::Pfm;
    let planes: Vec<Frame> = (0..3).map(|c| rgb.plane(c)).collect();
    let want = skimage_floats(&adapthist(8, 8, 3.0), &planes.iter().collect::<Vec<_>>(), &[]);
    let out = clahe_floats("cpu", &["--colour", "each", "--clip", "3"], &[&rgb]).remove(0);
    assert_eq!(out.channels, Channels::Rgb);
    for (c, want) in want.iter().enumerate() {
        assert_same_floats(&format!("channel {c}"), floats(&out.plane(c)), want);
    }
}

#[test]
fn nan_infinities_mask_and_luma_are_refused_in_one_line() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let input = stream(&[float_frame(3, 1, vec![0.5, bad, 0.25])]);
        let e = run_err("clahe", &[], &input, 2);
        assert!(e.contains(&format!("a sample {bad}: float frames take finite samples")), "{e}");
    }
    let dir = temp_dir("clahe-float-refused");
    let path = mask_file(&dir, "mask.pgm", 2, 2, &[1, 0, 1, 1]);
    let input = stream(&[float_frame(2, 2, vec![0.0, 0.5, 0.25, 1.0])]);
    let e = run_err("clahe", &["--mask", path.to_str().unwrap()], &input, 2);
    assert!(e.contains("--mask with a float frame") && e.contains("takes no mask"), "{e}");
    let mut rgb = Frame::with_channels(2, 1, Channels::Rgb, 1, Pixels::F32(vec![0.5; 6].into()));
    rgb.format = Format::Pfm;
    let e = run_err("clahe", &[], &stream(&[rgb]), 2);
    assert!(e.contains("--colour luma of a float colour frame: give --colour each"), "{e}");
}

/// The GPU backend runs the CPU's host code for float frames: the same bytes.
#[test]
fn gpu_backend_writes_the_cpus_float_bytes() {
    let Some(_gpu) = gpu() else { return };
    let frames: Vec<Frame> = float_frames(&mut rng()).into_iter().map(|(_, f)| f).collect();
    let input = stream(&frames);
    for args in [&[][..], &["--tiles", "3x5", "--clip", "2"]] {
        assert!(run_ok("clahe", "gpu", args, &input) == run_ok("clahe", "cpu", args, &input), "{args:?}");
    }
}
