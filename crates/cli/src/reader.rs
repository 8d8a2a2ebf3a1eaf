//! The reader threads: read the inputs' frames ahead of the work, so reading and decoding overlap
//! it, several files at once, and hand them over in the order of the stream.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use histopipe_frame::{Frame, FrameReader, ReadOptions, SampleMemory, Source};
use histopipe_trace::{Span, Timed};

use crate::error::Place;
use crate::inputs::{Input, Inputs, Opened};
use crate::panic::catch;
use crate::service::held::{self, Token};
use crate::Error;

/// Bytes of frames the readers may hold ready while the GPU is being opened.
pub(crate) const READ_AHEAD_BYTES: usize = 512 << 20;

/// What a reader hands over: a frame (and how long it took, for the trace), a reference to a
/// frame the GPU service holds, the end of its input, or why it stopped.
pub(crate) enum Read {
    Frame(Frame, ReadTime),
    Held(HeldInput, ReadTime),
    End,
    Failed(Error),
}

/// A frame the GPU service holds, as its reference in the input names it
/// ([`crate::service::held`]); its bytes, where they follow the reference, come from the reader
/// once it has read them ([`HeldInput::frame`]).
pub(crate) struct HeldInput {
    pub token: Token,
    bytes: Receiver<Result<Frame, Error>>,
}

impl HeldInput {
    /// The frame's bytes, read from the input after its reference: waits for the writer to
    /// write them.
    pub(crate) fn frame(self) -> Result<Frame, Error> {
        self.bytes.recv().unwrap_or_else(|_| {
            let why = "a frame held by the GPU service was not given, and its bytes did not follow it";
            Err(Error::internal(Place::default(), "reader", why))
        })
    }
}

/// How long a frame took to read, and of that, in the input's `read` calls, when a trace is being
/// recorded (see `histopipe_trace`); recorded once the frame has its number in the stream.
pub(crate) struct ReadTime(Option<Box<(Span, Duration, Duration)>>);

impl ReadTime {
    /// The read of a frame that started at `span` and spent `waited` in `read` calls.
    fn of(span: Span, waited: Duration) -> ReadTime {
        ReadTime(histopipe_trace::on().then(|| Box::new((span, span.elapsed(), waited))))
    }

    #[cfg(test)]
    fn untimed() -> ReadTime {
        ReadTime(None)
    }

    /// Records the read of frame `n` of the stream.
    pub(crate) fn record(self, n: usize) {
        if let Some((span, took, waited)) = self.0.map(|b| *b) {
            let span = span.of_frame(n);
            span.also("read.wait").end_with(waited);
            span.end_with(took);
        }
    }
}

impl Read {
    fn bytes(&self) -> usize {
        match self {
            Read::Frame(f, _) => f.pixels.len() * f.depth().bytes(),
            Read::Held(..) | Read::End | Read::Failed(_) => 0,
        }
    }
}

/// The frames read and not yet taken, per input. A reader hands over a frame only when none of
/// its input is waiting, so each reader reads one frame while the one before waits (memory stays
/// a few frames per reader), except while the GPU is being opened: a driver's start-up takes a
/// fifth of a second, and rather than leave the inputs waiting meanwhile, the readers read ahead,
/// up to [`READ_AHEAD_BYTES`] in all, which the work then goes through at the GPU's pace. A
/// reader whose input has no frame waiting may always hand one over, so the input the stream
/// needs next is never held up by those after it.
#[derive(Default)]
pub(crate) struct Backlog {
    state: Mutex<Waiting>,
    changed: Condvar,
}

/// What [`Backlog`] guards.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Waiting {
    /// Frames waiting, by input number; inputs with none are left out.
    frames: HashMap<usize, usize>,
    bytes: usize,
    gpu_opening: bool,
}

