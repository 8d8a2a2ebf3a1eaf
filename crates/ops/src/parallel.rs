//! The CPU backend's threads: one pool for the process, and how an operation decides whether a
//! frame is worth splitting.
//!
//! The pool is rayon's global one, with the count given to [`set_threads`] (`--threads`,
//! `HISTOPIPE_THREADS`), else [`available_threads`]: every core the process may run on. It is
//! built when the first frame large enough to be worth starting it arrives ([`split_from`]), so a
//! tool that never splits (small frames, one thread, the GPU) starts no thread for it. Work below
//! an operation's threshold, and all work with one thread, runs on the calling thread exactly as
//! it did before the pool existed.
//!
//! Inside a pool's `install` (the tests build local pools of 1, 2, 3 and 7 threads) an operation
//! splits for that pool's threads instead: the count is always rayon's view of the current pool.
//!
//! Every split is exact: an output element is computed by one thread with the same arithmetic as
//! on one thread, and partial counts are merged by integer addition; each operation's tests
//! compare the split output with the unsplit one.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The count asked for with [`set_threads`]; 0 for the default.
static REQUESTED: AtomicUsize = AtomicUsize::new(0);
/// The global pool's threads, once [`threads`] has built it (1: no pool, run on the caller).
static GLOBAL: OnceLock<usize> = OnceLock::new();

/// Parts per thread when a frame is split: more parts than threads let the pool balance parts of
/// unequal cost (a turned frame's fill against its interior) and cores slowed by other work.
pub(crate) const PARTS_PER_THREAD: usize = 4;

/// Every core this process may run on: the CPUs of its affinity mask (`sched_getaffinity`, so
/// `taskset` counts), at most its cgroup's CPU quota rounded down (`cpu.max` in cgroup v2,
/// `cpu.cfs_quota_us / cpu.cfs_period_us` in v1; at least 1), which is what
/// [`std::thread::available_parallelism`] computes on Linux. 1 if it cannot be known.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Sets the CPU backend's thread count (`None`: [`available_threads`]). Takes effect if called
/// before the first frame is split; later calls change nothing. A count given is the global
/// pool's at once: an operation that runs a parallel iterator of rayon's before anything asked
/// for [`threads`] would have had rayon build its own global pool, of every core.
pub fn set_threads(threads: Option<usize>) {
    REQUESTED.store(threads.unwrap_or(0), Ordering::Relaxed);
    if threads.is_some() {
        self::threads();
    }
}

/// The threads work is split over now: the current pool's inside one, else the global pool's,
/// which this builds on first use.
pub fn threads() -> usize {
    if rayon::current_thread_index().is_some() {
        return rayon::current_num_threads();
    }
    *GLOBAL.get_or_init(|| {
        let n = match REQUESTED.load(Ordering::Relaxed) {
            0 => available_threads(),
            n => n,
        };
        // One thread is a pool of one too: an operation that calls rayon itself (a parallel
        // iterator) would otherwise build rayon's own global pool, of every core, under
        // `--threads 1`.
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("histopipe-cpu-{i}"))
            .build_global();
        match built {
            Ok(()) => n,
            // Built before (by a program linking this crate): use it as it is.
            Err(e) if std::error::Error::source(&e).is_none() => rayon::current_num_threads(),
            // No thread could be started (a limit on processes, say): work on the caller's.
            Err(_) => 1,
        }
    })
}

/// Frames whose CPU work is under way now, each on a thread of its own outside the pool (a
/// tool's workers: [`FrameWork`]).
static FRAMES: AtomicUsize = AtomicUsize::new(0);

