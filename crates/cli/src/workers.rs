//! The workers: threads that run the tool on frames, several frames at once, and make each
//! frame's output ready to be put in place: encoded where encoding costs (PNG, TIFF, 16-bit and
//! plain netpbm), or, with one file per frame, written whole to its temporary file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;

use histopipe_frame::{Container, Depth, Format, Frame, FrameWriter, WriteOptions};

use crate::atomic::AtomicFile;
use crate::dispatch::{is_heavy, Backends};
use crate::error::Place;
use crate::outputs::Destination;
use crate::panic::catch;
use crate::reader::HeldInput;
use crate::service::client::{Outcome, Remote};
use crate::tool::{Context, Tool, FLOAT_REFUSED};
use crate::writer::{Done, InFlight, Part, PartWriter, Written};
use crate::{Common, Error};

/// Frame `n` of the stream, and where its output goes.
pub(crate) struct Job {
    pub n: usize,
    pub frame: Frame,
    pub destination: Destination,
    /// The paths of the tool's side files for this frame.
    pub side_files: Vec<Option<PathBuf>>,
    /// The frame is held by the GPU service (`frame` is then an empty stand-in): its reference.
    pub held: Option<HeldInput>,
}

/// What every worker shares.
pub(crate) struct Crew<'a, T: Tool> {
    pub tool: &'a T,
    pub common: &'a Common,
    pub backends: &'a Backends,
    /// The container frames are written in (`None`: each in its own).
    pub container: Option<Container>,
    pub in_flight: &'a InFlight,
    /// The GPU service, where frames go while it takes them.
    pub remote: Option<&'a Remote>,
    /// Frames the workers have now.
    pub working: AtomicUsize,
}

impl<T: Tool> Crew<'_, T> {
    /// One worker: takes jobs until there are none, and hands what it made of each to the
    /// writer. A panic while working on a frame becomes an error naming the frame.
    pub(crate) fn work(&self, jobs: &Mutex<Receiver<Job>>, done: Sender<Done>) {
        loop {
            let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
            let Ok(job) = job else { break };
            if self.in_flight.is_closed() {
                // The writer has stopped: nothing more will be written. A held frame is declined,
                // so that its writer does not wait for this process to take it.
                if let (Some(held), Some(remote)) = (&job.held, self.remote) {
                    remote.decline(held.token);
                }
                continue;
            }
            let (n, place) = (job.n, Place::of(job.frame.source.as_ref(), job.n));
            let bytes = (job.frame.pixel_count() * job.frame.depth().bytes()) as u64;
            self.working.fetch_add(1, Ordering::AcqRel);
            let result = catch(|| self.one_frame(job, &done))
                .unwrap_or_else(|panic| Err(Error::internal(place.clone(), "frame loop", &panic)));
            self.working.fetch_sub(1, Ordering::AcqRel);
            if done.send(Done { n, place, bytes, result }).is_err() {
                break;
            }
        }
    }

    fn one_frame(&self, job: Job, done: &Sender<Done>) -> Result<Written, Error> {
        let Job { n, frame, destination, side_files, held } = job;
        let (starts, early) = match destination {
            Destination::Stream { starts } => (starts, Some(done.clone())),
            Destination::File(_) => (true, None),
        };
        let backends = self.remote.and_then(Remote::local_backends).unwrap_or(self.backends);
        let mut cx = Context::new(n, &frame, self.common, T::FLAGS, backends, starts, side_files);
        if let Some(done) = early {
            cx = cx.writing_early(done);
        }
        let place = cx.place();
        histopipe_trace::set_frame(n);
        let work = histopipe_trace::span("work", n);
        if !T::FLOAT && !frame.depth().is_integer() {
            return Err(cx.invalid(FLOAT_REFUSED));
        }
        // The service holds the output for a tool reading the pipe ([`crate::service::held`]) only
        // for the one frame the workers have: a frame held waits for its reader to be done with
        // it, and the stream behind it; frames that come together go through the pipe, the
        // tools working on them at once.
        let hold = self.working.load(Ordering::Acquire) == 1;
        let outcome = match (self.remote, &held) {
            (None, _) => Outcome::Local,
            (Some(remote), Some(held)) => remote.held_frame(n, held.token, starts, hold, &mut cx),
            (Some(remote), None) => {
                remote.frame(n, &frame, starts, hold, || self.worth_serving(&frame), &mut cx)
            }
        };
        match outcome {
            Outcome::Served(Ok(parts)) => cx.extend(parts),
            Outcome::Served(Err((kind, message))) => return Err(Error { kind, place, message }),
            Outcome::Local | Outcome::AfterReference => {
                if matches!(outcome, Outcome::AfterReference) {
                    cx.follow_reference();
                } else {
                    // Made from its start, what the service handed on of it already left out.
                    cx.restart();
                }
                // A held frame's bytes follow its reference in the input.
                let frame = match held {
                    Some(held) => {
                        let frame = held.frame()?;
                        cx.set_source(frame.source.clone());
                        frame
                    }
                    None => frame,
                };
                match self.remote {
                    None => self.tool.frame(&mut cx, frame)?,
                    Some(remote) => {
                        if remote.local_backends().is_none() {
                            // The tool's own GPUs, opened now if not yet.
                            self.backends.start();
                        }
                        let pixels = frame.pixel_count();
                        let run = remote.local_begins();
                        let done = self.tool.frame(&mut cx, frame);
                        remote.local_ends(run, pixels, done.is_ok());
                        done?;
                    }
                }
            }
        }
        work.end();
        let parts = cx.finish()?;
        let encode = histopipe_trace::span("encode", n);
        let written = match destination {
            Destination::Stream { .. } => Written::Parts(self.encode(n, parts, &place)?),
            Destination::File(_) if parts.is_empty() => Written::File(None),
            Destination::File(path) => {
                let mut file = AtomicFile::create(&path).map_err(|e| Error::io(&e).at(Place::file(&path)))?;
                let mut out = PartWriter::new(file.writer(), self.container, Some(path));
                out.write(n, parts, &place)?;
                out.flush()?;
                Written::File(Some(file))
            }
        };
        encode.end();
        Ok(written)
    }

    /// Whether `frame` is worth the GPU service before its time there is measured (under `auto`):
    /// a stream's (a second frame has come) or a heavy one (see [`Tool::visits_per_pixel`]).
    fn worth_serving(&self, frame: &Frame) -> bool {
        self.backends.is_stream() || is_heavy(frame.pixel_count() as f64 * self.tool.visits_per_pixel(frame))
    }

    /// Encodes the frames among `parts` whose encoding is more than a copy, so that it happens
    /// here, on all cores, rather than on the one writer.
    fn encode(&self, n: usize, parts: Vec<Part>, place: &Place) -> Result<Vec<Part>, Error> {
        parts
            .into_iter()
            .map(|part| match part {
                Part::Frame(frame) if self.costs_to_encode(&frame) => {
                    let mut bytes = Vec::new();
                    let options = WriteOptions { container: self.container };
                    FrameWriter::new(&mut bytes, options)
                        .write(n, &frame)
                        .map_err(|e| Error::from(e).at(place.clone()))?;
                    Ok(Part::Encoded(bytes))
                }
                other => Ok(other),
            })
            .collect()
    }

    /// Whether writing `frame` is more than copying its samples after a header.
    fn costs_to_encode(&self, frame: &Frame) -> bool {
        let compressed = self.container.is_some_and(|c| c.holds_one_frame());
        let plain = self.container.is_none() && frame.format == Format::PlainPgm;
        compressed || plain || frame.depth() == Depth::U16
    }
}
