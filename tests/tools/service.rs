//! The GPU service (crates/cli/src/service, docs/histopipe-service.md) through its binaries: every tool's
//! bytes through it equal the CPU's in process; many callers at once; a service lost mid-frame or
//! absent; start, status, stop and the idle exit; another user's connection refused; hostile
//! clients. Each test has a service of its own, in a private folder of its own, stopped when the
//! test ends, however it ends ([`Service`]). The service runs the CPU backend
//! (HISTOPIPE_SERVICE_BACKEND=cpu) everywhere, so machines without a GPU test it too; where a GPU
//! is usable each test runs again on the real GPU service.

use std::fs::Permissions;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use histopipe_frame::{Channels, Format, Frame, Pixels};

use crate::common::*;

/// What the service runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// The CPU backend (HISTOPIPE_SERVICE_BACKEND=cpu): the client's own fallback is the CPU too.
    Cpu,
    /// The GPU: only where one is usable.
    Gpu,
}

/// Runs `test` with the service on the CPU, then, where a GPU is usable (or required:
/// HISTOPIPE_REQUIRE_GPU), on the GPU, holding the test's share of it meanwhile.
fn each_backend(mut test: impl FnMut(Backend)) {
    test(Backend::Cpu);
    if let Some(_gpu) = gpu() {
        test(Backend::Gpu);
    }
}

