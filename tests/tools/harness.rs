//! The test harness itself: a test that cannot run here is counted as skipped, by name, not as
//! passed (scripts/test's summary reads the list this makes); the summary counts every test
//! executable, one that crashed before its result line as failed.

use std::process::Command;

use crate::common::*;

#[test]
fn a_gpu_test_without_a_gpu_is_listed_as_skipped() {
    let list = std::env::temp_dir().join(format!("histopipe-skipped-{}", std::process::id()));
    let _ = std::fs::remove_file(&list);
    let test = "clahe::gpu_backend_matches_opencv_on_fixtures";
    for threads in ["1", "2"] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--test-threads", threads])
            .env_remove("HISTOPIPE_REQUIRE_GPU")
            .env(histopipe_gpu::testing::SKIPPED_VARIABLE, &list)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    let listed = std::fs::read_to_string(&list).unwrap_or_default();
    let _ = std::fs::remove_file(&list);
    if histopipe_gpu::Gpu::open(0).is_ok() {
        assert_eq!(listed, "", "with a GPU the test runs");
    } else {
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 2, "{listed}");
        for line in lines {
            assert!(line.starts_with("tools-") && line.contains(&format!(": {test}: no GPU (")), "{line}");
        }
    }
}

/// What `cargo test --no-fail-fast` prints when one executable has a failing test (whose output
/// holds another run's result line), the next one crashes, and the rest pass.
const CARGO_LOG: &str = "     Running unittests src/lib.rs (target/debug/deps/histopipe_cli-1f)

running 2 tests
test writer::tests::a ... ok
test writer::tests::b ... FAILED

failures:

---- writer::tests::b stdout ----
test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `-p histopipe-cli --lib`
     Running unittests src/lib.rs (target/debug/deps/histopipe_frame-2e)

running 3 tests
test reader::tests::c ... ok
error: test failed, to rerun pass `-p histopipe-frame --lib`

Caused by:
  process didn't exit successfully: `target/debug/deps/histopipe_frame-2e` (signal: 6, SIGABRT)
     Running tests/tools/main.rs (target/debug/deps/tools-3d)

running 5 tests
test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s

   Doc-tests histopipe_ops

running 1 test
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

/// scripts/test-summary on `log` with `skipped` as the skipped tests' list: its stdout and status.
fn test_summary(log: &str, skipped: &str) -> (String, Option<i32>) {
    let dir = temp_dir("test-summary");
    std::fs::write(dir.join("log"), log).unwrap();
    std::fs::write(dir.join("skipped"), skipped).unwrap();
    let out = Command::new(repo().join("scripts/test-summary"))
        .arg(dir.join("log"))
        .arg(dir.join("skipped"))
        .output()
        .unwrap();
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), out.status.code())
}

#[test]
fn the_summary_counts_every_executable_and_one_that_crashed_as_failed() {
    let skipped = "tools-3d: clahe::gpu: no GPU (none)\ntools-3d: clahe::gpu: no GPU (none)\n";
    let (out, code) = test_summary(CARGO_LOG, skipped);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "skipped tests (executable: test: why):",
            "  tools-3d: clahe::gpu: no GPU (none)",
            "test executables: 4 ran, 2 failed (histopipe_cli-1f; histopipe_frame-2e)",
            "summary: 6 passed, 1 failed, 1 skipped",
        ]
    );
    assert_eq!(code, Some(1));
    // Only the executables that passed: status 0, and the closing line CI reads.
    let passing = CARGO_LOG.split("     Running tests/tools").nth(1).unwrap();
    let (out, code) = test_summary(&format!("     Running tests/tools{passing}"), "");
    assert_eq!(out, "test executables: 2 ran, 0 failed\nsummary: 6 passed, 0 failed, 0 skipped\n");
    assert_eq!(code, Some(0));
}
