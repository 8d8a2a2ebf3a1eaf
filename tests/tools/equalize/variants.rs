//! `equalize --reference`, `--mask`, `--save-table` and `--table`: against scikit-image's
//! `match_histograms` and OpenCV's masked `calcHist` with `equalizeHist`'s table, and CPU = GPU.

use std::path::{Path, PathBuf};

use histopipe_frame::{Channels, Frame, Pixels};
use histopipe_ops::bins::Bins;
use histopipe_ops::equalize::{Remap, TableRule};
use histopipe_ops::histogram::{Histogram, SHARED_MAX_BINS};
use histopipe_ops::mask::{Mask, Masked};
use histopipe_ops::Op;

use crate::common::*;
use crate::opencv::{pixels_like, sample_bytes};

/// Writes `frames` as one stream to `dir/name`; returns its path as the tools take it.
fn write(dir: &Path, name: &str, frames: &[Frame]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, stream(frames)).unwrap();
    path
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A Python tuple of a frame's shape: (height, width, channels, bits, maxval).
fn shape(f: &Frame) -> String {
    let bits = 8 * f.depth().bytes();
    format!("({}, {}, {}, {bits}, {})", f.height, f.width, f.channels.count(), f.maxval)
}

/// The Python that loads frame `path` of `shape` ((h, w, n, bits, maxval)) as an array.
const LOAD: &str = "def load(path, s):\n    \
                    h, w, n, bits, m = s\n    \
                    a = np.fromfile(path, np.uint8 if bits == 8 else np.dtype('<u2'))\n    \
                    return a.reshape(h, w) if n == 1 else a.reshape(h, w, n)\n\
                    def rounded(x, s):\n    \
                    return np.clip(np.rint(x), 0, s[4]).astype(np.uint8 if s[3] == 8 else np.dtype('<u2'))\n";

/// For each (image, reference) pair of gray frames: `rint(match_histograms(image, reference))`
/// clipped to the image's maxval, in the image's sample width.
fn skimage_match_gray(pairs: &[(Frame, Frame)]) -> Vec<Pixels> {
    let shapes: Vec<String> = pairs.iter().map(|(a, r)| format!("({}, {})", shape(a), shape(r))).collect();
    let script = format!(
        "{LOAD}from skimage.exposure import match_histograms\n\
         for k, (sa, sr) in enumerate([{}]):\n    \
         a, r = load(sys.argv[1 + 2 * k], sa), load(sys.argv[2 + 2 * k], sr)\n    \
         sys.stdout.buffer.write(rounded(match_histograms(a, r), sa).tobytes())\n",
        shapes.join(", ")
    );
    let inputs: Vec<Vec<u8>> =
        pairs.iter().flat_map(|(a, r)| [sample_bytes(&a.pixels), sample_bytes(&r.pixels)]).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    split_like(&skimage(&script, &refs), pairs.iter().map(|(a, _)| a))
}

/// `bytes` cut into the samples of each of `frames`, one after another.
fn split_like<'a>(bytes: &[u8], frames: impl Iterator<Item = &'a Frame>) -> Vec<Pixels> {
    let mut rest = bytes;
    let out = frames
        .map(|f| {
            let (this, next) = rest.split_at(f.pixels.len() * f.depth().bytes());
            rest = next;
            pixels_like(&f.pixels, this)
        })
        .collect();
    assert!(rest.is_empty(), "more bytes than the frames hold");
    out
}

/// Samples of 16 bits skewed toward the low end, up to `maxval`.
fn skewed_u16(rng: &mut fastrand::Rng, w: usize, h: usize, maxval: u16) -> Frame {
    let v = (0..w * h)
        .map(|_| ((rng.u32(0..=maxval as u32) * rng.u32(0..=maxval as u32)) / maxval as u32) as u16);
    let mut f = Frame::new(w, h, maxval, Pixels::U16(v.collect()));
    f.format = histopipe_frame::Format::Pgm;
    f
}

/// The tool's one output frame for `input` with `args`.
fn equalize_one(backend: &str, args: &[&str], input: &Frame) -> Frame {
    read_frames(&run_ok("equalize", backend, args, &stream(std::slice::from_ref(input)))).remove(0)
}

