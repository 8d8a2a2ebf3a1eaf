//! The side files' target: the mutated input as the file an option names beside the inputs,
//! read by `histopipe_cli::side` as the tools read it.
//!
//! The input is written to a file of this worker's, then read as a table (`equalize --table`:
//! `side::read_bytes` under its 4 MiB cap, and under a cap shorter than the file), as a mask or a
//! reference (`side::first_frame`, named by the stream, in colour and as gray), and as a picture to
//! draw on (`--draw`: its bytes under the cap of a `--max-pixels` image, then
//! `histopipe_frame::read_rgb8`). None may panic; each keeps to its memory bound (a cap's bytes,
//! the reader's bound, the reader's bound and the RGB picture); a capped read gives the file's
//! bytes or refuses them as too long, as the cap says; and a side file's first frame is the one the
//! reader gives from the same bytes in memory. equalize's table parser (`src/equalize/table.rs` of
//! the tools' package) is not reachable from here; the tools' target reaches it
//! (`equalize --table`).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use histopipe_cli::side;
use histopipe_frame::{read_gather_bound, read_rgb8, Frame, FrameReader, Origin, ReadOptions};

use crate::alloc::HeapMeter;
use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Checked;
use crate::panics::{guarded, PanicNote};
use crate::target::{allocation_bound, message_shape, Limits};

/// `equalize --table`'s cap: 65,536 rows of 64 bytes.
pub const TABLE_CAP: u64 = 65_536 * 64;

/// Room for the file, its `BufReader` and an error message beyond a read's own bound.
const SLACK: u64 = 64 << 10;

