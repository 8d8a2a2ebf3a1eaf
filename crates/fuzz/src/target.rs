//! The fuzz target: one input read to its end by `FrameReader`, in both modes, twice each, and
//! checked.
//!
//! Both modes: keeping colour (`ReadOptions.gray` false), then as gray (true), so the colour
//! paths and the conversions to gray are both read. In each mode, once from a slice, once through
//! a pipe that hands out 1 to 7 bytes per read behind a small `BufReader`, as a real pipe does
//! under load. Each read must not panic, must hold at most [`allocation_bound`] bytes of heap at
//! any moment, must end within the time limit, and must not return more frames than the input has
//! bytes; the two reads of a mode must give the same frames and the same error (or end).
//!
//! Frames are folded into a digest as they come and dropped, as a filter drops each frame before it
//! reads the next, so the heap measured is the reader's own.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use histopipe_frame::{Frame, FrameErrorKind, FrameReader, Pixels, ReadOptions};

use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Target;
use crate::panics::{guarded, PanicNote};

/// The most heap one read of `input_len` bytes may hold with `--max-pixels max_pixels`: the frame
/// crate's own contract ([`histopipe_frame::read_memory_bound`]), checked against what the
/// counting allocator saw.
pub fn allocation_bound(max_pixels: u64, input_len: usize) -> u64 {
    histopipe_frame::read_memory_bound(max_pixels, input_len)
}

/// What a check allows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// What is fuzzed: the reader, or one of the other targets ([`crate::targets`]).
    pub target: Target,
    /// `--max-pixels` for the reader.
    pub max_pixels: u64,
    /// Both reads of one input in one mode together.
    pub time: Duration,
    /// With `Some(rate)`, time is judged per input byte instead: both reads of one input in one
    /// mode may take `rate` seconds of CPU per pixel of [`histopipe_frame::read_work_bound`]
    /// (`--max-pixels` and 4096 a byte), twice over and 50 ms besides ([`work_budget`]), and
    /// `max_pixels` is the same for every input.
    pub work: Option<f64>,
}

/// CPU seconds a pixel of the reader's work may take (`--work-per-byte`): 20 ns in an optimised
/// build, where real images decode at 2 to 10; a debug build is some fifty times slower.
pub const WORK_RATE: f64 = if cfg!(debug_assertions) { 1e-6 } else { 20e-9 };

/// The `--max-pixels` of `--work-per-byte` runs: 2^26 pixels, an 8192x8192 photograph.
pub const REALISTIC_MAX_PIXELS: u64 = 1 << 26;

impl Limits {
    /// 2^16 pixels, so a frame at the limit decodes in well under a millisecond; 2 s per input
    /// and mode, twenty times that in a debug build, whose decoders run some fifty times slower.
    pub fn standard() -> Limits {
        let time = if cfg!(debug_assertions) { Duration::from_secs(40) } else { Duration::from_secs(2) };
        Limits { target: Target::Reader, max_pixels: 1 << 16, time, work: None }
    }

    /// Amplification: a realistic `--max-pixels` (2^26), and time judged per input byte at
    /// [`WORK_RATE`]. The wall-time limit (for the watchdog) is the budget of the longest input.
    pub fn per_byte(max_pixels: u64) -> Limits {
        let longest = work_budget(WORK_RATE, max_pixels, crate::mutate::MAX_LEN * 2);
        Limits { target: Target::Reader, max_pixels, time: longest, work: Some(WORK_RATE) }
    }

    /// The `--max-pixels` an input is read with: sixteen times the limit for one input in eight
    /// (by its fingerprint, so a replay reads it the same way). At 2^16 pixels the bound's fixed
    /// 1 MiB hides a decoder that holds up to 20 bytes a pixel; at 2^20 it hides almost nothing.
    /// Judged per byte, every input is read with the one limit.
    pub fn max_pixels_for(&self, input: &Input) -> u64 {
        if self.work.is_none() && input.fingerprint() % 8 == 0 {
            self.max_pixels.saturating_mul(16)
        } else {
            self.max_pixels
        }
    }
}

/// The CPU time both reads of an input of `input_len` bytes may take at `rate` seconds a pixel of
/// work: twice `rate` times [`histopipe_frame::read_work_bound`], and 50 ms.
pub fn work_budget(rate: f64, max_pixels: u64, input_len: usize) -> Duration {
    let work = histopipe_frame::read_work_bound(max_pixels, input_len) as f64;
    Duration::from_secs_f64(2.0 * rate * work + 0.05)
}

