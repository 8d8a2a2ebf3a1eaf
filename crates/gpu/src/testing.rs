//! The gate of every test that needs a GPU or another part of the machine: a test that cannot run
//! here says so, and is counted as skipped, not passed.
//!
//! `cargo test` knows only passed and failed, so a test that returns early for want of a GPU
//! would count as passed. [`skip`] writes one line, `EXECUTABLE: TEST: WHY`, to the file named by
//! `HISTOPIPE_SKIPPED` (scripts/test sets it, then counts and names the skipped tests in its
//! summary). With `HISTOPIPE_REQUIRE_GPU=1`, a missing GPU fails the test instead.

use std::io::Write;

use crate::Gpu;

/// The variable naming the file skipped tests are listed in.
pub const SKIPPED_VARIABLE: &str = "HISTOPIPE_SKIPPED";

/// GPU 0, or `None` when no GPU can be used here: the calling test is recorded as skipped, or,
/// under `HISTOPIPE_REQUIRE_GPU=1`, fails.
pub fn gpu_or_skip() -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var("HISTOPIPE_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("HISTOPIPE_REQUIRE_GPU=1 but no GPU can be used: {e}")
        }
        Err(e) => {
            skip(&format!("no GPU ({e})"));
            None
        }
    }
}

/// Records that the calling test does not run here, and why (on stderr too, shown when the test
/// fails or with `--nocapture`).
pub fn skip(why: &str) {
    let exe = std::env::current_exe().ok();
    let exe = exe.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy()).unwrap_or_default();
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let why = why.replace(['\n', '\r'], " ");
    eprintln!("skipped: {why}");
    let Some(path) = std::env::var_os(SKIPPED_VARIABLE) else { return };
    // One write of one line to a file opened for appending: lines of tests running at once,
    // in this process or another, do not mix.
    let line = format!("{exe}: {test}: {why}\n");
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path);
    if let Err(e) = file.and_then(|mut f| f.write_all(line.as_bytes())) {
        eprintln!("{SKIPPED_VARIABLE}={}: {e}", std::path::Path::new(&path).display());
    }
}
