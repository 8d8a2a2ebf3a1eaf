//! The frame loop and the whole of a tool's `main`.
//!
//! A run is a pipeline of threads: readers (one input each at a time, see [`InputFrames`]), this
//! thread handing frames out in the stream's order, workers running the tool on several frames
//! at once ([`Crew`]), and a writer putting their outputs in place in the stream's order
//! ([`spawn_writer`]). Reading and decoding, the work, and encoding and writing of different
//! frames overlap, on all cores; memory stays a few frames per worker (see [`InFlight`], and
//! [`Backlog`] for the read-ahead while the GPU opens). The GPU is opened once for the run.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{channel, sync_channel, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use histopipe_frame::{Frame, Pixels, ReadOptions, SampleMemory};

use crate::args::{self, Invocation, Parsed};
use crate::atomic::{self, AtomicFile};
use crate::dispatch::{BackendChoice, Backends};
use crate::error::Place;
use crate::inputs::Input;
use crate::memory;
use crate::outputs::{Destinations, Target};
use crate::panic::{self, catch};
use crate::progress::Progress;
use crate::reader::{Backlog, InputFrames, Read};
use crate::service::past::{self, Plan, Shape, Tally};
use crate::service::{self, client::Remote, held::Pipe};
use crate::signals;
use crate::splice::PagePipe;
use crate::stdout::{self, RawStdout};
use crate::tool::Tool;
use crate::workers::{Crew, Job};
use crate::writer::{spawn_writer, Done, Failures, InFlight, KeepGoing, Sink};
use crate::{Error, ErrorKind};

/// Settings that make streams of large frames cheap; each is best effort. Call it before any
/// thread is made.
fn tune_process_for_streams() {
    // Larger pipes (64 KiB by default on Linux) mean fewer wake-ups per frame on both sides.
    #[cfg(target_os = "linux")]
    for fd in [0, 1] {
        // SAFETY: F_SETPIPE_SZ only asks the kernel to resize a pipe; on anything else it fails.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20) };
    }
    keep_freed_memory();
}

