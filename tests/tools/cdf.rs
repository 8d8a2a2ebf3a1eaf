use histopipe_ops::histogram::Histogram;
use histopipe_ops::Op;

use crate::common::*;

/// The rows of `cdf`'s output under its header, split into fields.
fn rows(out: &[u8], sep: char) -> Vec<Vec<u64>> {
    let text = String::from_utf8(out.to_vec()).unwrap();
    let mut lines = text.lines();
    let header = ["frame", "source", "bin", "lower", "upper", "count", "cumulative", "fraction"];
    assert_eq!(lines.next().unwrap(), header.join(&sep.to_string()));
    lines
        .map(|l| {
            let mut f: Vec<&str> = l.split(sep).collect();
            assert_eq!(f.len(), 8, "{l}");
            assert_eq!(f.remove(1), "-", "read from standard input: {l}");
            let (whole, millionths) = f[6].split_once('.').unwrap();
            assert_eq!(millionths.len(), 6, "{l}");
            let fraction = whole.parse::<u64>().unwrap() * 1_000_000 + millionths.parse::<u64>().unwrap();
            f[..6].iter().map(|x| x.parse().unwrap()).chain([fraction]).collect()
        })
        .collect()
}

/// Checks one frame's block: bins partition 0..=maxval, counts accumulate to `pixels`.
fn check_block(block: &[Vec<u64>], frame: u64, bins: usize, maxval: u64, pixels: u64) {
    assert_eq!(block.len(), bins);
    let (mut next, mut sum) = (0, 0);
    for (b, row) in block.iter().enumerate() {
        assert_eq!((row[0], row[1], row[2]), (frame, b as u64, next), "{row:?}");
        assert!(row[3] >= row[2]);
        next = row[3] + 1;
        sum += row[4];
        assert_eq!(row[5], sum);
        assert_eq!(row[6], (2 * sum * 1_000_000 + pixels) / (2 * pixels));
    }
    assert_eq!(next, maxval + 1);
    assert_eq!(sum, pixels);
    assert_eq!(block[bins - 1][6], 1_000_000);
}

/// Bin counts as cv2.calcHist gives them, for uniform bins over [0, 256).
fn opencv_counts(name: &str, bins: usize) -> Vec<u64> {
    let frame = fixture_frame(name);
    let script = format!(
        "a = np.fromfile(sys.argv[1], np.uint8).reshape({}, {})\n\
         h = cv2.calcHist([a], [0], None, [{bins}], [0, 256])\n\
         sys.stdout.write(' '.join(str(int(x)) for x in h.ravel()))\n",
        frame.height, frame.width
    );
    let histopipe_frame::Pixels::U8(samples) = &frame.pixels else { panic!("8-bit fixture") };
    let out = opencv(&script, &[samples]);
    String::from_utf8(out).unwrap().split(' ').map(|x| x.parse().unwrap()).collect()
}

#[test]
fn eight_bins_of_width_32_match_opencv() {
    let out = rows(&run_ok("cdf", "cpu", &["--bins", "8"], &fixture_bytes("camera.pgm")), ',');
    check_block(&out, 1, 8, 255, 512 * 512);
    for (b, row) in out.iter().enumerate() {
        assert_eq!((row[2], row[3]), (32 * b as u64, 32 * b as u64 + 31));
    }
    let counts: Vec<u64> = out.iter().map(|r| r[4]).collect();
    assert_eq!(counts, opencv_counts("camera.pgm", 8));
}

#[test]
fn one_bin_per_level_by_default() {
    for name in ["moon.pgm", "coins.pgm"] {
        let out = rows(&run_ok("cdf", "cpu", &[], &fixture_bytes(name)), ',');
        let frame = fixture_frame(name);
        check_block(&out, 1, 256, 255, frame.pixel_count() as u64);
        assert!(out.iter().all(|r| r[2] == r[3]));
        let counts: Vec<u64> = out.iter().map(|r| r[4]).collect();
        assert_eq!(counts, opencv_counts(name, 256), "{name}");
    }
    let out = rows(&run_ok("cdf", "cpu", &[], &fixture_bytes("dem16.pgm")), ',');
    check_block(&out, 1, 1077, 1076, 403 * 344);
}

#[test]
fn uneven_bins_partition_the_levels() {
    let mut rng = rng();
    for (maxval, bins) in [(1076u16, 7usize), (255, 3), (255, 256), (65535, 1000), (1, 2), (100, 1)] {
        let frame = random_frame(&mut rng, 33, 7, maxval);
        let out = rows(&run_ok("cdf", "cpu", &["--bins", &bins.to_string()], &stream(&[frame])), ',');
        check_block(&out, 1, bins, maxval as u64, 33 * 7);
    }
}

