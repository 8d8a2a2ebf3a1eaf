//! `equalize`: global histogram equalization of each frame; matched to a reference's histogram
//! (`--reference`), counted under a mask (`--mask`), or mapped by a saved table (`--table`,
//! `--save-table`).

mod reference;
mod table;

use std::path::PathBuf;
use std::sync::Mutex;

use histopipe_cli::{side, Common, Context, Error, ErrorKind, Flag, FlagError, Given, PathTemplate, Tool};
use histopipe_frame::{Frame, Origin, ReadOptions};
use histopipe_ops::equalize::{self, FloatEqualize, Remap, TableRule};

use crate::colour::{Colour, MAPPING};
use crate::mask::{first_frame, usage, Masking, MASK};
use reference::Reference;
use table::{FailUnlessSet, FirstTable, Table};

/// `--colour`, which `equalize` and `clahe` share: how a colour frame is equalized.
pub const COLOUR: Flag = MAPPING.flag(
    "colour frames: luma (the Y of YCrCb alone, converted back as OpenCV converts), each (every \
     colour channel on its own), gray (read as gray, written gray) or lab (the L of L*a*b* alone, \
     8-bit frames, converted back as OpenCV converts); alpha is carried, never equalized \
     [default: luma]",
);

/// `--reference`: match each frame's histogram to an image's.
const REFERENCE: Flag = Flag::with_value(
    "--reference",
    "FILE",
    "match each frame's histogram to FILE's (its first frame, read as the frames are; the planes \
     --colour names), as scikit-image's match_histograms, rounded to the nearest level",
);
/// `--table`: map every frame by a saved table.
const TABLE: Flag = Flag::with_value(
    "--table",
    "FILE",
    "map every frame by the table in FILE (CSV, as --save-table writes it) instead of computing one",
);
/// `--save-table`: write the first frame's table, and map every frame by it.
const SAVE_TABLE: Flag = Flag::with_value(
    "--save-table",
    "FILE",
    "write the first frame's table to FILE (CSV: level,mapped, or level,red,green,blue with \
     --colour each) and map every frame by it, as netpbm's pnmhisteq -wmap",
);

/// `equalize`: global histogram equalization of each frame, by its own histogram; or one of the
/// variants its options choose.
#[derive(Default)]
pub struct Equalize {
    colour: Colour,
    reference_path: Option<PathBuf>,
    mask: Masking,
    table_path: Option<PathBuf>,
    save_table: Option<PathTemplate>,
    /// Read in [`Tool::check`], before any frame.
    reference: Option<Reference>,
    table: Option<Table>,
    /// With `--save-table`: the first frame's table, for the frames after it.
    first: FirstTable,
}

