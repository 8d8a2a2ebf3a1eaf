//! The tools' target: the real binaries (`pad`, `rotate`, ..., built by cargo) run on the mutated
//! input as separate processes, each under a wall-time guard.
//!
//! Each input goes to one invocation of [`INVOCATIONS`], chosen by its fingerprint: on standard
//! input, or as the side file of `equalize --table`, `--reference` or `threshold --mask` (with a
//! small PGM on standard input). Every run gets `--backend cpu --threads 1 --max-pixels`
//! [`MAX_PIXELS`]. The process must end by itself with status 0, 1 or 2: never by a signal (a
//! crash, or the guard's kill after [`Tools::wall`]), never 101 (a Rust panic's status); when it
//! fails, stderr is one line, and never says `panicked` or `internal error`. Its peak resident
//! memory (`wait4`'s `ru_maxrss`) is at most its baseline (the same tool on empty input) plus
//! twice the reader's bound for the input and 32 bytes a pixel of the tool's own work
//! ([`memory_bound`]), where that peak is the tool's own ([`Run::inherited`]); its CPU time at
//! most [`cpu_budget`], judged per input byte.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use histopipe_frame::{read_memory_bound, read_work_bound};

use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Checked;
use crate::target::Limits;

/// The tools' `--max-pixels`: 512x512, so that a debug build's tools run in well under a second.
pub const MAX_PIXELS: u64 = 1 << 18;

/// The most wall time a tool's run may take before the guard kills it; the campaign's watchdog
/// waits five times its time limit, which the tools' target sets to this ([`Limits`]).
pub const WALL: Duration = Duration::from_secs(60);

/// A tool and its arguments; `FILE` is replaced by the input's file (then a small PGM is the
/// standard input).
pub const INVOCATIONS: &[&[&str]] = &[
    &["pad"],
    &["rotate", "30"],
    &["colhist"],
    &["cdf"],
    &["radon", "--angles", "0:180:45"],
    &["equalize"],
    &["stretch"],
    &["clahe"],
    &["threshold"],
    &["edges"],
    &["hough-vote"],
    &["hough-lines"],
    &["hough-segments"],
    &["deskew"],
    &["equalize", "--table", "FILE"],
    &["equalize", "--reference", "FILE"],
    &["threshold", "--mask", "FILE"],
    // Issue 49's options: local thresholds and cv2.threshold's modes, border modes, flips and
    // centres, zscale and float output, Lab; the float paths of equalize, clahe and threshold are
    // reached by the float seeds (NPY, PFM, FITS, float TIFF, signed 16-bit) through these and the
    // plain invocations above.
    &["threshold", "--method", "gaussian:15,2", "--invert"],
    &["threshold", "--method", "mean:3,-2", "--mode", "binary-inv"],
    &["threshold", "--method", "sauvola"],
    &["threshold", "--method", "niblack:5,-0.5", "--mode", "binary-inv"],
    &["threshold", "--method", "triangle", "--mode", "binary-inv"],
    &["threshold", "--mode", "trunc"],
    &["threshold", "--method", "value:100", "--mode", "tozero-inv"],
    // K = 2: K = 3 of a dozen 16-bit pixels spanning ~46000 levels searches ~10^9 combinations
    // (within docs/threshold.md's 2^30), 2.4 s of release CPU from 200 bytes, judged slow.
    &["threshold", "--method", "multiotsu:2", "--mode", "binary-inv"],
    &["pad", "--mode", "reflect101", "--border", "5"],
    &["pad", "--mode", "wrap", "--left", "9", "--top", "1"],
    &["pad", "--mode", "reflect", "--border", "40"],
    &["pad", "--mode", "replicate"],
    &["rotate", "30", "--flip", "hv", "--centre", "0,0"],
    &["rotate", "90", "--bilinear", "--flip", "v", "--centre", "-1.5,2.5"],
    &["stretch", "--zscale", "--scale", "asinh"],
    &["stretch", "--zscale", "--contrast", "0.01", "--samples", "3", "--depth", "8"],
    &["stretch", "--out", "-1:1", "--saturate", "0"],
    &["equalize", "--colour", "lab"],
    &["equalize", "--colour", "each"],
    &["clahe", "--colour", "lab"],
    &["clahe", "--colour", "each"],
];

const SMALL_PGM: &[u8] = b"P5 4 4 255\n0123456789abcdef";

