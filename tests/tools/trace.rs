//! HISTOPIPE_TRACE: every tool of a pipeline appends a line per stage of each frame to one file,
//! which loads as a table and which scripts/trace-summary sums up; the outputs are unchanged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::common::*;

const STAGES: &[&str] = &["read", "read.wait", "work", "encode", "write", "write.wait"];

/// One line of a trace file.
#[derive(Debug)]
struct Line {
    tool: String,
    pid: u32,
    stage: String,
    frame: usize,
    start_us: u64,
    dur_us: u64,
}

/// The lines of the trace at `path`, after checking its header comes first and once.
fn lines(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut rows = text.lines();
    assert_eq!(rows.next(), Some("tool,pid,stage,frame,start_us,dur_us"));
    rows.map(|row| {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), 6, "{row:?}");
        Line {
            tool: f[0].into(),
            pid: f[1].parse().unwrap(),
            stage: f[2].into(),
            frame: f[3].parse().unwrap(),
            start_us: f[4].parse().unwrap(),
            dur_us: f[5].parse().unwrap(),
        }
    })
    .collect()
}

fn bash(dir: &Path, script: &str, trace: Option<&Path>) -> std::process::Output {
    let mut cmd = shell(dir, script);
    cmd.env_remove("HISTOPIPE_TRACE");
    if let Some(trace) = trace {
        cmd.env("HISTOPIPE_TRACE", trace);
    }
    cmd.output().unwrap()
}

#[test]
fn every_tool_of_a_pipeline_traces_every_stage_of_every_frame() {
    let dir = temp_dir("trace-pipeline");
    for name in ["camera.pgm", "moon.pgm", "coins.pgm"] {
        std::fs::copy(fixture(name), dir.join(name)).unwrap();
    }
    let script = "pad camera.pgm moon.pgm coins.pgm | rotate 30 | colhist";
    let plain = bash(&dir, script, None);
    assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(!dir.join("trace.csv").exists());
    let traced = bash(&dir, script, Some(&dir.join("trace.csv")));
    assert!(traced.status.success(), "{}", String::from_utf8_lossy(&traced.stderr));
    assert!(traced.stdout == plain.stdout, "the output changed with a trace");

    let lines = lines(&dir.join("trace.csv"));
    let mut seen: BTreeMap<(&str, &str), BTreeSet<usize>> = BTreeMap::new();
    let mut pids: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for l in &lines {
        seen.entry((l.tool.as_str(), l.stage.as_str())).or_default().insert(l.frame);
        pids.entry(l.tool.as_str()).or_default().insert(l.pid);
        // Microseconds of the wall clock: after 2020, and no stage of these takes a minute.
        assert!(l.start_us > 1_577_836_800_000_000 && l.dur_us < 60_000_000, "{l:?}");
    }
    for tool in ["pad", "rotate", "colhist"] {
        assert_eq!(pids[tool].len(), 1, "{tool}: one process");
        for stage in STAGES {
            assert_eq!(seen.get(&(tool, *stage)), Some(&BTreeSet::from([1, 2, 3])), "{tool} {stage}");
        }
    }
    assert_eq!(seen.len(), 3 * STAGES.len(), "no other stages on the CPU: {seen:?}");
    // The waits are parts of their stages.
    for l in lines.iter().filter(|l| l.stage.ends_with(".wait")) {
        let whole = l.stage.trim_end_matches(".wait");
        let of = lines.iter().find(|m| m.pid == l.pid && m.frame == l.frame && m.stage == whole).unwrap();
        assert!(l.dur_us <= of.dur_us && l.start_us == of.start_us, "{l:?} in {of:?}");
    }

    // The summary names each tool and its stages.
    let summary =
        Command::new(repo().join("scripts/trace-summary")).arg(dir.join("trace.csv")).output().unwrap();
    assert!(summary.status.success(), "{}", String::from_utf8_lossy(&summary.stderr));
    let text = String::from_utf8(summary.stdout).unwrap();
    for tool in ["pad", "rotate", "colhist"] {
        assert!(text.contains(&format!("{tool} (pid ")) && text.contains(", 3 frames"), "{text}");
    }
    assert!(text.lines().filter(|l| l.trim_start().starts_with("write.wait")).count() == 3, "{text}");
}

#[test]
fn a_trace_appends_and_files_of_their_own_are_traced_as_encode() {
    let dir = temp_dir("trace-files");
    std::fs::copy(fixture("camera.pgm"), dir.join("a.pgm")).unwrap();
    std::fs::copy(fixture("moon.pgm"), dir.join("b.pgm")).unwrap();
    let trace = dir.join("trace.csv");
    for _ in 0..2 {
        let out = bash(&dir, "equalize -o 'out/{stem}.png' a.pgm b.pgm", Some(&trace));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let lines = lines(&trace);
    let pids: BTreeSet<u32> = lines.iter().map(|l| l.pid).collect();
    assert_eq!(pids.len(), 2, "two runs, one header, appended");
    for pid in pids {
        let frames = |stage: &str| -> BTreeSet<usize> {
            lines.iter().filter(|l| l.pid == pid && l.stage == stage).map(|l| l.frame).collect()
        };
        assert_eq!(frames("encode"), BTreeSet::from([1, 2]));
        assert_eq!(frames("write"), BTreeSet::from([1, 2]));
    }
}

#[test]
fn a_trace_that_cannot_be_written_is_refused_before_any_input() {
    let dir = temp_dir("trace-refused");
    let out = tool("equalize")
        .env("HISTOPIPE_TRACE", dir.join("no/such/folder/trace.csv"))
        .args(["--backend", "cpu"])
        .write_stdin(fixture_bytes("camera.pgm"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("equalize: HISTOPIPE_TRACE=") && stderr.lines().count() == 1, "{stderr}");
}

/// On the GPU, the copies are traced too, as parts of the frames' work.
#[test]
fn gpu_copies_are_traced_within_the_work() {
    let Some(_gpu) = gpu() else { return };
    let dir = temp_dir("trace-gpu");
    let trace = dir.join("trace.csv");
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("moon.pgm")]);
    let out = tool("equalize")
        .env("HISTOPIPE_TRACE", &trace)
        .args(["--backend", "gpu"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = lines(&trace);
    for stage in ["gpu.upload", "gpu.download"] {
        let frames: BTreeSet<usize> = lines.iter().filter(|l| l.stage == stage).map(|l| l.frame).collect();
        assert_eq!(frames, BTreeSet::from([1, 2]), "{stage}");
    }
    for l in lines.iter().filter(|l| l.stage.starts_with("gpu.")) {
        let work = lines.iter().find(|m| m.stage == "work" && m.frame == l.frame).unwrap();
        assert!(l.start_us >= work.start_us && l.dur_us <= work.dur_us, "{l:?} within {work:?}");
    }
}
