use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::{Channels, Frame};
use histopipe_ops::deskew::{self, Deskew as DeskewOp, DeskewParams, Skew, SkewAngle};
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
    /// `--orient`: the page's quarter turn found and undone before its skew.
    orient: bool,
    /// `--min-confidence`: pages whose confidence is below it are left as they are.
    min_confidence: Option<f64>,
}

/// The columns after the frame and its source; `orientation` with `--orient`.
const COLUMNS: [&str; 3] = ["angle", "confidence", "orientation"];

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
score's peak at half height). Its confidence: (best - median) / best of the first level's
scores, 0 to 1. The angle is counter-clockwise as displayed, rotate's sign: a page
turned by `rotate 2.3` measures 2.3, and is made upright by the turn by -2.3 (bilinear, the same
size), pixels from outside taking --fill, by default the frame's most common value (each
channel's). A page without ink has angle 0. Colour frames are measured on their luma and every
channel is turned. --orient first finds which way up the page is (0, 90, 180 or 270 degrees:
the profile of the lines' direction is peakier, and Latin letters rise above their lines more
than they fall below), and turns it upright by that quarter turn. --min-confidence X leaves a
page whose confidence is below X as it is, saying so on stderr. With --format csv (or -o x.csv)
it writes frame,source,angle,confidence (and orientation) instead. The CPU and the GPU give the
same angles and bytes. See docs/deskew.md.

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
        Flag::switch(
            "--orient",
            "first find the page's orientation (0, 90, 180, 270) and turn it upright by it",
        ),
        Flag::with_value(
            "--min-confidence",
            "X",
            "leave pages whose confidence is below X (0 to 1) as they are [default: none]",
        ),
        table_output::format_flag("csv or tsv: the angles as a table [default: -o's extension, else frames]"),
    ];
    const HELP_END: &'static str = "\
Example:
  deskew -o upright.png scan.png
  deskew --format csv scans/*.pgm
  deskew --orient --min-confidence 0.3 -o out/{stem}.png scans/*.png
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
            "--orient" => self.orient = true,
            "--min-confidence" => {
                let v: f64 = given.parse()?;
                if !(0.0..=1.0).contains(&v) {
                    return Err(
                        format!("bad value '{}': expected a number from 0 to 1", given.text()?).into()
                    );
                }
                self.min_confidence = Some(v);
            }
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
        let columns = &COLUMNS[..if self.orient { 3 } else { 2 }];
        let rows = self.output.rows(cx, columns);
        let (upright, orientation) = self.orientation(cx, &frame)?;
        let upright = upright.as_ref().unwrap_or(&frame);
        let (skew, turned) = match rows {
            Some(_) => (cx.run(&SkewAngle { params: self.params }, &cx.luma(upright)?)?, None),
            None => {
                let (skew, turned) = self.turn(cx, upright)?;
                (skew, Some(turned))
            }
        };
        let unsure = self.min_confidence.is_some_and(|m| skew.confidence < m);
        if unsure {
            eprintln!(
                "deskew: {}: confidence {} is below --min-confidence {}: the page is left as it is",
                cx.place(),
                decimal(skew.confidence, 1e6),
                self.min_confidence.unwrap_or(0.0)
            );
        }
        let Some(mut rows) = rows else {
            let out = match turned {
                Some(turned) if !unsure => turned,
                _ => frame,
            };
            return cx.write(out);
        };
        let (angle, orientation) = if unsure {
            ("NaN".to_owned(), "NaN".to_owned())
        } else {
            (decimal(skew.angle, 1e9), orientation.map_or(String::new(), |d| d.to_string()))
        };
        let confidence = decimal(skew.confidence, 1e6);
        if self.orient {
            rows.push(&[&angle, &confidence, &orientation]);
        } else {
            rows.push(&[&angle, &confidence]);
        }
        rows.write(cx)
    }
}

impl Deskew {
    /// With `--orient`, the frame's orientation in degrees, and the frame turned upright by it
    /// where it is not upright already (every channel by the same exact quarter turn); the
    /// orientation is decided on the CPU whatever the backend (see docs/deskew.md).
    fn orientation(
        &self,
        cx: &mut Context<'_>,
        frame: &Frame,
    ) -> Result<(Option<Frame>, Option<u32>), Error> {
        if !self.orient {
            return Ok((None, None));
        }
        let luma = cx.luma(frame)?;
        let found = deskew::orientation(&self.params, &luma).map_err(|e| cx.op_error(e))?;
        if found.quarters == 0 {
            return Ok((None, Some(0)));
        }
        let turn = found.upright(frame.width, frame.height, frame.maxval);
        Ok((Some(cx.run_each_channel(frame, |_| turn)?), Some(found.degrees())))
    }

    /// The frame's skew, and the frame turned upright: a gray frame by the one operation (one
    /// upload on the GPU); a frame of several channels measured on its luma, then each channel
    /// turned alike.
    fn turn(&self, cx: &mut Context<'_>, frame: &Frame) -> Result<(Skew, Frame), Error> {
        let fills = self.fill.per_channel(cx, frame)?;
        if frame.channels == Channels::Gray {
            let op = DeskewOp { params: self.params, fill: fills.map(|f| f[0]) };
            let out = cx.run(&op, frame)?;
            return Ok((out.skew, out.frame));
        }
        let luma = cx.luma(frame)?;
        let skew = cx.run(&SkewAngle { params: self.params }, &luma)?;
        let fills = match fills {
            Some(f) => f,
            None => deskew::background(frame).map_err(|e| cx.op_error(e))?,
        };
        let mut turns = Vec::with_capacity(fills.len());
        for fill in fills {
            let fill: Fill = fill.for_samples("fill", false, frame.maxval).map_err(|e| cx.op_error(e))?;
            let turn = deskew::upright(skew.angle, frame.width, frame.height, fill, frame.maxval)
                .map_err(|e| cx.op_error(e))?;
            turns.push(turn);
        }
        Ok((skew, cx.run_each_channel(frame, |c| turns[c])?))
    }
}

/// A number as the table shows it: the shortest decimal that reads back as the same `f64`,
/// rounded first to 1 / `scale` (an angle to 9 decimals: the search's sums of steps leave binary
/// noise past them; a confidence to 6).
fn decimal(value: f64, scale: f64) -> String {
    let rounded = (value * scale).round() / scale;
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    format!("{rounded}")
}
