use histopipe_cli::{Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::{Format, Frame};
use histopipe_ops::angles::{self, Angles};
use histopipe_ops::iradon::{Filter, IradonParams, FILTER_NAMES};
use histopipe_ops::Op;

/// `iradon`: filtered back-projection of each sinogram, as scikit-image's `iradon`.
#[derive(Default)]
pub struct Iradon {
    params: IradonParams,
}

impl Tool for Iradon {
    const NAME: &'static str = "iradon";
    const HELP: &'static str = "\
iradon: the image back from each sinogram (filtered back-projection), as scikit-image's
skimage.transform.iradon(sinogram, theta, output_size, filter_name, interpolation='linear',
circle): the same shape, values within 0.1% of its largest.

The sinogram is a frame of positions down and one column per angle, as radon writes it (its
samples taken as they are, scikit-image's preserve_range). Each column is padded with zeros (first,
with --circle, to ceil(sqrt(2) S), S its positions), then to P = max(64, the power of two at or
above twice that), filtered in the Fourier domain by --filter, and its first values kept; output
pixel (i, j) of the n x n frame, r = n div 2, is pi / (2 angles) times the sum over the angles t of
the filtered column read linearly (0 outside) at (j - r) cos t - (i - r) sin t from its centre.
The filter runs once on the CPU (an FFT in f64), the sum in f64 in the angles' order: the same
bytes on CPU and GPU. The output is a float frame (PFM on stdout, NPY for NPY input). See
docs/iradon.md.

Usage: iradon [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--angles",
            "A:B:STEP",
            "the sinogram's angles in degrees, one a column, as radon takes them: numpy's \
             arange(A, B, STEP) (B excluded), or a list A,B,C [default: those radon recorded in an NPY \
             sinogram, else scikit-image's, the columns evenly spaced over [0, 180): radon's \
             default 0:180:1 for 180 columns]",
        )
        .param("angles"),
        Flag::with_value(
            "--filter",
            "NAME",
            "the Fourier filter: scikit-image's filter_name (none: no filter) [default: ramp]",
        )
        .one_of(FILTER_NAMES)
        .param("filter"),
        Flag::with_value(
            "--size",
            "N",
            "the output's side, scikit-image's output_size [default: the sinogram's positions S \
             with --circle, else floor(sqrt(S^2 / 2)): the frame radon was given, for a square one]",
        )
        .param("size"),
        Flag::switch(
            "--circle",
            "scikit-image's circle=True (as radon --circle): the sinogram padded first, and the \
             output 0 outside its inscribed circle",
        ),
    ];
    const HELP_END: &'static str = "\
Example:
  radon photo.png | iradon -o back.pfm
  radon --angles 0:180:0.5 --circle scan.pgm | iradon --circle --filter hann -o back.tif
  iradon --angles=-45,0,45,90 --size 256 sinogram.npy";

    const FLOAT: bool = true;

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--angles" => self.params.angles = Some(given.parse::<Angles>()?),
            "--filter" => {
                let text = given.text()?;
                self.params.filter = Filter::from_name(text).ok_or_else(|| {
                    FlagError::Value(format!("bad value '{text}': {}", histopipe_cli::either(FILTER_NAMES)))
                })?;
            }
            "--size" => {
                let n: usize = given.parse()?;
                if n == 0 {
                    return Err(FlagError::Value("bad value '0': the side is at least 1".into()));
                }
                self.params.size = Some(n);
            }
            "--circle" => self.params.circle = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A column per angle (their count is checked when the frame is worked on).
    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        let params = IradonParams { angles: None, ..self.params.clone() };
        params.for_size(frame.height, frame.width).map_or(1.0, |op| op.visits_per_pixel(frame))
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let recorded = match (&self.params.angles, frame.annotation(angles::ANNOTATION)) {
            (None, Some(text)) => Some(recorded_angles(cx, text, frame.width)?),
            _ => None,
        };
        let params =
            IradonParams { angles: recorded.or_else(|| self.params.angles.clone()), ..self.params.clone() };
        let iradon = params.for_size(frame.height, frame.width).map_err(|e| cx.op_error(e))?;
        let (w, h) = iradon.out_size();
        cx.check_pixels(w, h)?;
        let mut out = cx.run(&iradon, &frame)?;
        // Between tools a float frame goes as PFM, unless it came as NPY.
        out.format = if frame.format == Format::Npy { Format::Npy } else { Format::Pfm };
        cx.write(out)
    }
}

/// The angles radon recorded in the sinogram (`# histopipe-angles` in an NPY header), one a column.
fn recorded_angles(cx: &Context<'_>, text: &str, columns: usize) -> Result<Angles, Error> {
    let bad = |why: String| {
        cx.invalid(format!("the sinogram's '# histopipe-angles' comment: {why}: give --angles"))
    };
    let list = text.parse::<Angles>().map_err(bad)?;
    if list.len() != columns {
        return Err(bad(format!("{} angles for {columns} columns", list.len())));
    }
    Ok(list)
}
