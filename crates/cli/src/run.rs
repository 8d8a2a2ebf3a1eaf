use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use histopipe_frame::{Frame, FrameReader, FrameWriter, ReadOptions, SampleMemory, WriteOptions};
use histopipe_ops::{Engine, Op};
use lexopt::{Arg, Parser};

use crate::{Common, Error, ErrorKind, COMMON_HELP};

/// One histopipe tool: its options, and what it does with each frame.
pub trait Tool: Default {
    /// The binary's name, which prefixes every error.
    const NAME: &'static str;
    /// `--help` text above the common options: what it computes, its options, an example.
    const HELP: &'static str;

    /// Takes a tool option, named as written (`--fill`, `-b`), its value (if any) from `parser`;
    /// `Ok(false)` if it is not one of this tool's.
    fn option(&mut self, name: &str, parser: &mut Parser) -> Result<bool, Error> {
        let _ = (name, parser);
        Ok(false)
    }

    /// Takes a positional argument.
    fn positional(&mut self, value: OsString) -> Result<(), Error> {
        Err(Error::usage(format!("unexpected argument '{}'", value.to_string_lossy())))
    }

    /// Checks the options once all are parsed.
    fn check(&mut self, common: &Common) -> Result<(), Error> {
        let _ = common;
        Ok(())
    }

    /// Handles one frame: usually transforms it and writes the result with [`Context::write`].
    fn frame(&mut self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error>;
}

/// What a tool's [`Tool::frame`] works with.
pub struct Context<'a> {
    /// The frame's number in the stream, from 1.
    pub index: usize,
    pub common: &'a Common,
    pub engine: &'a mut Engine,
    out: &'a SyncSender<Output>,
    text: Vec<u8>,
}

/// What the frame loop hands to the writer thread, in order.
enum Output {
    Frame(usize, Frame),
    Bytes(Vec<u8>),
}

impl Context<'_> {
    /// Runs an operation on the chosen backend; errors are placed at this frame.
    pub fn run<O: Op>(&mut self, op: &O, frame: &Frame) -> Result<O::Output, Error> {
        self.engine.run(op, frame).map_err(|e| Error::op(self.index, e))
    }

    /// Writes a frame to the output, in its own container (or PNG with `--png`).
    pub fn write(&mut self, frame: Frame) -> Result<(), Error> {
        self.flush_text()?;
        self.send(Output::Frame(self.index, frame))
    }

    /// The output as bytes, for tools that write text; sent on when the frame is done.
    pub fn text(&mut self) -> &mut Vec<u8> {
        &mut self.text
    }

    fn flush_text(&mut self) -> Result<(), Error> {
        if self.text.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.text);
        self.send(Output::Bytes(text))
    }

    /// A send fails only when the writer has stopped, and the writer's error says why.
    fn send(&self, item: Output) -> Result<(), Error> {
        self.out.send(item).map_err(|_| Error {
            kind: ErrorKind::Runtime,
            frame: None,
            message: WRITER_GONE.into(),
        })
    }

    /// Refuses an output frame over `--max-pixels`, before anything is allocated for it.
    pub fn check_pixels(&self, width: usize, height: usize) -> Result<(), Error> {
        let n = width as u128 * height as u128;
        if n > self.common.max_pixels as u128 {
            return Err(self.invalid(format!(
                "the output would be {width}x{height}, {n} pixels, over the limit of {} (--max-pixels)",
                self.common.max_pixels
            )));
        }
        Ok(())
    }

    /// An input error at this frame.
    pub fn invalid(&self, message: impl Into<String>) -> Error {
        Error::input(self.index, message)
    }
}

enum Parsed {
    Run(Common),
    Printed,
}

fn parse_args<T: Tool>(tool: &mut T, args: impl IntoIterator<Item = OsString>) -> Result<Parsed, Error> {
    let mut common = Common::from_env()?;
    let mut parser = Parser::from_args(args);
    while let Some(arg) = parser.next()? {
        match arg {
            Arg::Short('h') | Arg::Long("help") => {
                let text = format!("{}\n\n{COMMON_HELP}\n", T::HELP.trim_end());
                io::stdout().write_all(text.as_bytes()).map_err(|e| Error::io(&e))?;
                return Ok(Parsed::Printed);
            }
            Arg::Short('V') | Arg::Long("version") => {
                println!("{} (histopipe) {}", T::NAME, env!("CARGO_PKG_VERSION"));
                return Ok(Parsed::Printed);
            }
            Arg::Value(v) => tool.positional(v)?,
            Arg::Short(c) => option(&mut common, tool, &format!("-{c}"), &mut parser)?,
            Arg::Long(l) => {
                let name = format!("--{l}");
                option(&mut common, tool, &name, &mut parser)?
            }
        }
    }
    tool.check(&common)?;
    Ok(Parsed::Run(common))
}

