//! The registry of tools (tools.toml) against the house: every tool has all its parts, and every
//! part belongs to a tool of the registry. One test, which names every part that is missing.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::*;

/// The quoted strings of `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('"').skip(1).step_by(2).collect()
}

/// The lines of `text` after the first that starts with `begin`, up to the next that starts with
/// `end`.
fn between<'a>(text: &'a str, begin: &str, end: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(begin));
    assert!(lines.next().is_some(), "no line starting with {begin:?}");
    lines.take_while(|l| !l.starts_with(end)).collect()
}

/// The tools of the README's table, each with its row.
fn readme_rows(readme: &str) -> Vec<(&str, &str)> {
    readme.lines().filter_map(|l| Some((l.strip_prefix("| `")?.split('`').next()?, l))).collect()
}

/// The entries of histopipe-bench (`registry::all()`).
fn bench_entries(source: &str) -> Vec<&str> {
    between(source, "pub fn all() -> Vec<Entry>", "}")
        .into_iter()
        .filter_map(|l| l.trim().strip_prefix("Entry::"))
        .filter_map(|l| quoted(l).first().copied())
        .collect()
}

/// The tools scripts/bench/tools.py has an OpenCV one-liner for (the keys of its `OPENCV`).
fn opencv_tools(source: &str) -> Vec<&str> {
    between(source, "OPENCV = {", "}")
        .into_iter()
        .filter(|l| l.starts_with("    \"") && l.contains("\": "))
        .filter_map(|l| quoted(l).first().copied())
        .collect()
}

/// The inputs scripts/sanitize makes (each file it names as `"$in/NAME"`).
fn sanitize_inputs(source: &str) -> BTreeSet<&str> {
    source.split("\"$in/").skip(1).filter_map(|s| s.split('"').next()).collect()
}

/// What is wrong with a `sanitize` entry of tools.toml (`INPUTS|NAME|ARGS`), if anything.
fn sanitize_entry_wrong(entry: &str, inputs: &BTreeSet<&str>) -> Option<String> {
    let fields: Vec<&str> = entry.split('|').collect();
    let [on, _, _] = fields[..] else {
        return Some(format!("sanitize run {entry:?} is not INPUTS|NAME|ARGS"));
    };
    let unknown: Vec<&str> = on.split_whitespace().filter(|i| !inputs.contains(i)).collect();
    if on.trim().is_empty() || !unknown.is_empty() {
        return Some(format!("sanitize run {entry:?}: inputs {unknown:?} are none scripts/sanitize makes"));
    }
    None
}

/// What the peers can time: cpu_peers.py's `OPS`, skimage_peers.py's `OPS` (scikit-image, for the
/// work OpenCV does not do) and peers.cu's `ops`.
fn peer_ops(cpu_peers: &str, skimage_peers: &str, peers_cu: &str) -> BTreeSet<String> {
    let line = |text: &str, start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start}"))
            .to_owned()
    };
    let mut ops = BTreeSet::new();
    let lines = [
        line(cpu_peers, "OPS = ["),
        line(skimage_peers, "OPS = ["),
        line(peers_cu, "std::vector<std::string> ops = {"),
    ];
    for l in lines {
        ops.extend(quoted(&l).into_iter().map(str::to_owned));
    }
    ops
}

