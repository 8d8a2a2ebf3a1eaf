//! Side files: the files an option names beside the inputs (`--mask`, `equalize --reference` and
//! `--table`, the Hough tools' `--draw`), opened and read here alone, by the same rules as inputs.
//!
//! A side file is opened without waiting (a FIFO with no writer reads as empty, never hangs the
//! tool) and its kind is taken from the opened descriptor, not the path, so no rename between the
//! check and the read changes what is read. A folder or a device (`/dev/zero`, a terminal) is
//! refused; a regular file or a pipe (`--mask <(convert ...)`) is read when the user named it, a
//! regular file alone when the name came from a stream (`--draw '{dir}/{name}'`: a name read from
//! a stream is trusted no more for reading than for writing). Reading keeps to a bound: images
//! through the frame reader under `--max-pixels`, whole files under a cap of bytes.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use histopipe_frame::{Frame, FrameReader, Origin, ReadOptions};

/// The side file `path`, opened for reading, if it is a kind of file a name from `origin` may
/// lead to: `Err` says why not (`is a folder`), or the system's error.
pub fn open(path: &Path, origin: Origin) -> Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let kind = file.metadata().map_err(|e| e.to_string())?.file_type();
    if kind.is_dir() {
        return Err("is a folder, not a file".into());
    }
    let other = if kind.is_file() {
        None
    } else if kind.is_fifo() {
        (origin == Origin::Stream).then_some("a pipe")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        Some("a socket")
    };
    if let Some(other) = other {
        let only = if origin == Origin::Stream { " (the stream names regular files alone)" } else { "" };
        return Err(format!("is {other}, not a regular file{only}"));
    }
    blocking(&file).map_err(|e| e.to_string())?;
    Ok(file)
}

/// Clears `O_NONBLOCK`, set only so that opening a FIFO without a writer does not wait: reads
/// then wait for a writer's bytes as reads of standard input do, and end at its end.
fn blocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor `file` owns and keeps open for the call; F_GETFL and F_SETFL
    // read and set its status flags and touch no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags == -1 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The bytes of the side file `path`, at most `cap` of them: a longer file is refused, naming the
/// cap and what it is the cap of (`what`: `a table of 65,536 rows`), before the cap's bytes are
/// all read where the file says its length.
pub fn read_bytes(path: &Path, origin: Origin, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let file = open(path, origin)?;
    let over = || format!("is longer than {cap} bytes, the most {what} takes");
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len > cap {
        return Err(over());
    }
    let mut bytes = Vec::new();
    histopipe_frame::fallibly(|| bytes.try_reserve_exact(len as usize))
        .map_err(|_| "out of memory".to_string())?;
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(over());
    }
    Ok(bytes)
}

/// The first frame of the image file `path`, read by the frame reader with `options` (its
/// `--max-pixels` and memory bound, as an input's).
pub fn first_frame(path: &Path, origin: Origin, options: ReadOptions) -> Result<Frame, String> {
    let file = open(path, origin)?;
    let mut reader = FrameReader::new(BufReader::new(file), options);
    match reader.next_frame() {
        Ok(Some(frame)) => Ok(frame),
        Ok(None) => Err("no image".into()),
        Err(e) => Err(e.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("histopipe-side-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn folders_and_devices_are_refused() {
        let dir = temp("kinds");
        for origin in [Origin::Named, Origin::Stream] {
            assert_eq!(open(&dir, origin).unwrap_err(), "is a folder, not a file");
            let e = open(Path::new("/dev/zero"), origin).unwrap_err();
            assert!(e.starts_with("is a device, not a regular file"), "{e}");
            let e = read_bytes(Path::new("/dev/zero"), origin, 10, "a test").unwrap_err();
            assert!(e.starts_with("is a device, not a regular file"), "{e}");
        }
        assert!(open(&dir.join("missing"), Origin::Named).unwrap_err().contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO without a writer opens at once and reads as empty when the user names it; a name
    /// from a stream may not lead to one.
    #[test]
    fn a_fifo_without_a_writer_never_waits() {
        let dir = temp("fifo");
        let fifo = dir.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path `name` owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert_eq!(read_bytes(&fifo, Origin::Named, 10, "a test").unwrap(), b"");
        assert_eq!(
            first_frame(&fifo, Origin::Named, ReadOptions::default()).unwrap_err(),
            "empty input: no frame to read"
        );
        assert!(open(&fifo, Origin::Stream).unwrap_err().starts_with("is a pipe"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_over_the_cap_are_refused() {
        let dir = temp("cap");
        let file = dir.join("f");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_bytes(&file, Origin::Stream, 5, "a test").unwrap(), b"12345");
        let e = read_bytes(&file, Origin::Named, 4, "a test").unwrap_err();
        assert_eq!(e, "is longer than 4 bytes, the most a test takes");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
