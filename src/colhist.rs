use std::ops::Range;

use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product, Tool,
    TABLE_KEY_COLUMNS,
};
use histopipe_frame::{Format, Frame, Line, Pixels};
use histopipe_ops::colhist::{ColHist as ColHistOp, ColHistParams, Histograms};
use histopipe_ops::{parallel, OpError};
use histopipe_plot::{colhist_figure, heatmap_image, ColhistFigure, Counts};

use crate::plot::{plot_target, write_figure, Plot};

/// What `colhist` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Output {
    #[default]
    Csv,
    Tsv,
    /// The matrix as an image, in the output's container.
    Image,
    /// A heatmap to look at, as PNG or (`-o x.ppm`) PPM.
    Heatmap {
        png: bool,
    },
}

/// `--line` or `--segment`: two points of the original, and which of the two options gave them.
#[derive(Debug, Clone, Copy)]
struct Along {
    points: Line,
    /// `--segment`: only the rows between the points; `--line`: the whole column.
    segment: bool,
}

/// The pixels `--line` or `--segment` picks in a frame: rows `rows` of column `x`.
#[derive(Debug, Clone)]
struct Column {
    x: usize,
    rows: Range<usize>,
}

/// `colhist`: a histogram of every column (or row) of each frame.
#[derive(Default)]
pub struct ColHist {
    params: ColHistParams,
    along: Option<Along>,
    /// `--format`, if given: csv, tsv, pgm for the matrix image, png for the heatmap.
    format: Option<OutputFormat>,
    output: Output,
    plot: Option<Plot>,
}

/// A distance in pixels under which the two ends of `--line` (`--segment`) count as in one column:
/// far below a pixel, far above the rounding of the geometry's composed maps.
const VERTICAL_TOLERANCE: f64 = 1e-6;

