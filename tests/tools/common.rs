//! The harness every tool's tests share: fixtures, running a tool, frames in and out, random
//! frames, and the GPU gate.
#![allow(dead_code)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use assert_cmd::Command;
use histopipe_frame::{Channels, Format, Frame, FrameReader, FrameWriter, Pixels, ReadOptions, WriteOptions};
use histopipe_gpu::Gpu;

/// The repository's root.
/// How far a float frame of ours is from a peer's values (`radon`'s and `iradon`'s checks against
/// scikit-image): its largest difference as a share of the peer's largest magnitude, asserted to
/// be at most 1e-3; `what` names the case.
pub fn within_1e3_of_largest(what: &str, got: &Frame, expected: &[f64]) -> f64 {
    let Pixels::F32(values) = &got.pixels else { panic!("{what}: not a float frame") };
    let largest = expected.iter().fold(0f64, |m, v| m.max(v.abs()));
    let diff = values.iter().zip(expected).fold(0f64, |m, (&a, &b)| m.max((a as f64 - b).abs()));
    let relative = if largest > 0.0 { diff / largest } else { diff };
    assert!(relative <= 1e-3, "{what}: max |ours - peer| = {diff}, {relative} of the largest {largest}");
    relative
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

pub fn fixture_frame(name: &str) -> Frame {
    read_frames(&fixture_bytes(name)).remove(0)
}

/// The 8-bit PGM fixtures with real content.
pub const PGM_FIXTURES: &[&str] = &[
    "camera.pgm",
    "moon.pgm",
    "page.pgm",
    "coins.pgm",
    "brick.pgm",
    "text.pgm",
    "clock_motion.pgm",
    "chessboard.pgm",
    "microaneurysms.pgm",
];

/// A tool's command, with the environment cleared of settings that would change its behaviour.
pub fn tool(name: &str) -> Command {
    let mut cmd = Command::cargo_bin(name).unwrap_or_else(|e| panic!("binary {name}: {e}"));
    cmd.env_remove("HISTOPIPE_BACKEND");
    cmd.env_remove("HISTOPIPE_THREADS");
    cmd.env_remove("HISTOPIPE_RAW");
    // The GPU service is tested on its own (service.rs): here each tool opens its own GPU.
    cmd.env("HISTOPIPE_SERVICE", "off");
    cmd
}

/// A new, empty folder for one test's files, under the system's temporary folder; deleted when
/// the test is done with it, and kept, to look into, when the test fails.
pub fn temp_dir(test: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("histopipe-test-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    TempDir(dir)
}

/// A folder made by [`temp_dir`].
pub struct TempDir(PathBuf);

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for the failed test: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Copies fixtures into `dir` under other names (`(fixture, name)`, a name with folders makes
/// them); returns the copies' paths.
pub fn copy_fixtures(dir: &Path, files: &[(&str, &str)]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|(fixture_name, name)| {
            let to = dir.join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(fixture(fixture_name), &to).unwrap();
            to
        })
        .collect()
}

/// The names in a folder, sorted; none where there is no such folder.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Every file under `dir` (in its folders too), relative to it, sorted; none where there is no
/// such folder.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// `script` run by `bash -o pipefail` in `dir`, the tools first on PATH, on the CPU
/// (HISTOPIPE_BACKEND=cpu); a test adds or removes what else its commands must see.
pub fn shell(dir: &Path, script: &str) -> StdCommand {
    let mut cmd = StdCommand::new("bash");
    cmd.args(["-o", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path_with_tools())
        .env("HISTOPIPE_BACKEND", "cpu")
        .env("HISTOPIPE_SERVICE", "off");
    cmd
}

/// `$PATH` with the folder of the tools' binaries first, for tests that run shell command lines.
pub fn path_with_tools() -> std::ffi::OsString {
    let bin = assert_cmd::cargo::cargo_bin("pad");
    let mut paths = vec![bin.parent().unwrap().to_path_buf()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).unwrap()
}

/// Runs `name args` on `input` with `--backend backend`; asserts success; returns stdout.
pub fn run_ok(name: &str, backend: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let out =
        tool(name).args(["--backend", backend]).args(args).write_stdin(input.to_vec()).output().unwrap();
    assert!(
        out.status.success(),
        "{name} {args:?} --backend {backend} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `name args` on `input`, expects failure with `code`, returns stderr (one line, checked).
pub fn run_err(name: &str, args: &[&str], input: &[u8], code: i32) -> String {
    let out = tool(name).args(["--backend", "cpu"]).args(args).write_stdin(input.to_vec()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{name} {args:?}: stderr {stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
    assert!(stderr.starts_with(&format!("{name}: ")), "not prefixed with the tool's name: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

pub fn read_frames(bytes: &[u8]) -> Vec<Frame> {
    read_frames_with(bytes, ReadOptions::default())
}

pub fn read_frames_with(bytes: &[u8], options: ReadOptions) -> Vec<Frame> {
    let mut r = FrameReader::new(bytes, options);
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push(f);
    }
    out
}

/// Frames as one stream, each in its own container.
pub fn stream(frames: &[Frame]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut w = FrameWriter::new(&mut bytes, WriteOptions::default());
    for (i, f) in frames.iter().enumerate() {
        w.write(i + 1, f).unwrap();
    }
    drop(w);
    bytes
}

/// A frame of uniformly random samples in 0..=maxval (8-bit for maxval <= 255).
pub fn random_frame(rng: &mut fastrand::Rng, width: usize, height: usize, maxval: u16) -> Frame {
    let n = width * height;
    let pixels = if maxval <= 255 {
        Pixels::U8((0..n).map(|_| rng.u8(0..=maxval as u8)).collect())
    } else {
        Pixels::U16((0..n).map(|_| rng.u16(0..=maxval)).collect())
    };
    let mut f = Frame::new(width, height, maxval, pixels);
    f.format = Format::Pgm;
    f
}

/// A PAM frame of `channels`, its samples uniformly random in 0..=maxval (8-bit for maxval <= 255).
pub fn random_colour_frame(
    rng: &mut fastrand::Rng,
    width: usize,
    height: usize,
    channels: Channels,
    maxval: u16,
) -> Frame {
    let n = width * height * channels.count();
    let pixels = if maxval <= 255 {
        Pixels::U8((0..n).map(|_| rng.u8(0..=maxval as u8)).collect())
    } else {
        Pixels::U16((0..n).map(|_| rng.u16(0..=maxval)).collect())
    };
    let mut f = Frame::with_channels(width, height, channels, maxval, pixels);
    f.format = Format::Pam;
    f
}

/// Colour frames of `channels` that histogram operations find hard, of several sizes: random,
/// flat (one colour), a few colours, and skewed (most pixels near one colour).
pub fn hard_colour_frames(rng: &mut fastrand::Rng, channels: Channels, maxval: u16) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (w, h) in [(1, 1), (7, 1), (1, 5), (31, 17), (200, 130)] {
        frames.push(random_colour_frame(rng, w, h, channels, maxval));
        let n = channels.count();
        let palette: Vec<Vec<u16>> = (0..3).map(|_| (0..n).map(|_| rng.u16(0..=maxval)).collect()).collect();
        let base: Vec<u16> = (0..n).map(|_| rng.u16(0..=maxval.saturating_sub(8))).collect();
        for kind in 0..3 {
            let mut f = random_colour_frame(rng, w, h, channels, maxval);
            let samples: Vec<u16> = (0..w * h)
                .flat_map(|_| match kind {
                    0 => palette[0].clone(),
                    1 => palette[rng.usize(..3)].clone(),
                    _ if rng.u8(..) < 240 => {
                        base.iter().map(|&b| b + rng.u16(0..8).min(maxval - b)).collect()
                    }
                    _ => (0..n).map(|_| rng.u16(0..=maxval)).collect(),
                })
                .collect();
            f.pixels = if maxval <= 255 {
                Pixels::U8(samples.iter().map(|&s| s as u8).collect())
            } else {
                Pixels::U16(samples.into())
            };
            frames.push(f);
        }
    }
    frames
}

/// Colour frames for the GPU tests of the `--colour` modes: astronaut.png, rocket.jpg, every third
/// of [`hard_colour_frames`] in 8-bit RGBA and 16-bit RGB, and a 300x200 gray and alpha frame of
/// maxval 4000.
pub fn gpu_colour_frames(rng: &mut fastrand::Rng) -> Vec<Frame> {
    let mut frames = vec![fixture_frame("astronaut.png"), fixture_frame("rocket.jpg")];
    frames.extend(hard_colour_frames(rng, Channels::RgbAlpha, 255).into_iter().step_by(3));
    frames.extend(hard_colour_frames(rng, Channels::Rgb, 65535).into_iter().step_by(3));
    frames.push(random_colour_frame(rng, 300, 200, Channels::GrayAlpha, 4000));
    frames
}

/// A PGM frame of `f()`'s samples, row by row (8-bit for maxval <= 255).
pub fn frame_of(width: usize, height: usize, maxval: u16, f: &mut dyn FnMut() -> u16) -> Frame {
    let n = width * height;
    let pixels = if maxval <= 255 {
        Pixels::U8((0..n).map(|_| f() as u8).collect())
    } else {
        Pixels::U16((0..n).map(|_| f()).collect())
    };
    let mut frame = Frame::new(width, height, maxval, pixels);
    frame.format = Format::Pgm;
    frame
}

/// Four frames of `width` x `height` that histogram operations find hard: uniformly random, flat,
/// two-valued, and skewed: most samples in a band of 8 values, one in 256 / (256 - `in_band`)
/// anywhere.
pub fn hard_frames(
    rng: &mut fastrand::Rng,
    width: usize,
    height: usize,
    maxval: u16,
    in_band: u8,
) -> [Frame; 4] {
    let random = random_frame(rng, width, height, maxval);
    let c = rng.u16(0..=maxval);
    let flat = frame_of(width, height, maxval, &mut || c);
    let (a, b) = (rng.u16(0..=maxval), rng.u16(0..=maxval));
    let two_valued = frame_of(width, height, maxval, &mut || if rng.bool() { a } else { b });
    let base = rng.u16(0..=maxval.saturating_sub(8));
    let skewed = frame_of(width, height, maxval, &mut || {
        if rng.u8(..) < in_band {
            base + rng.u16(0..8).min(maxval - base)
        } else {
            rng.u16(0..=maxval)
        }
    });
    [random, flat, two_valued, skewed]
}

/// A fixture's Canny edge map, as `edges` writes it with its defaults: the stream and its frame.
pub fn edge_map(name: &str) -> (Vec<u8>, Frame) {
    let bytes = run_ok("edges", "cpu", &[], &fixture_bytes(name));
    let frame = read_frames(&bytes).remove(0);
    (bytes, frame)
}

/// Edge maps for the Hough tools' GPU tests: the Canny edges of four fixtures (page, brick,
/// chessboard, camera), a `w x h` map for each of `random` whose pixels are edges (255) at
/// `density`, and a 90x70 16-bit map, a tenth of it edges of random strength.
pub fn gpu_edge_maps(rng: &mut fastrand::Rng, random: &[(usize, usize, f64)]) -> Vec<Frame> {
    let mut maps: Vec<Frame> =
        ["page.pgm", "brick.pgm", "chessboard.pgm", "camera.pgm"].iter().map(|n| edge_map(n).1).collect();
    for &(w, h, density) in random {
        let px = (0..w * h).map(|_| if rng.f64() < density { 255 } else { 0 }).collect();
        maps.push(Frame::new(w, h, 255, Pixels::U8(px)));
    }
    let px16 = (0..90 * 70).map(|_| if rng.f64() < 0.1 { rng.u16(1..) } else { 0 }).collect();
    maps.push(Frame::new(90, 70, 65535, Pixels::U16(px16)));
    maps
}

/// A fresh random generator, its seed printed so a failure can be replayed (HISTOPIPE_SEED=...).
pub fn rng() -> fastrand::Rng {
    let seed = std::env::var("HISTOPIPE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("random seed {seed} (set HISTOPIPE_SEED to replay)");
    fastrand::Rng::with_seed(seed)
}

/// Held by every test using the GPU while it does: shared by most, taken alone by a test that
/// fills the GPU's memory on purpose (see [`gpu_alone`]), which would make the others fail.
static GPU_USERS: RwLock<()> = RwLock::new(());

/// A GPU, lent to one test: it dereferences to the [`Gpu`], and keeps the test's share of the
/// GPU until dropped. Tests that only run the tools bind it (`let Some(_gpu) = gpu()`) to keep
/// their share while the tools run.
pub struct GpuLease<G> {
    gpu: Gpu,
    _users: G,
}

impl<G> Deref for GpuLease<G> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        &self.gpu
    }
}

/// The GPU gate: a GPU if one is usable; `None` (test skipped) if not, unless
/// HISTOPIPE_REQUIRE_GPU=1, where a missing GPU fails the test.
pub fn gpu() -> Option<GpuLease<RwLockReadGuard<'static, ()>>> {
    let users = GPU_USERS.read().unwrap_or_else(|e| e.into_inner());
    open_gpu().map(|gpu| GpuLease { gpu, _users: users })
}

/// [`gpu`] for a test that must have the GPU to itself: it waits until no other test of this
/// process uses it, and keeps the others waiting until it is done.
pub fn gpu_alone() -> Option<GpuLease<RwLockWriteGuard<'static, ()>>> {
    let users = GPU_USERS.write().unwrap_or_else(|e| e.into_inner());
    open_gpu().map(|gpu| GpuLease { gpu, _users: users })
}

fn open_gpu() -> Option<Gpu> {
    histopipe_gpu::testing::gpu_or_skip()
}

/// Every tool binary: the names of the [`registry`].
pub fn tools() -> Vec<&'static str> {
    registry().iter().map(|t| t.name).collect()
}

/// A tool of the registry, tools.toml at the repository's root (what each field means: its header).
#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    /// Its entries in histopipe-bench.
    pub ops: Vec<&'static str>,
    /// What the benchmark's peers call the same work.
    pub peers: Vec<&'static str>,
    /// Whether it has GPU kernels.
    pub gpu: bool,
    /// Whether it takes float frames as they are.
    pub float: bool,
    /// What it reads: `frame`, `edges` or `accumulator`.
    pub input: &'static str,
    /// The extension of what it writes: `pgm` or `csv`.
    pub writes: &'static str,
    /// Its arguments in the whole-tool benchmark.
    pub bench: &'static str,
    /// Its tests' module in tests/tools/ (its name where tools.toml names none).
    pub tests: &'static str,
    /// Its runs under compute-sanitizer, `INPUTS|NAME|ARGS`.
    pub sanitize: Vec<&'static str>,
}

impl Tool {
    /// A tool named `name` with every field at its default.
    pub fn new(name: &'static str) -> Tool {
        Tool {
            name,
            ops: Vec::new(),
            peers: Vec::new(),
            gpu: false,
            float: false,
            input: "frame",
            writes: "pgm",
            bench: "",
            tests: name,
            sanitize: Vec::new(),
        }
    }

    /// The tools that make its input from a frame, in order.
    pub fn before(&self) -> &'static [&'static str] {
        match self.input {
            "edges" => &["edges"],
            "accumulator" => &["edges", "hough-vote"],
            _ => &[],
        }
    }
}

/// Every tool, in the registry's order, read from tools.toml in the subset of TOML its header
/// gives, as scripts/registry reads it; a line outside that subset, an unknown key or a value
/// that is not one of the key's fails the test.
pub fn registry() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| parse_registry(include_str!("../../tools.toml")))
}

