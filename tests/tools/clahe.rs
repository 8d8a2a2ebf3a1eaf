use histopipe_frame::{Channels, Frame, Pixels, ReadOptions};
use histopipe_ops::clahe::{Clahe, TileGrid};
use histopipe_ops::mask::{Mask, Masked};
use histopipe_ops::Op;

use crate::common::*;
use crate::opencv::{colour_recipe, sample_bytes, ColourRecipe};

mod float;

/// One `cv2.createCLAHE(clip, (gx, gy)).apply(frame)`.
struct Case {
    frame: Frame,
    clip: f64,
    tiles: TileGrid,
}

impl Case {
    fn new(frame: Frame, clip: f64, gx: usize, gy: usize) -> Case {
        Case { frame, clip, tiles: TileGrid { x: gx, y: gy } }
    }

    fn op(&self) -> Clahe {
        Clahe { clip: self.clip, tiles: self.tiles }
    }

    fn what(&self) -> String {
        let f = &self.frame;
        format!(
            "{}x{} maxval {}, --clip {} --tiles {}x{}",
            f.width, f.height, f.maxval, self.clip, self.tiles.x, self.tiles.y
        )
    }
}

/// OpenCV's CLAHE of every case, in one Python process, as the pixels our frames hold.
fn opencv_clahe(cases: &[Case]) -> Vec<Pixels> {
    let params: Vec<String> = cases
        .iter()
        .map(|c| {
            let bits = 8 * c.frame.depth().bytes();
            format!(
                "({}, {}, {bits}, {:?}, {}, {})",
                c.frame.height, c.frame.width, c.clip, c.tiles.x, c.tiles.y
            )
        })
        .collect();
    let script = format!(
        "for path, (h, w, bits, clip, gx, gy) in zip(sys.argv[1:], [{}]):\n    \
         t = np.uint8 if bits == 8 else np.dtype('<u2')\n    \
         a = np.fromfile(path, t).reshape(h, w)\n    \
         out = cv2.createCLAHE(clipLimit=clip, tileGridSize=(gx, gy)).apply(a)\n    \
         sys.stdout.buffer.write(out.astype(t).tobytes())\n",
        params.join(", ")
    );
    let inputs: Vec<Vec<u8>> = cases.iter().map(|c| sample_bytes(&c.frame.pixels)).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    cases
        .iter()
        .map(|c| {
            let (this, next) = rest.split_at(c.frame.pixel_count() * c.frame.depth().bytes());
            rest = next;
            match c.frame.pixels {
                Pixels::U8(_) => Pixels::U8(this.to_vec().into()),
                Pixels::U16(_) => {
                    Pixels::U16(this.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect())
                }
                Pixels::F32(_) => panic!("clahe takes integer frames"),
            }
        })
        .collect()
}

/// How many samples differ, for a failure's message.
fn differing(a: &Pixels, b: &Pixels) -> usize {
    (0..a.len().min(b.len())).filter(|&i| a.get(i) != b.get(i)).count() + a.len().abs_diff(b.len())
}

/// Every case through `Clahe::cpu` equals OpenCV's output, and has the documented maxval.
fn assert_cpu_matches_opencv(cases: &[Case]) {
    for (case, want) in cases.iter().zip(opencv_clahe(cases)) {
        let out = case.op().cpu(&case.frame).unwrap();
        let top = if case.frame.maxval <= 255 { 255 } else { 65535 };
        assert_eq!((out.width, out.height, out.maxval), (case.frame.width, case.frame.height, top));
        assert!(
            out.pixels == want,
            "{}: {} samples differ from OpenCV's",
            case.what(),
            differing(&out.pixels, &want)
        );
    }
}

/// Frames of the shapes and distributions CLAHE finds hard: single pixels, single rows and
/// columns, sizes no grid divides, flat, two-valued and narrow-band content.
fn awkward_frames(rng: &mut fastrand::Rng, maxval: u16) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (w, h) in [(1, 1), (1, 7), (9, 1), (8, 8), (17, 13), (63, 65), (100, 37), (256, 200)] {
        frames.extend(hard_frames(rng, w, h, maxval, 240));
    }
    for _ in 0..4 {
        let (w, h) = (rng.usize(1..400), rng.usize(1..300));
        frames.push(random_frame(rng, w, h, maxval));
    }
    frames
}

