use std::fmt;
use std::io;

use histopipe_frame::{FrameError, FrameErrorKind};
use histopipe_ops::{OpError, OpErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad command line: exit 2.
    Usage,
    /// Bad input data, or a frame the options cannot apply to: exit 2.
    Input,
    /// The machine failed us (I/O, GPU): exit 1.
    Runtime,
    /// The output was closed by its reader: end quietly.
    BrokenPipe,
}

/// A tool's error: one line, naming the frame where there is one.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub frame: Option<usize>,
    pub message: String,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Usage, frame: None, message: message.into() }
    }

    /// Bad input in frame `frame`.
    pub fn input(frame: usize, message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Input, frame: Some(frame), message: message.into() }
    }

    pub fn io(err: &io::Error) -> Error {
        let kind =
            if err.kind() == io::ErrorKind::BrokenPipe { ErrorKind::BrokenPipe } else { ErrorKind::Runtime };
        Error { kind, frame: None, message: err.to_string() }
    }

    /// The operation's error, placed at frame `frame`.
    pub fn op(frame: usize, err: OpError) -> Error {
        let kind = match err.kind {
            OpErrorKind::Invalid => ErrorKind::Input,
            OpErrorKind::Gpu => ErrorKind::Runtime,
        };
        Error { kind, frame: Some(frame), message: err.message }
    }

    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Usage | ErrorKind::Input => 2,
            ErrorKind::Runtime => 1,
            ErrorKind::BrokenPipe => 0,
        }
    }
}

impl From<FrameError> for Error {
    fn from(e: FrameError) -> Self {
        let kind = match e.kind {
            FrameErrorKind::Invalid | FrameErrorKind::TooLarge => ErrorKind::Input,
            FrameErrorKind::Io(io::ErrorKind::BrokenPipe) => ErrorKind::BrokenPipe,
            FrameErrorKind::Io(_) => ErrorKind::Runtime,
        };
        Error { kind, frame: Some(e.frame), message: e.message }
    }
}

impl From<lexopt::Error> for Error {
    fn from(e: lexopt::Error) -> Self {
        Error::usage(e.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.frame {
            Some(n) => write!(f, "frame {n}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
