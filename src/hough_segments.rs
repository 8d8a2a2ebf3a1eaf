use std::io::Write;

use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::Frame;
use histopipe_ops::hough::{draw_segments, HoughSegments as Segments};

use crate::drawing::{self, Drawing};

/// `--draw`, defined apart from [`HoughSegments::FLAGS`] so that the messages about its image
/// name it from its definition ([`Flag::message_of`]).
const DRAW: Flag = Flag::with_value(
    "--draw",
    "IMAGE",
    "instead of CSV, write IMAGE (PGM, PPM, PAM, PNG, JPEG, TIFF or BMP, gray or colour) with the \
     segments drawn on it, as PNG (or PPM, by -o's extension); IMAGE may have -o's fields, of the \
     edge map's source: '{dir}/{name}' draws each frame's segments on the image it came from",
);

/// `hough-segments`: the line segments of an edge map, as a table or drawn over an image.
#[derive(Default)]
pub struct HoughSegments {
    segments: Segments,
    /// `--draw` and its options.
    drawing: Drawing,
    tsv: bool,
}

impl Tool for HoughSegments {
    const NAME: &'static str = "hough-segments";
    const HELP: &'static str = "\
hough-segments: the straight line segments of an edge map (non-zero samples are edges), with
the parameters of cv2.HoughLinesP(edges, 1, np.pi / 180, THRESHOLD, minLineLength=L,
maxLineGap=G), but deterministic: the same segments on every run and on both backends.

The edge map's Hough accumulator (as hough-vote's, 1 pixel by 1 degree) gives the candidate
lines: its local maxima with at least THRESHOLD votes, strongest first. Each still with
THRESHOLD votes is walked across the frame (a band of 3 pixels across the line); its runs of
edge pixels, split where more than G pixels of the line have none, are followed along their
own pixels (the least-squares line, refitted until they settle), and each is the line between
its end pixels, split again where that line has a longer gap. Those that span at least L
pixels along x or y are the segments. The pixels of each segment kept are removed, and their
votes taken back, for the lines after it; then the new local maxima are walked, until none is
left.
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
        Flag::with_value(
            "--max-gap",
            "G",
            "bridge at most G pixels of a line without an edge pixel [default: 10]",
        )
        .param("max_gap"),
        DRAW,
        drawing::COLOUR,
        drawing::WIDTH,
        drawing::PPM,
    ];
    const HELP_END: &'static str = "\
Example:
  edges page.pgm | hough-segments -o segments.csv
  edges page.pgm | hough-segments --min-length 80 --draw page.pgm -o segments.png
  edges scans/*.png | hough-segments --width 2 --draw '{dir}/{name}' -o out/{stem}.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        let s = &mut self.segments;
        match given.flag.long {
            "--threshold" => s.threshold = given.parse()?,
            "--min-length" => s.min_length = given.parse()?,
            "--max-gap" => s.max_gap = given.parse()?,
            _ => return self.drawing.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        self.drawing.check(common, &DRAW)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.drawing.product(format, Self::NAME, &mut self.tsv)
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let found = cx.run(&self.segments, &frame)?;
        if self.drawing.is_on() {
            let what = format!("the edge map is {}x{}", frame.width, frame.height);
            let paint = |rgb: &mut [u8], w, h, pen| draw_segments(rgb, w, h, &found, pen);
            return self.drawing.draw(cx, &DRAW, (frame.width, frame.height), &what, "edge map", paint);
        }
        let sep = if self.tsv { '\t' } else { ',' };
        let mut text = cx.table_header(&["x0", "y0", "x1", "y1", "length", "votes"], sep);
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
