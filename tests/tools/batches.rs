//! Batches that finish (issue 45): every input file is read and worked on whatever the others
//! hold; each failure is one line naming its file, in the stream's order; a last line counts them,
//! and the exit status is non-zero (2 when all were bad input). A bad frame ends its own file.
//! `--fail-fast` stops at the first, as every run did before.

use std::path::Path;

use histopipe_frame::{Channels, Format, Frame, Pixels};

use crate::common::*;

/// Good files with bad ones in front, in the middle and at the end: a truncated JPEG, a file that
/// is not there, a folder, a frame `equalize` refuses (float colour, which its default `--colour
/// luma` does not take), a PGM cut short after two good frames, and garbage. Returns the operands in order and the good files' names.
fn batch(dir: &Path) -> (Vec<String>, Vec<&'static str>) {
    copy_fixtures(
        dir,
        &[("camera.pgm", "in/good1.pgm"), ("moon.pgm", "in/good2.pgm"), ("coins.pgm", "in/good3.pgm")],
    );
    let jpeg = fixture_bytes("rocket.jpg");
    std::fs::write(dir.join("in/a-truncated.jpg"), &jpeg[..jpeg.len() / 3]).unwrap();
    std::fs::create_dir(dir.join("in/folder")).unwrap();
    let rgb = Pixels::F32((0..4 * 3 * 3).map(|v| v as f32 / 7.0).collect::<Vec<f32>>().into());
    let mut float_colour = Frame::with_channels(4, 3, Channels::Rgb, 1, rgb);
    float_colour.format = Format::Pfm;
    std::fs::write(dir.join("in/float.pfm"), stream(&[float_colour])).unwrap();
    let text = read_frames(&fixture_bytes("text.pgm")).remove(0);
    let two = stream(&[text.clone(), text]);
    std::fs::write(dir.join("in/cut.pgm"), [two, b"P5 9 9 255\n\x01\x02".to_vec()].concat()).unwrap();
    std::fs::write(dir.join("in/zz-garbage.pgm"), b"not an image at all").unwrap();
    let operands = [
        "in/a-truncated.jpg",
        "in/good1.pgm",
        "in/missing.pgm",
        "in/folder",
        "in/good2.pgm",
        "in/float.pfm",
        "in/cut.pgm",
        "in/good3.pgm",
        "in/zz-garbage.pgm",
    ];
    (operands.iter().map(|s| s.to_string()).collect(), vec!["good1", "good2", "good3"])
}

fn run(dir: &Path, args: &[&str], operands: &[String]) -> (Option<i32>, Vec<u8>, Vec<String>) {
    let out = tool("equalize")
        .current_dir(dir)
        .args(["--backend", "cpu"])
        .args(args)
        .args(operands)
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stderr).lines().map(String::from).collect();
    (out.status.code(), out.stdout, lines)
}

#[test]
fn every_file_is_worked_on_and_each_failure_is_one_line() {
    let dir = temp_dir("batch-keep-going");
    let (operands, good) = batch(&dir);
    for threads in ["1", "3"] {
        let out = format!("out{threads}");
        let template = format!("{out}/{{stem}}-{{i}}.png");
        let (code, _, lines) = run(&dir, &["--threads", threads, "-o", &template], &operands);
        assert_eq!(code, Some(2), "all were bad input: {lines:?}");
        let prefixes = [
            "equalize: in/a-truncated.jpg: frame 1: ",
            "equalize: in/missing.pgm: no such file",
            "equalize: in/folder: is a folder",
            "equalize: in/float.pfm: frame 1: --colour luma of a float colour frame",
            "equalize: in/cut.pgm: frame 3: ",
            "equalize: in/zz-garbage.pgm: frame 1: ",
            "equalize: 6 of 9 files failed",
        ];
        assert_eq!(lines.len(), prefixes.len(), "{lines:?}");
        for (line, prefix) in lines.iter().zip(prefixes) {
            assert!(line.starts_with(prefix), "--threads {threads}: {line:?} is not {prefix:?}...");
        }
        // Every good frame's output is there, and is what it is alone: the cut file's two good
        // frames too, written before its third failed.
        let mut written = names(&dir.join(&out));
        written.sort();
        assert_eq!(written, ["cut-1.png", "cut-2.png", "good1-1.png", "good2-1.png", "good3-1.png"]);
        for g in &good {
            let input = std::fs::read(dir.join(format!("in/{g}.pgm"))).unwrap();
            let alone = run_ok("equalize", "cpu", &["--png"], &input);
            assert!(std::fs::read(dir.join(format!("{out}/{g}-1.png"))).unwrap() == alone, "{g}");
        }
    }
}

