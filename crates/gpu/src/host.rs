//! Page-locked ("pinned") host memory: the GPU copies it by DMA, with no staging copy on the host.
//!
//! One pool for the process, shared by every GPU, lends blocks to the frame reader (frames are
//! read straight into them), to the operations (results are copied from the device straight into
//! them) and to the staging copies of frames that live on the heap. Blocks are page-locked
//! "portable", for every context of the process, so a block one GPU's frame gave back serves the
//! next frame of any GPU, and a frame read into a block goes to whichever GPU takes it.
//!
//! Page-locking is slow, so blocks go back to the pool when their lease is dropped and a stream of
//! frames of one size makes a handful of blocks once. Making one is slower still through the
//! driver's own allocator (`cuMemHostAlloc` of 1 GiB: 520-660 ms on an H100 host, holding the
//! driver's lock, so every other GPU of the process waits). On Linux the pool maps the memory
//! itself instead, asks for huge pages, faults it in on a few threads (no lock held) and then has
//! the driver register it (measured on the same host for 1 GiB, one thread: 207 ms to map and
//! fault in, 35 ms to register).

use std::any::Any;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{result, sys, CudaContext};
use histopipe_frame::Lender;

use crate::GpuError;

/// Free blocks kept for reuse; beyond that the oldest is given back. More than the blocks a run
/// holds at once (a few per frame in flight, which its workers bound): page-locking and freeing
/// stall the process's GPUs, so a stream that outgrew the pool would pay that for every frame
/// (measured: `colhist --backend auto` on 100 4K frames with 16 workers took 3.0 s reading them
/// into page-locked memory with 16 blocks kept, 0.6 s with none).
const KEEP_FREE: usize = 64;

/// The pool: every page-locked block of the process.
static POOL: Mutex<State> = Mutex::new(State { free: Vec::new(), all: Vec::new() });

fn pool() -> MutexGuard<'static, State> {
    // A panic while holding the lock leaves the lists consistent (each change is one push or
    // remove), so a poisoned lock is still usable.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `cuMemHostAlloc`'s and `cuMemHostRegister`'s flag for memory page-locked for every context,
/// not only the current one.
const PORTABLE: std::ffi::c_uint = 0x01;

struct State {
    /// Blocks not lent, oldest first.
    free: Vec<Block>,
    /// Every block, lent or not, with the context that page-locked it (kept alive while the block
    /// is: unlocking it needs a context).
    all: Vec<(Block, Arc<CudaContext>)>,
}

/// A page-locked block; `addr` is never 0 (checked when it is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    addr: usize,
    bytes: usize,
    /// Where the memory came from, to give it back there.
    origin: Origin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// `cuMemHostAlloc`.
    Driver,
    /// Our own mapping of `len` bytes at `base`, registered with `cuMemHostRegister`.
    Mapped { base: usize, len: usize },
}

impl Block {
    fn contains(&self, addr: usize, bytes: usize) -> bool {
        addr >= self.addr && addr.saturating_add(bytes) <= self.addr + self.bytes
    }
}

/// A lent block: back to the pool when dropped.
pub struct Lease {
    block: Block,
}

impl Lease {
    /// The block's start; page-aligned.
    pub fn ptr(&self) -> NonNull<u8> {
        // SAFETY: blocks are never null (see `make`).
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
        // SAFETY: the caller's contract above; the block is this lease's alone while it is borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.block.addr as *mut T, len) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        give_back(self.block);
    }
}

/// One GPU's way into the process's pool: blocks it makes are page-locked through its context.
/// Clones share it.
#[derive(Clone)]
pub struct HostPool {
    ctx: Arc<CudaContext>,
}

impl HostPool {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> HostPool {
        HostPool { ctx }
    }

