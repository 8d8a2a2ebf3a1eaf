//! Shared memory between a client and the service: a `memfd` block, which no other process can
//! open (it has no name in any file system: only a process handed its descriptor maps it), sealed
//! against changes of size before it is handed over, so that neither side's mapping can lose its
//! pages (a shrunk file would end a reader of its mapping with SIGBUS).
//!
//! The service makes the blocks and lends each to one session, once ([`Pool`]: a tool keeps its
//! mapping as long as it likes, so a block lent again would show the next session's frames to
//! the first); the tool writes its frame there and reads its outputs back. Each side copies what
//! it reads out of a block ([`Block::copy_out`]), never holding a reference into memory the other
//! process may change.
//!
//! The tool's two copies (its frame in, its outputs out) stay on purpose: taking them away was
//! tried and measured. Frames were read into `memfd` blocks of the tool's own and passed with the
//! frame, and the service laid the outputs out in another block of the tool's own (no copy in the
//! tool; the service kept each block mapped for the process's next frames). On the H200 host, 100
//! 4K gray PGMs through `threshold --backend gpu`, a new process each run, side by side, medians
//! of 11: 200.7 ms, against 169.4 ms with the copies (`--backend cpu`: 159.7 ms); the outputs
//! alone in the tool's blocks, 199.4 ms. A process makes its blocks with its first frames, and a
//! page of shared memory costs more to make than the heap's (huge pages, kept from frame to
//! frame): made by a write to each page, as [`Block::create`] makes them, 342.3 ms (in another
//! call, where the copies took 173.9 ms); made by one `MADV_POPULATE_WRITE`, as measured above.

use std::io;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{Advice, MapFlags, ProtFlags};

/// The most bytes a received block may have: more than any frame the limits admit (an 8K frame
/// of RGBA floats is 530 MB), far less than the address space.
pub(crate) const BLOCK_MOST: u64 = 1 << 38;

