//! histopipe's GPU runtime, shared by every operation.
//!
//! One CUDA context and stream per process ([`Gpu`]), opened through cudarc's driver API loaded at
//! run time, so binaries start on machines without CUDA. Kernels are the CUDA C sources of
//! `kernels-common/`, embedded at build time ([`kernels`]) and compiled by NVRTC for the device's
//! own architecture on first use, with the result cached on disk ([`cache`]). Device buffers are
//! pooled by name and page-locked host memory is lent out ([`HostPool`]), so a stream of frames
//! allocates once and moves between the pipe and the device without staging copies. Every kernel
//! is queued the same way: its grid from [`launch`], its arguments through [`launch!`].
//!
//! Of frames this crate knows only their samples (lent memory, see `histopipe_frame::Samples`);
//! image operations live in `histopipe-ops`.

pub mod cache;
mod error;
mod gpu;
mod host;
pub mod kernels;
pub mod launch;
pub mod nvrtc;
pub mod testing;

pub use cudarc;
pub use error::GpuError;
pub use gpu::{device_count, modules_loaded, Buffer, Gpu, LaunchConfig};
pub use host::{HostPool, Lease};
