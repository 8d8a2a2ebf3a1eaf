//! The service's side: the listening socket, a thread per connection, and each session's frames
//! run through the client's tool on the service's backends.

use std::io::{self, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use histopipe_frame::{read_back_format, Channels, Depth};
use histopipe_ops::parallel::FrameWork;

use super::channel::{Channel, RecvError};
use super::held::{Pipe, Shelf, Token, Visits};
use super::shm::{Block, Pool};
use super::transfer::{encode_reply, parts_bytes, take_frame, Served};
use super::wire::{
    encode_held, encode_refusal, Bad, FrameRequest, Hello, Input, Kind, Reader, Refusal, Writer, VERSION,
};
use super::{same_user, Address};
use crate::args::{self, Asked};
use crate::dispatch::Backends;
use crate::panic::catch;
use crate::tool::{Context, Tool, FLOAT_REFUSED};
use crate::writer::{Done, Part, Written};
use crate::Error;

/// The most connections at once: the sessions, and a few more, so that `status` and `stop` are
/// answered when the sessions are all taken. One past them is closed unanswered.
const CONNECTIONS_MOST: usize = SESSIONS_MOST + 16;

/// The most sessions at once; a client past them is told the service is busy.
const SESSIONS_MOST: usize = 256;

/// How long the rest of a message may take once it has begun, and a new connection's first
/// message.
const WITHIN: Duration = Duration::from_secs(10);

/// How long a session waits for its next frame before it is closed.
const SESSION_IDLE: Duration = Duration::from_secs(60);

/// How long a frame waits for memory held by other sessions' frames before it is refused as busy
/// (its client then does it itself).
const MEMORY_WAIT: Duration = Duration::from_secs(10);

/// The longest a frame is held for its reader: past it, its writer writes its bytes.
const HOLD_MOST: Duration = Duration::from_secs(120);

/// How long a service whose GPUs cannot be opened stays up once idle: long enough for the
/// clients of one batch to hear why, short enough not to linger on a machine without a GPU.
const UNUSABLE_IDLE: Duration = Duration::from_secs(2);

/// One tool the service runs: its name, and its sessions' loop.
pub struct Entry {
    pub name: &'static str,
    serve: fn(&Service, &Channel, Hello),
}

/// The service's entry for tool `T`.
pub const fn entry<T: Tool>() -> Entry {
    Entry { name: T::NAME, serve: serve::<T> }
}

/// The bytes of frames the sessions hold at once, bounded: a frame past the bound waits for
/// others to finish, then is refused.
struct Budget {
    used: Mutex<u64>,
    freed: Condvar,
    most: u64,
}

/// Bytes held from a [`Budget`] until dropped.
struct Held<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Budget {
    fn hold(&self, bytes: u64) -> Option<Held<'_>> {
        self.hold_within(bytes, MEMORY_WAIT)
    }

    /// Holds `bytes`, waiting at most `wait` for other frames to give them back.
    fn hold_within(&self, bytes: u64, wait: Duration) -> Option<Held<'_>> {
        let deadline = Instant::now() + wait;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used + bytes > self.most {
            let left = deadline.checked_duration_since(Instant::now())?;
            used = self.freed.wait_timeout(used, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        *used += bytes;
        Some(Held { budget: self, bytes })
    }
}

impl Budget {
    /// Gives back `bytes` held before.
    fn free(&self, bytes: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= bytes;
        self.freed.notify_all();
    }
}

impl Held<'_> {
    /// Keeps the bytes held past this value: they are given back by [`Budget::free`].
    fn keep(self) -> u64 {
        let bytes = self.bytes;
        std::mem::forget(self);
        bytes
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.free(self.bytes);
    }
}

