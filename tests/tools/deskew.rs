//! `deskew` on real scans turned by known angles with our own `pad` and `rotate --bilinear`: the
//! angle found against the angle turned; the angles-only table, colour, 16-bit, blank pages,
//! errors; `--orient` on text drawn by OpenCV in random quarter turns and on page.pgm turned; the
//! confidence of text, blank pages and photos, and `--min-confidence`; and the GPU against the
//! CPU.

use histopipe_frame::{Channels, Frame, Pixels};
use histopipe_ops::deskew::{Deskew, DeskewParams, SkewAngle};
use histopipe_ops::Op;

use crate::common::*;

/// The angle column of `deskew --format csv`'s rows.
fn angles(csv: &[u8]) -> Vec<f64> {
    column(csv, "angle")
}

/// The column `name` of `deskew --format csv`'s rows, as numbers.
fn column(csv: &[u8], name: &str) -> Vec<f64> {
    let text = String::from_utf8(csv.to_vec()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..4], ["frame", "source", "angle", "confidence"], "{text}");
    let k = header.iter().position(|&c| c == name).unwrap_or_else(|| panic!("no {name}: {text}"));
    lines.map(|l| l.split(',').nth(k).unwrap().parse().unwrap()).collect()
}

/// `name` padded with white (room to turn), as a stream; and turned by each of `turns` degrees
/// (bilinear, white corners), as one stream.
fn turned(name: &str, turns: &[f64]) -> (Vec<u8>, Vec<u8>) {
    let padded = run_ok("pad", "cpu", &["--border", "80", "--fill", "255"], &fixture_bytes(name));
    let mut stream = Vec::new();
    for a in turns {
        let a = a.to_string();
        stream.extend(run_ok("rotate", "cpu", &["--bilinear", "--fill", "255", "--", &a], &padded));
    }
    (padded, stream)
}

const TURNS: [f64; 8] = [0.7, -0.7, 2.3, -4.1, 9.5, 14.0, -14.0, 0.33];

/// text.pgm (a photo of printed and handwritten maths) turned: every angle within 0.05 degrees
/// of its own skew plus the turn.
#[test]
fn turned_text_gives_its_turn() {
    let (padded, stream) = turned("text.pgm", &TURNS);
    let base = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &padded))[0];
    let found = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &stream));
    for (a, f) in TURNS.iter().zip(&found) {
        assert!((f - base - a).abs() <= 0.05, "text.pgm turned {a}: {f} (straight: {base})");
    }
}

/// page.pgm (a book page photographed under uneven light, its left third in shadow, 384 pixels
/// wide) turned: every angle within 0.05 degrees of its own skew plus the turn. Its own skew,
/// about -0.2 degrees, is its text's (not its edges', which are level).
#[test]
fn turned_page_gives_its_turn() {
    let (padded, stream) = turned("page.pgm", &TURNS);
    let base = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &padded))[0];
    assert!((-0.3..=-0.1).contains(&base), "{base}");
    let found = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &stream));
    for (a, f) in TURNS.iter().zip(&found) {
        assert!((f - base - a).abs() <= 0.05, "page.pgm turned {a}: {f} (straight: {base})");
    }
}

/// A page drawn at a known skew (text-like lines of blocks, ink 15 on paper 240).
fn drawn(w: usize, h: usize, degrees: f64, seed: u64) -> Frame {
    let page = histopipe_ops::deskew::drawn_page_with(w, h, degrees, seed, 15, 240);
    Frame::new(w, h, 255, Pixels::U8(page.into()))
}

#[test]
fn drawn_pages_give_their_skew_and_come_out_upright() {
    let turns = [0.0, 0.7, -0.7, 2.3, -4.1, 9.5, 14.0, -14.0];
    let frames: Vec<Frame> = turns.iter().enumerate().map(|(k, &a)| drawn(1200, 900, a, k as u64)).collect();
    let input = stream(&frames);
    let found = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &input));
    for (a, f) in turns.iter().zip(&found) {
        assert!((f - a).abs() <= 0.05, "drawn at {a}: {f}");
    }
    // Turned upright, each measures straight; corners take the paper's value.
    let upright = run_ok("deskew", "cpu", &[], &input);
    for f in read_frames(&upright) {
        assert_eq!(f.pixels.get(0), 240);
    }
    let again = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &upright));
    for (a, f) in turns.iter().zip(&again) {
        assert!(f.abs() <= 0.05, "drawn at {a}, turned upright: {f}");
    }
}

