use histopipe_frame::{Channels, Frame, Line, Pixels};
use histopipe_ops::rotate::{Interpolation, Rotate, RotateBy, RotateParams, Turn};
use histopipe_ops::{Fill, Op};

use crate::common::*;

fn rotate_cpu(args: &[&str], input: &[u8]) -> Frame {
    read_frames(&run_ok("rotate", "cpu", args, input)).remove(0)
}

/// The documented inverse map of a turn by `degrees` about the centre of a `w x h` frame,
/// evaluated as docs/rotate.md writes it.
fn source_point(degrees: f64, w: usize, h: usize, x: usize, y: usize) -> (f64, f64) {
    let (sin, cos) = (degrees % 360.0).to_radians().sin_cos();
    let (cx, cy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
    let (x, y) = (x as f64, y as f64);
    (cos * x - sin * y + (cx - (cos * cx - sin * cy)), sin * x + cos * y + (cy - (sin * cx + cos * cy)))
}

#[test]
fn zero_is_the_identity_and_four_quarter_turns_are_too() {
    let mut rng = rng();
    for maxval in [255, 1076] {
        let square = random_frame(&mut rng, 37, 37, maxval);
        let input = stream(std::slice::from_ref(&square));
        assert_eq!(run_ok("rotate", "cpu", &["0"], &input), input, "rotate 0 changes nothing");
        assert_eq!(run_ok("rotate", "cpu", &["-360"], &input), input);
        let mut bytes = input.clone();
        for _ in 0..4 {
            bytes = run_ok("rotate", "cpu", &["90"], &bytes);
        }
        assert_eq!(read_frames(&bytes).remove(0).pixels, square.pixels);
    }
}

#[test]
fn quarter_turns_are_exact_permutations() {
    let mut rng = rng();
    let f = random_frame(&mut rng, 7, 5, 255);
    let input = stream(std::slice::from_ref(&f));
    let at = |x: usize, y: usize| f.pixels.get(y * 7 + x);
    // Half a turn: (x, y) <- (W-1-x, H-1-y), for any size.
    let half = rotate_cpu(&["180"], &input);
    for y in 0..5 {
        for x in 0..7 {
            assert_eq!(half.pixels.get(y * 7 + x), at(6 - x, 4 - y));
        }
    }
    // A counter-clockwise quarter turn of a square: (x, y) <- (W-1-y, x).
    let sq = random_frame(&mut rng, 6, 6, 65535);
    let out = rotate_cpu(&["90"], &stream(std::slice::from_ref(&sq)));
    for y in 0..6 {
        for x in 0..6 {
            assert_eq!(out.pixels.get(y * 6 + x), sq.pixels.get(x * 6 + 5 - y), "({x}, {y})");
        }
    }
    assert_eq!(rotate_cpu(&["-90"], &input), rotate_cpu(&["270"], &input));
    // 7x5 turned by 90: the centre (3, 2) stays, W - H is even so every pixel comes from a pixel.
    let q = rotate_cpu(&["90", "--fill", "0"], &input);
    assert_eq!(q.pixels.get(2 * 7 + 3), at(3, 2));
    assert_eq!(q.pixels.get(2 * 7 + 4), at(3, 3)); // right of the centre <- below it (6 to 3 o'clock)
}

#[test]
fn nearest_neighbour_follows_the_documented_inverse_map() {
    let mut rng = rng();
    for (w, h, maxval) in [(61, 40, 255u16), (33, 47, 4095)] {
        let f = random_frame(&mut rng, w, h, maxval);
        let input = stream(std::slice::from_ref(&f));
        for angle in [30.0, -17.25, 45.0, 123.4, 1000.0] {
            let fill = rng.u16(0..=maxval);
            let out = rotate_cpu(&[&angle.to_string(), "--fill", &fill.to_string()], &input);
            for y in 0..h {
                for x in 0..w {
                    let (sx, sy) = source_point(angle, w, h, x, y);
                    let (nx, ny) = ((sx + 0.5).floor(), (sy + 0.5).floor());
                    let inside = nx >= 0.0 && ny >= 0.0 && nx < w as f64 && ny < h as f64;
                    let expected = if inside { f.pixels.get(ny as usize * w + nx as usize) } else { fill };
                    assert_eq!(out.pixels.get(y * w + x), expected, "{angle} at ({x}, {y})");
                }
            }
        }
    }
}

#[test]
fn bilinear_reproduces_a_ramp() {
    // On f(x, y) = 2 x + 3 y + 5 bilinear interpolation is exact: every pixel whose four
    // neighbours are inside gets floor(f(sx, sy) + 0.5), up to the last bit of the arithmetic.
    let (w, h) = (90, 70);
    let ramp: Vec<u16> = (0..w * h).map(|i| (2 * (i % w) + 3 * (i / w) + 5) as u16).collect();
    let f = Frame::new(w, h, 500, Pixels::U16(ramp.into()));
    let out = rotate_cpu(&["21", "--bilinear"], &stream(&[f]));
    let mut checked = 0;
    for y in 0..h {
        for x in 0..w {
            let (sx, sy) = source_point(21.0, w, h, x, y);
            if sx < 0.0 || sy < 0.0 || sx > (w - 1) as f64 || sy > (h - 1) as f64 {
                continue;
            }
            let exact = 2.0 * sx + 3.0 * sy + 5.0;
            let got = out.pixels.get(y * w + x) as f64;
            assert!((got - exact).abs() <= 0.5 + 1e-9, "({x}, {y}): {got} for {exact}");
            checked += 1;
        }
    }
    assert!(checked > w * h / 2);
}

#[test]
fn geometry_finds_the_original_pixels_after_pad_and_rotate() {
    for name in ["coins.pgm", "dem16.pgm"] {
        let original = fixture_frame(name);
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        let out = rotate_cpu(&["33.3"], &padded);
        let g = out.geometry.clone().unwrap();
        let (mut data, mut differ) = (0, 0);
        for y in 0..out.height {
            for x in 0..out.width {
                if !g.is_original(x as f64, y as f64) {
                    continue;
                }
                let (ox, oy) = g.to_original.apply(x as f64, y as f64);
                let (ox, oy) = ((ox + 0.5).floor() as usize, (oy + 0.5).floor() as usize);
                data += 1;
                differ += (out.pixels.get(y * out.width + x) != original.pixels.get(oy * original.width + ox))
                    as usize;
            }
        }
        // The composed map and rotate's own can round differently only at an exact half.
        assert_eq!(differ, 0, "{name}: {differ} of {data} data pixels are not the original's");
        assert!(data as f64 > 0.97 * original.pixel_count() as f64, "{name}: {data}");
    }
}

#[test]
fn line_is_turned_vertical_first_point_on_top() {
    let padded = run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"));
    for (line, quarter) in
        [("0,0,400,400", false), ("10,20,300,40", false), ("5,5,5,300", true), ("300,9,5,9", true)]
    {
        let out = rotate_cpu(&["--line", line], &padded);
        let segment = run_ok("rotate", "cpu", &["--segment", line], &padded);
        assert_eq!(read_frames(&segment).remove(0), out, "{line}: --segment turns as --line does");
        let l: Line = line.parse().unwrap();
        let ((x0, y0), (x1, y1)) = l.in_frame(out.geometry.as_ref().unwrap()).unwrap();
        assert!((x0 - x1).abs() < 1e-9, "{line}: x {x0} and {x1}");
        assert!(y0 < y1, "{line}: the first point is not on top");
        if quarter {
            let g = out.geometry.unwrap().to_original;
            assert!(
                [g.a, g.b, g.d, g.e].iter().all(|v| v.fract() == 0.0),
                "{line}: not a quarter turn: {g:?}"
            );
        }
    }
}

#[test]
fn negative_angles_parse_as_angles() {
    let input = fixture_bytes("text.pgm");
    assert_eq!(
        run_ok("rotate", "cpu", &["-12.5"], &input),
        run_ok("rotate", "cpu", &["--", "-12.5"], &input)
    );
    assert_eq!(run_ok("rotate", "cpu", &["-90"], &input), run_ok("rotate", "cpu", &["270"], &input));
    assert_eq!(run_ok("rotate", "cpu", &["-.5"], &input), run_ok("rotate", "cpu", &["-0.5"], &input));
}

#[test]
fn option_errors() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("rotate", &[], &camera, 2).contains("missing ANGLE"));
    assert!(run_err("rotate", &["abc"], &camera, 2).contains("bad angle 'abc'"));
    assert!(
        run_err("rotate", &["10", "20"], &camera, 2).contains("20: no such file"),
        "a file after the angle"
    );
    assert!(run_err("rotate", &["10", "--line", "0,0,1,1"], &camera, 2).contains("not both"));
    assert!(run_err("rotate", &["--line", "0,0,1"], &camera, 2).contains("four numbers"));
    assert!(run_err("rotate", &["--line", "3,3,3,3"], &camera, 2).contains("same"));
    assert!(run_err("rotate", &["10", "--segment", "0,0,1,1"], &camera, 2).contains("not both"));
    assert!(run_err("rotate", &["--segment", "0,0,1"], &camera, 2).contains("--segment: bad value '0,0,1'"));
    assert!(run_err("rotate", &["10", "--fill", "256"], &camera, 2)
        .contains("frame 1: --fill 256 is over the frame's maxval 255"));
    assert!(run_err("rotate", &["inf"], &camera, 2).contains("bad angle"));
}