impl Tool for ColHist {
    const NAME: &'static str = "colhist";
    const HELP: &'static str = "\
colhist: a histogram of every column of each frame, a bins x width matrix of counts.

Sample v goes in bin floor(v * N / (maxval + 1)) of N bins of equal width over 0..maxval. Only
pixels of the original image count (through the geometry metadata: pad's border and the corners a
rotation brings in do not); without metadata every pixel counts.

Usage: colhist [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value(
            "--bins",
            "N",
            "N bins, 1..=maxval+1 [default: one per value for 8-bit frames, 256 for 16-bit]",
        )
        .param("bins"),
        Flag::switch("--rows", "a histogram of every row instead (a bins x height matrix)"),
        Flag::switch("--count-padding", "count every pixel, padding included"),
        Flag::with_value(
            "--line",
            "X0,Y0,X1,Y1",
            "only the column this line of the original image lies on, all of it; the line must be \
             vertical in the frame (rotate --line first)",
        ),
        Flag::with_value(
            "--segment",
            "X0,Y0,X1,Y1",
            "only that column's pixels between the two points: the rows from the one nearest (X0,Y0) to \
             the one nearest (X1,Y1), both included (halves rounded up); both must be in the frame \
             (rotate --segment first)",
        ),
        Flag::with_value(
            "--format",
            "F",
            "csv, tsv, pgm or png [default: -o's extension, else csv]; pgm: the matrix as an image (in \
             -o's container: pgm, pam, tif, raw, or png with --format pgm), bin 0 on top, maxval the \
             largest count (over 65535 clamped); png (or -o x.png, x.ppm): a heatmap to look at, bin 0 \
             at the bottom, counts on a log scale through viridis, one image per output file",
        )
        .one_of(&["csv", "tsv", "pgm", "png"]),
        Flag::with_value(
            "--plot",
            "FILE",
            "also draw the figure, the heatmap with axes and a colour bar, to FILE (.svg or .png); FILE \
             takes -o's fields ({stem}, {name}, {dir}, {i}, {n}) for one figure per frame, else the \
             first frame's only",
        ),
    ];
    const HELP_END: &'static str = "\
The text formats write one table for the output: a header 'frame,source,bin,lower,upper,' and
the column (or row) numbers (with --line or --segment, the one column's), once per output, then
per frame one row per bin: the frame's number in the stream, its file (- for standard input), the
bin's number, its lowest and highest value, its counts. Frames of different widths give rows of
different lengths: give -o a field (-o out/{stem}.csv) for one table each.

Example:
  pad a.pgm | rotate --line 0,0,400,400 | colhist --line 0,0,400,400 -o line.csv
  pad a.jpg | rotate --segment 100,100,300,250 | colhist --segment 100,100,300,250
  pad scans/*.pgm | rotate 30 | colhist -o out/{stem}.csv";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--bins" => {
                let n: u32 = given.parse()?;
                if n == 0 {
                    return Err("must be at least 1".into());
                }
                self.params.bins = Some(n);
            }
            "--rows" => self.params.rows = true,
            "--count-padding" => self.params.count_padding = true,
            "--line" | "--segment" => {
                let segment = given.is("--segment");
                if self.along.is_some_and(|a| a.segment != segment) {
                    return Err(Error::usage("give --line or --segment, not both").into());
                }
                self.along = Some(Along { points: given.parse()?, segment });
            }
            "--format" => {
                self.format = Some(match given.text()? {
                    "csv" => OutputFormat::Csv,
                    "tsv" => OutputFormat::Tsv,
                    "pgm" => OutputFormat::Pgm,
                    "png" => OutputFormat::Png,
                    v => return Err(format!("unknown format '{v}' (csv, tsv, pgm or png)").into()),
                });
            }
            "--plot" => self.plot = Some(plot_target(given)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        if let (Some(along), true) = (&self.along, self.params.rows) {
            return Err(Error::usage(format!(
                "{} takes one column: it cannot be combined with --rows",
                along.option()
            )));
        }
        Ok(())
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        use OutputFormat as F;
        self.output = match (self.format, format) {
            // The matrix image, asked for by name, in whichever image container -o names.
            (Some(F::Pgm), Some(e)) if e.container().is_some() => Output::Image,
            // A picture file is for a person: the heatmap.
            (Some(F::Png) | None, Some(F::Png)) | (Some(F::Png), None) => Output::Heatmap { png: true },
            (Some(F::Png) | None, Some(F::Ppm)) => Output::Heatmap { png: false },
            // Any other image container will do for the matrix: agree on "an image", as pgm.
            (option, extension) => {
                let image = |f: F| if f.container().is_some() { F::Pgm } else { f };
                match F::agreed(option, extension.map(image), F::Csv)? {
                    F::Pgm => Output::Image,
                    F::Tsv => Output::Tsv,
                    _ => Output::Csv,
                }
            }
        };
        Ok(match self.output {
            Output::Image => Product::Frames,
            Output::Heatmap { .. } => Product::Drawing,
            Output::Csv | Output::Tsv => Product::Table,
        })
    }

    fn side_files(&self) -> Vec<PathTemplate> {
        self.plot.iter().map(|p| p.template.clone()).collect()
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let op = self.params.for_frame(&frame).map_err(|e| cx.op_error(e))?;
        // The matrix of counts, as large as the image it may become, is refused before it is made.
        cx.check_pixels(if op.rows { frame.height } else { frame.width }, op.bins as usize)?;
        let column = match &self.along {
            Some(along) => Some(along.column(cx, &frame)?),
            None => None,
        };
        let h = match &column {
            None => cx.run(&op, &frame)?,
            // Only the column's pixels go to the backend, as a frame of one column.
            Some(c) => match op.column(&frame, c.x, c.rows.clone()) {
                (_, pixels) if pixels.height == 0 => {
                    Histograms { bins: op.bins as usize, lines: 1, counts: vec![0; op.bins as usize] }
                }
                (one, pixels) => cx.run(&one, &pixels)?,
            },
        };
        let what = match (&column, self.along.is_some_and(|a| a.segment), op.rows) {
            (Some(c), true, _) => format!("column {}, rows {} to {}", c.x, c.rows.start, c.rows.end - 1),
            (Some(c), false, _) => format!("column {}", c.x),
            (None, _, true) => "rows".to_owned(),
            (None, _, false) => "columns".to_owned(),
        };
        let column = column.map(|c| c.x);
        if let (Some(plot), Some(path)) = (&self.plot, cx.side_file(0)) {
            let ranges: Vec<(u32, u32)> = (0..op.bins).map(|b| op.bin_range(b)).collect();
            let figure = ColhistFigure {
                counts: Counts { bins: h.bins, lines: h.lines, counts: &h.counts },
                bin_ranges: &ranges,
                maxval: frame.maxval,
                first_line: column.unwrap_or(0),
                line_name: if op.rows { "row" } else { "column" },
                title: format!(
                    "colhist: frame {}, {}x{}, maxval {}, {} bins, {what}",
                    cx.index, frame.width, frame.height, frame.maxval, op.bins
                ),
            };
            write_figure(cx, path, colhist_figure(plot.format, &figure))?;
        }
        match self.output {
            Output::Image => cx.write(matrix_image(&h, &frame)),
            Output::Heatmap { png } => {
                if !cx.starts_output() {
                    return Err(cx.invalid(
                        "a heatmap is one image, and this output would get more than one frame's: \
                         give -o a field for one image each (-o out/{stem}.png), or use --plot with a field",
                    ));
                }
                let image = heatmap_image(&Counts { bins: h.bins, lines: h.lines, counts: &h.counts });
                histopipe_frame::write_rgb8(cx.text(), image.width, image.height, &image.rgb, png)
                    .map_err(|e| cx.invalid(format!("cannot encode the heatmap: {e}")))
            }
            Output::Csv | Output::Tsv => {
                let sep = if self.output == Output::Csv { b',' } else { b'\t' };
                let key = cx.row_key(sep as char);
                let header = cx.starts_output();
                write_table(cx.text(), &op, &h, column, header, key.as_bytes(), sep);
                Ok(())
            }
        }
    }
}

impl Along {
    fn option(&self) -> &'static str {
        if self.segment {
            "--segment"
        } else {
            "--line"
        }
    }

    /// The pixels of `frame` these points pick: the column the line lies on, which must be
    /// vertical in the frame, and for a segment the rows from the one nearest one end to the one
    /// nearest the other (floor(y + 0.5), as the column's x), which must be rows of the frame.
    fn column(&self, cx: &Context<'_>, frame: &Frame) -> Result<Column, Error> {
        let option = self.option();
        let ((x0, y0), (x1, y1)) = self
            .points
            .in_frame(&frame.geometry_or_identity())
            .map_err(|e| cx.op_error(OpError::invalid(e)))?;
        if (x1 - x0).abs() > VERTICAL_TOLERANCE * (1.0 + (y1 - y0).abs()) {
            return Err(cx.invalid(format!(
                "{option} is not vertical in this frame (its ends are at x = {x0:.3} and x = {x1:.3}): \
                 turn it with rotate {option} first"
            )));
        }
        let x = ((x0 + x1) / 2.0 + 0.5).floor();
        if !(x >= 0.0 && x < frame.width as f64) {
            return Err(cx.invalid(format!(
                "{option} lies at x = {x:.0}, outside the {}-pixel-wide frame",
                frame.width
            )));
        }
        let rows = if self.segment {
            let (top, bottom) = ((y0.min(y1) + 0.5).floor(), (y0.max(y1) + 0.5).floor());
            if !(top >= 0.0 && bottom < frame.height as f64) {
                return Err(cx.invalid(format!(
                    "--segment leaves the frame: its ends are at rows {top:.0} and {bottom:.0} of a \
                     {}-row frame",
                    frame.height
                )));
            }
            top as usize..bottom as usize + 1
        } else {
            0..frame.height
        };
        Ok(Column { x: x as usize, rows })
    }
}

/// The counts as an image, one row per bin: samples are the counts (clamped to 65535) and maxval
/// the largest of them (at least 1), so viewers show the matrix stretched to its peak; 8-bit when
/// the peak is at most 255, as PGM has it. It keeps the frame's source, not its geometry: its
/// pixels are no place of the original.
fn matrix_image(h: &Histograms, frame: &Frame) -> Frame {
    let samples: Vec<u16> = h.counts.iter().map(|&c| c.min(65535) as u16).collect();
    let maxval = samples.iter().copied().max().unwrap_or(0).max(1);
    let pixels = if maxval <= 255 {
        Pixels::U8(samples.iter().map(|&s| s as u8).collect())
    } else {
        Pixels::U16(samples.into())
    };
    let mut f = Frame::new(h.lines, h.bins, maxval, pixels);
    f.format = Format::Pgm;
    f.source = frame.source.clone();
    f
}

/// The table of `h`: the header line if `header`, then one row per bin, each starting with
/// `key` (the frame's number and source, with their separators).
fn write_table(
    text: &mut Vec<u8>,
    op: &ColHistOp,
    h: &Histograms,
    column: Option<usize>,
    header: bool,
    key: &[u8],
    sep: u8,
) {
    if header {
        for name in TABLE_KEY_COLUMNS.iter().chain(&["bin", "lower", "upper"]) {
            text.extend_from_slice(name.as_bytes());
            text.push(sep);
        }
        match column {
            Some(x) => push_u64(text, x as u64),
            None => {
                for line in 0..h.lines {
                    if line > 0 {
                        text.push(sep);
                    }
                    push_u64(text, line as u64);
                }
            }
        }
        text.push(b'\n');
    }
    let rows: Vec<&[u32]> = h.counts.chunks_exact(h.lines.max(1)).take(h.bins).collect();
    // A 4K frame's table is a million numbers, more than one core formats in a frame period of a
    // fast stream: large tables are formatted in bands of bins on the CPU backend's pool, joined in
    // order.
    let bands = parallel::threads().min(8).min(h.counts.len() / (1 << 16)).clamp(1, rows.len().max(1));
    if bands == 1 {
        write_rows(text, op, key, 0, &rows, sep);
        return;
    }
    let per = rows.len().div_ceil(bands);
    let written = parallel::map_parts(&rows, per, |first, band| {
        let mut out = Vec::with_capacity(band.len() * (band[0].len() + 3) * 4);
        write_rows(&mut out, op, key, first, band, sep);
        out
    });
    for band in written {
        text.extend_from_slice(&band);
    }
}

/// The table's rows for bins `first..`, one per slice of counts.
fn write_rows(text: &mut Vec<u8>, op: &ColHistOp, key: &[u8], first: usize, rows: &[&[u32]], sep: u8) {
    for (bin, counts) in (first..).zip(rows) {
        let (low, high) = op.bin_range(bin as u32);
        text.extend_from_slice(key);
        push_u64(text, bin as u64);
        text.push(sep);
        push_u64(text, low as u64);
        text.push(sep);
        push_u64(text, high as u64);
        push_counts(text, counts, sep);
        text.push(b'\n');
    }
}

/// Appends `sep` and the decimal of each count: the bulk of a table, so written into reserved
/// space without a capacity check per byte.
fn push_counts(text: &mut Vec<u8>, counts: &[u32], sep: u8) {
    // A u32 has at most 10 digits.
    text.reserve(counts.len() * 11);
    let spare = &mut text.spare_capacity_mut()[..counts.len() * 11];
    let mut n = 0;
    for &c in counts {
        spare[n].write(sep);
        n += 1 + write_u32(&mut spare[n + 1..n + 11], c);
    }
    // SAFETY: the first `n` bytes of the spare capacity were just written.
    unsafe { text.set_len(text.len() + n) };
}

/// Writes `v` in decimal at the start of `out` (10 bytes); returns how many bytes it took. By hand,
/// not with `itoa` as [`push_u64`]: the counts are the bulk of a table, mostly of one to three
/// digits, and `itoa`'s string, copied here, made colhist of a 4096x3112 frame 2 to 3.5 ms (10 to
/// 15%) more CPU time in the median of 31 runs, with or without a path of its own for one digit.
fn write_u32(out: &mut [std::mem::MaybeUninit<u8>], v: u32) -> usize {
    if v < 10 {
        out[0].write(b'0' + v as u8);
        return 1;
    }
    if v < 100 {
        out[0].write(b'0' + (v / 10) as u8);
        out[1].write(b'0' + (v % 10) as u8);
        return 2;
    }
    let mut digits = [0u8; 10];
    let (mut i, mut v) = (digits.len(), v);
    while v > 0 {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    for (o, &d) in out.iter_mut().zip(&digits[i..]) {
        o.write(d);
    }
    digits.len() - i
}

/// Appends `v` in decimal (a bin, its bounds, a column's number): `format!` per number would
/// dominate.
fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_decimal() {
        let mut out = Vec::new();
        for v in [0u64, 7, 10, 65535, u64::MAX] {
            push_u64(&mut out, v);
            out.push(b' ');
        }
        assert_eq!(out, b"0 7 10 65535 18446744073709551615 ");
        let mut out = b"x".to_vec();
        push_counts(&mut out, &[0, 9, 10, 99, 100, 12345, u32::MAX], b',');
        assert_eq!(out, b"x,0,9,10,99,100,12345,4294967295");
    }
}
