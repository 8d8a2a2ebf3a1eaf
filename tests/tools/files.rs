//! Files in, files out: `TOOL [OPTIONS] [FILE...]`, errors and outputs named after the input files,
//! `-o PATH` written atomically in the format its extension names, one file per frame with fields,
//! and every option checked before any input is read.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use histopipe_frame::{Format, Source};

use crate::common::*;

/// Copies fixtures into `dir` under new names.
fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The names in `dir`, sorted (hidden ones too: temporary files must not be left).
/// Runs `name args` in `dir` with nothing on standard input; returns (status, stdout, stderr).
fn run_in(dir: &Path, name: &str, args: &[&str]) -> (Option<i32>, Vec<u8>, String) {
    let out = tool(name).current_dir(dir).args(["--backend", "cpu"]).args(args).output().unwrap();
    (out.status.code(), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn files_are_one_stream_in_order_each_read_on_its_own() {
    let dir = temp_dir("stream");
    let files =
        copy_fixtures(&dir, &[("camera.pgm", "a.pgm"), ("rocket.jpg", "b.jpg"), ("moon.pgm", "-x.pgm")]);
    let piped: Vec<u8> = ["camera.pgm", "moon.pgm"].iter().flat_map(|n| fixture_bytes(n)).collect();
    // A JPEG takes the rest of a stream, so the JPEG goes last on standard input; as a file it is
    // just its own frame, wherever it is.
    let jpeg = run_ok("equalize", "cpu", &[], &fixture_bytes("rocket.jpg"));
    let both = run_ok("equalize", "cpu", &[], &piped);
    let frames = read_frames(&both);
    let (code, out, err) = run_in(&dir, "equalize", &["a.pgm", "b.jpg", "--", "-x.pgm"]);
    assert_eq!(code, Some(0), "{err}");
    let got = read_frames(&out);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].pixels, frames[0].pixels);
    assert_eq!(got[1].pixels, read_frames(&jpeg)[0].pixels);
    assert_eq!(got[2].pixels, frames[1].pixels);
    assert_eq!(got[1].source, Some(Source::from_stream("b.jpg", 1)), "each frame knows its file");
    assert_eq!(got[2].source, Some(Source::from_stream("-x.pgm", 1)), "'--' ends the options");
    // '-' is standard input, among the files.
    let out = tool("equalize")
        .current_dir(&dir)
        .args(["--backend", "cpu", "a.pgm", "-", arg(&files[2])])
        .write_stdin(fixture_bytes("camera.pgm"))
        .output()
        .unwrap();
    let got = read_frames(&out.stdout);
    assert_eq!(got.len(), 3);
    assert_eq!((got[1].source.clone(), got[1].pixels == frames[0].pixels), (None, true));
}