/// CPU and GPU give the same frames: both interpolations, random angles (multiples of 90 too),
/// 8- and 16-bit, odd and thin sizes, with and without geometry.
#[test]
fn gpu_matches_cpu_on_random_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // 640x480 (8-bit) and 1002x37 (16-bit): rows of whole 4-byte words, which the kernel stages
    // a word at a time.
    let mut sizes = vec![(1, 1), (1, 257), (263, 1), (4097, 3), (31, 17), (64, 64), (640, 480), (1002, 37)];
    sizes.extend((0..14).map(|_| (rng.usize(1..600), rng.usize(1..600))));
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let maxval = if i % 2 == 0 { 255 } else { rng.u16(256..=65535) };
        let mut frame = random_frame(&mut rng, w, h, maxval);
        if i % 3 == 0 {
            frame.geometry = Some(
                histopipe_frame::Geometry::identity(w, h)
                    .then(&histopipe_frame::Affine::translation(-(rng.f64() * 5.0), rng.f64() * 5.0)),
            );
        }
        let angle = match i % 4 {
            0 => 90.0 * rng.i32(-8..8) as f64,
            _ => rng.f64() * 720.0 - 360.0,
        };
        for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
            let fill = rng.u16(0..=maxval);
            let by = if i % 5 == 4 {
                let p = |r: &mut fastrand::Rng| (r.f64() * w as f64, r.f64() * h as f64);
                RotateBy::Line(Line { from: p(&mut rng), to: p(&mut rng) })
            } else {
                RotateBy::Degrees(angle)
            };
            let expand = i % 2 == 1;
            let rotate =
                RotateParams { by, interpolation, fill: fill.into(), expand }.for_frame(&frame).unwrap();
            let cpu = rotate.cpu(&frame).unwrap();
            let gpu_out = rotate.gpu(&gpu, &frame).unwrap();
            assert!(cpu == gpu_out, "{w}x{h} maxval {maxval} {rotate:?}: GPU output differs");
        }
    }
}