#[test]
fn the_table_has_one_row_a_frame() {
    let two = [fixture_bytes("text.pgm"), fixture_bytes("page.pgm")].concat();
    let csv = String::from_utf8(run_ok("deskew", "cpu", &["--format", "csv"], &two)).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[1].starts_with("1,-,") && lines[2].starts_with("2,-,"), "{csv}");
    let tsv = String::from_utf8(run_ok("deskew", "cpu", &["--format", "tsv"], &two)).unwrap();
    assert!(tsv.starts_with("frame\tsource\tangle\tconfidence\n"), "{tsv}");
    let csv = String::from_utf8(run_ok("deskew", "cpu", &["--format", "csv", "--orient"], &two)).unwrap();
    assert!(csv.starts_with("frame,source,angle,confidence,orientation\n"), "{csv}");
}

#[test]
fn blank_pages_have_angle_zero_and_stay_as_they_are() {
    for v in [0u16, 200, 255] {
        let f = Frame::new(64, 48, 255, Pixels::U8(vec![v as u8; 64 * 48].into()));
        let input = stream(std::slice::from_ref(&f));
        assert_eq!(angles(&run_ok("deskew", "cpu", &["--format", "csv"], &input)), [0.0]);
        assert_eq!(read_frames(&run_ok("deskew", "cpu", &[], &input))[0].pixels, f.pixels);
    }
    for (w, h) in [(1, 1), (3, 1), (1, 7)] {
        let f = Frame::new(w, h, 255, Pixels::U8((0..w * h).map(|i| (i * 97) as u8).collect()));
        let out = run_ok("deskew", "cpu", &[], &stream(&[f]));
        assert_eq!(read_frames(&out)[0].width, w);
    }
}

#[test]
fn colour_stays_colour_and_16_bit_stays_16_bit() {
    let page = drawn(500, 400, 3.3, 9);
    let Pixels::U8(gray) = &page.pixels else { unreachable!() };
    let rgb: Vec<u8> = gray.iter().flat_map(|&v| [v, v / 2 + 100, v]).collect();
    let colour = Frame::with_channels(500, 400, Channels::Rgb, 255, Pixels::U8(rgb.into()));
    let out = read_frames(&run_ok("deskew", "cpu", &[], &stream(std::slice::from_ref(&colour))));
    assert_eq!(out[0].channels, Channels::Rgb);
    let a = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &stream(&[colour])))[0];
    assert!((a - 3.3).abs() <= 0.05, "{a}");
    let deep = Frame::new(500, 400, 65535, Pixels::U16(gray.iter().map(|&v| v as u16 * 257).collect()));
    let out = read_frames(&run_ok("deskew", "cpu", &[], &stream(std::slice::from_ref(&deep))));
    assert_eq!((out[0].maxval, out[0].pixels.depth()), (65535, deep.pixels.depth()));
    let a16 = angles(&run_ok("deskew", "cpu", &["--format", "csv"], &stream(&[deep])))[0];
    assert!((a16 - 3.3).abs() <= 0.05, "{a16}");
}

#[test]
fn bad_options_are_one_line_errors() {
    let page = fixture_bytes("text.pgm");
    let e = run_err("deskew", &["--max-angle", "60"], &page, 2);
    assert!(e.contains("--max-angle 60"), "{e}");
    let e = run_err("deskew", &["--precision", "0"], &page, 2);
    assert!(e.contains("--precision 0"), "{e}");
    run_err("deskew", &["--precision", "nan"], &page, 2);
    let e = run_err("deskew", &["--fill", "300"], &page, 2);
    assert!(e.contains("--fill 300"), "{e}");
    run_err("deskew", &["--format", "npy"], &page, 2);
    for bad in ["1.5", "-0.1", "nan", "x"] {
        let e = run_err("deskew", &["--min-confidence", bad], &page, 2);
        assert!(e.contains("--min-confidence"), "{e}");
    }
}

