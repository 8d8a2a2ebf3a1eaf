use histopipe_cli::{either, Common, Context, Error, Flag, FlagError, Given, OutputFormat, Product, Tool};
use histopipe_frame::Frame;
use histopipe_ops::threshold::local::{Local, LocalThreshold, Offset, MAX_BLOCK};
use histopipe_ops::threshold::{Levels, Method, Mode, Percent, Threshold as ThresholdOp, HUNDRED_PERCENT};

use crate::mask::{Masking, MASK};
use crate::table_output::{self, TableOutput};

/// `threshold`: each frame to a binary frame (or labels) by a threshold chosen from its histogram.
#[derive(Default)]
pub struct Threshold {
    method: Option<Choice>,
    /// `--mode`, or `--invert` (its older spelling of `binary-inv`).
    mode: Option<ModeWord>,
    /// `--format`: the thresholds as a table, or the thresholded frames.
    output: TableOutput,
    mask: Masking,
}

/// `--method`: a global threshold chosen from the histogram, or a local one per sample.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Choice {
    Global(Method),
    Local(Local),
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Choice::Global(m) => m.fmt(f),
            Choice::Local(l) => l.fmt(f),
        }
    }
}

/// The columns after the frame and its source.
const COLUMNS: [&str; 2] = ["method", "threshold"];

histopipe_cli::words! {
    /// The methods `--method` takes, as its help spells them (a capital after the colon: a
    /// parameter): what completions offer, what the parser takes and what its error lists.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum MethodWord {
        Otsu = "otsu",
        Triangle = "triangle",
        MultiOtsu = "multiotsu:K",
        Value = "value:V",
        Percentile = "percentile:P",
        // Their parameter is BLOCK,C (C may be left out); a word's parameter is one word in
        // capitals, as completions read it.
        Mean = "mean:BLOCK",
        Gaussian = "gaussian:BLOCK",
        // W,K,R and W,K (each after W may be left out; without a value: W 15, K 0.2).
        Sauvola = "sauvola:W",
        Niblack = "niblack:W",
    }
}

histopipe_cli::words! {
    /// `--mode`: how a sample is mapped through the threshold, as cv2.threshold's types.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum ModeWord {
        Binary = "binary",
        BinaryInv = "binary-inv",
        Trunc = "trunc",
        ToZero = "tozero",
        ToZeroInv = "tozero-inv",
    }
}

impl ModeWord {
    fn mode(self) -> Mode {
        match self {
            ModeWord::Binary => Mode::Binary,
            ModeWord::BinaryInv => Mode::BinaryInv,
            ModeWord::Trunc => Mode::Trunc,
            ModeWord::ToZero => Mode::ToZero,
            ModeWord::ToZeroInv => Mode::ToZeroInv,
        }
    }
}

impl MethodWord {
    /// The method whose name (its word before the colon) is `name`, and its word.
    fn named(name: &str) -> Option<(MethodWord, &'static str)> {
        let found = MethodWord::ALL.iter().zip(MethodWord::NAMES);
        found.map(|(m, w)| (*m, *w)).find(|(_, w)| w.split(':').next() == Some(name))
    }
}

/// Most classes of `multiotsu:K` (labels are 8-bit; the search bounds the rest).
const MAX_CLASSES: u16 = 256;