/// The general kernels make tiles of 32, 16 or 8 rows, picked by the output's size for the GPU's
/// count of SMs (`rotate::gpu::tile_rows`): each gives the CPU's bits, 8-bit, 16-bit and float,
/// both interpolations, in place and expanded. The sizes are checked to take all three on this
/// GPU: a frame of a few tiles and 640x651 (8 rows on 103 SMs or more), 2560x1707 (32 rows on up
/// to 270 SMs) and the first height of a 1003-wide frame that takes 16.
#[test]
fn gpu_matches_cpu_in_every_tile_height() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let in_place = |w, h| {
        let turn = Turn::degrees(30.0).unwrap();
        Rotate::in_place(turn, w, h, Interpolation::Bilinear, Fill::Int(0), 255).plan(&gpu).rows()
    };
    let mut sizes = vec![(61, 37), (640, 651), (2560, 1707)];
    sizes.extend((1..=8192).find(|&h| in_place(1003, h) == 16).map(|h| (1003, h)));
    let mut seen = std::collections::BTreeSet::new();
    for (i, &(w, h)) in sizes.iter().enumerate() {
        let n = w * h;
        let frames = [
            random_frame(&mut rng, w, h, 255),
            random_frame(&mut rng, w, h, 3000),
            Frame::new(w, h, 1, Pixels::F32((0..n).map(|_| rng.f32() * 4.0 - 2.0).collect())),
        ];
        for (k, frame) in frames.iter().enumerate() {
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                let angle = 10.0 + rng.f64() * 70.0 + 90.0 * rng.i32(-4..4) as f64;
                let fill = if k == 2 { Fill::Float(0.25) } else { Fill::Int(7) };
                let expand = (i + k) % 2 == 1;
                let rotate = RotateParams { by: RotateBy::Degrees(angle), interpolation, fill, expand }
                    .for_frame(frame)
                    .unwrap();
                assert!(matches!(rotate.turn, Turn::Angle { .. }), "{angle}: not a general turn");
                let rows = rotate.plan(&gpu).rows();
                seen.insert(rows);
                let (cpu, gpu_out) = (rotate.cpu(frame).unwrap(), rotate.gpu(&gpu, frame).unwrap());
                assert!(same_bits(&cpu, &gpu_out), "{w}x{h} {rotate:?}, {rows} rows: GPU output differs");
            }
        }
    }
    assert_eq!(seen, [8, 16, 32].into(), "{sizes:?} do not take every tile height");
}

/// The binaries agree too, on the fixtures and a stream, both interpolations.
#[test]
fn gpu_backend_matches_cpu_backend_on_fixtures() {
    let Some(_gpu) = gpu() else { return };
    for name in PGM_FIXTURES.iter().chain(&["dem16.pgm"]) {
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        for args in [
            &["45"][..],
            &["-33.7", "--bilinear", "--fill", "9"],
            &["90"],
            &["--line", "0,0,100,60"],
            &["90", "--expand"],
            &["-90", "--expand", "--bilinear"],
            &["180", "--expand"],
            &["-33.7", "--expand", "--bilinear", "--fill", "9"],
            &["--line", "0,0,100,60", "--expand"],
        ] {
            let cpu = run_ok("rotate", "cpu", args, &padded);
            let gpu = run_ok("rotate", "gpu", args, &padded);
            assert!(cpu == gpu, "{name} {args:?}: GPU output differs");
        }
    }
    let frames = [fixture_frame("camera.pgm"), fixture_frame("page.pgm"), fixture_frame("camera.pgm")];
    let input = stream(&frames);
    assert_eq!(
        run_ok("rotate", "gpu", &["17", "--bilinear"], &input),
        run_ok("rotate", "cpu", &["17", "--bilinear"], &input)
    );
}

/// `--expand` with a quarter turn: a 400x328 frame becomes 328x400 holding exactly NumPy's
/// `rot90` of it (counter-clockwise as displayed), 8- and 16-bit; 180 keeps the size, flipped
/// both ways; -90 turns the other way. Without `--expand` the size stays 400x328.
#[test]
fn expand_quarter_turns_are_numpy_rot90() {
    let mut rng = rng();
    for maxval in [255u16, 1076] {
        let f = random_frame(&mut rng, 400, 328, maxval);
        let input = stream(std::slice::from_ref(&f));
        let dtype = if maxval <= 255 { "np.uint8" } else { "np.uint16" };
        let raw: Vec<u8> = match &f.pixels {
            Pixels::U8(v) => v.to_vec(),
            Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
            Pixels::F32(_) => panic!("an integer frame"),
        };
        for (angle, k) in [("90", 1), ("180", 2), ("270", 3), ("-90", 3), ("-270", 1)] {
            let out = rotate_cpu(&[angle, "--expand"], &input);
            let (w, h) = if k == 2 { (400, 328) } else { (328, 400) };
            assert_eq!((out.width, out.height), (w, h), "{angle}");
            let script = format!(
                "a = np.fromfile(sys.argv[1], {dtype}).reshape(328, 400)\n\
                 sys.stdout.buffer.write(np.ascontiguousarray(np.rot90(a, {k})).astype('<u2').tobytes())"
            );
            let expected: Vec<u16> =
                opencv(&script, &[&raw]).chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
            let got: Vec<u16> = (0..w * h).map(|i| out.pixels.get(i)).collect();
            assert!(got == expected, "{angle} --expand, maxval {maxval}: not np.rot90(a, {k})");
            assert_eq!(out.maxval, maxval);
        }
        let kept = rotate_cpu(&["90"], &input);
        assert_eq!((kept.width, kept.height), (400, 328), "without --expand the size is kept");
    }
}

