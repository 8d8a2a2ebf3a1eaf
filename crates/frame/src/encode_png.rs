//! Writing PNG as OpenCV's `imwrite` writes it, at its speed: libpng's filters and zlib's
//! deflate, set up as OpenCV sets them up.
//!
//! OpenCV's PNG encoder (`grfmt_png.cpp`) has two settings. Without `IMWRITE_PNG_COMPRESSION` it
//! tunes for speed: every row filtered by Sub, zlib level 1 (`Z_BEST_SPEED`) with the run-length
//! strategy (`Z_RLE`). With `IMWRITE_PNG_COMPRESSION` N (0 to 9) it uses zlib level N with the
//! default strategy, and libpng's default filtering: for each row the filter of the five whose
//! bytes, taken as signed, have the least sum of magnitudes. Deflate here is zlib-rs, a port of
//! zlib (with zlib-ng's speed-ups) whose streams at a level are not byte for byte zlib's, so files
//! differ from OpenCV's in their bytes but not in their pixels, and come within a few percent of
//! their size (measured in docs/BENCHMARKS.md). The chunks around the image data (IHDR, the maxval
//! text, sBIT, IEND) are written by the `png` crate.

use std::io::Write;

use zlib_rs::{DeflateConfig, DeflateFlush, Strategy};

use crate::png_scale::{PngScale, MAXVAL_KEYWORD};
use crate::{Channels, Frame, Pixels};

/// The bytes of compressed image data each IDAT chunk holds (libpng's default zlib buffer is
/// 8 KiB; larger chunks cost fewer headers and CRCs, and every decoder takes any size).
const IDAT_BYTES: usize = 1 << 18;

/// Writes `frame` (8- or 16-bit, gray, gray+alpha, RGB or RGBA) as a PNG to `out`, its samples
/// scaled to the PNG's depth as [`PngScale`] says, with the `sBIT` and `tEXt` chunks that record
/// its maxval when that is not the PNG's own. `level`: `None` for OpenCV's default, else zlib's
/// level 0 to 9 as `IMWRITE_PNG_COMPRESSION` gives it.
pub(crate) fn write_png<W: Write>(
    out: W,
    frame: &Frame,
    level: Option<u8>,
) -> Result<(), png::EncodingError> {
    let scale = PngScale::for_maxval(frame.maxval);
    let mut encoder = png::Encoder::new(out, frame.width as u32, frame.height as u32);
    encoder.set_color(match frame.channels {
        Channels::Gray => png::ColorType::Grayscale,
        Channels::GrayAlpha => png::ColorType::GrayscaleAlpha,
        Channels::Rgb => png::ColorType::Rgb,
        Channels::RgbAlpha => png::ColorType::Rgba,
    });
    let wide = scale.png_max != 255;
    encoder.set_depth(if wide { png::BitDepth::Sixteen } else { png::BitDepth::Eight });
    if scale.scales() {
        encoder.add_text_chunk(MAXVAL_KEYWORD.into(), frame.maxval.to_string())?;
    }
    let mut writer = encoder.write_header()?;
    if let Some(bits) = scale.significant_bits() {
        let sbit = vec![bits; frame.channels.count()];
        writer.write_chunk(png::chunk::ChunkType(*b"sBIT"), &sbit)?;
    }
    let samples_per_row = frame.width * frame.channels.count();
    let bpp = frame.channels.count() * if wide { 2 } else { 1 };
    let mut rows = Rows::new(frame, scale, samples_per_row);
    let mut filter = RowFilter::new(samples_per_row * bpp / frame.channels.count(), bpp, level);
    let config = DeflateConfig {
        level: zlib_rs_level(level),
        strategy: if level.is_some() { Strategy::Default } else { Strategy::Rle },
        ..DeflateConfig::default()
    };
    let mut idat =
        Idat { deflate: zlib_rs::Deflate::new_with_config(config), out: vec![0; IDAT_BYTES], used: 0 };
    for y in 0..frame.height {
        let filtered = filter.next(rows.row(y));
        idat.compress(filtered, DeflateFlush::NoFlush, &mut writer)?;
    }
    idat.compress(&[], DeflateFlush::Finish, &mut writer)?;
    writer.finish()
}

/// The zlib-rs level that compresses as zlib's `level` does (`None`: OpenCV's default, level 1
/// with the run-length strategy, which zlib-rs's level 1 follows). zlib-rs's own level 1 is
/// zlib-ng's "quick" deflate, a different algorithm from zlib's level 1 that makes files up to a
/// quarter larger; zlib-rs's level 2 is zlib's level-1 algorithm. The other levels are zlib's
/// (on photos and scans within 2% of its sizes, measured against OpenCV's at each level).
fn zlib_rs_level(level: Option<u8>) -> i32 {
    match level {
        None => 1,
        Some(1) => 2,
        Some(n) => i32::from(n),
    }
}