/// Every part that a tool of `registry` lacks, and every part of the house that no tool of it owns.
fn missing_parts(registry: &[Tool], root: &Path) -> Vec<String> {
    let text = |path: &str| std::fs::read_to_string(root.join(path)).unwrap_or_default();
    let readme = text("README.md");
    let rows = readme_rows(&readme);
    let main = text("tests/tools/main.rs");
    let lib = text("src/lib.rs");
    let declared = between(&lib, "tools! {", "}");
    let bench = text("crates/bench/src/registry.rs");
    let entries = bench_entries(&bench);
    let tools_py = text("scripts/bench/tools.py");
    let opencv = opencv_tools(&tools_py);
    let sanitize = text("scripts/sanitize");
    let inputs = sanitize_inputs(&sanitize);
    let peers = peer_ops(
        &text("scripts/bench/cpu_peers.py"),
        &text("scripts/bench/skimage_peers.py"),
        &text("scripts/bench/peers.cu"),
    );
    let names: BTreeSet<&str> = registry.iter().map(|t| t.name).collect();
    let mut missing = Vec::new();
    if names.len() != registry.len() {
        missing.push("tools.toml: a tool named twice".to_owned());
    }
    for t in registry {
        let name = t.name;
        let mut lacks = |what: String| missing.push(format!("{name}: {what}"));
        if !root.join(format!("src/bin/{name}.rs")).is_file() {
            lacks(format!("no binary, src/bin/{name}.rs"));
        }
        if !root.join(format!("docs/{name}.md")).is_file() {
            lacks(format!("no manual, docs/{name}.md"));
        }
        let link = format!("[docs/{name}.md](docs/{name}.md)");
        if !rows.iter().any(|&(tool, row)| tool == name && row.contains(&link)) {
            lacks(format!("no row in the README's table linking {link}"));
        }
        let module = format!("tests/tools/{}.rs", t.tests);
        if !text(&module).contains(&format!("\"{name}\"")) {
            lacks(format!("no tests: {module} does not run \"{name}\""));
        }
        let rust_module = name.replace('-', "_");
        if !declared.iter().any(|l| l.trim().starts_with(&format!("{rust_module}::"))) {
            lacks(format!("no `{rust_module}::TYPE,` in src/lib.rs's tools! (its module and type)"));
        }
        if !main.lines().any(|l| l.trim() == format!("mod {};", t.tests)) {
            lacks(format!("no `mod {};` in tests/tools/main.rs", t.tests));
        }
        if t.ops.is_empty() {
            lacks("no ops (histopipe-bench entries) in tools.toml".into());
        }
        for op in &t.ops {
            if !entries.contains(op) {
                lacks(format!("op {op} is no entry of histopipe-bench (crates/bench/src/registry.rs)"));
            }
        }
        for peer in &t.peers {
            if !peers.contains(*peer) {
                lacks(format!(
                    "peer op {peer} is in none of cpu_peers.py's OPS, skimage_peers.py's OPS and peers.cu's ops"
                ));
            }
        }
        let huge = |entry: &&str| {
            entry.split('|').next().unwrap_or("").split_whitespace().all(|i| i.starts_with("huge"))
        };
        if t.gpu && t.sanitize.iter().filter(|e| !huge(e)).count() == 0 {
            lacks("GPU kernels but no sanitize runs (but on huge inputs) in tools.toml".into());
        }
        for entry in &t.sanitize {
            if let Some(wrong) = sanitize_entry_wrong(entry, &inputs) {
                lacks(wrong);
            }
        }
    }
    let bins =
        std::fs::read_dir(root.join("src/bin")).map(|d| d.flatten().collect()).unwrap_or_else(|_| Vec::new());
    for bin in bins {
        let file = bin.file_name().to_string_lossy().into_owned();
        // The GPU service (docs/histopipe-service.md) runs the tools for their processes; it is none itself.
        if file == "histopipe-service.rs" {
            continue;
        }
        if !names.contains(file.trim_end_matches(".rs")) {
            missing.push(format!("src/bin/{file}: not a tool of tools.toml"));
        }
    }
    for (tool, _) in rows {
        if !names.contains(tool) {
            missing.push(format!("README: the table's `{tool}` is not a tool of tools.toml"));
        }
    }
    for entry in entries {
        if !registry.iter().any(|t| t.ops.contains(&entry)) {
            missing.push(format!("histopipe-bench's entry {entry}: in no tool's ops in tools.toml"));
        }
    }
    for tool in opencv {
        if !names.contains(tool) {
            missing.push(format!("scripts/bench/tools.py: OPENCV's {tool} is not a tool of tools.toml"));
        }
    }
    missing
}

