//! One definition per option (`histopipe_cli::Flag`): each tool's option table (`--help-flags`,
//! which scripts/install makes the man pages and completions from; tests/tools/install.rs checks
//! those), its `--help`, its parser and its manual's Synopsis (docs/TOOL.md, written by hand: its
//! forms and alternatives are more than the definitions say) agree on exactly the options defined.

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
    // Every tool of histopipe's TOOLS (src/lib.rs), its name's `_` as `-`.
    let tools: Vec<(String, &[Flag])> =
        histopipe::TOOLS.iter().map(|&(module, flags)| (module.replace('_', "-"), flags)).collect();
    let mut named: Vec<&str> = tools.iter().map(|(name, _)| name.as_str()).collect();
    let mut registered = crate::common::tools();
    named.sort();
    registered.sort();
    assert_eq!(named, registered, "every tool of tools.toml, and no other, is checked here");
    for (name, flags) in tools {
        let name = name.as_str();
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

/// The operands `tool` takes (`FILE...`), from its option table.
fn operands(tool_name: &str) -> Vec<String> {
    let out = tool(tool_name).arg("--help-flags").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f.len() == 7 && f[3].is_empty())
        .map(|f| f[4].to_owned())
        .collect()
}

/// The forms of `tool`'s `--help` (its `Usage:` lines), each as its words.
fn usage_forms(name: &str) -> Vec<Vec<String>> {
    let out = tool(name).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let mut lines = help.lines().skip_while(|l| !l.starts_with("Usage: "));
    let first = lines.next().map(|l| l["Usage: ".len()..].to_owned());
    let more =
        lines.map_while(|l| l.strip_prefix("       ").filter(|l| l.starts_with(name)).map(str::to_owned));
    first.into_iter().chain(more).map(|l| l.split_whitespace().map(str::to_owned).collect()).collect()
}

