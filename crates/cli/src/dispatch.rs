//! The one place where an operation's backend is chosen: `--backend`'s choice, the `--device`
//! GPUs and their opening, and the schedule that deals frames between them.
//!
//! The backends as the workers share them: the CPU, on which every worker runs operations on the
//! shared thread pool, and the GPUs, each of which takes one frame at a time on its one stream
//! (behind a lock), opened once for the whole batch on a background thread: opening a GPU
//! (driver, context, NVRTC) takes a few hundred milliseconds, far more than a small frame takes
//! on the CPU. With `cpu` the driver is never touched.
//!
//! With `gpu`, a frame goes to the open GPU with the fewest frames queued (the first of equals),
//! the first GPUs to open taking the frames while the others open; the stream's first frame is
//! not output before every GPU named has opened, so one that cannot be used fails the run before
//! any output. With `auto`, each frame goes where it will be done first. Each backend
//! is a queue: a GPU does one frame at a time, and the cores share the frames they are given.
//! Each one's time per pixel for each operation is measured as the frames go: on a GPU, the time
//! a frame holds it (an operation's host part, done after it is let go, is not counted); on the
//! CPU, a frame's time divided by the frames the cores were sharing meanwhile (so
//! the time the cores take per frame when busy, not one frame's wait among many). A frame goes
//! to the backend whose time for it and the frames it holds is least, a GPU on a tie. So fast
//! GPUs take almost every frame, and when the copies to and from them make them slower than the
//! cores (a cheap operation on large frames), the cores take most. All give the same output.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use histopipe_frame::{Frame, SampleMemory};
use histopipe_ops::parallel::FrameWork;
use histopipe_ops::{Gpu, GpuError, GpuPart, Op, OpError};

crate::words! {
    /// Which backend a tool was asked to use (`--backend`, or `HISTOPIPE_BACKEND`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum BackendChoice {
        /// Each frame where it is done first, among the CPU and the GPUs once a stream is long
        /// enough to open them.
        Auto = "auto",
        Cpu = "cpu",
        Gpu = "gpu",
    }
}

impl BackendChoice {
    pub fn parse(text: &str) -> Result<BackendChoice, String> {
        BackendChoice::parse_word(text, "backend")
    }
}

/// The GPUs `--device` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    /// These device numbers, in this order. One may be listed twice: two contexts on one GPU,
    /// each with its own stream (which tests the dealing of frames on a machine with one).
    List(Vec<usize>),
    /// Every device the machine has (as `CUDA_VISIBLE_DEVICES` shows them).
    All,
}

impl Devices {
    /// More would be a typing error: no host has as many GPUs.
    const MOST: usize = 64;

    pub fn parse(text: &str) -> Result<Devices, String> {
        if text == "all" {
            return Ok(Devices::All);
        }
        let bad = |part: &str| {
            format!("bad device '{part}' in '{text}' (a CUDA device number, a list such as 0,1, or all)")
        };
        let list = text
            .split(',')
            .map(|part| part.trim().parse::<usize>().map_err(|_| bad(part)))
            .collect::<Result<Vec<usize>, String>>()?;
        if list.len() > Devices::MOST {
            return Err(format!("{} devices listed: at most {}", list.len(), Devices::MOST));
        }
        Ok(Devices::List(list))
    }

    /// The most GPUs this may name.
    pub fn most(&self) -> usize {
        match self {
            Devices::List(list) => list.len(),
            Devices::All => 8,
        }
    }
}

/// The backend one operation runs on: the CPU, or the GPU of that index among the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    Cpu,
    Gpu(usize),
}

/// The measured nanoseconds per pixel of one operation on one backend.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Rate {
    ns: Option<f64>,
    /// Runs so far; a GPU's first compiles or loads the kernels, and is not counted.
    runs: u32,
}

impl Rate {
    /// The weight of the newest time in the running average.
    const NEWEST: f64 = 0.25;

    pub(crate) fn record(&mut self, lane: Lane, ns_per_pixel: f64) {
        self.runs += 1;
        if matches!(lane, Lane::Gpu(_)) && self.runs == 1 {
            return;
        }
        self.ns = Some(self.ns.map_or(ns_per_pixel, |old| old + Rate::NEWEST * (ns_per_pixel - old)));
    }

    pub(crate) fn is_measured(&self) -> bool {
        self.ns.is_some()
    }
}

/// What `auto` weighs for one backend: its rate, and the frames it holds (queued on a GPU,
/// shared by the cores).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Load {
    pub lane: Lane,
    pub rate: Rate,
    pub holds: usize,
}

impl Load {
    /// When a frame given now would be done, in nanoseconds per pixel; unmeasured: never.
    fn finish(&self) -> f64 {
        self.rate.ns.map_or(f64::INFINITY, |ns| ns * (self.holds + 1) as f64)
    }
}

/// How much faster than all the cores a GPU must be at an operation to take its frames: a GPU's
/// time includes the copies to and from it, but not what they cost the host (its memory bandwidth,
/// which the cores' work on the same frames needs too, and a core per copy), so a GPU no faster
/// than the cores only slows them down.
const WORTH: f64 = 2.0;

/// Where a frame goes, given the CPU's load and the open GPUs': an idle GPU not measured yet (to
/// measure it, one frame at a time: its first run compiles or loads the kernels, which may take
/// seconds, and no other frame waits behind that), else the backend done first with it among the
/// CPU and the measured GPUs worth it (the first GPU of equals, a GPU before the CPU).
pub(crate) fn choose(cpu: Load, gpus: &[Load]) -> Lane {
    if let Some(new) = gpus.iter().find(|l| l.rate.ns.is_none() && l.holds == 0) {
        return new.lane;
    }
    let best =
        gpus.iter().filter(|g| g.rate.ns.is_some() && worth(cpu, g)).fold(
            None::<Load>,
            |best, l| match best {
                Some(b) if b.finish() <= l.finish() => Some(b),
                _ => Some(*l),
            },
        );
    match best {
        Some(gpu) if gpu.finish() <= cpu.finish() => gpu.lane,
        _ => Lane::Cpu,
    }
}

