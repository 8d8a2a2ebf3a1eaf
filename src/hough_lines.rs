use std::io::Write;
use std::path::PathBuf;

use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product, Tool,
    TABLE_KEY_COLUMNS,
};
use histopipe_frame::{Frame, Pixels};
use histopipe_ops::hough::{
    draw_lines, DistinctLines, HoughLines as Peaks, HoughSpace, Line, Pen, Suppression,
};

/// Distinct lines kept without `--top` or `--threshold`: a handful of lines is what a first look
/// wants, and a photo's accumulator has tens of distinct peaks over half the strongest (a page of
/// text one per text line: see the manual).
const DEFAULT_TOP: usize = 20;

/// The widest pen `--width` takes.
const MAX_WIDTH: usize = 100;

/// `--draw`, defined apart from [`HoughLines::FLAGS`] so that the messages about its image name
/// it from its definition ([`Flag::message_of`]).
const DRAW: Flag = Flag::with_value(
    "--draw",
    "IMAGE",
    "instead of CSV, write IMAGE (PGM, PPM, PAM, PNG, JPEG, TIFF or BMP, gray or colour) with the lines \
     drawn on it, as PNG (or PPM, by -o's extension); IMAGE may have -o's fields, of the accumulator's \
     source: '{dir}/{name}' draws each frame's lines on the image it came from",
);

/// `hough-lines`: the lines of a Hough accumulator, as a table or drawn over an image.
#[derive(Default)]
pub struct HoughLines {
    threshold: Option<u32>,
    top: Option<usize>,
    distinct: bool,
    min_distance: Option<Suppression>,
    /// `--draw IMAGE`, as given.
    draw: Option<PathTemplate>,
    pen: Pen,
    /// Whether `--colour` or `--width` was given.
    pen_given: bool,
    ppm: bool,
    /// The image of `--draw` without fields, read before any accumulator.
    canvas: Option<Canvas>,
    tsv: bool,
}

