use crate::Geometry;

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
    U8(Vec<u8>),
    U16(Vec<u16>),
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
}

impl Frame {
    /// A frame of the given samples. Panics if the sizes disagree or the sample width does not
    /// match `maxval` (an error in the calling code, never in the input).
    pub fn new(width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        assert_eq!(width.checked_mul(height), Some(pixels.len()), "frame size and sample count disagree");
        assert!(maxval >= 1, "maxval must be at least 1");
        assert_eq!(Depth::for_maxval(maxval), pixels.depth(), "sample width does not match maxval {maxval}");
        Frame { width, height, maxval, pixels, format: Format::Pgm, geometry: None }
    }

    /// A new frame that keeps this one's container and geometry, with other samples.
    pub fn derive(&self, width: usize, height: usize, maxval: u16, pixels: Pixels) -> Frame {
        Frame {
            format: self.format,
            geometry: self.geometry.clone(),
            ..Frame::new(width, height, maxval, pixels)
        }
    }

    pub fn depth(&self) -> Depth {
        self.pixels.depth()
    }

    pub fn pixel_count(&self) -> usize {
        self.width * self.height
    }

    /// The geometry if the frame has one, else the identity onto itself.
    pub fn geometry_or_identity(&self) -> Geometry {
        self.geometry.clone().unwrap_or_else(|| Geometry::identity(self.width, self.height))
    }
}
