//! Saving the input a worker was reading when the whole process aborts.
//!
//! Some failures cannot be caught: a stack overflow (std's guard-page handler aborts), a failed
//! allocation (`handle_alloc_error` aborts), a panic while panicking. All of them end in
//! `abort()`, which raises SIGABRT on the failing thread; our handler writes that thread's input to
//! `crash-HASH.bin` in the regressions folder with plain system calls (nothing in a signal handler
//! may allocate or lock), then lets the abort go on.

use std::cell::Cell;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use crate::input::Input;

/// The regressions folder, as bytes, set once by [`install`].
static DIR: OnceLock<Vec<u8>> = OnceLock::new();

thread_local! {
    /// The input this thread is reading, or null.
    static CURRENT: Cell<*const Input> = const { Cell::new(std::ptr::null()) };
}

const NOTE: &[u8] = b"crash | the process aborted while reading this input (stack overflow, failed \
allocation or a panic while panicking): run `histopipe-fuzz --replay` on it for the message\n";

/// Makes an abort save the input being read into `dir`. Only the first call's folder is used.
pub fn install(dir: &Path) {
    if DIR.set(dir.as_os_str().as_bytes().to_vec()).is_err() {
        return;
    }
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler is an
    // `extern "C" fn(c_int)`, as a handler without SA_SIGINFO must be.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
}

/// Runs `f` with `input` marked as this thread's current input.
pub fn reading<R>(input: &Input, f: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            CURRENT.set(std::ptr::null());
        }
    }
    CURRENT.set(input);
    let _clear = Clear;
    f()
}

/// A file name built without allocating.
struct Name {
    buf: [u8; 1024],
    len: usize,
}

impl Name {
    fn push(&mut self, bytes: &[u8]) -> bool {
        let Some(room) = self.buf.get_mut(self.len..self.len + bytes.len()) else { return false };
        room.copy_from_slice(bytes);
        self.len += bytes.len();
        true
    }

    fn push_number(&mut self, mut n: u64, base: u64, width: usize) -> bool {
        let mut digits = [b'0'; 20];
        let mut i = digits.len();
        while n > 0 || digits.len() - i < width.max(1) {
            i -= 1;
            digits[i] = b"0123456789abcdef"[(n % base) as usize];
            n /= base;
        }
        self.push(&digits[i..])
    }

    /// Writes `bytes` to the file named so far plus `suffix`; best effort.
    fn write(&self, suffix: &[u8], bytes: &[u8]) {
        let mut path = Name { buf: self.buf, len: self.len };
        if !path.push(suffix) || !path.push(b"\0") {
            return;
        }
        // SAFETY: `path` is NUL-terminated; open, write and close are async-signal-safe and
        // `bytes` is valid for its length.
        unsafe {
            let fd =
                libc::open(path.buf.as_ptr().cast(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
            if fd < 0 {
                return;
            }
            let mut rest = bytes;
            while !rest.is_empty() {
                let n = libc::write(fd, rest.as_ptr().cast(), rest.len());
                if n <= 0 {
                    break;
                }
                rest = &rest[n as usize..];
            }
            libc::close(fd);
        }
    }
}

extern "C" fn on_abort(_signal: libc::c_int) {
    let (Some(dir), Ok(current)) = (DIR.get(), CURRENT.try_with(Cell::get)) else { return };
    if current.is_null() {
        return;
    }
    // SAFETY: `reading` keeps the input alive and clears the pointer before it goes.
    let input = unsafe { &*current };
    let mut name = Name { buf: [0; 1024], len: 0 };
    let mut ok = name.push(dir) && name.push(b"/crash-") && name.push_number(input.fingerprint(), 16, 16);
    name.write(b".txt", NOTE);
    if let Some(spec) = input.raw {
        ok &= name.push(b".raw-") && name.push_number(spec.width as u64, 10, 1) && name.push(b"x");
        ok &= name.push_number(spec.height as u64, 10, 1);
        if spec.depth == histopipe_frame::Depth::U16 {
            ok &= name.push(b"-16");
        }
    }
    if ok {
        name.write(b".bin", &input.bytes);
        let saved = b"histopipe-fuzz: aborted; the input is saved as ";
        // SAFETY: writes of valid buffers to stderr, async-signal-safe.
        unsafe {
            libc::write(2, saved.as_ptr().cast(), saved.len());
            libc::write(2, name.buf.as_ptr().cast(), name.len);
            libc::write(2, b".bin\n".as_ptr().cast(), 5);
        }
    }
}

/// The file an abort while reading `input` writes, for the tests and the documentation.
pub fn crash_file_name(input: &Input) -> String {
    input.file_name(&format!("crash-{:016x}", input.fingerprint()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    /// Set in the child process of `an_abort_saves_the_input_being_read`: the folder to save into.
    const CHILD: &str = "HISTOPIPE_FUZZ_CRASH_CHILD";

    #[test]
    fn an_abort_saves_the_input_being_read() {
        let input = Input::described(b"P5 1 1 255\n\x07".to_vec());
        if let Some(dir) = std::env::var_os(CHILD) {
            install(Path::new(&dir));
            reading(&input, || std::process::abort());
        }
        let dir = std::env::temp_dir().join(format!("histopipe-fuzz-crash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash::tests::an_abort_saves_the_input_being_read", "--nocapture"])
            .env(CHILD, &dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        let saved = std::fs::read(dir.join(crash_file_name(&input)));
        let note = std::fs::read_to_string(dir.join(format!("crash-{:016x}.txt", input.fingerprint())));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!status.success(), "the child aborted");
        assert_eq!(saved.unwrap(), input.bytes);
        assert!(note.unwrap().starts_with("crash | "));
    }

    #[test]
    fn names_are_built_as_input_names_are() {
        let spec = histopipe_frame::RawSpec { width: 12, height: 3, depth: histopipe_frame::Depth::U16 };
        let input = Input::raw(vec![1, 2, 3], spec);
        let mut name = Name { buf: [0; 1024], len: 0 };
        assert!(name.push(b"crash-") && name.push_number(input.fingerprint(), 16, 16));
        assert!(name.push(b".raw-") && name.push_number(12, 10, 1) && name.push(b"x"));
        assert!(name.push_number(3, 10, 1) && name.push(b"-16.bin"));
        assert_eq!(OsStr::from_bytes(&name.buf[..name.len]), OsStr::new(&crash_file_name(&input)));
        let mut zero = Name { buf: [0; 1024], len: 0 };
        assert!(zero.push_number(0, 10, 1));
        assert_eq!(&zero.buf[..zero.len], b"0");
    }
}
