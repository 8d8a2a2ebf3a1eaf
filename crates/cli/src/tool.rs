//! What a tool is ([`Tool`]) and what it works with on each frame ([`Context`]).

use std::ffi::OsString;
use std::sync::mpsc::SyncSender;

use histopipe_frame::Frame;
use histopipe_ops::{Engine, Op};
use lexopt::Parser;

use crate::writer::Output;
use crate::{Common, Error, ErrorKind};

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
    pub(crate) out: &'a SyncSender<Output>,
    pub(crate) text: Vec<u8>,
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

    pub(crate) fn flush_text(&mut self) -> Result<(), Error> {
        if self.text.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.text);
        self.send(Output::Bytes(self.index, text))
    }

    /// A send fails only when the writer has stopped, and the writer's error says why.
    fn send(&self, item: Output) -> Result<(), Error> {
        self.out.send(item).map_err(|_| Error {
            kind: ErrorKind::WriterStopped,
            frame: Some(self.index),
            message: "the output writer stopped".into(),
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
