//! What a tool is ([`Tool`]) and what it works with on each frame ([`Context`]).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use histopipe_frame::{Channels, Frame, Source};
use histopipe_ops::{Op, OpError, Work};

use crate::common::Common;
use crate::dispatch::Backends;
use crate::error::Place;
use crate::flags::{Flag, FlagError, Given};
use crate::luma::{self, Lightness};
use crate::outputs::{OutputFormat, PathTemplate, Product};
use crate::writer::{Done, Part, Written};
use crate::Error;

/// One histopipe tool: its options, what it writes, and what it does with each frame. Frames are
/// worked on by several threads at once, so [`Tool::frame`] takes the tool shared.
pub trait Tool: Default + Sync {
    /// The binary's name, which prefixes every error.
    const NAME: &'static str;
    /// `--help` text above the tool's options: what it computes, and its usage.
    const HELP: &'static str;
    /// `--help` text below the tool's options: notes, and an example.
    const HELP_END: &'static str = "";
    /// The tool's own options, each defined once: `--help`, the manual page and the completions
    /// list them, and the parser hands each to [`Tool::option`].
    const FLAGS: &'static [Flag] = &[];

    /// Takes one of [`Tool::FLAGS`], with its value; an error about the value is said of the
    /// option by the parser. `Ok(false)` for an option it does not handle (a bug: every option
    /// defined is handled).
    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        let _ = given;
        Ok(false)
    }

    /// Takes a negative number where an option could be (`rotate -45`: lexopt reads `-4` with
    /// value `5`), as written; `Ok(false)`: the tool takes none, and `-4` is an unknown option.
    fn negative_number(&mut self, text: &str) -> Result<bool, Error> {
        let _ = text;
        Ok(false)
    }

    /// Takes the tool's own operands (rotate's ANGLE) from the front of the command line's; the
    /// rest name the input files. Called once all options are parsed.
    fn operands(&mut self, operands: &mut VecDeque<OsString>) -> Result<(), Error> {
        let _ = operands;
        Ok(())
    }

    /// Checks the options once all are parsed: every value that does not depend on a frame is
    /// checked here, before any input is read.
    fn check(&mut self, common: &Common) -> Result<(), Error> {
        let _ = common;
        Ok(())
    }

    /// What the tool writes, given the format `-o`'s extension names (`None`: no `-o`, or no
    /// extension), so that a tool with more than one kind of output can follow it; an error if
    /// the tool's options contradict it. Frames unless the tool says otherwise.
    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        let _ = format;
        Ok(Product::Frames)
    }

    /// The files the tool writes besides its output (`--plot`), one per frame where a template
    /// has fields, the first frame's only where it has none; each frame's paths are given to it
    /// in this order ([`Context::side_file`]), checked as `-o`'s are: no two frames one file.
    fn side_files(&self) -> Vec<PathTemplate> {
        Vec::new()
    }

    /// Whether the tool reads colour images as gray ([`histopipe_frame::ReadOptions::gray`]): a
    /// JPEG's own luma, anything else by OpenCV's `cvtColor(BGR2GRAY)`. Called once the options
    /// are parsed; tools that work on colour say when they do.
    fn reads_gray(&self) -> bool {
        true
    }

    /// Whether the tool takes frames of float samples; others are refused before
    /// [`Tool::frame`], with one line that says how to convert them ([`FLOAT_REFUSED`]).
    const FLOAT: bool = false;

    /// How many times the tool's operation visits each pixel of `frame` (its op's
    /// [`Op::visits_per_pixel`]). With `--backend auto` and the GPU service up, a stream's first
    /// frame goes to the service only when this makes it heavy, as an `auto` without the service
    /// opens a GPU only for such a frame: a lighter one is done first on the cores, whose time
    /// then weighs the service's.
    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        let _ = frame;
        1.0
    }

    /// Handles one frame: usually transforms it and writes the result with [`Context::write`].
    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error>;
}