/// The clip values: 0 and tiny (no clipping; at least 1 per bin), OpenCV's default 40,
/// large, and negative.
const CLIPS: [f64; 8] = [0.0, 1e-6, 0.5, 1.0, 2.0, 40.0, 1000.0, -1.0];
/// Grids: one tile, the default, uneven, and larger than makes sense for a tiny frame.
const GRIDS: [(usize, usize); 7] = [(1, 1), (8, 8), (3, 5), (5, 3), (2, 7), (16, 16), (40, 40)];

/// Each frame with a few (clip, grid) pairs: every clip and every grid is used on frames of
/// every shape.
fn cases_for(rng: &mut fastrand::Rng, frames: Vec<Frame>, max_grid: usize) -> Vec<Case> {
    let grids: Vec<(usize, usize)> = GRIDS.into_iter().filter(|&(x, y)| x * y <= max_grid).collect();
    let mut cases = Vec::new();
    for (k, frame) in frames.into_iter().enumerate() {
        for j in 0..3 {
            let clip = CLIPS[(3 * k + j) % CLIPS.len()];
            let (gx, gy) = if j == 0 { grids[k % grids.len()] } else { grids[rng.usize(..grids.len())] };
            cases.push(Case::new(frame.clone(), clip, gx, gy));
        }
    }
    cases
}

#[test]
fn matches_opencv_on_every_fixture() {
    let cases: Vec<Case> = PGM_FIXTURES.iter().map(|n| Case::new(fixture_frame(n), 40.0, 8, 8)).collect();
    for (name, want) in PGM_FIXTURES.iter().zip(opencv_clahe(&cases)) {
        let out = read_frames(&run_ok("clahe", "cpu", &[], &fixture_bytes(name))).remove(0);
        assert_eq!(out.maxval, 255);
        assert!(out.pixels == want, "{name}: {} samples differ from OpenCV's", differing(&out.pixels, &want));
    }
}

#[test]
fn options_on_fixtures_match_opencv() {
    let camera = fixture_frame("camera.pgm");
    let moon = fixture_frame("moon.pgm");
    let settings: [(&[&str], f64, usize, usize); 5] = [
        (&["--clip", "2", "--tiles", "3x5"], 2.0, 3, 5),
        (&["--clip", "0"], 0.0, 8, 8),
        (&["--tiles", "1x1", "--clip", "1000"], 1000.0, 1, 1),
        (&["--tiles", "16"], 40.0, 16, 16),
        (&["--clip", "0.01", "--tiles", "7x9"], 0.01, 7, 9),
    ];
    for frame in [&camera, &moon] {
        let cases: Vec<Case> =
            settings.iter().map(|&(_, clip, gx, gy)| Case::new(frame.clone(), clip, gx, gy)).collect();
        for ((args, ..), (case, want)) in settings.iter().zip(cases.iter().zip(opencv_clahe(&cases))) {
            let out =
                read_frames(&run_ok("clahe", "cpu", args, &stream(std::slice::from_ref(frame)))).remove(0);
            assert!(out.pixels == want, "{}: {args:?}", case.what());
        }
    }
}

#[test]
fn matches_opencv_on_random_odd_and_flat_frames() {
    let mut rng = rng();
    let frames = awkward_frames(&mut rng, 255);
    assert_cpu_matches_opencv(&cases_for(&mut rng, frames, usize::MAX));
}

/// 8-bit frames whose maxval is under 255 are equalized as OpenCV's 8-bit images are, onto 0..255.
#[test]
fn eight_bit_below_255_goes_to_the_full_range() {
    let mut rng = rng();
    let frames = vec![random_frame(&mut rng, 50, 40, 100), random_frame(&mut rng, 31, 17, 1)];
    assert_cpu_matches_opencv(&cases_for(&mut rng, frames, usize::MAX));
    let out =
        read_frames(&run_ok("clahe", "cpu", &[], &stream(&[random_frame(&mut rng, 64, 64, 15)]))).remove(0);
    assert_eq!(out.maxval, 255);
}

