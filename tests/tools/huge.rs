//! Frames of more than 2^31 pixels through every tool, on both backends. Ignored: each takes
//! gigabytes and a minute or two (`.carry/test huge_ --test-threads=2 --nocapture` runs them on
//! the GPU machine). Each input is written once to a file, the tools read it from there, and their
//! outputs are hashed as they stream out: the test process holds no frame.
//!
//! The frames are mostly flat with some structure (a diamond, stripes, a diagonal, a checkerboard
//! in the last rows, sparse dots), so that the CPU backend, single-threaded, stays within a
//! minute per tool, and every pixel index past 2^31 still meets edges, gradients and bins.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use assert_cmd::cargo::CommandCargoExt;
use histopipe_frame::{Format, Frame, Pixels};

use crate::common::*;

/// 65536 x 32769 = 2^31 + 65536 pixels: row 32768 starts at pixel 2^31.
const W: usize = 65536;
const H: usize = 32769;
/// A frame one row high of as many pixels: 32769 periods of [`period`], columns past 2^31.
const WIDE: usize = W * H;
/// Above every frame here and every output (pad's included), below a matrix of 256 counts per
/// column of the wide row.
const MAX_PIXELS: usize = 1 << 32;
/// Byte offsets from which [`Digest::nonzero_words_past`] counts.
const PAST: u64 = 1 << 31;

/// An input file, removed when the test ends, however it ends.
struct Input(PathBuf);

