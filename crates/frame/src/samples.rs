//! Where a frame's samples live: on the heap, or in memory lent by someone else.
//!
//! A GPU copies page-locked ("pinned") host memory straight to and from the device; copying an
//! ordinary heap buffer costs an extra pass through a staging buffer on the host. So the GPU
//! runtime lends page-locked buffers ([`Lender`]), the reader reads frames into them and the GPU
//! writes results into them, and a frame then goes from the pipe to the device and back to the pipe
//! with no copy on the host beyond the pipe's own. Everything else sees a slice.

use std::any::Any;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// A frame's samples: a slice that owns its memory, either a `Vec` or a lent block (returned to its
/// lender when dropped).
pub struct Samples<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    owner: Owner,
}

enum Owner {
    /// A `Vec` taken apart: its capacity, for putting it back together in `drop`.
    Heap(usize),
    /// Whatever keeps the lent block alive; dropping it hands the block back.
    Lent(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
}

// SAFETY: `Samples` owns its memory exclusively, as a `Vec` does; the lent owner is Send + Sync.
unsafe impl<T: Copy + Send> Send for Samples<T> {}
// SAFETY: shared access only reads the slice.
unsafe impl<T: Copy + Sync> Sync for Samples<T> {}

impl<T: Copy> Samples<T> {
    /// Samples in a lent block of memory.
    ///
    /// # Safety
    /// `ptr` must be aligned for `T` and valid for reads and writes of `len` initialized values of
    /// `T`, used by nobody else, for as long as `owner` lives.
    pub unsafe fn lent(ptr: NonNull<T>, len: usize, owner: Box<dyn Any + Send + Sync>) -> Samples<T> {
        Samples { ptr, len, owner: Owner::Lent(owner) }
    }

    /// Whether the samples are in lent memory rather than on the heap.
    pub fn is_lent(&self) -> bool {
        matches!(self.owner, Owner::Lent(_))
    }

    /// The samples as a `Vec`: free for heap samples, a copy for lent ones.
    pub fn into_vec(self) -> Vec<T> {
        match self.owner {
            Owner::Heap(capacity) => {
                let this = ManuallyDrop::new(self);
                // SAFETY: the parts of the Vec that `From<Vec<T>>` took apart; `this` is not
                // dropped, so the Vec is rebuilt once.
                unsafe { Vec::from_raw_parts(this.ptr.as_ptr(), this.len, capacity) }
            }
            Owner::Lent(_) => self.to_vec(),
        }
    }
}

impl<T: Copy> From<Vec<T>> for Samples<T> {
    fn from(v: Vec<T>) -> Samples<T> {
        let mut v = ManuallyDrop::new(v);
        // A Vec's pointer is never null (dangling, not null, when it holds nothing).
        let ptr = NonNull::new(v.as_mut_ptr()).expect("Vec pointers are non-null");
        Samples { ptr, len: v.len(), owner: Owner::Heap(v.capacity()) }
    }
}

impl<T: Copy> Drop for Samples<T> {
    fn drop(&mut self) {
        if let Owner::Heap(capacity) = self.owner {
            // SAFETY: as in `into_vec`; this is the only reassembly.
            drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, capacity) });
        }
        // A lent owner hands its block back when the field is dropped.
    }
}