#[test]
fn one_block_per_frame_and_tsv() {
    let frames = [fixture_frame("camera.pgm"), fixture_frame("page.pgm"), fixture_frame("dem16.pgm")];
    let out = run_ok("cdf", "cpu", &["--bins", "16", "--format", "tsv"], &stream(&frames));
    let rows = rows(&out, '\t');
    assert_eq!(rows.len(), 48);
    for (i, (block, frame)) in rows.chunks(16).zip(&frames).enumerate() {
        check_block(block, i as u64 + 1, 16, frame.maxval as u64, frame.pixel_count() as u64);
    }
}

#[test]
fn option_errors() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("cdf", &["--bins", "0"], &camera, 2).contains("--bins: must be at least 1"));
    assert!(run_err("cdf", &["--bins", "x"], &camera, 2).contains("--bins: bad value 'x'"));
    assert!(run_err("cdf", &["--bins", "257"], &camera, 2)
        .contains("frame 1: --bins 257: a frame with maxval 255 has 1 to 256 bins"));
    assert!(run_err("cdf", &["--format", "json"], &camera, 2).contains("unknown format 'json'"));
}

#[test]
fn gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for (w, h, maxval) in [(1, 1, 255), (1, 301, 65535), (257, 1, 1076), (4097, 3, 255), (640, 480, 65535)] {
        let frame = random_frame(&mut rng, w, h, maxval);
        // 4096 and 4097 bins: the first counted in two copies per block on the GPU, the second in one.
        let many: &[Option<usize>] = if maxval >= 4097 { &[Some(4096), Some(4097)] } else { &[] };
        for &bins in [None, Some(1), Some(8), Some(9), Some(maxval as usize)].iter().chain(many) {
            let op = Histogram { bins };
            assert_eq!(op.cpu(&frame).unwrap(), op.gpu(&gpu, &frame).unwrap(), "{w}x{h} {maxval} {bins:?}");
        }
    }
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("dem16.pgm")]);
    for args in [&[][..], &["--bins", "8"]] {
        assert!(run_ok("cdf", "gpu", args, &input) == run_ok("cdf", "cpu", args, &input), "{args:?}");
    }
}

/// `--plot`: the bars and curve beside the table, which stays as it was; one file per frame with
/// `{n}`.
#[test]
fn plot_writes_figures() {
    let dir = temp_dir("cdf-plot");
    let input = stream(&[fixture_frame("moon.pgm"), fixture_frame("dem16.pgm")]);
    let table = run_ok("cdf", "cpu", &["--bins", "32"], &input);
    let each = dir.join("cdf-{n}.svg");
    assert_eq!(run_ok("cdf", "cpu", &["--bins", "32", "--plot", each.to_str().unwrap()], &input), table);
    for (n, size) in [(1, "512x512, maxval 255"), (2, "403x344, maxval 1076")] {
        let text = std::fs::read_to_string(dir.join(format!("cdf-{n}.svg"))).unwrap();
        assert!(text.contains(&format!("cdf: frame {n}, {size}, 32 bins")), "frame {n}");
        assert!(text.contains("cumulative fraction") && text.contains("pixels per bin"));
    }
    let png = dir.join("cdf.png");
    run_ok("cdf", "cpu", &["--plot", png.to_str().unwrap()], &input);
    assert_eq!(image::open(&png).unwrap().width(), 960);
    assert!(run_err("cdf", &["--plot", "cdf.txt"], &input, 2).contains("must end in .svg or .png"));
}