/// moon.pgm to camera.pgm, dem16.pgm to a 16-bit random (skewed) reference, and random pairs of
/// other sizes and maxvals (an 8-bit frame to a 16-bit reference: values clipped to 255).
#[test]
fn reference_matches_skimage_on_gray_frames() {
    let dir = temp_dir("equalize-reference-gray");
    let mut rng = rng();
    let mut pairs = vec![
        (fixture_frame("moon.pgm"), fixture_frame("camera.pgm")),
        (fixture_frame("dem16.pgm"), skewed_u16(&mut rng, 300, 200, 65535)),
        (fixture_frame("camera.pgm"), fixture_frame("moon.pgm")),
        (fixture_frame("dem16.pgm"), random_frame(&mut rng, 64, 64, 65535)),
    ];
    for (maxval, ref_maxval) in [(255, 255), (255, 4000), (100, 255), (1076, 300), (65535, 255)] {
        let (w, h) = (rng.usize(1..200), rng.usize(1..200));
        let frame = if maxval > 255 && rng.bool() {
            skewed_u16(&mut rng, w, h, maxval)
        } else {
            random_frame(&mut rng, w, h, maxval)
        };
        let (rw, rh) = (rng.usize(1..150), rng.usize(1..150));
        pairs.push((frame, random_frame(&mut rng, rw, rh, ref_maxval)));
    }
    // A reference of one value, and a frame of one value.
    pairs.push((random_frame(&mut rng, 40, 30, 255), Frame::new(3, 2, 255, Pixels::U8(vec![77; 6].into()))));
    pairs.push((Frame::new(5, 5, 255, Pixels::U8(vec![9; 25].into())), fixture_frame("moon.pgm")));
    let want = skimage_match_gray(&pairs);
    for (i, ((frame, reference), want)) in pairs.iter().zip(want).enumerate() {
        let reference = write(&dir, &format!("reference-{i}.pgm"), std::slice::from_ref(reference));
        let out = equalize_one("cpu", &["--reference", text(&reference)], frame);
        assert_eq!(
            (out.width, out.height, out.maxval),
            (frame.width, frame.height, frame.maxval),
            "pair {i}"
        );
        let differ = (0..want.len()).filter(|&k| out.pixels.get(k) != want.get(k)).count();
        assert!(out.pixels == want, "pair {i}: {differ} samples differ from skimage's match_histograms");
    }
}

/// `--reference` with `--mask`: the frame's histogram counts the pixels under the mask, so those
/// pixels come out as skimage's `match_histograms` of them alone (as a 1-D image) makes them.
#[test]
fn reference_with_mask_matches_skimage_on_the_masked_pixels() {
    let dir = temp_dir("equalize-reference-mask");
    let mut rng = rng();
    let moon = fixture_frame("moon.pgm");
    let (w, h) = (moon.width, moon.height);
    let mask: Vec<u8> = (0..w * h).map(|i| ((i / w + i % w) % 5 != 0 && rng.u8(..) > 30) as u8).collect();
    let mask_path = write(&dir, "mask.pgm", &[mask_frame(w, h, &mask)]);
    let reference = write(&dir, "camera.pgm", &[fixture_frame("camera.pgm")]);
    let out = equalize_one("cpu", &["--reference", text(&reference), "--mask", text(&mask_path)], &moon);
    let script = "a = np.fromfile(sys.argv[1], np.uint8)\n\
                  m = np.fromfile(sys.argv[2], np.uint8) != 0\n\
                  r = np.fromfile(sys.argv[3], np.uint8)\n\
                  x = skimage.exposure.match_histograms(a[m], r)\n\
                  sys.stdout.buffer.write(np.clip(np.rint(x), 0, 255).astype(np.uint8).tobytes())\n";
    let camera = fixture_frame("camera.pgm");
    let want = skimage(script, &[&sample_bytes(&moon.pixels), &mask, &sample_bytes(&camera.pixels)]);
    let Pixels::U8(got) = &out.pixels else { panic!("8-bit") };
    let got: Vec<u8> = got.iter().zip(&mask).filter(|(_, &m)| m != 0).map(|(&v, _)| v).collect();
    assert!(got == want, "the masked pixels differ from skimage's match_histograms of them");
}

