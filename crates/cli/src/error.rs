use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use histopipe_frame::{FrameError, FrameErrorKind, Source};
use histopipe_ops::{OpError, OpErrorKind};

use crate::flags::{op_message, Flag};

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
    /// Standard output was closed by its reader: end quietly.
    BrokenPipe,
}

/// Where an error happened: a file, a frame, or a frame of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The file, as named on the command line (an input, or the output of `-o`).
    pub file: Option<PathBuf>,
    /// The frame: its number in `file`, or in the stream when there is no file.
    pub frame: Option<usize>,
}

impl Place {
    /// Frame `n` of the stream.
    pub fn frame(n: usize) -> Place {
        Place { file: None, frame: Some(n) }
    }

    pub fn file(path: &Path) -> Place {
        Place { file: Some(path.to_owned()), frame: None }
    }

    /// Frame `n` of the stream, named by the file it came from when it has one.
    pub fn of(source: Option<&Source>, n: usize) -> Place {
        match source {
            Some(s) => Place { file: Some(s.path.clone()), frame: Some(s.index) },
            None => Place::frame(n),
        }
    }
}

impl Place {
    /// `frame I of FILE`, `FILE` or `frame N`, for a place named inside a message.
    pub fn in_words(&self) -> String {
        match (&self.file, self.frame) {
            (Some(p), Some(i)) => format!("frame {i} of {}", p.display()),
            (None, Some(n)) => format!("frame {n}"),
            _ => self.to_string(),
        }
    }
}

/// `FILE: frame I`, `FILE`, `frame N`, or nothing; shown as one line.
impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_ref().map(|p| one_line(&p.to_string_lossy()));
        match (file, self.frame) {
            (Some(p), Some(i)) => write!(f, "{p}: frame {i}"),
            (Some(p), None) => f.write_str(&p),
            (None, Some(n)) => write!(f, "frame {n}"),
            (None, None) => Ok(()),
        }
    }
}

/// A tool's error: one line, naming the file and frame where there is one.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub place: Place,
    pub message: String,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Usage, place: Place::default(), message: message.into() }
    }

    /// Bad input at `place`.
    pub fn input(place: Place, message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Input, place, message: message.into() }
    }

    /// An I/O error, at no place yet (see [`Error::at`]). A pipe closed by its reader is a
    /// failure like any other here (a `-o` file that is a named pipe, a side file): only
    /// standard output's reader may end the tool quietly ([`Error::writing_stdout`]).
    pub fn io(err: &io::Error) -> Error {
        Error { kind: ErrorKind::Runtime, place: Place::default(), message: err.to_string() }
    }

    /// The error `err` met writing standard output: its reader going away (`tool | head`) ends
    /// the tool quietly, as it ends `cat` and ripgrep.
    pub(crate) fn writing_stdout(err: Error, io_kind: Option<io::ErrorKind>) -> Error {
        match io_kind {
            Some(io::ErrorKind::BrokenPipe) => Error { kind: ErrorKind::BrokenPipe, ..err },
            _ => err,
        }
    }

    /// A panic caught while working at `place`, in the part of the tool `where_`.
    pub fn internal(place: Place, where_: &str, panic: &str) -> Error {
        Error {
            kind: ErrorKind::Internal,
            place,
            message: format!("internal error in the {where_}: {panic}"),
        }
    }

    /// The operation's error, placed at `place`, each parameter it names said as the option
    /// among `flags` (the tool's) that sets it.
    pub fn op(place: Place, err: OpError, flags: &[Flag]) -> Error {
        let kind = match err.kind {
            OpErrorKind::Invalid => ErrorKind::Input,
            OpErrorKind::Gpu => ErrorKind::Runtime,
        };
        Error { kind, place, message: op_message(flags, &err) }
    }

    /// The operation's error about the options' values, found before any input is read (a
    /// tool's [`Tool::check`](crate::Tool::check)): a usage error, said as [`Error::op`] says it.
    pub fn op_usage(err: OpError, flags: &[Flag]) -> Error {
        Error::usage(op_message(flags, &err))
    }

    /// The same error, placed at `place`.
    pub fn at(self, place: Place) -> Error {
        Error { place, ..self }
    }

    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Usage | ErrorKind::Input => 2,
            ErrorKind::Runtime | ErrorKind::Internal => 1,
            ErrorKind::BrokenPipe => 0,
        }
    }
}

/// A frame reader's error: at its frame of the stream (or of the file the caller places it in).
impl From<FrameError> for Error {
    fn from(e: FrameError) -> Self {
        let kind = match e.kind {
            FrameErrorKind::Invalid | FrameErrorKind::TooLarge => ErrorKind::Input,
            FrameErrorKind::Io(_) => ErrorKind::Runtime,
        };
        Error { kind, place: Place::frame(e.frame), message: e.message }
    }
}

impl From<lexopt::Error> for Error {
    fn from(e: lexopt::Error) -> Self {
        Error::usage(e.to_string())
    }
}

/// One line, always: the place and the message shown as [`one_line`] makes them.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.place != Place::default() {
            write!(f, "{}: ", self.place)?;
        }
        f.write_str(&one_line(&self.message))
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
        let e = Error::input(Place::frame(3), "line one\nline two\n");
        assert_eq!(e.to_string(), "frame 3: line one\\nline two");
    }

    #[test]
    fn errors_name_the_file_and_the_frame_in_it() {
        let source = Source::new("scans/b\n.jpg", 2);
        let e = Error::input(Place::of(Some(&source), 7), "bad");
        assert_eq!(e.to_string(), "scans/b\\n.jpg: frame 2: bad", "the file's frame, not the stream's");
        assert_eq!(Error::input(Place::of(None, 7), "bad").to_string(), "frame 7: bad");
        assert_eq!(Error::usage("bad").at(Place::file(Path::new("a.pgm"))).to_string(), "a.pgm: bad");
        assert_eq!(Error::usage("bad").to_string(), "bad");
    }
}
