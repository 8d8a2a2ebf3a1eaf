//! `radon` against scikit-image's `skimage.transform.radon`, both `circle` modes, several sizes,
//! angle sets and sample types; the table; the refusals; GPU = CPU through the binaries.

use histopipe_cli::Common;
use histopipe_frame::{encode_npy_array, Format, Frame, NpyData, Pixels};
use histopipe_ops::radon::RadonParams;
use histopipe_ops::Op;

use crate::common::*;

/// The angles of `text` as numpy's arange (or the list) makes them, in Rust's round-trip form.
fn angle_list(text: &str) -> Vec<f64> {
    text.parse::<histopipe_ops::angles::Angles>().unwrap().0
}

/// A frame's samples as raw little-endian bytes, and numpy's dtype for them.
fn raw(frame: &Frame) -> (Vec<u8>, &'static str) {
    match &frame.pixels {
        Pixels::U8(v) => (v.to_vec(), "np.uint8"),
        Pixels::U16(v) => (v.iter().flat_map(|s| s.to_le_bytes()).collect(), "'<u2'"),
        Pixels::F32(v) => (v.iter().flat_map(|s| s.to_le_bytes()).collect(), "'<f4'"),
    }
}

/// scikit-image's sinograms of `frame` for each (angles, circle) case, as float64 arrays of
/// (N, angles) in one run of Python.
fn skimage_radon(frame: &Frame, cases: &[(&str, bool)]) -> Vec<(Vec<usize>, Vec<f64>)> {
    let (bytes, dtype) = raw(frame);
    let mut script = format!(
        "import warnings\nfrom skimage.transform import radon\nwarnings.simplefilter('ignore')\n\
         img = np.fromfile(sys.argv[1], {dtype}).reshape({}, {})\n",
        frame.height, frame.width
    );
    for (angles, circle) in cases {
        let list: Vec<String> = angle_list(angles).iter().map(|a| format!("{a:?}")).collect();
        let circle = if *circle { "True" } else { "False" };
        script.push_str(&format!(
            "s = radon(img, theta=np.array([{}], np.float64), circle={circle}).astype(np.float64)\n\
             sys.stdout.buffer.write(np.array(s.shape, np.int64).tobytes() + s.tobytes())\n",
            list.join(",")
        ));
    }
    let out = skimage(&script, &[&bytes]);
    let mut at = 0;
    let mut next = |n: usize| {
        let chunk = &out[at..at + 8 * n];
        at += 8 * n;
        chunk.chunks_exact(8).map(|c| c.try_into().unwrap()).collect::<Vec<[u8; 8]>>()
    };
    cases
        .iter()
        .map(|_| {
            let shape: Vec<usize> = next(2).into_iter().map(|b| i64::from_le_bytes(b) as usize).collect();
            let values = next(shape[0] * shape[1]).into_iter().map(f64::from_le_bytes).collect();
            (shape, values)
        })
        .collect()
}

fn radon_args(angles: &str, circle: bool) -> Vec<String> {
    let mut args = vec!["--angles".to_owned(), angles.to_owned()];
    if circle {
        args.push("--circle".into());
    }
    args
}

/// Ours on `backend`, as a float frame (PFM on stdout).
fn ours(frame: &Frame, backend: &str, args: &[String]) -> Frame {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = read_frames(&run_ok("radon", backend, &args, &stream(std::slice::from_ref(frame))));
    assert_eq!(out.len(), 1);
    out.into_iter().next().unwrap()
}

/// Ours against scikit-image on each case: the same shape, and every value within 1e-3 of
/// scikit-image's largest magnitude. Returns the worst relative difference.
fn check_against_skimage(frame: &Frame, cases: &[(&str, bool)]) -> f64 {
    let theirs = skimage_radon(frame, cases);
    let mut worst = 0f64;
    for ((angles, circle), (shape, expected)) in cases.iter().zip(theirs) {
        let got = ours(frame, "cpu", &radon_args(angles, *circle));
        let what =
            format!("{}x{} {:?} angles {angles} circle {circle}", frame.width, frame.height, frame.depth());
        assert_eq!((got.height, got.width), (shape[0], shape[1]), "{what}: shape");
        worst = worst.max(within_1e3_of_largest(&what, &got, &expected));
    }
    worst
}

const LIST: &str = "-30,0,45,90,200,359.5,1000";