/// Colour: astronaut.png to rocket.jpg. `luma`: the Y of YCrCb matched to the reference's Y
/// (skimage on the two Y planes), converted back by OpenCV; `each`: R, G, B each matched to the
/// reference's (skimage per channel, rounded: with channel_axis skimage itself truncates into
/// uint8, which the script checks is the same float values truncated).
#[test]
fn reference_matches_skimage_on_colour_in_luma_and_each() {
    let dir = temp_dir("equalize-reference-colour");
    let mut rng = rng();
    let image = fixture_frame("astronaut.png");
    let reference = fixture_frame("rocket.jpg");
    assert_eq!((image.channels, reference.channels), (Channels::Rgb, Channels::Rgb));
    let rgba = random_colour_frame(&mut rng, 37, 21, Channels::RgbAlpha, 255);
    let cases = [(image.clone(), reference.clone()), (rgba, reference.clone())];
    for mode in ["luma", "each"] {
        let script = format!(
            "{LOAD}from skimage.exposure import match_histograms\n\
             luma = {}\n\
             for k, (sa, sr) in enumerate([{}]):\n    \
             full, r = load(sys.argv[1 + 2 * k], sa), load(sys.argv[2 + 2 * k], sr)\n    \
             a = np.ascontiguousarray(full[..., :3])\n    \
             if luma:\n        \
                 ya = cv2.cvtColor(np.ascontiguousarray(a[..., ::-1]), cv2.COLOR_BGR2YCrCb)\n        \
                 yr = cv2.cvtColor(np.ascontiguousarray(r[..., 2::-1]), cv2.COLOR_BGR2YCrCb)\n        \
                 ya[..., 0] = rounded(match_histograms(ya[..., 0], yr[..., 0]), sa)\n        \
                 out = cv2.cvtColor(ya, cv2.COLOR_YCrCb2BGR)[..., ::-1]\n    \
             else:\n        \
                 f = np.stack([match_histograms(a[..., c], r[..., c]) for c in range(3)], -1)\n        \
                 assert (match_histograms(a, r[..., :3], channel_axis=-1) == f.astype(a.dtype)).all()\n        \
                 out = rounded(f, sa)\n    \
             res = full.copy()\n    \
             res[..., :3] = out\n    \
             sys.stdout.buffer.write(res.tobytes())\n",
            if mode == "luma" { "True" } else { "False" },
            cases.iter().map(|(a, r)| format!("({}, {})", shape(a), shape(r))).collect::<Vec<_>>().join(", ")
        );
        let inputs: Vec<Vec<u8>> =
            cases.iter().flat_map(|(a, r)| [sample_bytes(&a.pixels), sample_bytes(&r.pixels)]).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let want = split_like(&skimage(&script, &refs), cases.iter().map(|(a, _)| a));
        for (i, ((frame, _), want)) in cases.iter().zip(want).enumerate() {
            let rocket = fixture("rocket.jpg");
            let args = ["--colour", mode, "--reference", text(&rocket)];
            let out = equalize_one("cpu", &args, frame);
            assert_eq!((out.channels, out.maxval), (frame.channels, frame.maxval));
            let differ = (0..want.len()).filter(|&k| out.pixels.get(k) != want.get(k)).count();
            assert!(out.pixels == want, "{mode}, case {i}: {differ} samples differ from skimage");
        }
    }
    // A gray reference matches every channel in `each` to its gray plane, and the luma in `luma`.
    let gray = write(&dir, "moon.pgm", &[fixture_frame("moon.pgm")]);
    let pairs: Vec<(Frame, Frame)> = (0..3).map(|c| (image.plane(c), fixture_frame("moon.pgm"))).collect();
    let want = skimage_match_gray(&pairs);
    let out = equalize_one("cpu", &["--colour", "each", "--reference", text(&gray)], &image);
    for (c, want) in want.iter().enumerate() {
        assert!(&out.plane(c).pixels == want, "channel {c} to a gray reference");
    }
}

