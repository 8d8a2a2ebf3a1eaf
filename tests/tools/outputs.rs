//! Hostile streams and paths: an output goes where the user said and nowhere else, whatever a
//! stream's header names, whatever links are planted at the target, however two paths to one
//! file are spelled; and a lost output is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use crate::common::*;

/// Every file under `dir`, with its bytes (links as their target's text).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(path, target.to_string_lossy().as_bytes().to_vec());
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A 16x16 frame whose header names `source` as the file it came from, as a stream would.
fn with_source(source: &str) -> Vec<u8> {
    let mut rng = rng();
    let frame = random_frame(&mut rng, 16, 16, 255);
    let bytes = stream(&[frame]);
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let escaped: String =
        source
            .bytes()
            .map(|b| {
                if b.is_ascii_graphic() && b != b'\\' {
                    (b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect();
    [&bytes[..header_end], format!("# histopipe-source {escaped} 1\n").as_bytes(), &bytes[header_end..]]
        .concat()
}

#[test]
fn a_source_named_by_a_stream_never_writes_outside_the_output_folder() {
    let dir = temp_dir("hostile-sources");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::write(dir.join("home/.bashrc"), "keep me").unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    // Each name that would leave `out/` (or name no file) through some field.
    let sources = [
        "../../home/.bashrc",
        "../home/x.pgm",
        "/tmp/abs.pgm",
        "d/...pgm",
        "d/..",
        "a\nb.pgm",
        "a\u{1b}b.pgm",
    ];
    // Every tool of tools.toml: the tools that make its input from a frame (its `input`), and the
    // extension of what it writes (`writes`).
    for t in registry() {
        let (name, before, ext) = (t.name, t.before(), t.writes);
        for source in sources {
            let mut input = with_source(source);
            for stage in before {
                input = run_ok(stage, "cpu", &[], &input);
            }
            for pattern in [
                format!("out/{{dir}}/{{stem}}.{ext}"),
                format!("out/{{dir}}/{{name}}-{{i}}.{ext}"),
                "out/{stem}".to_owned(),
                format!("{{dir}}/{{stem}}-x.{ext}"),
            ] {
                let before = snapshot(&dir);
                let out = tool(name)
                    .current_dir(dir.join("out"))
                    .args(["--backend", "cpu", "-o", &pattern.replacen("out/", "", 1)])
                    .write_stdin(input.clone())
                    .output()
                    .unwrap();
                let after = snapshot(&dir);
                let err = String::from_utf8_lossy(&out.stderr);
                for (path, bytes) in &after {
                    if before.get(path) != Some(bytes) {
                        assert!(
                            path.starts_with(dir.join("out")),
                            "{name} -o {pattern} with source {source:?} wrote {}",
                            path.display()
                        );
                    }
                }
                assert_eq!(std::fs::read(dir.join("home/.bashrc")).unwrap(), b"keep me");
                if out.status.code() != Some(0) {
                    assert_eq!(out.status.code(), Some(2), "{name} -o {pattern} {source:?}: {err}");
                    assert_eq!(err.lines().count(), 1, "one line: {err}");
                }
                // Whatever was written stays under out/: clear it for the next run.
                for path in after.keys().filter(|p| p.starts_with(dir.join("out"))) {
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
    }
}

#[test]
fn names_that_leave_the_folder_are_refused_with_one_line() {
    let dir = temp_dir("hostile-refused");
    let cases = [
        ("../../home/.bashrc", "out/{dir}/{stem}", "gives a {dir} that leaves the folder the pattern names"),
        ("/etc/passwd", "{dir}/{stem}.pgm", "gives a {dir} that is an absolute path"),
        ("d/...pgm", "out/{stem}", "gives a {stem} that is no file name"),
        ("d/a\0b.pgm", "out/{stem}.pgm", "with control characters"),
    ];
    for (source, pattern, why) in cases {
        let out = tool("rotate")
            .current_dir(&dir)
            .args(["0", "-o", pattern])
            .write_stdin(with_source(source))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source:?} {pattern}: {err}");
        assert!(err.contains(why) && err.contains("(read from the stream)"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(snapshot(&dir).is_empty(), "nothing written");
    // A relative folder from a stream is kept, inside the folder -o names.
    let out = tool("rotate")
        .current_dir(&dir)
        .args(["0", "-o", "out/{dir}/{stem}.pgm"])
        .write_stdin(with_source("scans/2024/a.jpg"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("out/scans/2024/a.pgm").is_file());
    // A folder the user named on the command line is the user's: beside the input, wherever.
    let data = temp_dir("hostile-refused-data");
    std::fs::copy(fixture("camera.pgm"), data.join("a.pgm")).unwrap();
    let input = data.join("a.pgm");
    let out = tool("rotate")
        .current_dir(&dir)
        .args(["0", "-o", "{dir}/{stem}-r.pgm", input.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(data.join("a-r.pgm").is_file());
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_the_target_is_replaced_not_followed() {
    use std::os::unix::fs::symlink;
    let dir = temp_dir("planted-link");
    std::fs::write(dir.join("victim"), "precious").unwrap();
    symlink(dir.join("victim"), dir.join("result.pgm")).unwrap();
    symlink(dir.join("victim"), dir.join("a.csv")).unwrap();
    symlink(dir.join("nothing-here"), dir.join("dangling.pgm")).unwrap();
    let camera = fixture("camera.pgm");
    for (name, target) in [("equalize", "result.pgm"), ("cdf", "a.csv"), ("equalize", "dangling.pgm")] {
        let out =
            tool(name).current_dir(&dir).args(["-o", target, camera.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{name} -o {target}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(std::fs::symlink_metadata(dir.join(target)).unwrap().is_file(), "{target} is the output now");
    }
    assert_eq!(std::fs::read(dir.join("victim")).unwrap(), b"precious");
    assert!(!dir.join("nothing-here").exists());
}

#[cfg(unix)]
#[test]
fn two_spellings_of_one_file_are_two_frames_for_one_file() {
    let dir = temp_dir("one-file");
    std::fs::create_dir_all(dir.join("data/x")).unwrap();
    std::fs::copy(fixture("camera.pgm"), dir.join("data/a.pgm")).unwrap();
    std::os::unix::fs::symlink("data", dir.join("linked")).unwrap();
    for second in ["./data/a.pgm", "data/x/../a.pgm", "linked/a.pgm"] {
        let out = tool("rotate")
            .current_dir(&dir)
            .args(["0", "-o", "{dir}/{stem}-out.pgm", "data/a.pgm", second])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{second}: {err}");
        assert!(err.contains("gives two frames one file"), "{err}");
    }
    // From a stream too: `x/../a.pgm` and `a.pgm`.
    let input = [with_source("x/../a.pgm"), with_source("a.pgm")].concat();
    let out = tool("rotate")
        .current_dir(&dir)
        .args(["0", "-o", "out/{name}.pgm"])
        .write_stdin(input)
        .output()
        .unwrap();
    // Both are `out/a.pgm.pgm`: {name} takes no folder, so the '..' before it does not matter.
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_closed_or_full_output_is_an_error() {
    let camera = fixture("camera.pgm");
    let bin = assert_cmd::cargo::cargo_bin("equalize");
    for (redirect, message) in [
        (">&-", "standard output is closed"),
        (">/dev/full", "No space left on device"),
        ("--version >&-", "standard output is closed"),
        ("--help >/dev/full", "No space left on device"),
    ] {
        let out = StdCommand::new("sh")
            .args([
                "-c",
                &format!("\"$0\" \"$1\" {redirect}"),
                bin.to_str().unwrap(),
                camera.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{redirect}: {err}");
        assert!(err.contains(message) && err.lines().count() == 1, "{redirect}: {err}");
    }
    // Nowhere to say it either: still a failure, and no panic's status.
    let out = StdCommand::new("sh")
        .args(["-c", "\"$0\" \"$1\" >/dev/full 2>/dev/full", bin.to_str().unwrap(), camera.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // /dev/null is an output like any other.
    let out = StdCommand::new("sh")
        .args(["-c", "\"$0\" \"$1\" >/dev/null", bin.to_str().unwrap(), camera.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn long_names_and_folders_in_the_way() {
    let dir = temp_dir("long-names");
    let camera = fixture("camera.pgm");
    // 80 characters of 3 bytes each and an extension: 244 bytes, a legal name.
    let long = format!("{}.pgm", "图".repeat(80));
    let out =
        tool("equalize").current_dir(&dir).args(["-o", &long, camera.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join(&long).is_file());
    std::fs::write(dir.join("f"), "").unwrap();
    let out = tool("equalize")
        .current_dir(&dir)
        .args(["-o", "f/x.pgm", camera.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err.trim(), "equalize: f/x.pgm: f is a file, not a folder");
}

#[test]
fn plots_take_the_fields_of_dash_o() {
    let dir = temp_dir("plot-fields");
    let (camera, moon) = (fixture("camera.pgm"), fixture("moon.pgm"));
    let inputs = [camera.to_str().unwrap(), moon.to_str().unwrap()];
    for (name, ext) in [("cdf", "csv"), ("colhist", "csv")] {
        let out = tool(name)
            .current_dir(&dir)
            .args(["-o", &format!("{name}/{{stem}}.{ext}"), "--plot", &format!("{name}/{{stem}}.png")])
            .args(inputs)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        for stem in ["camera", "moon"] {
            let png = std::fs::read(dir.join(format!("{name}/{stem}.png"))).unwrap();
            assert!(png.starts_with(b"\x89PNG"), "{name}: one figure per frame");
        }
        assert!(!dir.join(format!("{name}/{{stem}}.png")).exists(), "no file named after the pattern");
        // An unknown field, in -o or in --plot, before any input is read (none is given here).
        for args in [["-o", "x/{nope}.csv"], ["--plot", "x/{nope}.png"]] {
            let out = tool(name).current_dir(&dir).args(args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("unknown field {nope}"), "{err}");
        }
        // Two frames, one figure; and a figure on the table's own file.
        let out = tool(name)
            .current_dir(&dir)
            .args(["--plot", "p/{stem}.png"])
            .args([inputs[0], inputs[0]])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("gives two frames one file"));
        assert_eq!(out.status.code(), Some(2));
    }
    // Without a field, the first frame's figure only (as before).
    let out = tool("cdf").current_dir(&dir).args(["--plot", "one.svg"]).args(inputs).output().unwrap();
    assert!(out.status.success() && dir.join("one.svg").is_file());
}