#[test]
fn matches_scikit_image_on_8_bit_frames() {
    let mut rng = rng();
    let mut worst = 0f64;
    for (w, h) in [(1, 1), (1, 9), (9, 1), (16, 16), (17, 16), (31, 20), (20, 31), (64, 45)] {
        let frame = random_frame(&mut rng, w, h, 255);
        // scikit-image 0.26 fails on circle=True when a side is 1 (an IndexError in its test of
        // the circle): ours is compared there with circle=False only.
        let cases: &[(&str, bool)] = match w.min(h) {
            1 => &[("0:180:1", false), (LIST, false)],
            _ => &[("0:180:1", false), ("0:180:1", true), (LIST, false), (LIST, true)],
        };
        worst = worst.max(check_against_skimage(&frame, cases));
    }
    // 0.1-degree steps on a small frame, and a photo.
    let small = random_frame(&mut rng, 12, 9, 255);
    worst = worst.max(check_against_skimage(&small, &[("0:180:0.1", false), ("0:180:0.1", true)]));
    let mut camera = fixture_frame("camera.pgm");
    camera.format = Format::Pgm;
    worst = worst.max(check_against_skimage(&camera, &[("0:180:10", false), ("-5:5:2.5", true)]));
    eprintln!("worst relative difference (8-bit): {worst:e}");
}

#[test]
fn matches_scikit_image_on_16_bit_and_float_frames() {
    let mut rng = rng();
    let mut worst = 0f64;
    for (w, h) in [(2, 5), (15, 15), (24, 13)] {
        let frame = random_frame(&mut rng, w, h, 65535);
        worst = worst.max(check_against_skimage(&frame, &[("0:180:3", false), (LIST, true)]));
        // A 16-bit frame whose maxval is below 65535 is still scaled by 1 / 65535, as img_as_float does.
        let low = random_frame(&mut rng, w, h, 1000);
        worst = worst.max(check_against_skimage(&low, &[("0:180:7", false)]));
        let floats: Vec<f32> = (0..w * h).map(|_| rng.f32() * 20.0 - 5.0).collect();
        let mut float = Frame::new(w, h, 1, Pixels::F32(floats.into()));
        float.format = Format::Pfm;
        worst = worst.max(check_against_skimage(&float, &[("0:180:3", false), (LIST, true)]));
    }
    eprintln!("worst relative difference (16-bit, float): {worst:e}");
}

/// A NumPy bool array is 0 and 1, as scikit-image's `img_as_float` takes it (True is 1.0): a lone
/// True pixel's sinogram peaks near 1.17, not 1/255 of that (issue 46, 4).
#[test]
fn boolean_npy_is_zero_and_one() {
    let mut rng = rng();
    let mut lone = vec![0u8; 9 * 7];
    lone[3 * 9 + 4] = 1;
    let sparse: Vec<u8> = (0..20 * 13).map(|_| (rng.u8(..) < 40) as u8).collect();
    for ((w, h), bools) in [((9, 7), lone), ((20, 13), sparse)] {
        // NumPy's bool array: one byte a sample, 0 or 1, descr '|b1' (the same length as '|u1').
        let u1 = encode_npy_array(&[h, w], NpyData::U8(&bools)).unwrap();
        let at = u1.windows(4).position(|x| x == b"|u1'").unwrap();
        let npy = [&u1[..at], b"|b1", &u1[at + 3..]].concat();
        for (angles, circle) in [("0:180:2", false), ("0:180:4", true)] {
            let script = format!(
                "import warnings\nfrom skimage.transform import radon\nwarnings.simplefilter('ignore')\n\
                 img = np.load(sys.argv[1])\nassert img.dtype == bool\n\
                 s = radon(img, theta=np.arange({}), circle={})\n\
                 sys.stdout.buffer.write(s.astype(np.float64).tobytes())\n",
                angles.replace(':', ", "),
                if circle { "True" } else { "False" }
            );
            let theirs: Vec<f64> = skimage(&script, &[&npy])
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let args = radon_args(angles, circle);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = read_frames(&run_ok("radon", "cpu", &args, &npy)).remove(0);
            let Pixels::F32(ours) = &out.pixels else { panic!("not a float frame") };
            assert_eq!(ours.len(), theirs.len(), "{w}x{h} {angles}");
            let largest = theirs.iter().fold(0f64, |m, v| m.max(v.abs()));
            assert!(largest > 0.5, "{w}x{h} {angles}: scikit-image's largest {largest}");
            for (a, b) in ours.iter().zip(&theirs) {
                assert!((*a as f64 - b).abs() <= 1e-3 * largest, "{w}x{h} {angles}: {a} against {b}");
            }
        }
    }
}

/// The table holds the frame's values, an angle's positions in order, shortest round-trip floats.
#[test]
fn the_table_holds_the_frames_values() {
    let mut rng = rng();
    let frame = random_frame(&mut rng, 7, 5, 255);
    let input = stream(std::slice::from_ref(&frame));
    let sinogram = ours(&frame, "cpu", &radon_args("0,33.5", false));
    let Pixels::F32(values) = &sinogram.pixels else { panic!() };
    let csv = String::from_utf8(run_ok("radon", "cpu", &["--angles", "0,33.5", "--format", "csv"], &input))
        .unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("frame,source,angle,position,value"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2 * sinogram.height);
    for (i, row) in rows.iter().enumerate() {
        let (k, x) = (i / sinogram.height, i % sinogram.height);
        let angle = ["0", "33.5"][k];
        assert_eq!(*row, format!("1,-,{angle},{x},{}", values[x * 2 + k]), "row {i}");
    }
    let tsv = run_ok("radon", "cpu", &["--angles", "0,33.5", "--format", "tsv"], &input);
    assert_eq!(String::from_utf8(tsv).unwrap(), csv.replace(',', "\t"));
}

