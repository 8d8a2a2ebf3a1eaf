use std::io::Write;
use std::path::PathBuf;

use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool, TABLE_KEY_COLUMNS,
};
use histopipe_frame::Frame;
use histopipe_ops::hough::{draw_segments, HoughSegments as Segments, Pen, Segment};

/// `--draw`, defined apart from [`HoughSegments::FLAGS`] so that the messages about its image
/// name it from its definition ([`Flag::message_of`]).
const DRAW: Flag = Flag::with_value(
    "--draw",
    "IMAGE",
    "instead of CSV, write IMAGE (PGM, PPM, PAM, PNG, JPEG, TIFF or BMP, gray or colour) with the \
     segments drawn in red, as PNG (or PPM, by -o's extension)",
);

/// `hough-segments`: the line segments of an edge map, as a table or drawn over an image.
#[derive(Default)]
pub struct HoughSegments {
    segments: Segments,
    /// `--draw IMAGE`, as given.
    draw: Option<PathBuf>,
    ppm: bool,
    /// The image of `--draw`, read before any edge map.
    canvas: Option<Canvas>,
    tsv: bool,
}

/// An image to draw segments on, in 8-bit RGB.
struct Canvas {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Tool for HoughSegments {
    const NAME: &'static str = "hough-segments";
    const HELP: &'static str = "\
hough-segments: the straight line segments of an edge map (non-zero samples are edges), with
the parameters of cv2.HoughLinesP(edges, 1, np.pi / 180, THRESHOLD, minLineLength=L,
maxLineGap=G), but deterministic: the same segments on every run and on both backends.

The edge map's Hough accumulator (as hough-vote's, 1 pixel by 1 degree) gives the candidate
lines: its local maxima with at least THRESHOLD votes, strongest first. Each still with
THRESHOLD votes is walked across the frame (a band of 3 pixels across the line); the runs of
its edge pixels, split at more than G steps without one, that span at least L pixels along x
or y are the segments. The pixels of each segment kept are removed, and their votes taken
back, for the lines after it; then the new local maxima are walked, until none is left.
See docs/hough-segments.md.

Output: CSV (or TSV, by -o's extension) with a header line once per output, one line per
segment, strongest line first, each line's segments in walk order:
  frame,source,x0,y0,x1,y1,length,votes
x0,y0 and x1,y1: the end pixels (the first has the smaller x, or y for steep segments);
length: their Euclidean distance; votes: the walk's steps with an edge pixel in the segment.

Usage: hough-segments [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value("--threshold", "T", "lines need at least T votes [default: 50]").param("threshold"),
        Flag::with_value(
            "--min-length",
            "L",
            "keep segments spanning at least L pixels along x or y [default: 50]",
        )
        .param("min_length"),
        Flag::with_value("--max-gap", "G", "bridge at most G steps without an edge pixel [default: 10]")
            .param("max_gap"),
        DRAW,
        Flag::switch("--ppm", "with --draw: write binary PPM instead of PNG"),
    ];
    const HELP_END: &'static str = "\
Example:
  edges page.pgm | hough-segments -o segments.csv
  edges page.pgm | hough-segments --min-length 80 --draw page.pgm -o segments.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        let s = &mut self.segments;
        match given.flag.long {
            "--threshold" => s.threshold = given.parse()?,
            "--min-length" => s.min_length = given.parse()?,
            "--max-gap" => s.max_gap = given.parse()?,
            "--draw" => self.draw = Some(PathBuf::from(given.os())),
            "--ppm" => self.ppm = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        if self.ppm && self.draw.is_none() {
            return Err(Error::usage("--ppm only goes with --draw IMAGE"));
        }
        if let Some(path) = &self.draw {
            let shown = path.display();
            let bytes = std::fs::read(path).map_err(|e| Error::usage(DRAW.message_of(&shown, e)))?;
            let (width, height, rgb) = histopipe_frame::read_rgb8(&bytes, common.max_pixels)
                .map_err(|e| Error::usage(DRAW.message_of(&shown, e)))?;
            self.canvas = Some(Canvas { width, height, rgb });
        }
        Ok(())
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        if self.draw.is_none() {
            if format == Some(OutputFormat::Npy) {
                return Err(Error::usage("hough-segments writes its table as .csv or .tsv, not .npy"));
            }
            self.tsv = format == Some(OutputFormat::Tsv);
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

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let found = cx.run(&self.segments, &frame)?;
        match (&self.draw, &self.canvas) {
            (Some(path), Some(canvas)) => self.draw(cx, &frame, &found, path, canvas),
            _ => {
                let sep = if self.tsv { '\t' } else { ',' };
                let mut text = String::new();
                if cx.starts_output() {
                    let columns =
                        TABLE_KEY_COLUMNS.iter().chain(&["x0", "y0", "x1", "y1", "length", "votes"]);
                    text = columns.copied().collect::<Vec<_>>().join(&sep.to_string());
                    text.push('\n');
                }
                let key = cx.row_key(sep);
                for s in &found {
                    let length = format!("{:.2}", s.length());
                    text.push_str(&format!(
                        "{key}{}{sep}{}{sep}{}{sep}{}{sep}{length}{sep}{}\n",
                        s.x0, s.y0, s.x1, s.y1, s.votes
                    ));
                }
                cx.text().write_all(text.as_bytes()).map_err(|e| Error::io(&e))
            }
        }
    }
}

impl HoughSegments {
    /// Writes `canvas` with `segments` drawn on it, which must be of the edge map's size.
    fn draw(
        &self,
        cx: &mut Context<'_>,
        frame: &Frame,
        segments: &[Segment],
        path: &std::path::Path,
        canvas: &Canvas,
    ) -> Result<(), Error> {
        if !cx.starts_output() {
            return Err(cx.invalid(
                "--draw writes one image, and this output would get more than one edge map: \
                 give -o a field for one image each, as in -o out/{stem}.png",
            ));
        }
        let Canvas { width: w, height: h, .. } = *canvas;
        if (w, h) != (frame.width, frame.height) {
            let rest = format!("is {w}x{h}, but the edge map is {}x{}", frame.width, frame.height);
            return Err(cx.invalid(DRAW.sentence_of(path.display(), rest)));
        }
        let mut rgb = canvas.rgb.clone();
        draw_segments(&mut rgb, w, h, segments, Pen::default());
        histopipe_frame::write_rgb8(cx.text(), w, h, &rgb, !self.ppm).map_err(|e| Error::io(&e))
    }
}
