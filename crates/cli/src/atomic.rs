//! Files written atomically: under a temporary name in the same folder, renamed to their path once
//! complete. A reader of the path sees the old file or the whole new one, never a part; a tool that
//! fails leaves the old file as it was and no new one (so a Makefile target is never half
//! written, and `equalize -o a.pgm a.pgm` reads the old `a.pgm` to its end). The temporary files
//! not yet renamed are listed, so that they are removed however the tool ends: by an error, by a
//! panic on any thread ([`remove_all`] at exit), or by a signal (see `signals.rs`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The temporary files not yet renamed or removed.
struct Temporaries {
    /// A few per worker: a list is quick enough.
    paths: Vec<PathBuf>,
    /// Set by [`remove_all`]: the tool is ending, and makes no more.
    closed: bool,
}

static TEMPORARIES: Mutex<Temporaries> = Mutex::new(Temporaries { paths: Vec::new(), closed: false });

impl Temporaries {
    fn forget(&mut self, path: &Path) {
        self.paths.retain(|p| p != path);
    }
}

fn temporaries() -> std::sync::MutexGuard<'static, Temporaries> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file not yet renamed, and refuses new ones: the tool is ending.
pub(crate) fn remove_all() {
    let mut t = temporaries();
    t.closed = true;
    for path in t.paths.drain(..) {
        let _ = fs::remove_file(path);
    }
}

/// Writes `bytes` as the whole of the file `path`, atomically as `-o` writes: for a tool's side
/// files (`--plot`), which must not be left half written either.
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.writer().write_all(bytes)?;
    file.commit()
}

/// A file being written to its temporary path; [`AtomicFile::commit`] puts it in place.
pub(crate) struct AtomicFile {
    out: BufWriter<File>,
    /// The path it is written under until it is complete; `None` when the path is not a regular
    /// file (a device such as `/dev/null`, a named pipe): those are written in place.
    temporary: Option<PathBuf>,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing the file that will be `path`, making its folder if needed. A symbolic link
    /// at `path` is followed: the file it points to is replaced.
    pub(crate) fn create(path: &Path) -> io::Result<AtomicFile> {
        let mut path = path.to_owned();
        if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            path = fs::canonicalize(&path)?;
        }
        let existing = fs::metadata(&path).ok();
        if let Some(m) = &existing {
            if m.is_dir() {
                return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a folder"));
            }
            if !m.is_file() {
                let file = OpenOptions::new().write(true).truncate(true).open(&path)?;
                return Ok(AtomicFile {
                    out: BufWriter::with_capacity(1 << 20, file),
                    temporary: None,
                    path,
                });
            }
        }
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&folder)?;
        let (file, temporary) = create_temporary(&folder, &path)?;
        if let Some(m) = existing {
            // The new file takes the place of the old one, and its permissions with it.
            file.set_permissions(m.permissions())?;
        }
        Ok(AtomicFile { out: BufWriter::with_capacity(1 << 20, file), temporary: Some(temporary), path })
    }

    pub(crate) fn writer(&mut self) -> &mut BufWriter<File> {
        &mut self.out
    }

    /// The path the file will have.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes out what is buffered and renames the file to its path.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        self.out.flush()?;
        if let Some(temporary) = self.temporary.take() {
            let renamed = fs::rename(&temporary, &self.path);
            if renamed.is_err() {
                let _ = fs::remove_file(&temporary);
            }
            temporaries().forget(&temporary);
            renamed?;
        }
        Ok(())
    }
}

/// A file left unfinished is removed.
impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(temporary) = self.temporary.take() {
            let _ = fs::remove_file(&temporary);
            temporaries().forget(&temporary);
        }
    }
}

/// A new, empty file in `folder` named after `path`: hidden, and marked as histopipe's.
fn create_temporary(folder: &Path, path: &Path) -> io::Result<(File, PathBuf)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    // Short enough that a long file name cannot make it too long for the file system.
    let name: String = name.chars().take(100).collect();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temporary = folder.join(format!(".{name}.histopipe-{}-{n}.tmp", std::process::id()));
        let mut t = temporaries();
        if t.closed {
            return Err(io::Error::other("the tool is ending"));
        }
        // Listed before it exists, so no exit can miss it.
        t.paths.push(temporary.clone());
        match OpenOptions::new().write(true).create_new(true).open(&temporary) {
            Ok(file) => return Ok((file, temporary)),
            Err(e) => {
                t.forget(&temporary);
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("histopipe-atomic-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        v.sort();
        v
    }

    #[test]
    fn the_file_appears_whole_or_not_at_all() {
        let dir = folder("whole");
        let path = dir.join("sub/a.pgm");
        let mut f = AtomicFile::create(&path).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.writer().flush().unwrap();
        assert!(!path.exists(), "nothing at the path before the commit");
        assert_eq!(names(&dir.join("sub")).len(), 1, "a temporary file meanwhile");
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(names(&dir.join("sub")), ["a.pgm"], "the temporary file is gone");

        let mut f = AtomicFile::create(&path).unwrap();
        f.writer().write_all(b"newer, but failed").unwrap();
        drop(f);
        assert_eq!(fs::read(&path).unwrap(), b"new", "a failed write leaves the old file");
        assert_eq!(names(&dir.join("sub")), ["a.pgm"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn permissions_and_links_are_kept_and_devices_written_in_place() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = folder("kept");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.csv");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        symlink("a.csv", dir.join("link.csv")).unwrap();
        let mut f = AtomicFile::create(&dir.join("link.csv")).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new", "the link's target is replaced");
        assert!(fs::symlink_metadata(dir.join("link.csv")).unwrap().file_type().is_symlink());
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        let mut null = AtomicFile::create(Path::new("/dev/null")).unwrap();
        null.writer().write_all(b"x").unwrap();
        null.commit().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "not replaced");
        fs::remove_dir_all(&dir).unwrap();
    }
}
