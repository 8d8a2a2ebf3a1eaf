//! The tools' allocator: the system's, except that a block the heap refuses (a frame larger than
//! the memory left, `ulimit -v`) ends the tool as an error, not as Rust's abort: one line on
//! stderr naming the tool, the temporary files of `-o` removed, exit status 1. Callers that handle
//! a refusal themselves (the frame reader) allocate inside [`histopipe_frame::fallibly`], and get
//! it back as usual.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::atomic;

/// The allocator every histopipe tool runs on.
pub(crate) struct ToolAllocator;

#[global_allocator]
static ALLOCATOR: ToolAllocator = ToolAllocator;

/// The tool's name, for the line: set once by `main`.
static NAME: OnceLock<&'static str> = OnceLock::new();

pub(crate) fn set_tool_name(name: &'static str) {
    let _ = NAME.set(name);
}

// SAFETY: every call is handed to the system allocator as it came; only a null result is
// looked at, and it is returned as it is or the process ends.
unsafe impl GlobalAlloc for ToolAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promises for `layout` are System's.
        checked(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for alloc.
        checked(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System with `layout`, through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's promises for `ptr`, `layout` and `new_size` are System's.
        checked(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// `ptr`, unless it is null where no caller handles a refusal: then the tool ends.
fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() && !histopipe_frame::is_fallible() {
        refused(size);
    }
    ptr
}

/// Ends the process over a refused block of `size` bytes: the one line, the temporaries removed,
/// exit 1. Allocates nothing of its own (the line is made on the stack; a path's name for
/// removing a file is too, under 384 bytes); a second refusal meanwhile, on this thread or
/// another, ends the process at once.
#[cold]
fn refused(size: usize) -> ! {
    static ENDING: AtomicBool = AtomicBool::new(false);
    if !ENDING.swap(true, Ordering::SeqCst) {
        let mut line = Line { bytes: [0; 256], len: 0 };
        let name = NAME.get().copied().unwrap_or("histopipe");
        let _ = writeln!(
            line,
            "{name}: out of memory: the system refused a block of {size} bytes (--max-pixels bounds \
             a frame; fewer --threads hold fewer frames at once)"
        );
        // SAFETY: writes bytes of a live stack buffer to descriptor 2.
        unsafe { libc::write(2, line.bytes.as_ptr().cast(), line.len) };
        atomic::remove_all_now();
    }
    // SAFETY: _exit ends the process without running anything more; the output that failed is
    // not in place, and its temporary file is removed above.
    unsafe { libc::_exit(1) }
}

/// A line made on the stack, cut at 255 bytes (ending in a newline all the same).
struct Line {
    bytes: [u8; 256],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.bytes.len() - 1 - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            self.bytes[self.len] = b'\n';
            self.len += 1;
        }
        Ok(())
    }
}
