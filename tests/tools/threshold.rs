//! `threshold` against its peers: cv2.threshold's THRESH_OTSU and THRESH_TRIANGLE (threshold and
//! bytes), scikit-image's threshold_multiotsu with np.digitize, numpy's percentile
//! (inverted_cdf); and CPU against GPU.

use histopipe_frame::{Format, Frame, Pixels};
use histopipe_ops::threshold::local::{Local, LocalThreshold, Offset};
use histopipe_ops::threshold::{Levels, Method, Mode, Percent, Threshold};
use histopipe_ops::Op;

use crate::common::*;

/// A frame's samples as bytes, little-endian for 16-bit ones, as the peers read them.
fn sample_bytes(frame: &Frame) -> Vec<u8> {
    match &frame.pixels {
        Pixels::U8(v) => v.to_vec(),
        Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
        Pixels::F32(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
    }
}

/// What a peer makes of one frame: its thresholds and its output frame's samples as bytes.
#[derive(Debug, PartialEq)]
struct Peer {
    thresholds: Vec<i64>,
    bytes: Vec<u8>,
}

/// `peer(a, maxval)`, a Python function returning (thresholds, output array), on each frame, in
/// one Python process; cv2, numpy and (where the function uses it) skimage's
/// threshold_multiotsu imported.
fn peers(function: &str, frames: &[Frame]) -> Vec<Peer> {
    let specs: Vec<String> = frames
        .iter()
        .map(|f| {
            let dtype = if matches!(f.pixels, Pixels::U8(_)) { "np.uint8" } else { "'<u2'" };
            format!("({}, {}, {dtype}, {})", f.height, f.width, f.maxval)
        })
        .collect();
    let script = format!(
        "try:\n    from skimage.filters import threshold_multiotsu\n\
         except ImportError as e:\n    \
         sys.exit(f'scikit-image cannot be imported ({{e}}): run scripts/test, which installs it')\n\
         {function}\n\
         for path, (h, w, dt, mv) in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, dt).reshape(h, w)\n    \
         t, out = peer(a, mv)\n    \
         out = np.ascontiguousarray(out).astype(out.dtype.newbyteorder('<')).tobytes()\n    \
         sys.stdout.buffer.write((' '.join(str(int(x)) for x in t) + ';' + str(len(out)) + '\\n').encode())\n    \
         sys.stdout.buffer.write(out)\n",
        specs.join(", ")
    );
    let inputs: Vec<Vec<u8>> = frames.iter().map(sample_bytes).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|_| {
            let line_end = rest.iter().position(|&b| b == b'\n').expect("a peer's line");
            let line = std::str::from_utf8(&rest[..line_end]).unwrap();
            let (thresholds, len) = line.split_once(';').unwrap();
            let len: usize = len.parse().unwrap();
            let bytes = rest[line_end + 1..line_end + 1 + len].to_vec();
            rest = &rest[line_end + 1 + len..];
            Peer { thresholds: thresholds.split_whitespace().map(|t| t.parse().unwrap()).collect(), bytes }
        })
        .collect()
}

/// cv2.threshold's type for `mode`.
fn cv2_type(mode: Mode) -> &'static str {
    match mode {
        Mode::Binary => "THRESH_BINARY",
        Mode::BinaryInv => "THRESH_BINARY_INV",
        Mode::Trunc => "THRESH_TRUNC",
        Mode::ToZero => "THRESH_TOZERO",
        Mode::ToZeroInv => "THRESH_TOZERO_INV",
    }
}

/// Every `--mode`, in its order.
const MODES: [Mode; 5] = [Mode::Binary, Mode::BinaryInv, Mode::Trunc, Mode::ToZero, Mode::ToZeroInv];

/// cv2.threshold's `method` ("OTSU" or "TRIANGLE") as a [`peers`] function, binary or inverted.
fn cv2_threshold(method: &str, invert: bool) -> String {
    cv2_threshold_mode(method, if invert { Mode::BinaryInv } else { Mode::Binary })
}

/// cv2.threshold's `method` ("OTSU" or "TRIANGLE") as a [`peers`] function, of type `mode`.
fn cv2_threshold_mode(method: &str, mode: Mode) -> String {
    let binary = cv2_type(mode);
    format!(
        "def peer(a, mv):\n    \
         t, out = cv2.threshold(a, 0, mv, cv2.{binary} + cv2.THRESH_{method})\n    \
         return [t], out"
    )
}

fn multiotsu(classes: u16) -> String {
    format!(
        "def peer(a, mv):\n    \
         t = threshold_multiotsu(a, classes={classes})\n    \
         return t, np.digitize(a, bins=t).astype(np.uint8)"
    )
}

/// numpy's percentile, method inverted_cdf, and the binary map through it.
fn percentile(p: &str) -> String {
    format!(
        "def peer(a, mv):\n    \
         t = np.percentile(a, {p}, method='inverted_cdf')\n    \
         return [t], np.where(a > t, mv, 0).astype(a.dtype)"
    )
}

/// What the CPU operation makes of a frame, as a [`Peer`].
fn ours(method: Method, invert: bool, frame: &Frame) -> Peer {
    ours_mode(method, if invert { Mode::BinaryInv } else { Mode::Binary }, frame)
}

/// What the CPU operation makes of a frame with `--mode`, as a [`Peer`].
fn ours_mode(method: Method, mode: Mode, frame: &Frame) -> Peer {
    let out = Threshold { method, mode, mask: None }.cpu(frame).unwrap();
    assert_eq!(
        Levels { method, mask: None }.cpu(frame).unwrap(),
        out.thresholds,
        "{method}: Levels and Threshold"
    );
    Peer { thresholds: out.thresholds.iter().map(|&t| t as i64).collect(), bytes: sample_bytes(&out.frame) }
}

/// The tool's output frame and its thresholds (from its CSV table), on the CPU, for `input`.
fn tool_run(args: &[&str], input: &[u8]) -> Peer {
    let frame = read_frames(&run_ok("threshold", "cpu", args, input)).remove(0);
    let csv =
        String::from_utf8(run_ok("threshold", "cpu", &[args, &["--format", "csv"]].concat(), input)).unwrap();
    let thresholds = csv.lines().skip(1).map(|l| l.rsplit(',').next().unwrap().parse().unwrap()).collect();
    Peer { thresholds, bytes: sample_bytes(&frame) }
}

/// A frame of one row of these samples.
fn row(maxval: u16, samples: &[u16]) -> Frame {
    let mut next = samples.iter().copied();
    frame_of(samples.len(), 1, maxval, &mut || next.next().unwrap())
}

fn fixtures() -> Vec<(&'static str, Frame)> {
    PGM_FIXTURES.iter().map(|&n| (n, fixture_frame(n))).collect()
}

#[test]
fn otsu_and_triangle_match_opencv_on_every_fixture() {
    let (names, frames): (Vec<&str>, Vec<Frame>) = fixtures().into_iter().unzip();
    for (method, invert) in [("otsu", false), ("otsu", true), ("triangle", false), ("triangle", true)] {
        let expected = peers(&cv2_threshold(&method.to_uppercase(), invert), &frames);
        for (name, want) in names.iter().zip(expected) {
            let mut args = vec!["--method", method];
            if invert {
                args.push("--invert");
            }
            assert_eq!(tool_run(&args, &fixture_bytes(name)), want, "{name} {args:?}");
        }
    }
}

