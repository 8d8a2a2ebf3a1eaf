//! The service's messages as bytes: what a client and the service say to each other over the
//! socket ([`Message`]), and the frames and parts they point at in shared memory.
//!
//! Every field is read through [`Reader`], which fails on a short or overlong message, a bad tag
//! or a length past what the message holds, never panics, and allocates no more than the
//! message's own bytes: a message is at most [`BODY_MOST`] bytes, read whole before it is parsed.
//! Samples never travel in a message: a frame's header does, with where its samples lie in the
//! sender's shared memory ([`Span`]), checked against that memory's size by the receiver.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use histopipe_frame::{Affine, Annotation, Channels, Depth, Format, Geometry, Origin, Source};

pub(crate) use super::held::{Pipe, Token};

/// The protocol's version: a client and a service of other versions do not talk.
pub(crate) const VERSION: u32 = 5;

/// The most bytes a message's body holds: a frame's header with a long source path and its
/// annotations, a reply's list of parts, an error's words.
pub(crate) const BODY_MOST: usize = 1 << 20;

/// The most command-line words a client's hello may hold.
const ARGS_MOST: usize = 4096;

/// The most parts one frame's reply may list (a table in pieces, a cube in groups of turns).
pub(crate) const PARTS_MOST: usize = 1 << 16;

/// The most annotations one frame's header may hold.
const ANNOTATIONS_MOST: usize = 4096;

/// What a message is; its tag is the byte after the magic in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Client: the tool and its command line, to start a session.
    Hello = 1,
    /// Service: the session is open.
    Ready = 2,
    /// Service: no session (or no more frames): why, as a [`Refusal`].
    Refused = 3,
    /// Client: a frame to work on, its samples in the client's shared memory.
    Frame = 4,
    /// Service: a frame's output, its parts in the service's shared memory, or its error.
    Done = 5,
    /// Client: the service is to end.
    Stop = 6,
    /// Client: how the service stands; service: the answer, as text.
    Status = 7,
    /// Client: room for a frame of so many bytes (a u64); the service answers [`Kind::Ready`]
    /// with its block of shared memory lent to the session.
    Room = 8,
    /// Service: parts of a frame's output made before the frame is done, in its shared memory
    /// (a reply's body, as [`Kind::Done`]'s); the client answers [`Kind::Taken`] once it has
    /// taken them out, and the frame's last parts come with `Done`.
    Part = 9,
    /// Client: the parts sent are taken out of the block.
    Taken = 10,
    /// Client: this process reads a pipe (its [`Pipe`]): frames for it may be held
    /// ([`super::held`]); the service answers [`Kind::Ready`].
    Reads = 11,
    /// Service: a frame's output is held for the reader of the client's pipe (its [`Token`]),
    /// not sent; the client writes the reference, then asks [`Kind::Await`].
    Held = 12,
    /// Client: waits until the reader is done with held frame [`Token`]; the service answers
    /// [`Kind::Over`].
    Await = 13,
    /// Service: a held frame is over (a u8): 1, its reader is done with it; 0, its bytes are
    /// wanted (the writer makes and writes them). Also the answer to a frame whose held input
    /// cannot be taken: its bytes follow it in the stream.
    Over = 14,
    /// Client: done with the held frame it took (a [`Token`], and a u8: 1 done, 0 its bytes are
    /// wanted after all); the service answers [`Kind::Ready`].
    Release = 15,
}

impl Kind {
    pub(crate) fn of(tag: u8) -> Option<Kind> {
        [
            Kind::Hello,
            Kind::Ready,
            Kind::Refused,
            Kind::Frame,
            Kind::Done,
            Kind::Stop,
            Kind::Status,
            Kind::Room,
            Kind::Part,
            Kind::Taken,
            Kind::Reads,
            Kind::Held,
            Kind::Await,
            Kind::Over,
            Kind::Release,
        ]
        .into_iter()
        .find(|k| *k as u8 == tag)
    }
}