/// Sets the heap up for frames, before any thread is made (the GPU service's too: its frames,
/// and a sweep's counts, were page-faulted afresh for every frame).
pub(crate) fn keep_freed_memory() {
    // glibc maps every large block afresh and returns it to the kernel when freed, so each
    // frame's buffers would be page-faulted and zeroed anew; with no mapped blocks at all (its
    // mmap threshold cannot be raised past 32 MiB, and an 8K 16-bit frame is 66 MB) they come
    // from the heap, which keeps up to 1 GiB free for the next frame to reuse (measured here:
    // 4 frames of 7680x4320 16-bit through `rotate 0`, 0.37 s with blocks over 32 MiB mapped,
    // 0.22 s without).
    // And one heap for all threads: a frame is often made on one thread (a reader, a worker) and
    // freed on another, and a heap per thread would each keep its own peak of frames (measured:
    // 9 to 16 frames of 4K held by pad on 2 workers, against 6 to 10 with one heap).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes allocator settings; called before any thread is made (see above).
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Runs `tool` over the frames of `invocation`'s inputs; `stdout` is standard output. The run's
/// backends are left in `backends` for `main`. A panic on any thread ends it with an error naming
/// the frame.
pub(crate) fn run_frames<T: Tool>(
    tool: &T,
    invocation: Invocation,
    stdout: Box<dyn Write + Send>,
    pipe: Option<PagePipe>,
    backends: &mut Option<Arc<Backends>>,
) -> Result<(), Error> {
    let Invocation { common, inputs, output, container, args, names_files } = invocation;
    let begun = Instant::now();
    let inputs_count = inputs.len();
    let keep_going = KeepGoing::new(common.fail_fast, inputs_count);
    let workers = common.workers();
    // Every thread first, the GPU after (`Backends::start`): while the driver loads, the
    // loader's lock holds up the making of threads.
    let memory = SampleMemory::default();
    let backlog = Arc::new(Backlog::default());
    let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels, gray: tool.reads_gray() };
    // With `gpu`, frames go to the GPU service where it can take them (docs/histopipe-service.md), and
    // with `auto` where it is up: every command line but those it declines, which the tool runs
    // itself. Where both ends of a pipe are tools on the service, frames may stay there, and only
    // references to them cross the pipe: the service is told at once that this process reads its
    // input pipe.
    let declined = service::declines(&common, names_files, !tool.side_files().is_empty());
    // The kind of run, for what `auto` remembers of runs (service::past).
    let kind = (declined.is_none() && service::enabled()).then(|| past::kind(T::NAME, &args, &inputs));
    let mut remote = declined
        .is_none()
        .then(|| Remote::new(T::NAME, args, &common.device, common.backend, kind.clone().unwrap_or_default()))
        .flatten();
    // Not where each frame's output is named after its source, which a reference does not carry.
    let stdin_only = inputs.len() == 1
        && matches!(inputs.get(0), Some(Input::Stdin))
        && !matches!(output.target, Target::Template(_));
    let pipe_in = (stdin_only && common.raw.is_none()).then(|| Pipe::of(std::io::stdin())).flatten();
    let to_pipe = matches!(output.target, Target::Stdout) && container.is_none();
    let pipe_out = to_pipe.then(|| Pipe::of(std::io::stdout())).flatten();
    let held = remote.as_mut().is_some_and(|r| r.with_pipes(pipe_out, pipe_in));
    let mut frames = InputFrames::spawn(inputs, workers, options, held, memory.clone(), backlog.clone())?;
    let (sink, mut destinations) = match output.target {
        Target::Stdout => (Sink::Stream(stdout, pipe), Destinations::stream(tool.side_files())),
        Target::File(path) => {
            let file = AtomicFile::create(&path).map_err(|e| Error::io(&e).at(Place::file(&path)))?;
            (Sink::File(file), Destinations::stream(tool.side_files()))
        }
        Target::Template(template) => (Sink::PerFrame, Destinations::per_frame(template, tool.side_files())),
    };
    // Every worker busy, one frame waiting for the first worker done, one being written.
    let in_flight = Arc::new(InFlight::new(workers + 2));
    let (done, finished) = channel();
    let progress = common.progress.then(|| Progress::new(T::NAME));
    let failures = Failures::new(keep_going, T::NAME, inputs_count);
    let writer = spawn_writer(sink, container, finished, in_flight.clone(), progress, failures)?;
    // Where the frames this process does run on the CPU whatever happens (under `auto` with the
    // service up), it opens no GPU of its own: `auto` would open one once the stream had run a
    // second, for nothing (100 4K float NPYs stretched to PNG, every frame on the service, on the
    // H200 host: 1492.2 ms with it opened, 1354.9 without; `gpu` 1346.4; medians of 5).
    let own = match remote.as_ref().and_then(Remote::local_backends) {
        Some(_) => BackendChoice::Cpu,
        None => common.backend,
    };
    let shared = Arc::new(Backends::new(own, common.device.clone(), common.gpu_after, memory));
    *backends = Some(shared.clone());
    let mut tally = Tally::default();
    let (jobs, queue) = sync_channel::<Job>(workers);
    let queue = Mutex::new(queue);
    let crew = Crew {
        tool,
        common: &common,
        backends: &shared,
        container,
        in_flight: &in_flight,
        remote: remote.as_ref(),
        working: AtomicUsize::new(0),
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (crew, queue, theirs) = (&crew, &queue, done.clone());
            let worker = std::thread::Builder::new().name("histopipe-work".into());
            if let Err(e) = worker.spawn_scoped(scope, move || crew.work(queue, theirs)) {
                done_err(&done, 1, Error::io(&e));
                return;
            }
        }
        if remote.is_none() {
            shared.start();
        }
        let stream = Stream {
            frames: &mut frames,
            destinations: &mut destinations,
            backlog: &backlog,
            keep_going,
            tally: &mut tally,
        };
        stream.hand_out(&shared, &in_flight, remote.as_ref(), jobs, done);
    });
    let result = writer.join().unwrap_or_else(|_| {
        Err(Error::internal(Place::default(), "writer", "its thread ended without a result"))
    });
    if result.is_ok() {
        past::remember(common.backend, &common.device, remote.as_ref(), kind, &tally, begun.elapsed());
    }
    if common.progress && common.backend != BackendChoice::Cpu {
        let line = match &remote {
            Some(r) => format!(
                "frames on the GPU service {}; operations in this process on {}{}",
                r.served(),
                r.local_backends().unwrap_or(&shared).tally(),
                match r.plan() {
                    Some(Plan::Cores) => "; auto, from earlier runs of the kind: every frame on the cores",
                    Some(Plan::Service) =>
                        "; auto, from earlier runs of the kind: every frame to the service",
                    _ => "",
                }
            ),
            None => format!("operations run on {}", shared.tally()),
        };
        let _ = writeln!(io::stderr(), "{}: {line}", T::NAME);
    }
    result
}

/// Tells the writer that the stream fails at frame `n`. If the writer has stopped already, its
/// own error, earlier in the stream, is the run's.
fn done_err(done: &Sender<Done>, n: usize, e: Error) {
    let place = e.place.clone();
    done_err_at(done, n, place, e);
}