impl Backlog {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until input `input` may hand over an item of `bytes` bytes, and counts it in.
    fn add(&self, input: usize, bytes: usize) {
        let mut s = self.lock();
        while !(!s.frames.contains_key(&input) || (s.gpu_opening && s.bytes + bytes <= READ_AHEAD_BYTES)) {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        *s.frames.entry(input).or_default() += 1;
        s.bytes += bytes;
    }

    /// An item of input `input` was taken.
    fn take(&self, input: usize, item: &Read) {
        let mut s = self.lock();
        if let Some(n) = s.frames.get_mut(&input) {
            *n -= 1;
            if *n == 0 {
                s.frames.remove(&input);
            }
        }
        s.bytes -= item.bytes();
        self.changed.notify_all();
    }

    pub(crate) fn set_opening(&self, opening: bool) {
        let mut s = self.lock();
        if s.gpu_opening != opening {
            s.gpu_opening = opening;
            self.changed.notify_all();
        }
    }
}

/// One input for a reader thread: its number in the command line, and where its frames go.
struct ReadJob {
    number: usize,
    input: Input,
    frames: Sender<Read>,
}

/// An input being read, whose frames the stream has not all taken yet.
struct Pending {
    number: usize,
    path: Option<PathBuf>,
    frames: Receiver<Read>,
}

/// The frames of every input, in order. A few reader threads read the inputs, each one input at a
/// time, as many inputs ahead of the stream as there are readers.
pub(crate) struct InputFrames {
    inputs: Inputs,
    jobs: Sender<ReadJob>,
    pending: VecDeque<Pending>,
    next_input: usize,
    readers: usize,
    backlog: Arc<Backlog>,
}

impl InputFrames {
    /// Starts `readers` reader threads (at most one per input) reading into `memory` (page-locked
    /// once the GPU lends it); with `held`, references to frames the GPU service holds are taken
    /// in the inputs. The threads are not joined: if the work stops early, one may be blocked on
    /// a read that never ends.
    pub(crate) fn spawn(
        inputs: Inputs,
        readers: usize,
        options: ReadOptions,
        held: bool,
        memory: SampleMemory,
        backlog: Arc<Backlog>,
    ) -> Result<InputFrames, Error> {
        let readers = readers.clamp(1, inputs.len());
        let (jobs, queue) = channel::<ReadJob>();
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..readers {
            let (queue, memory, backlog) = (queue.clone(), memory.clone(), backlog.clone());
            std::thread::Builder::new()
                .name("histopipe-read".into())
                .spawn(move || loop {
                    let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match job {
                        Ok(job) => read_input(job, options, held, &memory, &backlog),
                        Err(_) => break,
                    }
                })
                .map_err(|e| Error::io(&e))?;
        }
        Ok(InputFrames { inputs, jobs, pending: VecDeque::new(), next_input: 0, readers, backlog })
    }

    /// The next frame of the stream, [`Read::End`] after the last input's last frame, or why
    /// reading an input stopped (the next call goes on with the input after it).
    pub(crate) fn next(&mut self) -> Read {
        loop {
            self.start_readers();
            let Some(front) = self.pending.front() else { return Read::End };
            // A reader always says how it stopped; a silent end would be a lost frame.
            let item = front.frames.recv().unwrap_or_else(|_| {
                let place = Place { file: front.path.clone(), frame: None };
                Read::Failed(Error::internal(place, "reader", "it stopped without saying why"))
            });
            self.backlog.take(front.number, &item);
            match item {
                Read::End => {
                    self.pending.pop_front();
                    continue;
                }
                // The input ends at its failure; the stream may go on with the next one.
                Read::Failed(_) => {
                    self.pending.pop_front();
                }
                Read::Frame(..) | Read::Held(..) => {}
            }
            return item;
        }
    }

    /// Hands inputs to the readers, up to one per reader ahead of the stream.
    fn start_readers(&mut self) {
        while self.pending.len() < self.readers {
            let Some(input) = self.inputs.get(self.next_input) else { break };
            let (tx, rx) = channel();
            let number = self.next_input;
            let path = input.path().map(PathBuf::from);
            // If no reader is left to take it, `rx` says so when the stream gets to it.
            let _ = self.jobs.send(ReadJob { number, input: input.clone(), frames: tx });
            self.pending.push_back(Pending { number, path, frames: rx });
            self.next_input += 1;
        }
    }
}

/// Reads every frame of one input into `job.frames`; see [`read_stream`].
fn read_input(job: ReadJob, options: ReadOptions, held: bool, memory: &SampleMemory, backlog: &Backlog) {
    let ReadJob { number, input, frames } = job;
    match input.open() {
        Ok(opened) => {
            let how = How { options, held, memory, backlog };
            read_stream(number, input.path(), opened, &frames, &how)
        }
        Err(e) => {
            backlog.add(number, 0);
            let _ = frames.send(Read::Failed(e));
        }
    }
}

/// How a reader reads: its options, whether references to held frames are taken, where samples
/// go, and the backlog it waits on.
struct How<'a> {
    options: ReadOptions,
    held: bool,
    memory: &'a SampleMemory,
    backlog: &'a Backlog,
}