/// Every form of each manual's Synopsis ends with `[common options]` and the operands the tool
/// takes (`[FILE...]`), as the man page and `--help` say (the common options are listed in the
/// man page and `--help`); and each form of `--help`'s `Usage:` is one of the Synopsis: its words
/// before `[OPTIONS]` begin a form there (`rotate ANGLE`, `rotate --line X0,Y0,X1,Y1`).
#[test]
fn every_synopsis_form_ends_with_the_common_options_and_operands_and_holds_the_usage() {
    let mut wrong = Vec::new();
    for name in tools() {
        let forms = synopsis_forms(name);
        let operands: Vec<String> = operands(name).iter().map(|o| format!("[{o}]")).collect();
        let tail: Vec<String> =
            ["[common", "options]"].iter().map(|w| w.to_string()).chain(operands).collect();
        for form in &forms {
            if !form.ends_with(&tail) {
                wrong.push(format!(
                    "docs/{name}.md: the Synopsis form `{}` does not end with `{}`",
                    form.join(" "),
                    tail.join(" ")
                ));
            }
        }
        let usage = usage_forms(name);
        if usage.is_empty() {
            wrong.push(format!("{name} --help: no Usage line"));
        }
        for u in usage {
            let Some(lead) = u.iter().position(|w| w == "[OPTIONS]").map(|i| &u[..i]) else {
                wrong.push(format!("{name} --help: the Usage form `{}` has no [OPTIONS]", u.join(" ")));
                continue;
            };
            if !forms.iter().any(|f| f.starts_with(lead)) {
                wrong.push(format!(
                    "docs/{name}.md: no Synopsis form begins `{}`, as --help's Usage",
                    lead.join(" ")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The forms of the command in `tool`'s manual's Synopsis (docs/TOOL.md), each as its words: a
/// form starts on a line that is a code span beginning with the tool's name; the code-span lines
/// under it go on with it (a long form wrapped); other lines are prose about them.
fn synopsis_forms(name: &str) -> Vec<Vec<String>> {
    let manual = std::fs::read_to_string(repo().join(format!("docs/{name}.md"))).unwrap();
    let section = manual.split("\n## Synopsis\n").nth(1).unwrap_or_default();
    let section = section.split("\n## ").next().unwrap();
    let mut forms: Vec<Vec<String>> = Vec::new();
    for line in section.lines() {
        let Some(code) = line.strip_prefix('`').and_then(|l| l.strip_suffix('`')) else { continue };
        let words = code.split_whitespace().map(str::to_owned);
        match forms.last_mut() {
            Some(form) if !code.starts_with(&format!("{name} ")) => form.extend(words),
            _ => forms.push(words.collect()),
        }
    }
    forms
}

/// An option as a Synopsis names it: `-o` or `--bins`, and the value it shows, if any
/// (`--bins N`: `N`; `--format csv|tsv`: `csv|tsv`).
#[derive(Debug)]
struct Named {
    option: String,
    value: Option<String>,
}

/// The options a form of the command names, in order: each word that starts with a dash, out of
/// its brackets, with the word after it as its value unless that is another option, a bracket or
/// a `|` between alternatives (`[--line X0,Y0,X1,Y1 | --segment X0,Y0,X1,Y1]`).
fn named_options(form: &[String]) -> Vec<Named> {
    let unbracketed = |w: &str| {
        // A closing bracket that closes an opening one of the word's own is the word's.
        let mut w = w.to_owned();
        while w.ends_with(']') && w.matches(']').count() > w.matches('[').count() {
            w.pop();
        }
        w
    };
    let mut named = Vec::new();
    for (i, word) in form.iter().enumerate() {
        let word = word.trim_start_matches('[');
        if !word.starts_with('-') || word == "-" || word == "--" {
            continue;
        }
        let option = word.trim_end_matches(']');
        let value = form
            .get(i + 1)
            .filter(|next| option == word && !next.starts_with(['[', '-', '|']))
            .map(|next| unbracketed(next));
        named.push(Named { option: option.to_owned(), value });
    }
    named
}

/// Each manual's Synopsis names every option the tool defines of its own, and no option it does
/// not take; it shows a value for exactly the options that take one, and where it lists an
/// option's values as words (`--format csv|tsv`), each is a word the option takes, and its forms
/// together list them all (a form may list those it takes: colhist --angles writes no images).
#[test]
fn every_manuals_synopsis_names_exactly_the_defined_options() {
    let mut wrong = Vec::new();
    for name in tools() {
        let forms = synopsis_forms(name);
        if forms.is_empty() {
            wrong.push(format!("docs/{name}.md: no form in its Synopsis (a line `{name} ...`)"));
        }
        let table = defined(name);
        let named: Vec<Named> = forms.iter().flat_map(|f| named_options(f)).collect();
        let is = |d: &Defined, n: &Named| n.option == d.long || d.short.as_ref() == Some(&n.option);
        for n in &named {
            let Some(d) = table.iter().find(|d| is(d, n)) else {
                wrong.push(format!(
                    "docs/{name}.md: the Synopsis names {}, which {name} does not take",
                    n.option
                ));
                continue;
            };
            if n.value.is_some() != d.value.is_some() {
                let shown = n.value.as_deref().map_or("no value".to_owned(), |v| format!("the value {v}"));
                wrong.push(format!(
                    "docs/{name}.md: the Synopsis gives {} {shown}, defined as {}",
                    n.option,
                    d.synopsis()
                ));
            }
        }
        for d in &table {
            if d.own && !named.iter().any(|n| is(d, n)) {
                wrong.push(format!("docs/{name}.md: the Synopsis lacks {}", d.synopsis()));
            }
            let lists = named.iter().filter(|n| is(d, n)).filter_map(|n| n.value.as_deref());
            let mut listed: Vec<&str> =
                lists.filter(|v| v.contains('|')).flat_map(|v| v.split('|')).collect();
            if listed.is_empty() {
                continue;
            }
            for word in listed.iter().filter(|w| !d.words.contains(&w.to_string())) {
                wrong.push(format!(
                    "docs/{name}.md: the Synopsis lists {} {word}, not a value it takes",
                    d.long
                ));
            }
            listed.sort();
            listed.dedup();
            let mut words: Vec<&str> = d.words.iter().map(String::as_str).collect();
            words.sort();
            if listed != words {
                wrong.push(format!(
                    "docs/{name}.md: the Synopsis lists {} {}, where it takes {}",
                    d.long,
                    listed.join("|"),
                    words.join("|")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