#[test]
fn errors_name_the_file_and_its_frame() {
    let dir = temp_dir("errors");
    copy_fixtures(&dir, &[("camera.pgm", "scans/a.pgm"), ("text.pgm", "scans/c.pgm")]);
    std::fs::write(dir.join("scans/b.jpg"), b"\xff\xd8\xff\xe0 not a jpeg").unwrap();
    let (code, out, err) = run_in(&dir, "equalize", &["scans/a.pgm", "scans/b.jpg", "scans/c.pgm"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("equalize: scans/b.jpg: frame 1: "), "{err}");
    assert!(err.ends_with("\nequalize: 1 of 3 files failed\n"), "{err}");
    assert_eq!(read_frames(&out).len(), 2, "the other files' frames are written (batches.rs)");
    let (code, out, err) =
        run_in(&dir, "equalize", &["--fail-fast", "scans/a.pgm", "scans/b.jpg", "scans/c.pgm"]);
    assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
    assert_eq!(read_frames(&out).len(), 1, "with --fail-fast, the frames before are written, none after");
    let (code, _, err) = run_in(&dir, "equalize", &["scans/a.pgm", "scans/nope.pgm"]);
    assert_eq!(
        (code, err.as_str()),
        (Some(2), "equalize: scans/nope.pgm: no such file\nequalize: 1 of 2 files failed\n")
    );
    let (code, out, err) = run_in(&dir, "equalize", &["scans"]);
    assert_eq!((code, out.len()), (Some(2), 0));
    assert!(err.contains("scans: is a folder"), "{err}");
    // Through a pipe, the source travels with the frame: a later tool names the original file.
    let padded = run_in(&dir, "pad", &["scans/a.pgm", "scans/c.pgm"]).1;
    let e = run_err("rotate", &["10", "--fill", "300"], &padded, 2);
    assert!(e.starts_with("rotate: scans/a.pgm: frame 1: --fill 300 is over"), "{e}");
    // Without a file name, the frame's number in the stream.
    let e = run_err("rotate", &["10", "--fill", "300"], &fixture_bytes("camera.pgm"), 2);
    assert!(e.starts_with("rotate: frame 1: --fill 300"), "{e}");
}

#[test]
fn output_files_are_written_whole_or_not_at_all() {
    let dir = temp_dir("atomic");
    copy_fixtures(&dir, &[("camera.pgm", "a.pgm"), ("moon.pgm", "b.pgm")]);
    std::fs::write(dir.join("bad.pgm"), b"P5 2 2 255\n\x00").unwrap();
    std::fs::write(dir.join("out.pgm"), b"old").unwrap();
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "out.pgm", "a.pgm", "bad.pgm"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(std::fs::read(dir.join("out.pgm")).unwrap(), b"old", "an old PATH is untouched");
    let (code, _, _) = run_in(&dir, "equalize", &["-o", "new.pgm", "a.pgm", "bad.pgm"]);
    assert_eq!(code, Some(2));
    assert_eq!(names(&dir), ["a.pgm", "b.pgm", "bad.pgm", "out.pgm"], "nothing new is left");
    // In place: the input is read whole before the output takes its name.
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "a.pgm", "a.pgm"]);
    assert_eq!(code, Some(0), "{err}");
    let equalized = run_ok("equalize", "cpu", &[], &fixture_bytes("camera.pgm"));
    assert_eq!(
        read_frames(&std::fs::read(dir.join("a.pgm")).unwrap())[0].pixels,
        read_frames(&equalized)[0].pixels
    );
    // A stream of frames to one file, and folders made as needed.
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "x/y/both.pam", "a.pgm", "b.pgm"]);
    assert_eq!(code, Some(0), "{err}");
    let both = read_frames(&std::fs::read(dir.join("x/y/both.pam")).unwrap());
    assert!(both.len() == 2 && both.iter().all(|f| f.format == Format::Pam));
    // A PNG holds one frame: a second is an error, and nothing is left.
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "both.png", "a.pgm", "b.pgm"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("b.pgm: frame 1: both.png is a PNG file, which holds one frame"), "{err}");
    assert!(err.contains("give -o a field for one file per frame, as in out/{stem}-{i}.png"), "{err}");
    assert!(!dir.join("both.png").exists());
    // From standard input, whose frames have no file name for {stem}: {n}.
    let two = [fixture_bytes("camera.pgm"), fixture_bytes("moon.pgm")].concat();
    let out = tool("equalize").current_dir(&dir).args(["-o", "both.png"]).write_stdin(two).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("frame 2: both.png is a PNG file") && err.contains("as in out/{n}.png"), "{err}");
    assert_eq!(names(&dir), ["a.pgm", "b.pgm", "bad.pgm", "out.pgm", "x"]);
}

