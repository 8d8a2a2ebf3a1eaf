use histopipe_frame::{Frame, Pixels};
use histopipe_ops::hough::{paired, HoughLines, HoughParams, HoughSpace, HoughVote, Line, Strategy};
use histopipe_ops::Op;

use crate::common::*;
use crate::opencv::{self, CvLine};

/// Our CSV: (rho, theta, theta_degrees, votes) per line.
fn parse_csv(bytes: &[u8]) -> Vec<(f32, f32, f64, u32)> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("frame,source,rho,theta,theta_degrees,votes"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap(), f[4].parse().unwrap(), f[5].parse().unwrap())
        })
        .collect()
}

fn assert_same_lines(ours: &[(f32, f32, f64, u32)], cv: &[CvLine], what: &str) {
    assert_eq!(ours.len(), cv.len(), "{what}: {} lines, cv2.HoughLines found {}", ours.len(), cv.len());
    for (i, (o, c)) in ours.iter().zip(cv).enumerate() {
        assert!(
            (o.0 - c.rho).abs() <= 1e-3 && (o.1 - c.theta).abs() <= 1e-6 && o.3 == c.votes,
            "{what}: line {i} is {o:?}, cv2 says {c:?}"
        );
    }
}

/// An edge map whose votes (edge pixels x angles, and a read of every pixel) are over --max-work
/// is refused before any is cast; an empty map of the same size is its pixels' work alone.
#[test]
fn votes_over_max_work_are_refused_before_they_start() {
    let all = Frame::new(100, 100, 255, Pixels::U8(vec![255; 10000].into()));
    let e = run_err("hough-vote", &["--max-work", "1809999"], &stream(std::slice::from_ref(&all)), 2);
    assert_eq!(
        e,
        "hough-vote: frame 1: this frame's work would be 1810000 steps (10000 edge pixels x 180 angles of \
         votes), over the limit of 1809999 (--max-work): raise --max-work to run it\n"
    );
    run_ok("hough-vote", "cpu", &["--max-work", "1810000"], &stream(&[all]));
    let none = Frame::new(100, 100, 255, Pixels::U8(vec![0; 10000].into()));
    run_ok("hough-vote", "cpu", &["--max-work", "10000"], &stream(&[none]));
}

/// `edges | hough-vote | hough-lines --threshold T` gives cv2.HoughLines's lines, in its order.
#[test]
fn pipeline_matches_opencv_on_fixtures() {
    for (name, thresholds) in
        [("page.pgm", [60, 100]), ("brick.pgm", [80, 150]), ("chessboard.pgm", [40, 100])]
    {
        let (edges, frame) = edge_map(name);
        let acc = run_ok("hough-vote", "cpu", &[], &edges);
        for t in thresholds {
            let ours = parse_csv(&run_ok("hough-lines", "cpu", &["--threshold", &t.to_string()], &acc));
            let cv =
                opencv::hough_lines(&frame, 1.0, std::f64::consts::PI / 180.0, t, 0.0, std::f64::consts::PI);
            assert!(!cv.is_empty(), "{name}: no lines over {t}");
            assert_same_lines(&ours, &cv, &format!("{name} --threshold {t}"));
        }
    }
}

/// Other axes, as OpenCV's min_theta/max_theta/rho/theta arguments (the radians computed as
/// hough-vote computes them), including the published system's [-90, 90).
#[test]
fn other_axes_match_opencv() {
    let (edges, frame) = edge_map("brick.pgm");
    let axes: &[(f64, f64, f64, f64, u32)] = &[
        (-90.0, 90.0, 1.0, 1.0, 60),
        (0.0, 180.0, 0.5, 2.0, 80),
        (10.0, 120.0, 2.0, 0.7, 50),
        (0.0, 360.0, 3.0, 1.5, 60),
    ];
    for &(min, max, step, rho, t) in axes {
        let args: Vec<String> =
            [("--theta-min", min), ("--theta-max", max), ("--theta-step", step), ("--rho-step", rho)]
                .iter()
                .flat_map(|(k, v)| [k.to_string(), v.to_string()])
                .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let acc = run_ok("hough-vote", "cpu", &args, &edges);
        let ours = parse_csv(&run_ok("hough-lines", "cpu", &["--threshold", &t.to_string()], &acc));
        let cv = opencv::hough_lines(&frame, rho, step.to_radians(), t, min.to_radians(), max.to_radians());
        assert_same_lines(&ours, &cv, &format!("{args:?}"));
        let first = ours.first().expect("some lines");
        let n = ((first.2 - min) / step).round();
        assert!((first.2 - (min + n * step)).abs() < 1e-9, "degrees on the nominal grid: {}", first.2);
    }
}