/// An image to draw lines on, in 8-bit RGB.
struct Canvas {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Tool for HoughLines {
    const NAME: &'static str = "hough-lines";
    const HELP: &'static str = "\
hough-lines: the lines of a Hough accumulator written by hough-vote.

Without options: the distinct lines, at most 20, with more than half the votes of the
accumulator's strongest cell. Distinct lines are the peaks after non-maximum suppression, as
scikit-image's hough_line_peaks: a cell that is the largest of its window of +-R distance and
+-A angle steps (--min-distance R,A, default 9,10), a plateau of such cells taken at its
centroid, then strongest first each one unless it lies in the window of one kept before; the
window wraps across 0/180 degrees (theta near 180 with rho r is theta near 0 with rho -r).
With --top N alone: the N strongest distinct lines (any votes).

With --threshold T, OpenCV's lines instead: every cell with more than T votes that is a local
maximum among its 4 neighbours (strictly above the left and upper ones, at least the right and
lower ones); with the default axes, cv2.HoughLines(edges, 1, np.pi / 180, T) in the same order
(with --top N, its first N). With --distinct too: the distinct lines over T.
Lines are listed strongest first; equal votes: smaller angle, then smaller distance first.

Output: CSV (or TSV, by -o's extension) with a header line once per output, one line per
detected line:
  frame,source,rho,theta,theta_degrees,votes
frame: the accumulator's number in the stream; source: the file it came from (- for standard
input); rho in pixels from the edge map's pixel (0, 0), theta in radians (both as OpenCV's float32),
theta_degrees on the nominal grid (theta-min + n theta-step).

Usage: hough-lines [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--threshold",
            "T",
            "OpenCV's lines: the local maxima with more than T votes [default: distinct lines with more \
             than half the strongest cell's votes, or any with --top]",
        ),
        Flag::with_value("--top", "N", "keep the N strongest lines [default: 20 distinct lines]"),
        Flag::switch("--distinct", "with --threshold: the distinct lines over T (as without it)"),
        Flag::with_value(
            "--min-distance",
            "R,A",
            "distinct lines are more than R distance steps or A angle steps apart [default: 9,10]",
        ),
        DRAW,
        Flag::with_value(
            "--colour",
            "R,G,B",
            "with --draw: the lines' colour, 0 to 255 each [default: 255,0,0]",
        ),
        Flag::with_value(
            "--width",
            "W",
            "with --draw: lines W pixels wide, a W x W square around each point of the line [default: 1]",
        ),
        Flag::switch("--ppm", "with --draw: write binary PPM instead of PNG"),
    ];
    const HELP_END: &'static str = "\
Example:
  edges page.pgm | hough-vote | hough-lines -o lines.csv
  edges page.pgm | hough-vote | hough-lines --top 10 --draw page.pgm -o lines.png
  edges scans/*.png | hough-vote | hough-lines --top 10 --draw '{dir}/{name}' -o out/{stem}.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--threshold" => self.threshold = Some(given.parse()?),
            "--top" => self.top = Some(given.parse()?),
            "--distinct" => self.distinct = true,
            "--min-distance" => self.min_distance = Some(parse_min_distance(given.text()?)?),
            "--draw" => {
                let text = given.text()?;
                self.draw = Some(PathTemplate::parse(given.flag.long, text).map_err(FlagError::AfterValue)?);
            }
            "--colour" => {
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

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        if self.ppm && self.draw.is_none() {
            return Err(Error::usage("--ppm only goes with --draw IMAGE"));
        }
        if self.pen_given && self.draw.is_none() {
            return Err(Error::usage("--colour and --width only go with --draw IMAGE"));
        }
        if self.min_distance.is_some() && self.threshold.is_some() && !self.distinct {
            return Err(Error::usage(
                "--min-distance is for distinct lines, and --threshold alone gives OpenCV's: add --distinct",
            ));
        }
        if let Some(template) = self.draw.as_ref().filter(|t| !t.has_fields()) {
            let path = PathBuf::from(template.text());
            let shown = path.display();
            let bytes = std::fs::read(&path).map_err(|e| Error::usage(DRAW.message_of(&shown, e)))?;
            let (width, height, rgb) = histopipe_frame::read_rgb8(&bytes, common.max_pixels)
                .map_err(|e| Error::usage(DRAW.message_of(&shown, e)))?;
            self.canvas = Some(Canvas { width, height, rgb });
        }
        Ok(())
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        if self.draw.is_none() {
            if format == Some(OutputFormat::Npy) {
                return Err(Error::usage("hough-lines writes its table as .csv or .tsv, not .npy"));
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
        let suppression = self.min_distance.unwrap_or_default();
        let lines = match (self.threshold, self.top) {
            (Some(threshold), top) if !self.distinct => cx.run(&Peaks { threshold, top }, &frame)?,
            (Some(threshold), top) => cx.run(&DistinctLines { threshold, suppression, top }, &frame)?,
            (None, Some(top)) => {
                cx.run(&DistinctLines { threshold: 0, suppression, top: Some(top) }, &frame)?
            }
            (None, None) => {
                let threshold = most_votes(&frame) / 2;
                cx.run(&DistinctLines { threshold, suppression, top: Some(DEFAULT_TOP) }, &frame)?
            }
        };
        match &self.draw {
            Some(template) => self.draw(cx, &frame, &lines, template),
            None => {
                let sep = if self.tsv { '\t' } else { ',' };
                let mut text = String::new();
                if cx.starts_output() {
                    let columns = TABLE_KEY_COLUMNS.iter().chain(&["rho", "theta", "theta_degrees", "votes"]);
                    text = columns.copied().collect::<Vec<_>>().join(&sep.to_string());
                    text.push('\n');
                }
                let key = cx.row_key(sep);
                for l in &lines {
                    let degrees = degrees_text(l.theta_degrees);
                    text.push_str(&format!("{key}{}{sep}{}{sep}{degrees}{sep}{}\n", l.rho, l.theta, l.votes));
                }
                cx.text().write_all(text.as_bytes()).map_err(|e| Error::io(&e))
            }
        }
    }
}

impl HoughLines {
    /// Writes `--draw`'s image with `lines` drawn on it: the one read before any accumulator, or
    /// this frame's own by the fields; it must be of the accumulator's edge map.
    fn draw(
        &self,
        cx: &mut Context<'_>,
        frame: &Frame,
        lines: &[Line],
        template: &PathTemplate,
    ) -> Result<(), Error> {
        if !cx.starts_output() {
            return Err(cx.invalid(
                "--draw writes one image, and this output would get more than one accumulator: \
                 give -o a field for one image each, as in -o out/{stem}.png",
            ));
        }
        let space = HoughSpace::of_frame(frame).map_err(|e| cx.op_error(e))?;
        let own;
        let (path, canvas) = match &self.canvas {
            Some(canvas) => (PathBuf::from(template.text()), canvas),
            None => {
                let path = template.input_of(cx.source(), cx.index)?;
                let shown = path.display();
                let bytes = std::fs::read(&path).map_err(|e| cx.invalid(DRAW.message_of(&shown, e)))?;
                let (width, height, rgb) = histopipe_frame::read_rgb8(&bytes, cx.common.max_pixels)
                    .map_err(|e| cx.invalid(DRAW.message_of(&shown, e)))?;
                own = Canvas { width, height, rgb };
                (path, &own)
            }
        };
        let Canvas { width: w, height: h, .. } = *canvas;
        if (w, h) != (space.width, space.height) {
            let rest =
                format!("is {w}x{h}, but the accumulator is of a {}x{} edge map", space.width, space.height);
            return Err(cx.invalid(DRAW.sentence_of(path.display(), rest)));
        }
        let mut rgb = canvas.rgb.clone();
        draw_lines(&mut rgb, w, h, lines, self.pen);
        histopipe_frame::write_rgb8(cx.text(), w, h, &rgb, !self.ppm).map_err(|e| Error::io(&e))
    }
}

/// `--min-distance R,A`: distance steps, angle steps.
fn parse_min_distance(text: &str) -> Result<Suppression, FlagError> {
    let bad = || FlagError::Value(format!("bad value '{text}': give R,A, two whole numbers of steps"));
    let (r, t) = text.split_once(',').ok_or_else(bad)?;
    let (rho_cells, theta_cells) =
        (r.trim().parse().map_err(|_| bad())?, t.trim().parse().map_err(|_| bad())?);
    Ok(Suppression { rho_cells, theta_cells })
}

/// `--colour R,G,B`, each 0 to 255.
fn parse_colour(text: &str) -> Result<[u8; 3], FlagError> {
    let bad = || FlagError::Value(format!("bad value '{text}': give R,G,B, three numbers from 0 to 255"));
    let parts: Vec<&str> = text.split(',').collect();
    let [r, g, b] = parts[..] else { return Err(bad()) };
    let channel = |s: &str| s.trim().parse::<u8>().map_err(|_| bad());
    Ok([channel(r)?, channel(g)?, channel(b)?])
}

/// The votes of the accumulator's strongest cell.
fn most_votes(frame: &Frame) -> u32 {
    match &frame.pixels {
        Pixels::U8(v) => v.iter().copied().max().unwrap_or(0).into(),
        Pixels::U16(v) => v.iter().copied().max().unwrap_or(0).into(),
        // Refused before a tool sees it (Tool::FLOAT).
        Pixels::F32(_) => 0,
    }
}

/// Degrees with at most 10 decimals, trailing zeros dropped: the grid θ_min + n θ_step computed in
/// f64 reads 0.30000000000000004 where the user meant 0.3.
fn degrees_text(v: f64) -> String {
    let text = format!("{v:.10}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pairs_and_colours_parse() {
        let s = super::parse_min_distance("3, 4").unwrap();
        assert_eq!((s.rho_cells, s.theta_cells), (3, 4));
        assert!(super::parse_min_distance("3").is_err());
        assert_eq!(super::parse_colour("0,128,255").unwrap(), [0, 128, 255]);
        assert!(super::parse_colour("0,256,0").is_err() && super::parse_colour("1,2").is_err());
    }

    #[test]
    fn degrees_are_short() {
        assert_eq!(super::degrees_text(-90.0 + 846.0 * 0.1), "-5.4");
        assert_eq!(super::degrees_text(90.0), "90");
        assert_eq!(super::degrees_text(-0.0), "0");
        assert_eq!(super::degrees_text(0.25), "0.25");
    }
}