/// Reads every frame of input `number` from `stream` into `frames`; frames of a named file get
/// it as their source. Ends with [`Read::End`] or [`Read::Failed`]; a panic while reading becomes
/// the latter, naming the frame.
fn read_stream(number: usize, path: Option<&Path>, input: Opened, frames: &Sender<Read>, how: &How<'_>) {
    let Opened { stream, unread } = input;
    let stream = BufReader::with_capacity(1 << 20, Timed::new(stream));
    let mut reader = FrameReader::new(stream, how.options).with_memory(how.memory.clone());
    if let Some(unread) = unread {
        reader = reader.with_unread(unread);
    }
    let place = |frame| Place { file: path.map(PathBuf::from), frame: Some(frame) };
    let mut held_seen = false;
    loop {
        let index = reader.next_index();
        let span = histopipe_trace::span("read", 0);
        if how.held {
            match reader.get_mut().fill_buf().map(|b| b.first().copied()) {
                // The end, after frames or references (an input of neither is the reader's error).
                Ok(None) if index > 1 || held_seen => {
                    how.backlog.add(number, 0);
                    let _ = frames.send(Read::End);
                    break;
                }
                Ok(Some(first)) if first == held::MAGIC[0] => {
                    held_seen = true;
                    if !read_held(&mut reader, index, span, frames, number, how.backlog, &place) {
                        break;
                    }
                    continue;
                }
                // A frame (or an error the frame reader names).
                _ => {}
            }
        }
        let item = match catch(|| reader.next_frame()) {
            Ok(Ok(Some(mut frame))) => {
                if let Some(path) = path {
                    frame.source = Some(Source::new(path, index));
                }
                let waited = reader.get_mut().get_mut().take_waited();
                Read::Frame(frame, ReadTime::of(span, waited))
            }
            Ok(Ok(None)) => Read::End,
            Ok(Err(e)) => {
                let at = place(e.frame);
                Read::Failed(Error::from(e).at(at))
            }
            Err(panic) => Read::Failed(Error::internal(place(index), "reader", &panic)),
        };
        let last = !matches!(item, Read::Frame(..));
        how.backlog.add(number, item.bytes());
        if frames.send(item).is_err() || last {
            break;
        }
    }
}