/// The running service: its backends, shared by every session, and its counts.
pub struct Service {
    backends: Arc<Backends>,
    tools: &'static [Entry],
    address: Address,
    started: Instant,
    idle: Duration,
    /// Connections open (each a thread), and sessions among them (a hello answered).
    connections: AtomicUsize,
    sessions: AtomicUsize,
    frames: AtomicU64,
    last: Mutex<Instant>,
    budget: Budget,
    /// The shared memory blocks made ahead, none lent yet.
    pool: Pool,
    /// Frames held between two tools of a pipe.
    shelf: Shelf,
    /// The GPUs could not be opened: the service ends as soon as it is idle.
    unusable: std::sync::atomic::AtomicBool,
    /// `HISTOPIPE_SERVICE_FAIL_AT=N` (or `N:K`), for the tests of a service lost mid-frame: the
    /// process ends at once, unanswered, when its frame N comes (or as it would send frame N's
    /// K-th part made before the frame is done).
    fail_at: Option<(u64, u64)>,
}

/// `HISTOPIPE_SERVICE_FAIL_AT`'s frame and part (0: as the frame comes).
fn fail_at(value: &str) -> Option<(u64, u64)> {
    match value.split_once(':') {
        Some((frame, part)) => Some((frame.parse().ok()?, part.parse().ok()?)),
        None => Some((value.parse().ok()?, 0)),
    }
}

impl Service {
    pub(crate) fn new(
        backends: Arc<Backends>,
        tools: &'static [Entry],
        address: Address,
        idle: Duration,
    ) -> Service {
        Service {
            backends,
            tools,
            address,
            started: Instant::now(),
            idle,
            connections: AtomicUsize::new(0),
            sessions: AtomicUsize::new(0),
            frames: AtomicU64::new(0),
            last: Mutex::new(Instant::now()),
            budget: Budget { used: Mutex::new(0), freed: Condvar::new(), most: memory_budget() },
            pool: Pool::default(),
            shelf: Shelf::default(),
            unusable: std::sync::atomic::AtomicBool::new(false),
            fail_at: std::env::var("HISTOPIPE_SERVICE_FAIL_AT").ok().and_then(|v| fail_at(&v)),
        }
    }