/// A frame's CPU work under way on the calling thread, until dropped. While several frames' are,
/// each splits its work for its share of the pool's threads ([`share`]), and once there are as
/// many frames as threads, not at all: the frames are the parts. Splitting then only costs: every
/// split wakes pool threads that have nothing else to do, and its caller sleeps until they are
/// done. (60 frames of 3840x2160 edge maps through `hough-segments --backend cpu`, 16 workers
/// and 16 pool threads on the H200 machine: 10.0 to 10.1 s before, 8.0 to 9.2 s after.)
///
/// A thread has one frame at a time: a `FrameWork` begun on a thread that has one under way
/// already counts nothing (the GPU service counts a session's frame whole, and the host part of
/// an operation on it again); it ends on the thread it began on (hence not `Send`).
pub struct FrameWork {
    counted: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

thread_local! {
    /// Whether this thread's frame is counted in [`FRAMES`].
    static COUNTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl FrameWork {
    pub fn begin() -> FrameWork {
        let counted = !COUNTED.replace(true);
        if counted {
            FRAMES.fetch_add(1, Ordering::AcqRel);
        }
        FrameWork { counted, _thread: std::marker::PhantomData }
    }
}

impl Drop for FrameWork {
    fn drop(&mut self) {
        if self.counted {
            FRAMES.fetch_sub(1, Ordering::AcqRel);
            COUNTED.set(false);
        }
    }
}

/// The threads a split made now may count on: inside a pool, its threads; else the global pool's
/// threads shared among the frames under way ([`FrameWork`]), at least 1.
fn share() -> usize {
    let n = threads();
    if rayon::current_thread_index().is_some() {
        return n;
    }
    (n / FRAMES.load(Ordering::Acquire).max(1)).max(1)
}

/// How much larger than an operation's threshold on a running pool ([`split_from`]) the work must
/// be to start the pool: a process's first split builds it, and starting 16 threads took about 1
/// ms on the GPU machine, more than a small frame's split saves. One frame through `threshold`,
/// `equalize`, `cdf` or `rotate` (a process each, 40 runs of each binary alternating) took 0.8 to
/// 1.0 ms longer at 640x480 and 640x651 with thresholds an eighth of what they had been and no
/// such factor (4.3 to 4.8 ms against 3.3 to 4.1), the pool started for that frame. With it, a
/// process starts the pool for about the frames it did before those thresholds were lowered (by 4
/// to 16 times); once the pool runs (a larger frame, a batch, a stream), the small frames split
/// too.
pub(crate) const START_FACTOR: usize = 8;

/// Whether the pool the work would be split on is running: a local one (the caller is in it) or
/// the global one, built ([`threads`]) with more than one thread.
fn pool_running() -> bool {
    rayon::current_thread_index().is_some() || GLOBAL.get().is_some_and(|&n| n > 1)
}

/// The `min_split` of [`parts_split_from`] for an operation whose threshold `min_split` was
/// measured on a running pool: itself while the pool runs, [`START_FACTOR`] times it before.
pub(crate) fn split_from(min_split: usize) -> usize {
    split_from_when(min_split, pool_running())
}

/// [`parts`] for an operation whose `min_part` was measured on a running pool: until the pool runs,
/// only work of [`START_FACTOR`] times the threshold is split ([`split_from`]).
pub(crate) fn parts_warm(units: usize, min_part: usize) -> usize {
    parts_split_from(units, split_from(min_part), min_part)
}

fn split_from_when(min_split: usize, running: bool) -> usize {
    if running {
        min_split
    } else {
        min_split.saturating_mul(START_FACTOR)
    }
}

/// How many parts to split `units` units of work into so that each has at least `min_part`
/// (an operation's measured threshold): 1, on the calling thread, when the work is too small or
/// there is one thread (or one thread's [`share`] of the pool); else at most [`PARTS_PER_THREAD`]
/// per thread of the share.
///
/// The operations' thresholds are where splitting was measured to pay (`histopipe-bench cpu`, each
/// threshold divided by 1 to 16 in turn, frames from 320x240 to 2560x1707): on the GPU machine's
/// 16 threads and on 4 of them, and on the 2-core build machine. Waking the pool's sleeping
/// threads takes tens of microseconds, so work is split from a few tens of microseconds of one
/// thread's: 640x651 turned 30 degrees (bilinear) took 1.0 to 1.3 ms on 16 threads with its old
/// thresholds, one thread's time (its cores do a pixel in twice the time the build machine's do,
/// and thresholds set there as 0.2 ms of work left frames of 1 ms unsplit), and 0.09 to 0.12 ms
/// with a threshold an eighth as large (OpenCV on 16 threads: 0.07 to 0.11). On 2 threads of the
/// build machine the smaller thresholds measured as fast or faster, from 320x240 up. Those times
/// are of a running pool: the operations that split such small work pass their threshold through
/// [`split_from`], so that it does not start the pool.
pub(crate) fn parts(units: usize, min_part: usize) -> usize {
    // This crate's tests split whatever the size, so that their small frames take the split paths.
    let min_part = if cfg!(test) { 1 } else { min_part.max(1) };
    let most = units / min_part;
    if most < 2 {
        return 1;
    }
    match share() {
        1 => 1,
        n => most.min(n * PARTS_PER_THREAD),
    }
}

/// [`parts_split_from`] with up to `per_thread` parts per thread instead of [`PARTS_PER_THREAD`],
/// for work whose parts cost unequal amounts that the pool can only balance in small pieces.
pub(crate) fn parts_split_finely(
    units: usize,
    min_split: usize,
    min_part: usize,
    per_thread: usize,
) -> usize {
    match parts_split_from(units, min_split, min_part) {
        1 => 1,
        // Split at all: parts of at least min_part, at most per_thread for each thread.
        _ => (units / min_part.max(1)).clamp(2, share() * per_thread.max(1)),
    }
}

/// [`parts`] for an operation with two thresholds: 1 unless `units` reach `min_split`, the work
/// worth waking the pool for at all; else parts of at least `min_part`, smaller, so that once the
/// pool is woken its threads get several parts each to balance.
pub(crate) fn parts_split_from(units: usize, min_split: usize, min_part: usize) -> usize {
    match parts(units, min_split) {
        1 => 1,
        _ => parts(units, min_part),
    }
}

/// Calls `f(first, part)` for consecutive parts of `data`, `len` elements each (the last may be
/// shorter), `first` being the index of the part's first element: on the pool's threads when
/// there are several parts, else on the calling thread.
pub fn for_each_part<T: Send>(data: &mut [T], len: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    use rayon::prelude::*;
    let len = len.max(1);
    if data.len() <= len {
        f(0, data);
        return;
    }
    data.par_chunks_mut(len).enumerate().for_each(|(k, part)| f(k * len, part));
}

/// The part length at which [`copy`] splits a copy of `len` bytes over the pool: about one part a
/// thread, none under 1 MiB (a thread copies that in about 0.1 ms; waking one costs about as much),
/// and none at all while other frames are under way ([`FrameWork`]). A frame alone (one 4K frame
/// into the GPU service, a cube of counts out of it) is copied at the memory's speed, not one
/// core's; a batch's frames share the memory's speed already, and split, the copies into and out
/// of the service's shared memory (the tool's workers' and the service's sessions') waited on each
/// other's parts. 100 4K files on the H200 host, `--backend gpu`, side by side (medians of 11 for
/// `threshold`, 5 for the others): split regardless, `threshold` took 194.1 ms, not split 160.6
/// (`cpu` 173.6); `equalize` to JPEG 1058.1 against 953.3; `edges | hough-segments` 819.6
/// against 786.3. Split for the frame's [`share`] of the pool (two parts a copy while eight
/// sessions' frames are on the service), in another call: 158.9 ms against 148.6 for a frame
/// alone only (`cpu` 147.7); 773.7 against 735.1; 676.9 against 658.7.
pub fn copy_part(len: usize) -> usize {
    let n = threads();
    if share() < n {
        return len.max(1);
    }
    len.div_ceil(n).max(1 << 20)
}

/// `dst` := `src` (of one length), in parts on the pool's threads: a frame of tens of megabytes
/// into or out of shared memory is copied at the memory's speed, not one core's.
pub fn copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "a copy between slices of one length");
    let part = copy_part(std::mem::size_of_val(src)) / std::mem::size_of::<T>().max(1);
    for_each_part(dst, part, |first, out| out.copy_from_slice(&src[first..first + out.len()]));
}