/// The geometry of an expanded turn maps back: every pixel of a quarter turn is the original's,
/// so `rotate 90 --expand | colhist` is `colhist --rows` of the original, column for row; a
/// general turn's corners are not counted; and a row of the original turned upright with
/// `--line` is found again by `colhist --line`, with the counts of that row.
#[test]
fn expanded_geometry_maps_back_to_the_original() {
    let coins = fixture_bytes("coins.pgm");
    let turned = run_ok("rotate", "cpu", &["90", "--expand"], &coins);
    let by_column = read_frames(&run_ok("colhist", "cpu", &["--format", "pgm"], &turned)).remove(0);
    let by_row = read_frames(&run_ok("colhist", "cpu", &["--format", "pgm", "--rows"], &coins)).remove(0);
    assert_eq!(by_column, by_row, "columns of the turned frame are the rows of the original");

    let original = fixture_frame("coins.pgm");
    let out = rotate_cpu(&["33.3", "--expand"], &coins);
    assert!(out.pixel_count() > original.pixel_count() + 20_000, "{}x{}", out.width, out.height);
    let g = out.geometry.clone().unwrap();
    let data = (0..out.height)
        .flat_map(|y| (0..out.width).map(move |x| (x, y)))
        .filter(|&(x, y)| g.is_original(x as f64, y as f64))
        .count();
    let matrix = read_frames(&run_ok("colhist", "cpu", &["--format", "pgm"], &stream(&[out]))).remove(0);
    let counted: usize = (0..matrix.pixel_count()).map(|i| matrix.pixels.get(i) as usize).sum();
    assert_eq!(counted, data, "colhist counts the data pixels and only those");
    // Each original pixel lands once, give or take the rounding seams of a general turn.
    let seams = data.abs_diff(original.pixel_count());
    assert!(seams < 400, "{data} data pixels for {} original ones", original.pixel_count());

    let line = "0,150,383,150";
    let upright = run_ok("rotate", "cpu", &["--line", line, "--expand"], &coins);
    let csv = String::from_utf8(run_ok("colhist", "cpu", &["--line", line], &upright)).unwrap();
    let counts: Vec<u64> =
        csv.lines().skip(1).map(|l| l.rsplit(',').next().unwrap().parse().unwrap()).collect();
    let mut expected = vec![0u64; 256];
    for x in 0..original.width {
        expected[original.pixels.get(150 * original.width + x) as usize] += 1;
    }
    assert_eq!(counts, expected, "the histogram along row 150 of the original");
}

/// Runs rotate on the colour fixture with `-o x.ppm`, returning the frame it wrote.
fn rotate_colour(backend: &str, args: &[&str], png: &[u8]) -> Frame {
    let path = crate::opencv::temp_path("rotate-colour.ppm");
    let mut all = args.to_vec();
    all.extend(["-o", path.to_str().unwrap()]);
    run_ok("rotate", backend, &all, png);
    let out = read_frames(&std::fs::read(&path).unwrap()).remove(0);
    let _ = std::fs::remove_file(path);
    out
}

/// A colour frame turns as each of its channels alone would, each with its own fill.
#[test]
fn colour_turns_every_channel_alike() {
    let png = fixture_bytes("astronaut.png");
    let astronaut = read_frames(&png).remove(0);
    for (args, interpolation, expand) in [
        (&["30", "--fill", "10,20,30"][..], Interpolation::Nearest, false),
        (&["-17.5", "--bilinear", "--fill", "10,20,30", "--expand"], Interpolation::Bilinear, true),
        (&["90", "--expand", "--fill", "10,20,30"], Interpolation::Nearest, true),
    ] {
        let out = rotate_colour("cpu", args, &png);
        assert_eq!(out.channels, Channels::Rgb, "{args:?}");
        let by = RotateBy::Degrees(args[0].parse().unwrap());
        for c in 0..3 {
            let plane = astronaut.plane(c);
            let fill = (10 * (c as u16 + 1)).into();
            let op = RotateParams { by, interpolation, fill, expand }.for_frame(&plane).unwrap();
            assert_eq!(out.plane(c).pixels, op.cpu(&plane).unwrap().pixels, "{args:?} channel {c}");
        }
    }
}

