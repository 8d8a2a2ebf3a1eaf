//! What `auto` remembers of earlier runs while the service is up: for each kind of run, the wall
//! time a pixel of the latest runs done on the tool's own cores and of those done on the service.
//! A run of a kind that both have done goes wholly to the one that was faster.
//!
//! Frame by frame, `auto` cannot tell which is faster for a batch (see [`Mode::Auto`]): a frame's
//! time on the service leaves out what its copies cost the cores' other frames, and a frame's
//! time on the cores depends on how many share them. A whole run's time counts all of it, and
//! nothing the choice does not change. The runs compared are the user's own, on this machine:
//! `--backend cpu` runs and `--backend gpu` runs count too, so that after one of each, `auto`
//! does as the faster did.
//!
//! - **A kind of run** ([`Past::key`]): the tool; its command line but for its input files, its
//!   `--backend` and `--progress`, with `-o`'s path cut to its extension (the format written);
//!   standard input, or how many files (1, 2-3, 4-15, 16-63, 64 or more); the first frame's
//!   pixels (to half a power of two), channels and sample type.
//! - **A run's time**: from the start of its frames to its last output written, over the pixels
//!   of its frames. A run counts for the side most of its frames went to (the cores: where they
//!   were done on the CPU). Neither a run that failed, one that started the service, nor one for
//!   which the service loaded kernels counts: the service's start and its first use of a kernel
//!   (a compile of seconds on a fresh install) are paid once, not by the runs after.
//! - **The choice** ([`plan`]): known for both, the faster; known for one, the other is tried
//!   (except where the service is known and the frame is heavy: the cores may take seconds);
//!   known for neither, frame by frame as before (the run then counts for the side most of its
//!   frames went to, and the next run tries the other). The slower is tried again once it has
//!   not run for [`RETRY_AFTER`] runs of the kind, if it was within [`RETRY_WITHIN`] of the
//!   faster, so that a change of machine or load is seen.
//!
//! The times are kept in the service's folder, in a file beside its socket (`gpu-0.runs`): a line
//! a kind, `CORES_NS CORES_SINCE SERVICE_NS SERVICE_SINCE KIND` (`-` for a time not known), at
//! most [`KINDS_MOST`] lines, the least recently run dropped first. Tools write it at once: each
//! reads it, changes its line, and renames a copy of its own over it, so an update may be lost,
//! never a file be half written. A line that does not parse is dropped. `--backend cpu` updates a
//! file that is there, and makes none.
//!
//! [`Mode::Auto`]: super::client::Mode::Auto

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use histopipe_frame::{Depth, Frame};

use super::client::Remote;
use super::Address;
use crate::dispatch::{BackendChoice, Devices};
use crate::inputs::{Input, Inputs};

/// The most kinds of run a file keeps.
const KINDS_MOST: usize = 256;

/// The most bytes of the file read: [`KINDS_MOST`] lines of [`KIND_MOST`] bytes, and room.
const FILE_MOST: u64 = 1 << 20;

/// The longest kind kept, in bytes: a longer command line is not remembered.
const KIND_MOST: usize = 2048;

/// The slower backend is tried again once it has not run for this many runs of the kind...
pub(crate) const RETRY_AFTER: u32 = 8;

/// ... if its time was within this factor of the faster's.
pub(crate) const RETRY_WITHIN: f64 = 1.25;

/// Where a run's frames go under `auto` with the service up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every frame on this process's cores.
    Cores,
    /// Every frame to the service.
    Service,
    /// Each frame where it is measured to be done first ([`super::client::Mode::Auto`]).
    FrameByFrame,
}

/// Where a run's frames went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Went {
    Cores,
    Service,
}

/// One backend's time for a kind of run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Side {
    /// Nanoseconds a pixel, of the latest runs; `None`: not known.
    ns: Option<f64>,
    /// Runs of the kind since this backend's last.
    since: u32,
}

/// Both backends' times for a kind of run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Times {
    cores: Side,
    service: Side,
}

