//! Many hosts (docs/scaling.md): the GNU parallel commands of the guide run as printed, with this
//! machine as the only host and with stand-in remote hosts, and scripts/slurm-batch cuts a list as
//! each task of a job array would; either way the outputs are those of one process over all the
//! files.
//!
//! GNU parallel and rsync come from Debian's `parallel` and `rsync` (scripts/env.sh installs them
//! as root); without them the parallel test says it is skipped, or fails under CI=true, so that CI
//! always runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// The files of a batch: fixtures, one of them under a name with a space, in list order.
pub(crate) const BATCH: &[(&str, &str)] = &[
    ("camera.pgm", "camera.pgm"),
    ("moon.pgm", "moon.pgm"),
    ("coins.pgm", "coins.pgm"),
    ("text.pgm", "scan two.pgm"),
    ("brick.pgm", "brick.pgm"),
    ("chessboard.pgm", "chessboard.pgm"),
    ("page.pgm", "page.pgm"),
];

/// A folder holding `scans/` with the batch's files; returns it and the files' relative paths.
pub(crate) fn batch_dir(test: &str) -> (TempDir, Vec<String>) {
    let dir = temp_dir(test);
    copy_fixtures(&dir.join("scans"), BATCH);
    let files = BATCH.iter().map(|(_, name)| format!("scans/{name}")).collect();
    (dir, files)
}

/// `script` run by bash in `dir`, the tools on PATH and on the CPU.
fn bash(dir: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = shell(dir, script);
    cmd.env_remove("HISTOPIPE_THREADS")
        // Settings of the user's that would stand in for the guide's: PARALLEL holds default
        // options for GNU parallel.
        .env_remove("PARALLEL")
        // Run as CI runs, without SHELL: the hosts, stand-ins or this one, must not need ours.
        .env_remove("SHELL")
        .env_remove("RSYNC_OLD_ARGS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap_or_else(|e| panic!("bash: {e}"))
}

/// What one process over `files` writes: frames by `equalize`, tables by the pipeline, in `out`.
pub(crate) fn one_process(dir: &Path, files: &[String], out: &str) {
    let quoted: Vec<String> = files.iter().map(|f| format!("'{f}'")).collect();
    let list = quoted.join(" ");
    for script in [
        format!("equalize -o '{out}/{{stem}}.pgm' {list}"),
        format!("pad {list} | rotate 30 | colhist -o '{out}/{{stem}}.csv'"),
    ] {
        let o = bash(dir, &script, &[]);
        assert!(o.status.success(), "{script}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// The files in `dir` whose names end with `ext`, sorted.
pub(crate) fn names_ending(dir: &Path, ext: &str) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.ends_with(ext)).collect()
}

/// A table without its `frame` column, which numbers the frames of each process's own stream.
fn past_frame_column(table: &str) -> Vec<String> {
    table.lines().map(|l| l.split_once(',').map_or(l, |(_, rest)| rest).to_owned()).collect()
}

/// Asserts that `got` holds the outputs of `expected` (a folder made by [`one_process`]) of
/// extension `ext`: frames byte for byte, tables past their frame column.
pub(crate) fn assert_same_outputs(got: &Path, expected: &Path, ext: &str, what: &str) {
    let expected_names = names_ending(expected, ext);
    assert_eq!(names_ending(got, ext), expected_names, "{what}: not the same files");
    for name in &expected_names {
        let (a, b) = (std::fs::read(got.join(name)).unwrap(), std::fs::read(expected.join(name)).unwrap());
        if ext == "csv" {
            let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
            assert_eq!(past_frame_column(&a), past_frame_column(&b), "{what}: {name}");
        } else {
            assert!(a == b, "{what}: {name} differs from one process's");
        }
    }
}

/// Whether `program --version` runs and says `says`. If not: a skip, said on stderr, or under
/// CI=true a failure, so that CI cannot skip it.
fn installed(program: &str, says: &str, package: &str) -> bool {
    let out = Command::new(program).arg("--version").output();
    if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(says)) {
        return true;
    }
    skip_unless_ci(&format!(
        "{says} is not installed: apt-get install {package} (scripts/env.sh does, as root; \
         moreutils' parallel is another program)"
    ));
    false
}

/// Records the calling test as skipped, for `why`; or, under CI=true, fails it, so that CI
/// cannot skip it.
#[track_caller]
pub(crate) fn skip_unless_ci(why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}; CI=true, so this test must run");
    }
    histopipe_gpu::testing::skip(why);
}