/// Why the service refused a session or a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Refusal {
    /// The GPU cannot be used: the words are the driver's, as an in-process opening says them.
    Gpu = 1,
    /// The message broke the protocol (or came from another version).
    Protocol = 2,
    /// The service is full: too many sessions, or too much memory in use past the wait's bound.
    Busy = 3,
    /// The command line is one the service does not take (it names files, or does not parse).
    CommandLine = 4,
}

impl Refusal {
    pub(crate) fn of(tag: u8) -> Option<Refusal> {
        [Refusal::Gpu, Refusal::Protocol, Refusal::Busy, Refusal::CommandLine]
            .into_iter()
            .find(|r| *r as u8 == tag)
    }
}

/// A fault in a message: what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bad(pub String);

impl Bad {
    fn new(why: impl Into<String>) -> Bad {
        Bad(why.into())
    }
}

/// Where bytes lie in a shared memory block: `offset`, `len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub offset: u64,
    pub len: u64,
}

impl Span {
    /// The span as a range within a block of `size` bytes; a fault if it lies past its end.
    pub(crate) fn within(self, size: usize) -> Result<std::ops::Range<usize>, Bad> {
        let end = self.offset.checked_add(self.len).ok_or_else(|| Bad::new("a span past 2^64"))?;
        if end > size as u64 {
            return Err(Bad::new(format!(
                "bytes {}..{end} lie past the shared memory's {size} bytes",
                self.offset
            )));
        }
        Ok(self.offset as usize..end as usize)
    }
}

/// A message's body being written.
#[derive(Default)]
pub(crate) struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }
    pub(crate) fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }
    /// Bytes, after their length.
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len().min(u32::MAX as usize) as u32);
        self.bytes.extend_from_slice(&v[..v.len().min(u32::MAX as usize)]);
        self
    }
    pub(crate) fn text(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    pub(crate) fn span(&mut self, span: Span) -> &mut Self {
        self.u64(span.offset).u64(span.len)
    }
}

/// A message's body being read: every read checks what is left.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(body: &'a [u8]) -> Reader<'a> {
        Reader { rest: body }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Bad> {
        if n > self.rest.len() {
            return Err(Bad::new(format!("the message ends inside {what}")));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Bad> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Bad> {
        Ok(self.take(1, what)?[0])
    }
    /// A yes or no: 1 or 0.
    pub(crate) fn flag(&mut self, what: &str) -> Result<bool, Bad> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Bad::new(format!("{what}: {other}, not 0 or 1"))),
        }
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, Bad> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Bad> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Bad> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64, Bad> {
        Ok(f64::from_bits(self.u64(what)?))
    }
    /// A size: a u64 that fits this machine's `usize`.
    pub(crate) fn size(&mut self, what: &str) -> Result<usize, Bad> {
        usize::try_from(self.u64(what)?).map_err(|_| Bad::new(format!("{what} is too large")))
    }
    pub(crate) fn bytes(&mut self, what: &str) -> Result<&'a [u8], Bad> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
    pub(crate) fn text(&mut self, what: &str) -> Result<String, Bad> {
        let bytes = self.bytes(what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Bad::new(format!("{what} is not UTF-8")))
    }
    pub(crate) fn span(&mut self, what: &str) -> Result<Span, Bad> {
        Ok(Span { offset: self.u64(what)?, len: self.u64(what)? })
    }
    /// A count of items that each take at least `least` bytes of what is left, and at most `most`.
    pub(crate) fn count(&mut self, what: &str, least: usize, most: usize) -> Result<usize, Bad> {
        let n = self.u32(what)? as usize;
        if n > most || n.saturating_mul(least) > self.rest.len() {
            return Err(Bad::new(format!("{n} {what}: more than the message holds")));
        }
        Ok(n)
    }
    /// The message must end here.
    pub(crate) fn end(&self) -> Result<(), Bad> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Bad::new(format!("{} bytes after the message's end", self.rest.len())))
        }
    }
}

/// A client's first message: the tool it runs and its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hello {
    pub version: u32,
    pub tool: String,
    pub args: Vec<OsString>,
}

