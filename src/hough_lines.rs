use std::io::Write;
use std::path::PathBuf;

use histopipe_cli::lexopt::Parser;
use histopipe_cli::{parse_value, Common, Context, Error, Tool};
use histopipe_frame::Frame;
use histopipe_ops::hough::{draw_lines, HoughLines as Peaks, HoughSpace};

/// `hough-lines`: the lines of a Hough accumulator, as CSV or drawn over an image.
#[derive(Default)]
pub struct HoughLines {
    threshold: Option<u32>,
    top: Option<usize>,
    draw: Option<PathBuf>,
    ppm: bool,
}

impl Tool for HoughLines {
    const NAME: &'static str = "hough-lines";
    const HELP: &'static str = "\
hough-lines: the lines of a Hough accumulator written by hough-vote.

A line is a cell with more than THRESHOLD votes that is a local maximum among its 4 neighbours
(strictly above the left and upper ones, at least the right and lower ones, as OpenCV), listed
strongest first (equal votes: smaller angle, then smaller distance first). With the default
axes, the lines equal cv2.HoughLines(edges, 1, np.pi / 180, THRESHOLD), in the same order.

Output: CSV with a header line, one line per detected line:
  rho,theta,theta_degrees,votes
rho in pixels from the edge map's pixel (0, 0), theta in radians (both as OpenCV's float32),
theta_degrees on the nominal grid (theta-min + n theta-step).

Usage: hough-lines --threshold T [OPTIONS] < accumulator.pgm > lines.csv

Options:
  --threshold T      keep cells with more than T votes [default with --top: 0]
  --top N            keep the N strongest lines
  --draw IMAGE       instead of CSV, write IMAGE (PGM, PPM, PAM, PNG, JPEG, TIFF or BMP, gray
                     or colour) with the lines drawn in red, as PNG
  --ppm              with --draw: write binary PPM instead of PNG

Example:
  edges < page.pgm | hough-vote | hough-lines --top 10 --draw page.pgm > lines.png";

    fn option(&mut self, name: &str, parser: &mut Parser) -> Result<bool, Error> {
        match name {
            "--threshold" => self.threshold = Some(parse_value(parser, name)?),
            "--top" => self.top = Some(parse_value(parser, name)?),
            "--draw" => self.draw = Some(PathBuf::from(parser.value()?)),
            "--ppm" => self.ppm = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        if self.threshold.is_none() && self.top.is_none() {
            return Err(Error::usage("give --threshold T or --top N (or both)"));
        }
        if self.ppm && self.draw.is_none() {
            return Err(Error::usage("--ppm only goes with --draw IMAGE"));
        }
        Ok(())
    }

    fn frame(&mut self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let peaks = Peaks { threshold: self.threshold.unwrap_or(0), top: self.top };
        let lines = cx.run(&peaks, &frame)?;
        let Some(path) = &self.draw else {
            let out = cx.text();
            let mut text = String::from("rho,theta,theta_degrees,votes\n");
            for l in &lines {
                let degrees = degrees_text(l.theta_degrees);
                text.push_str(&format!("{},{},{degrees},{}\n", l.rho, l.theta, l.votes));
            }
            return out.write_all(text.as_bytes()).map_err(|e| Error::io(&e));
        };
        if cx.index > 1 {
            return Err(cx.invalid("--draw writes one image, and the stream has more than one accumulator"));
        }
        let space = HoughSpace::of_frame(&frame).map_err(|e| Error::op(cx.index, e))?;
        let shown = path.display();
        let bytes = std::fs::read(path).map_err(|e| Error::usage(format!("--draw {shown}: {e}")))?;
        let (w, h, mut rgb) = histopipe_frame::read_rgb8(&bytes, cx.common.max_pixels)
            .map_err(|e| Error::usage(format!("--draw {shown}: {e}")))?;
        if (w, h) != (space.width, space.height) {
            return Err(cx.invalid(format!(
                "--draw {shown} is {w}x{h}, but the accumulator is of a {}x{} edge map",
                space.width, space.height
            )));
        }
        draw_lines(&mut rgb, w, h, &lines);
        histopipe_frame::write_rgb8(cx.text(), w, h, &rgb, !self.ppm).map_err(|e| Error::io(&e))
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