#[test]
fn a_stream_to_standard_output_holds_every_good_frame_in_order() {
    let dir = temp_dir("batch-stdout");
    let (operands, good) = batch(&dir);
    let (code, stdout, lines) = run(&dir, &[], &operands);
    assert_eq!(code, Some(2));
    assert_eq!(lines.last().unwrap(), "equalize: 6 of 9 files failed");
    // good1, good2, the cut file's two good frames, good3.
    let alone = |bytes: &[u8]| read_frames(&run_ok("equalize", "cpu", &[], bytes));
    let file = |name: &str| std::fs::read(dir.join(format!("in/{name}.pgm"))).unwrap();
    let mut expected = alone(&file(good[0]));
    expected.extend(alone(&file(good[1])));
    let text = fixture_bytes("text.pgm");
    expected.extend(alone(&[text.clone(), text].concat()));
    expected.extend(alone(&file(good[2])));
    let got = read_frames(&stdout);
    assert_eq!(got.len(), expected.len());
    assert!(got.iter().zip(&expected).all(|(a, b)| a.pixels == b.pixels), "not the good frames in order");
}

#[test]
fn one_output_file_is_all_or_nothing_and_fail_fast_stops_at_the_first() {
    let dir = temp_dir("batch-one-file");
    let (operands, _) = batch(&dir);
    let (code, _, lines) = run(&dir, &["-o", "all.pgm"], &operands);
    assert_eq!((code, lines.len()), (Some(2), 7), "{lines:?}");
    assert!(!dir.join("all.pgm").exists(), "a run with a failed file leaves no file");
    // With --fail-fast a missing file fails the command before anything is read; the first bad
    // file read ends the run, nothing after it written.
    let (code, _, lines) = run(&dir, &["--fail-fast"], &operands);
    assert_eq!((code, lines), (Some(2), vec!["equalize: in/missing.pgm: no such file".to_string()]));
    let present: Vec<String> = operands
        .iter()
        .filter(|o| !o.contains("missing") && !o.contains("folder"))
        .skip(1)
        .cloned()
        .collect();
    let (code, stdout, lines) = run(&dir, &["--fail-fast", "-o", "out/{stem}.png"], &present);
    assert_eq!((code, stdout.len()), (Some(2), 0));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("equalize: in/float.pfm: frame 1: --colour luma of a float"), "{lines:?}");
    assert_eq!(names(&dir.join("out")), ["good1.png", "good2.png"], "the files before the first failure");
}

/// The machine's failures (here an output file that cannot be made) count as well, with exit 1.
#[test]
fn a_failure_to_write_one_file_is_that_file_s_and_exits_1() {
    let dir = temp_dir("batch-write");
    copy_fixtures(&dir, &[("camera.pgm", "a.pgm"), ("moon.pgm", "b.pgm"), ("coins.pgm", "c.pgm")]);
    std::fs::create_dir_all(dir.join("out/b.png")).unwrap();
    let (code, _, lines) =
        run(&dir, &["-o", "out/{stem}.png"], &["a.pgm".into(), "b.pgm".into(), "c.pgm".into()]);
    assert_eq!(code, Some(1), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("equalize: out/b.png: "), "{lines:?}");
    assert_eq!(lines[1], "equalize: 1 of 3 files failed");
    assert!(dir.join("out/a.png").is_file() && dir.join("out/c.png").is_file());
}
