//! `iradon` against scikit-image's `skimage.transform.iradon`: the Shepp-Logan phantom's round
//! trip through `radon` (scikit-image's own test of iradon), a photo's sinogram, fresh random
//! sinograms of odd sizes, every filter, both `circle` modes and `--size`; the pipe `radon |
//! iradon`; the refusals; GPU = CPU through the binaries.

use histopipe_frame::{Format, Frame, Pixels};

use crate::common::*;

/// A float frame's samples as raw little-endian `f32` bytes.
fn raw_f32(frame: &Frame) -> Vec<u8> {
    let Pixels::F32(v) = &frame.pixels else { panic!("not a float frame") };
    v.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// One comparison: the sinogram's angles (None: scikit-image's default), --filter, --circle and
/// --size.
#[derive(Debug, Clone)]
struct Case {
    angles: Option<Vec<f64>>,
    angles_arg: Option<String>,
    filter: &'static str,
    circle: bool,
    size: Option<usize>,
}

impl Case {
    fn new(angles: Option<&str>, filter: &'static str, circle: bool, size: Option<usize>) -> Case {
        let list = angles.map(|a| a.parse::<histopipe_ops::angles::Angles>().unwrap().0);
        Case { angles: list, angles_arg: angles.map(str::to_owned), filter, circle, size }
    }

    fn args(&self) -> Vec<String> {
        let mut args = vec!["--filter".to_owned(), self.filter.to_owned()];
        if let Some(a) = &self.angles_arg {
            args.push(format!("--angles={a}"));
        }
        if self.circle {
            args.push("--circle".into());
        }
        if let Some(n) = self.size {
            args.extend(["--size".to_owned(), n.to_string()]);
        }
        args
    }
}

/// scikit-image's reconstructions of the float32 `sinogram` for each case, as float64 arrays
/// (n, n), in one run of Python.
fn skimage_iradon(sinogram: &Frame, cases: &[Case]) -> Vec<(usize, Vec<f64>)> {
    let mut script = format!(
        "import warnings\nfrom skimage.transform import iradon\nwarnings.simplefilter('ignore')\n\
         s = np.fromfile(sys.argv[1], '<f4').reshape({}, {})\n",
        sinogram.height, sinogram.width
    );
    for case in cases {
        let theta = match &case.angles {
            Some(list) => {
                let list: Vec<String> = list.iter().map(|a| format!("{a:?}")).collect();
                format!("np.array([{}], np.float64)", list.join(","))
            }
            None => "None".into(),
        };
        let filter = if case.filter == "none" { "None".to_owned() } else { format!("'{}'", case.filter) };
        let size = case.size.map_or("None".to_owned(), |n| n.to_string());
        let circle = if case.circle { "True" } else { "False" };
        script.push_str(&format!(
            "r = iradon(s, theta={theta}, output_size={size}, filter_name={filter}, \
             interpolation='linear', circle={circle}).astype(np.float64)\n\
             sys.stdout.buffer.write(np.array(r.shape[0], np.int64).tobytes() + r.tobytes())\n"
        ));
    }
    let out = skimage(&script, &[&raw_f32(sinogram)]);
    let mut at = 0;
    cases
        .iter()
        .map(|_| {
            let n = i64::from_le_bytes(out[at..at + 8].try_into().unwrap()) as usize;
            at += 8;
            let values = out[at..at + 8 * n * n]
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            at += 8 * n * n;
            (n, values)
        })
        .collect()
}

/// Ours on `backend`, as a float frame (PFM on stdout).
fn ours(sinogram: &Frame, backend: &str, args: &[String]) -> Frame {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = read_frames(&run_ok("iradon", backend, &args, &stream(std::slice::from_ref(sinogram))));
    assert_eq!(out.len(), 1);
    out.into_iter().next().unwrap()
}

/// Ours against scikit-image on each case: the same shape, every value within 1e-3 of
/// scikit-image's largest magnitude. Returns the worst relative difference.
fn check_against_skimage(sinogram: &Frame, cases: &[Case]) -> f64 {
    let theirs = skimage_iradon(sinogram, cases);
    let mut worst = 0f64;
    for (case, (n, expected)) in cases.iter().zip(theirs) {
        let got = ours(sinogram, "cpu", &case.args());
        let what = format!("{}x{} sinogram {case:?}", sinogram.width, sinogram.height);
        assert_eq!((got.width, got.height), (n, n), "{what}: shape");
        worst = worst.max(within_1e3_of_largest(&what, &got, &expected));
    }
    worst
}

/// Our `radon` of a fixture, as a float frame.
fn sinogram_of(fixture: &str, args: &[&str]) -> Frame {
    let mut s = read_frames(&run_ok("radon", "cpu", args, &fixture_bytes(fixture))).remove(0);
    s.format = Format::Pfm;
    s
}

fn random_sinogram(rng: &mut fastrand::Rng, positions: usize, angles: usize) -> Frame {
    let v: Vec<f32> = (0..positions * angles).map(|_| rng.f32() * 20.0 - 5.0).collect();
    let mut f = Frame::new(angles, positions, 1, Pixels::F32(v.into()));
    f.format = Format::Pfm;
    f
}

const FILTERS: [&str; 6] = ["ramp", "shepp-logan", "cosine", "hamming", "hann", "none"];

/// scikit-image's test of iradon: the phantom through radon and back, every filter; ours the same
/// as scikit-image's reconstruction, and near the phantom: a mean error of 0.040 from 90 angles
/// with the ramp filter, scikit-image's as ours (its own test allows 0.03 from 180 angles).
#[test]
fn shepp_logan_round_trip_matches_scikit_image() {
    let sinogram = sinogram_of("shepp_logan.png", &["--angles", "0:180:2"]);
    assert_eq!((sinogram.width, sinogram.height), (90, 566));
    let cases: Vec<Case> = FILTERS.iter().map(|f| Case::new(Some("0:180:2"), f, false, None)).collect();
    let worst = check_against_skimage(&sinogram, &cases);
    let phantom = fixture_frame("shepp_logan.png");
    let Pixels::U8(truth) = &phantom.pixels else { panic!() };
    let back = ours(&sinogram, "cpu", &Case::new(Some("0:180:2"), "ramp", false, None).args());
    let Pixels::F32(back) = &back.pixels else { panic!() };
    let mean = back.iter().zip(truth.iter()).map(|(&a, &t)| (a as f64 - t as f64 / 255.0).abs()).sum::<f64>()
        / 160000.0;
    assert!(mean < 0.045, "mean error against the phantom {mean}");
    // With --circle, the default angles (scikit-image's linspace over 180 columns: radon's 0:180:1).
    let sinogram = sinogram_of("shepp_logan.png", &["--circle"]);
    let worst = worst.max(check_against_skimage(
        &sinogram,
        &[Case::new(None, "ramp", true, None), Case::new(None, "hann", true, Some(301))],
    ));
    eprintln!("worst relative difference (phantom): {worst:e}");
}

/// scikit-image's test_iradon_center: the sinogram of one point at the rotation axis (a spike at
/// row S0 div 2 of every column) comes back with its peak at the centre (n div 2, n div 2), for
/// odd and even sizes, as scikit-image's reconstruction of it.
#[test]
fn a_point_on_the_axis_comes_back_at_the_centre() {
    for (positions, angles) in [(15, 20), (16, 20), (17, 45)] {
        let mut v = vec![0f32; positions * angles];
        v[(positions / 2) * angles..][..angles].fill(1.0);
        let mut s = Frame::new(angles, positions, 1, Pixels::F32(v.into()));
        s.format = Format::Pfm;
        for circle in [false, true] {
            let case = Case::new(None, "ramp", circle, None);
            check_against_skimage(&s, std::slice::from_ref(&case));
            let out = ours(&s, "cpu", &case.args());
            let Pixels::F32(v) = &out.pixels else { panic!() };
            let peak = (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
            let n = out.width;
            assert_eq!((peak / n, peak % n), (n / 2, n / 2), "{positions}x{angles} circle {circle}");
        }
    }
}

/// A photo's sinogram (camera.pgm, a frame that is not 0 outside its circle) and back.
#[test]
fn a_photo_matches_scikit_image() {
    let sinogram = sinogram_of("camera.pgm", &["--angles", "0:180:3"]);
    let worst = check_against_skimage(
        &sinogram,
        &[
            Case::new(Some("0:180:3"), "ramp", false, None),
            Case::new(Some("0:180:3"), "cosine", true, Some(200)),
        ],
    );
    eprintln!("worst relative difference (camera): {worst:e}");
}

/// Fresh random sinograms: odd, thin and tiny sizes, lists of angles in any order, every filter,
/// both modes, sizes larger and smaller than the default.
#[test]
fn random_sinograms_match_scikit_image() {
    let mut rng = rng();
    let list = "-30,0,45,90,200,359.5,1000";
    let mut worst = 0f64;
    for (positions, angles) in [(1, 1), (2, 3), (3, 7), (17, 5), (40, 7), (64, 33), (45, 90)] {
        let sinogram = random_sinogram(&mut rng, positions, angles);
        let angle_text = if angles == 7 { Some(list) } else { None };
        let mut cases = Vec::new();
        for circle in [false, true] {
            let filter = FILTERS[rng.usize(..FILTERS.len())];
            let default =
                if circle { positions } else { ((positions * positions) as f64 / 2.0).sqrt() as usize };
            if default > 0 {
                cases.push(Case::new(angle_text, filter, circle, None));
            }
            cases.push(Case::new(
                angle_text,
                FILTERS[rng.usize(..FILTERS.len())],
                circle,
                Some(rng.usize(1..70)),
            ));
        }
        worst = worst.max(check_against_skimage(&sinogram, &cases));
    }
    eprintln!("worst relative difference (random): {worst:e}");
}

/// `radon | iradon` with radon's defaults needs no --angles: scikit-image's default angles for 180
/// columns are radon's 0:180:1; a 16-bit and an NPY sinogram are read too (NPY in, NPY out).
#[test]
fn the_pipe_from_radon_needs_no_angles() {
    let sinogram = read_frames(&run_ok("radon", "cpu", &[], &fixture_bytes("coins.pgm"))).remove(0);
    let piped = shell(&repo(), "radon --backend cpu tests/fixtures/coins.pgm | iradon --backend cpu")
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    let piped = read_frames(&piped.stdout).remove(0);
    let explicit = ours(&sinogram, "cpu", &Case::new(Some("0:180:1"), "ramp", false, None).args());
    assert!(same_bits(&piped, &explicit));
    assert_eq!((piped.width, piped.height), (384, 384));
    check_against_skimage(&sinogram, &[Case::new(None, "ramp", false, None)]);
    let dir = temp_dir("iradon-npy");
    let npy = dir.join("s.npy");
    run_ok("radon", "cpu", &["-o", npy.to_str().unwrap()], &fixture_bytes("coins.pgm"));
    let out = tool("iradon").args(["--backend", "cpu"]).arg(&npy).output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"\x93NUMPY"), "NPY in, NPY out");
    assert!(same_bits(&read_frames(&out.stdout).remove(0), &explicit));
}