fn option<T: Tool>(common: &mut Common, tool: &mut T, name: &str, parser: &mut Parser) -> Result<(), Error> {
    if common.accept(name, parser)? || tool.option(name, parser)? {
        Ok(())
    } else {
        Err(Error::usage(format!("unknown option '{name}' (see --help)")))
    }
}

const WRITER_GONE: &str = "the output writer stopped";

/// Bytes of frames the reader may hold ready while the GPU is being opened.
const READ_AHEAD_BYTES: usize = 512 << 20;

/// The frames read and not yet taken by the tool. The reader hands over a frame only when none
/// is waiting, so one frame is read while the tool works on the one before (memory stays a few
/// frames), except while the GPU is being opened: a driver's start-up takes a fifth of a second,
/// and rather than leave the input waiting meanwhile, the reader reads ahead up to
/// [`READ_AHEAD_BYTES`], which the tool then works through at the GPU's pace.
#[derive(Default)]
struct Backlog {
    /// Frames and bytes waiting, and whether the GPU is being opened.
    state: Mutex<(usize, usize, bool)>,
    changed: Condvar,
}

impl Backlog {
    fn lock(&self) -> MutexGuard<'_, (usize, usize, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a frame of `bytes` bytes may be handed over, and counts it in.
    fn add(&self, bytes: usize) {
        let mut s = self.lock();
        while !(s.0 == 0 || (s.2 && s.1 + bytes <= READ_AHEAD_BYTES)) {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.0 += 1;
        s.1 += bytes;
    }

    /// A frame of `bytes` bytes was taken.
    fn take(&self, bytes: usize) {
        let mut s = self.lock();
        s.0 -= 1;
        s.1 -= bytes;
        self.changed.notify_all();
    }

    fn set_opening(&self, opening: bool) {
        let mut s = self.lock();
        if s.2 != opening {
            s.2 = opening;
            self.changed.notify_all();
        }
    }
}

fn frame_bytes(item: &Result<Frame, Error>) -> usize {
    item.as_ref().map_or(0, |f| f.pixels.len() * f.depth().bytes())
}

/// Reads frames on a thread of its own, so reading overlaps the work on earlier frames, into
/// `memory` (page-locked once the GPU lends it). The thread is not joined: if the tool stops
/// early, it may be blocked on a read that never ends.
fn spawn_reader(
    common: &Common,
    memory: SampleMemory,
    backlog: Arc<Backlog>,
) -> Receiver<Result<Frame, Error>> {
    let (tx, rx) = channel();
    let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels };
    std::thread::spawn(move || {
        let input = BufReader::with_capacity(1 << 20, io::stdin().lock());
        let mut reader = FrameReader::new(input, options).with_memory(memory);
        loop {
            let item = match reader.next_frame() {
                Ok(Some(frame)) => Ok(frame),
                Ok(None) => break,
                Err(e) => Err(Error::from(e)),
            };
            let stop = item.is_err();
            backlog.add(frame_bytes(&item));
            if tx.send(item).is_err() || stop {
                break;
            }
        }
    });
    rx
}

/// Writes on a thread of its own, so writing overlaps the work on later frames.
fn spawn_writer(common: &Common) -> (SyncSender<Output>, JoinHandle<Result<(), Error>>) {
    let (tx, rx) = sync_channel::<Output>(1);
    let options = WriteOptions { png: common.png };
    let handle = std::thread::spawn(move || {
        let output = BufWriter::with_capacity(1 << 20, io::stdout().lock());
        let mut out = FrameWriter::new(output, options);
        for item in rx {
            match item {
                Output::Frame(index, frame) => out.write(index, &frame)?,
                Output::Bytes(bytes) => out.get_mut().write_all(&bytes).map_err(|e| Error::io(&e))?,
            }
        }
        out.flush().map_err(|e| Error::io(&e))
    });
    (tx, handle)
}