/// The indented block after each `<!-- run by tests/tools/scaling.rs -->` line of docs/scaling.md.
fn guide_commands() -> Vec<String> {
    let guide = std::fs::read_to_string(repo().join("docs/scaling.md")).unwrap();
    let lines: Vec<&str> = guide.lines().collect();
    let mut blocks = Vec::new();
    for (i, _) in
        lines.iter().enumerate().filter(|(_, l)| l.trim() == "<!-- run by tests/tools/scaling.rs -->")
    {
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
            .map(|l| l.strip_prefix("    ").unwrap_or(""))
            .collect();
        blocks.push(block.join("\n").trim_end().to_owned());
    }
    blocks
}

/// Stands in for ssh, as GNU parallel and rsync call it (`ssh [OPTIONS] HOST COMMAND...`): runs
/// the command as a login shell on HOST would, in HOST's home, `$FAKE_HOSTS/HOST`, made empty
/// at first; with FAKE_HOSTS unset, where it is (a folder the hosts share). Logs each call.
///
/// Like sshd, it sets SHELL to the user's login shell from the password database: GNU parallel's
/// remote worker runs each job with `$SHELL`, and without it the job never runs, yet parallel
/// exits 0 (CI, whose environment has no SHELL, once lost every output that way).
const FAKE_SSH: &str = r#"#!/usr/bin/env bash
while [ $# -gt 0 ]; do
  case $1 in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) host=$1; shift; break ;;
  esac
done
[ "${1-}" = -- ] && shift
echo "$host $*" >>"$FAKE_SSH_LOG"
SHELL=$(getent passwd "$(id -un)" | cut -d: -f7)
export SHELL=${SHELL:-/bin/sh}
if [ -n "${FAKE_HOSTS-}" ]; then
  export HOME=$FAKE_HOSTS/$host
  mkdir -p "$HOME" && cd "$HOME" || exit 255
fi
exec bash -c "$*"
"#;

/// Writes [`FAKE_SSH`] into `dir` as an executable; returns its path.
fn fake_ssh(dir: &Path) -> PathBuf {
    let ssh = dir.join("fake-ssh");
    std::fs::write(&ssh, FAKE_SSH).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    ssh
}

/// `ssh` as the command of a GNU parallel sshlogin (`SLOTS/COMMAND HOST`), which a shell reads:
/// quoted, for a temp folder with spaces.
fn ssh_command(ssh: &Path) -> String {
    format!("'{}'", ssh.to_str().unwrap().replace('\'', r"'\''"))
}

/// docs/scaling.md's GNU parallel commands, as printed but for the batch size (`-N 200` becomes
/// `-N 2`, so that 7 files make 4 jobs, and `-N 1`, 7 jobs), over a batch with a name with a space:
/// - the commands that send files (`--trc`: rsync to a folder of each job's own in a home folder
///   of each host, outputs back, both cleaned up) on three stand-in remote hosts, two of them of
///   two slots, so that jobs of one host overlap (they once shared its home folder, and one job's
///   clean-up deleted the folders another was using: its outputs were lost and parallel exited 0);
/// - the shared-folder command with this machine as the only host, `3/:` (three jobs at once), and
///   with `1/:` beside two stand-in hosts working in the same folder.
///
/// Each time, out/ holds what one process over all the files writes, and nothing is left on the
/// hosts.
#[test]
fn the_guides_parallel_commands_write_what_one_process_writes() {
    if !installed("parallel", "GNU parallel", "parallel") || !installed("rsync", "rsync", "rsync") {
        return;
    }
    let commands = guide_commands();
    assert!(commands.len() >= 5, "docs/scaling.md's marked commands were not found: {commands:?}");
    let (dir, files) = batch_dir("scaling-parallel");
    one_process(&dir, &files, "expected");
    std::fs::write(dir.join("files.txt"), files.join("\n") + "\n").unwrap();
    let ssh = fake_ssh(&dir);
    let hosts = dir.join("hosts");
    let log = dir.join("ssh.log");
    let ssh = ssh_command(&ssh);
    let remote_logins = format!("2/{ssh} host-a\n1/{ssh} host-c\n2/{ssh} host-b\n");
    let shared_logins = format!("2/{ssh} host-a\n1/:\n2/{ssh} host-b\n");
    let parallel_home = dir.join(".parallel");
    std::fs::create_dir_all(&parallel_home).unwrap();

    for command in &commands {
        assert!(command.contains("parallel ") && command.contains("-N 200"), "{command}");
        let sends = command.contains("--trc");
        let runs: Vec<(&str, &str)> = if sends {
            vec![("-N 2", &remote_logins), ("-N 1", &remote_logins)]
        } else {
            vec![("-N 2", "3/:\n"), ("-N 2", &shared_logins)]
        };
        for (batch, logins) in runs {
            let command = command.replace("-N 200", batch);
            let remote = logins != "3/:\n";
            std::fs::write(dir.join("hosts.txt"), logins).unwrap();
            let _ = std::fs::remove_dir_all(dir.join("out"));
            let _ = std::fs::remove_dir_all(&hosts);
            let _ = std::fs::remove_file(&log);
            let mut env = vec![
                ("PARALLEL_HOME", parallel_home.to_str().unwrap()),
                ("FAKE_SSH_LOG", log.to_str().unwrap()),
            ];
            if sends {
                env.push(("FAKE_HOSTS", hosts.to_str().unwrap()));
            }
            let out = bash(&dir, &command, &env);
            let what = format!("`{command}` on {}", if remote { "remote hosts" } else { "3/:" });
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            for ext in ["pgm", "csv"] {
                if !names_ending(&dir.join("out"), ext).is_empty() {
                    assert_same_outputs(&dir.join("out"), &dir.join("expected"), ext, &what);
                }
            }
            assert!(!names_ending(&dir.join("out"), "").is_empty(), "{what}: wrote nothing");
            let calls = std::fs::read_to_string(&log).unwrap_or_default();
            if remote {
                // Jobs ran on the stand-ins, and with --trc their outputs came back by rsync and
                // nothing was left on them.
                assert!(calls.contains("GNU_Parallel_worker"), "{what}: no job ran remotely");
                if sends {
                    assert!(calls.contains("rsync --server --sender"), "{what}: nothing returned");
                    assert_eq!(files_under(&hosts), Vec::<PathBuf>::new(), "{what}: left on the hosts");
                }
            } else {
                assert_eq!(calls, "", "{what}: used ssh");
            }
        }
    }
}