/// This thread's CPU time so far.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The container at the start of a frame, for naming where a defect is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Pgm,
    PlainPgm,
    Ppm,
    PlainPpm,
    Pam,
    Pbm,
    PlainPbm,
    Png,
    Jpeg,
    Tiff,
    Bmp,
    Pfm,
    Npy,
    Fits,
    Raw,
    /// Nothing but whitespace is left.
    End,
    Other,
}

impl Container {
    /// The container of the frame that starts at `rest` (after any whitespace).
    pub fn sniff(rest: &[u8]) -> Container {
        let start = rest.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(rest.len());
        match rest.get(start..start + 2) {
            None if start == rest.len() => Container::End,
            Some(b"P5") => Container::Pgm,
            Some(b"P2") => Container::PlainPgm,
            Some(b"P6") => Container::Ppm,
            Some(b"P3") => Container::PlainPpm,
            Some(b"P7") => Container::Pam,
            Some(b"P4") => Container::Pbm,
            Some(b"P1") => Container::PlainPbm,
            Some([0x89, b'P']) => Container::Png,
            Some([0xff, 0xd8]) => Container::Jpeg,
            Some(b"II" | b"MM") => Container::Tiff,
            Some(b"BM") => Container::Bmp,
            Some(b"PF" | b"Pf") => Container::Pfm,
            Some([0x93, b'N']) => Container::Npy,
            Some(b"SI") => Container::Fits,
            _ => Container::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Container::Pgm => "pgm",
            Container::PlainPgm => "plain-pgm",
            Container::Ppm => "ppm",
            Container::PlainPpm => "plain-ppm",
            Container::Pam => "pam",
            Container::Pbm => "pbm",
            Container::PlainPbm => "plain-pbm",
            Container::Png => "png",
            Container::Jpeg => "jpeg",
            Container::Tiff => "tiff",
            Container::Bmp => "bmp",
            Container::Pfm => "pfm",
            Container::Npy => "npy",
            Container::Fits => "fits",
            Container::Raw => "raw",
            Container::End => "end",
            Container::Other => "other",
        }
    }
}

/// An error as the comparison sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorNote {
    pub frame: usize,
    pub kind: FrameErrorKind,
    pub message: String,
}

/// How a read ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// `next_frame` said the stream is over.
    Clean,
    Failed(ErrorNote),
    /// More frames than the input has bytes; the read was stopped.
    Endless,
}

/// What a whole read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub frames: usize,
    /// All frames' sizes, maxvals, containers, geometry, annotations and samples, in order.
    pub digest: u64,
    pub end: End,
}

impl Outcome {
    /// What kind of outcome this is, for feedback: the end with its numbers blanked, and up to
    /// four frames. Inputs with a new kind of outcome join the corpus even without coverage.
    pub fn shape(&self) -> u64 {
        let mut d = Digest::new();
        d.word(self.frames.min(4) as u64);
        match &self.end {
            End::Clean => d.word(1),
            End::Endless => d.word(2),
            End::Failed(e) => {
                d.word(3);
                d.bytes(format!("{:?}", e.kind).as_bytes());
                d.bytes(&message_shape(&e.message));
            }
        }
        d.finish()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} frame(s) (digest {:016x}), then ", self.frames, self.digest)?;
        match &self.end {
            End::Clean => write!(f, "the end"),
            End::Endless => write!(f, "no end"),
            End::Failed(e) => write!(f, "'frame {}: {}' ({:?})", e.frame, e.message, e.kind),
        }
    }
}

/// A message without what varies from input to input: everything from the first quote to the last
/// goes (quoted text is a piece of the input, and may hold quotes itself; the float containers'
/// messages quote with `"`, the others with `'`), each word with a digit
/// in it (`12`, `0x1f3a`, `5x0`) becomes `#`, and short words go (PNG chunk types are four bytes
/// of the input, and shorter words say little), and only the first twelve words count (some
/// decoders list values from the input: `sample format [Unknown(10825), Unknown(25600), ...]`).
/// So "bad width '3x': 12" and "bad width '9q': 7" are one shape, and the set of shapes stays a
/// few hundred strong.
pub(crate) fn message_shape(message: &str) -> Vec<u8> {
    let quote = |c: char| c == '\'' || c == '"';
    let text = match (message.find(quote), message.rfind(quote)) {
        (Some(first), Some(last)) => [&message[..first], &message[last + 1..]].concat(),
        _ => message.to_owned(),
    };
    let mut out = Vec::new();
    let words = text.as_bytes().split(|b| !b.is_ascii_alphanumeric()).filter(|w| !w.is_empty());
    for word in words.take(12) {
        if word.iter().any(u8::is_ascii_digit) {
            out.extend_from_slice(b"# ");
        } else if word.len() >= 5 {
            out.extend_from_slice(word);
            out.push(b' ');
        }
    }
    out
}

