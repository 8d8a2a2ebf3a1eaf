use crate::{Geometry, Samples, Source};

/// Sample type. An integer frame is 8-bit exactly when its maxval is at most 255 (the PGM rule);
/// a float frame holds 32-bit IEEE samples of any value, NaN and infinities included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    U8,
    U16,
    F32,
}

impl Depth {
    pub fn for_maxval(maxval: u16) -> Depth {
        if maxval <= 255 {
            Depth::U8
        } else {
            Depth::U16
        }
    }

    pub fn bytes(self) -> usize {
        match self {
            Depth::U8 => 1,
            Depth::U16 => 2,
            Depth::F32 => 4,
        }
    }

    /// Whether samples of this type are integers (with a maxval).
    pub fn is_integer(self) -> bool {
        self != Depth::F32
    }

    /// The type's usual name in messages: `8-bit`, `16-bit`, `32-bit float`.
    pub fn name(self) -> &'static str {
        match self {
            Depth::U8 => "8-bit",
            Depth::U16 => "16-bit",
            Depth::F32 => "32-bit float",
        }
    }
}

/// What the samples of a pixel are, in order: PAM's tuple types. Colour is R, G, B; alpha last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channels {
    Gray,
    GrayAlpha,
    Rgb,
    RgbAlpha,
}

impl Channels {
    /// Samples a pixel.
    pub fn count(self) -> usize {
        match self {
            Channels::Gray => 1,
            Channels::GrayAlpha => 2,
            Channels::Rgb => 3,
            Channels::RgbAlpha => 4,
        }
    }

    /// The layout of `count` samples a pixel (1 to 4).
    pub fn of_count(count: usize) -> Option<Channels> {
        Some(match count {
            1 => Channels::Gray,
            2 => Channels::GrayAlpha,
            3 => Channels::Rgb,
            4 => Channels::RgbAlpha,
            _ => return None,
        })
    }

    pub fn has_alpha(self) -> bool {
        matches!(self, Channels::GrayAlpha | Channels::RgbAlpha)
    }

    pub fn is_colour(self) -> bool {
        matches!(self, Channels::Rgb | Channels::RgbAlpha)
    }

    /// Samples a pixel that are not alpha: 1 or 3.
    pub fn colour_count(self) -> usize {
        if self.is_colour() {
            3
        } else {
            1
        }
    }

    /// The same without alpha.
    pub fn without_alpha(self) -> Channels {
        if self.is_colour() {
            Channels::Rgb
        } else {
            Channels::Gray
        }
    }

    /// PAM's TUPLTYPE.
    pub fn tupltype(self) -> &'static str {
        match self {
            Channels::Gray => "GRAYSCALE",
            Channels::GrayAlpha => "GRAYSCALE_ALPHA",
            Channels::Rgb => "RGB",
            Channels::RgbAlpha => "RGB_ALPHA",
        }
    }

    /// The layout PAM's `TUPLTYPE` names (`GRAYSCALE`, `GRAYSCALE_ALPHA`, `RGB`, `RGB_ALPHA`).
    pub fn of_tupltype(tupltype: &[u8]) -> Option<Channels> {
        Some(match tupltype {
            b"GRAYSCALE" => Channels::Gray,
            b"GRAYSCALE_ALPHA" => Channels::GrayAlpha,
            b"RGB" => Channels::Rgb,
            b"RGB_ALPHA" => Channels::RgbAlpha,
            _ => return None,
        })
    }

    /// The name of one channel, for tables: `gray`, `alpha`, `red`, `green`, `blue`.
    pub fn channel_name(self, c: usize) -> &'static str {
        match (self.is_colour(), c) {
            (false, 0) => "gray",
            (true, 0) => "red",
            (true, 1) => "green",
            (true, 2) => "blue",
            _ => "alpha",
        }
    }

    /// Words for messages: `gray`, `gray+alpha`, `RGB`, `RGBA`.
    pub fn name(self) -> &'static str {
        match self {
            Channels::Gray => "gray",
            Channels::GrayAlpha => "gray+alpha",
            Channels::Rgb => "RGB",
            Channels::RgbAlpha => "RGBA",
        }
    }
}

