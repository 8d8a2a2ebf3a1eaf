use std::fmt;

use histopipe_frame::Frame;
use histopipe_gpu::{Gpu, GpuError};

/// Which backend a tool was asked to use (`--backend`, or `HISTOPIPE_BACKEND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when one is usable, else the CPU.
    Auto,
    Cpu,
    Gpu,
}

impl BackendChoice {
    pub fn parse(text: &str) -> Result<BackendChoice, String> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "gpu" => Ok(BackendChoice::Gpu),
            _ => Err(format!("unknown backend '{text}' (auto, cpu or gpu)")),
        }
    }
}

/// The backend an operation runs on.
pub enum Backend<'a> {
    Cpu,
    Gpu(&'a Gpu),
}

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
    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Self::Output, OpError>;
}

/// Chooses the backend once and runs operations on it. The GPU is opened on first use, so a tool
/// that never needs it (or runs with `--backend cpu`) never touches the CUDA driver.
pub struct Engine {
    choice: BackendChoice,
    device: usize,
    gpu: Option<Result<Gpu, GpuError>>,
}

impl Engine {
    pub fn new(choice: BackendChoice, device: usize) -> Engine {
        Engine { choice, device, gpu: None }
    }

    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// The backend operations run on: an error only for `--backend gpu` without a usable GPU.
    pub fn backend(&mut self) -> Result<Backend<'_>, OpError> {
        if self.choice == BackendChoice::Cpu {
            return Ok(Backend::Cpu);
        }
        let device = self.device;
        match self.gpu.get_or_insert_with(|| Gpu::open(device)) {
            Ok(gpu) => Ok(Backend::Gpu(gpu)),
            Err(_) if self.choice == BackendChoice::Auto => Ok(Backend::Cpu),
            Err(e) => Err(OpError { kind: OpErrorKind::Gpu, message: format!("--backend gpu: {e}") }),
        }
    }

    /// Runs `op` on `frame` on the chosen backend.
    pub fn run<O: Op>(&mut self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        match self.backend()? {
            Backend::Cpu => op.cpu(frame),
            Backend::Gpu(gpu) => op.gpu(gpu, frame),
        }
    }
}