/// [`done_err`] of frame `n`, which came from `place`.
fn done_err_at(done: &Sender<Done>, n: usize, place: Place, e: Error) {
    let _ = done.send(Done { n, place, bytes: 0, result: Err(e) });
}

/// The stream as this thread hands it out.
struct Stream<'a> {
    frames: &'a mut InputFrames,
    destinations: &'a mut Destinations,
    backlog: &'a Backlog,
    keep_going: KeepGoing,
    tally: &'a mut Tally,
}

impl Stream<'_> {
    /// Hands the frames to the workers in order, each with its destination, as room is made in
    /// flight. A failure to read a frame or to place it goes to the writer in the frame's place,
    /// so frames before it are written and none after.
    fn hand_out(
        self,
        backends: &Arc<Backends>,
        in_flight: &InFlight,
        remote: Option<&Remote>,
        jobs: SyncSender<Job>,
        done: Sender<Done>,
    ) {
        for n in 1.. {
            if !in_flight.acquire() {
                return;
            }
            let (frame, held) = match self.frames.next() {
                Read::Frame(frame, time) => {
                    time.record(n);
                    if let (None, Some(remote)) = (self.tally.first, remote) {
                        remote.first_read(Shape::of(&frame));
                    }
                    self.tally.count(Some(&frame));
                    (frame, None)
                }
                Read::Held(held, time) => {
                    time.record(n);
                    self.tally.count(None);
                    (Frame::new(0, 0, 255, Pixels::U8(Vec::new().into())), Some(held))
                }
                Read::End => return,
                Read::Failed(mut e) => {
                    // A frame of standard input is known by its number in the stream.
                    if e.place.file.is_none() && e.place.frame.is_some() {
                        e.place.frame = Some(n);
                    }
                    let go_on = self.keep_going.past(&e.place, &e);
                    done_err(&done, n, e);
                    if go_on {
                        continue;
                    }
                    return;
                }
            };
            backends.begin_frame(n);
            self.backlog.set_opening(backends.is_opening());
            let placed = self
                .destinations
                .of(n, &frame)
                .and_then(|destination| Ok((destination, self.destinations.side_files(n, &frame)?)));
            let (destination, side_files) = match placed {
                Ok(placed) => placed,
                Err(e) => {
                    if let (Some(held), Some(remote)) = (&held, remote) {
                        remote.decline(held.token);
                    }
                    let place = Place::of(frame.source.as_ref(), n);
                    let go_on = self.keep_going.past(&place, &e);
                    done_err_at(&done, n, place, e);
                    if go_on {
                        continue;
                    }
                    return;
                }
            };
            if jobs.send(Job { n, frame, destination, side_files, held }).is_err() {
                return;
            }
        }
    }
}

fn run<T: Tool>(backends: &mut Option<Arc<Backends>>) -> Result<(), Error> {
    let mut tool = T::default();
    let invocation = match args::parse(&mut tool, std::env::args_os().skip(1))? {
        Parsed::Run(invocation) => *invocation,
        Parsed::Printed => return Ok(()),
    };
    histopipe_trace::start(T::NAME).map_err(|e| {
        let path = std::env::var_os(histopipe_trace::VARIABLE).unwrap_or_default();
        Error::usage(format!("{}={}: {e}", histopipe_trace::VARIABLE, Path::new(&path).display()))
    })?;
    // Both before any thread is made.
    histopipe_ops::parallel::set_threads(invocation.common.threads);
    tune_process_for_streams();
    if !matches!(invocation.output.target, Target::Stdout) || !tool.side_files().is_empty() {
        // The threads inherit the blocked signals.
        signals::remove_temporaries_on_signals();
    }
    if matches!(invocation.output.target, Target::Stdout) {
        stdout::is_open()?;
    }
    run_frames(&tool, invocation, Box::new(RawStdout::new()), PagePipe::stdout(), backends)
}