/// The image data's deflate stream, cut into IDAT chunks as its output fills.
struct Idat {
    deflate: zlib_rs::Deflate,
    out: Vec<u8>,
    /// Bytes of `out` filled.
    used: usize,
}

impl Idat {
    /// Compresses `input`; with [`DeflateFlush::Finish`], ends the stream and writes what is left.
    fn compress<W: Write>(
        &mut self,
        mut input: &[u8],
        flush: DeflateFlush,
        writer: &mut png::Writer<W>,
    ) -> Result<(), png::EncodingError> {
        loop {
            let (was_in, was_out) = (self.deflate.total_in(), self.deflate.total_out());
            let status = self
                .deflate
                .compress(input, &mut self.out[self.used..], flush)
                .map_err(|e| png::EncodingError::IoError(std::io::Error::other(e.as_str())))?;
            input = &input[(self.deflate.total_in() - was_in) as usize..];
            self.used += (self.deflate.total_out() - was_out) as usize;
            if self.used == self.out.len() {
                writer.write_chunk(png::chunk::IDAT, &self.out)?;
                self.used = 0;
            } else if matches!(status, zlib_rs::Status::StreamEnd) {
                if self.used > 0 {
                    writer.write_chunk(png::chunk::IDAT, &self.out[..self.used])?;
                }
                return Ok(());
            } else if input.is_empty() && !matches!(flush, DeflateFlush::Finish) {
                return Ok(());
            }
        }
    }
}

/// Each row of a frame as the PNG's bytes: the samples as they are, or scaled, or 16-bit
/// big-endian.
struct Rows<'f> {
    frame: &'f Frame,
    scale: PngScale,
    samples: usize,
    buffer: Vec<u8>,
}

impl<'f> Rows<'f> {
    fn new(frame: &'f Frame, scale: PngScale, samples: usize) -> Rows<'f> {
        Rows { frame, scale, samples, buffer: Vec::new() }
    }

    fn row(&mut self, y: usize) -> &[u8] {
        let at = y * self.samples..(y + 1) * self.samples;
        let scale = self.scale;
        match &self.frame.pixels {
            Pixels::U8(v) if !scale.scales() => &v[at],
            Pixels::U8(v) => {
                self.buffer.resize(self.samples, 0);
                for (out, &s) in self.buffer.iter_mut().zip(&v[at]) {
                    *out = scale.written(s as u16) as u8;
                }
                &self.buffer
            }
            // Two bytes a sample in place (a loop the compiler vectorizes), the division of a
            // scaled maxval only where it scales: an `extend` over each sample's bytes took 8% of
            // a float-to-16-bit `stretch` to PNG.
            Pixels::U16(v) => {
                self.buffer.resize(2 * self.samples, 0);
                let pairs = self.buffer.chunks_exact_mut(2).zip(&v[at]);
                if scale.scales() {
                    pairs.for_each(|(out, &s)| out.copy_from_slice(&scale.written(s).to_be_bytes()));
                } else {
                    pairs.for_each(|(out, &s)| out.copy_from_slice(&s.to_be_bytes()));
                }
                &self.buffer
            }
            Pixels::F32(_) => unreachable!("checked: PNG holds integers"),
        }
    }
}

/// PNG's row filters: each row written as its filter type's byte and the filtered bytes.
struct RowFilter {
    bpp: usize,
    /// `None`: Sub on every row (OpenCV's default); `Some(0)`: no filter (stored data gains
    /// nothing from one); otherwise libpng's choice of the five.
    level: Option<u8>,
    previous: Vec<u8>,
    /// One buffer per filter type, each a type byte and the row.
    out: [Vec<u8>; 5],
}

impl RowFilter {
    fn new(row_bytes: usize, bpp: usize, level: Option<u8>) -> RowFilter {
        let buffer = || vec![0; row_bytes + 1];
        RowFilter {
            bpp,
            level,
            previous: vec![0; row_bytes],
            out: [buffer(), buffer(), buffer(), buffer(), buffer()],
        }
    }

    /// The filtered form of `row`, the row after the last one given (the first after a row of
    /// zeros, as PNG's filters take it).
    fn next(&mut self, row: &[u8]) -> &[u8] {
        let chosen = match self.level {
            None => {
                sub(row, self.bpp, &mut self.out[1]);
                1
            }
            Some(0) => {
                self.out[0][1..].copy_from_slice(row);
                0
            }
            Some(_) => self.least_of_five(row),
        };
        if self.level.is_some_and(|l| l > 0) {
            self.previous.copy_from_slice(row);
        }
        self.out[chosen][0] = chosen as u8;
        &self.out[chosen]
    }

