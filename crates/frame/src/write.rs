use std::io::{self, Cursor, Write};

use image::{ExtendedColorType, ImageEncoder};

use crate::samples::le_bytes;
use crate::{Channels, Depth, Format, Frame, FrameError, Pixels};

/// A container to write frames in, whatever they were read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Binary PGM (P5): gray frames only.
    Pgm,
    /// Binary netpbm by the frame's channels: PGM (P5) gray, PPM (P6) RGB, PAM with alpha; float
    /// frames as PFM (or NPY with alpha).
    Pnm,
    /// Binary PPM (P6): RGB, gray frames widened to it.
    Ppm,
    /// PAM (P7), its TUPLTYPE by the frame's channels.
    Pam,
    /// 8- or 16-bit PNG, gray, gray+alpha, RGB or RGBA, samples scaled to its depth, the maxval
    /// kept in a text chunk; one frame. `compression`: zlib's level 0 to 9, as OpenCV's
    /// `IMWRITE_PNG_COMPRESSION`; `None`, OpenCV's default (see `encode_png.rs`).
    Png { compression: Option<u8> },
    /// TIFF: 8-, 16-bit or 32-bit float, gray, RGB or RGBA; samples unchanged (TIFF records no
    /// maxval); one frame.
    Tiff,
    /// Baseline JPEG of `quality` 1..=100 (OpenCV's default: 95): 8-bit gray or RGB (a frame with
    /// alpha refused, where OpenCV's `imwrite` drops it silently); one frame.
    Jpeg { quality: u8 },
    /// PFM: 32-bit float, gray or RGB; integer samples as their float values.
    Pfm,
    /// NumPy's `.npy`: shape (height, width) or (height, width, channels), dtype `|u1`, `<u2` or
    /// `<f4`; one frame.
    Npy,
    /// Headerless samples: 8-bit, 16-bit little-endian, or 32-bit float little-endian, a pixel's
    /// samples together.
    Raw,
}

impl Container {
    /// Whether a file of this container holds one frame only.
    pub fn holds_one_frame(self) -> bool {
        matches!(self, Container::Png { .. } | Container::Tiff | Container::Jpeg { .. } | Container::Npy)
    }

    /// The container's usual name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Container::Pgm => "PGM",
            Container::Pnm => "PNM",
            Container::Ppm => "PPM",
            Container::Pam => "PAM",
            Container::Png { .. } => "PNG",
            Container::Tiff => "TIFF",
            Container::Jpeg { .. } => "JPEG",
            Container::Pfm => "PFM",
            Container::Npy => "NPY",
            Container::Raw => "raw",
        }
    }
}

/// How to write a stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Write every frame in this container instead of the one it was read in. PNG samples are
    /// scaled to the file's depth and the maxval recorded (see `png_scale.rs`).
    pub container: Option<Container>,
}

/// How one frame is written: a netpbm header and raster, or an encoded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// P5, P6, P7 or P2, P3 (`plain`) by the frame's channels; P7 always when `pam`.
    Netpbm {
        pam: bool,
        plain: bool,
    },
    Raw,
    Pfm,
    Npy,
    Png {
        compression: Option<u8>,
    },
    Tiff,
    Jpeg {
        quality: u8,
    },
}

/// Writes frames one after another, each in the container it was read in (PGM in, PGM out;
/// raw in, raw out; PPM in, PPM out; compressed inputs come out as netpbm, float ones as PFM), or
/// all in one container.
pub struct FrameWriter<W: Write> {
    out: W,
    options: WriteOptions,
    written: usize,
    scratch: Vec<u8>,
}

/// The format a reader of the stream that [`FrameWriter`] makes of `frame` (no container) names
/// when it reads it back (`FrameReader`, default options), where nothing else of the frame changes
/// on the way: a frame written as binary netpbm (P5, P6 or P7; 8-bit samples for a maxval up to
/// 255, 16-bit above) or as PFM (float samples, no alpha, nothing in its header beyond PFM's
/// own). `None` for any other frame (plain netpbm, NPY, raw, samples read at another depth). The
/// GPU service hands a frame so from one tool to the next without writing it (see
/// docs/histopipe-service.md): the next tool gets what it would have read.
pub fn read_back_format(frame: &Frame) -> Option<Format> {
    let written = FrameWriter::new(io::sink(), WriteOptions::default()).written(frame);
    let bare = frame.geometry.is_none() && frame.annotations.is_empty() && frame.source.is_none();
    match (written, frame.depth()) {
        (Ok(Written::Netpbm { pam, plain: false }), depth)
            if (depth == Depth::U8 && frame.maxval <= 255) || (depth == Depth::U16 && frame.maxval > 255) =>
        {
            Some(match (pam, frame.channels) {
                (true, _) => Format::Pam,
                (false, Channels::Gray) => Format::Pgm,
                (false, _) => Format::Ppm,
            })
        }
        (Ok(Written::Pfm), Depth::F32) if frame.maxval == 1 && bare => Some(Format::Pfm),
        _ => None,
    }
}

impl<W: Write> FrameWriter<W> {
    pub fn new(out: W, options: WriteOptions) -> Self {
        FrameWriter { out, options, written: 0, scratch: Vec::new() }
    }

