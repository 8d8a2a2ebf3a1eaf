//! NumPy `.npy` (format versions 1.0, 2.0 and 3.0): `\x93NUMPY`, the version, the header's length
//! (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), a Python dict literal, then the array's
//! samples in C order.
//!
//! The header is parsed here, strictly, rather than with the `npyz` crate: `npyz` reads from an
//! `io::Read` it drives itself and allocates as its header says, while the walk needs the
//! header's exact length and the array's size from the bytes of a [`Source`] before anything is
//! gathered or allocated; and the dict is small. It is read as NumPy writes it and as
//! `ast.literal_eval` reads it, within bounds: at most [`MAX_HEADER`] bytes; exactly the keys
//! `descr`, `fortran_order` and `shape`, each once, in any order, quoted with `'` or `"` (no
//! escapes); whitespace between tokens; trailing commas; whitespace after the closing brace.
//!
//! An image is an array of shape (H, W) (gray) or (H, W, C) with C in 1..=4, in C order
//! (`fortran_order: True` is refused), of one of these sample types:
//! - `|u1` as 8-bit samples, `<u2` and `>u2` as 16-bit ones;
//! - `<i2` and `>i2` (int16) as float32 samples of the same values, every one exact: as numbers,
//!   as NumPy and scikit-image hold them (-5 stays -5.0), for the tools that take float frames;
//! - `<f4` and `>f4` as float32, bit for bit;
//! - `<f8` and `>f8` as float32 rounded to nearest, ties to even (as NumPy's `astype(np.float32)`):
//!   magnitudes past float32's range become infinities, NaN stays NaN (its payload narrowed);
//! - `|b1` (bool) as 8-bit samples of maxval 1, 0 for False and 1 for True (any byte but 0 is
//!   True): black and white, as NumPy's 0 and 1 and scikit-image's 0.0 and 1.0.
//!
//! Writing uses format 1.0 as `numpy.save` writes it, byte for byte: little-endian samples, the
//! header padded with spaces and a newline so that the samples start at a multiple of 64 bytes.

use crate::samples::le_bytes;
use std::fmt;

use super::{f32_be, f32_le, f64_be, f64_le, samples, shown, want, Declared, Decoded, Limits, Raster};
use crate::decode::source::Source;
use crate::{Annotation, Depth, FrameError};

/// The longest header read.
const MAX_HEADER: usize = 64 << 10;

/// Bytes of the magic, the version and the header length in format 1.0.
const PREFIX_V1: usize = 10;

/// Sample types read as images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Descr {
    U8,
    Bool,
    U16 { big: bool },
    I16 { big: bool },
    F32 { big: bool },
    F64 { big: bool },
}

impl Descr {
    fn of(text: &str) -> Option<Descr> {
        Some(match text {
            "|u1" => Descr::U8,
            "|b1" => Descr::Bool,
            "<u2" => Descr::U16 { big: false },
            ">u2" => Descr::U16 { big: true },
            "<i2" => Descr::I16 { big: false },
            ">i2" => Descr::I16 { big: true },
            "<f4" => Descr::F32 { big: false },
            ">f4" => Descr::F32 { big: true },
            "<f8" => Descr::F64 { big: false },
            ">f8" => Descr::F64 { big: true },
            _ => return None,
        })
    }

    fn size(self) -> u64 {
        match self {
            Descr::U8 | Descr::Bool => 1,
            Descr::U16 { .. } | Descr::I16 { .. } => 2,
            Descr::F32 { .. } => 4,
            Descr::F64 { .. } => 8,
        }
    }

    /// Bytes of a decoded sample.
    fn out_size(self) -> u64 {
        match self {
            Descr::I16 { .. } => 4,
            d => d.size().min(4),
        }
    }
}

/// What the walk over one `.npy` found.
#[derive(Debug)]
pub(crate) struct NpyWalk {
    width: usize,
    height: usize,
    channels: usize,
    descr: Descr,
    data_at: usize,
    /// The header's `# histopipe-*` comments.
    pub(crate) annotations: Vec<Annotation>,
}

impl NpyWalk {
    /// The pixels' width, height and channels.
    pub(crate) fn shape(&self) -> (usize, usize, usize) {
        (self.width, self.height, self.channels)
    }

