//! A fuzz campaign: worker threads mutating a shared corpus, feedback, findings, a watchdog.
//!
//! Every seed is checked first and joins the corpus. Then each worker loops: pick two corpus
//! inputs, mutate one (splicing from the other), check it. An input joins the corpus when it
//! reached an edge no input reached before (coverage builds) or ended in a way no input ended
//! before (its [`Outcome::shape`](crate::target::Outcome::shape), in every build). A finding
//! whose signature is new is shrunk and saved to the regressions folder; one already known is
//! counted as a repeat. The main thread prints progress, ends the campaign when its budget is
//! spent, and stops it when a worker has been on one input far past the time limit (a hang: that
//! thread cannot be stopped, only left behind).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use fastrand::Rng;

use crate::coverage::{self, Seen};
use crate::crash;
use crate::finding::{Finding, FindingKind, Regressions};
use crate::input::Input;
use crate::minimize::minimize;
use crate::mutate::mutate;
use crate::target::{Container, Limits};
use crate::targets::check;

/// When a campaign ends.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    Time(Duration),
    /// This many inputs (seeds included): with one job, a run is then reproducible from its seed.
    Inputs(u64),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub budget: Budget,
    pub jobs: usize,
    pub seed: u64,
    pub limits: Limits,
    /// Where new findings are saved.
    pub regressions: Regressions,
    /// Signatures already saved: a finding with one of these is a repeat, not saved again.
    pub known: HashSet<String>,
    /// Where the corpus is kept between runs, if anywhere.
    pub corpus_dir: Option<PathBuf>,
    /// End at the first finding instead of running out the budget.
    pub stop_on_finding: bool,
    /// Print a progress line this often (to stderr).
    pub progress: Option<Duration>,
    /// Time to spend shrinking each new finding.
    pub minimize: Duration,
}

/// A finding saved by this run.
#[derive(Debug, Clone)]
pub struct NewFinding {
    pub path: PathBuf,
    pub finding: Finding,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub inputs: u64,
    pub elapsed: Duration,
    pub corpus: usize,
    pub edges_covered: usize,
    pub edges: usize,
    pub shapes: usize,
    pub new: Vec<NewFinding>,
    /// Findings of signatures known before, or found earlier in this run.
    pub repeats: u64,
    /// A worker was left reading an input that would not end (saved as a `hang` finding).
    pub hung: bool,
}