    /// How `frame` is written, or why it cannot be in the container asked for.
    fn written(&self, frame: &Frame) -> Result<Written, String> {
        let ch = frame.channels;
        let float = !frame.depth().is_integer();
        let netpbm = |pam: bool, plain: bool| match (float, ch.has_alpha() && !pam) {
            (false, _) => Written::Netpbm { pam: pam || ch.has_alpha(), plain: plain && !ch.has_alpha() },
            (true, false) => Written::Pfm,
            (true, true) => Written::Npy,
        };
        let refuse = |what: &str, instead: &str| {
            Err(format!(
                "a {what} file cannot hold this {} {} frame: write {instead}",
                frame.depth().name(),
                ch.name()
            ))
        };
        // What a refusal names instead: containers that hold the frame. Float samples: TIFF (no
        // gray+alpha), PFM (no alpha), NPY; integer ones: PNG, PAM, TIFF (no gray+alpha), NPY.
        let float_instead = match ch {
            Channels::GrayAlpha => ".npy",
            Channels::RgbAlpha => ".tif or .npy",
            _ => ".tif, .pfm or .npy",
        };
        let gray_alpha = ch == Channels::GrayAlpha;
        Ok(match self.options.container {
            None => match frame.format {
                Format::Pgm | Format::Ppm | Format::Decoded => netpbm(false, false),
                Format::PlainPgm => netpbm(false, true),
                // A float frame has no PAM: PFM, or NPY where it has alpha, as from any netpbm.
                Format::Pam if float => netpbm(false, false),
                Format::Pam => Written::Netpbm { pam: true, plain: false },
                Format::Pfm if float && !ch.has_alpha() => Written::Pfm,
                Format::Pfm => netpbm(false, false),
                Format::Npy => Written::Npy,
                Format::Raw => Written::Raw,
            },
            Some(Container::Pgm) if float => return refuse("PGM", float_instead),
            Some(Container::Pgm) if gray_alpha => return refuse("PGM", ".pam or .png"),
            Some(Container::Pgm) if ch.has_alpha() => return refuse("PGM", ".pam, .png or .tif"),
            Some(Container::Pgm) if ch != Channels::Gray => return refuse("PGM", ".ppm, .pam, .png or .tif"),
            Some(Container::Pgm | Container::Pnm) => netpbm(false, false),
            Some(Container::Ppm) if float => return refuse("PPM", float_instead),
            Some(Container::Ppm) if gray_alpha => return refuse("PPM", ".pam or .png"),
            Some(Container::Ppm) if ch.has_alpha() => return refuse("PPM", ".pam, .png or .tif"),
            Some(Container::Ppm) => Written::Netpbm { pam: false, plain: false },
            Some(Container::Pam) if float => return refuse("PAM", float_instead),
            Some(Container::Pam) => Written::Netpbm { pam: true, plain: false },
            Some(Container::Png { .. }) if float => {
                return refuse("PNG", &format!("{float_instead}, or make it integer with stretch"))
            }
            Some(Container::Png { compression }) => Written::Png { compression },
            Some(Container::Tiff) if gray_alpha && float => return refuse("TIFF", ".npy"),
            Some(Container::Tiff) if gray_alpha => return refuse("TIFF", ".png or .pam"),
            Some(Container::Tiff) => Written::Tiff,
            Some(Container::Jpeg { .. }) if float => {
                return refuse("JPEG", &format!("{float_instead} (JPEG holds 8-bit samples)"))
            }
            Some(Container::Jpeg { .. }) if frame.depth() != crate::Depth::U8 => {
                let instead = if gray_alpha { ".png or .pam" } else { ".png or .tif" };
                return refuse("JPEG", &format!("{instead} (JPEG holds 8-bit samples)"));
            }
            // OpenCV's imwrite drops alpha silently; a tool that loses nothing unsaid refuses, as it
            // refuses 16-bit samples, and says how to drop it on purpose.
            Some(Container::Jpeg { .. }) if ch == Channels::GrayAlpha => {
                return refuse("JPEG", ".png or .pam, or drop the alpha first (ImageMagick: -alpha off)")
            }
            Some(Container::Jpeg { .. }) if ch.has_alpha() => {
                return refuse(
                    "JPEG",
                    ".png, .tif or .pam, or drop the alpha first (ImageMagick: -alpha off)",
                )
            }
            Some(Container::Jpeg { quality }) => Written::Jpeg { quality },
            Some(Container::Pfm) if float && ch.has_alpha() => return refuse("PFM", float_instead),
            Some(Container::Pfm) if gray_alpha => return refuse("PFM", ".png, .pam or .npy"),
            Some(Container::Pfm) if ch.has_alpha() => return refuse("PFM", ".tif or .npy"),
            Some(Container::Pfm) => Written::Pfm,
            Some(Container::Npy) => Written::Npy,
            Some(Container::Raw) => Written::Raw,
        })
    }