/// A mapped shared memory block.
#[derive(Debug)]
pub(crate) struct Block {
    fd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone, as a heap block is by a Vec; reads and writes
// through it go through &self / &mut self.
unsafe impl Send for Block {}
// SAFETY: shared access only copies out of the mapping.
unsafe impl Sync for Block {}

impl Block {
    /// A new block of at least `len` bytes (a whole number of pages), sealed against changes of
    /// size, mapped for writing.
    pub(crate) fn create(len: usize) -> io::Result<Block> {
        let len = len.max(1).div_ceil(4096) * 4096;
        let fd =
            rustix::fs::memfd_create("histopipe-service", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        rustix::fs::ftruncate(&fd, len as u64)?;
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
        let mut block = Block::map(fd, len)?;
        if !block.populate_for_writing() {
            // Each page written once instead: where the service writes a frame's outputs, the
            // first write to each would fault.
            block.as_mut_slice().iter_mut().step_by(4096).for_each(|b| *b = 0);
        }
        Ok(block)
    }

    /// Maps a block another process made and handed over, for reading and writing: refused
    /// unless it is sealed against shrinking (a `memfd` the maker sealed), and at most
    /// [`BLOCK_MOST`] bytes.
    pub(crate) fn receive(fd: OwnedFd) -> Result<Block, String> {
        let seals =
            rustix::fs::fcntl_get_seals(&fd).map_err(|e| format!("not a sealable memory block: {e}"))?;
        if !seals.contains(SealFlags::SHRINK) {
            return Err("a memory block not sealed against shrinking".into());
        }
        let size = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?.st_size;
        let size = u64::try_from(size).map_err(|_| "a memory block of negative size".to_string())?;
        if size == 0 || size > BLOCK_MOST {
            return Err(format!("a memory block of {size} bytes (1 to {BLOCK_MOST})"));
        }
        let mut block =
            Block::map(fd, size as usize).map_err(|e| format!("cannot map the memory block: {e}"))?;
        // Its pages were made by its maker: only the page tables are filled, at once, for the
        // frames this process writes there (else the first write to each page faults).
        block.populate_for_writing();
        Ok(block)
    }

    /// Makes every page of the block that is not made yet and maps each for writing, in one call
    /// (`MADV_POPULATE_WRITE`, Linux 5.14 on); whether the kernel could. A shared mapping
    /// populated as it is made (`MAP_POPULATE`) maps its pages for reading only, so each page's
    /// first write faults again: a 64 MiB block made so and written a page at a time took 72.0 ms
    /// on a 2-core machine, 62.5 ms made this way (medians of 9).
    fn populate_for_writing(&mut self) -> bool {
        // SAFETY: advice on this block's own mapping, `len` bytes alive while self is; it makes
        // and maps pages of the file (sealed against shrinking), and changes no byte.
        unsafe { rustix::mm::madvise(self.ptr.as_ptr().cast(), self.len, Advice::LinuxPopulateWrite) }.is_ok()
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Block> {
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        let flags = MapFlags::SHARED;
        // SAFETY: a new mapping at an address of the kernel's choosing, of `len` bytes of a file
        // at least that long (ours: just truncated to it; a received one: its size, sealed
        // against shrinking), unmapped once, in drop.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, flags, &fd, 0)? };
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave a null address"))?;
        Ok(Block { fd, ptr, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The block, for its maker to write.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, alive while self is; &mut self
        // makes this the only reference into it in this process.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Copies bytes `range` of the block into `out` (of the same length); the other process may
    /// change them meanwhile, which gives other bytes, never a fault: the block cannot shrink.
    pub(crate) fn copy_out(&self, range: Range<usize>, out: &mut [u8]) {
        // SAFETY: u8 and MaybeUninit<u8> have one layout; only initialised bytes are written.
        let out = unsafe { &mut *(out as *mut [u8] as *mut [MaybeUninit<u8>]) };
        self.copy_to(range, out);
    }

    /// Bytes `range` of the block as a new vector, copied as [`Block::copy_out`] copies (not
    /// cleared first).
    pub(crate) fn to_vec(&self, range: Range<usize>) -> Vec<u8> {
        let mut out = Vec::with_capacity(range.len());
        let len = range.len();
        self.copy_to(range, &mut out.spare_capacity_mut()[..len]);
        // SAFETY: copy_to wrote all `len` bytes.
        unsafe { out.set_len(len) };
        out
    }

    /// Copies bytes `range` of the block into `out` (as long), in parts on the CPU pool's
    /// threads for a frame alone ([`histopipe_ops::parallel::copy_part`]).
    fn copy_to(&self, range: Range<usize>, out: &mut [MaybeUninit<u8>]) {
        assert!(range.end <= self.len && range.len() == out.len(), "a range within the block");
        let from = self.ptr.as_ptr() as usize + range.start;
        let part = histopipe_ops::parallel::copy_part(range.len());
        histopipe_ops::parallel::for_each_part(out, part, |first, out| {
            // SAFETY: [first, first + out.len()) lies within the range, which lies within the
            // mapping (alive as long as self); `out` is this process's own memory, apart from
            // the mapping. A raw copy, so no reference into memory another process may write is
            // ever made.
            unsafe {
                std::ptr::copy_nonoverlapping((from + first) as *const u8, out.as_mut_ptr().cast(), out.len())
            };
        });
    }
}

/// Blocks made ahead, never lent yet. A block is lent to one session and dropped once that
/// session is done with it, never lent again: the tool may keep its mapping for as long as it
/// likes, and nothing takes a mapping back, so a block cleared and lent to the next session would
/// show that session's frames to the first. Making a block's pages is most of what a new block
/// costs (an 8 MB block took milliseconds, on a tool's first frame), so a thread of the service
/// makes blocks ahead ([`Pool::make_ahead`]): of each size, as many as sessions took in the last
/// [`Pool::RECENT`], at most [`Pool::KEPT`] bytes of them in all.
#[derive(Default)]
pub(crate) struct Pool {
    stock: std::sync::Mutex<Stock>,
    wanted: std::sync::Condvar,
}

#[derive(Default)]
struct Stock {
    fresh: Vec<Block>,
    /// Blocks sessions are done with, unmapped and freed on the maker's thread: freeing a
    /// block's pages costs about what making them does.
    done: Vec<Block>,
    /// The sizes of the blocks lent lately, and when, oldest first (at most [`Pool::TAKES`]).
    taken: std::collections::VecDeque<(usize, Instant)>,
}

impl Pool {
    const KEPT: usize = 1 << 30;
    const DONE_MOST: usize = 256 << 20;
    const RECENT: Duration = Duration::from_secs(2);
    const TAKES: usize = 256;

    fn stock(&self) -> std::sync::MutexGuard<'_, Stock> {
        self.stock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of at least `len` bytes that no session has had: at least 1 MiB, in eighths of a
    /// power of two, so that sessions of frames of about one size take blocks made ahead for one
    /// another, and a block is at most an eighth larger than asked (in powers of two, a 4K colour
    /// frame's 24.9 MB took 32 MiB, made and mapped on both sides; now 24 MiB).
    pub(crate) fn lend(&self, len: usize) -> io::Result<Block> {
        let len = len.max(1 << 20);
        let step = len.checked_next_power_of_two().ok_or_else(|| io::Error::other("too large"))? / 8;
        let len = len.div_ceil(step) * step;
        let mut stock = self.stock();
        if stock.taken.len() == Pool::TAKES {
            stock.taken.pop_front();
        }
        stock.taken.push_back((len, Instant::now()));
        let fresh = stock.fresh.iter().position(|b| b.len() == len).map(|i| stock.fresh.swap_remove(i));
        drop(stock);
        self.wanted.notify_one();
        fresh.map_or_else(|| Block::create(len), Ok)
    }

    /// Takes back a block its session is done with, to be freed (never lent again) on the thread
    /// that makes blocks ahead, in the time the frames leave; freed at once where blocks of
    /// [`Pool::DONE_MOST`] bytes wait already (that thread, of the lowest priority, gets little
    /// time on cores the frames keep busy).
    pub(crate) fn retire(&self, block: Block) {
        let mut stock = self.stock();
        if stock.done.iter().map(Block::len).sum::<usize>() + block.len() > Pool::DONE_MOST {
            drop(stock);
            drop(block);
            return;
        }
        stock.done.push(block);
        drop(stock);
        self.wanted.notify_one();
    }

    /// The size of the next block to make ahead, if one is wanted: a size lent more often lately
    /// than blocks of it are in stock, within [`Pool::KEPT`].
    fn next_wanted(stock: &mut Stock) -> Option<usize> {
        let now = Instant::now();
        while stock.taken.front().is_some_and(|&(_, at)| now.duration_since(at) > Pool::RECENT) {
            stock.taken.pop_front();
        }
        let kept: usize = stock.fresh.iter().map(Block::len).sum();
        stock.taken.iter().rev().map(|&(len, _)| len).find(|&len| {
            let wanted = stock.taken.iter().filter(|&&(l, _)| l == len).count();
            let have = stock.fresh.iter().filter(|b| b.len() == len).count();
            have < wanted && kept + len <= Pool::KEPT
        })
    }

    /// Makes one block ahead if one is wanted; whether it did.
    #[cfg(test)]
    fn make_one(&self) -> bool {
        let Some(len) = Pool::next_wanted(&mut self.stock()) else { return false };
        self.make(len)
    }

    /// Makes a block of `len` bytes for the stock; whether it could.
    fn make(&self, len: usize) -> bool {
        match Block::create(len) {
            Ok(block) => {
                self.stock().fresh.push(block);
                true
            }
            // No memory now: blocks are made when lent, as without the stock.
            Err(_) => false,
        }
    }

    /// Makes blocks ahead as they are wanted, for as long as the service runs: on a thread of its
    /// own, at the lowest priority (nice 19), so that making them takes the cores the frames
    /// leave idle. What is wanted is asked under the lock a lending takes, so no lending goes
    /// unseen.
    pub(crate) fn make_ahead(&self) {
        // This thread's alone (a thread's id as a process id names that thread, on Linux).
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
        loop {
            let (done, len) = {
                let mut stock = self.stock();
                loop {
                    let done = std::mem::take(&mut stock.done);
                    let len = Pool::next_wanted(&mut stock);
                    if !done.is_empty() || len.is_some() {
                        break (done, len);
                    }
                    stock =
                        self.wanted.wait_timeout(stock, Pool::RECENT).unwrap_or_else(|e| e.into_inner()).0;
                }
            };
            drop(done);
            if len.is_some_and(|len| !self.make(len)) {
                std::thread::sleep(Pool::RECENT);
            }
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; nothing borrows it past self.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ranges_are_copied_whole_in_parts() {
        // Over several copy parts (1 MiB at least each), starting and ending off a part's edge.
        let len = 5 << 20;
        let mut made = Block::create(len).unwrap();
        let mut rng = fastrand::Rng::with_seed(44);
        let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        histopipe_ops::parallel::copy(made.as_mut_slice(), &bytes);
        assert!(made.as_mut_slice() == &bytes[..]);
        let got = Block::receive(made.fd().try_clone_to_owned().unwrap()).unwrap();
        for range in [3..len - 5, 0..len, (1 << 20) - 1..(3 << 20) + 1, 7..7] {
            let mut out = vec![0u8; range.len()];
            got.copy_out(range.clone(), &mut out);
            assert!(out == bytes[range.clone()], "{range:?}");
            assert!(got.to_vec(range.clone()) == bytes[range.clone()], "{range:?}");
        }
    }

    #[test]
    fn a_block_is_read_back_through_its_descriptor() {
        let mut made = Block::create(10_000).unwrap();
        assert_eq!(made.len(), 12_288);
        made.as_mut_slice()[9_999] = 7;
        let fd = made.fd().try_clone_to_owned().unwrap();
        let got = Block::receive(fd).unwrap();
        let mut out = [0u8; 2];
        got.copy_out(9_998..10_000, &mut out);
        assert_eq!(out, [0, 7]);
        assert!(rustix::fs::ftruncate(made.fd(), 10).is_err(), "sealed against shrinking");
    }

    #[test]
    fn a_block_is_lent_once_and_blocks_of_sizes_lent_lately_are_made_ahead() {
        let pool = Pool::default();
        let inode = |b: &Block| rustix::fs::fstat(b.fd()).unwrap().st_ino;
        let mut first = pool.lend(5).unwrap();
        assert_eq!(first.len(), 1 << 20);
        first.as_mut_slice()[..3].copy_from_slice(b"abc");
        let seen = inode(&first);
        drop(first);
        // One 1 MiB block lent lately, none in stock: one is made ahead, and no more.
        assert!(pool.make_one());
        assert!(!pool.make_one(), "as many made ahead as were lent lately");
        let again = pool.lend(1000).unwrap();
        assert_ne!(inode(&again), seen, "a block is never lent twice");
        let mut out = [9u8; 3];
        again.copy_out(0..3, &mut out);
        assert_eq!(out, [0, 0, 0]);
        // Two lent lately now, none in stock: two are made.
        assert!(pool.make_one() && pool.make_one() && !pool.make_one());
        // In eighths of the next power of two: 3 MiB and a byte in 3.5 MiB.
        assert_eq!(pool.lend((3 << 20) + 1).unwrap().len(), 7 << 19, "a size not made ahead is made at once");
        assert!(pool.make_one() && !pool.make_one());
        let sizes: Vec<usize> = pool.stock().fresh.iter().map(Block::len).collect();
        assert_eq!(sizes, [1 << 20, 1 << 20, 7 << 19]);
        assert_eq!(pool.lend(24_883_200).unwrap().len(), 24 << 20, "a 4K colour frame");
        assert_eq!(pool.lend(1 << 24).unwrap().len(), 1 << 24);
    }

    #[test]
    fn unsealed_memory_and_plain_files_are_refused() {
        let fd = rustix::fs::memfd_create("x", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        rustix::fs::ftruncate(&fd, 4096).unwrap();
        assert!(Block::receive(fd).unwrap_err().contains("not sealed"));
        let file = std::fs::File::open("/proc/self/exe").unwrap();
        assert!(Block::receive(file.into()).is_err());
    }
}