#[test]
fn the_extension_gives_the_format() {
    let dir = temp_dir("formats");
    copy_fixtures(&dir, &[("dem16.pgm", "dem.pgm")]);
    let dem = fixture_frame("dem16.pgm");
    for (name, starts) in [
        ("e.pgm", &b"P5\n"[..]),
        ("e.pnm", b"P5\n"),
        ("e.pam", b"P7\n"),
        ("e.png", b"\x89PNG"),
        ("e.tif", b""),
        ("e.tiff", b""),
    ] {
        let (code, _, err) = run_in(&dir, "pad", &["--border", "0", "-o", name, "dem.pgm"]);
        assert_eq!(code, Some(0), "{name}: {err}");
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert!(bytes.starts_with(starts), "{name}");
        assert_eq!(read_frames(&bytes)[0].pixels, dem.pixels, "{name}: 16-bit samples unchanged");
    }
    let (code, _, _) = run_in(&dir, "pad", &["--border", "0", "-o", "e.raw", "dem.pgm"]);
    assert_eq!(code, Some(0));
    let raw = std::fs::read(dir.join("e.raw")).unwrap();
    assert_eq!(raw.len(), dem.pixel_count() * 2, "raw: the samples alone, 16-bit little-endian");
    assert_eq!(u16::from_le_bytes([raw[0], raw[1]]), dem.pixels.get(0));
    // Tables: CSV or TSV; colhist writes its matrix as an image for an image's extension.
    run_in(&dir, "cdf", &["-o", "c.tsv", "dem.pgm"]);
    assert!(std::fs::read_to_string(dir.join("c.tsv")).unwrap().starts_with("frame\tsource\tbin\tlower"));
    run_in(&dir, "colhist", &["-o", "h.png", "dem.pgm"]);
    assert_eq!(read_frames(&std::fs::read(dir.join("h.png")).unwrap())[0].height, 256);
    let edges = run_ok("edges", "cpu", &[], &fixture_bytes("brick.pgm"));
    let acc = run_ok("hough-vote", "cpu", &[], &edges);
    run_ok("hough-lines", "cpu", &["-o", arg(&dir.join("l.tsv"))], &acc);
    assert!(std::fs::read_to_string(dir.join("l.tsv"))
        .unwrap()
        .starts_with("frame\tsource\trho\ttheta\ttheta_degrees\tvotes\n"));
    // What does not fit the tool's output is refused before anything is read, and leaves nothing.
    let before = names(&dir);
    for (name, args, expected) in [
        ("equalize", &["-o", "e.csv"][..], "e.csv: this tool writes frames: give a .pgm"),
        ("equalize", &["-o", "e.gif"], "e.gif: histopipe does not write .gif files"),
        ("cdf", &["-o", "c.jpg"], "c.jpg: this tool writes a table"),
        ("equalize", &["--png", "-o", "e.pgm"], "--png contradicts -o"),
        ("cdf", &["-o", "c.png"], "c.png: this tool writes a table: give a .csv, .tsv or .npy file"),
        ("cdf", &["--png"], "--png does not apply: this tool writes a table"),
        ("cdf", &["--format", "tsv", "-o", "c.csv"], "--format tsv contradicts -o's extension .csv"),
        ("colhist", &["--format", "csv", "-o", "h.pgm"], "--format csv contradicts -o's extension .pgm"),
        ("hough-lines", &["-o", "l.png"], "this tool writes a table"),
    ] {
        let args: Vec<String> = args
            .iter()
            .map(|a| if a.contains('.') { dir.join(a).to_str().unwrap().to_owned() } else { a.to_string() })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = run_err(name, &args, b"not an image", 2);
        assert!(e.contains(expected), "{name} {args:?}: {e}");
    }
    assert_eq!(names(&dir), before);
}

