//! The reader thread: reads frames ahead of the tool, so reading overlaps the work.

use std::io::BufReader;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use histopipe_frame::{Frame, FrameReader, ReadOptions, SampleMemory};

use crate::panic::catch;
use crate::Error;

/// Bytes of frames the reader may hold ready while the GPU is being opened.
pub(crate) const READ_AHEAD_BYTES: usize = 512 << 20;

/// What the reader hands over: a frame, the end of the input, or why it stopped.
pub(crate) enum Read {
    Frame(Frame),
    End,
    Failed(Error),
}

impl Read {
    fn bytes(&self) -> usize {
        match self {
            Read::Frame(f) => f.pixels.len() * f.depth().bytes(),
            Read::End | Read::Failed(_) => 0,
        }
    }
}

/// The frames read and not yet taken by the tool. The reader hands over a frame only when none
/// is waiting, so one frame is read while the tool works on the one before (memory stays a few
/// frames), except while the GPU is being opened: a driver's start-up takes a fifth of a second,
/// and rather than leave the input waiting meanwhile, the reader reads ahead up to
/// [`READ_AHEAD_BYTES`], which the tool then works through at the GPU's pace.
#[derive(Default)]
pub(crate) struct Backlog {
    state: Mutex<Waiting>,
    changed: Condvar,
}

/// What [`Backlog`] guards.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    frames: usize,
    bytes: usize,
    gpu_opening: bool,
}

impl Backlog {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until an item of `bytes` bytes may be handed over, and counts it in.
    fn add(&self, bytes: usize) {
        let mut s = self.lock();
        while !(s.frames == 0 || (s.gpu_opening && s.bytes + bytes <= READ_AHEAD_BYTES)) {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.frames += 1;
        s.bytes += bytes;
    }

    /// An item was taken.
    pub(crate) fn take(&self, item: &Read) {
        let mut s = self.lock();
        s.frames -= 1;
        s.bytes -= item.bytes();
        self.changed.notify_all();
    }

    pub(crate) fn set_opening(&self, opening: bool) {
        let mut s = self.lock();
        if s.gpu_opening != opening {
            s.gpu_opening = opening;
            self.changed.notify_all();
        }
    }
}

/// Reads frames from `input` on a thread of its own into `memory` (page-locked once the GPU
/// lends it). Every stream ends with [`Read::End`] or [`Read::Failed`]; a panic while reading
/// becomes the latter, naming the frame. The thread is not joined: if the tool stops early, it
/// may be blocked on a read that never ends.
pub(crate) fn spawn_reader(
    input: Box<dyn std::io::Read + Send>,
    options: ReadOptions,
    memory: SampleMemory,
    backlog: Arc<Backlog>,
) -> Receiver<Read> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let input = BufReader::with_capacity(1 << 20, input);
        let mut reader = FrameReader::new(input, options).with_memory(memory);
        loop {
            let index = reader.next_index();
            let item = match catch(|| reader.next_frame()) {
                Ok(Ok(Some(frame))) => Read::Frame(frame),
                Ok(Ok(None)) => Read::End,
                Ok(Err(e)) => Read::Failed(Error::from(e)),
                Err(panic) => Read::Failed(Error::internal(Some(index), "reader", &panic)),
            };
            let last = !matches!(item, Read::Frame(_));
            backlog.add(item.bytes());
            if tx.send(item).is_err() || last {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::JoinHandle;
    use std::time::Duration;

    fn waits(b: &Arc<Backlog>, bytes: usize) -> JoinHandle<()> {
        let b = b.clone();
        let h = std::thread::spawn(move || b.add(bytes));
        std::thread::sleep(Duration::from_millis(50));
        h
    }

    fn frame_of(bytes: usize) -> Read {
        Read::Frame(Frame::new(bytes, 1, 255, vec![0u8; bytes].into()))
    }

    #[test]
    fn the_backlog_holds_one_frame_unless_the_gpu_is_opening() {
        let b = Arc::new(Backlog::default());
        b.add(100);
        let second = waits(&b, 100);
        assert!(!second.is_finished(), "a second frame waits while one is waiting");
        b.take(&frame_of(100));
        second.join().unwrap();
        b.set_opening(true);
        for _ in 0..10 {
            b.add(READ_AHEAD_BYTES / 16);
        }
        assert_eq!(b.lock().frames, 11, "while the GPU opens, frames pile up");
        let over = waits(&b, READ_AHEAD_BYTES);
        assert!(!over.is_finished(), "beyond the read-ahead budget, the reader waits");
        b.set_opening(false);
        b.take(&frame_of(100));
        for _ in 0..9 {
            b.take(&frame_of(READ_AHEAD_BYTES / 16));
        }
        assert!(!over.is_finished(), "once open, one frame at a time again");
        b.take(&frame_of(READ_AHEAD_BYTES / 16));
        over.join().unwrap();
        assert_eq!(*b.lock(), Waiting { frames: 1, bytes: READ_AHEAD_BYTES, gpu_opening: false });
    }

    /// An input that panics once `after` bytes were read: a stand-in for a decoder's bug.
    struct PanicsAfter {
        data: Vec<u8>,
        at: usize,
        after: usize,
    }

    impl std::io::Read for PanicsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            assert!(self.at < self.after, "the input broke");
            let n = buf.len().min(self.after - self.at).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn a_panic_while_reading_is_an_error_naming_the_frame() {
        crate::panic::install_hook();
        let data = b"P5 2 1 255\n\x01\x02P5 2 1 255\n\x03\x04".to_vec();
        let input = PanicsAfter { after: 15, data, at: 0 };
        let backlog = Arc::new(Backlog::default());
        let rx =
            spawn_reader(Box::new(input), ReadOptions::default(), SampleMemory::default(), backlog.clone());
        let first = rx.recv().unwrap();
        backlog.take(&first);
        assert!(matches!(first, Read::Frame(f) if f.width == 2), "the first frame is whole");
        let Read::Failed(e) = rx.recv().unwrap() else { panic!("the panic is reported") };
        assert_eq!((e.kind, e.frame), (crate::ErrorKind::Internal, Some(2)));
        assert!(e.message.contains("the input broke"), "{}", e.message);
        assert!(rx.recv().is_err(), "nothing follows a failure");
    }
}
