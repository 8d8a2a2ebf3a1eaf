//! Frames held by the service between two tools of a pipe: where both ends of a pipe are
//! histopipe tools on the one service, a frame one makes there stays there, and only a reference
//! to it crosses the pipe, for the next to work on (docs/histopipe-service.md, "Frames held between
//! tools").
//!
//! - The reader says first that it reads the pipe ([`Kind::Reads`](super::wire::Kind::Reads), the
//!   pipe's device and inode); a writer's frame is held only for a pipe that a tool on the service
//!   reads, so a reference never reaches another program (`tee`, `cat`, a file).
//! - The writer writes the reference ([`record`]) and waits until the reader is done with the
//!   frame: its own output made and handed on, so that it will never need the frame's bytes. Then
//!   the writer writes [`NOTHING_FOLLOWS`]. Where the reader could not take it, or the service was
//!   lost, the writer writes [`FRAME_FOLLOWS`] and the frame's bytes, made in its own process: the
//!   same bytes the service makes. So a frame is never lost, and the reader reads the stream in
//!   step either way (it skips bytes it turned out not to need).
//! - Memory: a held frame counts in the service's budget for frames until the reader is done
//!   with it, and is dropped (its writer told to write the bytes) when a session that took or
//!   made it ends first.

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use histopipe_frame::Frame;

use super::wire::{Bad, Reader, Writer};

/// A pipe's identity: its file system's device and its inode (both ends of a pipe see the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Pipe {
    pub dev: u64,
    pub ino: u64,
}

impl Pipe {
    /// The pipe `fd` is, if it is one.
    pub(crate) fn of(fd: impl AsFd) -> Option<Pipe> {
        let stat = rustix::fs::fstat(fd).ok()?;
        let fifo = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Fifo;
        fifo.then_some(Pipe { dev: stat.st_dev, ino: stat.st_ino })
    }

    pub(crate) fn encode(self, w: &mut Writer) {
        w.u64(self.dev).u64(self.ino);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Pipe, Bad> {
        Ok(Pipe { dev: r.u64("the pipe's device")?, ino: r.u64("the pipe's inode")? })
    }
}

/// A held frame's name: unguessable (a random key of the service's, and a count), so that only
/// a process that read it from the pipe can name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Token(pub u64, pub u64);

impl Token {
    pub(crate) fn encode(self, w: &mut Writer) {
        w.u64(self.0).u64(self.1);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Token, Bad> {
        Ok(Token(r.u64("the held frame")?, r.u64("the held frame")?))
    }
}

/// The most pipes one session may say it reads: a tool reads one, its standard input.
pub(crate) const READS_MOST: usize = 4;

/// What a reference starts with in a stream: no image format starts so (netpbm and PFM start
/// with `P`, PNG, JPEG, NPY with a byte over 127, TIFF with `I` or `M`, BMP `B`, FITS `S`).
pub(crate) const MAGIC: &[u8; 8] = b"HPHELD\x00\x01";

/// A reference's bytes: [`MAGIC`], then the token's two words, little-endian.
pub(crate) const RECORD: usize = 24;

/// After a reference: the reader is done with the frame, nothing of it follows.
pub(crate) const NOTHING_FOLLOWS: u8 = b'=';

/// After a reference: the frame itself follows, as its writer writes a frame.
pub(crate) const FRAME_FOLLOWS: u8 = b'+';

/// The reference to `token`, as it crosses the pipe.
pub(crate) fn record(token: Token) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&token.0.to_le_bytes());
    out.extend_from_slice(&token.1.to_le_bytes());
    out
}

/// Reads a reference from `input`, whose next byte is `MAGIC`'s first: its token, or why the
/// bytes are none.
pub(crate) fn read_record(input: &mut impl Read) -> io::Result<Result<Token, String>> {
    let mut words = [[0u8; 8]; RECORD / 8];
    for word in &mut words {
        input.read_exact(word)?;
    }
    let [magic, key, count] = words;
    if &magic != MAGIC {
        return Ok(Err("bytes that are no frame (neither an image nor a held frame's reference)".into()));
    }
    Ok(Ok(Token(u64::from_le_bytes(key), u64::from_le_bytes(count))))
}

/// Where a held frame stands.
enum State {
    /// Made, waiting for its reader; its bytes count in the budget.
    Waiting { frame: Frame, bytes: u64 },
    /// Taken by a reader's session, whose frame is being made of it.
    Taken { by: u64 },
    /// The reader is done with it (`true`), or it was dropped and its writer is to write its
    /// bytes (`false`).
    Over(bool),
}

struct Entry {
    state: State,
    /// The session that made it (and waits for it to be over).
    made_by: u64,
    /// The pipe whose reader it is for.
    pipe: Pipe,
}

