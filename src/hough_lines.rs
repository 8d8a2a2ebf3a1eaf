use std::io::Write;
use std::path::PathBuf;

use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool, TABLE_KEY_COLUMNS,
};
use histopipe_frame::{Frame, Pixels};
use histopipe_ops::hough::{draw_lines, HoughLines as Peaks, HoughSpace, Line};

/// `--draw`, defined apart from [`HoughLines::FLAGS`] so that the messages about its image name
/// it from its definition ([`Flag::message_of`]).
const DRAW: Flag = Flag::with_value(
    "--draw",
    "IMAGE",
    "instead of CSV, write IMAGE (PGM, PPM, PAM, PNG, JPEG, TIFF or BMP, gray or colour) with the lines \
     drawn in red, as PNG (or PPM, by -o's extension)",
);

/// `hough-lines`: the lines of a Hough accumulator, as a table or drawn over an image.
#[derive(Default)]
pub struct HoughLines {
    threshold: Option<u32>,
    top: Option<usize>,
    /// `--draw IMAGE`, as given.
    draw: Option<PathBuf>,
    ppm: bool,
    /// The image of `--draw`, read before any accumulator.
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

A line is a cell with more than THRESHOLD votes that is a local maximum among its 4 neighbours
(strictly above the left and upper ones, at least the right and lower ones, as OpenCV), listed
strongest first (equal votes: smaller angle, then smaller distance first). With the default
axes, the lines equal cv2.HoughLines(edges, 1, np.pi / 180, THRESHOLD), in the same order.
Without --threshold and --top, THRESHOLD is half the votes of the accumulator's strongest cell.

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
            "keep cells with more than T votes [default: 0 with --top, else half the strongest cell's votes]",
        ),
        Flag::with_value("--top", "N", "keep the N strongest lines"),
        DRAW,
        Flag::switch("--ppm", "with --draw: write binary PPM instead of PNG"),
    ];
    const HELP_END: &'static str = "\
Example:
  edges page.pgm | hough-vote | hough-lines -o lines.csv
  edges page.pgm | hough-vote | hough-lines --top 10 --draw page.pgm -o lines.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--threshold" => self.threshold = Some(given.parse()?),
            "--top" => self.top = Some(given.parse()?),
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
        let peaks = match (self.threshold, self.top) {
            (None, None) => Peaks { threshold: most_votes(&frame) / 2, top: None },
            (threshold, top) => Peaks { threshold: threshold.unwrap_or(0), top },
        };
        let lines = cx.run(&peaks, &frame)?;
        match (&self.draw, &self.canvas) {
            (Some(path), Some(canvas)) => self.draw(cx, &frame, &lines, path, canvas),
            _ => {
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
    /// Writes `canvas` with `lines` drawn on it, which must be of the accumulator's edge map.
    fn draw(
        &self,
        cx: &mut Context<'_>,
        frame: &Frame,
        lines: &[Line],
        path: &std::path::Path,
        canvas: &Canvas,
    ) -> Result<(), Error> {
        if !cx.starts_output() {
            return Err(cx.invalid(
                "--draw writes one image, and this output would get more than one accumulator: \
                 give -o a field for one image each, as in -o out/{stem}.png",
            ));
        }
        let space = HoughSpace::of_frame(frame).map_err(|e| cx.op_error(e))?;
        let Canvas { width: w, height: h, .. } = *canvas;
        if (w, h) != (space.width, space.height) {
            let rest =
                format!("is {w}x{h}, but the accumulator is of a {}x{} edge map", space.width, space.height);
            return Err(cx.invalid(DRAW.sentence_of(path.display(), rest)));
        }
        let mut rgb = canvas.rgb.clone();
        draw_lines(&mut rgb, w, h, lines);
        histopipe_frame::write_rgb8(cx.text(), w, h, &rgb, !self.ppm).map_err(|e| Error::io(&e))
    }
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
    fn degrees_are_short() {
        assert_eq!(super::degrees_text(-90.0 + 846.0 * 0.1), "-5.4");
        assert_eq!(super::degrees_text(90.0), "90");
        assert_eq!(super::degrees_text(-0.0), "0");
        assert_eq!(super::degrees_text(0.25), "0.25");
    }
}
