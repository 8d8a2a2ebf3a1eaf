//! `--draw` of the Hough tools (`hough-lines`, `hough-segments`), written once: the picture each
//! frame's lines or segments are drawn on (one file, read before any input, or one a frame through
//! `-o`'s fields, as `--draw '{dir}/{name}'` names the frame's own source), the pen
//! (`--draw-colour`, `--width`), and the picture written (PNG, or PPM with `--ppm` or `-o x.ppm`).
//! The pen's colour is `--draw-colour`, not `--colour`, which names a mode of the colour channels
//! in every other tool (src/colour.rs); `--colour R,G,B`, its name before, is still taken.

use std::path::{Path, PathBuf};

use histopipe_cli::{
    side, Common, Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product,
};
use histopipe_frame::Origin;
use histopipe_ops::hough::Pen;

/// The widest pen `--width` takes.
const MAX_WIDTH: usize = 100;

/// `--draw-colour`, `--width` and `--ppm`: the drawing's options beside each tool's own `--draw`
/// (whose help names what it draws).
pub(crate) const COLOUR: Flag = Flag::with_value(
    "--draw-colour",
    "R,G,B",
    "with --draw: the colour drawn, 0 to 255 each [default: 255,0,0]",
)
.alias("--colour");
pub(crate) const WIDTH: Flag = Flag::with_value(
    "--width",
    "W",
    "with --draw: lines W pixels wide, a W x W square around each point of the line [default: 1]",
);
pub(crate) const PPM: Flag = Flag::switch("--ppm", "with --draw: write binary PPM instead of PNG");

/// An image to draw on, in 8-bit RGB.
struct Canvas {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

/// What `--draw` and its options ask for.
#[derive(Default)]
pub(crate) struct Drawing {
    /// `--draw IMAGE`, as given.
    template: Option<PathTemplate>,
    pen: Pen,
    /// Whether `--draw-colour` or `--width` was given.
    pen_given: bool,
    ppm: bool,
    /// The image of `--draw` without fields, read before any input.
    canvas: Option<Canvas>,
}

impl Drawing {
    /// Whether the tool draws (`--draw` was given) rather than writes its table.
    pub(crate) fn is_on(&self) -> bool {
        self.template.is_some()
    }

    /// Takes `--draw`, `--draw-colour`, `--width` or `--ppm`; `Ok(false)` for another option.
    pub(crate) fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--draw" => {
                let text = given.text()?;
                self.template =
                    Some(PathTemplate::parse(given.flag.long, text).map_err(FlagError::AfterValue)?);
            }
            "--draw-colour" => {
                self.pen.rgb = parse_colour(given.text()?)?;
                self.pen_given = true;
            }
            "--width" => {
                let width: usize = given.parse()?;
                if !(1..=MAX_WIDTH).contains(&width) {
                    return Err(FlagError::Value(format!("bad value '{width}': 1 to {MAX_WIDTH} pixels")));
                }
                self.pen.width = width;
                self.pen_given = true;
            }
            "--ppm" => self.ppm = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks the options together, and reads `--draw`'s image when it has no fields (`draw`:
    /// the tool's `--draw` flag, which messages about the image name).
    pub(crate) fn check(&mut self, common: &Common, draw: &Flag) -> Result<(), Error> {
        if self.ppm && !self.is_on() {
            return Err(Error::usage("--ppm only goes with --draw IMAGE"));
        }
        if self.pen_given && !self.is_on() {
            return Err(Error::usage("--draw-colour and --width only go with --draw IMAGE"));
        }
        if let Some(template) = self.template.as_ref().filter(|t| !t.has_fields()) {
            let path = PathBuf::from(template.text());
            let canvas = Canvas::read(&path, Origin::Named, common.max_pixels)
                .map_err(|e| Error::usage(draw.message_of(path.display(), e)))?;
            self.canvas = Some(canvas);
        }
        Ok(())
    }

    /// What the tool writes: its table (CSV, or TSV by `-o`'s extension: `tsv` is set), or the
    /// picture.
    pub(crate) fn product(
        &mut self,
        format: Option<OutputFormat>,
        tool: &str,
        tsv: &mut bool,
    ) -> Result<Product, Error> {
        if !self.is_on() {
            if format == Some(OutputFormat::Npy) {
                return Err(Error::usage(format!("{tool} writes its table as .csv or .tsv, not .npy")));
            }
            *tsv = format == Some(OutputFormat::Tsv);
            return Ok(Product::Table);
        }
        match format {
            Some(OutputFormat::Png) if self.ppm => Err(Error::usage("--ppm contradicts -o's extension .png")),
            Some(OutputFormat::Ppm) => {
                self.ppm = true;
                Ok(Product::Drawing)
            }
            _ => Ok(Product::Drawing),
        }
    }

