//! A tool's side: its workers hand frames to the service, each on a connection of its own (taken
//! from a pool, made on first need, the service started if it is not up), and get each frame's
//! output parts back. Should the service be absent, refuse, take too long or fail mid-frame, the
//! frame is the tool's to do ([`Outcome::Local`]), and so is every frame after it; the tool says
//! so once on stderr.

use std::ffi::OsString;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use histopipe_frame::{Frame, SampleMemory};
use histopipe_ops::parallel::FrameWork;

use super::channel::Channel;
use super::held::{self, Pipe, Token};
use super::past::{Past, Plan, Shape, Went};
use super::shm::Block;
use super::transfer::{decode_reply, frame_bytes, put_frame, Served};
use super::wire::{decode_held, decode_refusal, FrameRequest, Hello, Input, Kind, Refusal, Writer, VERSION};
use super::{connect_or_start, Address};
use crate::dispatch::{choose, BackendChoice, Backends, Devices, Lane, Load, Rate};
use crate::tool::Context;
use crate::writer::Part;

/// How long a client waits for the service to start, and to answer its hello (it opens the GPU
/// first).
const START_WAIT: Duration = Duration::from_secs(20);

/// How long a frame may take on the service before the tool does it itself. A frame within
/// `--max-work` takes a GPU a second at most; the bound is for a service that hangs.
const FRAME_WAIT: Duration = Duration::from_secs(120);

/// How long a writer waits for the reader of a frame held for it to be done with it: the
/// service's own bound (120 s), and a margin.
const HOLD_WAIT: Duration = Duration::from_secs(150);

/// The most connections one process has to the service. Frames take turns on the GPU, but their
/// copies into and out of shared memory, on both sides, do not: 100 colour 4K JPEGs equalized to
/// JPEG with `--backend gpu` took 1.29 s with 4 and 1.07 s with 8 on the H200 host, the cores
/// alone 1.06 s (a batch of gray PGMs through `threshold` took 0.22 s with either). 16 were
/// slower than 8 on every batch tried at 263bbdd, side by side in one call on the H200 host:
/// threshold 278.7 against 214.4 ms, stretch of float NPY to PNG 2340.5 against 2194.8,
/// equalize to JPEG 1172.3 against 1001.8 (more frames at once contend for the service's memory
/// bandwidth and GPU lane, and the client's workers wait there instead of here). Each
/// connection is a thread and a block of shared memory in the service, and a process opens one
/// only when all its others are busy (16 processes of a `make -j16` hold at most 128 of the
/// service's 256 sessions).
const CONNECTIONS_MOST: usize = 8;

/// A process's connections: those idle, and how many are open.
#[derive(Default)]
struct Pool {
    idle: Vec<Connection>,
    open: usize,
}

/// What came of handing a frame to the service.
pub(crate) enum Outcome {
    /// The service ran the tool on the frame: its parts, or the tool's error (kind and words).
    Served(Served),
    /// The tool does the frame itself (a frame held by the service: from the bytes that follow
    /// its reference in the stream).
    Local,
    /// A reference to the frame's output, held by the service, was handed on, and its reader
    /// could not have it: the tool makes the output itself, to follow the reference
    /// ([`held::FRAME_FOLLOWS`]).
    AfterReference,
}

/// What a frame handed to the service is.
#[derive(Clone, Copy)]
enum Give<'f> {
    /// A frame of this process's.
    Frame(&'f Frame),
    /// A frame the service holds, whose reference this process read from its input.
    Held(Token),
}

/// The service's answer to a frame.
enum Reply {
    Served(Served),
    /// The output is held for the reader of the output's pipe.
    Held(Token),
    /// The held frame given cannot be taken (no longer held, or not as this tool reads it): its
    /// bytes follow its reference.
    NotTaken,
}

/// A connection, with the shared memory blocks of each direction.
struct Connection {
    channel: Channel,
    /// The block the service lends the session: our frames go there, and its outputs come back
    /// there.
    block: Option<Block>,
}