    /// Serves connections on `listener` until told to stop or idle for its idle time.
    pub(crate) fn run(self: Arc<Self>, listener: UnixListener) -> io::Result<()> {
        let watcher = self.clone();
        std::thread::Builder::new().name("histopipe-service-idle".into()).spawn(move || watcher.watch())?;
        let maker = self.clone();
        std::thread::Builder::new()
            .name("histopipe-service-blocks".into())
            .spawn(move || maker.pool.make_ahead())?;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if !same_user(&stream) {
                // Another user's process: closed unanswered.
                continue;
            }
            if self.connections.fetch_add(1, Ordering::AcqRel) >= CONNECTIONS_MOST {
                self.connections.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let this = self.clone();
            let session = std::thread::Builder::new().name("histopipe-service-session".into());
            let spawned = session.spawn(move || {
                // A panic outside a frame's own catch ends this connection, not the count.
                let _ = catch(|| this.connection(stream));
                this.touch();
                this.connections.fetch_sub(1, Ordering::AcqRel);
            });
            if spawned.is_err() {
                self.connections.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    fn touch(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Ends the process once no session has been open for the idle time.
    fn watch(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(200).min(self.idle.max(Duration::from_millis(10))));
            let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
            let idle =
                if self.unusable.load(Ordering::Acquire) { self.idle.min(UNUSABLE_IDLE) } else { self.idle };
            if self.connections.load(Ordering::Acquire) == 0 && last.elapsed() >= idle {
                self.end();
            }
        }
    }

    /// Removes the socket (if it is still this service's) and ends the process.
    fn end(&self) -> ! {
        self.address.remove_socket();
        std::process::exit(0)
    }

    /// One connection: its first message says what it wants.
    fn connection(&self, stream: UnixStream) {
        let channel = Channel::new(stream);
        if channel.stream.set_read_timeout(Some(WITHIN)).is_err() {
            return;
        }
        let message = match channel.recv(WITHIN) {
            Ok(m) => m,
            Err(RecvError::Closed | RecvError::Io(_)) => return,
            Err(RecvError::Bad(why)) => {
                let _ = refuse(&channel, Refusal::Protocol, &why);
                return;
            }
        };
        match message.kind {
            Kind::Hello => match Hello::decode(&message.body) {
                Ok(hello) if hello.version == VERSION => match self
                    .tools
                    .iter()
                    .find(|t| t.name == hello.tool)
                {
                    Some(entry) => {
                        if self.sessions.fetch_add(1, Ordering::AcqRel) < SESSIONS_MOST {
                            (entry.serve)(self, &channel, hello);
                        } else {
                            let busy = format!("{SESSIONS_MOST} sessions already");
                            let _ = refuse(&channel, Refusal::Busy, &busy);
                        }
                        self.sessions.fetch_sub(1, Ordering::AcqRel);
                    }
                    None => {
                        let _ =
                            refuse(&channel, Refusal::CommandLine, &format!("no tool {:?} here", hello.tool));
                    }
                },
                Ok(hello) => {
                    let why = format!("protocol version {} (this service speaks {VERSION})", hello.version);
                    let _ = refuse(&channel, Refusal::Protocol, &why);
                }
                Err(Bad(why)) => {
                    let _ = refuse(&channel, Refusal::Protocol, &why);
                }
            },
            Kind::Status => {
                let _ = channel.send(Kind::Status, self.status().as_bytes(), None);
            }
            Kind::Stop => {
                let _ = channel.send(Kind::Status, b"stopping\n", None);
                self.end();
            }
            _ => {
                let _ = refuse(&channel, Refusal::Protocol, "a session begins with a hello");
            }
        }
    }

    /// How the service stands, a `key value` line each.
    fn status(&self) -> String {
        let (pipes, holding, held) = self.shelf.counts();
        format!(
            "pid {}\nsocket {}\nbackend {}\nup {:.1} s\nsessions {}\nframes {}\npipes {pipes}\nheld {holding}\nheld-total {held}\nidle exit {} s\n",
            std::process::id(),
            self.address.socket.display(),
            self.backends.describe(),
            self.started.elapsed().as_secs_f64(),
            self.sessions.load(Ordering::Acquire),
            self.frames.load(Ordering::Relaxed),
            self.idle.as_secs_f64(),
        )
    }
}

/// Half the machine's memory: what the sessions' frames may hold at once.
fn memory_budget() -> u64 {
    // SAFETY: sysconf only reads system values.
    let (count, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    (count.max(1 << 18) as u64).saturating_mul(page.max(4096) as u64) / 2
}

/// Says why the service will not go on with this connection.
fn refuse(channel: &Channel, why: Refusal, words: &str) -> io::Result<()> {
    channel.send(Kind::Refused, &encode_refusal(why, words), None)
}

/// A session of tool `T`: the client's command line parsed as the tool parses it, then its frames
/// one at a time until it closes the connection.
fn serve<T: Tool>(service: &Service, channel: &Channel, hello: Hello) {
    let mut tool = T::default();
    let command = match args::parse_command(&mut tool, hello.args, Asked::Refuse) {
        Ok(Some(command)) => command,
        Ok(None) => return,
        Err(e) => {
            let _ = refuse(channel, Refusal::CommandLine, &e.message);
            return;
        }
    };
    if let Some(why) = super::declines(&command.common, command.names_files, !tool.side_files().is_empty()) {
        let _ = refuse(channel, Refusal::CommandLine, why);
        return;
    }
    if let Err(e) = service.backends.wait_open() {
        service.unusable.store(true, Ordering::Release);
        let _ = refuse(channel, Refusal::Gpu, &e.to_string());
        return;
    }
    if channel.send(Kind::Ready, &Writer::default().u32(VERSION).bytes, None).is_err() {
        return;
    }
    let common = command.common;
    let mut lent = Lent { pool: &service.pool, block: None };
    let mut visits = Visiting { service, visits: service.shelf.visits() };
    loop {
        // A session with no frame for a while is closed (its tool opens another if it has more):
        // idle sessions would hold the service's places and keep it from ending.
        if channel.stream.set_read_timeout(Some(SESSION_IDLE)).is_err() {
            return;
        }
        let message = match channel.recv(WITHIN) {
            Ok(m) => m,
            Err(RecvError::Bad(why)) => {
                let _ = refuse(channel, Refusal::Protocol, &why);
                return;
            }
            Err(_) => return,
        };
        if message.fd.is_some() {
            let _ = refuse(channel, Refusal::Protocol, "the service's memory is its own: a tool sends none");
            return;
        }
        let answered = match message.kind {
            Kind::Room => room_for(service, channel, &mut lent, &message.body),
            Kind::Reads => reads(service, channel, &mut visits.visits, &message.body),
            Kind::Await => await_over(service, channel, &mut visits.visits, &message.body),
            Kind::Release => release(service, channel, &mut visits.visits, &message.body),
            Kind::Frame => {
                one_frame(service, channel, &mut lent, &mut visits.visits, &common, &message.body, &mut tool)
            }
            _ => {
                let _ = refuse(channel, Refusal::Protocol, "a session sends frames");
                Err(())
            }
        };
        if answered.is_err() {
            return;
        }
    }
}

/// A session's visits to the shelf of held frames, undone when the session ends.
struct Visiting<'a> {
    service: &'a Service,
    visits: Visits,
}

impl Drop for Visiting<'_> {
    fn drop(&mut self) {
        self.service.shelf.leave(&mut self.visits, |bytes| self.service.budget.free(bytes));
    }
}

/// A session's answer to a message, or the session's end (`Err`).
type Answered = Result<(), ()>;

/// Answers a request for room: the session's block, a larger one if need be.
fn room_for(service: &Service, channel: &Channel, lent: &mut Lent<'_>, body: &[u8]) -> Answered {
    let bytes = match room(body) {
        Ok(bytes) if bytes <= service.budget.most => bytes,
        Ok(_) => {
            let _ = refuse(channel, Refusal::Busy, "a frame larger than the service's memory for frames");
            return Err(());
        }
        Err(Bad(why)) => {
            let _ = refuse(channel, Refusal::Protocol, &why);
            return Err(());
        }
    };
    if let Err(e) = lent.grow(bytes as usize) {
        let _ = refuse(channel, Refusal::Busy, &format!("no shared memory: {e}"));
        return Err(());
    }
    let fd = lent.block.as_ref().map(Block::fd);
    channel.send(Kind::Ready, &Writer::default().u32(VERSION).bytes, fd).map_err(drop)
}

/// Takes a message's body as `read` reads it, or refuses it.
fn body<T>(
    channel: &Channel,
    body: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, Bad>,
) -> Result<T, ()> {
    let mut r = Reader::new(body);
    match read(&mut r).and_then(|v| r.end().map(|()| v)) {
        Ok(v) => Ok(v),
        Err(Bad(why)) => {
            let _ = refuse(channel, Refusal::Protocol, &why);
            Err(())
        }
    }
}

/// The session's tool reads a pipe: frames for it may be held.
fn reads(service: &Service, channel: &Channel, visits: &mut Visits, message: &[u8]) -> Answered {
    let pipe = body(channel, message, Pipe::decode)?;
    if !service.shelf.reads(visits, pipe) {
        let _ = refuse(channel, Refusal::Protocol, "more pipes than a tool reads");
        return Err(());
    }
    channel.send(Kind::Ready, &Writer::default().u32(VERSION).bytes, None).map_err(drop)
}

/// Waits until the reader of a frame this session held is done with it, and says whether it is.
fn await_over(service: &Service, channel: &Channel, visits: &mut Visits, message: &[u8]) -> Answered {
    let token = body(channel, message, Token::decode)?;
    let gone = || closed(&channel.stream);
    let over = service.shelf.wait(visits, token, HOLD_MOST, gone, |bytes| service.budget.free(bytes));
    channel.send(Kind::Over, &[over as u8], None).map_err(drop)
}

/// The session is done with a held frame it took, or wants its bytes after all.
fn release(service: &Service, channel: &Channel, visits: &mut Visits, message: &[u8]) -> Answered {
    let (token, done) = body(channel, message, |r| Ok((Token::decode(r)?, r.flag("whether it is done")?)))?;
    // A frame the session did not take, declined: its writer writes its bytes.
    if !done {
        if let Some(bytes) = service.shelf.drop_waiting(token) {
            service.budget.free(bytes);
        }
    }
    service.shelf.release(visits, token, done);
    channel.send(Kind::Ready, &Writer::default().u32(VERSION).bytes, None).map_err(drop)
}

/// Whether the other end of `stream` has closed it (a message waiting is no close).
fn closed(stream: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(stream, &mut byte, flags), Ok((0, _)) | Err(rustix::io::Errno::CONNRESET))
}