/// Tables for `equalize --table`: an identity, one that maps every level to 0, a colour one.
pub fn table_seeds() -> Vec<crate::seeds::Seed> {
    let table = |header: &str, f: &dyn Fn(u32) -> String| {
        let mut text = format!("{header}\n");
        (0..=255).for_each(|level| text.push_str(&format!("{level},{}\n", f(level))));
        text.into_bytes()
    };
    [
        table("level,mapped", &|l| l.to_string()),
        table("level,mapped", &|_| "0".into()),
        table("level,red,green,blue", &|l| format!("{l},{},{}", 255 - l, l / 2)),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, bytes)| crate::seeds::Seed { name: format!("table {i}"), input: Input::described(bytes) })
    .collect()
}

/// CPU seconds a pixel of the reader's work bound may cost a tool, in the tools' build.
fn rate(debug: bool) -> f64 {
    if debug {
        2e-6
    } else {
        1e-7
    }
}

/// The CPU time a tool may take on an input of `input_len` bytes: `rate` a pixel of
/// [`read_work_bound`] at [`MAX_PIXELS`], and half a second to start.
pub fn cpu_budget(debug: bool, input_len: usize) -> Duration {
    Duration::from_secs_f64(rate(debug) * read_work_bound(MAX_PIXELS, input_len) as f64 + 0.5)
}

/// The peak resident memory a tool may reach on an input of `input_len` bytes above `baseline`:
/// twice [`read_memory_bound`] (a frame read while the one before is worked on) and 32 bytes a
/// pixel of its own work (planes of floats, an accumulator, the output).
pub fn memory_bound(baseline: u64, input_len: usize) -> u64 {
    baseline + 2 * read_memory_bound(MAX_PIXELS, input_len) + 32 * MAX_PIXELS
}

/// Where the binaries are, and what each costs with nothing to do.
pub struct Tools {
    pub dir: PathBuf,
    /// A debug build: slower, its CPU budget larger.
    pub debug: bool,
    baselines: Mutex<Vec<(String, u64)>>,
}

static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();

impl Tools {
    /// The folder of the binaries: `$HISTOPIPE_FUZZ_TOOLS`, else target/release when it holds
    /// every tool, else target/debug.
    pub fn find() -> Result<Tools, String> {
        let has_all = |dir: &Path| INVOCATIONS.iter().all(|inv| dir.join(inv[0]).is_file());
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let dir = match std::env::var_os("HISTOPIPE_FUZZ_TOOLS") {
            Some(dir) => PathBuf::from(dir),
            None if has_all(&target.join("release")) => target.join("release"),
            None => target.join("debug"),
        };
        if !has_all(&dir) {
            return Err(format!(
                "{}: not every tool is there: build them (cargo build --release --bins), or name their \
                 folder in HISTOPIPE_FUZZ_TOOLS",
                dir.display()
            ));
        }
        let debug = dir.ends_with("debug");
        Ok(Tools { dir, debug, baselines: Mutex::new(Vec::new()) })
    }