#[test]
fn fields_make_one_file_per_frame() {
    let dir = temp_dir("fields");
    copy_fixtures(
        &dir,
        &[("camera.pgm", "scans/a.pgm"), ("rocket.jpg", "scans/b.jpg"), ("moon.pgm", "more/a.pgm")],
    );
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "out/{stem}.png", "scans/a.pgm", "scans/b.jpg"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(names(&dir.join("out")), ["a.png", "b.png"]);
    let a = read_frames(&std::fs::read(dir.join("out/a.png")).unwrap()).remove(0);
    let expected = read_frames(&run_ok("equalize", "cpu", &[], &fixture_bytes("camera.pgm"))).remove(0);
    assert_eq!(a.pixels, expected.pixels);
    // Beside the inputs, and numbered.
    let (code, _, err) =
        run_in(&dir, "cdf", &["-o", "{dir}/{stem}-{n:03}-{i}.csv", "scans/a.pgm", "more/a.pgm"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(dir.join("scans/a-001-1.csv").exists() && dir.join("more/a-002-1.csv").exists());
    let table = std::fs::read_to_string(dir.join("more/a-002-1.csv")).unwrap();
    assert!(table.starts_with("frame,source,bin,lower,"), "each file has its header: {table:.40}");
    assert!(table.contains("\n2,more/a.pgm,0,"), "rows name the frame and its file: {table:.80}");
    // Two frames for one file: an error naming both, before the second is worked on.
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "dup/{stem}.pgm", "scans/a.pgm", "more/a.pgm"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("more/a.pgm: frame 1: dup/a.pgm is also the output of frame 1 of scans/a.pgm"),
        "{err}"
    );
    assert_eq!(names(&dir.join("dup")), ["a.pgm"], "the frames before are written");
    // The hint names what the pattern lacks: {i} is there already, and these frames' are both 1.
    let (code, _, err) = run_in(&dir, "equalize", &["-o", "dup/{stem}-{i}.pgm", "scans/a.pgm", "more/a.pgm"]);
    assert_eq!(code, Some(2));
    assert!(err.lines().any(|l| l.ends_with("gives two frames one file (add {dir} or {n})")), "{err}");
    // Frames of standard input have no file name: {n} numbers them, {stem} cannot.
    let two = [fixture_bytes("camera.pgm"), fixture_bytes("moon.pgm")].concat();
    let out = tool("equalize")
        .current_dir(&dir)
        .args(["-o", "s/{n}.pgm"])
        .write_stdin(two.clone())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(names(&dir.join("s")), ["1.pgm", "2.pgm"]);
    let e = run_err("equalize", &["-o", "/nonexistent/{stem}.pgm"], &two, 2);
    assert!(e.contains("frame 1: -o /nonexistent/{stem}.pgm: the frame came from standard input"), "{e}");
}

/// The pipeline: the last tool names its outputs after the files the first one read.
#[test]
fn the_source_travels_through_a_pipeline() {
    let dir = temp_dir("pipeline");
    copy_fixtures(&dir, &[("camera.pgm", "scans/cam.pgm"), ("coins.pgm", "scans/coins.pgm")]);
    let script = "pad scans/*.pgm | rotate 30 | colhist -o out/{stem}.csv";
    let out = shell(&dir, script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&dir.join("out")), ["cam.csv", "coins.csv"]);
    let table = std::fs::read_to_string(dir.join("out/coins.csv")).unwrap();
    assert!(table.starts_with("frame,source,bin,lower,upper,"), "{table:.40}");
    assert!(
        table.contains("\n2,scans/coins.pgm,0,"),
        "the frame's source, through the pipeline: {table:.80}"
    );
}

/// An option's value, and the output, are checked before any input is read: with standard input
/// open and silent, the tool still fails at once.
#[test]
fn options_are_checked_before_any_input_is_read() {
    for (name, args, expected) in [
        ("edges", &["--blur", "0"][..], "--blur 0 must be in (0, 100]"),
        ("edges", &["--low", "-1"], "--low -1 must be a non-negative number"),
        ("hough-vote", &["--rho-step", "0"], "--rho-step 0 must be a positive number"),
        ("colhist", &["--bins", "0"], "--bins: must be at least 1"),
        ("equalize", &["-o", "x.csv"], "this tool writes frames"),
        ("pad", &["--threads", "0"], "--threads: bad thread count '0'"),
    ] {
        let mut child = tool_command(name)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(20), "{name} {args:?} waited for input");
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(expected), "{name} {args:?}");
    }
}

