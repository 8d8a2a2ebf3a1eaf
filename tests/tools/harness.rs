//! The test harness itself: a test that cannot run here is counted as skipped, by name, not as
//! passed (scripts/test's summary reads the list this makes).

use std::process::Command;

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