    /// Writes `frame` as frame number `index` of the stream (for error messages).
    pub fn write(&mut self, index: usize, frame: &Frame) -> Result<(), FrameError> {
        let io = |e: io::Error| FrameError::io(index, &e);
        match self.options.container {
            Some(c) if c.holds_one_frame() && self.written > 0 => {
                return Err(FrameError::invalid(
                    index,
                    format!("a {} file holds a single frame, and the stream has more", c.name()),
                ));
            }
            _ => {}
        }
        let encoding = |what: &str, e: &dyn std::fmt::Display| {
            FrameError::invalid(index, format!("cannot encode {what}: {e}"))
        };
        match self.written(frame).map_err(|e| FrameError::invalid(index, e))? {
            Written::Png { compression } => self.png(frame, compression).map_err(|e| match e {
                png::EncodingError::IoError(e) => FrameError::io(index, &e),
                other => encoding("PNG", &other),
            })?,
            Written::Tiff => {
                self.scratch = tiff_bytes(frame).map_err(|e| encoding("TIFF", &e))?;
                self.out.write_all(&self.scratch).map_err(io)?;
            }
            Written::Jpeg { quality } => {
                let channels = frame.channels.colour_count();
                let Pixels::U8(v) = &frame.pixels else { unreachable!("checked: 8-bit") };
                let bytes = crate::encode_jpeg(frame.width, frame.height, channels, v, quality)
                    .map_err(|e| encoding("JPEG", &e))?;
                self.out.write_all(&bytes).map_err(io)?;
            }
            Written::Pfm => {
                let bytes = pfm_bytes(frame).map_err(|e| FrameError::invalid(index, e))?;
                self.out.write_all(&bytes).map_err(io)?;
            }
            Written::Npy => {
                let bytes = npy_bytes(frame).map_err(|e| FrameError::invalid(index, e))?;
                self.out.write_all(&bytes).map_err(io)?;
            }
            how @ (Written::Netpbm { .. } | Written::Raw) => self.netpbm(frame, how).map_err(io)?,
        }
        self.written += 1;
        Ok(())
    }

    /// As [`FrameWriter::write`], for a frame the caller gives up: where its samples are written
    /// as they are in memory (8-bit samples on the heap, in binary netpbm or raw), they are given,
    /// after the header, to `samples` with the output, to be written its own way; it may change
    /// them meanwhile. Any other frame is written as `write` writes it.
    pub fn write_owned_with(
        &mut self,
        index: usize,
        mut frame: Frame,
        samples: impl FnOnce(&mut W, &mut [u8]) -> io::Result<()>,
    ) -> Result<(), FrameError> {
        let how = match self.written(&frame) {
            Ok(how @ (Written::Netpbm { plain: false, .. } | Written::Raw)) => how,
            _ => return self.write(index, &frame),
        };
        if !matches!(&frame.pixels, Pixels::U8(v) if !v.is_lent()) {
            return self.write(index, &frame);
        }
        let io = |e: io::Error| FrameError::io(index, &e);
        self.header(&frame, how);
        self.out.write_all(&self.scratch).map_err(io)?;
        if let Pixels::U8(v) = &mut frame.pixels {
            samples(&mut self.out, v).map_err(io)?;
        }
        self.written += 1;
        Ok(())
    }

    /// The underlying output, for text written between or instead of frames.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The header of `frame` written as `how` (netpbm or raw), into `scratch`.
    fn header(&mut self, frame: &Frame, how: Written) {
        let s = &mut self.scratch;
        s.clear();
        let comments = netpbm_comments(frame);
        let (w, h, m) = (frame.width, frame.height, frame.maxval);
        let ch = frame.channels;
        let text = match how {
            Written::Netpbm { pam: true, .. } => format!(
                "P7\nWIDTH {w}\nHEIGHT {h}\nDEPTH {}\nMAXVAL {m}\nTUPLTYPE {}\n{comments}ENDHDR\n",
                ch.count(),
                ch.tupltype()
            ),
            Written::Netpbm { plain, .. } => {
                let magic = match (ch.is_colour(), plain) {
                    (false, false) => "P5",
                    (true, false) => "P6",
                    (false, true) => "P2",
                    (true, true) => "P3",
                };
                format!("{magic}\n{comments}{w} {h}\n{m}\n")
            }
            _ => String::new(),
        };
        s.extend_from_slice(text.as_bytes());
    }

    fn netpbm(&mut self, frame: &Frame, how: Written) -> io::Result<()> {
        // A gray frame in a container of RGB (PPM asked for) is widened.
        let widened;
        let frame =
            if matches!(self.options.container, Some(Container::Ppm)) && frame.channels == Channels::Gray {
                widened = Frame::from_planes(Channels::Rgb, &[frame.clone(), frame.clone(), frame.clone()]);
                &widened
            } else {
                frame
            };
        self.header(frame, how);
        if let Written::Netpbm { plain: true, .. } = how {
            plain_raster(&mut self.scratch, frame.width * frame.channels.count(), &frame.pixels);
            return self.out.write_all(&self.scratch);
        }
        self.out.write_all(&self.scratch)?;
        // Raw frames are little-endian (ffmpeg's gray16le); PGM and PAM big-endian.
        let little = how == Written::Raw;
        match &frame.pixels {
            Pixels::U8(v) => self.out.write_all(v),
            Pixels::U16(v) if little => self.out.write_all(&le_bytes(v)),
            Pixels::U16(v) => write_words(&mut self.out, &mut self.scratch, v, u16::to_be_bytes),
            Pixels::F32(v) => self.out.write_all(&le_bytes(v)),
        }
    }

    /// `frame` as PNG (see [`crate::encode_png`]).
    fn png(&mut self, frame: &Frame, compression: Option<u8>) -> Result<(), png::EncodingError> {
        crate::encode_png::write_png(&mut self.out, frame, compression)
    }
}

/// The `histopipe-*` comments of a netpbm header: geometry, source, annotations.
fn netpbm_comments(frame: &Frame) -> String {
    let mut text = frame.geometry.as_ref().map(|g| format!("#{g}\n")).unwrap_or_default();
    if let Some(source) = &frame.source {
        text.push_str(&format!("#{source}\n"));
    }
    for a in &frame.annotations {
        text.push_str(&format!("# histopipe-{} {}\n", a.key, a.value));
    }
    text
}