#[test]
fn gpu_equals_cpu_on_turned_pages() {
    let Some(gpu) = gpu() else { return };
    let (_, stream) = turned("text.pgm", &[2.3, -9.5]);
    let mut frames = read_frames(&stream);
    frames.push(drawn(1200, 900, -4.1, 3));
    frames.push(fixture_frame("page.pgm"));
    for f in &frames {
        let (c, g) = (Deskew::default().cpu(f).unwrap(), Deskew::default().gpu(&gpu, f).unwrap());
        assert_eq!(c, g);
        let params = DeskewParams { max_angle: 45.0, precision: 0.001 };
        assert_eq!(SkewAngle { params }.cpu(f).unwrap(), SkewAngle { params }.gpu(&gpu, f).unwrap());
    }
}

/// Pages of text drawn by OpenCV's `putText` (`fonts` cycled, random sizes and stroke widths,
/// random English words, at least 40 a page (the size shrunk by tenths until they fit: a page of a
/// few large words may by chance hang more ink below its lines than above, and read upside down),
/// ink 20 on paper 235, lines 1.5 to 2.2 line heights apart), each turned
/// by its skew (`warpAffine`, bilinear, counter-clockwise) and then by its quarter turns
/// (`np.rot90`, counter-clockwise): `(skew degrees, quarters)` a page.
fn drawn_text(rng: &mut fastrand::Rng, pages: &[(f64, u8)], fonts: &[u8]) -> Vec<u8> {
    let spec: Vec<String> = pages
        .iter()
        .enumerate()
        .map(|(k, &(skew, q))| {
            let (w, h) = (rng.usize(500..900), rng.usize(400..800));
            let font = fonts[k % fonts.len()];
            format!(
                "({w}, {h}, {font}, {}, {}, {skew}, {q}, {})",
                rng.f64() * 0.6 + 0.6,
                rng.u8(1..3),
                rng.u32(..)
            )
        })
        .collect();
    let script = format!(
        "words = ('the quick brown fox jumps over a lazy dog while histograms of light and shade '\n\
         '  tell us which way up the page is printed in several fonts and sizes 1984 '\n\
         '  Deskew finds lines of text Typography baseline ascender descender quality').split()\n\
         for (w, h, font, scale, thick, skew, q, seed) in [{}]:\n\
         \x20   if font in (cv2.FONT_HERSHEY_PLAIN, cv2.FONT_HERSHEY_COMPLEX_SMALL): scale *= 2\n\
         \x20   while True:\n\
         \x20       rng = np.random.default_rng(seed)\n\
         \x20       (tw, th), base = cv2.getTextSize('Hg', font, scale, thick)\n\
         \x20       lines, y = [], 40 + th\n\
         \x20       while y < h - 40:\n\
         \x20           line = ''\n\
         \x20           while True:\n\
         \x20               more = (line + ' ' + words[rng.integers(len(words))]).strip()\n\
         \x20               if cv2.getTextSize(more, font, scale, thick)[0][0] > w - 80: break\n\
         \x20               line = more\n\
         \x20           lines.append((line, y))\n\
         \x20           y += int((th + base) * rng.uniform(1.5, 2.2))\n\
         \x20       if sum(len(l.split()) for l, _ in lines) >= 40: break\n\
         \x20       scale *= 0.9\n\
         \x20   page = np.full((h, w), 235, np.uint8)\n\
         \x20   for line, y in lines:\n\
         \x20       cv2.putText(page, line, (40, y), font, scale, 20, thick, cv2.LINE_AA)\n\
         \x20   m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), skew, 1.0)\n\
         \x20   page = cv2.warpAffine(page, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=235)\n\
         \x20   page = np.ascontiguousarray(np.rot90(page, q))\n\
         \x20   sys.stdout.buffer.write(b'P5\\n%d %d\\n255\\n' % (page.shape[1], page.shape[0]) + page.tobytes())\n",
        spec.join(", ")
    );
    opencv(&script, &[])
}

/// OpenCV's Hershey fonts: SIMPLEX, PLAIN, DUPLEX, COMPLEX, TRIPLEX, COMPLEX_SMALL,
/// SCRIPT_SIMPLEX, SCRIPT_COMPLEX.
const FONTS: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

