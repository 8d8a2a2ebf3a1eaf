//! The on-disk cache of compiled kernels, so only a machine's first run pays for NVRTC.
//!
//! Location: `$XDG_CACHE_HOME/histopipe/kernels`, else `~/.cache/histopipe/kernels`. An entry is
//! keyed by a SHA-256 of the source and its headers, the compile options, the NVRTC version and
//! the architecture. A cache that cannot be read or written is skipped, never an error.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::kernels::{Source, HEADERS};
use crate::nvrtc::OPTIONS;

pub fn dir() -> Option<PathBuf> {
    let base =
        std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("histopipe").join("kernels"))
}

/// The cache file for `source` compiled for `sm_<arch>` by NVRTC `version`.
pub fn path(source: &Source, arch: i32, version: (i32, i32)) -> Option<PathBuf> {
    let mut h = Sha256::new();
    for part in [source.name, source.text] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for (name, text) in HEADERS {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([0]);
    }
    for o in OPTIONS {
        h.update(o.as_bytes());
        h.update([0]);
    }
    h.update(format!("nvrtc {}.{} sm_{arch}", version.0, version.1).as_bytes());
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let stem = source.name.trim_end_matches(".cu");
    Some(dir()?.join(format!("{stem}-sm_{arch}-{hex}.cubin")))
}

pub fn load(path: &PathBuf) -> Option<Vec<u8>> {
    std::fs::read(path).ok().filter(|b| b.starts_with(b"\x7fELF"))
}

/// Stores `cubin` atomically (write, then rename), ignoring every failure.
pub fn store(path: &PathBuf, cubin: &[u8]) {
    let Some(parent) = path.parent() else { return };
    if std::fs::create_dir_all(parent).is_err() {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, cubin).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::SOURCES;

    #[test]
    fn the_key_changes_with_source_arch_and_nvrtc_version() {
        let a = SOURCES[0];
        let edited = Source { name: a.name, text: "// edited\n" };
        let base = path(&a, 90, (13, 0));
        assert!(base.is_some());
        for other in [path(&a, 80, (13, 0)), path(&a, 90, (13, 1)), path(&edited, 90, (13, 0))] {
            assert_ne!(other, base);
        }
        assert_eq!(path(&a, 90, (13, 0)), base, "the key is stable");
    }

    #[test]
    fn store_and_load_round_trip_and_failures_are_silent() {
        let dir = std::env::temp_dir().join(format!("histopipe-cache-test-{}", std::process::id()));
        let file = dir.join("k.cubin");
        store(&file, b"\x7fELF fake");
        assert_eq!(load(&file).as_deref(), Some(&b"\x7fELF fake"[..]));
        std::fs::write(&file, b"not an ELF").unwrap();
        assert_eq!(load(&file), None, "a corrupt entry is a miss");
        store(&PathBuf::from("/proc/histopipe/unwritable/k.cubin"), b"\x7fELF");
        let _ = std::fs::remove_dir_all(dir);
    }
}
