//! PFM, the Portable Float Map: `PF` (RGB) or `Pf` (gray), whitespace, the width, whitespace, the
//! height, whitespace, a scale, one whitespace byte, then float32 samples, rows stored bottom row
//! first. The scale's sign is the byte order (negative: little-endian, positive: big-endian); its
//! magnitude is a factor the format leaves to the reader, ignored here. A scale of zero, NaN or
//! one that is not a decimal number says no byte order and is refused. The header has no comments,
//! and each of its fields is at most [`MAX_FIELD`] bytes long.

use super::{f32_be, f32_le, samples, shown, want, Declared, Decoded, Limits, Raster};
use crate::decode::source::Source;
use crate::FrameError;

/// The longest header field kept: digits of a size, or a scale such as `-1.000000e+00`.
const MAX_FIELD: usize = 32;

/// What the walk over one PFM found.
#[derive(Debug)]
pub(crate) struct PfmWalk {
    width: usize,
    height: usize,
    channels: usize,
    little_endian: bool,
    /// Where the samples start.
    data_at: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Reads one header field after whitespace, from `*at`; leaves `*at` at the byte after it.
fn field<'a>(
    src: &'a mut impl Source,
    at: &mut usize,
    frame: usize,
    what: &str,
) -> Result<&'a [u8], FrameError> {
    let mut spaces = 0;
    loop {
        want(src, *at + 1, frame, "PFM header")?;
        if !is_space(src.got()[*at]) {
            break;
        }
        *at += 1;
        spaces += 1;
        if spaces > MAX_FIELD {
            return Err(FrameError::invalid(
                frame,
                format!("bad PFM header: too much space before its {what}"),
            ));
        }
    }
    if spaces == 0 {
        let b = shown(&src.got()[*at..*at + 1]);
        return Err(FrameError::invalid(
            frame,
            format!("bad PFM header: \"{b}\" where space comes before its {what}"),
        ));
    }
    let start = *at;
    loop {
        want(src, *at + 1, frame, "PFM header")?;
        if is_space(src.got()[*at]) {
            break;
        }
        *at += 1;
        if *at - start > MAX_FIELD {
            let f = shown(&src.got()[start..*at]);
            return Err(FrameError::invalid(
                frame,
                format!("bad PFM header: its {what} \"{f}\" is too long"),
            ));
        }
    }
    Ok(&src.got()[start..*at])
}

fn size(text: &[u8], frame: usize, what: &str) -> Result<u64, FrameError> {
    let bad = || FrameError::invalid(frame, format!("bad PFM header: {what} \"{}\"", shown(text)));
    if !text.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    match std::str::from_utf8(text).ok().and_then(|t| t.parse::<u64>().ok()) {
        Some(0) => Err(FrameError::invalid(frame, format!("bad PFM header: {what} 0"))),
        Some(n) => Ok(n),
        None => Err(bad()),
    }
}

/// Takes one PFM: its header, then, once its size fits the limits, its samples.
pub(crate) fn walk(src: &mut impl Source, limits: &Limits) -> Result<PfmWalk, FrameError> {
    let frame = limits.frame;
    want(src, 2, frame, "PFM header")?;
    let channels = if src.got()[1] == b'F' { 3 } else { 1 };
    let mut at = 2;
    let width = size(field(src, &mut at, frame, "width")?, frame, "width")?;
    let height = size(field(src, &mut at, frame, "height")?, frame, "height")?;
    let scale = field(src, &mut at, frame, "scale")?;
    let value = std::str::from_utf8(scale).ok().and_then(|t| t.parse::<f64>().ok());
    let little_endian = match value {
        Some(v) if v < 0.0 => true,
        Some(v) if v > 0.0 => false,
        _ => {
            let s = shown(scale);
            return Err(FrameError::invalid(
                frame,
                format!("bad PFM header: scale \"{s}\" (its sign is the byte order)"),
            ));
        }
    };
    // Exactly one whitespace byte ends the header: the samples may start with any byte.
    let data_at = at + 1;
    let data = width.saturating_mul(height).saturating_mul(channels * 4);
    let declared = Declared {
        format: "PFM",
        width,
        height,
        channels,
        sample_bytes: 4,
        image_len: (data_at as u64).saturating_add(data),
    };
    let len = limits.check(&declared)?;
    want(src, len, frame, "PFM samples")?;
    Ok(PfmWalk {
        width: width as usize,
        height: height as usize,
        channels: channels as usize,
        little_endian,
        data_at,
    })
}