/// The guide's first command with many short jobs on two stand-in hosts of four slots each (-N 1
/// over 40 files, five times): the jobs of a host overlap all the time, and each must still get
/// its files there and its outputs back. With the jobs sharing the host's home folder (the guide's
/// command without `--wd`), one job's clean-up deleted folders that another was using, and about
/// one run in two here lost an output.
#[test]
fn jobs_that_share_a_host_keep_to_folders_of_their_own() {
    if !installed("parallel", "GNU parallel", "parallel") || !installed("rsync", "rsync", "rsync") {
        return;
    }
    let command = guide_commands().into_iter().next().expect("docs/scaling.md's first marked command");
    assert!(command.contains("-N 200") && command.contains("--trc"), "{command}");
    let command = command.replace("-N 200", "-N 1");
    let dir = temp_dir("scaling-shared-hosts");
    std::fs::create_dir_all(dir.join("scans")).unwrap();
    let files: Vec<String> = (1..=40).map(|i| format!("scans/f {i}.pgm")).collect();
    for f in &files {
        std::fs::copy(fixture("camera.pgm"), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("files.txt"), files.join("\n") + "\n").unwrap();
    let o = bash(&dir, "equalize -o 'expected/{stem}.pgm' scans/*.pgm", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ssh = ssh_command(&fake_ssh(&dir));
    std::fs::write(dir.join("hosts.txt"), format!("4/{ssh} host-a\n4/{ssh} host-b\n")).unwrap();
    let (hosts, log, parallel_home) = (dir.join("hosts"), dir.join("ssh.log"), dir.join(".parallel"));
    std::fs::create_dir_all(&parallel_home).unwrap();
    let env = [
        ("PARALLEL_HOME", parallel_home.to_str().unwrap()),
        ("FAKE_SSH_LOG", log.to_str().unwrap()),
        ("FAKE_HOSTS", hosts.to_str().unwrap()),
    ];
    for run in 1..=5 {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let out = bash(&dir, &command, &env);
        assert!(out.status.success(), "run {run}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(names_ending(&dir.join("expected"), "pgm").len(), files.len());
        assert_same_outputs(&dir.join("out"), &dir.join("expected"), "pgm", &format!("run {run}"));
        assert_eq!(files_under(&hosts), Vec::<PathBuf>::new(), "run {run}: left on the hosts");
    }
}

/// scripts/slurm-batch as one task of an array sees it: `vars` as Slurm's variables
/// (SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP, _COUNT), the rest of the environment without any.
fn slurm_batch(dir: &Path, vars: &[(&str, String)], args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = assert_cmd::Command::new(repo().join("scripts/slurm-batch"));
    cmd.current_dir(dir)
        .args(args)
        .env("PATH", path_with_tools())
        .env("HISTOPIPE_BACKEND", "cpu")
        .env_remove("HISTOPIPE_THREADS");
    for v in ["ID", "MIN", "MAX", "STEP", "COUNT"] {
        cmd.env_remove(format!("SLURM_ARRAY_TASK_{v}"));
    }
    for (k, v) in vars {
        cmd.env(format!("SLURM_ARRAY_TASK_{k}"), v);
    }
    cmd.write_stdin(stdin.unwrap_or_default().to_vec()).output().unwrap()
}

/// Slurm's variables for task `i` of `--array=MIN-MAX:STEP` with `count` tasks; with `all`, every
/// one Slurm sets, else only the ID, MIN and MAX (what an older Slurm, or a step of 1, leaves).
fn array_task(i: usize, count: usize, min: usize, step: usize, all: bool) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("ID", (min + i * step).to_string()),
        ("MIN", min.to_string()),
        ("MAX", (min + (count - 1) * step).to_string()),
    ];
    if all {
        v.push(("STEP", step.to_string()));
        v.push(("COUNT", count.to_string()));
    }
    v
}

fn ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Every path lands in exactly one task's share; the shares follow the list in the tasks' order
/// and differ in size by at most one; from one task to more tasks than paths (whose empty shares
/// run nothing and exit 0), from index 0 or 3, with a step, with or without Slurm's count, from a
/// file or standard input, line by line or NUL-separated, with spaces and a line break in names.
#[test]
fn slurm_batch_deals_the_list_in_contiguous_near_equal_shares() {
    let dir = temp_dir("scaling-slurm-shares");
    let paths = ["a.pgm", "b c.pgm", " leading space.pgm", "d/e.pgm", "f.pgm", "g  two.pgm", "h.pgm"];
    let list = paths.join("\n") + "\n\n"; // a blank line at the end names no file
    std::fs::write(dir.join("files.txt"), &list).unwrap();
    let n = paths.len();
    for count in 1..=n + 2 {
        for (min, step, all) in [(0, 1, true), (3, 1, true), (1, 1, false), (0, 2, true), (5, 3, true)] {
            let mut got = Vec::new();
            for i in 0..count {
                let vars = array_task(i, count, min, step, all);
                let what = format!("task {i} of {count} from {min} by {step}");
                let from_stdin = i % 2 == 1;
                let out = if from_stdin {
                    slurm_batch(&dir, &vars, &["--dry-run", "-"], Some(list.as_bytes()))
                } else {
                    slurm_batch(&dir, &vars, &["--dry-run", "files.txt"], None)
                };
                let share: Vec<String> = ok(&out, &what).lines().map(str::to_owned).collect();
                assert!(
                    share.len() == n / count || share.len() == n.div_ceil(count),
                    "{what}: {} paths, not {n}/{count}",
                    share.len()
                );
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(stderr.lines().count(), 1, "{what}: one line on stderr: {stderr}");
                assert!(stderr.contains(&format!("share {i} of {count}")), "{what}: {stderr}");
                // An empty share runs nothing: `false` would fail.
                if share.is_empty() {
                    let run = slurm_batch(&dir, &vars, &["files.txt", "false"], None);
                    assert!(run.status.success(), "{what}: an empty share ran the command");
                }
                got.extend(share);
            }
            assert_eq!(got, paths, "{count} tasks from {min} by {step}: not every path once, in order");
        }
    }
    // NUL-separated, with a line break in a name; and --task instead of Slurm's variables.
    let nul = b"one\0two\nlines\0three\0\0four\0".to_vec();
    std::fs::write(dir.join("files0"), &nul).unwrap();
    let mut got = Vec::new();
    for i in 0..3 {
        let task = format!("{i}/3");
        let out = slurm_batch(&dir, &[], &["-0", "--task", &task, "--dry-run", "files0"], None);
        got.extend(ok(&out, &task).split_terminator('\0').map(str::to_owned));
    }
    assert_eq!(got, ["one", "two\nlines", "three", "four"]);
}

/// Outside a job array, with a list of indexes, or with a task that is not in the array, it
/// fails at once, with one line that says why, and runs nothing.
#[test]
fn slurm_batch_refuses_what_it_cannot_cut() {
    let dir = temp_dir("scaling-slurm-refuses");
    std::fs::write(dir.join("files.txt"), "a.pgm\nb.pgm\n").unwrap();
    let s = |v: &str| v.to_owned();
    for (vars, args, expected) in [
        (vec![], &["files.txt", "equalize"][..], "not a task of a Slurm job array"),
        (
            vec![("ID", s("4")), ("MIN", s("1")), ("MAX", s("9")), ("COUNT", s("3"))],
            &["files.txt", "equalize"],
            "--array is a list of indexes",
        ),
        (vec![("ID", s("7")), ("MIN", s("0")), ("MAX", s("3"))], &["files.txt", "equalize"], "is not in 0-3"),
        (
            vec![("ID", s("x")), ("MIN", s("0")), ("MAX", s("3"))],
            &["files.txt", "equalize"],
            "not a whole number",
        ),
        (vec![], &["--task", "2/2", "files.txt", "equalize"], "I must be in 0..K-1"),
        (vec![], &["--task", "2", "files.txt", "equalize"], "give I/K"),
        (vec![], &["--task", "0/1", "nowhere.txt", "equalize"], "nowhere.txt: no such file"),
        (vec![], &["--task", "0/1", "files.txt"], "no COMMAND"),
        (vec![], &["--bogus", "files.txt", "equalize"], "unknown option --bogus"),
    ] {
        let out = slurm_batch(&dir, &vars, args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{vars:?} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{vars:?} {args:?}: {stderr}");
        assert!(stderr.starts_with("slurm-batch: ") && stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    let help = slurm_batch(&dir, &[], &["--help"], None);
    assert!(ok(&help, "--help").contains("slurm-batch [--dry-run] [-0] [--task I/K] LIST COMMAND"));
}

/// The tasks of an array (of 3, from index 1), each running its share through the guide's
/// commands, together write what one process over the whole list writes; the exit status is the
/// command's.
#[test]
fn slurm_batch_tasks_together_write_what_one_process_writes() {
    let (dir, files) = batch_dir("scaling-slurm-outputs");
    one_process(&dir, &files, "expected");
    std::fs::write(dir.join("files.txt"), files.join("\n") + "\n").unwrap();
    for i in 0..3 {
        let vars = array_task(i, 3, 1, 1, true);
        ok(&slurm_batch(&dir, &vars, &["files.txt", "equalize", "-o", "out/{stem}.pgm"], None), "equalize");
        let pipeline = "set -o pipefail; pad \"$@\" | rotate 30 | colhist -o out/{stem}.csv";
        let out = slurm_batch(&dir, &vars, &["files.txt", "bash", "-c", pipeline, "bash"], None);
        ok(&out, "the pipeline");
    }
    assert_same_outputs(&dir.join("out"), &dir.join("expected"), "pgm", "3 tasks, equalize");
    assert_same_outputs(&dir.join("out"), &dir.join("expected"), "csv", "3 tasks, the pipeline");
    // The tool's own failure is the task's.
    std::fs::write(dir.join("bad.txt"), "scans/camera.pgm\nscans/missing.pgm\n").unwrap();
    let out = slurm_batch(&dir, &[], &["--task", "0/1", "bad.txt", "equalize", "-o", "bad/{stem}.pgm"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("equalize: scans/missing.pgm: no such file"));
}

/// A share longer than one command line holds runs as a few processes, one after another, which
/// together get every path once, in order; the first failure stops it with its status.
#[test]
fn slurm_batch_splits_a_share_too_long_for_one_command_line() {
    let dir = temp_dir("scaling-slurm-long");
    let n = 60_000;
    let list: String = (0..n).map(|i| format!("scans/{}-{i:06}.pgm\n", "x".repeat(80))).collect();
    assert!(list.len() > 4 << 20, "longer than a command line may be");
    std::fs::write(dir.join("files.txt"), &list).unwrap();
    let out = slurm_batch(
        &dir,
        &[],
        &["--task", "0/1", "files.txt", "bash", "-c", "echo $# $1 ${@: -1}", "bash"],
        None,
    );
    let runs: Vec<Vec<String>> =
        ok(&out, "long").lines().map(|l| l.split(' ').map(str::to_owned).collect()).collect();
    assert!(runs.len() > 1, "one process for {} bytes of paths", list.len());
    assert_eq!(runs.iter().map(|r| r[0].parse::<usize>().unwrap()).sum::<usize>(), n);
    assert!(
        runs[0][1].ends_with("-000000.pgm")
            && runs.last().unwrap()[2].ends_with(&format!("-{:06}.pgm", n - 1))
    );
    for pair in runs.windows(2) {
        let (end, next): (usize, usize) = (
            pair[0][2].rsplit('-').next().unwrap()[..6].parse().unwrap(),
            pair[1][1].rsplit('-').next().unwrap()[..6].parse().unwrap(),
        );
        assert_eq!(next, end + 1, "the runs follow one another in the list");
    }
    let out =
        slurm_batch(&dir, &[], &["--task", "0/1", "files.txt", "sh", "-c", "echo ran; exit 3", "sh"], None);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "stopped at the first failure");
}