#[test]
fn every_tool_has_all_its_parts_and_every_part_a_tool() {
    let tools = registry();
    assert!(!tools.is_empty(), "tools.toml holds no tool");
    let missing = missing_parts(tools, &repo());
    assert!(missing.is_empty(), "the registry (tools.toml) and the house disagree:\n{}", missing.join("\n"));
}

#[test]
fn scripts_read_the_registry_as_the_tests_do() {
    let out = std::process::Command::new(repo().join("scripts/registry")).arg("tools").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().collect::<Vec<_>>(), tools());
    for t in registry() {
        let flag = |b: bool| vec![if b { "true" } else { "false" }];
        // (gpu is compared below, with `tools --gpu`.)
        let given = |v: &'static str, default: &str| if v == default { vec![] } else { vec![v] };
        for (field, values) in [
            ("ops", t.ops.clone()),
            ("peers", t.peers.clone()),
            ("tests", vec![t.tests]),
            ("float", if t.float { flag(true) } else { vec![] }),
            ("input", given(t.input, "frame")),
            ("writes", given(t.writes, "pgm")),
            ("bench", given(t.bench, "")),
            ("sanitize", t.sanitize.clone()),
        ] {
            let out =
                std::process::Command::new(repo().join("scripts/registry")).args([t.name, field]).output();
            let out = String::from_utf8(out.unwrap().stdout).unwrap();
            assert_eq!(out.lines().collect::<Vec<_>>(), values, "scripts/registry {} {field}", t.name);
        }
    }
    let gpu = std::process::Command::new(repo().join("scripts/registry"))
        .args(["tools", "--gpu"])
        .output()
        .unwrap();
    let gpu: Vec<String> = String::from_utf8(gpu.stdout).unwrap().lines().map(str::to_owned).collect();
    let expected: Vec<&str> = registry().iter().filter(|t| t.gpu).map(|t| t.name).collect();
    assert_eq!(gpu, expected);
}

#[test]
fn a_tool_with_a_missing_part_is_named_with_what_it_lacks() {
    // A new tool in the registry, with none of its parts yet.
    let mut sharpen = Tool::new("sharpen");
    sharpen.ops = vec!["sharpen"];
    sharpen.peers = vec!["sharpen"];
    sharpen.gpu = true;
    sharpen.sanitize = vec!["huge||"];
    let mut blur = Tool::new("blur");
    blur.sanitize = vec!["photos marble|x|", "photos"];
    let tools = [sharpen, blur];
    let missing = missing_parts(&tools, &repo());
    for part in [
        "sharpen: no binary, src/bin/sharpen.rs",
        "sharpen: no manual, docs/sharpen.md",
        "sharpen: no row in the README's table linking [docs/sharpen.md](docs/sharpen.md)",
        "sharpen: no tests: tests/tools/sharpen.rs does not run \"sharpen\"",
        "sharpen: no `mod sharpen;` in tests/tools/main.rs",
        "sharpen: no `sharpen::TYPE,` in src/lib.rs's tools! (its module and type)",
        "sharpen: op sharpen is no entry of histopipe-bench (crates/bench/src/registry.rs)",
        "sharpen: peer op sharpen is in none of cpu_peers.py's OPS, skimage_peers.py's OPS and peers.cu's ops",
        "sharpen: GPU kernels but no sanitize runs (but on huge inputs) in tools.toml",
        "blur: sanitize run \"photos marble|x|\": inputs [\"marble\"] are none scripts/sanitize makes",
        "blur: sanitize run \"photos\" is not INPUTS|NAME|ARGS",
        // And the house's tools that this registry of one does not hold.
        "src/bin/pad.rs: not a tool of tools.toml",
        "README: the table's `pad` is not a tool of tools.toml",
        "histopipe-bench's entry pad: in no tool's ops in tools.toml",
        "scripts/bench/tools.py: OPENCV's pad is not a tool of tools.toml",
    ] {
        assert!(missing.iter().any(|m| m == part), "not said: {part}\nsaid:\n{}", missing.join("\n"));
    }
}

