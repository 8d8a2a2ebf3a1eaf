//! Edge coverage from LLVM's SanitizerCoverage, on stable Rust.
//!
//! `scripts/fuzz` builds with `-C passes=sancov-module` and `inline-bool-flag`: the compiler then
//! gives every edge of every crate's code a flag byte, set to 1 by an inlined store when the edge
//! runs (no call, so the instrumented decoders run nearly at full speed), and registers each
//! module's flags with `__sanitizer_cov_bool_flag_init`, defined here only under
//! `--cfg histopipe_fuzz_coverage` (set with those flags). A plain build has no flags: nothing is
//! ever new, and the campaign falls back on outcome feedback.
//!
//! The flags are the process's, shared by the worker threads, and are never cleared: after each
//! input a worker counts them, and the input is new when the count grew since anyone last looked.
//! With several workers an edge is credited to whichever input's worker counts first, which may
//! be the other input; edges are never missed. Hit counts are not kept (they would need one
//! process per worker): outcome shapes stand in for some of what they tell.

use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(all(histopipe_fuzz_coverage, not(target_os = "linux")))]
compile_error!("coverage builds are for Linux; build with HISTOPIPE_FUZZ_COVERAGE=0");

#[cfg(histopipe_fuzz_coverage)]
mod sancov {
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    /// Modules' flag arrays, registered before `main` by the modules' constructors.
    pub struct Regions {
        starts: [AtomicPtr<u8>; 4096],
        lens: [AtomicUsize; 4096],
        count: AtomicUsize,
    }

    pub static REGIONS: Regions = Regions {
        starts: [const { AtomicPtr::new(std::ptr::null_mut()) }; 4096],
        lens: [const { AtomicUsize::new(0) }; 4096],
        count: AtomicUsize::new(0),
    };

    impl Regions {
        /// Every registered flag array.
        pub fn each(&self) -> impl Iterator<Item = (*const u8, usize)> + '_ {
            let n = self.count.load(Ordering::Acquire).min(self.starts.len());
            (0..n).map(|i| {
                (self.starts[i].load(Ordering::Relaxed).cast_const(), self.lens[i].load(Ordering::Relaxed))
            })
        }
    }

    /// Registers one module's flags; LLVM calls it from each module's constructor, before `main`.
    /// Past 4096 modules the rest go uncounted (a build has a few hundred).
    ///
    /// # Safety
    /// `start..stop` is the module's flag array, as LLVM passes it, valid for the whole run.
    #[no_mangle]
    pub unsafe extern "C" fn __sanitizer_cov_bool_flag_init(start: *mut u8, stop: *mut u8) {
        let len = (stop as usize).saturating_sub(start as usize);
        let i = REGIONS.count.load(Ordering::Relaxed);
        if len == 0 || i >= REGIONS.starts.len() {
            return;
        }
        REGIONS.starts[i].store(start, Ordering::Relaxed);
        REGIONS.lens[i].store(len, Ordering::Relaxed);
        REGIONS.count.store(i + 1, Ordering::Release);
    }

    /// How many flags are set. The flags are written by plain stores from instrumented code on
    /// any thread; they only ever go from 0 to 1, so a read that races one sees either, and the
    /// next count sees the 1.
    pub fn set_flags() -> usize {
        let mut total = 0;
        for (start, len) in REGIONS.each() {
            let mut at = 0;
            while at + 8 <= len {
                // SAFETY: inside the module's flag array (see `__sanitizer_cov_bool_flag_init`).
                let word = unsafe { std::ptr::read_volatile(start.add(at).cast::<[u8; 8]>()) };
                // Each byte is 0 or 1: the multiply sums the eight into the top byte.
                total += (u64::from_ne_bytes(word).wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
                at += 8;
            }
            while at < len {
                // SAFETY: as above.
                total += (unsafe { std::ptr::read_volatile(start.add(at)) } != 0) as usize;
                at += 1;
            }
        }
        total
    }
}

/// Whether this build records coverage (`scripts/fuzz` builds do; plain builds and tests do not).
pub const ENABLED: bool = cfg!(histopipe_fuzz_coverage);

/// The number of edges this build has flags for (0 without coverage).
pub fn edges() -> usize {
    #[cfg(histopipe_fuzz_coverage)]
    {
        sancov::REGIONS.each().map(|(_, len)| len).sum()
    }
    #[cfg(not(histopipe_fuzz_coverage))]
    {
        0
    }
}

/// The number of edges run so far, by any thread (0 without coverage).
pub fn covered() -> usize {
    #[cfg(histopipe_fuzz_coverage)]
    {
        sancov::set_flags()
    }
    #[cfg(not(histopipe_fuzz_coverage))]
    {
        0
    }
}

/// The campaign's view of coverage: how many edges it had seen at the last look.
#[derive(Default)]
pub struct Seen {
    covered: AtomicUsize,
}

impl Seen {
    pub fn new() -> Seen {
        Seen::default()
    }

    /// Whether edges were run since the last call (by anyone): the input just read is then new.
    pub fn grew(&self) -> bool {
        let now = covered();
        self.covered.fetch_max(now, Ordering::Relaxed) < now
    }

    pub fn covered(&self) -> usize {
        self.covered.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_coverage_nothing_is_ever_new() {
        let seen = Seen::new();
        assert_eq!(ENABLED, edges() > 0);
        if !ENABLED {
            assert!(!seen.grew());
            assert_eq!(seen.covered(), 0);
        }
    }
}
