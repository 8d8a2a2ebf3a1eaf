//! `histopipe-fuzz`: fuzzes histopipe's frame reader for a while, or replays saved inputs.
//! `scripts/fuzz` builds and runs it; docs/fuzzing.md says what it checks.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use histopipe_fuzz::campaign::{self, Budget, Config};
use histopipe_fuzz::coverage;
use histopipe_fuzz::finding::Regressions;
use histopipe_fuzz::input::Input;
use histopipe_fuzz::target::{Limits, REALISTIC_MAX_PIXELS};
use histopipe_fuzz::targets::{check, Target};

// The heap is counted, C's blocks too, except under AddressSanitizer, whose allocator checks them.
#[cfg(not(feature = "asan"))]
histopipe_fuzz::count_heap!();

const USAGE: &str = "\
usage: histopipe-fuzz [OPTIONS]
       histopipe-fuzz --replay FILE...

Fuzzes histopipe's frame reader: every input is read to its end from a slice and through a pipe
that gives 1-7 bytes per read, and must not panic, must stay within the allocation bound and the
time limit, and must give the same frames and error both ways. Other targets: the frame writers,
the side-file readers, path templates, the tools' binaries and the GPU service's messages
(docs/fuzzing.md). Each new kind of finding is saved to the regressions folder (a folder of the
target's name in it, but for the reader's). Exit status: 0 nothing found, 1 something found, 2 bad
usage.

  --target T         reader (default), writers, side, templates, tools or service
  --work-per-byte    judge the reader's time per input byte (CPU time within a budget of
                     read_work_bound), at --max-pixels 2^26 unless given

  --seconds N        run for N seconds (default 60)
  --inputs N         run exactly N inputs instead; with --jobs 1 a run repeats from its --seed
  --jobs N           worker threads (default: one per core)
  --seed S           random seed (default: from the clock; printed at the start)
  --max-pixels N     the reader's --max-pixels (default 65536; 2^26 with --work-per-byte)
  --time-limit S     seconds an input may take, both reads together (default 2)
  --corpus DIR       keep the corpus in DIR, and start from what is there
  --regressions DIR  where findings go (default: the crate's regressions/ folder)
  --minimize S       seconds spent shrinking each new finding (default 10)
  --first            stop at the first finding
  --quiet            no progress lines
  --replay FILE...   check saved inputs (named as the harness names them), print each outcome
";

struct Options {
    config: Config,
    replay: Vec<PathBuf>,
}

fn parse() -> Result<Options, lexopt::Error> {
    use lexopt::prelude::*;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut config = Config {
        budget: Budget::Time(Duration::from_secs(60)),
        jobs,
        seed: clock.as_nanos() as u64,
        limits: Limits::standard(),
        regressions: Regressions::in_repository(),
        known: HashSet::new(),
        corpus_dir: None,
        stop_on_finding: false,
        progress: Some(Duration::from_secs(5)),
        minimize: Duration::from_secs(10),
    };
    let mut replay = Vec::new();
    let mut replaying = false;
    let mut per_byte = false;
    let mut max_pixels = None;
    let mut regressions = None;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("seconds") => {
                config.budget = Budget::Time(Duration::from_secs_f64(parser.value()?.parse()?))
            }
            Long("inputs") => config.budget = Budget::Inputs(parser.value()?.parse()?),
            Long("jobs") => config.jobs = parser.value()?.parse()?,
            Long("seed") => config.seed = parser.value()?.parse()?,
            Long("max-pixels") => max_pixels = Some(parser.value()?.parse()?),
            Long("target") => config.limits.target = Target::parse(&parser.value()?.string()?)?,
            Long("work-per-byte") => per_byte = true,
            Long("time-limit") => config.limits.time = Duration::from_secs_f64(parser.value()?.parse()?),
            Long("corpus") => config.corpus_dir = Some(parser.value()?.into()),
            Long("regressions") => regressions = Some(Regressions { dir: parser.value()?.into() }),
            Long("minimize") => config.minimize = Duration::from_secs_f64(parser.value()?.parse()?),
            Long("first") => config.stop_on_finding = true,
            Long("quiet") => config.progress = None,
            Long("replay") => replaying = true,
            Long("asan-selftest") => asan_selftest(),
            Value(path) if replaying => replay.push(path.into()),
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    let target = config.limits.target;
    if per_byte {
        config.limits = Limits { target, ..Limits::per_byte(max_pixels.unwrap_or(REALISTIC_MAX_PIXELS)) };
    } else if let Some(max_pixels) = max_pixels {
        config.limits.max_pixels = max_pixels;
    }
    if target == Target::Tools {
        // The tools' own guard kills a run first; the watchdog is for the harness.
        config.limits.time = config.limits.time.max(histopipe_fuzz::tools::WALL);
    }
    // The given folder is the target's own; the default is the repository's, by target.
    config.regressions = regressions.unwrap_or_else(|| target.regressions(&Regressions::in_repository()));
    if replaying && replay.is_empty() {
        return Err("--replay needs at least one file".into());
    }
    Ok(Options { config, replay })
}

/// Shows that libjpeg-turbo's C is checked by AddressSanitizer (`scripts/fuzz --asan` runs it
/// before fuzzing): its own instrumented stores go past a block too small for what it fills, and
/// ASan must stop the program with a heap-buffer-overflow report.
#[cfg(feature = "asan")]
fn asan_selftest() -> ! {
    // SAFETY: none, on purpose: the block is 16 bytes, the error manager libjpeg-turbo fills in
    // is larger; the program is to be stopped at the first store past it.
    unsafe {
        let block = libc::malloc(16).cast::<mozjpeg_sys::jpeg_error_mgr>();
        mozjpeg_sys::jpeg_std_error(&mut *block);
    }
    eprintln!("histopipe-fuzz: --asan-selftest: libjpeg-turbo wrote past a block and nothing stopped it");
    std::process::exit(1)
}

#[cfg(not(feature = "asan"))]
fn asan_selftest() -> ! {
    eprintln!("histopipe-fuzz: --asan-selftest: this build has no AddressSanitizer (scripts/fuzz --asan)");
    std::process::exit(2)
}

/// Checks each saved input once and says what it does.
fn replay(paths: &[PathBuf], limits: &Limits) -> ExitCode {
    let mut failed = false;
    for path in paths {
        let input = match Input::load(path) {
            Ok(Some(input)) => input,
            Ok(None) => {
                eprintln!(
                    "histopipe-fuzz: {}: not a saved input (NAME.bin or NAME.raw-WxH[-16].bin)",
                    path.display()
                );
                failed = true;
                continue;
            }
            Err(e) => {
                eprintln!("histopipe-fuzz: {}: {e}", path.display());
                failed = true;
                continue;
            }
        };
        let about =
            format!("{} ({}, hash {:016x})", path.display(), input.describe_mode(), input.fingerprint());
        match check(&input, limits) {
            Ok(outcome) => println!("{about}: ok: {outcome}"),
            Err(finding) => {
                println!("{about}: FINDING: {finding}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let mut options = match parse() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("histopipe-fuzz: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !options.replay.is_empty() {
        return replay(&options.replay, &options.config.limits);
    }
    let config = &mut options.config;
    match config.regressions.load() {
        Ok(saved) => config.known = saved.into_iter().map(|s| s.signature).collect(),
        Err(e) => {
            eprintln!("histopipe-fuzz: {}: {e}", config.regressions.dir.display());
            return ExitCode::from(2);
        }
    }
    eprintln!(
        "histopipe-fuzz: target {}{}, seed {}, {} jobs, {}, {}, {} known findings in {}",
        config.limits.target.name(),
        if config.limits.work.is_some() {
            format!(" (time per byte, --max-pixels {})", config.limits.max_pixels)
        } else {
            String::new()
        },
        config.seed,
        config.jobs,
        if coverage::ENABLED {
            format!("coverage-guided ({} edges)", coverage::edges())
        } else {
            "no coverage (a plain build: outcome feedback only; scripts/fuzz builds with coverage)".into()
        },
        if histopipe_fuzz::alloc::counting() {
            "heap counted (Rust's and C's blocks)"
        } else {
            "heap not counted (no alloc checks: a sanitizer's allocator)"
        },
        config.known.len(),
        config.regressions.dir.display()
    );
    let summary = match campaign::run(config) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("histopipe-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "histopipe-fuzz: {} inputs in {:.1} s = {:.0} inputs/s ({} jobs, seed {}); corpus {}, edges {}/{}, \
         outcome shapes {}; {} new findings, {} repeats{}",
        summary.inputs,
        summary.elapsed.as_secs_f64(),
        summary.inputs_per_second(),
        config.jobs,
        config.seed,
        summary.corpus,
        summary.edges_covered,
        summary.edges,
        summary.shapes,
        summary.new.len(),
        summary.repeats,
        if summary.hung { "; a worker hung and was left behind" } else { "" }
    );
    for new in &summary.new {
        println!("  {}: {}", new.path.display(), new.finding);
    }
    if summary.found_anything() || summary.hung {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