/// Synthetic lines of known rho and theta are found where they were drawn, as OpenCV finds them.
#[test]
fn synthetic_lines_are_found() {
    let (w, h) = (240, 160);
    let known = [(50.0f64, 30.0f64), (-40.0, 120.0), (100.0, 90.0), (130.0, 0.0)];
    let mut px = vec![0u8; w * h];
    for &(rho, deg) in &known {
        let (c, s) = (deg.to_radians().cos(), deg.to_radians().sin());
        for y in 0..h {
            for x in 0..w {
                if (x as f64 * c + y as f64 * s - rho).abs() < 0.5 {
                    px[y * w + x] = 255;
                }
            }
        }
    }
    let frame = Frame::new(w, h, 255, Pixels::U8(px.into()));
    let acc = run_ok("hough-vote", "cpu", &[], &stream(std::slice::from_ref(&frame)));
    let ours = parse_csv(&run_ok("hough-lines", "cpu", &["--top", "4"], &acc));
    let cv = opencv::hough_lines(&frame, 1.0, std::f64::consts::PI / 180.0, 0, 0.0, std::f64::consts::PI);
    assert_same_lines(&ours, &cv[..4], "synthetic");
    let mut found: Vec<(f64, f64)> = ours.iter().map(|l| (l.0 as f64, l.2)).collect();
    let mut want = known.to_vec();
    found.sort_by(|a, b| a.partial_cmp(b).unwrap());
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(found, want);
}

#[test]
fn accumulator_format_and_metadata() {
    let (edges, _) = edge_map("page.pgm");
    let acc = read_frames(&run_ok("hough-vote", "cpu", &[], &edges)).remove(0);
    // 384x191: 2 (384 + 191) + 1 distances, 180 angles.
    assert_eq!((acc.width, acc.height), (1151, 180));
    assert!(acc.maxval >= 256);
    assert_eq!(
        acc.annotation("hough"),
        Some("theta-min=0 theta-max=180 theta-step=1 rho-step=1 rho-offset=575 source=384x191")
    );
    let space = HoughSpace::of_frame(&acc).unwrap();
    assert_eq!((space.thetas, space.rhos), (180, 1151));
    // A hand-made edge map: two edge pixels both vote once in every row.
    let mut f = Frame::new(5, 4, 255, Pixels::U8(vec![0; 20].into()));
    if let Pixels::U8(v) = &mut f.pixels {
        v[7] = 1;
        v[18] = 200;
    }
    let acc = read_frames(&run_ok("hough-vote", "cpu", &[], &stream(&[f]))).remove(0);
    let Pixels::U16(v) = &acc.pixels else { panic!("16-bit") };
    for row in v.chunks(acc.width) {
        assert_eq!(row.iter().map(|&c| c as u32).sum::<u32>(), 2);
    }
}

#[test]
fn drawing_lines() {
    let (edges, _) = edge_map("chessboard.pgm");
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    let png = run_ok(
        "hough-lines",
        "cpu",
        &["--top", "3", "--draw", fixture("chessboard.pgm").to_str().unwrap()],
        &acc,
    );
    let img = image::load_from_memory(&png).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (200, 200));
    let red = img.pixels().filter(|p| p.0 == [255, 0, 0]).count();
    assert!(red >= 3 * 150, "{red} red pixels for 3 lines across a 200x200 board");
    let ppm = run_ok(
        "hough-lines",
        "cpu",
        &["--top", "3", "--ppm", "--draw", fixture("chessboard.pgm").to_str().unwrap()],
        &acc,
    );
    assert!(ppm.starts_with(b"P6\n200 200\n255\n") && ppm.len() == 15 + 200 * 200 * 3);
    // A colour picture keeps its colour under the lines (camera's edges are 512x512 too).
    let (camera_edges, _) = edge_map("camera.pgm");
    let acc = run_ok("hough-vote", "cpu", &[], &camera_edges);
    let astronaut = fixture("astronaut.png");
    let png = run_ok("hough-lines", "cpu", &["--top", "2", "--draw", astronaut.to_str().unwrap()], &acc);
    let drawn = image::load_from_memory(&png).unwrap().to_rgb8();
    let original = image::open(&astronaut).unwrap().to_rgb8();
    let kept = drawn.pixels().zip(original.pixels()).filter(|(d, o)| d == o).count();
    assert!(kept > 500 * 500 && drawn.pixels().filter(|p| p.0 == [255, 0, 0]).count() >= 2 * 400);
}