/// Why a frame of float samples is refused by a tool that takes integer ones; it names the tools
/// that take them, those with `float = true` in tools.toml (written by build.rs).
pub const FLOAT_REFUSED: &str = include!(concat!(env!("OUT_DIR"), "/float_refused.rs"));

/// The first columns of every table a tool writes (see [`Context::row_key`]).
pub const TABLE_KEY_COLUMNS: [&str; 2] = ["frame", "source"];

/// What a tool's [`Tool::frame`] works with.
pub struct Context<'a> {
    /// The frame's number in the stream, from 1.
    pub index: usize,
    pub common: &'a Common,
    /// The tool's options, which name the parameters of an operation's errors.
    flags: &'static [Flag],
    source: Option<Source>,
    side_files: Vec<Option<PathBuf>>,
    backends: &'a Backends,
    starts_output: bool,
    parts: Vec<Part>,
    text: Vec<u8>,
    /// The writer, where this frame's output goes to the one output stream: parts may go to it
    /// before the frame is done ([`Context::send_bytes`]).
    early: Option<Sender<Done>>,
    /// What of this frame's output was handed on, so that a making of it after a restart
    /// ([`Context::restart`]) hands on only the rest.
    handed: Handed,
}

/// Bytes of a frame's output handed on (to the writer, or by the GPU service to its tool), and
/// bytes made so far by this making of the frame: made again after a restart, its first
/// `handed` bytes are not handed on twice, however its parts are cut.
#[derive(Default)]
struct Handed {
    handed: u64,
    made: u64,
    /// A making of the frame had a frame part where one before it had handed on bytes.
    diverged: bool,
}

impl Handed {
    /// Of `parts`, the next of this making's output, what was not handed on before a restart.
    fn pass(&mut self, parts: Vec<Part>) -> Vec<Part> {
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            let len = match &part {
                // A frame's bytes are known once it is written; a frame never goes early, so
                // nothing was handed on past one.
                Part::Frame(_) => {
                    self.diverged |= self.made < self.handed;
                    out.push(part);
                    continue;
                }
                Part::Encoded(b) | Part::Bytes(b) => b.len() as u64,
                Part::Words(w) => 4 * w.len() as u64,
            };
            let start = self.made;
            self.made += len;
            if self.made <= self.handed {
                continue;
            }
            if start >= self.handed {
                out.push(part);
                continue;
            }
            let cut = (self.handed - start) as usize;
            out.push(match part {
                Part::Words(w) if cut % 4 == 0 => Part::Words(w[cut / 4..].to_vec()),
                Part::Words(w) => Part::Bytes(w.iter().flat_map(|v| v.to_le_bytes()).skip(cut).collect()),
                Part::Encoded(b) | Part::Bytes(b) => Part::Bytes(b[cut..].to_vec()),
                frame @ Part::Frame(_) => frame,
            });
        }
        self.handed = self.handed.max(self.made);
        out
    }

    /// The frame is made again from its start.
    fn restart(&mut self) {
        self.made = 0;
    }

    /// Whether this making fell short of what was handed on, or put a frame within it.
    fn short(&self) -> bool {
        self.diverged || self.made < self.handed
    }
}

