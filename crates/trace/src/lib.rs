//! Where a tool's time goes, frame by frame. With `HISTOPIPE_TRACE=FILE` in the environment,
//! every histopipe tool appends to FILE one CSV line per stage of each frame:
//!
//! ```text
//! tool,pid,stage,frame,start_us,dur_us
//! rotate,4711,read,3,1763884800123456,2210
//! ```
//!
//! `start_us` is the wall clock (microseconds since 1970), so that the lines of the tools of one
//! pipeline, exported the variable, line up; `frame` is the frame's number in the tool's stream.
//! The stages (see `docs/formats.md`): `read` (reading and decoding the frame, waiting for its
//! bytes included), `read.wait` (of that, the time spent in the input's `read` calls), `work`
//! (the operation), `gpu.upload` and `gpu.download` (of that, queuing the copies to the GPU, and
//! waiting for the GPU's work and the copy back), `encode` (encoding the output, or writing a file
//! of its own), `write` (putting the output in place in the stream's order) and `write.wait` (of
//! that, the time spent in the output's `write` calls, held up by whatever reads it).
//!
//! A line is one `write` to a file opened for appending, so the lines of several processes do not
//! mix. The header is written by whichever process makes the file.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The environment variable naming the trace file.
pub const VARIABLE: &str = "HISTOPIPE_TRACE";

/// The columns of a trace file.
pub const HEADER: &str = "tool,pid,stage,frame,start_us,dur_us";

struct Trace {
    tool: &'static str,
    pid: u32,
    file: File,
}

static TRACE: OnceLock<Trace> = OnceLock::new();

thread_local! {
    /// The frame this thread works on, for stages recorded below the frame loop (the GPU's).
    static FRAME: Cell<usize> = const { Cell::new(0) };
}

/// Opens the file `HISTOPIPE_TRACE` names, if it is set and not empty, for `tool`'s lines. Call it
/// once, before any frame; without it nothing is recorded.
pub fn start(tool: &'static str) -> io::Result<()> {
    let Some(path) = std::env::var_os(VARIABLE).filter(|p| !p.is_empty()) else { return Ok(()) };
    let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
        Ok(mut file) => {
            file.write_all(format!("{HEADER}\n").as_bytes())?;
            file
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => OpenOptions::new().append(true).open(&path)?,
        Err(e) => return Err(e),
    };
    let _ = TRACE.set(Trace { tool, pid: std::process::id(), file });
    Ok(())
}

/// Whether lines are being recorded.
pub fn on() -> bool {
    TRACE.get().is_some()
}

/// Sets the frame this thread works on from now on (0: none).
pub fn set_frame(frame: usize) {
    FRAME.with(|f| f.set(frame));
}

/// A stage of a frame under way; [`Span::end`] records it. When no trace is being recorded, it
/// holds no time and records nothing.
#[must_use = "a span is recorded by its end"]
#[derive(Clone, Copy)]
pub struct Span {
    stage: &'static str,
    frame: usize,
    started: Option<(SystemTime, Instant)>,
}

/// Starts stage `stage` of frame `frame`.
pub fn span(stage: &'static str, frame: usize) -> Span {
    Span { stage, frame, started: on().then(|| (SystemTime::now(), Instant::now())) }
}

/// Starts stage `stage` of the frame this thread works on ([`set_frame`]).
pub fn span_here(stage: &'static str) -> Span {
    span(stage, FRAME.with(Cell::get))
}

impl Span {
    /// Records the stage as ended now.
    pub fn end(self) {
        self.end_with(self.elapsed());
    }

    /// Records the stage as lasting `took` (time counted by the caller, such as the waits within
    /// a stage), from the span's start.
    pub fn end_with(self, took: Duration) {
        if let Some((wall, _)) = self.started {
            record(self.stage, self.frame, wall, took);
        }
    }

    /// The time since the span's start (zero when not recording).
    pub fn elapsed(&self) -> Duration {
        self.started.map(|(_, start)| start.elapsed()).unwrap_or_default()
    }

    /// Renumbers the frame, for a stage that learns it only at its end (a frame is numbered in
    /// the stream once read).
    pub fn of_frame(self, frame: usize) -> Span {
        Span { frame, ..self }
    }

    /// The same start, for another stage.
    pub fn also(self, stage: &'static str) -> Span {
        Span { stage, ..self }
    }
}

/// Writes one line. A trace that cannot be written is not a reason to fail the tool's work: the
/// line is lost.
fn record(stage: &str, frame: usize, wall: SystemTime, took: Duration) {
    let Some(trace) = TRACE.get() else { return };
    let start = wall.duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
    let line = format!("{},{},{stage},{frame},{start},{}\n", trace.tool, trace.pid, took.as_micros());
    let _ = (&trace.file).write_all(line.as_bytes());
}

/// A reader or writer that adds up the time spent in its `read` or `write` calls (while a trace
/// is being recorded).
pub struct Timed<S> {
    inner: S,
    waited: Duration,
}

impl<S> Timed<S> {
    pub fn new(inner: S) -> Timed<S> {
        Timed { inner, waited: Duration::ZERO }
    }

    /// The time spent in calls since the last call of this.
    pub fn take_waited(&mut self) -> Duration {
        std::mem::take(&mut self.waited)
    }

    /// Runs `call` on the inner stream, counting its time when recording.
    pub fn timed<R>(&mut self, call: impl FnOnce(&mut S) -> R) -> R {
        if !on() {
            return call(&mut self.inner);
        }
        let start = Instant::now();
        let result = call(&mut self.inner);
        self.waited += start.elapsed();
        result
    }
}

impl<R: io::Read> io::Read for Timed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.timed(|r| r.read(buf))
    }
}

impl<W: io::Write> io::Write for Timed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.timed(|w| w.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
