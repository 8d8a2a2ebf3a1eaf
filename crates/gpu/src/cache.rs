//! The on-disk cache of compiled kernels, so only a machine's first run pays for NVRTC.
//!
//! Location: `$XDG_CACHE_HOME/histopipe/kernels`, else `~/.cache/histopipe/kernels`, which the
//! tools fill; and, read only, the install's own, `PREFIX/share/histopipe/kernels` beside the
//! tools' `PREFIX/bin`, which `scripts/install` fills with `histopipe-kernels` for the common
//! architectures, so a user's first run after an install pays for no compile either. An entry is
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

/// The install's own cache, read only: `PREFIX/share/histopipe/kernels` for a tool run from
/// `PREFIX/bin`.
pub fn installed_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("share").join("histopipe").join("kernels"))
}

/// The cache file for `source` compiled for `sm_<arch>` by NVRTC `version`, in the user's cache.
pub fn path(source: &Source, arch: i32, version: (i32, i32)) -> Option<PathBuf> {
    Some(dir()?.join(file_name(source, arch, version)))
}

/// The name of `source`'s entry for `sm_<arch>` and NVRTC `version`, in any of the caches.
pub fn file_name(source: &Source, arch: i32, version: (i32, i32)) -> String {
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
    format!("{stem}-sm_{arch}-{hex}.cubin")
}

/// The compiled `source` from the user's cache, else the install's: `None` when neither has it.
pub fn find(source: &Source, arch: i32, version: (i32, i32)) -> Option<Vec<u8>> {
    let name = file_name(source, arch, version);
    [dir(), installed_dir()].into_iter().flatten().find_map(|d| load(&d.join(&name)))
}

/// The most bytes a cached kernel module is read to (they are tens of kilobytes): a file over
/// it is no module of ours.
const LARGEST: u64 = 64 << 20;

pub fn load(path: &PathBuf) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok().filter(|f| f.metadata().is_ok_and(|m| m.is_file()))?;
    let mut bytes = Vec::new();
    file.take(LARGEST + 1).read_to_end(&mut bytes).ok()?;
    Some(bytes).filter(|b| b.len() as u64 <= LARGEST && b.starts_with(b"\x7fELF"))
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
