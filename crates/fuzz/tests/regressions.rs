//! The harness in CI: every input that ever gave a finding is replayed, and a short campaign runs.

use std::collections::HashSet;
use std::time::Duration;

use histopipe_frame::{FrameErrorKind, FrameReader, ReadOptions};
use histopipe_fuzz::alloc::HeapMeter;
use histopipe_fuzz::campaign::{self, Budget, Config};
use histopipe_fuzz::finding::{Regressions, Saved};
use histopipe_fuzz::input::Input;
use histopipe_fuzz::target::{allocation_bound, check, check_mode, Limits, Mode};
use histopipe_fuzz::targets::{self, Target};
use image::ImageEncoder;

#[cfg(not(feature = "asan"))]
histopipe_fuzz::count_heap!();

fn saved() -> Vec<Saved> {
    Regressions::in_repository().load().expect("crates/fuzz/regressions is readable")
}

/// The saved findings of a target other than the reader's.
fn saved_of(target: Target) -> Vec<Saved> {
    target.regressions(&Regressions::in_repository()).load().expect("its regressions folder is readable")
}

/// A short fixed-seed campaign of `target`: `inputs` inputs on one worker, nothing new found.
fn short_campaign(target: Target, limits: Limits, inputs: u64) -> campaign::Summary {
    let dir = std::env::temp_dir().join(format!("histopipe-fuzz-{}-{}", target.name(), std::process::id()));
    let known: HashSet<String> = saved_of(target).into_iter().map(|s| s.signature).collect();
    let config = Config {
        budget: Budget::Inputs(inputs),
        jobs: 1,
        seed: 0x5eed,
        limits: Limits { target, ..limits },
        regressions: Regressions { dir: dir.clone() },
        known,
        corpus_dir: None,
        stop_on_finding: false,
        progress: None,
        minimize: Duration::from_secs(1),
    };
    let summary = campaign::run(&config).expect("the campaign runs");
    eprintln!(
        "{}: {} inputs in {:.1} s: corpus {}, outcome shapes {}, {} repeats of saved findings",
        target.name(),
        summary.inputs,
        summary.elapsed.as_secs_f64(),
        summary.corpus,
        summary.shapes,
        summary.repeats
    );
    let new: Vec<String> =
        summary.new.iter().map(|n| format!("{}: {}", n.path.display(), n.finding)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        new.is_empty(),
        "{}: new kinds of finding (copy them to crates/fuzz/regressions/{}):\n{}",
        target.name(),
        target.name(),
        new.join("\n")
    );
    assert_eq!(summary.inputs, inputs);
    summary
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
    let inputs = 50_000;
    let summary = short_campaign(Target::Reader, Limits::standard(), inputs);
    assert_eq!(summary.inputs, inputs);
    assert!(summary.shapes > 100, "only {} outcome shapes: are the mutations working?", summary.shapes);
    assert!(summary.corpus > 150, "the corpus did not grow past the seeds: {}", summary.corpus);
}

/// The writers, the side-file readers, the path templates and the service's messages, briefly each
/// (the tools' binaries too, a handful of inputs, when they are built): nothing new found, feedback
/// working.
#[test]
fn short_campaigns_of_the_other_targets_find_nothing_new() {
    let writers = short_campaign(Target::Writers, Limits::standard(), 1_500);
    assert!(writers.shapes > 20, "writers: only {} outcome shapes", writers.shapes);
    let side = short_campaign(Target::Side, Limits::standard(), 3_000);
    assert!(side.shapes > 10, "side: only {} outcome shapes", side.shapes);
    let templates = short_campaign(Target::Templates, Limits::standard(), 10_000);
    assert!(templates.shapes > 10, "templates: only {} outcome shapes", templates.shapes);
    let service = short_campaign(Target::Service, Limits::standard(), 5_000);
    assert!(service.shapes > 10, "service: only {} outcome shapes", service.shapes);
    match histopipe_fuzz::tools::Tools::shared() {
        Ok(_) => {
            short_campaign(Target::Tools, Limits::standard(), 200);
        }
        Err(e) => eprintln!("tools: not run: {e}"),
    }
}

/// The reader at a realistic --max-pixels, its time judged per input byte, briefly (2^20 pixels
/// in a debug build, where decoding is some fifty times slower).
#[test]
fn a_short_campaign_per_byte_finds_nothing_new() {
    let max_pixels = if cfg!(debug_assertions) { 1 << 20 } else { 1 << 26 };
    short_campaign(Target::Reader, Limits::per_byte(max_pixels), 1_000);
}

/// The per-byte check fires: at a planted rate of work ten thousand times too fast, a PNG that
/// decodes 2^22 zero pixels from a few kilobytes is over its budget; at the real rate it is not.
#[test]
fn work_over_the_per_byte_budget_is_a_finding() {
    // Enough pixels that an optimized build's reads, too, pass the budget's fixed 50 ms when the
    // rate is planted.
    let (side, max_pixels) = if cfg!(debug_assertions) { (2048, 1 << 22) } else { (8192, 1 << 26) };
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&vec![0u8; side * side], side as u32, side as u32, image::ExtendedColorType::L8)
        .unwrap();
    let input = Input::described(png);
    let real = Limits::per_byte(max_pixels);
    assert!(check_mode(&input, &real, Mode::Colour).is_ok());
    let planted = Limits { work: Some(real.work.unwrap() / 1e4), ..real };
    let finding = check_mode(&input, &planted, Mode::Colour).unwrap_err();
    assert_eq!(finding.signature, "slow per byte in png", "{finding}");
}

/// Every saved finding of the other targets now passes (templates: `{dir}{dir}` of a name without a
/// folder made `..`, refused since 6613de2).
#[test]
fn every_saved_finding_of_the_other_targets_now_passes() {
    let mut failing = Vec::new();
    for target in [Target::Writers, Target::Side, Target::Templates, Target::Tools, Target::Service] {
        let limits = Limits { target, ..Limits::standard() };
        for s in saved_of(target) {
            if let Err(f) = targets::check(&s.input, &limits) {
                failing.push(format!("{}: {f}", s.path.display()));
            }
        }
    }
    assert!(failing.is_empty(), "saved inputs still fail:\n{}", failing.join("\n"));
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
