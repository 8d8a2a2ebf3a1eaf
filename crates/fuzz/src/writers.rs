//! The writers' target: every frame the reader gives is written back in every container
//! (`FrameWriter` with each [`Container`]) and read again.
//!
//! Each write must not panic and must hold at most [`writer_bound`] bytes of heap; a write may
//! refuse a frame its container cannot hold (an RGB frame as PGM), with an error. What was written
//! must read back as one frame, within the reader's memory bound, without panicking; a lossless
//! container must give the frame back: its size, channels and samples, and its maxval where the
//! container keeps one. JPEG is lossy: its frame must only come back the same size.

use histopipe_frame::{
    Channels, Container, Depth, Frame, FrameReader, FrameWriter, Pixels, RawSpec, ReadOptions, WriteOptions,
};

use crate::alloc::HeapMeter;
use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Checked;
use crate::panics::guarded;
use crate::target::{allocation_bound, Limits};

/// Frames of one input written back; the rest are left to the reader's target.
const FRAMES: usize = 4;

/// The most heap writing one frame may hold: 16 bytes a sample (a PFM's 4-byte floats of 8-bit
/// samples, in an output buffer that grows by doubling, and a copy the encoder makes) and 1 MiB.
pub fn writer_bound(frame: &Frame) -> u64 {
    (frame.width * frame.height * frame.channels.count()) as u64 * 16 + (1 << 20)
}

/// What a container gives back of a frame written in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    /// Size, channels and samples.
    samples: bool,
    maxval: bool,
}

/// The containers every frame is written in, and what each must give back of `frame`.
fn containers(frame: &Frame, quality: u8, compression: Option<u8>) -> Vec<(Container, Kept)> {
    let float = frame.depth() == Depth::F32;
    let gray = frame.channels == Channels::Gray;
    let all = Kept { samples: true, maxval: true };
    let samples = Kept { samples: true, maxval: false };
    let none = Kept { samples: false, maxval: false };
    vec![
        (Container::Pnm, all),
        (Container::Pgm, all),
        // A gray frame becomes RGB.
        (Container::Ppm, if gray { none } else { all }),
        (Container::Pam, all),
        (Container::Png { compression }, all),
        // TIFF and NPY record no maxval.
        (Container::Tiff, samples),
        (Container::Npy, samples),
        // Integer samples become floats.
        (Container::Pfm, if float { all } else { none }),
        // Raw frames are read back as gray 8- or 16-bit; they keep no maxval.
        (Container::Raw, if gray && !float { samples } else { none }),
        (Container::Jpeg { quality }, none),
    ]
}

/// A frame's size, channels and samples, as one word.
pub(crate) fn samples_digest(frame: &Frame) -> u64 {
    let mut d = Digest::new();
    d.word(frame.width as u64);
    d.word(frame.height as u64);
    d.word(frame.channels.count() as u64);
    match &frame.pixels {
        Pixels::U8(v) => d.bytes(v),
        Pixels::U16(v) => v.iter().for_each(|&s| d.word(s as u64)),
        Pixels::F32(v) => v.iter().for_each(|&s| d.word(s.to_bits() as u64)),
    }
    d.finish()
}

fn finding(kind: FindingKind, container: Container, what: &str, detail: String) -> Finding {
    Finding { kind, signature: format!("{} in {} {what}", kind.name(), container.name()), detail }
}

/// Writes `frame` in `container` and reads it back; `Ok(true)` when it was written.
fn round_trip(
    frame: &Frame,
    container: Container,
    kept: Kept,
    max_pixels: u64,
    digest: &mut Digest,
) -> Result<bool, Finding> {
    let about = format!(
        "a {}x{} {} {} frame (maxval {})",
        frame.width,
        frame.height,
        frame.depth().name(),
        frame.channels.name(),
        frame.maxval
    );
    let meter = HeapMeter::start();
    let written = guarded(|| {
        let mut writer = FrameWriter::new(Vec::new(), WriteOptions { container: Some(container) });
        writer.write(1, frame).map(|()| std::mem::take(writer.get_mut()))
    })
    .map_err(|note| {
        finding(
            FindingKind::Panic,
            container,
            "writer",
            format!("writing {about}: {note}").replace('\n', " "),
        )
    })?;
    let peak = meter.peak();
    let bound = writer_bound(frame);
    if peak > bound {
        let detail =
            format!("writing {about} held {peak} bytes, over the bound of {bound} (16 a sample + 1 MiB)");
        return Err(finding(FindingKind::Alloc, container, "writer", detail));
    }
    let Ok(bytes) = written else { return Ok(false) };
    let raw = (container == Container::Raw).then(|| RawSpec {
        width: frame.width,
        height: frame.height,
        depth: frame.depth(),
    });
    if raw.is_some() && frame.depth() == Depth::F32 {
        // `--raw` reads 8- and 16-bit samples only: float raw is written for other programs.
        return Ok(true);
    }
    let options = ReadOptions { raw, max_pixels, gray: false };
    let meter = HeapMeter::start();
    let back = guarded(|| FrameReader::new(&bytes[..], options).next_frame()).map_err(|note| {
        let detail = format!("reading back {about}: {note}").replace('\n', " ");
        finding(FindingKind::Panic, container, "read back", detail)
    })?;
    let (peak, bound) = (meter.peak(), allocation_bound(max_pixels, bytes.len()));
    if peak > bound {
        let detail = format!(
            "reading back {about} ({} bytes) held {peak} bytes, over the bound of {bound}",
            bytes.len()
        );
        return Err(finding(FindingKind::Alloc, container, "read back", detail));
    }
    let back = match back {
        Ok(Some(back)) => back,
        other => {
            let got = match other {
                Ok(_) => "no frame".to_owned(),
                Err(e) => format!("'{}'", e.message),
            };
            let detail =
                format!("{about} written as {} bytes read back as {got}", bytes.len()).replace('\n', " ");
            return Err(finding(FindingKind::Mismatch, container, "round trip", detail));
        }
    };
    let lost = lost(frame, &back, kept);
    if let Some(lost) = lost {
        let detail = format!("{about} came back as {lost}");
        return Err(finding(FindingKind::Mismatch, container, "round trip", detail));
    }
    digest.word(samples_digest(&back));
    Ok(true)
}

