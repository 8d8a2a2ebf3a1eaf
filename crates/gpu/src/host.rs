//! Page-locked ("pinned") host memory: the GPU copies it by DMA, with no staging copy on the host.
//!
//! One pool per GPU lends blocks to the frame reader (frames are read straight into them), to the
//! operations (results are copied from the device straight into them) and to the staging copies of
//! frames that live on the heap. Page-locking is slow (milliseconds for a large frame), so blocks
//! go back to the pool when their lease is dropped and a stream of frames of one size allocates
//! a handful of blocks once.
//!
//! Blocks are allocated "portable": page-locked for every context of the process, so with several
//! GPUs a frame read into one GPU's block goes to any of them by DMA.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{result, CudaContext};
use histopipe_frame::Lender;

use crate::GpuError;

/// Free blocks kept for reuse; beyond that the oldest is given back to the driver. More than the
/// blocks a run holds at once (a few per frame in flight, which its workers bound): page-locking
/// and freeing take the driver's lock, stalling every GPU of the process for milliseconds, so a
/// stream that outgrew the pool would pay that for every frame (measured: `colhist --backend
/// auto` on 100 4K frames with 16 workers took 3.0 s reading them into page-locked memory with
/// 16 blocks kept, 0.6 s with none).
const KEEP_FREE: usize = 64;

/// Every page-locked block of the process, from every pool: any GPU copies them directly.
static PINNED: Mutex<Vec<Block>> = Mutex::new(Vec::new());

fn pinned() -> MutexGuard<'static, Vec<Block>> {
    PINNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// `cuMemHostAlloc`'s flag for memory page-locked for every context, not only the allocating one.
const PORTABLE: std::ffi::c_uint = 0x01;

/// The pool of page-locked blocks; clones share it.
#[derive(Clone)]
pub struct HostPool(Arc<Inner>);

struct Inner {
    ctx: Arc<CudaContext>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Blocks not lent, oldest first.
    free: Vec<Block>,
    /// Every block the pool holds, lent or not.
    all: Vec<Block>,
}

/// A page-locked block; `addr` is never 0 (checked when it is allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    addr: usize,
    bytes: usize,
}

impl Block {
    fn contains(&self, addr: usize, bytes: usize) -> bool {
        addr >= self.addr && addr.saturating_add(bytes) <= self.addr + self.bytes
    }
}

/// A lent block: back to the pool when dropped.
pub struct Lease {
    pool: HostPool,
    block: Block,
}

impl Lease {
    /// The block's start; page-aligned.
    pub fn ptr(&self) -> NonNull<u8> {
        // SAFETY: blocks are never null (see `take`).
        unsafe { NonNull::new_unchecked(self.block.addr as *mut u8) }
    }

    /// The block's size in bytes: at least what was asked for.
    pub fn bytes(&self) -> usize {
        self.block.bytes
    }

    /// The first `len` values of the block as `T`s.
    ///
    /// # Safety
    /// `len` values of `T` must fit in the block, and any bit pattern must be a valid `T`.
    pub unsafe fn slice_mut<T>(&mut self, len: usize) -> &mut [T] {
        debug_assert!(len * std::mem::size_of::<T>() <= self.block.bytes);
        unsafe { std::slice::from_raw_parts_mut(self.block.addr as *mut T, len) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.give_back(self.block);
    }
}

impl HostPool {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> HostPool {
        HostPool(Arc::new(Inner { ctx, state: Mutex::default() }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the lists consistent (each change is one push or
        // remove), so a poisoned lock is still usable.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of at least `bytes` bytes: the smallest free one no more than twice that (the one
    /// handed back last among equals), else a new one.
    pub fn take(&self, bytes: usize) -> Result<Lease, GpuError> {
        let bytes = bytes.max(1);
        let reused = {
            let mut state = self.state();
            let fits = |b: &Block| b.bytes >= bytes && b.bytes / 2 <= bytes;
            // Of equal sizes, the block handed back last: the likeliest to be in the CPU's caches.
            let best =
                state.free.iter().enumerate().rev().filter(|(_, b)| fits(b)).min_by_key(|(_, b)| b.bytes);
            best.map(|(i, _)| i).map(|i| state.free.remove(i))
        };
        let block = match reused {
            Some(b) => b,
            None => {
                self.0.ctx.bind_to_thread()?;
                // SAFETY: a plain allocation; freed once, by `release`.
                let ptr = unsafe { result::malloc_host(bytes, PORTABLE) }?;
                if ptr.is_null() {
                    return Err(GpuError(format!("no page-locked memory for {bytes} bytes")));
                }
                let block = Block { addr: ptr as usize, bytes };
                self.state().all.push(block);
                pinned().push(block);
                block
            }
        };
        Ok(Lease { pool: self.clone(), block })
    }

    /// Whether the `bytes` bytes at `ptr` lie in one of the pool's blocks.
    pub fn holds(&self, ptr: *const u8, bytes: usize) -> bool {
        self.state().all.iter().any(|b| b.contains(ptr as usize, bytes))
    }

    /// Whether the `bytes` bytes at `ptr` lie in one block of any pool of the process, so any GPU
    /// can copy them directly.
    pub fn page_locked(ptr: *const u8, bytes: usize) -> bool {
        pinned().iter().any(|b| b.contains(ptr as usize, bytes))
    }

    fn give_back(&self, block: Block) {
        let oldest = {
            let mut state = self.state();
            state.free.push(block);
            if state.free.len() <= KEEP_FREE {
                return;
            }
            let b = state.free.remove(0);
            state.all.retain(|a| *a != b);
            b
        };
        self.0.release(oldest);
    }
}

impl Inner {
    fn release(&self, block: Block) {
        pinned().retain(|b| *b != block);
        // Freeing needs the context current; if it cannot be made so, the block stays allocated
        // (the driver frees it with the context).
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `block` came from `malloc_host`, is no longer in any list and no lease
            // points at it.
            let _ = unsafe { result::free_host(block.addr as *mut std::ffi::c_void) };
        }
    }
}

impl Drop for Inner {
    /// Every lease holds the pool, so when it goes every block is free.
    fn drop(&mut self) {
        let blocks = std::mem::take(&mut self.state.get_mut().unwrap_or_else(|e| e.into_inner()).all);
        for b in blocks {
            self.release(b);
        }
    }
}

/// Frames' samples in page-locked memory (see `histopipe_frame::SampleMemory`).
impl Lender for HostPool {
    fn lend(&self, bytes: usize) -> Option<(NonNull<u8>, Box<dyn Any + Send + Sync>)> {
        let lease = self.take(bytes).ok()?;
        Some((lease.ptr(), Box::new(lease)))
    }
}
