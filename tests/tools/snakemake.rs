//! Snakemake (docs/scaling.md): the workflow of scripts/snakemake run here on a batch of
//! fixtures writes what one process over all the files writes, with one tool process a batch; a
//! batch with a file that fails fails alone; and its Slurm profile plans a job a batch, each with
//! a GPU, in a dry run on a machine without Slurm.
//!
//! Snakemake and its Slurm executor plugin come from PyPI, pinned, into .deps/venv
//! (scripts/requirements-test.txt, which scripts/test installs), whose Python is $HISTOPIPE_PYTHON;
//! without them the tests say they are skipped, or fail under CI=true, so that CI always runs them.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use crate::scaling::{assert_same_outputs, batch_dir, names_ending, one_process, skip_unless_ci, BATCH};

/// The workflow's folder, in Snakemake's layout: workflow/Snakefile, config/config.yaml,
/// profiles/slurm/config.yaml.
const WORKFLOW: &str = "scripts/snakemake";

/// What the stand-ins on PATH run: the tools that start a pipeline log their call and run the
/// real tool; Slurm's commands log their call and fail, as on a machine without Slurm.
const STAND_INS: &[(&str, bool)] = &[
    ("equalize", true),
    ("pad", true),
    ("sbatch", false),
    ("srun", false),
    ("squeue", false),
    ("sinfo", false),
    ("sacct", false),
    ("scontrol", false),
];

/// `python3 -m snakemake ARGS` in `dir`, with the workflow's Snakefile and its config (copied into
/// `dir/config`, where the Snakefile looks); on PATH the stand-ins of [`STAND_INS`] (in
/// `dir/bin`, logging to `dir/calls.log`), then the tools. Returns the output and the calls.
fn snakemake(dir: &Path, args: &[&str]) -> (Output, String) {
    let config = dir.join("config/config.yaml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::copy(repo().join(WORKFLOW).join("config/config.yaml"), &config).unwrap();
    stand_ins(&dir.join("bin"));
    let calls = dir.join("calls.log");
    let _ = std::fs::remove_file(&calls);
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path_with_tools()));
    let out = python_snakemake()
        .args(["--snakefile", repo().join(WORKFLOW).join("workflow/Snakefile").to_str().unwrap()])
        .arg("--directory")
        .arg(dir)
        .args(args)
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("CALLS", &calls)
        .env_remove("HISTOPIPE_BACKEND")
        .env_remove("HISTOPIPE_THREADS")
        // Outside a Slurm job, as on a login node.
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap_or_else(|e| panic!("python3 -m snakemake: {e}"));
    (out, std::fs::read_to_string(&calls).unwrap_or_default())
}

/// `python3 -m snakemake`, with the Python of [`python`].
fn python_snakemake() -> Command {
    let mut cmd = python();
    cmd.args(["-m", "snakemake"]);
    cmd
}

/// Python: $HISTOPIPE_PYTHON (scripts/env.sh sets it to .deps/venv's), else python3.
fn python() -> Command {
    Command::new(std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into()))
}

/// Whether Snakemake 9 and its Slurm executor plugin can be imported; if not, a skip or, under
/// CI=true, a failure.
fn snakemake_installed() -> bool {
    let script = "import snakemake, snakemake_executor_plugin_slurm; print(snakemake.__version__)";
    let out = python().args(["-c", script]).output();
    if out.is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("9.")) {
        return true;
    }
    skip_unless_ci(
        "Snakemake 9 with snakemake-executor-plugin-slurm is not installed: scripts/test installs \
         them into .deps/venv",
    );
    false
}

/// Writes [`STAND_INS`] into `bin`.
fn stand_ins(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    let tools = assert_cmd::cargo::cargo_bin("pad").parent().unwrap().to_path_buf();
    for (name, real) in STAND_INS {
        let run = if *real {
            format!("exec '{}' \"$@\"", tools.join(name).to_str().unwrap().replace('\'', r"'\''"))
        } else {
            "exit 1".to_owned()
        };
        let script = format!("#!/bin/sh\necho \"{name} $*\" >>\"$CALLS\"\n{run}\n");
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

/// The calls of `tool` in a log of the stand-ins.
fn calls_of<'a>(calls: &'a str, tool: &str) -> Vec<&'a str> {
    calls.lines().filter(|l| l.split(' ').next() == Some(tool)).collect()
}