/// What of `frame` that its container keeps (`kept`) came `back` otherwise, if anything.
fn lost(frame: &Frame, back: &Frame, kept: Kept) -> Option<String> {
    if (back.width, back.height) != (frame.width, frame.height) {
        Some(format!("{}x{}", back.width, back.height))
    } else if kept.samples && samples_digest(back) != samples_digest(frame) {
        Some(format!(
            "other samples ({} {}, maxval {})",
            back.depth().name(),
            back.channels.name(),
            back.maxval
        ))
    } else if kept.maxval && back.maxval != frame.maxval {
        Some(format!("maxval {}", back.maxval))
    } else {
        None
    }
}

/// Reads `input`'s first frames and writes each back in every container, as the module says.
pub fn check(input: &Input, limits: &Limits) -> Result<Checked, Finding> {
    let max_pixels = limits.max_pixels_for(input);
    let frames = guarded(|| {
        let mut reader = FrameReader::new(&input.bytes[..], input.options(max_pixels, false));
        let mut frames = Vec::new();
        while frames.len() < FRAMES {
            match reader.next_frame() {
                Ok(Some(frame)) => frames.push(frame),
                _ => break,
            }
        }
        frames
    })
    // The reader's own panics are the reader target's to find.
    .unwrap_or_default();
    // JPEG's quality and PNG's compression by the input, so a replay writes the same.
    let quality = (input.fingerprint() % 100) as u8 + 1;
    let compression = (input.fingerprint() / 100 % 11).checked_sub(1).map(|c| c as u8);
    let mut digest = Digest::new();
    let mut shape = Digest::new();
    for frame in &frames {
        for (container, kept) in containers(frame, quality, compression) {
            let written = round_trip(frame, container, kept, max_pixels, &mut digest)?;
            shape.word(written as u64);
        }
        shape.bytes(frame.depth().name().as_bytes());
        shape.bytes(frame.channels.name().as_bytes());
    }
    shape.word(frames.len() as u64);
    Ok(Checked {
        shape: shape.finish(),
        text: format!("{} frame(s) written back, digest {:016x}", frames.len(), digest.finish()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gray(maxval: u16, samples: Vec<u16>) -> Frame {
        Frame::new(samples.len(), 1, maxval, Pixels::U16(samples.into()))
    }

    #[test]
    fn a_frame_comes_back_from_every_lossless_container() {
        let input = Input::described(b"P5 3 1 200\n\x01\x02\xc8P6 1 1 7\n\x01\x02\x07".to_vec());
        let checked = check(&input, &Limits::standard()).unwrap();
        assert!(checked.text.starts_with("2 frame(s)"), "{checked}");
    }

    /// A container that gives other samples, or another maxval where it keeps one, is a
    /// finding: planted losses are caught.
    #[test]
    fn samples_or_maxval_lost_on_the_way_are_a_finding() {
        let frame = gray(1000, vec![1, 1000]);
        let all = Kept { samples: true, maxval: true };
        assert_eq!(lost(&frame, &frame, all), None);
        let other = gray(1000, vec![1, 999]);
        assert!(lost(&frame, &other, all).unwrap().starts_with("other samples"));
        assert_eq!(lost(&frame, &other, Kept { samples: false, maxval: true }), None);
        assert_eq!(lost(&frame, &gray(65535, vec![1, 1000]), all).unwrap(), "maxval 65535");
        assert_eq!(
            lost(&frame, &gray(1000, vec![1]), Kept { samples: false, maxval: false }).unwrap(),
            "1x1"
        );
        let mut digest = Digest::new();
        assert!(
            round_trip(&frame, Container::Png { compression: Some(9) }, all, 1 << 16, &mut digest).unwrap()
        );
        let rgb = Frame { channels: Channels::Rgb, width: 1, ..frame };
        assert!(!round_trip(&rgb, Container::Pgm, all, 1 << 16, &mut digest).unwrap(), "PGM refuses RGB");
    }
}