/// The first frames' containers, as the slice read sniffed them (`Other` past the array).
type Containers = [Container; 64];

/// One read's outcome and costs.
struct Pass {
    outcome: Outcome,
    /// The most heap held during one `next_frame` call, and that frame's number (1-based) and
    /// container.
    peak: u64,
    peak_frame: usize,
    peak_container: Container,
    slowest: Duration,
    slowest_frame: usize,
    slowest_container: Container,
    containers: Containers,
}

/// A slice that says how far it has been read, for sniffing each frame's container.
struct Tracked<'a> {
    data: &'a [u8],
    pos: &'a Cell<usize>,
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.fill_buf()?.read(buf)?;
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Tracked<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(self.data.get(self.pos.get()..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.pos.set((self.pos.get() + amount).min(self.data.len()));
    }
}

/// A pipe's view of a slice: each read hands out 1 to 7 bytes, however many were asked for.
struct Trickle<'a> {
    rest: &'a [u8],
    rng: fastrand::Rng,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.rest.len()).min(self.rng.usize(1..=7));
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

fn digest_frame(d: &mut Digest, f: &Frame) {
    d.word(f.width as u64);
    d.word(f.height as u64);
    d.word(f.maxval as u64);
    // Debug text keeps this right when the frame crate adds containers.
    d.bytes(format!("{:?}", f.format).as_bytes());
    match &f.geometry {
        None => d.word(0),
        Some(g) => {
            let m = &g.to_original;
            d.word(1);
            for v in [m.a, m.b, m.c, m.d, m.e, m.f] {
                d.word(v.to_bits());
            }
            d.word(g.original_width as u64);
            d.word(g.original_height as u64);
        }
    }
    d.word(f.annotations.len() as u64);
    for a in &f.annotations {
        d.bytes(a.key.as_bytes());
        d.bytes(a.value.as_bytes());
    }
    match &f.pixels {
        Pixels::U8(v) => d.bytes(v),
        Pixels::U16(v) => {
            d.word(v.len() as u64);
            for four in v.chunks(4) {
                d.word(four.iter().fold(0u64, |w, &s| w << 16 | s as u64));
            }
        }
        Pixels::F32(v) => {
            d.word(v.len() as u64);
            for two in v.chunks(2) {
                d.word(two.iter().fold(0u64, |w, &s| w << 32 | s.to_bits() as u64));
            }
        }
    }
    d.word(f.channels.count() as u64);
}

