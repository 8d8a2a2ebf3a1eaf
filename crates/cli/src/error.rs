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
    /// A bug: a panic in histopipe or in a library it uses: exit 1.
    Internal,
    /// The writer thread stopped; its own error says why: exit 1 if that error is lost.
    WriterStopped,
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

    /// A panic caught while working on frame `frame` (if known), in the part of the tool `where_`.
    pub fn internal(frame: Option<usize>, where_: &str, panic: &str) -> Error {
        Error {
            kind: ErrorKind::Internal,
            frame,
            message: format!("internal error in the {where_}: {panic}"),
        }
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
            ErrorKind::Runtime | ErrorKind::Internal | ErrorKind::WriterStopped => 1,
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

/// One line, always: the message shown as [`one_line`] makes it.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.frame {
            Some(n) => write!(f, "frame {n}: {}", one_line(&self.message)),
            None => f.write_str(&one_line(&self.message)),
        }
    }
}

/// The longest message shown, in characters; the rest is counted, not printed.
const MAX_MESSAGE_CHARS: usize = 400;

/// `text` as one line of bounded length that is safe on a terminal: surrounding whitespace
/// trimmed, line breaks, tabs and every other control character shown as escapes (`\n`, `\t`,
/// `\x1b`), and anything past [`MAX_MESSAGE_CHARS`] characters cut, saying how much was cut.
/// Messages quote input (header tokens, decoder texts), and input is untrusted.
pub(crate) fn one_line(text: &str) -> String {
    let text = text.trim();
    let mut out = String::with_capacity(text.len().min(4 * MAX_MESSAGE_CHARS));
    for (shown, (i, c)) in text.char_indices().enumerate() {
        if shown == MAX_MESSAGE_CHARS {
            out.push_str(&format!("... ({} more bytes)", text.len() - i));
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_escaped_line_of_bounded_length() {
        assert_eq!(one_line("bad JPEG: no SOI\n"), "bad JPEG: no SOI");
        assert_eq!(one_line("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(one_line("header '\x1b[31mred'"), "header '\\x1b[31mred'");
        assert_eq!(one_line("a\u{85}é"), "a\\x85é", "C1 controls are escaped, other characters kept");
        let long = "x".repeat(33_000);
        let shown = one_line(&long);
        assert!(shown.len() < 500 && shown.ends_with(&format!("... ({} more bytes)", 33_000 - 400)));
        let e = Error::input(3, "line one\nline two\n");
        assert_eq!(e.to_string(), "frame 3: line one\\nline two");
    }
}