    /// The samples' maxval (see [`Decoded`]): 255 for bytes, 65535 for 16-bit integers, 1 for the
    /// rest.
    pub(crate) fn maxval(&self) -> u16 {
        match self.descr {
            Descr::U8 => 255,
            Descr::U16 { .. } => 65535,
            Descr::Bool | Descr::I16 { .. } | Descr::F32 { .. } | Descr::F64 { .. } => 1,
        }
    }

    /// The depth of samples that are read as they lie, straight into the frame's memory (bytes,
    /// 16-bit integers and 32-bit floats), and whether their bytes are big-endian; `None` for
    /// those that [`decode`] converts (bool, int16, float64).
    pub(crate) fn read_as_they_lie(&self) -> Option<(Depth, bool)> {
        match self.descr {
            Descr::U8 => Some((Depth::U8, false)),
            Descr::U16 { big } => Some((Depth::U16, big)),
            Descr::F32 { big } => Some((Depth::F32, big)),
            Descr::Bool | Descr::I16 { .. } | Descr::F64 { .. } => None,
        }
    }
}

/// The dict of a header, as read.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
    /// The `# histopipe-KEY VALUE` comments after the dict ([`encode_npy_header_noted`]).
    annotations: Vec<Annotation>,
}

/// A strict reader of the header's Python literal.
struct Literal<'a> {
    text: &'a [u8],
    at: usize,
}

impl Literal<'_> {
    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.space();
        let hit = self.text.get(self.at) == Some(&b);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.eat(b) {
            return Ok(());
        }
        let rest = &self.text[self.at.min(self.text.len())..];
        Err(format!("'{}' expected at \"{}\"", b as char, shown(rest)))
    }

    fn string(&mut self) -> Result<&str, String> {
        self.space();
        let quote = match self.text.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("a string expected at \"{}\"", shown(&self.text[self.at..]))),
        };
        let start = self.at + 1;
        let len = self.text[start..].iter().position(|&b| b == quote).ok_or("an unclosed string")?;
        let body = &self.text[start..start + len];
        if len > 64 || body.iter().any(|&b| b == b'\\' || !(0x20..0x7f).contains(&b)) {
            return Err(format!("string \"{}\" (at most 64 plain characters)", shown(body)));
        }
        self.at = start + len + 1;
        // Printable ASCII is UTF-8.
        Ok(std::str::from_utf8(body).unwrap_or_default())
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.space();
        for (word, value) in [(&b"True"[..], true), (b"False", false)] {
            if self.text[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(format!("True or False expected at \"{}\"", shown(&self.text[self.at..])))
    }

    fn integer(&mut self) -> Result<u64, String> {
        self.space();
        let digits = self.text[self.at..].iter().take_while(|b| b.is_ascii_digit()).count();
        let text = &self.text[self.at..self.at + digits];
        // Python 3 has no leading zeros in a decimal literal.
        let value = match text {
            [] | [b'0', _, ..] => None,
            _ => std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()),
        };
        let bad = || format!("a size expected at \"{}\"", shown(&self.text[self.at..]));
        let value = value.ok_or_else(bad)?;
        self.at += digits;
        Ok(value)
    }

    /// A tuple of sizes: `()`, `(n,)`, `(n, m)`, ... with an optional trailing comma, at most 32.
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        let mut comma = false;
        while !self.eat(b')') {
            if dims.len() == 32 {
                return Err("a shape of over 32 dimensions".into());
            }
            if !dims.is_empty() && !comma {
                self.expect(b',')?;
            }
            dims.push(self.integer()?);
            comma = self.eat(b',');
        }
        if dims.len() == 1 && !comma {
            return Err("shape (n) is not a tuple: (n,)".into());
        }
        Ok(dims)
    }
}