/// Runs the session's tool (`frame`) on the frame of a frame request, and answers with its
/// output: sent back in the session's block, or held for the reader of the client's pipe.
fn one_frame<T: Tool>(
    service: &Service,
    channel: &Channel,
    lent: &mut Lent<'_>,
    visits: &mut Visits,
    common: &crate::Common,
    message: &[u8],
    tool: &mut T,
) -> Answered {
    let block_len = lent.block.as_ref().map_or(0, Block::len);
    let FrameRequest { n, starts, pipe_out, input } =
        match FrameRequest::decode(message, common.max_pixels, block_len) {
            Ok(request) => request,
            Err(Bad(why)) => {
                let _ = refuse(channel, Refusal::Protocol, &why);
                return Err(());
            }
        };
    let number = service.frames.fetch_add(1, Ordering::Relaxed) + 1;
    if service.fail_at == Some((number, 0)) {
        std::process::abort();
    }
    histopipe_trace::set_frame(n);
    // One of the frames under way on the service, as a tool's worker's is: its copies are split
    // over the pool only while no other frame is (histopipe_ops::parallel::copy_part), its host
    // work for its share of the pool's threads.
    let _work = FrameWork::begin();
    let taking = histopipe_trace::span("service.in", n);
    let (frame, _held) = match input {
        Input::Sent(header) => {
            let Some(block) = lent.block.as_ref() else {
                let _ = refuse(channel, Refusal::Protocol, "a frame before its room");
                return Err(());
            };
            let Some(held) = service.budget.hold(header.samples.len) else {
                let _ = refuse(channel, Refusal::Busy, "out of memory for frames past the wait");
                return Err(());
            };
            match take_frame(header, block, service.backends.memory()) {
                Ok(frame) => (frame, held),
                Err(Bad(why)) => {
                    let _ = refuse(channel, Refusal::Protocol, &why);
                    return Err(());
                }
            }
        }
        Input::Held(token) => match service.shelf.take(visits, token) {
            // Only a frame the tool would have read as it is: its reading makes colour gray for
            // some tools, and refuses frames past its --max-pixels.
            Some((frame, bytes))
                if frame.pixel_count() as u64 <= common.max_pixels
                    && (frame.channels == Channels::Gray || !tool.reads_gray()) =>
            {
                (frame, Held { budget: &service.budget, bytes })
            }
            taken => {
                if let Some((_, bytes)) = taken {
                    service.budget.free(bytes);
                    service.shelf.release(visits, token, false);
                }
                // Its bytes follow it in the stream.
                return channel.send(Kind::Over, &[0], None).map_err(drop);
            }
        },
    };
    taking.end();
    let loads = Loads::now();
    // The parts the tool hands on before the frame is done go to the client as they come,
    // from a thread of their own, while the tool makes the rest.
    let (early, made) = std::sync::mpsc::channel();
    let fail_after = service.fail_at.filter(|&(at, _)| at == number).map(|(_, part)| part);
    let (result, forwarded) = std::thread::scope(|scope| {
        let forwarder = scope.spawn(|| {
            histopipe_trace::set_frame(n);
            forward(channel, lent, made, loads, fail_after)
        });
        let working = histopipe_trace::span("service.work", n);
        let result = catch(|| {
            let mut cx = Context::new(n, &frame, common, T::FLAGS, &service.backends, starts, Vec::new())
                .writing_early(early);
            if !T::FLOAT && frame.depth() == Depth::F32 {
                return Err(cx.invalid(FLOAT_REFUSED));
            }
            tool.frame(&mut cx, frame)?;
            cx.finish()
        })
        .unwrap_or_else(|panic| Err(Error::internal(Default::default(), "service", &panic)));
        working.end();
        let forwarded = forwarder.join().unwrap_or_else(|_| Err("its thread ended".into()));
        (result, forwarded)
    });
    let sent_early = match forwarded {
        Ok(groups) => groups > 0,
        Err(why) => {
            let _ = refuse(channel, Refusal::Busy, &format!("a frame's parts not sent: {why}"));
            return Err(());
        }
    };
    let mut result = result.map_err(|e| (e.kind, e.message));
    // A frame alone, for the reader of the client's pipe: held, and only its reference crosses
    // the pipe.
    if let (Some(pipe), Ok(parts), false) = (pipe_out, &mut result, sent_early) {
        if parts.len() == 1 && service.shelf.is_read(pipe) {
            match parts.pop() {
                Some(Part::Frame(mut frame)) => {
                    let bytes = (frame.pixels.len() * frame.depth().bytes()) as u64;
                    let room = || service.budget.hold_within(bytes, Duration::ZERO);
                    match read_back_format(&frame).and_then(|format| Some((format, room()?))) {
                        Some((format, held)) => {
                            frame.format = format;
                            let token = service.shelf.hold(visits, frame, held.keep(), pipe);
                            let body = encode_held(token, loads.since());
                            return channel.send(Kind::Held, &body, None).map_err(drop);
                        }
                        None => parts.push(Part::Frame(frame)),
                    }
                }
                Some(other) => parts.push(other),
                None => {}
            }
        }
    }
    // The outputs go where the frame was (copied out by now), in a larger block if need be.
    match send_reply(channel, lent, Kind::Done, &result, loads.since()) {
        Ok(()) => Ok(()),
        Err(Unsent::NoMemory(why)) => {
            let _ = refuse(channel, Refusal::Busy, &why);
            Err(())
        }
        Err(Unsent::Closed(_)) => Err(()),
    }
}