/// radon records its angles in an NPY sinogram's header (a comment after the dict, which np.load
/// skips); iradon reads them, so that `radon -o s.npy` then `iradon s.npy` needs no --angles; a
/// given --angles wins; a record that does not fit the columns is refused in one line. PFM has no
/// room for it: the pipe's PFM falls back to scikit-image's default angles.
#[test]
fn angles_recorded_in_npy_are_read_back() {
    let dir = temp_dir("iradon-recorded");
    let npy = dir.join("s.npy");
    let angles = "-30,0,45,90,200,359.5,1000";
    run_ok(
        "radon",
        "cpu",
        &[&format!("--angles={angles}"), "-o", npy.to_str().unwrap()],
        &fixture_bytes("coins.pgm"),
    );
    let bytes = std::fs::read(&npy).unwrap();
    let header = String::from_utf8_lossy(&bytes[..128]).into_owned();
    assert!(header.contains(&format!("}} # histopipe-angles {angles}")), "{header}");
    // np.load reads it, as the same array as the PFM's.
    let loaded =
        skimage("a = np.load(sys.argv[1])\nsys.stdout.buffer.write(a.astype('<f4').tobytes())", &[&bytes]);
    let sinogram = read_frames(&bytes).remove(0);
    assert_eq!(loaded, raw_f32(&sinogram));
    let recorded = tool("iradon").args(["--backend", "cpu"]).arg(&npy).output().unwrap();
    assert!(recorded.status.success(), "{}", String::from_utf8_lossy(&recorded.stderr));
    let recorded = read_frames(&recorded.stdout).remove(0);
    let given = ours(&sinogram, "cpu", &Case::new(Some(angles), "ramp", false, None).args());
    assert!(same_bits(&recorded, &given), "the recorded angles are the given ones");
    check_against_skimage(&sinogram, &[Case::new(Some(angles), "ramp", false, None)]);
    let other = tool("iradon").args(["--backend", "cpu", "--angles", "0:7"]).arg(&npy).output().unwrap();
    let other = read_frames(&other.stdout).remove(0);
    assert!(!same_bits(&other, &given), "--angles wins over the record");
    // A record of 3 angles on 7 columns.
    let at = bytes.windows(angles.len()).position(|w| w == angles.as_bytes()).unwrap();
    let three = format!("{:<1$}", "0,1,2", angles.len());
    let wrong = [&bytes[..at], three.as_bytes(), &bytes[at + angles.len()..]].concat();
    let e = run_err("iradon", &[], &wrong, 2);
    assert!(e.contains("'# histopipe-angles' comment: 3 angles for 7 columns: give --angles"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// NaN and infinities in a sinogram give NaN (the quiet NaN) where they reach, not a failure;
/// the whole reconstruction, as scikit-image's, since the FFT spreads a NaN over its column.
#[test]
fn nan_spreads_and_does_not_fail() {
    let mut rng = rng();
    let s = random_sinogram(&mut rng, 20, 6);
    let Pixels::F32(v) = &s.pixels else { panic!() };
    let mut v = v.to_vec();
    v[13] = f32::NAN;
    let mut s = Frame::new(6, 20, 1, Pixels::F32(v.into()));
    s.format = Format::Pfm;
    let out = ours(&s, "cpu", &[]);
    let Pixels::F32(v) = &out.pixels else { panic!() };
    assert!(v.iter().all(|x| x.to_bits() == 0x7FC0_0000), "every pixel reads the NaN column");
    let circle = ours(&s, "cpu", &["--circle".to_owned()]);
    let Pixels::F32(v) = &circle.pixels else { panic!() };
    assert_eq!(v[0].to_bits(), 0, "outside the circle is 0, as scikit-image sets it");
}

#[test]
fn refusals_are_one_line() {
    let mut rng = rng();
    let s = stream(&[random_sinogram(&mut rng, 30, 4)]);
    let one_line = |e: &str| assert_eq!(e.lines().count(), 1, "{e}");
    let e = run_err("iradon", &["--angles", "0:180:1"], &s, 2);
    assert!(e.contains("--angles") && e.contains("4 angles"), "{e}");
    one_line(&e);
    let e = run_err("iradon", &["--filter", "shepp"], &s, 2);
    assert!(e.contains("--filter") && e.contains("hann"), "{e}");
    assert!(run_err("iradon", &["--size", "0"], &s, 2).contains("--size"));
    assert!(run_err("iradon", &["--size", "x"], &s, 2).contains("--size"));
    // An absurd side is refused before anything is allocated.
    let e = run_err("iradon", &["--size", "16000000"], &s, 2);
    assert!(e.contains("--max-pixels") || e.contains("--size"), "{e}");
    one_line(&e);
    let e = run_err("iradon", &["--size", "100000"], &s, 2);
    assert!(e.contains("--max-pixels"), "{e}");
    // Work over --max-work: 4 angles x 64^2 reads and 2 FFTs of 64 (2 x 4 x 64 x 6).
    let e = run_err("iradon", &["--size", "64", "--max-work", "19455"], &s, 2);
    assert!(e.contains("--max-work") && e.contains("19456"), "{e}");
    assert!(run_ok("iradon", "cpu", &["--size", "64", "--max-work", "19456"], &s).starts_with(b"Pf"));
    // Nothing to read, and a sinogram of one position (a 0 x 0 output).
    let e = run_err("iradon", &[], b"", 2);
    one_line(&e);
    let thin = stream(&[random_sinogram(&mut rng, 1, 3)]);
    let e = run_err("iradon", &[], &thin, 2);
    assert!(e.contains("--size"), "{e}");
    one_line(&e);
    assert!(run_ok("iradon", "cpu", &["--circle"], &thin).starts_with(b"Pf"));
}

/// CPU and GPU give the same bytes through the binaries: the phantom, a photo and random
/// sinograms with NaN and infinities, every filter, both modes.
#[test]
fn gpu_backend_matches_cpu_backend() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let mut sinograms = vec![
        sinogram_of("shepp_logan.png", &["--angles", "0:180:1"]),
        sinogram_of("camera.pgm", &["--angles", "0:180:0.5", "--circle"]),
        random_sinogram(&mut rng, 33, 1),
    ];
    let s = random_sinogram(&mut rng, 41, 17);
    let Pixels::F32(v) = &s.pixels else { panic!() };
    let mut v = v.to_vec();
    (v[5], v[90], v[91]) = (f32::INFINITY, f32::NEG_INFINITY, -0.0);
    let mut s = Frame::new(17, 41, 1, Pixels::F32(v.into()));
    s.format = Format::Pfm;
    sinograms.push(s);
    for s in &sinograms {
        for (k, filter) in FILTERS.iter().enumerate() {
            let case = Case::new(None, filter, k % 2 == 1, (k == 4).then_some(s.height + 9));
            let (cpu, gpu_out) = (ours(s, "cpu", &case.args()), ours(s, "gpu", &case.args()));
            assert!(same_bits(&cpu, &gpu_out), "{}x{} {case:?}: GPU output differs", s.width, s.height);
        }
    }
}