#[derive(Default)]
struct Shelved {
    /// The pipes tools on the service read, and how many sessions said so.
    readers: HashMap<Pipe, usize>,
    frames: HashMap<Token, Entry>,
    /// Frames held since the service started, for its status.
    held: u64,
}

/// The service's held frames.
pub(crate) struct Shelf {
    state: Mutex<Shelved>,
    changed: Condvar,
    key: u64,
    count: AtomicU64,
}

impl Default for Shelf {
    fn default() -> Shelf {
        // A random key (std's hasher is seeded from the system's randomness).
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id().into());
        Shelf { state: Mutex::default(), changed: Condvar::new(), key: h.finish(), count: AtomicU64::new(0) }
    }
}

/// What a session said and did on the shelf, undone when it ends ([`Shelf::leave`]).
#[derive(Default)]
pub(crate) struct Visits {
    pub session: u64,
    reads: Vec<Pipe>,
    made: Vec<Token>,
    taken: Vec<Token>,
}

impl Shelf {
    fn lock(&self) -> MutexGuard<'_, Shelved> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session's visits.
    pub(crate) fn visits(&self) -> Visits {
        Visits { session: self.count.fetch_add(1, Ordering::Relaxed), ..Visits::default() }
    }

    /// The session reads `pipe`; false past [`READS_MOST`] pipes (a tool reads one).
    pub(crate) fn reads(&self, visits: &mut Visits, pipe: Pipe) -> bool {
        if !visits.reads.contains(&pipe) {
            if visits.reads.len() >= READS_MOST {
                return false;
            }
            *self.lock().readers.entry(pipe).or_default() += 1;
            visits.reads.push(pipe);
        }
        true
    }

    /// Whether a tool on the service reads `pipe`.
    pub(crate) fn is_read(&self, pipe: Pipe) -> bool {
        self.lock().readers.contains_key(&pipe)
    }

    /// Holds `frame` (of `bytes` in the budget, held by the caller already) for the reader of
    /// `pipe`; its token.
    pub(crate) fn hold(&self, visits: &mut Visits, frame: Frame, bytes: u64, pipe: Pipe) -> Token {
        let token = Token(self.key, self.count.fetch_add(1, Ordering::Relaxed));
        let mut s = self.lock();
        let entry = Entry { state: State::Waiting { frame, bytes }, made_by: visits.session, pipe };
        s.frames.insert(token, entry);
        s.held += 1;
        visits.made.push(token);
        token
    }

    /// Takes held frame `token` for the session's frame: the frame and its bytes in the budget
    /// (now the caller's), or `None` where there is no such frame waiting.
    pub(crate) fn take(&self, visits: &mut Visits, token: Token) -> Option<(Frame, u64)> {
        let mut s = self.lock();
        let entry = s.frames.get_mut(&token)?;
        match std::mem::replace(&mut entry.state, State::Taken { by: visits.session }) {
            State::Waiting { frame, bytes } => {
                visits.taken.push(token);
                Some((frame, bytes))
            }
            other => {
                entry.state = other;
                None
            }
        }
    }

    /// The session is done with held frame `token` (`done`), or needs its bytes after all.
    pub(crate) fn release(&self, visits: &mut Visits, token: Token, done: bool) {
        let mut s = self.lock();
        if let Some(entry) = s.frames.get_mut(&token) {
            if matches!(entry.state, State::Taken { by } if by == visits.session) {
                entry.state = State::Over(done);
                self.changed.notify_all();
            }
        }
        visits.taken.retain(|&t| t != token);
    }

    /// Drops held frame `token` where it is still waiting (its reader would not have it): its
    /// bytes in the budget, to be given back.
    pub(crate) fn drop_waiting(&self, token: Token) -> Option<u64> {
        let mut s = self.lock();
        let entry = s.frames.get_mut(&token)?;
        let State::Waiting { bytes, .. } = entry.state else { return None };
        entry.state = State::Over(false);
        self.changed.notify_all();
        Some(bytes)
    }

