use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;

use histopipe_cli::lexopt::ValueExt;
use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::{Frame, Line};
use histopipe_ops::rotate::{Flip, Interpolation, Rotate as Turned, RotateBy, RotateParams};
use histopipe_ops::{Fill, Fills, OpError};

use crate::fill::{fill_flag, Filling};

histopipe_cli::words! {
    /// `--flip`'s words: which way the frame is mirrored before it is turned, as `cv2.flip`'s
    /// flipCode 1, 0 and -1.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum FlipWord {
        Horizontal = "h",
        Vertical = "v",
        Both = "hv",
    }
}

impl FlipWord {
    fn flip(self) -> Flip {
        match self {
            FlipWord::Horizontal => Flip::Horizontal,
            FlipWord::Vertical => Flip::Vertical,
            FlipWord::Both => Flip::Both,
        }
    }
}

/// `--centre X,Y`: two finite numbers.
fn parse_centre(text: &str) -> Result<(f64, f64), String> {
    let numbers: Vec<f64> = text.split(',').map_while(|t| t.trim().parse::<f64>().ok()).collect();
    match numbers[..] {
        [x, y] if text.split(',').count() == 2 && x.is_finite() && y.is_finite() => Ok((x, y)),
        _ => Err(format!("bad value '{text}': expected X,Y, two numbers (pixel coordinates)")),
    }
}

/// `rotate`: turn each frame about its centre, or so that a line of the original is vertical.
#[derive(Default)]
pub struct Rotate {
    angle: Option<f64>,
    line: Option<Line>,
    interpolation: Interpolation,
    fill: Filling<Fills>,
    expand: bool,
    flip: Option<FlipWord>,
    centre: Option<(f64, f64)>,
}

impl Rotate {
    fn set_angle(&mut self, text: &str) -> Result<(), Error> {
        if self.angle.is_some() {
            return Err(Error::usage(format!("unexpected argument '{text}': the angle is already given")));
        }
        let angle =
            text.parse::<f64>().ok().filter(|a| a.is_finite()).ok_or_else(|| {
                Error::usage(format!("bad angle '{text}': expected degrees, e.g. 45 or -12.5"))
            })?;
        self.angle = Some(angle);
        Ok(())
    }

    /// The operation's parameters from the options (checked once before the first frame), with
    /// the fill `fill`.
    fn params(&self, fill: Fill) -> Result<RotateParams, Error> {
        let by = match (self.angle, self.line) {
            (Some(_), Some(_)) => return Err(Error::usage("give an ANGLE or --line (--segment), not both")),
            (Some(a), None) => RotateBy::Degrees(a),
            (None, Some(l)) => RotateBy::Line(l),
            (None, None) => {
                return Err(Error::usage(
                    "missing ANGLE (degrees) or --line X0,Y0,X1,Y1 (or --segment) (see --help)",
                ))
            }
        };
        if self.centre.is_some() && self.expand {
            return Err(Error::usage(
                "--centre cannot be combined with --expand (the bounding box is the same about any centre)",
            ));
        }
        Ok(RotateParams { by, interpolation: self.interpolation, fill, expand: self.expand })
    }

    /// The turn of `frame` that `params` make: mirrored first (`--flip`), about `--centre`.
    fn turn(&self, params: RotateParams, frame: &Frame) -> Result<Turned, OpError> {
        let turn = params.for_mirrored_frame(frame, self.flip.map(FlipWord::flip))?;
        match self.centre {
            Some(centre) => turn.about(centre),
            None => Ok(turn),
        }
    }
}

