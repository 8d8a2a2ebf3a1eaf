//! The files a run has given its frames, so that no two frames are written to one file (the
//! second would silently replace the first).
//!
//! Two paths name one file when they lead to the same folder and the same name, however they are
//! spelled: `data/a.pgm`, `./data/a.pgm`, `x/../data/a.pgm` and a path through a linked folder are
//! one file. So a file is known by its [`identity`]: its folder resolved by the file system (links,
//! `.` and `..` followed), as far as the folder exists yet, and its name as written (a link in the
//! last place is replaced by the output, not followed: see `atomic.rs`).
//!
//! Memory is bounded whatever the number of frames: the last [`WINDOW`] identities are held
//! exactly (a frame may be compared with one still being written), and older ones only as bits
//! of a fixed-size Bloom filter. An old identity the filter may hold is a collision only when
//! the file is there and was written since the run began: the filter's rare false positives
//! then cost a `stat` and are never reported.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Identities held exactly: far more than the frames in flight (workers + 2), so a frame whose
/// output may not be on disk yet is always among them.
const WINDOW: usize = 4096;

/// The Bloom filter's size in bits (8 MiB): about one false positive in 20 at 10^7 frames, one
/// in 10^7 at 10^6.
const FILTER_BITS: usize = 1 << 26;

/// Bits set per identity.
const FILTER_HASHES: u64 = 7;

/// How far before the run's start a file's time may be and still be the run's own: file systems
/// stamp times coarsely (a clock tick on Linux, 2 s on FAT).
const CLOCK_SLACK: Duration = Duration::from_secs(2);

/// A file an earlier frame of the run was given.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken<P> {
    /// By one of the last [`WINDOW`] frames: what was recorded with it.
    Recently(P),
    /// By a frame before those.
    Earlier,
}

/// The files given so far; `P` is what a message needs of the frame that took one.
pub(crate) struct TakenFiles<P> {
    recent: HashMap<PathBuf, P>,
    order: VecDeque<PathBuf>,
    /// Made when the first identity leaves the window.
    older: Option<Vec<u64>>,
    started: SystemTime,
    /// The last folder resolved, and what it resolved to: a batch writes many files to one folder.
    folder: Option<(PathBuf, PathBuf)>,
}

impl<P> TakenFiles<P> {
    pub(crate) fn new() -> TakenFiles<P> {
        TakenFiles {
            recent: HashMap::new(),
            order: VecDeque::new(),
            older: None,
            started: SystemTime::now(),
            folder: None,
        }
    }

    /// Gives `path` to a frame, recording `by` with it; or says which frame has it already.
    pub(crate) fn take(&mut self, path: &Path, by: P) -> Result<(), Taken<&P>> {
        let id = self.identity(path);
        if self.recent.contains_key(&id) {
            return Err(Taken::Recently(&self.recent[&id]));
        }
        if self.older.as_ref().is_some_and(|bits| bloom_holds(bits, &id)) && self.written_since_start(path) {
            return Err(Taken::Earlier);
        }
        if self.order.len() == WINDOW {
            if let Some(old) = self.order.pop_front() {
                self.recent.remove(&old);
                bloom_add(self.older.get_or_insert_with(|| vec![0; FILTER_BITS / 64]), &old);
            }
        }
        self.order.push_back(id.clone());
        self.recent.insert(id, by);
        Ok(())
    }

    /// The number of identities held exactly.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.recent.len()
    }

    fn written_since_start(&self, path: &Path) -> bool {
        let modified = fs::symlink_metadata(path).and_then(|m| m.modified());
        modified.is_ok_and(|t| t + CLOCK_SLACK >= self.started)
    }

    /// The file `path` names: its folder as the file system resolves it, as far as it exists,
    /// then the rest of the folder and the name as written, `.` dropped and `..` taking back a
    /// folder (as the file system will once it makes them).
    fn identity(&mut self, path: &Path) -> PathBuf {
        let name = path.file_name().map(OsString::from).unwrap_or_default();
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let resolved = match &self.folder {
            Some((spelled, resolved)) if spelled == folder => resolved.clone(),
            _ => {
                let resolved = resolve_folder(folder);
                self.folder = Some((folder.to_owned(), resolved.clone()));
                resolved
            }
        };
        resolved.join(name)
    }
}

