//! The writer thread: takes each frame's output as the workers finish it, in any order, and writes
//! or commits it in the order of the stream. It decides how the run ends: frames before the first
//! failure are written, none after it.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use histopipe_frame::{Container, Frame, FrameError, FrameErrorKind, FrameWriter, WriteOptions};
use histopipe_trace::Timed;

use crate::atomic::AtomicFile;
use crate::error::Place;
use crate::panic::catch;
use crate::progress::Progress;
use crate::splice::{self, PagePipe};
use crate::{Error, ErrorKind};

/// What a frame's work left to write, in order.
pub(crate) enum Part {
    /// A frame, written in the output's container.
    Frame(Frame),
    /// A frame already encoded (PNG, TIFF), on a worker rather than on the writer.
    Encoded(Vec<u8>),
    /// Bytes written as they are: text, or a picture a tool encoded itself.
    Bytes(Vec<u8>),
    /// 32-bit words written as little-endian bytes (an `.npy` array of `<u4`), in place.
    Words(Vec<u32>),
}

/// What a worker made of frame `n`.
pub(crate) struct Done {
    pub n: usize,
    pub place: Place,
    /// The bytes of the frame's samples, as read, for `--progress`.
    pub bytes: u64,
    pub result: Result<Written, Error>,
}

/// A frame's output, ready to be put in place.
pub(crate) enum Written {
    /// For the one output stream.
    Parts(Vec<Part>),
    /// A file of its own, written whole, to be renamed to its path (`None`: the frame wrote
    /// nothing).
    File(Option<AtomicFile>),
    /// For the one output stream, the first parts of a frame still at work
    /// ([`crate::Context::send_bytes`]): written as soon as the frames before it are, while the
    /// rest is made; its `Parts` follow.
    Early(Vec<Part>),
}

/// Where the writer writes.
pub(crate) enum Sink {
    /// Standard output (or a stream a test gives), and standard output as a pipe when it is one
    /// (large frames are handed to it by their pages, see [`splice`]).
    Stream(Box<dyn Write + Send>, Option<PagePipe>),
    /// The one file of `-o`, renamed to its path once the whole stream is in it.
    File(AtomicFile),
    /// Each frame writes its own file: the writer renames them in order.
    PerFrame,
}

/// How many frames may be between being handed to the workers and being written: the bound on
/// memory, whatever order the workers finish in.
pub(crate) struct InFlight {
    state: Mutex<Flight>,
    changed: Condvar,
}

/// What [`InFlight`] guards.
struct Flight {
    free: usize,
    /// The writer stopped: no more frames.
    closed: bool,
}

