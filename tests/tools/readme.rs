//! The README's examples run exactly as printed, from the repository root with the tools on PATH.

use std::path::Path;

use crate::common::*;

/// Every indented line of the README that starts with a tool's name, without its `# comment`,
/// after the `export` lines before it in its block (`export HISTOPIPE_RAW=...` serves the
/// examples below it).
fn readme_examples() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut exports = String::new();
    let mut examples = Vec::new();
    for line in readme.lines() {
        let Some(line) = line.strip_prefix("    ") else {
            exports.clear();
            continue;
        };
        let line = line.split("  #").next().unwrap().trim();
        if line.starts_with("export ") {
            exports.push_str(line);
            exports.push_str("; ");
        } else if tools().contains(&line.split_whitespace().next().unwrap_or("")) {
            examples.push(format!("{exports}{line}"));
        }
    }
    examples
}

/// The files and folders the demo writes: every `out/...` it names.
fn demo_outputs() -> Vec<String> {
    let demo = std::fs::read_to_string(repo().join("scripts/demo")).unwrap();
    demo.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .filter(|w| w.starts_with("out/"))
        .map(|w| w.split('{').next().unwrap().trim_end_matches('/').to_owned())
        .collect()
}

#[test]
fn the_readme_examples_write_where_the_demo_does_not() {
    let demo = demo_outputs();
    assert!(demo.len() > 10, "the demo's outputs were not found: {demo:?}");
    for example in readme_examples() {
        for output in outputs(&example) {
            for theirs in &demo {
                let inside = |a: &str, b: &str| Path::new(a).starts_with(b);
                assert!(
                    !inside(&output, theirs) && !inside(theirs, &output),
                    "README: `{example}` writes {output}, where the demo writes {theirs}"
                );
            }
        }
    }
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
    let fixtures = repo().join("tests/fixtures");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&fixtures, root.join("tests/fixtures")).unwrap();
    for example in &examples {
        let out = shell(&root, example)
            .env_remove("HISTOPIPE_BACKEND")
            .env_remove("HISTOPIPE_RAW")
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