fn both(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The workflow over the 7 files of the batch in batches of 3, `equalize` and then the pipeline
/// `pad | rotate 30 | colhist`: the outputs are one process's over all the files (frames byte for
/// byte, tables past their frame column), and the first tool ran 3 times, each over its batch,
/// the files in sorted order (one with a space in its name).
#[test]
fn the_workflow_writes_what_one_process_writes_one_process_a_batch() {
    if !snakemake_installed() {
        return;
    }
    let (dir, files) = batch_dir("snakemake-local");
    one_process(&dir, &files, "expected");
    let mut sorted = files.clone();
    sorted.sort();
    for (pipeline, first, ext) in
        [("[equalize]", "equalize", "pgm"), ("[pad, rotate 30, colhist]", "pad", "csv")]
    {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let pipeline = format!("pipeline={pipeline}");
        let extension = format!("extension={ext}");
        let config = ["batch=3", "backend=cpu", pipeline.as_str(), extension.as_str()];
        let (out, calls) = snakemake(&dir, &[&["--cores", "2", "--config"][..], &config].concat());
        let what = format!("the workflow with {pipeline}");
        assert!(out.status.success(), "{what}: {}", both(&out));
        assert_same_outputs(&dir.join("out"), &dir.join("expected"), ext, &what);
        let mut runs = calls_of(&calls, first);
        assert_eq!(runs.len(), 3, "{what}: not one process a batch of 3 of 7 files: {calls}");
        runs.sort_by_key(|run| sorted.iter().position(|f| run.contains(f.as_str())));
        for (run, batch) in runs.iter().zip(sorted.chunks(3)) {
            let named: Vec<&String> = sorted.iter().filter(|f| run.contains(f.as_str())).collect();
            assert_eq!(named, batch.iter().collect::<Vec<_>>(), "{what}: {run}");
        }
    }
}

/// A file that is no image, first of the sorted files: its batch's job fails, so Snakemake
/// exits non-zero and removes that batch's outputs, and (--keep-going) the other batches' are
/// written as one process writes them.
#[test]
fn a_batch_with_a_file_that_fails_fails_alone() {
    if !snakemake_installed() {
        return;
    }
    let (dir, files) = batch_dir("snakemake-failure");
    one_process(&dir, &files, "expected");
    std::fs::write(dir.join("scans/bad.pgm"), b"P5 not an image\n").unwrap();
    let config = ["--config", "batch=3", "backend=cpu", "extension=pgm"];
    let (out, calls) = snakemake(&dir, &[&["--cores", "2", "--keep-going"][..], &config].concat());
    assert!(!out.status.success(), "a failed batch, yet exit 0: {}", both(&out));
    assert_eq!(calls_of(&calls, "equalize").len(), 3, "{calls}");
    // bad.pgm, brick.pgm, camera.pgm are the first batch; the rest are the other two.
    let written = names_ending(&dir.join("out"), "pgm");
    let mut rest: Vec<String> =
        BATCH.iter().map(|(_, name)| name.to_string()).filter(|name| name.as_str() > "camera.pgm").collect();
    rest.sort();
    assert_eq!(written, rest, "{}", both(&out));
    for name in &written {
        let read = |folder: &str| std::fs::read(dir.join(folder).join(name)).unwrap();
        assert!(read("out") == read("expected"), "{name} differs from one process's");
    }
}

/// The Slurm profile's dry run (-n) on a machine without Slurm (sbatch and the rest are stand-ins
/// that fail): a job a batch of 3 of the 7 files, each asking for a GPU (gres=gpu:1) on the gpu
/// partition, and nothing submitted, run or written.
#[test]
fn the_slurm_profile_plans_a_gpu_job_a_batch() {
    if !snakemake_installed() {
        return;
    }
    let (dir, _) = batch_dir("snakemake-slurm");
    let profile = repo().join(WORKFLOW).join("profiles/slurm");
    let (out, calls) =
        snakemake(&dir, &["--profile", profile.to_str().unwrap(), "-n", "-p", "--config", "batch=3"]);
    let text = both(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("This was a dry-run"), "{text}");
    // The plugin may ask Slurm for its settings (`scontrol show config`, which fails here); it
    // must submit nothing, and no tool may run.
    for program in ["sbatch", "srun", "equalize", "pad"] {
        assert_eq!(calls_of(&calls, program), Vec::<&str>::new(), "the dry run ran {program}: {text}");
    }
    assert!(!dir.join("out").exists(), "the dry run wrote outputs");
    // Each planned job: `rule NAME:`, its fields indented, then its shell command.
    let jobs: Vec<&str> = text.split("\nrule ").skip(1).filter(|job| job.starts_with("batch_")).collect();
    assert_eq!(jobs.len(), 3, "not a job a batch: {text}");
    let mut planned = 0;
    for job in jobs {
        let resources = job.lines().find_map(|l| l.trim_start().strip_prefix("resources: ")).unwrap_or("");
        for wanted in ["gres=gpu:1", "slurm_partition=gpu", "runtime=120", "mem_mb=16000"] {
            assert!(resources.split(", ").any(|r| r == wanted), "{wanted}: {job}");
        }
        let command = job.lines().find(|l| l.starts_with("Shell command: ")).unwrap_or("");
        assert!(
            command.contains(" equalize --backend auto ") && command.ends_with(" -o 'out/{stem}.png'"),
            "{job}"
        );
        planned += command.matches("scans/").count();
    }
    assert_eq!(planned, 7, "not every file in one batch: {text}");
}
