//! The GPU service: one long-lived process per user and GPU set that holds the CUDA context, the
//! compiled kernels and the buffer pools, so that a tool run with `--backend gpu` does not open
//! them itself (a third of a second a process) but hands its frames to the service and gets their
//! outputs back. docs/histopipe-service.md says what a user sees, and what happens on every failure.
//!
//! - Where: a Unix socket in a folder only the user can enter ([`Address`]): `$XDG_RUNTIME_DIR`'s
//!   `histopipe/`, else `/tmp/histopipe-UID/`; the folder must be the user's, mode 0700, or the
//!   service is not used. Each side checks the other's uid on every connection ([`same_user`]).
//! - What travels: small messages on the socket ([`channel`], [`wire`]); samples in `memfd`
//!   shared memory that only the two processes hold ([`shm`]), copied out by the receiver.
//! - What runs: the client's own tool, parsed from its command line by the service as the tool
//!   parses it, its [`Tool::frame`](crate::Tool::frame) on the service's backends: the same code
//!   and the same bytes as in the tool's own process ([`server`]).
//! - When it fails: absent (and not startable), busy past its bounds, or gone mid-frame, the tool
//!   does the frame itself, says so once on stderr, and loses nothing ([`client`]).
//! - Between tools: where both ends of a pipe are tools on the service, a frame stays in the
//!   service and a reference to it crosses the pipe ([`held`]).

pub(crate) mod channel;
pub(crate) mod client;
pub(crate) mod held;
pub(crate) mod past;
pub(crate) mod server;
pub(crate) mod shm;
pub(crate) mod transfer;
pub(crate) mod wire;

use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use histopipe_frame::{SampleMemory, DEFAULT_MAX_PIXELS};
use lexopt::{Arg, Parser, ValueExt};

pub use server::{entry, Entry};

use crate::dispatch::{BackendChoice, Backends, Devices};
use crate::Common;
use channel::Channel;
use wire::Kind;

/// The environment variable that turns the service off (`off`) for the tools.
pub const VARIABLE: &str = "HISTOPIPE_SERVICE";

/// How long an idle service stays up by default (no session open).
const IDLE: Duration = Duration::from_secs(300);

/// Whether the tools use the service (`HISTOPIPE_SERVICE` is not `off` or `0`).
pub(crate) fn enabled() -> bool {
    !matches!(std::env::var(VARIABLE).as_deref(), Ok("off" | "0"))
}

/// The backend a service runs: `gpu`, or `cpu` where `HISTOPIPE_SERVICE_BACKEND=cpu` (for tests
/// of the service on machines without a GPU: such a service has a socket of its own).
pub(crate) fn backend() -> BackendChoice {
    match std::env::var("HISTOPIPE_SERVICE_BACKEND").as_deref() {
        Ok("cpu") => BackendChoice::Cpu,
        _ => BackendChoice::Gpu,
    }
}

/// Why the service does not run a command line, if it does not: one that names files (it reads
/// and writes none for a tool), writes side files, or raises the limits that bound what one frame
/// may cost it (`--max-pixels`, `--max-work`: such a command line runs in its tool, which may
/// spend what it likes). The tool and the service ask the same.
pub(crate) fn declines(common: &Common, names_files: bool, side_files: bool) -> Option<&'static str> {
    if names_files || side_files {
        return Some("a command line that names files runs in its tool");
    }
    if common.max_pixels > DEFAULT_MAX_PIXELS || common.max_work > Common::MAX_WORK {
        return Some("a command line that raises --max-pixels or --max-work runs in its tool");
    }
    None
}

/// Whether the process at the other end of `stream` runs as this process's user.
pub(crate) fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream).is_ok_and(|c| c.uid == rustix::process::getuid())
}

/// Where the service for a set of GPUs listens, and its files.
#[derive(Debug, Clone)]
pub(crate) struct Address {
    pub socket: PathBuf,
    /// Held (flock) by the running service: a second one started meanwhile ends at once.
    pub lock: PathBuf,
    /// The service's stderr.
    pub log: PathBuf,
    /// What `auto` remembers of its tools' runs ([`past`]).
    pub runs: PathBuf,
    /// The socket's inode once bound, to remove it only while it is this service's.
    bound: Option<u64>,
}

