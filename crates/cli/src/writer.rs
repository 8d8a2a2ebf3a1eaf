//! The writer thread: writes results behind the tool, so writing overlaps the work.

use std::io::{BufWriter, Write};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use histopipe_frame::{Frame, FrameWriter, WriteOptions};

use crate::panic::catch;
use crate::Error;

/// What the frame loop hands to the writer, in order, with the number of the frame it came from.
pub(crate) enum Output {
    Frame(usize, Frame),
    Bytes(usize, Vec<u8>),
}

/// Writes to `output` on a thread of its own. The thread's result says why it stopped; a panic
/// while writing becomes an error naming the frame.
pub(crate) fn spawn_writer(
    output: Box<dyn Write + Send>,
    options: WriteOptions,
) -> (SyncSender<Output>, JoinHandle<Result<(), Error>>) {
    let (tx, rx) = sync_channel::<Output>(1);
    let handle = std::thread::spawn(move || {
        let mut at = None;
        let written = catch(|| {
            let mut out = FrameWriter::new(BufWriter::with_capacity(1 << 20, output), options);
            for item in rx {
                match item {
                    Output::Frame(index, frame) => {
                        at = Some(index);
                        out.write(index, &frame)?;
                    }
                    Output::Bytes(index, bytes) => {
                        at = Some(index);
                        out.get_mut().write_all(&bytes).map_err(|e| Error::io(&e))?;
                    }
                }
            }
            out.flush().map_err(|e| Error::io(&e))
        });
        written.unwrap_or_else(|panic| Err(Error::internal(at, "writer", &panic)))
    });
    (tx, handle)
}