thread_local! {
    /// This worker's side file.
    static FILE: PathBuf = std::env::temp_dir().join(format!(
        "histopipe-fuzz-side-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ).replace(['(', ')'], ""));
}

/// A panic caught in `what`, as a finding named by the file it came from.
pub(crate) fn panic_finding(what: &str, note: PanicNote) -> Finding {
    let file = note.location.rsplit_once(':').map_or(note.location.as_str(), |(file, _)| file);
    Finding {
        kind: FindingKind::Panic,
        signature: format!("panic in {file} ({what})"),
        detail: format!("{what}: {note}").replace('\n', " "),
    }
}

fn over(what: &str, peak: u64, bound: u64, how: &str) -> Result<(), Finding> {
    if peak <= bound {
        return Ok(());
    }
    Err(Finding {
        kind: FindingKind::Alloc,
        signature: format!("alloc in {what}"),
        detail: format!("{what} held {peak} bytes, over the bound of {bound} ({how})"),
    })
}

/// Reads the bytes of `path` under `cap` and checks what came back against `bytes`.
fn capped(path: &Path, bytes: &[u8], cap: u64, d: &mut Digest) -> Result<Option<Vec<u8>>, Finding> {
    let what = "side::read_bytes";
    let meter = HeapMeter::start();
    let read = guarded(|| side::read_bytes(path, Origin::Named, cap, "a test's cap"))
        .map_err(|note| panic_finding(what, note))?;
    over(what, meter.peak(), cap + SLACK, "its cap and 64 KiB")?;
    let fits = bytes.len() as u64 <= cap;
    d.word(read.is_ok() as u64);
    match read {
        Ok(got) if fits && got == bytes => Ok(Some(got)),
        Err(e) if !fits && e.starts_with("is longer than") => Ok(None),
        other => Err(Finding {
            kind: FindingKind::Mismatch,
            signature: format!("mismatch in {what}"),
            detail: format!(
                "a file of {} bytes read under a cap of {cap}: {}",
                bytes.len(),
                match other {
                    Ok(got) => format!("{} bytes", got.len()),
                    Err(e) => e,
                }
            ),
        }),
    }
}

/// A first frame's size, maxval, channels and samples, as one word: what a side file's first frame
/// and the stream reader's must agree on.
fn frame_digest(frame: &Frame) -> u64 {
    let mut d = Digest::new();
    d.word(frame.width as u64);
    d.word(frame.height as u64);
    d.word(frame.maxval as u64);
    d.word(frame.channels.count() as u64);
    d.word(crate::writers::samples_digest(frame));
    d.finish()
}

/// The first frame of `source` as a digest, or its error.
fn first<R: BufRead>(source: R, options: ReadOptions) -> Result<u64, String> {
    match FrameReader::new(source, options).next_frame() {
        Ok(Some(frame)) => Ok(frame_digest(&frame)),
        Ok(None) => Err("no image".into()),
        Err(e) => Err(e.message),
    }
}

fn check_file(path: &Path, input: &Input, limits: &Limits) -> Result<Checked, Finding> {
    let bytes = &input.bytes[..];
    let max_pixels = limits.max_pixels_for(input);
    let mut d = Digest::new();
    capped(path, bytes, TABLE_CAP, &mut d)?;
    capped(path, bytes, bytes.len().saturating_sub(1) as u64, &mut d)?;
    for gray in [false, true] {
        let what = "side::first_frame";
        let options = ReadOptions { raw: None, max_pixels, gray };
        let meter = HeapMeter::start();
        let frame = guarded(|| side::first_frame(path, Origin::Stream, options).map(|f| frame_digest(&f)))
            .map_err(|note| panic_finding(what, note))?;
        over(
            what,
            meter.peak(),
            allocation_bound(max_pixels, bytes.len()) + SLACK,
            "the reader's and 64 KiB",
        )?;
        let in_memory = guarded(|| first(bytes, options)).unwrap_or(Err("panicked".into()));
        if frame != in_memory {
            return Err(Finding {
                kind: FindingKind::Mismatch,
                signature: format!("mismatch in {what}"),
                detail: format!("gray {gray}: from the file {frame:?}, from memory {in_memory:?}")
                    .replace('\n', " "),
            });
        }
        match &frame {
            Ok(_) => d.word(1),
            Err(e) => d.bytes(&message_shape(e)),
        }
    }
    let what = "read_rgb8";
    if let Some(picture) = capped(path, bytes, read_gather_bound(max_pixels), &mut d)? {
        let meter = HeapMeter::start();
        let rgb = guarded(|| read_rgb8(&picture, max_pixels)).map_err(|note| panic_finding(what, note))?;
        let image = rgb.as_ref().map_or(0, |(w, h, _)| 3 * (w * h) as u64);
        let how = "the reader's, the RGB picture and 64 KiB";
        over(what, meter.peak(), allocation_bound(max_pixels, bytes.len()) + image + SLACK, how)?;
        if let Ok((w, h, v)) = &rgb {
            if (w * h) as u64 > max_pixels || v.len() != 3 * w * h {
                return Err(Finding {
                    kind: FindingKind::Mismatch,
                    signature: format!("mismatch in {what}"),
                    detail: format!("a {w}x{h} picture of {} bytes at --max-pixels {max_pixels}", v.len()),
                });
            }
        }
        match &rgb {
            Ok(_) => d.word(1),
            Err(e) => d.bytes(&message_shape(e)),
        }
    }
    let shape = d.finish();
    Ok(Checked { shape, text: format!("read as side files, shape {shape:016x}") })
}

/// Writes `input` to this worker's side file and reads it as the module says.
pub fn check(input: &Input, limits: &Limits) -> Result<Checked, Finding> {
    FILE.with(|path| {
        std::fs::write(path, &input.bytes).map_err(|e| Finding {
            kind: FindingKind::Crash,
            signature: "crash: cannot write the side file".into(),
            detail: format!("{}: {e}", path.display()),
        })?;
        let checked = check_file(path, input, limits);
        let _ = std::fs::remove_file(path);
        checked
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_reads_as_every_kind_of_side_file() {
        let input = Input::described(b"P6 2 1 255\n\x01\x02\x03\x04\x05\x06".to_vec());
        assert!(check(&input, &Limits::standard()).is_ok());
        assert!(check(&Input::described(b"level,mapped\n0,0\n".to_vec()), &Limits::standard()).is_ok());
    }

    /// A read over its cap, or one that gives other bytes than the file's, is a finding.
    #[test]
    fn a_cap_not_kept_is_caught() {
        let mut d = Digest::new();
        let path = std::env::temp_dir().join(format!("histopipe-fuzz-side-test-{}", std::process::id()));
        std::fs::write(&path, b"12345").unwrap();
        assert!(capped(&path, b"12345", 5, &mut d).unwrap().is_some());
        assert!(capped(&path, b"12345", 4, &mut d).unwrap().is_none());
        let f = capped(&path, b"12346", 5, &mut d).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(f.kind, FindingKind::Mismatch, "{f}");
        assert!(over("x", 11, 10, "a test").is_err());
    }
}