impl<T: Copy> Deref for Samples<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` values while `self` lives (see the constructors).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for Samples<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `self` is borrowed mutably, so the access is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> FromIterator<T> for Samples<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Samples<T> {
        iter.into_iter().collect::<Vec<T>>().into()
    }
}

impl<T: Copy> AsRef<[T]> for Samples<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

/// A copy always lives on the heap.
impl<T: Copy> Clone for Samples<T> {
    fn clone(&self) -> Samples<T> {
        self.to_vec().into()
    }
}

impl<T: Copy + PartialEq> PartialEq for Samples<T> {
    fn eq(&self, other: &Samples<T>) -> bool {
        **self == **other
    }
}

impl<T: Copy + Eq> Eq for Samples<T> {}

impl<T: Copy + fmt::Debug> fmt::Debug for Samples<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// Lends blocks of memory for samples: the GPU runtime's page-locked host memory.
pub trait Lender: Send + Sync {
    /// A block of at least `bytes` bytes, aligned to 16, or `None` (then the heap is used). The
    /// block stays valid, and is used by nobody else, until the returned owner is dropped; its
    /// contents are unspecified but initialized.
    fn lend(&self, bytes: usize) -> Option<(NonNull<u8>, Box<dyn Any + Send + Sync>)>;
}

/// Where new samples are made: on the heap, until a [`Lender`] is installed; from it afterwards.
/// Clones share the one slot, so a reader thread made before the GPU was open gets lent memory from
/// the frame after it is installed.
///
/// Large heap blocks are recycled: when samples made here are dropped, their block is kept for
/// the next frame of about the same size (a few blocks at most), so a stream of frames reuses the
/// same memory instead of paying the kernel to map and zero fresh pages for every frame.
#[derive(Clone, Default)]
pub struct SampleMemory(Arc<Slot>);

#[derive(Default)]
struct Slot {
    lender: OnceLock<Arc<dyn Lender>>,
    spare: Arc<Spare>,
}

/// Heap blocks of samples dropped, waiting for new samples.
#[derive(Default)]
struct Spare(Mutex<Vec<Box<[u128]>>>);

impl Spare {
    /// Blocks smaller than this come from the heap and go back to it.
    const SMALLEST: usize = 1 << 20;
    /// At most this many blocks are kept, of at most this many bytes in all.
    const BLOCKS: usize = 8;
    const BYTES: usize = 1 << 30;

    fn blocks(&self) -> MutexGuard<'_, Vec<Box<[u128]>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A kept block of `words` to twice as many 16-byte words.
    fn kept(&self, words: usize) -> Option<Box<[u128]>> {
        let mut blocks = self.blocks();
        let fits = blocks.iter().position(|b| b.len() >= words && b.len() / 2 <= words)?;
        Some(blocks.swap_remove(fits))
    }

    /// A kept block of `words` to twice as many 16-byte words, else a new zeroed one; `None` when
    /// the allocator has none.
    fn take(&self, words: usize) -> Option<Box<[u128]>> {
        if let Some(block) = self.kept(words) {
            return Some(block);
        }
        let block = try_zeroed::<u128>(words)?;
        advise_huge_pages(block.as_ptr(), 16 * block.len());
        Some(block)
    }

    /// Keeps `block` if there is room; the oldest kept blocks make way for it.
    fn keep(&self, block: Box<[u128]>) {
        let mut blocks = self.blocks();
        blocks.push(block);
        let bytes = |blocks: &[Box<[u128]>]| blocks.iter().map(|b| 16 * b.len()).sum::<usize>();
        while blocks.len() > Spare::BLOCKS || bytes(&blocks) > Spare::BYTES {
            blocks.remove(0);
        }
    }
}

/// Asks Linux to back the whole 2 MiB pages within the `bytes` bytes from `at` (memory the caller
/// owns and has not touched yet) with huge pages: with transparent huge pages in `madvise` mode
/// (the default of many distributions), fresh memory is otherwise faulted in 4 KiB at a time on
/// first write. For samples: a frame read into a new block by `read(2)` faults inside the call
/// (reading a 16384x16384 16-bit PGM from /dev/shm spent 0.44 s in `read` calls on 2 cores, 0.14
/// to 0.18 s with huge pages); the outputs of operations (see histopipe-ops' `parallel`). A hint
/// only: refused or not, nothing changes but speed.
pub fn advise_huge_pages<T>(at: *const T, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 2 << 20;
        let start = (at as usize).next_multiple_of(PAGE);
        let end = (at as usize).saturating_add(bytes) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies within memory the caller owns; MADV_HUGEPAGE changes how its
            // pages are backed, never what they hold.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (at, bytes);
}

/// A heap block in use by samples; back to its [`Spare`] when dropped, if that is still there.
struct Recycled {
    block: Option<Box<[u128]>>,
    home: Weak<Spare>,
}

impl Drop for Recycled {
    fn drop(&mut self) {
        if let (Some(block), Some(home)) = (self.block.take(), self.home.upgrade()) {
            home.keep(block);
        }
    }
}

impl SampleMemory {
    /// Lends memory for every later frame; only the first call takes effect.
    pub fn install(&self, lender: Arc<dyn Lender>) {
        if self.0.lender.set(lender).is_ok() {
            self.0.spare.blocks().clear();
        }
    }

    /// `len` samples whose values are unspecified (zero in new memory): for buffers that are
    /// written in full before anything reads them. `T` is a sample type (`u8`, `u16`), for which
    /// every bit pattern is a value.
    pub fn uninit<T: Copy + Default + Send + Sync + 'static>(&self, len: usize) -> Samples<T> {
        self.try_uninit(len).unwrap_or_else(|| {
            let bytes = len.saturating_mul(std::mem::size_of::<T>()).min(isize::MAX as usize);
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(bytes, 16).unwrap_or(std::alloc::Layout::new::<u128>()),
            )
        })
    }

    /// As [`SampleMemory::uninit`], but `None` when there is no memory for them (the allocator
    /// refused, or their size overflows), where `uninit` aborts the process.
    pub fn try_uninit<T: Copy + Default + Send + Sync + 'static>(&self, len: usize) -> Option<Samples<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>());
        let lent = self.0.lender.get().and_then(|l| {
            let (ptr, owner) = l.lend(bytes?)?;
            debug_assert_eq!(ptr.as_ptr() as usize % std::mem::align_of::<T>(), 0);
            // SAFETY: the lender's promise: at least `bytes` initialized bytes, aligned to 16, and
            // exclusive while `owner` lives; every bit pattern is a valid u8 or u16 sample.
            Some(unsafe { Samples::lent(ptr.cast::<T>(), len, owner) })
        });
        match (lent, bytes) {
            (Some(samples), _) => Some(samples),
            (None, Some(bytes)) if bytes >= Spare::SMALLEST && std::mem::align_of::<T>() <= 16 => {
                Some(self.recycled(self.0.spare.take(bytes.div_ceil(16))?, len))
            }
            (None, Some(_)) => Some(try_zeroed::<T>(len)?.into_vec().into()),
            (None, None) => None,
        }
    }

    /// `len` samples in a heap block kept from an earlier frame, if one fits and no lender is
    /// installed: memory the process holds already, so using it at once costs nothing.
    pub(crate) fn kept<T: Copy + Send + Sync + 'static>(&self, len: usize) -> Option<Samples<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if self.0.lender.get().is_some() || bytes < Spare::SMALLEST || std::mem::align_of::<T>() > 16 {
            return None;
        }
        Some(self.recycled(self.0.spare.kept(bytes.div_ceil(16))?, len))
    }

    /// `len` samples in `block`, which goes back to the spare blocks when they are dropped.
    fn recycled<T: Copy + Send + Sync + 'static>(&self, mut block: Box<[u128]>, len: usize) -> Samples<T> {
        debug_assert!(16 * block.len() >= len * std::mem::size_of::<T>());
        let ptr = NonNull::new(block.as_mut_ptr().cast::<T>()).unwrap_or(NonNull::dangling());
        let owner = Recycled { block: Some(block), home: Arc::downgrade(&self.0.spare) };
        // SAFETY: the block holds at least `len` T's of initialized bytes (zeroed when made,
        // samples since), aligned to 16, and is only reachable through `owner`, which the samples
        // keep; every bit pattern is a valid u8 or u16 sample.
        unsafe { Samples::lent(ptr, len, Box::new(owner)) }
    }
}

/// `len` zeroed values on the heap, or `None` when the allocator has no room (or the size
/// overflows). The allocator's zeroed memory, not `vec![0; len]`'s abort or a `resize` that
/// writes every byte: fresh pages are zero already. `T` is an integer type, of which zero bytes
/// are a value.
fn try_zeroed<T: Copy>(len: usize) -> Option<Box<[T]>> {
    let layout = std::alloc::Layout::array::<T>(len).ok()?;
    if layout.size() == 0 {
        return Some(Vec::new().into_boxed_slice());
    }
    // SAFETY: the layout's size is not zero.
    let ptr = crate::fallibly(|| unsafe { std::alloc::alloc_zeroed(layout) });
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `len` zeroed T's (zero bytes make an integer) from the global allocator, with the
    // layout a `Box<[T]>` of `len` is freed with.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr.cast::<T>(), len)) })
}

/// Samples that are filled as their bytes arrive: their memory grows with what has come, so a
/// header declaring a huge frame over a few bytes of data costs a few bytes of memory.
///
/// A small frame, one whose bytes are all at hand already, and one for which a block kept from an
/// earlier frame fits (a stream of frames of one size, after its first) get their whole memory at
/// once, as they did before. Any other is read into a heap buffer that doubles as it fills, from
/// 1 MiB, up to a sixteenth of the frame; then the frame's memory is taken (lent, page-locked
/// memory, once a GPU lends it) and that much is copied over. So memory is never more than 16
/// times what arrived (plus 1 MiB), and an honest frame pays one copy of a sixteenth of itself.
pub(crate) struct Filling<'m, T: Copy> {
    memory: &'m SampleMemory,
    len: usize,
    staged: Vec<T>,
    full: Option<Samples<T>>,
    filled: usize,
}

/// The bytes [`Filling`] stages before it commits the frame's memory, at least.
const FIRST_PIECE: usize = 1 << 20;

/// A frame's memory could not be had: how many bytes were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoMemory(pub usize);

impl<'m, T: Copy + Default + Send + Sync + 'static> Filling<'m, T> {
    /// `len` samples from `memory`, `at_hand` of which the input holds already.
    pub fn new(memory: &'m SampleMemory, len: usize, at_hand: usize) -> Result<Self, NoMemory> {
        let size = std::mem::size_of::<T>();
        let full = if len.saturating_mul(size) <= FIRST_PIECE || at_hand >= len {
            Some(memory.try_uninit(len).ok_or(NoMemory(len.saturating_mul(size)))?)
        } else {
            memory.kept(len)
        };
        Ok(Filling { memory, len, staged: Vec::new(), full, filled: 0 })
    }

    /// The samples not filled yet that there is memory for: empty only once all are filled.
    pub fn room(&mut self) -> Result<&mut [T], NoMemory> {
        let size = std::mem::size_of::<T>();
        if self.full.is_none() && self.filled == self.staged.len() && self.filled < self.len {
            let commit = (self.len / 16).max(FIRST_PIECE / size);
            if self.filled >= commit {
                let mut full = self.memory.try_uninit::<T>(self.len).ok_or(NoMemory(self.len * size))?;
                full[..self.filled].copy_from_slice(&self.staged);
                self.staged = Vec::new();
                self.full = Some(full);
            } else {
                let grown = (2 * self.staged.len()).clamp(FIRST_PIECE / size, commit).min(self.len);
                crate::fallibly(|| self.staged.try_reserve_exact(grown - self.staged.len()))
                    .map_err(|_| NoMemory(grown * size))?;
                self.staged.resize(grown, T::default());
            }
        }
        Ok(match self.full.as_mut() {
            Some(full) => &mut full[self.filled..],
            None => &mut self.staged[self.filled..],
        })
    }

    /// Says that the first `n` samples of the last [`Filling::room`] are filled.
    pub fn filled(&mut self, n: usize) {
        self.filled += n;
    }

    /// The samples, once all are filled.
    pub fn finish(self) -> Samples<T> {
        debug_assert_eq!(self.filled, self.len);
        match self.full {
            Some(full) => full,
            None => self.staged.into(),
        }
    }
}

impl fmt::Debug for SampleMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.lender.get().is_some() { "SampleMemory(lent)" } else { "SampleMemory(heap)" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Lends boxed blocks and counts those handed back.
    #[derive(Default)]
    struct Counting {
        back: Arc<AtomicUsize>,
    }

    struct Block(#[allow(dead_code)] Box<[u128]>, Arc<AtomicUsize>);

    impl Drop for Block {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Lender for Counting {
        fn lend(&self, bytes: usize) -> Option<(NonNull<u8>, Box<dyn Any + Send + Sync>)> {
            let mut b = vec![0u128; bytes.div_ceil(16).max(1)].into_boxed_slice();
            let ptr = NonNull::new(b.as_mut_ptr().cast::<u8>())?;
            Some((ptr, Box::new(Block(b, self.back.clone()))))
        }
    }

    #[test]
    fn heap_samples_round_trip_through_vec() {
        let s: Samples<u16> = vec![1, 2, 3].into();
        assert!(!s.is_lent());
        assert_eq!(&*s, &[1, 2, 3]);
        assert_eq!(s.clone(), s);
        assert_eq!(s.into_vec(), vec![1, 2, 3]);
        let empty: Samples<u8> = Vec::new().into();
        assert!(empty.is_empty());
    }

    #[test]
    fn large_heap_blocks_are_reused_for_the_next_frames() {
        let memory = SampleMemory::default();
        let first = memory.uninit::<u8>(3 << 20);
        assert!(first.iter().all(|&v| v == 0), "new memory is zeroed");
        let at = first.as_ptr() as usize;
        drop(first);
        let mut again = memory.uninit::<u16>(3 << 19);
        assert_eq!(again.as_ptr() as usize, at, "the block of the frame gone, for a frame of its size");
        again[7] = 0x1234;
        let other = memory.uninit::<u8>(3 << 20);
        assert_ne!(other.as_ptr() as usize, at, "a block in use is nobody else's");
        assert!(memory.uninit::<u8>(1 << 20).as_ptr() as usize != at);
        drop(again);
        assert_ne!(
            memory.uninit::<u8>(1 << 20).as_ptr() as usize,
            at,
            "less than half of a block: a new one"
        );
        let small = memory.uninit::<u8>(1000);
        assert!(!small.is_lent(), "small samples stay on the heap");
        // At most a few blocks are kept, and none once the memory is gone.
        let many: Vec<_> = (0..20).map(|_| memory.uninit::<u8>(1 << 20)).collect();
        drop(many);
        assert!(memory.0.spare.blocks().len() <= Spare::BLOCKS);
        let spare = Arc::downgrade(&memory.0.spare);
        let kept = memory.uninit::<u8>(1 << 20);
        drop(memory);
        assert!(spare.upgrade().is_none());
        drop(kept);
    }

    #[test]
    fn lent_samples_go_back_when_dropped() {
        let memory = SampleMemory::default();
        let heap = memory.uninit::<u16>(5);
        assert!(!heap.is_lent() && heap.iter().all(|&v| v == 0));
        let lender = Counting::default();
        let back = lender.back.clone();
        memory.clone().install(Arc::new(lender));
        let mut s = memory.uninit::<u16>(5);
        assert!(s.is_lent());
        s.copy_from_slice(&[9, 8, 7, 6, 5]);
        let copy = s.clone();
        assert!(!copy.is_lent() && copy == s);
        assert_eq!(s.into_vec(), vec![9, 8, 7, 6, 5]);
        assert_eq!(back.load(Ordering::SeqCst), 1, "dropped samples hand their block back");
        drop(memory.uninit::<u8>(0));
        assert_eq!(back.load(Ordering::SeqCst), 2);
    }
}

/// Sample types whose values are written little-endian: their bytes in memory on a
/// little-endian machine.
pub(crate) trait LittleEndian: Copy {
    const SIZE: usize;
    fn put_le(self, out: &mut [u8]);
}

macro_rules! little_endian {
    ($($t:ty),*) => {$(
        impl LittleEndian for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
little_endian!(u16, u32, u64, f32, f64);

/// `values` as little-endian bytes: borrowed as they are in memory where the machine is
/// little-endian (a bulk copy for the writer, not a loop over samples), converted elsewhere.
pub(crate) fn le_bytes<T: LittleEndian>(values: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: the types above are plain numbers with no padding bytes, so every byte of the
        // slice is initialized; u8 has alignment 1; the length is the slice's size in bytes.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        })
    } else {
        let mut out = vec![0u8; values.len() * T::SIZE];
        out.chunks_exact_mut(T::SIZE).zip(values).for_each(|(o, &v)| v.put_le(o));
        std::borrow::Cow::Owned(out)
    }
}

#[cfg(test)]
mod le_tests {
    use super::*;

    #[test]
    fn little_endian_bytes_are_each_values_to_le_bytes() {
        let words = [1u16, 0x1234, u16::MAX];
        let want: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(&*le_bytes(&words), &want[..]);
        let floats = [1.5f32, f32::NAN, -0.0];
        let want: Vec<u8> = floats.iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(&*le_bytes(&floats), &want[..]);
    }
}
