//! The harness in CI: every input that ever gave a finding is replayed, and a short campaign runs.

use std::collections::HashSet;
use std::time::Duration;

use histopipe_fuzz::campaign::{self, Budget, Config};
use histopipe_fuzz::finding::{Regressions, Saved};
use histopipe_fuzz::target::{check, Limits};

fn saved() -> Vec<Saved> {
    Regressions::in_repository().load().expect("crates/fuzz/regressions is readable")
}

/// Every saved input now passes every check: no panic, heap and time within bounds, the same
/// frames from a slice and a pipe.
#[test]
fn every_saved_finding_now_passes() {
    let saved = saved();
    let failing: Vec<String> = saved
        .iter()
        .filter_map(|s| {
            check(&s.input, &Limits::standard()).err().map(|f| format!("{}: {f}", s.path.display()))
        })
        .collect();
    assert!(
        failing.is_empty(),
        "{} of {} saved inputs still fail:\n{}",
        failing.len(),
        saved.len(),
        failing.join("\n")
    );
}

/// Saved findings stay few, small and described, so the replay stays fast and each file says
/// what it found.
#[test]
fn saved_findings_are_small_and_described() {
    for s in saved() {
        let name = s.path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let kind = name.split('-').next().unwrap_or_default();
        assert!(s.signature.starts_with(kind), "{name}: signature '{}' is not of its kind", s.signature);
        assert!(!s.detail.is_empty(), "{name}: no description");
        assert!(s.input.bytes.len() <= 4096, "{name}: {} bytes; minimize it", s.input.bytes.len());
    }
}

/// A few thousand mutated inputs from a fixed seed, one worker, so the run is the same every time:
/// it must find no defect of a kind not already saved, and its feedback must work.
#[test]
fn a_short_campaign_finds_nothing_new() {
    let dir = std::env::temp_dir().join(format!("histopipe-fuzz-campaign-{}", std::process::id()));
    let known: HashSet<String> = saved().into_iter().map(|s| s.signature).collect();
    let inputs = 50_000;
    let config = Config {
        budget: Budget::Inputs(inputs),
        jobs: 1,
        seed: 0x5eed,
        limits: Limits::standard(),
        regressions: Regressions { dir: dir.clone() },
        known,
        corpus_dir: None,
        stop_on_finding: false,
        progress: None,
        minimize: Duration::from_secs(2),
    };
    let summary = campaign::run(&config).expect("the campaign runs");
    eprintln!(
        "{} inputs in {:.1} s: corpus {}, outcome shapes {}, {} repeats of saved findings",
        summary.inputs,
        summary.elapsed.as_secs_f64(),
        summary.corpus,
        summary.shapes,
        summary.repeats
    );
    let new: Vec<String> =
        summary.new.iter().map(|n| format!("{}: {}", n.path.display(), n.finding)).collect();
    assert!(
        new.is_empty(),
        "new kinds of finding (copy them to crates/fuzz/regressions):\n{}",
        new.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(summary.inputs, inputs);
    assert!(summary.shapes > 100, "only {} outcome shapes: are the mutations working?", summary.shapes);
    assert!(summary.corpus > 150, "the corpus did not grow past the seeds: {}", summary.corpus);
}