impl Address {
    /// The address of the service for `devices` (with `CUDA_VISIBLE_DEVICES` as it is), in the
    /// user's private folder, made if need be.
    pub(crate) fn of(devices: &Devices) -> Result<Address, String> {
        Address::in_dir(private_dir(true)?, devices)
    }

    /// [`Address::of`], where the user's private folder is there already (none is made).
    pub(crate) fn if_made(devices: &Devices) -> Result<Address, String> {
        Address::in_dir(private_dir(false)?, devices)
    }

    fn in_dir(dir: PathBuf, devices: &Devices) -> Result<Address, String> {
        let mut name = match backend() {
            BackendChoice::Cpu => "cpu-".to_owned(),
            _ => "gpu-".to_owned(),
        };
        name += &match devices {
            Devices::All => "all".to_owned(),
            Devices::List(list) => list.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("_"),
        };
        if let Some(visible) = std::env::var_os("CUDA_VISIBLE_DEVICES") {
            // FNV-1a: a short stable name for the set the driver shows.
            let hash = visible
                .as_encoded_bytes()
                .iter()
                .fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
            name += &format!("-v{:08x}", hash as u32);
        }
        let socket = dir.join(format!("{name}.sock"));
        if socket.as_os_str().len() >= 100 {
            return Err(format!("{}: too long a path for a socket", socket.display()));
        }
        Ok(Address {
            lock: dir.join(format!("{name}.lock")),
            log: dir.join(format!("{name}.log")),
            runs: dir.join(format!("{name}.runs")),
            socket,
            bound: None,
        })
    }

    /// Removes the socket if it is still the one this service bound.
    pub(crate) fn remove_socket(&self) {
        let ours = std::fs::symlink_metadata(&self.socket).is_ok_and(|m| Some(m.ino()) == self.bound);
        if ours {
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}

/// The user's private folder for the service: `$HISTOPIPE_SERVICE_DIR`, else
/// `$XDG_RUNTIME_DIR/histopipe`, else `/tmp/histopipe-UID`; made mode 0700 if absent (and
/// `make`), and used only if it is a folder (not a link) of this user that nobody else may enter.
fn private_dir(make: bool) -> Result<PathBuf, String> {
    let uid = rustix::process::getuid().as_raw();
    let dir = match (std::env::var_os("HISTOPIPE_SERVICE_DIR"), std::env::var_os("XDG_RUNTIME_DIR")) {
        (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(runtime)) if !runtime.is_empty() && Path::new(&runtime).is_dir() => {
            Path::new(&runtime).join("histopipe")
        }
        _ => std::env::temp_dir().join(format!("histopipe-{uid}")),
    };
    match make.then(|| std::fs::DirBuilder::new().mode(0o700).create(&dir)) {
        None | Some(Ok(())) => {}
        Some(Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Some(Err(e)) => return Err(format!("{}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{}: not a folder of this user's that only it may enter (mode 0700)",
            dir.display()
        ));
    }
    Ok(dir)
}

/// The service's binary: `$HISTOPIPE_SERVICE_BIN`, else `histopipe-service` beside this one.
fn service_exe() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HISTOPIPE_SERVICE_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("histopipe-service");
    path.is_file().then_some(path)
}

/// Starts the service for `devices` in the background, detached from this process's group (so a
/// Ctrl-C to the pipe that started it does not end it), its stderr to its log. `by_tool`: for a
/// tool's frames, not by `histopipe-service start`.
fn spawn(
    address: &Address,
    devices: &Devices,
    idle: Option<Duration>,
    by_tool: bool,
) -> Result<std::process::Child, String> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::process::CommandExt;
    let exe = service_exe().ok_or("histopipe-service is not installed beside this tool")?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&address.log)
        .map_err(|e| format!("{}: {e}", address.log.display()))?;
    let mut command = std::process::Command::new(&exe);
    command.args(["serve", "--device", &devices_spec(devices)]);
    if let Some(idle) = idle {
        command.args(["--idle", &idle.as_secs_f64().to_string()]);
    }
    // A trace is of the tool's run: a service it starts outlives it, and traces only if started
    // by hand with the variable set.
    if by_tool {
        command.env_remove(histopipe_trace::VARIABLE);
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{}: {e}", exe.display()))
}

fn devices_spec(devices: &Devices) -> String {
    match devices {
        Devices::All => "all".into(),
        Devices::List(list) => list.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","),
    }
}