/// Reads a reference to a held frame and hands it over, then what follows it: nothing, or the
/// frame's bytes, which go to the frame's worker (it needs them where the service did not give it
/// the frame). Whether the input goes on.
fn read_held<R: std::io::BufRead>(
    reader: &mut FrameReader<R>,
    index: usize,
    span: Span,
    frames: &Sender<Read>,
    number: usize,
    backlog: &Backlog,
    place: &dyn Fn(usize) -> Place,
) -> bool {
    let failed = |why: String| Read::Failed(Error::input(place(index), why));
    let token = match held::read_record(reader.get_mut()) {
        Ok(Ok(token)) => token,
        Ok(Err(why)) => {
            backlog.add(number, 0);
            let _ = frames.send(failed(why));
            return false;
        }
        Err(e) => {
            backlog.add(number, 0);
            let _ = frames.send(Read::Failed(Error::io(&e).at(place(index))));
            return false;
        }
    };
    let (bytes, given) = channel();
    backlog.add(number, 0);
    let held = HeldInput { token, bytes: given };
    if frames.send(Read::Held(held, ReadTime::of(span, Duration::ZERO))).is_err() {
        return false;
    }
    let mut after = [0u8];
    let what = reader.get_mut().read_exact(&mut after).map(|()| after[0]);
    match what {
        Ok(held::NOTHING_FOLLOWS) => true,
        Ok(held::FRAME_FOLLOWS) => match catch(|| reader.next_frame()) {
            Ok(Ok(Some(frame))) => {
                // The worker may have had it from the service after all.
                let _ = bytes.send(Ok(frame));
                true
            }
            Ok(Ok(None)) => {
                let why = "the input ended where a held frame's bytes were to follow";
                let _ = bytes.send(Err(Error::input(place(index), why)));
                false
            }
            Ok(Err(e)) => {
                let at = place(e.frame);
                let _ = bytes.send(Err(Error::from(e).at(at)));
                false
            }
            Err(panic) => {
                let _ = bytes.send(Err(Error::internal(place(index), "reader", &panic)));
                false
            }
        },
        _ => {
            let why = "the input ended (or broke) after a held frame's reference, before what follows it";
            let _ = bytes.send(Err(Error::input(place(index), why)));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::JoinHandle;
    use std::time::Duration;

    fn waits(b: &Arc<Backlog>, input: usize, bytes: usize) -> JoinHandle<()> {
        let b = b.clone();
        let h = std::thread::spawn(move || b.add(input, bytes));
        std::thread::sleep(Duration::from_millis(50));
        h
    }

    fn frame_of(bytes: usize) -> Read {
        Read::Frame(Frame::new(bytes, 1, 255, vec![0u8; bytes].into()), ReadTime::untimed())
    }

    #[test]
    fn the_backlog_holds_one_frame_per_input_unless_the_gpu_is_opening() {
        let b = Arc::new(Backlog::default());
        b.add(0, 100);
        let second = waits(&b, 0, 100);
        assert!(!second.is_finished(), "a second frame waits while one is waiting");
        b.add(1, 100);
        assert_eq!(b.lock().frames.len(), 2, "another input hands over its own frame meanwhile");
        b.take(1, &frame_of(100));
        b.take(0, &frame_of(100));
        second.join().unwrap();
        b.set_opening(true);
        for _ in 0..10 {
            b.add(0, READ_AHEAD_BYTES / 16);
        }
        assert_eq!(b.lock().frames[&0], 11, "while the GPU opens, frames pile up");
        let over = waits(&b, 0, READ_AHEAD_BYTES);
        assert!(!over.is_finished(), "beyond the read-ahead budget, the reader waits");
        b.add(2, READ_AHEAD_BYTES);
        assert_eq!(b.lock().frames[&2], 1, "but an input with no frame waiting never does");
        b.take(2, &frame_of(READ_AHEAD_BYTES));
        b.set_opening(false);
        b.take(0, &frame_of(100));
        for _ in 0..9 {
            b.take(0, &frame_of(READ_AHEAD_BYTES / 16));
        }
        assert!(!over.is_finished(), "once open, one frame at a time again");
        b.take(0, &frame_of(READ_AHEAD_BYTES / 16));
        over.join().unwrap();
        let s = b.lock().clone();
        assert_eq!((s.frames.len(), s.frames[&0], s.bytes), (1, 1, READ_AHEAD_BYTES));
    }

    fn bytes(b: &[u8]) -> Input {
        Input::Bytes(b.into())
    }

    fn all(frames: &mut InputFrames) -> (Vec<Frame>, Option<Error>) {
        let mut out = Vec::new();
        loop {
            match frames.next() {
                Read::Frame(f, _) => out.push(f),
                Read::Held(..) => panic!("a reference where none is taken"),
                Read::End => return (out, None),
                Read::Failed(e) => return (out, Some(e)),
            }
        }
    }

    fn spawn(inputs: Vec<Input>, readers: usize) -> InputFrames {
        let backlog = Arc::new(Backlog::default());
        let options = ReadOptions::default();
        InputFrames::spawn(Inputs::of(inputs), readers, options, false, SampleMemory::default(), backlog)
            .unwrap()
    }

    #[test]
    fn the_frames_of_every_input_come_in_order_with_their_sources() {
        let dir = std::env::temp_dir().join(format!("histopipe-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut inputs = Vec::new();
        for i in 0..7u8 {
            let path = dir.join(format!("{i}.pgm"));
            let frames = [b"P5 1 1 255\n".as_slice(), &[i], b"P5 1 1 255\n", &[100 + i]].concat();
            std::fs::write(&path, frames).unwrap();
            inputs.push(Input::file(path));
        }
        inputs.insert(3, bytes(b"P5 1 1 255\n\x2a"));
        for readers in [1, 3, 16] {
            let (frames, failed) = all(&mut spawn(inputs.clone(), readers));
            assert!(failed.is_none());
            let samples: Vec<u16> = frames.iter().map(|f| f.pixels.get(0)).collect();
            assert_eq!(samples, [0, 100, 1, 101, 2, 102, 42, 3, 103, 4, 104, 5, 105, 6, 106]);
            assert_eq!(frames[1].source, Some(Source::new(dir.join("0.pgm"), 2)));
            assert_eq!(frames[6].source, None, "standard input has no file name");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// References to held frames in a stream: each handed over, the bytes after one given to its
    /// frame, nothing after another; one cut short ends the stream with an error.
    #[test]
    fn references_to_held_frames_come_in_order_with_what_follows_them() {
        let (a, b) = (held::Token(1, 2), held::Token(1, 3));
        let mut bytes = b"P5 1 1 255\n\x01".to_vec();
        bytes.extend(held::record(a));
        bytes.push(held::NOTHING_FOLLOWS);
        bytes.extend(held::record(b));
        bytes.push(held::FRAME_FOLLOWS);
        bytes.extend(b"P5 1 1 255\n\x02P5 1 1 255\n\x03");
        let backlog = Arc::new(Backlog::default());
        let options = ReadOptions::default();
        let inputs = Inputs::of(vec![Input::Bytes(bytes.clone().into())]);
        let mut frames =
            InputFrames::spawn(inputs, 1, options, true, SampleMemory::default(), backlog).unwrap();
        let mut seen = Vec::new();
        loop {
            match frames.next() {
                Read::Frame(f, _) => seen.push(format!("frame {}", f.pixels.get(0))),
                Read::Held(h, _) => {
                    let token = h.token;
                    let given = h.frame().map(|f| f.pixels.get(0));
                    seen.push(format!("held {} {:?}", token.1, given.ok()));
                }
                Read::End => break,
                Read::Failed(e) => panic!("{e}"),
            }
        }
        assert_eq!(seen, ["frame 1", "held 2 None", "held 3 Some(2)", "frame 3"]);
        // Without `held`, a reference is no frame.
        let backlog = Arc::new(Backlog::default());
        let inputs = Inputs::of(vec![Input::Bytes(bytes[12..].to_vec().into())]);
        let mut frames =
            InputFrames::spawn(inputs, 1, options, false, SampleMemory::default(), backlog).unwrap();
        assert!(matches!(frames.next(), Read::Failed(_)));
        // Cut after a reference: its frame has no bytes, and the stream fails.
        let backlog = Arc::new(Backlog::default());
        let inputs = Inputs::of(vec![Input::Bytes(bytes[12..12 + held::RECORD].to_vec().into())]);
        let mut frames =
            InputFrames::spawn(inputs, 1, options, true, SampleMemory::default(), backlog).unwrap();
        let Read::Held(h, _) = frames.next() else { panic!("the reference comes first") };
        assert!(h.frame().is_err());
    }

    #[test]
    fn a_failed_input_ends_the_stream_at_its_frame() {
        let inputs = vec![
            bytes(b"P5 1 1 255\n\x01"),
            Input::file("/histopipe/no/such/file.pgm".into()),
            bytes(b"P5 1 1 255\n\x02"),
        ];
        let (frames, failed) = all(&mut spawn(inputs, 2));
        assert_eq!(frames.len(), 1);
        let e = failed.unwrap();
        assert_eq!(e.place, Place::file("/histopipe/no/such/file.pgm".as_ref()));
        let inputs = vec![bytes(b"P5 1 1 255\n\x01"), bytes(b"P5 1 1 255\n\x02P5 1 1")];
        let (frames, failed) = all(&mut spawn(inputs, 2));
        assert_eq!(frames.len(), 2);
        assert_eq!(failed.unwrap().place, Place::frame(2), "the frame of its input");
    }

    /// An input that panics once `after` bytes were read: a stand-in for a decoder's bug.
    struct PanicsAfter {
        data: Vec<u8>,
        at: usize,
        after: usize,
    }

    impl std::io::Read for PanicsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            assert!(self.at < self.after, "the input broke");
            let n = buf.len().min(self.after - self.at).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn a_panic_while_reading_is_an_error_naming_the_frame() {
        crate::panic::install_hook();
        let data = b"P5 2 1 255\n\x01\x02P5 2 1 255\n\x03\x04".to_vec();
        let input = PanicsAfter { after: 15, data, at: 0 };
        let backlog = Arc::new(Backlog::default());
        let (tx, rx) = channel();
        let b = backlog.clone();
        std::thread::spawn(move || {
            let (options, memory) = (ReadOptions::default(), SampleMemory::default());
            let input = Opened { stream: Box::new(input), unread: None };
            let how = How { options, held: false, memory: &memory, backlog: &b };
            read_stream(0, Some(Path::new("a.pgm")), input, &tx, &how)
        });
        let first = rx.recv().unwrap();
        backlog.take(0, &first);
        assert!(matches!(first, Read::Frame(f, _) if f.width == 2), "the first frame is whole");
        let Read::Failed(e) = rx.recv().unwrap() else { panic!("the panic is reported") };
        assert_eq!(e.kind, crate::ErrorKind::Internal);
        assert_eq!(e.place, Place { file: Some("a.pgm".into()), frame: Some(2) });
        assert!(e.message.contains("the input broke"), "{}", e.message);
        assert!(rx.recv().is_err(), "nothing follows a failure");
    }
}