impl Hello {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u32(self.version).text(&self.tool).u32(self.args.len() as u32);
        for arg in &self.args {
            w.bytes(arg.as_bytes());
        }
        w.bytes
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Hello, Bad> {
        let mut r = Reader::new(body);
        let version = r.u32("the version")?;
        let tool = r.text("the tool's name")?;
        let n = r.count("command-line words", 4, ARGS_MOST)?;
        let args = (0..n)
            .map(|_| r.bytes("a command-line word").map(|b| OsString::from_vec(b.to_vec())))
            .collect::<Result<_, _>>()?;
        r.end()?;
        Ok(Hello { version, tool, args })
    }
}

/// A client's frame: its number in the stream, whether its output starts the file or stream,
/// the pipe its output goes to (held for that pipe's reader where a tool on the service reads it),
/// and the frame itself: in the client's block, or held by the service ([`super::held`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FrameRequest {
    pub n: usize,
    pub starts: bool,
    pub pipe_out: Option<Pipe>,
    pub input: Input,
}

/// Where a frame to work on is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    /// In the client's block.
    Sent(FrameHeader),
    /// Held by the service.
    Held(Token),
}

impl FrameRequest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u64(self.n as u64).u8(self.starts as u8);
        match self.pipe_out {
            Some(pipe) => pipe.encode(w.u8(1)),
            None => {
                w.u8(0);
            }
        }
        match &self.input {
            Input::Sent(header) => header.encode(w.u8(0)),
            Input::Held(token) => token.encode(w.u8(1)),
        }
        w.bytes
    }

    /// Reads a frame request: a frame of at most `max_pixels`, its samples within a block of
    /// `block` bytes.
    pub(crate) fn decode(body: &[u8], max_pixels: u64, block: usize) -> Result<FrameRequest, Bad> {
        let mut r = Reader::new(body);
        let n = r.size("the frame's number")?.max(1);
        let starts = r.flag("whether the frame starts the output")?;
        let pipe_out = match r.u8("whether the output goes to a pipe")? {
            0 => None,
            1 => Some(Pipe::decode(&mut r)?),
            _ => return Err(Bad::new("a bad pipe flag")),
        };
        let input = match r.u8("where the frame is")? {
            0 => {
                let header = FrameHeader::decode(&mut r, max_pixels)?;
                header.samples.within(block)?;
                Input::Sent(header)
            }
            1 => Input::Held(Token::decode(&mut r)?),
            _ => return Err(Bad::new("a bad place for the frame")),
        };
        r.end()?;
        Ok(FrameRequest { n, starts, pipe_out, input })
    }
}

/// The service's answer that a frame's output is held ([`Kind::Held`]): its token, and whether
/// the service loaded kernels for the frame (as a reply says, see `transfer::encode_reply`).
pub(crate) fn encode_held(token: Token, loaded: bool) -> Vec<u8> {
    let mut w = Writer::default();
    token.encode(&mut w);
    w.u8(loaded as u8);
    w.bytes
}

/// [`encode_held`]'s token and flag.
pub(crate) fn decode_held(body: &[u8]) -> Result<(Token, bool), Bad> {
    let mut r = Reader::new(body);
    let token = Token::decode(&mut r)?;
    let loaded = r.flag("whether kernels were loaded")?;
    r.end()?;
    Ok((token, loaded))
}

/// A refusal as it travels: why, and words.
pub(crate) fn encode_refusal(why: Refusal, words: &str) -> Vec<u8> {
    let mut w = Writer::default();
    w.u8(why as u8).text(words);
    w.bytes
}

/// A refusal's reason and words.
pub(crate) fn decode_refusal(body: &[u8]) -> Result<(Refusal, String), Bad> {
    let mut r = Reader::new(body);
    let why = Refusal::of(r.u8("the refusal")?).ok_or_else(|| Bad::new("an unknown refusal"))?;
    let words = r.text("the words")?;
    r.end()?;
    Ok((why, words))
}

/// A frame as it travels: everything but its samples, which lie at `samples` in the sender's
/// shared memory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FrameHeader {
    pub width: usize,
    pub height: usize,
    pub channels: Channels,
    pub maxval: u16,
    pub depth: Depth,
    pub format: Format,
    pub geometry: Option<Geometry>,
    pub annotations: Vec<Annotation>,
    pub source: Option<Source>,
    pub samples: Span,
}

