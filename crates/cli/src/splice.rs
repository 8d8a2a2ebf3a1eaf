//! Frames handed to a pipe by their pages rather than copied into it.
//!
//! Between two tools of a pipeline every byte is copied twice: into the pipe by the writer and out
//! of it by the reader, each under the pipe's lock, so the two copies take turns and a pipe of
//! large frames moves at half a copy's speed (traced on the H100 machine: `pad FILES | rotate 45 |
//! colhist` of 4K frames spent 94-97% of its time in the pipes' `read` and `write` calls, each hop
//! about 1.7 GB/s). `vmsplice(2)` puts references to the pages of a frame's samples in the pipe
//! instead of copying them, which leaves the reader's copy alone.
//!
//! The pipe (or whatever its reader splices them on to) reads those pages after `vmsplice`
//! returns, so they must never change again. They are dropped from this process with
//! `madvise(MADV_DONTNEED)` once given: the pages themselves live on while the pipe holds them,
//! and whatever the heap later puts at those addresses lands on fresh zeroed pages. Only whole
//! pages inside samples this process owns on its heap are given; the bytes before the first page
//! boundary and after the last are written as usual, in order.

use std::fs::File;
use std::io::{self, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};

/// Samples shorter than this are written as usual: giving pages costs a `madvise` and, when the
/// heap reuses the addresses, a page fault per page, which only large frames win back.
pub(crate) const LEAST: usize = 1 << 20;

/// Standard output, known to be a pipe.
pub(crate) struct PagePipe {
    fd: RawFd,
    page: usize,
    /// `vmsplice` refused the pipe (a kernel or sandbox without it): pages are copied.
    refused: bool,
}

impl PagePipe {
    /// Standard output, if it is a pipe (`vmsplice` takes nothing else) and pages are a power of
    /// two in size.
    pub(crate) fn stdout() -> Option<PagePipe> {
        PagePipe::on(1)
    }

    /// `fd`, if it is a pipe, for as long as it stays open.
    fn on(fd: RawFd) -> Option<PagePipe> {
        // SAFETY: fstat writes into the zeroed struct it is given; the fd is only inspected.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd, &mut stat) } != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        // SAFETY: sysconf only reads a setting.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        page.is_power_of_two().then_some(PagePipe { fd, page, refused: false })
    }

    /// Writes `bytes` to the pipe: the whole pages inside them by reference, the rest by copy.
    /// Afterwards (whether or not it succeeded) the given pages of `bytes` read as zeros.
    pub(crate) fn give(&mut self, bytes: &mut [u8]) -> io::Result<()> {
        if self.refused {
            return write_all(self.fd, bytes);
        }
        let start = bytes.as_ptr() as usize;
        let first = (start.next_multiple_of(self.page) - start).min(bytes.len());
        let last = ((start + bytes.len()) & !(self.page - 1)).saturating_sub(start).max(first);
        write_all(self.fd, &bytes[..first])?;
        let (given, result) = self.splice(&bytes[first..last]);
        if given > 0 {
            // SAFETY: [first, first + given) is whole pages of `bytes`, which this function
            // borrows mutably: dropping them only makes them read as zeros (private anonymous
            // heap memory), which the caller is told.
            unsafe { libc::madvise(bytes.as_mut_ptr().add(first).cast(), given, libc::MADV_DONTNEED) };
        }
        match result {
            Ok(()) => {}
            Err(e) if given == 0 && refusal(&e) => {
                self.refused = true;
                write_all(self.fd, &bytes[first..last])?;
            }
            Err(e) => return Err(e),
        }
        write_all(self.fd, &bytes[last..])
    }

    /// `vmsplice`s `pages` whole, as far as it goes: the bytes given, and how it ended.
    fn splice(&self, pages: &[u8]) -> (usize, io::Result<()>) {
        let mut given = 0;
        while given < pages.len() {
            let rest = &pages[given..];
            let iov = libc::iovec { iov_base: rest.as_ptr() as *mut libc::c_void, iov_len: rest.len() };
            // SAFETY: the iovec describes memory borrowed for the call; without SPLICE_F_GIFT the
            // kernel only takes references to its pages (see the module's comment for why they
            // are never written again).
            let n = unsafe { libc::vmsplice(self.fd, &iov, 1, 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return (given, Err(e));
            }
            if n == 0 {
                return (given, Err(io::ErrorKind::WriteZero.into()));
            }
            given += n as usize;
        }
        (given, Ok(()))
    }
}

/// Whether `vmsplice` failed for want of support rather than for the pipe's sake (a closed pipe is
/// an error of the run, as with `write`).
fn refusal(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EBADF | libc::EPERM)
    )
}

/// Writes all of `bytes` to `fd`, as `write(2)` does.
fn write_all(fd: RawFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: the descriptor stays open for the call (standard output, for the life of the
    // process; a test's pipe, while its File lives), and ManuallyDrop never closes it.
    let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::mpsc::channel;

    /// A pipe of 1 MiB: (read end, write end).
    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two fds, each then owned by one File.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: F_SETPIPE_SZ only resizes the pipe just made.
        unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1 << 20) };
        // SAFETY: the two fds are open and owned by nothing else.
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    #[test]
    fn what_was_given_reads_back_even_when_the_memory_is_reused_at_once() {
        let mut rng = fastrand::Rng::with_seed(7);
        for (len, offset) in [(3 << 20, 0), (3 << 20, 1), (5 << 20 | 123, 4095), (4096, 17), (10, 3), (0, 0)]
        {
            let mut heap = vec![0u8; len + offset];
            let bytes = &mut heap[offset..];
            rng.fill(bytes);
            let sent = bytes.to_vec();
            let (mut from, to) = pipe();
            let mut out = PagePipe::on(std::os::fd::AsRawFd::as_raw_fd(&to)).expect("a pipe");
            // The reader stops short of the end until the writer has reused its memory: what is
            // still in the pipe then must be what was given, not what replaced it.
            let held = len.min(512 << 10);
            let (go, wait) = channel();
            let reader = std::thread::spawn(move || {
                let mut got = vec![0u8; len - held];
                from.read_exact(&mut got).unwrap();
                wait.recv().unwrap();
                from.read_to_end(&mut got).unwrap();
                got
            });
            out.give(bytes).unwrap();
            bytes.fill(0xab);
            drop(to);
            go.send(()).unwrap();
            let got = reader.join().unwrap();
            assert!(got == sent, "{len} bytes at offset {offset}: the pipe did not carry what was given");
        }
    }

    #[test]
    fn only_pipes_take_pages() {
        let file = unlinked_regular_file();
        assert!(PagePipe::on(std::os::fd::AsRawFd::as_raw_fd(&file)).is_none());
        let (_from, to) = pipe();
        assert!(PagePipe::on(std::os::fd::AsRawFd::as_raw_fd(&to)).is_some());
    }

    fn unlinked_regular_file() -> File {
        let path = std::env::temp_dir().join(format!("histopipe-splice-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
