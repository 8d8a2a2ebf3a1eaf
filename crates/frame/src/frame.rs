use crate::{Geometry, Samples, Source};

/// Sample width. A frame is 8-bit exactly when its maxval is at most 255 (the PGM rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    U8,
    U16,
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
        }
    }
}

/// The samples of a frame, row-major, `width * height` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pixels {
    U8(Samples<u8>),
    U16(Samples<u16>),
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

impl Pixels {
    pub fn len(&self) -> usize {
        match self {
            Pixels::U8(v) => v.len(),
            Pixels::U16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn depth(&self) -> Depth {
        match self {
            Pixels::U8(_) => Depth::U8,
            Pixels::U16(_) => Depth::U16,
        }
    }

    /// The sample at index `i`, widened.
    pub fn get(&self, i: usize) -> u16 {
        match self {
            Pixels::U8(v) => v[i] as u16,
            Pixels::U16(v) => v[i],
        }
    }
}

/// The container a frame was read from; a filter writes its output frame in the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PGM, binary raster (P5).
    Pgm,
    /// PGM, ASCII raster (P2).
    PlainPgm,
    /// PAM (P7) with TUPLTYPE GRAYSCALE.
    Pam,
    /// Headerless raw samples (8-bit, or 16-bit little-endian).
    Raw,
    /// Converted to gray from PPM, PNG, JPEG, TIFF or BMP: written back as PGM (P5).
    Decoded,
}

/// One grayscale image of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub width: usize,
    pub height: usize,
    /// The largest sample value the frame may hold (PGM's maxval): 1..=65535.
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
    /// A frame of the given samples. Panics if the sizes disagree or the sample width does not
    /// match `maxval` (an error in the calling code, never in the input).
    pub fn new(width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        assert_eq!(width.checked_mul(height), Some(pixels.len()), "frame size and sample count disagree");
        assert!(maxval >= 1, "maxval must be at least 1");
        assert_eq!(Depth::for_maxval(maxval), pixels.depth(), "sample width does not match maxval {maxval}");
        Frame {
            width,
            height,
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
    /// samples void that; the tool that makes new samples mean something sets its own.
    pub fn derive(&self, width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        Frame {
            format: self.format,
            geometry: self.geometry.clone(),
            source: self.source.clone(),
            ..Frame::new(width, height, maxval, pixels)
        }
    }

    pub fn depth(&self) -> Depth {
        self.pixels.depth()
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
