//! What every operation is: a CPU and a GPU implementation of one computation, giving the same
//! output ([`Op`]), and the error either may give ([`OpError`]). Which of the two runs is chosen
//! by the caller (histopipe-cli's dispatch module).

use std::fmt;

use histopipe_frame::Frame;
use histopipe_gpu::{Gpu, GpuError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpErrorKind {
    /// The frame or the parameters do not allow the operation (a usage or input error).
    Invalid,
    /// The GPU could not be used or failed.
    Gpu,
}

#[derive(Debug, Clone)]
pub struct OpError {
    pub kind: OpErrorKind,
    pub message: String,
}

impl OpError {
    pub fn invalid(message: impl Into<String>) -> OpError {
        OpError { kind: OpErrorKind::Invalid, message: message.into() }
    }
}

impl From<GpuError> for OpError {
    fn from(e: GpuError) -> Self {
        OpError { kind: OpErrorKind::Gpu, message: e.0 }
    }
}

impl From<histopipe_gpu::cudarc::driver::DriverError> for OpError {
    fn from(e: histopipe_gpu::cudarc::driver::DriverError) -> Self {
        GpuError::from(e).into()
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

/// An operation on one frame, with a CPU and a GPU implementation that give the same output.
pub trait Op {
    type Output;
    fn cpu(&self, frame: &Frame) -> Result<Self::Output, OpError>;
    /// Queues the operation on `gpu`'s stream; what it returns may still be in flight on the
    /// device until the stream is synchronized.
    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Self::Output, OpError>;
}
