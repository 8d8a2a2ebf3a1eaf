//! Launch plumbing shared by every operation's device plan: the shape of a grid ([`cover`],
//! [`blocks`], [`linear`]) and the queuing of one kernel with its arguments ([`launch!`], or
//! [`launch_dependent!`] for a kernel that may start while the one before it ends).
//!
//! [`launch!`]: crate::launch!
//! [`launch_dependent!`]: crate::launch_dependent!

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig};

/// The most blocks [`cover`] gives a grid-stride kernel: enough to fill any GPU many times over;
/// the kernel's loop covers the rest.
pub const MAX_BLOCKS: u32 = 1 << 20;

/// Blocks of `threads` threads for `items` items, one a thread: at least one block, at most
/// `max` (the kernel loops over the rest).
pub fn blocks(items: usize, threads: u32, max: u32) -> u32 {
    items.div_ceil(threads as usize).clamp(1, max as usize) as u32
}

/// A one-dimensional launch of `blocks` blocks of `threads` threads, no dynamic shared memory.
pub fn linear(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// A one-dimensional grid-stride launch over `items` items: [`blocks`] of `threads` up to
/// [`MAX_BLOCKS`].
pub fn cover(items: usize, threads: u32) -> LaunchConfig {
    linear(blocks(items, threads, MAX_BLOCKS), threads)
}

/// Queues kernel `name` of the embedded source `source` on `gpu`'s stream with the launch shape
/// `cfg` and the arguments in order (each a reference: `&value`, `&CudaSlice` or
/// `&mut CudaSlice`), giving `Result<(), GpuError>`:
///
/// ```ignore
/// unsafe { launch!(gpu, kernels::PAD, format!("pad_{}", T::KERNEL_SUFFIX), cfg; src, &w, &h, dst) }?;
/// ```
///
/// A launch is unsafe (the kernel trusts its arguments), and the expansion calls an `unsafe fn`:
/// it must stand in an `unsafe` block, whose comment says why the arguments match the kernel's
/// parameters and the buffers are long enough.
#[macro_export]
macro_rules! launch {
    ($gpu:expr, $source:expr, $name:expr, $cfg:expr; $($arg:expr),+ $(,)?) => {{
        let gpu: &$crate::Gpu = $gpu;
        let cfg: $crate::LaunchConfig = $cfg;
        match gpu.function(&$source, &$name) {
            Err(e) => Err(e),
            Ok(function) => {
                let mut args = gpu.stream().launch_builder(&function);
                $( $crate::cudarc::driver::PushKernelArg::arg(&mut args, $arg); )+
                args.launch(cfg).map(|_| ()).map_err($crate::GpuError::from)
            }
        }
    }};
}

/// Queues kernel `name` as [`launch!`] does, but as a programmatic dependent launch of the kernel
/// queued before it on the stream (compute capability 9.0 and up; below, an ordinary launch): the
/// GPU may start its blocks while the kernel before it ends, so the gap between two kernels is
/// not paid. The kernel must call `wait_for_prior_grid()` (histopipe.cuh) before it touches any
/// memory that the kernels before it use: that waits until they have completed and their writes
/// are visible. The arguments are references to `u32`, `i32`, `f32`, `u64` values or to
/// `CudaSlice`s.
///
/// [`launch!`]: crate::launch!
#[macro_export]
macro_rules! launch_dependent {
    ($gpu:expr, $source:expr, $name:expr, $cfg:expr; $($arg:expr),+ $(,)?) => {{
        let gpu: &$crate::Gpu = $gpu;
        gpu.function(&$source, &$name).and_then(|function| {
            let mut args = [$( $crate::launch::RawArg::raw(&*$arg, gpu.stream()) ),+];
            gpu.launch_dependent(&function, $cfg, &mut args)
        })
    }};
}

/// A kernel argument as [`launch_dependent!`] passes it: the bytes of the parameter's value in an
/// 8-byte slot (a 4-byte parameter is read from the slot's first 4).
///
/// [`launch_dependent!`]: crate::launch_dependent!
pub trait RawArg {
    fn raw(&self, stream: &CudaStream) -> [u8; 8];
}

/// The 4 bytes of a value at the start of a slot.
fn slot4(bytes: [u8; 4]) -> [u8; 8] {
    let mut slot = [0; 8];
    slot[..4].copy_from_slice(&bytes);
    slot
}

impl RawArg for u32 {
    fn raw(&self, _: &CudaStream) -> [u8; 8] {
        slot4(self.to_ne_bytes())
    }
}

impl RawArg for i32 {
    fn raw(&self, _: &CudaStream) -> [u8; 8] {
        slot4(self.to_ne_bytes())
    }
}

impl RawArg for f32 {
    fn raw(&self, _: &CudaStream) -> [u8; 8] {
        slot4(self.to_ne_bytes())
    }
}

impl RawArg for u64 {
    fn raw(&self, _: &CudaStream) -> [u8; 8] {
        self.to_ne_bytes()
    }
}

impl<T> RawArg for CudaSlice<T> {
    /// The buffer's device address (the Gpu tracks no events: nothing to record).
    fn raw(&self, stream: &CudaStream) -> [u8; 8] {
        let (ptr, _no_events) = self.device_ptr(stream);
        ptr.to_ne_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4-byte parameter's bytes lead its slot, as cuLaunchKernelEx reads them.
    #[test]
    fn four_byte_arguments_lead_their_slots() {
        assert_eq!(slot4(7u32.to_ne_bytes())[..4], 7u32.to_ne_bytes());
        assert_eq!(slot4((-2i32).to_ne_bytes())[..4], (-2i32).to_ne_bytes());
        assert_eq!(slot4([1, 2, 3, 4])[4..], [0; 4]);
    }

    #[test]
    fn grids_cover_at_least_one_block_and_at_most_the_cap() {
        assert_eq!(blocks(0, 256, MAX_BLOCKS), 1);
        assert_eq!(blocks(257, 256, MAX_BLOCKS), 2);
        assert_eq!(blocks(usize::MAX, 256, 4096), 4096);
        let cfg = cover(1 << 40, 256);
        assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((MAX_BLOCKS, 1, 1), (256, 1, 1), 0));
    }
}