/// Drawn text pages (fresh random fonts' sizes, words, skews within ±5 degrees and quarter
/// turns each run): --orient finds every quarter turn, the skew within 0.2 degrees of the
/// upright page's, and writes the page upright (its sides back in place).
#[test]
fn orient_finds_the_quarter_turn_of_drawn_text() {
    let mut rng = rng();
    let pages: Vec<(f64, u8)> = (0..16).map(|k| (rng.f64() * 10.0 - 5.0, (k % 4) as u8)).collect();
    let mut pages = pages;
    rng.shuffle(&mut pages);
    let input = drawn_text(&mut rng, &pages, &FONTS);
    let csv = run_ok("deskew", "cpu", &["--orient", "--format", "csv"], &input);
    let (found, skews) = (column(&csv, "orientation"), angles(&csv));
    let frames = read_frames(&input);
    let upright = read_frames(&run_ok("deskew", "cpu", &["--orient"], &input));
    let table = String::from_utf8_lossy(&csv);
    for (k, &(skew, q)) in pages.iter().enumerate() {
        let font = FONTS[k % FONTS.len()];
        assert_eq!(found[k], q as f64 * 90.0, "page {k} (font {font}, skew {skew}, turned {q}):\n{table}");
        assert!((skews[k] - skew).abs() <= 0.2, "page {k} (font {font}) skew {skew}: {}", skews[k]);
        let (w, h) = (frames[k].width, frames[k].height);
        let size = if q % 2 == 1 { (h, w) } else { (w, h) };
        assert_eq!((upright[k].width, upright[k].height), size, "page {k}");
    }
    // Upright, they measure straight and upright.
    let again = run_ok("deskew", "cpu", &["--orient", "--format", "csv"], &stream(&upright));
    let table = String::from_utf8_lossy(&again);
    assert!(column(&again, "orientation").iter().all(|&o| o == 0.0), "upright pages:\n{table}");
    assert!(angles(&again).iter().all(|a| a.abs() <= 0.1), "upright pages:\n{table}");
}

/// page.pgm (a photographed book page, not used to choose the method) turned by each quarter
/// turn with `rotate --expand`: found each time, and turned back to the page's own pixels.
#[test]
fn orient_finds_the_quarter_turn_of_a_real_scan() {
    let page = fixture_bytes("page.pgm");
    for q in [0, 90, 180, 270] {
        let turned = run_ok("rotate", "cpu", &["--expand", &q.to_string()], &page);
        let csv = run_ok("deskew", "cpu", &["--orient", "--format", "csv"], &turned);
        assert_eq!(column(&csv, "orientation"), [q as f64], "page.pgm turned {q}");
        let upright = run_ok("deskew", "cpu", &["--orient", "--fill", "255"], &turned);
        let straight = run_ok("deskew", "cpu", &["--fill", "255"], &page);
        assert_eq!(read_frames(&upright)[0].pixels, read_frames(&straight)[0].pixels, "turned {q}");
    }
}

/// Colour is kept: a colour page turned a quarter comes back colour, upright.
#[test]
fn orient_keeps_colour() {
    let mut rng = rng();
    let gray = read_frames(&drawn_text(&mut rng, &[(1.0, 1)], &[0])).remove(0);
    let Pixels::U8(v) = &gray.pixels else { unreachable!() };
    let rgb: Vec<u8> = v.iter().flat_map(|&v| [v, v / 2 + 100, 255 - v / 3]).collect();
    let colour = Frame::with_channels(gray.width, gray.height, Channels::Rgb, 255, Pixels::U8(rgb.into()));
    let input = stream(&[colour]);
    let out = read_frames(&run_ok("deskew", "cpu", &["--orient"], &input)).remove(0);
    assert_eq!((out.channels, out.width, out.height), (Channels::Rgb, gray.height, gray.width));
    let csv = run_ok("deskew", "cpu", &["--orient", "--format", "csv"], &input);
    assert_eq!(column(&csv, "orientation"), [90.0]);
}

/// The confidence: pages of text stand far above blank pages and photos (measured: drawn text
/// 0.55 to 0.73, page.pgm 0.48; camera.pgm 0.07, astronaut.png 0.01, rocket.jpg 0.09, blank 0).
#[test]
fn text_pages_are_more_confident_than_blank_pages_and_photos() {
    let mut rng = rng();
    let pages: Vec<(f64, u8)> = (0..4).map(|_| (rng.f64() * 6.0 - 3.0, 0)).collect();
    let mut text = column(
        &run_ok("deskew", "cpu", &["--format", "csv"], &drawn_text(&mut rng, &pages, &FONTS)),
        "confidence",
    );
    text.extend(column(
        &run_ok("deskew", "cpu", &["--format", "csv"], &fixture_bytes("page.pgm")),
        "confidence",
    ));
    let least = text.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(least > 0.4, "{text:?}");
    let blank = Frame::new(300, 200, 255, Pixels::U8(vec![235; 300 * 200].into()));
    let mut others = column(&run_ok("deskew", "cpu", &["--format", "csv"], &stream(&[blank])), "confidence");
    assert_eq!(others, [0.0]);
    for photo in ["camera.pgm", "astronaut.png", "rocket.jpg"] {
        let c = column(&run_ok("deskew", "cpu", &["--format", "csv"], &fixture_bytes(photo)), "confidence");
        others.extend(c);
    }
    let most = others.iter().copied().fold(0.0, f64::max);
    assert!(most < 0.15 && most < least, "photos and blank {others:?}, text {text:?}");
}

