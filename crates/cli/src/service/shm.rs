//! Shared memory between a client and the service: a `memfd` block, which no other process can
//! open (it has no name in any file system: only a process handed its descriptor maps it), sealed
//! against changes of size before it is handed over, so that neither side's mapping can lose its
//! pages (a shrunk file would end a reader of its mapping with SIGBUS).
//!
//! The service makes the blocks and lends one to each session (a pool keeps them between
//! sessions, their pages made once: [`Pool`]); the tool writes its frame there and reads its
//! outputs back. Each side copies what it reads out of a block ([`Block::copy_out`]), never
//! holding a reference into memory the other process may change.

use std::io;
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

/// The most bytes a received block may have: more than any frame the limits admit (an 8K frame
/// of RGBA floats is 530 MB), far less than the address space.
pub(crate) const BLOCK_MOST: u64 = 1 << 38;

/// A mapped shared memory block.
#[derive(Debug)]
pub(crate) struct Block {
    fd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
    /// The bytes from the start that may have been written: cleared before the block is lent to
    /// another session ([`Pool::give_back`]).
    pub used: usize,
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
        Block::map(fd, len)
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
        Block::map(fd, size as usize).map_err(|e| format!("cannot map the memory block: {e}"))
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Block> {
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // Populated at once: one call maps every page, where writing them would fault each (a
        // received block's pages were made by its maker: only the page tables are filled).
        let flags = MapFlags::SHARED | MapFlags::POPULATE;
        // SAFETY: a new mapping at an address of the kernel's choosing, of `len` bytes of a file
        // at least that long (ours: just truncated to it; a received one: its size, sealed
        // against shrinking), unmapped once, in drop.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, flags, &fd, 0)? };
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave a null address"))?;
        Ok(Block { fd, ptr, len, used: 0 })
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
        assert!(range.end <= self.len && range.len() == out.len(), "a range within the block");
        // SAFETY: the range lies within the mapping (checked above), which lives as long as self;
        // `out` is this process's own memory, apart from the mapping. A raw copy, so no reference
        // into memory another process may write is ever made.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(range.start), out.as_mut_ptr(), range.len())
        };
    }
}

/// The service's blocks not lent to a session, kept for the next: a block's pages are made once
/// (making them is most of what a new block costs: an 8 MB block took milliseconds), and at most
/// [`Pool::KEPT`] bytes of them are kept.
#[derive(Default)]
pub(crate) struct Pool(std::sync::Mutex<Vec<Block>>);

impl Pool {
    const KEPT: usize = 2 << 30;

    /// A block of at least `len` bytes, kept or new: at least 1 MiB, in powers of two, so that
    /// sessions of frames of about one size take one another's blocks.
    pub(crate) fn lend(&self, len: usize) -> io::Result<Block> {
        let len =
            len.max(1 << 20).checked_next_power_of_two().ok_or_else(|| io::Error::other("too large"))?;
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = kept.iter().position(|b| b.len() == len) {
            return Ok(kept.swap_remove(i));
        }
        drop(kept);
        Block::create(len)
    }

    /// Takes `block` back once its session is done with it, cleared of what that session wrote
    /// (the next session is another process's); the oldest kept blocks make way for it.
    pub(crate) fn give_back(&self, mut block: Block) {
        let used = block.used.min(block.len);
        block.as_mut_slice()[..used].fill(0);
        block.used = 0;
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.push(block);
        while kept.iter().map(Block::len).sum::<usize>() > Pool::KEPT {
            kept.remove(0);
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
    fn lent_blocks_come_back_cleared() {
        let pool = Pool::default();
        let mut block = pool.lend(5).unwrap();
        assert_eq!(block.len(), 1 << 20);
        block.as_mut_slice()[..3].copy_from_slice(b"abc");
        block.used = 3;
        pool.give_back(block);
        let again = pool.lend(1000).unwrap();
        let mut out = [9u8; 3];
        again.copy_out(0..3, &mut out);
        assert_eq!(out, [0, 0, 0], "another session never sees what the last one wrote");
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
