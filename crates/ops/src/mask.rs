//! The one mask of the operations that count some pixels only (`--mask`): [`Mask`], one byte a
//! pixel of a `width x height` frame, non-zero where the pixel is counted, its length checked when
//! it is made; [`Mask::fit`] (or [`Mask::fit_samples`], for an operation that pairs each sample
//! with a byte) refuses it for a frame of another size, the one check of every masked operation.
//! Each masked operation holds it the same way: an operation that also runs unmasked as a type of
//! its own is wrapped, [`Masked`] (`Masked { op: Histogram { .. }, mask }`, the histogram of the
//! pixels selected, and so for CLAHE and colhist); one whose mask is a choice within it has a
//! field `mask: Option<Mask>` (threshold's `Threshold` and `Levels`, equalize's `Remap`).

use histopipe_frame::Frame;

use crate::OpError;

/// The pixels of a `width x height` frame that an operation counts: one byte a pixel, row by
/// row, non-zero where the pixel is counted. Made by [`Mask::new`], which checks its length.
///
/// # Examples
///
/// ```
/// use histopipe_ops::mask::Mask;
/// let mask = Mask::new(&[1, 0, 0, 7], 2, 2).unwrap();
/// assert_eq!((mask.width(), mask.height(), mask.inside()), (2, 2, &[1, 0, 0, 7][..]));
/// assert!(Mask::new(&[1, 0, 0], 2, 2).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask<'m> {
    inside: &'m [u8],
    width: usize,
    height: usize,
}

impl<'m> Mask<'m> {
    /// The mask of a `width x height` frame whose bytes are `inside`; refused unless it holds
    /// one byte a pixel.
    pub fn new(inside: &'m [u8], width: usize, height: usize) -> Result<Mask<'m>, OpError> {
        if width.checked_mul(height) != Some(inside.len()) {
            let n = inside.len();
            return Err(OpError::invalid(format!("a mask of {n} bytes for {width}x{height} pixels")));
        }
        Ok(Mask { inside, width, height })
    }

    /// The mask of `frame`'s size whose bytes are `inside`.
    pub fn of_frame(inside: &'m [u8], frame: &Frame) -> Result<Mask<'m>, OpError> {
        Mask::new(inside, frame.width, frame.height)
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// The bytes, one a pixel.
    pub fn inside(&self) -> &'m [u8] {
        self.inside
    }

    /// The bytes, for `frame`: refused when its size is not the mask's.
    pub fn fit(self, frame: &Frame) -> Result<&'m [u8], OpError> {
        if (self.width, self.height) != (frame.width, frame.height) {
            return Err(OpError::invalid(format!(
                "a mask of {}x{} pixels for a frame of {}x{}",
                self.width, self.height, frame.width, frame.height
            )));
        }
        Ok(self.inside)
    }

    /// The bytes, one a sample of `frame`, for an operation that pairs each sample with a byte:
    /// [`Mask::fit`], and a frame of one channel (a plane).
    pub fn fit_samples(self, frame: &Frame) -> Result<&'m [u8], OpError> {
        let inside = self.fit(frame)?;
        if inside.len() != frame.pixels.len() {
            let channels = frame.channels.count();
            return Err(OpError::invalid(format!(
                "a mask of one byte a pixel for a frame of {channels} channels"
            )));
        }
        Ok(inside)
    }
}

/// [`Mask::fit_samples`] of a mask that may be absent: `None` (every pixel) without one.
pub fn fit_samples<'m>(mask: Option<Mask<'m>>, frame: &Frame) -> Result<Option<&'m [u8]>, OpError> {
    mask.map(|m| m.fit_samples(frame)).transpose()
}

/// The operation `op` counting only the pixels `mask` selects; what it computes from them applies
/// to every pixel. Its [`Op`](crate::Op) is the operation's own, for the operations that take a
/// mask this way (the histogram's, CLAHE's, colhist's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Masked<'m, O> {
    pub op: O,
    pub mask: Mask<'m>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::{Channels, Pixels};

    #[test]
    fn a_mask_fits_frames_of_its_size_alone() {
        let gray = Frame::new(3, 2, 255, Pixels::U8(vec![0; 6].into()));
        let rgb = Frame::with_channels(3, 2, Channels::Rgb, 255, Pixels::U8(vec![0; 18].into()));
        let mask = Mask::new(&[1; 6], 3, 2).unwrap();
        assert_eq!(mask.fit(&gray).unwrap().len(), 6);
        assert_eq!(mask.fit(&rgb).unwrap().len(), 6);
        assert_eq!(mask.fit_samples(&gray).unwrap().len(), 6);
        let e = mask.fit_samples(&rgb).unwrap_err();
        assert_eq!(e.to_string(), "a mask of one byte a pixel for a frame of 3 channels");
        let e = Mask::new(&[1; 6], 2, 3).unwrap().fit(&gray).unwrap_err();
        assert_eq!(e.to_string(), "a mask of 2x3 pixels for a frame of 3x2");
        assert_eq!(Mask::new(&[1; 5], 3, 2).unwrap_err().to_string(), "a mask of 5 bytes for 3x2 pixels");
        assert!(Mask::new(&[], usize::MAX, 2).is_err());
        assert_eq!(fit_samples(None, &rgb).unwrap(), None);
    }
}