impl Tool for Threshold {
    const NAME: &'static str = "threshold";
    /// Float frames: scikit-image's thresholds of float images, the binary frame 8-bit.
    const FLOAT: bool = true;
    const HELP: &'static str = "\
threshold: each frame to a binary frame by a global threshold chosen from its own histogram.

A sample above the threshold t becomes maxval, any other 0 (OpenCV's THRESH_BINARY); --mode
picks cv2.threshold's other types (binary-inv, trunc, tozero, tozero-inv; --invert is
binary-inv); the output keeps the input's maxval. otsu is cv2.threshold's THRESH_OTSU and
triangle its THRESH_TRIANGLE, the same threshold and the same bytes (scikit-image's differ on flat
frames, and its triangle by about a level: docs/threshold.md); multiotsu:K gives the K - 1
thresholds of scikit-image's threshold_multiotsu(image, classes=K) and a label frame 0..K-1
(8-bit, maxval 255, the labels themselves in every container: stretch --in 0:K-1 to view them),
each sample's label the number of thresholds at or below it (np.digitize).
mean:BLOCK,C and gaussian:BLOCK,C give each pixel its own threshold, as cv2.adaptiveThreshold
(ADAPTIVE_THRESH_MEAN_C, GAUSSIAN_C) byte for byte, 8-bit frames only; sauvola:W,K,R and
niblack:W,K as scikit-image's threshold_sauvola and threshold_niblack, image > t.
Float frames take otsu, triangle, multiotsu (scikit-image's, 256 bins over the data's range; NaN
and infinities left out of the histogram, a NaN never above t), sauvola and niblack (as
scikit-image's on float32 images) and give an 8-bit frame 0/255.
Colour frames are thresholded by their luma.
With --format csv (or -o x.csv) it writes the thresholds instead, one row each:
frame,source,method,threshold. With --mask FILE the histogram the thresholds are chosen from
counts only the pixels where the mask is non-zero; every pixel is mapped. See docs/threshold.md.

Usage: threshold [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--method",
            "M",
            "otsu, triangle (8-bit only), multiotsu:K (K classes, 2 or more), value:V (the level V), \
             percentile:P (the smallest level present whose cumulative count reaches P% of the \
             pixels, P 0..100 with up to 6 decimals: numpy's percentile, method inverted_cdf); or a \
             threshold per pixel, OpenCV's adaptiveThreshold on 8-bit frames: mean:BLOCK,C (the \
             mean of the BLOCK x BLOCK block less C) or gaussian:BLOCK,C (its Gaussian-weighted \
             mean less C), BLOCK odd, C a decimal (0 if left out); or scikit-image's local \
             thresholds, image > t: sauvola:W,K,R (threshold_sauvola, window W, K 0.2 and R half \
             the sample type's range if left out) or niblack:W,K (threshold_niblack), W odd, 15 \
             without a value [default: otsu]",
        )
        .one_of(MethodWord::NAMES)
        .param("method"),
        Flag::with_value(
            "--mode",
            "M",
            "how a sample v becomes its output through the threshold t, as cv2.threshold's type: \
             binary (v > t: maxval, else 0), binary-inv (v > t: 0, else maxval), trunc (v > t: t, \
             else v), tozero (v > t: v, else 0), tozero-inv (v > t: 0, else v); multiotsu \
             (labels from the top) and the local methods take binary and binary-inv only \
             [default: binary]",
        )
        .one_of(ModeWord::NAMES)
        .param("mode"),
        Flag::switch("--invert", "the same as --mode binary-inv (its older spelling)"),
        table_output::format_flag(
            "csv or tsv: the thresholds as a table [default: -o's extension, else frames]",
        ),
        MASK,
    ];
    const HELP_END: &'static str = "\
Example:
  threshold -o coins-otsu.png coins.pgm
  threshold --method multiotsu:3 -o regions.png cells.png
  threshold --method percentile:90 --format csv scans/*.pgm
  threshold --method gaussian:31,5 -o page-binary.png page.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--method" => self.method = Some(parse_method(given.text()?)?),
            "--mode" => self.set_mode(ModeWord::parse_word(given.text()?, "mode")?)?,
            "--invert" => self.set_mode(ModeWord::BinaryInv)?,
            _ => return Ok(self.mask.option(given)? || self.output.option(given)?),
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        let binary_only = match self.method() {
            Choice::Global(m) if m.labels().is_some() => Some("gives labels"),
            Choice::Global(_) => None,
            Choice::Local(Local::Mean { .. } | Local::Gaussian { .. }) => {
                Some("is OpenCV's adaptiveThreshold")
            }
            Choice::Local(_) => Some("is scikit-image's image > t"),
        };
        if let (Some(why), None) = (binary_only, self.mode().binary()) {
            return Err(Error::usage(format!(
                "--mode {}: {} {why}: it takes --mode binary or binary-inv only",
                self.mode(),
                self.method()
            )));
        }
        if let (Choice::Local(local), true) = (self.method(), self.mask.is_given()) {
            return Err(Error::usage(format!(
                "--mask: {local} chooses no threshold from a histogram: the mask is for the global methods"
            )));
        }
        self.mask.check(common)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        let product = self.output.product(format)?;
        if let (Choice::Local(local), Product::Table) = (self.method(), &product) {
            return Err(Error::usage(format!(
                "--format: {local} gives each pixel its own threshold, no table of thresholds"
            )));
        }
        Ok(product)
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let method = match self.method() {
            Choice::Global(method) => method,
            Choice::Local(method) => {
                let out = cx.run(&LocalThreshold { method, mode: self.mode() }, &frame)?;
                return cx.write(out);
            }
        };
        let mask = self.mask.fit(cx, &frame)?;
        let Some(mut rows) = self.output.rows(cx, &COLUMNS) else {
            let out = cx.run(&ThresholdOp { method, mode: self.mode(), mask }, &frame)?;
            return cx.write(out.frame);
        };
        for t in cx.run(&Levels { method, mask }, &frame)? {
            rows.push(&[&method, &t]);
        }
        rows.write(cx)
    }
}

impl Threshold {
    fn method(&self) -> Choice {
        self.method.unwrap_or(Choice::Global(Method::Otsu))
    }

    fn mode(&self) -> Mode {
        self.mode.map_or(Mode::Binary, ModeWord::mode)
    }

    /// `--mode`, or `--invert`: once, or the same again.
    fn set_mode(&mut self, mode: ModeWord) -> Result<(), FlagError> {
        match self.mode {
            Some(before) if before != mode => Err(format!(
                "contradicts --mode {} given before (--invert is --mode binary-inv)",
                before.word()
            )
            .into()),
            _ => {
                self.mode = Some(mode);
                Ok(())
            }
        }
    }
}

/// `--method`'s value: `otsu`, `triangle`, `multiotsu:K`, `value:V`, `percentile:P`,
/// `mean:BLOCK,C`, `gaussian:BLOCK,C`.
fn parse_method(text: &str) -> Result<Choice, FlagError> {
    let (name, arg) = match text.split_once(':') {
        Some((name, arg)) => (name, Some(arg)),
        None => (text, None),
    };
    let Some((word, form)) = MethodWord::named(name) else {
        return Err(format!("unknown method '{text}' ({})", either(MethodWord::NAMES)).into());
    };
    let needs = || arg.ok_or_else(|| FlagError::from(format!("{name} takes a value: {form}")));
    Ok(Choice::Global(match word {
        MethodWord::Sauvola | MethodWord::Niblack => {
            let (window, k, r) = parse_window(name, arg.unwrap_or("15"), word == MethodWord::Sauvola)?;
            return Ok(Choice::Local(match word {
                MethodWord::Sauvola => Local::Sauvola { window, k, r },
                _ => Local::Niblack { window, k },
            }));
        }
        MethodWord::Mean | MethodWord::Gaussian => {
            let (block, c) = parse_block(name, needs()?)?;
            return Ok(Choice::Local(match word {
                MethodWord::Mean => Local::Mean { block, c },
                _ => Local::Gaussian { block, c },
            }));
        }
        MethodWord::Otsu | MethodWord::Triangle if arg.is_some() => {
            return Err(format!("{name} takes no value").into())
        }
        MethodWord::Otsu => Method::Otsu,
        MethodWord::Triangle => Method::Triangle,
        MethodWord::MultiOtsu => {
            let k: u16 = needs()?
                .parse()
                .ok()
                .filter(|k| (2..=MAX_CLASSES).contains(k))
                .ok_or_else(|| format!("multiotsu takes 2 to {MAX_CLASSES} classes"))?;
            Method::MultiOtsu(k)
        }
        MethodWord::Value => {
            let v: u16 = needs()?.parse().map_err(|_| "value takes a level, 0 to 65535".to_owned())?;
            Method::Value(v)
        }
        MethodWord::Percentile => Method::Percentile(parse_percent(needs()?)?),
    }))
}

/// `W[,K[,R]]` of Sauvola (`W[,K]` of Niblack): an odd window 1..MAX_BLOCK, K a number (0.2
/// if left out), R a positive number (half the sample type's range if left out).
fn parse_window(name: &str, text: &str, takes_r: bool) -> Result<(u32, f64, Option<f64>), FlagError> {
    let mut parts = text.split(',');
    let window = parts
        .next()
        .and_then(|w| w.parse::<u32>().ok())
        .filter(|w| w % 2 == 1 && *w <= MAX_BLOCK)
        .ok_or_else(|| format!("{name} takes an odd window W, 1 to {MAX_BLOCK}"))?;
    let number = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite());
    let k = match parts.next() {
        None => 0.2,
        Some(t) => number(t).ok_or_else(|| format!("{name} takes a number K after the window"))?,
    };
    let r = match parts.next() {
        Some(t) if takes_r => Some(
            number(t)
                .filter(|r| *r > 0.0)
                .ok_or_else(|| format!("{name} takes a positive number R after K"))?,
        ),
        _ => None,
    };
    if parts.next().is_some() || (!takes_r && text.split(',').count() > 2) {
        return Err(format!("{name} takes at most {}", if takes_r { "W,K,R" } else { "W,K" }).into());
    }
    Ok((window, k, r))
}

/// `BLOCK,C` of the adaptive methods: an odd block 3..MAX_BLOCK and an offset, a decimal with up
/// to 6 places (0 if left out).
fn parse_block(name: &str, text: &str) -> Result<(u32, Offset), FlagError> {
    let (block, c) = text.split_once(',').unwrap_or((text, "0"));
    let block = block
        .parse::<u32>()
        .ok()
        .filter(|b| b % 2 == 1 && (3..=MAX_BLOCK).contains(b))
        .ok_or_else(|| format!("{name} takes an odd BLOCK, 3 to {MAX_BLOCK}"))?;
    let bad = || FlagError::from(format!("{name} takes an offset C with up to 6 decimals"));
    let (negative, digits) = match c.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, c.strip_prefix('+').unwrap_or(c)),
    };
    let (whole, part) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && part.is_empty() || !all_digits(whole) || !all_digits(part) || part.len() > 6 {
        return Err(bad());
    }
    let whole: i64 =
        if whole.is_empty() { 0 } else { whole.parse().ok().filter(|w| *w <= 1_000_000).ok_or_else(bad)? };
    let part: i64 = format!("{part:0<6}").parse().map_err(|_| bad())?;
    let millionths = whole * 1_000_000 + part;
    Ok((block, Offset { millionths: if negative { -millionths } else { millionths } }))
}

/// A percentage 0..=100 written as a decimal with up to 6 places, exactly, in millionths.
fn parse_percent(text: &str) -> Result<Percent, FlagError> {
    let bad = || FlagError::from("percentile takes 0 to 100, with up to 6 decimals".to_owned());
    let (whole, part) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && part.is_empty()
        || !digits(whole)
        || !digits(part)
        || part.len() > 6
        || whole.len() > 3
    {
        return Err(bad());
    }
    let whole: u32 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let part: u32 = format!("{part:0<6}").parse().map_err(|_| bad())?;
    let millionths = whole * 1_000_000 + part;
    if millionths > HUNDRED_PERCENT {
        return Err(bad());
    }
    Ok(Percent { millionths })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_as_documented() {
        let g = Choice::Global;
        assert_eq!(parse_method("otsu").unwrap(), g(Method::Otsu));
        assert_eq!(parse_method("multiotsu:3").unwrap(), g(Method::MultiOtsu(3)));
        assert_eq!(parse_method("value:0").unwrap(), g(Method::Value(0)));
        let c = |m| Offset { millionths: m };
        assert_eq!(
            parse_method("mean:11,2").unwrap(),
            Choice::Local(Local::Mean { block: 11, c: c(2_000_000) })
        );
        assert_eq!(
            parse_method("gaussian:3,-0.5").unwrap(),
            Choice::Local(Local::Gaussian { block: 3, c: c(-500_000) })
        );
        assert_eq!(parse_method("mean:5").unwrap(), Choice::Local(Local::Mean { block: 5, c: c(0) }));
        let l = Choice::Local;
        assert_eq!(parse_method("sauvola").unwrap(), l(Local::Sauvola { window: 15, k: 0.2, r: None }));
        assert_eq!(
            parse_method("sauvola:25,0.5,128").unwrap(),
            l(Local::Sauvola { window: 25, k: 0.5, r: Some(128.0) })
        );
        assert_eq!(parse_method("niblack:7,-0.1").unwrap(), l(Local::Niblack { window: 7, k: -0.1 }));
        let p = |m| g(Method::Percentile(Percent { millionths: m }));
        assert_eq!(parse_method("percentile:12.5").unwrap(), p(12_500_000));
        assert_eq!(parse_method("percentile:100").unwrap(), p(HUNDRED_PERCENT));
        assert_eq!(parse_method("percentile:.000001").unwrap(), p(1));
        for bad in [
            "percentile:100.000001",
            "percentile:-1",
            "percentile:1e3",
            "percentile:0.0000001",
            "percentile:",
            "percentile",
            "multiotsu:1",
            "multiotsu:257",
            "value:65536",
            "otsu:2",
            "mean",
            "mean:4,1",
            "mean:1,1",
            "mean:4003,1",
            "mean:3,1e3",
            "mean:3,--1",
            "gaussian:3,0.0000001",
            "gaussian:,1",
            "sauvola:14",
            "sauvola:15,x",
            "sauvola:15,0.2,0",
            "sauvola:15,0.2,1,2",
            "niblack:15,0.2,1",
            "niblack:",
            "median",
        ] {
            assert!(parse_method(bad).is_err(), "{bad}");
        }
    }

    /// Every method completions offer is one the parser takes, and no other: a word with a
    /// parameter (`multiotsu:K`) is taken with one (the parser's errors then concern the
    /// parameter, not the name).
    #[test]
    fn the_methods_listed_are_the_methods_parsed() {
        for name in MethodWord::NAMES {
            let example = match name.split_once(':') {
                None => name.to_string(),
                Some((prefix, _)) => format!("{prefix}:3"),
            };
            assert!(parse_method(&example).is_ok(), "{example}");
        }
        let Err(FlagError::Value(e)) = parse_method("median") else { panic!("median is no method") };
        assert_eq!(
            e,
            "unknown method 'median' (otsu, triangle, multiotsu:K, value:V, percentile:P, mean:BLOCK, \
             gaussian:BLOCK, sauvola:W or niblack:W)"
        );
    }
}