const CHANNELS: [Channels; 4] = [Channels::Gray, Channels::GrayAlpha, Channels::Rgb, Channels::RgbAlpha];
const DEPTHS: [Depth; 3] = [Depth::U8, Depth::U16, Depth::F32];
const FORMATS: [Format; 8] = Format::ALL;

fn tag_of<T: PartialEq>(all: &[T], v: &T) -> u8 {
    all.iter().position(|x| x == v).unwrap_or(0) as u8
}

fn of_tag<T: Copy>(all: &[T], tag: u8, what: &str) -> Result<T, Bad> {
    all.get(tag as usize).copied().ok_or_else(|| Bad::new(format!("bad {what} {tag}")))
}

impl FrameHeader {
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.u64(self.width as u64)
            .u64(self.height as u64)
            .u8(tag_of(&CHANNELS, &self.channels))
            .u16(self.maxval)
            .u8(tag_of(&DEPTHS, &self.depth))
            .u8(tag_of(&FORMATS, &self.format));
        match &self.geometry {
            None => {
                w.u8(0);
            }
            Some(g) => {
                let Affine { a, b, c, d, e, f } = g.to_original;
                w.u8(1);
                for v in [a, b, c, d, e, f] {
                    w.f64(v);
                }
                w.u64(g.original_width as u64).u64(g.original_height as u64);
            }
        }
        w.u32(self.annotations.len() as u32);
        for a in &self.annotations {
            w.text(&a.key).text(&a.value);
        }
        match &self.source {
            None => {
                w.u8(0);
            }
            Some(s) => {
                w.u8(1).bytes(s.path.as_os_str().as_bytes()).u64(s.index as u64);
                w.u8(matches!(s.origin, Origin::Stream) as u8);
            }
        }
        w.span(self.samples);
    }

    /// Reads a header and checks it describes a frame: a known layout and depth, a maxval the
    /// depth allows, annotations as a header comment would give them, and samples of exactly
    /// the frame's size (at most `max_pixels` pixels).
    pub(crate) fn decode(r: &mut Reader<'_>, max_pixels: u64) -> Result<FrameHeader, Bad> {
        let width = r.size("the width")?;
        let height = r.size("the height")?;
        let channels = of_tag(&CHANNELS, r.u8("the channels")?, "channels")?;
        let maxval = r.u16("the maxval")?;
        let depth = of_tag(&DEPTHS, r.u8("the depth")?, "depth")?;
        let format = of_tag(&FORMATS, r.u8("the format")?, "format")?;
        let geometry = match r.u8("the geometry's tag")? {
            0 => None,
            1 => {
                let mut v = [0.0; 6];
                for x in &mut v {
                    *x = r.f64("the geometry")?;
                }
                let [a, b, c, d, e, f] = v;
                let original_width = r.size("the geometry's width")?;
                let original_height = r.size("the geometry's height")?;
                Some(Geometry { to_original: Affine { a, b, c, d, e, f }, original_width, original_height })
            }
            t => return Err(Bad::new(format!("bad geometry tag {t}"))),
        };
        let n = r.count("annotations", 8, ANNOTATIONS_MOST)?;
        let mut annotations = Vec::with_capacity(n);
        for _ in 0..n {
            let key = r.text("an annotation's key")?;
            let value = r.text("an annotation's value")?;
            // As a header comment gives them: `# histopipe-KEY VALUE`.
            let key_fits = !key.is_empty()
                && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !key_fits || value.trim() != value || value.contains(['\n', '\r']) {
                return Err(Bad::new("an annotation no header comment could hold"));
            }
            annotations.push(Annotation { key, value });
        }
        let source = match r.u8("the source's tag")? {
            0 => None,
            1 => {
                let path = PathBuf::from(OsString::from_vec(r.bytes("the source's path")?.to_vec()));
                let index = r.size("the source's frame")?;
                let origin = match r.u8("the source's origin")? {
                    0 => Origin::Named,
                    1 => Origin::Stream,
                    t => return Err(Bad::new(format!("bad source origin {t}"))),
                };
                Some(Source { path, index, origin })
            }
            t => return Err(Bad::new(format!("bad source tag {t}"))),
        };
        let samples = r.span("the samples")?;
        let header = FrameHeader {
            width,
            height,
            channels,
            maxval,
            depth,
            format,
            geometry,
            annotations,
            source,
            samples,
        };
        header.check(max_pixels)?;
        Ok(header)
    }

    /// The bytes of the frame's samples.
    pub(crate) fn sample_bytes(&self) -> Option<u64> {
        (self.width as u64)
            .checked_mul(self.height as u64)?
            .checked_mul(self.channels.count() as u64)?
            .checked_mul(self.depth.bytes() as u64)
    }

    fn check(&self, max_pixels: u64) -> Result<(), Bad> {
        let pixels = (self.width as u128) * (self.height as u128);
        if self.width == 0 || self.height == 0 || pixels > max_pixels as u128 {
            return Err(Bad::new(format!(
                "a frame of {}x{} pixels (at least 1x1, at most {max_pixels} pixels)",
                self.width, self.height
            )));
        }
        let maxval_fits = match self.depth {
            Depth::U8 => (1..=255).contains(&self.maxval),
            Depth::U16 => self.maxval >= 1,
            Depth::F32 => self.maxval == 1,
        };
        if !maxval_fits {
            return Err(Bad::new(format!("maxval {} for {} samples", self.maxval, self.depth.name())));
        }
        if self.sample_bytes() != Some(self.samples.len) {
            return Err(Bad::new(format!(
                "{} bytes of samples for a {}x{} {} {} frame",
                self.samples.len,
                self.width,
                self.height,
                self.channels.name(),
                self.depth.name()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> FrameHeader {
        FrameHeader {
            width: 3,
            height: 2,
            channels: Channels::Rgb,
            maxval: 1000,
            depth: Depth::U16,
            format: Format::Pam,
            geometry: Some(Geometry::identity(7, 9)),
            annotations: vec![Annotation { key: "hough".into(), value: "a b c".into() }],
            source: Some(Source { path: "dir/x,y.png".into(), index: 4, origin: Origin::Stream }),
            samples: Span { offset: 64, len: 36 },
        }
    }

    #[test]
    fn headers_and_hellos_come_back_as_sent() {
        let mut w = Writer::default();
        header().encode(&mut w);
        let mut r = Reader::new(&w.bytes);
        assert_eq!(FrameHeader::decode(&mut r, 1 << 20).unwrap(), header());
        r.end().unwrap();
        let hello = Hello { version: VERSION, tool: "pad".into(), args: vec!["--to".into(), "9x9".into()] };
        assert_eq!(Hello::decode(&hello.encode()).unwrap(), hello);
    }

    /// Every cut of a message, and every byte of it changed, is read as a fault or as some
    /// message: never a panic, never more than the message's bytes allocated.
    #[test]
    fn cut_or_changed_messages_are_faults_not_panics() {
        let mut w = Writer::default();
        header().encode(&mut w);
        let whole = w.bytes;
        for cut in 0..whole.len() {
            let mut r = Reader::new(&whole[..cut]);
            assert!(FrameHeader::decode(&mut r, 1 << 20).is_err(), "cut at {cut}");
        }
        for i in 0..whole.len() {
            for v in [0u8, 1, 2, 0x7f, 0xff] {
                let mut bytes = whole.clone();
                bytes[i] = v;
                let _ = FrameHeader::decode(&mut Reader::new(&bytes), 1 << 20);
            }
        }
        let hello = Hello { version: VERSION, tool: "rotate".into(), args: vec!["45".into()] }.encode();
        for cut in 0..hello.len() {
            assert!(Hello::decode(&hello[..cut]).is_err());
        }
        let mut huge = Writer::default();
        huge.u32(VERSION).text("pad").u32(u32::MAX);
        assert!(Hello::decode(&huge.bytes).is_err(), "a count past the message's bytes");
    }

    #[test]
    fn headers_that_describe_no_frame_are_refused() {
        type Change = fn(&mut FrameHeader);
        let cases: [(&str, Change); 6] = [
            ("zero width", |h| h.width = 0),
            ("over max pixels", |h| h.height = 1 << 40),
            ("8-bit maxval 300", |h| (h.depth, h.samples.len) = (Depth::U8, 18)),
            ("16-bit maxval 0", |h| h.maxval = 0),
            ("short samples", |h| h.samples.len = 35),
            ("float maxval", |h| (h.depth, h.samples.len) = (Depth::F32, 72)),
        ];
        for (what, change) in cases {
            let mut h = header();
            change(&mut h);
            let mut w = Writer::default();
            h.encode(&mut w);
            assert!(FrameHeader::decode(&mut Reader::new(&w.bytes), 1 << 20).is_err(), "{what}");
        }
        let mut h = header();
        h.annotations[0].key = "Bad Key".into();
        let mut w = Writer::default();
        h.encode(&mut w);
        assert!(FrameHeader::decode(&mut Reader::new(&w.bytes), 1 << 20).is_err(), "annotation key");
    }

    #[test]
    fn frame_requests_come_back_as_sent_and_cut_ones_are_faults() {
        let requests = [
            FrameRequest { n: 3, starts: true, pipe_out: None, input: Input::Sent(header()) },
            FrameRequest {
                n: 9,
                starts: false,
                pipe_out: Some(Pipe { dev: 12, ino: 345 }),
                input: Input::Held(Token(7, 8)),
            },
        ];
        for request in requests {
            let bytes = request.encode();
            assert_eq!(FrameRequest::decode(&bytes, 1 << 20, 100).unwrap(), request);
            for cut in 0..bytes.len() {
                assert!(FrameRequest::decode(&bytes[..cut], 1 << 20, 100).is_err(), "cut at {cut}");
            }
            for i in 0..bytes.len() {
                let mut changed = bytes.clone();
                changed[i] = 0xff;
                let _ = FrameRequest::decode(&changed, 1 << 20, 100);
            }
            // The byte saying whether the frame starts the output: 0 or 1, nothing else.
            let other = FrameRequest { starts: !request.starts, ..request.clone() }.encode();
            let at = (0..bytes.len()).find(|&i| bytes[i] != other[i]).unwrap();
            let mut changed = bytes.clone();
            changed[at] = 2;
            assert!(FrameRequest::decode(&changed, 1 << 20, 100).is_err(), "starts flag 2");
        }
    }

    /// Whether the service loaded kernels for a frame travels with its answer, held or sent
    /// back; any byte but 0 or 1 there is a fault.
    #[test]
    fn answers_say_whether_kernels_were_loaded() {
        for loaded in [false, true] {
            let held = encode_held(Token(3, 4), loaded);
            assert_eq!(decode_held(&held).unwrap(), (Token(3, 4), loaded));
            for cut in 0..held.len() {
                assert!(decode_held(&held[..cut]).is_err(), "cut at {cut}");
            }
            let error = Err((crate::ErrorKind::Input, "frame 2: bad".to_string()));
            let reply = super::super::transfer::encode_reply(&error, None, loaded);
            let memory = histopipe_frame::SampleMemory::default();
            let (back, said) = super::super::transfer::decode_reply(&reply, None, &memory).unwrap();
            assert_eq!((back.map(drop), said), (error.map(drop), loaded));
            for bad in [2u8, 0xff] {
                let (mut held, mut reply) = (held.clone(), reply.clone());
                *held.last_mut().unwrap() = bad;
                reply[0] = bad;
                assert!(decode_held(&held).is_err());
                assert!(super::super::transfer::decode_reply(&reply, None, &memory).is_err());
            }
        }
    }

    #[test]
    fn spans_past_the_memory_are_faults() {
        assert_eq!(Span { offset: 8, len: 8 }.within(16), Ok(8..16));
        assert!(Span { offset: 8, len: 9 }.within(16).is_err());
        assert!(Span { offset: u64::MAX, len: 2 }.within(16).is_err());
    }
}
