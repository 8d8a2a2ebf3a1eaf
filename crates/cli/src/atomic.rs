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
    /// Starts writing the file that will be `path`, making its folder if needed. What is at
    /// `path` is replaced, not written through: a symbolic link there is replaced by the new file
    /// (as `mv` and a rename replace one), so a link planted in a shared folder cannot steer the
    /// output onto the file it points to. Devices, named pipes and the links of `/dev` and
    /// `/proc` (`/dev/null`, a fifo, `/dev/stdout`) are opened and written in place, as the
    /// shell's `>` writes them, by the kernel's lookup (so its `fs.protected_symlinks` applies).
    pub(crate) fn create(path: &Path) -> io::Result<AtomicFile> {
        let here = fs::symlink_metadata(path).ok();
        let link = here.as_ref().is_some_and(|m| m.file_type().is_symlink());
        // What a write through `path` would reach: for a link, its target (if there is one).
        let reached = if link { fs::metadata(path).ok() } else { here.clone() };
        if reached.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a folder"));
        }
        let special = reached.as_ref().is_some_and(|m| !m.is_file()) || (link && in_system_folder(path));
        if special {
            let file = OpenOptions::new().write(true).truncate(true).open(path)?;
            return Ok(AtomicFile {
                out: BufWriter::with_capacity(1 << 20, file),
                temporary: None,
                path: path.to_owned(),
            });
        }
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        make_folder(&folder)?;
        let (file, temporary) = create_temporary(&folder, path)?;
        if let Some(m) = here.filter(|_| !link) {
            // The new file takes the place of the old one, and its permissions with it.
            file.set_permissions(m.permissions())?;
        }
        Ok(AtomicFile {
            out: BufWriter::with_capacity(1 << 20, file),
            temporary: Some(temporary),
            path: path.to_owned(),
        })
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

/// Whether `path`'s folder is in `/dev` or `/proc`, where links stand for open files
/// (`/dev/stdout`, `/dev/fd/3`) and a file is never made.
fn in_system_folder(path: &Path) -> bool {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::canonicalize(folder).is_ok_and(|f| f.starts_with("/dev") || f.starts_with("/proc"))
}

/// Makes `folder` and the folders above it; a file in the way is named (`create_dir_all` says
/// only "File exists").
fn make_folder(folder: &Path) -> io::Result<()> {
    fs::create_dir_all(folder).map_err(|e| {
        let file = folder.ancestors().find(|a| fs::metadata(a).is_ok_and(|m| !m.is_dir()));
        match file {
            Some(file) => io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is a file, not a folder", file.display()),
            ),
            None => e,
        }
    })
}

/// The most bytes of the output's name a temporary name keeps: with the rest of the temporary
/// name (under 50 bytes) it stays under the 255 bytes file systems allow a name.
const TEMPORARY_NAME_BYTES: usize = 100;

/// `name` cut to at most `max` bytes, at a character's boundary.
fn cut(name: &str, max: usize) -> &str {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// A new, empty file in `folder` named after `path`: hidden, and marked as histopipe's.
fn create_temporary(folder: &Path, path: &Path) -> io::Result<(File, PathBuf)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let whole = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let name = cut(&whole, TEMPORARY_NAME_BYTES);
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
    fn permissions_are_kept_and_devices_written_in_place() {
        use std::os::unix::fs::PermissionsExt;
        let dir = folder("kept");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.csv");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        let mut null = AtomicFile::create(Path::new("/dev/null")).unwrap();
        null.writer().write_all(b"x").unwrap();
        null.commit().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "not replaced");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_path_is_replaced_never_written_through() {
        use std::os::unix::fs::symlink;
        let dir = folder("links");
        fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim.txt");
        fs::write(&victim, "precious").unwrap();
        symlink(&victim, dir.join("result.pgm")).unwrap();
        symlink(dir.join("nowhere"), dir.join("dangling.pgm")).unwrap();
        for name in ["result.pgm", "dangling.pgm"] {
            let mut f = AtomicFile::create(&dir.join(name)).unwrap();
            f.writer().write_all(b"output").unwrap();
            f.commit().unwrap();
            let m = fs::symlink_metadata(dir.join(name)).unwrap();
            assert!(m.is_file(), "{name}: the link itself is replaced by the file");
            assert_eq!(fs::read(dir.join(name)).unwrap(), b"output");
        }
        assert_eq!(fs::read(&victim).unwrap(), b"precious", "the link's target is untouched");
        assert!(!dir.join("nowhere").exists(), "nothing made where a dangling link pointed");
        // A link to a device is written through, as the shell's `>` does.
        symlink("/dev/null", dir.join("null")).unwrap();
        let mut f = AtomicFile::create(&dir.join("null")).unwrap();
        f.writer().write_all(b"x").unwrap();
        f.commit().unwrap();
        assert!(fs::symlink_metadata(dir.join("null")).unwrap().file_type().is_symlink());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_long_name_has_a_temporary_name_the_file_system_takes() {
        let dir = folder("long");
        // 80 characters of 3 bytes and an extension: 244 bytes, under the 255 allowed.
        let path = dir.join(format!("{}.pgm", "图".repeat(80)));
        let mut f = AtomicFile::create(&path).unwrap();
        f.writer().write_all(b"x").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"x");
        assert_eq!(cut("a图b", 2), "a", "cut at a character's boundary");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_in_the_way_of_the_folder_is_named() {
        let dir = folder("in-the-way");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("a.pgm"), "").unwrap();
        let e = AtomicFile::create(&dir.join("a.pgm/sub/x.pgm")).err().unwrap();
        assert_eq!(e.to_string(), format!("{} is a file, not a folder", dir.join("a.pgm").display()));
        fs::remove_dir_all(&dir).unwrap();
    }
}
