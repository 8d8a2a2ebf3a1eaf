use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::pad::{PadParams, PadSize};
use histopipe_ops::Fills;

use crate::fill::{fill_flag, BorderWord, Filling};

/// `pad`: pad each frame to its diagonal (or a given size), so a rotation crops nothing.
#[derive(Default)]
pub struct Pad {
    to: Option<(usize, usize)>,
    /// left, top, right, bottom
    sides: [Option<usize>; 4],
    fill: Filling<Fills>,
    mode: BorderWord,
    size: Option<PadSize>,
}

impl Tool for Pad {
    const NAME: &'static str = "pad";
    const HELP: &'static str = "\
pad: pad each frame so that a rotation about its centre crops nothing.

By default each W x H frame becomes a square of side D = ceil(sqrt(W^2 + H^2)), the frame at
offset (floor((D - W) / 2), floor((D - H) / 2)), the border filled with 0. The offset is recorded
in the frame's geometry metadata, so later tools know which pixels are the original's.

Colour frames keep their colour: every channel (alpha too) is padded alike, the border of each
taking the fill value, or its own (--fill 255,0,0 pads RGB red; --fill 255 on RGBA is opaque
white). Float frames stay float: samples are copied, and --fill takes any float (nan too).
With --mode the border is made of the frame's own pixels instead, as OpenCV's copyMakeBorder
makes it (--mode reflect101 is its BORDER_REFLECT_101). See docs/pad.md.

Usage: pad [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--to",
            "WxH",
            "pad to exactly W x H instead, the frame centred (offsets rounded down)",
        )
        .param("size"),
        Flag::with_value("--border", "N", "pad N pixels on every side instead"),
        Flag::with_value("--left", "N", "pad N pixels on the left (others 0, or --border's N)"),
        Flag::with_value("--right", "N", "pad N pixels on the right (others 0, or --border's N)"),
        Flag::with_value("--top", "N", "pad N pixels at the top (others 0, or --border's N)"),
        Flag::with_value("--bottom", "N", "pad N pixels at the bottom (others 0, or --border's N)"),
        fill_flag(
            "V[,V...]",
            "the border's value, 0..maxval, or any float (nan, inf too) for float frames; or one value per \
             channel (R,G,B[,A] or gray,alpha) [default: 0]",
        ),
        BorderWord::flag(
            "what the border is made of: the fill (constant), or the frame's pixels as OpenCV's \
             BORDER_REPLICATE, BORDER_REFLECT, BORDER_REFLECT_101 or BORDER_WRAP [default: constant]",
        ),
    ];
    const HELP_END: &'static str = "\
Example:
  pad a.pgm | rotate 45 | colhist -o h.csv
  pad scans/*.pgm | rotate 30 | colhist -o out/{stem}.csv";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--to" => self.to = Some(histopipe_frame::parse_size(given.text()?)?),
            "--border" => {
                let n = given.parse()?;
                for side in &mut self.sides {
                    side.get_or_insert(n);
                }
            }
            "--left" => self.sides[0] = Some(given.parse()?),
            "--top" => self.sides[1] = Some(given.parse()?),
            "--right" => self.sides[2] = Some(given.parse()?),
            "--bottom" => self.sides[3] = Some(given.parse()?),
            "--mode" => self.mode = BorderWord::parse(given)?,
            _ => return self.fill.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        if self.mode != BorderWord::Constant && self.fill.value().is_some() {
            return Err(Error::usage(format!(
                "--fill is the constant border's; --mode {} copies the frame's pixels",
                self.mode.word()
            )));
        }
        let bordered = self.sides.iter().any(Option::is_some);
        let size = match (self.to, bordered) {
            (Some(_), true) => return Err(Error::usage("--to cannot be combined with --border or a side")),
            (Some((width, height)), false) => PadSize::To { width, height },
            (None, true) => {
                let [left, top, right, bottom] = self.sides.map(|s| s.unwrap_or(0));
                PadSize::Border { left, top, right, bottom }
            }
            (None, false) => PadSize::Diagonal,
        };
        self.size = Some(size);
        Ok(())
    }

    fn reads_gray(&self) -> bool {
        false
    }

    const FLOAT: bool = true;

    /// Each channel padded alike, with its own fill or its own pixels.
    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let size = self.size.unwrap_or(PadSize::Diagonal);
        let fills = self.fill.per_channel_or_zero(cx, &frame)?;
        let mut pads = Vec::with_capacity(fills.len());
        for fill in fills {
            let pad = PadParams { size, fill }.for_frame_of(&frame);
            let pad = pad.and_then(|p| p.with_border(self.mode.border(), frame.width, frame.height));
            pads.push(pad.map_err(|e| cx.op_error(e))?);
        }
        cx.check_pixels(pads[0].width, pads[0].height)?;
        let out = cx.run_each_channel(&frame, |c| pads[c])?;
        cx.write(out)
    }
}
