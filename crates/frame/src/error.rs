use std::fmt;
use std::io;

/// What kind of failure a [`FrameError`] is: the caller maps these to exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameErrorKind {
    /// The input is not a valid frame (bad header, truncated data, sample over maxval, ...).
    Invalid,
    /// The frame is valid but outside what the caller allowed (`--max-pixels`).
    TooLarge,
    /// Reading or writing failed at the operating-system level.
    Io(io::ErrorKind),
}

/// An error tied to one frame of a stream (1-based), e.g. `frame 3: truncated pixel data`.
#[derive(Debug, Clone)]
pub struct FrameError {
    pub frame: usize,
    pub kind: FrameErrorKind,
    pub message: String,
}

impl FrameError {
    pub fn invalid(frame: usize, message: impl Into<String>) -> Self {
        FrameError { frame, kind: FrameErrorKind::Invalid, message: message.into() }
    }

    /// An I/O error, or an image's source refusing to gather more of it than the reader holds
    /// ([`read_gather_bound`](crate::read_gather_bound)), which is [`FrameErrorKind::TooLarge`].
    pub fn io(frame: usize, err: &io::Error) -> Self {
        if err.get_ref().is_some_and(|e| e.is::<crate::budget::GatheredTooMuch>()) {
            return FrameError { frame, kind: FrameErrorKind::TooLarge, message: err.to_string() };
        }
        FrameError { frame, kind: FrameErrorKind::Io(err.kind()), message: err.to_string() }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {}: {}", self.frame, self.message)
    }
}

impl std::error::Error for FrameError {}
