use std::io::Write;

use histopipe_cli::{
    Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product, Tool, TABLE_KEY_COLUMNS,
};
use histopipe_frame::Frame;
use histopipe_ops::histogram::{Distribution, Histogram};
use histopipe_plot::{cdf_figure, CdfFigure};

use crate::plot::{plot_target, write_figure, Plot};

/// `cdf`: each frame's histogram and cumulative distribution as a table.
#[derive(Default)]
pub struct Cdf {
    bins: Option<usize>,
    /// `--format`, if given.
    format: Option<OutputFormat>,
    tsv: bool,
    plot: Option<Plot>,
}

/// The columns after the frame and its source.
const COLUMNS: [&str; 6] = ["bin", "lower", "upper", "count", "cumulative", "fraction"];

impl Tool for Cdf {
    const NAME: &'static str = "cdf";
    const HELP: &'static str = "\
cdf: print each frame's histogram and its cumulative distribution, one row per bin.

Bins are equal-width over 0..maxval: with L = maxval + 1 levels and N bins, value v falls in bin
floor(v * N / L), and bin b covers ceil(b * L / N) ..= ceil((b + 1) * L / N) - 1.
Columns: frame,source,bin,lower,upper,count,cumulative,fraction (frame: its number in the
stream, from 1; source: the file it came from, - for standard input); fraction = cumulative /
pixels, rounded half up to 6 decimals. The header line comes once per output: once for the
stream, once per file with -o fields. See docs/cdf.md.

Usage: cdf [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--bins",
            "N",
            "N equal-width bins, 1..maxval+1 [default: one per level, maxval + 1]",
        )
        .param("bins"),
        Flag::with_value("--format", "F", "csv or tsv [default: -o's extension, else csv]")
            .one_of(&["csv", "tsv"]),
        Flag::with_value(
            "--plot",
            "FILE",
            "also draw the figure, the histogram as bars and the CDF as a curve on a second axis, to FILE \
             (.svg or .png); FILE takes -o's fields ({stem}, {name}, {dir}, {i}, {n}) for one figure per \
             frame, else the first frame's only",
        ),
    ];
    const HELP_END: &'static str = "\
Example:
  cdf --bins 8 camera.pgm
  cdf -o out/{stem}.csv scans/*.png";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--bins" => {
                let n: usize = given.parse()?;
                if n == 0 {
                    return Err("must be at least 1".into());
                }
                self.bins = Some(n);
            }
            "--format" => {
                self.format = Some(match given.text()? {
                    "csv" => OutputFormat::Csv,
                    "tsv" => OutputFormat::Tsv,
                    f => return Err(format!("unknown format '{f}' (csv or tsv)").into()),
                });
            }
            "--plot" => self.plot = Some(plot_target(given)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        self.tsv = OutputFormat::agreed(self.format, format, OutputFormat::Csv)? == OutputFormat::Tsv;
        Ok(Product::Table)
    }

    fn side_files(&self) -> Vec<PathTemplate> {
        self.plot.iter().map(|p| p.template.clone()).collect()
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let dist = cx.run(&Histogram { bins: self.bins }, &frame)?;
        if let (Some(plot), Some(path)) = (&self.plot, cx.side_file(0)) {
            let ranges: Vec<(u32, u32)> = (0..dist.counts.len()).map(|b| dist.bins.range(b)).collect();
            let figure = CdfFigure {
                counts: &dist.counts,
                cumulative: &dist.cumulative,
                bin_ranges: &ranges,
                maxval: frame.maxval,
                title: format!(
                    "cdf: frame {}, {}x{}, maxval {}, {} bins",
                    cx.index,
                    frame.width,
                    frame.height,
                    frame.maxval,
                    dist.counts.len()
                ),
            };
            write_figure(cx, path, cdf_figure(plot.format, &figure))?;
        }
        let sep = if self.tsv { '\t' } else { ',' };
        let text = self.table(&cx.row_key(sep), cx.starts_output(), &dist);
        cx.text().write_all(text.as_bytes()).map_err(|e| Error::io(&e))
    }
}

/// `num / den` rounded half up to 6 decimals, exactly ("0.000000" when `den` is 0).
fn fraction(num: u64, den: u64) -> String {
    if den == 0 {
        return "0.000000".into();
    }
    let millionths = (2 * num as u128 * 1_000_000 + den as u128) / (2 * den as u128);
    format!("{}.{:06}", millionths / 1_000_000, millionths % 1_000_000)
}

impl Cdf {
    fn table(&self, key: &str, header: bool, dist: &Distribution) -> String {
        let sep = if self.tsv { "\t" } else { "," };
        let mut text = String::new();
        if header {
            text.push_str(&TABLE_KEY_COLUMNS.iter().chain(&COLUMNS).copied().collect::<Vec<_>>().join(sep));
            text.push('\n');
        }
        let total = dist.cumulative.last().copied().unwrap_or(0);
        for (b, (&count, &cumulative)) in dist.counts.iter().zip(&dist.cumulative).enumerate() {
            let (lower, upper) = dist.bins.range(b);
            let fields = [
                b.to_string(),
                lower.to_string(),
                upper.to_string(),
                count.to_string(),
                cumulative.to_string(),
                fraction(cumulative, total),
            ];
            text.push_str(key);
            text.push_str(&fields.join(sep));
            text.push('\n');
        }
        text
    }
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