/// 16-bit: 65536 bins whatever the maxval, output maxval 65535.
#[test]
fn sixteen_bit_matches_opencv() {
    let mut rng = rng();
    let mut frames = awkward_frames(&mut rng, 65535);
    let narrow = awkward_frames(&mut rng, 1076);
    frames.extend(narrow.into_iter().step_by(2));
    // Each 16-bit tile's table has 65536 entries: grids up to 16 x 16 keep the test quick.
    let mut cases = cases_for(&mut rng, frames, 256);
    cases.push(Case::new(fixture_frame("dem16.pgm"), 40.0, 8, 8));
    cases.push(Case::new(fixture_frame("dem16.pgm"), 3.0, 5, 3));
    cases.push(Case::new(random_frame(&mut rng, 7, 5, 65535), 40.0, 20, 20));
    assert_cpu_matches_opencv(&cases);
    let want = opencv_clahe(&[Case::new(fixture_frame("dem16.pgm"), 40.0, 8, 8)]).remove(0);
    let out = read_frames(&run_ok("clahe", "cpu", &[], &fixture_bytes("dem16.pgm"))).remove(0);
    assert_eq!(out.maxval, 65535);
    assert!(out.pixels == want, "dem16.pgm through the tool");
}

/// Tiles of more than 2^24 pixels: the tile's pixel count and the cumulative counts round when
/// OpenCV converts them to float, and ours must round the same way.
#[test]
fn tiles_over_2_pow_24_pixels_round_as_opencv() {
    let mut rng = rng();
    let (w, h) = (4099, 4099);
    let skewed = frame_of(w, h, 255, &mut || if rng.u8(..) < 3 { rng.u8(..) as u16 } else { 9 });
    let cases = [
        Case::new(skewed, 0.0, 1, 1),
        Case::new(random_frame(&mut rng, w, h, 255), 40.0, 1, 1),
        Case::new(random_frame(&mut rng, w, h, 255), 2.0, 1, 2),
    ];
    assert_cpu_matches_opencv(&cases);
}

#[test]
fn each_frame_of_a_stream_by_its_own_tiles() {
    let frames = [fixture_frame("moon.pgm"), fixture_frame("dem16.pgm"), fixture_frame("text.pgm")];
    let together = run_ok("clahe", "cpu", &["--clip", "3"], &stream(&frames));
    let apart: Vec<u8> = frames
        .iter()
        .flat_map(|f| run_ok("clahe", "cpu", &["--clip", "3"], &stream(std::slice::from_ref(f))))
        .collect();
    assert!(together == apart);
    assert_eq!(read_frames(&together).len(), 3);
}

#[test]
fn bad_options_and_impossible_grids_are_refused() {
    let camera = fixture_bytes("camera.pgm");
    for args in [
        &["--tiles", "0x8"][..],
        &["--tiles", "8x"],
        &["--tiles", "axb"],
        &["--clip", "nan"],
        &["--clip", "inf"],
    ] {
        let e = run_err("clahe", args, &camera, 2);
        assert!(e.contains(args[0]), "{args:?}: {e}");
    }
    let e = run_err("clahe", &["--tiles", "2000x2000"], &camera, 2);
    assert!(e.contains("--tiles"), "{e}");
    // 16-bit tables of 65536 entries: 100 x 100 tiles are too many, named at the frame.
    let e = run_err("clahe", &["--tiles", "100x100"], &fixture_bytes("dem16.pgm"), 2);
    assert!(e.starts_with("clahe: frame 1: ") && e.contains("--tiles 100x100"), "{e}");
}

/// CPU and GPU give the same frames: both depths, every shape, clip and grid above.
#[test]
fn gpu_matches_cpu_on_awkward_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut cases = Vec::new();
    for (maxval, max_grid) in [(255, usize::MAX), (100, usize::MAX), (65535, 256), (1076, 256)] {
        let frames = awkward_frames(&mut rng, maxval);
        cases.extend(cases_for(&mut rng, frames, max_grid));
    }
    // Large frames: many histogram blocks per tile; a flat 16-bit frame: one value in every lane.
    cases.push(Case::new(random_frame(&mut rng, 4099, 2053, 255), 40.0, 8, 8));
    cases.push(Case::new(random_frame(&mut rng, 1920, 1081, 65535), 2.0, 8, 8));
    cases.push(Case::new(frame_of(1000, 700, 65535, &mut || 4242), 40.0, 8, 8));
    cases.push(Case::new(fixture_frame("dem16.pgm"), 40.0, 64, 64));
    cases.push(Case::new(fixture_frame("camera.pgm"), 40.0, 512, 512));
    for case in &cases {
        let op = case.op();
        assert_eq!(op.cpu(&case.frame).unwrap(), op.gpu(&gpu, &case.frame).unwrap(), "{}", case.what());
        // Under a mask: tiles of some, all or no counted pixels (the identity table).
        let (w, h) = (case.frame.width, case.frame.height);
        let mask: Vec<u8> = (0..w * h).map(|i| if i / w < h / 3 { 0 } else { rng.u8(..) % 2 }).collect();
        let masked = Masked { op, mask: Mask::new(&mask, w, h).unwrap() };
        let what = format!("{} under a mask", case.what());
        assert_eq!(masked.cpu(&case.frame).unwrap(), masked.gpu(&gpu, &case.frame).unwrap(), "{what}");
    }
}