/// The table OpenCV's equalizeHist makes from `cv2.calcHist` of the pixels under the mask (its
/// loop: lut[i] = 0 at the lowest level present i, then lut[l] = saturate_cast<uchar>(sum * scale)
/// with sum the count of levels i+1..l and scale = 255.f / (total - hist[i]) in float32; levels
/// below i, which OpenCV leaves unset, 0; one level present: the identity), applied to every
/// pixel. At the pixels under the mask the script also checks that this is what
/// `cv2.equalizeHist` gives for those pixels alone.
fn opencv_masked_equalize(cases: &[(Frame, Vec<u8>)]) -> Vec<Vec<u8>> {
    let shapes: Vec<String> = cases.iter().map(|(f, _)| format!("({}, {})", f.height, f.width)).collect();
    let script = format!(
        "for k, (h, w) in enumerate([{}]):\n    \
         img = np.fromfile(sys.argv[1 + 2 * k], np.uint8).reshape(h, w)\n    \
         mask = np.fromfile(sys.argv[2 + 2 * k], np.uint8).reshape(h, w)\n    \
         hist = cv2.calcHist([img], [0], mask, [256], [0, 256]).ravel().astype(np.int64)\n    \
         total = int(hist.sum())\n    \
         lut = np.arange(256, dtype=np.uint8)\n    \
         if total and hist.max() != total:\n        \
             i = int(np.nonzero(hist)[0][0])\n        \
             scale = np.float32(255) / np.float32(total - hist[i])\n        \
             cdf = np.cumsum(hist)\n        \
             lut = np.zeros(256, np.uint8)\n        \
             for l in range(i + 1, 256):\n            \
                 lut[l] = min(255, int(np.rint(np.float32(cdf[l] - hist[i]) * scale)))\n    \
         out = lut[img]\n    \
         inside = img[mask != 0]\n    \
         if inside.size:\n        \
             assert (cv2.equalizeHist(inside.reshape(1, -1)).ravel() == out[mask != 0]).all()\n    \
         sys.stdout.buffer.write(out.tobytes())\n",
        shapes.join(", ")
    );
    let inputs: Vec<Vec<u8>> = cases.iter().flat_map(|(f, m)| [sample_bytes(&f.pixels), m.clone()]).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    cases
        .iter()
        .map(|(f, _)| {
            let (this, next) = rest.split_at(f.pixel_count());
            rest = next;
            this.to_vec()
        })
        .collect()
}

/// A gray 8-bit frame of these mask bytes.
fn mask_frame(w: usize, h: usize, mask: &[u8]) -> Frame {
    let mut f = Frame::new(w, h, 255, Pixels::U8(mask.to_vec().into()));
    f.format = histopipe_frame::Format::Pgm;
    f
}

/// Masks of the left half, of random pixels, of one pixel, of every pixel and of none, on the
/// fixtures and random frames: the OpenCV-built table, and the mask of no pixels leaves the frame
/// as it is.
#[test]
fn mask_matches_opencv_masked_histogram_table() {
    let dir = temp_dir("equalize-mask");
    let mut rng = rng();
    let mut cases = Vec::new();
    for frame in [fixture_frame("moon.pgm"), fixture_frame("camera.pgm"), random_frame(&mut rng, 77, 31, 255)]
    {
        let (w, h) = (frame.width, frame.height);
        let half: Vec<u8> = (0..w * h).map(|i| if i % w < w / 2 { 255 } else { 0 }).collect();
        let random: Vec<u8> = (0..w * h).map(|_| if rng.u8(..) < 40 { rng.u8(1..) } else { 0 }).collect();
        let mut one = vec![0u8; w * h];
        one[rng.usize(..w * h)] = 1;
        for mask in [half, random, one, vec![7; w * h], vec![0; w * h]] {
            cases.push((frame.clone(), mask));
        }
    }
    let want = opencv_masked_equalize(&cases);
    for (i, ((frame, mask), want)) in cases.iter().zip(want).enumerate() {
        let path = write(&dir, &format!("mask-{i}.pgm"), &[mask_frame(frame.width, frame.height, mask)]);
        let out = equalize_one("cpu", &["--mask", text(&path)], frame);
        let Pixels::U8(got) = &out.pixels else { panic!("8-bit") };
        assert!(got[..] == want[..], "case {i}: differs from the OpenCV-built table");
        if mask.iter().all(|&m| m == 0) {
            assert_eq!(out.pixels, frame.pixels, "case {i}: a mask of no pixels changes nothing");
        }
    }
}