/// Settings that make streams of large frames cheap; each is best effort.
fn tune_process_for_streams() {
    // Larger pipes (64 KiB by default on Linux) mean fewer wake-ups per frame on both sides.
    #[cfg(target_os = "linux")]
    for fd in [0, 1] {
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20) };
    }
    // glibc returns every freed large block to the kernel, so each frame's buffers would be
    // page-faulted in afresh; keeping them in the heap lets the next frame reuse them.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// The frame loop: a reader thread, this thread running the tool on each frame in order, and a
/// writer thread; memory stays a few frames (see [`Backlog`] for the exception).
fn run<T: Tool>(engine: &mut Option<Engine>) -> Result<(), Error> {
    let mut tool = T::default();
    let common = match parse_args(&mut tool, std::env::args_os().skip(1))? {
        Parsed::Run(c) => c,
        Parsed::Printed => return Ok(()),
    };
    tune_process_for_streams();
    // The threads first: opening the GPU (at once with `--backend gpu`) loads the driver, and
    // while it does, the loader's lock would hold up the creation of any other thread.
    let memory = SampleMemory::default();
    let backlog = Arc::new(Backlog::default());
    let frames = spawn_reader(&common, memory.clone(), backlog.clone());
    let (out, writer) = spawn_writer(&common);
    let engine = engine.insert(Engine::new(common.backend, common.device, memory));
    let mut worked = Ok(());
    for (i, item) in frames.iter().enumerate() {
        backlog.take(frame_bytes(&item));
        engine.begin_frame(i + 1);
        backlog.set_opening(engine.is_opening());
        let mut cx = Context { index: i + 1, common: &common, engine, out: &out, text: Vec::new() };
        worked = item.and_then(|frame| tool.frame(&mut cx, frame)).and_then(|()| cx.flush_text());
        if worked.is_err() {
            break;
        }
    }
    drop(out);
    let written = writer.join().unwrap_or_else(|_| {
        Err(Error { kind: ErrorKind::Runtime, frame: None, message: "the output writer panicked".into() })
    });
    match (worked, written) {
        // The writer's own error explains a failed hand-over, and a closed output ends quietly.
        (Err(e), Err(w)) if e.message == WRITER_GONE || w.kind == ErrorKind::BrokenPipe => Err(w),
        (Err(e), _) => Err(e),
        (Ok(()), written) => written,
    }
}

/// The whole of a tool's `main`: runs it, reports an error as one line on stderr, exits.
pub fn main<T: Tool>() -> ExitCode {
    let mut engine = None;
    let code = match run::<T>(&mut engine) {
        Ok(()) => 0,
        Err(e) => {
            if e.kind != ErrorKind::BrokenPipe {
                eprintln!("{}: {e}", T::NAME);
            }
            e.exit_code()
        }
    };
    if engine.is_some_and(|e| e.is_opening()) {
        // The GPU is still being opened on a background thread (`auto` served every frame on the
        // CPU). A normal exit would wait for the driver to finish loading, tens of milliseconds
        // for nothing: the output is flushed (the writer thread flushed it) and stderr is
        // unbuffered, so end the process at once.
        unsafe { libc::_exit(code as i32) }
    }
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn waits(b: &Arc<Backlog>, bytes: usize) -> JoinHandle<()> {
        let b = b.clone();
        let h = std::thread::spawn(move || b.add(bytes));
        std::thread::sleep(Duration::from_millis(50));
        h
    }

    #[test]
    fn the_backlog_holds_one_frame_unless_the_gpu_is_opening() {
        let b = Arc::new(Backlog::default());
        b.add(100);
        let second = waits(&b, 100);
        assert!(!second.is_finished(), "a second frame waits while one is waiting");
        b.take(100);
        second.join().unwrap();
        b.set_opening(true);
        for _ in 0..10 {
            b.add(READ_AHEAD_BYTES / 16);
        }
        assert_eq!(b.lock().0, 11, "while the GPU opens, frames pile up");
        let over = waits(&b, READ_AHEAD_BYTES);
        assert!(!over.is_finished(), "beyond the read-ahead budget, the reader waits");
        b.set_opening(false);
        b.take(100);
        for _ in 0..9 {
            b.take(READ_AHEAD_BYTES / 16);
        }
        assert!(!over.is_finished(), "once open, one frame at a time again");
        b.take(READ_AHEAD_BYTES / 16);
        over.join().unwrap();
        assert_eq!(*b.lock(), (1, READ_AHEAD_BYTES, false));
    }
}
