//! The host-clock timing of scripts/bench/cpu_peers.py (`time_cpu`), transcribed so that OpenCV and
//! kornia-rs are measured alike: one run to warm up and estimate, then runs fitted to a budget
//! (300 ms, 5 to 100 runs; --quick: 60 ms, 3 to 30), the fewest when a run takes over 50 ms, and
//! that first run alone when it takes over a second.

use std::time::Instant;

/// How long to measure each case.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    budget_ms: f64,
    min_runs: usize,
    max_runs: usize,
}

impl Plan {
    pub const FULL: Plan = Plan { budget_ms: 300.0, min_runs: 5, max_runs: 100 };
    pub const QUICK: Plan = Plan { budget_ms: 60.0, min_runs: 3, max_runs: 30 };

    fn runs_for(&self, first_ms: f64) -> usize {
        if first_ms > 50.0 {
            return self.min_runs;
        }
        // Python's int() of the quotient, then clamped: cpu_peers.py's expression.
        ((self.budget_ms / first_ms.max(1e-3)) as usize).clamp(self.min_runs, self.max_runs)
    }
}

/// Order statistics of one case's samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub p90: f64,
    pub runs: usize,
}

impl Stats {
    pub fn of(mut samples: Vec<f64>) -> Stats {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 { samples[n / 2] } else { (samples[n / 2 - 1] + samples[n / 2]) / 2.0 };
        // Python's round() of (n - 1) * 0.9: ties to even.
        let p90 = samples[((n - 1) as f64 * 0.9).round_ties_even() as usize];
        Stats { median, min: samples[0], p90, runs: n }
    }
}

/// Times `run` under `plan`; the first error ends the case.
pub fn time_cpu<E>(plan: Plan, run: &mut dyn FnMut() -> Result<(), E>) -> Result<Stats, E> {
    let mut once = || -> Result<f64, E> {
        let t = Instant::now();
        run()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let first = once()?;
    if first > 1000.0 {
        return Ok(Stats::of(vec![first]));
    }
    let samples = (0..plan.runs_for(first)).map(|_| once()).collect::<Result<Vec<_>, E>>()?;
    Ok(Stats::of(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics_as_python_computes_them() {
        let s = Stats::of(vec![5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.median, s.min, s.p90, s.runs), (3.0, 1.0, 5.0, 5));
        assert_eq!(Stats::of(vec![1.0, 2.0]).median, 1.5);
        // statistics.median and samples[round(9 * 0.9)] of ten samples.
        let s = Stats::of((1..=10).map(f64::from).collect());
        assert_eq!((s.median, s.p90), (5.5, 9.0));
    }

    #[test]
    fn runs_fit_the_budget() {
        assert_eq!(Plan::FULL.runs_for(10.0), 30);
        assert_eq!(Plan::FULL.runs_for(0.001), 100);
        assert_eq!(Plan::FULL.runs_for(200.0), 5);
        assert_eq!(Plan::QUICK.runs_for(40.0), 3);
    }
}