impl InFlight {
    pub(crate) fn new(limit: usize) -> InFlight {
        InFlight { state: Mutex::new(Flight { free: limit.max(1), closed: false }), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Flight> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for room for one more frame; false once the writer has stopped.
    pub(crate) fn acquire(&self) -> bool {
        let mut s = self.lock();
        while s.free == 0 && !s.closed {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if !s.closed {
            s.free -= 1;
        }
        !s.closed
    }

    fn release(&self) {
        self.lock().free += 1;
        self.changed.notify_all();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// Writes parts to one output, frames in `container` (`None`: each in its own), refusing a
/// second frame where the container holds one.
pub(crate) struct PartWriter<W: FrameOut> {
    out: W,
    container: Option<Container>,
    frames: usize,
    /// The output's path, for messages; `None` for standard output.
    path: Option<PathBuf>,
}

impl<W: FrameOut> PartWriter<W> {
    pub(crate) fn new(out: W, container: Option<Container>, path: Option<PathBuf>) -> PartWriter<W> {
        PartWriter { out, container, frames: 0, path }
    }

    /// Writes the parts of the frame at `place`, number `n` in the stream.
    pub(crate) fn write(&mut self, n: usize, parts: Vec<Part>, place: &Place) -> Result<(), Error> {
        for part in parts {
            if matches!(part, Part::Frame(_) | Part::Encoded(_)) {
                self.count_frame(place)?;
            }
            match part {
                Part::Frame(frame) => {
                    let options = WriteOptions { container: self.container };
                    self.out.frame(n, frame, options).map_err(|e| {
                        let io = match e.kind {
                            FrameErrorKind::Io(kind) => Some(kind),
                            _ => None,
                        };
                        let at = if io.is_some() { self.place_or(place) } else { place.clone() };
                        self.failed(Error::from(e).at(at), io)
                    })?;
                }
                Part::Encoded(mut bytes) | Part::Bytes(mut bytes) => self.bytes(&mut bytes, place)?,
                Part::Words(mut words) => {
                    // No work where the machine is little-endian: the words are their bytes.
                    for w in &mut words {
                        *w = w.to_le();
                    }
                    self.bytes(bytemuck::cast_slice_mut(&mut words), place)?;
                    // Kept for the next counts, which overwrite them.
                    histopipe_ops::parallel::give_back_words(words);
                }
            }
        }
        Ok(())
    }

    /// Writes `bytes`, which the writer owns and drops afterwards (see [`FrameOut::bytes`]).
    fn bytes(&mut self, bytes: &mut [u8], place: &Place) -> Result<(), Error> {
        self.out.bytes(bytes).map_err(|e| self.failed(Error::io(&e).at(self.place_or(place)), Some(e.kind())))
    }

    fn count_frame(&mut self, place: &Place) -> Result<(), Error> {
        let one = self.container.filter(|c| c.holds_one_frame());
        if let (Some(container), 1..) = (one, self.frames) {
            // The example's fields are ones this frame has: a frame of standard input has no
            // file name for {stem}.
            let fields = if place.file.is_some() { "{stem}-{i}" } else { "{n}" };
            let message = match &self.path {
                Some(path) => format!(
                    "{} is a {} file, which holds one frame, and the stream has more: give -o a field for \
                     one file per frame, as in out/{fields}.{}",
                    path.display(),
                    container.name(),
                    container.name().to_ascii_lowercase()
                ),
                None => "--png writes a single frame, and the stream has more".into(),
            };
            return Err(Error::input(place.clone(), message));
        }
        self.frames += 1;
        Ok(())
    }

    /// Where a write error happened: the output file, or for standard output the frame written.
    fn place_or(&self, frame: &Place) -> Place {
        self.path.as_deref().map(Place::file).unwrap_or_else(|| frame.clone())
    }

    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        self.out
            .flush()
            .map_err(|e| self.failed(Error::io(&e).at(self.place_or(&Place::default())), Some(e.kind())))
    }

    /// `err`, met writing this output (`io`: the I/O error's kind, if it was one): on standard
    /// output a closed pipe ends the tool quietly; on a file (a named pipe) it is a failure.
    fn failed(&self, err: Error, io: Option<io::ErrorKind>) -> Error {
        match self.path {
            None => Error::writing_stdout(err, io),
            Some(_) => err,
        }
    }

    pub(crate) fn into_inner(self) -> W {
        self.out
    }

    fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// An output that frames and bytes the writer owns are written to: through [`FrameWriter`] and
/// `write_all`, which a pipe's writer may do better (see [`StreamOut`]).
pub(crate) trait FrameOut: Write + Sized {
    /// Writes `frame`, number `n` of the stream.
    fn frame(&mut self, n: usize, frame: Frame, options: WriteOptions) -> Result<(), FrameError> {
        FrameWriter::new(self, options).write(n, &frame)
    }

    /// Writes `bytes` (an encoded frame, a table), which are the writer's and dropped afterwards:
    /// their contents may be left changed.
    fn bytes(&mut self, bytes: &mut [u8]) -> io::Result<()> {
        self.write_all(bytes)
    }
}

impl FrameOut for &mut BufWriter<std::fs::File> {}

/// The stream sinks, as one writer.
enum StreamOut {
    Stdout(BufWriter<Timed<Box<dyn Write + Send>>>, Option<PagePipe>),
    File(AtomicFile),
    None,
}

/// Into a pipe, 1 MiB or more of bytes that the writer owns go by their pages (see [`splice`]):
/// the samples of a frame on the heap after its header, or a whole encoded frame or table. They
/// are dropped afterwards, so nothing reads what giving them zeroes.
impl FrameOut for StreamOut {
    fn frame(&mut self, n: usize, frame: Frame, options: WriteOptions) -> Result<(), FrameError> {
        let bytes = frame.pixels.len() * frame.depth().bytes();
        match self {
            StreamOut::Stdout(out, Some(pipe)) if bytes >= splice::LEAST => {
                FrameWriter::new(out, options).write_owned_with(n, frame, |out, bytes| give(out, pipe, bytes))
            }
            _ => FrameWriter::new(self, options).write(n, &frame),
        }
    }

    fn bytes(&mut self, bytes: &mut [u8]) -> io::Result<()> {
        match self {
            StreamOut::Stdout(out, Some(pipe)) if bytes.len() >= splice::LEAST => give(out, pipe, bytes),
            _ => self.write_all(bytes),
        }
    }
}

/// Hands `bytes` to `pipe` after what `out` holds.
fn give(
    out: &mut BufWriter<Timed<Box<dyn Write + Send>>>,
    pipe: &mut PagePipe,
    bytes: &mut [u8],
) -> io::Result<()> {
    out.flush()?;
    out.get_mut().timed(|_| pipe.give(bytes))
}

impl StreamOut {
    /// The time spent in standard output's `write` calls since the last call of this: held up by
    /// whatever reads it.
    fn take_waited(&mut self) -> Duration {
        match self {
            StreamOut::Stdout(w, _) => w.get_mut().take_waited(),
            StreamOut::File(_) | StreamOut::None => Duration::ZERO,
        }
    }
}

impl Write for StreamOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StreamOut::Stdout(w, _) => w.write(buf),
            StreamOut::File(f) => f.writer().write(buf),
            StreamOut::None => Ok(buf.len()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            StreamOut::Stdout(w, _) => w.write_all(buf),
            StreamOut::File(f) => f.writer().write_all(buf),
            StreamOut::None => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            StreamOut::Stdout(w, _) => w.flush(),
            StreamOut::File(f) => f.writer().flush(),
            StreamOut::None => Ok(()),
        }
    }
}

/// How a run takes the failure of one of its input files: by default the others are still read,
/// worked on and written, as `cp`, `grep` and `mogrify` go on past a bad operand; each failure is
/// one line on stderr as it comes, in the stream's order, and the run ends with a last line that
/// counts them and a non-zero status. With `--fail-fast` (or a single input) the first failure
/// ends the run. A failure that is no one file's (standard input's, writing standard output or
/// `-o`'s one file, a panic) always ends it.
pub(crate) struct Failures {
    keep_going: KeepGoing,
    /// The tool's name, which prefixes each line.
    tool: &'static str,
    inputs: usize,
    failed: usize,
    /// Whether every failure so far was bad input (exit 2) rather than the machine's (exit 1).
    all_input: bool,
    /// The file whose later frames are dropped: one of its frames failed, which ends its stream.
    skipping: Option<std::path::PathBuf>,
}

/// Whether a run goes on past a failed input file (see [`Failures`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeepGoing(bool);

impl KeepGoing {
    /// Not with `--fail-fast`, nor for a single input.
    pub(crate) fn new(fail_fast: bool, inputs: usize) -> KeepGoing {
        KeepGoing(!fail_fast && inputs > 1)
    }

    /// Whether the run goes on after `e`, a failure of the frame at `place`: it is one input
    /// file's, and the run keeps going.
    pub(crate) fn past(self, place: &Place, e: &Error) -> bool {
        self.0 && place.file.is_some() && !matches!(e.kind, ErrorKind::Internal | ErrorKind::BrokenPipe)
    }
}

impl Failures {
    /// The failures of a run of `inputs` inputs of the tool `tool`.
    pub(crate) fn new(keep_going: KeepGoing, tool: &'static str, inputs: usize) -> Failures {
        Failures { keep_going, tool, inputs, failed: 0, all_input: true, skipping: None }
    }

    /// Takes the failure `e` of the frame at `place`: said, and the run goes on (`Ok`), or the
    /// run ends with it (`Err`).
    fn take(&mut self, place: &Place, e: Error) -> Result<(), Error> {
        if !self.keep_going.past(place, &e) {
            return Err(e);
        }
        if self.skips(place) {
            // Its file failed already, which ended it.
            return Ok(());
        }
        let file = place.file.clone();
        // Not eprintln!, which panics when stderr cannot be written (`2>/dev/full`).
        let _ = writeln!(io::stderr(), "{}: {e}", self.tool);
        self.failed += 1;
        self.all_input &= matches!(e.kind, ErrorKind::Input | ErrorKind::Usage);
        self.skipping = file;
        Ok(())
    }

    /// Whether the frame at `place`, the next in the stream, is dropped: a frame before it of
    /// the same file failed. Asked in the stream's order.
    fn skips(&mut self, place: &Place) -> bool {
        if self.skipping.is_some() && self.skipping == place.file {
            return true;
        }
        self.skipping = None;
        false
    }

    /// The run's end: the count of failed files, if any failed.
    fn finish(&self) -> Result<(), Error> {
        if self.failed == 0 {
            return Ok(());
        }
        let kind = if self.all_input { ErrorKind::Input } else { ErrorKind::Runtime };
        let message = format!("{} of {} files failed", self.failed, self.inputs);
        Err(Error { kind, place: Place::default(), message })
    }
}

/// Writes to `sink` on a thread of its own what arrives on `done`, in the order of the stream,
/// until every sender is gone; then puts `-o`'s file in place. The thread's result is the run's:
/// the failure that ended it, in the stream's order (a panic while writing becomes an error
/// naming the frame), or its own, or the count of the files that failed ([`Failures`]).
/// `progress` is told of each frame put in place.
pub(crate) fn spawn_writer(
    sink: Sink,
    container: Option<Container>,
    done: Receiver<Done>,
    in_flight: Arc<InFlight>,
    progress: Option<Progress>,
    mut failures: Failures,
) -> Result<JoinHandle<Result<(), Error>>, Error> {
    let handle = std::thread::Builder::new()
        .name("histopipe-write".into())
        .spawn(move || {
            let mut at = Place::default();
            let written = catch(|| {
                write_in_order(sink, container, &done, &in_flight, progress, &mut failures, &mut at)
            });
            // Nothing more is written: the frames still at work are not wanted.
            in_flight.close();
            written.unwrap_or_else(|panic| Err(Error::internal(at, "writer", &panic)))
        })
        .map_err(|e| Error::io(&e))?;
    Ok(handle)
}

fn write_in_order(
    sink: Sink,
    container: Option<Container>,
    done: &Receiver<Done>,
    in_flight: &InFlight,
    mut progress: Option<Progress>,
    failures: &mut Failures,
    at: &mut Place,
) -> Result<(), Error> {
    let (stream, path) = match sink {
        Sink::Stream(w, pipe) => {
            (StreamOut::Stdout(BufWriter::with_capacity(1 << 20, Timed::new(w)), pipe), None)
        }
        Sink::File(f) => {
            let path = f.path().to_owned();
            (StreamOut::File(f), Some(path))
        }
        Sink::PerFrame => (StreamOut::None, None),
    };
    let mut out = PartWriter::new(stream, container, path);
    let mut waiting: BTreeMap<usize, Done> = BTreeMap::new();
    // Early parts of frames after the next one, kept until their turn, in the order they came.
    let mut early: BTreeMap<usize, Vec<(Place, Vec<Part>)>> = BTreeMap::new();
    // The frame whose first parts are written already: its failure cannot be stepped over, since
    // its output is in the stream half made.
    let mut started = 0;
    let mut next = 1;
    // After each frame, what is buffered is handed on unless the next frame is ready to write
    // too, so that a frame reaches the pipe once it is done, not when more output or the end
    // comes (a stream of frames read as they come, from a camera or another tool, gets each
    // frame out at once), while a batch that keeps the writer busy is written in large pieces.
    // An item taken to see whether it is the next frame waits here for its turn.
    let mut ahead: Option<Done> = None;
    loop {
        let Some(item) = ahead.take().or_else(|| done.recv().ok()) else { break };
        let item = match item.result {
            Ok(Written::Early(parts)) => {
                if item.n == next {
                    if !failures.skips(&item.place) {
                        *at = item.place.clone();
                        started = item.n;
                        out.write(item.n, parts, &item.place)?;
                        // Parts handed on early are wanted downstream now: a held frame's
                        // reference, whose writer waits for the reader to take it.
                        out.flush()?;
                    }
                } else {
                    early.entry(item.n).or_default().push((item.place, parts));
                }
                continue;
            }
            _ => item,
        };
        waiting.insert(item.n, item);
        loop {
            for (place, parts) in early.remove(&next).unwrap_or_default() {
                if !failures.skips(&place) {
                    *at = place.clone();
                    started = next;
                    out.write(next, parts, &place)?;
                    out.flush()?;
                }
            }
            let Some(item) = waiting.remove(&next) else { break };
            *at = item.place.clone();
            let span = histopipe_trace::span("write", item.n);
            // The waits within this span alone (a frame's early parts are written outside it).
            out.get_mut().take_waited();
            match item.result {
                Err(e) if started == item.n => return Err(e),
                Err(e) => failures.take(&item.place, e)?,
                Ok(_) if failures.skips(&item.place) => {}
                Ok(Written::Parts(parts) | Written::Early(parts)) => out.write(item.n, parts, &item.place)?,
                Ok(Written::File(Some(file))) => {
                    let place = Place::file(file.path());
                    if let Err(e) = file.commit() {
                        failures.take(&item.place, Error::io(&e).at(place))?;
                    }
                }
                Ok(Written::File(None)) => {}
            }
            if !waiting.contains_key(&(next + 1)) {
                // Within the frame's write, where its waits are counted.
                let item = done.try_recv().ok();
                let ready = item
                    .as_ref()
                    .is_some_and(|i| i.n == next + 1 && !matches!(i.result, Ok(Written::Early(_))));
                if !ready {
                    out.flush()?;
                }
                ahead = item;
            }
            span.also("write.wait").end_with(out.get_mut().take_waited());
            span.end();
            next += 1;
            in_flight.release();
            if let Some(progress) = progress.as_mut() {
                progress.frame(item.bytes);
            }
        }
    }
    if let Some(&n) = waiting.keys().next() {
        let message = format!("frame {next} was lost before frame {n}");
        return Err(Error::internal(Place::frame(next), "frame loop", &message));
    }
    out.flush()?;
    if let Some(progress) = progress {
        progress.finish();
    }
    // `-o`'s one file holds the whole stream or nothing: it is not put in place when a file
    // failed, as a failed run leaves no file.
    failures.finish()?;
    if let StreamOut::File(file) = out.into_inner() {
        let place = Place::file(file.path());
        file.commit().map_err(|e| Error::io(&e).at(place))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;

    /// A stream sink whose bytes the test reads after the writer is done.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn fail_fast() -> Failures {
        Failures::new(KeepGoing::new(true, 1), "test", 1)
    }

    fn done(n: usize, written: Written) -> Done {
        Done { n, place: Place::frame(n), bytes: 0, result: Ok(written) }
    }

    fn bytes(text: &str) -> Vec<Part> {
        vec![Part::Bytes(text.as_bytes().to_vec())]
    }

    #[test]
    fn early_parts_are_written_in_the_streams_order() {
        let sink = Shared::default();
        let (send, receive) = channel();
        let in_flight = Arc::new(InFlight::new(4));
        let writer = spawn_writer(
            Sink::Stream(Box::new(sink.clone()), None),
            None,
            receive,
            in_flight,
            None,
            fail_fast(),
        )
        .unwrap();
        // Frame 2 starts before frame 1 is done, and frame 1 writes early too.
        send.send(done(2, Written::Early(bytes("2a ")))).unwrap();
        send.send(done(1, Written::Early(bytes("1a ")))).unwrap();
        send.send(done(2, Written::Early(bytes("2b ")))).unwrap();
        send.send(done(3, Written::Parts(bytes("3 ")))).unwrap();
        send.send(done(1, Written::Parts(bytes("1b ")))).unwrap();
        send.send(done(2, Written::Parts(bytes("2c ")))).unwrap();
        drop(send);
        writer.join().unwrap().unwrap();
        assert_eq!(String::from_utf8(sink.0.lock().unwrap().clone()).unwrap(), "1a 1b 2a 2b 2c 3 ");
    }

    #[test]
    fn a_frame_that_fails_after_writing_early_fails_the_run() {
        let sink = Shared::default();
        let (send, receive) = channel();
        let writer = spawn_writer(
            Sink::Stream(Box::new(sink.clone()), None),
            None,
            receive,
            Arc::new(InFlight::new(2)),
            None,
            fail_fast(),
        )
        .unwrap();
        send.send(done(1, Written::Early(bytes("1a ")))).unwrap();
        let failed = Error::internal(Place::frame(1), "test", "lost");
        send.send(Done { n: 1, place: Place::frame(1), bytes: 0, result: Err(failed) }).unwrap();
        // The writer may have stopped at the failure already, and dropped its end.
        let _ = send.send(done(2, Written::Parts(bytes("2 "))));
        drop(send);
        assert!(writer.join().unwrap().is_err());
        assert_eq!(
            String::from_utf8(sink.0.lock().unwrap().clone()).unwrap(),
            "1a ",
            "nothing after the failure"
        );
    }
}
