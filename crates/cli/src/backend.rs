//! The backends as the workers share them: the CPU, on which every worker runs operations on its
//! own thread, and the GPU, which takes one frame at a time on its one stream (the engine behind a
//! lock), opened once for the whole batch.
//!
//! With `auto`, each operation goes where it will be done first: to the GPU when its queue is
//! short enough, else to this worker's CPU core. Each backend's time per pixel is measured as the
//! frames go (per operation), and a frame goes to the CPU when the CPU's time for it is less than
//! the GPU's times the frames queued for the GPU, this one included. So a fast GPU takes almost
//! every frame, and when the copies to and from it make it slower than the cores together (a
//! cheap operation on large frames), the cores take the rest. Both give the same output.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use histopipe_frame::{Frame, SampleMemory};
use histopipe_ops::{BackendChoice, Engine, GpuStatus, Op, OpError};

/// The backend one operation runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Cpu,
    Gpu,
}

/// The measured nanoseconds per pixel of one operation on each backend.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Rates {
    cpu: Option<f64>,
    gpu: Option<f64>,
    /// Runs on the GPU so far; the first compiles or loads the kernels, and is not counted.
    gpu_runs: u32,
}

impl Rates {
    /// The weight of the newest time in the running average.
    const NEWEST: f64 = 0.25;

    fn record(&mut self, lane: Lane, ns_per_pixel: f64) {
        let slot = match lane {
            Lane::Cpu => &mut self.cpu,
            Lane::Gpu => {
                self.gpu_runs += 1;
                if self.gpu_runs == 1 {
                    return;
                }
                &mut self.gpu
            }
        };
        *slot = Some(slot.map_or(ns_per_pixel, |old| old + Rates::NEWEST * (ns_per_pixel - old)));
    }

    /// Where a frame goes when `queued` frames are queued for the GPU or on it: the GPU until
    /// both backends are measured, then whichever finishes it first.
    fn lane(&self, queued: usize) -> Lane {
        match (self.cpu, self.gpu) {
            (Some(cpu), Some(gpu)) if cpu < gpu * (queued + 1) as f64 => Lane::Cpu,
            _ => Lane::Gpu,
        }
    }
}

/// The backends of one run of a tool.
pub(crate) struct Backends {
    choice: BackendChoice,
    device: usize,
    memory: SampleMemory,
    /// Made on first use (see [`Backends::start`]); holding the lock is holding the GPU.
    engine: Mutex<Option<Engine>>,
    /// The engine's [`GpuStatus`] after its last use, for reading without the lock.
    gpu: AtomicU8,
    /// Workers waiting for the GPU or using it.
    queued: AtomicUsize,
    rates: Mutex<HashMap<&'static str, Rates>>,
}

impl Backends {
    /// Backends for `choice` on device `device`; the GPU lends its page-locked memory to
    /// `memory` once it is open.
    pub(crate) fn new(choice: BackendChoice, device: usize, memory: SampleMemory) -> Backends {
        Backends {
            choice,
            device,
            memory,
            engine: Mutex::new(None),
            gpu: AtomicU8::new(status_code(GpuStatus::NotAsked)),
            queued: AtomicUsize::new(0),
            rates: Mutex::new(HashMap::new()),
        }
    }

    fn engine(&self) -> MutexGuard<'_, Option<Engine>> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the engine now, which starts opening the GPU with `gpu`. Call it once every thread
    /// of the run is made: while the driver loads, the loader's lock holds up making threads.
    pub(crate) fn start(&self) {
        let mut engine = self.engine();
        self.with_engine(&mut engine, |_| ());
    }

    /// Runs `f` on the engine (made if need be) and notes where the GPU stands after it.
    fn with_engine<R>(&self, engine: &mut Option<Engine>, f: impl FnOnce(&mut Engine) -> R) -> R {
        let engine = engine.get_or_insert_with(|| Engine::new(self.choice, self.device, self.memory.clone()));
        let result = f(engine);
        self.gpu.store(status_code(engine.gpu_status()), Ordering::Release);
        result
    }

    /// Where the GPU stood after the engine's last use.
    fn status(&self) -> GpuStatus {
        match self.gpu.load(Ordering::Acquire) {
            0 => GpuStatus::NotAsked,
            1 => GpuStatus::Opening,
            2 => GpuStatus::Ready,
            _ => GpuStatus::Unusable,
        }
    }

