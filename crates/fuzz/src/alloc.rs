//! Counting every heap block a thread holds, Rust's and C's alike, and the most it held, so a
//! check can bound what one read allocated.
//!
//! The count is taken in the C allocator itself: [`count_heap!`](crate::count_heap) defines
//! `malloc`, `calloc`, `realloc`, `free` and the aligned allocators in the program that invokes
//! it, each handing the call to glibc's own (`__libc_malloc`, ...) and adding the block's usable
//! size (`malloc_usable_size`) to this thread's count. Rust's system allocator calls these, and so
//! does libjpeg-turbo's C (mozjpeg-sys, linked statically), whose blocks a Rust global allocator
//! never sees; the tools' own global allocator (`histopipe-cli`) sits on them too, so the harness
//! may link it.
//!
//! Counts are per thread because each worker reads its own input and the readers never hand memory
//! to another thread; a block freed by another thread than the one that made it only skews both
//! threads' counts, never a bound's verdict on a reader. Usable sizes are what the allocator gave,
//! a few bytes over each request (a page over a mapped block's): what the process really held.
//! Under AddressSanitizer (`scripts/fuzz --asan`, the `asan` feature) the program does not invoke
//! the macro, ASan's allocator is the C allocator, and nothing is counted ([`counting`] says so).

use std::cell::Cell;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (negative after freeing others' blocks).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The largest `LIVE` since the last [`HeapMeter::restart_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

// `try_with` and not `with`: an allocator must never panic, and these keys have no destructor, so
// the access cannot fail in practice (nor allocate: they are native thread-locals); a failed one
// only loses a count.
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

/// The counting allocator's functions, which [`count_heap!`](crate::count_heap) exports under the
/// C names. Each has its C namesake's contract.
#[doc(hidden)]
pub mod interpose {
    use libc::{c_int, c_void, size_t};

    extern "C" {
        fn __libc_malloc(size: size_t) -> *mut c_void;
        fn __libc_calloc(count: size_t, size: size_t) -> *mut c_void;
        fn __libc_realloc(ptr: *mut c_void, size: size_t) -> *mut c_void;
        fn __libc_free(ptr: *mut c_void);
        fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
        fn __libc_valloc(size: size_t) -> *mut c_void;
        fn __libc_pvalloc(size: size_t) -> *mut c_void;
        fn malloc_usable_size(ptr: *mut c_void) -> size_t;
    }

    /// The usable size of a live block (0 for null).
    ///
    /// # Safety
    /// `p` is null or a live block of glibc's allocator.
    unsafe fn usable(p: *mut c_void) -> isize {
        if p.is_null() {
            0
        } else {
            // SAFETY: the caller's contract.
            unsafe { malloc_usable_size(p) as isize }
        }
    }

    /// Counts a block just made (null: none).
    ///
    /// # Safety
    /// As [`usable`].
    unsafe fn made(p: *mut c_void) -> *mut c_void {
        // SAFETY: the caller's contract.
        super::add(unsafe { usable(p) });
        p
    }

    /// # Safety
    /// C's `malloc`.
    pub unsafe fn malloc(size: size_t) -> *mut c_void {
        // SAFETY: glibc's malloc, as asked; its result is null or a live block.
        unsafe { made(__libc_malloc(size)) }
    }

    /// # Safety
    /// C's `calloc`.
    pub unsafe fn calloc(count: size_t, size: size_t) -> *mut c_void {
        // SAFETY: as for malloc.
        unsafe { made(__libc_calloc(count, size)) }
    }

    /// # Safety
    /// C's `realloc`.
    pub unsafe fn realloc(ptr: *mut c_void, size: size_t) -> *mut c_void {
        // SAFETY: `ptr` is null or live (the caller's contract); glibc's realloc as asked.
        unsafe {
            let old = usable(ptr);
            let p = __libc_realloc(ptr, size);
            // A null result keeps the old block, except that a size of 0 freed it.
            if !p.is_null() || (size == 0 && !ptr.is_null()) {
                super::add(usable(p) - old);
            }
            p
        }
    }

    /// # Safety
    /// C's `reallocarray`.
    pub unsafe fn reallocarray(ptr: *mut c_void, count: size_t, size: size_t) -> *mut c_void {
        match count.checked_mul(size) {
            // SAFETY: the caller's contract.
            Some(total) => unsafe { realloc(ptr, total) },
            None => {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ENOMEM };
                std::ptr::null_mut()
            }
        }
    }

    /// # Safety
    /// C's `free`.
    pub unsafe fn free(ptr: *mut c_void) {
        // SAFETY: `ptr` is null or live (the caller's contract), measured before it goes.
        unsafe {
            let size = usable(ptr);
            __libc_free(ptr);
            super::add(-size);
        }
    }

    /// # Safety
    /// C's `memalign` (and `aligned_alloc`).
    pub unsafe fn memalign(align: size_t, size: size_t) -> *mut c_void {
        // SAFETY: as for malloc.
        unsafe { made(__libc_memalign(align, size)) }
    }

    /// # Safety
    /// C's `posix_memalign`.
    pub unsafe fn posix_memalign(out: *mut *mut c_void, align: size_t, size: size_t) -> c_int {
        if !align.is_power_of_two() || align % size_of::<*mut c_void>() != 0 {
            return libc::EINVAL;
        }
        // SAFETY: as for malloc; `out` is writable (the caller's contract).
        unsafe {
            let p = made(__libc_memalign(align, size));
            if p.is_null() {
                return libc::ENOMEM;
            }
            *out = p;
        }
        0
    }

    /// # Safety
    /// C's `valloc`.
    pub unsafe fn valloc(size: size_t) -> *mut c_void {
        // SAFETY: as for malloc.
        unsafe { made(__libc_valloc(size)) }
    }

    /// # Safety
    /// C's `pvalloc`.
    pub unsafe fn pvalloc(size: size_t) -> *mut c_void {
        // SAFETY: as for malloc.
        unsafe { made(__libc_pvalloc(size)) }
    }
}