/// Connects to the service at `address`, checking it runs as this user.
pub(crate) fn connect(address: &Address) -> io::Result<UnixStream> {
    let stream = UnixStream::connect(&address.socket)?;
    if !same_user(&stream) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the service's socket is another user's",
        ));
    }
    Ok(stream)
}

/// Connects to the service, starting it first (idle time `idle`, else its default; `by_tool` as
/// [`spawn`]'s) if it is not up; waits up to `wait` for it. With the connection, whether a
/// service was started for it.
fn connect_or_start(
    address: &Address,
    devices: &Devices,
    idle: Option<Duration>,
    by_tool: bool,
    wait: Duration,
) -> Result<(UnixStream, bool), String> {
    match connect(address) {
        Ok(stream) => return Ok((stream, false)),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused) => {}
        Err(e) => return Err(format!("{}: {e}", address.socket.display())),
    }
    let mut started = spawn(address, devices, idle, by_tool)?;
    let deadline = Instant::now() + wait;
    loop {
        match connect(address) {
            Ok(stream) => return Ok((stream, true)),
            // The one started ended at once, unable to take the lock: a service that was ending
            // (one that failed, whose socket refuses) still held it. Another is started.
            Err(_)
                if started.try_wait().is_ok_and(|status| status.is_some()) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
                started = spawn(address, devices, idle, by_tool)?;
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(format!(
                    "did not start within {} s: {e} (see {})",
                    wait.as_secs(),
                    address.log.display()
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

const USAGE: &str = "usage: histopipe-service [start|stop|status|serve] [--device LIST] [--idle SECONDS]

Holds the GPU for histopipe tools run with --backend gpu (started by the first of them, or by
`start`), and ends after SECONDS (default 300) with no tool connected. See histopipe-service(1)
(docs/histopipe-service.md).";

/// The `histopipe-service` binary: `start` (the default), `stop`, `status`, and `serve` (the
/// service itself, in the foreground), for the tools `tools`.
pub fn main(tools: &'static [Entry]) -> ExitCode {
    crate::panic::install_hook();
    crate::run::keep_freed_memory();
    match command(tools) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "histopipe-service: {e}");
            ExitCode::from(1)
        }
    }
}

fn command(tools: &'static [Entry]) -> Result<(), String> {
    let mut parser = Parser::from_env();
    let mut verb = None;
    let mut devices = Devices::List(vec![0]);
    let mut idle_given = None;
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Arg::Long("device") => {
                devices = Devices::parse(
                    &parser.value().map_err(|e| e.to_string())?.string().map_err(|e| e.to_string())?,
                )?
            }
            Arg::Long("idle") => {
                let text = parser.value().map_err(|e| e.to_string())?.string().map_err(|e| e.to_string())?;
                idle_given = match text.parse::<f64>() {
                    Ok(s) if s.is_finite() && (0.0..=1e7).contains(&s) => Some(Duration::from_secs_f64(s)),
                    _ => return Err(format!("--idle: bad value '{text}' (seconds, from 0 to 10000000)")),
                };
            }
            Arg::Short('h') | Arg::Long("help") => {
                server::say(&format!("{USAGE}\n"));
                return Ok(());
            }
            Arg::Value(v) if verb.is_none() => verb = Some(v),
            other => return Err(format!("{}\n{USAGE}", other.unexpected())),
        }
    }
    let address = Address::of(&devices)?;
    match verb.as_ref().and_then(|v| v.to_str()).unwrap_or("start") {
        "serve" => serve(tools, address, devices, idle_given.unwrap_or(IDLE)),
        "start" => {
            let (stream, _) =
                connect_or_start(&address, &devices, idle_given, false, Duration::from_secs(30))?;
            server::say(&ask(stream, Kind::Status)?);
            Ok(())
        }
        "status" => match connect(&address) {
            Ok(stream) => {
                server::say(&ask(stream, Kind::Status)?);
                Ok(())
            }
            Err(_) => {
                server::say(&format!("not running ({})\n", address.socket.display()));
                Ok(())
            }
        },
        "stop" => match connect(&address) {
            Ok(stream) => {
                ask(stream, Kind::Stop)?;
                // Done once the service has gone, its socket with it.
                let deadline = Instant::now() + Duration::from_secs(10);
                while address.socket.exists() && connect(&address).is_ok() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(())
            }
            Err(_) => Ok(()),
        },
        other => Err(format!("unknown command '{other}'\n{USAGE}")),
    }
}