/// How long anything a test waits for may take: far longer than it ever should, even on a loaded
/// 2-core machine, so that only a service that never gets there fails the wait.
const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `done` until it holds; fails the test, saying `what`, past [`PATIENCE`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "still waiting after {PATIENCE:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One test's service: its private folder (HISTOPIPE_SERVICE_DIR, mode 0700), the environment
/// its commands get, and, once [`Service::serve`] started it, the service's process. Dropped, it
/// stops whatever service runs in its folder (started by the test or by a tool), pass or fail.
struct Service {
    dir: TempDir,
    backend: Backend,
    /// More variables for the tools' commands (`HISTOPIPE_SERVICE_BIN`, ...).
    env: Vec<(&'static str, String)>,
    child: Option<Child>,
}

impl Service {
    fn new(test: &str, backend: Backend) -> Service {
        // Short: the socket's path must stay under 100 bytes.
        let tag = match backend {
            Backend::Cpu => "c",
            Backend::Gpu => "g",
        };
        // A folder no earlier service of the test used: one started late by a tool of an
        // earlier run could still bind its socket there.
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = temp_dir(&format!("svc-{test}-{tag}{n}"));
        std::fs::set_permissions(&*dir, Permissions::from_mode(0o700)).unwrap();
        Service { dir, backend, env: Vec::new(), child: None }
    }

    /// Gives the tools' commands `key=value` too.
    fn with_env(mut self, key: &'static str, value: &str) -> Service {
        self.env.push((key, value.to_owned()));
        self
    }

    /// `cmd` with the environment of this test's service, cleared of what would change it.
    fn apply<'c>(&self, cmd: &'c mut StdCommand) -> &'c mut StdCommand {
        for key in [
            "HISTOPIPE_BACKEND",
            "HISTOPIPE_THREADS",
            "HISTOPIPE_RAW",
            "HISTOPIPE_SERVICE",
            "HISTOPIPE_SERVICE_FAIL_AT",
            "HISTOPIPE_SERVICE_BIN",
            "HISTOPIPE_SERVICE_BACKEND",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("HISTOPIPE_SERVICE_DIR", &*self.dir);
        if self.backend == Backend::Cpu {
            cmd.env("HISTOPIPE_SERVICE_BACKEND", "cpu");
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// A tool's command that hands its frames to this service (with `--backend gpu`).
    fn tool(&self, name: &str) -> StdCommand {
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin(name));
        self.apply(&mut cmd);
        cmd
    }

    /// `histopipe-service args`, for this service.
    fn command(&self, args: &[&str]) -> StdCommand {
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("histopipe-service"));
        self.apply(&mut cmd).args(args);
        cmd
    }

    /// `histopipe-service status`'s words (it must succeed).
    fn status(&self) -> String {
        let out = self.command(&["status"]).output().unwrap();
        assert!(out.status.success(), "status: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// `histopipe-service status`'s words, if it succeeds: it fails while the service is full
    /// (its connection is refused as one more session).
    fn try_status(&self) -> Option<String> {
        let out = self.command(&["status"]).output().unwrap();
        out.status.success().then(|| String::from_utf8(out.stdout).unwrap())
    }

    /// The service's process, if one answers.
    fn pid(&self) -> Option<u32> {
        field(&self.status(), "pid").map(|p| p.parse().unwrap())
    }

    /// Starts `histopipe-service serve --idle IDLE` (with `env` too) as this test's child, and
    /// waits until it answers; its pid.
    fn serve(&mut self, idle: &str, env: &[(&str, &str)]) -> u32 {
        let log = std::fs::File::create(self.dir.join("serve.log")).unwrap();
        let child = self
            .command(&["serve", "--idle", idle])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        self.child = Some(child);
        wait_for("the service to answer", || self.try_status().is_some_and(|s| field(&s, "pid").is_some()));
        assert_eq!(self.pid(), Some(pid), "the service that answers is the one started");
        pid
    }

    /// Whether a service answers, with the same pid as before, and still gives a tool's frames
    /// the CPU's bytes.
    fn still_serves(&self, pid: u32, after: &str) {
        assert_eq!(self.pid(), Some(pid), "after {after}: the service no longer answers, or is another");
        let mut rng = rng();
        let input = stream(&[random_frame(&mut rng, 37, 23, 255), random_frame(&mut rng, 20, 31, 1000)]);
        let cpu = run_ok("equalize", "cpu", &[], &input);
        let out = run(self.tool("equalize").args(["--backend", "gpu", "--progress"]), &input);
        assert_served(&out, "equalize", 2, &format!("after {after}"));
        assert!(out.stdout == cpu, "after {after}: equalize through the service differs from the CPU");
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // A test may have opened the folder to others; the service's commands use only a private one.
        let _ = std::fs::set_permissions(&*self.dir, Permissions::from_mode(0o700));
        let _ = self.command(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The value of the `key value` line `key` of a status.
fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
}

/// Runs `cmd` on `input` (stdin), stdout and stderr kept.
fn run(cmd: &mut StdCommand, input: &[u8]) -> Output {
    let child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    finish(child, input)
}

/// Feeds `input` to a child spawned with piped stdin, stdout and stderr, and waits for it.
fn finish(mut child: Child, input: &[u8]) -> Output {
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A tool that fails early closes its input: a write cut short is its business.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&input)));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The frames `--progress` says the service did.
fn served(out: &Output, tool: &str) -> usize {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{tool}: {err}");
    let rest =
        err.split(&format!("{tool}: frames on the GPU service ")).nth(1).unwrap_or_else(|| panic!("{err}"));
    rest.split(';').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{err}"))
}

/// `out` is a success whose `--progress` says the service did all `frames` of `tool`, and whose
/// stderr says nothing of frames done in the tool's own process.
fn assert_served(out: &Output, tool: &str, frames: usize, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {tool} failed: {err}");
    assert_eq!(served(out, tool), frames, "{what}: {tool}'s frames did not all go to the service: {err}");
    assert!(!err.contains("done in this process"), "{what}: {err}");
}

/// `w` x `h` pixels of `frame` from (`x`, `y`), as a PGM (gray) or PAM frame.
fn crop(frame: &Frame, x: usize, y: usize, w: usize, h: usize) -> Frame {
    let c = frame.channels.count();
    let at = |i: usize| {
        let (px, k) = (i / c, i % c);
        ((y + px / w) * frame.width + x + px % w) * c + k
    };
    let pixels = match &frame.pixels {
        Pixels::U8(s) => Pixels::U8((0..w * h * c).map(|i| s[at(i)]).collect()),
        Pixels::U16(s) => Pixels::U16((0..w * h * c).map(|i| s[at(i)]).collect()),
        Pixels::F32(s) => Pixels::F32((0..w * h * c).map(|i| s[at(i)]).collect()),
    };
    let mut out = Frame::with_channels(w, h, frame.channels, frame.maxval, pixels);
    out.format = if frame.channels == Channels::Gray { Format::Pgm } else { Format::Pam };
    out
}

/// A tool's runs in the registry that a service takes: its benchmark's arguments, and those of
/// its sanitizer runs that name no file.
fn registry_runs(t: &Tool) -> Vec<Vec<&'static str>> {
    let mut runs: Vec<Vec<&'static str>> = vec![t.bench.split_whitespace().collect()];
    for entry in &t.sanitize {
        let args = entry.splitn(3, '|').nth(2).unwrap_or("");
        if !args.contains(['{', '/']) {
            runs.push(args.split_whitespace().collect());
        }
    }
    let mut seen = Vec::new();
    runs.retain(|r| {
        let new = !seen.contains(r);
        seen.push(r.clone());
        new
    });
    runs
}

/// Input files for the registry's runs, in `dir`: gray ones (8-bit photo, 16-bit elevations,
/// 8-bit noise, 16-bit noise) and colour ones (an 8-bit photo, 16-bit noise).
fn input_files(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut rng = rng();
    let astronaut = fixture_frame("astronaut.png");
    let gray = [
        ("a.pgm", crop(&fixture_frame("camera.pgm"), 200, 150, 64, 48)),
        ("b.pgm", crop(&fixture_frame("dem16.pgm"), 100, 80, 50, 40)),
        ("c.pgm", random_frame(&mut rng, 33, 27, 255)),
        ("f.pgm", random_frame(&mut rng, 29, 21, 65535)),
    ];
    let colour = [
        ("d.pam", crop(&astronaut, 180, 60, 40, 36)),
        ("e.pam", random_colour_frame(&mut rng, 30, 20, Channels::Rgb, 65535)),
    ];
    let write = |files: &[(&str, Frame)]| {
        files
            .iter()
            .map(|(name, frame)| {
                let path = dir.join(name);
                std::fs::write(&path, stream(std::slice::from_ref(frame))).unwrap();
                path
            })
            .collect::<Vec<_>>()
    };
    (write(&gray), write(&colour))
}

/// `files` made into `t`'s input by the tools before it (an edge map, an accumulator), on the
/// CPU, as files in `dir`.
fn made_inputs(t: &Tool, dir: &Path, files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|file| {
            let mut bytes = std::fs::read(file).unwrap();
            for stage in t.before() {
                bytes = run_ok(stage, "cpu", &[], &bytes);
            }
            let path = dir.join(format!("{}-{}", t.name, file.file_name().unwrap().to_str().unwrap()));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

#[test]
fn every_tool_s_runs_through_the_service_equal_the_cpu_s() {
    each_backend(|backend| {
        let mut svc = Service::new("same", backend);
        svc.serve("30", &[]);
        let inputs = svc.dir.join("in");
        std::fs::create_dir(&inputs).unwrap();
        let (gray, colour) = input_files(&inputs);
        for t in registry() {
            // Gray and colour, 8- and 16-bit, several files in one run; less where the tool takes
            // less (no colour, no 16-bit, colour or 16-bit only, larger frames); what the tools
            // before it make of the 8-bit ones, if any.
            let (a, b, c, f) = (&gray[0], &gray[1], &gray[2], &gray[3]);
            let (d, e) = (&colour[0], &colour[1]);
            let eight = vec![a.clone(), d.clone(), c.clone()];
            let groups = if t.before().is_empty() {
                vec![
                    vec![a.clone(), b.clone(), d.clone(), e.clone(), c.clone(), f.clone()],
                    gray.clone(),
                    eight,
                    colour.clone(),
                    vec![b.clone(), e.clone(), f.clone()],
                    vec![a.clone(), c.clone()],
                    vec![b.clone()],
                    vec![f.clone()],
                    vec![a.clone()],
                ]
            } else {
                vec![made_inputs(t, &inputs, &eight)]
            };
            let mut served = 0;
            for args in registry_runs(t) {
                let what = format!("{backend:?} service: {} {}", t.name, args.join(" "));
                let Some((files, cpu)) = groups.iter().find_map(|files| {
                    let out =
                        tool(t.name).args(["--backend", "cpu"]).args(&args).args(files).output().unwrap();
                    out.status.success().then_some((files, out.stdout))
                }) else {
                    // No group the tool takes: refused through the service as in process.
                    let files = &groups[groups.len() - 1];
                    let cpu =
                        tool(t.name).args(["--backend", "cpu"]).args(&args).args(files).output().unwrap();
                    let out =
                        svc.tool(t.name).args(["--backend", "gpu"]).args(&args).args(files).output().unwrap();
                    assert_eq!(
                        out.status.code(),
                        cpu.status.code(),
                        "{what}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert!(out.stdout == cpu.stdout, "{what}: a refused run's output differs");
                    continue;
                };
                let out = svc
                    .tool(t.name)
                    .args(["--backend", "gpu", "--progress"])
                    .args(&args)
                    .args(files)
                    .output()
                    .unwrap();
                assert_served(&out, t.name, files.len(), &what);
                assert!(out.stdout == cpu, "{what}: through the service differs from --backend cpu");
                served += 1;
            }
            assert!(served > 0, "{backend:?}: no run of {} went through the service", t.name);
        }
    });
}

/// A frame stream for caller `i` of many: frames that differ from every other caller's.
fn caller_input(rng: &mut fastrand::Rng, i: usize) -> Vec<u8> {
    let frames: Vec<Frame> = (0..3)
        .map(|k| match (i + k) % 3 {
            0 => random_frame(rng, 40 + i, 30 + k, 255),
            1 => random_frame(rng, 31 + k, 25 + i, 4000),
            _ => random_colour_frame(rng, 20 + i, 17 + k, Channels::Rgb, 255),
        })
        .collect();
    stream(&frames)
}

#[test]
fn many_callers_at_once_each_get_their_own_frames_in_order() {
    each_backend(|backend| {
        // No service yet: the first callers start it, all at once, and all use the one started.
        let svc = Service::new("many", backend);
        let mut rng = rng();
        let runs: [(&str, &[&str]); 4] = [
            ("rotate", &["30", "--bilinear"]),
            ("equalize", &[]),
            ("pad", &["--border", "3"]),
            ("colhist", &[]),
        ];
        let callers: Vec<(&str, &[&str], Vec<u8>)> = (0..16)
            .map(|i| {
                let (name, args) = runs[i % runs.len()];
                (name, args, caller_input(&mut rng, i))
            })
            .collect();
        let cpu: Vec<Vec<u8>> =
            callers.iter().map(|(name, args, input)| run_ok(name, "cpu", args, input)).collect();
        let children: Vec<Child> = callers
            .iter()
            .map(|(name, args, _)| {
                svc.tool(name)
                    .args(["--backend", "gpu", "--progress"])
                    .args(*args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<Output> = std::thread::scope(|scope| {
            let running: Vec<_> = children
                .into_iter()
                .zip(&callers)
                .map(|(child, (_, _, input))| scope.spawn(move || finish(child, input)))
                .collect();
            running.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (i, (out, (name, args, _))) in outs.iter().zip(&callers).enumerate() {
            let what = format!("{backend:?} service: caller {i}, {name} {args:?}");
            assert_served(out, name, 3, &what);
            assert!(out.stdout == cpu[i], "{what}: its output differs from its CPU output");
        }
        assert_eq!(field(&svc.status(), "frames"), Some("48"), "one service did all 16 callers' 3 frames");
    });
}

/// A stream of 6 frames, gray and colour.
fn six_frames() -> Vec<u8> {
    let mut rng = rng();
    stream(&[
        random_frame(&mut rng, 41, 29, 255),
        random_colour_frame(&mut rng, 23, 19, Channels::Rgb, 255),
        random_frame(&mut rng, 17, 33, 65535),
        fixture_frame("coins.pgm"),
        random_frame(&mut rng, 50, 8, 255),
        random_colour_frame(&mut rng, 12, 40, Channels::Rgb, 1000),
    ])
}

/// `out` succeeded with `cpu`'s bytes, its stderr one line saying the tool did frames itself.
fn assert_done_in_process(out: &Output, cpu: &[u8], what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {err}");
    assert!(out.stdout == cpu, "{what}: its output differs from the CPU's");
    assert_eq!(err.lines().count(), 1, "{what}: not one line: {err}");
    assert!(
        err.contains("the GPU service: ")
            && err.ends_with("the frames it has not done are done in this process\n"),
        "{what}: {err}"
    );
    err
}

/// Waits for the test's own service process to end; asserts it aborted (HISTOPIPE_SERVICE_FAIL_AT).
fn assert_aborted(svc: &mut Service, what: &str) {
    let child = svc.child.as_mut().unwrap();
    let mut ended = None;
    wait_for("the service to abort", || {
        ended = child.try_wait().unwrap();
        ended.is_some()
    });
    assert_eq!(ended.unwrap().signal(), Some(libc::SIGABRT), "{what}: the service ended otherwise");
}

#[test]
fn a_service_lost_mid_frame_loses_no_frame() {
    each_backend(|backend| {
        let input = six_frames();
        for (name, args) in [("equalize", &[][..]), ("rotate", &["-20"][..]), ("cdf", &[][..])] {
            let what = format!("{backend:?} service: {name} {args:?}");
            let cpu = run_ok(name, "cpu", args, &input);
            // No service can be started in its place: the tool does the rest itself.
            let mut svc = Service::new("lost", backend).with_env("HISTOPIPE_SERVICE_BIN", "/nonexistent");
            svc.serve("30", &[("HISTOPIPE_SERVICE_FAIL_AT", "3")]);
            let out = run(svc.tool(name).args(["--backend", "gpu"]).args(args), &input);
            assert_done_in_process(&out, &cpu, &what);
            assert_aborted(&mut svc, &what);
            // Where one can be started, the frame is tried again on a new service; whether that
            // one or the tool does the rest depends on which comes first: the bytes do not.
            let mut svc = Service::new("lost", backend);
            svc.serve("30", &[("HISTOPIPE_SERVICE_FAIL_AT", "3")]);
            let out = run(svc.tool(name).args(["--backend", "gpu"]).args(args), &input);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what}, restartable: {err}");
            assert!(out.stdout == cpu, "{what}, restartable: its output differs from the CPU's");
            assert!(err.lines().count() <= 1, "{what}, restartable: {err}");
            assert_aborted(&mut svc, &what);
        }
    });
}

/// A frame whose output the service sends in parts before it is done (`colhist --angles`: a
/// group of turns' rows at a time) and that is lost after some were written: the frame is made
/// again, by the tool or on a new service, and each byte is written once. The service counts on
/// 3 threads, the tool on its own number, so the parts are cut at other bytes the second time.
#[test]
fn a_service_lost_after_sending_part_of_a_frame_writes_each_byte_once() {
    each_backend(|backend| {
        let input = stream(&[fixture_frame("coins.pgm"), fixture_frame("camera.pgm")]);
        for (args, fail_at) in
            [(&["--angles", "0:180:5"][..], "1:3"), (&["--angles", "-90:90:2.5"][..], "2:2")]
        {
            let what = format!("{backend:?} service: colhist {args:?}, lost at {fail_at}");
            let cpu = run_ok("colhist", "cpu", args, &input);
            let env = [("HISTOPIPE_SERVICE_FAIL_AT", fail_at), ("HISTOPIPE_THREADS", "3")];
            let mut svc = Service::new("parts", backend).with_env("HISTOPIPE_SERVICE_BIN", "/nonexistent");
            svc.serve("30", &env);
            let out = run(svc.tool("colhist").args(["--backend", "gpu"]).args(args), &input);
            assert_done_in_process(&out, &cpu, &what);
            assert_aborted(&mut svc, &what);
            let mut svc = Service::new("parts", backend);
            svc.serve("30", &env);
            let out = run(svc.tool("colhist").args(["--backend", "gpu"]).args(args), &input);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what}, restartable: {err}");
            assert!(out.stdout == cpu, "{what}, restartable: its output differs from the CPU's");
            assert_aborted(&mut svc, &what);
        }
    });
}

#[test]
fn auto_gives_the_service_streams_not_a_single_light_frame() {
    each_backend(|backend| {
        let mut svc = Service::new("auto", backend);
        svc.serve("30", &[]);
        let what = format!("{backend:?} service");
        // One light frame: its copies to and from the service cost more than the cores take.
        let one = stream(&[fixture_frame("coins.pgm")]);
        let out = run(svc.tool("equalize").args(["--backend", "auto", "--progress"]), &one);
        assert_eq!(served(&out, "equalize"), 0, "{what}: one light frame went to the service");
        assert!(out.stdout == run_ok("equalize", "cpu", &[], &one), "{what}: one frame");
        // A stream: from its second frame on, the service is measured (and then weighed).
        let six = six_frames();
        let out = run(svc.tool("equalize").args(["--backend", "auto", "--progress"]), &six);
        assert!(served(&out, "equalize") >= 1, "{what}: no frame of a stream went to the service");
        assert!(out.stdout == run_ok("equalize", "cpu", &[], &six), "{what}: six frames");
    });
}

/// The file of runs `auto` remembers (crates/cli/src/service/past.rs) in `svc`'s folder, if any.
fn runs_file(svc: &Service) -> Option<PathBuf> {
    let entries = std::fs::read_dir(&*svc.dir).unwrap();
    entries.map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "runs"))
}

/// `auto` remembers whole runs: a `--backend gpu` run makes the file (not one for which the GPU
/// service loaded kernels) and a `--backend cpu` run updates it; once both are known, every
/// frame of the kind goes where the runs were faster.
#[test]
fn auto_sends_a_kind_of_run_where_its_earlier_runs_were_faster() {
    each_backend(|backend| {
        let mut svc = Service::new("past", backend);
        svc.serve("30", &[]);
        let what = format!("{backend:?} service");
        let six = six_frames();
        let cpu = run_ok("equalize", "cpu", &[], &six);
        let out = run(svc.tool("equalize").args(["--backend", "cpu", "--progress"]), &six);
        assert!(out.status.success() && out.stdout == cpu, "{what}: cpu");
        assert!(runs_file(&svc).is_none(), "{what}: a cpu run made the file");
        let out = run(svc.tool("equalize").args(["--backend", "gpu", "--progress"]), &six);
        assert_served(&out, "equalize", 6, &what);
        if backend == Backend::Gpu {
            // The service's first equalize loaded its kernels: a cost paid once, not the run's.
            assert!(runs_file(&svc).is_none(), "{what}: a run that had kernels loaded was remembered");
            let out = run(svc.tool("equalize").args(["--backend", "gpu", "--progress"]), &six);
            assert_served(&out, "equalize", 6, &what);
        }
        let path = runs_file(&svc).unwrap_or_else(|| panic!("{what}: a gpu run made no file"));
        let line = std::fs::read_to_string(&path).unwrap();
        let fields: Vec<&str> = line.trim_end().splitn(5, ' ').collect();
        assert_eq!(line.lines().count(), 1, "{what}: {line}");
        assert_eq!(&fields[..2], ["-", "1"], "{what}: {line}");
        assert!(fields[2].parse::<f64>().is_ok_and(|ns| ns > 0.0) && fields[3] == "0", "{what}: {line}");
        let kind = fields[4].to_owned();
        assert!(kind.starts_with("equalize in:stream px:"), "{what}: {line}");
        let out = run(svc.tool("equalize").args(["--backend", "cpu"]), &six);
        assert!(out.status.success() && out.stdout == cpu, "{what}: cpu");
        let line = std::fs::read_to_string(&path).unwrap();
        let fields: Vec<&str> = line.trim_end().splitn(5, ' ').collect();
        assert!(fields[0].parse::<f64>().is_ok_and(|ns| ns > 0.0), "{what}: {line}");
        assert_eq!([fields[1], fields[3], fields[4]], ["0", "1", &kind], "{what}: {line}");
        for (cores, service, frames, says) in
            [("1", "1000", 0, "every frame on the cores"), ("1000", "1", 6, "every frame to the service")]
        {
            std::fs::write(&path, format!("{cores} 0 {service} 0 {kind}\n")).unwrap();
            let out = run(svc.tool("equalize").args(["--backend", "auto", "--progress"]), &six);
            assert_eq!(served(&out, "equalize"), frames, "{what}: cores {cores}, service {service}");
            assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{what}: {says}");
            assert!(out.stdout == cpu, "{what}: auto's output differs from the CPU's");
        }
    });
}

/// The stages of `tool`'s lines in trace file `path`, by frame.
fn traced_stages(path: &Path, tool: &str) -> std::collections::BTreeMap<usize, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut stages = std::collections::BTreeMap::<usize, Vec<String>>::new();
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() == 6 && fields[0] == tool {
            stages.entry(fields[3].parse().unwrap()).or_default().push(fields[2].to_owned());
        }
    }
    stages
}

/// With HISTOPIPE_TRACE, a tool on the service traces its copies and waits of every frame, and a
/// service started by hand with the variable its own side of each; a service a tool starts is not
/// given the tool's variable (it outlives the tool's run).
#[test]
fn the_service_and_its_tools_trace_each_frame() {
    each_backend(|backend| {
        let what = format!("{backend:?} service");
        let mut svc = Service::new("trace", backend);
        let (tool_trace, service_trace) = (svc.dir.join("tool.csv"), svc.dir.join("service.csv"));
        svc.serve("30", &[("HISTOPIPE_TRACE", service_trace.to_str().unwrap())]);
        let input = six_frames();
        let out = run(
            svc.tool("equalize").args(["--backend", "gpu", "--progress"]).env("HISTOPIPE_TRACE", &tool_trace),
            &input,
        );
        assert_served(&out, "equalize", 6, &what);
        let has = |stages: &[String], stage: &str| stages.iter().any(|s| s == stage);
        let tool = traced_stages(&tool_trace, "equalize");
        let service = traced_stages(&service_trace, "histopipe-service");
        for n in 1..=6 {
            for stage in ["work", "service.put", "service.wait", "service.take"] {
                assert!(
                    tool.get(&n).is_some_and(|s| has(s, stage)),
                    "{what}: frame {n}: no {stage} in {tool:?}"
                );
            }
            for stage in ["service.in", "service.work", "service.out"] {
                let lines = service.get(&n);
                assert!(lines.is_some_and(|s| has(s, stage)), "{what}: frame {n}: no {stage} in {service:?}");
            }
        }
        assert_eq!(service.len(), 6, "{what}: the service traced other frames: {service:?}");
        // A service the tool starts itself.
        let started = Service::new("trace-started", backend);
        let trace = started.dir.join("trace.csv");
        let out = run(
            started.tool("equalize").args(["--backend", "gpu", "--progress"]).env("HISTOPIPE_TRACE", &trace),
            &input,
        );
        assert_served(&out, "equalize", 6, &format!("{what} a tool started"));
        let own = traced_stages(&trace, "equalize");
        assert!((1..=6).all(|n| own.contains_key(&n)), "{what}: the tool's own lines: {own:?}");
        assert!(
            traced_stages(&trace, "histopipe-service").is_empty(),
            "{what}: a service a tool started traced"
        );
    });
}

#[test]
fn a_service_that_cannot_start_loses_no_frame() {
    each_backend(|backend| {
        let input = six_frames();
        let svc = Service::new("absent", backend).with_env("HISTOPIPE_SERVICE_BIN", "/nonexistent");
        let cpu = run_ok("equalize", "cpu", &[], &input);
        let out = run(svc.tool("equalize").args(["--backend", "gpu"]), &input);
        let err = assert_done_in_process(&out, &cpu, &format!("{backend:?} service, absent"));
        assert!(err.contains("/nonexistent"), "{err}");
        assert!(svc.status().starts_with("not running ("), "nothing started");
    });
}

#[test]
fn start_status_stop_and_the_idle_exit() {
    each_backend(|backend| {
        let svc = Service::new("cmds", backend);
        let before = svc.status();
        assert!(before.starts_with("not running (") && before.ends_with(".sock)\n"), "{before}");
        let socket = PathBuf::from(
            before.trim_end().strip_prefix("not running (").unwrap().strip_suffix(')').unwrap(),
        );
        assert!(socket.starts_with(&*svc.dir), "{before}");
        let out = svc.command(&["start"]).output().unwrap();
        assert!(out.status.success(), "start: {}", String::from_utf8_lossy(&out.stderr));
        let started = String::from_utf8(out.stdout).unwrap();
        let status = svc.status();
        let pid: u32 = field(&status, "pid").unwrap().parse().unwrap();
        assert_eq!(field(&started, "pid"), Some(pid.to_string().as_str()), "start: {started}");
        assert_eq!(field(&status, "sessions"), Some("0"), "{status}");
        assert_eq!(field(&status, "socket"), Some(socket.to_str().unwrap()), "{status}");
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        // A second start finds it up.
        let again = svc.command(&["start"]).output().unwrap();
        assert_eq!(field(&String::from_utf8(again.stdout).unwrap(), "pid"), Some(pid.to_string().as_str()));
        assert!(svc.command(&["stop"]).status().unwrap().success());
        wait_for("the stopped service to end and remove its socket", || {
            !ended_or_zombie(pid) || !socket.exists()
        });
        wait_for("the stopped service's process to end", || ended_or_zombie(pid));
        assert!(!socket.exists(), "the socket is gone");
        assert!(svc.status().starts_with("not running ("));
        // Stopping what does not run is no failure.
        assert!(svc.command(&["stop"]).status().unwrap().success());

        let mut svc = Service::new("idle", backend);
        svc.serve("0.5", &[]);
        let child = svc.child.as_mut().unwrap();
        let mut ended = None;
        wait_for("an idle service to end by itself", || {
            ended = child.try_wait().unwrap();
            ended.is_some()
        });
        assert!(ended.unwrap().success(), "the idle exit is a success: {:?}", ended);
        assert!(svc.status().starts_with("not running ("));
        assert!(!names(&svc.dir).iter().any(|n| n.ends_with(".sock")), "{:?}", names(&svc.dir));
    });
}

/// Whether process `pid` has ended (or only waits for its parent to reap it).
fn ended_or_zombie(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => status.lines().any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => true,
    }
}

/// A client in Python: connects to the socket `argv[1]`, sends a valid hello for `pad` (protocol
/// `argv[2]`), and says whether it connected and the kind of the answer's first message, or that
/// none came.
const PY_CLIENT: &str = r#"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("no connection", e)
    sys.exit(0)
print("connected")
body = struct.pack("<II", int(sys.argv[2]), 3) + b"pad" + struct.pack("<I", 0)
head = b""
try:
    s.sendall(b"HP" + bytes([1, 0]) + struct.pack("<I", len(body)) + body)
    while len(head) < 8:
        got = s.recv(8 - len(head))
        if not got:
            break
        head += got
except OSError as e:
    print("closed", e)
    sys.exit(0)
print("kind", head[2] if len(head) == 8 else "none: closed")
"#;

#[test]
fn another_user_is_refused() {
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        eprintln!("another_user_is_refused: skipped, not root (it runs a client as another uid)");
        return;
    }
    each_backend(|backend| {
        let mut svc = Service::new("user", backend);
        svc.serve("30", &[]);
        let socket = PathBuf::from(field(&svc.status(), "socket").unwrap());
        // Open to every uid: only the service's own check of the peer stands.
        std::fs::set_permissions(&*svc.dir, Permissions::from_mode(0o711)).unwrap();
        std::fs::set_permissions(&socket, Permissions::from_mode(0o777)).unwrap();
        let python = ["/usr/bin/python3", "/bin/python3"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("python3");
        let client = |uid: Option<u32>| {
            let mut cmd = StdCommand::new(python);
            cmd.args(["-c", PY_CLIENT]).arg(&socket).arg(VERSION.to_string()).current_dir("/");
            if let Some(uid) = uid {
                cmd.uid(uid).gid(uid);
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let nobody = client(Some(65534));
        assert!(
            nobody.starts_with("connected\n"),
            "uid 65534 could not reach the socket: the test tests nothing: {nobody}"
        );
        assert!(!nobody.contains("kind "), "{backend:?} service: another uid got an answer: {nobody}");
        let root = client(None);
        assert_eq!(root, "connected\nkind 2\n", "{backend:?} service: its own user");
    });
}

/// A message: the 8-byte header (`HP`, `kind`, 0, the body's length) and the body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    [&b"HP"[..], &[kind, 0], &(body.len() as u32).to_le_bytes(), body].concat()
}

/// The protocol's version (5: the service lends the memory, sends parts before a frame is done,
/// holds frames between tools of a pipe, and says which frames it loaded kernels for).
const VERSION: u32 = 5;

/// A hello's body: the protocol's version, `tool`, `args`.
fn hello(tool: &str, args: &[&str]) -> Vec<u8> {
    let mut b = VERSION.to_le_bytes().to_vec();
    b.extend((tool.len() as u32).to_le_bytes());
    b.extend(tool.as_bytes());
    b.extend((args.len() as u32).to_le_bytes());
    for a in args {
        b.extend((a.len() as u32).to_le_bytes());
        b.extend(a.as_bytes());
    }
    b
}

/// A frame message's body: frame 1, starting the output, a `width` x `height` gray 8-bit frame of
/// `maxval`, its samples at `offset`, `len` in the block.
fn frame_body(width: u64, height: u64, maxval: u16, offset: u64, len: u64) -> Vec<u8> {
    let mut b = 1u64.to_le_bytes().to_vec();
    b.push(1);
    b.push(0); // the output goes to no pipe
    b.push(0); // the frame is in the block
    b.extend(width.to_le_bytes());
    b.extend(height.to_le_bytes());
    b.push(0); // gray
    b.extend(maxval.to_le_bytes());
    b.push(0); // 8-bit
    b.push(0); // PGM
    b.push(0); // no geometry
    b.extend(0u32.to_le_bytes()); // no annotations
    b.push(0); // no source
    b.extend(offset.to_le_bytes());
    b.extend(len.to_le_bytes());
    b
}

/// The service's next message, kind and body; `None` when it closed the connection unanswered.
fn answer(stream: &mut UnixStream) -> Option<(u8, Vec<u8>)> {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("no answer within {PATIENCE:?}: {e}"),
        }
    }
    if got == 0 {
        return None;
    }
    assert!(got == 8 && &head[..2] == b"HP" && head[3] == 0, "not a message: {:?}", &head[..got]);
    let mut body = vec![0; u32::from_le_bytes(head[4..].try_into().unwrap()) as usize];
    stream.read_exact(&mut body).unwrap();
    Some((head[2], body))
}

const READY: u8 = 2;
const REFUSED: u8 = 3;
const DONE: u8 = 5;
const OVER: u8 = 14;
/// Refusals' reasons.
const PROTOCOL: u8 = 2;
const BUSY: u8 = 3;
const COMMAND_LINE: u8 = 4;

/// The service refuses what `stream` sent, for `reason`, then closes the connection.
fn assert_refused(stream: &mut UnixStream, reason: u8, what: &str) {
    match answer(stream) {
        Some((REFUSED, body)) => {
            assert_eq!(
                body.first(),
                Some(&reason),
                "{what}: refused for another reason: {:?}",
                String::from_utf8_lossy(&body)
            )
        }
        other => panic!("{what}: answered {other:?}, not refused"),
    }
    assert_eq!(answer(stream), None, "{what}: the connection goes on after a refusal");
}

/// Asks for room for `bytes` in the service's memory: its answer, and the block it lends, if any.
fn room(stream: &mut UnixStream, bytes: u64) -> (Option<(u8, Vec<u8>)>, Option<std::fs::File>) {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    stream.write_all(&message(8, &bytes.to_le_bytes())).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = [0u8; 8];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        &*stream,
        &mut [std::io::IoSliceMut::new(&mut head)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )
    .unwrap();
    let mut block = None;
    for m in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = m {
            block = fds.next().map(std::fs::File::from);
        }
    }
    if got.bytes == 0 {
        return (None, block);
    }
    (&*stream).read_exact(&mut head[got.bytes..]).unwrap();
    let mut body = vec![0; u32::from_le_bytes(head[4..].try_into().unwrap()) as usize];
    stream.read_exact(&mut body).unwrap();
    (Some((head[2], body)), block)
}

/// Sends `bytes` with `fd` passed alongside (SCM_RIGHTS).
fn send_with_fd(stream: &UnixStream, bytes: &[u8], fd: BorrowedFd<'_>) {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    let fds = [fd];
    assert!(ancillary.push(SendAncillaryMessage::ScmRights(&fds)));
    let sent =
        rustix::net::sendmsg(stream, &[std::io::IoSlice::new(bytes)], &mut ancillary, SendFlags::NOSIGNAL)
            .unwrap();
    (&*stream).write_all(&bytes[sent..]).unwrap();
}

/// A memfd block of 4096 bytes of `fill`; sealed against shrinking and growing if `sealed`.
fn memory_block(fill: u8, sealed: bool) -> std::fs::File {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd =
        rustix::fs::memfd_create("histopipe-test", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    let mut file = std::fs::File::from(fd);
    file.write_all(&[fill; 4096]).unwrap();
    if sealed {
        rustix::fs::fcntl_add_seals(&file, SealFlags::SHRINK | SealFlags::GROW).unwrap();
    }
    file
}

/// A connection whose session for `pad` is open.
fn session(socket: &Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(&message(1, &hello("pad", &[]))).unwrap();
    let got = answer(&mut s);
    assert_eq!(got.as_ref().map(|a| a.0), Some(READY), "a valid hello: {got:?}");
    s
}

/// The resident memory of process `pid`, in bytes.
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap();
    kb.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
}

/// A client that keeps the block it was lent after its session, and reads it while the next
/// tools' frames are on the service, never sees their samples: the service lends a block to one
/// session and never again (a block cleared and lent to the next session would show its frames
/// to every earlier holder, whose mapping the service cannot take back). Each tool is read while
/// its session is open: its first frame's output is out, its input not yet closed.
#[test]
fn a_block_kept_after_its_session_never_shows_another_session_frames() {
    use std::os::unix::fs::FileExt;
    each_backend(|backend| {
        let mut svc = Service::new("kept", backend);
        svc.serve("30", &[]);
        let socket = PathBuf::from(field(&svc.status(), "socket").unwrap());
        let mut kept = Vec::new();
        for _ in 0..3 {
            let mut s = session(&socket);
            let (got, block) = room(&mut s, 64);
            assert_eq!(got.as_ref().map(|a| a.0), Some(READY), "room: {got:?}");
            kept.push(block.expect("the service lends a block with its answer to room"));
        }
        wait_for("the sessions to end", || field(&svc.status(), "sessions") == Some("0"));
        // A frame of the blocks' size (1 MiB), none of its samples zero.
        let mut frame = random_frame(&mut rng(), 300, 200, 255);
        if let Pixels::U8(p) = &mut frame.pixels {
            p.iter_mut().for_each(|v| *v = (*v).max(1));
        }
        let input = stream(&[frame]);
        for (name, args) in [("equalize", &[][..]), ("rotate", &["10"][..]), ("pad", &["--top", "3"][..])] {
            // Read while the tool's session is open: its frame's output is out, its input open.
            let mut cmd = svc.tool(name);
            cmd.args(["--backend", "gpu"]).args(args);
            let check = |_: &[u8]| {
                for (i, block) in kept.iter().enumerate() {
                    let mut bytes = vec![0u8; block.metadata().unwrap().len() as usize];
                    block.read_exact_at(&mut bytes, 0).unwrap();
                    let seen = bytes.iter().filter(|&&b| b != 0).count();
                    assert_eq!(
                        seen, 0,
                        "{backend:?} service, {name}: kept block {i} shows {seen} bytes of a session"
                    );
                }
            };
            let (_, status) = output_before_the_end(&mut cmd, &input, 60_000, name, check);
            assert!(status.success(), "{name}");
        }
    });
}

#[test]
fn hostile_clients_cannot_crash_the_service() {
    each_backend(|backend| {
        let mut svc = Service::new("hostile", backend);
        let pid = svc.serve("30", &[]);
        let socket = PathBuf::from(field(&svc.status(), "socket").unwrap());
        let connect = || UnixStream::connect(&socket).unwrap();

        // A valid frame through a raw session, in the room the service lends: the messages below
        // differ from it only in their fault.
        let mut s = session(&socket);
        let (got, block) = room(&mut s, 64);
        assert_eq!(got.as_ref().map(|a| a.0), Some(READY), "room for a frame: {got:?}");
        let block = block.expect("the service lends a block with its answer to room");
        s.write_all(&message(4, &frame_body(8, 8, 255, 64, 64))).unwrap();
        let got = answer(&mut s);
        // The body: whether kernels were loaded for the frame (the GPU service's first pad does),
        // then the result, 0: parts.
        assert!(
            matches!(&got, Some((DONE, body)) if body.len() > 2 && body[0] <= 1 && body[1] == 0),
            "a valid frame: {got:?}"
        );
        drop(s);
        svc.still_serves(pid, "a valid raw frame");

        // A FIFO no one writes: a service that opened the file an option names would wait on it
        // for ever, unanswering.
        let fifo = svc.dir.join("mask.fifo");
        let made = StdCommand::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success(), "mkfifo {}", fifo.display());
        let fifo = fifo.to_str().unwrap().to_owned();
        let cases: [(&str, Vec<u8>, u8); 7] = [
            ("garbage", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), PROTOCOL),
            ("a header with a huge length", b"HP\x01\x00\xff\xff\xff\xff".to_vec(), PROTOCOL),
            ("an unknown kind", b"HP\x63\x00\x00\x00\x00\x00".to_vec(), PROTOCOL),
            (
                "a hello with a count past its body",
                {
                    let mut h = hello("pad", &[]);
                    let n = h.len();
                    h[n - 4..].copy_from_slice(&1000u32.to_le_bytes());
                    message(1, &h)
                },
                PROTOCOL,
            ),
            ("a hello for an unknown tool", message(1, &hello("no-such-tool", &[])), COMMAND_LINE),
            // Refused before any check could open it.
            ("a hello naming a file", message(1, &hello("equalize", &["--mask", &fifo])), COMMAND_LINE),
            ("a frame before a hello", message(4, &frame_body(8, 8, 255, 0, 64)), PROTOCOL),
        ];
        for (what, bytes, reason) in cases {
            let mut s = connect();
            s.write_all(&bytes).unwrap();
            assert_refused(&mut s, reason, what);
            svc.still_serves(pid, what);
        }

        // Half a message, then closed (writing): the rest never comes.
        let mut s = connect();
        s.write_all(&message(1, &hello("pad", &[]))[..10]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_refused(&mut s, PROTOCOL, "half a message");
        svc.still_serves(pid, "half a message");

        let mut s = session(&socket);
        s.write_all(&message(4, &frame_body(8, 8, 255, 0, 64))).unwrap();
        assert_refused(&mut s, PROTOCOL, "a frame before its room");
        svc.still_serves(pid, "a frame before its room");

        let mut s = session(&socket);
        s.write_all(&message(8, &u64::MAX.to_le_bytes())).unwrap();
        assert_refused(&mut s, BUSY, "room for 2^64 bytes");
        svc.still_serves(pid, "room for 2^64 bytes");

        // Held frames: a token no one holds is answered as such (its bytes would follow it);
        // releasing or waiting for one is no fault; a session says it reads a few pipes at most.
        let token = [7u8; 16];
        let mut s = session(&socket);
        let held_frame = [&1u64.to_le_bytes()[..], &[1, 0, 1], &token].concat();
        s.write_all(&message(4, &held_frame)).unwrap();
        assert_eq!(answer(&mut s), Some((OVER, vec![0])), "a frame no one holds");
        s.write_all(&message(13, &token)).unwrap();
        assert_eq!(answer(&mut s), Some((OVER, vec![0])), "waiting for a frame no one holds");
        s.write_all(&message(15, &[&token[..], &[1]].concat())).unwrap();
        assert_eq!(answer(&mut s).map(|a| a.0), Some(READY), "releasing a frame no one holds");
        for ino in 0..5u64 {
            s.write_all(&message(11, &[&9u64.to_le_bytes()[..], &ino.to_le_bytes()].concat())).unwrap();
            if ino < 4 {
                assert_eq!(answer(&mut s).map(|a| a.0), Some(READY), "pipe {ino}");
            }
        }
        assert_refused(&mut s, PROTOCOL, "a fifth pipe read");
        svc.still_serves(pid, "held frames no one holds");
        // A flag is 0 or 1.
        let mut s = session(&socket);
        s.write_all(&message(15, &[&token[..], &[2]].concat())).unwrap();
        assert_refused(&mut s, PROTOCOL, "a release whose flag is 2");
        svc.still_serves(pid, "a release whose flag is 2");
        wait_for("the refused session's pipes let go", || field(&svc.status(), "pipes") == Some("0"));

        // Descriptors of the client's: the service maps none.
        let file_path = svc.dir.join("plain");
        std::fs::write(&file_path, [0u8; 4096]).unwrap();
        let fds = [
            ("an unsealed memfd", memory_block(0, false)),
            ("a sealed memfd", memory_block(0, true)),
            ("a plain file", std::fs::File::open(&file_path).unwrap()),
        ];
        for (what, fd) in fds {
            let mut s = session(&socket);
            let _ = room(&mut s, 64);
            send_with_fd(&s, &message(4, &frame_body(8, 8, 255, 0, 64)), fd.as_fd());
            assert_refused(&mut s, PROTOCOL, what);
            svc.still_serves(pid, what);
        }

        let frames = [
            ("a span past the block", frame_body(2048, 2048, 255, 0, 2048 * 2048), 0),
            ("a span past 2^64", frame_body(8, 8, 255, u64::MAX - 10, 64), 0),
            ("a sample over the maxval", frame_body(8, 8, 100, 0, 64), 200),
            (
                "a frame whose flag of starting the output is 2",
                {
                    let mut b = frame_body(8, 8, 255, 0, 64);
                    b[8] = 2;
                    b
                },
                0,
            ),
        ];
        for (what, body, fill) in frames {
            let mut s = session(&socket);
            let (got, lent) = room(&mut s, 64);
            assert_eq!(got.as_ref().map(|a| a.0), Some(READY), "{what}: room: {got:?}");
            if fill != 0 {
                let lent = lent.expect("a block with the room");
                std::os::unix::fs::FileExt::write_all_at(&lent, &[fill; 64], 0).unwrap();
            }
            s.write_all(&message(4, &body)).unwrap();
            assert_refused(&mut s, PROTOCOL, what);
            svc.still_serves(pid, what);
        }
        drop(block);

        // A flood: 300 sessions at once, more than the service holds. Its memory stays within
        // 500 MB of what it held before (a GPU service's context is a few hundred MB of its own;
        // a CPU service holds 500 MB in all).
        let before = resident(pid);
        let bound = if backend == Backend::Cpu { 500 << 20 } else { before + (500 << 20) };
        let mut flood: Vec<UnixStream> = (0..300).map(|_| connect()).collect();
        for s in &mut flood {
            // One refused as busy at once may be closed before its hello: a broken pipe.
            let _ = s.write_all(&message(1, &hello("pad", &[])));
        }
        let mut ready = 0;
        for (i, s) in flood.iter_mut().enumerate() {
            match answer(s) {
                Some((READY, _)) => ready += 1,
                Some((REFUSED, body)) => assert_eq!(body.first(), Some(&BUSY), "connection {i}"),
                None => {}
                other => panic!("connection {i} of the flood: {other:?}"),
            }
        }
        assert!((1..=256).contains(&ready), "{ready} of 300 sessions at once");
        let under = resident(pid);
        eprintln!(
            "{backend:?} service: resident {} MB before the flood, {} MB under it",
            before >> 20,
            under >> 20
        );
        assert!(under < bound, "{backend:?} service: {} MB resident under the flood", under >> 20);
        drop(flood);
        wait_for("the flood's sessions to end", || {
            svc.try_status().is_some_and(|s| field(&s, "sessions") == Some("0"))
        });
        svc.still_serves(pid, "300 sessions at once");
        let after = resident(pid);
        assert!(after < bound, "{backend:?} service: {} MB resident after the flood", after >> 20);
    });
}