/// Where a read is, for naming each frame's container before the reader takes it.
enum Whereabouts<'a> {
    /// A slice read: how far it has got in `data`.
    Slice(&'a Cell<usize>),
    /// A pipe read: what the slice read found, frame by frame.
    Pipe(&'a Containers),
}

/// Reads `source` to its end.
fn read_all<R: BufRead>(source: R, options: ReadOptions, data: &[u8], whereabouts: Whereabouts) -> Pass {
    let meter = crate::alloc::HeapMeter::start();
    let mut containers = [Container::Other; 64];
    let mut pass = Pass {
        outcome: Outcome { frames: 0, digest: 0, end: End::Clean },
        peak: 0,
        peak_frame: 1,
        peak_container: Container::Other,
        slowest: Duration::ZERO,
        slowest_frame: 1,
        slowest_container: Container::Other,
        containers,
    };
    let mut reader = FrameReader::new(source, options);
    let mut digest = Digest::new();
    let end = loop {
        let index = pass.outcome.frames + 1;
        let here = match whereabouts {
            _ if options.raw.is_some() => Container::Raw,
            Whereabouts::Slice(pos) => Container::sniff(&data[pos.get()..]),
            Whereabouts::Pipe(found) => container(found, index),
        };
        if let Some(slot) = containers.get_mut(index - 1) {
            *slot = here;
        }
        meter.restart_peak();
        let started = Instant::now();
        let next = reader.next_frame();
        let (took, peak) = (started.elapsed(), meter.peak());
        if peak > pass.peak {
            (pass.peak, pass.peak_frame, pass.peak_container) = (peak, index, here);
        }
        if took > pass.slowest {
            (pass.slowest, pass.slowest_frame, pass.slowest_container) = (took, index, here);
        }
        match next {
            Ok(Some(frame)) => {
                digest_frame(&mut digest, &frame);
                pass.outcome.frames = index;
                if index > data.len() {
                    break End::Endless;
                }
            }
            Ok(None) => break End::Clean,
            Err(e) => break End::Failed(ErrorNote { frame: e.frame, kind: e.kind, message: e.message }),
        }
    };
    pass.outcome.digest = digest.finish();
    pass.outcome.end = end;
    pass.containers = containers;
    pass
}

/// The container of frame `index` (1-based).
fn container(containers: &Containers, index: usize) -> Container {
    containers.get(index.wrapping_sub(1)).copied().unwrap_or(Container::Other)
}

/// A panic's signature is its source file, not its line: one defect (an unchecked `unwrap` in a
/// decoder's inner loop, say) panics on many lines of one file, and one saved input is enough.
fn panic_finding(note: PanicNote, how: &str, mode: Mode) -> Finding {
    let file = note.location.rsplit_once(':').map_or(note.location.as_str(), |(file, _line)| file);
    let how_read = if mode.gray() { "as gray " } else { "" };
    Finding {
        kind: FindingKind::Panic,
        signature: format!("panic in {file}{}", mode.suffix()),
        detail: format!(
            "reading {how_read}from a {how}: {} at {}",
            note.message.replace('\n', " "),
            note.location
        ),
    }
}

/// How the reader is told to treat colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Frames keep their channels (`ReadOptions.gray` false), as the harness always read.
    Colour,
    /// Colour frames become gray as they are read (`ReadOptions.gray` true).
    Gray,
}

impl Mode {
    pub const BOTH: [Mode; 2] = [Mode::Colour, Mode::Gray];

    pub fn gray(self) -> bool {
        self == Mode::Gray
    }

    /// What a finding's signature and detail add for this mode: nothing for colour, so findings
    /// saved before gray reads were fuzzed keep their signatures.
    fn suffix(self) -> &'static str {
        match self {
            Mode::Colour => "",
            Mode::Gray => " read as gray",
        }
    }
}

/// What both modes' reads gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcomes {
    pub colour: Outcome,
    pub gray: Outcome,
}

impl Outcomes {
    /// Both modes' [`Outcome::shape`]s as one: a new kind of outcome in either mode is new.
    pub fn shape(&self) -> u64 {
        let mut d = Digest::new();
        d.word(self.colour.shape());
        d.word(self.gray.shape());
        d.finish()
    }
}

impl fmt::Display for Outcomes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "colour: {}; gray: {}", self.colour, self.gray)
    }
}

/// Reads `input` in both modes ([`Mode::BOTH`]), each from a slice and through a trickling pipe,
/// and checks every read. Returns both outcomes, or the first finding.
pub fn check(input: &Input, limits: &Limits) -> Result<Outcomes, Finding> {
    let colour = check_mode(input, limits, Mode::Colour)?;
    let gray = check_mode(input, limits, Mode::Gray)?;
    Ok(Outcomes { colour, gray })
}