/// Sends `kind` and returns the service's answer as text.
fn ask(stream: UnixStream, kind: Kind) -> Result<String, String> {
    let channel = Channel::new(stream);
    channel.send(kind, b"", None).map_err(|e| e.to_string())?;
    channel.stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let answer = channel.recv(Duration::from_secs(10)).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&answer.body).into_owned())
}

/// The service itself: takes the lock (or ends: one is running), binds the socket, opens the
/// GPUs while the first clients connect, and serves.
fn serve(
    tools: &'static [Entry],
    mut address: Address,
    devices: Devices,
    idle: Duration,
) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&address.lock)
        .map_err(|e| format!("{}: {e}", address.lock.display()))?;
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        // Another service for these GPUs is running, or starting.
        return Ok(());
    }
    // Only this user may connect, whatever the folder's mode becomes.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let _ = std::fs::remove_file(&address.socket);
    let listener =
        UnixListener::bind(&address.socket).map_err(|e| format!("{}: {e}", address.socket.display()))?;
    address.bound = std::fs::symlink_metadata(&address.socket).ok().map(|m| m.ino());
    histopipe_ops::parallel::set_threads(None);
    // With HISTOPIPE_TRACE in its environment (a service started by hand), the service traces its
    // side of each frame.
    let _ = histopipe_trace::start("histopipe-service");
    let backends = Arc::new(Backends::new(backend(), devices, Duration::ZERO, SampleMemory::default()));
    backends.start();
    let service = Arc::new(server::Service::new(backends, tools, address, idle));
    let result = service.run(listener).map_err(|e| e.to_string());
    drop(lock);
    result
}

/// The bytes of the shared memory block that [`decode_message`] reads frames and parts from: a
/// page, so that a message naming one span many times (a reply may: a tool copies each part, and
/// trusts its own user's service) cannot make a fuzzer's input allocate more than a page a part.
pub const FUZZ_BLOCK: usize = 4096;

thread_local! {
    /// [`decode_message`]'s block, made once per thread: its byte `i` is `i * 31 + 7` (mod 256),
    /// so that 8-bit frames of a maxval under 255 have samples over it somewhere.
    static FUZZ_MEMORY: Option<shm::Block> = shm::Block::create(FUZZ_BLOCK).ok().map(|mut block| {
        for (i, b) in block.as_mut_slice().iter_mut().enumerate() {
            *b = (i.wrapping_mul(31) + 7) as u8;
        }
        block
    });
}