/// Writes multi-byte samples in the byte order `bytes` gives, a piece at a time through `scratch`
/// (written in place sample by sample, which vectorises; extending by each sample's bytes does not).
fn write_words<W: Write, T: Copy, const N: usize>(
    out: &mut W,
    scratch: &mut Vec<u8>,
    samples: &[T],
    bytes: impl Fn(T) -> [u8; N],
) -> io::Result<()> {
    for chunk in samples.chunks(1 << 16) {
        scratch.resize(N * chunk.len(), 0);
        scratch.chunks_exact_mut(N).zip(chunk).for_each(|(out, &s)| out.copy_from_slice(&bytes(s)));
        out.write_all(scratch)?;
    }
    Ok(())
}

/// `frame` as PFM: gray or RGB (checked), integer samples as their float values.
fn pfm_bytes(frame: &Frame) -> Result<Vec<u8>, String> {
    let floats: Vec<f32>;
    let samples = match &frame.pixels {
        Pixels::F32(v) => &v[..],
        Pixels::U8(v) => {
            floats = v.iter().map(|&s| s as f32).collect();
            &floats
        }
        Pixels::U16(v) => {
            floats = v.iter().map(|&s| s as f32).collect();
            &floats
        }
    };
    Ok(crate::encode_pfm(frame.width, frame.height, frame.channels.count(), samples))
}

/// `frame` as NPY: shape (height, width) or (height, width, channels), its own sample type, its
/// annotations as comments after the header's dict (as netpbm's header comments).
fn npy_bytes(frame: &Frame) -> Result<Vec<u8>, String> {
    let data = match &frame.pixels {
        Pixels::U8(v) => crate::NpyData::U8(v),
        Pixels::U16(v) => crate::NpyData::U16(v),
        Pixels::F32(v) => crate::NpyData::F32(v),
    };
    let (h, w, c) = (frame.height, frame.width, frame.channels.count());
    let shape = if c == 1 { vec![h, w] } else { vec![h, w, c] };
    crate::float::encode_npy_array_noted(&shape, data, &frame.annotations).map_err(|e| e.to_string())
}

/// `frame` as a TIFF, made in memory (TIFF seeks back while it is written). Samples are written
/// unchanged: TIFF has no maxval to scale back by.
fn tiff_bytes(frame: &Frame) -> tiff::TiffResult<Vec<u8>> {
    use tiff::encoder::{colortype, TiffEncoder};
    let mut bytes = Vec::new();
    let mut encoder = TiffEncoder::new(Cursor::new(&mut bytes))?;
    let (w, h) = (frame.width as u32, frame.height as u32);
    match (&frame.pixels, frame.channels) {
        (Pixels::U8(v), Channels::Gray) => encoder.write_image::<colortype::Gray8>(w, h, v)?,
        (Pixels::U8(v), Channels::Rgb) => encoder.write_image::<colortype::RGB8>(w, h, v)?,
        (Pixels::U8(v), _) => encoder.write_image::<colortype::RGBA8>(w, h, v)?,
        (Pixels::U16(v), Channels::Gray) => encoder.write_image::<colortype::Gray16>(w, h, v)?,
        (Pixels::U16(v), Channels::Rgb) => encoder.write_image::<colortype::RGB16>(w, h, v)?,
        (Pixels::U16(v), _) => encoder.write_image::<colortype::RGBA16>(w, h, v)?,
        (Pixels::F32(v), Channels::Gray) => encoder.write_image::<colortype::Gray32Float>(w, h, v)?,
        (Pixels::F32(v), Channels::Rgb) => encoder.write_image::<colortype::RGB32Float>(w, h, v)?,
        (Pixels::F32(v), _) => encoder.write_image::<colortype::RGBA32Float>(w, h, v)?,
    }
    Ok(bytes)
}

/// Writes one 8-bit RGB image (`width * height` interleaved triples) as PNG, or as binary PPM (P6)
/// when `png` is false: the output of tools that draw on an image.
pub fn write_rgb8<W: Write>(
    out: &mut W,
    width: usize,
    height: usize,
    rgb: &[u8],
    png: bool,
) -> io::Result<()> {
    assert_eq!(width * height * 3, rgb.len(), "RGB image size and sample count disagree");
    if !png {
        out.write_all(format!("P6\n{width} {height}\n255\n").as_bytes())?;
        return out.write_all(rgb);
    }
    let encoder = image::codecs::png::PngEncoder::new(out);
    encoder.write_image(rgb, width as u32, height as u32, ExtendedColorType::Rgb8).map_err(|e| match e {
        image::ImageError::IoError(e) => e,
        other => io::Error::other(format!("cannot encode PNG: {other}")),
    })
}