/// Reads `input` in `mode` from a slice and through a trickling pipe and checks both reads.
/// Returns the outcome, or the first finding.
pub fn check_mode(input: &Input, limits: &Limits, mode: Mode) -> Result<Outcome, Finding> {
    let max_pixels = limits.max_pixels_for(input);
    let options = input.options(max_pixels, mode.gray());
    let data = &input.bytes[..];
    let started = Instant::now();
    let cpu = thread_cpu();
    let position = Cell::new(0);
    let slice =
        guarded(|| read_all(Tracked { data, pos: &position }, options, data, Whereabouts::Slice(&position)))
            .map_err(|note| panic_finding(note, "slice", mode))?;
    // The pipe's chunking follows from the input, so a finding replays exactly.
    let mut rng = fastrand::Rng::with_seed(input.fingerprint());
    let capacity = rng.usize(1..=16);
    let pipe = guarded(|| {
        let pipe = BufReader::with_capacity(capacity, Trickle { rest: data, rng });
        read_all(pipe, options, data, Whereabouts::Pipe(&slice.containers))
    })
    .map_err(|note| panic_finding(note, "pipe", mode))?;
    let took = started.elapsed();
    let cpu = thread_cpu().saturating_sub(cpu);
    let where_ = |index| container(&slice.containers, index).name();
    let suffix = mode.suffix();
    let (read_as, as_gray) = if mode.gray() { ("read as gray: ", "as gray ") } else { ("", "") };

    if slice.outcome.end == End::Endless {
        return Err(Finding {
            kind: FindingKind::Endless,
            signature: format!("endless in {}{suffix}", where_(slice.outcome.frames)),
            detail: format!("{read_as}{} frames from {} bytes", slice.outcome.frames, data.len()),
        });
    }
    let bound = allocation_bound(max_pixels, data.len());
    for (pass, how) in [(&slice, "slice"), (&pipe, "pipe")] {
        if pass.peak > bound {
            return Err(Finding {
                kind: FindingKind::Alloc,
                signature: format!("alloc in {}{suffix}", pass.peak_container.name()),
                detail: format!(
                    "reading frame {} {as_gray}from a {how} held {} bytes, over the bound of {bound} \
                     (4 * {} max pixels + 2 * {} input bytes + 1 MiB)",
                    pass.peak_frame,
                    pass.peak,
                    max_pixels,
                    data.len()
                ),
            });
        }
    }
    let slowest = if slice.slowest >= pipe.slowest { &slice } else { &pipe };
    if let Some(rate) = limits.work {
        let budget = work_budget(rate, max_pixels, data.len());
        if cpu > budget {
            return Err(Finding {
                kind: FindingKind::Slow,
                signature: format!("slow per byte in {}{suffix}", slowest.slowest_container.name()),
                detail: format!(
                    "{read_as}both reads took {:.2} s of CPU, over the {:.2} s that {} bytes allow \
                     at --max-pixels {max_pixels} ({:.0} ns a pixel of work); frame {} alone {:.2} s",
                    cpu.as_secs_f64(),
                    budget.as_secs_f64(),
                    data.len(),
                    rate * 1e9,
                    slowest.slowest_frame,
                    slowest.slowest.as_secs_f64()
                ),
            });
        }
    } else if took > limits.time {
        return Err(Finding {
            kind: FindingKind::Slow,
            signature: format!("slow in {}{suffix}", slowest.slowest_container.name()),
            detail: format!(
                "{read_as}both reads took {:.2} s, over {:.2} s; frame {} alone {:.2} s",
                took.as_secs_f64(),
                limits.time.as_secs_f64(),
                slowest.slowest_frame,
                slowest.slowest.as_secs_f64()
            ),
        });
    }
    if slice.outcome != pipe.outcome {
        let first_difference = slice.outcome.frames.min(pipe.outcome.frames) + 1;
        return Err(Finding {
            kind: FindingKind::Mismatch,
            signature: format!("mismatch in {}{suffix}", where_(first_difference)),
            detail: format!(
                "{read_as}slice: {}; pipe (buffer of {capacity}): {}",
                slice.outcome, pipe.outcome
            )
            .replace('\n', " "),
        });
    }
    Ok(slice.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::{Depth, RawSpec};

    fn run(input: &Input) -> Result<Outcome, Finding> {
        check(input, &Limits::standard()).map(|both| both.colour)
    }

    #[test]
    fn the_bound_is_the_documented_formula() {
        assert_eq!(allocation_bound(1 << 16, 1000), 4 * 65536 + 2000 + 1048576);
    }

    #[test]
    fn a_stream_reads_the_same_both_ways() {
        let input = Input::described(b"P5 2 1 255\n\x01\x02\nP2\n# histopipe-hough a=1\n1 1 9 7\n".to_vec());
        let outcome = run(&input).unwrap();
        assert_eq!(outcome.frames, 2);
        assert_eq!(outcome.end, End::Clean);
    }

    #[test]
    fn different_samples_give_different_digests() {
        let a = run(&Input::described(b"P5 2 1 255\n\x01\x02".to_vec())).unwrap();
        let b = run(&Input::described(b"P5 2 1 255\n\x01\x03".to_vec())).unwrap();
        assert_ne!(a.digest, b.digest);
        assert_eq!(a.shape(), b.shape(), "the same kind of outcome");
    }

    #[test]
    fn errors_are_compared_and_shaped_without_their_numbers() {
        let a = run(&Input::described(b"P5 3 1 255\n\x01".to_vec())).unwrap();
        let b = run(&Input::described(b"P5 4 1 255\n\x01\x02".to_vec())).unwrap();
        assert!(matches!(&a.end, End::Failed(e) if e.message.contains("truncated pixel data")), "{a}");
        assert_eq!(a.shape(), b.shape());
        assert_ne!(a.shape(), run(&Input::described(b"P9".to_vec())).unwrap().shape());
    }

    #[test]
    fn message_shapes_drop_numbers_and_quotes() {
        assert_eq!(message_shape("bad width '3x': 12 of 345"), b"width # # ");
        assert_eq!(message_shape("field 'a'b' and 'c' here"), b"field ");
        assert_eq!(message_shape("bad PFM header: width \"nalMA#XV\" beyond"), b"header width beyond ");
        assert_eq!(
            message_shape("bad NPY header: a string expected at \"g'descr\""),
            b"header string expected "
        );
        assert_eq!(message_shape("CRC error: expected 0x12d5e7cf have 0x5c5"), b"error expected # # ");
        assert_eq!(message_shape("chunk type: IHDP, crit"), message_shape("chunk type: I;DR, crit"));
        let list = |n| format!("not supported: sample format {:?}", vec![Some(7); n]);
        assert_eq!(message_shape(&list(20)), message_shape(&list(30)));
    }

    #[test]
    fn colour_is_read_both_kept_and_as_gray() {
        let input = Input::described(b"P6 1 1 255\n\xff\x00\x00P5 1 1 255\n\x07".to_vec());
        let both = check(&input, &Limits::standard()).unwrap();
        assert_eq!((both.colour.frames, both.gray.frames), (2, 2));
        assert_ne!(both.colour.digest, both.gray.digest, "red kept, and red as gray (76)");
        let gray = Input::described(b"P5 1 1 255\n\x07".to_vec());
        let both = check(&gray, &Limits::standard()).unwrap();
        assert_eq!(both.colour, both.gray, "a gray frame reads the same both ways");
        assert!(both.to_string().starts_with("colour: 1 frame(s)"), "{both}");
    }

    #[test]
    fn findings_read_as_gray_say_so() {
        let note = PanicNote { message: "boom".into(), location: "src/x.rs:3".into() };
        let f = panic_finding(note, "pipe", Mode::Gray);
        assert_eq!(f.signature, "panic in src/x.rs read as gray");
        assert!(f.detail.starts_with("reading as gray from a pipe: boom"), "{}", f.detail);
    }

    #[test]
    fn raw_frames_are_read_as_raw() {
        let spec = RawSpec { width: 1, height: 1, depth: Depth::U8 };
        let outcome = run(&Input::raw(vec![1, 2, 3], spec)).unwrap();
        assert_eq!((outcome.frames, outcome.end), (3, End::Clean));
    }

    #[test]
    fn containers_are_sniffed_after_whitespace() {
        assert_eq!(Container::sniff(b"\n P5 1"), Container::Pgm);
        assert_eq!(Container::sniff(b"\x89PNG"), Container::Png);
        assert_eq!(Container::sniff(b"  \n"), Container::End);
        assert_eq!(Container::sniff(b"x"), Container::Other);
        assert_eq!(Container::sniff(b"Pf\n1 1\n-1\n"), Container::Pfm);
        assert_eq!(Container::sniff(b"PF\n1 1\n1\n"), Container::Pfm);
        assert_eq!(Container::sniff(b"\x93NUMPY\x01\x00"), Container::Npy);
        assert_eq!(Container::sniff(b"SIMPLE  =                    T"), Container::Fits);
        assert_eq!(Container::sniff(b"P4\n8 1\n\xff"), Container::Pbm);
        assert_eq!(Container::sniff(b" P1 1 1 0"), Container::PlainPbm);
    }

    #[test]
    fn the_pipe_hands_out_a_few_bytes_at_a_time() {
        let data: Vec<u8> = (0..100).collect();
        let mut pipe = Trickle { rest: &data, rng: fastrand::Rng::with_seed(1) };
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        loop {
            let n = pipe.read(&mut buf).unwrap();
            assert!(n <= 7);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, data);
    }
}