/// `stages` as one shell pipe, each tool with `--backend backend` (and its arguments), for this
/// test's service; `tail` after the last stage, if any (`| head -c 100`).
fn pipe_of(svc: &Service, stages: &[(&str, &[&str])], backend: &str, tail: &str) -> StdCommand {
    let line: Vec<String> = stages
        .iter()
        .map(|(name, args)| {
            let bin = assert_cmd::cargo::cargo_bin(name);
            format!("'{}' --backend {backend} {}", bin.display(), args.join(" "))
        })
        .collect();
    let mut cmd = StdCommand::new("bash");
    svc.apply(&mut cmd).args(["-o", "pipefail", "-c", &format!("{}{tail}", line.join(" | "))]);
    cmd
}

/// The pipes the stages read (the first's too: the test's), the service told they read them:
/// waited for, so that every frame may be held (a writer's frame that comes first goes through
/// the pipe as bytes).
fn readers_known(svc: &Service, stages: usize) {
    let want = stages.to_string();
    wait_for("the tools to tell the service the pipes they read", || {
        svc.try_status().is_some_and(|s| field(&s, "pipes") == Some(&want))
    });
}

fn held_since_start(svc: &Service) -> usize {
    field(&svc.status(), "held-total").unwrap().parse().unwrap()
}