/// Pixel visits ([`Op::visits_per_pixel`] times the pixels) past which one frame is worth a GPU's
/// opening (about 0.4 s with its kernels compiled): 2^29 visits of a sample with bilinear taps
/// take the 16 cores of the GPU machine about that long (`radon`, 180 angles of a 1920 x 1080
/// frame), and a 2-core machine several times longer.
const HEAVY_VISITS: f64 = (1u64 << 29) as f64;

pub(crate) fn is_heavy(visits: f64) -> bool {
    visits >= HEAVY_VISITS
}

/// Whether `gpu` is worth giving frames to (see [`WORTH`]); unmeasured, it is.
fn worth(cpu: Load, gpu: &Load) -> bool {
    match (cpu.rate.ns, gpu.rate.ns) {
        (Some(c), Some(g)) => g * WORTH <= c,
        _ => true,
    }
}

/// Whether a slow frame that [`choose`] gave the cores, which `sharing` frames are on already,
/// waits for a GPU (see [`Backends::waits_for_a_gpu`]): while the GPUs are `opening` (or not asked
/// for yet) or every open one is still being measured (its first frames, which may compile the
/// kernels for seconds, are not counted), when two frames or more are on the cores, or any if the
/// frame is `heavy` ([`is_heavy`]: the GPUs were opened for it). Once a GPU is measured,
/// [`choose`] has weighed it: the cores are where the frame is done first.
fn waits(sharing: usize, opening: bool, open: &[Load], heavy: bool) -> bool {
    let measuring = !open.is_empty() && open.iter().all(|l| l.rate.ns.is_none());
    let measured = open.iter().any(|l| l.rate.ns.is_some());
    (heavy || sharing >= 2) && (opening || measuring) && !measured
}

/// Where a GPU stands, as far as its lane knows without waiting for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum GpuStatus {
    /// Not asked for: `auto` before the stream is long enough.
    NotAsked,
    /// Being opened on a background thread (it may have finished; [`GpuState::settle`] finds out).
    Opening,
    Ready,
    Unusable,
}

impl GpuStatus {
    const ALL: [GpuStatus; 4] =
        [GpuStatus::NotAsked, GpuStatus::Opening, GpuStatus::Ready, GpuStatus::Unusable];
}

/// A GPU: not asked for, being opened on a background thread, open, or unusable.
enum GpuState {
    NotAsked,
    Opening(JoinHandle<Result<Gpu, GpuError>>),
    Ready(Box<Gpu>),
    Failed(GpuError),
}

impl GpuState {
    fn status(&self) -> GpuStatus {
        match self {
            GpuState::NotAsked => GpuStatus::NotAsked,
            GpuState::Opening(_) => GpuStatus::Opening,
            GpuState::Ready(_) => GpuStatus::Ready,
            GpuState::Failed(_) => GpuStatus::Unusable,
        }
    }

    /// Starts opening device `device` on a background thread, if it has not been asked for.
    fn start_opening(&mut self, device: usize) {
        if !matches!(self, GpuState::NotAsked) {
            return;
        }
        let opener = std::thread::Builder::new().name("histopipe-gpu-open".into());
        *self = match opener.spawn(move || Gpu::open(device)) {
            Ok(handle) => GpuState::Opening(handle),
            Err(e) => GpuState::Failed(GpuError(format!("cannot start a thread to open the GPU: {e}"))),
        };
    }

    /// Takes the opening's result once it is there: waiting for it if `wait`, else only if the
    /// opening thread has finished.
    fn settle(&mut self, wait: bool) {
        if !matches!(self, GpuState::Opening(handle) if wait || handle.is_finished()) {
            return;
        }
        if let GpuState::Opening(handle) = std::mem::replace(self, GpuState::NotAsked) {
            *self = match handle.join() {
                Ok(Ok(gpu)) => GpuState::Ready(Box::new(gpu)),
                Ok(Err(e)) => GpuState::Failed(e),
                Err(_) => GpuState::Failed(GpuError("opening the GPU panicked".into())),
            };
        }
    }
}

/// One GPU of the run: its state (holding the lock is holding the GPU), its [`GpuStatus`] as of
/// the lock's last release (read without the lock, which a worker holds for a whole frame), and
/// the workers waiting for it or using it.
struct GpuLane {
    device: usize,
    state: Mutex<GpuState>,
    status: AtomicU8,
    queued: AtomicUsize,
    /// Operations run on it.
    runs: AtomicU64,
}

/// A lane's state, locked; its status is published when the lock is released, so that status is
/// never out of step with the state for longer than one holder has it.
struct Held<'a> {
    lane: &'a GpuLane,
    state: MutexGuard<'a, GpuState>,
}

impl Deref for Held<'_> {
    type Target = GpuState;
    fn deref(&self) -> &GpuState {
        &self.state
    }
}

impl DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut GpuState {
        &mut self.state
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.lane.status.store(self.state.status() as u8, Ordering::Release);
    }
}

impl GpuLane {
    fn new(device: usize) -> GpuLane {
        GpuLane {
            device,
            state: Mutex::new(GpuState::NotAsked),
            status: AtomicU8::new(GpuStatus::NotAsked as u8),
            queued: AtomicUsize::new(0),
            runs: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> Held<'_> {
        Held { lane: self, state: self.state.lock().unwrap_or_else(|e| e.into_inner()) }
    }

    fn try_lock(&self) -> Option<Held<'_>> {
        let state = match self.state.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(Held { lane: self, state })
    }

