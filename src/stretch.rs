use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::stretch::{cuts, Curve, Saturated, Scale, Stretch as Map, StretchTo, ZScale};

use crate::colour::{Colour, RANGES};
use crate::mask::{Masking, MASK};

/// `stretch`: contrast stretch and depth conversion of each frame.
pub struct Stretch {
    saturate: Option<f64>,
    range: Option<(f64, f64)>,
    /// `--zscale` given.
    zscale_on: bool,
    /// Its parameters, `--contrast` and `--samples` among them.
    zscale: ZScale,
    /// `--contrast` or `--samples` given (they need `--zscale`).
    zscale_tuned: Option<&'static str>,
    depth: Option<u16>,
    /// `--out A:B`: float32 output over [A, B].
    out: Option<(f64, f64)>,
    scale: Scale,
    each: bool,
    mask: Masking,
}

impl Default for Stretch {
    fn default() -> Stretch {
        Stretch {
            saturate: None,
            range: None,
            zscale_on: false,
            zscale: ZScale::default(),
            zscale_tuned: None,
            depth: None,
            out: None,
            scale: Scale::Linear,
            each: false,
            mask: Masking::default(),
        }
    }
}

histopipe_cli::words! {
    /// `--depth`: the output's bits a sample.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Depth {
        Eight = "8",
        Sixteen = "16",
    }
}

impl Depth {
    fn maxval(self) -> u16 {
        match self {
            Depth::Eight => 255,
            Depth::Sixteen => 65535,
        }
    }
}

histopipe_cli::words! {
    /// `--scale`'s words, one a display scale.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum ScaleWord {
        Linear = "linear",
        Log = "log",
        Sqrt = "sqrt",
        Asinh = "asinh",
    }
}

impl ScaleWord {
    fn scale(self) -> Scale {
        match self {
            ScaleWord::Linear => Scale::Linear,
            ScaleWord::Log => Scale::Log,
            ScaleWord::Sqrt => Scale::Sqrt,
            ScaleWord::Asinh => Scale::Asinh,
        }
    }
}

/// What a handler's error says of `text` that is none of `words`: `bad value 'x': a or b`.
fn not_one_of(text: &str, words: &[&str]) -> FlagError {
    FlagError::Value(format!("bad value '{text}': {}", histopipe_cli::either(words)))
}

/// ImageJ's "Enhance Contrast" default: 0.35 % of the samples saturated.
const DEFAULT_SATURATE: f64 = 0.35;

/// `LO:HI` of `--in` (`A:B` of `--out`: the names given), two finite numbers, LO below HI, HI - LO
/// finite.
fn parse_range(text: &str, (low, high): (&str, &str)) -> Result<(f64, f64), FlagError> {
    let bad = || {
        FlagError::Value(format!(
            "bad value '{text}': give {low}:{high}, two numbers with {low} below {high}"
        ))
    };
    let (lo, hi) = text.split_once(':').ok_or_else(bad)?;
    let (lo, hi): (f64, f64) = (lo.trim().parse().map_err(|_| bad())?, hi.trim().parse().map_err(|_| bad())?);
    if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
        return Err(bad());
    }
    Ok((lo, hi))
}

