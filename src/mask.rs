//! `--mask FILE`, the option group that `equalize`, `cdf`, `colhist`, `clahe`, `threshold` and
//! `stretch` hold ([`Masking`]): the image read before any input whose non-zero pixels are the
//! ones a histogram counts, fitted to each frame as the operations' checked
//! [`Mask`](histopipe_ops::mask::Mask).

use std::path::{Path, PathBuf};

use histopipe_cli::{side, Common, Context, Error, Flag, FlagError, Given};
use histopipe_frame::{Frame, Origin, Pixels, ReadOptions};
use histopipe_ops::mask::Mask;

/// `--mask`: count only the pixels a mask selects.
pub const MASK: Flag = Flag::with_value(
    "--mask",
    "FILE",
    "count only the pixels where FILE (its first frame, read as gray, of the frames' size) is \
     non-zero; what is computed from them applies to every pixel",
);

/// `--mask` as a tool holds it: the file named, read before any input ([`Masking::check`]), and
/// fitted to each frame ([`Masking::fit`]). A tool takes the option through
/// [`Masking::option`] and lists [`MASK`] among its flags.
#[derive(Default)]
pub(crate) struct Masking {
    /// `--mask`'s file, as given.
    path: Option<PathBuf>,
    /// Its pixels, once read.
    file: Option<MaskFile>,
}

impl Masking {
    /// Takes `--mask`; `Ok(false)` for another option.
    pub(crate) fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        if !given.is(MASK.long) {
            return Ok(false);
        }
        self.path = Some(given.os().into());
        Ok(true)
    }

    /// Whether `--mask` was given.
    pub(crate) fn is_given(&self) -> bool {
        self.path.is_some()
    }

    /// Reads the mask before any input: its first frame, as gray (colour by OpenCV's BGR2GRAY),
    /// with the common options' `--raw` and `--max-pixels`; its non-zero pixels are in.
    pub(crate) fn check(&mut self, common: &Common) -> Result<(), Error> {
        if let Some(path) = &self.path {
            self.file = Some(MaskFile::read(path, common)?);
        }
        Ok(())
    }

    /// The mask for `frame` (`None`: every pixel counted without `--mask`), refused in one line
    /// naming the file when the sizes differ.
    pub(crate) fn fit(&self, cx: &Context<'_>, frame: &Frame) -> Result<Option<Mask<'_>>, Error> {
        self.file.as_ref().map(|m| m.fit(cx, frame)).transpose()
    }
}

/// A mask's pixels: one byte a pixel, 1 where the mask is non-zero (counted), 0 elsewhere.
struct MaskFile {
    width: usize,
    height: usize,
    inside: Vec<u8>,
    /// The file it was read from, for the messages.
    path: PathBuf,
}

impl MaskFile {
    fn read(path: &Path, common: &Common) -> Result<MaskFile, Error> {
        let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels, gray: true };
        let frame = first_frame(MASK, path, options)?;
        MaskFile::of(&frame, path).map_err(|e| usage(MASK, path, e))
    }

    /// The mask of `frame`, read from `path`: its non-zero pixels are in.
    fn of(frame: &Frame, path: &Path) -> Result<MaskFile, String> {
        let inside = match &frame.pixels {
            Pixels::U8(v) => v.iter().map(|&s| (s != 0) as u8).collect(),
            Pixels::U16(v) => v.iter().map(|&s| (s != 0) as u8).collect(),
            Pixels::F32(_) => return Err(FLOAT.into()),
        };
        Ok(MaskFile { width: frame.width, height: frame.height, inside, path: path.to_owned() })
    }

    fn fit(&self, cx: &Context<'_>, frame: &Frame) -> Result<Mask<'_>, Error> {
        let (w, h) = (self.width, self.height);
        if (w, h) != (frame.width, frame.height) {
            return Err(cx.invalid(MASK.sentence_of(
                self.path.display(),
                format!("is {w}x{h}, and the frame {}x{}", frame.width, frame.height),
            )));
        }
        Mask::new(&self.inside, w, h).map_err(|e| cx.op_error(e))
    }
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
