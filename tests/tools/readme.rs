//! The README's examples run exactly as printed, from the repository root with the tools on PATH.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// Every indented line of the README that starts with a tool's name, without its `# comment`.
fn readme_examples() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| TOOLS.contains(&l.split_whitespace().next().unwrap_or("")))
        .map(|l| l.split("  #").next().unwrap().trim().to_owned())
        .collect()
}

/// The paths an example's `-o` names: a file, or for fields, the folder its files go to.
fn outputs(example: &str) -> Vec<String> {
    let words: Vec<&str> = example.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "-o")
        .map(|w| match w[1].find('{') {
            Some(i) => w[1][..i].trim_end_matches('/').to_owned(),
            None => w[1].to_owned(),
        })
        .collect()
}

#[test]
fn the_readme_examples_run_as_printed() {
    let examples = readme_examples();
    assert!(examples.len() >= 5, "the README's examples were not found: {examples:?}");
    // A copy of the repository root as the examples see it: the fixtures, and no out/ yet.
    let root = temp_dir("readme");
    std::fs::create_dir_all(root.join("tests")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&fixtures, root.join("tests/fixtures")).unwrap();
    for example in &examples {
        let out = Command::new("bash")
            .args(["-o", "pipefail", "-c", example])
            .current_dir(&root)
            .env("PATH", path_with_tools())
            .env_remove("HISTOPIPE_BACKEND")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.is_empty(), "README: `{example}` failed: {stderr}");
        for output in outputs(example) {
            let path = root.join(&output);
            let written = match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::read_dir(&path).unwrap().count() > 1,
                Ok(m) => m.len() > 0,
                Err(_) => false,
            };
            assert!(written, "README: `{example}` did not write {output}");
        }
    }
}