/// `f(first, part)` for consecutive parts of `items`, `len` elements each (the last may be
/// shorter), `first` being the index of the part's first element, in the parts' order: on the
/// pool's threads when there are several parts, else on the calling thread. For the tools' own
/// work (`colhist`'s tables), so that it runs on the one pool that `--threads` sizes.
pub fn map_parts<T: Sync, R: Send>(items: &[T], len: usize, f: impl Fn(usize, &[T]) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    let len = len.max(1);
    if items.len() <= len {
        return vec![f(0, items)];
    }
    items.par_chunks(len).enumerate().map(|(k, part)| f(k * len, part)).collect()
}

/// `take(i, make(i))` for `i` in `0..n`, in that order on the calling thread, each `make(i)` run
/// on the pool's threads as soon as fewer than `ahead` of those before it are still to be taken:
/// a few items made at once, so that while one item's last parts are made the threads idle in
/// none of its own joins but work on the next items (a loop over items each split over the pool
/// waits for every item's slowest part). `make` may split its work over the pool itself. On one
/// thread, or on one of the pool's (which must not wait on the pool's own work), each item is
/// made and taken in turn on the calling thread. A panic in `make` is the caller's, once the
/// items under way are done.
pub fn in_order<T: Send>(
    n: usize,
    ahead: usize,
    make: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(usize, T),
) {
    use std::collections::BTreeMap;
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
    if n <= 1 || threads() <= 1 || rayon::current_thread_index().is_some() {
        for i in 0..n {
            take(i, make(i));
        }
        return;
    }
    let make = &make;
    let (made, arrive) = std::sync::mpsc::channel();
    let mut lost = None;
    rayon::in_place_scope_fifo(|scope| {
        let mut ready = BTreeMap::new();
        let (mut started, mut next) = (0, 0);
        while next < n {
            while started < n && started < next + ahead.max(1) {
                let (made, i) = (made.clone(), started);
                scope.spawn_fifo(move |_| {
                    // Sent, panic or not: the loop below waits for every item it started.
                    let _ = made.send((i, catch_unwind(AssertUnwindSafe(|| make(i)))));
                });
                started += 1;
            }
            // A sender is held here: the loop ends by its own condition or a lost item.
            let Ok((i, item)) = arrive.recv() else { break };
            match item {
                Ok(item) => {
                    ready.insert(i, item);
                }
                Err(panic) => {
                    lost = Some(panic);
                    break;
                }
            }
            while let Some(item) = ready.remove(&next) {
                take(next, item);
                next += 1;
            }
        }
    });
    if let Some(panic) = lost {
        resume_unwind(panic);
    }
}

