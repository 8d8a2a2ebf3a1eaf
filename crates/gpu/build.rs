//! Embeds every CUDA source of `kernels-common/` in the crate: `*.cu` files become [`Source`]
//! constants (named after the file, upper-cased) listed in `SOURCES`, `*.cuh` headers go to
//! `HEADERS`, which NVRTC is given by name so `#include "x.cuh"` resolves without a file system.

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    // Read at run time, not baked in with env!: a build script compiled in another checkout (a
    // copied target/) would otherwise keep embedding that checkout's kernels.
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR")?).join("../../kernels-common");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("kernels-common/: {e}"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    let (mut consts, mut sources, mut headers) = (String::new(), String::new(), String::new());
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let name =
            path.file_name().and_then(|n| n.to_str()).ok_or("kernel file name is not UTF-8")?.to_owned();
        let full = path.canonicalize()?;
        match path.extension().and_then(|e| e.to_str()) {
            Some("cu") => {
                let ident = name.trim_end_matches(".cu").to_uppercase().replace('-', "_");
                writeln!(
                    consts,
                    "pub const {ident}: Source = Source {{ name: {name:?}, text: include_str!({full:?}) }};"
                )?;
                write!(sources, "{ident}, ")?;
            }
            Some("cuh") => write!(headers, "({name:?}, include_str!({full:?})), ")?,
            _ => {}
        }
    }
    let out = Path::new(&std::env::var("OUT_DIR")?).join("kernels.rs");
    let text = format!(
        "{consts}\n/// Every kernel source.\npub const SOURCES: &[Source] = &[{sources}];\n\
         /// Every header, by the name `#include` gives.\npub const HEADERS: &[(&str, &str)] = &[{headers}];\n"
    );
    std::fs::write(out, text)?;
    Ok(())
}