/// Decodes a walked PFM, top row first.
pub(crate) fn decode(bytes: &[u8], walk: &PfmWalk, frame: usize) -> Result<Decoded, FrameError> {
    let row = walk.width * walk.channels * 4;
    let data = bytes.get(walk.data_at..walk.data_at + row * walk.height);
    let data = data.ok_or_else(|| FrameError::invalid(frame, "truncated PFM samples"))?;
    let read = if walk.little_endian { f32_le } else { f32_be };
    let mut out = Vec::with_capacity(walk.width * walk.height * walk.channels);
    for r in data.chunks_exact(row).rev() {
        out.extend(samples(r, 4, read));
    }
    let (width, height, channels) = (walk.width, walk.height, walk.channels);
    Ok(Decoded { width, height, channels, raster: Raster::F32(out), maxval: 1 })
}

/// A PFM of `width` x `height` pixels of `channels` (1: `Pf`, 3: `PF`) float samples given
/// interleaved, top row first: little-endian (scale -1.0), rows written bottom row first.
///
/// # Panics
/// When `channels` is not 1 or 3, or `samples` does not hold `width * height * channels` values.
///
/// # Example
/// ```
/// let pfm = histopipe_frame::encode_pfm(2, 1, 1, &[0.5, 2.0]);
/// assert_eq!(&pfm[..11], b"Pf\n2 1\n-1\n\0");
/// ```
pub fn encode_pfm(width: usize, height: usize, channels: usize, samples: &[f32]) -> Vec<u8> {
    assert!(matches!(channels, 1 | 3), "a PFM has 1 or 3 channels, not {channels}");
    assert_eq!(samples.len(), width * height * channels, "samples of a {width}x{height}x{channels} PFM");
    let magic = if channels == 3 { "PF" } else { "Pf" };
    let mut out = format!("{magic}\n{width} {height}\n-1\n").into_bytes();
    out.reserve(samples.len() * 4);
    let row = width * channels;
    if row > 0 {
        for r in samples.chunks_exact(row).rev() {
            out.extend_from_slice(&crate::samples::le_bytes(r));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{decode_float, read_float};
    use super::*;
    use crate::FrameErrorKind;

    fn bits(r: &Raster) -> Vec<u32> {
        match r {
            Raster::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            other => panic!("not float: {other:?}"),
        }
    }

    #[test]
    fn round_trips_keep_every_bit_and_flip_rows() {
        let nan = f32::from_bits(0x7fc0_1234);
        let values = [1.0, -0.0, nan, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE / 2.0];
        let pfm = encode_pfm(2, 3, 1, &values);
        // The bottom row, (-inf, denormal), comes first.
        assert_eq!(&pfm[10..14], &f32::NEG_INFINITY.to_le_bytes());
        let (d, taken) = decode_float(&pfm, 1, 100).unwrap();
        assert_eq!(taken, pfm.len());
        assert_eq!((d.width, d.height, d.channels), (2, 3, 1));
        assert_eq!(bits(&d.raster), values.map(f32::to_bits));

        let rgb: Vec<f32> = (0..12).map(|i| i as f32 / 4.0).collect();
        let (d, _) = decode_float(&encode_pfm(2, 2, 3, &rgb), 1, 100).unwrap();
        assert_eq!((d.channels, d.raster), (3, Raster::F32(rgb)));
    }

    #[test]
    fn big_endian_and_loose_whitespace_are_read() {
        let mut pfm = b"Pf \t2\r\n1  \n 3.5e0\n".to_vec();
        pfm.extend(1.5f32.to_be_bytes());
        pfm.extend((-2.0f32).to_be_bytes());
        let (d, taken) = decode_float(&pfm, 1, 100).unwrap();
        assert_eq!(taken, pfm.len());
        assert_eq!(d.raster, Raster::F32(vec![1.5, -2.0]));
        // The header ends with one space: a sample may start with a whitespace byte.
        let mut pfm = b"Pf 1 1 -1 ".to_vec();
        pfm.extend(f32::from_bits(0x2020_2020).to_le_bytes());
        assert_eq!(bits(&decode_float(&pfm, 1, 100).unwrap().0.raster), [0x2020_2020]);
    }

    #[test]
    fn a_file_written_by_opencv_is_read() {
        // tests/data/README.md: 3 rows of 4 RGB pixels, sample (r, x, c) = r - x / 8 + c / 2, with
        // NaN at (1, 2, 0) and -inf at (2, 3, 2); OpenCV's BGR written as RGB.
        let (d, _) = decode_float(include_bytes!("../../tests/data/opencv_rgb.pfm"), 1, 100).unwrap();
        assert_eq!((d.width, d.height, d.channels), (4, 3, 3));
        let Raster::F32(v) = d.raster else { panic!() };
        for (i, got) in v.iter().enumerate() {
            let (r, x, c) = (i / 12, i / 3 % 4, i % 3);
            let want = match (r, x, c) {
                (1, 2, 0) => f32::NAN,
                (2, 3, 2) => f32::NEG_INFINITY,
                _ => r as f32 - x as f32 / 8.0 + c as f32 / 2.0,
            };
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "sample {i}");
        }
    }

    #[test]
    fn hostile_headers_are_refused_before_allocation() {
        let e = decode_float(b"PF\n4000000000 4000000000\n-1\n", 1, 1 << 20).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
        let e = decode_float(b"PF\n18446744073709551615 3\n-1\n", 1, u64::MAX).unwrap_err();
        assert!(e.message.contains("too large") || e.kind == FrameErrorKind::TooLarge, "{e}");
        // Declared within the limits, but the samples are not there: the reader gathers only what
        // came.
        let mut input = &b"Pf\n1000 1000\n-1\n\0\0\0\0"[..];
        let e = read_float(&mut input, 1, 1 << 20).unwrap_err();
        assert_eq!(e.message, "truncated PFM samples");
        for (bad, message) in [
            (&b"Pf\n0 1\n-1\n"[..], "bad PFM header: width 0"),
            (b"Pf\n-1 1\n-1\n", "bad PFM header: width \"-1\""),
            (b"Pf\n1 1\n0\n\0\0\0\0", "bad PFM header: scale \"0\" (its sign is the byte order)"),
            (b"Pf\n1 1\nnan\n\0\0\0\0", "bad PFM header: scale \"nan\" (its sign is the byte order)"),
            (b"Pf1 1 -1\n", "bad PFM header: \"1\" where space comes before its width"),
            (b"Pf 1 1", "truncated PFM header"),
            (b"Pf 1 1 -1", "truncated PFM header"),
            (b"Pf 1 1 -1 \0\0\0", "truncated PFM samples"),
        ] {
            assert_eq!(decode_float(bad, 1, 100).unwrap_err().message, message);
        }
        let long = [&b"Pf 1 "[..], &[b'1'; 40], b" -1\n"].concat();
        let e = decode_float(&long, 1, 100).unwrap_err();
        assert!(e.message.starts_with("bad PFM header: its height \"1111"), "{e}");
        let spaces = [&b"Pf"[..], &[b' '; 40]].concat();
        assert_eq!(
            decode_float(&spaces, 1, 100).unwrap_err().message,
            "bad PFM header: too much space before its width"
        );
    }
}