/// Killed while writing, a tool leaves no temporary file behind, and dies of the signal: every
/// signal whose default is to end the process (a timer's ALRM, USR1 as batch systems send before
/// a job's end), not only Ctrl-C's and TERM.
#[cfg(unix)]
#[test]
fn a_signal_leaves_no_temporary_file() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    for (name, number) in [("TERM", 15), ("HUP", 1), ("ALRM", 14), ("USR1", 10), ("USR2", 12), ("PROF", 27)] {
        let dir = temp_dir(&format!("signal-{name}"));
        let mut command = tool_command("equalize");
        command.current_dir(&dir).args(["-o", "out.pgm"]).stdin(Stdio::piped()).stderr(Stdio::piped());
        // The tool as a terminal starts it, the signal's default in place: a test run under
        // `nohup` or in a background job would pass on SIGHUP (or SIGINT) ignored, which the tool
        // rightly keeps ignored, and it would then wait for its input forever.
        // SAFETY: only signal(2), async-signal-safe, between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::signal(number, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let start = Instant::now();
        while names(&dir).is_empty() {
            assert!(start.elapsed() < Duration::from_secs(20), "no temporary file appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(names(&dir)[0].starts_with(".out.pgm.histopipe-"), "{:?}", names(&dir));
        // Standard input stays open until the tool is gone: at its end, the tool would stop anyway.
        let stdin = child.stdin.take();
        let killed = StdCommand::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status();
        assert!(killed.unwrap().success());
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(number), "SIG{name}: {:?}: {stderr}", out.status);
        assert_eq!(names(&dir), Vec::<String>::new(), "SIG{name}");
    }
}

/// A write past the file size limit (`ulimit -f`, as batch systems set) fails the tool with one
/// line and no temporary file left, rather than SIGXFSZ's core dump beside a stray file.
#[cfg(unix)]
#[test]
fn a_file_size_limit_is_an_error_that_leaves_no_temporary_file() {
    let dir = temp_dir("ulimit");
    let mut rng = rng();
    std::fs::write(dir.join("in.pgm"), stream(&[random_frame(&mut rng, 1000, 1000, 255)])).unwrap();
    // 100 blocks (of 512 or 1024 bytes) hold no 1 MB frame.
    let out =
        shell(&dir, "mkdir out && ulimit -f 100 && exec equalize -o out/big.pgm in.pgm").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {stderr}", out.status);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("equalize: out/big.pgm: File too large"), "{stderr}");
    assert_eq!(names(&dir.join("out")), Vec::<String>::new());
}

/// A block the system refuses (here under `ulimit -v`) in a tool's own work, past the reader:
/// one line and exit 1, no temporary file left, rather than Rust's abort.
#[cfg(unix)]
#[test]
fn out_of_memory_is_one_line_and_leaves_no_temporary_file() {
    let dir = temp_dir("oom");
    std::fs::write(dir.join("one.pgm"), b"P5 1 1 255\n\x07").unwrap();
    // 900 MB for the padded frame, in 600 MB of address space.
    let out =
        shell(&dir, "mkdir out && ulimit -v 600000 && exec pad --to 30000x30000 -o out/big.pgm one.pgm")
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {stderr}", out.status);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("pad: out of memory: the system refused a block of 900000000 bytes"),
        "{stderr}"
    );
    assert_eq!(names(&dir.join("out")), Vec::<String>::new());
}

