//! The harness in CI: every input that ever gave a finding is replayed, and a short campaign runs.

use std::collections::HashSet;
use std::time::Duration;

use histopipe_frame::{FrameErrorKind, FrameReader, ReadOptions};
use histopipe_fuzz::alloc::HeapMeter;
use histopipe_fuzz::campaign::{self, Budget, Config};
use histopipe_fuzz::finding::{Regressions, Saved};
use histopipe_fuzz::target::{allocation_bound, check, Limits};

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

/// A FITS of 8-bit samples with BSCALE becomes float32, four bytes a sample from one, and read as
/// gray its conversion held the colour frame and two gray planes at once: near 2^20 pixels that
/// was over the bound (10.3 MB held, 8.7 MB allowed). Made here rather than saved: it takes
/// 1.7 MB, past what the mutator grows an input to (`mutate::MAX_LEN`), so no campaign reaches
/// it; read directly, as `check` reads one input in eight with a pixel limit sixteen times this.
#[test]
fn a_large_scaled_colour_fits_read_as_gray_keeps_to_the_bound() {
    let (w, h, c) = (656usize, 656usize, 4usize);
    let card = |text: String| format!("{text:<80}").into_bytes();
    let mut bytes = Vec::new();
    for (key, value) in [
        ("SIMPLE", "T".to_string()),
        ("BITPIX", "8".into()),
        ("NAXIS", "3".into()),
        ("NAXIS1", w.to_string()),
        ("NAXIS2", h.to_string()),
        ("NAXIS3", c.to_string()),
        ("BSCALE", "0.5".into()),
    ] {
        bytes.extend(card(format!("{key:<8}= {value:>20}")));
    }
    bytes.extend(card("END".into()));
    bytes.resize(2880, b' ');
    bytes.extend((0..w * h * c).map(|i| (i % 251) as u8));
    let max_pixels = 1 << 20;
    let bound = allocation_bound(max_pixels, bytes.len());
    for gray in [false, true] {
        let meter = HeapMeter::start();
        let read = FrameReader::new(&bytes[..], ReadOptions { raw: None, max_pixels, gray }).next_frame();
        let peak = meter.peak();
        match read {
            Ok(Some(_)) => {}
            Err(e) if e.kind == FrameErrorKind::TooLarge => {}
            other => panic!("gray {gray}: {other:?}"),
        }
        assert!(peak <= bound, "gray {gray}: held {peak} bytes, over the bound of {bound}");
    }
}