/// An empty vector with room for `n` elements: the output an operation writes in parts on the
/// pool's threads (see [`for_each_part`]). A large one is asked to be backed by huge pages
/// ([`advise_huge_pages`]).
pub(crate) fn output<T>(n: usize) -> Vec<T> {
    let out = Vec::with_capacity(n);
    advise_huge_pages(out.as_ptr(), n.saturating_mul(std::mem::size_of::<T>()));
    out
}

/// An [`output`] of `n` elements written by `write(first, part)` for consecutive parts of
/// `part_len` elements (the last may be shorter), `first` being the index of the part's first
/// element, as [`for_each_part`] calls it; nothing is called when `n` is 0.
///
/// # Safety
///
/// `write` must initialise every element of each part it is given. (The parts cover the `n`
/// elements whatever `part_len` is: that, [`for_each_part`] ensures.) Not checked: this is the
/// writing of the CPU backend's outputs, whose hot loops write each element once through
/// [`MaybeUninit::write`] or raw stores, and a check (or zeroing the output first, which the
/// kernel does not do for a heap block reused from the last frame) would cost what the loops
/// spared.
pub(crate) unsafe fn output_in_parts<T: Send>(
    n: usize,
    part_len: usize,
    write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) -> Vec<T> {
    let mut out = output(n);
    if n == 0 {
        return out;
    }
    for_each_part(&mut out.spare_capacity_mut()[..n], part_len, write);
    // SAFETY: `for_each_part` gave `write` parts that cover the n slots, and `write` initialised
    // every element of each (this function's contract).
    unsafe { out.set_len(n) };
    out
}