/// Why no connection.
enum NoSession {
    /// The service cannot use the GPU: the tool finds out itself, in its own words.
    Gpu,
    Failed(String),
}

/// Which frames go to the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `--backend gpu`: every frame, the service started if it is not up.
    Gpu,
    /// `--backend auto` with the service up: every frame where earlier runs of the kind were done
    /// sooner, on the service or on this process's cores ([`super::past`]); for a kind not run
    /// both ways, each frame where it is done first, by their measured times (dispatch's
    /// [`choose`]).
    ///
    /// Frame by frame, a batch of 4K files goes mostly to the cores, and takes as long as with
    /// `cpu`: 10% to 17% longer than with `gpu` where the service is the faster (a colour JPEG's
    /// equalization, edges and hough-segments, a float NPY's stretch). Hence the whole runs
    /// remembered. Two other frame-by-frame rules were tried on the H200 host and not kept, since
    /// neither came near the better of the two on every batch (medians of 5, 100 files): the first
    /// frames dealt evenly between the two, so that each is timed sharing as many frames, then
    /// every frame to a service measured twice as fast as the cores (a frame waiting for it costs
    /// the cores nothing) and each where it is done first otherwise. Against the better of `cpu`
    /// and `gpu`: equalize to PNG 2698.5 ms against 2530.2, to JPEG 2163.9 against 1987.2, edges
    /// and hough-segments 915.8 against 812.9, stretch 1913.6 against 1748.5, threshold 190.7
    /// against 165.0 (its dealt frames opened connections, paid once a process); and the choices it
    /// made changed from run to run (threshold: 18 frames on the service in one run, 70 in another
    /// with at most four dealt at once). Every frame to the service whenever it is measured worth
    /// it, without the dealing: the service, timed one frame at a time while the cores shared
    /// fifteen, was never found worth it.
    Auto,
}

/// The times `auto` weighs: the service's per pixel and this process's cores', and the frames
/// each holds now.
#[derive(Default)]
struct Rates {
    service: Rate,
    cpu: Rate,
    on_service: usize,
    on_cpu: usize,
}

/// A frame this process does itself under `auto`, timed from [`Remote::local_begins`].
pub(crate) struct LocalRun(Option<Instant>);

/// The service as one run of a tool uses it.
pub(crate) struct Remote {
    mode: Mode,
    /// The backends of the frames this process does itself, where not the run's own: the CPU's
    /// under `auto` (the run's would open GPUs of its own), and under a service that runs the
    /// CPU backend (for tests, `HISTOPIPE_SERVICE_BACKEND=cpu`).
    cpu: Option<Backends>,
    rates: Mutex<Rates>,
    tool: &'static str,
    address: Address,
    devices: Devices,
    hello: Vec<u8>,
    connections: Mutex<Pool>,
    returned: Condvar,
    /// The tool does every frame from now on.
    local: AtomicBool,
    told: Once,
    /// Frames the service did.
    served: AtomicU64,
    /// What earlier runs of this kind took, and where this run's frames go under `auto` (chosen
    /// at its first frame).
    past: Past,
    first: OnceLock<Shape>,
    plan: OnceLock<Plan>,
    /// A service was started for this run.
    started: AtomicBool,
    /// The service loaded kernels for a frame of this run (see [`super::past`]).
    loaded: AtomicBool,
    /// The pipe the output goes to, where frames may be held for a tool that reads it.
    pipe_out: Option<Pipe>,
}