impl Summary {
    pub fn inputs_per_second(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn found_anything(&self) -> bool {
        !self.new.is_empty() || self.repeats > 0
    }
}

struct Findings {
    known: HashSet<String>,
    new: Vec<NewFinding>,
    repeats: u64,
}

/// An input a worker is reading, and since when: for the watchdog.
struct Reading {
    since: Instant,
    input: Arc<Input>,
}

/// What one worker is reading, if anything.
#[derive(Default)]
struct Slot {
    reading: Mutex<Option<Reading>>,
}

struct Shared {
    config: Config,
    corpus: RwLock<Vec<Arc<Input>>>,
    seen: Seen,
    shapes: Mutex<HashSet<u64>>,
    inputs: AtomicU64,
    stop: AtomicBool,
    findings: Mutex<Findings>,
    slots: Vec<Slot>,
    started: Instant,
}

/// A poisoned lock only means another worker panicked outside the guarded reader, which ends the
/// run anyway; its data is still whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Whether another input may start.
    fn take_ticket(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        let more = match self.config.budget {
            Budget::Time(t) => self.started.elapsed() < t,
            Budget::Inputs(n) => self
                .inputs
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |done| (done < n).then_some(done + 1))
                .is_ok(),
        };
        if !more {
            self.stop.store(true, Ordering::Relaxed);
        }
        more
    }

    fn run_one(&self, worker: usize, input: Arc<Input>, always_keep: bool) {
        let slot = &self.slots[worker].reading;
        *lock(slot) = Some(Reading { since: Instant::now(), input: input.clone() });
        let result = crash::reading(&input, || check(&input, &self.config.limits));
        *lock(slot) = None;
        if let Budget::Time(_) = self.config.budget {
            self.inputs.fetch_add(1, Ordering::Relaxed);
        }
        // Looked at even for a finding, so its edges are not credited to the next input.
        let new_edges = self.seen.grew();
        match result {
            Ok(outcome) => {
                let new_shape = lock(&self.shapes).insert(outcome.shape);
                if new_edges || new_shape || always_keep {
                    self.keep(input);
                }
            }
            Err(finding) => self.report(&input, finding),
        }
    }

    fn keep(&self, input: Arc<Input>) {
        if let Some(dir) = &self.config.corpus_dir {
            let path = dir.join(input.file_name(&format!("{:016x}", input.fingerprint())));
            if let Err(e) = std::fs::write(&path, &input.bytes) {
                eprintln!("histopipe-fuzz: cannot keep {}: {e}", path.display());
            }
        }
        self.corpus.write().unwrap_or_else(|p| p.into_inner()).push(input);
    }

    fn report(&self, input: &Input, finding: Finding) {
        {
            let mut findings = lock(&self.findings);
            if !findings.known.insert(finding.signature.clone()) {
                findings.repeats += 1;
                if self.config.stop_on_finding {
                    self.stop.store(true, Ordering::Relaxed);
                }
                return;
            }
        }
        let (input, finding) = if finding.kind.minimizable() {
            let small = minimize(input, &finding, &self.config.limits, self.config.minimize);
            // The detail of the small input, which is what is saved.
            match check(&small, &self.config.limits) {
                Err(f) if f.signature == finding.signature => (small, f),
                _ => (input.clone(), finding),
            }
        } else {
            (input.clone(), finding)
        };
        self.save(&input, finding);
    }

    fn save(&self, input: &Input, finding: Finding) {
        match self.config.regressions.save(input, &finding) {
            Ok(path) => {
                eprintln!(
                    "histopipe-fuzz: FINDING {} ({} bytes): {finding}",
                    path.display(),
                    input.bytes.len()
                );
                lock(&self.findings).new.push(NewFinding { path, finding });
            }
            Err(e) => eprintln!("histopipe-fuzz: FINDING (not saved: {e}): {finding}"),
        }
        if self.config.stop_on_finding {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn work(&self, worker: usize) {
        let mut rng =
            Rng::with_seed(self.config.seed ^ (worker as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        while self.take_ticket() {
            let (parent, other) = {
                let corpus = self.corpus.read().unwrap_or_else(|p| p.into_inner());
                (corpus[rng.usize(..corpus.len())].clone(), corpus[rng.usize(..corpus.len())].clone())
            };
            let child = Arc::new(mutate(&mut rng, &parent, &other));
            self.run_one(worker, child, false);
        }
    }

    /// The worker stuck on one input for longer than `after`, and that input.
    fn stuck(&self, after: Duration) -> Option<(usize, Arc<Input>)> {
        self.slots.iter().enumerate().find_map(|(w, slot)| match &*lock(&slot.reading) {
            Some(r) if r.since.elapsed() > after => Some((w, r.input.clone())),
            _ => None,
        })
    }

    fn progress(&self) -> String {
        let findings = lock(&self.findings);
        let inputs = self.inputs.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        format!(
            "{secs:.0} s: {inputs} inputs ({:.0}/s), corpus {}, edges {}/{}, outcome shapes {}, findings {} new + {} repeats",
            inputs as f64 / secs.max(1e-9),
            self.corpus.read().map(|c| c.len()).unwrap_or(0),
            self.seen.covered(),
            coverage::edges(),
            lock(&self.shapes).len(),
            findings.new.len(),
            findings.repeats
        )
    }
}

/// Corpus inputs saved by earlier runs.
fn load_corpus(dir: &Path) -> io::Result<Vec<Input>> {
    std::fs::create_dir_all(dir)?;
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(input) = Input::load(&entry?.path())? {
            inputs.push(input);
        }
    }
    Ok(inputs)
}

/// Runs a campaign to the end of its budget (or its first finding, or a hang).
pub fn run(config: &Config) -> Result<Summary, String> {
    let seeds = config.limits.target.seeds()?;
    let saved = match &config.corpus_dir {
        Some(dir) => load_corpus(dir).map_err(|e| format!("corpus {}: {e}", dir.display()))?,
        None => Vec::new(),
    };
    let jobs = config.jobs.max(1);
    let shared = Arc::new(Shared {
        config: config.clone(),
        corpus: RwLock::new(Vec::new()),
        seen: Seen::new(),
        shapes: Mutex::new(HashSet::new()),
        inputs: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        findings: Mutex::new(Findings { known: config.known.clone(), new: Vec::new(), repeats: 0 }),
        slots: (0..jobs).map(|_| Slot::default()).collect(),
        started: Instant::now(),
    });
    crash::install(&config.regressions.dir);
    // Seeds and the kept corpus first, all of them kept: the workers' starting points.
    for input in seeds.into_iter().map(|s| s.input).chain(saved) {
        if let Budget::Inputs(_) = config.budget {
            shared.inputs.fetch_add(1, Ordering::Relaxed);
        }
        shared.run_one(0, Arc::new(input), true);
    }
    let workers = (0..jobs)
        .map(|w| {
            let shared = shared.clone();
            thread::Builder::new().name(format!("fuzz-{w}")).stack_size(8 << 20).spawn(move || shared.work(w))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot start a worker: {e}"))?;
    let hang_after = config.limits.time * 5;
    let mut last_progress = Instant::now();
    let mut hung = None;
    while workers.iter().any(|w| !w.is_finished()) {
        thread::sleep(Duration::from_millis(20));
        if hung.is_none() {
            if let Some((worker, input)) = shared.stuck(hang_after) {
                let finding = Finding {
                    kind: FindingKind::Hang,
                    signature: format!("hang in {}", Container::sniff(&input.bytes).name()),
                    detail: format!("still reading after {:.0} s", hang_after.as_secs_f64()),
                };
                shared.stop.store(true, Ordering::Relaxed);
                shared.save(&input, finding);
                hung = Some(worker);
            }
        }
        // The stuck worker cannot be stopped: the others are waited for, it is left behind.
        if let Some(stuck) = hung {
            if workers.iter().enumerate().all(|(w, handle)| w == stuck || handle.is_finished()) {
                break;
            }
        }
        if config.progress.is_some_and(|every| last_progress.elapsed() >= every) {
            eprintln!("histopipe-fuzz: {}", shared.progress());
            last_progress = Instant::now();
        }
    }
    for (w, handle) in workers.into_iter().enumerate() {
        if Some(w) != hung && handle.join().is_err() {
            return Err(format!("worker {w} panicked outside the reader"));
        }
    }
    let (new, repeats) = {
        let findings = lock(&shared.findings);
        (findings.new.clone(), findings.repeats)
    };
    let shapes = lock(&shared.shapes).len();
    Ok(Summary {
        inputs: shared.inputs.load(Ordering::Relaxed),
        elapsed: shared.started.elapsed(),
        corpus: shared.corpus.read().map(|c| c.len()).unwrap_or(0),
        edges_covered: shared.seen.covered(),
        edges: coverage::edges(),
        shapes,
        new,
        repeats,
        hung: hung.is_some(),
    })
}