/// Runs `tool` with `args` (on the CPU) and writes its output to `out`.
pub fn run_to(tool_name: &str, backend: &str, args: &[&str], out: &std::path::Path) {
    let o = tool(tool_name).env("HISTOPIPE_BACKEND", backend).args(args).output().unwrap();
    assert!(o.status.success(), "{tool_name} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(out, o.stdout).unwrap();
}

/// A float TIFF of random normal samples with NaN, +inf, -inf and values on f32-rounded edges,
/// made by OpenCV; returns its path.
pub fn float_tiff(dir: &std::path::Path, seed: u32) -> std::path::PathBuf {
    let path = dir.join(format!("f{seed}.tif"));
    let script = format!(
        "rng = np.random.default_rng({seed})\n\
         a = rng.normal(size=(37, 53)).astype(np.float32)\n\
         a.flat[rng.choice(a.size, 40)] = np.nan\n\
         a.flat[rng.choice(a.size, 7)] = np.inf\n\
         a.flat[rng.choice(a.size, 5)] = -np.inf\n\
         a[0, :10] = np.float32(0.7); a[1, :5] = -1.0; a[1, 5:10] = 1.0; a[2, :4] = np.float32(0.1)\n\
         assert cv2.imwrite(sys.stdin.read(), a)\n"
    );
    crate::opencv::python(&script, path.to_str().unwrap());
    path
}

/// `--colour each`: one histogram per channel, equal to np.bincount of each channel.
#[test]
fn colour_each_counts_each_channel() {
    let dir = temp_dir("cdf-colour");
    let astronaut = fixture("astronaut.png");
    let out = dir.join("each.csv");
    run_to("cdf", "cpu", &["--colour", "each", astronaut.to_str().unwrap()], &out);
    let script = "import pandas as pd\n\
        png, csv = sys.stdin.read().split('\\t')\n\
        rgb = cv2.imread(png, cv2.IMREAD_UNCHANGED)[..., ::-1]\n\
        df = pd.read_csv(csv, float_precision='round_trip')\n\
        assert list(df.columns[:4]) == ['frame', 'source', 'channel', 'bin']\n\
        for c, name in enumerate(['red', 'green', 'blue']):\n\
            \x20\x20\x20\x20got = df[df.channel == name]['count'].to_numpy()\n\
            \x20\x20\x20\x20assert (got == np.bincount(rgb[..., c].ravel(), minlength=256)).all(), name\n\
        print('ok')\n";
    let input = format!("{}\t{}", astronaut.display(), out.display());
    assert_eq!(crate::opencv::python(script, &input).trim(), "ok");
    // A gray frame under `each`: channel gray.
    let text = String::from_utf8(run_ok(
        "cdf",
        "cpu",
        &["--colour", "each", "--bins", "2"],
        &fixture_bytes("camera.pgm"),
    ))
    .unwrap();
    assert!(text.lines().nth(1).unwrap().starts_with("1,-,gray,0,0,127,"), "{text}");
}

/// Float frames and --range: the counts, edges and left-out samples numpy.histogram gives on the
/// samples as float64; with --range on integer frames, below and above.
#[test]
fn float_bins_match_numpy_histogram() {
    let dir = temp_dir("cdf-float");
    for seed in [1, 2] {
        let tif = float_tiff(&dir, seed);
        for (k, args) in [
            &["--bins", "10", "--range", "-1:1"][..],
            &["--bins", "7"],
            &[],
            &["--bins", "300", "--range", "-0.3:0.9"],
        ]
        .iter()
        .enumerate()
        {
            let out = dir.join(format!("t{seed}-{k}.csv"));
            let mut all = args.to_vec();
            all.push(tif.to_str().unwrap());
            run_to("cdf", "cpu", &all, &out);
            let check = "df = pd.read_csv(csv, float_precision='round_trip')\n\
                 h, e = np.histogram(fin, bins=len(df), range=r)\n\
                 assert (df['count'].to_numpy() == h).all()\n\
                 assert np.array_equal(df.lower.to_numpy(), e[:-1]) and np.array_equal(df.upper.to_numpy(), e[1:])\n\
                 row = df.iloc[0]\n\
                 assert row.nans == np.isnan(a).sum() and row.pos_inf == np.isposinf(a).sum()\n\
                 assert row.neg_inf == np.isneginf(a).sum()\n\
                 assert row.below == (fin < r[0]).sum() and row.above == (fin > r[1]).sum()\n\
                 print('ok')\n";
            crate::opencv::check_float_table(&tif, &out, args, check);
        }
    }
    let text = String::from_utf8(run_ok(
        "cdf",
        "cpu",
        &["--range", "10:200", "--bins", "19"],
        &fixture_bytes("camera.pgm"),
    ))
    .unwrap();
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "frame,source,bin,lower,upper,count,cumulative,fraction,below,above,nans,neg_inf,pos_inf"
    );
    assert!(
        text.lines().nth(1).unwrap().starts_with("1,-,0,10,20,9625,9625,0.049253,11614,55112,0,0,0"),
        "{text}"
    );
}

/// `-o x.npy`: the table as a float64 array numpy loads; one frame a file.
#[test]
fn npy_table_loads() {
    let dir = temp_dir("cdf-npy");
    let csv = dir.join("c.csv");
    let npy = dir.join("c.npy");
    let camera = fixture("camera.pgm");
    run_to("cdf", "cpu", &["--bins", "8", camera.to_str().unwrap()], &csv);
    run_to(
        "cdf",
        "cpu",
        &["--bins", "8", "-o", npy.to_str().unwrap(), camera.to_str().unwrap()],
        &dir.join("none"),
    );
    let script = "import pandas as pd\n\
        csv, npy = sys.stdin.read().split('\\t')\n\
        x = np.load(npy)\n\
        assert x.shape == (8, 6) and x.dtype == np.float64, (x.shape, x.dtype)\n\
        df = pd.read_csv(csv, float_precision='round_trip')\n\
        assert (x[:, :5] == df[['bin', 'lower', 'upper', 'count', 'cumulative']].to_numpy()).all()\n\
        assert np.allclose(x[:, 5], df.fraction, atol=5e-7)\n\
        print('ok')\n";
    let input = format!("{}\t{}", csv.display(), npy.display());
    assert_eq!(crate::opencv::python(script, &input).trim(), "ok");
    let two = stream(&[fixture_frame("camera.pgm"), fixture_frame("moon.pgm")]);
    assert!(run_err("cdf", &["--format", "npy"], &two, 2).contains("one frame's table"));
}