impl Times {
    /// Takes in a run that went to `went` at `ns` a pixel: the mean of it and the time before, so
    /// that one slow run moves the choice only as far as it is slow.
    fn record(&mut self, went: Went, ns: f64) {
        let (this, other) = match went {
            Went::Cores => (&mut self.cores, &mut self.service),
            Went::Service => (&mut self.service, &mut self.cores),
        };
        this.ns = Some(this.ns.map_or(ns, |old| (old + ns) / 2.0));
        this.since = 0;
        other.since = other.since.saturating_add(1);
    }
}

/// Where the next run of a kind goes, given its `times` (`None`: no run of it remembered);
/// `heavy`: its first frame is one the service takes before it is measured (see
/// [`super::client::Remote::frame`]).
fn plan(times: Option<&Times>, heavy: bool) -> Plan {
    let Some(t) = times else { return Plan::FrameByFrame };
    match (t.cores.ns, t.service.ns) {
        (None, None) => Plan::FrameByFrame,
        (Some(_), None) => Plan::Service,
        (None, Some(_)) if heavy => Plan::Service,
        (None, Some(_)) => Plan::Cores,
        (Some(cores), Some(service)) => {
            let (faster, slower, slower_side) = if service <= cores {
                (Plan::Service, Plan::Cores, t.cores)
            } else {
                (Plan::Cores, Plan::Service, t.service)
            };
            let close = cores.max(service) <= cores.min(service) * RETRY_WITHIN;
            if close && slower_side.since >= RETRY_AFTER {
                slower
            } else {
                faster
            }
        }
    }
}

/// What of a frame makes a kind of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pixels: usize,
    channels: usize,
    depth: Depth,
}

impl Shape {
    pub(crate) fn of(frame: &Frame) -> Shape {
        Shape { pixels: frame.pixel_count(), channels: frame.channels.count(), depth: frame.depth() }
    }
}

/// What a run did, as [`remember`] takes it in: its frames, the pixels of those it read (not of
/// frames held by the service), and its first frame's shape.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub frames: u64,
    pub pixels: u64,
    pub first: Option<Shape>,
}

impl Tally {
    pub(crate) fn count(&mut self, frame: Option<&Frame>) {
        self.frames += 1;
        if let Some(frame) = frame {
            self.pixels += frame.pixel_count() as u64;
            self.first.get_or_insert(Shape::of(frame));
        }
    }
}

/// Takes in a run that succeeded, `took` from its start to its last output: a run with the
/// service ([`Remote::went`] says where its frames went), or a `--backend cpu` run (`backend`) on
/// `devices`, where the file is there already. `kind`: the run's ([`kind`]).
pub(crate) fn remember(
    backend: BackendChoice,
    devices: &Devices,
    remote: Option<&Remote>,
    kind: Option<String>,
    tally: &Tally,
    took: Duration,
) {
    let (Some(kind), Some(first)) = (kind, tally.first) else { return };
    let (past, went, make) = match remote {
        Some(remote) => (remote.past().clone(), remote.went(tally.frames), true),
        None if backend == BackendChoice::Cpu => match Address::if_made(devices) {
            Ok(address) => (Past::new(address.runs, kind), Some(Went::Cores), false),
            Err(_) => return,
        },
        None => return,
    };
    if let Some(went) = went {
        past.record(&past.key(first), went, took, tally.pixels, make);
    }
}

/// The remembered runs of one service's tools (the file beside its socket), and the kind of this
/// run, but for its frames.
#[derive(Debug, Clone)]
pub(crate) struct Past {
    path: PathBuf,
    kind: String,
}

impl Past {
    /// The runs kept at `path`, for a run of `kind` ([`kind`]).
    pub(crate) fn new(path: PathBuf, kind: String) -> Past {
        Past { path, kind }
    }

