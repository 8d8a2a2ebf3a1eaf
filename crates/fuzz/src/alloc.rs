//! The global allocator of every program that links this crate: the system allocator, counting
//! the bytes each thread holds and the most it held, so a check can bound what one read allocated.
//!
//! Counts are per thread because each worker reads its own input and the readers never hand memory
//! to another thread; a block freed by another thread than the one that made it only skews both
//! threads' counts, never a bound's verdict on a reader.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator.
pub struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (negative after freeing others' blocks).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The largest `LIVE` since the last [`HeapMeter::restart_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

// `try_with` and not `with`: an allocator must never panic, and these keys have no destructor, so
// the access cannot fail in practice; a failed one only loses a count.
fn add(bytes: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_add(bytes);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn live() -> isize {
    LIVE.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every call goes to `System` unchanged; the counting touches only thread-locals that
// never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Measures this thread's heap above the level it had when the meter started.
pub struct HeapMeter {
    base: isize,
}

impl HeapMeter {
    pub fn start() -> HeapMeter {
        let meter = HeapMeter { base: live() };
        meter.restart_peak();
        meter
    }

    /// Forgets the peak so far: the next [`HeapMeter::peak`] covers only what comes after.
    pub fn restart_peak(&self) {
        let _ = PEAK.try_with(|peak| peak.set(live()));
    }

    /// The most this thread held above the start level since the last restart, in bytes.
    pub fn peak(&self) -> u64 {
        let peak = PEAK.try_with(Cell::get).unwrap_or(0);
        peak.saturating_sub(self.base).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_counts_while_it_lives() {
        let meter = HeapMeter::start();
        let block = vec![1u8; 100_000];
        assert!(meter.peak() >= 100_000, "peak {}", meter.peak());
        drop(block);
        meter.restart_peak();
        let small = vec![0u64; 10];
        assert!(meter.peak() < 100_000, "the restarted peak forgot the freed block: {}", meter.peak());
        drop(small);
    }

    #[test]
    fn growth_by_realloc_counts_its_new_size() {
        let meter = HeapMeter::start();
        let mut v: Vec<u8> = Vec::with_capacity(16);
        v.resize(300_000, 7);
        assert!(meter.peak() >= 300_000);
        assert!(meter.peak() < 1_000_000);
    }
}