/// `--mask`: a mask of every pixel is CLAHE without one (OpenCV's), a mask of none leaves the
/// frame as it is, every channel under the one mask with `--colour each`; the GPU the CPU's.
#[test]
fn a_mask_selects_the_counted_pixels() {
    let dir = temp_dir("clahe-mask");
    let moon = fixture_bytes("moon.pgm");
    let all = mask_file(&dir, "all.pgm", 512, 512, &vec![255; 512 * 512]);
    let none = mask_file(&dir, "none.pgm", 512, 512, &vec![0; 512 * 512]);
    let mut rng = rng();
    let some = mask_file(&dir, "some.pgm", 512, 512, &random_mask(&mut rng, 512, 512));
    let with = |m: &std::path::Path, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--mask", m.to_str().unwrap()]);
        all.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    for args in [&[][..], &["--clip", "2", "--tiles", "3x5"]] {
        let plain = run_ok("clahe", "cpu", args, &moon);
        let a = with(&all, args);
        assert!(
            run_ok("clahe", "cpu", &a.iter().map(|s| &s[..]).collect::<Vec<_>>(), &moon) == plain,
            "{args:?}"
        );
        let a = with(&none, args);
        let same = read_frames(&run_ok("clahe", "cpu", &a.iter().map(|s| &s[..]).collect::<Vec<_>>(), &moon));
        assert!(same[0].pixels == fixture_frame("moon.pgm").pixels, "{args:?}: no pixel counted");
    }
    let colour = stream(&[random_colour_frame(&mut rng, 512, 512, Channels::Rgb, 255)]);
    for (args, input) in [(&["--clip", "3"][..], &moon), (&["--colour", "each"], &colour), (&[], &colour)] {
        let a = with(&some, args);
        let a: Vec<&str> = a.iter().map(|s| &s[..]).collect();
        let out = run_ok("clahe", "cpu", &a, input);
        assert!(out != run_ok("clahe", "cpu", args, input), "{args:?}: the mask changes the tables");
        if let Some(_gpu) = gpu() {
            assert!(run_ok("clahe", "gpu", &a, input) == out, "{args:?}: GPU and CPU");
        }
    }
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    assert_mask_size_refused("clahe", &[]);
}

#[test]
fn gpu_backend_matches_opencv_on_fixtures() {
    if gpu().is_none() {
        return;
    }
    let cases: Vec<Case> = PGM_FIXTURES.iter().map(|n| Case::new(fixture_frame(n), 40.0, 8, 8)).collect();
    for (name, want) in PGM_FIXTURES.iter().zip(opencv_clahe(&cases)) {
        let out = read_frames(&run_ok("clahe", "gpu", &[], &fixture_bytes(name))).remove(0);
        assert!(out.pixels == want, "{name}: the GPU differs from OpenCV");
    }
    // One process, frames of both depths and several sizes: pooled buffers reused and outgrown.
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("dem16.pgm"), fixture_frame("page.pgm")]);
    for args in [&[][..], &["--clip", "2", "--tiles", "3x5"]] {
        assert!(run_ok("clahe", "gpu", args, &input) == run_ok("clahe", "cpu", args, &input), "{args:?}");
    }
}

/// OpenCV's expression for `--clip clip --tiles gx x gy`, as `colour_recipe` takes it.
fn create_clahe(clip: f64, gx: usize, gy: usize) -> String {
    format!("cv2.createCLAHE(clipLimit={clip:?}, tileGridSize=({gx}, {gy})).apply(g)")
}

