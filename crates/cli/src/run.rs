use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;

use histopipe_frame::{Frame, FrameReader, FrameWriter, ReadOptions, WriteOptions};
use histopipe_ops::{Engine, Op};
use lexopt::{Arg, Parser};

use crate::{Common, Error, COMMON_HELP};

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
    out: &'a mut FrameWriter<BufWriter<io::StdoutLock<'static>>>,
}

impl Context<'_> {
    /// Runs an operation on the chosen backend; errors are placed at this frame.
    pub fn run<O: Op>(&mut self, op: &O, frame: &Frame) -> Result<O::Output, Error> {
        self.engine.run(op, frame).map_err(|e| Error::op(self.index, e))
    }

    /// Writes a frame to the output, in its own container (or PNG with `--png`).
    pub fn write(&mut self, frame: &Frame) -> Result<(), Error> {
        Ok(self.out.write(self.index, frame)?)
    }

    /// The output as bytes, for tools that write text.
    pub fn text(&mut self) -> &mut impl Write {
        self.out.get_mut()
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

fn run<T: Tool>() -> Result<(), Error> {
    let mut tool = T::default();
    let common = match parse_args(&mut tool, std::env::args_os().skip(1))? {
        Parsed::Run(c) => c,
        Parsed::Printed => return Ok(()),
    };
    let mut engine = Engine::new(common.backend, common.device);
    let input = BufReader::with_capacity(1 << 20, io::stdin().lock());
    let mut reader = FrameReader::new(input, ReadOptions { raw: common.raw, max_pixels: common.max_pixels });
    let output = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let mut out = FrameWriter::new(output, WriteOptions { png: common.png });
    while let Some(frame) = reader.next_frame()? {
        let mut cx =
            Context { index: reader.next_index() - 1, common: &common, engine: &mut engine, out: &mut out };
        tool.frame(&mut cx, frame)?;
    }
    out.flush().map_err(|e| Error::io(&e))
}

/// The whole of a tool's `main`: runs it, reports an error as one line on stderr, exits.
pub fn main<T: Tool>() -> ExitCode {
    match run::<T>() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.kind != crate::ErrorKind::BrokenPipe {
                eprintln!("{}: {e}", T::NAME);
            }
            ExitCode::from(e.exit_code())
        }
    }
}
