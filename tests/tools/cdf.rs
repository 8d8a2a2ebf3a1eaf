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
