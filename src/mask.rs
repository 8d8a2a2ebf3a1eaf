//! `--mask FILE`, which `equalize`, `cdf`, `colhist`, `clahe`, `threshold` and `stretch` share:
//! the image read before any input whose non-zero pixels are the ones a histogram counts.

use std::path::{Path, PathBuf};

use histopipe_cli::{side, Common, Context, Error, Flag};
use histopipe_frame::{Frame, Origin, Pixels, ReadOptions};

/// `--mask`: count only the pixels a mask selects.
pub const MASK: Flag = Flag::with_value(
    "--mask",
    "FILE",
    "count only the pixels where FILE (its first frame, read as gray, of the frames' size) is \
     non-zero; what is computed from them applies to every pixel",
);

/// A mask's pixels: one byte a pixel, 1 where the mask is non-zero (counted), 0 elsewhere.
pub struct Mask {
    pub width: usize,
    pub height: usize,
    pub inside: Vec<u8>,
    /// The file it was read from, for the messages.
    path: PathBuf,
}

impl Mask {
    /// The mask `--mask path` names: its first frame, read as gray (colour by OpenCV's BGR2GRAY)
    /// with the common options' `--raw` and `--max-pixels`; its non-zero pixels are in.
    pub fn read(path: &Path, common: &Common) -> Result<Mask, Error> {
        let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels, gray: true };
        let frame = first_frame(MASK, path, options)?;
        Mask::of(&frame, path).map_err(|e| usage(MASK, path, e))
    }

    /// The mask of `frame`, read from `path`: its non-zero pixels are in.
    fn of(frame: &Frame, path: &Path) -> Result<Mask, String> {
        let inside = match &frame.pixels {
            Pixels::U8(v) => v.iter().map(|&s| (s != 0) as u8).collect(),
            Pixels::U16(v) => v.iter().map(|&s| (s != 0) as u8).collect(),
            Pixels::F32(_) => return Err(FLOAT.into()),
        };
        Ok(Mask { width: frame.width, height: frame.height, inside, path: path.to_owned() })
    }

    /// The mask's bytes for `frame`, refused in one line when the sizes differ.
    pub fn fit(&self, cx: &Context<'_>, frame: &Frame) -> Result<&[u8], Error> {
        if (self.width, self.height) != (frame.width, frame.height) {
            return Err(cx.invalid(MASK.sentence_of(
                self.path.display(),
                format!("is {}x{}, and the frame {}x{}", self.width, self.height, frame.width, frame.height),
            )));
        }
        Ok(&self.inside)
    }
}

/// [`Mask::fit`] of an optional mask: `None` (every pixel counted) without one.
pub fn fit<'m>(mask: &'m Option<Mask>, cx: &Context<'_>, frame: &Frame) -> Result<Option<&'m [u8]>, Error> {
    mask.as_ref().map(|m| m.fit(cx, frame)).transpose()
}

/// The first frame of the image `path` names, for option `flag` (`--mask`, `equalize --reference`).
/// It is read as an input is ([`side::first_frame`]): a folder, a device or an image over
/// `--max-pixels` is refused.
pub fn first_frame(flag: Flag, path: &Path, options: ReadOptions) -> Result<Frame, Error> {
    side::first_frame(path, Origin::Named, options).map_err(|e| usage(flag, path, e))
}

/// A usage error about option `flag`'s file.
pub fn usage(flag: Flag, path: &Path, why: impl std::fmt::Display) -> Error {
    Error::usage(flag.message_of(path.display(), why))
}

/// Why a float image is refused as a mask (or `equalize`'s reference).
pub const FLOAT: &str =
    "its samples are 32-bit float; convert it to integers first (stretch --depth 8 or 16)";
