//! Frames and a frame's output parts into and out of shared memory: the sender lays samples and
//! bytes out in its block and lists them in its message; the receiver checks each span against
//! the block and copies it out into memory of its own.

use histopipe_frame::{fallibly, Depth, Frame, Pixels, SampleMemory, Samples};

use super::shm::Block;
use super::wire::{Bad, FrameHeader, Reader, Span, Writer};
use crate::writer::Part;
use crate::ErrorKind;

/// A frame's output as the service sends it: its parts, or the tool's error (kind and words).
pub(crate) type Served = Result<Vec<Part>, (ErrorKind, String)>;

/// `taken` bytes of a reply's parts and `more`, if they fit the block's `size`.
fn within_block(taken: u64, more: u64, size: u64) -> Result<u64, Bad> {
    match taken.checked_add(more) {
        Some(sum) if sum <= size => Ok(sum),
        _ => Err(Bad(format!("parts of more bytes than the block's {size}"))),
    }
}

/// What a part is, in a reply.
const FRAME: u8 = 0;
const BYTES: u8 = 1;
const WORDS: u8 = 2;

/// The bytes of a frame's samples, as they lie in memory (little-endian on every machine this
/// runs on: the service and its clients share one).
fn sample_bytes(pixels: &Pixels) -> &[u8] {
    match pixels {
        Pixels::U8(s) => s,
        Pixels::U16(s) => bytemuck::cast_slice(s),
        Pixels::F32(s) => bytemuck::cast_slice(s),
    }
}

/// `frame`'s header, its samples placed at `samples`.
pub(crate) fn header_of(frame: &Frame, samples: Span) -> FrameHeader {
    FrameHeader {
        width: frame.width,
        height: frame.height,
        channels: frame.channels,
        maxval: frame.maxval,
        depth: frame.depth(),
        format: frame.format,
        geometry: frame.geometry.clone(),
        annotations: frame.annotations.clone(),
        source: frame.source.clone(),
        samples,
    }
}

/// Lays `frame`'s samples at `at` in `block` (which holds them); its header, and where its
/// samples end.
pub(crate) fn put_frame(frame: &Frame, block: &mut Block, at: usize) -> (FrameHeader, usize) {
    let bytes = sample_bytes(&frame.pixels);
    histopipe_ops::parallel::copy(&mut block.as_mut_slice()[at..at + bytes.len()], bytes);
    (header_of(frame, Span { offset: at as u64, len: bytes.len() as u64 }), at + bytes.len())
}

/// The bytes a frame's samples take.
pub(crate) fn frame_bytes(frame: &Frame) -> usize {
    sample_bytes(&frame.pixels).len()
}

/// The frame `header` describes, its samples copied out of `block` into memory from `memory`
/// (page-locked where a GPU lends it); integer samples over the maxval are a fault, as the
/// frame reader makes them.
pub(crate) fn take_frame(header: FrameHeader, block: &Block, memory: &SampleMemory) -> Result<Frame, Bad> {
    let range = header.samples.within(block.len())?;
    let count = header.width * header.height * header.channels.count();
    let no_memory = || Bad(format!("no memory for a frame of {} bytes", range.len()));
    // Allocated so that a refusal is an error here, not the end of the process.
    let pixels = match header.depth {
        Depth::U8 => {
            let mut s: Samples<u8> = fallibly(|| memory.try_uninit(count)).ok_or_else(no_memory)?;
            block.copy_out(range, &mut s);
            Pixels::U8(s)
        }
        Depth::U16 => {
            let mut s: Samples<u16> = fallibly(|| memory.try_uninit(count)).ok_or_else(no_memory)?;
            block.copy_out(range, bytemuck::cast_slice_mut(&mut s));
            Pixels::U16(s)
        }
        Depth::F32 => {
            let mut s: Samples<f32> = fallibly(|| memory.try_uninit(count)).ok_or_else(no_memory)?;
            block.copy_out(range, bytemuck::cast_slice_mut(&mut s));
            Pixels::F32(s)
        }
    };
    // The largest sample by a reduction the compiler vectorizes (no early exit), skipped where
    // the maxval is the type's own.
    let over = match &pixels {
        Pixels::U8(s) => header.maxval < 255 && u16::from(s.iter().fold(0, |m, &v| m.max(v))) > header.maxval,
        Pixels::U16(s) => header.maxval < u16::MAX && s.iter().fold(0, |m, &v| m.max(v)) > header.maxval,
        Pixels::F32(_) => false,
    };
    if over {
        return Err(Bad(format!("a sample over maxval {}", header.maxval)));
    }
    Ok(Frame {
        width: header.width,
        height: header.height,
        channels: header.channels,
        maxval: header.maxval,
        pixels,
        format: header.format,
        geometry: header.geometry,
        annotations: header.annotations,
        source: header.source,
    })
}

/// The bytes `parts` take in shared memory.
pub(crate) fn parts_bytes(parts: &[Part]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            Part::Frame(f) => frame_bytes(f),
            Part::Encoded(b) | Part::Bytes(b) => b.len(),
            Part::Words(w) => w.len() * 4,
        })
        .sum()
}

