use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::clahe::{self, TileGrid};
use histopipe_ops::mask::Masked;

use crate::colour::{Colour, MAPPING};
use crate::equalize::COLOUR;
use crate::mask::{Masking, MASK};

/// `--clip` and `--tiles`, defined apart from [`Clahe::FLAGS`] so that [`Clahe::check`]'s
/// messages name them from their definitions ([`Flag::message`]).
const CLIP: Flag = Flag::with_value(
    "--clip",
    "C",
    "clip limit, relative to a tile's mean bin count; 0 or less: no clipping [default: 40]",
)
.param("clip");
const TILES: Flag =
    Flag::with_value("--tiles", "GXxGY", "tiles across and down (N: N x N) [default: 8x8]").param("tiles");

/// `clahe`: contrast-limited adaptive histogram equalization, as OpenCV's `cv2.createCLAHE`.
#[derive(Default)]
pub struct Clahe {
    op: clahe::Clahe,
    colour: Colour,
    mask: Masking,
}

impl Tool for Clahe {
    const NAME: &'static str = "clahe";
    const HELP: &'static str = "\
clahe: contrast-limited adaptive histogram equalization (CLAHE) of each frame.

The output equals OpenCV's cv2.createCLAHE(clipLimit=C, tileGridSize=(GX, GY)).apply(img) byte for
byte, on 8-bit and 16-bit frames: the frame is cut into GX x GY tiles (extended on the right and
bottom by reflection, BORDER_REFLECT_101, when the grid does not divide it); each tile's histogram
(256 bins, or 65536 for 16-bit frames) is clipped at max(C * tile pixels / bins, 1) per bin, the
excess handed back evenly, and becomes a look-up table; each pixel is mapped by bilinear
interpolation between its four nearest tiles' tables, in OpenCV's single-precision arithmetic.
The output's maxval is 255 (8-bit) or 65535 (16-bit), the range OpenCV's tables span.

Colour frames (--colour): by default CLAHE of the Y of YCrCb, converted back, as OpenCV's recipe
does it (cvtColor BGR2YCrCb, CLAHE of Y, cvtColor YCrCb2BGR), byte for byte at 8 and 16 bits;
'lab' does the same with the L of L*a*b* (cvtColor BGR2Lab, CLAHE of L, cvtColor Lab2BGR), byte
for byte, 8-bit frames only; 'each' works on R, G and B on their own; 'gray' reads colour as gray
and writes gray. Alpha is carried unchanged (rescaled only when the maxval changes).

With --mask FILE (the frame's size) each tile's histogram counts only the pixels where the mask is
non-zero, N of them, and is clipped at max(C * N / bins, 1); its table scales by (bins - 1) / N;
a tile of no masked pixel maps as the identity; every pixel is mapped.

Float frames follow scikit-image instead: the output is equalize_adapthist(img, kernel_size=(max(H
div GY, 1), max(W div GX, 1)), clip_limit=C / 256, nbins=256) as float32, in its arithmetic (the
default 8x8 is its default kernel_size). A frame with samples outside -1..1 (which it refuses) is
first rescaled onto 0..1 by its rescale_intensity; NaN and infinities are refused. Colour float
frames take --colour each or gray, and no --mask (it has none). Both backends run the same host
code for them. See docs/clahe.md.

Usage: clahe [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[CLIP, TILES, COLOUR, MASK];
    const HELP_END: &'static str = "\
Example:
  clahe --clip 2 < moon.pgm > moon-clahe.pgm
  clahe --tiles 16x12 < dem16.pgm | cdf --bins 16
  clahe --clip 2 -o astronaut-clahe.png astronaut.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--clip" => self.op.clip = given.parse()?,
            "--tiles" => self.op.tiles = given.parse::<TileGrid>()?,
            "--colour" => self.colour = MAPPING.parse(given)?,
            _ => return self.mask.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        if !self.op.clip.is_finite() {
            let why = format!("bad value '{}': not a finite number", self.op.clip);
            return Err(Error::usage(CLIP.message(why)));
        }
        // The smallest tables, 8-bit ones, must fit: 16-bit frames are checked as they come.
        let TileGrid { x, y } = self.op.tiles;
        let entries = x as u128 * y as u128 * 256;
        if entries > clahe::MAX_TABLE_ENTRIES as u128 {
            let why = format!(
                "{} tiles, over the limit of {}",
                x as u128 * y as u128,
                clahe::MAX_TABLE_ENTRIES / 256
            );
            return Err(Error::usage(TILES.message_of(format!("{x}x{y}"), why)));
        }
        self.mask.check(common)
    }

    fn reads_gray(&self) -> bool {
        self.colour == Colour::Gray
    }

    // Float frames: scikit-image's equalize_adapthist (histopipe_ops::clahe::float).
    const FLOAT: bool = true;

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        if !frame.depth().is_integer() {
            return self.float_frame(cx, &frame);
        }
        let out = match self.mask.fit(cx, &frame)? {
            Some(mask) => self.colour.run(cx, &frame, &Masked { op: self.op, mask })?,
            None => self.colour.run(cx, &frame, &self.op)?,
        };
        cx.write(out)
    }
}

impl Clahe {
    /// A float frame: scikit-image's `equalize_adapthist`, refused in one line with `--mask` (it
    /// has none) and as a colour frame in a mode other than `each`.
    fn float_frame(&self, cx: &mut Context<'_>, frame: &Frame) -> Result<(), Error> {
        if self.mask.is_given() {
            return Err(cx.invalid(
                "--mask with a float frame: float frames follow scikit-image's equalize_adapthist, \
                 which takes no mask",
            ));
        }
        if frame.channels.is_colour() && self.colour != Colour::Each {
            return Err(cx.invalid(format!(
                "--colour {} of a float colour frame: give --colour each (each channel as scikit-image \
                 equalizes a float plane) or gray",
                self.colour.word()
            )));
        }
        let out = self.colour.run(cx, frame, &self.op)?;
        cx.write(out)
    }
}