/// For fuzzing (crates/fuzz's `service` target), not for the tools: decodes `body` as the
/// service (or, for the service's own messages, a tool) decodes a message of kind `kind`, the byte
/// after the magic in its header: a hello; a frame (its number, whether it starts the output and
/// its header, at the tools' default `--max-pixels`, then its samples taken out of a block of
/// [`FUZZ_BLOCK`] bytes); a reply (its parts taken out of that block, or an error); a refusal;
/// the ready answer's version. `Err` says why the message was refused; a panic is a defect.
pub fn decode_message(kind: u8, body: &[u8]) -> Result<(), String> {
    use wire::{decode_refusal, Bad, FrameRequest, Hello, Reader};
    let kind = Kind::of(kind).ok_or_else(|| format!("unknown message kind {kind}"))?;
    FUZZ_MEMORY.with(|block| {
        let block = block.as_ref().ok_or("no shared memory block")?;
        let read = || -> Result<(), Bad> {
            match kind {
                Kind::Hello => Hello::decode(body).map(drop),
                Kind::Ready => {
                    let mut r = Reader::new(body);
                    r.u32("the version")?;
                    r.end()
                }
                Kind::Refused => decode_refusal(body).map(drop),
                // As the service reads a frame (server.rs).
                Kind::Frame => {
                    let request =
                        FrameRequest::decode(body, histopipe_frame::DEFAULT_MAX_PIXELS, block.len())?;
                    match request.input {
                        wire::Input::Sent(header) => {
                            transfer::take_frame(header, block, &SampleMemory::default()).map(drop)
                        }
                        wire::Input::Held(_) => Ok(()),
                    }
                }
                // As a tool reads the service's reply (client.rs).
                Kind::Done | Kind::Part => {
                    transfer::decode_reply(body, Some(block), &SampleMemory::default()).map(drop)
                }
                Kind::Room => {
                    let mut r = Reader::new(body);
                    r.u64("the bytes")?;
                    r.end()
                }
                Kind::Reads => {
                    let mut r = Reader::new(body);
                    held::Pipe::decode(&mut r)?;
                    r.end()
                }
                Kind::Held => wire::decode_held(body).map(drop),
                Kind::Await => {
                    let mut r = Reader::new(body);
                    held::Token::decode(&mut r)?;
                    r.end()
                }
                Kind::Release => {
                    let mut r = Reader::new(body);
                    held::Token::decode(&mut r)?;
                    r.u8("whether the reader is done")?;
                    r.end()
                }
                Kind::Over => {
                    let mut r = Reader::new(body);
                    r.u8("whether the reader is done")?;
                    r.end()
                }
                Kind::Stop | Kind::Status | Kind::Taken => Ok(()),
            }
        };
        read().map_err(|Bad(why)| why)
    })
}

/// For fuzzing (crates/fuzz's `service` target), not for the tools: `bytes` as a connection's
/// stream, read message after message as the service reads it ([`Channel::recv`]: the header,
/// its bounds, the body) and each decoded by [`decode_message`], until the stream ends or a
/// message is refused. Bytes past the first 64 KiB are left out (a socket holds them unread).
/// The messages read whole, and why the reading ended.
pub fn decode_stream(bytes: &[u8]) -> (usize, String) {
    let bytes = &bytes[..bytes.len().min(64 << 10)];
    let (mut ours, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => return (0, format!("no socket pair: {e}")),
    };
    if let Err(e) = ours.write_all(bytes) {
        return (0, format!("cannot write the stream: {e}"));
    }
    drop(ours);
    let channel = Channel::new(theirs);
    let mut read = 0;
    loop {
        match channel.recv(Duration::from_secs(1)) {
            Ok(message) => match decode_message(message.kind as u8, &message.body) {
                Ok(()) => read += 1,
                Err(why) => return (read, why),
            },
            Err(e) => return (read, e.to_string()),
        }
    }
}