    /// Where the GPU stood when its lock was last released.
    fn status(&self) -> GpuStatus {
        let code = self.status.load(Ordering::Acquire);
        GpuStatus::ALL.into_iter().find(|s| *s as u8 == code).unwrap_or(GpuStatus::Unusable)
    }

    /// Runs `op` on this GPU, waiting for it (and for its opening); also the time the GPU was
    /// this worker's. Every copy and kernel the operation queued is finished when this returns:
    /// the frame's page-locked samples may be reused at once. The host's part of the operation
    /// ([`Op::gpu_parts`]) is done after the GPU is let go, so the next frame's GPU part does
    /// not wait for it.
    fn run<O: Op>(
        &self,
        backends: &Backends,
        op: &O,
        frame: &Frame,
    ) -> (Result<O::Output, OpError>, Duration) {
        self.queued.fetch_add(1, Ordering::AcqRel);
        let mut state = self.lock();
        let start = Instant::now();
        state.start_opening(self.device);
        backends.settle(&mut state, true);
        let out = match &*state {
            GpuState::Ready(gpu) => op.gpu_parts(gpu, frame).and_then(|part| {
                gpu.synchronize()?;
                Ok(part)
            }),
            GpuState::Failed(e) => Err(OpError::gpu(format!("--backend gpu: {e}"))),
            GpuState::NotAsked | GpuState::Opening(_) => unreachable!("settled, waiting"),
        };
        let took = start.elapsed();
        drop(state);
        self.queued.fetch_sub(1, Ordering::AcqRel);
        self.runs.fetch_add(1, Ordering::Relaxed);
        let out = out.and_then(|part| match part {
            GpuPart::Done(out) => Ok(out),
            host => {
                let _work = FrameWork::begin();
                host.finish()
            }
        });
        (out, took)
    }
}

/// The backends of one run of a tool.
pub(crate) struct Backends {
    choice: BackendChoice,
    devices: Devices,
    memory: SampleMemory,
    /// The GPUs: made with `gpu` when the run starts, with `auto` when due (see
    /// [`Backends::begin_frame`]; on a background thread for `all`, which asks the driver how
    /// many there are).
    gpus: OnceLock<Vec<GpuLane>>,
    /// When the run started, and how long a stream runs with `auto` before the GPUs are opened
    /// for it (`HISTOPIPE_GPU_AFTER`).
    started: Instant,
    open_after: Duration,
    /// With `auto`: the stream has a second frame; the GPUs have been asked for; a GPU lends its
    /// page-locked memory.
    second: AtomicBool,
    asked: AtomicBool,
    lending: AtomicBool,
    /// With `auto` and `all`: the devices are being counted.
    counting: AtomicBool,
    /// With `gpu`: every GPU is open.
    all_open: AtomicBool,
    /// Workers running an operation on the CPU.
    sharing: AtomicUsize,
    /// Operations run on the CPU.
    cpu_runs: AtomicU64,
    rates: Mutex<HashMap<(&'static str, Lane), Rate>>,
}

impl Backends {
    /// Backends for `choice` on `devices`; the first GPU to open lends its page-locked memory to
    /// `memory`.
    pub(crate) fn new(
        choice: BackendChoice,
        devices: Devices,
        open_after: Duration,
        memory: SampleMemory,
    ) -> Backends {
        Backends {
            choice,
            devices,
            memory,
            started: Instant::now(),
            open_after,
            second: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            lending: AtomicBool::new(false),
            gpus: OnceLock::new(),
            counting: AtomicBool::new(false),
            all_open: AtomicBool::new(false),
            sharing: AtomicUsize::new(0),
            cpu_runs: AtomicU64::new(0),
            rates: Mutex::new(HashMap::new()),
        }
    }

    /// Makes the run's GPUs (`all` counted now) and starts opening each on a thread of its own.
    fn open_gpus_in_background(&self) {
        let gpus = self.gpus.get_or_init(|| {
            let devices = match &self.devices {
                Devices::List(list) => list.clone(),
                Devices::All => (0..histopipe_ops::device_count()).collect(),
            };
            devices.into_iter().map(GpuLane::new).collect()
        });
        for lane in gpus {
            lane.lock().start_opening(lane.device);
        }
    }

    /// Takes note of a GPU's opening (waiting for it if `wait`). With `gpu`, the first GPU to
    /// open lends its page-locked memory at once, so the frame reader reads the next frames there
    /// and they go to the device without a staging copy; with `auto` that waits until a GPU has
    /// shown it is worth its frames (see [`Backends::auto`]): page-locking the frames the cores
    /// take would only cost (each new block takes the driver milliseconds).
    fn settle(&self, state: &mut GpuState, wait: bool) {
        state.settle(wait);
        if let GpuState::Ready(gpu) = state {
            if self.choice == BackendChoice::Gpu && !self.lending.swap(true, Ordering::AcqRel) {
                self.memory.install(Arc::new(gpu.host_memory().clone()));
            }
        }
    }

    /// With `gpu`, starts opening the GPUs, overlapping the reading of the first frame, which
    /// then waits for them. Call it once every thread of the run is made: while the driver
    /// loads, the loader's lock holds up making threads.
    pub(crate) fn start(&self) {
        if self.choice == BackendChoice::Gpu {
            self.open_gpus_in_background();
        }
    }