/// The strings of a list's text (`"a", "b"`), or None if it holds anything else.
fn strings(mut text: &'static str) -> Option<Vec<&'static str>> {
    let mut values = Vec::new();
    loop {
        text = text.trim_start_matches([' ', ',']);
        if text.is_empty() {
            return Some(values);
        }
        let (value, rest) = text.strip_prefix('"')?.split_once('"')?;
        if value.contains('\\') {
            return None;
        }
        values.push(value);
        text = rest;
    }
}

pub fn parse_registry(text: &'static str) -> Vec<Tool> {
    let mut tools: Vec<Tool> = Vec::new();
    // The key of the list of one string a line being read, and where it opened.
    let mut open: Option<(&str, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((key, _)) = open {
            if line == "]" {
                open = None;
                continue;
            }
            let value = strings(line).filter(|v| v.len() == 1);
            let value = value.unwrap_or_else(|| registry_error(i, line));
            let tool = tools.last_mut().unwrap();
            match key {
                "ops" => tool.ops.extend(value),
                "peers" => tool.peers.extend(value),
                "sanitize" => tool.sanitize.extend(value),
                _ => registry_error(i, line),
            }
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            tools.push(Tool::new(name));
            continue;
        }
        let (Some(tool), Some((key, value))) = (tools.last_mut(), line.split_once('=')) else {
            registry_error(i, line)
        };
        let (key, value) = (key.trim(), value.trim());
        if value == "[" {
            open = Some((key, i));
            continue;
        }
        let list = || {
            let items = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')).and_then(strings);
            items.unwrap_or_else(|| registry_error(i, line))
        };
        let string = || match strings(value).as_deref() {
            Some(&[one]) if value.starts_with('"') && value.ends_with('"') => one,
            _ => registry_error(i, line),
        };
        let flag = || match value {
            "true" => true,
            "false" => false,
            _ => registry_error(i, line),
        };
        match key {
            "ops" => tool.ops = list(),
            "peers" => tool.peers = list(),
            "sanitize" => tool.sanitize = list(),
            "gpu" => tool.gpu = flag(),
            "float" => tool.float = flag(),
            "tests" => tool.tests = string(),
            "bench" => tool.bench = string(),
            "input" => match string() {
                v @ ("frame" | "edges" | "accumulator") => tool.input = v,
                _ => registry_error(i, line),
            },
            "writes" => match string() {
                v @ ("pgm" | "csv") => tool.writes = v,
                _ => registry_error(i, line),
            },
            _ => registry_error(i, line),
        }
    }
    if let Some((key, i)) = open {
        panic!("tools.toml:{}: the list {key} has no closing ]", i + 1);
    }
    tools
}

fn registry_error(index: usize, line: &str) -> ! {
    panic!("tools.toml:{}: not an entry of the registry (see its header): {line}", index + 1)
}

/// Runs a Python snippet with OpenCV, the peer implementation tests compare against, and returns
/// what it writes to stdout. The interpreter is `$HISTOPIPE_PYTHON` (scripts/env.sh sets it to
/// the python of .deps/venv, which holds cv2 and NumPy), else `python3`.
///
/// The snippet runs after `import sys, numpy as np, cv2`; `inputs` are written to temporary files
/// whose paths are `sys.argv[1:]`, and it writes its result bytes with `sys.stdout.buffer.write`.
/// If cv2 cannot be imported, the test fails with a message saying to run scripts/test (CI does):
/// a comparison with OpenCV is never skipped silently.
///
/// Example: `opencv("a = np.fromfile(sys.argv[1], np.uint8).reshape(2, 3)\n...", &[&bytes])`.
pub fn opencv(script: &str, inputs: &[&[u8]]) -> Vec<u8> {
    peer_python(Peer::OpenCv, script, inputs)
}

/// [`opencv`] with scikit-image imported too (`skimage`, and NumPy as `np`, cv2): a missing
/// scikit-image fails the test as a missing cv2 does.
pub fn skimage(script: &str, inputs: &[&[u8]]) -> Vec<u8> {
    peer_python(Peer::Skimage, script, inputs)
}

/// The Python libraries a peer snippet imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// NumPy and OpenCV.
    OpenCv,
    /// NumPy, OpenCV and scikit-image.
    Skimage,
}

