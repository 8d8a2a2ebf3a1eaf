use histopipe_cli::{Context, Error, Tool};
use histopipe_frame::Frame;
use histopipe_ops::equalize;

/// `equalize`: global histogram equalization of each frame, by its own histogram.
#[derive(Default)]
pub struct Equalize;

impl Tool for Equalize {
    const NAME: &'static str = "equalize";
    const HELP: &'static str = "\
equalize: global histogram equalization of each frame, by that frame's own histogram.

Each level l becomes round((cdf(l) - cdf_min) / (N - cdf_min) * maxval), N the pixel count and
cdf_min the count of the lowest level present; the output keeps the input's maxval. 8-bit frames
follow OpenCV's arithmetic (single-precision, ties to even): a maxval-255 frame comes out exactly as
cv2.equalizeHist makes it. 16-bit frames round exactly, half up. A frame of one value is unchanged.
See docs/equalize.md.

Usage: equalize [OPTIONS] [FILE...]";
    const HELP_END: &'static str = "\
Example:
  equalize -o moon-eq.pgm moon.pgm
  equalize -o out/{stem}.png scans/*.jpg
  equalize moon.pgm | cdf --bins 8";

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let out = cx.run(&equalize::Equalize, &frame)?;
        cx.write(out)
    }
}