fn parse_header(text: &[u8]) -> Result<Header, String> {
    let mut p = Literal { text, at: 0 };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    p.expect(b'{')?;
    while !p.eat(b'}') {
        let key = p.string()?.to_string();
        p.expect(b':')?;
        let twice = match key.as_str() {
            "descr" => descr.replace(p.string()?.to_string()).is_some(),
            "fortran_order" => fortran_order.replace(p.boolean()?).is_some(),
            "shape" => shape.replace(p.shape()?).is_some(),
            _ => return Err(format!("key '{key}' (only descr, fortran_order and shape)")),
        };
        if twice {
            return Err(format!("key '{key}' twice"));
        }
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    // After the dict, Python comments (as ast.literal_eval, which np.load uses, skips them): the
    // `histopipe-*` ones are annotations.
    let mut annotations = Vec::new();
    p.space();
    while p.at < text.len() {
        if text[p.at] != b'#' {
            return Err(format!("\"{}\" after the dict", shown(&text[p.at..])));
        }
        let end = text[p.at..].iter().position(|&b| b == b'\n').map_or(text.len(), |k| p.at + k);
        let line = String::from_utf8_lossy(&text[p.at..end]);
        annotations.extend(line.split('#').filter_map(Annotation::parse_comment));
        p.at = end;
        p.space();
    }
    match (descr, fortran_order, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => {
            Ok(Header { descr, fortran_order, shape, annotations })
        }
        _ => Err("it lacks one of descr, fortran_order and shape".into()),
    }
}

/// Takes one `.npy`: its header, then, once the array fits the limits, its samples.
pub(crate) fn walk(src: &mut impl Source, limits: &Limits) -> Result<NpyWalk, FrameError> {
    let (walk, len) = walk_header(src, limits)?;
    want(src, len, limits.frame, "NPY samples")?;
    Ok(walk)
}

/// Takes one `.npy`'s header, and checks its array against the limits: what it says, and the
/// length of the whole image (header and samples), whose samples follow in `src`.
pub(crate) fn walk_header(src: &mut impl Source, limits: &Limits) -> Result<(NpyWalk, usize), FrameError> {
    let frame = limits.frame;
    let bad = |what: String| FrameError::invalid(frame, format!("bad NPY header: {what}"));
    want(src, 8, frame, "NPY header")?;
    let got = src.got();
    if &got[..6] != b"\x93NUMPY" {
        return Err(bad(format!("magic \"{}\"", shown(&got[..6]))));
    }
    let prefix = match (got[6], got[7]) {
        (1, 0) => PREFIX_V1,
        (2 | 3, 0) => 12,
        (major, minor) => return Err(bad(format!("format version {major}.{minor} (1.0, 2.0 or 3.0)"))),
    };
    want(src, prefix, frame, "NPY header")?;
    let got = src.got();
    let header_len = match prefix {
        PREFIX_V1 => u16::from_le_bytes([got[8], got[9]]) as usize,
        _ => u32::from_le_bytes([got[8], got[9], got[10], got[11]]) as usize,
    };
    if header_len > MAX_HEADER {
        return Err(bad(format!("{header_len} bytes long (at most {MAX_HEADER})")));
    }
    let data_at = prefix + header_len;
    want(src, data_at, frame, "NPY header")?;
    let header = parse_header(&src.got()[prefix..data_at]).map_err(bad)?;
    let descr = Descr::of(&header.descr).ok_or_else(|| {
        bad(format!("descr '{}' (|u1, |b1, <u2, >u2, <i2, >i2, <f4, >f4, <f8 or >f8)", header.descr))
    })?;
    if header.fortran_order {
        return Err(bad("fortran_order True: only C order is read".into()));
    }
    let (height, width, channels) = match header.shape[..] {
        [h, w] => (h, w, 1),
        [h, w, c @ 1..=4] => (h, w, c),
        _ => {
            let dims: Vec<String> = header.shape.iter().map(u64::to_string).collect();
            return Err(bad(format!(
                "shape ({}): an image is (H, W) or (H, W, C), C 1 to 4",
                dims.join(", ")
            )));
        }
    };
    if width == 0 || height == 0 {
        return Err(bad(format!("shape of {height}x{width} pixels: an image has at least one")));
    }
    let data = width.saturating_mul(height).saturating_mul(channels).saturating_mul(descr.size());
    let declared = Declared {
        format: "NPY",
        width,
        height,
        channels,
        sample_bytes: descr.out_size(),
        image_len: (data_at as u64).saturating_add(data),
    };
    let len = limits.check(&declared)?;
    let walk = NpyWalk {
        width: width as usize,
        height: height as usize,
        channels: channels as usize,
        descr,
        data_at,
        annotations: header.annotations,
    };
    Ok((walk, len))
}

/// Decodes a walked `.npy`.
pub(crate) fn decode(bytes: &[u8], walk: &NpyWalk, frame: usize) -> Result<Decoded, FrameError> {
    let n = walk.width * walk.height * walk.channels;
    let size = walk.descr.size() as usize;
    let data = bytes.get(walk.data_at..walk.data_at + n * size);
    let data = data.ok_or_else(|| FrameError::invalid(frame, "truncated NPY samples"))?;
    let raster = match walk.descr {
        Descr::U8 => Raster::U8(data.to_vec()),
        Descr::Bool => Raster::U8(data.iter().map(|&b| (b != 0) as u8).collect()),
        Descr::U16 { big: false } => Raster::U16(samples(data, 2, |b| u16::from_le_bytes([b[0], b[1]]))),
        Descr::U16 { big: true } => Raster::U16(samples(data, 2, |b| u16::from_be_bytes([b[0], b[1]]))),
        Descr::I16 { big: false } => {
            Raster::F32(samples(data, 2, |b| i16::from_le_bytes([b[0], b[1]]) as f32))
        }
        Descr::I16 { big: true } => {
            Raster::F32(samples(data, 2, |b| i16::from_be_bytes([b[0], b[1]]) as f32))
        }
        Descr::F32 { big: false } => Raster::F32(samples(data, 4, f32_le)),
        Descr::F32 { big: true } => Raster::F32(samples(data, 4, f32_be)),
        Descr::F64 { big: false } => Raster::F32(samples(data, 8, |b| f64_le(b) as f32)),
        Descr::F64 { big: true } => Raster::F32(samples(data, 8, |b| f64_be(b) as f32)),
    };
    Ok(Decoded {
        width: walk.width,
        height: walk.height,
        channels: walk.channels,
        raster,
        maxval: walk.maxval(),
    })
}

/// The samples of an array to write with [`encode_npy_array`], in C order (last index fastest).
#[derive(Debug, Clone, Copy)]
pub enum NpyData<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    F32(&'a [f32]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F64(&'a [f64]),
}

