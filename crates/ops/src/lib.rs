//! histopipe's operations. Each is one module holding its parameters, its CPU implementation and
//! its GPU implementation side by side, the two giving bit-identical output ([`Op`]); which of
//! the two runs is chosen by the caller (histopipe-cli's dispatch module, the one place).
//!
//! The CPU implementation is the reference: integer arithmetic, or float arithmetic rounded exactly
//! as the GPU kernel rounds it (the kernels are compiled with `--fmad=false`). It splits large
//! frames over the cores ([`parallel`]), with the same output whatever the number of threads.

pub mod angles;
pub mod bins;
pub mod clahe;
pub mod colhist;
pub mod deskew;
pub mod edges;
pub mod equalize;
pub mod histogram;
pub mod hough;
pub mod iradon;
pub mod lightness;
mod lut;
pub mod mask;
pub mod matching;
mod op;
pub mod pad;
pub mod parallel;
pub mod radon;
pub mod range;
pub mod rotate;
mod sample;
pub mod stretch;
pub mod threshold;

pub use histopipe_gpu::{device_count, modules_loaded, testing, Gpu, GpuError};
pub use op::{GpuPart, Op, OpError, OpErrorKind, ParamValue, Piece, Work};
pub use sample::{canonical_nan, Element, Fill, Fills, Sample, CANONICAL_NAN};
