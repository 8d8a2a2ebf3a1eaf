//! Failures are loud: a panic anywhere is a non-zero exit with one line, a meaning that no longer
//! holds is not passed on, and messages are one escaped line whatever the input holds.

use crate::common::*;

/// A malformed baseline JPEG (a later component with a larger sampling factor than the first, the
/// scan naming only the first) on which zune-jpeg 0.5.15 panics.
fn panicking_jpeg() -> Vec<u8> {
    let hex = format!(
        "ffd8ffdb004300{}ffc0000e080001000902011100022100ffc40014000100000000000000000000000000000000\
         ffc40014100100000000000000000000000000000000ffda0008010100003f00ffd9",
        "01".repeat(64)
    );
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn a_panic_in_a_decoder_fails_every_tool_with_one_line() {
    let jpeg = panicking_jpeg();
    for name in tools() {
        let args: &[&str] = match name {
            "hough-lines" => &["--top", "1"],
            "rotate" => &["10"],
            _ => &[],
        };
        let out =
            tool(name).args(["--backend", "cpu"]).args(args).write_stdin(jpeg.clone()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: a lost frame must not exit 0");
        assert!(out.stdout.is_empty(), "{name}: nothing written");
        assert_eq!(stderr.lines().count(), 1, "{name}: not one line: {stderr}");
        assert!(stderr.starts_with(&format!("{name}: frame 1: ")), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
}

#[test]
fn a_panic_after_good_frames_keeps_them_and_fails() {
    let camera = fixture_bytes("camera.pgm");
    let input = [camera.clone(), panicking_jpeg()].concat();
    let out = tool("equalize").args(["--backend", "cpu"]).write_stdin(input).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.starts_with("equalize: frame 2: ") && stderr.lines().count() == 1, "{stderr}");
    assert_eq!(read_frames(&out.stdout).len(), 1, "the good frame before is written");
}

/// `hough-vote | equalize | hough-lines` found lines with 256 votes: the accumulator's axes must
/// not outlive its votes.
#[test]
fn a_tool_that_changes_the_samples_drops_their_meaning() {
    let edges = run_ok("edges", "cpu", &[], &fixture_bytes("brick.pgm"));
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    assert!(read_frames(&acc)[0].annotation("hough").is_some());
    for (name, args) in [("equalize", &[][..]), ("pad", &[][..]), ("rotate", &["10"][..])] {
        let changed = run_ok(name, "cpu", args, &acc);
        assert_eq!(read_frames(&changed)[0].annotation("hough"), None, "{name} kept the annotation");
        let e = run_err("hough-lines", &["--top", "5"], &changed, 2);
        assert!(e.contains("not an accumulator written by hough-vote"), "{name}: {e}");
    }
}

#[test]
fn messages_are_one_escaped_line() {
    let e = run_err("cdf", &[], b"P5 \x1b[31mred 1 255\n\x00", 2);
    assert!(e.contains("\\x1b[31mred") && !e.contains('\x1b'), "{e:?}");
    let e = run_err("cdf", &[], b"\xff\xd8", 2);
    assert!(e.starts_with("cdf: frame 1: "), "{e:?}");
    let e = run_err("cdf", &[], &[b"P5 ".as_slice(), &[b'9'; 5000], b" 1 255\n"].concat(), 2);
    assert!(e.len() < 600, "bounded length: {} bytes", e.len());
}