    /// With `gpu`, waits for every GPU to open: an error if one cannot be used (the GPU service,
    /// which answers its clients once it knows).
    pub(crate) fn wait_open(&self) -> Result<(), OpError> {
        if self.choice != BackendChoice::Gpu {
            return Ok(());
        }
        self.open_gpus_in_background();
        let gpus = self.gpus.get().map_or(&[][..], Vec::as_slice);
        if gpus.is_empty() {
            return Err(OpError::gpu("--device all: this machine has no usable CUDA device"));
        }
        self.open_gpus(gpus, true).map(drop)
    }

    /// The backend and devices, for the service's status: `gpu, device 0,1`, `cpu`.
    pub(crate) fn describe(&self) -> String {
        match (self.choice, &self.devices) {
            (BackendChoice::Cpu, _) => "cpu".into(),
            (choice, Devices::All) => format!("{}, every device", choice.word()),
            (choice, Devices::List(list)) => {
                let list: Vec<String> = list.iter().map(|d| d.to_string()).collect();
                format!("{}, device {}", choice.word(), list.join(","))
            }
        }
    }

    /// The memory frames are read into (page-locked once a GPU lends it).
    pub(crate) fn memory(&self) -> &SampleMemory {
        &self.memory
    }

    /// Whether the stream has shown a second frame.
    pub(crate) fn is_stream(&self) -> bool {
        self.second.load(Ordering::Acquire)
    }

    /// Called before frame `n` (from 1) is handed out. With `auto`, a stream (a second frame)
    /// that has run for `open_after` is worth opening the GPUs for. A shorter one costs exactly
    /// what it costs on the cores: opening a GPU takes a core and the process's memory-map lock
    /// for most of a second, which only a longer stream can win back. (Paying for the GPU once
    /// the stream has cost as much as opening it is at most twice the best choice made knowing
    /// the stream's length.) A stream whose frames were all handed out before then is seen to
    /// by the workers ([`Backends::open_if_due`]).
    pub(crate) fn begin_frame(self: &Arc<Self>, n: usize) {
        if n >= 2 {
            self.second.store(true, Ordering::Release);
        }
        if !self.due() || self.asked.swap(true, Ordering::AcqRel) {
            return;
        }
        // The pool first: the opening's loader lock would hold up the making of its threads.
        histopipe_ops::parallel::threads();
        if self.devices != Devices::All {
            self.open_gpus_in_background();
            return;
        }
        // Counting the devices loads the driver: not on this thread, which hands out the
        // frames that the cores serve meanwhile.
        self.counting.store(true, Ordering::Release);
        let this = self.clone();
        let counter = std::thread::Builder::new().name("histopipe-gpu-count".into());
        let counted = counter.spawn(move || {
            this.open_gpus_in_background();
            this.counting.store(false, Ordering::Release);
        });
        if counted.is_err() {
            // No thread, no GPU: the cores serve every frame.
            self.counting.store(false, Ordering::Release);
        }
    }

    /// Whether `auto` should ask for the GPUs now (see [`Backends::begin_frame`]).
    fn due(&self) -> bool {
        self.choice == BackendChoice::Auto
            && self.second.load(Ordering::Acquire)
            && !self.asked.load(Ordering::Acquire)
            && self.started.elapsed() >= self.open_after
    }

    /// On a worker: asks for the GPUs once due, for a stream whose frames were all handed out
    /// before (counting them for `all` on this worker's time).
    fn open_if_due(&self) {
        if self.due() {
            self.open_now();
        }
    }

    /// With `auto`, for a frame heavy enough to pay for a GPU's opening on its own ([`is_heavy`]):
    /// asks for the GPUs now, whatever the stream's length (counting them for `all` on this
    /// worker's time). The frame then waits for them ([`Backends::auto`]); one that cannot be
    /// opened leaves it to the cores.
    fn open_now(&self) {
        if self.asked.swap(true, Ordering::AcqRel) {
            return;
        }
        self.counting.store(true, Ordering::Release);
        self.open_gpus_in_background();
        self.counting.store(false, Ordering::Release);
    }

    /// Whether a GPU is being opened (or the devices counted), as far as each lane's last holder
    /// knows.
    pub(crate) fn is_opening(&self) -> bool {
        self.counting.load(Ordering::Acquire)
            || self.gpus.get().is_some_and(|g| g.iter().any(|l| l.status() == GpuStatus::Opening))
    }

    /// Where the operations ran, for `--progress`: `cpu 12, GPU 0 40, GPU 1 44` (GPUs by
    /// device number, a device listed twice once for each; `GPU 1 unusable`).
    pub(crate) fn tally(&self) -> String {
        let mut parts = vec![format!("cpu {}", self.cpu_runs.load(Ordering::Relaxed))];
        let gpus = self.gpus.get().map_or(&[][..], Vec::as_slice);
        self.notice_open(gpus);
        for lane in gpus {
            parts.push(match lane.status() {
                GpuStatus::Unusable => format!("GPU {} unusable", lane.device),
                _ => format!("GPU {} {}", lane.device, lane.runs.load(Ordering::Relaxed)),
            });
        }
        parts.join(", ")
    }

    /// Notes which of `gpus` have finished opening (or failed to). Whoever finds a GPU open
    /// first takes note; nobody waits for it.
    fn notice_open(&self, gpus: &[GpuLane]) {
        for lane in gpus.iter().filter(|l| l.status() == GpuStatus::Opening) {
            if let Some(mut state) = lane.try_lock() {
                self.settle(&mut state, false);
            }
        }
    }

    /// Runs `op` on the cores, as one of the frames sharing the pool ([`FrameWork`]).
    fn on_cpu<O: Op>(&self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        self.counted_on_cpu(|| op.cpu(frame))
    }

