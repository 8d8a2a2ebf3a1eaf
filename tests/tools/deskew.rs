//! `deskew` on real scans turned by known angles with our own `pad` and `rotate --bilinear`: the
//! angle found against the angle turned; the angles-only table, colour, 16-bit, blank pages,
//! errors; and the GPU against the CPU.

use histopipe_frame::{Channels, Frame, Pixels};
use histopipe_ops::deskew::{Deskew, DeskewParams, SkewAngle};
use histopipe_ops::Op;

use crate::common::*;

/// The angle column of `deskew --format csv`'s rows.
fn angles(csv: &[u8]) -> Vec<f64> {
    let text = String::from_utf8(csv.to_vec()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("frame,source,angle"));
    lines.map(|l| l.rsplit(',').next().unwrap().parse().unwrap()).collect()
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
    assert!(tsv.starts_with("frame\tsource\tangle\n"), "{tsv}");
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