impl Remote {
    /// The service for a run of `tool` with command line `args` on `devices`, for `choice`:
    /// `None` where the service is off or its folder cannot be used (the tool then works alone,
    /// as without it), and for `auto` where it is not up, or for `cpu`. `kind`: the run's kind
    /// but for its frames ([`super::past::kind`]).
    pub(crate) fn new(
        tool: &'static str,
        args: Vec<OsString>,
        devices: &Devices,
        choice: BackendChoice,
        kind: String,
    ) -> Option<Remote> {
        if !super::enabled() {
            return None;
        }
        let address = Address::of(devices).ok()?;
        let mode = match choice {
            BackendChoice::Gpu => Mode::Gpu,
            BackendChoice::Auto if super::connect(&address).is_ok() => Mode::Auto,
            _ => return None,
        };
        let cpu = (mode == Mode::Auto || super::backend() == BackendChoice::Cpu).then(|| {
            Backends::new(BackendChoice::Cpu, devices.clone(), Duration::ZERO, SampleMemory::default())
        });
        let hello = Hello { version: VERSION, tool: tool.to_owned(), args }.encode();
        Some(Remote {
            past: Past::new(address.runs.clone(), kind),
            first: OnceLock::new(),
            plan: OnceLock::new(),
            started: AtomicBool::new(false),
            loaded: AtomicBool::new(false),
            mode,
            cpu,
            rates: Mutex::new(Rates::default()),
            tool,
            address,
            devices: devices.clone(),
            hello,
            connections: Mutex::new(Pool::default()),
            returned: Condvar::new(),
            local: AtomicBool::new(false),
            told: Once::new(),
            served: AtomicU64::new(0),
            pipe_out: None,
        })
    }

    /// The pipes of this run where frames may be held ([`super::held`]): `output`, where its
    /// frames go, and `input`, where they come from, which the service is told this process
    /// reads (at once, before any tool writing into it has a frame to hold). Whether the service
    /// now knows it reads `input`.
    pub(crate) fn with_pipes(&mut self, output: Option<Pipe>, input: Option<Pipe>) -> bool {
        self.pipe_out = output;
        let Some(pipe) = input else { return false };
        // A connection of its own, kept for the frames after (none is open yet).
        if !matches!(self.take(), Some(None)) {
            return false;
        }
        let said = self.open().map_err(drop).and_then(|mut c| c.reads(pipe).map(|()| c).map_err(drop));
        match said {
            Ok(connection) => {
                self.pool().idle.push(connection);
                self.returned.notify_one();
                true
            }
            Err(()) => {
                self.lose_one();
                false
            }
        }
    }

    /// The frames the service did, for `--progress`.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// What earlier runs took, where this run is taken in.
    pub(crate) fn past(&self) -> &Past {
        &self.past
    }

    /// Where most of the `frames` of this run went, as [`super::past`] counts a run: `None` for
    /// a run that started the service or had it load kernels (costs paid once, not by the runs
    /// after), or whose frames were done by GPUs of its own (`--backend gpu` once the service is
    /// lost).
    pub(crate) fn went(&self, frames: u64) -> Option<Went> {
        if self.started.load(Ordering::Relaxed) || self.loaded.load(Ordering::Relaxed) || frames == 0 {
            None
        } else if self.served() * 2 >= frames {
            Some(Went::Service)
        } else {
            self.cpu.is_some().then_some(Went::Cores)
        }
    }

    /// The stream's first frame read (not held by the service) is of `shape`: its kind of run
    /// is chosen by it, whichever frame a worker hands over first.
    pub(crate) fn first_read(&self, shape: Shape) {
        let _ = self.first.set(shape);
    }

    /// Where this run's frames go under `auto`, if chosen yet, for `--progress`.
    pub(crate) fn plan(&self) -> Option<Plan> {
        self.plan.get().copied()
    }

    /// Whether frames still go to the service.
    pub(crate) fn in_use(&self) -> bool {
        !self.local.load(Ordering::Acquire)
    }

    /// The backends of the frames this process does itself, where not the run's own.
    pub(crate) fn local_backends(&self) -> Option<&Backends> {
        self.cpu.as_ref()
    }

    fn rates(&self) -> std::sync::MutexGuard<'_, Rates> {
        self.rates.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A frame this process is about to do itself: timed under `auto`.
    pub(crate) fn local_begins(&self) -> LocalRun {
        if self.mode != Mode::Auto {
            return LocalRun(None);
        }
        self.rates().on_cpu += 1;
        LocalRun(Some(Instant::now()))
    }

