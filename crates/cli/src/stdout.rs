//! Standard output: the file it is, and whether it was open at all.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::Error;

/// Whether standard output was closed when the process began (`tool >&-`). Rust's runtime opens
/// `/dev/null` on a closed descriptor 0, 1 or 2 before `main`, which would make writing to a
/// closed output a silent success; [`CHECK_STDOUT`] looks before it does.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Runs as an ELF constructor, before the runtime's start-up and `main`.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static CHECK_STDOUT: extern "C" fn() = {
    extern "C" fn check() {
        // SAFETY: F_GETFD only reads the descriptor's flags; it fails only for a closed one.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
    check
};

/// An error, as `cat` gives one, when standard output was closed: what is written there is lost.
pub(crate) fn is_open() -> Result<(), Error> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Err(Error::io(&io::Error::other("standard output is closed (Bad file descriptor)")));
    }
    Ok(())
}

/// Standard output as the file it is. `std::io::stdout()` is line-buffered: it scans every write
/// for its last newline, a pass over each frame's samples; the writer buffers the output itself.
pub(crate) struct RawStdout(std::mem::ManuallyDrop<std::fs::File>);

impl RawStdout {
    pub(crate) fn new() -> RawStdout {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: file descriptor 1 stays open for the life of the process, and ManuallyDrop
        // never closes it.
        RawStdout(std::mem::ManuallyDrop::new(unsafe {
            std::fs::File::from_raw_fd(io::stdout().as_raw_fd())
        }))
    }
}

impl Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