/// Lays `parts` out in `block` (which holds [`parts_bytes`] of them) and lists them.
fn put_parts(parts: &[Part], block: &mut Block, w: &mut Writer) {
    w.u32(parts.len() as u32);
    let mut at = 0;
    for part in parts {
        let bytes: &[u8] = match part {
            Part::Frame(frame) => {
                w.u8(FRAME);
                let (header, end) = put_frame(frame, block, at);
                header.encode(w);
                at = end;
                continue;
            }
            Part::Encoded(b) | Part::Bytes(b) => {
                w.u8(BYTES);
                b
            }
            Part::Words(words) => {
                w.u8(WORDS);
                bytemuck::cast_slice(words)
            }
        };
        histopipe_ops::parallel::copy(&mut block.as_mut_slice()[at..at + bytes.len()], bytes);
        w.span(Span { offset: at as u64, len: bytes.len() as u64 });
        at += bytes.len();
    }
}

/// A frame's reply: whether the service loaded kernels for it (`loaded`: a first use, paid once,
/// see [`histopipe_ops::modules_loaded`]), then its parts laid out in `block` (the tool's output),
/// or the tool's error.
pub(crate) fn encode_reply(result: &Served, block: Option<&mut Block>, loaded: bool) -> Vec<u8> {
    let mut w = Writer::default();
    w.u8(loaded as u8);
    match (result, block) {
        (Ok(parts), Some(block)) => {
            w.u8(0);
            put_parts(parts, block, &mut w);
        }
        (Ok(_), None) => {
            w.u8(0).u32(0);
        }
        (Err((kind, words)), _) => {
            w.u8(1).u8(kind_tag(*kind)).text(words);
        }
    }
    w.bytes
}

/// A frame's reply ([`encode_reply`]'s), its parts copied out of `block`, a frame's samples into
/// `memory` (the run's, whose blocks of frames written and dropped are kept for the next: a 4K
/// frame copied into fresh pages pays for their faults): the reply, and whether the service
/// loaded kernels for the frame.
pub(crate) fn decode_reply(
    body: &[u8],
    block: Option<&Block>,
    memory: &SampleMemory,
) -> Result<(Served, bool), Bad> {
    let mut r = Reader::new(body);
    let loaded = r.flag("whether kernels were loaded")?;
    let reply = match r.u8("the result")? {
        0 => Ok(take_parts(&mut r, block, memory)?),
        1 => {
            let kind = match r.u8("the error's kind")? {
                0 => ErrorKind::Usage,
                1 => ErrorKind::Input,
                2 => ErrorKind::Runtime,
                _ => ErrorKind::Internal,
            };
            Err((kind, r.text("the error's words")?))
        }
        t => return Err(Bad(format!("result {t}"))),
    };
    r.end()?;
    Ok((reply, loaded))
}

/// An error's kind as it travels.
fn kind_tag(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Usage => 0,
        ErrorKind::Input => 1,
        ErrorKind::Runtime | ErrorKind::BrokenPipe => 2,
        ErrorKind::Internal => 3,
    }
}

/// The parts a reply lists, copied out of `block`: together no more bytes than the block holds
/// (a part listed many times would copy it many times).
fn take_parts(r: &mut Reader<'_>, block: Option<&Block>, memory: &SampleMemory) -> Result<Vec<Part>, Bad> {
    let n = r.count("parts", 17, super::wire::PARTS_MOST)?;
    let mut parts = Vec::with_capacity(n);
    let mut taken = 0u64;
    let size = block.map_or(0, Block::len) as u64;
    for _ in 0..n {
        let tag = r.u8("a part's kind")?;
        if tag == FRAME {
            let header = FrameHeader::decode(r, u64::MAX)?;
            taken = within_block(taken, header.samples.len, size)?;
            let block = block.ok_or_else(|| Bad("a frame with no memory block".into()))?;
            parts.push(Part::Frame(take_frame(header, block, memory)?));
            continue;
        }
        let span = r.span("a part")?;
        taken = within_block(taken, span.len, size)?;
        let range = match block {
            Some(block) => span.within(block.len())?,
            None if span.len == 0 => 0..0,
            None => return Err(Bad("a part with no memory block".into())),
        };
        parts.push(match (tag, block) {
            (BYTES, Some(block)) => Part::Bytes(block.to_vec(range)),
            (BYTES, None) => Part::Bytes(Vec::new()),
            (WORDS, _) if range.len() % 4 == 0 => {
                // A buffer the writer gave back, if one is kept (a cube's counts come in groups
                // of tens of megabytes: fresh pages cost their faults).
                let mut words = histopipe_ops::parallel::words(range.len() / 4);
                if let Some(block) = block {
                    block.copy_out(range, bytemuck::cast_slice_mut(&mut words));
                }
                Part::Words(words)
            }
            (tag, _) => return Err(Bad(format!("bad part kind {tag}"))),
        });
    }
    Ok(parts)
}