/// The samples of a frame, row-major, `width * height * channels` of them, a pixel's samples
/// together.
#[derive(Debug, Clone, PartialEq)]
pub enum Pixels {
    U8(Samples<u8>),
    U16(Samples<u16>),
    F32(Samples<f32>),
}

impl From<Vec<u8>> for Pixels {
    fn from(v: Vec<u8>) -> Pixels {
        Pixels::U8(v.into())
    }
}

impl From<Vec<u16>> for Pixels {
    fn from(v: Vec<u16>) -> Pixels {
        Pixels::U16(v.into())
    }
}

impl From<Vec<f32>> for Pixels {
    fn from(v: Vec<f32>) -> Pixels {
        Pixels::F32(v.into())
    }
}

impl Pixels {
    pub fn len(&self) -> usize {
        match self {
            Pixels::U8(v) => v.len(),
            Pixels::U16(v) => v.len(),
            Pixels::F32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn depth(&self) -> Depth {
        match self {
            Pixels::U8(_) => Depth::U8,
            Pixels::U16(_) => Depth::U16,
            Pixels::F32(_) => Depth::F32,
        }
    }

    /// The integer sample at index `i`, widened (a float sample: its value cast, saturating).
    pub fn get(&self, i: usize) -> u16 {
        match self {
            Pixels::U8(v) => v[i] as u16,
            Pixels::U16(v) => v[i],
            Pixels::F32(v) => v[i] as u16,
        }
    }

    /// Every `step`-th sample from `first`: one channel of interleaved samples.
    fn strided(&self, first: usize, step: usize) -> Pixels {
        match self {
            Pixels::U8(v) => {
                Pixels::U8(v.iter().skip(first).step_by(step).copied().collect::<Vec<_>>().into())
            }
            Pixels::U16(v) => {
                Pixels::U16(v.iter().skip(first).step_by(step).copied().collect::<Vec<_>>().into())
            }
            Pixels::F32(v) => {
                Pixels::F32(v.iter().skip(first).step_by(step).copied().collect::<Vec<_>>().into())
            }
        }
    }
}

/// Interleaves planes of one sample type: pixel i's samples are plane 0's i, plane 1's i, ...
fn interleave<T: Copy + Default>(planes: &[&[T]]) -> Vec<T> {
    let n = planes.len();
    let len = planes.first().map_or(0, |p| p.len());
    let mut out = vec![T::default(); len * n];
    for (c, plane) in planes.iter().enumerate() {
        for (o, &s) in out[c..].iter_mut().step_by(n).zip(plane.iter()) {
            *o = s;
        }
    }
    out
}

/// The container a frame was read from; a filter writes its output frame in the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PGM, binary raster (P5).
    Pgm,
    /// PGM, ASCII raster (P2).
    PlainPgm,
    /// PPM, binary raster (P6): RGB.
    Ppm,
    /// PAM (P7), any of its tuple types here ([`Channels`]).
    Pam,
    /// PFM, float samples, gray (`Pf`) or RGB (`PF`).
    Pfm,
    /// NumPy's `.npy`.
    Npy,
    /// Headerless raw samples (8-bit, or 16-bit little-endian).
    Raw,
    /// Decoded from PBM, PNG, JPEG, TIFF, BMP or FITS: written back as netpbm, PGM (P5) for gray, PPM
    /// (P6) for RGB, PAM for alpha, and float samples as PFM (gray, RGB) or NPY (with alpha).
    Decoded,
}

impl Format {
    /// Every format, in the order of the enum.
    pub const ALL: [Format; 8] = [
        Format::Pgm,
        Format::PlainPgm,
        Format::Ppm,
        Format::Pam,
        Format::Pfm,
        Format::Npy,
        Format::Raw,
        Format::Decoded,
    ];
}

/// One image of a stream: gray or colour, integer or float samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub width: usize,
    pub height: usize,
    /// What each pixel's samples are.
    pub channels: Channels,
    /// The largest sample value the frame may hold (PGM's maxval): 1..=65535; 1 for float frames,
    /// whose samples have no such bound.
    pub maxval: u16,
    pub pixels: Pixels,
    pub format: Format,
    /// Where this frame's pixels sit in the original image, when a filter has moved them.
    pub geometry: Option<Geometry>,
    /// Other `histopipe-*` header comments, in order (see [`Annotation`]).
    pub annotations: Vec<Annotation>,
    /// The file the frame was read from, when a tool read it from a named file (see [`Source`]).
    pub source: Option<Source>,
}

