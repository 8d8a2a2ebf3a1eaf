use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;

use histopipe_frame::{Frame, SampleMemory};
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

/// Where the GPU stands, as far as the engine knows without waiting for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuStatus {
    /// Not asked for: `cpu`, or `auto` before a second frame.
    NotAsked,
    /// Being opened on a background thread (it may have finished; [`Engine::backend`] finds out).
    Opening,
    Ready,
    Unusable,
}

/// The GPU as the engine sees it: being opened on a background thread, open, or unusable.
enum GpuState {
    Opening(JoinHandle<Result<Gpu, GpuError>>),
    Ready(Box<Gpu>),
    Failed(GpuError),
}

/// Chooses the backend and runs operations on it; the one place where CPU and GPU are chosen.
///
/// Opening a GPU (driver, context, NVRTC) takes a few hundred milliseconds, far more than a small
/// frame takes on the CPU, so it happens on a background thread:
/// - `gpu`: opened as soon as the engine is made, overlapping the reading of the first frame,
///   which then waits for it.
/// - `auto`: opened once a second frame arrives, so a single frame costs exactly what it costs on
///   the CPU (loading the driver meanwhile would slow the CPU's work: it holds the process's
///   memory-map lock for tens of milliseconds). Frames are served by the CPU until the GPU is
///   ready and by the GPU from then on; both give identical output, so the switch cannot be seen.
///   Those frames are split over every core ([`crate::parallel`]); the opening thread is one more
///   runnable thread among the pool's, which the scheduler gives its share of a core (the pool's
///   threads sleep between frames, and the frame loop's own thread waits on them), so it is not
///   starved. The pool is started before the opening, whose loader lock would otherwise hold up
///   the creation of its threads.
/// - `cpu`: the driver is never touched.
///
/// With `gpu`, once the GPU is open, its page-locked host memory is installed in the engine's
/// [`SampleMemory`], so the frame reader sharing it reads the next frames there and they go to the
/// device without a staging copy. With `auto` that waits for [`Engine::lend_memory`]: until the
/// GPU has shown it is worth its frames, page-locking the frames the cores take would only cost
/// (each new block takes the driver milliseconds).
pub struct Engine {
    choice: BackendChoice,
    device: usize,
    gpu: Option<GpuState>,
    memory: SampleMemory,
}

impl Engine {
    /// An engine for `choice` on device `device`, lending the GPU's host memory to `memory`.
    pub fn new(choice: BackendChoice, device: usize, memory: SampleMemory) -> Engine {
        let mut engine = Engine { choice, device, gpu: None, memory };
        if choice == BackendChoice::Gpu {
            engine.start_opening();
        }
        engine
    }

    fn start_opening(&mut self) {
        let device = self.device;
        let opener = std::thread::Builder::new().name("histopipe-gpu-open".into());
        self.gpu = Some(match opener.spawn(move || Gpu::open(device)) {
            Ok(handle) => GpuState::Opening(handle),
            Err(e) => GpuState::Failed(GpuError(format!("cannot start a thread to open the GPU: {e}"))),
        });
    }

    /// Called before the work on frame `index` (from 1): with `auto`, a second frame means a
    /// stream, worth the GPU.
    pub fn begin_frame(&mut self, index: usize) {
        if self.choice == BackendChoice::Auto && index >= 2 && self.gpu.is_none() {
            crate::parallel::threads();
            self.start_opening();
        }
    }

    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// Whether the GPU is still being opened in the background (nothing has waited for it).
    pub fn is_opening(&self) -> bool {
        matches!(self.gpu, Some(GpuState::Opening(_)))
    }

    /// Whether the GPU is still being opened and [`Engine::backend`] would wait for it.
    pub fn still_opening(&self) -> bool {
        matches!(&self.gpu, Some(GpuState::Opening(handle)) if !handle.is_finished())
    }

    pub fn gpu_status(&self) -> GpuStatus {
        match &self.gpu {
            None => GpuStatus::NotAsked,
            Some(GpuState::Opening(_)) => GpuStatus::Opening,
            Some(GpuState::Ready(_)) => GpuStatus::Ready,
            Some(GpuState::Failed(_)) => GpuStatus::Unusable,
        }
    }