    /// The kind of run whose first frame is of `shape`.
    pub(crate) fn key(&self, shape: Shape) -> String {
        // Half powers of two: 4K (8.3 Mpx) and 12 Mpx photos apart, 4K and 3840 x 2400 alike.
        let size = ((shape.pixels.max(1) as f64).log2() * 2.0).round() as u32;
        let depth = match shape.depth {
            Depth::U8 => "u8",
            Depth::U16 => "u16",
            Depth::F32 => "f32",
        };
        format!("{} px:{size} ch:{} {depth}", self.kind, shape.channels)
    }

    /// Where a run of kind `key` goes; `heavy` as [`plan`]'s.
    pub(crate) fn plan(&self, key: &str, heavy: bool) -> Plan {
        let kinds = read(&self.path);
        plan(kinds.iter().find(|(k, _)| k == key).map(|(_, t)| t), heavy)
    }

    /// Takes in a run of kind `key` that went to `went`, `took` for `pixels`; makes the file only
    /// where `make`. Best effort: a file that cannot be written is left as it is.
    pub(crate) fn record(&self, key: &str, went: Went, took: Duration, pixels: u64, make: bool) {
        if pixels == 0 || key.len() > KIND_MOST || (!make && !self.path.exists()) {
            return;
        }
        let ns = took.as_nanos() as f64 / pixels as f64;
        let mut kinds = read(&self.path);
        let mut times = match kinds.iter().position(|(k, _)| k == key) {
            Some(i) => kinds.remove(i).1,
            None => Times::default(),
        };
        times.record(went, ns);
        kinds.push((key.to_owned(), times));
        let drop = kinds.len().saturating_sub(KINDS_MOST);
        let _ = write(&self.path, &kinds[drop..]);
    }
}

/// The kind of a run of `tool` with command line `args` over `inputs`, but for its frames (see
/// the module's note): the words, a space between, each with its spaces and controls as `_`.
pub(crate) fn kind(tool: &str, args: &[OsString], inputs: &Inputs) -> String {
    // A set: `xargs` may name tens of thousands of files.
    let files: std::collections::HashSet<&std::ffi::OsStr> =
        (0..inputs.len()).filter_map(|i| inputs.get(i).and_then(Input::path)).map(Path::as_os_str).collect();
    let extension = |path: &str| {
        let ext = Path::new(path).extension().map(|e| e.to_string_lossy().to_lowercase());
        format!("-o .{}", ext.unwrap_or_default())
    };
    let mut words = vec![tool.to_owned()];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if files.contains(arg.as_os_str()) {
            continue;
        }
        let word = arg.to_string_lossy();
        match &*word {
            "-o" | "--output" => {
                words.push(extension(&args.next().map(|a| a.to_string_lossy()).unwrap_or_default()))
            }
            "--backend" => {
                args.next();
            }
            "--progress" => {}
            w if w.starts_with("--output=") => words.push(extension(&w["--output=".len()..])),
            w if w.starts_with("-o") && !w.starts_with("--") => words.push(extension(&w[2..])),
            w if w.starts_with("--backend=") => {}
            w => words
                .push(w.chars().map(|c| if c.is_whitespace() || c.is_control() { '_' } else { c }).collect()),
        }
    }
    let stdin_only = inputs.len() == 1 && matches!(inputs.get(0), Some(Input::Stdin));
    words.push(match inputs.len() {
        _ if stdin_only => "in:stream".to_owned(),
        n => format!("in:{}", [64, 16, 4, 2, 1].into_iter().find(|&b| n >= b).unwrap_or(1)),
    });
    words.join(" ")
}

/// The kinds and times in the file at `path`, in the order written (the most recently run last);
/// none if it is absent, unreadable or not a plain file (a FIFO would wait for a writer), and
/// without the lines that do not parse.
fn read(path: &Path) -> Vec<(String, Times)> {
    let mut text = String::new();
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .and_then(|f| f.metadata().map(|m| (f, m.is_file())));
    let Ok((file, true)) = opened else { return Vec::new() };
    if file.take(FILE_MOST).read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    let mut kinds: Vec<(String, Times)> = text.lines().filter_map(parse_line).collect();
    let drop = kinds.len().saturating_sub(KINDS_MOST);
    kinds.drain(..drop);
    kinds
}