/// 16-bit frames under a mask: the 16-bit rule on the masked histogram (NumPy, from the manual's
/// formula); `each` on colour equalizes each channel under the same mask.
#[test]
fn mask_on_sixteen_bit_and_colour_frames() {
    let dir = temp_dir("equalize-mask-16");
    let mut rng = rng();
    let frame = fixture_frame("dem16.pgm");
    let (w, h) = (frame.width, frame.height);
    let mask: Vec<u8> = (0..w * h).map(|i| (i / w < h / 3) as u8).collect();
    let path = write(&dir, "mask.pgm", &[mask_frame(w, h, &mask)]);
    let script = format!(
        "a = np.fromfile(sys.argv[1], '<u2').astype(np.int64)\n\
         m = np.fromfile(sys.argv[2], np.uint8) != 0\n\
         cdf = np.cumsum(np.bincount(a[m], minlength={maxval} + 1))\n\
         cmin = cdf[cdf > 0].min(); d = cdf[-1] - cmin\n\
         lut = np.arange({maxval} + 1) if d == 0 else (2 * np.maximum(cdf - cmin, 0) * {maxval} + d) // (2 * d)\n\
         sys.stdout.buffer.write(lut[a].astype('<u2').tobytes())\n",
        maxval = frame.maxval
    );
    let want = opencv(&script, &[&sample_bytes(&frame.pixels), &mask]);
    let out = equalize_one("cpu", &["--mask", text(&path)], &frame);
    assert!(sample_bytes(&out.pixels) == want, "dem16.pgm under a mask");
    // Colour, each: every channel by its own masked histogram, as a gray frame of it would be.
    let colour = random_colour_frame(&mut rng, 50, 40, Channels::RgbAlpha, 255);
    let mask: Vec<u8> = (0..50 * 40).map(|_| rng.bool() as u8).collect();
    let path = write(&dir, "mask-colour.pgm", &[mask_frame(50, 40, &mask)]);
    let out = equalize_one("cpu", &["--colour", "each", "--mask", text(&path)], &colour);
    for c in 0..3 {
        let alone = equalize_one("cpu", &["--mask", text(&path)], &colour.plane(c));
        assert_eq!(out.plane(c).pixels, alone.pixels, "channel {c}");
    }
    assert_eq!(out.plane(3).pixels, colour.plane(3).pixels, "alpha carried");
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    let dir = temp_dir("equalize-mask-size");
    let path = write(&dir, "mask.pgm", &[mask_frame(3, 2, &[1; 6])]);
    let e = run_err("equalize", &["--mask", text(&path)], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains(&format!("--mask {} is 3x2, and the frame 512x512", path.display())), "{e}");
}

/// The level -> mapped rows of a table file (one mapping column).
fn table_rows(path: &Path) -> Vec<u16> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("level,mapped"));
    lines
        .enumerate()
        .map(|(l, line)| {
            let (level, mapped) = line.split_once(',').unwrap();
            assert_eq!(level.parse::<usize>().unwrap(), l);
            mapped.parse().unwrap()
        })
        .collect()
}

/// `samples` of `frame` through `table`.
fn mapped(frame: &Frame, table: &[u16]) -> Pixels {
    match &frame.pixels {
        Pixels::U8(v) => Pixels::U8(v.iter().map(|&s| table[s as usize] as u8).collect()),
        Pixels::U16(v) => Pixels::U16(v.iter().map(|&s| table[s as usize]).collect()),
        Pixels::F32(_) => panic!("integer frames"),
    }
}

