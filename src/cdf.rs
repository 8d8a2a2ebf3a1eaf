use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product, Tool,
    TABLE_KEY_COLUMNS,
};
use histopipe_frame::{encode_npy_array, Frame, NpyData};
use histopipe_ops::histogram::{Distribution, Histogram};
use histopipe_ops::mask::{Mask, Masked};
use histopipe_ops::range::Outside;
use histopipe_plot::{cdf_figure, CdfFigure};

use crate::binning::{bins_flag, classes, range_flag, BinBounds, Binning};
use crate::colour::{Colour, COUNTING};
use crate::mask::{Masking, MASK};
use crate::plot::{write_figure, Plotting};

/// `cdf`: each frame's histogram and cumulative distribution as a table.
#[derive(Default)]
pub struct Cdf {
    binning: Binning<usize>,
    colour: Colour,
    /// `--format`, if given.
    format: Option<OutputFormat>,
    /// What the table is written as: csv, tsv or npy.
    written: Option<OutputFormat>,
    /// Whether the table goes to one output for the whole stream (no fields in -o).
    one_output: bool,
    /// Which kinds of table the frames of one output have made: 1 without the outside columns,
    /// 2 with them (see [`Tool::frame`]).
    kinds: AtomicU8,
    plot: Plotting,
    mask: Masking,
}

/// The columns after the frame and its source (and the channel).
const COLUMNS: [&str; 6] = ["bin", "lower", "upper", "count", "cumulative", "fraction"];

/// One channel's distribution.
struct Channel {
    name: Option<&'static str>,
    bounds: BinBounds,
    dist: Distribution,
    /// The counts outside the bins, in [`Outside::ALL`]'s order, when the range has an outside.
    outside: Option<[u64; 5]>,
}

histopipe_cli::words! {
    /// What `--format` writes: the table as text, or its counts as a NumPy array.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum CdfFormat {
        Csv = "csv",
        Tsv = "tsv",
        Npy = "npy",
    }
}