    /// The frame of `pixels` begun at `run` is done: under `auto`, its time per pixel counts
    /// towards the cores' (divided by the frames that shared them, as dispatch counts them).
    pub(crate) fn local_ends(&self, run: LocalRun, pixels: usize, ok: bool) {
        let Some(start) = run.0 else { return };
        let mut rates = self.rates();
        let sharing = rates.on_cpu.max(1) as f64;
        rates.on_cpu -= 1;
        if ok {
            let ns = start.elapsed().as_nanos() as f64 / sharing / pixels.max(1) as f64;
            rates.cpu.record(Lane::Cpu, ns);
        }
    }

    /// Hands frame `n` (`starts`: its output starts the file or stream; `hold`: its output may be
    /// held for a tool reading this run's output pipe) to the service, or, under
    /// `auto`, to whichever of the service and this process's cores is done with it first; before
    /// the service is measured, only a frame `worth` it (a stream's, or a heavy one; asked only
    /// then): a single light frame costs its copies to and from the service more than the cores
    /// take for it (a 4406 x 4406 frame's 36 column histograms: 0.10 s on the 16 cores, 0.36 s on
    /// the service).
    ///
    /// The parts the service sends before the frame is done (`colhist --angles`' cube, a group
    /// of turns at a time) go to `cx` as they come, so they are written while the service makes
    /// the rest; should the service be lost after some, the frame is made again (on another
    /// connection, or by the tool) and `cx` leaves out what it has handed on.
    pub(crate) fn frame(
        &self,
        n: usize,
        frame: &Frame,
        starts: bool,
        hold: bool,
        worth: impl FnOnce() -> bool,
        cx: &mut Context<'_>,
    ) -> Outcome {
        if !self.in_use() {
            return Outcome::Local;
        }
        // The frames on the service as this one goes there (under `auto`).
        let mut before = 0;
        let mut first = false;
        if self.mode == Mode::Auto {
            let worth = worth();
            let plan = *self.plan.get_or_init(|| {
                let first = self.first.get().copied().unwrap_or_else(|| Shape::of(frame));
                self.past.plan(&self.past.key(first), worth)
            });
            match plan {
                Plan::Cores => return Outcome::Local,
                Plan::Service => return self.serve(n, Give::Frame(frame), starts, hold, cx, &mut first),
                Plan::FrameByFrame => {}
            }
            if !self.rates().service.is_measured() && !worth {
                return Outcome::Local;
            }
            let mut rates = self.rates();
            let cpu = Load { lane: Lane::Cpu, rate: rates.cpu, holds: rates.on_cpu };
            let service = Load { lane: Lane::Gpu(0), rate: rates.service, holds: rates.on_service };
            if choose(cpu, &[service]) == Lane::Cpu {
                return Outcome::Local;
            }
            rates.on_service += 1;
            before = rates.on_service;
        }
        let start = Instant::now();
        let outcome = self.serve(n, Give::Frame(frame), starts, hold, cx, &mut first);
        if self.mode == Mode::Auto {
            let mut rates = self.rates();
            let after = rates.on_service;
            rates.on_service -= 1;
            // Not a frame that opened its connection or had kernels loaded, as a GPU's first
            // frame is not (dispatch's `Rate::record`): the session's start and its shared
            // memory (both sides' first touch of its pages) are paid once a connection.
            // Counted, they made the service look several times slower than it is: 8.8 to 24 ns
            // a pixel for the first frame of 100 4K JPEGs equalized to PNG on the H200 host, 1.0
            // to 2.6 once connections were open, while the cores' took 3.0 to 5.3.
            if matches!(outcome, Outcome::Served(Ok(_))) && !first {
                // Divided by the frames on the service meanwhile, on average, as the cores' time
                // is by theirs, since `choose` multiplies it back by the frames there when it
                // weighs the next one: unshared, a round trip that waited behind other frames
                // counted their time twice.
                let shared = (before + after) as f64 / 2.0;
                let ns =
                    start.elapsed().as_nanos() as f64 / shared.max(1.0) / frame.pixel_count().max(1) as f64;
                rates.service.record(Lane::Cpu, ns);
            }
        }
        outcome
    }

