//! Launch plumbing shared by every operation's device plan: the shape of a grid ([`cover`],
//! [`blocks`], [`linear`]) and the queuing of one kernel with its arguments ([`launch!`]).
//!
//! [`launch!`]: crate::launch!

use cudarc::driver::LaunchConfig;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_at_least_one_block_and_at_most_the_cap() {
        assert_eq!(blocks(0, 256, MAX_BLOCKS), 1);
        assert_eq!(blocks(257, 256, MAX_BLOCKS), 2);
        assert_eq!(blocks(usize::MAX, 256, 4096), 4096);
        let cfg = cover(1 << 40, 256);
        assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((MAX_BLOCKS, 1, 1), (256, 1, 1), 0));
    }
}