type Stages<'a> = &'a [(&'a str, &'a [&'a str])];

/// Pipes of tools on the service, gray and colour frames of 8 and 16 bits.
fn held_pipes() -> Vec<(Stages<'static>, Vec<u8>)> {
    let mut rng = rng();
    let gray = stream(&[
        random_frame(&mut rng, 41, 29, 255),
        fixture_frame("coins.pgm"),
        random_frame(&mut rng, 17, 33, 65535),
        random_frame(&mut rng, 50, 8, 1000),
    ]);
    vec![
        (&[("pad", &[]), ("rotate", &["30"]), ("colhist", &[])], gray.clone()),
        (&[("equalize", &[]), ("stretch", &["--saturate", "2"]), ("threshold", &[])], gray),
        (&[("pad", &["--mode", "reflect"]), ("rotate", &["-15"]), ("equalize", &[])], six_frames()),
    ]
}

/// Runs `stages` as a pipe of tools on the service (`--backend gpu`) on `input`, fed once every
/// stage has told the service which pipe it reads; its output, which must be `cpu`'s.
fn through_held_pipe(svc: &Service, stages: Stages<'_>, input: &[u8], cpu: &[u8], what: &str) -> Output {
    let child = pipe_of(svc, stages, "gpu", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    readers_known(svc, stages.len());
    let out = finish(child, input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {err}");
    assert!(out.stdout == cpu, "{what}: the output differs from the CPU's");
    out
}

/// Where both ends of a pipe are tools on the service, a frame stays there and only its
/// reference crosses the pipe: each frame alone in its stream (held then, every time: the only
/// frame the tools have), and the frames together (held or not, as they come); the pipe's last
/// output is the CPU's bytes either way.
#[test]
fn frames_stay_on_the_service_between_the_tools_of_a_pipe() {
    each_backend(|backend| {
        for (stages, input) in held_pipes() {
            let what = format!("{backend:?} service: {stages:?}");
            let mut svc = Service::new("held", backend);
            svc.serve("30", &[]);
            let frames = read_frames(&input);
            for (i, frame) in frames.iter().enumerate() {
                let one = stream(std::slice::from_ref(frame));
                let cpu = run(&mut pipe_of(&svc, stages, "cpu", ""), &one);
                assert!(cpu.status.success(), "{what} on the CPU: {}", String::from_utf8_lossy(&cpu.stderr));
                let before = held_since_start(&svc);
                let out = through_held_pipe(&svc, stages, &one, &cpu.stdout, &format!("{what}, frame {i}"));
                assert!(out.stderr.is_empty(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(
                    held_since_start(&svc) - before,
                    stages.len() - 1,
                    "{what}, frame {i}: frames held"
                );
            }
            let cpu = run(&mut pipe_of(&svc, stages, "cpu", ""), &input);
            let before = held_since_start(&svc);
            let out = through_held_pipe(&svc, stages, &input, &cpu.stdout, &format!("{what}, all frames"));
            assert!(out.stderr.is_empty(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(held_since_start(&svc) - before <= frames.len() * (stages.len() - 1), "{what}");
            assert_eq!(field(&svc.status(), "held"), Some("0"), "{what}: none left held");
        }
    });
}

/// A service lost while frames are held between tools (as each of the pipe's frames comes, one
/// frame alone, held at every stage; and the frames together): every frame is still written, the
/// CPU's bytes, each tool saying once on stderr that it did the rest itself.
#[test]
fn a_service_lost_with_frames_held_loses_no_frame() {
    each_backend(|backend| {
        let (stages, input) = held_pipes().swap_remove(0);
        let one = stream(&read_frames(&input)[1..2]);
        for (input, last) in [(&one, 3), (&input, 9)] {
            for k in 1..=last {
                let what = format!("{backend:?} service lost at its frame {k} of {last}: {stages:?}");
                let mut svc =
                    Service::new("heldlost", backend).with_env("HISTOPIPE_SERVICE_BIN", "/nonexistent");
                svc.serve("30", &[("HISTOPIPE_SERVICE_FAIL_AT", &k.to_string())]);
                let cpu = run(&mut pipe_of(&svc, stages, "cpu", ""), input);
                let out = through_held_pipe(&svc, stages, input, &cpu.stdout, &what);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.lines().all(|l| l.ends_with("done in this process")), "{what}: {err}");
                assert_aborted(&mut svc, &what);
            }
        }
    });
}

/// A pipe whose reader ends early (`| head -c 100`): the tools before it end too, none waiting
/// for a held frame to be taken, and no frame is left held.
#[test]
fn a_reader_that_ends_early_leaves_no_frame_held() {
    each_backend(|backend| {
        let (stages, input) = held_pipes().swap_remove(0);
        let mut svc = Service::new("heldhead", backend);
        svc.serve("30", &[]);
        let stages = &stages[..2];
        let child = pipe_of(&svc, stages, "gpu", " | head -c 100")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        readers_known(&svc, stages.len());
        let out = finish(child, &input);
        assert_eq!(out.stdout.len(), 100, "{}", String::from_utf8_lossy(&out.stderr));
        wait_for("no frame held", || field(&svc.status(), "held") == Some("0"));
    });
}