    /// Hands frame `n`, whose reference (a frame the service holds) this process read from its
    /// input, to the service; done, says the service is done with it. Should the service not
    /// take it ([`Outcome::Local`]), its bytes follow the reference in the input, and the tool
    /// makes the output from them. `hold`: as [`Remote::frame`]'s.
    pub(crate) fn held_frame(
        &self,
        n: usize,
        token: Token,
        starts: bool,
        hold: bool,
        cx: &mut Context<'_>,
    ) -> Outcome {
        if !self.in_use() {
            self.decline(token);
            return Outcome::Local;
        }
        self.serve(n, Give::Held(token), starts, hold, cx, &mut false)
    }

    /// Declines held frame `token`, read from the input, which this process will not take: its
    /// writer is told at once to write its bytes (it would wait for this process to take it).
    pub(crate) fn decline(&self, token: Token) {
        if let Ok(mut c) = self.open() {
            let _ = c.release(token, false);
        }
    }

    /// Hands `give` to the service, its output held for the reader of this run's output pipe
    /// where `hold` and a tool on the service reads it; `first` is set if it paid for a first
    /// use: a connection opened for it, or kernels the service loaded for it.
    fn serve(
        &self,
        n: usize,
        give: Give<'_>,
        starts: bool,
        hold: bool,
        cx: &mut Context<'_>,
        first: &mut bool,
    ) -> Outcome {
        // One of the frames under way: its copies into and out of shared memory are split over
        // the pool only while no other frame is (histopipe_ops::parallel::copy_part).
        let _work = FrameWork::begin();
        let pipe_out = self.pipe_out.filter(|_| hold);
        let Some(pooled) = self.take() else { return Outcome::Local };
        // A connection kept from an earlier frame may have been closed by the service meanwhile
        // (an idle session is): the frame is tried once more on a new one.
        let mut tries = if pooled.is_some() { 2 } else { 1 };
        let mut pooled = pooled;
        loop {
            tries -= 1;
            let opening = || {
                *first = true;
                self.open()
            };
            let mut connection = match pooled.take().map_or_else(opening, Ok) {
                Ok(c) => c,
                Err(NoSession::Gpu) => {
                    self.lose_one();
                    self.local.store(true, Ordering::Release);
                    self.returned.notify_all();
                    return Outcome::Local;
                }
                Err(NoSession::Failed(why)) => {
                    self.lose_one();
                    return self.give_up(n, &why);
                }
            };
            let mut loaded = false;
            let reply = connection.frame(n, give, starts, pipe_out, cx, &mut loaded);
            if loaded {
                *first = true;
                self.loaded.store(true, Ordering::Relaxed);
            }
            let reply = match reply {
                Ok(reply) => reply,
                Err(_) if tries > 0 => {
                    cx.restart();
                    continue;
                }
                Err(why) => {
                    self.lose_one();
                    return self.give_up(n, &why);
                }
            };
            // The output made (or held and over), the held input given, if any, is released:
            // its writer need not write its bytes.
            let (outcome, done) = match reply {
                Reply::Served(served) => (Outcome::Served(served), true),
                Reply::NotTaken => (Outcome::Local, false),
                Reply::Held(token) => {
                    cx.send_parts(vec![Part::Bytes(held::record(token))]);
                    match connection.await_over(token) {
                        Ok(true) => {
                            (Outcome::Served(Ok(vec![Part::Bytes(vec![held::NOTHING_FOLLOWS])])), true)
                        }
                        Ok(false) => (Outcome::AfterReference, false),
                        Err(why) => {
                            self.lose_one();
                            self.give_up(n, &why);
                            return Outcome::AfterReference;
                        }
                    }
                }
            };
            let released = match give {
                Give::Held(token) => connection.release(token, done),
                Give::Frame(_) => Ok(()),
            };
            match released {
                Ok(()) => {
                    self.pool().idle.push(connection);
                    self.returned.notify_one();
                }
                // Its writer then writes the frame's bytes, which the input skips.
                Err(_) => self.lose_one(),
            }
            if matches!(outcome, Outcome::Served(_)) {
                self.served.fetch_add(1, Ordering::Relaxed);
            }
            return outcome;
        }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection for a frame: an idle one (`Some(Some)`), leave to open a new one
    /// (`Some(None)`, below [`CONNECTIONS_MOST`]), or `None` once the service is given up,
    /// waiting meanwhile for one to come back.
    fn take(&self) -> Option<Option<Connection>> {
        let mut pool = self.pool();
        loop {
            if !self.in_use() {
                return None;
            }
            if let Some(c) = pool.idle.pop() {
                return Some(Some(c));
            }
            if pool.open < CONNECTIONS_MOST {
                pool.open += 1;
                return Some(None);
            }
            pool = self.returned.wait(pool).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A connection taken is gone (failed, or never made).
    fn lose_one(&self) {
        self.pool().open -= 1;
        self.returned.notify_one();
    }

    /// From frame `n` on, the tool does the frames; says why, once.
    fn give_up(&self, n: usize, why: &str) -> Outcome {
        self.local.store(true, Ordering::Release);
        self.returned.notify_all();
        self.told.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "{}: the GPU service: {why} (at frame {n}); the frames it has not done are done in this process",
                self.tool
            );
        });
        Outcome::Local
    }