/// Each output has its input's size and channels, the documented maxval, and `want`'s samples.
fn assert_colour(what: &str, inputs: &[Frame], outs: &[Frame], want: &[Pixels]) {
    assert_eq!(outs.len(), inputs.len(), "{what}");
    for (i, ((input, out), want)) in inputs.iter().zip(outs).zip(want).enumerate() {
        let top = if input.maxval <= 255 { 255 } else { 65535 };
        assert_eq!(
            (out.width, out.height, out.channels, out.maxval),
            (input.width, input.height, input.channels, top)
        );
        assert!(
            &out.pixels == want,
            "{what}: frame {i} ({}x{} {}): {} samples differ from OpenCV's recipe",
            input.width,
            input.height,
            input.channels.name(),
            differing(&out.pixels, want)
        );
    }
}

/// `--colour luma` (the default) on the colour fixtures, with the default and other options:
/// OpenCV's recipe byte for byte, on the RGB samples our reader gives.
#[test]
fn colour_luma_matches_opencv_recipe_on_fixtures() {
    let settings: [(&[&str], f64, usize, usize); 3] = [
        (&[], 40.0, 8, 8),
        (&["--clip", "2", "--tiles", "3x5"], 2.0, 3, 5),
        (&["--colour", "luma", "--clip", "0", "--tiles", "16"], 0.0, 16, 16),
    ];
    for name in ["astronaut.png", "rocket.jpg"] {
        let frame = fixture_frame(name);
        assert_eq!(frame.channels, Channels::Rgb, "{name} is read as colour");
        let frames = vec![frame; settings.len()];
        let exprs: Vec<String> = settings.iter().map(|&(_, c, x, y)| create_clahe(c, x, y)).collect();
        let want = colour_recipe(&frames, ColourRecipe::Luma, &exprs);
        for ((args, ..), want) in settings.iter().zip(want) {
            let out = read_frames(&run_ok("clahe", "cpu", args, &fixture_bytes(name)));
            assert_colour(&format!("{name} {args:?}"), &frames[..1], &out, &[want]);
        }
    }
}

/// Random, flat, few-coloured and skewed frames, RGB and RGBA, 8- and 16-bit (OpenCV's CLAHE and
/// YCrCb both take 16-bit images: the recipe is OpenCV's there too); alpha carried unchanged.
#[test]
fn colour_luma_matches_opencv_recipe_at_both_depths_with_and_without_alpha() {
    let mut rng = rng();
    for (maxval, args, clip, gx, gy) in [
        (255, &["--clip", "2", "--tiles", "3x2"], 2.0, 3, 2),
        (65535, &["--clip", "40", "--tiles", "4x4"], 40.0, 4, 4),
    ] {
        let mut frames = hard_colour_frames(&mut rng, Channels::Rgb, maxval);
        frames.extend(hard_colour_frames(&mut rng, Channels::RgbAlpha, maxval));
        let want =
            colour_recipe(&frames, ColourRecipe::Luma, &vec![create_clahe(clip, gx, gy); frames.len()]);
        let out = read_frames(&run_ok("clahe", "cpu", &args[..], &stream(&frames)));
        assert_colour(&format!("maxval {maxval} {args:?}"), &frames, &out, &want);
    }
}

/// `--colour each`: OpenCV's CLAHE of R, G and B on their own; alpha carried.
#[test]
fn colour_each_matches_opencv_per_channel() {
    let mut rng = rng();
    let mut frames = vec![fixture_frame("astronaut.png"), fixture_frame("rocket.jpg")];
    frames.extend(hard_colour_frames(&mut rng, Channels::RgbAlpha, 255).into_iter().step_by(2));
    frames.extend(hard_colour_frames(&mut rng, Channels::Rgb, 65535).into_iter().step_by(3));
    let want = colour_recipe(&frames, ColourRecipe::Each, &vec![create_clahe(3.0, 5, 3); frames.len()]);
    let args = ["--colour", "each", "--clip", "3", "--tiles", "5x3"];
    let out = read_frames(&run_ok("clahe", "cpu", &args, &stream(&frames)));
    assert_colour("each", &frames, &out, &want);
}