    /// libpng's heuristic: the filter whose bytes, as signed values, have the least sum of
    /// magnitudes (the first of equals).
    fn least_of_five(&mut self, row: &[u8]) -> usize {
        let (bpp, up) = (self.bpp, &self.previous);
        let [none, s, u, a, p] = &mut self.out;
        none[1..].copy_from_slice(row);
        sub(row, bpp, s);
        for i in 0..row.len() {
            let left = if i >= bpp { row[i - bpp] } else { 0 };
            let corner = if i >= bpp { up[i - bpp] } else { 0 };
            u[i + 1] = row[i].wrapping_sub(up[i]);
            a[i + 1] = row[i].wrapping_sub(((left as u16 + up[i] as u16) / 2) as u8);
            p[i + 1] = row[i].wrapping_sub(paeth(left, up[i], corner));
        }
        let cost = |b: &[u8]| b[1..].iter().map(|&v| (v as i8).unsigned_abs() as u64).sum::<u64>();
        let costs = [cost(none), cost(s), cost(u), cost(a), cost(p)];
        (0..5).min_by_key(|&i| costs[i]).unwrap_or(0)
    }
}

/// The Sub filter of `row` into `out` after its type byte.
fn sub(row: &[u8], bpp: usize, out: &mut [u8]) {
    let n = bpp.min(row.len());
    out[1..=n].copy_from_slice(&row[..n]);
    for i in n..row.len() {
        out[i + 1] = row[i].wrapping_sub(row[i - bpp]);
    }
}

/// PNG's Paeth predictor of a byte from its left, upper and upper-left neighbours.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = ((p - a as i16).abs(), (p - b as i16).abs(), (p - c as i16).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FrameReader, ReadOptions};

    fn encoded(frame: &Frame, level: Option<u8>) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_png(&mut bytes, frame, level).unwrap();
        bytes
    }

    /// Every filter and both strategies decode to the frame's samples (by the reader, which
    /// scales a recorded maxval back), in images large enough for several IDAT chunks.
    #[test]
    fn every_setting_reads_back_exactly() {
        let mut rng = fastrand::Rng::with_seed(44);
        for (channels, maxval, (w, h)) in [
            (Channels::Gray, 255, (301, 200)),
            (Channels::Rgb, 255, (1, 7)),
            (Channels::RgbAlpha, 1000, (97, 64)),
            (Channels::GrayAlpha, 65535, (50, 51)),
            (Channels::Rgb, 200, (640, 480)),
        ] {
            let n = w * h * channels.count();
            // Half noise, half ramps: every filter wins some rows.
            let samples: Vec<u16> = (0..n)
                .map(|i| match (i / (w * channels.count())) % 2 {
                    0 => ((i % w) / 3 + (i / w) / 2 + rng.usize(0..3)) as u16,
                    _ => rng.u16(0..=maxval),
                })
                .map(|s| s.min(maxval))
                .collect();
            let pixels = if maxval <= 255 {
                Pixels::U8(samples.iter().map(|&s| s as u8).collect())
            } else {
                Pixels::U16(samples.clone().into())
            };
            let frame = Frame::with_channels(w, h, channels, maxval, pixels);
            for level in [None, Some(0), Some(1), Some(6), Some(9)] {
                let png = encoded(&frame, level);
                let back = FrameReader::new(&png[..], ReadOptions::default()).next_frame().unwrap().unwrap();
                assert_eq!((back.width, back.height, back.channels, back.maxval), (w, h, channels, maxval));
                let got: Vec<u16> = (0..n).map(|i| back.pixels.get(i)).collect();
                assert!(got == samples, "{channels:?} maxval {maxval} level {level:?}");
            }
        }
    }

    #[test]
    fn large_images_are_cut_into_chunks_and_compressed() {
        let mut rng = fastrand::Rng::with_seed(7);
        let (w, h) = (700, 500);
        // Noise on a ramp: compressible, but not to nothing.
        let v: Vec<u8> = (0..w * h * 3).map(|i| ((i % (w * 3)) / 9) as u8 ^ (rng.u8(..) & 7)).collect();
        let frame = Frame::with_channels(w, h, Channels::Rgb, 255, Pixels::U8(v.into()));
        let stored = encoded(&frame, Some(0));
        assert!(stored.len() > w * h * 3, "level 0 stores");
        let idats = stored.windows(4).filter(|c| c == b"IDAT").count();
        assert_eq!(idats, (w * h * 3 + h).div_ceil(IDAT_BYTES), "one chunk per {IDAT_BYTES} bytes");
        for level in [None, Some(1), Some(6), Some(9)] {
            let size = encoded(&frame, level).len();
            assert!(size < stored.len() * 2 / 3, "{level:?}: {size} bytes against {} stored", stored.len());
        }
    }
}