impl Tool for Rotate {
    const NAME: &'static str = "rotate";
    const HELP: &'static str = "\
rotate: turn each frame about its centre, keeping its size (pad first to crop nothing).

A positive ANGLE (degrees) turns the picture counter-clockwise as displayed, about the centre
((W-1)/2, (H-1)/2). Each output pixel takes the input pixel its centre maps to (nearest neighbour,
halves rounded up); pixels that map outside the input get the fill value. Multiples of 90 degrees
are exact permutations of the pixels; 0 changes nothing. The geometry metadata is updated.
With --expand the output is the turned frame's bounding box instead: 90 turns W x H into H x W.
With --centre X,Y the turn is about that point instead (cv2.getRotationMatrix2D's centre).
With --flip h, v or hv the frame is mirrored first, as cv2.flip mirrors it, and the mirrored
frame turned (rotate 0 --flip h is the mirror alone).

Colour frames keep their colour: every channel (alpha too) is turned alike, pixels from outside
taking the fill value, or one per channel (on RGBA, --fill 0,0,0,0 is transparent and --fill 255
opaque white). Float frames stay float: nearest and quarter turns copy samples, --bilinear
blends them in double precision rounded to float (NaN spreads to its neighbours), and --fill
takes any float (nan too). See docs/rotate.md.

Usage: rotate ANGLE [OPTIONS] [FILE...]
       rotate --line X0,Y0,X1,Y1 [OPTIONS] [FILE...]
       rotate --segment X0,Y0,X1,Y1 [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--line",
            "X0,Y0,X1,Y1",
            "turn so that the line through these two points of the original image (through the geometry \
             metadata, so it works after pad) is vertical, from (X0,Y0) at the top to (X1,Y1) at the bottom",
        ),
        Flag::with_value(
            "--segment",
            "X0,Y0,X1,Y1",
            "the same turn as --line (a name to match colhist --segment, which then counts only the \
             pixels between the two points)",
        ),
        Flag::switch("--bilinear", "interpolate between the four nearest input pixels (rounded half up)"),
        fill_flag(
            "V[,V...]",
            "the value of pixels from outside the input, 0..maxval, or any float (nan, inf too) for float \
             frames; or one value per channel (R,G,B[,A] or gray,alpha) [default: 0]",
        ),
        Flag::switch(
            "--expand",
            "make the output the bounding box of the turned frame (quarter turns: an exact transpose or \
             flip, H x W), not the input's size",
        ),
        Flag::with_value(
            "--flip",
            "h|v|hv",
            "mirror the frame first, left to right (h), top to bottom (v) or both (hv), as cv2.flip's \
             flipCode 1, 0 and -1; the mirrored frame is then turned",
        )
        .one_of(FlipWord::NAMES),
        Flag::with_value(
            "--centre",
            "X,Y",
            "turn about this point (pixel coordinates, pixel (x, y) centred on (x, y): \
             cv2.getRotationMatrix2D's centre) instead of the frame's centre ((W-1)/2, (H-1)/2)",
        )
        .param("centre"),
    ];
    const HELP_END: &'static str = "\
Example:
  pad a.pgm | rotate --line 0,0,400,400 | colhist --line 0,0,400,400 -o line.csv
  pad a.jpg | rotate --segment 100,100,300,250 | colhist --segment 100,100,300,250
  pad scans/*.pgm | rotate 30 -o out/{stem}.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            // The same turn: --segment names the line by the two ends colhist --segment takes.
            "--line" | "--segment" => self.line = Some(given.parse()?),
            "--bilinear" => self.interpolation = Interpolation::Bilinear,
            "--expand" => self.expand = true,
            "--flip" => self.flip = Some(FlipWord::parse_word(given.text()?, "flip")?),
            "--centre" => self.centre = Some(parse_centre(given.text()?)?),
            _ => return self.fill.option(given),
        }
        Ok(true)
    }

    /// A negative ANGLE.
    fn negative_number(&mut self, text: &str) -> Result<bool, Error> {
        self.set_angle(text).map(|()| true)
    }

    /// The first operand is the ANGLE unless --line (--segment) is given (or a negative angle was taken as
    /// an option); the rest are files.
    fn operands(&mut self, operands: &mut VecDeque<OsString>) -> Result<(), Error> {
        if self.line.is_none() && self.angle.is_none() {
            if let Some(angle) = operands.pop_front() {
                self.set_angle(&angle.string()?)?;
            }
        }
        // `rotate 10 --line ...`: a number that is no file is an angle too many, not a file.
        let number = operands.front().and_then(|o| o.to_str()).is_some_and(|t| t.parse::<f64>().is_ok());
        if self.line.is_some() && number && !operands.front().is_some_and(|o| Path::new(o).exists()) {
            return Err(Error::usage("give an ANGLE or --line (--segment), not both"));
        }
        Ok(())
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        self.params(Fill::default()).map(drop)
    }

    fn reads_gray(&self) -> bool {
        false
    }

    const FLOAT: bool = true;

    /// Each channel turned alike, with its own fill.
    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let fills = self.fill.per_channel_or_zero(cx, &frame)?;
        let mut turns = Vec::with_capacity(fills.len());
        for fill in fills {
            turns.push(self.turn(self.params(fill)?, &frame).map_err(|e| cx.op_error(e))?);
        }
        cx.check_pixels(turns[0].out_width, turns[0].out_height)?;
        let out = cx.run_each_channel(&frame, |c| turns[c])?;
        cx.write(out)
    }
}