/// One file of `-o`'s fields that is a named pipe whose reader goes away is a failure, with one
/// line naming it: a closed pipe is quiet success only on standard output.
#[cfg(unix)]
#[test]
fn a_named_pipe_output_whose_reader_goes_away_fails_the_run() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = temp_dir("fifo-out");
    let mut rng = rng();
    for name in ["a", "b", "c"] {
        // 1 MB a frame: more than a pipe holds, so the tool is still writing when the reader goes.
        std::fs::write(dir.join(format!("{name}.pgm")), stream(&[random_frame(&mut rng, 1000, 1000, 255)]))
            .unwrap();
    }
    std::fs::create_dir(dir.join("out")).unwrap();
    let fifo = dir.join("out/b.pgm");
    assert!(StdCommand::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let child = tool_command("pad")
        .current_dir(&dir)
        .args(["--threads", "1", "-o", "out/{stem}.pgm", "a.pgm", "b.pgm", "c.pgm"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the tool's first bytes are in the pipe, its reader goes away.
    let mut poll = libc::pollfd { fd: reader.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, valid for the call.
    while unsafe { libc::poll(&mut poll, 1, -1) } < 1 {}
    drop(reader);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].starts_with("pad: out/b.pgm: Broken pipe"), "{stderr}");
    assert_eq!(lines[1], "pad: 1 of 3 files failed");
    assert!(
        dir.join("out/a.pgm").is_file() && dir.join("out/c.pgm").is_file(),
        "the other files are written"
    );
}

/// Outputs that replace inputs not yet read (renumbering a folder in place: the shell sorts 1, 10,
/// 11, ..., 2, so frame 2's output is written over `2.pgm` before `2.pgm` is read): every input
/// is read as it was when the tool started.
#[test]
fn an_output_never_replaces_an_input_not_yet_read() {
    let dir = temp_dir("renumber");
    std::fs::create_dir(dir.join("frames")).unwrap();
    let write_all = || {
        for n in 1..=40u16 {
            std::fs::write(dir.join(format!("frames/{n}.pgm")), stream(&[frame_of(3, 2, 255, &mut || n)]))
                .unwrap();
        }
    };
    write_all();
    // The order the shell's glob gives in the C locale (byte order), named here so the test does
    // not depend on the locale's collation.
    let mut names: Vec<String> = (1..=40).map(|i| format!("frames/{i}.pgm")).collect();
    names.sort();
    for threads in ["1", "3"] {
        let args = [
            &["0", "--threads", threads, "-o", "frames/{n}.pgm"][..],
            &names.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat();
        let (code, _, err) = run_in(&dir, "rotate", &args);
        assert_eq!(code, Some(0), "{err}");
        // The frame written n-th was the n-th file named.
        let numbered: Vec<u16> = (1..=40)
            .map(|n| {
                read_frames(&std::fs::read(dir.join(format!("frames/{n}.pgm"))).unwrap())[0].pixels.get(0)
            })
            .collect();
        let expected: Vec<u16> = names
            .iter()
            .map(|name| name.trim_start_matches("frames/").trim_end_matches(".pgm").parse().unwrap())
            .collect();
        assert_eq!(numbered, expected, "--threads {threads}");
        // Back to each file holding its own number, for the next round.
        write_all();
    }
}

/// Many files through several workers: the same output, in the same order, as one at a time.
#[test]
fn a_batch_on_several_workers_is_the_batch_one_at_a_time() {
    let dir = temp_dir("batch");
    let mut rng = rng();
    let mut files = Vec::new();
    for i in 0..24 {
        let (w, h) = (rng.usize(1..300), rng.usize(1..200));
        let f = random_frame(&mut rng, w, h, if i % 3 == 0 { 1000 } else { 255 });
        let path = dir.join(format!("{i:02}.pgm"));
        std::fs::write(&path, stream(&[f])).unwrap();
        files.push(path.to_str().unwrap().to_owned());
    }
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    for (name, args) in
        [("equalize", &[][..]), ("rotate", &["33", "--bilinear"][..]), ("cdf", &["--bins", "7"][..])]
    {
        let one = run_ok(name, "cpu", &[args, &["--threads", "1"], &files].concat(), &[]);
        let many = run_ok(name, "cpu", &[args, &["--threads", "5"], &files].concat(), &[]);
        assert!(one == many, "{name}: the output depends on the number of workers");
        let auto = run_ok(name, "auto", &[args, &files].concat(), &[]);
        assert!(one == auto, "{name}: auto differs");
    }
}

/// The tool's command as a plain process, for tests that drive its standard input themselves.
fn tool_command(name: &str) -> StdCommand {
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin(name));
    cmd.env_remove("HISTOPIPE_BACKEND");
    cmd
}