/// [`output`] of `n` zeros, which a fresh allocation gets from the kernel without writing them.
pub(crate) fn zeroed<T: Clone + Default>(n: usize) -> Vec<T> {
    let out = vec![T::default(); n];
    advise_huge_pages(out.as_ptr(), n.saturating_mul(std::mem::size_of::<T>()));
    out
}

/// Buffers of words given back by whoever was done with them ([`give_back_words`]): a sweep's
/// counts, one buffer a turn or a group of turns, written out by the tool's writer and taken
/// again by the next turn. Not cleared: whoever takes one overwrites every word ([`words`]).
/// Cleared on the writer's thread, as they were, they took a fifth of its time writing a cube
/// on the 16-core GPU host, where the writer is what the cube waits for last.
static SPARE_WORDS: std::sync::Mutex<Vec<Vec<u32>>> = std::sync::Mutex::new(Vec::new());

/// At most this many spare buffers are kept, of at most [`SPARE_WORDS_MOST`] words in all.
const SPARE_BUFFERS: usize = 4;
const SPARE_WORDS_MOST: usize = 1 << 26;

/// `n` words for the caller to overwrite, every one: a buffer given back if one of `n` to `2n`
/// words is kept (holding whatever it held), else fresh zeroed memory ([`zeroed`]).
pub fn words(n: usize) -> Vec<u32> {
    let kept = {
        let mut spare = SPARE_WORDS.lock().unwrap_or_else(|e| e.into_inner());
        let fits = spare.iter().position(|b| b.len() >= n && b.len() / 2 <= n);
        fits.map(|i| spare.swap_remove(i))
    };
    match kept {
        Some(mut words) => {
            words.truncate(n);
            words
        }
        None => zeroed(n),
    }
}

/// Takes back `words` that [`words`] gave (or any buffer of words) for a later one; the oldest
/// kept make way for it.
pub fn give_back_words(words: Vec<u32>) {
    if words.len() < (1 << 16) {
        return;
    }
    let mut spare = SPARE_WORDS.lock().unwrap_or_else(|e| e.into_inner());
    spare.push(words);
    while spare.len() > SPARE_BUFFERS || spare.iter().map(Vec::len).sum::<usize>() > SPARE_WORDS_MOST {
        spare.remove(0);
    }
}

/// `n` copies of `value`, every page of them written now: for memory that is read where it was
/// never written (an accumulator's cells that no vote reaches, scanned for peaks; flags mostly
/// left false). Fresh zeroed memory (`vec![0; n]`, calloc) is mapped to the kernel's shared zero
/// page where it is first read, and when the heap hands those bytes out again and they are
/// cleared, each such page is copied on write, every copy a TLB shootdown on every core the
/// process runs on: 5% of hough-segments' time on 2 threads of the build machine, more on the
/// 16-core GPU host's.
pub(crate) fn written<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    out.resize(n, value);
    out
}