/// `--colour gray`: colour read as gray, CLAHE of it, written gray.
#[test]
fn colour_gray_reads_and_writes_gray() {
    let gray = ReadOptions { gray: true, ..Default::default() };
    for name in ["astronaut.png", "rocket.jpg"] {
        let frame = read_frames_with(&fixture_bytes(name), gray).remove(0);
        let want = opencv_clahe(&[Case::new(frame, 40.0, 8, 8)]).remove(0);
        let out = read_frames(&run_ok("clahe", "cpu", &["--colour", "gray"], &fixture_bytes(name))).remove(0);
        assert_eq!(out.channels, Channels::Gray, "{name}");
        assert!(out.pixels == want, "{name}");
    }
}

/// Gray frames come out the same in every mode; gray with alpha has its gray plane's CLAHE. When
/// CLAHE's output maxval (255 or 65535) is not the input's, alpha is rescaled to keep its meaning.
#[test]
fn gray_frames_alike_in_every_mode_and_alpha_is_carried() {
    let mut rng = rng();
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("dem16.pgm")]);
    let default = run_ok("clahe", "cpu", &[], &input);
    for mode in ["luma", "each", "gray"] {
        assert!(run_ok("clahe", "cpu", &["--colour", mode], &input) == default, "--colour {mode}");
    }
    for maxval in [255, 65535, 100, 4000] {
        let top: u64 = if maxval <= 255 { 255 } else { 65535 };
        let frame = random_colour_frame(&mut rng, 37, 23, Channels::GrayAlpha, maxval);
        let want = Clahe::default().cpu(&frame.plane(0)).unwrap();
        let alpha: Vec<u16> = (0..frame.pixel_count())
            .map(|i| {
                ((2 * frame.plane(1).pixels.get(i) as u64 * top + maxval as u64) / (2 * maxval as u64)) as u16
            })
            .collect();
        for mode in ["luma", "each"] {
            let out = read_frames(&run_ok(
                "clahe",
                "cpu",
                &["--colour", mode],
                &stream(std::slice::from_ref(&frame)),
            ))
            .remove(0);
            assert_eq!((out.channels, out.maxval as u64), (Channels::GrayAlpha, top));
            assert_eq!(out.plane(0).pixels, want.pixels, "--colour {mode}, maxval {maxval}: gray");
            let got: Vec<u16> = (0..frame.pixel_count()).map(|i| out.plane(1).pixels.get(i)).collect();
            assert_eq!(got, alpha, "--colour {mode}, maxval {maxval}: alpha");
        }
    }
    // RGBA of maxval 100: colour as OpenCV's recipe makes it (its 8-bit images span 0..255),
    // alpha scaled from 0..100 to 0..255.
    let frame = random_colour_frame(&mut rng, 40, 30, Channels::RgbAlpha, 100);
    let want = colour_recipe(std::slice::from_ref(&frame), ColourRecipe::Luma, &[create_clahe(40.0, 8, 8)])
        .remove(0);
    let out = read_frames(&run_ok("clahe", "cpu", &[], &stream(std::slice::from_ref(&frame)))).remove(0);
    assert_eq!((out.channels, out.maxval), (Channels::RgbAlpha, 255));
    for i in 0..frame.pixels.len() {
        let want =
            if i % 4 == 3 { (frame.pixels.get(i) as u32 * 510 + 100) / 200 } else { want.get(i) as u32 };
        assert_eq!(out.pixels.get(i) as u32, want, "sample {i}");
    }
}

#[test]
fn bad_colour_modes_are_refused() {
    let e = run_err("clahe", &["--colour", "hsv"], &fixture_bytes("camera.pgm"), 2);
    assert!(e.contains("--colour"), "{e}");
}

/// Colour frames on the GPU: the same bytes as the CPU's in every mode (Y or each channel on the
/// GPU, the conversions on the CPU).
#[test]
fn gpu_matches_cpu_on_colour_frames() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = gpu_colour_frames(&mut rng);
    frames.push(random_colour_frame(&mut rng, 64, 64, Channels::RgbAlpha, 100));
    let input = stream(&frames);
    for mode in ["luma", "each"] {
        let args = ["--colour", mode, "--clip", "2", "--tiles", "3x5"];
        assert!(run_ok("clahe", "gpu", &args, &input) == run_ok("clahe", "cpu", &args, &input), "{mode}");
    }
    let jpg = fixture_bytes("rocket.jpg");
    let args = ["--colour", "gray"];
    assert!(run_ok("clahe", "gpu", &args, &jpg) == run_ok("clahe", "cpu", &args, &jpg));
}