/// OpenCV defines colour warpAffine per channel. Nearest neighbour is cv2.warpAffine's
/// INTER_NEAREST (about the centre, constant border of the fill) on the whole colour frame, and
/// quarter turns with `--expand` are cv2.rotate's. Bilinear differs from INTER_LINEAR by design
/// (exact weights, not OpenCV's 1/32 steps, and the nearest neighbour's outline): by at most 1
/// where OpenCV's four taps are all inside.
#[test]
fn colour_turns_match_opencv() {
    let png = fixture_bytes("astronaut.png");
    let raw = |f: &Frame| -> Vec<u8> { (0..f.pixels.len()).map(|i| f.pixels.get(i) as u8).collect() };
    let cv = |script: &str| {
        opencv(
            &format!(
                "a = cv2.imread(sys.argv[1], cv2.IMREAD_COLOR)\nh, w = a.shape[:2]\n\
                 m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), 30, 1)\n{script}\n\
                 sys.stdout.buffer.write(cv2.cvtColor(b, cv2.COLOR_BGR2RGB).tobytes())"
            ),
            &[&png],
        )
    };
    let nearest = rotate_colour("cpu", &["30", "--fill", "10,20,30"], &png);
    let expected = cv("b = cv2.warpAffine(a, m, (w, h), flags=cv2.INTER_NEAREST, borderValue=(30, 20, 10))");
    assert!(raw(&nearest) == expected, "rotate 30 is not cv2.warpAffine(INTER_NEAREST)");
    let quarter = rotate_colour("cpu", &["90", "--expand"], &png);
    assert!(raw(&quarter) == cv("b = cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE)"), "not cv2.rotate");
    let bilinear = raw(&rotate_colour("cpu", &["30", "--bilinear"], &png));
    let linear = cv("b = cv2.warpAffine(a, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)");
    let inside =
        cv("b = cv2.warpAffine(np.full_like(a, 255), m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)");
    let (mut compared, mut equal) = (0, 0);
    for ((&ours, &theirs), &mask) in bilinear.iter().zip(&linear).zip(&inside) {
        if mask == 255 {
            assert!(ours.abs_diff(theirs) <= 1, "bilinear {ours}, INTER_LINEAR {theirs}");
            compared += 1;
            equal += (ours == theirs) as usize;
        }
    }
    assert!(compared > 500_000 && equal as f64 > 0.99 * compared as f64, "{equal} of {compared}");
}

/// The documented float bilinear sample at (sx, sy): the f64 blend of docs/rotate.md, rounded to
/// the nearest f32 (a NaN blend is the quiet NaN), with `fill` for taps outside.
fn float_bilinear(input: &[f32], w: usize, h: usize, (sx, sy): (f64, f64), fill: f32) -> f32 {
    let (nx, ny) = ((sx + 0.5).floor(), (sy + 0.5).floor());
    if !(nx >= 0.0 && ny >= 0.0 && nx < w as f64 && ny < h as f64) {
        return fill;
    }
    let (x0, y0) = (sx.floor(), sy.floor());
    let (tx, ty) = (sx - x0, sy - y0);
    let p = |x: f64, y: f64| -> f64 {
        let inside = x >= 0.0 && y >= 0.0 && x < w as f64 && y < h as f64;
        (if inside { input[y as usize * w + x as usize] } else { fill }) as f64
    };
    let top = (1.0 - tx) * p(x0, y0) + tx * p(x0 + 1.0, y0);
    let bottom = (1.0 - tx) * p(x0, y0 + 1.0) + tx * p(x0 + 1.0, y0 + 1.0);
    let v = (1.0 - ty) * top + ty * bottom;
    if v.is_nan() {
        f32::from_bits(0x7FC0_0000)
    } else {
        v as f32
    }
}

/// Float frames stay float: nearest and quarter turns copy the samples' bits, bilinear is the
/// documented blend bit for bit, and a NaN spreads to the pixels that blend it.
#[test]
fn float_frames_turn_by_the_documented_arithmetic() {
    let (w, h) = (41, 29);
    let mut rng = rng();
    let mut input: Vec<f32> = (0..w * h).map(|_| rng.f32() * 2.0 - 0.5).collect();
    let nan_at = 14 * w + 20;
    input[nan_at] = f32::from_bits(0x7FC0_1234);
    input[3] = f32::INFINITY;
    let tiff = float_tiff(&input, w, h);
    for (angle, fill) in [(30.0, "0.5"), (-71.25, "nan"), (123.0, "-2")] {
        let fill_value: f32 = fill.parse().unwrap();
        let a = angle.to_string();
        let bilinear = run_to_tiff("rotate", "cpu", &[&a, "--bilinear", "--fill", fill], &tiff);
        let nearest = run_to_tiff("rotate", "cpu", &[&a, "--fill", fill], &tiff);
        let (Pixels::F32(b), Pixels::F32(n)) = (&bilinear.pixels, &nearest.pixels) else {
            panic!("float out")
        };
        for y in 0..h {
            for x in 0..w {
                let s = source_point(angle, w, h, x, y);
                let want = float_bilinear(&input, w, h, s, fill_value);
                assert_eq!(b[y * w + x].to_bits(), want.to_bits(), "{angle} bilinear at ({x}, {y})");
                let (nx, ny) = ((s.0 + 0.5).floor(), (s.1 + 0.5).floor());
                let inside = nx >= 0.0 && ny >= 0.0 && nx < w as f64 && ny < h as f64;
                let want = if inside { input[ny as usize * w + nx as usize] } else { fill_value };
                assert_eq!(n[y * w + x].to_bits(), want.to_bits(), "{angle} nearest at ({x}, {y})");
            }
        }
        assert!(b.iter().filter(|v| v.is_nan()).count() >= 2, "the NaN spreads");
    }
    let turned = run_to_tiff("rotate", "cpu", &["90", "--expand"], &tiff);
    let Pixels::F32(t) = &turned.pixels else { panic!("float out") };
    assert_eq!((turned.width, turned.height), (h, w));
    for y in 0..w {
        for x in 0..h {
            assert_eq!(t[y * h + x].to_bits(), input[x * w + w - 1 - y].to_bits(), "90 at ({x}, {y})");
        }
    }
}