impl Input {
    /// Writes `header`, then `rows` rows made by `row(y, buffer)` (the buffer cleared for each).
    fn write(name: &str, header: &str, rows: usize, mut row: impl FnMut(usize, &mut Vec<u8>)) -> Input {
        let path = std::env::temp_dir().join(format!("histopipe-huge-{}-{name}", std::process::id()));
        let input = Input(path);
        let mut out = BufWriter::with_capacity(1 << 22, File::create(&input.0).unwrap());
        out.write_all(header.as_bytes()).unwrap();
        let mut buf = Vec::new();
        for y in 0..rows {
            buf.clear();
            row(y, &mut buf);
            out.write_all(&buf).unwrap();
        }
        out.flush().unwrap();
        input
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What a stream of bytes hashed to: a 64-bit hash of its 8-byte words (each step a bijection of
/// the state and of the word, so one differing word always changes it), its length, and how many
/// non-zero words start at byte 2^31 or later (for the edge maps: edges found past 2^31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Digest {
    bytes: u64,
    hash: u64,
    nonzero_words_past: u64,
}

#[derive(Default)]
struct Hasher {
    digest: Digest,
    pending: Vec<u8>,
}

impl Hasher {
    fn word(&mut self, at: u64, word: u64) {
        let d = &mut self.digest;
        d.hash = (d.hash ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
        d.nonzero_words_past += (at >= PAST && word != 0) as u64;
    }

    fn update(&mut self, mut data: &[u8]) {
        let start = self.digest.bytes - self.pending.len() as u64;
        self.digest.bytes += data.len() as u64;
        let mut at = start;
        if !self.pending.is_empty() {
            let take = (8 - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < 8 {
                return;
            }
            let word = u64::from_le_bytes(self.pending[..].try_into().unwrap());
            self.pending.clear();
            self.word(at, word);
            at += 8;
        }
        let words = data.chunks_exact(8);
        self.pending.extend_from_slice(words.remainder());
        for w in words {
            self.word(at, u64::from_le_bytes(w.try_into().unwrap()));
            at += 8;
        }
    }

    fn finish(mut self) -> Digest {
        if !self.pending.is_empty() {
            let at = self.digest.bytes - self.pending.len() as u64;
            self.pending.resize(8, 0);
            let word = u64::from_le_bytes(self.pending[..].try_into().unwrap());
            self.word(at, word);
        }
        self.digest
    }
}

struct Outcome {
    digest: Digest,
    code: Option<i32>,
    stderr: String,
    seconds: f64,
}

/// Runs `tool --backend backend --max-pixels MAX_PIXELS args < input`, hashing its output as it
/// comes (and saving it to `save`, if given).
fn run(tool: &str, backend: &str, args: &[&str], input: &Path, save: Option<&Path>) -> Outcome {
    let start = Instant::now();
    let mut child = Command::cargo_bin(tool)
        .unwrap_or_else(|e| panic!("binary {tool}: {e}"))
        .env_remove("HISTOPIPE_BACKEND")
        // The in-process GPU's huge frames (the service declines a raised --max-pixels anyway).
        .env("HISTOPIPE_SERVICE", "off")
        .args(["--backend", backend, "--max-pixels", &MAX_PIXELS.to_string()])
        .args(args)
        .stdin(File::open(input).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut out = child.stdout.take().unwrap();
    let mut saved = save.map(|p| BufWriter::new(File::create(p).unwrap()));
    let mut hasher = Hasher::default();
    let mut buf = vec![0u8; 1 << 22];
    loop {
        let k = out.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        hasher.update(&buf[..k]);
        if let Some(file) = &mut saved {
            file.write_all(&buf[..k]).unwrap();
        }
    }
    if let Some(mut file) = saved {
        file.flush().unwrap();
    }
    let status = child.wait().unwrap();
    Outcome {
        digest: hasher.finish(),
        code: status.code(),
        stderr: stderr.join().unwrap(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Runs `tool args` on `input` on both backends at once; asserts that both succeed with the same
/// output; returns the output's digest.
fn same_on_both(tool: &str, args: &[&str], input: &Input) -> Digest {
    let (cpu, gpu) = std::thread::scope(|s| {
        let cpu = s.spawn(|| run(tool, "cpu", args, &input.0, None));
        let gpu = s.spawn(|| run(tool, "gpu", args, &input.0, None));
        (cpu.join().unwrap(), gpu.join().unwrap())
    });
    for (name, o) in [("cpu", &cpu), ("gpu", &gpu)] {
        assert_eq!(o.code, Some(0), "{tool} {args:?} --backend {name}: {}", o.stderr);
    }
    assert_eq!(cpu.digest, gpu.digest, "{tool} {args:?}: the backends differ");
    eprintln!(
        "{tool} {args:?}: {} bytes out, the same on both backends; CPU {:.1} s, GPU {:.1} s",
        cpu.digest.bytes, cpu.seconds, gpu.seconds
    );
    cpu.digest
}

/// Runs `tool args` on `input` on both backends; asserts that both refuse it, exit status 2, with
/// the same one-line message holding `why`.
fn refused_by_both(tool: &str, args: &[&str], input: &Input, why: &str) {
    let cpu = run(tool, "cpu", args, &input.0, None);
    let gpu = run(tool, "gpu", args, &input.0, None);
    for o in [&cpu, &gpu] {
        assert_eq!(o.code, Some(2), "{tool} {args:?}: {}", o.stderr);
        assert!(o.stderr.contains(why) && o.stderr.lines().count() == 1, "{tool} {args:?}: {}", o.stderr);
    }
    assert_eq!(cpu.stderr, gpu.stderr);
    eprintln!("{tool} {args:?}: refused by both: {}", cpu.stderr.trim_end());
}

/// Row `y` of the 65536 x 32769 scene, 8-bit: flat 100, a diamond of 180, stripes, a dark
/// diagonal, a checkerboard in the bottom-right corner (across pixel 2^31) and a dot every 9973
/// pixels along a line of slope 1/37.
fn scene_row(y: usize, row: &mut [u8]) {
    row.fill(100);
    let reach = 5000usize.saturating_sub(y.abs_diff(16000));
    if reach > 0 {
        row[40000 - reach + 1..40000 + reach].fill(180);
    }
    for (x, v) in row.iter_mut().enumerate().take(1100).skip(1000) {
        *v = if (x / 8) % 2 == 0 { 200 } else { 50 };
    }
    let d = 2 * y;
    if d < W + 2 {
        row[d.saturating_sub(2)..(d + 3).min(W)].fill(20);
    }
    if y >= H - 70 {
        for (x, v) in row.iter_mut().enumerate().skip(W - 6000) {
            *v = if (x / 4 + y / 4) % 2 == 0 { 40 } else { 210 };
        }
    }
    for x in ((y * 37) % 9973..W).step_by(9973) {
        row[x] = 160;
    }
}

fn scene_8bit() -> Input {
    let mut row = vec![0u8; W];
    Input::write("scene8.pgm", &format!("P5\n{W} {H}\n255\n"), H, |y, buf| {
        scene_row(y, &mut row);
        buf.extend_from_slice(&row);
    })
}

/// The scene at 16 bits: each level times 256, plus x mod 61 (many distinct levels); big-endian.
fn scene_16bit() -> Input {
    let mut row = vec![0u8; W];
    Input::write("scene16.pgm", &format!("P5\n{W} {H}\n65535\n"), H, |y, buf| {
        scene_row(y, &mut row);
        buf.extend(
            row.iter().enumerate().flat_map(|(x, &v)| (v as u16 * 256 + (x % 61) as u16).to_be_bytes()),
        );
    })
}

/// One period of the wide row: flat 100 at both ends (wider than any blur's reach, so no edge
/// and no blur crosses from one period to the next), steps of several heights, a staircase, and
/// noise whose edges chain weak pixels to strong ones.
fn period() -> Vec<u8> {
    let mut q = vec![100u8; W];
    for (i, height) in [10u8, 20, 40, 80, 150].into_iter().enumerate() {
        q[1000 + 2000 * i..2000 + 2000 * i].fill(100 + height);
    }
    for (k, v) in q[12000..12010].iter_mut().enumerate() {
        *v = 100 + 15 * k as u8;
    }
    let mut s = 12345u32;
    for v in &mut q[20000..30000] {
        s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *v = (s >> 24) as u8;
    }
    q
}

fn single_row() -> Input {
    let q = period();
    Input::write("row.pgm", &format!("P5\n{WIDE} 1\n255\n"), H, |_, buf| buf.extend_from_slice(&q))
}

/// An edge map of the scene's size: a horizontal line, a vertical line, dots, and a line along
/// the last row (past pixel 2^31). No cell gets more than 65535 votes.
fn edge_map() -> Input {
    Input::write("edges.pgm", &format!("P5\n{W} {H}\n255\n"), H, |y, buf| {
        buf.resize(W, 0);
        if y == 30000 {
            buf[..40000].fill(255);
        }
        if y == H - 1 {
            buf[..20000].fill(255);
        }
        buf[60000] = 255;
        for x in ((y * 37) % 9973..W).step_by(9973) {
            buf[x] = 255;
        }
    })
}

#[test]
#[ignore]
fn huge_8bit_frames_through_every_tool() {
    let Some(_gpu) = gpu() else { return };
    let input = scene_8bit();
    for (tool, args) in [
        ("pad", &["--left", "3", "--top", "1", "--fill", "9"][..]),
        ("rotate", &["90"][..]),
        ("rotate", &["30"][..]),
        ("rotate", &["-17.5", "--bilinear", "--fill", "7"][..]),
        ("colhist", &[][..]),
        ("colhist", &["--rows", "--bins", "7"][..]),
        ("cdf", &["--bins", "5"][..]),
        ("equalize", &[][..]),
    ] {
        same_on_both(tool, args, &input);
    }
    for args in [&[][..], &["--l2", "--blur", "0.5", "--low", "20", "--high", "60"]] {
        let d = same_on_both("edges", args, &input);
        assert!(d.nonzero_words_past > 0, "edges {args:?}: no edges past pixel 2^31");
    }
}

#[test]
#[ignore]
fn huge_16bit_frames_through_every_tool() {
    let Some(_gpu) = gpu() else { return };
    let input = scene_16bit();
    for (tool, args) in [
        ("pad", &["--border", "2", "--fill", "65535"][..]),
        ("rotate", &["30", "--bilinear"][..]),
        ("colhist", &["--bins", "300"][..]),
        ("colhist", &["--rows", "--bins", "1000"][..]),
        ("cdf", &[][..]),
        ("equalize", &[][..]),
    ] {
        same_on_both(tool, args, &input);
    }
    refused_by_both("edges", &[], &input, "frame 1: 16-bit input");
}

/// A frame one row of 2^31 + 65536 pixels: x itself passes 2^31. The CPU backend of edges would
/// need about 100 GiB for rows that long (three rows of 32-bit gradients and magnitudes), so the
/// GPU's edges are compared with the CPU's on one period, repeated.
#[test]
#[ignore]
fn huge_single_row_through_every_tool() {
    let Some(_gpu) = gpu() else { return };
    let input = single_row();
    for (tool, args) in [
        ("pad", &["--left", "1", "--right", "2"][..]),
        ("rotate", &["90"][..]),
        ("rotate", &["-30", "--bilinear"][..]),
        ("colhist", &["--rows"][..]),
        ("cdf", &[][..]),
        ("equalize", &[][..]),
    ] {
        same_on_both(tool, args, &input);
    }
    refused_by_both("colhist", &[], &input, "frame 1: the output would be");
    refused_by_both("hough-vote", &[], &input, "frame 1: --rho-step 1 gives no distance bins");
    let mut one = Frame::new(W, 1, 255, Pixels::U8(period().into()));
    one.format = Format::Pgm;
    let one = stream(&[one]);
    for args in [&["--low", "30", "--high", "90"][..], &["--blur", "1", "--low", "10", "--high", "30"]] {
        let Pixels::U8(q) = read_frames(&run_ok("edges", "cpu", args, &one)).remove(0).pixels else {
            panic!("edges writes 8-bit frames")
        };
        assert!(q.contains(&255), "edges {args:?}: no edges in the period");
        let header = format!("P5\n{WIDE} 1\n255\n");
        let mut expected = Hasher::default();
        expected.update(header.as_bytes());
        for _ in 0..H {
            expected.update(&q);
        }
        let expected = expected.finish();
        let gpu = run("edges", "gpu", args, &input.0, None);
        assert_eq!(gpu.code, Some(0), "edges {args:?}: {}", gpu.stderr);
        assert_eq!(gpu.digest, expected, "edges {args:?}: the GPU differs from the CPU's period, repeated");
        eprintln!(
            "edges {args:?}: {} bytes, the CPU's period repeated; GPU {:.1} s",
            gpu.digest.bytes, gpu.seconds
        );
    }
}

#[test]
#[ignore]
fn huge_edge_maps_vote_alike() {
    let Some(_gpu) = gpu() else { return };
    let input = edge_map();
    for args in [&[][..], &["--strategy", "global"]] {
        same_on_both("hough-vote", args, &input);
    }
    let votes = Input(std::env::temp_dir().join(format!("histopipe-huge-{}-votes.pgm", std::process::id())));
    let cpu = run("hough-vote", "cpu", &[], &input.0, Some(&votes.0));
    assert_eq!(cpu.code, Some(0), "{}", cpu.stderr);
    let lines = same_on_both("hough-lines", &["--threshold", "1000"], &votes);
    assert!(lines.bytes > 60, "hough-lines found nothing");
}

/// The digest depends on the bytes alone, not on how reads split them, and sees a changed byte.
#[test]
fn digests_do_not_depend_on_how_the_stream_is_split() {
    let mut rng = rng();
    let data: Vec<u8> = (0..1000).map(|_| rng.u8(..)).collect();
    let whole = {
        let mut h = Hasher::default();
        h.update(&data);
        h.finish()
    };
    for _ in 0..50 {
        let mut h = Hasher::default();
        let mut rest = &data[..];
        while !rest.is_empty() {
            let (part, more) = rest.split_at(rng.usize(0..=rest.len().min(13)));
            h.update(part);
            rest = more;
        }
        assert_eq!(h.finish(), whole);
    }
    let mut changed = data.clone();
    changed[rng.usize(..data.len())] ^= 1 << rng.u32(..8);
    let mut h = Hasher::default();
    h.update(&changed);
    assert_ne!(h.finish().hash, whole.hash);
    assert_eq!(whole.bytes, 1000);
}
