//! Side files (issue 43): every file an option names beside the inputs (`--mask`, `equalize
//! --reference` and `--table`, the Hough tools' `--draw`, with and without `-o`'s fields) given as
//! `/dev/zero`, a FIFO without a writer and a folder, refused in one line and never read without
//! end; pipes the user names still read; a name read from a stream leads to a regular file alone,
//! and its bytes are never quoted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

/// Every tool and option that reads a side file, with the options it needs beside it.
const SIDE_FILES: &[(&str, &str, &[&str])] = &[
    ("equalize", "--mask", &[]),
    ("cdf", "--mask", &[]),
    ("colhist", "--mask", &[]),
    ("clahe", "--mask", &[]),
    ("threshold", "--mask", &[]),
    ("stretch", "--mask", &[]),
    ("equalize", "--reference", &[]),
    ("equalize", "--table", &[]),
    ("hough-lines", "--draw", &[]),
    ("hough-segments", "--draw", &[]),
];

/// Runs `name args` on `input`, with a guard against a hang far above any run's time (the test
/// never waits on it otherwise); expects exit status 2 and one line on stderr, which it returns.
fn refused(name: &str, args: &[&str], input: &[u8]) -> String {
    refused_in(Path::new("."), name, args, input)
}

/// [`refused`], run in the folder `dir`.
fn refused_in(dir: &Path, name: &str, args: &[&str], input: &[u8]) -> String {
    let out = tool(name)
        .current_dir(dir)
        .args(["--backend", "cpu"])
        .args(args)
        .write_stdin(input.to_vec())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{name} {args:?} (none: it hung, or was killed): {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{name} {args:?}: not one line: {stderr}");
    assert!(stderr.starts_with(&format!("{name}: ")), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A FIFO no process writes to, `dir/name`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let status = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
    path
}

/// `/dev/zero`, a FIFO without a writer and a folder, each with what the refusal says of it when
/// the user names it.
fn hostile(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    vec![
        (PathBuf::from("/dev/zero"), "is a device, not a regular file"),
        // A FIFO without a writer reads as empty: nothing of an image or a table.
        (fifo(dir, "fifo"), "empty"),
        (folder, "is a folder"),
    ]
}

/// Each side file given `/dev/zero`, a FIFO and a folder: refused before any input is read, in one
/// line naming the option and the file, at once.
#[test]
fn devices_fifos_and_folders_are_refused() {
    let dir = temp_dir("side-hostile");
    let input = stream(&[random_frame(&mut rng(), 16, 16, 255)]);
    for (path, why) in hostile(&dir) {
        let shown = path.to_str().unwrap();
        for &(name, flag, args) in SIDE_FILES {
            let e = refused(name, &[args, &[flag, shown]].concat(), &input);
            assert!(e.contains(&format!("{flag} {shown}")), "{name} {flag} {shown}: {e}");
            assert!(e.contains(why), "{name} {flag} {shown}: {e}");
        }
    }
}

/// The frame a stream names `source`: a 16x16 frame whose header says it came from `source`, made
/// into what `name` reads (an accumulator for hough-lines, an edge map for hough-segments) by the
/// tools before it, which keep the name.
fn named_by_stream(name: &str, source: &Path) -> Vec<u8> {
    let mut frame = random_frame(&mut rng(), 16, 16, 255);
    frame.source = Some(histopipe_frame::Source::new(source, 1));
    let edges = run_ok("edges", "cpu", &[], &stream(&[frame]));
    match name {
        "hough-lines" => run_ok("hough-vote", "cpu", &[], &edges),
        _ => edges,
    }
}

/// `--draw '{dir}/{name}'` where the stream names `/dev/zero` (through a link), a FIFO, a folder,
/// or a file that is no image: refused for that frame in one line, without a hang or the file's
/// bytes; a pipe is not read either, since a name from a stream leads to a regular file alone.
/// And as for `-o`, a stream's `{dir}` never leads out of the folder the tool works in: neither
/// absolute (`/dev/zero`, `/etc/...`) nor climbing (`..`).
#[test]
fn drawings_named_by_the_stream_are_regular_files_and_never_quoted() {
    let dir = temp_dir("side-stream");
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/secret.txt"), "P5 hunter2 1 255\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("in/zero")).unwrap();
    std::fs::create_dir(dir.join("in/folder")).unwrap();
    fifo(&dir.join("in"), "fifo");
    let cases = [
        ("in/zero", "is a device, not a regular file"),
        ("in/fifo", "is a pipe, not a regular file (the stream names regular files alone)"),
        ("in/folder", "is a folder"),
        ("in/secret.txt", "not a picture that can be read"),
        ("/dev/zero", "gives a {dir} that is an absolute path"),
        ("../side-stream/in/secret.txt", "gives a {dir} that leaves the folder the pattern names (..)"),
    ];
    for name in ["hough-lines", "hough-segments"] {
        for (path, why) in cases {
            let e =
                refused_in(&dir, name, &["--draw", "{dir}/{name}"], &named_by_stream(name, Path::new(path)));
            assert!(e.contains(why), "{name} {path}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("P5"), "{name} quotes the file: {e}");
        }
    }
}

/// A pipe the user names (a shell's `<(...)`) is read as before; so is a picture a stream names.
#[test]
fn pipes_the_user_names_are_read() {
    let dir = temp_dir("side-pipe");
    copy_fixtures(&dir, &[("moon.pgm", "moon.pgm"), ("chessboard.pgm", "chessboard.pgm")]);
    let by_file = shell(&dir, "equalize --mask moon.pgm moon.pgm").output().unwrap();
    let by_pipe = shell(&dir, "equalize --mask <(cat moon.pgm) moon.pgm").output().unwrap();
    assert!(by_pipe.status.success(), "{}", String::from_utf8_lossy(&by_pipe.stderr));
    assert_eq!(by_pipe.stdout, by_file.stdout);
    let script = "edges chessboard.pgm | hough-segments --draw <(cat chessboard.pgm) > a.png && \
                  edges chessboard.pgm | hough-segments --draw '{dir}/{name}' > b.png && cmp a.png b.png";
    let out = shell(&dir, script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A table file over 65,536 rows' bytes, and a picture to draw on over the bytes a frame of
/// `--max-pixels` may take, are refused in one line naming the file and the cap, not read whole.
#[test]
fn side_files_over_their_caps_are_refused() {
    let dir = temp_dir("side-caps");
    let table = dir.join("table.csv");
    let mut text = b"level,mapped\n0,0\n".to_vec();
    text.resize(65_536 * 64 + 1, b'\n');
    std::fs::write(&table, text).unwrap();
    let frame = stream(&[random_frame(&mut rng(), 16, 16, 255)]);
    let e = refused("equalize", &["--table", table.to_str().unwrap()], &frame);
    assert!(e.contains(&format!("--table {}: is longer than 4194304 bytes", table.display())), "{e}");
    assert!(e.contains("65,536 rows"), "{e}");
    let picture = dir.join("picture.pgm");
    let mut bytes = b"P5 4 4 255\n".to_vec();
    bytes.resize((1 << 20) + 4 * 16 + 1, 0);
    std::fs::write(&picture, bytes).unwrap();
    for name in ["hough-lines", "hough-segments"] {
        let e = refused(name, &["--max-pixels", "16", "--draw", picture.to_str().unwrap()], &[]);
        assert!(e.contains(&format!("--draw {}: is longer than 1048640 bytes", picture.display())), "{e}");
    }
}