/// CPU and GPU give the same bits on colour and float frames, both interpolations.
#[test]
fn gpu_matches_cpu_on_colour_and_float() {
    let Some(_gpu) = gpu() else { return };
    let png = fixture_bytes("astronaut.png");
    let mut rng = rng();
    let (w, h) = (203, 117);
    let mut values: Vec<f32> = (0..w * h).map(|_| rng.f32() * 4.0 - 2.0).collect();
    values[5] = f32::NAN;
    values[w * 50 + 60] = f32::from_bits(0xFFC0_0042);
    values[77] = f32::NEG_INFINITY;
    values[300] = -0.0;
    let tiff = float_tiff(&values, w, h);
    for args in [
        &["30"][..],
        &["-33.7", "--bilinear", "--fill", "9,8,7"],
        &["90"],
        &["270", "--expand", "--fill", "1,2,3"],
        &["17", "--expand", "--bilinear", "--fill", "255"],
    ] {
        assert!(same_bits(&rotate_colour("cpu", args, &png), &rotate_colour("gpu", args, &png)), "{args:?}");
    }
    for args in [
        &["30"][..],
        &["-33.7", "--bilinear", "--fill", "nan"],
        &["90", "--fill", "0.5"],
        &["270", "--expand"],
        &["17", "--expand", "--bilinear", "--fill", "-inf"],
        &["200.5", "--bilinear", "--fill", "0.25"],
    ] {
        let (cpu, gpu) =
            (run_to_tiff("rotate", "cpu", args, &tiff), run_to_tiff("rotate", "gpu", args, &tiff));
        assert!(same_bits(&cpu, &gpu), "float {args:?}: GPU output differs");
    }
}

/// OpenCV's answer for `rotate ANGLE [--flip F] [--centre X,Y]` of the image `input` (read with
/// `cv2.imread(IMREAD_UNCHANGED)`, colour as RGB): `cv2.flip(a, code)` first where `flip` gives
/// its code, then `cv2.warpAffine(a, cv2.getRotationMatrix2D(centre, ANGLE, 1), (w, h),
/// flags=INTER_NEAREST)` (border 0) unless ANGLE is a multiple of 360; and for each pixel
/// whether its source by docs/rotate.md's map (in f64) lies within 1/1024 of a half-pixel on
/// either axis, where OpenCV's own rounding of the coordinate decides (it rounds coordinates to
/// 1/1024, and halves to even).
fn opencv_turn(
    input: &[u8],
    angle: f64,
    flip: Option<i32>,
    centre: Option<(f64, f64)>,
) -> (Vec<u8>, Vec<bool>) {
    let flip = flip.map_or("None".to_owned(), |f| f.to_string());
    let centre = centre.map_or("None".to_owned(), |(x, y)| format!("({x:?}, {y:?})"));
    let out = opencv(
        &format!(
            "import math\n\
             a = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED)\n\
             if a.ndim == 3: a = cv2.cvtColor(a, cv2.COLOR_BGR2RGB)\n\
             h, w = a.shape[:2]\n\
             if {flip} is not None: a = cv2.flip(a, {flip})\n\
             c = {centre} or ((w - 1) / 2, (h - 1) / 2)\n\
             r = math.fmod({angle:?}, 360)\n\
             b = a if r == 0 else cv2.warpAffine(a, cv2.getRotationMatrix2D(c, {angle:?}, 1), (w, h), \
                 flags=cv2.INTER_NEAREST)\n\
             if r % 90 == 0: co, s = [(1, 0), (0, 1), (-1, 0), (0, -1)][int(r // 90) % 4]\n\
             else: s, co = math.sin(math.radians(r)), math.cos(math.radians(r))\n\
             ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)\n\
             sx = (co * xs + -s * ys) + (c[0] - (co * c[0] + -s * c[1]))\n\
             sy = (s * xs + co * ys) + (c[1] - (s * c[0] + co * c[1]))\n\
             near = lambda v: np.abs(v - np.floor(v) - 0.5) <= 1 / 1024\n\
             sys.stdout.buffer.write(b.tobytes() + (near(sx) | near(sy)).astype(np.uint8).tobytes())"
        ),
        &[input],
    );
    let frame = read_frames(input).remove(0);
    let n = frame.width * frame.height;
    let (samples, near) = out.split_at(out.len() - n);
    (samples.to_vec(), near.iter().map(|&b| b == 1).collect())
}

/// A frame's samples as NumPy's `tobytes()` gives them (16-bit little-endian).
fn sample_bytes(frame: &Frame) -> Vec<u8> {
    match &frame.pixels {
        Pixels::U8(v) => v.to_vec(),
        Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
        Pixels::F32(v) => v.iter().flat_map(|s| s.to_bits().to_le_bytes()).collect(),
    }
}

