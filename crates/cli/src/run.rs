//! The frame loop and the whole of a tool's `main`.

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use histopipe_frame::{ReadOptions, SampleMemory, WriteOptions};
use histopipe_ops::Engine;
use lexopt::{Arg, Parser};

use crate::panic::{self, catch};
use crate::reader::{spawn_reader, Backlog, Read};
use crate::tool::{Context, Tool};
use crate::writer::spawn_writer;
use crate::{Common, Error, ErrorKind, COMMON_HELP};

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

/// The frame loop over one input and one output: a reader thread, this thread running the tool
/// on each frame in order, and a writer thread; memory stays a few frames (see [`Backlog`] for
/// the exception). A panic on any of the three ends it with an error naming the frame.
pub(crate) fn run_stream<T: Tool>(
    tool: &mut T,
    common: &Common,
    input: Box<dyn io::Read + Send>,
    output: Box<dyn Write + Send>,
    engine: &mut Option<Engine>,
) -> Result<(), Error> {
    // The threads first: opening the GPU (at once with `--backend gpu`) loads the driver, and
    // while it does, the loader's lock would hold up the creation of any other thread.
    let memory = SampleMemory::default();
    let backlog = Arc::new(Backlog::default());
    let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels };
    let frames = spawn_reader(input, options, memory.clone(), backlog.clone());
    let (out, writer) = spawn_writer(output, WriteOptions { png: common.png });
    let engine = engine.insert(Engine::new(common.backend, common.device, memory));
    let mut worked = Ok(());
    for index in 1.. {
        // The reader always says how it stopped; a silent end would be a lost frame.
        let item = frames.recv().unwrap_or_else(|_| {
            Read::Failed(Error::internal(Some(index), "reader", "it stopped without saying why"))
        });
        backlog.take(&item);
        let frame = match item {
            Read::Frame(frame) => frame,
            Read::End => break,
            Read::Failed(e) => {
                worked = Err(e);
                break;
            }
        };
        engine.begin_frame(index);
        backlog.set_opening(engine.is_opening());
        let mut cx = Context { index, common, engine, out: &out, text: Vec::new() };
        worked = catch(|| tool.frame(&mut cx, frame).and_then(|()| cx.flush_text()))
            .unwrap_or_else(|panic| Err(Error::internal(Some(index), "frame loop", &panic)));
        if worked.is_err() {
            break;
        }
    }
    drop(out);
    let written = writer
        .join()
        .unwrap_or_else(|_| Err(Error::internal(None, "writer", "its thread ended without a result")));
    match (worked, written) {
        // The writer's own error explains a failed hand-over, and a closed output ends quietly.
        (Err(e), Err(w)) if e.kind == ErrorKind::WriterStopped || w.kind == ErrorKind::BrokenPipe => Err(w),
        (Err(e), _) => Err(e),
        (Ok(()), written) => written,
    }
}

fn run<T: Tool>(engine: &mut Option<Engine>) -> Result<(), Error> {
    let mut tool = T::default();
    let common = match parse_args(&mut tool, std::env::args_os().skip(1))? {
        Parsed::Run(c) => c,
        Parsed::Printed => return Ok(()),
    };
    histopipe_ops::parallel::set_threads(common.threads);
    tune_process_for_streams();
    run_stream(&mut tool, &common, Box::new(io::stdin()), Box::new(io::stdout()), engine)
}

/// The whole of a tool's `main`: runs it, reports an error as one line on stderr, exits. A panic
/// anywhere, caught or not, ends it with a non-zero status.
pub fn main<T: Tool>() -> ExitCode {
    panic::install_hook();
    let mut engine = None;
    let mut result =
        catch(|| run::<T>(&mut engine)).unwrap_or_else(|panic| Err(Error::internal(None, "tool", &panic)));
    if let (Ok(()), Some(panic)) = (&result, panic::uncaught()) {
        result = Err(Error::internal(None, "background thread", &panic));
    }
    let code = match result {
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
    use histopipe_frame::Frame;
    use histopipe_ops::BackendChoice;
    use std::sync::Mutex;

    /// A tool that copies frames and panics on frame `panics_at`.
    #[derive(Default)]
    struct Fragile {
        panics_at: usize,
    }

    impl Tool for Fragile {
        const NAME: &'static str = "fragile";
        const HELP: &'static str = "";
        fn frame(&mut self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
            assert_ne!(cx.index, self.panics_at, "the tool broke");
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

    const THREE: &[u8] = b"P5 1 1 255\n\x01P5 1 1 255\n\x02P5 1 1 255\n\x03";

    fn stream(tool: &mut Fragile, out: Shared) -> Result<(), Error> {
        panic::install_hook();
        let common = Common { backend: BackendChoice::Cpu, ..Common::from_env().unwrap() };
        run_stream(tool, &common, Box::new(THREE), Box::new(out), &mut None)
    }

    #[test]
    fn a_whole_stream_goes_through() {
        let out = Shared::default();
        stream(&mut Fragile::default(), out.clone()).unwrap();
        assert_eq!(*out.bytes.lock().unwrap(), b"P5\n1 1\n255\n\x01P5\n1 1\n255\n\x02P5\n1 1\n255\n\x03");
    }

    #[test]
    fn a_panic_in_the_tool_is_an_error_at_its_frame() {
        let out = Shared::default();
        let e = stream(&mut Fragile { panics_at: 2 }, out.clone()).unwrap_err();
        assert_eq!((e.kind, e.frame, e.exit_code()), (ErrorKind::Internal, Some(2), 1));
        assert!(e.message.contains("the tool broke"), "{}", e.message);
        assert_eq!(*out.bytes.lock().unwrap(), b"P5\n1 1\n255\n\x01", "the frame before is written");
    }

    #[test]
    fn a_panic_in_the_writer_is_an_error_at_its_frame() {
        let out = Shared { breaks_on: Some(2), ..Default::default() };
        let e = stream(&mut Fragile::default(), out).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(e.message.contains("the output broke"), "{}", e.message);
    }
}