/// Float classes: the GPU's, made with the same f64 operations, are the CPU's.
#[test]
fn float_classes_gpu_matches_cpu() {
    use histopipe_ops::range::{FloatClasses, FloatRange};
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut samples: Vec<f32> = (0..100_003).map(|_| (rng.f32() - 0.3) * 7.0).collect();
    for (i, v) in
        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.7, 0.1, -1.0, 1.0, 2.0].into_iter().enumerate()
    {
        samples[i * 97] = v;
    }
    let frame =
        histopipe_frame::Frame::new(100_003, 1, 1, histopipe_frame::Pixels::F32(samples.clone().into()));
    for (range, bins) in
        [(Some((-1.0, 1.0)), Some(10)), (None, None), (Some((-0.3, 0.9)), Some(65531)), (None, Some(3))]
    {
        let op = FloatClasses { range: FloatRange::new(range, bins, &samples).unwrap() };
        assert_eq!(
            op.cpu(&frame).unwrap().pixels,
            op.gpu(&gpu, &frame).unwrap().pixels,
            "{range:?} {bins:?}"
        );
    }
}

/// The count column of `cdf`'s CSV rows (after frame, source, [channel,] bin, lower, upper).
fn counts_of(out: &[u8], channel: bool) -> Vec<u64> {
    let text = String::from_utf8(out.to_vec()).unwrap();
    let at = if channel { 6 } else { 5 };
    text.lines().skip(1).map(|l| l.split(',').nth(at).unwrap().parse().unwrap()).collect()
}

/// `--mask`: the counts are numpy.histogram's of the masked samples alone: 8-bit (one bin a
/// level, and 16 bins), 16-bit with --range (binned as without a mask), float with its default
/// range (the masked samples' extremes) and a given one; colour each, every channel under the
/// one mask; the GPU the CPU's.
#[test]
fn mask_counts_the_masked_pixels_as_numpy() {
    let inputs = MaskInputs::new("cdf-mask", &mut rng(), 61, 47);
    let MaskInputs { path: m, gray, deep, tiff, colour, .. } = &inputs;
    let cases: Vec<(Vec<&str>, Vec<u8>, bool)> = vec![
        (vec![], stream(std::slice::from_ref(gray)), false),
        (vec!["--bins", "16"], stream(std::slice::from_ref(gray)), false),
        (vec!["--range", "100:3099", "--bins", "30"], stream(std::slice::from_ref(deep)), false),
        (vec!["--bins", "20"], tiff.clone(), false),
        (vec!["--bins", "7", "--range", "-20:40"], tiff.clone(), false),
        (vec!["--colour", "each"], stream(std::slice::from_ref(colour)), true),
    ];
    let got: Vec<Vec<u64>> = cases
        .iter()
        .map(|(args, input, channel)| {
            let mut all = args.clone();
            all.extend(["--mask", m]);
            let out = run_ok("cdf", "cpu", &all, input);
            if let Some(_gpu) = gpu() {
                assert_eq!(run_ok("cdf", "gpu", &all, input), out, "{args:?}: GPU and CPU");
            }
            counts_of(&out, *channel)
        })
        .collect();
    let script = "m = np.fromfile(sys.argv[1], np.uint8) != 0\n\
                  g = np.fromfile(sys.argv[2], np.uint8)[m]\n\
                  d = np.fromfile(sys.argv[3], '<u2')[m]\n\
                  f = np.fromfile(sys.argv[4], '<f4').astype(np.float64)[m]\n\
                  c = np.fromfile(sys.argv[5], np.uint8).reshape(-1, 3)[m]\n\
                  out = [np.bincount(g, minlength=256), np.histogram(g, 16, (0, 256))[0],\n       \
                  np.histogram(d[d < 3100], 30, (100, 3100))[0], np.histogram(f, 20)[0],\n       \
                  np.histogram(f, 7, (-20, 40))[0],\n       \
                  np.concatenate([np.bincount(c[:, k], minlength=256) for k in range(3)])]\n\
                  print('\\n'.join(' '.join(map(str, o)) for o in out))\n";
    let raw = inputs.raw();
    let want = opencv(script, &raw.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let want: Vec<Vec<u64>> = String::from_utf8(want)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
        .collect();
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "case {i}: {:?}", cases[i].0);
    }
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    assert_mask_size_refused("cdf", &[]);
}