impl Tool for Stretch {
    const NAME: &'static str = "stretch";
    const HELP: &'static str = "\
stretch: contrast stretch and depth conversion, as ImageJ's Enhance Contrast, netpbm's pnmnorm and
scikit-image's rescale_intensity.

Each sample v becomes rint(f(t) * M), ties to even, with t = (v - LO) / (HI - LO) clamped to
[0, 1], f the scale and M the output's maxval; NaN becomes 0, infinities clamp. LO and HI are
given (--in), astropy's ZScaleInterval limits (--zscale) or cut from the samples (--saturate):
with k = floor(N P / 200) of the N samples (a float frame's finite ones), LO is the (k+1)-th
smallest and HI the (k+1)-th largest, as ImageJ finds them. Colour frames get one map for all
colour samples (hues stay), alpha rescaled to the output's depth. 8-bit, 16-bit and float input.
With --mask FILE the cuts count only the samples of the pixels where the mask is non-zero; every
pixel is mapped. With --out A:B, float32 samples
(x - LO) / (HI - LO) * (B - A) + A of x = clip(v, LO, HI) instead, as rescale_intensity's
out_range=(A, B) computes them. See docs/stretch.md.

Usage: stretch [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--saturate",
            "P",
            "percent of the samples saturated, half at each end, 0 to 100 (0: the minimum and the \
             maximum) [default: 0.35]",
        ),
        Flag::with_value("--in", "LO:HI", "the input range instead, in sample values (as rescale_intensity's in_range)"),
        Flag::switch("--zscale", "the input range instead by IRAF's zscale, as astropy's ZScaleInterval().get_limits"),
        Flag::with_value("--contrast", "C", "--zscale's contrast, above 0 (ZScaleInterval's contrast) [default: 0.25]"),
        Flag::with_value(
            "--samples",
            "N",
            "--zscale's samples, at most N, at least 1 (ZScaleInterval's n_samples) [default: 1000]",
        ),
        Flag::with_value(
            "--depth",
            "BITS",
            "the output's depth, 8 (maxval 255) or 16 (maxval 65535) [default: the input's maxval; 16 for float input]",
        )
        .one_of(Depth::NAMES),
        Flag::with_value(
            "--out",
            "A:B",
            "float32 samples over A..B instead of levels (as rescale_intensity's out_range=(A, B))",
        ),
        Flag::with_value(
            "--scale",
            "S",
            "linear, log (ln(1 + 1000 t) / ln 1001), sqrt, or asinh (asinh(10 t) / asinh 10) [default: linear]",
        )
        .one_of(ScaleWord::NAMES),
        RANGES.flag("shared (one range from all colour samples) or each (a range per channel) [default: shared]"),
        MASK,
    ];
    const HELP_END: &'static str = "\
Example:
  stretch --saturate 0.35 --depth 8 -o dem.png dem.npy
  stretch --in 0:4095 --scale asinh -o {stem}-8.png --depth 8 frames/*.tif";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--saturate" => {
                let p: f64 = given.parse()?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(FlagError::Value(format!("bad value '{p}': a percent from 0 to 100")));
                }
                self.saturate = Some(p);
            }
            "--in" => self.range = Some(parse_range(given.text()?, ("LO", "HI"))?),
            "--out" => self.out = Some(parse_range(given.text()?, ("A", "B"))?),
            "--zscale" => self.zscale_on = true,
            "--contrast" => {
                let c: f64 = given.parse()?;
                if !(c.is_finite() && c > 0.0) {
                    return Err(FlagError::Value(format!("bad value '{c}': a contrast above 0")));
                }
                self.zscale_tuned = Some("--contrast");
                self.zscale.contrast = c;
            }
            "--samples" => {
                let n: usize = given.parse()?;
                if n == 0 {
                    return Err(FlagError::Value("bad value '0': at least 1 sample".into()));
                }
                self.zscale_tuned = Some("--samples");
                self.zscale.samples = n;
            }
            "--depth" => {
                let text = given.text()?;
                let depth = Depth::from_word(text).ok_or_else(|| not_one_of(text, Depth::NAMES))?;
                self.depth = Some(depth.maxval());
            }
            "--scale" => self.scale = ScaleWord::parse_word(given.text()?, "scale")?.scale(),
            "--colour" => self.each = RANGES.parse(given)? == Colour::Each,
            _ => return self.mask.option(given),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        let ranges = [
            (self.saturate.is_some(), "--saturate"),
            (self.range.is_some(), "--in"),
            (self.zscale_on, "--zscale"),
        ];
        let given: Vec<&str> = ranges.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect();
        if given.len() > 1 {
            return Err(Error::usage(format!(
                "{} cannot be combined: one gives the input range",
                given.join(" and ")
            )));
        }
        if self.out.is_some() && self.depth.is_some() {
            return Err(Error::usage(
                "--out writes float32 samples and --depth integer ones: give one of the two",
            ));
        }
        if let (Some(flag), false) = (self.zscale_tuned, self.zscale_on) {
            return Err(Error::usage(format!("{flag} is a parameter of --zscale: give --zscale too")));
        }
        if self.mask.is_given() && self.range.is_some() {
            return Err(Error::usage(
                "--mask chooses the samples --saturate cuts from, and --in gives the range: give one of the two",
            ));
        }
        self.mask.check(common)
    }

    fn reads_gray(&self) -> bool {
        false
    }

    const FLOAT: bool = true;

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let integer = frame.depth().is_integer();
        let maxout = self.depth.unwrap_or(if integer { frame.maxval } else { 65535 });
        let colours: Vec<usize> = (0..frame.channels.colour_count()).collect();
        let mask = self.mask.fit(cx, &frame)?;
        let one_curve = colours.len() == 1 || !self.each;
        let whole = one_curve && !frame.channels.has_alpha() && mask.is_none();
        if whole && self.range.is_none() && !self.zscale_on && self.out.is_none() {
            // --saturate over every sample: one operation, whose cuts are counted where it runs.
            let percent = self.saturate.unwrap_or(DEFAULT_SATURATE);
            let out = cx.run(&Saturated { percent, scale: self.scale, maxout }, &frame)?;
            return cx.write(out);
        }
        let curve_of = |channels: &[usize]| -> Result<Curve, Error> {
            let (lo, hi) = match (self.range, self.zscale_on.then_some(self.zscale)) {
                (Some(range), _) => range,
                // No finite sample: as --saturate, LO = HI = 0.
                (None, Some(z)) => {
                    z.of_frame(&frame, channels, mask).map_err(|e| cx.op_error(e))?.unwrap_or((0.0, 0.0))
                }
                (None, None) => {
                    let percent = self.saturate.unwrap_or(DEFAULT_SATURATE);
                    // No sample to count (no finite float): every finite value is above 0 or not.
                    cuts::of_frame(&frame, channels, percent, mask)
                        .map_err(|e| cx.op_error(e))?
                        .unwrap_or((0.0, 0.0))
                }
            };
            Ok(Curve { lo, hi, scale: self.scale, maxout })
        };
        let curves = if self.each && colours.len() > 1 {
            colours.iter().map(|&c| curve_of(&[c])).collect::<Result<Vec<_>, _>>()?
        } else {
            vec![curve_of(&colours)?; colours.len()]
        };
        if let Some(range) = self.out {
            return self.write_float(cx, &frame, &curves, range);
        }
        let out = if !frame.channels.has_alpha() && curves.iter().all(|c| *c == curves[0]) {
            cx.run(&Map { curve: curves[0] }, &frame)?
        } else {
            // Alpha is no intensity: rescaled to the output's depth, a float one from [0, 1].
            let alpha = if integer {
                Curve::rescale(frame.maxval, maxout)
            } else {
                Curve { lo: 0.0, hi: 1.0, scale: Scale::Linear, maxout }
            };
            cx.run_each_channel(&frame, |c| Map { curve: curves.get(c).copied().unwrap_or(alpha) })?
        };
        cx.write(out)
    }
}

impl Stretch {
    /// `--out A:B`: each colour channel through its curve onto [A, B] as float32; alpha as a
    /// float from [0, 1], its integer values from [0, maxval] (a float one as it is, clipped).
    fn write_float(
        &self,
        cx: &mut Context<'_>,
        frame: &Frame,
        curves: &[Curve],
        range: (f64, f64),
    ) -> Result<(), Error> {
        let to = |curve: Curve| StretchTo { curve, out: range };
        let out = if !frame.channels.has_alpha() && curves.iter().all(|c| *c == curves[0]) {
            cx.run(&to(curves[0]), frame)?
        } else {
            let hi = if frame.depth().is_integer() { frame.maxval as f64 } else { 1.0 };
            let alpha =
                StretchTo { curve: Curve { lo: 0.0, hi, scale: Scale::Linear, maxout: 0 }, out: (0.0, 1.0) };
            cx.run_each_channel(frame, |c| curves.get(c).map_or(alpha, |&c| to(c)))?
        };
        cx.write(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of `--scale` name the four scales, each once.
    #[test]
    fn each_scale_has_one_word() {
        let scales: Vec<Scale> = ScaleWord::ALL.iter().map(|w| w.scale()).collect();
        assert_eq!(scales, [Scale::Linear, Scale::Log, Scale::Sqrt, Scale::Asinh]);
        let e = ScaleWord::parse_word("gamma", "scale").unwrap_err();
        assert_eq!(e, "unknown scale 'gamma' (linear, log, sqrt or asinh)");
    }
}