/// `--save-table`: the first frame equalized as without it, its table written (the table of
/// cv2.equalizeHist at every level present), and the frames after it mapped by the same table;
/// `--table` with the file maps a frame alike.
#[test]
fn save_table_maps_every_frame_by_the_first_and_table_reads_it_back() {
    let dir = temp_dir("equalize-save-table");
    let moon = fixture_frame("moon.pgm");
    let camera = fixture_frame("camera.pgm");
    let saved = dir.join("moon.csv");
    for backend in ["cpu", "auto"] {
        let _ = std::fs::remove_file(&saved);
        let args = ["--save-table", text(&saved)];
        let frames = [moon.clone(), camera.clone(), moon.clone(), camera.clone()];
        let outs = read_frames(&run_ok("equalize", backend, &args, &stream(&frames)));
        assert_eq!(outs.len(), 4);
        let plain = equalize_one("cpu", &[], &moon);
        assert_eq!(outs[0].pixels, plain.pixels, "the first frame as equalize makes it");
        let table = table_rows(&saved);
        assert_eq!(table.len(), 256);
        assert_eq!(mapped(&moon, &table), plain.pixels, "the table saved is the first frame's");
        assert_eq!(outs[1].pixels, mapped(&camera, &table), "the second frame by the first's table");
        assert_eq!(outs[2].pixels, outs[0].pixels);
        assert_eq!(outs[3].pixels, outs[1].pixels);
        let again = equalize_one("cpu", &["--table", text(&saved)], &camera);
        assert_eq!(again.pixels, outs[1].pixels, "--table maps as the saved run did");
    }
    // With --reference and --mask, the table saved is the matched or masked one.
    let reference = write(&dir, "camera.pgm", std::slice::from_ref(&camera));
    let out = read_frames(&run_ok(
        "equalize",
        "cpu",
        &["--reference", text(&reference), "--save-table", text(&saved)],
        &stream(&[moon.clone(), camera.clone()]),
    ));
    assert_eq!(out[0].pixels, equalize_one("cpu", &["--reference", text(&reference)], &moon).pixels);
    assert_eq!(out[1].pixels, mapped(&camera, &table_rows(&saved)));
}

/// 16-bit and colour tables: one column in `luma`, red, green and blue in `each`; a table edited by
/// hand; a table of other levels, or of three columns for one plane, refused in one line.
#[test]
fn tables_of_sixteen_bit_and_colour_frames() {
    let dir = temp_dir("equalize-tables");
    let dem = fixture_frame("dem16.pgm");
    let saved = dir.join("dem.csv");
    let out = equalize_one("cpu", &["--save-table", text(&saved)], &dem);
    assert_eq!(out.pixels, equalize_one("cpu", &[], &dem).pixels);
    let table = table_rows(&saved);
    assert_eq!(table.len(), dem.maxval as usize + 1);
    assert_eq!(equalize_one("cpu", &["--table", text(&saved)], &dem).pixels, out.pixels);

    let astronaut = fixture_frame("astronaut.png");
    let rocket = fixture_frame("rocket.jpg");
    let each = dir.join("each.csv");
    let input = stream(&[astronaut.clone(), rocket.clone()]);
    let outs =
        read_frames(&run_ok("equalize", "cpu", &["--colour", "each", "--save-table", text(&each)], &input));
    let csv = std::fs::read_to_string(&each).unwrap();
    assert!(csv.starts_with("level,red,green,blue\n0,"), "{}", &csv[..40]);
    assert_eq!(csv.lines().count(), 257);
    assert_eq!(outs[0], equalize_one("cpu", &["--colour", "each"], &astronaut));
    let by_table = equalize_one("cpu", &["--colour", "each", "--table", text(&each)], &rocket);
    assert_eq!(outs[1].pixels, by_table.pixels);
    let luma = dir.join("luma.csv");
    let outs = read_frames(&run_ok("equalize", "cpu", &["--save-table", text(&luma)], &input));
    assert_eq!(outs[0], equalize_one("cpu", &[], &astronaut));
    assert_eq!(equalize_one("cpu", &["--table", text(&luma)], &rocket).pixels, outs[1].pixels);
    assert!(std::fs::read_to_string(&luma).unwrap().starts_with("level,mapped\n"));

    // Edited by hand: the negative of an 8-bit frame, with CRLF line ends and spaces.
    let negative = dir.join("negative.csv");
    let rows: String = (0..=255).map(|l| format!("{l}, {}\r\n", 255 - l)).collect();
    std::fs::write(&negative, format!("level, mapped\r\n{rows}")).unwrap();
    let moon = fixture_frame("moon.pgm");
    let out = equalize_one("cpu", &["--table", text(&negative)], &moon);
    assert_eq!(out.pixels, mapped(&moon, &(0..=255).rev().collect::<Vec<u16>>()));

    let e = run_err("equalize", &["--table", text(&negative)], &fixture_bytes("dem16.pgm"), 2);
    assert!(e.contains("the table maps levels 0 to 255, and the frame's maxval is 1076"), "{e}");
    let e = run_err("equalize", &["--table", text(&each)], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains("a mapping for each of red, green and blue"), "{e}");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "level,mapped\n0,0\n1,9\n").unwrap();
    let e = run_err("equalize", &["--table", text(&bad)], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains(&format!("--table {}: line 3: level 1 maps to 9", bad.display())), "{e}");
}

