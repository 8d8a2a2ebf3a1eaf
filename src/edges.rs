use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::edges::Canny;

/// `edges`: Canny edge detection, as OpenCV's `cv2.Canny(img, low, high, 3, L2gradient)`.
pub struct Edges {
    canny: Canny,
}

impl Default for Edges {
    fn default() -> Self {
        Edges { canny: Canny { low: 50.0, high: 150.0, l2: false, blur: None } }
    }
}

impl Tool for Edges {
    const NAME: &'static str = "edges";
    const HELP: &'static str = "\
edges: Canny edge detection; each 8-bit frame becomes a PGM of 0 (no edge) and 255 (edge).

Without --blur the output equals OpenCV's cv2.Canny(img, LOW, HIGH, apertureSize=3,
L2gradient=...) pixel for pixel, borders included: 3x3 Sobel gradients (border replicated),
non-maximum suppression along the gradient, double threshold and hysteresis over 8-connected
pixels. 16-bit frames are refused (convert them to 8 bits first).

Usage: edges [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value("--low", "T", "lower hysteresis threshold on the gradient magnitude [default: 50]")
            .param("low"),
        Flag::with_value("--high", "T", "upper threshold: pixels above it start edges [default: 150]")
            .param("high"),
        Flag::switch("--l2", "magnitude sqrt(dx^2 + dy^2) instead of |dx| + |dy|"),
        Flag::with_value(
            "--blur",
            "SIGMA",
            "Gaussian blur of this sigma first (radius ceil(3 SIGMA)); off by default",
        )
        .param("blur"),
    ];
    const HELP_END: &'static str = "\
Example:
  edges --low 50 --high 150 page.pgm | hough-vote | hough-lines --threshold 100 -o lines.csv
  edges --l2 -o out/{stem}-edges.png scans/*.jpg";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--low" => self.canny.low = given.parse()?,
            "--high" => self.canny.high = given.parse()?,
            "--l2" => self.canny.l2 = true,
            "--blur" => self.canny.blur = Some(given.parse()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        self.canny.check().map_err(|e| Error::op_usage(e, Self::FLAGS))
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let out = cx.run(&self.canny, &frame)?;
        cx.write(out)
    }
}
