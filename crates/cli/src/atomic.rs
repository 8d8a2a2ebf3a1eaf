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

use crate::inputs;

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

    /// Removes every file listed and refuses new ones.
    fn close(&mut self) {
        self.closed = true;
        for path in self.paths.drain(..) {
            let _ = fs::remove_file(path);
        }
    }
}

fn temporaries() -> std::sync::MutexGuard<'static, Temporaries> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file not yet renamed, and refuses new ones: the tool is ending.
pub(crate) fn remove_all() {
    temporaries().close();
}

/// As [`remove_all`], from a thread that may hold the list's lock (a refused allocation while it
/// was held): the files are removed only if the lock is free.
pub(crate) fn remove_all_now() {
    if let Ok(mut t) = TEMPORARIES.try_lock() {
        t.close();
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
    /// (as `mv` and a rename replace one), so a link planted in a shared folder (`/tmp`,
    /// `/dev/shm`) cannot steer the output onto the file it points to. Only device files are
    /// opened and written in place, as the shell's `>` writes them: a character or block device
    /// or a named pipe at `path` itself, a standard stream (`/dev/stdout`, `/dev/fd/3`), or a
    /// link to a device that the runner (or root) owns ([`written_in_place`]).
    ///
    /// The new file takes the old one's permission bits when the runner owns the old file, less
    /// the set-user-ID, set-group-ID and sticky bits: a file the runner makes never carries them
    /// (another user's setuid file replaced by root's bytes would run as root), nor the mode of a
    /// file someone else chose.
    pub(crate) fn create(path: &Path) -> io::Result<AtomicFile> {
        let here = fs::symlink_metadata(path).ok();
        let link = here.as_ref().is_some_and(|m| m.file_type().is_symlink());
        if !link && here.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a folder"));
        }
        if written_in_place(path, here.as_ref()) {
            let file = OpenOptions::new().write(true).truncate(true).open(path)?;
            return Ok(AtomicFile {
                out: BufWriter::with_capacity(1 << 20, file),
                temporary: None,
                path: path.to_owned(),
            });
        }
        if link && fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a link to a folder"));
        }
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        make_folder(&folder)?;
        let (file, temporary) = create_temporary(&folder, path)?;
        if let Some(mode) = here.filter(|_| !link).and_then(|m| kept_mode(&m)) {
            set_mode(&file, mode)?;
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
            let renamed =
                inputs::hold_before_replacing(&self.path).and_then(|()| fs::rename(&temporary, &self.path));
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

/// Whether `path` is written in place rather than replaced (`here`: what `lstat` found there).
#[cfg(unix)]
fn written_in_place(path: &Path, here: Option<&fs::Metadata>) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let device = |m: &fs::Metadata| {
        let t = m.file_type();
        t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
    };
    match here {
        None => false,
        Some(m) if !m.file_type().is_symlink() => device(m),
        // A link: a standard stream is whatever the descriptor is (a regular file too, when the
        // shell redirected it to one); another link only to a device, and only when its owner
        // could have written that device anyway, so a link planted by another user is replaced.
        Some(m) => {
            descriptor_link(path)
                || ((m.uid() == effective_uid() || m.uid() == 0)
                    && fs::metadata(path).is_ok_and(|t| device(&t)))
        }
    }
}

#[cfg(not(unix))]
fn written_in_place(_path: &Path, here: Option<&fs::Metadata>) -> bool {
    here.is_some_and(|m| !m.is_file() && !m.is_dir())
}

/// Whether the link `path` leads, link by link, to an open descriptor's entry in
/// `/proc/PID/fd/` (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`): a standard stream.
fn descriptor_link(path: &Path) -> bool {
    let mut at = path.to_owned();
    // The kernel follows at most 40 links.
    for _ in 0..40 {
        let folder = at.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if let Ok(folder) = fs::canonicalize(folder) {
            let parts: Vec<_> = folder.components().collect();
            if parts.len() == 4 && folder.starts_with("/proc") && parts[3].as_os_str() == "fd" {
                return true;
            }
        }
        match fs::read_link(&at) {
            Ok(target) if target.is_absolute() => at = target,
            Ok(target) => at = at.parent().unwrap_or(Path::new(".")).join(target),
            Err(_) => return false,
        }
    }
    false
}

/// The permission bits a file replacing one with metadata `old` takes: the old file's, less the
/// set-id and sticky bits, when the runner owns it; `None` (the default for a new file) when it
/// does not.
#[cfg(unix)]
fn kept_mode(old: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    (old.uid() == effective_uid()).then_some(old.mode() & 0o777)
}

#[cfg(not(unix))]
fn kept_mode(_old: &fs::Metadata) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
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

    #[cfg(unix)]
    #[test]
    fn set_id_and_sticky_bits_are_never_carried() {
        use std::os::unix::fs::PermissionsExt;
        let dir = folder("set-id");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.raw");
        for (old, new) in [(0o6755, 0o755), (0o4700, 0o700), (0o2750, 0o750), (0o1644, 0o644)] {
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(old)).unwrap();
            write_whole(&path, b"new").unwrap();
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, new, "{old:o} replaced");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Root's view of a file another user made: its mode is not the new file's. Needs root (to
    /// give a file away); skipped otherwise.
    #[cfg(unix)]
    #[test]
    fn the_mode_of_a_file_another_user_owns_is_not_carried() {
        use std::os::unix::fs::PermissionsExt;
        if effective_uid() != 0 {
            return;
        }
        let dir = folder("not-owned");
        fs::create_dir_all(&dir).unwrap();
        write_whole(&dir.join("fresh"), b"x").unwrap();
        let fresh = fs::metadata(dir.join("fresh")).unwrap().permissions().mode() & 0o7777;
        let path = dir.join("out.raw");
        fs::write(&path, "planted").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o6711)).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        write_whole(&path, b"root's bytes").unwrap();
        let m = fs::metadata(&path).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, fresh, "a new file's mode, not the planted one's");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// `/dev/shm` is a shared sticky folder under `/dev`: a link there is another user's as
    /// much as one in `/tmp`, and is replaced, not followed.
    #[cfg(unix)]
    #[test]
    fn a_link_in_dev_shm_is_replaced_not_followed() {
        use std::os::unix::fs::symlink;
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return;
        }
        let dir = folder("shm-victim");
        fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        fs::write(&victim, "precious").unwrap();
        let link = shm.join(format!("histopipe-link-{}", std::process::id()));
        let _ = fs::remove_file(&link);
        if symlink(&victim, &link).is_err() {
            return;
        }
        write_whole(&link, b"output").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_file(), "the link is replaced by the file");
        assert_eq!(fs::read(&victim).unwrap(), b"precious", "the link's target is untouched");
        fs::remove_file(&link).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn standard_streams_and_own_links_to_devices_are_written_in_place() {
        use std::os::unix::fs::symlink;
        for stream in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/2"] {
            if Path::new(stream).exists() {
                assert!(descriptor_link(Path::new(stream)), "{stream}");
            }
        }
        assert!(!descriptor_link(Path::new("/dev/null")), "a device, not a descriptor's link");
        let dir = folder("own-device");
        fs::create_dir_all(&dir).unwrap();
        let link = dir.join("null");
        symlink("/dev/null", &link).unwrap();
        let here = fs::symlink_metadata(&link).unwrap();
        assert!(written_in_place(&link, Some(&here)), "the runner's own link to a device");
        // Given to another user (root can), the same link is no longer followed.
        if effective_uid() != 0 {
            fs::remove_dir_all(&dir).unwrap();
            return;
        }
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let here = fs::symlink_metadata(&link).unwrap();
        assert!(!written_in_place(&link, Some(&here)), "another user's link to a device");
        write_whole(&link, b"output").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_file(), "replaced by the file");
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