impl Tool for Cdf {
    const NAME: &'static str = "cdf";
    const HELP: &'static str = "\
cdf: print each frame's histogram and its cumulative distribution, one row per bin.

Integer frames: bins are equal-width over LO..=HI (--range, default 0..=maxval): with L = HI - LO
+ 1 levels and N bins, value v falls in bin floor((v - LO) * N / L), and bin b covers LO +
ceil(b * L / N) ..= LO + ceil((b + 1) * L / N) - 1. Float frames: N bins (default 256) over the
range (--range, default: the finite samples' least to greatest), exactly as numpy.histogram(
a.astype(float64), bins=N, range=(LO, HI)); lower and upper are then the bin's edges [lower, upper).
Columns: frame,source,[channel,]bin,lower,upper,count,cumulative,fraction (frame: its number in
the stream, from 1; source: the file it came from, - for standard input; channel with --colour
each); fraction = cumulative / pixels in the bins, rounded half up to 6 decimals. With --range,
and for float frames, five more columns count the samples left out of the bins: below,above
(finite, outside the range),nans,neg_inf,pos_inf. The header line comes once per output: once
for the stream, once per file with -o fields. -o x.npy: the table as a float64 array. With --mask
FILE only the pixels where the mask is non-zero are counted (every channel under the same mask; a
float frame's default range is theirs): numpy.histogram(a[mask > 0], ...). See docs/cdf.md.

Usage: cdf [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        bins_flag(
            "N equal-width bins, 1..L for L levels of the range [default: one per level, maxval + 1; \
             256 for float frames]",
        ),
        range_flag(
            "bin LO..HI only, counting the samples outside in the below and above columns [default: \
             0:maxval; float frames: the finite samples' least to greatest]",
        ),
        COUNTING.flag(
            "luma: colour read as gray (a JPEG's own luma, else OpenCV's BGR2GRAY); each: a histogram \
             per channel (red, green, blue, alpha; gray for gray frames), in a channel column \
             [default: luma]",
        ),
        Flag::with_value("--format", "F", "csv, tsv or npy [default: -o's extension, else csv]")
            .one_of(CdfFormat::NAMES),
        Plotting::flag(
            "also draw the figure, the histogram as bars and the CDF as a curve on a second axis, over \
             the range, to FILE (.svg or .png); FILE takes -o's fields ({stem}, {name}, {dir}, {i}, {n}) \
             for one figure per frame, else the first frame's only; not with --colour each",
        ),
        MASK,
    ];
    const HELP_END: &'static str = "\
Example:
  cdf --bins 8 camera.pgm
  cdf --colour each --range 16:235 --bins 22 photo.png
  cdf -o out/{stem}.csv scans/*.png";

    const FLOAT: bool = true;

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--colour" => self.colour = COUNTING.parse(given)?,
            "--format" => {
                self.format = Some(match CdfFormat::parse_word(given.text()?, "format")? {
                    CdfFormat::Csv => OutputFormat::Csv,
                    CdfFormat::Tsv => OutputFormat::Tsv,
                    CdfFormat::Npy => OutputFormat::Npy,
                });
            }
            _ => {
                return Ok(self.binning.option(given)? || self.mask.option(given)? || self.plot.option(given)?)
            }
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        self.plot.check(self.colour == Colour::Each)?;
        self.one_output = common.output.as_ref().is_none_or(|o| !o.to_string_lossy().contains('{'));
        self.mask.check(common)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.written = Some(OutputFormat::agreed(self.format, format, OutputFormat::Csv)?);
        Ok(Product::Table)
    }

    fn side_files(&self) -> Vec<PathTemplate> {
        self.plot.side_files()
    }

    fn reads_gray(&self) -> bool {
        self.colour == Colour::Luma
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let (width, height, maxval, float) =
            (frame.width, frame.height, frame.maxval, !frame.depth().is_integer());
        let mask = self.mask.fit(cx, &frame)?;
        let mut channels = Vec::new();
        for (name, plane) in self.colour.counted(frame) {
            channels.push(self.channel(cx, name, &plane, mask)?);
        }
        let outside = channels[0].outside.is_some();
        // A table's columns are one set: frames with and without the outside columns (integer and
        // float frames without --range) cannot share one output.
        if self.one_output {
            let seen = self.kinds.fetch_or(if outside { 2 } else { 1 }, Ordering::Relaxed);
            if seen | if outside { 2 } else { 1 } == 3 {
                return Err(cx.invalid(
                    "this table would mix integer frames and float ones, whose rows have the below, \
                     above, nans, neg_inf and pos_inf columns: give --range (then every frame has them), \
                     or -o with a field (-o out/{stem}.csv) for one table each",
                ));
            }
        }
        if let Some((plot, path)) = self.plot.target(cx) {
            let c = &channels[0];
            let (values, bins) = c.bounds.drawn();
            let figure = CdfFigure {
                counts: &c.dist.counts,
                cumulative: &c.dist.cumulative,
                bins: &bins,
                values: values.clone(),
                whole: c.bounds.integer,
                title: match float {
                    false => format!(
                        "cdf: frame {}, {width}x{height}, maxval {maxval}, {} bins",
                        cx.index,
                        c.dist.counts.len()
                    ),
                    true => format!(
                        "cdf: frame {}, {width}x{height}, float, {} bins over {:.6}..{:.6}",
                        cx.index,
                        c.dist.counts.len(),
                        values.start,
                        values.end
                    ),
                },
            };
            write_figure(cx, &path, cdf_figure(plot.format, &figure))?;
        }
        match self.written {
            Some(OutputFormat::Npy) => {
                if !cx.starts_output() {
                    return Err(cx.invalid(
                        "an .npy file holds one frame's table, and this output would get more than one: \
                         give -o a field (-o out/{stem}.npy) for one file each",
                    ));
                }
                let bytes = npy_table(&channels);
                cx.text().extend_from_slice(&bytes);
                Ok(())
            }
            _ => {
                let tsv = self.written == Some(OutputFormat::Tsv);
                let sep = if tsv { '\t' } else { ',' };
                let text = table(&cx.row_key(sep), cx.starts_output(), &channels, sep);
                cx.text().write_all(text.as_bytes()).map_err(|e| Error::io(&e))
            }
        }
    }
}

impl Cdf {
    /// The distribution of one channel, `plane`: of the pixels `mask` selects, if given.
    fn channel(
        &self,
        cx: &mut Context<'_>,
        name: Option<&'static str>,
        plane: &Frame,
        mask: Option<Mask<'_>>,
    ) -> Result<Channel, Error> {
        let count = |cx: &mut Context<'_>, bins: Option<usize>, frame: &Frame| match mask {
            Some(mask) => cx.run(&Masked { op: Histogram { bins }, mask }, frame),
            None => cx.run(&Histogram { bins }, frame),
        };
        match classes(cx, plane, self.binning.range(), self.binning.bins(), mask)? {
            None => {
                let dist = count(cx, self.binning.bins(), plane)?;
                let bounds = (0..dist.counts.len())
                    .map(|b| dist.bins.range(b))
                    .map(|(l, h)| (l as f64, h as f64))
                    .collect();
                Ok(Channel { name, bounds: BinBounds { integer: true, bounds }, dist, outside: None })
            }
            Some(c) => {
                let all = count(cx, None, &c.frame)?;
                let (counts, outside) = c.layout.split(&all.counts);
                let dist = Distribution::from_counts(all.bins, counts);
                Ok(Channel { name, bounds: c.bounds, dist, outside: Some(outside) })
            }
        }
    }
}

/// The text table of one frame's channels: the header line if `header`, then one row per bin of
/// each channel, each starting with `key` (the frame's number and source, with their separators).
fn table(key: &str, header: bool, channels: &[Channel], sep: char) -> String {
    let sep_s = sep.to_string();
    let mut text = String::new();
    let outside = channels[0].outside.is_some();
    if header {
        let mut names: Vec<&str> = TABLE_KEY_COLUMNS.to_vec();
        if channels[0].name.is_some() {
            names.push("channel");
        }
        names.extend(COLUMNS);
        if outside {
            names.extend(Outside::ALL.map(Outside::name));
        }
        text.push_str(&names.join(&sep_s));
        text.push('\n');
    }
    for c in channels {
        let total = c.dist.cumulative.last().copied().unwrap_or(0);
        let rest: String = c.outside.iter().flatten().map(|n| format!("{sep}{n}")).collect();
        for (b, (&count, &cumulative)) in c.dist.counts.iter().zip(&c.dist.cumulative).enumerate() {
            let (lower, upper) = c.bounds.bounds[b];
            let mut fields = Vec::with_capacity(7);
            if let Some(name) = c.name {
                fields.push(name.to_owned());
            }
            fields.extend([
                b.to_string(),
                c.bounds.show(lower),
                c.bounds.show(upper),
                count.to_string(),
                cumulative.to_string(),
                fraction(cumulative, total),
            ]);
            text.push_str(key);
            text.push_str(&fields.join(&sep_s));
            text.push_str(&rest);
            text.push('\n');
        }
    }
    text
}

/// The table as NPY: float64, shape (bins, columns) of bin, lower, upper, count, cumulative,
/// fraction (cumulative / pixels in the bins, unrounded) and, with an outside, below, above, nans,
/// neg_inf, pos_inf; with --colour each (channels, bins, columns).
fn npy_table(channels: &[Channel]) -> Vec<u8> {
    let bins = channels[0].dist.counts.len();
    let columns = COLUMNS.len() + if channels[0].outside.is_some() { 5 } else { 0 };
    let mut data = Vec::with_capacity(channels.len() * bins * columns);
    for c in channels {
        let total = c.dist.cumulative.last().copied().unwrap_or(0);
        for (b, (&count, &cumulative)) in c.dist.counts.iter().zip(&c.dist.cumulative).enumerate() {
            let (lower, upper) = c.bounds.bounds[b];
            let fraction = if total == 0 { 0.0 } else { cumulative as f64 / total as f64 };
            data.extend([b as f64, lower, upper, count as f64, cumulative as f64, fraction]);
            data.extend(c.outside.iter().flatten().map(|&n| n as f64));
        }
    }
    let shape: Vec<usize> = match channels[0].name {
        Some(_) => vec![channels.len(), bins, columns],
        None => vec![bins, columns],
    };
    encode_npy_array(&shape, NpyData::F64(&data)).expect("the shape holds the data")
}

/// `num / den` rounded half up to 6 decimals, exactly ("0.000000" when `den` is 0).
fn fraction(num: u64, den: u64) -> String {
    if den == 0 {
        return "0.000000".into();
    }
    let millionths = (2 * num as u128 * 1_000_000 + den as u128) / (2 * den as u128);
    format!("{}.{:06}", millionths / 1_000_000, millionths % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::fraction;

    #[test]
    fn fractions_round_half_up_exactly() {
        assert_eq!(fraction(1, 3), "0.333333");
        assert_eq!(fraction(2, 3), "0.666667");
        assert_eq!(fraction(1, 2_000_000), "0.000001"); // exactly half a millionth
        assert_eq!(fraction(7, 7), "1.000000");
        assert_eq!(fraction(0, 0), "0.000000");
    }
}