impl Tool for Equalize {
    const NAME: &'static str = "equalize";
    const HELP: &'static str = "\
equalize: global histogram equalization of each frame, by that frame's own histogram.

Each level l becomes round((cdf(l) - cdf_min) / (N - cdf_min) * maxval), N the pixel count and
cdf_min the count of the lowest level present; the output keeps the input's maxval. 8-bit frames
follow OpenCV's arithmetic (single-precision, ties to even): a maxval-255 frame comes out exactly as
cv2.equalizeHist makes it. 16-bit frames round exactly, half up. A frame of one value is unchanged.

With a mask (--mask FILE) the histogram counts only the pixels where the mask is non-zero (N
their count; as cv2.calcHist with a mask, then equalizeHist's table), and the table maps every
pixel. A mask of no pixels, or of pixels of one value, leaves the frame unchanged.

Histogram matching (--reference FILE): each level l becomes np.interp(q(l), p, v) rounded to the
nearest integer (ties to even) and clamped to maxval, q the frame's cumulative fractions, p and v
the reference's at its levels present: scikit-image's match_histograms, rounded.

Tables: --save-table FILE writes the first frame's table, and maps every frame by it (a video or
batch mapped alike); --table FILE maps every frame by a table so saved (or edited). The table is
CSV: a header 'level,mapped' (or 'level,red,green,blue' with --colour each), then one row per
level 0..maxval.

Colour frames (--colour): by default the Y of YCrCb is equalized and converted back, as OpenCV's
recipe does it (cvtColor BGR2YCrCb, equalizeHist of Y, cvtColor YCrCb2BGR), byte for byte on
8-bit frames; 16-bit frames use OpenCV's 16-bit YCrCb and the 16-bit rule above. 'lab' does the
same with the L of L*a*b* (cvtColor BGR2Lab, equalizeHist of L, cvtColor Lab2BGR), byte for byte,
8-bit frames only. 'each' equalizes R, G and B on their own; 'gray' reads colour as gray and
writes gray. Alpha is carried unchanged. The options above work on the same planes (a
reference's Y or L, or its R, G, B).

Float frames are equalized as scikit-image's equalize_hist(image, nbins=256, mask) does it, in its
float32 arithmetic: numpy.histogram's 256 bins over the counted samples' range, each sample
numpy.interp'ed between the bins' centres and cumulative fractions, written as float32. NaN and
infinite samples are not counted (scikit-image refuses them: this is its answer with them masked
out); NaN stays NaN. Colour float frames take --colour each or gray. The options that map integer
levels (--reference, --table, --save-table) refuse float frames. See docs/equalize.md.

Usage: equalize [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[COLOUR, REFERENCE, MASK, TABLE, SAVE_TABLE];
    const HELP_END: &'static str = "\
Example:
  equalize -o moon-eq.pgm moon.pgm
  equalize -o out/{stem}.png scans/*.jpg
  equalize --colour each -o astronaut-eq.png astronaut.png
  equalize --reference camera.pgm -o moon-matched.pgm moon.pgm
  equalize --save-table first.csv -o out/{stem}.png frames/*.png
  equalize moon.pgm | cdf --bins 8";
    // Float frames are scikit-image's equalize_hist, or refused in `frame` (not before it: with
    // --save-table the frames after the first wait for its table, which the first frame's work
    // must say it will not make).
    const FLOAT: bool = true;

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--colour" => self.colour = MAPPING.parse(given)?,
            "--reference" => self.reference_path = Some(PathBuf::from(given.os())),
            "--table" => self.table_path = Some(PathBuf::from(given.os())),
            "--save-table" => {
                if given.os().is_empty() {
                    return Err("must name a file".into());
                }
                let template = PathTemplate::parse("--save-table", given.text()?)?;
                if template.has_fields() {
                    return Err("the first frame's table is the one written: FILE takes no fields".into());
                }
                self.save_table = Some(template);
            }
            _ => return self.mask.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        if self.table_path.is_some() {
            for (given, flag) in [
                (self.reference_path.is_some(), REFERENCE),
                (self.mask.is_given(), MASK),
                (self.save_table.is_some(), SAVE_TABLE),
            ] {
                if given {
                    return Err(Error::usage(format!(
                        "--table maps by a table already made, and {} makes one: give one of the two",
                        flag.long
                    )));
                }
            }
        }
        let options = ReadOptions { raw: common.raw, max_pixels: common.max_pixels, gray: self.reads_gray() };
        if let Some(path) = &self.reference_path {
            let frame = first_frame(REFERENCE, path, options)?;
            let lab = self.colour == Colour::Lab;
            self.reference = Some(Reference::of(&frame, lab).map_err(|e| usage(REFERENCE, path, e))?);
        }
        self.mask.check(common)?;
        if let Some(path) = &self.table_path {
            let text = side::read_bytes(path, Origin::Named, table::MAX_BYTES, table::MAX_WHAT)
                .map_err(|e| usage(TABLE, path, e))?;
            let text = String::from_utf8(text).map_err(|_| usage(TABLE, path, "not text (UTF-8)"))?;
            self.table = Some(Table::parse(&text).map_err(|e| usage(TABLE, path, e))?);
        }
        Ok(())
    }

    fn side_files(&self) -> Vec<PathTemplate> {
        self.save_table.iter().cloned().collect()
    }

    fn reads_gray(&self) -> bool {
        self.colour == Colour::Gray
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let first = (self.save_table.is_some() && cx.index == 1).then(|| FailUnlessSet(&self.first));
        let out = if !frame.depth().is_integer() {
            self.float_frame(cx, &frame)?
        } else if let Some(table) = &self.table {
            self.map_by(cx, &frame, table)?
        } else if self.save_table.is_some() && cx.index > 1 {
            let Some(table) = self.first.wait() else {
                return Err(cx.invalid("the first frame made no table (--save-table) to map this one by"));
            };
            self.map_by(cx, &frame, &table)?
        } else if self.reference.is_none() && !self.mask.is_given() && first.is_none() {
            self.colour.run(cx, &frame, &equalize::Equalize)?
        } else {
            self.remap(cx, &frame, first.is_some())?
        };
        drop(first);
        cx.write(out)
    }
}

impl Equalize {
    /// A float frame equalized as scikit-image's `equalize_hist` does it (under the mask, if one
    /// is given); refused in one line by the options that map integer levels, and as a colour
    /// frame in a mode other than `each` (a luma of float samples is no OpenCV conversion here).
    fn float_frame(&self, cx: &mut Context<'_>, frame: &Frame) -> Result<Frame, Error> {
        for (given, flag) in [
            (self.reference.is_some(), REFERENCE),
            (self.table.is_some(), TABLE),
            (self.save_table.is_some(), SAVE_TABLE),
        ] {
            if given {
                return Err(cx.invalid(format!(
                    "{} maps integer levels, and the frame has 32-bit float samples (equalize takes \
                     float frames without it)",
                    flag.long
                )));
            }
        }
        if frame.channels.is_colour() && self.colour != Colour::Each {
            return Err(cx.invalid(format!(
                "--colour {} of a float colour frame: give --colour each (each channel as scikit-image \
                 equalizes a float plane) or gray",
                self.colour.word()
            )));
        }
        let mask = self.mask.fit(cx, frame)?;
        self.colour.run(cx, frame, &FloatEqualize { mask })
    }

    /// The frame mapped by `table` (`--table`, or the first frame's).
    fn map_by(&self, cx: &mut Context<'_>, frame: &Frame, table: &Table) -> Result<Frame, Error> {
        table.check_planes(self.colour.mapped_planes(frame)).map_err(|e| cx.invalid(e))?;
        self.colour.run_with(cx, frame, |c| Remap::new(TableRule::Given(table.column(c))))
    }

    /// The frame mapped by a table made from its own histogram (under the mask, if one is given):
    /// equalized, or matched to the reference. `save`: the first frame with `--save-table`, whose
    /// tables are written and handed to the frames after it.
    fn remap(&self, cx: &mut Context<'_>, frame: &Frame, save: bool) -> Result<Frame, Error> {
        let mask = self.mask.fit(cx, frame)?;
        let planes = self.colour.mapped_planes(frame);
        let kept: [Mutex<Option<Vec<u16>>>; 3] = Default::default();
        let out = self.colour.run_with(cx, frame, |c| Remap {
            rule: match &self.reference {
                Some(reference) => TableRule::Match(reference.plane(planes == 3, c)),
                None => TableRule::Equalize,
            },
            mask,
            keep: save.then_some(&kept[c]),
        })?;
        if save {
            let columns: Vec<Vec<u16>> = kept[..planes]
                .iter()
                .map(|k| k.lock().unwrap_or_else(|e| e.into_inner()).take().expect("each plane's table kept"))
                .collect();
            let table = Table::new(columns);
            if let Some(path) = cx.side_file(0) {
                histopipe_cli::write_whole(path, table.to_csv().as_bytes()).map_err(|e| Error {
                    kind: ErrorKind::Runtime,
                    place: cx.place(),
                    message: format!("--save-table: cannot write '{}': {e}", path.display()),
                })?;
            }
            self.first.set(table);
        }
        Ok(out)
    }
}
