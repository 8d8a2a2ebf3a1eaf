//! `--progress`: frames done, frames/s and MB/s of frame samples on stderr, counted where the
//! writer puts each frame in place, in the stream's order. On a terminal one line is rewritten
//! in place; in a log, a line at most once a second. The last line is printed when the stream
//! ends well; a line left open is ended by [`Drop`], so an error that follows starts at column 0.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

/// A terminal is redrawn at most this often; more is flicker, and costs the writer's thread.
const TERMINAL_EVERY: Duration = Duration::from_millis(250);
/// A log gets at most a line this often, so it stays readable.
const LOG_EVERY: Duration = Duration::from_secs(1);

pub(crate) struct Progress {
    tool: &'static str,
    terminal: bool,
    start: Instant,
    last: Instant,
    frames: u64,
    bytes: u64,
    /// A line is on the terminal without its newline.
    open: bool,
}

impl Progress {
    pub(crate) fn new(tool: &'static str) -> Progress {
        let now = Instant::now();
        Progress {
            tool,
            terminal: io::stderr().is_terminal(),
            start: now,
            last: now,
            frames: 0,
            bytes: 0,
            open: false,
        }
    }

    /// One more frame put in place, of `bytes` bytes of samples.
    pub(crate) fn frame(&mut self, bytes: u64) {
        self.frames += 1;
        self.bytes += bytes;
        let every = if self.terminal { TERMINAL_EVERY } else { LOG_EVERY };
        let now = Instant::now();
        if now.duration_since(self.last) >= every {
            self.last = now;
            self.print(false);
        }
    }

    /// The stream has ended well: the last line, with its newline.
    pub(crate) fn finish(mut self) {
        self.print(true);
    }

    fn print(&mut self, last: bool) {
        let line = self.line(self.start.elapsed());
        let text = match (self.terminal, last) {
            // `\x1b[K` clears what a longer line before left on the right.
            (true, false) => format!("\r{line}\x1b[K"),
            (true, true) => format!("\r{line}\x1b[K\n"),
            (false, _) => format!("{line}\n"),
        };
        self.open = self.terminal && !last;
        // Progress is best effort: a closed stderr must not fail the run.
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }

    /// `equalize: 37 frames, 12.3 frames/s, 98.1 MB/s`, rates over `elapsed`.
    fn line(&self, elapsed: Duration) -> String {
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let plural = if self.frames == 1 { "" } else { "s" };
        format!(
            "{}: {} frame{plural}, {:.1} frames/s, {:.1} MB/s",
            self.tool,
            self.frames,
            self.frames as f64 / seconds,
            self.bytes as f64 / 1e6 / seconds
        )
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.open {
            let _ = io::stderr().lock().write_all(b"\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_frames_and_rates() {
        let mut p = Progress::new("equalize");
        p.terminal = false;
        (p.frames, p.bytes) = (37, 98_100_000 * 2);
        assert_eq!(p.line(Duration::from_secs(2)), "equalize: 37 frames, 18.5 frames/s, 98.1 MB/s");
        p.frames = 1;
        assert!(p.line(Duration::from_secs(1)).starts_with("equalize: 1 frame, "));
    }
}