    /// Runs `work` as the CPU backend runs an operation (counted for `--progress`, one of the
    /// frames sharing the pool), where this run's operations are all the CPU's: with `cpu`, or
    /// `auto` that sent the run to the cores (see service::past). `None` otherwise, `work` not run.
    pub(crate) fn on_cores<T>(&self, work: impl FnOnce() -> T) -> Option<T> {
        (self.choice == BackendChoice::Cpu).then(|| self.counted_on_cpu(work))
    }

    fn counted_on_cpu<T>(&self, work: impl FnOnce() -> T) -> T {
        self.cpu_runs.fetch_add(1, Ordering::Relaxed);
        let _work = FrameWork::begin();
        work()
    }

    /// Runs `op` on `frame`, the stream's frame `n` (from 1), on the backend chosen for it.
    pub(crate) fn run<O: Op>(&self, op: &O, frame: &Frame, n: usize) -> Result<O::Output, OpError> {
        match self.choice {
            BackendChoice::Cpu => self.on_cpu(op, frame),
            BackendChoice::Gpu => self.on_some_gpu(op, frame, n == 1),
            BackendChoice::Auto => self.auto(op, frame),
        }
    }

    /// With `gpu`: runs `op` on the open GPU with the fewest frames queued. Frames go to the
    /// GPUs open so far while the others open (a second GPU's opening costs a short batch more
    /// than it saves, if the batch waits for it). The stream's first frame (`first`), which
    /// comes first in the output, is held back until every GPU has opened, so one that cannot be
    /// used still fails the run before any output.
    fn on_some_gpu<O: Op>(&self, op: &O, frame: &Frame, first: bool) -> Result<O::Output, OpError> {
        let gpus = self.gpus.get().map_or(&[][..], Vec::as_slice);
        if gpus.is_empty() {
            return Err(OpError::gpu("--backend gpu: --device all: this machine has no usable CUDA device"));
        }
        let lane = loop {
            let open = self.open_gpus(gpus, false)?;
            if let Some(lane) = open.into_iter().min_by_key(|l| l.queued.load(Ordering::Acquire)) {
                break lane;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let out = lane.run(self, op, frame).0;
        if first {
            self.open_gpus(gpus, true)?;
        }
        out
    }

    /// With `gpu`: the GPUs of `gpus` open now (all of them once every one has opened), waiting
    /// for each if `wait`; an error if one cannot be used.
    fn open_gpus<'g>(&self, gpus: &'g [GpuLane], wait: bool) -> Result<Vec<&'g GpuLane>, OpError> {
        if self.all_open.load(Ordering::Acquire) {
            return Ok(gpus.iter().collect());
        }
        let mut open = Vec::with_capacity(gpus.len());
        for lane in gpus {
            if lane.status() != GpuStatus::Ready {
                // Not ready: it is only locked by a worker finding out whether it opened.
                let Some(mut state) = (if wait { Some(lane.lock()) } else { lane.try_lock() }) else {
                    continue;
                };
                self.settle(&mut state, wait);
                match &*state {
                    GpuState::Ready(_) => {}
                    GpuState::Failed(e) => {
                        return Err(OpError::gpu(format!("--backend gpu: {e}")));
                    }
                    GpuState::NotAsked | GpuState::Opening(_) => continue,
                }
            }
            open.push(lane);
        }
        if open.len() == gpus.len() {
            self.all_open.store(true, Ordering::Release);
        }
        Ok(open)
    }