/// Makes the program that invokes it (once, at the top level of its binary or test crate) count
/// its heap: defines the C allocator's entry points over [`interpose`]. Invoke it in every binary
/// whose checks bound memory; [`counting`] tells whether it was. Not under AddressSanitizer, whose
/// runtime defines them itself.
#[macro_export]
macro_rules! count_heap {
    () => {
        const _: () = {
            use ::libc::{c_int, c_void, size_t};
            use $crate::alloc::interpose as heap;
            #[no_mangle]
            unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::malloc(size) }
            }
            #[no_mangle]
            unsafe extern "C" fn calloc(count: size_t, size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::calloc(count, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn realloc(ptr: *mut c_void, size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::realloc(ptr, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn reallocarray(ptr: *mut c_void, count: size_t, size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::reallocarray(ptr, count, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn free(ptr: *mut c_void) {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::free(ptr) }
            }
            #[no_mangle]
            unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::memalign(align, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::memalign(align, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: size_t, size: size_t) -> c_int {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::posix_memalign(out, align, size) }
            }
            #[no_mangle]
            unsafe extern "C" fn valloc(size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::valloc(size) }
            }
            #[no_mangle]
            unsafe extern "C" fn pvalloc(size: size_t) -> *mut c_void {
                // SAFETY: the C namesake's contract, passed on.
                unsafe { heap::pvalloc(size) }
            }
        };
    };
}

/// Whether this program counts its heap ([`count_heap!`] invoked, no sanitizer's allocator): a
/// block made through C's `malloc`, as libjpeg-turbo makes them, shows in a meter.
pub fn counting() -> bool {
    let meter = HeapMeter::start();
    // SAFETY: a block of C's malloc, freed at once; `black_box`, or the optimiser drops the pair.
    unsafe { libc::free(std::hint::black_box(libc::malloc(1 << 16))) };
    meter.peak() >= 1 << 16
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
        // black_box: an optimized build would otherwise drop a block nothing reads.
        let block = std::hint::black_box(vec![1u8; 100_000]);
        assert!(meter.peak() >= 100_000, "peak {}", meter.peak());
        drop(block);
        meter.restart_peak();
        let small = std::hint::black_box(vec![0u64; 10]);
        assert!(meter.peak() < 100_000, "the restarted peak forgot the freed block: {}", meter.peak());
        drop(small);
    }

    #[test]
    fn growth_by_realloc_counts_its_new_size() {
        let meter = HeapMeter::start();
        let mut v: Vec<u8> = Vec::with_capacity(16);
        v.resize(300_000, 7);
        let v = std::hint::black_box(v);
        assert!(meter.peak() >= 300_000);
        assert!(meter.peak() < 1_000_000);
        drop(v);
    }

    /// What C code allocates counts as Rust's does: the check sees libjpeg-turbo's blocks.
    #[test]
    fn blocks_of_c_malloc_and_aligned_ones_count() {
        assert!(counting());
        let meter = HeapMeter::start();
        // SAFETY: blocks of the C allocator, freed below.
        unsafe {
            // black_box: an optimized build would otherwise drop blocks nothing reads.
            let a = std::hint::black_box(libc::calloc(1000, 1000));
            let mut b = std::ptr::null_mut();
            assert_eq!(libc::posix_memalign(&mut b, 4096, 500_000), 0);
            let b = std::hint::black_box(b);
            assert!(meter.peak() >= 1_500_000, "peak {}", meter.peak());
            let a = std::hint::black_box(libc::realloc(a, 10));
            libc::free(b);
            meter.restart_peak();
            assert!(meter.peak() < 8192, "freed and shrunk blocks no longer count: {}", meter.peak());
            libc::free(a);
        }
        let aligned = std::alloc::Layout::from_size_align(200_000, 4096).unwrap();
        // SAFETY: a non-zero layout, freed with the same layout.
        unsafe {
            let p = std::hint::black_box(std::alloc::alloc(aligned));
            assert!(meter.peak() >= 200_000);
            std::alloc::dealloc(p, aligned);
        }
    }
}