/// A header comment `# histopipe-KEY VALUE` other than geometry: parameters one tool hands to the
/// next through a file or a pipe (e.g. `hough`, the axes of a Hough accumulator). The frame crate
/// keeps and writes them verbatim; what a value means is the business of the tools that use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// The word after `histopipe-`: lowercase ASCII letters, digits and `-`.
    pub key: String,
    /// The rest of the line, trimmed; never holds a line break.
    pub value: String,
}

impl Annotation {
    /// Parses the text after `#` of a header comment; `None` if it is not a `histopipe-*` one.
    pub(crate) fn parse_comment(comment: &str) -> Option<Annotation> {
        let rest = comment.trim().strip_prefix("histopipe-")?;
        let (key, value) = rest.split_once(|c: char| c.is_ascii_whitespace()).unwrap_or((rest, ""));
        let valid =
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        valid.then(|| Annotation { key: key.to_owned(), value: value.trim().to_owned() })
    }
}

impl Frame {
    /// A gray frame of the given samples. Panics if the sizes disagree or the sample width does not
    /// match `maxval` (an error in the calling code, never in the input).
    pub fn new(width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        Frame::with_channels(width, height, Channels::Gray, maxval, pixels)
    }

    /// A frame of `channels` samples a pixel, interleaved. Panics as [`Frame::new`] does; a float
    /// frame's `maxval` is ignored (it is 1).
    pub fn with_channels(
        width: usize,
        height: usize,
        channels: Channels,
        maxval: u16,
        pixels: Pixels,
    ) -> Frame {
        let samples = width.checked_mul(height).and_then(|n| n.checked_mul(channels.count()));
        assert_eq!(samples, Some(pixels.len()), "frame size and sample count disagree");
        let maxval = if pixels.depth() == Depth::F32 { 1 } else { maxval };
        assert!(maxval >= 1, "maxval must be at least 1");
        if pixels.depth() != Depth::F32 {
            assert_eq!(
                Depth::for_maxval(maxval),
                pixels.depth(),
                "sample width does not match maxval {maxval}"
            );
        }
        Frame {
            width,
            height,
            channels,
            maxval,
            pixels,
            format: Format::Pgm,
            geometry: None,
            annotations: Vec::new(),
            source: None,
        }
    }

    /// A new frame that keeps this one's container, geometry and source, with other samples. Annotations
    /// are not kept: they say what the samples mean (a Hough accumulator's axes, say), and new
    /// samples void that; the tool that makes new samples mean something sets its own. The new
    /// frame is gray ([`Frame::derive_with`] for other channels).
    pub fn derive(&self, width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        self.derive_with(width, height, Channels::Gray, maxval, pixels)
    }

    /// As [`Frame::derive`], a frame of `channels`.
    pub fn derive_with(
        &self,
        width: usize,
        height: usize,
        channels: Channels,
        maxval: u16,
        pixels: Pixels,
    ) -> Frame {
        Frame {
            format: self.format,
            geometry: self.geometry.clone(),
            source: self.source.clone(),
            ..Frame::with_channels(width, height, channels, maxval, pixels)
        }
    }

    pub fn depth(&self) -> Depth {
        self.pixels.depth()
    }

    /// Whether the frame is one gray channel of integer samples: what most operations take.
    pub fn is_plain_gray(&self) -> bool {
        self.channels == Channels::Gray && self.depth().is_integer()
    }

    /// Channel `c` as a gray frame of its own, with this frame's container, geometry, source and
    /// annotations.
    pub fn plane(&self, c: usize) -> Frame {
        let n = self.channels.count();
        assert!(c < n, "channel {c} of a {n}-channel frame");
        let pixels = if n == 1 { self.pixels.clone() } else { self.pixels.strided(c, n) };
        Frame { channels: Channels::Gray, pixels, ..self.clone_without_pixels() }
    }