    /// A new connection, its session open.
    fn open(&self) -> Result<Connection, NoSession> {
        let (stream, started) = connect_or_start(&self.address, &self.devices, None, true, START_WAIT)
            .map_err(NoSession::Failed)?;
        if started {
            self.started.store(true, Ordering::Relaxed);
        }
        let channel = Channel::new(stream);
        let failed = |e: &dyn std::fmt::Display| NoSession::Failed(e.to_string());
        channel.send(Kind::Hello, &self.hello, None).map_err(|e| failed(&e))?;
        channel.stream.set_read_timeout(Some(START_WAIT)).map_err(|e| failed(&e))?;
        let answer = channel.recv(START_WAIT).map_err(|e| failed(&e))?;
        match answer.kind {
            Kind::Ready => Ok(Connection { channel, block: None }),
            Kind::Refused => match refusal(&answer.body) {
                (Some(Refusal::Gpu), _) => Err(NoSession::Gpu),
                (_, words) => Err(NoSession::Failed(format!("refused: {words}"))),
            },
            other => Err(NoSession::Failed(format!("answered a hello with {other:?}"))),
        }
    }
}

/// A refusal's reason and words (none, if it is not one).
fn refusal(body: &[u8]) -> (Option<Refusal>, String) {
    match decode_refusal(body) {
        Ok((why, words)) => (Some(why), words),
        Err(e) => (None, format!("a bad refusal: {}", e.0)),
    }
}

impl Connection {
    /// Puts `frame` in the session's block, a larger one asked for first if need be: its header.
    fn put(&mut self, frame: &Frame) -> Result<super::wire::FrameHeader, String> {
        let need = frame_bytes(frame);
        if self.block.as_ref().is_none_or(|b| b.len() < need) {
            self.channel.send(Kind::Room, &(need as u64).to_le_bytes(), None).map_err(|e| e.to_string())?;
            self.channel.stream.set_read_timeout(Some(START_WAIT)).map_err(|e| e.to_string())?;
            let answer = self.channel.recv(START_WAIT).map_err(|e| format!("no answer: {e}"))?;
            match (answer.kind, answer.fd) {
                (Kind::Ready, Some(fd)) => self.block = Some(Block::receive(fd)?),
                (Kind::Refused, _) => return Err(format!("refused: {}", refusal(&answer.body).1)),
                (other, _) => return Err(format!("answered a request for room with {other:?}")),
            }
        }
        let block = self.block.as_mut().filter(|b| b.len() >= need).ok_or("no room for the frame")?;
        Ok(put_frame(frame, block, 0).0)
    }