impl NpyData<'_> {
    fn len(&self) -> usize {
        match self {
            NpyData::U8(v) => v.len(),
            NpyData::U16(v) => v.len(),
            NpyData::F32(v) => v.len(),
            NpyData::U32(v) => v.len(),
            NpyData::U64(v) => v.len(),
            NpyData::F64(v) => v.len(),
        }
    }

    fn descr(&self) -> &'static str {
        match self {
            NpyData::U8(_) => "|u1",
            NpyData::U16(_) => "<u2",
            NpyData::F32(_) => "<f4",
            NpyData::U32(_) => "<u4",
            NpyData::U64(_) => "<u8",
            NpyData::F64(_) => "<f8",
        }
    }

    fn write_le(&self, out: &mut Vec<u8>) {
        match self {
            NpyData::U8(v) => out.extend_from_slice(v),
            NpyData::U16(v) => out.extend_from_slice(&le_bytes(v)),
            NpyData::F32(v) => out.extend_from_slice(&le_bytes(v)),
            NpyData::U32(v) => out.extend_from_slice(&le_bytes(v)),
            NpyData::U64(v) => out.extend_from_slice(&le_bytes(v)),
            NpyData::F64(v) => out.extend_from_slice(&le_bytes(v)),
        }
    }
}

/// An array's shape that does not hold as many values as it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyShapeError {
    pub shape: Vec<usize>,
    pub values: usize,
}

impl fmt::Display for NpyShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        write!(f, "an array of shape ({}) does not hold {} values", dims.join(", "), self.values)
    }
}

impl std::error::Error for NpyShapeError {}

/// A `.npy` (format 1.0) of the array of `shape` holding `data`, little-endian, as `numpy.save`
/// writes it: any number of dimensions (a table is `&[rows, columns]`), `()` for one value.
/// Refused when the shape's size is not `data`'s length.
///
/// # Example
/// ```
/// use histopipe_frame::{encode_npy_array, NpyData};
/// let npy = encode_npy_array(&[2, 3], NpyData::U64(&[1, 2, 3, 4, 5, 6])).unwrap();
/// assert_eq!(npy.len(), 128 + 6 * 8);
/// assert!(encode_npy_array(&[4], NpyData::F64(&[1.0])).is_err());
/// ```
pub fn encode_npy_array(shape: &[usize], data: NpyData) -> Result<Vec<u8>, NpyShapeError> {
    encode_npy_array_noted(shape, data, &[])
}