/// The kernel modules the process had loaded when a frame began: a frame for which more were
/// loaded paid for a first use (seconds, for a compile), which the next will not; the tool is
/// told, and leaves the run out of the times `auto` weighs ([`super::past`]). A load for another
/// session's frame meanwhile counts too: that frame held the GPU while it loaded.
#[derive(Clone, Copy)]
struct Loads(u64);

impl Loads {
    fn now() -> Loads {
        Loads(histopipe_ops::modules_loaded())
    }

    /// Whether kernels were loaded since.
    fn since(self) -> bool {
        histopipe_ops::modules_loaded() != self.0
    }
}

/// Why a reply was not sent.
enum Unsent {
    /// No block large enough for its parts.
    NoMemory(String),
    /// The connection failed.
    Closed(String),
}

/// Lays a frame's parts (or its error) out in the session's block, a larger one if need be (its
/// descriptor then goes with the message), and sends them as `kind`: the frame's last
/// ([`Kind::Done`]) or those made before it is done ([`Kind::Part`]); `loaded`: kernels were
/// loaded since the frame began ([`Loads`]).
fn send_reply(
    channel: &Channel,
    lent: &mut Lent<'_>,
    kind: Kind,
    result: &Served,
    loaded: bool,
) -> Result<(), Unsent> {
    let need = result.as_ref().map_or(0, |parts| parts_bytes(parts));
    let grown = result.is_ok() && lent.block.as_ref().is_none_or(|b| b.len() < need);
    if grown {
        lent.grow(need).map_err(|e| Unsent::NoMemory(format!("no shared memory: {e}")))?;
    }
    let laying = histopipe_trace::span_here("service.out");
    let body = encode_reply(result, lent.block.as_mut(), loaded);
    laying.end();
    let fd = lent.block.as_ref().filter(|_| grown).map(Block::fd);
    channel.send(kind, &body, fd).map_err(|e| Unsent::Closed(e.to_string()))
}

