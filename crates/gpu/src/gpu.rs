use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use histopipe_frame::Samples;

pub use cudarc::driver::LaunchConfig;

use crate::host::{HostPool, Lease};
use crate::kernels::Source;
use crate::{cache, nvrtc, GpuError};

/// How many CUDA devices this machine has: 0 without a driver or a usable device.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// Whether libcuda can be loaded (looked up once). cudarc panics on the first driver call when it
/// cannot, so nothing touches the driver before this says yes.
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: it only tries to load the library, and reports whether it could.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

type Pool = HashMap<(&'static str, TypeId), Box<dyn Any + Send>>;

/// Kernel modules this process has loaded (compiled, or read from the disk cache), on every GPU.
static MODULES_LOADED: AtomicU64 = AtomicU64::new(0);

/// How many kernel modules this process has loaded so far, on every GPU: a frame during which the
/// count grew paid for a first use (a compile of seconds, or a load of milliseconds), which a
/// frame after it will not pay (the GPU service's tools leave such a run out of their times).
pub fn modules_loaded() -> u64 {
    MODULES_LOADED.load(Ordering::Relaxed)
}

/// One GPU, as a process uses it: a context, one stream, compiled kernels, pooled buffers and
/// page-locked host memory.
/// It may be opened on one thread and used on another (see histopipe-cli's dispatch module), but is used
/// by one thread at a time.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: i32,
    nvrtc_version: (i32, i32),
    name: String,
    modules: RefCell<HashMap<&'static str, Arc<CudaModule>>>,
    device_pool: RefCell<Pool>,
    host: HostPool,
    /// Staging blocks for heap data, one per buffer slot: only that slot's copies, queued in order
    /// on the one stream, use it.
    staging: RefCell<HashMap<&'static str, Lease>>,
}

impl Gpu {
    /// Opens device `ordinal`, or says why it cannot be used (no driver, no device, no NVRTC).
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        if !driver_present() {
            return Err(GpuError("no CUDA driver (libcuda.so.1 not found)".into()));
        }
        let count =
            CudaContext::device_count().map_err(|e| GpuError(format!("no usable CUDA device ({e})")))?;
        if ordinal >= count.max(0) as usize {
            return Err(GpuError(format!("no CUDA device {ordinal} (this machine has {count})")));
        }
        let nvrtc_version = nvrtc::version()?;
        let ctx = CudaContext::new(ordinal)?;
        // One stream: cudarc's cross-stream event tracking would only add work.
        // SAFETY: the context is new and this Gpu's one stream is made after it, so no buffer
        // is yet used on two streams (what the tracking would have ordered).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let (major, minor) = ctx.compute_capability()?;
        let name = ctx.name()?;
        Ok(Gpu {
            stream,
            arch: major * 10 + minor,
            nvrtc_version,
            name,
            modules: RefCell::default(),
            device_pool: RefCell::default(),
            host: HostPool::new(ctx.clone()),
            staging: RefCell::default(),
            ctx,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability as one number, e.g. 90 for sm_90.
    pub fn arch(&self) -> i32 {
        self.arch
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The process's one stream: every operation queues its work here.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A device attribute that is a positive count or size (SMs, bytes of shared memory), or
    /// `None` where the driver gives none: the launch shapes' reading of the GPU.
    pub fn attribute(&self, attribute: cudarc::driver::sys::CUdevice_attribute) -> Option<usize> {
        self.stream.context().attribute(attribute).ok().filter(|&n| n > 0).map(|n| n as usize)
    }

    /// Queues `function` on the stream with the launch shape `cfg` and the argument slots `args`
    /// (see [`crate::launch::RawArg`]) as a programmatic dependent launch of the kernel before it
    /// (compute capability 9.0 and up; below, an ordinary launch). Call it through
    /// [`crate::launch_dependent!`].
    ///
    /// # Safety
    ///
    /// As for any launch: the slots must be the kernel's parameters, in order, and the buffers
    /// long enough for what the kernel reads and writes; and the kernel must wait for the grid
    /// before it (`wait_for_prior_grid()` in histopipe.cuh) before it touches their memory.
    pub unsafe fn launch_dependent(
        &self,
        function: &CudaFunction,
        cfg: LaunchConfig,
        args: &mut [[u8; 8]],
    ) -> Result<(), GpuError> {
        use cudarc::driver::sys;
        self.ctx.bind_to_thread()?;
        let mut params: Vec<*mut std::ffi::c_void> = args.iter_mut().map(|a| a.as_mut_ptr().cast()).collect();
        // SAFETY: a launch attribute is plain data (an id and a union of integers).
        let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(self.arch >= 90),
        };
        // SAFETY: the configuration and the parameters' slots outlive the call (the driver copies
        // them); the caller vouches for the parameters.
        unsafe {
            sys::cuLaunchKernelEx(&config, function.cu_function(), params.as_mut_ptr(), std::ptr::null_mut())
        }
        .result()?;
        Ok(())
    }

    /// Kernel `name` of `source`, compiling (or loading from the disk cache) on first use.
    pub fn function(&self, source: &Source, name: &str) -> Result<CudaFunction, GpuError> {
        let module = self.module(source)?;
        module.load_function(name).map_err(|e| GpuError(format!("kernel {name} not in {}: {e}", source.name)))
    }

    fn module(&self, source: &Source) -> Result<Arc<CudaModule>, GpuError> {
        if let Some(m) = self.modules.borrow().get(source.name) {
            return Ok(m.clone());
        }
        let path = cache::path(source, self.arch, self.nvrtc_version);
        let cached = cache::find(source, self.arch, self.nvrtc_version)
            .and_then(|cubin| self.ctx.load_module(Ptx::from_binary(cubin)).ok());
        let module = match cached {
            Some(m) => m,
            None => {
                let cubin = nvrtc::compile(source, self.arch)?;
                if let Some(p) = &path {
                    cache::store(p, &cubin);
                }
                self.ctx.load_module(Ptx::from_binary(cubin))?
            }
        };
        self.modules.borrow_mut().insert(source.name, module.clone());
        MODULES_LOADED.fetch_add(1, Ordering::Relaxed);
        Ok(module)
    }

    /// A device buffer of at least `len` elements from the pool slot `slot`; it returns to the pool
    /// when dropped, so the next frame reuses it. Its contents are whatever was there.
    pub fn buffer<T: DeviceRepr + Send + 'static>(
        &self,
        slot: &'static str,
        len: usize,
    ) -> Result<Buffer<'_, T>, GpuError> {
        let key = (slot, TypeId::of::<T>());
        // A pooled buffer too small is freed here, before its successor is allocated.
        let pooled = self
            .device_pool
            .borrow_mut()
            .remove(&key)
            .and_then(|b| b.downcast::<CudaSlice<T>>().ok())
            .filter(|s| s.len() >= len);
        let slice = match pooled {
            Some(s) => *s,
            // SAFETY: the buffer is uninitialised device memory; every kernel writes the part of a
            // pooled buffer it reads later (the sanitizer's initcheck runs on every tool).
            None => unsafe { self.stream.alloc::<T>(len.max(1)) }.map_err(|e| {
                let bytes = len.max(1) as u128 * std::mem::size_of::<T>() as u128;
                GpuError(format!("cannot allocate {bytes} bytes of GPU memory ({slot}): {e}"))
            })?,
        };
        Ok(Buffer { gpu: self, slot, slice: ManuallyDrop::new(slice) })
    }

