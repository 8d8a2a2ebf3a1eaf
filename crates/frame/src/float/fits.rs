//! FITS: the image of the primary HDU. A header of 80-byte cards in blocks of 2880 bytes, ending
//! with an `END` card; then the data, big-endian, padded to a multiple of 2880 bytes. The image
//! takes the header's blocks and the padded data from the stream; padding missing at the end of
//! the input is forgiven, as astropy forgives it; what follows the primary HDU (extensions) is
//! read as the next image of the stream, and refused there unless it is itself a FITS file.
//!
//! The header is parsed here rather than with the `fitsrs` crate (CDS, pure Rust): `fitsrs` reads
//! from an `io::Read` it drives itself, allocates the data as NAXISn say before any budget could
//! look at them, and brings async runtimes, compression and WCS along for what is a few cards.
//! Read here: `SIMPLE = T` as the first card; `BITPIX`; `NAXIS` 2 or 3; `NAXIS1` (the width, the
//! fastest axis), `NAXIS2` (the height), `NAXIS3` (channels, 1 to 4, stored as planes and
//! interleaved here); `BZERO`, `BSCALE` and `BLANK`. Other cards are not read. A header has at most
//! [`MAX_HEADER_BLOCKS`] blocks.
//!
//! Rows keep the file's order, as astropy's `fits.getdata` gives them: the first row in the file
//! is row 0. Samples become, with BZERO and BSCALE (0 and 1 when absent) as astropy applies them:
//! - BITPIX 8 with BZERO 0, BSCALE 1: 8-bit samples; BITPIX 16 with BZERO 32768, BSCALE 1:
//!   16-bit unsigned samples (FITS' convention for them);
//! - any other integer image: float32 physical values BZERO + BSCALE · v (signed 16-bit samples
//!   without BZERO are their own values, every one exact in float32); astropy's arithmetic
//!   (float32 for BITPIX 8 and 16 and for float images, float64 for BITPIX 32, rounded to float32),
//!   and a sample equal to BLANK becomes NaN;
//! - BITPIX -32: float32, bit for bit when unscaled; BITPIX -64: float64 rounded to float32
//!   (nearest, ties to even; then scaled in float32 as astropy does).

use super::{shown, want, want_up_to, Declared, Decoded, Limits, Raster};
use crate::decode::source::Source;
use crate::FrameError;

const BLOCK: usize = 2880;
const CARD: usize = 80;

/// The most header blocks read: 9216 cards.
const MAX_HEADER_BLOCKS: usize = 256;

/// What the samples become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    U8,
    U16,
    F32,
}

/// What the walk over one FITS found.
#[derive(Debug)]
pub(crate) struct FitsWalk {
    width: usize,
    height: usize,
    channels: usize,
    bitpix: i64,
    bzero: f64,
    bscale: f64,
    blank: Option<i64>,
    kind: Kind,
    data_at: usize,
}

/// The structural cards of a header, as read.
#[derive(Default)]
struct Cards {
    bitpix: Option<i64>,
    naxis: Option<i64>,
    axes: [Option<i64>; 3],
    bzero: Option<f64>,
    bscale: Option<f64>,
    blank: Option<i64>,
}

fn integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.strip_prefix('+').unwrap_or(text).parse().ok()
}

fn real(text: &str) -> Option<f64> {
    // FITS writes a double's exponent with D as Fortran does.
    let ok = !text.is_empty()
        && text.len() <= 70
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'E' | b'e' | b'D' | b'd'));
    let v: f64 = text.replace(['D', 'd'], "E").parse().ok().filter(|_| ok)?;
    v.is_finite().then_some(v)
}

