//! One definition per option (`histopipe_cli::Flag`): each tool's option table (`--help-flags`,
//! which scripts/install makes the man pages and completions from; tests/tools/install.rs checks
//! those), its `--help` and its parser agree on exactly the options defined.

use histopipe_cli::{Flag, Tool, COMMON_FLAGS};

use crate::common::*;

/// An option as a tool's option table (`TOOL --help-flags`) gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defined {
    /// The tool's own (not one every tool takes).
    pub own: bool,
    /// `-o`, if it has a short name.
    pub short: Option<String>,
    /// `--output`.
    pub long: String,
    /// The name of its value (`PATH`), if it takes one.
    pub value: Option<String>,
    /// The words its value may be.
    pub words: Vec<String>,
}

impl Defined {
    /// As `--help` and the man page list it: `-o, --output PATH`.
    pub fn synopsis(&self) -> String {
        let short = self.short.as_ref().map(|s| format!("{s}, ")).unwrap_or_default();
        let value = self.value.as_ref().map(|v| format!(" {v}")).unwrap_or_default();
        format!("{short}{}{value}", self.long)
    }
}

/// The options `tool` defines, from its option table.
pub fn defined(tool_name: &str) -> Vec<Defined> {
    let out = tool(tool_name).arg("--help-flags").output().unwrap();
    assert!(out.status.success(), "{tool_name} --help-flags: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut options = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 7, "{tool_name}: {line:?}");
        let [whose, _, short, long, value, words, help] = fields[..] else { unreachable!() };
        assert!(whose == "tool" || whose == "common", "{tool_name}: {line:?}");
        assert!(!help.trim().is_empty(), "{tool_name}: no help: {line:?}");
        if long.is_empty() {
            assert!(short.is_empty() && !value.is_empty(), "{tool_name}: an operand has a name: {line:?}");
            continue;
        }
        let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        options.push(Defined {
            own: whose == "tool",
            short: some(short).map(|s| format!("-{s}")),
            long: format!("--{long}"),
            value: some(value),
            words: words.split_whitespace().map(str::to_owned).collect(),
        });
    }
    options
}

/// The long names of `flags`.
fn longs(flags: &[Flag]) -> Vec<String> {
    flags.iter().map(|f| f.long.to_owned()).collect()
}

#[test]
fn the_option_table_is_the_definitions() {
    let tools: [(&str, &[Flag]); 14] = [
        ("pad", histopipe::pad::Pad::FLAGS),
        ("rotate", histopipe::rotate::Rotate::FLAGS),
        ("colhist", histopipe::colhist::ColHist::FLAGS),
        ("cdf", histopipe::cdf::Cdf::FLAGS),
        ("radon", histopipe::radon::Radon::FLAGS),
        ("equalize", histopipe::equalize::Equalize::FLAGS),
        ("edges", histopipe::edges::Edges::FLAGS),
        ("hough-vote", histopipe::hough_vote::HoughVote::FLAGS),
        ("hough-lines", histopipe::hough_lines::HoughLines::FLAGS),
        ("hough-segments", histopipe::hough_segments::HoughSegments::FLAGS),
        ("clahe", histopipe::clahe::Clahe::FLAGS),
        ("stretch", histopipe::stretch::Stretch::FLAGS),
        ("threshold", histopipe::threshold::Threshold::FLAGS),
        ("deskew", histopipe::deskew::Deskew::FLAGS),
    ];
    let mut named: Vec<&str> = tools.iter().map(|(name, _)| *name).collect();
    let mut registered = crate::common::tools();
    named.sort();
    registered.sort();
    assert_eq!(named, registered, "every tool of tools.toml, and no other, is checked here");
    for (name, flags) in tools {
        let table = defined(name);
        let own: Vec<String> = table.iter().filter(|d| d.own).map(|d| d.long.clone()).collect();
        let common: Vec<String> = table.iter().filter(|d| !d.own).map(|d| d.long.clone()).collect();
        assert_eq!(own, longs(flags), "{name}");
        assert_eq!(common, longs(COMMON_FLAGS), "{name}");
        // No name twice: a tool's option would shadow a common one, or two would share a name.
        let mut names: Vec<String> =
            table.iter().flat_map(|d| d.short.iter().chain([&d.long])).cloned().collect();
        names.sort();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "{name}: a name defined twice");
    }
}

