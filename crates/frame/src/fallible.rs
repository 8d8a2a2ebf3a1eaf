//! Allocations whose refusal the caller handles. The tools' allocator (`histopipe-cli`) ends the
//! process with one line when the heap refuses a block, as an error and not as Rust's abort; a
//! caller that turns a refusal into an error of its own (the reader, refusing a frame it has no
//! memory for) allocates inside [`fallibly`], where the allocator hands the refusal back.

use std::cell::Cell;

thread_local! {
    /// How many [`fallibly`] calls this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, whose allocations may be refused without ending the process.
pub fn fallibly<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}

/// Whether this thread is inside [`fallibly`]: what an allocator asks before it ends the process
/// over a refused block. Allocation-free.
pub fn is_fallible() -> bool {
    DEPTH.try_with(|d| d.get() > 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_inside_and_left_on_a_panic() {
        assert!(!is_fallible());
        assert!(fallibly(|| fallibly(is_fallible)));
        assert!(std::panic::catch_unwind(|| fallibly(|| panic!("inside"))).is_err());
        assert!(!is_fallible(), "a panic leaves the section");
    }
}