/// For fuzzing: whole messages as they travel (header and body), one of each kind the service
/// and the tools send, a frame's samples and a reply's parts within a block of [`FUZZ_BLOCK`]
/// bytes; and a session's stream, a hello and two frames.
pub fn seed_messages() -> Vec<Vec<u8>> {
    use histopipe_frame::{Annotation, Channels, Depth, Format, Geometry, Origin, Source};
    use wire::{FrameHeader, Hello, Span, Writer};
    let message = |kind: Kind, body: &[u8]| {
        let mut m = vec![b'H', b'P', kind as u8, 0];
        m.extend_from_slice(&(body.len() as u32).to_le_bytes());
        m.extend_from_slice(body);
        m
    };
    let header = |width: usize, height: usize, channels: Channels, depth: Depth, maxval: u16| {
        let len = (width * height * channels.count() * depth.bytes()) as u64;
        FrameHeader {
            width,
            height,
            channels,
            maxval,
            depth,
            format: Format::Pam,
            geometry: Some(Geometry::identity(width + 2, height)),
            annotations: vec![Annotation { key: "angles".into(), value: "0,90".into() }],
            source: Some(Source { path: "in/a.png".into(), index: 2, origin: Origin::Stream }),
            samples: Span { offset: 64, len },
        }
    };
    let frame = |h: FrameHeader| {
        let request = wire::FrameRequest { n: 3, starts: true, pipe_out: None, input: wire::Input::Sent(h) };
        message(Kind::Frame, &request.encode())
    };
    let (pipe, token) = (held::Pipe { dev: 14, ino: 90210 }, held::Token(0x5eed, 17));
    let held_frame =
        wire::FrameRequest { n: 2, starts: false, pipe_out: Some(pipe), input: wire::Input::Held(token) };
    let with = |kind: Kind, f: &dyn Fn(&mut Writer)| {
        let mut w = Writer::default();
        f(&mut w);
        message(kind, &w.bytes)
    };
    let hello = |tool: &str, args: &[&str]| {
        let args = args.iter().map(std::ffi::OsString::from).collect();
        message(Kind::Hello, &Hello { version: wire::VERSION, tool: tool.into(), args }.encode())
    };
    let gray = frame(header(8, 4, Channels::Gray, Depth::U8, 255));
    let rgb16 = frame(header(5, 3, Channels::Rgb, Depth::U16, 65535));
    let float = frame(header(4, 4, Channels::GrayAlpha, Depth::F32, 1));
    // A reply (kernels loaded for it): a frame, bytes and words (tags 0, 1, 2), each a span of the
    // block.
    let mut reply = Writer::default();
    reply.u8(1).u8(0).u32(3).u8(0);
    header(8, 4, Channels::Gray, Depth::U8, 255).encode(&mut reply);
    reply.u8(1).span(Span { offset: 100, len: 20 }).u8(2).span(Span { offset: 200, len: 16 });
    let mut error = Writer::default();
    error.u8(0).u8(1).u8(1).text("frame 1: a frame of 3x2 pixels, over --max-pixels 4");
    let mut refused = Writer::default();
    refused.u8(wire::Refusal::Busy as u8).text("256 sessions already");
    let session = [hello("pad", &["--to", "9x9"]), gray.clone(), rgb16.clone()].concat();
    vec![
        hello("pad", &["--to", "9x9"]),
        hello("radon", &["--angles", "0:180:0.5", "--circle"]),
        gray,
        rgb16,
        float,
        message(Kind::Done, &reply.bytes),
        message(Kind::Done, &error.bytes),
        message(Kind::Refused, &refused.bytes),
        message(Kind::Ready, &Writer::default().u32(wire::VERSION).bytes),
        message(Kind::Status, b""),
        message(Kind::Stop, b""),
        message(Kind::Frame, &held_frame.encode()),
        with(Kind::Reads, &|w| pipe.encode(w)),
        message(Kind::Held, &wire::encode_held(token, true)),
        with(Kind::Await, &|w| token.encode(w)),
        with(Kind::Release, &|w| {
            token.encode(w);
            w.u8(1);
        }),
        with(Kind::Over, &|w| {
            w.u8(1);
        }),
        session,
    ]
}

#[cfg(test)]
mod fuzzing_tests {
    use super::*;

    /// The fuzz target's seeds are messages the service and the tools take, read whole; every cut
    /// of them is refused or read short, never a panic.
    #[test]
    fn the_fuzz_seeds_decode_and_their_cuts_are_refused() {
        let seeds = seed_messages();
        for (i, seed) in seeds.iter().enumerate() {
            let whole = if i + 1 == seeds.len() { 3 } else { 1 };
            assert_eq!(decode_stream(seed), (whole, "the connection closed".into()), "seed {i}");
            for cut in 1..seed.len() {
                let (read, why) = decode_stream(&seed[..cut]);
                // A cut between the session's messages is a shorter session.
                let refused = whole > 1 || why != "the connection closed";
                assert!(read < whole && refused, "seed {i} cut at {cut}: {why}");
            }
        }
        assert!(decode_message(4, &seed_messages()[2][8..]).is_ok());
        assert!(decode_message(16, b"").unwrap_err().contains("unknown message kind"));
    }
}