    /// Writes this frame's picture: `--draw`'s image (the one read before any input, or this
    /// frame's own by the fields), which must be `size` (`what` says of what: `the edge map is
    /// 640x480`), with `paint` drawing on its RGB samples with the pen. `input`: what one frame
    /// of the stream is, for the message refusing a second one in one picture.
    pub(crate) fn draw(
        &self,
        cx: &mut Context<'_>,
        draw: &Flag,
        size: (usize, usize),
        what: &str,
        input: &str,
        paint: impl FnOnce(&mut [u8], usize, usize, Pen),
    ) -> Result<(), Error> {
        let Some(template) = &self.template else { return Ok(()) };
        if !cx.starts_output() {
            return Err(cx.invalid(format!(
                "--draw writes one image, and this output would get more than one {input}: \
                 give -o a field for one image each, as in -o out/{{stem}}.png"
            )));
        }
        let own;
        let (path, canvas) = match &self.canvas {
            Some(canvas) => (PathBuf::from(template.text()), canvas),
            None => {
                let path = template.input_of(cx.source(), cx.index)?;
                let origin = cx.source().map_or(Origin::Named, |s| s.origin);
                own = Canvas::read(&path, origin, cx.common.max_pixels)
                    .map_err(|e| cx.invalid(draw.message_of(path.display(), e)))?;
                (path, &own)
            }
        };
        let Canvas { width: w, height: h, .. } = *canvas;
        if (w, h) != size {
            return Err(cx.invalid(draw.sentence_of(path.display(), format!("is {w}x{h}, but {what}"))));
        }
        let mut rgb = canvas.rgb.clone();
        paint(&mut rgb, w, h, self.pen);
        histopipe_frame::write_rgb8(cx.text(), w, h, &rgb, !self.ppm).map_err(|e| Error::io(&e))
    }
}

impl Canvas {
    /// The picture at `path` as 8-bit RGB, read as a side file ([`side::open`]: a regular file
    /// alone when the name came from the stream, `origin`) of at most the bytes a frame of
    /// `--max-pixels` may take, and decoded under the frames' pixel and memory bounds. The decoder's
    /// reason is not told for a file the stream named: it may quote the file's first bytes.
    fn read(path: &Path, origin: Origin, max_pixels: u64) -> Result<Canvas, String> {
        let cap = histopipe_frame::read_memory_bound(max_pixels, 0);
        let bytes = side::read_bytes(path, origin, cap, "a picture under --max-pixels")?;
        match histopipe_frame::read_rgb8(&bytes, max_pixels) {
            Ok((width, height, rgb)) => Ok(Canvas { width, height, rgb }),
            Err(e) if origin == Origin::Named => Err(e),
            Err(_) => Err(NOT_A_PICTURE.into()),
        }
    }
}

/// Why a picture the stream named was not drawn on, its bytes unquoted.
const NOT_A_PICTURE: &str = "not a picture that can be read (PNG, JPEG, TIFF, BMP, PPM, PGM or PAM, \
     within --max-pixels); what it holds is not shown, as its name came from the stream";

/// `--draw-colour R,G,B`, each 0 to 255.
fn parse_colour(text: &str) -> Result<[u8; 3], FlagError> {
    let bad = || FlagError::Value(format!("bad value '{text}': give R,G,B, three numbers from 0 to 255"));
    let parts: Vec<&str> = text.split(',').collect();
    let [r, g, b] = parts[..] else { return Err(bad()) };
    let channel = |s: &str| s.trim().parse::<u8>().map_err(|_| bad());
    Ok([channel(r)?, channel(g)?, channel(b)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that is no picture: its decoder's reason (which quotes its bytes) is told when the
    /// user named it, and not when the stream did.
    #[test]
    fn a_picture_the_stream_names_is_never_quoted() {
        let path = std::env::temp_dir().join(format!("histopipe-canvas-{}.pgm", std::process::id()));
        std::fs::write(&path, "P5 hunter2 1 255\n").unwrap();
        let max = histopipe_frame::DEFAULT_MAX_PIXELS;
        let named = Canvas::read(&path, Origin::Named, max).err().unwrap();
        let streamed = Canvas::read(&path, Origin::Stream, max).err().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(named.contains("hunter2"), "{named}");
        assert_eq!(streamed, NOT_A_PICTURE);
    }

    #[test]
    fn colours_parse() {
        assert_eq!(parse_colour("0,128,255").unwrap(), [0, 128, 255]);
        assert!(parse_colour("0,256,0").is_err() && parse_colour("1,2").is_err());
    }
}
