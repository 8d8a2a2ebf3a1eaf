//! docs/BENCHMARKS.md is what scripts/bench/report.py makes of the measurements kept in
//! docs/bench-data/, with its plot: a hand edit, or results reported without being kept, fails
//! here (issue 47, 4). report.py needs Python's standard library only.

use crate::common::*;

#[test]
fn benchmarks_md_is_made_from_the_kept_data() {
    let dir = temp_dir("benchmarks-md");
    let md = dir.join("BENCHMARKS.md");
    let out = std::process::Command::new("python3")
        .arg(repo().join("scripts/bench/report.py"))
        .arg("--md")
        .arg(&md)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "report.py: {}", String::from_utf8_lossy(&out.stderr));
    let made = std::fs::read_to_string(&md).unwrap();
    let kept = std::fs::read_to_string(repo().join("docs/BENCHMARKS.md")).unwrap();
    assert!(
        made == kept,
        "docs/BENCHMARKS.md is not what `scripts/bench/report.py` makes of docs/bench-data/ (run it; a \
         section's text by hand: docs/bench-data/sections/)"
    );
    let plot = std::fs::read(dir.join("benchmarks.svg")).unwrap();
    assert!(
        plot == std::fs::read(repo().join("docs/benchmarks.svg")).unwrap(),
        "docs/benchmarks.svg differs"
    );
    // The sections each say how to measure them again, and the contents link every section.
    for heading in kept.lines().filter(|l| l.starts_with("## ")) {
        assert!(kept.contains(&format!("- [{}](#", &heading[3..])), "not in the contents: {heading}");
    }
    assert!(kept.matches("\nReproduce: `").count() >= 10, "sections without their command");
}