/// `rotate args` of the fixture `name` on each backend (the GPU's where there is one) against
/// [`opencv_turn`]: every pixel equal, but where the source lies within 1/1024 of a half-pixel
/// (there OpenCV's rounding decides), and with `exact` there too. Returns the pixels that
/// differed.
fn assert_turn_is_opencvs(
    name: &str,
    args: &[&str],
    flip: Option<i32>,
    centre: Option<(f64, f64)>,
    exact: bool,
) {
    let input = fixture_bytes(name);
    let angle: f64 = args[0].parse().unwrap();
    let (expected, near) = opencv_turn(&input, angle, flip, centre);
    // The lease is held while the GPU binaries run (a test with the GPU alone waits for it).
    let lease = gpu();
    let backends: &[&str] = if lease.is_some() { &["cpu", "gpu"] } else { &["cpu"] };
    for backend in backends {
        let out = if name.ends_with(".png") {
            rotate_colour(backend, args, &input)
        } else {
            read_frames(&run_ok("rotate", backend, args, &input)).remove(0)
        };
        let got = sample_bytes(&out);
        assert_eq!(got.len(), expected.len(), "{name} {args:?}");
        let per_pixel = got.len() / near.len();
        let differ: Vec<usize> = (0..near.len())
            .filter(|&i| got[i * per_pixel..][..per_pixel] != expected[i * per_pixel..][..per_pixel])
            .collect();
        let unexplained = differ.iter().filter(|&&i| !near[i]).count();
        assert_eq!(
            unexplained, 0,
            "{name} {args:?} --backend {backend}: pixels not OpenCV's, sources not at a half"
        );
        if exact {
            assert!(differ.is_empty(), "{name} {args:?} --backend {backend}: {} pixels differ", differ.len());
        }
    }
}

/// `--flip` is cv2.flip (flipCode 1, 0, -1) alone at angle 0, and cv2.flip then cv2.warpAffine
/// about the centre with an angle: the whole colour astronaut equal byte for byte at 0, 30, 90
/// and 180 degrees; 8- and 16-bit frames of odd sizes equal but where a source lies within
/// 1/1024 of a half-pixel.
#[test]
fn flip_is_opencvs_flip_then_warp_affine() {
    for (word, code) in [("h", 1), ("v", 0), ("hv", -1)] {
        for angle in ["0", "30", "90", "180"] {
            assert_turn_is_opencvs("astronaut.png", &[angle, "--flip", word], Some(code), None, true);
        }
        for name in ["dem16.pgm", "coins.pgm"] {
            for angle in ["0", "-71.5", "90"] {
                assert_turn_is_opencvs(name, &[angle, "--flip", word], Some(code), None, angle == "0");
            }
        }
    }
}

/// Flipping then turning is the flip piped into the turn, bytes and geometry alike: any angle,
/// both interpolations, with `--expand` and `--fill`, and `--line` found in the mirrored frame.
#[test]
fn flip_then_turn_is_the_flip_piped_into_the_turn() {
    for name in ["dem16.pgm", "coins.pgm"] {
        let input = fixture_bytes(name);
        for flip in ["h", "v", "hv"] {
            let flipped = run_ok("rotate", "cpu", &["0", "--flip", flip], &input);
            let line = ["--line", "10,20,200,31"];
            for args in
                [&["30"][..], &["-71.5", "--bilinear", "--fill", "9"], &["90", "--expand"], &["270"], &line]
            {
                let mut both = args.to_vec();
                both.extend(["--flip", flip]);
                let at_once = run_ok("rotate", "cpu", &both, &input);
                assert!(at_once == run_ok("rotate", "cpu", args, &flipped), "{name} {both:?}");
            }
        }
    }
    // The mirror's geometry maps each pixel back to the original's.
    let camera = fixture_bytes("camera.pgm");
    let g =
        read_frames(&run_ok("rotate", "cpu", &["0", "--flip", "hv"], &camera)).remove(0).geometry.unwrap();
    assert_eq!(g.to_original.apply(0.0, 5.0), (511.0, 506.0));
}

/// Float frames are mirrored bit for bit (NaN payloads, infinities, -0), as cv2.flip moves them.
#[test]
fn flip_moves_float_samples_bit_for_bit() {
    let mut rng = rng();
    let (w, h) = (23, 11);
    let mut values: Vec<f32> = (0..w * h).map(|_| rng.f32() * 4.0 - 2.0).collect();
    for (v, s) in values.iter_mut().step_by(5).zip([f32::from_bits(0x7FC0_1234), f32::INFINITY, -0.0]) {
        *v = s;
    }
    let tiff = float_tiff(&values, w, h);
    // The lease is held while the GPU binaries run (a test with the GPU alone waits for it).
    let lease = gpu();
    let backends: &[&str] = if lease.is_some() { &["cpu", "gpu"] } else { &["cpu"] };
    for (word, code) in [("h", 1), ("v", 0), ("hv", -1)] {
        let expected = opencv(
            &format!(
                "a = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED)\n\
                 sys.stdout.buffer.write(cv2.flip(a, {code}).view('<u4').tobytes())"
            ),
            &[&tiff],
        );
        for backend in backends {
            let out = run_to_tiff("rotate", backend, &["0", "--flip", word], &tiff);
            assert!(sample_bytes(&out) == expected, "--flip {word} --backend {backend}: not cv2.flip's bits");
        }
    }
}