#[test]
fn npy_and_tiff_hold_the_same_frame() {
    let frame = fixture_frame("coins.pgm");
    let pfm = ours(&frame, "cpu", &radon_args("0:180:20", true));
    let tiff =
        run_to_tiff("radon", "cpu", &["--angles", "0:180:20", "--circle"], &fixture_bytes("coins.pgm"));
    assert!(same_bits(&pfm, &tiff));
    let dir = temp_dir("radon-npy");
    let path = dir.join("s.npy");
    run_ok(
        "radon",
        "cpu",
        &["--angles", "0:180:20", "--circle", "-o", path.to_str().unwrap()],
        &fixture_bytes("coins.pgm"),
    );
    let npy = read_frames(&std::fs::read(&path).unwrap()).remove(0);
    assert!(same_bits(&pfm, &npy));
}

#[test]
fn circle_warns_once_per_frame_not_zero_outside() {
    let camera = fixture_bytes("camera.pgm");
    let out = tool("radon")
        .args(["--backend", "cpu", "--circle", "--angles", "0"])
        .write_stdin(camera)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("radon: warning: frame 1: "), "{stderr}");
    let blank = stream(&[Frame::new(9, 6, 255, Pixels::U8(vec![0; 54].into()))]);
    let out = tool("radon").args(["--backend", "cpu", "--circle"]).write_stdin(blank).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
}

#[test]
fn refusals_are_one_line() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("radon", &["--angles", "0:180:0"], &camera, 2).contains("--angles"));
    assert!(run_err("radon", &["--angles", "a,b"], &camera, 2).contains("--angles"));
    let e = run_err("radon", &["--format", "csv", "-o", "x.npy"], &camera, 2);
    assert!(e.contains("contradicts"), "{e}");
    // 725 positions x 1800 angles = 1305000 values, over a limit of 300000 (the frame is 262144).
    let e = run_err("radon", &["--max-pixels", "300000", "--angles", "0:180:0.1"], &camera, 2);
    assert!(e.contains("frame 1: the output would be 1800x725, 1305000 pixels"), "{e}");
}

/// A frame whose work, angles x N^2 reads of its padded square, is over --max-work is refused
/// before any of it is done, in one line naming the option, whichever backend would do it; the
/// default admits 4096x4096 at 180 angles and refuses 32768x32768 (a 1 MB PNG of zeros, 40
/// minutes of reads).
#[test]
fn work_over_max_work_is_refused_before_it_starts() {
    let camera = fixture_bytes("camera.pgm");
    let mut backends = vec!["cpu", "auto"];
    let lease = gpu();
    if lease.is_some() {
        backends.push("gpu");
    }
    // 512x512: N = 725, 2 angles x 725^2 = 1051250 reads.
    for backend in backends {
        let args = ["--backend", backend, "--angles", "0,90", "--max-work"];
        let out = tool("radon").args(args).arg("1051249").write_stdin(camera.clone()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{backend}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "radon: frame 1: this frame's work would be 1051250 steps (2 angles x 725^2 reads), over the \
             limit of 1051249 (--max-work): raise --max-work to run it\n",
            "{backend}"
        );
        assert!(out.stdout.is_empty(), "{backend}");
        let out = tool("radon").args(args).arg("1051250").write_stdin(camera.clone()).output().unwrap();
        assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let dot = Frame::new(1, 1, 255, Pixels::U8(vec![0].into()));
    let work = |side| RadonParams::default().for_size(side, side).unwrap().work(&dot).amount;
    assert_eq!(work(4096), 180 * 5793 * 5793);
    assert!(work(4096) <= Common::MAX_WORK as u128 && work(32768) > Common::MAX_WORK as u128);
}

/// CPU and GPU give the same bytes through the binaries: 8-bit, 16-bit and float, both modes.
#[test]
fn gpu_backend_matches_cpu_backend() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames =
        vec![fixture_frame("camera.pgm"), fixture_frame("dem16.pgm"), random_frame(&mut rng, 33, 1, 255)];
    let mut float = read_frames(&fixture_bytes("dem.npy")).remove(0);
    float.format = Format::Pfm;
    frames.push(float);
    for frame in &frames {
        for args in [radon_args("0:180:1", false), radon_args(LIST, true), radon_args("0:1:0.1", false)] {
            let (cpu, gpu_out) = (ours(frame, "cpu", &args), ours(frame, "gpu", &args));
            assert!(
                same_bits(&cpu, &gpu_out),
                "{}x{} {args:?}: GPU output differs",
                frame.width,
                frame.height
            );
        }
    }
}
