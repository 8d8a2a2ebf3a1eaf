use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::{Format, Frame, Pixels};
use histopipe_ops::angles::{self, Angles};
use histopipe_ops::radon::{outside_circle, RadonParams};

use crate::table_output::{self, TableOutput};

/// `radon`: the Radon transform (sinogram) of each frame, as scikit-image's `radon`.
#[derive(Default)]
pub struct Radon {
    params: RadonParams,
    /// `--format`: the values as a table, or the sinogram as a frame.
    output: TableOutput,
}

/// The columns after the frame and its source.
const COLUMNS: [&str; 3] = ["angle", "position", "value"];

impl Tool for Radon {
    const NAME: &'static str = "radon";
    const HELP: &'static str = "\
radon: the Radon transform (sinogram) of each frame, as scikit-image's
skimage.transform.radon(image, theta, circle): the same shape, values within 0.1% of its largest.

The frame is padded with zeros to the N x N square of its diagonal, N = ceil(sqrt(2) max(W, H)),
its pixel (W div 2, H div 2) at the centre c = N div 2 (with --circle: cropped to the centred
square of the shorter side instead); for each angle t the square is turned by
  sx = c + cos t (x - c) + sin t (y - c),  sy = c - sin t (x - c) + cos t (y - c),
read bilinearly (0 outside), and each column x summed over the rows. Samples are taken as
scikit-image's img_as_float takes them: 8-bit / 255, 16-bit / 65535, float as they are; colour
is read as gray. The output is a float frame N high and one column per angle (row x = position
x, column k = the k-th angle), or with -o x.csv (--format csv, tsv) a table of
frame,source,angle,position,value, an angle's positions in order, then the next angle's. The
arithmetic is exact integers for 8- and 16-bit frames, the same bytes on CPU and GPU. See
docs/radon.md.

Usage: radon [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--angles",
            "A:B:STEP",
            "the angles in degrees: numpy's arange(A, B, STEP) (B excluded), or a list A,B,C \
             [default: 0:180:1]",
        )
        .param("angles"),
        Flag::switch(
            "--circle",
            "scikit-image's circle=True: crop to the centred square of the shorter side, N = min(W, H); \
             a frame not 0 outside its inscribed circle gets one warning line on stderr, as \
             scikit-image warns",
        ),
        table_output::format_flag(
            "csv or tsv: the values as a table [default: -o's extension; a frame (PFM on stdout, NPY \
             for NPY input) without one]",
        ),
    ];
    const HELP_END: &'static str = "\
Example:
  radon -o sinogram.npy photo.png
  radon --angles 0:180:0.5 --circle -o {stem}.tif scans/*.pgm
  radon --angles -45,0,45,90 --format csv camera.pgm";

    const FLOAT: bool = true;

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--angles" => self.params.angles = given.parse::<Angles>()?,
            "--circle" => self.params.circle = true,
            _ => return self.output.option(given),
        }
        Ok(true)
    }

    fn visits_per_pixel(&self, _: &Frame) -> f64 {
        self.params.angles.len() as f64
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        if self.params.angles.is_empty() {
            return Err(Error::usage("--angles: give at least one angle"));
        }
        Ok(())
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.output.product(format)
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let radon = self.params.for_size(frame.width, frame.height).map_err(|e| cx.op_error(e))?;
        let (angles, n) = radon.out_size();
        cx.check_pixels(angles, n)?;
        if self.params.circle && outside_circle(&frame) {
            eprintln!(
                "radon: warning: {}: the frame is not 0 outside the circle of --circle: those pixels are \
                 left out (as scikit-image warns)",
                cx.place()
            );
        }
        let mut out = cx.run(&radon, &frame)?;
        // The columns' angles, for iradon: written where the container has room (an NPY
        // header's comment; PFM and TIFF have none), the samples' bytes unchanged.
        if let Some(list) = self.params.angles.annotation() {
            out.set_annotation(angles::ANNOTATION, &list);
        }
        let Some(mut rows) = self.output.rows(cx, &COLUMNS) else {
            // Between tools a float frame goes as PFM, unless it came as NPY.
            out.format = if frame.format == Format::Npy { Format::Npy } else { Format::Pfm };
            return cx.write(out);
        };
        let Pixels::F32(values) = &out.pixels else { unreachable!("radon makes float frames") };
        for (k, angle) in self.params.angles.iter().enumerate() {
            for x in 0..n {
                rows.push(&[&angle, &x, &values[x * angles + k]]);
            }
        }
        rows.write(cx)
    }
}