    fn auto<O: Op>(&self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        let key = std::any::type_name::<O>();
        let heavy = is_heavy(frame.pixel_count() as f64 * op.visits_per_pixel(frame));
        if heavy {
            self.open_now();
        }
        let (gpus, lane, measured) = loop {
            self.open_if_due();
            let gpus = self.gpus.get().map_or(&[][..], Vec::as_slice);
            self.notice_open(gpus);
            let (lane, cpu_ns, measured, open) = {
                let rates = self.rates();
                let load = |lane, holds| Load {
                    lane,
                    rate: rates.get(&(key, lane)).copied().unwrap_or_default(),
                    holds,
                };
                let cpu = load(Lane::Cpu, self.sharing.load(Ordering::Acquire));
                let open: Vec<Load> = (gpus.iter().enumerate())
                    .filter(|(_, l)| l.status() == GpuStatus::Ready)
                    .map(|(i, l)| load(Lane::Gpu(i), l.queued.load(Ordering::Acquire)))
                    .collect();
                let lane = choose(cpu, &open);
                let measured = open.iter().any(|l| l.lane == lane && l.rate.ns.is_some());
                (lane, cpu.rate.ns, measured, open)
            };
            let waits = self.waits_for_a_gpu(frame, cpu_ns, &open, heavy);
            if lane != Lane::Cpu || !waits {
                break (gpus, lane, measured);
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let (out, ns) = match lane {
            Lane::Cpu => {
                let start = Instant::now();
                let before = self.sharing.fetch_add(1, Ordering::AcqRel) + 1;
                let out = self.on_cpu(op, frame);
                let after = self.sharing.fetch_sub(1, Ordering::AcqRel);
                // The frames the cores shared while this one was on them, on average.
                let shared = (before + after) as f64 / 2.0;
                (out, start.elapsed().as_nanos() as f64 / shared)
            }
            Lane::Gpu(i) => {
                if measured && !self.lending.swap(true, Ordering::AcqRel) {
                    // A GPU has shown it is worth frames: from now on they are read into its
                    // page-locked memory.
                    if let GpuState::Ready(gpu) = &*gpus[i].lock() {
                        self.memory.install(Arc::new(gpu.host_memory().clone()));
                    }
                }
                let (out, took) = gpus[i].run(self, op, frame);
                (out, took.as_nanos() as f64)
            }
        };
        if out.is_ok() {
            let ns_per_pixel = ns / frame.pixel_count().max(1) as f64;
            self.rates().entry((key, lane)).or_default().record(lane, ns_per_pixel);
        }
        out
    }

    /// Whether `frame`, bound for the cores, had better wait for a GPU: until a GPU is open and
    /// measured at the operation (or all are known to be unusable), the cores take a frame that
    /// keeps them busy a while (`SLOW`, at the CPU's rate `cpu_ns` per pixel when they are all on
    /// it; before that is measured, any large frame) only when fewer than two others are on them.
    /// Such a frame is split over every core already; more of them would only share the cores and
    /// all finish late, holding up the output of the frames the GPUs do once open (an operation
    /// the GPU does 30 times faster, on frames the cores take 0.3 s each, would give the cores a
    /// frame per worker at the start and the output would wait seconds for all of them). Quicker
    /// frames go on as on the CPU alone. `open`: the GPUs open now, with their rates. A `heavy`
    /// frame, for which the GPUs were opened at once, takes the cores only once a GPU is measured
    /// (and [`choose`] gives it the cores) or none can be used: in a stream of `radon` frames that
    /// a GPU does 50 times faster, the frames that came while the GPU did its first one went to
    /// the cores, one a worker, and the stream took 4.8 times as long as with `gpu`.
    fn waits_for_a_gpu(&self, frame: &Frame, cpu_ns: Option<f64>, open: &[Load], heavy: bool) -> bool {
        const SLOW: f64 = 20e6;
        const LARGE: usize = 1 << 20;
        let pixels = frame.pixel_count();
        let slow = heavy || cpu_ns.map_or(pixels >= LARGE, |ns| ns * pixels as f64 >= SLOW);
        let opening = !self.asked.load(Ordering::Acquire) || self.is_opening();
        slow && waits(self.sharing.load(Ordering::Acquire), opening, open, heavy)
    }

    fn rates(&self) -> MutexGuard<'_, HashMap<(&'static str, Lane), Rate>> {
        self.rates.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use histopipe_ops::OpErrorKind;

    use super::*;

    fn measured(lane: Lane, ns: f64, holds: usize) -> Load {
        Load { lane, rate: Rate { ns: Some(ns), runs: 2 }, holds }
    }

    #[test]
    fn rates_are_running_averages_past_a_gpus_first_run() {
        let mut r = Rate::default();
        r.record(Lane::Gpu(0), 500.0);
        assert_eq!(r.ns, None, "the GPU's first run (kernels compiled) is not counted");
        r.record(Lane::Gpu(0), 2.0);
        assert_eq!(r.ns, Some(2.0));
        r.record(Lane::Gpu(0), 6.0);
        assert_eq!(r.ns, Some(3.0), "a running average");
        let mut c = Rate::default();
        c.record(Lane::Cpu, 10.0);
        assert_eq!(c.ns, Some(10.0), "the CPU's first run counts");
    }

    #[test]
    fn a_frame_goes_where_it_is_done_first() {
        let cpu = |holds| measured(Lane::Cpu, 10.0, holds);
        let unmeasured = |holds| Load { lane: Lane::Gpu(0), rate: Rate::default(), holds };
        assert_eq!(choose(cpu(0), &[]), Lane::Cpu, "no GPU open: the CPU");
        assert_eq!(choose(cpu(0), &[unmeasured(0)]), Lane::Gpu(0), "an unmeasured GPU is measured");
        assert_eq!(choose(cpu(5), &[unmeasured(1)]), Lane::Cpu, "one frame at a time");
        let fast = |holds| measured(Lane::Gpu(0), 2.0, holds);
        assert_eq!(choose(cpu(0), &[fast(0)]), Lane::Gpu(0), "a fast GPU takes the frame");
        assert_eq!(choose(cpu(0), &[fast(3)]), Lane::Gpu(0), "even with a short queue");
        assert_eq!(choose(cpu(0), &[fast(4)]), Lane::Gpu(0), "10 x 1 = 2 x 5: a tie goes to the GPU");
        assert_eq!(choose(cpu(0), &[fast(5)]), Lane::Cpu, "a long queue sends it to the CPU");
        assert_eq!(choose(cpu(1), &[fast(5)]), Lane::Gpu(0), "unless the cores are as busy");
        let unmeasured_cpu = Load { lane: Lane::Cpu, rate: Rate::default(), holds: 0 };
        assert_eq!(choose(unmeasured_cpu, &[fast(9)]), Lane::Gpu(0), "an unmeasured CPU: the GPU");
    }

    #[test]
    fn a_gpu_not_twice_as_fast_as_the_cores_takes_no_frames() {
        // Copies cost as much as the work: the GPU would only take the cores' memory bandwidth.
        let cpu = |holds| measured(Lane::Cpu, 2.0, holds);
        let slow = |holds| measured(Lane::Gpu(0), 1.5, holds);
        assert_eq!(choose(cpu(0), &[slow(0)]), Lane::Cpu);
        assert_eq!(choose(cpu(15), &[slow(0)]), Lane::Cpu, "even with the cores busy");
        let twice = |holds| measured(Lane::Gpu(0), 1.0, holds);
        assert_eq!(choose(cpu(0), &[twice(0)]), Lane::Gpu(0), "twice as fast: worth it");
        assert_eq!(choose(cpu(0), &[twice(1)]), Lane::Gpu(0), "1 x 2 = 2 x 1: a tie goes to the GPU");
        assert_eq!(choose(cpu(0), &[twice(2)]), Lane::Cpu, "the cores take what the GPU's queue cannot");
        let unmeasured_cpu = Load { lane: Lane::Cpu, rate: Rate::default(), holds: 0 };
        assert_eq!(choose(unmeasured_cpu, &[slow(3)]), Lane::Gpu(0), "no measure of the cores yet");
        let new = Load { lane: Lane::Gpu(0), rate: Rate::default(), holds: 1 };
        assert_eq!(choose(unmeasured_cpu, &[new]), Lane::Cpu, "nothing measured, the GPU busy");
    }

    #[test]
    fn slow_frames_wait_until_a_gpu_is_measured() {
        let new = |i| Load { lane: Lane::Gpu(i), rate: Rate::default(), holds: 1 };
        let known = |i| measured(Lane::Gpu(i), 1.0, 3);
        assert!(waits(2, true, &[], false), "the GPUs not open yet: the third slow frame waits");
        assert!(!waits(1, true, &[], false), "fewer than two on the cores: it goes on");
        // The defect this guards against: GPUs open but not yet measured (their first frames
        // compiling the kernels) sent every waiting frame to the cores; 32 frames of hough-vote
        // that a GPU does in 20 ms each took the cores 35 s.
        assert!(waits(2, false, &[new(0)], false), "the one GPU open is being measured");
        assert!(waits(5, false, &[new(0), new(1)], false), "both being measured");
        assert!(waits(2, true, &[new(0)], false), "one measuring, another still opening");
        assert!(!waits(2, false, &[known(0)], false), "a measured GPU: choose() has weighed it");
        assert!(!waits(2, true, &[new(0), known(1)], false), "one of them measured");
        assert!(!waits(2, false, &[], false), "every GPU unusable: the cores take it");
        // A heavy frame (the GPUs opened for it) never takes the cores before a GPU is measured,
        // however few frames are on them: radon's frames went to the cores, one a worker, while
        // the GPU did its first.
        assert!(waits(0, true, &[], true), "heavy, the GPU opening: it waits");
        assert!(waits(0, false, &[new(0)], true), "heavy, the GPU being measured: it waits");
        assert!(waits(1, false, &[new(0), new(1)], true));
        assert!(!waits(0, false, &[known(0)], true), "heavy, a measured GPU: choose() has weighed it");
        assert!(!waits(0, false, &[], true), "heavy, every GPU unusable: the cores take it");
    }

    #[test]
    fn frames_are_dealt_over_gpus_by_their_queues() {
        let cpu = measured(Lane::Cpu, 100.0, 0);
        let a = |holds| measured(Lane::Gpu(0), 2.0, holds);
        let b = |holds| measured(Lane::Gpu(1), 2.0, holds);
        assert_eq!(choose(cpu, &[a(0), b(0)]), Lane::Gpu(0), "equals: the first");
        assert_eq!(choose(cpu, &[a(1), b(0)]), Lane::Gpu(1), "the one with the shorter queue");
        assert_eq!(choose(cpu, &[a(2), b(1)]), Lane::Gpu(1));
        let slower = |holds| measured(Lane::Gpu(1), 3.0, holds);
        assert_eq!(choose(cpu, &[a(1), slower(0)]), Lane::Gpu(1), "3 x 1 < 2 x 2");
        assert_eq!(choose(cpu, &[a(1), slower(1)]), Lane::Gpu(0), "2 x 2 < 3 x 2");
        let new = Load { lane: Lane::Gpu(1), rate: Rate::default(), holds: 0 };
        assert_eq!(choose(cpu, &[a(0), new]), Lane::Gpu(1), "a GPU just open is measured");
    }

    #[test]
    fn auto_asks_for_the_gpus_once_a_stream_has_run_long_enough() {
        let wait = Duration::from_millis(50);
        let b = Arc::new(Backends::new(
            BackendChoice::Auto,
            Devices::List(vec![0]),
            wait,
            SampleMemory::default(),
        ));
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let op = histopipe_ops::equalize::Equalize;
        b.begin_frame(1);
        std::thread::sleep(wait * 2);
        b.run(&op, &frame, 1).unwrap();
        assert!(b.gpus.get().is_none(), "a single frame never opens a GPU");
        b.begin_frame(2);
        assert!(b.gpus.get().is_some(), "a second frame after the wait: the GPUs are asked for");
        // Every frame handed out before the wait: a worker asks once it is over.
        let early = Arc::new(Backends::new(
            BackendChoice::Auto,
            Devices::List(vec![0]),
            wait,
            SampleMemory::default(),
        ));
        early.begin_frame(1);
        early.begin_frame(2);
        early.run(&op, &frame, 2).unwrap();
        assert!(early.gpus.get().is_none(), "not yet");
        std::thread::sleep(wait * 2);
        early.run(&op, &frame, 2).unwrap();
        assert!(early.gpus.get().is_some(), "asked by a worker");
    }

    /// Equalize, said to visit each pixel as often as `radon` does for many angles.
    struct Heavy(f64);

    impl Op for Heavy {
        type Output = Frame;
        fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
            histopipe_ops::equalize::Equalize.cpu(frame)
        }
        fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
            histopipe_ops::equalize::Equalize.gpu(gpu, frame)
        }
        fn visits_per_pixel(&self, _: &Frame) -> f64 {
            self.0
        }
    }