/// One line of the file: `CORES_NS CORES_SINCE SERVICE_NS SERVICE_SINCE KIND`.
fn parse_line(line: &str) -> Option<(String, Times)> {
    let mut fields = line.splitn(5, ' ');
    let mut side = || -> Option<Side> {
        let ns = match fields.next()? {
            "-" => None,
            n => Some(n.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)?),
        };
        Some(Side { ns, since: fields.next()?.parse().ok()? })
    };
    let (cores, service) = (side()?, side()?);
    let key = fields.next()?;
    let fits = !key.is_empty() && key.len() <= KIND_MOST && !key.chars().any(char::is_control);
    fits.then(|| (key.to_owned(), Times { cores, service }))
}

fn format_line(key: &str, t: &Times) -> String {
    let ns = |s: &Side| s.ns.map_or("-".to_owned(), |v| format!("{v:.4}"));
    format!("{} {} {} {} {key}\n", ns(&t.cores), t.cores.since, ns(&t.service), t.service.since)
}

/// Writes `kinds` to `path` whole: a file of this process's beside it, renamed over it.
fn write(path: &Path, kinds: &[(String, Times)]) -> std::io::Result<()> {
    let text: String = kinds.iter().map(|(k, t)| format_line(k, t)).collect();
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::Pixels;

    fn times(cores: Option<f64>, cores_since: u32, service: Option<f64>, service_since: u32) -> Times {
        Times {
            cores: Side { ns: cores, since: cores_since },
            service: Side { ns: service, since: service_since },
        }
    }

    #[test]
    fn the_faster_is_chosen_once_both_are_known_and_the_unknown_is_tried_first() {
        assert_eq!(plan(None, false), Plan::FrameByFrame);
        assert_eq!(plan(None, true), Plan::FrameByFrame);
        assert_eq!(plan(Some(&times(None, 0, None, 0)), false), Plan::FrameByFrame);
        assert_eq!(plan(Some(&times(Some(2.0), 0, None, 1)), false), Plan::Service);
        assert_eq!(plan(Some(&times(None, 1, Some(2.0), 0)), false), Plan::Cores);
        // A heavy frame is not tried on the cores once the service is known.
        assert_eq!(plan(Some(&times(None, 1, Some(2.0), 0)), true), Plan::Service);
        assert_eq!(plan(Some(&times(Some(2.0), 0, Some(1.9), 1)), false), Plan::Service);
        assert_eq!(plan(Some(&times(Some(1.9), 1, Some(2.0), 0)), false), Plan::Cores);
        assert_eq!(
            plan(Some(&times(Some(2.0), 0, Some(2.0), 0)), false),
            Plan::Service,
            "a tie: the service"
        );
    }

    #[test]
    fn the_slower_is_tried_again_after_a_while_if_it_was_close() {
        let close = RETRY_WITHIN * 0.99;
        let far = RETRY_WITHIN * 1.01;
        let after = RETRY_AFTER;
        assert_eq!(plan(Some(&times(Some(close), after - 1, Some(1.0), 0)), false), Plan::Service);
        assert_eq!(plan(Some(&times(Some(close), after, Some(1.0), 0)), false), Plan::Cores);
        assert_eq!(plan(Some(&times(Some(far), after * 10, Some(1.0), 0)), false), Plan::Service);
        assert_eq!(plan(Some(&times(Some(1.0), 0, Some(close), after)), false), Plan::Service);
        assert_eq!(plan(Some(&times(Some(1.0), 0, Some(far), after)), false), Plan::Cores);
    }

    #[test]
    fn a_run_moves_its_side_halfway_and_counts_for_the_other() {
        let mut t = Times::default();
        t.record(Went::Cores, 4.0);
        assert_eq!(t, times(Some(4.0), 0, None, 1));
        t.record(Went::Cores, 2.0);
        assert_eq!(t, times(Some(3.0), 0, None, 2));
        t.record(Went::Service, 1.0);
        assert_eq!(t, times(Some(3.0), 1, Some(1.0), 0));
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("histopipe-past-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("gpu-0.runs")
    }

    #[test]
    fn runs_are_kept_a_line_a_kind_the_latest_last_and_bad_lines_dropped() {
        let path = scratch("keep");
        let past = Past::new(path.clone(), "threshold in:64".into());
        let frame = Frame::new(3840, 2160, 255, Pixels::U8(vec![0; 3840 * 2160].into()));
        let key = past.key(Shape::of(&frame));
        assert_eq!(key, "threshold in:64 px:46 ch:1 u8");
        let took = Duration::from_millis(100);
        past.record(&key, Went::Cores, took, 10_000_000, false);
        assert!(!path.exists(), "made without `make`");
        past.record(&key, Went::Cores, took, 0, true);
        assert!(!path.exists(), "a run of no pixels");
        past.record(&key, Went::Cores, took, 10_000_000, true);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("10.0000 0 - 1 {key}\n"));
        assert_eq!(past.plan(&key, false), Plan::Service);
        past.record("other kind", Went::Service, took, 100_000_000, false);
        past.record(&key, Went::Service, took, 20_000_000, false);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("- 1 1.0000 0 other kind\n10.0000 1 5.0000 0 {key}\n"));
        assert_eq!(past.plan(&key, false), Plan::Service);
        // Lines that do not parse are dropped; the others are read.
        let bad = ["x 0 - 0 k", "1 0 2 0", "-1 0 - 0 k", "nan 0 - 0 k", "1 y - 0 k", "1 0 - 0 \u{7}", ""];
        std::fs::write(&path, format!("{}\n{text}", bad.join("\n"))).unwrap();
        assert_eq!(read(&path).len(), 2);
        assert_eq!(past.plan(&key, false), Plan::Service);
        past.record(&key, Went::Cores, took, 1_000_000_000, false);
        past.record(&key, Went::Cores, took, 1_000_000_000, false);
        assert_eq!(past.plan(&key, false), Plan::Cores);
        // At most KINDS_MOST kinds, the least recently run dropped first.
        for i in 0..KINDS_MOST + 3 {
            past.record(&format!("kind {i}"), Went::Cores, took, 1000, false);
        }
        let kinds = read(&path);
        assert_eq!(kinds.len(), KINDS_MOST);
        assert_eq!(kinds[0].0, "kind 3");
        assert_eq!(past.plan(&key, false), Plan::FrameByFrame);
        // Not a plain file: nothing is read (a FIFO is not waited on), and a run replaces it.
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, &path, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
        assert_eq!(past.plan(&key, false), Plan::FrameByFrame);
        past.record(&key, Went::Cores, took, 1000, false);
        assert_eq!(read(&path).len(), 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_kind_leaves_out_files_backend_and_progress_and_keeps_the_format_written() {
        let args = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let inputs = |files: &[&str]| Inputs::new(files.iter().map(OsString::from));
        let a = kind(
            "equalize",
            &args(&["--backend", "gpu", "-o", "out/{stem}.PNG", "a.jpg", "b.jpg", "--progress"]),
            &inputs(&["a.jpg", "b.jpg"]),
        );
        assert_eq!(a, "equalize -o .png in:2");
        let b = kind(
            "equalize",
            &args(&["c.jpg", "--backend=cpu", "--output=elsewhere/{stem}.png", "d.jpg", "e.jpg"]),
            &inputs(&["c.jpg", "d.jpg", "e.jpg"]),
        );
        assert_eq!(b, "equalize -o .png in:2");
        assert_eq!(kind("equalize", &args(&["-oout/x.jpg"]), &inputs(&[])), "equalize -o .jpg in:stream");
        let many: Vec<String> = (0..70).map(|i| format!("f{i}.pgm")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let c =
            kind("threshold", &args(&[&["--method", "otsu", "a b\tc"][..], &many].concat()), &inputs(&many));
        assert_eq!(c, "threshold --method otsu a_b_c in:64");
    }
}
