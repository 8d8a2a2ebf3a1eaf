//! Shrinking a finding's input before it is saved: smaller regression files, easier to read.

use std::time::{Duration, Instant};

use crate::finding::Finding;
use crate::input::Input;
use crate::target::Limits;
use crate::targets::check;

/// Removes ever smaller runs of bytes (halves, quarters, ... single bytes) while the input still
/// gives a finding with the same signature, until nothing more goes or `budget` is spent.
pub fn minimize(input: &Input, finding: &Finding, limits: &Limits, budget: Duration) -> Input {
    let deadline = Instant::now() + budget;
    let still_fails =
        |candidate: &Input| matches!(check(candidate, limits), Err(f) if f.signature == finding.signature);
    let mut best = input.clone();
    let mut run = best.bytes.len().next_power_of_two() / 2;
    while run > 0 && Instant::now() < deadline {
        let mut start = 0;
        while start < best.bytes.len() && Instant::now() < deadline {
            let mut candidate = best.clone();
            candidate.bytes.drain(start..(start + run).min(best.bytes.len()));
            if still_fails(&candidate) {
                best = candidate;
            } else {
                start += run;
            }
        }
        run /= 2;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::FindingKind;

    #[test]
    fn a_finding_that_never_reproduces_leaves_the_input_alone() {
        let input = Input::described(b"P5 2 1 255\n\x01\x02".to_vec());
        let finding =
            Finding { kind: FindingKind::Panic, signature: "panic at nowhere".into(), detail: String::new() };
        let out = minimize(&input, &finding, &Limits::standard(), Duration::from_secs(5));
        assert_eq!(out, input);
    }
}
