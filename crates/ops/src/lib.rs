//! histopipe's operations. Each is one module holding its parameters, its CPU implementation and
//! its GPU implementation side by side, the two giving bit-identical output; [`Engine::run`] is the
//! one place that picks which runs.
//!
//! The CPU implementation is the reference: integer arithmetic, or float arithmetic rounded exactly
//! as the GPU kernel rounds it (the kernels are compiled with `--fmad=false`). It splits large
//! frames over the cores ([`parallel`]), with the same output whatever the number of threads.

pub mod bins;
pub mod clahe;
pub mod colhist;
pub mod edges;
mod engine;
pub mod equalize;
pub mod histogram;
pub mod hough;
mod lut;
pub mod pad;
pub mod parallel;
pub mod rotate;
mod sample;

pub use engine::{Backend, BackendChoice, Engine, GpuStatus, Op, OpError, OpErrorKind};
pub use histopipe_gpu::{device_count, testing, Gpu, GpuError};
pub use sample::Sample;