    /// The page-locked host memory of this GPU: lend it to the frame reader (see
    /// `histopipe_frame::SampleMemory`) and frames need no staging copy.
    pub fn host_memory(&self) -> &HostPool {
        &self.host
    }

    /// Queues a copy of `data` to the device, into pool slot `slot`. Data in this GPU's page-locked
    /// memory is copied directly, and must not change until the stream has been synchronized
    /// (histopipe-cli's dispatch synchronizes after every operation); other data goes through a
    /// staging block.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + 'static>(
        &self,
        slot: &'static str,
        data: &[T],
    ) -> Result<Buffer<'_, T>, GpuError> {
        let span = histopipe_trace::span_here("gpu.upload");
        let buf = self.queue_upload(slot, data);
        span.end();
        buf
    }

    fn queue_upload<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + 'static>(
        &self,
        slot: &'static str,
        data: &[T],
    ) -> Result<Buffer<'_, T>, GpuError> {
        let mut buf = self.buffer::<T>(slot, data.len())?;
        if data.is_empty() {
            return Ok(buf);
        }
        if HostPool::page_locked(data.as_ptr().cast(), std::mem::size_of_val(data)) {
            self.stream.memcpy_htod(data, &mut buf.slice_mut(..data.len()))?;
            return Ok(buf);
        }
        self.with_staging(slot, data.len(), |staging, stream| {
            staging_copy(staging, data);
            stream.memcpy_htod(staging, &mut buf.slice_mut(..data.len()))
        })?;
        Ok(buf)
    }

    /// Copies the first `out.len()` elements of `buf` into `out` (waits for the stream).
    pub fn download<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + 'static>(
        &self,
        buf: &Buffer<'_, T>,
        out: &mut [T],
    ) -> Result<(), GpuError> {
        let span = histopipe_trace::span_here("gpu.download");
        let done = self.copy_back(buf, out);
        span.end();
        done
    }

    fn copy_back<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + 'static>(
        &self,
        buf: &Buffer<'_, T>,
        out: &mut [T],
    ) -> Result<(), GpuError> {
        if out.is_empty() {
            return Ok(());
        }
        if HostPool::page_locked(out.as_ptr().cast(), std::mem::size_of_val(out)) {
            self.stream.memcpy_dtoh(&buf.slice(..out.len()), out)?;
            return self.synchronize();
        }
        self.with_staging(buf.slot, out.len(), |staging, stream| {
            stream.memcpy_dtoh(&buf.slice(..out.len()), staging)?;
            stream.synchronize()?;
            staging_copy(out, staging);
            Ok(())
        })
    }

    /// The first `len` elements of `buf`, as a new vector (waits for the stream).
    pub fn download_vec<T: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static>(
        &self,
        buf: &Buffer<'_, T>,
        len: usize,
    ) -> Result<Vec<T>, GpuError> {
        let span = histopipe_trace::span_here("gpu.download");
        let mut out = vec![T::default(); len];
        let done = self.copy_back(buf, &mut out);
        span.end();
        done.map(|()| out)
    }

    /// The first `len` elements of `buf` as frame samples in page-locked memory, copied there
    /// directly (waits for the stream); on the heap if no page-locked memory can be had.
    pub fn download_samples<T: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static>(
        &self,
        buf: &Buffer<'_, T>,
        len: usize,
    ) -> Result<Samples<T>, GpuError> {
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            return Err(GpuError(format!("{len} samples do not fit in memory")));
        };
        let Ok(mut lease) = self.host.take(bytes) else {
            return Ok(self.download_vec(buf, len)?.into());
        };
        if len > 0 {
            let span = histopipe_trace::span_here("gpu.download");
            // SAFETY: the block holds `bytes` bytes; T is a plain sample type.
            let out = unsafe { lease.slice_mut::<T>(len) };
            self.stream.memcpy_dtoh(&buf.slice(..len), out)?;
            self.synchronize()?;
            span.end();
        }
        let ptr = lease.ptr().cast::<T>();
        // SAFETY: page-aligned, `len` values written by the copy just waited for, and the lease
        // (kept by the samples) makes the block theirs alone.
        Ok(unsafe { Samples::lent(ptr, len, Box::new(lease)) })
    }

    /// Runs `f` on the first `len` elements of slot `slot`'s staging block (made or grown here).
    fn with_staging<T: Copy, R>(
        &self,
        slot: &'static str,
        len: usize,
        f: impl FnOnce(&mut [T], &Arc<CudaStream>) -> Result<R, cudarc::driver::DriverError>,
    ) -> Result<R, GpuError> {
        let bytes = len * std::mem::size_of::<T>();
        let mut staging = self.staging.borrow_mut();
        if staging.get(slot).is_some_and(|l| l.bytes() < bytes) {
            // The old block may still be read by a queued copy: wait before it goes back.
            staging.remove(slot);
            self.synchronize()?;
        }
        let lease = match staging.entry(slot) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.host.take(bytes)?),
        };
        // SAFETY: the block holds `bytes` bytes; T is a plain sample or counter type.
        let block = unsafe { lease.slice_mut::<T>(len) };
        Ok(f(block, &self.stream)?)
    }

    /// Waits until all queued work is done and reports any error it raised.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        Ok(self.stream.synchronize()?)
    }
}

/// Copies between a frame and its pinned staging buffer. One core copies about 10 GB/s, so a 4K
/// frame would take most of a frame period of a fast stream; large copies are split over a few
/// threads, which the memory system serves in parallel.
fn staging_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    const PIECE_BYTES: usize = 1 << 21;
    let bytes = std::mem::size_of_val(src);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8).min(bytes / PIECE_BYTES);
    if threads <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let per = src.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(per).zip(src.chunks(per)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}

/// A pooled device buffer (see [`Gpu::buffer`]); dereferences to the `CudaSlice`, which may be
/// longer than asked for.
pub struct Buffer<'g, T: DeviceRepr + Send + 'static> {
    gpu: &'g Gpu,
    slot: &'static str,
    /// Taken out only in `drop`, to go back to the pool.
    slice: ManuallyDrop<CudaSlice<T>>,
}

impl<T: DeviceRepr + Send + 'static> Deref for Buffer<'_, T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T: DeviceRepr + Send + 'static> DerefMut for Buffer<'_, T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T: DeviceRepr + Send + 'static> Drop for Buffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `slice` is not used again after this.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        self.gpu.device_pool.borrow_mut().insert((self.slot, TypeId::of::<T>()), Box::new(slice));
    }
}