    /// A block of at least `bytes` bytes: the smallest free one no more than twice that (the one
    /// handed back last among equals), else a new one.
    pub fn take(&self, bytes: usize) -> Result<Lease, GpuError> {
        let bytes = bytes.max(1);
        let reused = {
            let mut state = pool();
            let fits = |b: &Block| b.bytes >= bytes && b.bytes / 2 <= bytes;
            // Of equal sizes, the block handed back last: the likeliest to be in the CPU's caches.
            let best =
                state.free.iter().enumerate().rev().filter(|(_, b)| fits(b)).min_by_key(|(_, b)| b.bytes);
            best.map(|(i, _)| i).map(|i| state.free.remove(i))
        };
        let block = match reused {
            Some(b) => b,
            None => {
                let block = make(&self.ctx, bytes)?;
                pool().all.push((block, self.ctx.clone()));
                block
            }
        };
        Ok(Lease { block })
    }

    /// Whether the `bytes` bytes at `ptr` lie in one page-locked block of the process, so any GPU
    /// can copy them directly.
    pub fn page_locked(ptr: *const u8, bytes: usize) -> bool {
        pool().all.iter().any(|(b, _)| b.contains(ptr as usize, bytes))
    }
}

fn give_back(block: Block) {
    let oldest = {
        let mut state = pool();
        state.free.push(block);
        if state.free.len() <= KEEP_FREE {
            return;
        }
        let b = state.free.remove(0);
        let i = state.all.iter().position(|(a, _)| *a == b);
        i.map(|i| state.all.swap_remove(i))
    };
    if let Some((block, ctx)) = oldest {
        release(&ctx, block);
    }
}

/// A new page-locked block of at least `bytes` bytes, page-locked through `ctx`.
fn make(ctx: &CudaContext, bytes: usize) -> Result<Block, GpuError> {
    ctx.bind_to_thread()?;
    if let Some(block) = mapped(bytes) {
        // SAFETY: the mapping is ours, `len` bytes at `addr`, and stays mapped until `release`
        // unregisters it.
        let registered = unsafe { sys::cuMemHostRegister_v2(block.addr as *mut _, block.bytes, PORTABLE) };
        if registered == sys::CUresult::CUDA_SUCCESS {
            return Ok(block);
        }
        unmap(block);
    }
    // SAFETY: a plain allocation; freed once, by `release`.
    let ptr = unsafe { result::malloc_host(bytes, PORTABLE) }?;
    if ptr.is_null() {
        return Err(GpuError(format!("no page-locked memory for {bytes} bytes")));
    }
    Ok(Block { addr: ptr as usize, bytes, origin: Origin::Driver })
}

/// Gives `block` back to where it came from. It must be in no list, and no lease point at it.
fn release(ctx: &CudaContext, block: Block) {
    // Unlocking needs a context current; if none can be made so, the block stays (the driver
    // unlocks it with the context).
    if ctx.bind_to_thread().is_err() {
        return;
    }
    match block.origin {
        Origin::Driver => {
            // SAFETY: `block` came from `malloc_host`.
            let _ = unsafe { result::free_host(block.addr as *mut std::ffi::c_void) };
        }
        Origin::Mapped { .. } => {
            // SAFETY: `block` was registered by `make`; unmapped only once unregistered.
            if unsafe { sys::cuMemHostUnregister(block.addr as *mut _) } == sys::CUresult::CUDA_SUCCESS {
                unmap(block);
            }
        }
    }
}

/// A fresh mapping of at least `bytes` bytes, 2 MiB-aligned, backed by huge pages where the
/// kernel has them and faulted in (so registering it only locks it); `None` where it cannot be
/// had (then the driver allocates).
#[cfg(target_os = "linux")]
fn mapped(bytes: usize) -> Option<Block> {
    const HUGE: usize = 2 << 20;
    let len = bytes.checked_next_multiple_of(HUGE)?;
    let total = len.checked_add(HUGE)?;
    // SAFETY: a new private anonymous mapping; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED || base.is_null() {
        return None;
    }
    let addr = (base as usize).next_multiple_of(HUGE);
    histopipe_frame::advise_huge_pages(addr as *const u8, len);
    fault_in(addr, len);
    Some(Block { addr, bytes: len, origin: Origin::Mapped { base: base as usize, len: total } })
}