/// [`encode_npy_array`] with `annotations` in its header ([`encode_npy_header_noted`]).
pub(crate) fn encode_npy_array_noted(
    shape: &[usize],
    data: NpyData,
    annotations: &[Annotation],
) -> Result<Vec<u8>, NpyShapeError> {
    let size = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if size != Some(data.len()) {
        return Err(NpyShapeError { shape: shape.to_vec(), values: data.len() });
    }
    let mut out = encode_npy_header_noted(shape, &data, annotations);
    out.reserve_exact(data.len() * 8);
    data.write_le(&mut out);
    Ok(out)
}

/// The header of a `.npy` (format 1.0) of the array of `shape` of `data`'s type, as
/// [`encode_npy_array`] writes it, for a caller that writes the values after it itself, little-endian
/// in C order (a large array, in pieces): `data`'s length is not checked against the shape.
///
/// # Example
/// ```
/// use histopipe_frame::{encode_npy_header, encode_npy_array, NpyData};
/// let header = encode_npy_header(&[2, 1], &NpyData::U32(&[]));
/// let mut npy = header.clone();
/// npy.extend([7u32, 9].iter().flat_map(|v| v.to_le_bytes()));
/// assert_eq!(npy, encode_npy_array(&[2, 1], NpyData::U32(&[7, 9])).unwrap());
/// assert_eq!(header.len() % 64, 0);
/// ```
pub fn encode_npy_header(shape: &[usize], data: &NpyData) -> Vec<u8> {
    encode_npy_header_noted(shape, data, &[])
}

/// The longest header written with annotations: np.load refuses one over 10000 bytes (its
/// `max_header_size`); annotations that would make it longer are left out.
const MAX_NOTED_HEADER: usize = 4096;

