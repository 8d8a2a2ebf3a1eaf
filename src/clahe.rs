use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::clahe::{self, TileGrid};

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
See docs/clahe.md.

Usage: clahe [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[CLIP, TILES];
    const HELP_END: &'static str = "\
Example:
  clahe --clip 2 < moon.pgm > moon-clahe.pgm
  clahe --tiles 16x12 < dem16.pgm | cdf --bins 16";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--clip" => self.op.clip = given.parse()?,
            "--tiles" => self.op.tiles = given.parse::<TileGrid>()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
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
        Ok(())
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let out = cx.run(&self.op, &frame)?;
        cx.write(out)
    }
}
