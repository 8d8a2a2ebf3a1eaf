//! Running the reader so that a panic is caught and described instead of ending the run.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// Where a panic happened and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicNote {
    /// `file:line`, with the registry's folders cut off (`zune-jpeg-0.5.15/src/mcu.rs:100`), so
    /// that the same defect has the same place on every machine.
    pub location: String,
    pub message: String,
}

impl fmt::Display for PanicNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.message, self.location)
    }
}

thread_local! {
    /// True while this thread runs [`guarded`] code: its panics are expected and go to `LAST`.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<PanicNote>> = const { RefCell::new(None) };
}

/// Runs `f`, turning a panic into a [`PanicNote`]. Panics inside it print nothing: a fuzz run
/// catches thousands.
pub fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, PanicNote> {
    install_hook();
    let was = GUARDED.replace(true);
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.set(was);
    result.map_err(|payload| {
        LAST.take().unwrap_or_else(|| PanicNote {
            location: "unknown".into(),
            message: payload_text(payload.as_ref()).to_owned(),
        })
    })
}

/// Our hook records guarded panics and hands every other one to the hook it replaced, so a failing
/// test still reports as usual.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.get() {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", short_path(l.file()), l.line()))
                    .unwrap_or_else(|| "unknown".into());
                let message = payload_text(info.payload()).to_owned();
                LAST.set(Some(PanicNote { location, message }));
            } else {
                previous(info);
            }
        }));
    });
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "panic with a non-text payload"
    }
}

/// A source path without the machine-specific part: `.../registry/src/INDEX/CRATE-VER/src/x.rs`
/// becomes `CRATE-VER/src/x.rs`, `/rustc/HASH/library/...` becomes `library/...`.
fn short_path(file: &str) -> &str {
    if let Some(i) = file.find("/registry/src/") {
        let rest = &file[i + "/registry/src/".len()..];
        return rest.split_once('/').map_or(rest, |(_, crate_path)| crate_path);
    }
    if let Some(i) = file.find("/library/") {
        if file.starts_with("/rustc/") {
            return &file[i + 1..];
        }
    }
    file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_panic_becomes_a_note_with_its_place() {
        let v: Vec<u8> = Vec::new();
        let index = v.len() + 3;
        let note = guarded(|| v[index]).unwrap_err();
        assert!(note.message.contains("index out of bounds"), "{note}");
        assert!(note.location.starts_with("crates/fuzz/src/panics.rs:"), "{note}");
        assert_eq!(guarded(|| 5).unwrap(), 5);
    }

    #[test]
    fn registry_and_toolchain_paths_are_shortened() {
        assert_eq!(
            short_path(
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/zune-jpeg-0.5.15/src/mcu.rs"
            ),
            "zune-jpeg-0.5.15/src/mcu.rs"
        );
        assert_eq!(short_path("/rustc/59807616e/library/core/src/slice.rs"), "library/core/src/slice.rs");
        assert_eq!(short_path("crates/frame/src/read.rs"), "crates/frame/src/read.rs");
    }
}