/// `float = true` in tools.toml is what each tool does with a frame of float samples: those with
/// it take one (run with their benchmark arguments), the others refuse it with
/// histopipe_cli::FLOAT_REFUSED, which names exactly those with it (made from tools.toml by
/// crates/cli/build.rs).
#[test]
fn the_float_tools_are_those_of_the_registry() {
    let dem = fixture_bytes("dem.npy");
    let mut taking = Vec::new();
    for t in registry() {
        let args: Vec<&str> = t.bench.split_whitespace().collect();
        let out =
            tool(t.name).args(["--backend", "cpu"]).args(&args).write_stdin(dem.clone()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if t.float {
            assert!(out.status.success(), "{} (float = true) refused a float frame: {stderr}", t.name);
            taking.push(t.name);
        } else {
            assert!(!out.status.success(), "{} took a float frame: float = true in tools.toml", t.name);
            let line = format!("{}: frame 1: {}", t.name, histopipe_cli::FLOAT_REFUSED);
            assert_eq!(stderr.trim_end(), line, "{}", t.name);
        }
    }
    let listed = taking.iter().filter(|&&t| t != "stretch").copied().collect::<Vec<_>>();
    let (last, rest) = listed.split_last().unwrap();
    let sentence = format!("{} and {last} take float frames as they are", rest.join(", "));
    assert!(histopipe_cli::FLOAT_REFUSED.ends_with(&sentence), "{}", histopipe_cli::FLOAT_REFUSED);
    assert!(histopipe_cli::FLOAT_REFUSED.contains("first with stretch"));
}

/// A list of one string a line reads as a list on one line; a line outside the subset fails.
#[test]
fn the_registry_reads_lists_of_one_string_a_line() {
    let tools = parse_registry(
        "# a comment\n[a-b]\nops = [\"x\", \"y, z\"]\nsanitize = [\n  \"p q|n|--k 1,2\",\n  \"r||\"\n]\nfloat = true\n",
    );
    assert_eq!(tools.len(), 1);
    assert_eq!((tools[0].name, tools[0].float, tools[0].input), ("a-b", true, "frame"));
    assert_eq!(tools[0].ops, ["x", "y, z"]);
    assert_eq!(tools[0].sanitize, ["p q|n|--k 1,2", "r||"]);
    for bad in [
        "[a]\nops = [\n  \"x\", \"y\",\n]\n",
        "[a]\nops = [\n\"x\"\n",
        "[a]\ninput = \"cube\"\n",
        "[a]\ngpu = yes\n",
    ] {
        assert!(std::panic::catch_unwind(|| parse_registry(bad)).is_err(), "read: {bad:?}");
    }
}

/// `scripts/sanitize --list` runs exactly the `sanitize` entries of tools.toml, each on each of
/// its inputs, named and with its arguments as the header of tools.toml says; without --huge, none
/// on the huge inputs.
#[test]
fn sanitize_lists_the_runs_of_the_registry() {
    let list = |huge: bool| {
        let mut cmd = std::process::Command::new(repo().join("scripts/sanitize"));
        cmd.arg("--list").args(huge.then_some("--huge"));
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let mut expected = Vec::new();
    for t in registry() {
        for entry in &t.sanitize {
            let [inputs, name, args] = entry.splitn(3, '|').collect::<Vec<_>>()[..] else {
                panic!("{}: {entry:?}", t.name)
            };
            for input in inputs.split_whitespace() {
                let case = [input.replace('-', " "), name.to_owned()].join(" ");
                let args = args.replace("{in}", "$in").replace("{input}", input).replace("{work}", "$work");
                expected.push(format!("{}|{}|{input}|{args}", t.name, case.trim_end()));
            }
        }
    }
    assert!(expected.len() > 100, "{} runs", expected.len());
    assert_eq!(list(true), expected);
    let small: Vec<String> = expected
        .into_iter()
        .filter(|r| r.split('|').nth(2).is_some_and(|i| !i.starts_with("huge")))
        .collect();
    assert_eq!(list(false), small);
}