/// The folder `path` lies in, resolved as a file's identity resolves it: two spellings of one
/// folder give one path.
pub(crate) fn resolved_folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => resolve_folder(p),
        _ => resolve_folder(Path::new(".")),
    }
}

/// `folder` resolved: its longest part that exists, by the file system; the rest lexically.
fn resolve_folder(folder: &Path) -> PathBuf {
    for existing in folder.ancestors() {
        let at = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
        let Ok(mut resolved) = fs::canonicalize(at) else { continue };
        let rest = folder.strip_prefix(existing).unwrap_or(Path::new(""));
        for part in rest.components() {
            match part {
                Component::Normal(p) => resolved.push(p),
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return resolved;
    }
    // Not even the working folder resolves (it was removed): the spelling is all there is.
    folder.to_owned()
}

/// The filter's bit positions for `id`: double hashing of two 64-bit hashes.
fn bloom_positions(id: &Path) -> impl Iterator<Item = usize> {
    let hash = |salt: u64| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        id.hash(&mut h);
        h.finish()
    };
    let (a, b) = (hash(0), hash(1) | 1);
    (0..FILTER_HASHES).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) % FILTER_BITS as u64) as usize)
}

fn bloom_add(bits: &mut [u64], id: &Path) {
    for p in bloom_positions(id) {
        bits[p / 64] |= 1 << (p % 64);
    }
}

fn bloom_holds(bits: &[u64], id: &Path) -> bool {
    bloom_positions(id).all(|p| bits[p / 64] & (1 << (p % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("histopipe-taken-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn one_file_however_it_is_spelled() {
        let dir = folder("spelled");
        fs::create_dir_all(dir.join("data/x")).unwrap();
        let mut taken = TakenFiles::new();
        assert!(taken.take(&dir.join("data/a.pgm"), 1).is_ok());
        for other in ["data/./a.pgm", "data/x/../a.pgm", "./data//a.pgm", "new/../data/a.pgm"] {
            assert_eq!(taken.take(&dir.join(other), 2), Err(Taken::Recently(&1)), "{other}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("data"), dir.join("linked")).unwrap();
            assert_eq!(taken.take(&dir.join("linked/a.pgm"), 3), Err(Taken::Recently(&1)), "a linked folder");
        }
        assert!(taken.take(&dir.join("data/b.pgm"), 4).is_ok());
        assert!(taken.take(&dir.join("data/x/a.pgm"), 5).is_ok());
        // A folder that does not exist yet, then does: the same file both times.
        assert!(taken.take(&dir.join("later/c.pgm"), 6).is_ok());
        fs::create_dir_all(dir.join("later")).unwrap();
        assert_eq!(taken.take(&dir.join("./later/c.pgm"), 7), Err(Taken::Recently(&6)));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_is_bounded_and_old_files_still_count() {
        let dir = folder("bounded");
        let mut taken = TakenFiles::new();
        let first = dir.join("0.pgm");
        fs::write(&first, "written by this run").unwrap();
        assert!(taken.take(&first, 0).is_ok());
        let never_written = dir.join("1.pgm");
        assert!(taken.take(&never_written, 1).is_ok());
        for n in 2..3 * WINDOW {
            assert!(taken.take(&dir.join(format!("{n}.pgm")), n).is_ok());
        }
        assert_eq!(taken.held(), WINDOW, "only the last {WINDOW} exactly");
        assert_eq!(taken.take(&dir.join("./0.pgm"), 99), Err(Taken::Earlier), "still refused");
        // Given but never written (its frame failed): the filter alone does not refuse it.
        assert!(taken.take(&never_written, 100).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_filter_has_no_false_negatives_and_few_false_positives() {
        let mut bits = vec![0u64; FILTER_BITS / 64];
        for n in 0..100_000 {
            bloom_add(&mut bits, Path::new(&format!("/out/{n}.pgm")));
        }
        assert!((0..100_000).all(|n| bloom_holds(&bits, Path::new(&format!("/out/{n}.pgm")))));
        let false_positives =
            (0..100_000).filter(|n| bloom_holds(&bits, Path::new(&format!("/x/{n}.pgm")))).count();
        assert!(false_positives < 5, "{false_positives}");
    }
}
