//! Standard output as a pipe: frames of 1 MiB or more that a tool made on its heap are handed to
//! the pipe by their pages (crates/cli/src/splice.rs), the rest copied. Whatever the frame, a pipe
//! must carry the bytes that a file gets, which is written as usual.

use std::process::Command as StdCommand;

use histopipe_frame::Format;

use crate::common::*;

/// `name args` on `input`, written to standard output (a pipe, as assert_cmd reads it) and with
/// `-o` to a file of the container's extension: the two must be the same bytes.
fn pipe_and_file_agree(name: &str, args: &[&str], input: &[u8], extension: &str) -> Vec<u8> {
    let dir = temp_dir(&format!("pipes-{name}-{extension}"));
    let piped = run_ok(name, "cpu", args, input);
    let path = dir.join(format!("out.{extension}"));
    let path = path.to_str().unwrap();
    let filed = run_ok(name, "cpu", &[args, &["-o", path]].concat(), input);
    assert!(filed.is_empty());
    let file = std::fs::read(path).unwrap();
    assert!(piped == file, "{name} {args:?} ({extension}): the pipe carried other bytes than the file got");
    piped
}

#[test]
fn a_pipe_carries_the_bytes_a_file_gets() {
    let mut rng = rng();
    // Around 1 MiB, the least that is handed over by pages, and over it; odd widths, so samples
    // start and end off page boundaries; 8- and 16-bit; small frames between the large ones.
    let mut frames = vec![
        random_frame(&mut rng, 1024, 1024, 255),
        random_frame(&mut rng, 1023, 1025, 255),
        fixture_frame("camera.pgm"),
        random_frame(&mut rng, 777, 1201, 65535),
        random_frame(&mut rng, 1500, 999, 1000),
        random_frame(&mut rng, 3, 5, 255),
        random_frame(&mut rng, 2047, 1029, 255),
    ];
    let pgm = stream(&frames);
    for (name, args) in
        [("pad", &[][..]), ("rotate", &["30"][..]), ("equalize", &[][..]), ("rotate", &["0"][..])]
    {
        let out = pipe_and_file_agree(name, args, &pgm, "pgm");
        assert_eq!(read_frames(&out).len(), frames.len(), "{name} {args:?}");
    }
    for f in &mut frames {
        f.format = Format::Pam;
    }
    pipe_and_file_agree("pad", &[], &stream(&frames), "pam");
    // Raw: 16-bit little-endian, written in place before the pages go.
    let raw: Vec<u8> = (0..3 * 1111 * 999).flat_map(|_| rng.u16(..).to_le_bytes()).collect();
    pipe_and_file_agree("rotate", &["--raw", "1111x999:16", "0"], &raw, "raw");
    pipe_and_file_agree("pad", &["--raw", "1111x999:16"], &raw, "raw");
}

/// A frame of a stream is written once it is done, while the stream goes on: its bytes reach the
/// pipe before the next frame (or the input's end) comes, whatever its size; the whole output is
/// the bytes of the whole input.
#[test]
fn each_frame_reaches_the_pipe_before_the_input_ends() {
    let mut rng = rng();
    for (name, args, w, h) in [
        ("equalize", &[][..], 300, 200),
        ("rotate", &["30"][..], 64, 64),
        ("pad", &["--top", "4"][..], 1500, 800),
    ] {
        let frame = random_frame(&mut rng, w, h, 255);
        let one = run_ok(name, "cpu", args, &stream(std::slice::from_ref(&frame)));
        let whole = run_ok(name, "cpu", args, &stream(&[frame.clone(), frame.clone()]));
        let what = format!("{name} {args:?} on a {w}x{h} frame");
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin(name));
        cmd.args(["--backend", "cpu"]).args(args).env("HISTOPIPE_SERVICE", "off");
        let input = stream(&[frame.clone(), frame]);
        let (out, status) = output_before_the_end(&mut cmd, &input, one.len(), &what, |_| {});
        assert!(status.success(), "{what}");
        assert!(out == whole, "{what}: the stream's output differs");
    }
}