/// `--centre X,Y` is cv2.getRotationMatrix2D's centre: cv2.warpAffine with it gives the colour
/// astronaut byte for byte at 30 degrees about several centres (on, between and off the pixels,
/// outside the frame), and quarter turns about integer centres; elsewhere every pixel is
/// OpenCV's but where its source lies within 1/1024 of a half-pixel (quarter turns about a
/// quarter-pixel centre put every source on a half, where OpenCV rounds to even).
#[test]
fn centre_is_get_rotation_matrix_2d_s() {
    for centre in [(100.25, 50.75), (300.0, 17.5), (-40.3, 600.9)] {
        let text = format!("{},{}", centre.0, centre.1);
        assert_turn_is_opencvs("astronaut.png", &["30", "--centre", &text], None, Some(centre), true);
        let flipped = ["30", "--centre", &text, "--flip", "hv"];
        assert_turn_is_opencvs("astronaut.png", &flipped, Some(-1), Some(centre), true);
    }
    assert_turn_is_opencvs("astronaut.png", &["90", "--centre", "0,0"], None, Some((0.0, 0.0)), true);
    assert_turn_is_opencvs(
        "astronaut.png",
        &["180", "--centre", "300,17.5"],
        None,
        Some((300.0, 17.5)),
        true,
    );
    for (args, centre) in [
        (&["90", "--centre", "10.25,300.5"][..], (10.25, 300.5)),
        (&["-71.5", "--centre", "200.7,100.1"], (200.7, 100.1)),
        (&["12.345", "--centre", "0,0"], (0.0, 0.0)),
    ] {
        assert_turn_is_opencvs("dem16.pgm", args, None, Some(centre), false);
        assert_turn_is_opencvs("coins.pgm", args, None, Some(centre), false);
    }
}

/// The frame's own centre given as `--centre` is the default turn, bit for bit (quarter turns
/// too, which then go through the general map with exact coefficients), and so is its geometry.
#[test]
fn centre_of_the_frame_is_the_default() {
    let dem = fixture_bytes("dem16.pgm"); // 403x344: centre (201, 171.5)
    for args in
        [&["30"][..], &["-71.5", "--bilinear"], &["90"], &["270", "--bilinear", "--fill", "7"], &["180"]]
    {
        let mut about = args.to_vec();
        about.extend(["--centre", "201,171.5"]);
        assert!(run_ok("rotate", "cpu", &about, &dem) == run_ok("rotate", "cpu", args, &dem), "{args:?}");
    }
    // Any centre leaves a turn by 0 the identity.
    assert_eq!(
        run_ok("rotate", "cpu", &["0", "--centre", "3.5,-7"], &dem),
        run_ok("rotate", "cpu", &["0"], &dem)
    );
}

#[test]
fn flip_and_centre_errors() {
    let camera = fixture_bytes("camera.pgm");
    let e = run_err("rotate", &["30", "--flip", "x"], &camera, 2);
    assert!(e.contains("--flip: unknown flip 'x' (h, v or hv)"), "{e}");
    for bad in ["1", "1,2,3", "nan,1", "1,inf", "a,b", "1,"] {
        let e = run_err("rotate", &["30", "--centre", bad], &camera, 2);
        assert!(e.contains(&format!("--centre: bad value '{bad}': expected X,Y")), "{e}");
    }
    let e = run_err("rotate", &["30", "--centre", "1.7e308,-1.7e308"], &camera, 2);
    assert!(e.contains("frame 1: --centre 1.7e308,-1.7e308 is too far off: the turn's map overflows"), "{e}");
    let e = run_err("rotate", &["30", "--centre", "1,2", "--expand"], &camera, 2);
    assert!(e.contains("--centre cannot be combined with --expand"), "{e}");
}

/// CPU and GPU give the same bits with `--flip` and `--centre`: every flip, centres on, between
/// and off the pixels, quarter and general turns, both interpolations, 8-bit, 16-bit and float.
#[test]
fn gpu_matches_cpu_with_flip_and_centre() {
    use histopipe_ops::rotate::Flip;
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let flips = [None, Some(Flip::Horizontal), Some(Flip::Vertical), Some(Flip::Both)];
    let sizes = [(1, 1), (1, 37), (41, 1), (31, 17), (640, 480), (rng.usize(1..900), rng.usize(1..900))];
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let mut frame = random_frame(&mut rng, w, h, if i % 2 == 0 { 255 } else { 4095 });
        if i % 3 == 2 {
            let v: Vec<f32> = (0..w * h).map(|_| rng.f32() * 10.0 - 5.0).collect();
            frame = Frame::new(w, h, 1, Pixels::F32(v.into()));
        }
        for angle in [0.0, 90.0, 180.0, -90.0, 30.0, rng.f64() * 720.0 - 360.0] {
            for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
                for flip in flips {
                    let by = RotateBy::Degrees(angle);
                    let params = RotateParams { by, interpolation, fill: 3u16.into(), expand: false };
                    let turn = params.for_frame(&frame).unwrap().flipped(flip);
                    let centre =
                        (rng.f64() * 2.0 * w as f64 - 0.5 * w as f64, (rng.usize(0..2 * h) as f64) / 4.0);
                    for op in [turn, turn.about(centre).unwrap()] {
                        let (cpu, gpu_out) = (op.cpu(&frame).unwrap(), op.gpu(&gpu, &frame).unwrap());
                        assert!(same_bits(&cpu, &gpu_out), "{w}x{h} {op:?}");
                    }
                }
            }
        }
    }
}