impl<'a> Context<'a> {
    pub(crate) fn new(
        index: usize,
        frame: &Frame,
        common: &'a Common,
        flags: &'static [Flag],
        backends: &'a Backends,
        starts_output: bool,
        side_files: Vec<Option<PathBuf>>,
    ) -> Context<'a> {
        Context {
            index,
            common,
            flags,
            source: frame.source.clone(),
            side_files,
            backends,
            starts_output,
            parts: Vec::new(),
            text: Vec::new(),
            early: None,
            handed: Handed::default(),
        }
    }

    /// This frame's output goes to the one output stream, whose writer takes parts on `done`
    /// before the frame is done ([`Context::send_bytes`]).
    pub(crate) fn writing_early(mut self, done: Sender<Done>) -> Context<'a> {
        self.early = Some(done);
        self
    }

    /// Runs an operation on the backend chosen for it, once its work is checked against
    /// `--max-work` ([`Context::check_work`]); errors are placed at this frame.
    pub fn run<O: Op>(&mut self, op: &O, frame: &Frame) -> Result<O::Output, Error> {
        self.check_work(&op.work(frame))?;
        self.backends.run(op, frame, self.index).map_err(|e| self.op_error(e))
    }

    /// Runs `work` on this frame's context where every operation of the run is the CPU's
    /// (`--backend cpu`, or `auto` that sent the run to the cores), as the CPU backend runs an
    /// operation; `None` otherwise, `work` not run, the operations going through
    /// [`Context::run`]. For CPU work that hands its output on as it is made, in more pieces than
    /// an operation's output: `colhist --angles`, each turn's counts to the writer as they are
    /// counted. Its work is checked by the caller ([`Context::check_work`]).
    pub fn on_cores<T>(&mut self, work: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let backends = self.backends;
        backends.on_cores(|| work(self))
    }

    /// Refuses this frame when `work` (an operation's, [`Op::work`], or a tool's whole frame's
    /// made of several runs) is over `--max-work`, before any of it is done, whichever backend
    /// would do it.
    pub fn check_work(&self, work: &Work) -> Result<(), Error> {
        if work.amount <= self.common.max_work as u128 {
            return Ok(());
        }
        Err(self.invalid(format!(
            "this frame's work would be {} steps ({}), over the limit of {} (--max-work): raise \
             --max-work to run it",
            work.amount, work.what, self.common.max_work
        )))
    }

    /// Runs `op(c)` on each channel `c` of `frame`, as a gray frame of its own ([`Frame::plane`]),
    /// and puts the results together as a frame of the same channels; on a gray frame, runs
    /// `op(0)` on it. The operations must give frames of one size and sample type.
    pub fn run_each_channel<O: Op<Output = Frame>>(
        &mut self,
        frame: &Frame,
        op: impl Fn(usize) -> O,
    ) -> Result<Frame, Error> {
        if frame.channels == Channels::Gray {
            return self.run(&op(0), frame);
        }
        let planes = (0..frame.channels.count())
            .map(|c| self.run(&op(c), &frame.plane(c)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Frame::from_planes(frame.channels, &planes))
    }

    /// Runs `op(c)` on each colour channel `c` of `frame` as [`Context::run_each_channel`] does,
    /// alpha carried past it, never worked on (rescaled only where the operation changes the
    /// maxval, to keep its meaning: see `carry_alpha` in luma.rs).
    pub fn run_each_colour_channel<O: Op<Output = Frame>>(
        &mut self,
        frame: &Frame,
        op: impl Fn(usize) -> O,
    ) -> Result<Frame, Error> {
        if !frame.channels.has_alpha() {
            return self.run_each_channel(frame, op);
        }
        let colours = (0..frame.channels.colour_count())
            .map(|c| self.run(&op(c), &frame.plane(c)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(luma::carry_alpha(frame, colours))
    }

    /// Runs `op` on the luma of `frame`: [`Context::run_on_lightness`] with the Y of YCrCb.
    pub fn run_on_luma<O: Op<Output = Frame>>(&mut self, frame: &Frame, op: &O) -> Result<Frame, Error> {
        self.run_on_lightness(frame, op, Lightness::Luma)
    }

    /// Runs `op` on the lightness of `frame` in `space`: on a colour frame, on its Y of YCrCb
    /// (OpenCV's `cvtColor(COLOR_BGR2YCrCb)`) or its L of L*a*b* (`COLOR_BGR2Lab`, 8-bit frames) as
    /// a gray frame, and converts the result back with the frame's Cr and Cb (`COLOR_YCrCb2BGR`)
    /// or a and b (`COLOR_Lab2BGR`); alpha is carried as [`Context::run_each_colour_channel`]
    /// carries it. A gray frame is the operation's alone, a gray frame with alpha that of its gray
    /// plane. The conversions run on the CPU whichever backend runs `op`, but for the luma of an
    /// operation with a [`Op::plane_map`], which a GPU runs with the conversions on the device
    /// ([`luma::OnLuma`]). The operation must keep the frame's size and sample width.
    pub fn run_on_lightness<O: Op<Output = Frame>>(
        &mut self,
        frame: &Frame,
        op: &O,
        space: Lightness,
    ) -> Result<Frame, Error> {
        match frame.channels {
            Channels::Gray => self.run(op, frame),
            Channels::GrayAlpha => {
                let gray = self.run(op, &frame.plane(0))?;
                Ok(luma::carry_alpha(frame, vec![gray]))
            }
            Channels::Rgb | Channels::RgbAlpha if space == Lightness::Luma && op.plane_map().is_some() => {
                self.run(&luma::OnLuma { op }, frame)
            }
            Channels::Rgb | Channels::RgbAlpha => {
                let (l, chroma) = luma::split(frame, space).map_err(|e| self.op_error(e))?;
                let l = self.run(op, &l)?;
                Ok(luma::merge(&l, &chroma, frame))
            }
        }
    }

    /// The gray frame an operation that measures a frame works on: a gray frame itself, the gray
    /// plane of gray with alpha, the Y of YCrCb of a colour frame (as [`Context::run_on_luma`]
    /// makes it, on the CPU).
    pub fn luma(&self, frame: &Frame) -> Result<Frame, Error> {
        match frame.channels {
            Channels::Gray => Ok(frame.clone()),
            Channels::GrayAlpha => Ok(frame.plane(0)),
            Channels::Rgb | Channels::RgbAlpha => {
                Ok(luma::split(frame, Lightness::Luma).map_err(|e| self.op_error(e))?.0)
            }
        }
    }

    /// Writes a frame to the output, in the output's container (by default the frame's own).
    pub fn write(&mut self, frame: Frame) -> Result<(), Error> {
        self.flush_text();
        self.parts.push(Part::Frame(frame));
        Ok(())
    }

    /// The output as bytes, for tools that write text (or encode a picture themselves).
    pub fn text(&mut self) -> &mut Vec<u8> {
        &mut self.text
    }

    /// Appends `bytes` to the output after the text so far, without copying them: a large table
    /// in pieces, each written (and freed) in turn.
    pub fn push_bytes(&mut self, bytes: Vec<u8>) {
        self.flush_text();
        self.parts.push(Part::Bytes(bytes));
    }

    /// Appends `bytes` to the output as [`Context::push_bytes`] does, and hands the output so far
    /// to the writer now where it can take it before the frame is done: for the one output stream
    /// (standard output, or `-o` without fields), the writer writes it as soon as the frames
    /// before this one are written, while the tool makes the rest. A long output made in pieces
    /// (`colhist --angles`' cube) is so written while its next piece is computed. Should the
    /// frame fail afterwards, what was handed over has been written (and the run fails: `-o`'s
    /// file is not put in place).
    pub fn send_bytes(&mut self, bytes: Vec<u8>) {
        self.send(Part::Bytes(bytes));
    }

    /// [`Context::send_bytes`] of `words` as little-endian bytes (an `.npy` array of `<u4`):
    /// handed over as they are, never copied into bytes where the machine is little-endian.
    pub fn send_words(&mut self, words: Vec<u32>) {
        self.send(Part::Words(words));
    }

    /// Appends `part` and hands the output so far to the writer ([`Context::send_bytes`]).
    fn send(&mut self, part: Part) {
        self.flush_text();
        self.parts.push(part);
        self.hand_early();
    }

    /// Appends `parts`, made of this frame by the GPU service and sent before the frame was done,
    /// and hands them to the writer as [`Context::send_bytes`] does.
    pub(crate) fn send_parts(&mut self, parts: Vec<Part>) {
        self.flush_text();
        self.parts.extend(parts);
        self.hand_early();
    }

    /// Hands the output so far to the writer, where it takes parts before the frame is done.
    fn hand_early(&mut self) {
        if self.early.is_none() || self.parts.iter().any(|p| matches!(p, Part::Frame(_))) {
            // A frame is encoded on the worker first: it goes with the frame's last parts.
            return;
        }
        let parts = self.handed.pass(std::mem::take(&mut self.parts));
        let Some(done) = &self.early else { return };
        let early = Done { n: self.index, place: self.place(), bytes: 0, result: Ok(Written::Early(parts)) };
        // A writer that has stopped takes nothing more; the frame's end finds out.
        let _ = done.send(early);
    }

    /// The frame is made again from its start, where the GPU service was lost in the middle of
    /// it (on another connection, or in this process): what this making had made is dropped,
    /// and of the next making's output only what follows the bytes handed on already is handed
    /// on. The bytes are the same whoever makes them; how they are cut into parts may differ.
    pub(crate) fn restart(&mut self) {
        self.parts.clear();
        self.text.clear();
        self.handed.restart();
    }

    /// The output is to follow a reference to it, handed on already (the GPU service held it
    /// for the reader of this tool's pipe, which could not have it): [`FRAME_FOLLOWS`] is handed
    /// on, and the making that comes next is the frame's whole output.
    ///
    /// [`FRAME_FOLLOWS`]: crate::service::held::FRAME_FOLLOWS
    pub(crate) fn follow_reference(&mut self) {
        self.parts.clear();
        self.text.clear();
        self.send(Part::Bytes(vec![crate::service::held::FRAME_FOLLOWS]));
        self.handed = Handed::default();
    }

    /// The memory this run's frames take their samples from (blocks of dropped frames kept for
    /// the next): for the frames the GPU service sends back.
    pub(crate) fn memory(&self) -> &histopipe_frame::SampleMemory {
        self.backends.memory()
    }

    /// The frame's source, once its bytes came (a frame held by the GPU service came first as a
    /// reference, which names none).
    pub(crate) fn set_source(&mut self, source: Option<Source>) {
        self.source = source;
    }

    /// Whether this frame's output is the first in its file or stream: a table's header goes
    /// there (once per file with `-o` fields, once per stream otherwise).
    pub fn starts_output(&self) -> bool {
        self.starts_output
    }

    /// A table's header line, where this frame's output starts its file or stream (empty
    /// elsewhere): the key columns ([`TABLE_KEY_COLUMNS`]), then `columns`, separated by `sep`.
    pub fn table_header(&self, columns: &[&str], sep: char) -> String {
        if !self.starts_output {
            return String::new();
        }
        let mut line =
            TABLE_KEY_COLUMNS.iter().chain(columns).copied().collect::<Vec<_>>().join(&sep.to_string());
        line.push('\n');
        line
    }

    /// The first fields of each of this frame's rows in a table, with `sep` after each: the
    /// frame's number in the stream and the file it came from (`-` for standard input), the same
    /// two columns ([`TABLE_KEY_COLUMNS`]) in every tool's table so that tables of several frames
    /// and files load as one. A file name is quoted as CSV quotes (`sep` ','); in TSV, tabs and
    /// line breaks in it become spaces.
    pub fn row_key(&self, sep: char) -> String {
        let source = match &self.source {
            Some(s) => s.path.to_string_lossy().into_owned(),
            None => "-".to_owned(),
        };
        let source = if sep == ',' {
            if source.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", source.replace('"', "\"\""))
            } else {
                source
            }
        } else {
            source.replace(['\t', '\n', '\r'], " ")
        };
        format!("{}{sep}{source}{sep}", self.index)
    }

    /// Where this frame's side file `k` ([`Tool::side_files`]) goes, if it has one.
    pub fn side_file(&self, k: usize) -> Option<&Path> {
        self.side_files.get(k)?.as_deref()
    }

    /// The file the frame came from, if it came from one.
    pub fn source(&self) -> Option<&Source> {
        self.source.as_ref()
    }

    /// Where this frame is, for errors: its file and its number there, or its number in the stream.
    pub fn place(&self) -> Place {
        Place::of(self.source.as_ref(), self.index)
    }

    /// An input error at this frame.
    pub fn invalid(&self, message: impl Into<String>) -> Error {
        Error::input(self.place(), message)
    }

    /// An operation's error (its parameters do not fit this frame, or the GPU failed) at this
    /// frame, naming the options that set the parameters it names.
    pub fn op_error(&self, err: OpError) -> Error {
        Error::op(self.place(), err, self.flags)
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

    /// Appends `parts`, made elsewhere of this frame (by the GPU service).
    pub(crate) fn extend(&mut self, parts: Vec<Part>) {
        self.flush_text();
        self.parts.extend(parts);
    }

    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            self.parts.push(Part::Bytes(std::mem::take(&mut self.text)));
        }
    }

    /// What the frame's work left to write; an error where a making of the frame after a
    /// restart was shorter than what had been handed on, or had a frame within it (the bytes
    /// themselves are not kept to be compared: every making gives the same).
    pub(crate) fn finish(mut self) -> Result<Vec<Part>, Error> {
        self.flush_text();
        let parts = self.handed.pass(std::mem::take(&mut self.parts));
        if self.handed.short() {
            let why = "the frame made again after the GPU service was lost is shorter than what it had sent";
            return Err(Error::internal(self.place(), "frame loop", why));
        }
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(parts: &[Part]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Part::Bytes(b) | Part::Encoded(b) => out.extend_from_slice(b),
                Part::Words(w) => out.extend(w.iter().flat_map(|v| v.to_le_bytes())),
                Part::Frame(_) => panic!("no frames here"),
            }
        }
        out
    }

    /// A making after a restart hands on only the bytes after those handed on, wherever either
    /// making's parts are cut (words cut inside a word become bytes, between words stay words),
    /// and one that falls short is told.
    #[test]
    fn a_restarted_making_hands_on_only_the_rest() {
        let words: Vec<u32> = (0..10).map(|i| 0x0403_0201 * (i + 1)).collect();
        let as_words = || {
            vec![
                Part::Bytes(b"header".to_vec()),
                Part::Words(words[..3].to_vec()),
                Part::Words(words[3..].to_vec()),
            ]
        };
        let whole = bytes(&as_words());
        let as_bytes =
            |cut: usize| vec![Part::Bytes(whole[..cut].to_vec()), Part::Bytes(whole[cut..].to_vec())];
        for cut in [0, 1, 4, 6, 7, 10, 18, 26, 45, 46] {
            // Bytes handed on, then a making of words; words handed on, then a making of bytes.
            for (first, second) in [(as_bytes(cut), as_words()), (as_words(), as_bytes(cut))] {
                for handed_parts in 0..=first.len() {
                    let mut h = Handed::default();
                    let mut first =
                        first.iter().map(|p| Part::Bytes(bytes(std::slice::from_ref(p)))).collect::<Vec<_>>();
                    first.truncate(handed_parts);
                    let mut out = bytes(&h.pass(first));
                    h.restart();
                    let second: Vec<Part> = second
                        .iter()
                        .map(|p| match p {
                            Part::Words(w) => Part::Words(w.clone()),
                            other => Part::Bytes(bytes(std::slice::from_ref(other))),
                        })
                        .collect();
                    let rest = h.pass(second);
                    assert!(!h.short());
                    out.extend(bytes(&rest));
                    assert_eq!(out, whole, "cut at {cut}, {handed_parts} parts handed on");
                }
            }
        }
        let mut h = Handed::default();
        h.pass(vec![Part::Bytes(whole[..14].to_vec())]);
        h.restart();
        let rest = h.pass(as_words());
        assert!(matches!(&rest[..], [Part::Words(w), _] if w.len() == 1), "a cut between words keeps words");
        let mut h = Handed::default();
        h.pass(vec![Part::Bytes(whole[..15].to_vec())]);
        h.restart();
        let rest = h.pass(as_words());
        assert!(matches!(&rest[..], [Part::Bytes(b), _] if b.len() == 3), "a cut inside a word gives bytes");
        let mut h = Handed::default();
        h.pass(vec![Part::Bytes(vec![1; 10])]);
        h.restart();
        h.pass(vec![Part::Bytes(vec![1; 9])]);
        assert!(h.short(), "a making shorter than what was handed on");
    }
}
