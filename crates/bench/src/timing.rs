//! Timing GPU work with CUDA events, and CPU work with the host clock.
//!
//! GPU: after warm-up, runs are queued in batches behind a short spin kernel that keeps the GPU
//! busy while the host queues the batch; an event is recorded between consecutive runs, so each
//! interval is one run's device time without the host's launch gaps (the GPU is always backed up).
//! Each run is one sample; the statistics are over all samples.

use std::cell::Cell;
use std::time::Instant;

use histopipe_gpu::cudarc::driver::sys::CUevent_flags;
use histopipe_gpu::cudarc::driver::{CudaEvent, LaunchConfig, PushKernelArg};
use histopipe_gpu::kernels::Source;
use histopipe_gpu::Gpu;

use crate::BenchError;

/// How long to measure each case.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub warmup: usize,
    pub min_runs: usize,
    pub max_runs: usize,
    /// Target measuring time per case; the run count is fitted to it within min..max.
    pub budget_ms: f64,
}

impl Plan {
    pub const FULL: Plan = Plan { warmup: 3, min_runs: 10, max_runs: 200, budget_ms: 300.0 };
    pub const QUICK: Plan = Plan { warmup: 2, min_runs: 5, max_runs: 50, budget_ms: 60.0 };

    fn runs_for(&self, estimate_ms: f64) -> usize {
        // Slow cases (dense 16K^2 Hough) are not worth many runs of a scarce device.
        if estimate_ms > SLOW_MS {
            return SLOW_RUNS.min(self.max_runs);
        }
        let fit = (self.budget_ms / estimate_ms.max(1e-4)) as usize;
        fit.clamp(self.min_runs, self.max_runs)
    }
}

const SLOW_MS: f64 = 250.0;
const SLOW_RUNS: usize = 3;

/// Order statistics of one case's samples, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub p90: f64,
    pub runs: usize,
    /// Host time to queue one run, in microseconds (GPU timings only): where it exceeds the
    /// median, a stream of single runs would be bound by launches, not by the kernels.
    pub queue_us: Option<f64>,
    /// Minor page faults of the process per timed run (CPU timings on Linux only): a fresh output
    /// faulted in by the kernel, which zeroes each page first, and whose unmapping then stops
    /// every thread that touched it (a TLB shootdown).
    pub faults: Option<f64>,
}

impl Stats {
    pub fn of(mut samples: Vec<f64>) -> Stats {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        if n == 0 {
            return Stats {
                median: f64::NAN,
                min: f64::NAN,
                p90: f64::NAN,
                runs: 0,
                queue_us: None,
                faults: None,
            };
        }
        let at = |q: f64| samples[((n - 1) as f64 * q).round() as usize];
        let median = if n % 2 == 1 { samples[n / 2] } else { (samples[n / 2 - 1] + samples[n / 2]) / 2.0 };
        Stats { median, min: samples[0], p90: at(0.9), runs: n, queue_us: None, faults: None }
    }
}

const SPIN: Source = Source {
    name: "bench_spin.cu",
    text: r#"
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}
"#,
};

/// Runs per batch: the host queues them while the spin kernel runs.
const BATCH: usize = 50;
/// The first spin; each batch then spins at least twice as long as the host took to queue the
/// previous one, so the GPU never waits for the host inside a batch.
const SPIN_NS: u64 = 1_500_000;
const MAX_SPIN_NS: u64 = 100_000_000;

pub struct GpuTimer<'g> {
    gpu: &'g Gpu,
    events: Vec<CudaEvent>,
    plan: Plan,
    spin_ns: Cell<u64>,
}