#[cfg(not(target_os = "linux"))]
fn mapped(_bytes: usize) -> Option<Block> {
    None
}

fn unmap(block: Block) {
    #[cfg(target_os = "linux")]
    if let Origin::Mapped { base, len } = block.origin {
        // SAFETY: the whole mapping `mapped` made, which nothing uses any more.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = block;
}

/// Faults in the `len` bytes at `addr` (a fresh mapping, 2 MiB-aligned) on a few threads: the
/// kernel zeroes each page as it is first written, at a few GB/s a core.
#[cfg(target_os = "linux")]
fn fault_in(addr: usize, len: usize) {
    const CHUNK: usize = 64 << 20;
    let threads =
        std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8).min(len.div_ceil(CHUNK));
    let per = len.div_ceil(threads).next_multiple_of(2 << 20);
    let touch = |start: usize| {
        let end = (start + per).min(addr + len);
        if start >= end {
            return;
        }
        // SAFETY: [start, end) lies in the fresh mapping; MADV_POPULATE_WRITE only faults it in.
        let populated =
            unsafe { libc::madvise(start as *mut _, end - start, libc::MADV_POPULATE_WRITE) } == 0;
        if !populated {
            // Kernels before 5.14: a write to each page faults it in.
            for page in (start..end).step_by(4096) {
                // SAFETY: a page of the fresh mapping, which nothing else uses yet.
                unsafe { std::ptr::write_volatile(page as *mut u8, 0) };
            }
        }
    };
    std::thread::scope(|s| {
        for t in 1..threads {
            // If no thread can be made, registering faults its range in instead.
            let _ = std::thread::Builder::new().spawn_scoped(s, move || touch(addr + t * per));
        }
        touch(addr);
    });
}

/// Frames' samples in page-locked memory (see `histopipe_frame::SampleMemory`).
impl Lender for HostPool {
    fn lend(&self, bytes: usize) -> Option<(NonNull<u8>, Box<dyn Any + Send + Sync>)> {
        let lease = self.take(bytes).ok()?;
        Some((lease.ptr(), Box::new(lease)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gpu;

    fn gpu() -> Option<Gpu> {
        crate::testing::gpu_or_skip()
    }

    /// A block is page-locked, holds what is written to it, is copied to the device and back,
    /// and once given back is lent again, through any GPU's handle.
    #[test]
    fn blocks_are_page_locked_copied_and_lent_again() {
        let Some(gpu) = gpu() else { return };
        // Over one faulting thread's share, and not a whole number of huge pages.
        let bytes = (100 << 20) + 12344;
        let mut lease = gpu.host_memory().take(bytes).expect("page-locked memory");
        assert!(lease.bytes() >= bytes && HostPool::page_locked(lease.ptr().as_ptr(), bytes));
        #[cfg(target_os = "linux")]
        assert!(matches!(lease.block.origin, Origin::Mapped { .. }), "mapped here, not by cuMemHostAlloc");
        // SAFETY: `bytes / 4` u32s fit in the block.
        let data = unsafe { lease.slice_mut::<u32>(bytes / 4) };
        for (i, v) in data.iter_mut().enumerate() {
            *v = (i as u32).wrapping_mul(2_654_435_761);
        }
        let buf = gpu.upload("host.test", &*data).expect("upload");
        assert!(gpu.download_vec(&buf, data.len()).expect("download") == *data);
        drop(buf);
        let at = lease.ptr();
        drop(lease);
        let other = Gpu::open(0).expect("the same GPU again");
        let again = other.host_memory().take(bytes).expect("page-locked memory");
        assert_eq!(again.ptr(), at, "the block given back is lent again");
    }
}