fn peer_python(peer: Peer, script: &str, inputs: &[&[u8]]) -> Vec<u8> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    const MISSING: i32 = 97;
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir();
    let paths: Vec<PathBuf> = (0..inputs.len())
        .map(|i| dir.join(format!("histopipe-opencv-{}-{call}-{i}", std::process::id())))
        .collect();
    for (path, bytes) in paths.iter().zip(inputs) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let python = std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
    let (imports, names, what) = match peer {
        Peer::OpenCv => ("numpy as np, cv2", "OpenCV (cv2) and NumPy", "OpenCV"),
        Peer::Skimage => (
            "numpy as np, cv2, skimage, skimage.exposure",
            "scikit-image (skimage), OpenCV (cv2) and NumPy",
            "scikit-image",
        ),
    };
    let prelude = format!(
        "import sys\ntry:\n    import {imports}\nexcept ImportError as e:\n    \
         print(e, file=sys.stderr); sys.exit({MISSING})\n"
    );
    let out = StdCommand::new(&python).arg("-c").arg(prelude + script).args(&paths).output();
    for path in &paths {
        let _ = std::fs::remove_file(path);
    }
    let out =
        out.unwrap_or_else(|e| panic!("cannot run {python} ($HISTOPIPE_PYTHON): {e}; run scripts/test"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(MISSING) {
        panic!(
            "{names} cannot be imported by {python}: {}; run the tests through scripts/test, which \
             installs them (CI does)",
            stderr.trim()
        );
    }
    assert!(out.status.success(), "the {what} snippet failed: {stderr}");
    out.stdout
}

/// A TIFF of `w x h` float gray samples, as OpenCV encodes it (`cv2.imencode('.tif', float32)`).
pub fn float_tiff(samples: &[f32], w: usize, h: usize) -> Vec<u8> {
    let raw: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
    opencv(
        &format!(
            "a = np.fromfile(sys.argv[1], '<f4').reshape({h}, {w})\n\
             ok, b = cv2.imencode('.tif', a)\nassert ok\nsys.stdout.buffer.write(b.tobytes())"
        ),
        &[&raw],
    )
}

/// Runs tool `name` on `input` with `-o` a temporary `.tif` (float frames have no stdout
/// container yet), and reads back the frame it wrote.
pub fn run_to_tiff(name: &str, backend: &str, args: &[&str], input: &[u8]) -> Frame {
    let path = crate::opencv::temp_path(&format!("{name}-out.tif"));
    let mut all = args.to_vec();
    all.extend(["-o", path.to_str().unwrap()]);
    run_ok(name, backend, &all, input);
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    read_frames(&bytes).remove(0)
}

/// Whether two frames have the same size, channels and sample bits (NaN payloads included).
pub fn same_bits(a: &Frame, b: &Frame) -> bool {
    let bits = |f: &Frame| -> Vec<u32> {
        match &f.pixels {
            Pixels::F32(v) => v.iter().map(|s| s.to_bits()).collect(),
            p => (0..p.len()).map(|i| p.get(i) as u32).collect(),
        }
    };
    (a.width, a.height, a.channels, a.depth()) == (b.width, b.height, b.channels, b.depth())
        && bits(a) == bits(b)
}

/// Writes `mask` (one byte a pixel of a `w x h` frame) as a gray 8-bit PGM `dir/name`, as
/// `--mask` reads it; returns its path.
pub fn mask_file(dir: &Path, name: &str, w: usize, h: usize, mask: &[u8]) -> PathBuf {
    let mut f = Frame::new(w, h, 255, Pixels::U8(mask.to_vec().into()));
    f.format = histopipe_frame::Format::Pgm;
    let path = dir.join(name);
    std::fs::write(&path, stream(&[f])).unwrap();
    path
}

/// A random mask of a `w x h` frame: about half its pixels, a band of rows left out, non-zero
/// values other than 1 among them.
pub fn random_mask(rng: &mut fastrand::Rng, w: usize, h: usize) -> Vec<u8> {
    (0..w * h).map(|i| if i / w % 7 == 3 || rng.bool() { 0 } else { rng.u8(1..) }).collect()
}

/// The inputs of a `--mask` test against NumPy: a random `w x h` mask written to `mask.pgm` in a
/// temp folder, and frames of its size: 8-bit gray, 16-bit gray of maxval 4000, float (written
/// as a TIFF) and 8-bit RGB.
pub struct MaskInputs {
    /// The folder the mask file is in (removed when dropped).
    pub dir: TempDir,
    pub mask: Vec<u8>,
    /// The mask file's path, for `--mask`.
    pub path: String,
    pub gray: Frame,
    pub deep: Frame,
    pub floats: Vec<f32>,
    pub tiff: Vec<u8>,
    pub colour: Frame,
}

impl MaskInputs {
    pub fn new(test: &str, rng: &mut fastrand::Rng, w: usize, h: usize) -> MaskInputs {
        let dir = temp_dir(test);
        let mask = random_mask(rng, w, h);
        let path = mask_file(&dir, "mask.pgm", w, h, &mask).to_str().unwrap().to_owned();
        let gray = random_frame(rng, w, h, 255);
        let deep = random_frame(rng, w, h, 4000);
        let floats: Vec<f32> = (0..w * h).map(|i| (i as f32 * 0.37).sin() * 50.0 + (i % 13) as f32).collect();
        let tiff = float_tiff(&floats, w, h);
        let colour = random_colour_frame(rng, w, h, Channels::Rgb, 255);
        MaskInputs { dir, mask, path, gray, deep, floats, tiff, colour }
    }

    /// The samples as a NumPy script reads them from `sys.argv[1..=5]`: the mask's bytes, gray's,
    /// deep's (`<u2`), the floats (`<f4`) and colour's (interleaved).
    pub fn raw(&self) -> Vec<Vec<u8>> {
        let n = self.mask.len();
        let deep = (0..n).flat_map(|i| self.deep.pixels.get(i).to_le_bytes()).collect();
        let floats = self.floats.iter().flat_map(|v| v.to_le_bytes()).collect();
        let colour = (0..3 * n).map(|i| self.colour.pixels.get(i) as u8).collect();
        let gray = (0..n).map(|i| self.gray.pixels.get(i) as u8).collect();
        vec![self.mask.clone(), gray, deep, floats, colour]
    }
}

/// `tool --mask` (a 3x2 mask) on moon.pgm (512x512) is refused in one line that names the mask.
pub fn assert_mask_size_refused(tool: &str, args: &[&str]) {
    let dir = temp_dir(&format!("{tool}-mask-size"));
    let path = mask_file(&dir, "mask.pgm", 3, 2, &[1; 6]);
    let mut all = args.to_vec();
    all.extend(["--mask", path.to_str().unwrap()]);
    let e = run_err(tool, &all, &fixture_bytes("moon.pgm"), 2);
    assert!(e.contains(&format!("--mask {} is 3x2, and the frame 512x512", path.display())), "{e}");
}

/// Runs `cmd` on `input` with its input kept open until `want` bytes of its output have come:
/// a tool writes each frame of a stream once it is done, not when its input ends (a stream read
/// as it comes, from a camera or another tool). Fails, the tool killed, when they have not come
/// within a minute (a tool that held them back until the end); otherwise calls `meanwhile` with
/// what came, closes the input and returns the tool's whole output and its exit status.
pub fn output_before_the_end(
    cmd: &mut StdCommand,
    input: &[u8],
    want: usize,
    what: &str,
    meanwhile: impl FnOnce(&[u8]),
) -> (Vec<u8>, std::process::ExitStatus) {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::mpsc::{channel, RecvTimeoutError};
    use std::time::{Duration, Instant};
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (chunks, got) = channel();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            if chunks.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    while out.len() < want {
        match got.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => out.extend(chunk),
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("{what}: {} of {want} bytes came before the input's end", out.len());
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("{what}: the output ended after {} bytes, before the input's end", out.len())
            }
        }
    }
    meanwhile(&out);
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    out.extend(got.into_iter().flatten());
    (out, status)
}