/// Without options, the lines are the distinct ones of the paired counts with more than half
/// their most votes, at most 20, the strongest first.
#[test]
fn the_default_is_distinct_lines_over_half_the_strongest_cell() {
    for name in ["brick.pgm", "page.pgm", "chessboard.pgm", "camera.pgm"] {
        let (edges, _) = edge_map(name);
        let acc = run_ok("hough-vote", "cpu", &[], &edges);
        let frame = read_frames(&acc).remove(0);
        let Pixels::U16(counts) = &frame.pixels else { panic!("16-bit") };
        let most = u32::from(*paired(counts, frame.width).iter().max().unwrap());
        let lines = parse_csv(&run_ok("hough-lines", "cpu", &[], &acc));
        assert_eq!(lines[0].3, most, "{name}: the strongest line comes first");
        assert!(lines.iter().all(|l| l.3 > most / 2) && lines.len() <= 20, "{name}");
        assert!(lines.windows(2).all(|w| w[0].3 >= w[1].3), "{name}: strongest first");
    }
}

/// The default finds lines, not the pixel grid: on photos with texture (camera's grass, the
/// astronaut's suit, the coins' relief) it gave 4, 7 and 6 of its 20 lines at exactly 45 or 135
/// degrees, where a column of the accumulator holds two diagonals of pixels; and on fresh
/// drawings of three straight segments of 200 pixels on random texture (one of them at 45 or
/// 135 degrees, which must still be found), the drawn lines and no more than five texture lines
/// at 45 or 135 of the 17 or so over half the strongest (raw counts put nearly all there: the
/// texture's votes at 45 and 135 are √2 times its votes at other angles, paired ones 1.06).
#[test]
fn the_default_finds_lines_not_the_pixel_grid() {
    let diagonal = |l: &(f32, f32, f64, u32)| l.2 == 45.0 || l.2 == 135.0;
    for name in ["camera.pgm", "astronaut.png", "coins.pgm"] {
        let (edges, _) = edge_map(name);
        let lines = parse_csv(&run_ok("hough-lines", "cpu", &[], &run_ok("hough-vote", "cpu", &[], &edges)));
        assert!(lines.iter().filter(|l| diagonal(l)).count() <= 1, "{name}: {lines:?}");
    }
    let mut rng = rng();
    for _ in 0..6 {
        let (w, h) = (rng.usize(280..420), rng.usize(240..360));
        let mut px: Vec<u8> = (0..w * h).map(|_| if rng.f64() < 0.12 { 255 } else { 0 }).collect();
        let diag = if rng.bool() { 45.0 } else { 135.0 };
        // Angles 20 degrees or more apart (across the wrap too), so that no two are one line.
        let mut degrees = vec![diag];
        while degrees.len() < 3 {
            let deg = rng.f64() * 180.0;
            if degrees.iter().all(|&d: &f64| (d - deg).abs().min(180.0 - (d - deg).abs()) >= 20.0) {
                degrees.push(deg);
            }
        }
        // Through whole pixels 110 or more from the frame's sides.
        let centres: Vec<(f64, f64)> = degrees
            .iter()
            .map(|_| (rng.usize(110..w - 110) as f64, rng.usize(110..h - 110) as f64))
            .collect();
        let drawn: Vec<(f64, f64)> = degrees
            .iter()
            .zip(&centres)
            .map(|(&deg, &(x, y))| (deg, x * deg.to_radians().cos() + y * deg.to_radians().sin()))
            .collect();
        // Segments of 200 pixels centred on those points, along the lines.
        for (&(deg, _), &(x, y)) in drawn.iter().zip(&centres) {
            let (c, s) = (deg.to_radians().cos(), deg.to_radians().sin());
            for k in -400..=400 {
                let t = f64::from(k) / 4.0;
                let (px_, py) = ((x - t * s).round() as usize, (y + t * c).round() as usize);
                px[py * w + px_] = 255;
            }
        }
        let frame = Frame::new(w, h, 255, Pixels::U8(px.into()));
        let acc = run_ok("hough-vote", "cpu", &[], &stream(&[frame]));
        let lines = parse_csv(&run_ok("hough-lines", "cpu", &[], &acc));
        // Within 2 degrees, passing within 2.5 pixels of the segment's centre.
        let near = |l: &(f32, f32, f64, u32), k: usize| {
            let d = (l.2 - degrees[k]).abs();
            let (x, y) = centres[k];
            let off = (x * f64::from(l.1).cos() + y * f64::from(l.1).sin() - f64::from(l.0)).abs();
            d.min(180.0 - d) <= 2.0 && off <= 2.5
        };
        for (k, line) in drawn.iter().enumerate() {
            assert!(lines.iter().any(|l| near(l, k)), "{w}x{h}: drawn {line:?} not in {lines:?}");
        }
        let texture = lines.iter().filter(|l| !(0..3).any(|k| near(l, k)) && diagonal(l)).count();
        assert!(texture <= 5, "{w}x{h}: {texture} texture lines at 45 or 135 degrees in {lines:?}");
    }
}