/// [`encode_npy_header`] with `annotations` after the dict, on its line, each a Python comment
/// `# histopipe-KEY VALUE` (np.load's `ast.literal_eval` skips them; this crate's reader takes
/// them back): those whose value holds no `#`, while the header stays under 4096 bytes.
pub(crate) fn encode_npy_header_noted(
    shape: &[usize],
    data: &NpyData,
    annotations: &[Annotation],
) -> Vec<u8> {
    // Python's repr of a tuple: a one-element tuple keeps its comma.
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {tuple}, }}", data.descr());
    for a in annotations.iter().filter(|a| !a.value.contains('#')) {
        let note = format!(" # histopipe-{} {}", a.key, a.value);
        if PREFIX_V1 + dict.len() + note.len() + 65 <= MAX_NOTED_HEADER {
            dict.push_str(&note);
        }
    }
    // numpy's `_wrap_header`: padded so that the samples start at a multiple of 64, a full 64 when
    // the dict and its newline already end there. A header over format 1.0's 65535 bytes needs
    // over 6000 dimensions; such a shape is no array this crate writes.
    let pad = 64 - (PREFIX_V1 + dict.len() + 1) % 64;
    let header_len = dict.len() + pad + 1;
    let header_len = u16::try_from(header_len).unwrap_or(u16::MAX);
    let mut out = Vec::with_capacity(PREFIX_V1 + header_len as usize);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend(header_len.to_le_bytes());
    out.extend(dict.bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// A `.npy` of one image: shape (H, W) for one channel, (H, W, C) for more, `|u1`, `<u2` or `<f4`
/// samples as [`encode_npy_array`] writes them.
///
/// # Panics
/// When `raster` does not hold `width * height * channels` samples.
///
/// # Example
/// ```
/// use histopipe_frame::{decode_float, encode_npy, Raster};
/// let npy = encode_npy(2, 1, 3, &Raster::U8(vec![1, 2, 3, 4, 5, 6]));
/// let (image, _) = decode_float(&npy, 1, 100).unwrap();
/// assert_eq!((image.width, image.height, image.channels), (2, 1, 3));
/// ```
pub fn encode_npy(width: usize, height: usize, channels: usize, raster: &Raster) -> Vec<u8> {
    let data = match raster {
        Raster::U8(v) => NpyData::U8(v),
        Raster::U16(v) => NpyData::U16(v),
        Raster::F32(v) => NpyData::F32(v),
    };
    let shape = if channels == 1 { vec![height, width] } else { vec![height, width, channels] };
    encode_npy_array(&shape, data).unwrap_or_else(|e| panic!("encode_npy: {e}"))
}

#[cfg(test)]
mod tests {
    use super::super::{decode_float, read_float};
    use super::*;
    use crate::FrameErrorKind;

    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.bytes());
        out.extend(data);
        out
    }

    fn error(bytes: &[u8]) -> String {
        decode_float(bytes, 1, 1 << 20).unwrap_err().message
    }

    #[test]
    fn our_output_is_what_numpy_save_writes() {
        // tests/data/README.md says how numpy 2.4 made these.
        let values: Vec<f32> = (0..12).map(|i| i as f32 * 0.25 - 1.0).collect();
        let mut gray = values.clone();
        gray[5] = f32::NAN;
        gray[6] = f32::INFINITY;
        gray[7] = -0.0;
        assert_eq!(
            encode_npy(4, 3, 1, &Raster::F32(gray)),
            include_bytes!("../../tests/data/numpy_f4_3x4.npy")
        );
        let rgb: Vec<u8> = (0..18).map(|i| i * 13).collect();
        assert_eq!(
            encode_npy(3, 2, 3, &Raster::U8(rgb)),
            include_bytes!("../../tests/data/numpy_u1_2x3x3.npy")
        );
        let deep: Vec<u16> = (0..4).map(|i| 65535 - i * 1000).collect();
        assert_eq!(
            encode_npy(1, 1, 4, &Raster::U16(deep)),
            include_bytes!("../../tests/data/numpy_u2_1x1x4.npy")
        );
        let table = [0, 1, 1_000_000_007, 1 << 40, u64::MAX - 1, u64::MAX];
        let table = encode_npy_array(&[2, 3], NpyData::U64(&table)).unwrap();
        assert_eq!(table, include_bytes!("../../tests/data/numpy_u8_table_2x3.npy"));
        let cube: Vec<f64> = (0..24).map(|i| i as f64 / 3.0).collect();
        let cube = encode_npy_array(&[2, 3, 4], NpyData::F64(&cube)).unwrap();
        assert_eq!(cube, include_bytes!("../../tests/data/numpy_f8_2x3x4.npy"));
        let column = encode_npy_array(&[5], NpyData::F64(&[0.5; 5])).unwrap();
        assert_eq!(column, include_bytes!("../../tests/data/numpy_f8_5.npy"));
    }

    #[test]
    fn files_numpy_wrote_are_read() {
        let (d, _) = decode_float(include_bytes!("../../tests/data/numpy_f8_be_2x2.npy"), 1, 100).unwrap();
        // 1/3 rounds to the nearest float32; 1e300 is past its range.
        let want = [1.0 / 3.0f32, 1e300f64 as f32, -2.5, f32::NAN];
        assert_eq!(format!("{:?}", d.raster), format!("{:?}", Raster::F32(want.to_vec())));
        assert_eq!(want[1], f32::INFINITY);
        let (d, _) = decode_float(include_bytes!("../../tests/data/numpy_b1_2x3.npy"), 1, 100).unwrap();
        assert_eq!((d.raster, d.maxval), (Raster::U8(vec![1, 0, 1, 0, 0, 1]), 1));
        let (d, _) = decode_float(include_bytes!("../../tests/data/numpy_u2_be_1x3x1.npy"), 1, 100).unwrap();
        assert_eq!((d.width, d.height, d.channels), (3, 1, 1));
        assert_eq!(d.raster, Raster::U16(vec![1, 256, 65535]));
        let (d, _) = decode_float(include_bytes!("../../tests/data/numpy_f4_be_v2_3x1.npy"), 1, 100).unwrap();
        assert_eq!((d.width, d.height), (1, 3));
        assert_eq!(d.raster, Raster::F32(vec![0.5, -1.5, 3.0e38]));
    }

    /// int16 samples are float32 of their values, every one exact, in either byte order.
    #[test]
    fn signed_16_bit_samples_are_their_values() {
        let values = [-32768i16, -5, -1, 0, 1, 300, 32767, -256];
        for (descr, bytes) in [
            ("<i2", values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()),
            (">i2", values.iter().flat_map(|v| v.to_be_bytes()).collect()),
        ] {
            let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2, 2, 2)}}");
            let (d, taken) = decode_float(&npy(&header, &bytes), 1, 100).unwrap();
            assert_eq!(taken, npy(&header, &bytes).len());
            assert_eq!((d.width, d.height, d.channels, d.maxval), (2, 2, 2, 1));
            assert_eq!(d.raster, Raster::F32(values.iter().map(|&v| v as f32).collect()), "{descr}");
        }
    }

    #[test]
    fn round_trips_and_one_element_dimensions() {
        for (w, h, c) in [(1, 1, 1), (1, 5, 1), (5, 1, 1), (1, 1, 4), (3, 2, 2)] {
            let v: Vec<f32> = (0..w * h * c).map(|i| i as f32 - 0.5).collect();
            let bytes = encode_npy(w, h, c, &Raster::F32(v.clone()));
            assert_eq!(bytes.len() % 64, (w * h * c * 4) % 64);
            let (d, taken) = decode_float(&bytes, 1, 100).unwrap();
            assert_eq!(taken, bytes.len());
            assert_eq!((d.width, d.height, d.channels, d.raster), (w, h, c, Raster::F32(v)));
        }
        // (H, W, 1) is gray too.
        let d = decode_float(&npy("{'descr':'|u1','fortran_order':False,'shape':(1,2,1)}", &[7, 8]), 1, 9);
        assert_eq!(d.unwrap().0.raster, Raster::U8(vec![7, 8]));
    }

    #[test]
    fn the_dict_is_read_in_any_order_with_loose_spacing() {
        let header = "{ \"shape\" : ( 1 , 2 , ) ,'fortran_order':False,\n'descr' :'<f4',}  \n";
        let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let (d, _) = decode_float(&npy(header, &data), 1, 100).unwrap();
        assert_eq!(d.raster, Raster::F32(vec![1.0, 2.0]));
        let mut v3 = b"\x93NUMPY\x03\x00".to_vec();
        let header = "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1)}\n";
        v3.extend((header.len() as u32).to_le_bytes());
        v3.extend(header.bytes());
        v3.push(9);
        assert_eq!(decode_float(&v3, 1, 100).unwrap().0.raster, Raster::U8(vec![9]));
    }

    /// Annotations go after the dict as Python comments (np.load skips them: tests/tools/iradon.rs
    /// loads radon's) and come back; other comments are skipped; a value holding `#`, or one that
    /// would make the header over 4096 bytes, is left out; text that is no comment is refused.
    #[test]
    fn annotations_are_comments_after_the_dict() {
        let notes = [
            Annotation { key: "angles".into(), value: "0,1.5,-3".into() },
            Annotation { key: "x-1".into(), value: String::new() },
            Annotation { key: "hash".into(), value: "a#b".into() },
            Annotation { key: "long".into(), value: "9".repeat(5000) },
        ];
        let noted = encode_npy_array_noted(&[1, 2], NpyData::U8(&[7, 8]), &notes).unwrap();
        let header = String::from_utf8_lossy(&noted[10..noted.len() - 2]).into_owned();
        assert!(
            header.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2), } # histopipe-angles 0,1.5,-3 # histopipe-x-1 "),
            "{header}"
        );
        assert!(!header.contains("hash") && !header.contains("long"), "{header}");
        assert_eq!((noted.len() - 2) % 64, 0);
        let mut src = crate::decode::source::SliceSource::new(&noted);
        let limits = Limits { frame: 1, max_pixels: 100, copied: true, gray: false };
        let walked = walk(&mut src, &limits).unwrap();
        assert_eq!(walked.annotations, notes[..2].to_vec());
        assert_eq!(decode_float(&noted, 1, 100).unwrap().0.raster, Raster::U8(vec![7, 8]));
        let other =
            npy("{'descr':'|u1','fortran_order':False,'shape':(1,1)} # made by hand\n# histopipe-k v", &[1]);
        let mut src = crate::decode::source::SliceSource::new(&other);
        let walked = walk(&mut src, &limits).unwrap();
        assert_eq!(walked.annotations, vec![Annotation { key: "k".into(), value: "v".into() }]);
        let junk = npy("{'descr':'|u1','fortran_order':False,'shape':(1,1)} # ok\n x", &[1]);
        let e = error(&junk);
        assert!(e.contains("\"x\" after the dict"), "{e}");
    }

    #[test]
    fn bad_dicts_are_refused_in_one_line() {
        let shape =
            |s: &str| npy(&format!("{{'descr': '|u1', 'fortran_order': False, 'shape': {s}}}"), &[0; 64]);
        for (bytes, message) in [
            (shape("(2)"), "shape (n) is not a tuple: (n,)"),
            (shape("(4,)"), "shape (4): an image is (H, W) or (H, W, C), C 1 to 4"),
            (shape("(1, 1, 5)"), "shape (1, 1, 5): an image is (H, W) or (H, W, C), C 1 to 4"),
            (shape("(0, 3)"), "shape of 0x3 pixels: an image has at least one"),
            (shape("(01, 3)"), "a size expected at \"01, 3)}\""),
            (shape("(-1, 3)"), "a size expected at \"-1, 3)}\""),
            (shape("(1 2)"), "',' expected at \"2)}\""),
            (shape("(1, 99999999999999999999)"), "a size expected at \"99999999999999999999)}\""),
            (
                npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1)}", &[0; 4]),
                "descr '<i4' (|u1, |b1, <u2, >u2, <i2, >i2, <f4, >f4, <f8 or >f8)",
            ),
            (
                npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1)}", &[0; 4]),
                "fortran_order True: only C order is read",
            ),
            (
                npy("{'descr': '|u1', 'shape': (1, 1)}", &[0]),
                "it lacks one of descr, fortran_order and shape",
            ),
            (npy("{'descr': '|u1', 'descr': '|u1'}", &[0]), "key 'descr' twice"),
            (npy("{'descr': '|u1', 'x': 1}", &[0]), "key 'x' (only descr, fortran_order and shape)"),
            (npy("{'descr': '|u\\x31'}", &[0]), "string \"|u\\\\x31\" (at most 64 plain characters)"),
            (npy("{'descr': '|u1", &[0]), "an unclosed string"),
            (npy("{'descr': '|u1', 'fortran_order': false}", &[0]), "True or False expected at \"false}\""),
            (
                npy("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1)} x", &[0]),
                "\"x\" after the dict",
            ),
            (npy("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1)", &[0]), "'}' expected at \"\""),
            (npy("['descr']", &[0]), "'{' expected at \"['descr']\""),
        ] {
            assert_eq!(error(&bytes), format!("bad NPY header: {message}"), "{}", shown(&bytes));
        }
        let mut long = b"\x93NUMPY\x02\x00".to_vec();
        long.extend(u32::MAX.to_le_bytes());
        assert_eq!(error(&long), "bad NPY header: 4294967295 bytes long (at most 65536)");
        assert_eq!(error(b"\x93NUMPY\x04\x00"), "bad NPY header: format version 4.0 (1.0, 2.0 or 3.0)");
        assert_eq!(error(b"\x93NUMPX\x01\x00"), "bad NPY header: magic \"\\x93NUMPX\"");
        assert_eq!(error(b"\x93NUMPY\x01\x00\x10\x00{"), "truncated NPY header");
    }

    #[test]
    fn huge_arrays_are_refused_before_allocation() {
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000, 4000000000, 4)}";
        let e = decode_float(&npy(header, &[]), 1, 1 << 20).unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::TooLarge);
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 1)}";
        let e = decode_float(&npy(header, &[]), 1, u64::MAX).unwrap_err();
        assert!(e.kind == FrameErrorKind::TooLarge || e.message.contains("too large"), "{e}");
        // Within the limits but cut short: the reader gathers only what came.
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000)}";
        let mut input = &npy(header, &[0; 100])[..];
        assert_eq!(read_float(&mut input, 1, 1 << 20).unwrap_err().message, "truncated NPY samples");
    }

    #[test]
    fn a_shape_that_does_not_hold_the_data_is_refused() {
        let e = encode_npy_array(&[2, 2], NpyData::U8(&[1, 2, 3])).unwrap_err();
        assert_eq!(e.to_string(), "an array of shape (2, 2) does not hold 3 values");
        let e = encode_npy_array(&[usize::MAX, 2], NpyData::U8(&[])).unwrap_err();
        assert_eq!(e.values, 0);
        assert_eq!(encode_npy_array(&[], NpyData::F64(&[2.0])).unwrap().len(), 128 + 8);
    }
}