#[test]
fn sixteen_bit_otsu_matches_opencv() {
    let mut rng = rng();
    let mut frames = vec![fixture_frame("dem16.pgm")];
    for maxval in [65535, 1076, 4095, 256] {
        let (w, h) = (rng.usize(1..200), rng.usize(1..200));
        frames.extend(hard_frames(&mut rng, w, h, maxval, 250));
    }
    let expected = peers(&cv2_threshold("OTSU", false), &frames);
    let dem = tool_run(&[], &fixture_bytes("dem16.pgm"));
    assert_eq!(dem, expected[0], "dem16.pgm");
    for (frame, want) in frames.iter().zip(&expected) {
        let what = format!("{}x{} maxval {}", frame.width, frame.height, frame.maxval);
        assert_eq!(&ours(Method::Otsu, false, frame), want, "{what}");
    }
    let inverted = peers(&cv2_threshold("OTSU", true), &frames);
    for (frame, want) in frames.iter().zip(&inverted) {
        assert_eq!(&ours(Method::Otsu, true, frame), want, "{}x{} inverted", frame.width, frame.height);
    }
}

/// Random, flat, two-valued and skewed frames of every shape, maxval 255 and below: OpenCV's
/// threshold and bytes, flat frames included (Otsu 0, triangle one below the value).
#[test]
fn random_and_flat_frames_match_opencv() {
    let mut rng = rng();
    let mut frames = Vec::new();
    for (w, h) in [(1, 1), (1, 301), (257, 1), (31, 17), (640, 480)] {
        for maxval in [255, 100] {
            frames.extend(hard_frames(&mut rng, w, h, maxval, 250));
        }
    }
    for v in [0u8, 1, 77, 254, 255] {
        frames.push(frame_of(5, 3, 255, &mut || v as u16));
    }
    // The peak at level 1 and level 0 under the line: OpenCV's triangle gives -1.
    frames.push(row(255, &[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
    for (method, peer) in [(Method::Otsu, "OTSU"), (Method::Triangle, "TRIANGLE")] {
        for (frame, want) in frames.iter().zip(peers(&cv2_threshold(peer, false), &frames)) {
            let what = format!("{method} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
            assert_eq!(ours(method, false, frame), want, "{what}");
        }
    }
    let flat = frame_of(4, 3, 255, &mut || 77);
    assert_eq!(ours(Method::Otsu, false, &flat).thresholds, [0]);
    assert_eq!(ours(Method::Triangle, false, &flat).thresholds, [76]);
}

/// docs/threshold.md's table of the peers, measured: on each fixture and flat frame of it, ours is
/// OpenCV's threshold for Otsu and triangle, and scikit-image's threshold_otsu and
/// threshold_triangle differ from it as the row says (triangle by one level on the fixtures,
/// both on flat frames), with the pixels whose binary frames differ (scikit-image's `image > t`).
#[test]
fn the_manuals_table_of_peers_is_measured() {
    let names =
        ["text", "coins", "camera", "moon", "page", "brick", "chessboard", "clock_motion", "microaneurysms"];
    let mut rows: Vec<(String, Frame)> =
        names.iter().map(|n| (format!("`{n}.pgm`"), fixture_frame(&format!("{n}.pgm")))).collect();
    for v in [77, 1, 0] {
        rows.push((format!("flat {v}"), frame_of(8, 8, 255, &mut || v)));
    }
    let frames: Vec<Frame> = rows.iter().map(|(_, f)| f.clone()).collect();
    let peer = "def peer(a, mv):\n    \
                from skimage.filters import threshold_otsu, threshold_triangle\n    \
                co = cv2.threshold(a, 0, mv, cv2.THRESH_BINARY + cv2.THRESH_OTSU)[0]\n    \
                ct = cv2.threshold(a, 0, mv, cv2.THRESH_BINARY + cv2.THRESH_TRIANGLE)[0]\n    \
                so, st = threshold_otsu(a), threshold_triangle(a)\n    \
                apart = lambda c, s: np.count_nonzero((a > c) != (a > s))\n    \
                return [co, so, apart(co, so), ct, st, apart(ct, st)], np.zeros(0, np.uint8)";
    let manual = std::fs::read_to_string(repo().join("docs/threshold.md")).unwrap();
    for ((label, frame), measured) in rows.iter().zip(peers(peer, &frames)) {
        let [opencv_otsu, skimage_otsu, otsu_apart, opencv_triangle, skimage_triangle, triangle_apart] =
            measured.thresholds[..]
        else {
            panic!("{label}: {measured:?}")
        };
        assert_eq!(ours(Method::Otsu, false, frame).thresholds, [opencv_otsu], "{label}: otsu is OpenCV's");
        assert_eq!(ours(Method::Triangle, false, frame).thresholds, [opencv_triangle], "{label}: triangle");
        let row = format!(
            "| {label} | {} | {opencv_otsu} | {skimage_otsu} | {otsu_apart} | {opencv_triangle} | \
             {skimage_triangle} | {triangle_apart} |",
            frame.width * frame.height
        );
        assert!(manual.lines().any(|l| l == row), "docs/threshold.md lacks the row, as measured:\n{row}");
    }
}

#[test]
fn multiotsu_matches_scikit_image_on_fixtures() {
    let (names, frames): (Vec<&str>, Vec<Frame>) = fixtures().into_iter().unzip();
    for classes in [2u16, 3, 4] {
        let expected = peers(&multiotsu(classes), &frames);
        for ((name, frame), want) in names.iter().zip(&frames).zip(expected) {
            let method = format!("multiotsu:{classes}");
            if *name == "camera.pgm" {
                let run = tool_run(&["--method", &method], &fixture_bytes(name));
                assert_eq!(run, want, "{name} {method}");
                let labels =
                    read_frames(&run_ok("threshold", "cpu", &["--method", &method], &fixture_bytes(name)));
                assert_eq!(labels[0].maxval, 255, "labels are numbers, at maxval 255");
            }
            assert_eq!(ours(Method::MultiOtsu(classes), false, frame), want, "{name} {method}");
        }
    }
}

#[test]
fn multiotsu_matches_scikit_image_on_random_and_sixteen_bit_frames() {
    let mut rng = rng();
    let mut frames = vec![fixture_frame("dem16.pgm")];
    for _ in 0..6 {
        let (w, h) = (rng.usize(2..120), rng.usize(2..120));
        frames.push(random_frame(&mut rng, w, h, 255));
        let (lo, span) = (rng.u16(0..60000), rng.u16(3..300));
        frames.push(frame_of(w, h, 65535, &mut || lo + rng.u16(0..span)));
        let base = rng.u8(0..200);
        frames.push(frame_of(w, h, 255, &mut || (base + rng.u8(0..50) / rng.u8(1..8)) as u16));
    }
    for classes in [2u16, 3] {
        for (frame, want) in frames.iter().zip(peers(&multiotsu(classes), &frames)) {
            let what =
                format!("multiotsu:{classes} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
            assert_eq!(ours(Method::MultiOtsu(classes), false, frame), want, "{what}");
        }
    }
    // Fewer values than classes: refused, as scikit-image raises.
    let err =
        run_err("threshold", &["--method", "multiotsu:3"], &stream(&[frame_of(2, 2, 255, &mut || 7)]), 2);
    assert!(
        err.contains("--method multiotsu:3: the frame has 1 different values, too few for 3 classes"),
        "{err}"
    );
}

/// Multi-Otsu's labels are 0..K-1 in every container, as np.digitize gives them and as cv2.imread
/// and np.load read them back (a PNG of maxval K - 1 held 0, 128, 255); `stretch --in 0:K-1`, as
/// the manual says, spreads them over the range for viewing.
#[test]
fn multiotsu_labels_are_the_labels_in_every_container() {
    let dir = temp_dir("threshold-labels");
    let input = fixture("camera.pgm");
    let outputs = ["l.pgm", "l.png", "l.tif", "l.npy"].map(|name| dir.join(name));
    for out in &outputs {
        let args = ["--method", "multiotsu:3", "-o", out.to_str().unwrap(), input.to_str().unwrap()];
        run_ok("threshold", "cpu", &args, &[]);
    }
    let view = dir.join("view.png");
    let labels = run_ok("threshold", "cpu", &["--method", "multiotsu:3"], &fixture_bytes("camera.pgm"));
    run_ok("stretch", "cpu", &["--in", "0:2", "-o", view.to_str().unwrap()], &labels);
    let script = format!(
        "from skimage.filters import threshold_multiotsu\n\
         a = cv2.imread({input:?}, cv2.IMREAD_UNCHANGED)\n\
         want = np.digitize(a, bins=threshold_multiotsu(a, classes=3))\n\
         for path in {outputs:?}:\n    \
         got = np.load(path) if path.endswith('.npy') else cv2.imread(path, cv2.IMREAD_UNCHANGED)\n    \
         assert got.dtype == np.uint8 and np.array_equal(got, want), (path, np.unique(got))\n\
         view = cv2.imread({view:?}, cv2.IMREAD_UNCHANGED)\n\
         assert np.array_equal(view, np.array([0, 128, 255], np.uint8)[want]), np.unique(view)\n\
         print(' '.join(str(v) for v in np.unique(want)))\n",
        input = input.to_str().unwrap(),
        outputs = outputs.iter().map(|p| p.to_str().unwrap()).collect::<Vec<_>>(),
        view = view.to_str().unwrap(),
    );
    assert_eq!(String::from_utf8(skimage(&script, &[])).unwrap().trim(), "0 1 2");
}

#[test]
fn percentile_is_numpys_inverted_cdf() {
    let mut rng = rng();
    let mut frames: Vec<Frame> = fixtures().into_iter().map(|(_, f)| f).collect();
    frames.push(fixture_frame("dem16.pgm"));
    frames.push(random_frame(&mut rng, 37, 11, 65535));
    frames.push(row(255, &[3, 5, 5, 9]));
    for (p, millionths) in [
        ("0", 0),
        ("12.5", 12_500_000),
        ("25", 25_000_000),
        ("50", 50_000_000),
        ("75", 75_000_000),
        ("100", 100_000_000),
    ] {
        let method = Method::Percentile(Percent { millionths });
        for (frame, want) in frames.iter().zip(peers(&percentile(p), &frames)) {
            let what = format!("percentile:{p} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
            assert_eq!(ours(method, false, frame), want, "{what}");
        }
    }
    // Through the tool: 25% of [3, 5, 5, 9] is reached at 3, anything more at 5.
    let four = stream(&[row(255, &[3, 5, 5, 9])]);
    assert_eq!(
        tool_run(&["--method", "percentile:25"], &four),
        Peer { thresholds: vec![3], bytes: vec![0, 255, 255, 255] }
    );
    assert_eq!(tool_run(&["--method", "percentile:25.000001"], &four).thresholds, [5]);
    assert_eq!(tool_run(&["--method", "percentile:0"], &four).thresholds, [3]);
}

#[test]
fn value_and_invert_are_thresh_binary() {
    let frame = row(1000, &[0, 99, 100, 101, 1000, 500]);
    let input = stream(std::slice::from_ref(&frame));
    let le = |v: &[u16]| v.iter().flat_map(|s| s.to_le_bytes()).collect::<Vec<u8>>();
    assert_eq!(
        tool_run(&["--method", "value:100"], &input),
        Peer { thresholds: vec![100], bytes: le(&[0, 0, 0, 1000, 1000, 1000]) }
    );
    assert_eq!(
        tool_run(&["--method", "value:100", "--invert"], &input).bytes,
        le(&[1000, 1000, 1000, 0, 0, 0])
    );
    assert_eq!(tool_run(&["--method", "value:1000"], &input).bytes, le(&[0; 6]));
    let out = read_frames(&run_ok("threshold", "cpu", &["--method", "value:100"], &input)).remove(0);
    assert_eq!(out.maxval, 1000);
    // Against cv2.threshold with the same value, on the fixtures.
    let frames: Vec<Frame> = fixtures().into_iter().map(|(_, f)| f).collect();
    let peer = "def peer(a, mv):\n    \
                t, out = cv2.threshold(a, 128, mv, cv2.THRESH_BINARY_INV)\n    \
                return [t], out";
    for (frame, want) in frames.iter().zip(peers(peer, &frames)) {
        assert_eq!(ours(Method::Value(128), true, frame), want);
    }
}

/// `--mode`: each of cv2.threshold's five types, through the threshold each global method
/// chooses (Otsu's and the triangle's by cv2 itself, numpy's percentile and a given value handed
/// to cv2.threshold), on 8-bit and 16-bit fixtures and fresh random frames: the same threshold and
/// bytes.
#[test]
fn every_mode_is_cv2_thresholds_type() {
    let mut rng = rng();
    let mut eight: Vec<Frame> = fixtures().into_iter().map(|(_, f)| f).collect();
    for (w, h) in [(1, 1), (31, 17), (200, 3)] {
        for maxval in [255, 100] {
            eight.extend(hard_frames(&mut rng, w, h, maxval, 250));
        }
    }
    eight.push(row(255, &[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])); // triangle's -1
    let mut sixteen = vec![fixture_frame("dem16.pgm")];
    for maxval in [65535, 1076, 4095] {
        let (w, h) = (rng.usize(1..150), rng.usize(1..150));
        sixteen.extend(hard_frames(&mut rng, w, h, maxval, 250));
    }
    let given = |t: &str| {
        format!(
            "def peer(a, mv):\n    \
             t = {t}\n    \
             t, out = cv2.threshold(a, float(t), mv, cv2.TYPE)\n    \
             return [t], out"
        )
    };
    let cases: Vec<(Method, String, bool)> = vec![
        (Method::Otsu, cv2_threshold_mode("OTSU", Mode::Binary), true),
        (Method::Triangle, cv2_threshold_mode("TRIANGLE", Mode::Binary), false),
        (Method::Value(0), given("0"), true),
        (Method::Value(128), given("128"), true),
        (Method::Value(300), given("300"), true),
        (
            Method::Percentile(Percent { millionths: 37_500_000 }),
            given("np.percentile(a, 37.5, method='inverted_cdf')"),
            true,
        ),
    ];
    for (method, peer, takes_sixteen) in &cases {
        let frames: Vec<Frame> =
            eight.iter().chain(sixteen.iter().filter(|_| *takes_sixteen)).cloned().collect();
        for mode in MODES {
            let function = peer.replace("cv2.THRESH_BINARY", &format!("cv2.{}", cv2_type(mode)));
            let function = function.replace("cv2.TYPE", &format!("cv2.{}", cv2_type(mode)));
            for (frame, want) in frames.iter().zip(peers(&function, &frames)) {
                let what = format!(
                    "{method} --mode {mode} {}x{} maxval {}",
                    frame.width, frame.height, frame.maxval
                );
                let mut want = want;
                // cv2 returns the threshold as a float; the given value is ours whole.
                want.thresholds.truncate(1);
                assert_eq!(ours_mode(*method, mode, frame), want, "{what}");
            }
        }
    }
    // Through the tool, and --invert as --mode binary-inv.
    let coins = fixture_bytes("coins.pgm");
    for mode in MODES {
        let expected = peers(&cv2_threshold_mode("OTSU", mode), &[fixture_frame("coins.pgm")]).remove(0);
        assert_eq!(tool_run(&["--mode", &mode.to_string()], &coins), expected, "--mode {mode}");
    }
    assert!(
        run_ok("threshold", "cpu", &["--invert"], &coins)
            == run_ok("threshold", "cpu", &["--mode", "binary-inv"], &coins)
    );
    let err = run_err("threshold", &["--mode", "trunc", "--invert"], &[], 2);
    assert!(err.contains("--invert: contradicts --mode trunc"), "{err}");
    let err = run_err("threshold", &["--method", "multiotsu:3", "--mode", "tozero"], &[], 2);
    assert!(
        err.contains("--mode tozero: multiotsu:3 gives labels: it takes --mode binary or binary-inv only"),
        "{err}"
    );
    let err = run_err("threshold", &["--mode", "bin"], &[], 2);
    assert!(err.contains("unknown mode 'bin'"), "{err}");
}

/// Asserts two outputs are the same bytes; says how many differ and where the first is.
fn assert_same_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let apart: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    assert!(
        apart.is_empty(),
        "{what}: {} of {} bytes differ, the first at {} ({} against the peer's {})",
        apart.len(),
        got.len(),
        apart[0],
        got[apart[0]],
        want[apart[0]]
    );
}

/// An adaptive case: a frame and the (BLOCK, C) pairs it is thresholded with, C as written.
type Adaptive = (Frame, Vec<(u32, &'static str)>);

/// cv2.adaptiveThreshold(a, maxval, `method` (MEAN_C or GAUSSIAN_C), the type of `mode`, BLOCK, C)
/// for each case's pairs, in one Python process: each frame's outputs, one after the other.
fn cv2_adaptive(method: &str, mode: Mode, cases: &[Adaptive]) -> Vec<Vec<u8>> {
    let inputs: Vec<Vec<u8>> = cases.iter().map(|(f, _)| sample_bytes(f)).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let specs: Vec<String> = cases
        .iter()
        .map(|(f, pairs)| {
            let pairs: Vec<String> = pairs.iter().map(|(b, c)| format!("({b}, {c})")).collect();
            format!("({}, {}, {}, [{}])", f.height, f.width, f.maxval, pairs.join(", "))
        })
        .collect();
    let script = format!(
        "for path, (h, w, mv, pairs) in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, np.uint8).reshape(h, w)\n    \
         for b, c in pairs:\n        \
         sys.stdout.buffer.write(cv2.adaptiveThreshold(a, mv, cv2.ADAPTIVE_THRESH_{method}, cv2.{}, b, c).tobytes())\n",
        specs.join(", "),
        cv2_type(mode)
    );
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    cases
        .iter()
        .map(|(f, pairs)| {
            let len = f.width * f.height * pairs.len();
            let (this, more) = rest.split_at(len);
            rest = more;
            this.to_vec()
        })
        .collect()
}

/// The offset C as written, in millionths.
fn offset(c: &str) -> Offset {
    let negative = c.starts_with('-');
    let c = c.trim_start_matches('-');
    let (whole, part) = c.split_once('.').unwrap_or((c, ""));
    let m = whole.parse::<i64>().unwrap() * 1_000_000 + format!("{part:0<6}").parse::<i64>().unwrap();
    Offset { millionths: if negative { -m } else { m } }
}

/// The local method of `name` ("MEAN_C" or "GAUSSIAN_C").
fn local(name: &str, block: u32, c: &str) -> Local {
    match name {
        "MEAN_C" => Local::Mean { block, c: offset(c) },
        _ => Local::Gaussian { block, c: offset(c) },
    }
}

/// The frames of the adaptive tests: the fixtures with a few blocks, and fresh random, flat,
/// two-valued and skewed frames (maxval 255 and 100), some smaller than their blocks, with every
/// odd block 3..51, C negative, fractional and whole.
fn adaptive_cases(rng: &mut fastrand::Rng) -> Vec<Adaptive> {
    const CS: [&str; 8] = ["0", "2", "-3", "2.5", "-1.5", "0.000001", "-0.25", "7"];
    let mut cases: Vec<Adaptive> = fixtures()
        .into_iter()
        .map(|(_, f)| (f, vec![(3, "0"), (11, "2"), (25, "-1.5"), (51, "7.25")]))
        .collect();
    let mut frames = Vec::new();
    for (w, h) in [(1, 1), (2, 5), (7, 3), (1, 40), (40, 1), (31, 17), (64, 48)] {
        for maxval in [255, 100] {
            frames.extend(hard_frames(rng, w, h, maxval, 250));
        }
    }
    let large = random_frame(rng, 333, 251, 255);
    cases.push((large, vec![(11, "0.5"), (31, "-4"), (51, "1"), (101, "0"), (201, "-0.75")]));
    for (i, f) in frames.into_iter().enumerate() {
        let pairs = (3..=51).step_by(2).enumerate().map(|(j, b)| (b, CS[(i + j) % CS.len()])).collect();
        cases.push((f, pairs));
    }
    cases
}

/// `--method mean:BLOCK,C` and `gaussian:BLOCK,C`: cv2.adaptiveThreshold with ADAPTIVE_THRESH_MEAN_C
/// and GAUSSIAN_C, THRESH_BINARY and THRESH_BINARY_INV, byte for byte, on the fixtures and fresh
/// frames, every odd block 3..51 (frames smaller than the block too), C negative and fractional.
#[test]
fn adaptive_methods_are_cv2_adaptive_threshold() {
    let mut rng = rng();
    let cases = adaptive_cases(&mut rng);
    for name in ["MEAN_C", "GAUSSIAN_C"] {
        for mode in [Mode::Binary, Mode::BinaryInv] {
            for ((frame, pairs), want) in cases.iter().zip(cv2_adaptive(name, mode, &cases)) {
                let mut offset = 0;
                for &(block, c) in pairs {
                    let method = local(name, block, c);
                    let got = LocalThreshold { method, mode }.cpu(frame).unwrap();
                    let n = frame.width * frame.height;
                    let what =
                        format!("{method} {mode} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
                    assert_same_bytes(&sample_bytes(&got), &want[offset..offset + n], &what);
                    assert_eq!(
                        (got.width, got.height, got.maxval),
                        (frame.width, frame.height, frame.maxval)
                    );
                    offset += n;
                }
            }
        }
    }
}

/// The Gaussian's coefficients are OpenCV's `f32` ones (cv2.getGaussianKernel(n, 0, CV_32F), the
/// kernel its float GaussianBlur multiplies by), bit for bit, for every block up to 401 and a few
/// up to the largest taken.
#[test]
fn gaussian_coefficients_are_opencvs() {
    use histopipe_ops::threshold::local::{gaussian_kernel, MAX_BLOCK};
    let blocks: Vec<usize> = (3..=401).step_by(2).chain([1001, 2001, 3999, MAX_BLOCK as usize]).collect();
    let script = format!(
        "for n in {blocks:?}:\n    \
         k = cv2.getGaussianKernel(n, 0, cv2.CV_32F).ravel()\n    \
         print(' '.join(str(int(v)) for v in k.view(np.uint32)))\n"
    );
    let out = String::from_utf8(opencv(&script, &[])).unwrap();
    assert_eq!(out.lines().count(), blocks.len());
    for (line, &n) in out.lines().zip(&blocks) {
        let want: Vec<u32> = line.split(' ').map(|v| v.parse().unwrap()).collect();
        let got: Vec<u32> = gaussian_kernel(n).iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "block {n}");
    }
}

/// Through the tool: the bytes of the op, and the refusals, each in one line.
#[test]
fn adaptive_methods_through_the_tool() {
    let page = fixture_bytes("page.pgm");
    let want =
        cv2_adaptive("GAUSSIAN_C", Mode::BinaryInv, &[(fixture_frame("page.pgm"), vec![(15, "-2.5")])]);
    let out = read_frames(&run_ok("threshold", "cpu", &["--method", "gaussian:15,-2.5", "--invert"], &page));
    assert_same_bytes(&sample_bytes(&out[0]), &want[0], "page.pgm gaussian:15,-2.5 --invert");
    let err = run_err("threshold", &["--method", "mean:11,2"], &fixture_bytes("dem16.pgm"), 2);
    assert!(err.contains("--method mean:11,2: takes 8-bit frames only"), "{err}");
    let err = run_err("threshold", &["--method", "mean:11,2", "--mode", "trunc"], &page, 2);
    assert!(
        err.contains("--mode trunc: mean:11,2 is OpenCV's adaptiveThreshold: it takes --mode binary"),
        "{err}"
    );
    let err = run_err("threshold", &["--method", "mean:11", "--format", "csv"], &page, 2);
    assert!(err.contains("no table of thresholds"), "{err}");
    let err = run_err("threshold", &["--method", "mean:4,1"], &page, 2);
    assert!(err.contains("mean takes an odd BLOCK, 3 to 4001"), "{err}");
}

/// The local methods on the GPU: the CPU's bytes.
#[test]
fn adaptive_gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut cases = adaptive_cases(&mut rng);
    cases.push((random_frame(&mut rng, 1920, 1080, 255), vec![(3, "0"), (51, "-2"), (401, "1.5")]));
    for (frame, pairs) in &cases {
        for &(block, c) in pairs {
            for name in ["MEAN_C", "GAUSSIAN_C"] {
                for mode in [Mode::Binary, Mode::BinaryInv] {
                    let op = LocalThreshold { method: local(name, block, c), mode };
                    let what = format!("{} {mode} {}x{}", op.method, frame.width, frame.height);
                    assert_eq!(op.cpu(frame).unwrap(), op.gpu(&gpu, frame).unwrap(), "{what}");
                }
            }
        }
    }
    let page = fixture_bytes("page.pgm");
    let args = ["--method", "mean:21,3"];
    assert!(run_ok("threshold", "gpu", &args, &page) == run_ok("threshold", "cpu", &args, &page));
}

/// scikit-image's threshold_sauvola / threshold_niblack on each frame for each of `runs` (the
/// method's arguments after the image, as Python), and `image > t` as maxval/0 (inverted with
/// `invert`): each frame's outputs one after the other, as the frame's sample bytes.
fn skimage_local(runs: &[String], invert: bool, frames: &[Frame]) -> Vec<Vec<u8>> {
    let inputs: Vec<Vec<u8>> = frames.iter().map(sample_bytes).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let specs: Vec<String> = frames
        .iter()
        .map(|f| {
            let dtype = if matches!(f.pixels, Pixels::U8(_)) { "np.uint8" } else { "'<u2'" };
            format!("({}, {}, {dtype}, {})", f.height, f.width, f.maxval)
        })
        .collect();
    let cmp = if invert { "<=" } else { ">" };
    let script = format!(
        "from skimage.filters import threshold_sauvola, threshold_niblack\n\
         for path, (h, w, dt, mv) in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, dt).reshape(h, w)\n    \
         for run in [{}]:\n        \
         t = eval('threshold_' + run)\n        \
         out = np.where(a {cmp} t, mv, 0).astype(a.dtype.newbyteorder('<'))\n        \
         sys.stdout.buffer.write(out.tobytes())\n",
        specs.join(", "),
        runs.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>().join(", ")
    );
    let out = skimage(&script, &refs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|f| {
            let len = sample_bytes(f).len() * runs.len();
            let (this, more) = rest.split_at(len);
            rest = more;
            this.to_vec()
        })
        .collect()
}

/// Frames for Sauvola's and Niblack's tests: the 8-bit fixtures, `dem16.pgm`, and fresh 8-bit
/// and 16-bit random, flat, two-valued and skewed frames, some smaller than the windows.
fn stats_frames(rng: &mut fastrand::Rng) -> Vec<Frame> {
    let mut frames: Vec<Frame> = fixtures().into_iter().map(|(_, f)| f).collect();
    frames.push(fixture_frame("dem16.pgm"));
    for (w, h) in [(1, 1), (2, 5), (9, 1), (31, 17), (70, 44)] {
        for maxval in [255, 100, 65535, 1076] {
            frames.extend(hard_frames(rng, w, h, maxval, 250));
        }
    }
    frames
}

/// `--method sauvola:W,K,R` and `niblack:W,K`: scikit-image's thresholds and `image > t`, the
/// binary frames equal, on 8-bit and 16-bit frames, windows 1 to 51, K positive and negative, R
/// given or not, and inverted.
#[test]
fn sauvola_and_niblack_are_scikit_images() {
    let mut rng = rng();
    let frames = stats_frames(&mut rng);
    let methods = [
        Local::Sauvola { window: 15, k: 0.2, r: None },
        Local::Sauvola { window: 1, k: 0.2, r: None },
        Local::Sauvola { window: 25, k: 0.5, r: Some(100.0) },
        Local::Sauvola { window: 51, k: -0.1, r: Some(3.5) },
        Local::Niblack { window: 15, k: 0.2 },
        Local::Niblack { window: 3, k: -0.7 },
        Local::Niblack { window: 33, k: 1.5 },
    ];
    let runs: Vec<String> = methods
        .iter()
        .map(|m| match *m {
            Local::Sauvola { window, k, r: None } => format!("sauvola(a, window_size={window}, k={k:?})"),
            Local::Sauvola { window, k, r: Some(r) } => {
                format!("sauvola(a, window_size={window}, k={k:?}, r={r:?})")
            }
            Local::Niblack { window, k } => format!("niblack(a, window_size={window}, k={k:?})"),
            _ => unreachable!(),
        })
        .collect();
    for mode in [Mode::Binary, Mode::BinaryInv] {
        let expected = skimage_local(&runs, mode == Mode::BinaryInv, &frames);
        for (frame, want) in frames.iter().zip(expected) {
            let n = sample_bytes(frame).len();
            for (i, &method) in methods.iter().enumerate() {
                let got = LocalThreshold { method, mode }.cpu(frame).unwrap();
                let what =
                    format!("{method} {mode} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
                assert_same_bytes(&sample_bytes(&got), &want[i * n..(i + 1) * n], &what);
            }
        }
    }
    // Through the tool, its defaults: window 15, k 0.2, r half the type's range.
    let page = fixture_bytes("page.pgm");
    let want = skimage_local(&["sauvola(a)".into()], false, &[fixture_frame("page.pgm")]);
    let out = read_frames(&run_ok("threshold", "cpu", &["--method", "sauvola"], &page));
    assert_same_bytes(&sample_bytes(&out[0]), &want[0], "threshold --method sauvola page.pgm");
    let err = run_err("threshold", &["--method", "niblack:15", "--mode", "trunc"], &page, 2);
    assert!(err.contains("--mode trunc: niblack:15,0.2 is scikit-image's image > t"), "{err}");
}

/// Sauvola and Niblack on the GPU: the CPU's bytes.
#[test]
fn sauvola_and_niblack_gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = stats_frames(&mut rng);
    frames.push(random_frame(&mut rng, 1920, 1080, 65535));
    for frame in &frames {
        for method in [
            Local::Sauvola { window: 15, k: 0.2, r: None },
            Local::Sauvola { window: 51, k: -0.1, r: Some(3.5) },
            Local::Niblack { window: 1, k: 0.2 },
            Local::Niblack { window: 101, k: 0.3 },
        ] {
            for mode in [Mode::Binary, Mode::BinaryInv] {
                let op = LocalThreshold { method, mode };
                let what = format!("{method} {mode} {}x{}", frame.width, frame.height);
                assert_eq!(op.cpu(frame).unwrap(), op.gpu(&gpu, frame).unwrap(), "{what}");
            }
        }
    }
}

/// Float frames for the float tests: normal and uniform noise, bimodal, with NaN and infinities
/// sprinkled, flat, two-valued, 1x1, wide and negative ranges.
fn float_frames(rng: &mut fastrand::Rng) -> Vec<Frame> {
    let frame = |w: usize, h: usize, f: &mut dyn FnMut() -> f32| {
        Frame::new(w, h, 1, Pixels::F32((0..w * h).map(|_| f()).collect::<Vec<f32>>().into()))
    };
    let mut frames = Vec::new();
    for (w, h) in [(120, 90), (31, 17), (7, 3)] {
        frames.push(frame(w, h, &mut || rng.f32()));
        frames.push(frame(w, h, &mut || if rng.bool() { rng.f32() * 0.3 } else { 0.6 + rng.f32() * 0.4 }));
        frames.push(frame(w, h, &mut || (rng.f32() - 0.7) * 3e4));
        frames.push(frame(w, h, &mut || match rng.u8(..20) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            _ => rng.f32() * 5.0 - 2.0,
        }));
        frames.push(frame(w, h, &mut || if rng.bool() { 0.25 } else { 0.75 }));
    }
    frames.push(frame(9, 9, &mut || 0.5));
    frames.push(frame(1, 1, &mut || 0.125));
    frames.push(frame(4, 4, &mut || f32::NAN));
    frames
}

/// scikit-image's `function` (a threshold_* call on `f`, the finite samples) on each frame, its
/// thresholds' float32 bits (none where it raises) and the output (`out`, a Python expression of
/// `a` and `t`) as bytes.
fn skimage_float(function: &str, out: &str, frames: &[Frame]) -> Vec<Option<(Vec<u32>, Vec<u8>)>> {
    let inputs: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| match &f.pixels {
            Pixels::F32(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
            _ => unreachable!(),
        })
        .collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let shapes: Vec<String> = frames.iter().map(|f| format!("({}, {})", f.height, f.width)).collect();
    let script = format!(
        "from skimage.filters import threshold_otsu, threshold_triangle, threshold_multiotsu\n\
         from skimage.filters import threshold_sauvola, threshold_niblack\n\
         for path, (h, w) in zip(sys.argv[1:], [{}]):\n    \
         a = np.fromfile(path, '<f4').reshape(h, w)\n    \
         f = a[np.isfinite(a)]\n    \
         try:\n        \
         if not f.size and 'multiotsu' in {function:?}:\n            \
         raise ValueError('no sample to class')\n        \
         t = np.atleast_1d(np.float32({function})) if f.size else np.array([np.nan], np.float32)\n    \
         except ValueError:\n        \
         sys.stdout.buffer.write(b'-\\n')\n        \
         continue\n    \
         o = np.ascontiguousarray({out}).astype(np.uint8).tobytes()\n    \
         sys.stdout.buffer.write((' '.join(str(int(x)) for x in t.view(np.uint32)) + ';' + str(len(o)) + '\\n').encode())\n    \
         sys.stdout.buffer.write(o)\n",
        shapes.join(", ")
    );
    let out = skimage(&script, &refs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|_| {
            let end = rest.iter().position(|&b| b == b'\n').unwrap();
            let line = std::str::from_utf8(&rest[..end]).unwrap().to_owned();
            rest = &rest[end + 1..];
            let (bits, len) = line.split_once(';')?;
            let len: usize = len.parse().unwrap();
            let bytes = rest[..len].to_vec();
            rest = &rest[len..];
            Some((bits.split_whitespace().map(|b| b.parse().unwrap()).collect(), bytes))
        })
        .collect()
}

/// Float frames: otsu, triangle and multiotsu are scikit-image's on float images (256 bins over
/// the data's range, its float32 arithmetic): the same thresholds, bit for bit, and the binary
/// frame `image > t` (255/0, 8-bit) or np.digitize's labels; NaN and infinities left out of the
/// histogram (scikit-image's answer for `image[np.isfinite(image)]`), a NaN never above t.
#[test]
fn float_frames_are_thresholded_as_scikit_image() {
    let mut rng = rng();
    let frames = float_frames(&mut rng);
    let cases: [(Method, Mode, &str, &str); 6] = [
        (Method::Otsu, Mode::Binary, "threshold_otsu(f)", "np.where(a > t[0], 255, 0)"),
        (Method::Otsu, Mode::BinaryInv, "threshold_otsu(f)", "np.where(a > t[0], 0, 255)"),
        (Method::Triangle, Mode::Binary, "threshold_triangle(f)", "np.where(a > t[0], 255, 0)"),
        (Method::MultiOtsu(2), Mode::Binary, "threshold_multiotsu(f, classes=2)", "np.digitize(a, t)"),
        (Method::MultiOtsu(3), Mode::Binary, "threshold_multiotsu(f, classes=3)", "np.digitize(a, t)"),
        (Method::MultiOtsu(3), Mode::BinaryInv, "threshold_multiotsu(f, classes=3)", "2 - np.digitize(a, t)"),
    ];
    for (method, mode, function, out) in cases {
        for (frame, want) in frames.iter().zip(skimage_float(function, out, &frames)) {
            let what = format!("{method} {mode} float {}x{}", frame.width, frame.height);
            let got = Threshold { method, mode, mask: None }.cpu(frame);
            let Some((bits, bytes)) = want else {
                assert!(got.is_err(), "{what}: scikit-image raises, we gave {got:?}");
                continue;
            };
            let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            let ours: Vec<u32> = got.float_thresholds.iter().map(|t| t.to_bits()).collect();
            assert_eq!(ours, bits, "{what}: thresholds");
            assert_eq!((got.frame.maxval, got.frame.width), (255, frame.width), "{what}");
            assert_same_bytes(&sample_bytes(&got.frame), &bytes, &what);
        }
    }
    // Through the tool, NPY in and out, and what float frames do not take.
    let npy = fixture_bytes("dem.npy");
    let out = read_frames(&run_ok("threshold", "cpu", &["--method", "triangle"], &npy)).remove(0);
    assert!(matches!(out.pixels, Pixels::U8(_)) && out.maxval == 255);
    let err = run_err("threshold", &["--method", "value:3"], &npy, 2);
    assert!(err.contains("--method value:3: takes integer frames"), "{err}");
    let err = run_err("threshold", &["--mode", "trunc"], &npy, 2);
    assert!(err.contains("--mode trunc: otsu of a float frame is scikit-image's image > t"), "{err}");
    let err = run_err("threshold", &["--format", "csv"], &npy, 2);
    assert!(err.contains("not a table of thresholds"), "{err}");
}

/// Sauvola and Niblack on float frames: scikit-image's on the float32 image (its statistics in
/// float32 after float64 sums, r 1 by default: half of dtype_limits' -1..1), NaN and infinities
/// included as it has them; `image > t` as an 8-bit 0/255 frame.
#[test]
fn float_sauvola_and_niblack_are_scikit_images() {
    let mut rng = rng();
    let frames = float_frames(&mut rng);
    let runs = [
        (Local::Sauvola { window: 15, k: 0.2, r: None }, "threshold_sauvola(a)"),
        (
            Local::Sauvola { window: 5, k: 0.5, r: Some(0.25) },
            "threshold_sauvola(a, window_size=5, k=0.5, r=0.25)",
        ),
        (Local::Niblack { window: 7, k: -0.3 }, "threshold_niblack(a, window_size=7, k=-0.3)"),
    ];
    for (method, call) in runs {
        // No threshold to compare (one per pixel): 0 stands for it.
        let expected = skimage_float("0.0", &format!("np.where(a > {call}, 255, 0)"), &frames);
        for (frame, want) in frames.iter().zip(expected) {
            let what = format!("{method} float {}x{}", frame.width, frame.height);
            let (_, bytes) = want.unwrap_or_else(|| panic!("{what}: scikit-image raised"));
            let got = LocalThreshold { method, mode: Mode::Binary }.cpu(frame).unwrap();
            assert_eq!(got.maxval, 255, "{what}");
            assert_same_bytes(&sample_bytes(&got), &bytes, &what);
        }
    }
}

/// Float frames on the GPU: the CPU's thresholds and bytes.
#[test]
fn float_frames_gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = float_frames(&mut rng);
    frames.push(Frame::new(
        1920,
        1080,
        1,
        Pixels::F32((0..1920 * 1080).map(|_| rng.f32()).collect::<Vec<f32>>().into()),
    ));
    for frame in &frames {
        for method in [Method::Otsu, Method::Triangle, Method::MultiOtsu(3)] {
            for mode in [Mode::Binary, Mode::BinaryInv] {
                let op = Threshold { method, mode, mask: None };
                let what = format!("{method} {mode} float {}x{}", frame.width, frame.height);
                match (op.cpu(frame), op.gpu(&gpu, frame)) {
                    // The float thresholds by their bits: a frame of no finite sample has NaN.
                    (Ok(cpu), Ok(gpu)) => {
                        let bits = |t: &[f32]| t.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&cpu.float_thresholds), bits(&gpu.float_thresholds), "{what}");
                        assert_eq!((cpu.thresholds, cpu.frame), (gpu.thresholds, gpu.frame), "{what}");
                    }
                    (Err(cpu), Err(gpu)) => assert_eq!(cpu.to_string(), gpu.to_string(), "{what}"),
                    (cpu, gpu) => panic!("{what}: the CPU gave {cpu:?}, the GPU {gpu:?}"),
                }
            }
        }
        for method in [Local::Sauvola { window: 15, k: 0.2, r: None }, Local::Niblack { window: 31, k: -0.3 }]
        {
            let op = LocalThreshold { method, mode: Mode::BinaryInv };
            let what = format!("{method} float {}x{}", frame.width, frame.height);
            assert_eq!(op.cpu(frame).unwrap(), op.gpu(&gpu, frame).unwrap(), "{what}");
        }
    }
}

/// Colour is thresholded by its luma, as OpenCV's cvtColor(BGR2GRAY) makes it.
#[test]
fn colour_frames_are_thresholded_by_their_luma() {
    let ours = tool_run(&[], &fixture_bytes("astronaut.png"));
    let path = fixture("astronaut.png");
    let script = format!(
        "g = cv2.cvtColor(cv2.imread({:?}, cv2.IMREAD_COLOR), cv2.COLOR_BGR2GRAY)\n\
         t, out = cv2.threshold(g, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)\n\
         sys.stdout.buffer.write((str(int(t)) + '\\n').encode() + out.tobytes())\n",
        path.to_str().unwrap()
    );
    let out = opencv(&script, &[]);
    let line_end = out.iter().position(|&b| b == b'\n').unwrap();
    let t: i64 = std::str::from_utf8(&out[..line_end]).unwrap().parse().unwrap();
    assert_eq!(ours, Peer { thresholds: vec![t], bytes: out[line_end + 1..].to_vec() });
}

#[test]
fn sixteen_bit_triangles_and_unknown_methods_are_refused() {
    let err = run_err("threshold", &["--method", "triangle"], &fixture_bytes("dem16.pgm"), 2);
    assert!(err.contains("--method triangle: takes 8-bit frames only"), "{err}");
    let err = run_err("threshold", &["--method", "median"], &[], 2);
    assert!(err.contains("unknown method 'median'"), "{err}");
    let err = run_err("threshold", &["--format", "csv", "-o", "x.png"], &[], 2);
    assert!(err.contains("--format csv contradicts -o's extension .png"), "{err}");
}

/// The table loads with pandas as every tool's does: the key columns, one row per threshold.
#[test]
fn the_table_loads_with_pandas() {
    let dir = temp_dir("threshold-table");
    let out = dir.join("t.csv");
    let files = [fixture("camera.pgm"), fixture("coins.pgm"), fixture("dem16.pgm")];
    let mut args =
        vec!["--backend".to_owned(), "cpu".into(), "--method".into(), "multiotsu:3".into(), "-o".into()];
    args.push(out.to_str().unwrap().into());
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    let status = tool("threshold").args(&args).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let script = format!(
        "import pandas as pd\n\
         t = pd.read_csv({:?})\n\
         assert list(t.columns) == ['frame', 'source', 'method', 'threshold'], t.columns\n\
         assert list(t.frame) == [1, 1, 2, 2, 3, 3], t\n\
         assert set(t.method) == {{'multiotsu:3'}}\n\
         assert t.threshold.dtype.kind == 'i'\n\
         print(','.join(str(x) for x in t.threshold))\n",
        out.to_str().unwrap()
    );
    let printed = String::from_utf8(opencv(&script, &[])).unwrap();
    assert_eq!(printed.trim(), "87,176,77,139,480,692");
}

/// The GPU's histogram and map give the CPU's thresholds and frames, bit for bit.
#[test]
fn gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames: Vec<Frame> = fixtures().into_iter().map(|(_, f)| f).collect();
    frames.push(fixture_frame("dem16.pgm"));
    for maxval in [255, 100, 1076, 65535] {
        for (w, h) in [(1, 1), (257, 3), (640, 480)] {
            frames.extend(hard_frames(&mut rng, w, h, maxval, 250));
        }
    }
    let methods = [
        Method::Otsu,
        Method::Triangle,
        Method::MultiOtsu(2),
        Method::MultiOtsu(3),
        Method::Value(100),
        Method::Percentile(Percent { millionths: 33_333_333 }),
    ];
    for frame in &frames {
        for method in methods {
            for invert in [false, true] {
                let mode = if invert { Mode::BinaryInv } else { Mode::Binary };
                let op = Threshold { method, mode, mask: None };
                let what =
                    format!("{method} {invert} {}x{} maxval {}", frame.width, frame.height, frame.maxval);
                match (op.cpu(frame), op.gpu(&gpu, frame)) {
                    (Ok(cpu), Ok(gpu)) => assert_eq!(cpu, gpu, "{what}"),
                    (Err(cpu), Err(gpu)) => assert_eq!(cpu.to_string(), gpu.to_string(), "{what}"),
                    (cpu, gpu) => panic!("{what}: the CPU gave {cpu:?}, the GPU {gpu:?}"),
                }
            }
        }
    }
    let input =
        stream(&[fixture_frame("coins.pgm"), fixture_frame("dem16.pgm"), fixture_frame("camera.pgm")]);
    assert!(run_ok("threshold", "gpu", &[], &input) == run_ok("threshold", "cpu", &[], &input));
    let mut frame = fixture_frame("moon.pgm");
    frame.format = Format::Pgm;
    let args = ["--method", "multiotsu:3", "--format", "csv"];
    assert!(
        run_ok("threshold", "gpu", &args, &stream(&[frame.clone()]))
            == run_ok("threshold", "cpu", &args, &stream(&[frame]))
    );
}

/// `--mask`: otsu's threshold is cv2.threshold's THRESH_OTSU of the masked pixels alone, multi-Otsu
/// scikit-image's threshold_multiotsu of them; the frame is every pixel through the threshold; the
/// GPU the CPU's.
#[test]
fn mask_chooses_from_the_masked_pixels_as_opencv_and_skimage() {
    let dir = temp_dir("threshold-mask");
    let mut rng = rng();
    let moon = fixture_frame("moon.pgm");
    let (w, h) = (moon.width, moon.height);
    let mut mask = random_mask(&mut rng, w, h);
    // The lower half out: its histogram is not the whole frame's.
    mask[w * h / 2..].fill(0);
    let path = mask_file(&dir, "mask.pgm", w, h, &mask);
    let m = path.to_str().unwrap();
    let input = fixture_bytes("moon.pgm");
    let pixels: Vec<u8> = (0..w * h).map(|i| moon.pixels.get(i) as u8).collect();
    let script = "from skimage.filters import threshold_multiotsu\n\
                  m = np.fromfile(sys.argv[1], np.uint8) != 0\n\
                  a = np.fromfile(sys.argv[2], np.uint8)[m]\n\
                  t = cv2.threshold(a.reshape(1, -1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)[0]\n\
                  print(int(t), ' '.join(str(int(v)) for v in threshold_multiotsu(a, classes=3)))\n";
    let want = String::from_utf8(skimage(script, &[&mask, &pixels])).unwrap();
    let want: Vec<i64> = want.split_whitespace().map(|v| v.parse().unwrap()).collect();
    let thresholds = |method: &str| -> Vec<i64> {
        let out = run_ok("threshold", "cpu", &["--method", method, "--format", "csv", "--mask", m], &input);
        let text = String::from_utf8(out).unwrap();
        text.lines().skip(1).map(|l| l.rsplit(',').next().unwrap().parse().unwrap()).collect()
    };
    assert_eq!(thresholds("otsu"), [want[0]], "otsu under the mask");
    assert_eq!(thresholds("multiotsu:3"), want[1..], "multiotsu:3 under the mask");
    let unmasked = run_ok("threshold", "cpu", &["--format", "csv"], &input);
    assert!(!String::from_utf8(unmasked).unwrap().ends_with(&format!(",{}\n", want[0])), "the mask matters");
    for method in ["otsu", "multiotsu:3", "percentile:30"] {
        let args = ["--method", method, "--mask", m];
        let out = run_ok("threshold", "cpu", &args, &input);
        let t = thresholds(method);
        let got = read_frames(&out).remove(0);
        for (i, &v) in pixels.iter().enumerate() {
            let v = v as i64;
            // Labels: the thresholds at or below the sample (np.digitize); binary: above it.
            let want = match method.starts_with("multi") {
                true => t.iter().filter(|&&t| v >= t).count() as u16,
                false => (v > t[0]) as u16 * 255,
            };
            assert_eq!(got.pixels.get(i), want, "{method}: pixel {i}, masked or not, through the threshold");
        }
        if let Some(_gpu) = gpu() {
            assert_eq!(run_ok("threshold", "gpu", &args, &input), out, "{method}: GPU and CPU");
        }
    }
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    assert_mask_size_refused("threshold", &[]);
    assert_mask_size_refused("threshold", &["--format", "csv"]);
}
