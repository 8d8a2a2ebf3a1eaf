//! `--progress`: a report on stderr, the output unchanged.

use crate::common::*;

fn three_frames() -> Vec<u8> {
    stream(&[fixture_frame("camera.pgm"), fixture_frame("moon.pgm"), fixture_frame("coins.pgm")])
}

#[test]
fn progress_reports_on_stderr_and_leaves_the_output_alone() {
    let input = three_frames();
    let plain = tool("equalize").args(["--backend", "cpu"]).write_stdin(input.clone()).output().unwrap();
    assert!(plain.status.success());
    assert!(plain.stderr.is_empty(), "without --progress: {}", String::from_utf8_lossy(&plain.stderr));
    let reported =
        tool("equalize").args(["--progress", "--backend", "cpu"]).write_stdin(input).output().unwrap();
    assert!(reported.status.success());
    assert!(reported.stdout == plain.stdout, "the output changed with --progress");
    let stderr = String::from_utf8(reported.stderr).unwrap();
    // Not a terminal: whole lines, no carriage returns.
    assert!(!stderr.contains('\r') && stderr.ends_with('\n'), "{stderr:?}");
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("equalize: 3 frames, ") && last.ends_with(" MB/s"), "{stderr:?}");
}

#[test]
fn an_error_after_progress_is_a_line_of_its_own() {
    let input = [three_frames(), b"P5 1 1 255\n".to_vec()].concat();
    let out = tool("equalize").args(["--progress", "--backend", "cpu"]).write_stdin(input).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("equalize: ") && !last.contains("frames/s"), "{stderr:?}");
}