impl Cards {
    /// Reads one card; true at `END`.
    fn read(&mut self, card: &[u8], first: bool, frame: usize) -> Result<bool, FrameError> {
        let bad = |what: String| FrameError::invalid(frame, format!("bad FITS header: {what}"));
        let keyword = card[..8].trim_ascii_end();
        if first && keyword != b"SIMPLE" {
            return Err(bad(format!("its first card is \"{}\", not SIMPLE", shown(card.trim_ascii_end()))));
        }
        if !first && keyword == b"SIMPLE" {
            return Err(bad("SIMPLE twice".into()));
        }
        if keyword == b"END" {
            return Ok(true);
        }
        let structural = matches!(
            keyword,
            b"SIMPLE"
                | b"BITPIX"
                | b"NAXIS"
                | b"NAXIS1"
                | b"NAXIS2"
                | b"NAXIS3"
                | b"BZERO"
                | b"BSCALE"
                | b"BLANK"
        );
        if !structural {
            return Ok(false);
        }
        let name = std::str::from_utf8(keyword).unwrap_or_default();
        // The value: after "= ", up to a comment.
        let value = card[8..].strip_prefix(b"= ").and_then(|v| std::str::from_utf8(v).ok());
        let value = value.map(|v| v.split('/').next().unwrap_or_default().trim());
        let value = value.ok_or_else(|| bad(format!("{name} has no value")))?;
        let wrong = || bad(format!("{name} = \"{}\"", shown(value.as_bytes())));
        let twice = match keyword {
            b"SIMPLE" => {
                if value != "T" {
                    return Err(bad(format!(
                        "SIMPLE = \"{}\": not a conforming file",
                        shown(value.as_bytes())
                    )));
                }
                false
            }
            b"BITPIX" => self.bitpix.replace(integer(value).ok_or_else(wrong)?).is_some(),
            b"NAXIS" => self.naxis.replace(integer(value).ok_or_else(wrong)?).is_some(),
            b"BZERO" => self.bzero.replace(real(value).ok_or_else(wrong)?).is_some(),
            b"BSCALE" => self.bscale.replace(real(value).ok_or_else(wrong)?).is_some(),
            b"BLANK" => self.blank.replace(integer(value).ok_or_else(wrong)?).is_some(),
            _ => {
                let axis = (keyword[5] - b'1') as usize;
                self.axes[axis].replace(integer(value).ok_or_else(wrong)?).is_some()
            }
        };
        if twice {
            return Err(bad(format!("{name} twice")));
        }
        Ok(false)
    }
}

/// Takes one FITS: its header blocks, then, once its image fits the limits, its padded data.
pub(crate) fn walk(src: &mut impl Source, limits: &Limits) -> Result<FitsWalk, FrameError> {
    let frame = limits.frame;
    let bad = |what: String| FrameError::invalid(frame, format!("bad FITS header: {what}"));
    let mut cards = Cards::default();
    let mut blocks = 0;
    loop {
        if blocks == MAX_HEADER_BLOCKS {
            return Err(bad(format!("no END card in its first {MAX_HEADER_BLOCKS} blocks")));
        }
        want(src, (blocks + 1) * BLOCK, frame, "FITS header")?;
        let block = &src.got()[blocks * BLOCK..(blocks + 1) * BLOCK];
        blocks += 1;
        let mut end = false;
        for (i, card) in block.chunks_exact(CARD).enumerate() {
            if cards.read(card, blocks == 1 && i == 0, frame)? {
                end = true;
                break;
            }
        }
        if end {
            break;
        }
    }
    let data_at = blocks * BLOCK;
    let bitpix = cards.bitpix.ok_or_else(|| bad("no BITPIX".into()))?;
    if !matches!(bitpix, 8 | 16 | 32 | -32 | -64) {
        return Err(bad(format!("BITPIX {bitpix} (8, 16, 32, -32 or -64)")));
    }
    let naxis = cards.naxis.ok_or_else(|| bad("no NAXIS".into()))?;
    match naxis {
        0 => return Err(bad("NAXIS 0: no image in its primary HDU".into())),
        2 | 3 => {}
        _ => return Err(bad(format!("NAXIS {naxis}: an image has 2 axes, or 3 with channels"))),
    }
    let mut axes = [1u64; 3];
    for (k, axis) in axes.iter_mut().enumerate().take(naxis as usize) {
        let n = cards.axes[k].ok_or_else(|| bad(format!("no NAXIS{}", k + 1)))?;
        if n < 1 {
            return Err(bad(format!("NAXIS{} {n}: an image has at least one pixel", k + 1)));
        }
        *axis = n as u64;
    }
    let [width, height, channels] = axes;
    if channels > 4 {
        return Err(bad(format!("NAXIS3 {channels}: at most 4 channels")));
    }
    let (bzero, bscale) = (cards.bzero.unwrap_or(0.0), cards.bscale.unwrap_or(1.0));
    let kind = match (bitpix, bzero, bscale) {
        (8, 0.0, 1.0) => Kind::U8,
        (16, 32768.0, 1.0) => Kind::U16,
        _ => Kind::F32,
    };
    let sample_bytes = match kind {
        Kind::U8 => 1,
        Kind::U16 => 2,
        Kind::F32 => 4,
    };
    let data =
        width.saturating_mul(height).saturating_mul(channels).saturating_mul(bitpix.unsigned_abs() / 8);
    let padded = data.div_ceil(BLOCK as u64).saturating_mul(BLOCK as u64);
    let declared = Declared {
        format: "FITS",
        width,
        height,
        channels,
        sample_bytes,
        image_len: (data_at as u64).saturating_add(padded),
    };
    let len = limits.check(&declared)?;
    want(src, data_at + data as usize, frame, "FITS data")?;
    want_up_to(src, len, frame)?;
    Ok(FitsWalk {
        width: width as usize,
        height: height as usize,
        channels: channels as usize,
        bitpix,
        bzero,
        bscale,
        blank: cards.blank,
        kind,
        data_at,
    })
}