    #[test]
    fn auto_opens_the_gpus_at_once_for_a_frame_that_pays_for_them() {
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let b = Arc::new(Backends::new(
            BackendChoice::Auto,
            Devices::List(vec![0]),
            Duration::from_secs(1000),
            SampleMemory::default(),
        ));
        b.begin_frame(1);
        b.run(&Heavy(1000.0), &frame, 1).unwrap();
        assert!(b.gpus.get().is_none(), "light: the cores, no GPU asked for");
        // Heavy: the GPUs are asked for on the first frame; without one (here, no CUDA, or a
        // device that cannot be opened) the frame still gets done, by the cores.
        let out = b.run(&Heavy(HEAVY_VISITS), &frame, 1).unwrap();
        assert!(b.gpus.get().is_some(), "heavy: the GPUs are asked for at once");
        assert_eq!(out, histopipe_ops::equalize::Equalize.cpu(&frame).unwrap());
        assert!(!b.is_opening(), "the frame waited for the opening to end");
    }

    #[test]
    fn cpu_never_opens_a_gpu() {
        let b = Arc::new(Backends::new(
            BackendChoice::Cpu,
            Devices::All,
            Duration::ZERO,
            SampleMemory::default(),
        ));
        b.start();
        b.begin_frame(2);
        assert!(!b.is_opening());
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let out = b.run(&histopipe_ops::equalize::Equalize, &frame, 1).unwrap();
        assert_eq!(out.pixels, vec![0u8, 255].into());
        assert!(b.gpus.get().is_none());
    }

