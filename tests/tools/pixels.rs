//! The pixels people have, across the tools: colour read as OpenCV's luma by the tools that work
//! on gray, float frames refused in one line by the tools that need integers.

use histopipe_frame::{Channels, Frame, Pixels, ReadOptions};

use crate::common::*;

/// astronaut.png as a gray PGM, by OpenCV's luma (proved against cv2 in the frame crate).
fn astronaut_gray() -> Vec<u8> {
    let rgb = read_frames(&fixture_bytes("astronaut.png")).remove(0);
    assert_eq!(rgb.channels, Channels::Rgb);
    stream(&[histopipe_frame::colour::gray_frame(&rgb)])
}

#[test]
fn tools_on_gray_read_colour_as_opencvs_luma() {
    let colour = fixture_bytes("astronaut.png");
    let gray = astronaut_gray();
    for (tool, args) in [("edges", &[][..]), ("hough-vote", &[]), ("equalize", &["--colour", "gray"])] {
        let from_colour = read_frames(&run_ok(tool, "cpu", args, &colour));
        let from_gray = read_frames(&run_ok(tool, "cpu", args, &gray));
        assert_eq!(from_colour[0].channels, Channels::Gray, "{tool}");
        assert_eq!(from_colour[0].pixels, from_gray[0].pixels, "{tool}");
    }
    // A JPEG read as gray is its own luma plane, as cv2.IMREAD_GRAYSCALE gives it.
    let jpeg = fixture_bytes("rocket.jpg");
    let luma = read_frames_with(&jpeg, ReadOptions { gray: true, ..ReadOptions::default() }).remove(0);
    let edges = read_frames(&run_ok("edges", "cpu", &[], &jpeg)).remove(0);
    let edges_of_luma = read_frames(&run_ok("edges", "cpu", &[], &stream(&[luma]))).remove(0);
    assert_eq!(edges.pixels, edges_of_luma.pixels);
}

#[test]
fn tools_that_need_integers_refuse_float_frames_in_one_line() {
    let dem = fixture_bytes("dem.npy");
    let f: Frame = read_frames(&dem).remove(0);
    assert!(matches!(f.pixels, Pixels::F32(_)));
    for tool in ["edges", "hough-vote", "hough-lines"] {
        let e = run_err(tool, &[], &dem, 2);
        assert!(e.starts_with(&format!("{tool}: frame 1: 32-bit float samples, and this tool takes integer ones: make them integers first with stretch")), "{tool}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{tool}: {e}");
    }
}