    /// The backend the next operation runs on: an error only for `--backend gpu` without a
    /// usable GPU.
    pub fn backend(&mut self) -> Result<Backend<'_>, OpError> {
        let auto = self.choice == BackendChoice::Auto;
        if matches!(&self.gpu, Some(GpuState::Opening(handle)) if auto && !handle.is_finished()) {
            return Ok(Backend::Cpu);
        }
        if let Some(GpuState::Opening(_)) = &self.gpu {
            if let Some(GpuState::Opening(handle)) = self.gpu.take() {
                self.gpu = Some(match handle.join() {
                    Ok(Ok(gpu)) => {
                        if !auto {
                            self.memory.install(Arc::new(gpu.host_memory().clone()));
                        }
                        GpuState::Ready(Box::new(gpu))
                    }
                    Ok(Err(e)) => GpuState::Failed(e),
                    Err(_) => GpuState::Failed(GpuError("opening the GPU panicked".into())),
                });
            }
        }
        match &self.gpu {
            Some(GpuState::Ready(gpu)) => Ok(Backend::Gpu(gpu)),
            Some(GpuState::Failed(e)) if !auto => {
                Err(OpError { kind: OpErrorKind::Gpu, message: format!("--backend gpu: {e}") })
            }
            // Not asked for yet (`cpu`, or `auto` before a second frame), or unusable with `auto`.
            _ => Ok(Backend::Cpu),
        }
    }

    /// Lends the open GPU's page-locked memory to the engine's [`SampleMemory`] (with `gpu`, done
    /// when it opens); nothing if the GPU is not open.
    pub fn lend_memory(&self) {
        if let Some(GpuState::Ready(gpu)) = &self.gpu {
            self.memory.install(Arc::new(gpu.host_memory().clone()));
        }
    }

    /// Runs `op` on `frame` on the chosen backend. On the GPU, every copy and kernel it queued
    /// is finished when this returns: the frame's page-locked samples may be reused at once.
    pub fn run<O: Op>(&mut self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        match self.backend()? {
            Backend::Cpu => op.cpu(frame),
            Backend::Gpu(gpu) => {
                let out = op.gpu(gpu, frame);
                gpu.synchronize()?;
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_usable() -> bool {
        let usable = Gpu::open(0).is_ok();
        assert!(usable || std::env::var("HISTOPIPE_REQUIRE_GPU").as_deref() != Ok("1"), "no GPU");
        usable
    }

    #[test]
    fn cpu_never_opens_and_auto_waits_for_a_second_frame() {
        let mut cpu = Engine::new(BackendChoice::Cpu, 0, SampleMemory::default());
        cpu.begin_frame(2);
        assert!(matches!(cpu.backend(), Ok(Backend::Cpu)) && cpu.gpu.is_none());
        let mut auto = Engine::new(BackendChoice::Auto, 0, SampleMemory::default());
        auto.begin_frame(1);
        assert!(matches!(auto.backend(), Ok(Backend::Cpu)) && auto.gpu.is_none());
        assert_eq!(auto.gpu_status(), GpuStatus::NotAsked);
        auto.begin_frame(2);
        assert!(auto.gpu.is_some(), "a second frame starts opening the GPU");
        while auto.is_opening() {
            std::thread::sleep(std::time::Duration::from_millis(5));
            let _ = auto.backend();
        }
        assert_ne!(auto.gpu_status(), GpuStatus::Opening, "asking the backend finds out");
    }

    /// The backend stays what it became: asking again neither loses an open GPU nor retries.
    #[test]
    fn the_chosen_backend_is_kept() {
        let memory = SampleMemory::default();
        let mut gpu = Engine::new(BackendChoice::Gpu, 0, memory.clone());
        if gpu_usable() {
            for _ in 0..3 {
                assert!(matches!(gpu.backend(), Ok(Backend::Gpu(_))));
            }
            // The reader sharing `memory` now reads into the GPU's page-locked blocks.
            let lent = memory.uninit::<u16>(1000);
            assert!(lent.is_lent() && histopipe_gpu::HostPool::page_locked(lent.as_ptr().cast(), 2000));
            let shared = SampleMemory::default();
            let mut auto = Engine::new(BackendChoice::Auto, 0, shared.clone());
            auto.begin_frame(2);
            while auto.is_opening() {
                std::thread::sleep(std::time::Duration::from_millis(5));
                let _ = auto.backend();
            }
            for _ in 0..3 {
                assert!(matches!(auto.backend(), Ok(Backend::Gpu(_))));
            }
            assert!(!shared.uninit::<u8>(100).is_lent(), "auto lends only when told");
            auto.lend_memory();
            assert!(shared.uninit::<u8>(100).is_lent());
        } else {
            for _ in 0..3 {
                let e = gpu.backend().err().map(|e| e.kind);
                assert_eq!(e, Some(OpErrorKind::Gpu), "--backend gpu without a GPU is an error, every time");
            }
        }
    }
}