/// The samples of planes `n` apart, interleaved: sample `ch` of pixel `p` is `read(ch * n + p)`.
fn interleave<T>(pixels: usize, channels: usize, read: impl Fn(usize) -> T) -> Vec<T> {
    (0..pixels * channels).map(|i| read(i % channels * pixels + i / channels)).collect()
}

/// Decodes a walked FITS primary image.
pub(crate) fn decode(bytes: &[u8], walk: &FitsWalk, frame: usize) -> Result<Decoded, FrameError> {
    let (pixels, c) = (walk.width * walk.height, walk.channels);
    let size = walk.bitpix.unsigned_abs() as usize / 8;
    let data = bytes.get(walk.data_at..walk.data_at + pixels * c * size);
    let data = data.ok_or_else(|| FrameError::invalid(frame, "truncated FITS data"))?;
    let at = |i: usize| &data[i * size..(i + 1) * size];
    let (scale, zero) = (walk.bscale, walk.bzero);
    let scaled = scale != 1.0 || zero != 0.0;
    // astropy's arithmetic: a product only when BSCALE is not 1, a sum only when BZERO is not 0.
    let in_f32 = |v: f32| {
        let v = if scale != 1.0 { v * scale as f32 } else { v };
        if zero != 0.0 {
            v + zero as f32
        } else {
            v
        }
    };
    let int = |b: &[u8]| -> i64 {
        match b.len() {
            1 => b[0] as i64,
            2 => i16::from_be_bytes([b[0], b[1]]) as i64,
            _ => i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64,
        }
    };
    let raster = match (walk.kind, walk.bitpix) {
        (Kind::U8, _) => Raster::U8(interleave(pixels, c, |i| data[i])),
        (Kind::U16, _) => Raster::U16(interleave(pixels, c, |i| (int(at(i)) + 32768) as u16)),
        (_, 8 | 16 | 32) => Raster::F32(interleave(pixels, c, |i| {
            let v = int(at(i));
            if walk.blank == Some(v) {
                f32::NAN
            } else if walk.bitpix == 32 {
                let v = v as f64;
                let v = if scale != 1.0 { v * scale } else { v };
                (if zero != 0.0 { v + zero } else { v }) as f32
            } else {
                in_f32(v as f32)
            }
        })),
        (_, -32) => Raster::F32(interleave(pixels, c, |i| {
            let b = at(i);
            let v = f32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            if scaled {
                in_f32(v)
            } else {
                v
            }
        })),
        _ => Raster::F32(interleave(pixels, c, |i| {
            let b = at(i);
            let v = f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32;
            if scaled {
                in_f32(v)
            } else {
                v
            }
        })),
    };
    let maxval = match raster {
        Raster::U8(_) => 255,
        Raster::U16(_) => 65535,
        Raster::F32(_) => 1,
    };
    Ok(Decoded { width: walk.width, height: walk.height, channels: c, raster, maxval })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_float, read_float};
    use super::*;
    use crate::FrameErrorKind;

    /// A header of these cards, padded to its blocks.
    fn header(cards: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for card in cards.iter().chain(&["END"]) {
            out.extend(format!("{card:<80}").bytes());
        }
        out.resize(out.len().div_ceil(BLOCK) * BLOCK, b' ');
        out
    }

    fn image(cards: &[&str], data: &[u8]) -> Vec<u8> {
        let mut out = header(cards);
        out.extend(data);
        out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
        out
    }

    fn error(bytes: &[u8]) -> String {
        decode_float(bytes, 1, 1 << 20).unwrap_err().message
    }

    const SIMPLE: &str = "SIMPLE  =                    T";

    #[test]
    fn files_astropy_wrote_read_as_fits_getdata_gives_them() {
        // Each FITS beside the .npy of what astropy's getdata gives for it (interleaved, as
        // float32 where it is not 8- or 16-bit unsigned): tests/data/README.md.
        for name in
            ["u8", "u16", "i16_scaled", "i32_scaled_blank", "f32_nan", "f32_scaled", "f64", "rgb_cube"]
        {
            let fits =
                std::fs::read(format!("{}/tests/data/fits_{name}.fits", env!("CARGO_MANIFEST_DIR"))).unwrap();
            let want =
                std::fs::read(format!("{}/tests/data/fits_{name}.npy", env!("CARGO_MANIFEST_DIR"))).unwrap();
            let (got, taken) = decode_float(&fits, 1, 1 << 20).unwrap();
            assert_eq!(taken, fits.len(), "{name}");
            let (want, _) = decode_float(&want, 1, 1 << 20).unwrap();
            let bits = |d: &Decoded| match &d.raster {
                Raster::F32(v) => Raster::U16(
                    v.iter().flat_map(|x| [x.to_bits() as u16, (x.to_bits() >> 16) as u16]).collect(),
                ),
                other => other.clone(),
            };
            assert_eq!(
                (got.width, got.height, got.channels, bits(&got)),
                (want.width, want.height, want.channels, bits(&want)),
                "{name}"
            );
        }
    }

    /// BITPIX 16 is signed: unscaled, each sample is the float32 of its value (all exact), BLANK
    /// NaN; with BZERO 32768 (FITS' unsigned convention) the samples stay 16-bit unsigned.
    #[test]
    fn signed_16_bit_samples_are_their_values_and_bzero_32768_is_unsigned() {
        let values = [-32768i16, -5, 0, 7, 32767, -1];
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let axes = [SIMPLE, "BITPIX  = 16", "NAXIS   = 2", "NAXIS1  = 3", "NAXIS2  = 2"];
        let (d, _) = decode_float(&image(&axes, &data), 1, 100).unwrap();
        assert_eq!((d.width, d.height, d.maxval), (3, 2, 1));
        assert_eq!(d.raster, Raster::F32(values.iter().map(|&v| v as f32).collect()));
        let (d, _) = decode_float(&image(&[&axes[..], &["BLANK   = -5"]].concat(), &data), 1, 100).unwrap();
        let Raster::F32(got) = d.raster else { panic!() };
        assert!(got[1].is_nan() && got.iter().filter(|v| v.is_nan()).count() == 1, "{got:?}");
        let unsigned = [&axes[..], &["BZERO   = 32768", "BSCALE  = 1"]].concat();
        let (d, _) = decode_float(&image(&unsigned, &data), 1, 100).unwrap();
        assert_eq!((d.raster, d.maxval), (Raster::U16(vec![0, 32763, 32768, 32775, 65535, 32767]), 65535));
    }

    #[test]
    fn rows_keep_file_order_and_planes_are_interleaved() {
        let cards = [
            SIMPLE,
            "BITPIX  =                    8",
            "NAXIS   = 3",
            "NAXIS1  = 2",
            "NAXIS2  = 1",
            "NAXIS3 = 3",
        ];
        let bad = image(&cards, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(error(&bad), "bad FITS header: no NAXIS3");
        let cards = [
            SIMPLE,
            "BITPIX  =                    8",
            "NAXIS   = 3",
            "NAXIS1  = 2",
            "NAXIS2  = 2",
            "NAXIS3  = 2 / planes",
        ];
        let (d, _) = decode_float(&image(&cards, &[1, 2, 3, 4, 10, 20, 30, 40]), 1, 100).unwrap();
        assert_eq!((d.width, d.height, d.channels), (2, 2, 2));
        assert_eq!(d.raster, Raster::U8(vec![1, 10, 2, 20, 3, 30, 4, 40]));
    }

    #[test]
    fn float_samples_keep_their_bits() {
        let cards = [SIMPLE, "BITPIX  = -32", "NAXIS   = 2", "NAXIS1  = 3", "NAXIS2  = 1"];
        let v = [f32::from_bits(0x7fa0_0001), f32::NEG_INFINITY, -0.0];
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
        let (d, _) = decode_float(&image(&cards, &data), 1, 100).unwrap();
        let Raster::F32(got) = d.raster else { panic!() };
        assert_eq!(got.map_bits(), v.map_bits());
    }

    trait Bits {
        fn map_bits(&self) -> Vec<u32>;
    }

    impl Bits for [f32] {
        fn map_bits(&self) -> Vec<u32> {
            self.iter().map(|x| x.to_bits()).collect()
        }
    }

    #[test]
    fn padding_cut_at_the_end_is_forgiven_and_images_follow_each_other() {
        let cards = [
            SIMPLE,
            "BITPIX  = 16",
            "NAXIS   = 2",
            "NAXIS1  = 2",
            "NAXIS2  = 1",
            "BZERO   = 32768",
            "BSCALE  = 1.0D0",
        ];
        let one = image(&cards, &[0x80, 0, 0x7f, 0xff]);
        let mut stream = one.clone();
        stream.extend(&one[..BLOCK + 4]);
        let mut input = &stream[..];
        for _ in 0..2 {
            let d = read_float(&mut input, 1, 100).unwrap().unwrap();
            assert_eq!(d.raster, Raster::U16(vec![0, 65535]));
        }
        assert!(read_float(&mut input, 3, 100).unwrap().is_none());
        assert_eq!(error(&one[..BLOCK + 3]), "truncated FITS data");
    }

    #[test]
    fn hostile_headers_are_refused_before_allocation() {
        let huge = image(
            &[
                SIMPLE,
                "BITPIX  = -64",
                "NAXIS   = 3",
                "NAXIS1  = 999999999",
                "NAXIS2  = 999999999",
                "NAXIS3  = 4",
            ],
            &[],
        );
        assert_eq!(decode_float(&huge, 1, 1 << 20).unwrap_err().kind, FrameErrorKind::TooLarge);
        let mut input =
            &image(&[SIMPLE, "BITPIX  = -32", "NAXIS   = 2", "NAXIS1  = 1000", "NAXIS2  = 1000"], &[])[..];
        assert_eq!(read_float(&mut input, 1, 1 << 20).unwrap_err().message, "truncated FITS data");
        let axes = ["NAXIS   = 2", "NAXIS1  = 1", "NAXIS2  = 1"];
        let with = |more: &[&str]| image(&[&[SIMPLE][..], more, &axes].concat(), &[0; 8]);
        for (bytes, message) in [
            (with(&["BITPIX  = 12"]), "BITPIX 12 (8, 16, 32, -32 or -64)"),
            (with(&["BITPIX  = 64"]), "BITPIX 64 (8, 16, 32, -32 or -64)"),
            (with(&["BITPIX  = 'abc'"]), "BITPIX = \"'abc'\""),
            (with(&[]), "no BITPIX"),
            (with(&["BITPIX  = 8", "BITPIX  = 8"]), "BITPIX twice"),
            (with(&["BITPIX  = 8", "BZERO   = nan"]), "BZERO = \"nan\""),
            (with(&["BITPIX  = 8", "BSCALE  = 1e999"]), "BSCALE = \"1e999\""),
            (with(&["BITPIX  8"]), "BITPIX has no value"),
            (image(&["SIMPLE  = F", "BITPIX  = 8"], &[]), "SIMPLE = \"F\": not a conforming file"),
            (
                image(&["SIMPLE  = T", "BITPIX  = 8", "NAXIS   = 0"], &[]),
                "NAXIS 0: no image in its primary HDU",
            ),
            (
                image(&["SIMPLE  = T", "BITPIX  = 8", "NAXIS   = 1", "NAXIS1  = 5"], &[]),
                "NAXIS 1: an image has 2 axes, or 3 with channels",
            ),
            (
                image(&["SIMPLE  = T", "BITPIX  = 8", "NAXIS   = 2", "NAXIS1  = 0", "NAXIS2  = 5"], &[]),
                "NAXIS1 0: an image has at least one pixel",
            ),
            (
                image(
                    &[
                        "SIMPLE  = T",
                        "BITPIX  = 8",
                        "NAXIS   = 3",
                        "NAXIS1  = 1",
                        "NAXIS2  = 1",
                        "NAXIS3  = 5",
                    ],
                    &[0; 5],
                ),
                "NAXIS3 5: at most 4 channels",
            ),
            (image(&["SIMPLEX = T"], &[]), "its first card is \"SIMPLEX = T\", not SIMPLE"),
        ] {
            assert_eq!(error(&bytes), format!("bad FITS header: {message}"));
        }
        let endless = [SIMPLE.as_bytes(), &[b' '; BLOCK * MAX_HEADER_BLOCKS]].concat();
        let twice = image(&[SIMPLE, "BITPIX  = 8", SIMPLE], &[]);
        assert_eq!(error(&twice), "bad FITS header: SIMPLE twice");
        assert_eq!(error(&endless), "bad FITS header: no END card in its first 256 blocks");
        assert_eq!(error(&header(&[SIMPLE])[..100]), "truncated FITS header");
    }
}
