//! Writes [`FLOAT_REFUSED`](../src/tool.rs), the line that refuses float frames, naming the tools
//! that take them: those with `float = true` in the registry of tools, tools.toml at the
//! workspace's root (its header says what it holds; tests/tools/registry.rs checks each tool's
//! entry against what the tool does).

use std::error::Error;
use std::path::Path;

/// The tool that makes float frames integers, named first in the line rather than in its list.
const CONVERTER: &str = "stretch";

fn main() -> Result<(), Box<dyn Error>> {
    let path = Path::new(&std::env::var("CARGO_MANIFEST_DIR")?).join("../../tools.toml");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let floats = float_tools(&text);
    if !floats.contains(&CONVERTER) {
        return Err(format!(
            "tools.toml: {CONVERTER}, which makes float frames integers, has no `float = true`"
        )
        .into());
    }
    let others: Vec<&str> = floats.into_iter().filter(|t| *t != CONVERTER).collect();
    let listed = match others.split_last() {
        Some((last, [])) => format!("{last} takes"),
        Some((last, rest)) => format!("{} and {last} take", rest.join(", ")),
        None => "no other tool takes".to_owned(),
    };
    let line = format!(
        "32-bit float samples, and this tool takes integer ones: make them integers first with \
         {CONVERTER} ({CONVERTER} --depth 16 -o x.png, or --depth 8); {listed} float frames as they are"
    );
    let out = Path::new(&std::env::var("OUT_DIR")?).join("float_refused.rs");
    std::fs::write(out, format!("{line:?}\n"))?;
    Ok(())
}

/// The tools of the registry's `text` with `float = true`, in its order.
fn float_tools(text: &str) -> Vec<&str> {
    let mut tool = None;
    let mut floats = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            tool = Some(name);
        } else if let (Some(name), Some((key, value))) = (tool, line.split_once('=')) {
            if key.trim() == "float" && value.trim() == "true" {
                floats.push(name);
            }
        }
    }
    floats
}