/// An operation's error about one of its parameters reaches the user naming the option that
/// sets it, as the tool's definitions spell it (pad's `--to` sets the operation's `size`): at
/// the frame, or as a usage error where the tool checks the value before reading any input.
#[test]
fn operations_errors_name_the_options_as_defined() {
    let option = |flags: &[Flag], param: &str| {
        flags.iter().find(|f| f.param == Some(param)).unwrap_or_else(|| panic!("no option sets {param}")).long
    };
    let camera = fixture_bytes("camera.pgm");
    let to = option(histopipe::pad::Pad::FLAGS, "size");
    assert_eq!(
        run_err("pad", &[to, "2x2"], &camera, 2).trim_end(),
        format!("pad: frame 1: {to} 2x2 is smaller than the 512x512 frame (pad never crops)")
    );
    let fill = option(histopipe::rotate::Rotate::FLAGS, "fill");
    assert_eq!(
        run_err("rotate", &["30", fill, "256"], &camera, 2).trim_end(),
        format!("rotate: frame 1: {fill} 256 is over the frame's maxval 255")
    );
    let bins = option(histopipe::cdf::Cdf::FLAGS, "bins");
    assert_eq!(
        run_err("cdf", &[bins, "300"], &camera, 2).trim_end(),
        format!("cdf: frame 1: {bins} 300: a frame with maxval 255 has 1 to 256 bins")
    );
    let vote = histopipe::hough_vote::HoughVote::FLAGS;
    let (min, max) = (option(vote, "theta_min"), option(vote, "theta_max"));
    assert_eq!(
        run_err("hough-vote", &[min, "50", max, "10"], &[], 2).trim_end(),
        format!("hough-vote: {max} 10 must be at least {min} 50")
    );
}

/// `--help` lists exactly the options defined, each as its definition has it.
#[test]
fn help_lists_exactly_the_defined_options() {
    for name in tools() {
        let out = tool(name).arg("--help").output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        // An option's line starts with its synopsis, two spaces in (`  -o, --output PATH  ...`);
        // its help goes on after two spaces (one after a long synopsis), and on the next lines 21
        // spaces in. Any other line that starts with a dash would be an option not defined.
        let listed: Vec<&str> = help
            .lines()
            .map(|l| (l.len() - l.trim_start().len(), l.trim_start()))
            .filter_map(|(indent, l)| (indent < 21 && l.starts_with('-')).then_some(l))
            .map(|l| l.split("  ").next().unwrap())
            .collect();
        let mut defined: Vec<String> = defined(name).iter().map(Defined::synopsis).collect();
        let mut listed: Vec<String> = listed
            .iter()
            .map(|l| {
                // A long synopsis has its help one space after it.
                defined
                    .iter()
                    .find(|d| l == d || l.starts_with(&format!("{d} ")))
                    .cloned()
                    .unwrap_or(l.to_string())
            })
            .collect();
        defined.sort();
        listed.sort();
        assert_eq!(listed, defined, "{name}: --help against the definitions");
    }
}

/// The parser takes every option defined, and says of a bad value which option it was given to:
/// an option defined but not handled, or handled but not defined, fails here.
#[test]
fn every_defined_option_is_taken_and_named_in_its_errors() {
    for name in tools() {
        for d in defined(name) {
            if d.long == "--help" || d.long == "--version" {
                continue;
            }
            let Some(_) = &d.value else {
                // A switch is taken: --help after it prints the help.
                let out = tool(name).args([d.long.as_str(), "--help"]).output().unwrap();
                assert!(out.status.success(), "{name} {}: {}", d.long, String::from_utf8_lossy(&out.stderr));
                continue;
            };
            // Every word completions offer is a value the option takes; a word with a parameter
            // (`multiotsu:K`, offered as `multiotsu:`) a name it knows, whose error is the
            // parameter's.
            for word in &d.words {
                if let Some((prefix, _)) =
                    word.split_once(':').filter(|(_, p)| p.chars().all(|c| c.is_ascii_uppercase()))
                {
                    let e = run_err(name, &[&d.long, &format!("{prefix}:")], b"", 2);
                    assert!(
                        e.starts_with(&format!("{name}: {}: {prefix} takes", d.long)),
                        "{name} {word}: {e}"
                    );
                    continue;
                }
                let out = tool(name).args([d.long.as_str(), word, "--help"]).output().unwrap();
                assert!(
                    out.status.success(),
                    "{name} {} {word}: {}",
                    d.long,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            // An empty value is no option's: the error names the option as written.
            for written in d.short.iter().chain([&d.long]) {
                let e = run_err(name, &[written, ""], b"", 2);
                assert!(
                    e.starts_with(&format!("{name}: {written}")) && !e.contains("unknown option"),
                    "{name} {written} '': {e}"
                );
            }
        }
        let e = run_err(name, &["--no-such-option"], b"", 2);
        assert!(e.contains("unknown option '--no-such-option'"), "{e}");
    }
}