#[test]
fn combinations_that_make_no_sense_are_refused() {
    let dir = temp_dir("equalize-combinations");
    let table = dir.join("t.csv");
    std::fs::write(&table, "level,mapped\n0,0\n").unwrap();
    let moon = fixture("moon.pgm");
    for (flag, value) in [("--reference", text(&moon)), ("--mask", text(&moon)), ("--save-table", "x.csv")] {
        let e = run_err("equalize", &["--table", text(&table), flag, value], &fixture_bytes("moon.pgm"), 2);
        assert!(e.contains(&format!("--table maps by a table already made, and {flag} makes one")), "{e}");
    }
    let e = run_err("equalize", &["--save-table", "t-{stem}.csv"], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains("--save-table") && e.contains("takes no fields"), "{e}");
    let e = run_err("equalize", &["--reference", "/nonexistent.pgm"], &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains("--reference /nonexistent.pgm: "), "{e}");
}

/// A failed first frame with `--save-table` (a float frame) ends the run with its own error; the
/// frames after it do not wait for ever.
#[test]
fn a_failed_first_frame_ends_a_saved_table_run() {
    let dir = temp_dir("equalize-first-fails");
    let mut float = Frame::new(4, 4, 255, Pixels::F32(vec![0.5; 16].into()));
    float.format = histopipe_frame::Format::Pfm;
    let input = stream(&[float, fixture_frame("moon.pgm"), fixture_frame("moon.pgm")]);
    let e = run_err("equalize", &["--save-table", text(&dir.join("t.csv"))], &input, 2);
    assert!(e.contains("32-bit float samples"), "{e}");
}

/// Masked histograms and the host-table variants on the GPU: the CPU's counts and frames.
#[test]
fn gpu_matches_cpu_for_masked_histograms_and_tables() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut frames = Vec::new();
    for maxval in [255, 100, 1076, 65535] {
        for (w, h) in [(1, 1), (3, 1), (1, 7), (127, 129), (640, 480)] {
            frames.extend(hard_frames(&mut rng, w, h, maxval, 250));
        }
    }
    frames.push(fixture_frame("moon.pgm"));
    frames.push(fixture_frame("dem16.pgm"));
    let references = [fixture_frame("camera.pgm"), skewed_u16(&mut rng, 100, 80, 65535)];
    let reference_counts: Vec<Vec<u64>> =
        references.iter().map(|r| Histogram { bins: None }.cpu(r).unwrap().counts).collect();
    for frame in &frames {
        let n = frame.pixel_count();
        let what = format!("{}x{} maxval {}", frame.width, frame.height, frame.maxval);
        let masks = [vec![1u8; n], vec![0u8; n], (0..n).map(|_| rng.u8(..) % 3).collect::<Vec<u8>>()];
        for (k, mask) in masks.iter().enumerate() {
            let levels = frame.maxval as usize + 1;
            let bins_cases = [
                None,
                Some(1),
                Some(8.min(levels)),
                Some(9.min(levels)),
                Some(levels.min(SHARED_MAX_BINS as usize)),
                Some(levels.min(SHARED_MAX_BINS as usize + 1)),
            ];
            for bins in bins_cases {
                if Bins::new(bins, frame.maxval).is_err() {
                    continue;
                }
                let h = Masked { op: Histogram { bins }, mask: Mask::of_frame(mask, frame).unwrap() };
                assert_eq!(
                    h.cpu(frame).unwrap(),
                    h.gpu(&gpu, frame).unwrap(),
                    "{what}, mask {k}, {bins:?} bins"
                );
            }
            for rule in [
                TableRule::Equalize,
                TableRule::Match(&reference_counts[0]),
                TableRule::Match(&reference_counts[1]),
            ] {
                let op = Remap { rule, mask: Some(Mask::of_frame(mask, frame).unwrap()), keep: None };
                assert_eq!(
                    op.cpu(frame).unwrap(),
                    op.gpu(&gpu, frame).unwrap(),
                    "{what}, mask {k}, {rule:?}"
                );
            }
        }
        for rule in [TableRule::Equalize, TableRule::Match(&reference_counts[1])] {
            let op = Remap::new(rule);
            assert_eq!(op.cpu(frame).unwrap(), op.gpu(&gpu, frame).unwrap(), "{what}, {rule:?}");
        }
        let table: Vec<u16> = (0..=frame.maxval).rev().collect();
        let op = Remap::new(TableRule::Given(&table));
        assert_eq!(op.cpu(frame).unwrap(), op.gpu(&gpu, frame).unwrap(), "{what}, given table");
    }
}