/// The whole of a tool's `main`: runs it, reports an error as one line on stderr, exits. A panic
/// anywhere, caught or not, ends it with a non-zero status, and no temporary file is left.
pub fn main<T: Tool>() -> ExitCode {
    memory::set_tool_name(T::NAME);
    panic::install_hook();
    let mut backends = None;
    let mut result = catch(|| run::<T>(&mut backends))
        .unwrap_or_else(|panic| Err(Error::internal(Place::default(), "tool", &panic)));
    if let (Ok(()), Some(panic)) = (&result, panic::uncaught()) {
        result = Err(Error::internal(Place::default(), "background thread", &panic));
    }
    // Every output that succeeded is in place by now; what is left is a failure's.
    atomic::remove_all();
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            if e.kind != ErrorKind::BrokenPipe {
                // Not eprintln!, which panics when stderr cannot be written (`2>/dev/full`).
                let _ = writeln!(io::stderr(), "{}: {e}", T::NAME);
            }
            e.exit_code()
        }
    };
    if backends.is_some_and(|b| b.is_opening()) {
        // The GPU is still being opened on a background thread (`auto` served every frame on the
        // CPU). A normal exit would wait for the driver to finish loading, tens of milliseconds
        // for nothing: the output is flushed (the writer thread flushed it) and stderr is
        // unbuffered, so end the process at once.
        // SAFETY: _exit ends the process without running destructors, none of which is still
        // needed: outputs are in place and temporary files removed (atomic::remove_all above).
        unsafe { libc::_exit(code as i32) }
    }
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{Input, Inputs};
    use crate::outputs::OutputSpec;
    use crate::tool::Context;
    use crate::Common;
    use histopipe_frame::Frame;

    /// A tool that copies frames, panics on frame `panics_at`, and works longer on some frames
    /// than on others, so the workers finish out of order.
    #[derive(Default)]
    struct Fragile {
        panics_at: usize,
    }

    impl Tool for Fragile {
        const NAME: &'static str = "fragile";
        const HELP: &'static str = "";
        fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
            assert_ne!(cx.index, self.panics_at, "the tool broke");
            std::thread::sleep(std::time::Duration::from_millis((cx.index * 7 % 5) as u64));
            cx.write(frame)
        }
    }

    /// An output shared with the test, which panics when asked to write `breaks_on`.
    #[derive(Clone, Default)]
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        breaks_on: Option<u8>,
    }

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            assert!(self.breaks_on.is_none_or(|b| !buf.contains(&b)), "the output broke");
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// `count` one-pixel frames, of values 1, 2, ...
    fn frames(count: u8) -> Vec<u8> {
        (1..=count).flat_map(|v| [b"P5 1 1 255\n".as_slice(), &[v]].concat()).collect()
    }

    fn written(count: u8) -> Vec<u8> {
        (1..=count).flat_map(|v| [b"P5\n1 1\n255\n".as_slice(), &[v]].concat()).collect()
    }

    fn stream(tool: &Fragile, input: &[u8], out: Shared, threads: usize) -> Result<(), Error> {
        panic::install_hook();
        let common =
            Common { backend: BackendChoice::Cpu, threads: Some(threads), ..Common::from_env().unwrap() };
        let invocation = Invocation {
            common,
            inputs: Inputs::of(vec![Input::Bytes(input.into())]),
            output: OutputSpec::parse(None).unwrap(),
            container: None,
            args: Vec::new(),
            names_files: false,
        };
        run_frames(tool, invocation, Box::new(out), None, &mut None)
    }

    #[test]
    fn a_whole_stream_goes_through_in_order_whatever_the_workers() {
        for threads in [1, 2, 7] {
            let out = Shared::default();
            stream(&Fragile::default(), &frames(40), out.clone(), threads).unwrap();
            assert!(*out.bytes.lock().unwrap() == written(40), "{threads} threads");
        }
    }

    #[test]
    fn a_panic_in_the_tool_is_an_error_at_its_frame() {
        for threads in [1, 4] {
            let out = Shared::default();
            let e = stream(&Fragile { panics_at: 9 }, &frames(30), out.clone(), threads).unwrap_err();
            assert_eq!((e.kind, e.exit_code(), e.place), (ErrorKind::Internal, 1, Place::frame(9)));
            assert!(e.message.contains("the tool broke"), "{}", e.message);
            assert!(*out.bytes.lock().unwrap() == written(8), "the frames before are written, none after");
        }
    }

    #[test]
    fn a_bad_frame_ends_the_stream_after_the_ones_before() {
        let input = [frames(5), b"P5 1 1 255\n".to_vec()].concat();
        let out = Shared::default();
        let e = stream(&Fragile::default(), &input, out.clone(), 3).unwrap_err();
        assert_eq!((e.kind, e.place), (ErrorKind::Input, Place::frame(6)));
        assert!(*out.bytes.lock().unwrap() == written(5));
    }

    #[test]
    fn a_panic_in_the_writer_is_an_error_at_its_frame() {
        let out = Shared { breaks_on: Some(2), ..Default::default() };
        let e = stream(&Fragile::default(), &frames(3), out, 2).unwrap_err();
        // Output is buffered: the frame named is the last one handed to the writer.
        assert_eq!((e.kind, e.place), (ErrorKind::Internal, Place::frame(3)));
        assert!(e.message.contains("the output broke"), "{}", e.message);
    }
}
