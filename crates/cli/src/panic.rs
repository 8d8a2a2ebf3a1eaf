//! Panics as errors. A panic anywhere in a tool (our code, or a decoder of a dependency) must end
//! the tool with a non-zero status and one line that names the tool and the frame, never with
//! exit 0 and a lost frame. [`catch`] turns a panic inside a closure into its message; every
//! thread of the frame loop runs its work inside one. The hook installed by [`install_hook`]
//! replaces the default report (several lines on stderr, printed before anyone could catch it):
//! it only records the message, for the [`catch`] on the panicking thread, or, on a thread with
//! none (a library's own thread), for [`uncaught`], which the tool's `main` checks before it
//! exits.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::{Mutex, Once};

thread_local! {
    /// Whether a [`catch`] on this thread will report the panic.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// The message and place of this thread's last caught panic.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The first panic that no [`catch`] was waiting for.
static UNCAUGHT: Mutex<Option<String>> = Mutex::new(None);

/// Installs the hook, once per process.
pub(crate) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(test)]
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let text = describe(info);
            if CATCHING.with(Cell::get) {
                LAST.with(|l| *l.borrow_mut() = Some(text));
            } else {
                UNCAUGHT.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(text);
                // The test harness shows a failed assertion through the default report.
                #[cfg(test)]
                default(info);
            }
        }));
    });
}

/// The first panic so far that happened outside every [`catch`].
pub(crate) fn uncaught() -> Option<String> {
    UNCAUGHT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn describe(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into());
    match info.location() {
        Some(l) => format!("{message} (at {}:{})", l.file(), l.line()),
        None => message,
    }
}

/// Runs `f`; a panic inside it becomes `Err` with its message and place.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let outer = CATCHING.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(outer));
    result.map_err(|payload| {
        LAST.with(|l| l.borrow_mut().take()).unwrap_or_else(|| {
            // No hook ran (another hook was installed): the payload is all there is.
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_is_its_message_and_place() {
        install_hook();
        assert_eq!(catch(|| 7), Ok(7));
        let e = catch(|| -> u8 { panic!("bad {}", 42) }).unwrap_err();
        assert!(e.starts_with("bad 42 (at ") && e.contains("panic.rs:"), "{e}");
        let nested = catch(|| catch(|| -> u8 { panic!("inner") }).unwrap_err());
        assert!(nested.unwrap().starts_with("inner"));
        assert!(!CATCHING.with(Cell::get), "the flag is restored");
        let thread = std::thread::spawn(|| -> u8 { panic!("on its own thread") });
        assert!(thread.join().is_err());
        // The first uncaught panic of this test binary is kept: another test's failure may be it.
        assert!(uncaught().is_some(), "a panic outside every catch is recorded for main");
    }
}
