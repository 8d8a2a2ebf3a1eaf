use histopipe_cli::lexopt::Parser;
use histopipe_cli::{parse_value, Common, Context, Error, Tool};
use histopipe_frame::Frame;
use histopipe_ops::pad::{PadParams, PadSize};

/// `pad`: pad each frame to its diagonal (or a given size), so a rotation crops nothing.
#[derive(Default)]
pub struct Pad {
    to: Option<(usize, usize)>,
    /// left, top, right, bottom
    sides: [Option<usize>; 4],
    fill: u16,
    size: Option<PadSize>,
}

impl Tool for Pad {
    const NAME: &'static str = "pad";
    const HELP: &'static str = "\
pad: pad each frame so that a rotation about its centre crops nothing.

By default each W x H frame becomes a square of side D = ceil(sqrt(W^2 + H^2)), the frame at
offset (floor((D - W) / 2), floor((D - H) / 2)), the border filled with 0. The offset is recorded
in the frame's geometry metadata, so later tools know which pixels are the original's.

Usage: pad [OPTIONS] [FILE...]

Options:
  --to WxH           pad to exactly W x H instead, the frame centred (offsets rounded down)
  --border N         pad N pixels on every side instead
  --left N, --right N, --top N, --bottom N
                     pad N pixels on that side (others 0, or --border's N)
  --fill V           the border's value, 0..maxval [default: 0]

Example:
  pad a.pgm | rotate 45 | colhist -o h.csv
  pad scans/*.pgm | rotate 30 | colhist -o out/{stem}.csv";

    fn option(&mut self, name: &str, parser: &mut Parser) -> Result<bool, Error> {
        match name {
            "--to" => {
                let v: String = parse_value(parser, name)?;
                let size = histopipe_frame::parse_size(&v).map_err(|e| Error::usage(format!("--to: {e}")))?;
                self.to = Some(size);
            }
            "--border" => {
                let n = parse_value(parser, name)?;
                for side in &mut self.sides {
                    side.get_or_insert(n);
                }
            }
            "--left" => self.sides[0] = Some(parse_value(parser, name)?),
            "--top" => self.sides[1] = Some(parse_value(parser, name)?),
            "--right" => self.sides[2] = Some(parse_value(parser, name)?),
            "--bottom" => self.sides[3] = Some(parse_value(parser, name)?),
            "--fill" => self.fill = parse_value(parser, name)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
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

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let params = PadParams { size: self.size.unwrap_or(PadSize::Diagonal), fill: self.fill };
        let pad = params.for_frame(frame.width, frame.height, frame.maxval).map_err(|e| cx.op_error(e))?;
        cx.check_pixels(pad.width, pad.height)?;
        let out = cx.run(&pad, &frame)?;
        cx.write(out)
    }
}