    /// The tools found once for the whole run.
    pub fn shared() -> Result<&'static Tools, String> {
        TOOLS.get_or_init(Tools::find).as_ref().map_err(Clone::clone)
    }

    /// The longest a run may take: four times its CPU budget and 2 s, at most [`WALL`].
    pub fn wall(&self, input_len: usize) -> Duration {
        (cpu_budget(self.debug, input_len) * 4 + Duration::from_secs(2)).min(WALL)
    }

    /// The peak resident memory of `tool` on empty input, in bytes.
    fn baseline(&self, tool: &str, work: &Path) -> u64 {
        if let Some((_, b)) =
            self.baselines.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(t, _)| t == tool)
        {
            return *b;
        }
        // Where the peak is the spawner's (Run::inherited), the baseline is taken as that: a
        // larger bound, never a false finding.
        let b = self.run(&[tool], b"", work).map_or(64 << 20, |r| r.max_rss);
        self.baselines.lock().unwrap_or_else(|p| p.into_inner()).push((tool.to_owned(), b));
        b
    }

    /// Runs `invocation` on `input` in the folder `work`.
    pub fn run(&self, invocation: &[&str], input: &[u8], work: &Path) -> Result<Run, String> {
        let side = work.join("side");
        let stdin_path = work.join("stdin");
        let err_path = work.join("stderr");
        let uses_file = invocation.contains(&"FILE");
        if uses_file {
            std::fs::write(&side, input).map_err(|e| e.to_string())?;
        }
        std::fs::write(&stdin_path, if uses_file { SMALL_PGM } else { input }).map_err(|e| e.to_string())?;
        let mut command = Command::new(self.dir.join(invocation[0]));
        command
            .args(invocation[1..].iter().map(|a| if *a == "FILE" { side.as_os_str() } else { a.as_ref() }))
            .args(["--backend", "cpu", "--threads", "1", "--max-pixels", &MAX_PIXELS.to_string()])
            .current_dir(work)
            .env_remove("HISTOPIPE_RAW")
            .env_remove("HISTOPIPE_THREADS")
            .stdin(File::open(&stdin_path).map_err(|e| e.to_string())?)
            .stdout(Stdio::null())
            .stderr(File::create(&err_path).map_err(|e| e.to_string())?);
        // Its own process group, so the guard's kill reaches what it starts.
        command.process_group(0);
        let child = command.spawn().map_err(|e| format!("{}: {e}", invocation[0]))?;
        let pid = child.id() as libc::pid_t;
        let started = Instant::now();
        let wall = self.wall(input.len());
        let mut killed = false;
        let (status, usage) = loop {
            let mut status = 0;
            // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waits for our own child, writing into the two locals.
            let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if got == pid {
                break (status, usage);
            }
            if got < 0 {
                return Err(format!("wait4: {}", std::io::Error::last_os_error()));
            }
            if !killed && started.elapsed() > wall {
                // SAFETY: signals the child's own process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                killed = true;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let cpu = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        // SAFETY: a zeroed rusage is a valid value for getrusage to fill.
        let mut own: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: fills our own local.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut own) };
        Ok(Run {
            status: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            killed,
            cpu: cpu(usage.ru_utime) + cpu(usage.ru_stime),
            wall: started.elapsed(),
            max_rss: usage.ru_maxrss as u64 * 1024,
            inherited: own.ru_maxrss as u64 * 1024,
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        })
    }
}

/// How a tool's process ended.
#[derive(Debug, Clone)]
pub struct Run {
    pub status: Option<i32>,
    pub signal: Option<i32>,
    /// The guard killed it.
    pub killed: bool,
    pub cpu: Duration,
    pub wall: Duration,
    pub max_rss: u64,
    /// This process's own peak resident memory after the run. Linux keeps in a child's peak that
    /// of the memory it ran in before its exec, which is ours (shared by vfork, copied by fork: a
    /// spawner of 200 MB gives /bin/true a peak of 210 MB either way), so a `max_rss` at or below
    /// this may be ours and says nothing of the tool (the test process, after 50,000 inputs of
    /// the reader's campaign, passes 100 MB; stretch alone peaks at 5 MB); above it, it is the
    /// tool's own.
    pub inherited: u64,
    pub stderr: String,
}

/// What is wrong with `run`, a run of `tool` on an input of `input_len` bytes, if anything:
/// the kind of finding and the detail.
pub fn judge(run: &Run, debug: bool, baseline: u64, input_len: usize) -> Option<(FindingKind, String)> {
    let line = run.stderr.lines().next().unwrap_or("").chars().take(300).collect::<String>();
    if run.killed {
        return Some((
            FindingKind::Hang,
            format!("killed after {:.1} s of wall time", run.wall.as_secs_f64()),
        ));
    }
    if let Some(signal) = run.signal {
        return Some((FindingKind::Crash, format!("ended by signal {signal}: {line}")));
    }
    match run.status {
        Some(0..=2) => {}
        Some(101) => return Some((FindingKind::Panic, format!("exit status 101 (a panic): {line}"))),
        other => return Some((FindingKind::Crash, format!("exit status {other:?}: {line}"))),
    }
    let said = run.stderr.to_lowercase();
    if said.contains("panicked") || said.contains("internal error") {
        return Some((FindingKind::Panic, format!("stderr: {line}")));
    }
    if run.status != Some(0) && run.stderr.trim_end().lines().count() != 1 {
        let lines = run.stderr.trim_end().lines().count();
        return Some((
            FindingKind::Mismatch,
            format!("exit {:?} with {lines} lines on stderr: {line}", run.status),
        ));
    }
    let bound = memory_bound(baseline, input_len);
    if run.max_rss > bound && run.max_rss > run.inherited {
        let detail = format!(
            "peak resident memory {} bytes, over the bound of {bound} (baseline {baseline} + 2 * the reader's \
             bound for {input_len} bytes + 32 bytes a pixel)",
            run.max_rss
        );
        return Some((FindingKind::Alloc, detail));
    }
    let budget = cpu_budget(debug, input_len);
    if run.cpu > budget {
        let detail = format!(
            "{:.2} s of CPU, over the {:.2} s that {input_len} bytes allow at --max-pixels {MAX_PIXELS}",
            run.cpu.as_secs_f64(),
            budget.as_secs_f64()
        );
        return Some((FindingKind::Slow, detail));
    }
    None
}

