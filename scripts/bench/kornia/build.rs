//! The kornia-imgproc version the lock file pins, for the JSON header line (`kornia_imgproc`).

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"kornia-imgproc\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap_or_else(|| "?".to_string());
    println!("cargo:rustc-env=KORNIA_IMGPROC_VERSION={version}");
}