impl<'g> GpuTimer<'g> {
    pub fn new(gpu: &'g Gpu, plan: Plan) -> Result<GpuTimer<'g>, BenchError> {
        let events = (0..=BATCH)
            .map(|_| gpu.context().new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GpuTimer { gpu, events, plan, spin_ns: Cell::new(SPIN_NS) })
    }

    fn spin(&self) -> Result<(), BenchError> {
        let f = self.gpu.function(&SPIN, "spin")?;
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.gpu.stream().launch_builder(&f);
        let ns = self.spin_ns.get();
        launch.arg(&ns);
        // SAFETY: spin(u64 ns) takes the one u64 given; it reads and writes no memory.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// Times `run(i)` (which queues work on the GPU's stream; `i` counts runs, for rotating among
    /// input sets).
    pub fn time(&self, run: &mut dyn FnMut(usize) -> Result<(), BenchError>) -> Result<Stats, BenchError> {
        let stream = self.gpu.stream();
        // Each case sizes its own spin: one that waits on the host inside a run (edges) would
        // otherwise leave the longest spin to every later case.
        self.spin_ns.set(SPIN_NS);
        let mut i = 0;
        for _ in 0..self.plan.warmup {
            run(i)?;
            i += 1;
        }
        self.gpu.synchronize()?;
        let (probe, _) = self.batch(&mut i, 3, run)?;
        let runs = self.plan.runs_for(Stats::of(probe).median);
        let mut samples = Vec::with_capacity(runs);
        let mut queue_ns = 0.0;
        while samples.len() < runs {
            let n = (runs - samples.len()).min(BATCH);
            let (batch, ns) = self.batch(&mut i, n, run)?;
            samples.extend(batch);
            queue_ns += ns;
        }
        stream.synchronize()?;
        let mut stats = Stats::of(samples);
        stats.queue_us = Some(queue_ns / 1e3 / stats.runs.max(1) as f64);
        Ok(stats)
    }

    fn batch(
        &self,
        i: &mut usize,
        n: usize,
        run: &mut dyn FnMut(usize) -> Result<(), BenchError>,
    ) -> Result<(Vec<f64>, f64), BenchError> {
        let stream = self.gpu.stream();
        self.spin()?;
        self.events[0].record(stream)?;
        let t = Instant::now();
        for k in 0..n {
            run(*i)?;
            *i += 1;
            self.events[k + 1].record(stream)?;
        }
        let queue_ns = t.elapsed().as_nanos() as f64;
        // Sized for a full batch, whatever this one's length.
        let next = (2.0 * queue_ns * BATCH as f64 / n as f64) as u64;
        self.spin_ns.set(next.clamp(self.spin_ns.get(), MAX_SPIN_NS));
        stream.synchronize()?;
        let samples = (0..n)
            .map(|k| Ok(self.events[k].elapsed_ms(&self.events[k + 1])? as f64))
            .collect::<Result<_, BenchError>>()?;
        Ok((samples, queue_ns))
    }
}

/// Milliseconds of warm-up runs before a CPU function is timed (after its first run): with one
/// run, the first case timed on 2 threads was bimodal, min 0.61 ms and median 1.2 (colhist of
/// 2560x1707 random, Zen 5 VM: the pool's second thread not yet running at speed), and with 100 ms
/// it measured as every later case did, median 0.62. `cpu_peers.py` warms OpenCV the same way.
const WARM_MS: f64 = 100.0;

/// Times a CPU function with the host clock: a first run, [`WARM_MS`] of warm-up runs, then runs
/// fitted to the plan's budget. A function slower than a second is run once after the first
/// (16K^2 Hough on one thread).
pub fn time_cpu(plan: Plan, run: &mut dyn FnMut() -> Result<(), BenchError>) -> Result<Stats, BenchError> {
    let once = |run: &mut dyn FnMut() -> Result<(), BenchError>| -> Result<f64, BenchError> {
        let t = Instant::now();
        run()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let first = once(run)?;
    if first > 1000.0 {
        return Ok(Stats::of(vec![first]));
    }
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() * 1e3 < WARM_MS {
        once(run)?;
    }
    let runs = plan.runs_for(first).min(if first > 50.0 { plan.min_runs.min(5) } else { plan.max_runs });
    let mut samples = Vec::with_capacity(runs);
    let faults = minor_faults();
    for _ in 0..runs {
        samples.push(once(run)?);
    }
    let faults = faults.zip(minor_faults()).map(|(a, b)| b.saturating_sub(a) as f64 / runs as f64);
    Ok(Stats { faults, ..Stats::of(samples) })
}

/// The process's minor page faults so far (`minflt`, the 10th field of `/proc/self/stat`, after
/// the command's name in parentheses); `None` where there is no such file.
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(7)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        let s = Stats::of(vec![5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.median, s.min, s.runs), (3.0, 1.0, 5));
        assert_eq!(s.p90, 5.0);
        assert_eq!(Stats::of(vec![1.0, 2.0]).median, 1.5);
    }

    #[test]
    fn runs_fit_the_budget() {
        let p = Plan { warmup: 1, min_runs: 5, max_runs: 100, budget_ms: 100.0 };
        assert_eq!(p.runs_for(10.0), 10);
        assert_eq!(p.runs_for(200.0), 5);
        assert_eq!(p.runs_for(1000.0), 3);
        assert_eq!(p.runs_for(0.001), 100);
    }
}
