use std::io::Write;

use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::{Frame, Pixels};
use histopipe_ops::hough::{draw_lines, paired, DistinctLines, HoughLines as Peaks, HoughSpace, Suppression};

use crate::drawing::{self, Drawing};
/// Distinct lines kept without `--top` or `--threshold`: a handful of lines is what a first look
/// wants, and a photo's accumulator has tens of distinct peaks over half the strongest (a page of
/// text one per text line: see the manual).
const DEFAULT_TOP: usize = 20;

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
    /// `--draw` and its options.
    drawing: Drawing,
    tsv: bool,
}

impl Tool for HoughLines {
    const NAME: &'static str = "hough-lines";
    const HELP: &'static str = "\
hough-lines: the lines of a Hough accumulator written by hough-vote.

Without options: the distinct lines, at most 20, of the accumulator's paired counts (each cell
at least as strong as both its neighbours in distance given the larger one's votes too, so that
a line between two distances counts all its votes and the pixel grid's 45 and 135 degrees stop
winning in texture), with more than half the most paired votes of a cell; votes are the paired
counts. Distinct lines are the peaks after non-maximum suppression, as
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
        drawing::COLOUR,
        drawing::WIDTH,
        drawing::PPM,
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
            _ => return self.drawing.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        if self.min_distance.is_some() && self.threshold.is_some() && !self.distinct {
            return Err(Error::usage(
                "--min-distance is for distinct lines, and --threshold alone gives OpenCV's: add --distinct",
            ));
        }
        self.drawing.check(common, &DRAW)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.drawing.product(format, Self::NAME, &mut self.tsv)
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let suppression = self.min_distance.unwrap_or_default();
        let lines = match (self.threshold, self.top) {
            (Some(threshold), top) if !self.distinct => cx.run(&Peaks { threshold, top }, &frame)?,
            (Some(threshold), top) => {
                cx.run(&DistinctLines { threshold, suppression, top, pairs: false }, &frame)?
            }
            (None, Some(top)) => {
                cx.run(&DistinctLines { threshold: 0, suppression, top: Some(top), pairs: false }, &frame)?
            }
            (None, None) => {
                let threshold = most_paired_votes(&frame) / 2;
                let lines = DistinctLines { threshold, suppression, top: Some(DEFAULT_TOP), pairs: true };
                cx.run(&lines, &frame)?
            }
        };
        if self.drawing.is_on() {
            let space = HoughSpace::of_frame(&frame).map_err(|e| cx.op_error(e))?;
            let what = format!("the accumulator is of a {}x{} edge map", space.width, space.height);
            let paint = |rgb: &mut [u8], w, h, pen| draw_lines(rgb, w, h, &lines, pen);
            return self.drawing.draw(cx, &DRAW, (space.width, space.height), &what, "accumulator", paint);
        }
        let sep = if self.tsv { '\t' } else { ',' };
        let mut text = cx.table_header(&["rho", "theta", "theta_degrees", "votes"], sep);
        let key = cx.row_key(sep);
        for l in &lines {
            let degrees = degrees_text(l.theta_degrees);
            text.push_str(&format!("{key}{}{sep}{}{sep}{degrees}{sep}{}\n", l.rho, l.theta, l.votes));
        }
        cx.text().write_all(text.as_bytes()).map_err(|e| Error::io(&e))
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

/// The most votes of a cell of the accumulator's [`paired`] counts.
fn most_paired_votes(frame: &Frame) -> u32 {
    let counts: Vec<u16> = match &frame.pixels {
        Pixels::U8(v) => v.iter().map(|&c| c.into()).collect(),
        Pixels::U16(v) => v.to_vec(),
        // Refused before a tool sees it (Tool::FLOAT).
        Pixels::F32(_) => Vec::new(),
    };
    paired(&counts, frame.width).into_iter().max().unwrap_or(0).into()
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
    fn pairs_parse() {
        let s = super::parse_min_distance("3, 4").unwrap();
        assert_eq!((s.rho_cells, s.theta_cells), (3, 4));
        assert!(super::parse_min_distance("3").is_err());
    }

    #[test]
    fn degrees_are_short() {
        assert_eq!(super::degrees_text(-90.0 + 846.0 * 0.1), "-5.4");
        assert_eq!(super::degrees_text(90.0), "90");
        assert_eq!(super::degrees_text(-0.0), "0");
        assert_eq!(super::degrees_text(0.25), "0.25");
    }
}