    /// Waits until held frame `token`, made by this session, is over: whether its reader is done
    /// with it. Past `most`, or once `gone()` says the session's client has gone, a frame still
    /// waiting is dropped, and its bytes given back (`free`).
    pub(crate) fn wait(
        &self,
        visits: &mut Visits,
        token: Token,
        most: Duration,
        gone: impl Fn() -> bool,
        free: impl Fn(u64),
    ) -> bool {
        let deadline = Instant::now() + most;
        let mut s = self.lock();
        let over = loop {
            let Some(entry) = s.frames.get(&token).filter(|e| e.made_by == visits.session) else {
                break false;
            };
            if let State::Over(done) = entry.state {
                break done;
            }
            if Instant::now() >= deadline || gone() {
                if let Some(Entry { state: State::Waiting { bytes, .. }, .. }) = s.frames.remove(&token) {
                    free(bytes);
                }
                break false;
            }
            s = self.changed.wait_timeout(s, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
        };
        s.frames.remove(&token);
        visits.made.retain(|&t| t != token);
        over
    }

    /// The session ends: its pipes are no longer read (frames still waiting for a pipe no one
    /// reads now are dropped), frames it took and did not release are dropped (their writers
    /// write their bytes), and frames it made are dropped; `free` gives back the bytes of those
    /// that were waiting.
    pub(crate) fn leave(&self, visits: &mut Visits, free: impl Fn(u64)) {
        let mut s = self.lock();
        for pipe in visits.reads.drain(..) {
            if let Some(n) = s.readers.get_mut(&pipe) {
                *n -= 1;
                if *n == 0 {
                    s.readers.remove(&pipe);
                    for entry in s.frames.values_mut().filter(|e| e.pipe == pipe) {
                        if let State::Waiting { bytes, .. } = entry.state {
                            entry.state = State::Over(false);
                            free(bytes);
                        }
                    }
                }
            }
        }
        for token in visits.taken.drain(..) {
            if let Some(entry) = s.frames.get_mut(&token) {
                entry.state = State::Over(false);
            }
        }
        for token in visits.made.drain(..) {
            if let Some(Entry { state: State::Waiting { bytes, .. }, .. }) = s.frames.remove(&token) {
                free(bytes);
            }
        }
        self.changed.notify_all();
    }

    /// For the service's status: pipes read, frames held now, frames held since it started.
    pub(crate) fn counts(&self) -> (usize, usize, u64) {
        let s = self.lock();
        (s.readers.len(), s.frames.len(), s.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        Frame::new(2, 1, 255, histopipe_frame::Pixels::U8(vec![1, 2].into()))
    }

    #[test]
    fn a_reference_reads_back_and_other_bytes_are_none() {
        let token = Token(0x0123_4567_89ab_cdef, 42);
        let bytes = record(token);
        assert_eq!(bytes.len(), RECORD);
        assert_eq!(read_record(&mut &bytes[..]).unwrap(), Ok(token));
        assert!(read_record(&mut &b"HPHELD\x00\x02 and 16 more bytes.."[..]).unwrap().is_err());
        assert!(read_record(&mut &bytes[..10]).is_err(), "cut short");
    }

    #[test]
    fn a_held_frame_is_over_when_its_reader_is_done_and_dropped_when_a_session_leaves() {
        let shelf = Shelf::default();
        let (mut writer, mut reader) = (shelf.visits(), shelf.visits());
        let pipe = Pipe { dev: 1, ino: 2 };
        assert!(!shelf.is_read(pipe));
        assert!(shelf.reads(&mut reader, pipe));
        assert!(shelf.is_read(pipe));
        let mut other = shelf.visits();
        for ino in 0..READS_MOST as u64 {
            assert!(shelf.reads(&mut other, Pipe { dev: 9, ino }));
        }
        assert!(!shelf.reads(&mut other, Pipe { dev: 9, ino: 99 }), "past the most a session reads");
        shelf.leave(&mut other, |_| {});
        let token = shelf.hold(&mut writer, frame(), 2, pipe);
        assert!(shelf.take(&mut reader, Token(token.0, token.1 + 1)).is_none(), "no such frame");
        let (taken, bytes) = shelf.take(&mut reader, token).unwrap();
        assert_eq!((taken, bytes), (frame(), 2));
        assert!(shelf.take(&mut reader, token).is_none(), "taken once");
        shelf.release(&mut reader, token, true);
        let freed = std::cell::Cell::new(0);
        assert!(shelf.wait(&mut writer, token, Duration::from_secs(5), || false, |b| freed.set(b)));
        assert_eq!(freed.get(), 0, "its bytes went with the reader's take");
        assert_eq!(shelf.counts(), (1, 0, 1));

        // Taken, then the reader's session ends unreleased: the writer writes the bytes; and a
        // frame still waiting for the pipe it read is dropped.
        let token = shelf.hold(&mut writer, frame(), 2, pipe);
        let waiting = shelf.hold(&mut writer, frame(), 5, pipe);
        shelf.take(&mut reader, token).unwrap();
        shelf.leave(&mut reader, |b| freed.set(b));
        assert_eq!(freed.get(), 5, "the frame waiting for the pipe no one reads now");
        assert!(!shelf.wait(&mut writer, token, Duration::from_secs(5), || false, |_| {}));
        assert!(!shelf.wait(&mut writer, waiting, Duration::from_secs(5), || false, |_| {}));
        assert!(!shelf.is_read(pipe), "the pipe is no longer read");

        // Never taken, the writer's client gone: dropped, its bytes given back.
        let token = shelf.hold(&mut writer, frame(), 7, pipe);
        assert!(!shelf.wait(&mut writer, token, Duration::from_secs(5), || true, |b| freed.set(b)));
        assert_eq!(freed.get(), 7);
        assert_eq!(shelf.counts(), (0, 0, 4));
    }
}