/// --min-confidence: a page below it is written as it came (byte for byte), with one line on
/// stderr naming it, a NaN angle in the table, and exit status 0; a page above it is turned.
#[test]
fn min_confidence_leaves_unsure_pages_as_they_are() {
    let photo = fixture_bytes("camera.pgm");
    for args in [&["--min-confidence", "0.3"][..], &["--min-confidence", "0.3", "--orient"]] {
        let out =
            tool("deskew").args(["--backend", "cpu"]).args(args).write_stdin(photo.clone()).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(out.stdout, photo, "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("deskew: frame 1: confidence 0.") && stderr.contains("--min-confidence 0.3"),
            "{stderr}"
        );
    }
    let dir = temp_dir("deskew-min-confidence");
    let path = dir.join("camera\tphoto.pgm");
    std::fs::write(&path, &photo).unwrap();
    let both = [photo.clone(), fixture_bytes("page.pgm")].concat();
    let out = tool("deskew")
        .args(["--backend", "cpu", "--min-confidence", "0.3", "--format", "csv", "--orient"])
        .arg(&path)
        .arg("-")
        .write_stdin(both)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[1].ends_with(&format!(",NaN,{},NaN", rows[1].split(',').nth(3).unwrap())), "{csv}");
    assert!(rows[1].contains(",NaN,0.0"), "{csv}");
    assert!(rows[2].starts_with("2,-,NaN,") && rows[3].starts_with("3,-,-0.4"), "{csv}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.starts_with("deskew: ") && stderr.contains("camera\\tphoto.pgm: frame 1: confidence"),
        "{stderr}"
    );
    // Without --min-confidence the same photo is turned.
    assert_ne!(run_ok("deskew", "cpu", &[], &photo), photo);
}

/// The GPU and the CPU give the same orientation, confidence, angle and bytes.
#[test]
fn gpu_equals_cpu_with_orient() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let input = drawn_text(&mut rng, &[(2.0, 1), (-3.0, 2), (0.5, 3)], &FONTS);
    let input = [input, fixture_bytes("camera.pgm")].concat();
    for args in [&["--orient", "--format", "csv"][..], &["--orient"], &["--min-confidence", "0.3"]] {
        assert_eq!(run_ok("deskew", "gpu", args, &input), run_ok("deskew", "cpu", args, &input), "{args:?}");
    }
}

/// A real scan with a picture on it: page.pgm above a strip of paper (200) holding a 256-pixel
/// wide crop of a photo, 76 or 128 rows of it; in each quarter turn (`rotate --expand`) its
/// orientation is found.
#[test]
fn orient_finds_the_quarter_turn_of_a_scan_with_a_picture() {
    let page = fixture_frame("page.pgm");
    let (w, h) = (page.width, page.height);
    for (photo, rows) in [("camera.pgm", 76), ("coins.pgm", 128), ("brick.pgm", 128)] {
        let picture = fixture_frame(photo);
        let mut samples: Vec<u8> = (0..w * h).map(|i| page.pixels.get(i) as u8).collect();
        for y in 0..rows {
            samples.extend((0..w).map(|x| match x {
                64..320 => picture.pixels.get((100 + y) * picture.width + 36 + x) as u8,
                _ => 200,
            }));
        }
        let scan = stream(&[Frame::new(w, h + rows, 255, Pixels::U8(samples.into()))]);
        for q in [0, 90, 180, 270] {
            let turned = run_ok("rotate", "cpu", &["--expand", &q.to_string()], &scan);
            let csv = run_ok("deskew", "cpu", &["--orient", "--format", "csv"], &turned);
            assert_eq!(column(&csv, "orientation"), [q as f64], "page.pgm over {photo} turned {q}");
        }
    }
}