/// Masked histograms of frames larger than the GPU kernels' grid (each thread takes several units
/// of 16 samples, and the 12 samples after the last unit one by one), 8- and 16-bit, few and many
/// bins (registers, two and one shared-memory copies, global atomics): the CPU's counts.
#[test]
fn gpu_matches_cpu_for_masked_histograms_of_large_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let (w, h) = (1501, 1500);
    let n = w * h;
    let masks = [vec![1u8; n], (0..n).map(|_| rng.u8(..) % 3).collect::<Vec<u8>>()];
    for maxval in [255, 1076, 65535] {
        let frame = random_frame(&mut rng, w, h, maxval);
        for (k, mask) in masks.iter().enumerate() {
            for bins in
                [None, Some(1), Some(8), Some(9), Some(256), Some(4097), Some(SHARED_MAX_BINS as usize)]
            {
                if Bins::new(bins, frame.maxval).is_err() {
                    continue;
                }
                let h = Masked { op: Histogram { bins }, mask: Mask::of_frame(mask, &frame).unwrap() };
                assert_eq!(
                    h.cpu(&frame).unwrap(),
                    h.gpu(&gpu, &frame).unwrap(),
                    "maxval {maxval}, mask {k}, {bins:?} bins"
                );
            }
        }
    }
}

/// The tool on the GPU: the CPU's bytes with --reference, --mask and --save-table, gray and
/// colour, in every colour mode.
#[test]
fn gpu_tool_matches_cpu_with_reference_mask_and_tables() {
    let Some(_gpu) = gpu() else { return };
    let dir = temp_dir("equalize-gpu-variants");
    let reference = write(&dir, "reference.pam", &[fixture_frame("rocket.jpg")]);
    let astronaut = fixture_frame("astronaut.png");
    let (w, h) = (astronaut.width, astronaut.height);
    let mask =
        write(&dir, "mask.pgm", &[mask_frame(w, h, &(0..w * h).map(|i| (i % 3) as u8).collect::<Vec<_>>())]);
    let saved = dir.join("t.csv");
    let input = stream(&[astronaut.clone(), astronaut]);
    for mode in ["luma", "each", "gray"] {
        for args in [
            vec!["--reference", text(&reference)],
            vec!["--mask", text(&mask)],
            vec!["--reference", text(&reference), "--mask", text(&mask)],
            vec!["--save-table", text(&saved)],
        ] {
            let args = [&["--colour", mode][..], &args].concat();
            assert!(
                run_ok("equalize", "gpu", &args, &input) == run_ok("equalize", "cpu", &args, &input),
                "{args:?}"
            );
        }
    }
    let dem = fixture_bytes("dem16.pgm");
    let args = ["--reference", text(&reference)];
    assert!(run_ok("equalize", "gpu", &args, &dem) == run_ok("equalize", "cpu", &args, &dem));
}
