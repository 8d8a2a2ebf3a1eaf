use histopipe_cli::{Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::equalize;
use histopipe_ops::Op;

/// `--colour`, which `equalize` and `clahe` share: how a colour frame is equalized.
pub const COLOUR: Flag = Flag::with_value(
    "--colour",
    "MODE",
    "colour frames: luma (the Y of YCrCb alone, converted back as OpenCV converts), each (every \
     colour channel on its own) or gray (read as gray, written gray); alpha is carried, never \
     equalized [default: luma]",
)
.one_of(&["luma", "each", "gray"]);

/// What `--colour` says to do with a colour frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Colour {
    /// The operation on Y of YCrCb, R, G, B made again from it and the frame's Cr, Cb.
    #[default]
    Luma,
    /// The operation on R, G and B, each on its own.
    Each,
    /// Colour read as gray (OpenCV's BGR2GRAY, a JPEG's own luma), a gray frame written.
    Gray,
}

impl Colour {
    pub fn parse(text: &str) -> Result<Colour, String> {
        match text {
            "luma" => Ok(Colour::Luma),
            "each" => Ok(Colour::Each),
            "gray" => Ok(Colour::Gray),
            _ => Err(format!("unknown mode '{text}' (luma, each or gray)")),
        }
    }

    /// Runs `op` on `frame` as this mode says; gray frames (all of them with `gray`) are the
    /// operation's alone in every mode, and alpha is carried past it.
    pub fn run<O: Op<Output = Frame> + Clone>(
        self,
        cx: &mut Context<'_>,
        frame: &Frame,
        op: &O,
    ) -> Result<Frame, Error> {
        match self {
            Colour::Luma | Colour::Gray => cx.run_on_luma(frame, op),
            Colour::Each => cx.run_each_colour_channel(frame, |_| op.clone()),
        }
    }
}

/// `equalize`: global histogram equalization of each frame, by its own histogram.
#[derive(Default)]
pub struct Equalize {
    colour: Colour,
}

impl Tool for Equalize {
    const NAME: &'static str = "equalize";
    const HELP: &'static str = "\
equalize: global histogram equalization of each frame, by that frame's own histogram.

Each level l becomes round((cdf(l) - cdf_min) / (N - cdf_min) * maxval), N the pixel count and
cdf_min the count of the lowest level present; the output keeps the input's maxval. 8-bit frames
follow OpenCV's arithmetic (single-precision, ties to even): a maxval-255 frame comes out exactly as
cv2.equalizeHist makes it. 16-bit frames round exactly, half up. A frame of one value is unchanged.

Colour frames (--colour): by default the Y of YCrCb is equalized and converted back, as OpenCV's
recipe does it (cvtColor BGR2YCrCb, equalizeHist of Y, cvtColor YCrCb2BGR), byte for byte on
8-bit frames; 16-bit frames use OpenCV's 16-bit YCrCb and the 16-bit rule above. 'each'
equalizes R, G and B on their own; 'gray' reads colour as gray and writes gray. Alpha is carried
unchanged. See docs/equalize.md.

Usage: equalize [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[COLOUR];
    const HELP_END: &'static str = "\
Example:
  equalize -o moon-eq.pgm moon.pgm
  equalize -o out/{stem}.png scans/*.jpg
  equalize --colour each -o astronaut-eq.png astronaut.png
  equalize moon.pgm | cdf --bins 8";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--colour" => self.colour = Colour::parse(given.text()?)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn reads_gray(&self) -> bool {
        self.colour == Colour::Gray
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let out = self.colour.run(cx, &frame, &equalize::Equalize)?;
        cx.write(out)
    }
}