/// `part` of an [`output`] with every element set to `value`, as initialised elements.
pub(crate) fn filled<T: Copy>(part: &mut [MaybeUninit<T>], value: T) -> &mut [T] {
    part.fill(MaybeUninit::new(value));
    // SAFETY: every element was just written, and MaybeUninit<T> has T's layout.
    unsafe { &mut *(part as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// Bytes from which an output is worth huge pages: several of them, so that rounding to 2 MiB
/// wastes little.
const HUGE_FROM: usize = 8 << 20;

/// Asks for huge pages behind a large output (the frame crate's
/// [`histopipe_frame::advise_huge_pages`]): a fresh output is otherwise faulted in 4 KiB at a time
/// on first write, and the kernel's faulting and zeroing took as long as the work: pad to the
/// diagonal of 7680x4320, a 78 MB output, took 12 to 14 ms on 2 cores with 4 KiB pages and 7 to 8
/// ms with huge pages (`histopipe-bench cpu`, alternating runs); rotate and equalize, whose work
/// per byte is larger, did not change beyond the noise. NumPy asks the same for its large arrays,
/// so OpenCV's outputs in the benchmark already had them.
fn advise_huge_pages<T>(at: *const T, bytes: usize) {
    if bytes >= HUGE_FROM {
        histopipe_frame::advise_huge_pages(at, bytes);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! What every operation's thread tests share.

    use histopipe_frame::{Frame, Pixels};

    /// The thread counts every split is checked with: one, even, odd, and more than most
    /// machines' cores for these frames.
    pub const THREADS: [usize; 4] = [1, 2, 3, 7];

    /// Frame sizes for the thread tests: single rows and columns, sizes that divide into no
    /// number of parts evenly, and random ones.
    pub fn sizes(rng: &mut fastrand::Rng) -> Vec<(usize, usize)> {
        let mut sizes =
            vec![(1, 1), (1, 97), (97, 1), (2, 3), (7, 5), (64, 64), (129, 65), (300, 11), (11, 300)];
        sizes.extend((0..6).map(|_| (rng.usize(1..400), rng.usize(1..400))));
        sizes
    }

    /// A `w x h` frame of random samples up to `maxval` (8-bit up to 255, else 16-bit).
    pub fn frame(rng: &mut fastrand::Rng, w: usize, h: usize, maxval: u16) -> Frame {
        let pixels = if maxval <= 255 {
            Pixels::U8((0..w * h).map(|_| rng.u8(..=maxval as u8)).collect())
        } else {
            Pixels::U16((0..w * h).map(|_| rng.u16(..=maxval)).collect())
        };
        Frame::new(w, h, maxval, pixels)
    }

    /// Asserts that `run` gives the same on a local pool of each of [`THREADS`] threads as on
    /// one (in tests, [`super::parts`] splits work of any size, so small frames split too).
    pub fn same_on_each_pool<R: PartialEq + Send>(what: &str, run: impl Fn() -> R + Send + Sync) {
        let on = |n: usize| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap().install(&run);
        let one = on(1);
        for n in &THREADS[1..] {
            assert!(on(*n) == one, "{what}: {n} threads differ from one");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_stays_on_the_caller_and_parts_are_bounded() {
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        one.install(|| assert_eq!(parts(1 << 30, 1), 1));
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        three.install(|| {
            assert_eq!(threads(), 3);
            assert_eq!(parts(5, 1000), 5, "tests split whatever the size");
            assert_eq!(parts(1, 1000), 1);
            assert_eq!(parts(1 << 30, 1000), 12);
        });
    }

    /// Frames under way on their own threads share the global pool's threads; as many frames as
    /// threads split nothing. (No other test of this crate makes a [`FrameWork`].)
    #[test]
    fn frames_under_way_share_the_pools_threads() {
        let n = threads();
        let whole = parts(1 << 30, 1);
        assert_eq!(whole, if n == 1 { 1 } else { n * PARTS_PER_THREAD });
        let whole_copy = copy_part(1 << 30);
        assert_eq!(whole_copy, (1usize << 30).div_ceil(n));
        with_frames(2, || {
            assert_eq!(share(), (n / 2).max(1));
            assert_eq!(copy_part(1 << 30), 1 << 30, "other frames under way: a copy not split");
        });
        with_frames(n, || {
            assert_eq!(parts(1 << 30, 1), 1, "as many frames as threads: no split");
            let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
            three.install(|| assert_eq!(parts(1 << 30, 1), 12, "inside a pool: its threads"));
        });
        // One thread's frames count once, however many it begins.
        let nested: Vec<FrameWork> = (0..3).map(|_| FrameWork::begin()).collect();
        assert_eq!(share(), n);
        drop(nested);
        let again = FrameWork::begin();
        with_frames(1, || assert_eq!(share(), (n / 2).max(1), "counted again once the first is done"));
        drop(again);
        assert_eq!(parts(1 << 30, 1), whole, "the frames done: the whole pool again");
        assert_eq!(copy_part(1 << 30), whole_copy);
    }

    /// Runs `f` while `k` frames are under way, each on a thread of its own.
    fn with_frames(k: usize, f: impl FnOnce()) {
        let (begun, done) = (std::sync::Barrier::new(k + 1), std::sync::Barrier::new(k + 1));
        std::thread::scope(|scope| {
            for _ in 0..k {
                scope.spawn(|| {
                    let _work = FrameWork::begin();
                    begun.wait();
                    done.wait();
                });
            }
            begun.wait();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            done.wait();
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        });
    }

    /// Until a pool runs, a threshold passed through `split_from` is START_FACTOR times larger.
    #[test]
    fn a_pool_is_started_only_for_larger_work() {
        assert_eq!(split_from_when(1000, true), 1000);
        assert_eq!(split_from_when(1000, false), START_FACTOR * 1000);
        assert_eq!(split_from_when(usize::MAX / 2, false), usize::MAX, "saturated, not overflowed");
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        three.install(|| {
            assert!(pool_running(), "inside a local pool");
            assert_eq!(split_from(1000), 1000);
        });
    }

    /// Items are taken in order, each made at most `ahead` items past the last taken, and each
    /// once; a panic in one is the caller's, after which no later item is taken.
    #[test]
    fn items_are_taken_in_order_and_made_a_few_ahead() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Mutex;
        for (n, ahead) in [(0usize, 3usize), (1, 3), (40, 1), (40, 3), (7, 100)] {
            let taken = AtomicUsize::new(0);
            let made = Mutex::new(vec![0u8; n]);
            let mut order = Vec::new();
            in_order(
                n,
                ahead,
                |i| {
                    assert!(i < taken.load(Ordering::Acquire) + ahead.max(1), "item {i} made too early");
                    made.lock().unwrap()[i] += 1;
                    // Work split over the pool inside an item, as a turn's counting is.
                    map_parts(&(0..1000u64).collect::<Vec<_>>(), 10, |_, p| p.iter().sum::<u64>())
                        .iter()
                        .sum::<u64>()
                        + i as u64
                },
                |i, item| {
                    assert_eq!(item, 499_500 + i as u64);
                    order.push(i);
                    taken.store(i + 1, Ordering::Release);
                },
            );
            assert_eq!(order, (0..n).collect::<Vec<_>>(), "{n} items, {ahead} ahead");
            assert!(made.into_inner().unwrap().iter().all(|&m| m == 1), "each made once");
        }
        let mut order = Vec::new();
        let lost = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_order(20, 3, |i| if i == 7 { panic!("item 7") } else { i }, |i, _| order.push(i))
        }));
        assert_eq!(lost.unwrap_err().downcast_ref::<&str>(), Some(&"item 7"));
        // Item 7 is started once item 4 is taken; 5 and 6 may be under way when it is lost.
        assert_eq!(order, (0..order.len()).collect::<Vec<_>>());
        assert!((5..=7).contains(&order.len()), "{order:?}");
    }

    #[test]
    fn parts_cover_the_data_in_order() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for (n, len) in [(0usize, 4usize), (1, 4), (10, 3), (12, 3), (7, 100), (5, 0)] {
            let mut data = vec![usize::MAX; n];
            pool.install(|| {
                for_each_part(&mut data, len, |first, part| {
                    for (i, slot) in part.iter_mut().enumerate() {
                        *slot = first + i;
                    }
                })
            });
            assert_eq!(data, (0..n).collect::<Vec<_>>(), "{n} in parts of {len}");
        }
    }
}
