use histopipe_frame::{Format, Frame, Pixels};
use histopipe_ops::bins::Bins;
use histopipe_ops::equalize::Equalize;
use histopipe_ops::histogram::{Histogram, PRIVATE_MAX_BINS, SHARED_MAX_BINS};
use histopipe_ops::Op;

use crate::common::*;

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