/// The ASCII raster of a plain PGM: one row per line, lines kept under 70 characters.
fn plain_raster(out: &mut Vec<u8>, width: usize, pixels: &Pixels) {
    let mut line = 0;
    for i in 0..pixels.len() {
        let text = pixels.get(i).to_string();
        let end_of_row = (i + 1) % width == 0;
        if line > 0 && line + 1 + text.len() > 70 {
            out.push(b'\n');
            line = 0;
        } else if line > 0 {
            out.push(b' ');
            line += 1;
        }
        out.extend_from_slice(text.as_bytes());
        line += text.len();
        if end_of_row {
            out.push(b'\n');
            line = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::png_scale::PngScale;
    use crate::{Affine, FrameReader, Geometry, ReadOptions, Source};

    fn round_trip(frame: &Frame) -> Frame {
        let mut bytes = Vec::new();
        FrameWriter::new(&mut bytes, WriteOptions::default()).write(1, frame).unwrap();
        let options = ReadOptions {
            raw: (frame.format == Format::Raw).then_some(crate::RawSpec {
                width: frame.width,
                height: frame.height,
                depth: frame.depth(),
            }),
            ..Default::default()
        };
        FrameReader::new(&bytes[..], options).next_frame().unwrap().unwrap()
    }

    /// A 7x9 frame's geometry, turned and moved (`f`: the last term).
    fn skewed(f: f64) -> Option<Geometry> {
        Some(Geometry::identity(7, 9).then(&Affine { a: 0.5, b: 0.25, c: -3.5, d: -0.25, e: 0.5, f }))
    }

    #[test]
    fn a_frame_read_back_is_what_a_reader_of_its_stream_reads() {
        let geometry = skewed(1.0);
        let formats = Format::ALL;
        let channels = [Channels::Gray, Channels::GrayAlpha, Channels::Rgb, Channels::RgbAlpha];
        let mut held = 0;
        for format in formats {
            for ch in channels {
                for (depth, maxval) in [(0, 255), (0, 7), (1, 65535), (1, 1000), (2, 1)] {
                    for extras in [false, true] {
                        let n = 4 * 3 * ch.count();
                        let pixels = match depth {
                            0 => Pixels::U8((0..n).map(|i| (i * 37 % (maxval as usize + 1)) as u8).collect()),
                            1 => Pixels::U16(
                                (0..n).map(|i| (i * 9973 % (maxval as usize + 1)) as u16).collect(),
                            ),
                            _ => Pixels::F32((0..n).map(|i| i as f32 * 0.37 - 1.5).collect()),
                        };
                        let mut f = Frame::with_channels(4, 3, ch, maxval, pixels);
                        f.format = format;
                        if extras {
                            f.geometry = geometry.clone();
                            f.set_annotation("hough", "theta-min=0");
                            f.source = Some(Source::from_stream("a.pgm", 2));
                        }
                        let case = format!("{format:?} {ch:?} depth {depth} maxval {maxval} extras {extras}");
                        if let Some(format) = read_back_format(&f) {
                            {
                                let back = Frame { format, ..f.clone() };
                                held += 1;
                                let mut bytes = Vec::new();
                                FrameWriter::new(&mut bytes, WriteOptions::default()).write(1, &f).unwrap();
                                let mut reader = FrameReader::new(&bytes[..], ReadOptions::default());
                                let read = reader.next_frame().unwrap().unwrap();
                                assert_eq!(read, back, "{case}");
                                assert!(reader.next_frame().unwrap().is_none(), "{case}");
                            }
                        }
                    }
                }
            }
        }
        assert!(held >= 100, "most frames of the stream formats are held: {held}");
        let gray = Frame::new(2, 1, 255, Pixels::U8(vec![1, 2].into()));
        assert_eq!(read_back_format(&gray), Some(Format::Pgm));
        let mut decoded = Frame::with_channels(1, 1, Channels::Rgb, 65535, Pixels::U16(vec![9, 8, 7].into()));
        decoded.format = Format::Decoded;
        assert_eq!(read_back_format(&decoded), Some(Format::Ppm));
    }

    #[test]
    fn every_container_round_trips_with_geometry() {
        let geometry = skewed(1e-17);
        for format in [Format::Pgm, Format::PlainPgm, Format::Pam, Format::Raw] {
            for (maxval, pixels) in [
                (200, Pixels::U8((0..40).map(|i| (i * 5) as u8).collect())),
                (65535, Pixels::U16((0..40).map(|i| i * 1601).collect())),
            ] {
                let mut f = Frame::new(8, 5, maxval, pixels);
                f.format = format;
                f.geometry = if format == Format::Raw { None } else { geometry.clone() };
                if format != Format::Raw {
                    f.set_annotation("hough", "theta-min=0 rho-step=0.5");
                    f.set_annotation("x-1", "");
                    f.source = Some(Source::from_stream("scans/a b\n.pgm", 2));
                }
                let mut back = round_trip(&f);
                if format == Format::Raw {
                    back.maxval = maxval;
                }
                assert_eq!(back, f, "{format:?}");
            }
        }
    }

    fn png_bytes(frame: &Frame) -> Vec<u8> {
        let mut bytes = Vec::new();
        FrameWriter::new(&mut bytes, WriteOptions { container: Some(Container::Png { compression: None }) })
            .write(1, frame)
            .unwrap();
        bytes
    }

    /// The chunk of type `kind`'s data, if the PNG has one.
    fn chunk<'a>(png: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
        let mut pos = 8;
        while pos + 8 <= png.len() {
            let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
            if &png[pos + 4..pos + 8] == kind {
                return Some(&png[pos + 8..pos + 8 + len]);
            }
            pos += 12 + len;
        }
        None
    }

    /// A PNG shows the frame as a netpbm viewer would (scaled to the PNG's depth, as other
    /// decoders read it) and reads back as the very frame, maxval included, for maxvals of both
    /// widths; 255 and 65535 are written as they are, with no extra chunks.
    #[test]
    fn png_scales_samples_and_reads_back_exactly() {
        for maxval in [1u16, 5, 200, 254, 255, 256, 1076, 4095, 65534, 65535] {
            let k = (maxval as usize + 1).min(4000);
            let samples: Vec<u16> = (0..k).map(|i| (i * maxval as usize / (k - 1).max(1)) as u16).collect();
            let pixels = if maxval <= 255 {
                Pixels::U8(samples.iter().map(|&s| s as u8).collect())
            } else {
                Pixels::U16(samples.clone().into())
            };
            let f = Frame::new(samples.len(), 1, maxval, pixels);
            let png = png_bytes(&f);
            let shown = image::load_from_memory(&png).unwrap();
            let scale = PngScale::for_maxval(maxval);
            let expected: Vec<u16> = samples.iter().map(|&s| scale.written(s)).collect();
            let seen: Vec<u16> = match shown {
                image::DynamicImage::ImageLuma8(g) => g.into_raw().into_iter().map(u16::from).collect(),
                image::DynamicImage::ImageLuma16(g) => g.into_raw(),
                other => panic!("maxval {maxval}: {:?}", other.color()),
            };
            assert_eq!(seen, expected, "maxval {maxval}: the samples a viewer sees");
            assert_eq!(seen.last().copied(), Some(scale.png_max), "maxval {maxval}: maxval is white");
            let text = chunk(&png, b"tEXt").map(|t| t.to_vec());
            let sbit = chunk(&png, b"sBIT").map(|b| b[0]);
            if maxval == 255 || maxval == 65535 {
                assert_eq!((text, sbit), (None, None), "maxval {maxval}");
            } else {
                assert_eq!(text, Some(format!("histopipe-maxval\0{maxval}").into_bytes()));
                assert_eq!(sbit, scale.significant_bits());
            }
            let back = FrameReader::new(&png[..], ReadOptions::default()).next_frame().unwrap().unwrap();
            assert_eq!((back.maxval, &back.pixels), (maxval, &f.pixels), "maxval {maxval}");
        }
    }

    #[test]
    fn png_maxval_text_is_checked() {
        let f = Frame::new(2, 1, 1076, Pixels::U16(vec![0, 1076].into()));
        let png = png_bytes(&f);
        let read = |bytes: &[u8]| FrameReader::new(bytes, ReadOptions::default()).next_frame();
        // The same length, so the chunk stays whole (the reader checks the text, not the CRC).
        for (bad, why) in [("0000", "is not a maxval"), ("x076", "is not a maxval")] {
            let mut b = png.clone();
            let at = b.windows(4).position(|w| w == b"1076").unwrap();
            b[at..at + 4].copy_from_slice(bad.as_bytes());
            let e = read(&b).unwrap_err();
            assert!(e.message.contains(why) && e.message.contains("histopipe-maxval"), "{}", e.message);
        }
        // An 8-bit frame written by hand with a 16-bit maxval recorded.
        let small = png_bytes(&Frame::new(1, 1, 100, Pixels::U8(vec![7].into())));
        let mut b = small.clone();
        let at = b.windows(5).position(|w| w == b"l\x00100").unwrap() + 2;
        b[at..at + 3].copy_from_slice(b"999");
        assert!(read(&b).unwrap_err().message.contains("8-bit PNG"));
    }

    #[test]
    fn frames_given_up_are_written_as_write_writes_them() {
        // Samples in a lent block (as the GPU's page-locked memory is), freed by their owner.
        let lent = |v: Vec<u16>| {
            let mut v = std::mem::ManuallyDrop::new(v.into_boxed_slice());
            let ptr = std::ptr::NonNull::new(v.as_mut_ptr()).unwrap();
            let len = v.len();
            // SAFETY: the boxed slice's memory, given up by ManuallyDrop, is owned again once.
            let owner = unsafe { Box::from_raw(&mut **v as *mut [u16]) };
            // SAFETY: the block lives, untouched by others, as long as `owner`, which frees it.
            unsafe { crate::Samples::lent(ptr, len, Box::new(owner)) }
        };
        let samples: Vec<u16> = (0..600u16).map(|i| i.wrapping_mul(331)).collect();
        let formats = [Format::Pgm, Format::Pam, Format::Raw, Format::PlainPgm, Format::Decoded];
        let containers = [
            None,
            Some(Container::Pgm),
            Some(Container::Pam),
            Some(Container::Raw),
            Some(Container::Png { compression: None }),
        ];
        for kind in ["8-bit", "16-bit", "16-bit lent"] {
            for format in formats {
                for container in containers {
                    let frame = || {
                        let pixels = match kind {
                            "8-bit" => Pixels::U8(samples.iter().map(|&s| s as u8).collect()),
                            "16-bit" => Pixels::U16(samples.clone().into()),
                            _ => Pixels::U16(lent(samples.clone())),
                        };
                        let mut f = Frame::new(20, 30, if kind == "8-bit" { 255 } else { 65535 }, pixels);
                        f.format = format;
                        f
                    };
                    let options = WriteOptions { container };
                    let mut written = Vec::new();
                    FrameWriter::new(&mut written, options).write(1, &frame()).unwrap();
                    let mut given = Vec::new();
                    let mut called = false;
                    FrameWriter::new(&mut given, options)
                        .write_owned_with(1, frame(), |out, bytes| {
                            called = true;
                            out.extend_from_slice(bytes);
                            bytes.fill(0xab);
                            Ok(())
                        })
                        .unwrap();
                    let case = format!("{kind} {format:?} in {container:?}");
                    assert!(given == written, "{case}: not the bytes `write` writes");
                    let binary = match container {
                        None => format != Format::PlainPgm,
                        Some(c) => !matches!(c, Container::Png { .. }),
                    };
                    assert_eq!(
                        called,
                        binary && kind == "8-bit",
                        "{case}: given only 8-bit samples on the heap"
                    );
                }
            }
        }
    }

    #[test]
    fn frames_are_written_in_the_container_asked_for() {
        let mut f = Frame::new(3, 2, 1000, Pixels::U16(vec![0, 1, 256, 999, 1000, 7].into()));
        f.format = Format::PlainPgm;
        for (container, starts) in [
            (Container::Pgm, &b"P5\n"[..]),
            (Container::Pam, b"P7\n"),
            (Container::Png { compression: Some(9) }, b"\x89PNG"),
            (Container::Tiff, b"MM"),
            (Container::Raw, b"\x00\x00\x01\x00"),
        ] {
            let mut bytes = Vec::new();
            let mut w = FrameWriter::new(&mut bytes, WriteOptions { container: Some(container) });
            w.write(1, &f).unwrap();
            let second = w.write(2, &f);
            assert_eq!(second.is_err(), container.holds_one_frame(), "{container:?}");
            let one_frame =
                if container.holds_one_frame() { bytes.clone() } else { bytes[..bytes.len() / 2].to_vec() };
            assert!(bytes.starts_with(starts) || container == Container::Tiff, "{container:?}");
            let raw = (container == Container::Raw).then_some(crate::RawSpec {
                width: 3,
                height: 2,
                depth: crate::Depth::U16,
            });
            let back = FrameReader::new(&one_frame[..], ReadOptions { raw, ..Default::default() })
                .next_frame()
                .unwrap()
                .unwrap();
            assert_eq!(back.pixels, f.pixels, "{container:?}: samples unchanged");
        }
    }

    #[test]
    fn plain_lines_stay_short() {
        let f = Frame::new(40, 1, 65535, Pixels::U16(vec![65535; 40].into()));
        let mut out = Vec::new();
        plain_raster(&mut out, f.width, &f.pixels);
        assert!(out.split(|&b| b == b'\n').all(|l| l.len() <= 70));
    }

    /// A frame of `channels` of random samples of `depth` (float: with NaN, infinities, -0).
    fn random_frame(channels: Channels, depth: crate::Depth, rng: &mut fastrand::Rng) -> Frame {
        let (w, h) = (5, 3);
        let n = w * h * channels.count();
        match depth {
            crate::Depth::U8 => {
                Frame::with_channels(w, h, channels, 255, Pixels::U8((0..n).map(|_| rng.u8(..)).collect()))
            }
            crate::Depth::U16 => Frame::with_channels(
                w,
                h,
                channels,
                65535,
                Pixels::U16((0..n).map(|_| rng.u16(..)).collect()),
            ),
            crate::Depth::F32 => {
                let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-40];
                let v = (0..n)
                    .map(|i| if i < special.len() { special[i] } else { rng.f32() * 2e6 - 1e6 })
                    .collect();
                Frame::with_channels(w, h, channels, 1, Pixels::F32(v))
            }
        }
    }

    fn write_in(container: Option<Container>, f: &Frame) -> Result<Vec<u8>, FrameError> {
        let mut bytes = Vec::new();
        FrameWriter::new(&mut bytes, WriteOptions { container }).write(1, f)?;
        Ok(bytes)
    }

    /// The samples' bits, for comparing float frames with NaN.
    fn bits(p: &Pixels) -> Vec<u32> {
        match p {
            Pixels::U8(v) => v.iter().map(|&s| s as u32).collect(),
            Pixels::U16(v) => v.iter().map(|&s| s as u32).collect(),
            Pixels::F32(v) => v.iter().map(|s| s.to_bits()).collect(),
        }
    }

    #[test]
    fn colour_and_float_frames_round_trip_in_every_container_that_holds_them() {
        use crate::Depth;
        let mut rng = fastrand::Rng::with_seed(26);
        let all = [Channels::Gray, Channels::GrayAlpha, Channels::Rgb, Channels::RgbAlpha];
        for depth in [Depth::U8, Depth::U16, Depth::F32] {
            for channels in all {
                let f = random_frame(channels, depth, &mut rng);
                for container in [
                    None,
                    Some(Container::Pnm),
                    Some(Container::Pam),
                    Some(Container::Png { compression: None }),
                    Some(Container::Tiff),
                    Some(Container::Pfm),
                    Some(Container::Npy),
                    Some(Container::Ppm),
                    Some(Container::Pgm),
                ] {
                    let what = format!("{depth:?} {channels:?} in {container:?}");
                    let bytes = match write_in(container, &f) {
                        Ok(b) => b,
                        Err(e) => {
                            // Refused only where the container cannot hold the frame, in one line.
                            let refused = match container {
                                Some(Container::Pgm) => channels != Channels::Gray || depth == Depth::F32,
                                Some(Container::Ppm) => channels.has_alpha() || depth == Depth::F32,
                                Some(Container::Pam | Container::Png { .. }) => depth == Depth::F32,
                                Some(Container::Tiff) => channels == Channels::GrayAlpha,
                                Some(Container::Pfm) => channels.has_alpha(),
                                _ => false,
                            };
                            assert!(refused, "{what}: {e}");
                            assert!(
                                e.message.contains("cannot hold") && !e.message.contains('\n'),
                                "{what}: {e}"
                            );
                            continue;
                        }
                    };
                    let back =
                        FrameReader::new(&bytes[..], ReadOptions::default()).next_frame().unwrap().unwrap();
                    let widened = container == Some(Container::Ppm) && channels == Channels::Gray;
                    let floated = container == Some(Container::Pfm) && depth != Depth::F32;
                    if widened {
                        assert_eq!(back.channels, Channels::Rgb, "{what}");
                        assert_eq!(back.plane(1).pixels, f.pixels, "{what}");
                    } else if floated {
                        let want: Vec<u32> = bits(&f.pixels).iter().map(|&s| (s as f32).to_bits()).collect();
                        assert_eq!((back.channels, bits(&back.pixels)), (channels, want), "{what}");
                    } else {
                        assert_eq!(
                            (back.channels, bits(&back.pixels)),
                            (channels, bits(&f.pixels)),
                            "{what}"
                        );
                        assert_eq!(back.depth(), depth, "{what}");
                    }
                }
            }
        }
    }

    /// Each refusal names only containers that hold the frame: a float gray+alpha frame refused
    /// by PFM had been sent to TIFF, which refuses gray+alpha and named PNG and PAM, which refuse
    /// float samples (`stretch --out` of a gray+alpha PAM, issue 49).
    #[test]
    fn refusals_name_containers_that_hold_the_frame() {
        use crate::Depth;
        let mut rng = fastrand::Rng::with_seed(49);
        let all = [Channels::Gray, Channels::GrayAlpha, Channels::Rgb, Channels::RgbAlpha];
        let containers = [
            Container::Pnm,
            Container::Pgm,
            Container::Ppm,
            Container::Pam,
            Container::Png { compression: None },
            Container::Tiff,
            Container::Jpeg { quality: 90 },
            Container::Pfm,
            Container::Npy,
        ];
        let mut refused = 0;
        for depth in [Depth::U8, Depth::U16, Depth::F32] {
            for channels in all {
                let f = random_frame(channels, depth, &mut rng);
                for container in containers {
                    let Err(e) = write_in(Some(container), &f) else { continue };
                    refused += 1;
                    let what = format!("{depth:?} {channels:?} in {container:?}: {e}");
                    let named = e.message.split_once(": write ").expect("names what to write").1;
                    let named: Vec<&str> =
                        named.split([' ', ',']).filter_map(|w| w.strip_prefix('.')).collect();
                    assert!(!named.is_empty(), "{what}");
                    for ext in named {
                        let instead = match ext {
                            "ppm" => Container::Ppm,
                            "pam" => Container::Pam,
                            "png" => Container::Png { compression: None },
                            "tif" => Container::Tiff,
                            "pfm" => Container::Pfm,
                            "npy" => Container::Npy,
                            other => panic!("{what}: names .{other}"),
                        };
                        assert!(write_in(Some(instead), &f).is_ok(), "{what}: .{ext} refuses it too");
                    }
                }
            }
        }
        assert!(refused > 20, "{refused} refusals");
    }

    /// A float frame (`stretch --out` of a PAM, say) goes to PFM, or NPY with alpha, whatever
    /// container it was read from: a gray+alpha PAM's had gone to PFM and tripped its assertion.
    #[test]
    fn float_frames_of_every_input_container_are_written_without_one_asked_for() {
        let mut rng = fastrand::Rng::with_seed(49);
        let all = [Channels::Gray, Channels::GrayAlpha, Channels::Rgb, Channels::RgbAlpha];
        let formats = [Format::Pgm, Format::PlainPgm, Format::Ppm, Format::Pam, Format::Pfm, Format::Npy];
        for format in formats.into_iter().chain([Format::Decoded, Format::Raw]) {
            for channels in all {
                let mut f = random_frame(channels, crate::Depth::F32, &mut rng);
                f.format = format;
                let bytes = write_in(None, &f).unwrap();
                if format == Format::Raw {
                    assert_eq!(bytes.len(), f.pixels.len() * 4, "{format:?} {channels:?}");
                    continue;
                }
                let back =
                    FrameReader::new(&bytes[..], ReadOptions::default()).next_frame().unwrap().unwrap();
                let what = format!("{format:?} {channels:?}");
                assert_eq!((back.channels, bits(&back.pixels)), (channels, bits(&f.pixels)), "{what}");
                let npy = format == Format::Npy || channels.has_alpha();
                assert_eq!(back.format, if npy { Format::Npy } else { Format::Pfm }, "{what}");
            }
        }
    }

    #[test]
    fn jpeg_takes_8_bit_gray_and_colour_and_refuses_alpha() {
        let mut rng = fastrand::Rng::with_seed(9);
        let jpeg = Some(Container::Jpeg { quality: 100 });
        for (channels, instead) in
            [(Channels::RgbAlpha, ".png, .tif or .pam"), (Channels::GrayAlpha, ".png or .pam")]
        {
            let e = write_in(jpeg, &random_frame(channels, crate::Depth::U8, &mut rng)).unwrap_err();
            let name = channels.name();
            assert_eq!(
                e.message,
                format!(
                    "a JPEG file cannot hold this 8-bit {name} frame: write {instead}, or drop the alpha \
                     first (ImageMagick: -alpha off)"
                )
            );
        }
        for channels in [Channels::Gray, Channels::Rgb] {
            let mut f = random_frame(channels, crate::Depth::U8, &mut rng);
            // Smooth samples, so quality 100 keeps them within a few levels.
            if let Pixels::U8(v) = &mut f.pixels {
                v.iter_mut().for_each(|s| *s = 100 + *s / 32);
            }
            let bytes = write_in(jpeg, &f).unwrap();
            assert_eq!(&bytes[..2], &[0xff, 0xd8]);
            let back = FrameReader::new(&bytes[..], ReadOptions::default()).next_frame().unwrap().unwrap();
            assert_eq!(back.channels, channels);
            let worst = bits(&back.pixels).iter().zip(bits(&f.pixels)).map(|(a, b)| a.abs_diff(b)).max();
            assert!(worst.unwrap() <= 8, "{channels:?}: {worst:?}");
        }
        let e = write_in(jpeg, &random_frame(Channels::Gray, crate::Depth::U16, &mut rng)).unwrap_err();
        assert!(e.message.contains("JPEG file cannot hold this 16-bit gray frame"), "{e}");
    }
}