    /// Sends `kind` with `body` and waits up to `wait` for an answer of `expected` kind: its
    /// body.
    fn ask(&mut self, kind: Kind, body: &[u8], expected: Kind, wait: Duration) -> Result<Vec<u8>, String> {
        self.channel.send(kind, body, None).map_err(|e| e.to_string())?;
        self.channel.stream.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
        let answer = self.channel.recv(wait).map_err(|e| format!("no answer: {e}"))?;
        match answer.kind {
            k if k == expected && answer.fd.is_none() => Ok(answer.body),
            Kind::Refused => Err(format!("refused: {}", refusal(&answer.body).1)),
            other => Err(format!("answered {kind:?} with {other:?}")),
        }
    }

    /// Tells the service this process reads `pipe`.
    fn reads(&mut self, pipe: Pipe) -> Result<(), String> {
        let mut w = Writer::default();
        pipe.encode(&mut w);
        self.ask(Kind::Reads, &w.bytes, Kind::Ready, START_WAIT).map(drop)
    }

    /// Waits until the reader of held frame `token` is done with it: whether it is (or needs its
    /// bytes).
    fn await_over(&mut self, token: Token) -> Result<bool, String> {
        let mut w = Writer::default();
        token.encode(&mut w);
        let body = self.ask(Kind::Await, &w.bytes, Kind::Over, HOLD_WAIT)?;
        Ok(body == [1])
    }

    /// Done with held frame `token` (`done`), or its bytes are wanted after all.
    fn release(&mut self, token: Token, done: bool) -> Result<(), String> {
        let mut w = Writer::default();
        token.encode(&mut w);
        w.u8(done as u8);
        self.ask(Kind::Release, &w.bytes, Kind::Ready, START_WAIT).map(drop)
    }

    /// Sends frame `n` and waits for its output, handing the parts sent before it is done to
    /// `cx` (each taken out of the block before the service may write the next there); an error:
    /// the connection is done for. `loaded` is set where the service says it loaded kernels for
    /// the frame.
    fn frame(
        &mut self,
        n: usize,
        give: Give<'_>,
        starts: bool,
        pipe_out: Option<Pipe>,
        cx: &mut Context<'_>,
        loaded: &mut bool,
    ) -> Result<Reply, String> {
        let putting = histopipe_trace::span("service.put", n);
        let input = match give {
            Give::Frame(frame) => Input::Sent(self.put(frame)?),
            Give::Held(token) => Input::Held(token),
        };
        putting.end();
        let body = FrameRequest { n, starts, pipe_out, input }.encode();
        self.channel.send(Kind::Frame, &body, None).map_err(|e| e.to_string())?;
        self.channel.stream.set_read_timeout(Some(FRAME_WAIT)).map_err(|e| e.to_string())?;
        loop {
            let waiting = histopipe_trace::span("service.wait", n);
            let answer = self.channel.recv(FRAME_WAIT).map_err(|e| format!("no answer: {e}"))?;
            waiting.end();
            let done = match answer.kind {
                Kind::Done => true,
                Kind::Part => false,
                Kind::Held => {
                    let (token, load) =
                        decode_held(&answer.body).map_err(|e| format!("a bad answer: {}", e.0))?;
                    *loaded |= load;
                    return Ok(Reply::Held(token));
                }
                Kind::Over if matches!(give, Give::Held(_)) => return Ok(Reply::NotTaken),
                Kind::Refused => return Err(format!("refused: {}", refusal(&answer.body).1)),
                other => return Err(format!("answered a frame with {other:?}")),
            };
            if let Some(fd) = answer.fd {
                self.block = Some(Block::receive(fd)?);
            }
            let taking = histopipe_trace::span("service.take", n);
            let (served, load) = decode_reply(&answer.body, self.block.as_ref(), cx.memory())
                .map_err(|e| format!("a bad answer: {}", e.0))?;
            *loaded |= load;
            taking.end();
            if done {
                return Ok(Reply::Served(served));
            }
            // Taken out of the block: the service may write its next parts there.
            let parts = served.map_err(|_| "an error sent as a frame's part".to_string())?;
            self.channel.send(Kind::Taken, &[], None).map_err(|e| e.to_string())?;
            cx.send_parts(parts);
        }
    }
}
