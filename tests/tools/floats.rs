//! Float frames with NaN, +inf and -inf sprinkled in (fresh, seeded) through every tool that takes
//! float frames: every NaN a tool writes is the quiet NaN 0x7FC00000, and with a GPU, `--backend
//! gpu` writes the CPU's bytes (issue 46, 3). A tool whose source says it takes floats
//! (`const FLOAT: bool = true`) and that is not run here fails the test.

use std::collections::BTreeSet;
use std::path::Path;

use histopipe_frame::{Channels, Format, Frame, Pixels};
use histopipe_ops::CANONICAL_NAN;

use crate::common::*;

/// What a tool writes of a float frame.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Writes {
    /// Frames (float ones, or integers made of floats).
    Frames,
    /// A table of text.
    Table,
    /// Nothing: it refuses a float frame with NaN or infinities, in a line that says this.
    Refuses(&'static str),
}

/// Each tool that takes float frames, what it writes, and its runs: the modes that copy samples,
/// that compute them (radon's steps of issue 46's cases), and `-nan` fills (a NaN with its sign
/// bit set, as parsed).
const RUNS: &[(&str, Writes, &[&[&str]])] = &[
    (
        "pad",
        Writes::Frames,
        &[&["--border", "3"], &["--border", "2", "--fill", "-nan"], &["--to", "70x90", "--fill", "nan"]],
    ),
    (
        "rotate",
        Writes::Frames,
        &[
            &["30"],
            &["30", "--bilinear"],
            &["-77.5", "--bilinear", "--expand", "--fill", "-nan"],
            &["90", "--expand"],
            &["180", "--bilinear", "--fill", "inf"],
        ],
    ),
    (
        "radon",
        Writes::Frames,
        &[&["--angles", "0:180:2"], &["--circle", "--angles", "0:180:4"], &["--angles=-30,0,45.5,90,1000"]],
    ),
    (
        "iradon",
        Writes::Frames,
        &[&["--size", "9"], &["--circle", "--filter", "hann"], &["--size", "20", "--filter", "none"]],
    ),
    ("stretch", Writes::Frames, &[&[], &["--depth", "16", "--scale", "asinh"], &["--saturate", "2"]]),
    ("colhist", Writes::Table, &[&[], &["--rows", "--bins", "16"], &["--range", "-1:2"]]),
    ("cdf", Writes::Table, &[&[], &["--bins", "7"], &["--range", "-1:2"]]),
    ("equalize", Writes::Frames, &[&["--colour", "each"], &["--colour", "gray"]]),
    ("clahe", Writes::Refuses("float frames take finite samples"), &[&["--colour", "each"]]),
    ("threshold", Writes::Frames, &[&[], &["--method", "triangle"], &["--mode", "binary-inv"]]),
];

/// A `w x h` float frame of `channels`: about 3% each of NaN, +inf and -inf, 1% of -0, the rest in
/// [-2, 3).
fn sprinkled(rng: &mut fastrand::Rng, w: usize, h: usize, channels: Channels) -> Frame {
    let samples: Vec<f32> = (0..w * h * channels.count())
        .map(|_| match rng.u8(..100) {
            0..3 => f32::NAN,
            3..6 => f32::INFINITY,
            6..9 => f32::NEG_INFINITY,
            9 => -0.0,
            _ => rng.f32() * 5.0 - 2.0,
        })
        .collect();
    let mut f = Frame::with_channels(w, h, channels, 1, Pixels::F32(samples.into()));
    f.format = Format::Pfm;
    f
}

/// The tools whose source under `src/` says `const FLOAT: bool = true`, by their `NAME`.
fn tools_taking_floats(dir: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            names.extend(tools_taking_floats(&path));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("const FLOAT: bool = true;") {
            let name = text.split("const NAME: &'static str = \"").nth(1).and_then(|t| t.split('"').next());
            names.insert(
                name.unwrap_or_else(|| panic!("{}: FLOAT without a NAME", path.display())).to_owned(),
            );
        }
    }
    names
}

#[test]
fn every_tool_that_takes_floats_is_run_here() {
    let run: BTreeSet<String> = RUNS.iter().map(|(t, _, _)| t.to_string()).collect();
    assert_eq!(tools_taking_floats(&repo().join("src")), run);
}

/// Every NaN of `bytes`' frames is 0x7FC00000; returns how many there are.
fn nans_are_canonical(bytes: &[u8], what: &str) -> usize {
    let mut nans = 0;
    for frame in read_frames(bytes) {
        if let Pixels::F32(v) = &frame.pixels {
            for s in v.iter().filter(|s| s.is_nan()) {
                assert_eq!(s.to_bits(), CANONICAL_NAN, "{what}: a NaN of bits {:#010x}", s.to_bits());
                nans += 1;
            }
        }
    }
    nans
}

#[test]
fn every_nan_written_is_the_quiet_nan_and_the_gpu_writes_the_cpus_bytes() {
    let mut rng = rng();
    // Gray frames, and a colour one (the tools that read gray read it so: its NaNs and infinities
    // go through the conversion).
    let mut frames: Vec<Frame> = [(1, 1), (2, 7), (37, 23), (64, 48), (23, 61)]
        .iter()
        .map(|&(w, h)| sprinkled(&mut rng, w, h, Channels::Gray))
        .collect();
    frames.push(sprinkled(&mut rng, 29, 31, Channels::Rgb));
    let input = stream(&frames);
    let gpu = gpu();
    let mut nans = 0;
    for &(tool, writes, runs) in RUNS {
        for args in runs {
            let what = format!("{tool} {args:?}");
            if let Writes::Refuses(line) = writes {
                let e = run_err(tool, args, &input, 2);
                assert!(e.contains(line), "{what}: {e}");
                continue;
            }
            let cpu = run_ok(tool, "cpu", args, &input);
            match writes {
                Writes::Frames => nans += nans_are_canonical(&cpu, &what),
                // Tables hold counts and finite edges: no cell is NaN.
                _ => {
                    let text = String::from_utf8(cpu.clone()).unwrap();
                    assert!(
                        !text.split([',', '\n']).any(|c| c.eq_ignore_ascii_case("nan")),
                        "{what}: {text}"
                    );
                }
            }
            if gpu.is_some() {
                assert!(run_ok(tool, "gpu", args, &input) == cpu, "{what}: --backend gpu differs from cpu");
            }
        }
    }
    assert!(nans > 0, "no NaN written: the test tests nothing");
}