    /// Called before frame `n` (from 1) is handed out: with `auto`, a second frame means a
    /// stream, worth opening the GPU for.
    pub(crate) fn begin_frame(&self, n: usize) {
        if self.choice == BackendChoice::Auto && n == 2 {
            let mut engine = self.engine();
            self.with_engine(&mut engine, |e| e.begin_frame(n));
        }
    }

    /// Whether the GPU is being opened, as far as the last use of the engine knows.
    pub(crate) fn is_opening(&self) -> bool {
        self.status() == GpuStatus::Opening
    }

    /// Runs `op` on `frame` on the backend chosen for it.
    pub(crate) fn run<O: Op>(&self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        match self.choice {
            BackendChoice::Cpu => op.cpu(frame),
            BackendChoice::Gpu => {
                let mut engine = self.engine();
                self.on_gpu(&mut engine, op, frame)
            }
            BackendChoice::Auto => self.auto(op, frame),
        }
    }

    /// Runs `op` on the engine's backend: the GPU with `gpu` (or an error) and with `auto` once
    /// it is open.
    fn on_gpu<O: Op>(
        &self,
        engine: &mut Option<Engine>,
        op: &O,
        frame: &Frame,
    ) -> Result<O::Output, OpError> {
        self.with_engine(engine, |e| e.run(op, frame))
    }

    fn auto<O: Op>(&self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        if self.status() == GpuStatus::Opening {
            // Whoever finds the GPU open first takes note; nobody waits for it.
            if let Ok(mut engine) = self.engine.try_lock() {
                self.with_engine(&mut engine, |e| drop(e.backend()));
            }
        }
        let key = std::any::type_name::<O>();
        let lane = match self.status() {
            GpuStatus::Ready => {
                self.rates().entry(key).or_default().lane(self.queued.load(Ordering::Acquire))
            }
            GpuStatus::Unusable => return op.cpu(frame),
            // Frames the CPU serves while the GPU opens give the CPU's time to compare with.
            GpuStatus::NotAsked | GpuStatus::Opening => Lane::Cpu,
        };
        let (out, start) = match lane {
            Lane::Cpu => {
                let start = Instant::now();
                (op.cpu(frame), start)
            }
            Lane::Gpu => {
                self.queued.fetch_add(1, Ordering::AcqRel);
                let mut engine = self.engine();
                let start = Instant::now();
                let out = self.on_gpu(&mut engine, op, frame);
                drop(engine);
                self.queued.fetch_sub(1, Ordering::AcqRel);
                (out, start)
            }
        };
        if out.is_ok() {
            let ns = start.elapsed().as_nanos() as f64 / frame.pixel_count().max(1) as f64;
            self.rates().entry(key).or_default().record(lane, ns);
        }
        out
    }

    fn rates(&self) -> MutexGuard<'_, HashMap<&'static str, Rates>> {
        self.rates.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn status_code(status: GpuStatus) -> u8 {
    match status {
        GpuStatus::NotAsked => 0,
        GpuStatus::Opening => 1,
        GpuStatus::Ready => 2,
        GpuStatus::Unusable => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_goes_where_it_is_done_first() {
        let mut r = Rates::default();
        assert_eq!(r.lane(5), Lane::Gpu, "unmeasured: the GPU");
        r.record(Lane::Cpu, 10.0);
        r.record(Lane::Gpu, 500.0);
        assert_eq!(r.gpu, None, "the GPU's first run (kernels compiled) is not counted");
        assert_eq!(r.lane(0), Lane::Gpu);
        r.record(Lane::Gpu, 2.0);
        assert_eq!(r.lane(0), Lane::Gpu, "a fast GPU takes the frame");
        assert_eq!(r.lane(3), Lane::Gpu, "even with a short queue");
        assert_eq!(r.lane(4), Lane::Gpu, "10 < 2 x 5 is false: a tie goes to the GPU");
        assert_eq!(r.lane(5), Lane::Cpu, "a long queue sends it to the CPU");
        r.record(Lane::Cpu, 30.0);
        assert_eq!(r.cpu, Some(15.0), "a running average");
    }

    #[test]
    fn cpu_never_opens_the_gpu() {
        let b = Backends::new(BackendChoice::Cpu, 0, SampleMemory::default());
        b.start();
        b.begin_frame(2);
        assert!(!b.is_opening());
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let out = b.run(&histopipe_ops::equalize::Equalize, &frame).unwrap();
        assert_eq!(out.pixels, vec![0u8, 255].into());
        assert_eq!(b.status(), GpuStatus::NotAsked);
    }
}