fn most_votes(acc: &Frame) -> u32 {
    match &acc.pixels {
        Pixels::U16(v) => *v.iter().max().unwrap() as u32,
        Pixels::U8(v) => *v.iter().max().unwrap() as u32,
        Pixels::F32(_) => panic!("the accumulator is integer"),
    }
}

/// skimage.transform.hough_line_peaks on our accumulator (its hspace is ours transposed), as
/// (row, column, votes) sorted.
fn skimage_peaks(acc: &Frame, threshold: u32) -> Vec<(usize, usize, u32)> {
    let Pixels::U16(v) = &acc.pixels else { panic!("16-bit") };
    let path = opencv::temp_path("acc");
    std::fs::write(&path, v.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let out = opencv::python(
        "from skimage.transform import hough_line_peaks\n\
         src, rows, cols, t = sys.stdin.read().split('\\t')\n\
         a = np.fromfile(src, '<u2').reshape(int(rows), int(cols)).astype(np.int64)\n\
         h, n, c = hough_line_peaks(a.T, np.arange(a.shape[0]), np.arange(a.shape[1]), threshold=int(t))\n\
         for v, r, d in zip(h, n, c): print(int(r), int(d), int(v))\n",
        &format!("{}\t{}\t{}\t{threshold}", path.display(), acc.height, acc.width),
    );
    let _ = std::fs::remove_file(path);
    let mut peaks: Vec<(usize, usize, u32)> = out
        .lines()
        .map(|l| {
            let f: Vec<u32> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (f[0] as usize, f[1] as usize, f[2])
        })
        .collect();
    peaks.sort_unstable();
    peaks
}

/// Distinct lines are scikit-image's hough_line_peaks (9, 10 cells) on the same accumulator:
/// the same lines where no peak is near the wrap and no two equal peaks compete (scikit-image
/// keeps the later of two equal ones, and does not wrap its window).
#[test]
fn distinct_lines_are_scikit_images_peaks() {
    for (name, exact) in [
        ("rocket.jpg", true),
        ("page.pgm", true),
        ("brick.pgm", true),
        ("chessboard.pgm", true),
        ("text.pgm", true),
        ("camera.pgm", false),
        ("coins.pgm", false),
    ] {
        let (edges, _) = edge_map(name);
        let acc_bytes = run_ok("hough-vote", "cpu", &[], &edges);
        let acc = read_frames(&acc_bytes).remove(0);
        let half = most_votes(&acc) / 2;
        let args = ["--threshold", &half.to_string(), "--distinct"];
        let ours = run_ok("hough-lines", "cpu", &args, &acc_bytes);
        let offset = (acc.width - 1) / 2;
        let mut ours: Vec<(usize, usize, u32)> = parse_csv(&ours)
            .iter()
            .map(|l| (l.2.round() as usize, (l.0.round() as i64 + offset as i64) as usize, l.3))
            .collect();
        ours.sort_unstable();
        let theirs = skimage_peaks(&acc, half);
        if exact {
            assert_eq!(ours, theirs, "{name}");
        } else {
            let common = ours.iter().filter(|p| theirs.contains(p)).count();
            let most = ours.len().max(theirs.len());
            assert!(common * 100 >= most * 95, "{name}: {common} lines in common of {most}");
        }
    }
}

/// scikit-image's own `test_hough_line_peaks`: the line (60, 130)-(80, 10) drawn by
/// `skimage.draw.line` in a 100x150 frame, its peaks over [-90, 90). Two cells tie at 87 votes,
/// (80°, ρ 81) and (81°, ρ 80), one plateau whose centroid lies halfway: scikit-image rounds it
/// in its own distance index (ρ + 181) to ρ 81, and so must we (we gave 80).
#[test]
fn a_tie_on_a_plateau_goes_as_scikit_images() {
    let draw = "from skimage.draw import line\n\
                img = np.zeros((100, 150), np.uint8)\n\
                rr, cc = line(60, 130, 80, 10)\n\
                img[rr, cc] = 255\n";
    let pgm =
        skimage(&format!("{draw}sys.stdout.buffer.write(cv2.imencode('.pgm', img)[1].tobytes())\n"), &[]);
    let peer = skimage(
        &format!(
            "{draw}from skimage.transform import hough_line, hough_line_peaks\n\
             h, t, d = hough_line_peaks(*hough_line(img))\n\
             print(len(d), float(d[0]), round(float(np.degrees(t[0])), 6))\n"
        ),
        &[],
    );
    assert_eq!(String::from_utf8(peer).unwrap().trim(), "1 81.0 80.0", "scikit-image's own answer");
    let acc = run_ok("hough-vote", "cpu", &["--theta-min", "-90", "--theta-max", "90"], &pgm);
    let ours = parse_csv(&run_ok("hough-lines", "cpu", &["--top", "1"], &acc));
    assert_eq!(ours.iter().map(|l| (l.0, l.2, l.3)).collect::<Vec<_>>(), [(81.0, 80.0, 87)]);
    // The default's paired counts tie the same two cells, at 87 + 27.
    let ours = parse_csv(&run_ok("hough-lines", "cpu", &[], &acc));
    assert_eq!(ours.iter().map(|l| (l.0, l.2, l.3)).collect::<Vec<_>>(), [(81.0, 80.0, 114)]);
}

/// A vertical line x = 20 votes equally at 0.5 degrees (rho 20) and 179.5 degrees (rho -20):
/// OpenCV's lines list both, the distinct lines one (the window wraps with the rho mirrored);
/// a line a few degrees off at -20 is another line.
#[test]
fn lines_across_the_wrap_are_one() {
    let mut px = vec![0u8; 60 * 100];
    for y in 0..100 {
        px[y * 60 + 20] = 255;
    }
    let map = Frame::new(60, 100, 255, Pixels::U8(px.into()));
    let acc = run_ok("hough-vote", "cpu", &["--theta-min", "0.5"], &stream(&[map]));
    let both = parse_csv(&run_ok("hough-lines", "cpu", &["--threshold", "30"], &acc));
    assert_eq!(both.iter().map(|l| (l.0, l.2)).collect::<Vec<_>>(), [(20.0, 0.5), (-20.0, 179.5)]);
    // The default's votes are paired: 58 and the 42 of the next distance.
    for (args, votes) in [(&["--threshold", "30", "--distinct"][..], 58), (&[], 100), (&["--top", "1"], 58)] {
        let one = parse_csv(&run_ok("hough-lines", "cpu", args, &acc));
        assert_eq!(one.iter().map(|l| (l.0, l.2, l.3)).collect::<Vec<_>>(), [(20.0, 0.5, votes)], "{args:?}");
    }
    let five = parse_csv(&run_ok("hough-lines", "cpu", &["--top", "5"], &acc));
    assert!(five.len() == 5 && five[1..].iter().all(|l| l.3 < 10), "only one strong line: {five:?}");
}

/// On real photos the default gives a handful of lines, not thousands; and --top N gives N.
#[test]
fn photos_give_a_handful_of_lines() {
    for (name, opencv_over_half, most) in
        [("rocket.jpg", 130, 13), ("page.pgm", 202, 10), ("camera.pgm", 2729, 20)]
    {
        let (edges, _) = edge_map(name);
        let acc = run_ok("hough-vote", "cpu", &[], &edges);
        let half = (most_votes(&read_frames(&acc)[0]) / 2).to_string();
        let all = parse_csv(&run_ok("hough-lines", "cpu", &["--threshold", &half], &acc));
        assert_eq!(all.len(), opencv_over_half, "{name}: OpenCV's lines over half the strongest");
        assert_eq!(parse_csv(&run_ok("hough-lines", "cpu", &[], &acc)).len(), most, "{name}");
        assert_eq!(parse_csv(&run_ok("hough-lines", "cpu", &["--top", "30"], &acc)).len(), 30, "{name}");
    }
}

/// `--draw '{dir}/{name}'` draws each accumulator's lines on its own source, named through edges
/// and hough-vote; --colour and --width paint with the pen asked for.
#[test]
fn drawing_each_frame_on_its_source() {
    let dir = temp_dir("draw-own");
    for name in ["chessboard.pgm", "brick.pgm"] {
        std::fs::copy(fixture(name), dir.join(name)).unwrap();
    }
    let files = [dir.join("chessboard.pgm"), dir.join("brick.pgm")];
    let files: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let edges = run_ok("edges", "cpu", &files, &[]);
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    let out = dir.join("out").join("{stem}.png");
    let own = dir.join("{name}");
    let args = ["--top", "2", "--draw-colour", "0,255,0", "--width", "3", "--draw", own.to_str().unwrap()];
    run_ok("hough-lines", "cpu", &[&args[..], &["-o", out.to_str().unwrap()]].concat(), &acc);
    for name in ["chessboard", "brick"] {
        let drawn = image::open(dir.join("out").join(format!("{name}.png"))).unwrap().to_rgb8();
        let source = read_frames(&std::fs::read(dir.join(format!("{name}.pgm"))).unwrap()).remove(0);
        let Pixels::U8(gray) = &source.pixels else { panic!("8-bit") };
        assert_eq!(drawn.dimensions(), (source.width as u32, source.height as u32), "{name}");
        let green = drawn.pixels().filter(|p| p.0 == [0, 255, 0]).count();
        let short = drawn.width().min(drawn.height()) as usize;
        assert!(green >= 2 * 3 * short - 3 * 3 * 4, "{name}: {green} green pixels for two lines 3 wide");
        let kept = drawn.pixels().zip(gray.iter()).filter(|(d, &g)| d.0 == [g; 3]).count();
        assert!(kept + green == gray.len(), "{name}: only the lines changed");
    }
    let e = run_err("hough-lines", &["--width", "2"], &acc, 2);
    assert!(e.contains("--draw-colour and --width only go with --draw"), "{e}");
    let e = run_err("hough-lines", &["--threshold", "9", "--min-distance", "3,3"], &acc, 2);
    assert!(e.contains("add --distinct"), "{e}");
    let e = run_err("hough-lines", &["--draw", "{nope}.png"], &acc, 2);
    assert!(e.contains("unknown field {nope}"), "{e}");
    let e = run_err("hough-lines", &["--draw", "{stem}.png"], &acc, 2);
    assert!(e.contains("chessboard.png: "), "a missing source picture names it: {e}");
}

/// The lines drawn: one picture per accumulator with -o fields, an error for two in one output;
/// the extension says PNG or PPM.
#[test]
fn drawing_one_picture_per_accumulator() {
    let dir = temp_dir("draw");
    let (edges, _) = edge_map("chessboard.pgm");
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    let board = fixture("chessboard.pgm");
    let draw = ["--top", "3", "--draw", board.to_str().unwrap()];
    let two = [acc.clone(), acc.clone()].concat();
    let e = run_err("hough-lines", &draw, &two, 2);
    assert!(e.contains("frame 2: --draw writes one image"), "{e}");
    let out = dir.join("lines-{n}.ppm");
    run_ok("hough-lines", "cpu", &[&draw[..], &["-o", out.to_str().unwrap()]].concat(), &two);
    for n in 1..=2 {
        let ppm = std::fs::read(dir.join(format!("lines-{n}.ppm"))).unwrap();
        assert!(ppm.starts_with(b"P6\n200 200\n255\n"));
    }
    let e = run_err("hough-lines", &[&draw[..], &["--ppm", "-o", "x.png"]].concat(), &acc, 2);
    assert!(e.contains("--ppm contradicts"), "{e}");
    let e = run_err("hough-lines", &[&draw[..], &["-o", "x.csv"]].concat(), &acc, 2);
    assert!(e.contains("a picture: give a .png or .ppm file"), "{e}");
    let e = run_err("hough-lines", &["--draw", "/no/such/image.png"], &[], 2);
    assert!(e.contains("--draw /no/such/image.png: "), "checked before any input is read: {e}");
}

#[test]
fn errors() {
    let (edges, _) = edge_map("page.pgm");
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    assert!(run_err("hough-lines", &["--top", "1", "--ppm"], &acc, 2).contains("--ppm only goes with --draw"));
    assert!(run_err("hough-lines", &["--top", "1"], &edges, 2)
        .contains("frame 1: no '# histopipe-hough' header comment"));
    let camera = fixture("camera.pgm");
    assert!(run_err("hough-lines", &["--top", "1", "--draw", camera.to_str().unwrap()], &acc, 2)
        .contains("is 512x512, but the accumulator is of a 384x191 edge map"));
    assert!(run_err("hough-vote", &["--theta-step", "0"], &edges, 2)
        .contains("--theta-step 0 must be a positive number"));
    assert!(
        run_err("hough-vote", &["--theta-min", "50", "--theta-max", "10"], &edges, 2).contains("at least")
    );
    assert!(run_err("hough-vote", &["--strategy", "fast"], &edges, 2).contains("unknown strategy"));
    // 70000 edge pixels in a row all vote for rho = 0 at 90 degrees: over 16 bits, an error.
    let row = Frame::new(70000, 1, 255, Pixels::U8(vec![255; 70000].into()));
    let e = run_err("hough-vote", &["--theta-step", "30"], &stream(&[row]), 2);
    assert!(e.contains("frame 1: a cell has 70000 votes, more than a 16-bit accumulator holds"), "{e}");
}

/// Both GPU strategies give the CPU's accumulator exactly, and the GPU's lines are the CPU's.
#[test]
fn gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let params = [
        HoughParams::default(),
        HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 0.5, rho_step: 0.7 },
        HoughParams { theta_min: 0.0, theta_max: 360.0, theta_step: 7.0, rho_step: 3.0 },
    ];
    // The random maps: sparse and dense, and one wider than a shared-memory block's 12288
    // distances.
    let random = [(1, 1, 1.0), (37, 1, 0.5), (300, 200, 0.02), (300, 200, 0.6), (5000, 1300, 0.01)];
    for map in gpu_edge_maps(&mut rng, &random) {
        for p in params {
            let cpu = HoughVote { params: p, strategy: Strategy::Auto }.cpu(&map).unwrap();
            for strategy in [Strategy::Global, Strategy::Shared, Strategy::Auto] {
                let got = HoughVote { params: p, strategy }.gpu(&gpu, &map).unwrap();
                assert!(got == cpu, "{}x{} {p:?} {strategy:?}: accumulators differ", map.width, map.height);
            }
            for lines in [HoughLines { threshold: 0, top: None }, HoughLines { threshold: 20, top: Some(50) }]
            {
                let c: Vec<Line> = lines.cpu(&cpu).unwrap();
                assert_eq!(c, lines.gpu(&gpu, &cpu).unwrap(), "{}x{} {p:?} {lines:?}", map.width, map.height);
            }
        }
    }
}

#[test]
fn gpu_backend_matches_cpu_backend_in_the_pipeline() {
    let Some(_gpu) = gpu() else { return };
    for name in ["page.pgm", "brick.pgm", "chessboard.pgm"] {
        let input = fixture_bytes(name);
        let e_cpu = run_ok("edges", "cpu", &[], &input);
        assert!(e_cpu == run_ok("edges", "gpu", &[], &input), "{name}: edges differ");
        for strategy in ["global", "shared"] {
            let a = run_ok("hough-vote", "gpu", &["--strategy", strategy], &e_cpu);
            assert!(a == run_ok("hough-vote", "cpu", &[], &e_cpu), "{name} {strategy}: accumulators differ");
            let l = run_ok("hough-lines", "gpu", &["--threshold", "50"], &a);
            assert_eq!(l, run_ok("hough-lines", "cpu", &["--threshold", "50"], &a), "{name}: lines differ");
        }
    }
}