/// Sends each group of parts a frame hands on before it is done ([`Kind::Part`]), laid out in
/// the session's block once the client has taken the last group out of it ([`Kind::Taken`]),
/// until the frame is done. After a failure, what is still made is dropped; the error is the
/// session's end. `fail_after`: the test's abort as the K-th group would go.
fn forward(
    channel: &Channel,
    lent: &mut Lent<'_>,
    made: Receiver<Done>,
    loads: Loads,
    fail_after: Option<u64>,
) -> Result<u64, String> {
    let mut outcome = Ok(0);
    for (k, done) in (1..).zip(made) {
        let Ok(Written::Early(parts)) = done.result else { continue };
        if outcome.is_ok() {
            if fail_after == Some(k) {
                std::process::abort();
            }
            outcome = send_parts(channel, lent, parts, loads.since()).map(|()| k);
        }
    }
    outcome
}

/// Sends `parts` made before their frame is done, and waits for the client to take them out.
fn send_parts(channel: &Channel, lent: &mut Lent<'_>, parts: Vec<Part>, loaded: bool) -> Result<(), String> {
    let parts = Ok(parts);
    send_reply(channel, lent, Kind::Part, &parts, loaded)
        .map_err(|(Unsent::NoMemory(why) | Unsent::Closed(why))| why)?;
    // Counts laid out, their buffer kept for the next group's (a cube's, of tens of megabytes).
    for part in parts.into_iter().flatten() {
        if let Part::Words(words) = part {
            histopipe_ops::parallel::give_back_words(words);
        }
    }
    channel.stream.set_read_timeout(Some(SESSION_IDLE)).map_err(|e| e.to_string())?;
    let answer = channel.recv(WITHIN).map_err(|e| format!("no answer: {e:?}"))?;
    match (answer.kind, answer.fd) {
        (Kind::Taken, None) => Ok(()),
        (other, _) => Err(format!("answered a frame's part with {other:?}")),
    }
}

/// A room request's bytes.
fn room(body: &[u8]) -> Result<u64, Bad> {
    let mut r = Reader::new(body);
    let bytes = r.u64("the bytes")?;
    r.end()?;
    Ok(bytes)
}

/// The block a session has from the service's pool: its own, retired once the session is done
/// with it (freed, never lent again: [`Pool`]).
struct Lent<'a> {
    pool: &'a Pool,
    block: Option<Block>,
}

impl Lent<'_> {
    /// A block of at least `bytes` in place of the one lent.
    fn grow(&mut self, bytes: usize) -> io::Result<()> {
        if let Some(old) = self.block.replace(self.pool.lend(bytes)?) {
            self.pool.retire(old);
        }
        Ok(())
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.pool.retire(block);
        }
    }
}

/// Prints `text` for a command of the service's (`status`); a closed output is no failure.
pub(crate) fn say(text: &str) {
    let _ = io::stdout().write_all(text.as_bytes());
}