    /// A frame of `channels` made of gray `planes`, each one's samples one channel, in order;
    /// its size, maxval (the largest), container, geometry, source and annotations are the first
    /// plane's. Panics if the planes disagree in size or sample type, or their number is not the
    /// channels'.
    pub fn from_planes(channels: Channels, planes: &[Frame]) -> Frame {
        assert_eq!(planes.len(), channels.count(), "one plane a channel");
        let first = &planes[0];
        let alike = |p: &Frame| {
            p.width == first.width
                && p.height == first.height
                && p.depth() == first.depth()
                && p.channels == Channels::Gray
        };
        assert!(planes.iter().all(alike), "planes of one size and sample type");
        fn samples<'a, T: Copy>(
            planes: &'a [Frame],
            get: impl Fn(&'a Pixels) -> Option<&'a [T]>,
        ) -> Vec<&'a [T]> {
            planes.iter().map(|p| get(&p.pixels).expect("checked: one sample type")).collect()
        }
        let pixels = if planes.len() == 1 {
            first.pixels.clone()
        } else {
            match &first.pixels {
                Pixels::U8(_) => Pixels::U8(
                    interleave(&samples(planes, |p| if let Pixels::U8(v) = p { Some(&v[..]) } else { None }))
                        .into(),
                ),
                Pixels::U16(_) => Pixels::U16(
                    interleave(&samples(
                        planes,
                        |p| if let Pixels::U16(v) = p { Some(&v[..]) } else { None },
                    ))
                    .into(),
                ),
                Pixels::F32(_) => Pixels::F32(
                    interleave(&samples(
                        planes,
                        |p| if let Pixels::F32(v) = p { Some(&v[..]) } else { None },
                    ))
                    .into(),
                ),
            }
        };
        let maxval = planes.iter().map(|p| p.maxval).max().unwrap_or(1);
        Frame { channels, maxval, pixels, ..first.clone_without_pixels() }
    }

    /// This frame's metadata, with no samples (a 0x0 gray frame).
    fn clone_without_pixels(&self) -> Frame {
        Frame {
            width: self.width,
            height: self.height,
            channels: self.channels,
            maxval: self.maxval,
            pixels: Pixels::U8(Vec::new().into()),
            format: self.format,
            geometry: self.geometry.clone(),
            annotations: self.annotations.clone(),
            source: self.source.clone(),
        }
    }

    pub fn pixel_count(&self) -> usize {
        self.width * self.height
    }

    /// The value of annotation `key`, if the frame has one.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.iter().find(|a| a.key == key).map(|a| a.value.as_str())
    }

    /// Sets annotation `key` (an error in the calling code if the key is not lowercase ASCII
    /// letters, digits and `-`); line breaks in `value` become spaces, so the header stays valid.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        assert!(
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "bad annotation key '{key}'"
        );
        let value = value.replace(['\n', '\r'], " ").trim().to_owned();
        match self.annotations.iter_mut().find(|a| a.key == key) {
            Some(a) => a.value = value,
            None => self.annotations.push(Annotation { key: key.to_owned(), value }),
        }
    }

    /// The geometry if the frame has one, else the identity onto itself.
    pub fn geometry_or_identity(&self) -> Geometry {
        self.geometry.clone().unwrap_or_else(|| Geometry::identity(self.width, self.height))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_parse_and_replace() {
        let a = Annotation::parse_comment(" histopipe-hough theta-min=0  rho-step=1 ").unwrap();
        assert_eq!((a.key.as_str(), a.value.as_str()), ("hough", "theta-min=0  rho-step=1"));
        assert!(Annotation::parse_comment(" made by GIMP").is_none());
        assert!(Annotation::parse_comment(" histopipe-Bad x").is_none());
        let mut f = Frame::new(1, 1, 255, Pixels::U8(vec![0].into()));
        f.set_annotation("hough", "a\nb");
        f.set_annotation("hough", "c");
        assert_eq!(f.annotation("hough"), Some("c"));
        assert_eq!(f.annotations.len(), 1);
        f.source = Some(Source::new("a.pgm", 2));
        let derived = f.derive(1, 1, 255, Pixels::U8(vec![9].into()));
        assert!(derived.annotations.is_empty(), "new samples void what the old ones meant");
        assert_eq!(derived.source, f.source, "where the frame came from stays");
    }
}