thread_local! {
    /// This worker's folder for the input, the side file and stderr.
    static WORK: PathBuf = std::env::temp_dir().join(format!(
        "histopipe-fuzz-tools-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ).replace(['(', ')'], ""));
}

/// Runs the invocation `input` is given to and judges it, as the module says.
pub fn check(input: &Input, _limits: &Limits) -> Result<Checked, Finding> {
    let tools = Tools::shared().map_err(|e| Finding {
        kind: FindingKind::Crash,
        signature: "crash: no tools".into(),
        detail: e,
    })?;
    let invocation = INVOCATIONS[(input.fingerprint() % INVOCATIONS.len() as u64) as usize];
    let named = invocation.join(" ").replace("FILE", "F");
    WORK.with(|work| {
        let _ = std::fs::create_dir_all(work);
        let baseline = tools.baseline(invocation[0], work);
        let run = tools.run(invocation, &input.bytes, work).map_err(|e| Finding {
            kind: FindingKind::Crash,
            signature: format!("crash: cannot run {}", invocation[0]),
            detail: e,
        })?;
        if let Some((kind, detail)) = judge(&run, tools.debug, baseline, input.bytes.len()) {
            return Err(Finding { kind, signature: format!("{} in {named}", kind.name()), detail });
        }
        let mut shape = Digest::new();
        shape.bytes(named.as_bytes());
        shape.word(run.status.unwrap_or(-1) as u64);
        // The message after the tool's name and the frame's place.
        let message = run.stderr.rsplit(": frame ").next().unwrap_or_default();
        shape.bytes(&crate::target::message_shape(message));
        Ok(Checked {
            shape: shape.finish(),
            text: format!(
                "{named}: exit {:?}, {:.3} s CPU, {} KiB: {}",
                run.status,
                run.cpu.as_secs_f64(),
                run.max_rss >> 10,
                run.stderr.trim_end()
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_run() -> Run {
        Run {
            status: Some(2),
            signal: None,
            killed: false,
            cpu: Duration::from_millis(10),
            wall: Duration::from_millis(20),
            max_rss: 10 << 20,
            inherited: 8 << 20,
            stderr: "pad: frame 1: bad header\n".into(),
        }
    }

    /// Each check fires on the run it is for: planted signals, panics, kills, chatter, memory and
    /// CPU.
    #[test]
    fn every_kind_of_bad_run_is_judged() {
        let base = 10 << 20;
        assert_eq!(judge(&ok_run(), true, base, 100), None);
        let kind = |run: Run| judge(&run, false, base, 100).map(|(k, _)| k);
        assert_eq!(kind(Run { signal: Some(11), status: None, ..ok_run() }), Some(FindingKind::Crash));
        assert_eq!(kind(Run { status: Some(101), ..ok_run() }), Some(FindingKind::Panic));
        assert_eq!(kind(Run { status: Some(134), ..ok_run() }), Some(FindingKind::Crash));
        assert_eq!(kind(Run { killed: true, ..ok_run() }), Some(FindingKind::Hang));
        let chatty = Run { stderr: "pad: one\npad: two\n".into(), ..ok_run() };
        assert_eq!(kind(chatty), Some(FindingKind::Mismatch));
        let panicked =
            Run { stderr: "thread 'main' panicked at src/x.rs\n".into(), status: Some(1), ..ok_run() };
        assert_eq!(kind(panicked), Some(FindingKind::Panic));
        assert_eq!(kind(Run { max_rss: 1 << 30, ..ok_run() }), Some(FindingKind::Alloc));
        // A peak no higher than the spawner's own may be the spawner's: not the tool's finding.
        assert_eq!(kind(Run { max_rss: 1 << 30, inherited: 1 << 30, ..ok_run() }), None);
        assert_eq!(kind(Run { cpu: Duration::from_secs(30), ..ok_run() }), Some(FindingKind::Slow));
        assert_eq!(kind(Run { status: Some(0), stderr: String::new(), ..ok_run() }), None);
    }
}