    /// `gpu` stays on the GPU, lending its page-locked memory to the reader once open; without a
    /// usable GPU every frame is an error naming the option, never a quiet fall back to the CPU.
    #[test]
    fn gpu_is_the_gpu_every_time() {
        let memory = SampleMemory::default();
        let b = Backends::new(BackendChoice::Gpu, Devices::List(vec![0]), Duration::ZERO, memory.clone());
        b.start();
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let op = histopipe_ops::equalize::Equalize;
        if histopipe_ops::Gpu::open(0).is_ok() {
            for n in 1..=3 {
                assert_eq!(b.run(&op, &frame, n).unwrap().pixels, vec![0u8, 255].into());
            }
            let lent = memory.uninit::<u16>(1000);
            assert!(lent.is_lent(), "the reader reads into the GPU's page-locked blocks");
            assert_eq!(b.tally(), "cpu 0, GPU 0 3");
        } else {
            for n in 1..=3 {
                let e = b.run(&op, &frame, n).err().unwrap();
                assert_eq!(e.kind, OpErrorKind::Gpu);
                assert!(e.to_string().starts_with("--backend gpu: "), "{e}");
            }
            assert!(!memory.uninit::<u8>(100).is_lent());
            assert_eq!(b.tally(), "cpu 0, GPU 0 unusable");
        }
    }

    /// Equalize on the GPU, whose host part, for the first frame, waits (20 s at most) until a
    /// second frame's GPU part has run; its output: the GPU parts run when its host part ends.
    #[derive(Default)]
    struct HostPart {
        gpu_parts: AtomicUsize,
    }

    impl Op for HostPart {
        type Output = usize;
        fn cpu(&self, _: &Frame) -> Result<usize, OpError> {
            Ok(0)
        }
        fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<usize, OpError> {
            self.gpu_parts(gpu, frame)?.finish()
        }
        fn gpu_parts<'a>(&'a self, gpu: &Gpu, frame: &'a Frame) -> Result<GpuPart<'a, usize>, OpError> {
            histopipe_ops::equalize::Equalize.gpu(gpu, frame)?;
            let n = self.gpu_parts.fetch_add(1, Ordering::AcqRel) + 1;
            Ok(GpuPart::Host(Box::new(move || {
                let until = Instant::now() + Duration::from_secs(20);
                while n == 1 && self.gpu_parts.load(Ordering::Acquire) < 2 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(self.gpu_parts.load(Ordering::Acquire))
            })))
        }
    }

    /// An operation's host part is done with the GPU let go: another frame's GPU part runs
    /// meanwhile (`hough-segments` walks its lines on the host; holding the GPU for that, its
    /// stream ran one frame at a time).
    #[test]
    fn the_host_part_lets_the_gpu_go() {
        if histopipe_ops::testing::gpu_or_skip().is_none() {
            return;
        }
        let b = Backends::new(
            BackendChoice::Gpu,
            Devices::List(vec![0]),
            Duration::ZERO,
            SampleMemory::default(),
        );
        b.start();
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let op = HostPart::default();
        std::thread::scope(|s| {
            let first = s.spawn(|| b.run(&op, &frame, 1).unwrap());
            while op.gpu_parts.load(Ordering::Acquire) == 0 && !first.is_finished() {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(b.run(&op, &frame, 2).unwrap(), 2);
            assert_eq!(first.join().unwrap(), 2, "the first frame's host part saw the second's GPU part");
        });
    }

    /// With `gpu`, later frames go to the GPUs open so far; the first frame is not done before
    /// every GPU has opened, and fails if one cannot be used.
    #[test]
    fn the_first_frame_waits_for_every_gpu() {
        if histopipe_ops::testing::gpu_or_skip().is_none() {
            return;
        }
        let gpu = |devices: Vec<usize>| {
            let b = Backends::new(
                BackendChoice::Gpu,
                Devices::List(devices),
                Duration::ZERO,
                SampleMemory::default(),
            );
            b.start();
            b
        };
        let op = histopipe_ops::equalize::Equalize;
        let frame = Frame::new(2, 1, 255, vec![1u8, 2].into());
        let missing = histopipe_ops::device_count();
        let b = gpu(vec![0, missing]);
        let e = b.run(&op, &frame, 1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(&format!("no CUDA device {missing}")), "{e}");
        let b = gpu(vec![0, 0]);
        assert_eq!(b.run(&op, &frame, 2).unwrap().pixels, vec![0u8, 255].into());
        assert_eq!(b.run(&op, &frame, 1).unwrap().pixels, vec![0u8, 255].into());
        assert!(b.all_open.load(Ordering::Acquire), "the first frame saw every GPU open");
        assert!(b.gpus.get().unwrap().iter().all(|l| l.status() == GpuStatus::Ready));
    }
}
