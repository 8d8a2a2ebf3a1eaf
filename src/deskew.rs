use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::{Channels, Frame};
use histopipe_ops::deskew::{self, Deskew as DeskewOp, DeskewParams, SkewAngle};
use histopipe_ops::{Fill, Fills};

use crate::fill::{fill_flag, Filling};
use crate::table_output::{self, TableOutput};

/// `deskew`: each frame's skew, and the frame turned upright.
#[derive(Default)]
pub struct Deskew {
    params: DeskewParams,
    fill: Filling<Fills>,
    /// `--format`: the angles as a table, or the frames turned upright.
    output: TableOutput,
}

/// The columns after the frame and its source.
const COLUMNS: [&str; 1] = ["angle"];

impl Tool for Deskew {
    const NAME: &'static str = "deskew";
    const HELP: &'static str = "\
deskew: the skew angle of each frame (a scanned page), and the frame turned upright.

The angle within +-MAX (--max-angle) that maximizes the variance of the page's projection
profile: a pixel is ink when darker than the mean of its 21x21 window by more than 10/255 of
the full scale (lighter, for light text on a dark page: the minority class of Otsu's threshold),
so uneven light stays out of the ink; each ink pixel counted in the 1-pixel bin of its distance
across the lines in exact integer arithmetic, the score the sum of the squared counts; searched
every 0.25 degrees, then refined to --precision (the last level's answer the middle of the
score's peak at half height). The angle is counter-clockwise as displayed, rotate's sign: a page
turned by `rotate 2.3` measures 2.3, and is made upright by the turn by -2.3 (bilinear, the same
size), pixels from outside taking --fill, by default the frame's most common value (each
channel's). A page without ink has angle 0. Colour frames are measured on their luma and every
channel is turned. With --format csv (or -o x.csv) it writes the angles instead:
frame,source,angle. The CPU and the GPU give the same angles and bytes. See docs/deskew.md.

Usage: deskew [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--max-angle",
            "M",
            "the largest skew searched, degrees, more than 0 and at most 45 [default: 15]",
        )
        .param("max_angle"),
        Flag::with_value(
            "--precision",
            "P",
            "the step of the search's last level, degrees, 0.001 to 1 [default: 0.02]",
        )
        .param("precision"),
        fill_flag(
            "V[,V...]",
            "the value of pixels from outside the page once turned, 0..maxval, or one per channel \
             [default: each channel's most common value]",
        ),
        table_output::format_flag("csv or tsv: the angles as a table [default: -o's extension, else frames]"),
    ];
    const HELP_END: &'static str = "\
Example:
  deskew -o upright.png scan.png
  deskew --format csv scans/*.pgm
  deskew --max-angle 5 --precision 0.01 -o out/{stem}.png scans/*.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        let degrees = |given: &Given| -> Result<f64, FlagError> {
            let v: f64 = given.parse()?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(format!("bad value '{}': expected degrees", given.text()?).into())
            }
        };
        match given.flag.long {
            "--max-angle" => self.params.max_angle = degrees(given)?,
            "--precision" => self.params.precision = degrees(given)?,
            _ => return Ok(self.fill.option(given)? || self.output.option(given)?),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        self.params.check().map_err(|e| Error::op_usage(e, Self::FLAGS))
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.output.product(format)
    }

    fn reads_gray(&self) -> bool {
        // Colour is kept when the frame is turned; the angles are measured on the same luma
        // (Y of YCrCb) whichever the output, so a JPEG's angle is the same in both.
        false
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let Some(mut rows) = self.output.rows(cx, &COLUMNS) else {
            return self.turn(cx, frame);
        };
        let luma = cx.luma(&frame)?;
        let skew = cx.run(&SkewAngle { params: self.params }, &luma)?;
        rows.push(&[&angle_text(skew.angle)]);
        rows.write(cx)
    }
}

impl Deskew {
    /// The frame turned upright: a gray frame by the one operation (one upload on the GPU); a
    /// frame of several channels measured on its luma, then each channel turned alike.
    fn turn(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let fills = self.fill.per_channel(cx, &frame)?;
        if frame.channels == Channels::Gray {
            let op = DeskewOp { params: self.params, fill: fills.map(|f| f[0]) };
            let out = cx.run(&op, &frame)?;
            return cx.write(out.frame);
        }
        let luma = cx.luma(&frame)?;
        let skew = cx.run(&SkewAngle { params: self.params }, &luma)?;
        let fills = match fills {
            Some(f) => f,
            None => deskew::background(&frame).map_err(|e| cx.op_error(e))?,
        };
        let mut turns = Vec::with_capacity(fills.len());
        for fill in fills {
            let fill: Fill = fill.for_samples("fill", false, frame.maxval).map_err(|e| cx.op_error(e))?;
            let turn = deskew::upright(skew.angle, frame.width, frame.height, fill, frame.maxval)
                .map_err(|e| cx.op_error(e))?;
            turns.push(turn);
        }
        let out = cx.run_each_channel(&frame, |c| turns[c])?;
        cx.write(out)
    }
}

/// An angle as the table shows it: the shortest decimal that reads back as the same `f64`,
/// rounded first to 9 decimals (the search's sums of steps leave binary noise past them).
fn angle_text(angle: f64) -> String {
    let rounded = (angle * 1e9).round() / 1e9;
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    format!("{rounded}")
}
