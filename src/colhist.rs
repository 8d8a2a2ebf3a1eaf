use histopipe_cli::{
    Common, Context, Error, Flag, FlagError, Given, OutputFormat, PathTemplate, Product, Tool,
    TABLE_KEY_COLUMNS,
};
use histopipe_frame::{encode_npy_header, Format, Frame, Line, NpyData, Pixels};
use histopipe_ops::angles::Angles;
use histopipe_ops::colhist::{Along, ColHistParams, ColHistSweep, Histograms, Sweep, Through, TurnByTurn};
use histopipe_ops::mask::{Mask, Masked};
use histopipe_ops::range::Outside;
use histopipe_ops::rotate::{Interpolation, RotateBy, RotateParams};
use histopipe_ops::Fill;
use histopipe_ops::{parallel, Op};
use histopipe_plot::{colhist_figure, heatmap_image, ColhistFigure, Counts};

use crate::binning::{bins_flag, classes, range_flag, BinBounds, Binning};
use crate::colour::{Colour, COUNTING};
use crate::fill::{fill_flag, Filling};
use crate::mask::{Masking, MASK};
use crate::plot::{write_figure, Plotting};

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
    /// The table's counts as a NumPy array.
    Npy,
}

/// What `--line` or `--segment` gave: two points (`X0,Y0,X1,Y1`), or with `--angles` one point
/// and the line through it in each direction (`--line X,Y`), or the part of it within a
/// half-length of the point (`--segment X,Y,R`).
#[derive(Debug, Clone, Copy)]
enum Points {
    Two(Line),
    Through { point: (f64, f64), half: f64 },
}

/// The options of the turns `--angles` makes, as `rotate` takes them.
#[derive(Debug, Clone, Default)]
struct Turns {
    angles: Angles,
    interpolation: Interpolation,
    fill: Fill,
    expand: bool,
}

/// `colhist`: a histogram of every column (or row) of each frame.
#[derive(Default)]
pub struct ColHist {
    /// `--rows` and `--count-padding`; its bins are `binning`'s, set in [`Tool::check`].
    params: ColHistParams,
    binning: Binning<u32>,
    colour: Colour,
    along: Option<(Points, bool)>,
    /// `--angles` and the options of its turns; `Some` once `--angles` is given.
    turns: Option<Turns>,
    /// `--bilinear`, `--fill`, `--expand`: taken only with `--angles`.
    interpolation: Interpolation,
    fill: Filling<Fill>,
    expand: bool,
    /// `--format`, if given: csv, tsv, pgm for the matrix image, png for the heatmap.
    format: Option<OutputFormat>,
    output: Output,
    plot: Plotting,
    mask: Masking,
}

histopipe_cli::words! {
    /// `--format`'s words: the tables, the matrix image, the heatmap and the array.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum ColHistFormat {
        Csv = "csv",
        Tsv = "tsv",
        Pgm = "pgm",
        Png = "png",
        Npy = "npy",
    }
}

impl ColHistFormat {
    fn format(self) -> OutputFormat {
        match self {
            ColHistFormat::Csv => OutputFormat::Csv,
            ColHistFormat::Tsv => OutputFormat::Tsv,
            ColHistFormat::Pgm => OutputFormat::Pgm,
            ColHistFormat::Png => OutputFormat::Png,
            ColHistFormat::Npy => OutputFormat::Npy,
        }
    }
}

impl Tool for ColHist {
    const NAME: &'static str = "colhist";
    const HELP: &'static str = "\
colhist: a histogram of every column of each frame, a bins x width matrix of counts.

Integer samples: v goes in bin floor((v - LO) * N / (HI - LO + 1)) of N bins of equal width over
LO..=HI (--range, default 0..=maxval). Float samples: N bins (default 256) over --range (default:
the finite samples' least to greatest), as numpy.histogram(a.astype(float64), bins=N,
range=(LO, HI)) assigns them. Only
pixels of the original image count (through the geometry metadata: pad's border and the corners a
rotation brings in do not); without metadata every pixel counts. With --mask FILE, of those only
the pixels where the mask is non-zero (the mask has the frame's size: after pad and rotate, the
turned frame's; every channel under the same mask; a float frame's default range is theirs):
np.bincount(img[:, x][mask[:, x] > 0]) per column. See docs/colhist.md.

Usage: colhist [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        bins_flag("N bins, 1..=maxval+1 [default: one per value for 8-bit frames, 256 for 16-bit]"),
        range_flag(
            "bin LO..HI only, counting the samples outside in rows below and above [default: 0:maxval; \
             float frames: the finite samples' least to greatest]",
        ),
        COUNTING.flag(
            "luma: colour read as gray (a JPEG's own luma, else OpenCV's BGR2GRAY); each: a histogram \
             per channel (red, green, blue, alpha; gray for gray frames), in a channel column; text \
             and npy output only [default: luma]",
        ),
        Flag::switch("--rows", "a histogram of every row instead (a bins x height matrix)"),
        Flag::switch("--count-padding", "count every pixel, padding included (--mask still applies)"),
        MASK,
        Flag::with_value(
            "--line",
            "X0,Y0,X1,Y1",
            "only the column this line of the original image lies on, all of it; the line must be \
             vertical in the frame (rotate --line first). With --angles, one point X,Y: in each \
             direction, the turned frame's column through it",
        )
        .param("line"),
        Flag::with_value(
            "--segment",
            "X0,Y0,X1,Y1",
            "only that column's pixels between the two points: the rows from the one nearest (X0,Y0) to \
             the one nearest (X1,Y1), both included (halves rounded up); both must be in the frame \
             (rotate --segment first). With --angles, X,Y,R: in each direction, the pixels of the \
             column through (X,Y) within R pixels of it",
        )
        .param("segment"),
        Flag::with_value(
            "--angles",
            "SPEC",
            "the histograms after each turn, as rotate A | colhist for each angle A, from one read of the \
             frame: START:END:STEP (degrees, numpy's arange, END excluded) or a list A,B,C; the table \
             gets an angle column, -o x.npy a uint32 array (angles, bins, columns)",
        ),
        Flag::switch("--bilinear", "with --angles: turn as rotate --bilinear does"),
        fill_flag("V", "with --angles: rotate's --fill, one value 0..maxval [default: 0]"),
        Flag::switch("--expand", "with --angles: turn as rotate --expand does (text output only)"),
        Flag::with_value(
            "--format",
            "F",
            "csv, tsv, pgm, png or npy [default: -o's extension, else csv]; pgm: the matrix of the bins \
             as an image (in -o's container: pgm, pam, tif, raw, or png with --format pgm), bin 0 on \
             top, maxval the largest count (over 65535 clamped); png (or -o x.png, x.ppm): a heatmap to \
             look at, bin 0 at the bottom, counts on a log scale through viridis, one image per output \
             file; npy (or -o x.npy): the table's counts as a uint64 array, one frame a file",
        )
        .one_of(ColHistFormat::NAMES),
        Plotting::flag(
            "also draw the figure, the heatmap with axes and a colour bar, to FILE (.svg or .png); FILE \
             takes -o's fields ({stem}, {name}, {dir}, {i}, {n}) for one figure per frame, else the \
             first frame's only",
        ),
    ];
    const HELP_END: &'static str = "\
The text formats write one table for the output: a header 'frame,source,bin,lower,upper,' and
the column (or row) numbers (with --line or --segment, the one column's), once per output, then
per frame one row per bin: the frame's number in the stream, its file (- for standard input), the
channel (with --colour each), the bin's number, its lowest and highest value (float frames: its
edges, [lower, upper)), its counts. With --range, and for float frames, five more rows follow the
bins: below, above, nans, neg_inf, pos_inf in the bin column, lower and upper empty. Frames of different widths give rows of
different lengths: give -o a field (-o out/{stem}.csv) for one table each.

With --angles SPEC, for every angle A: what rotate A [--bilinear --fill V --expand] | colhist
writes, with an angle column after source (colour made gray as colhist reads rotate's output); an
.npy output is a uint32 cube (angles, bins, columns). With --line X,Y (--segment X,Y,R): in each
direction the turned frame's column through the point (within R of it). The counts are held
whole: more than --max-pixels counters are refused.

Example:
  pad a.pgm | rotate --line 0,0,400,400 | colhist --line 0,0,400,400 -o line.csv
  pad a.pgm | colhist --angles 0:180:5 -o cube.npy
  pad a.jpg | rotate --segment 100,100,300,250 | colhist --segment 100,100,300,250
  pad scans/*.pgm | rotate 30 | colhist -o out/{stem}.csv";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--rows" => self.params.rows = true,
            "--colour" => self.colour = COUNTING.parse(given)?,
            "--count-padding" => self.params.count_padding = true,
            "--line" | "--segment" => {
                let segment = given.is("--segment");
                if self.along.is_some_and(|(_, s)| s != segment) {
                    return Err(Error::usage("give --line or --segment, not both").into());
                }
                let numbers: Option<Vec<f64>> = given
                    .text()?
                    .split(',')
                    .map(|t| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
                    .collect();
                let points = match (numbers.as_deref(), segment) {
                    (Some(&[x, y]), false) => Points::Through { point: (x, y), half: 1.0 },
                    (Some(&[x, y, r]), true) if r > 0.0 => Points::Through { point: (x, y), half: r },
                    (Some(&[_, _, _]), true) => {
                        return Err("X,Y,R: the half-length R must be more than 0".into())
                    }
                    _ => Points::Two(given.parse()?),
                };
                self.along = Some((points, segment));
            }
            "--angles" => {
                let angles: Angles = given.text()?.parse()?;
                self.turns = Some(Turns { angles, ..Turns::default() });
            }
            "--bilinear" => self.interpolation = Interpolation::Bilinear,
            "--expand" => self.expand = true,
            "--format" => {
                self.format = Some(ColHistFormat::parse_word(given.text()?, "format")?.format());
            }
            _ => {
                return Ok(self.binning.option(given)?
                    || self.mask.option(given)?
                    || self.fill.option(given)?
                    || self.plot.option(given)?)
            }
        }
        Ok(true)
    }

    fn check(&mut self, common: &Common) -> Result<(), Error> {
        self.params.bins = self.binning.bins();
        self.check_turns()?;
        self.plot.check(self.colour == Colour::Each)?;
        if let (Some((_, segment)), true) = (&self.along, self.params.rows) {
            return Err(Error::usage(format!(
                "{} takes one column: it cannot be combined with --rows",
                option_of(*segment)
            )));
        }
        self.mask.check(common)
    }

    fn product(&mut self, format: Option<OutputFormat>) -> Result<Product, Error> {
        use OutputFormat as F;
        self.output = match (self.format, format) {
            // -o x.npy is the table's counts, unless --format pgm asks for the matrix image.
            (Some(F::Npy) | None, Some(F::Npy)) | (Some(F::Npy), None) => Output::Npy,
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
        if self.turns.is_some() && matches!(self.output, Output::Image | Output::Heatmap { .. }) {
            return Err(Error::usage("--angles writes a table (csv, tsv) or a cube (npy), not an image"));
        }
        if self.turns.as_ref().is_some_and(|t| t.expand) && self.output == Output::Npy {
            return Err(Error::usage(
                "--expand gives every angle its own size, and an .npy cube has one: write a table (csv, tsv)",
            ));
        }
        if self.colour == Colour::Each && matches!(self.output, Output::Image | Output::Heatmap { .. }) {
            return Err(Error::usage(
                "--colour each writes a table (csv, tsv or npy): the matrix image and the heatmap show one \
                 channel",
            ));
        }
        Ok(match self.output {
            Output::Image => Product::Frames,
            Output::Heatmap { .. } => Product::Drawing,
            Output::Csv | Output::Tsv | Output::Npy => Product::Table,
        })
    }

    fn side_files(&self) -> Vec<PathTemplate> {
        self.plot.side_files()
    }

    /// With `--angles`, colour is read as `rotate` reads it: see [`ColHist::sweep_frame`].
    fn reads_gray(&self) -> bool {
        self.colour == Colour::Luma && self.turns.is_none()
    }

    const FLOAT: bool = true;

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        if let Some(turns) = &self.turns {
            return self.sweep_frame(cx, turns, frame);
        }
        let (width, height, maxval, source) = (frame.width, frame.height, frame.maxval, frame.source.clone());
        let float = !frame.depth().is_integer();
        let mask = self.mask.fit(cx, &frame)?;
        let mut channels = Vec::new();
        for (name, plane) in self.colour.counted(frame) {
            channels.push(self.channel(cx, name, plane, mask)?);
        }
        let first = &channels[0];
        if let Some((plot, path)) = self.plot.target(cx) {
            let bins = first.bins();
            let (ranges, values, value_name): (Vec<(u32, u32)>, _, _) = match &first.bounds {
                b if b.integer => {
                    let r: Vec<(u32, u32)> = b.bounds.iter().map(|&(l, h)| (l as u32, h as u32)).collect();
                    let values = r[0].0..r[r.len() - 1].1 + 1;
                    (r, values, "sample value")
                }
                _ => ((0..bins.bins as u32).map(|b| (b, b)).collect(), 0..bins.bins as u32, "bin"),
            };
            let depth = if float { "float".to_owned() } else { format!("maxval {maxval}") };
            let range = match (&first.bounds, float) {
                (b, true) => format!(" over {:.6}..{:.6}", b.bounds[0].0, b.bounds[b.bounds.len() - 1].1),
                _ => String::new(),
            };
            let figure = ColhistFigure {
                counts: bins,
                bin_ranges: &ranges,
                values,
                value_name,
                first_line: first.column.unwrap_or(0),
                line_name: if self.params.rows { "row" } else { "column" },
                title: format!(
                    "colhist: frame {}, {width}x{height}, {depth}, {} bins{range}, {}",
                    cx.index, bins.bins, first.what
                ),
            };
            write_figure(cx, &path, colhist_figure(plot.format, &figure))?;
        }
        match self.output {
            Output::Image => {
                let mut image = matrix_image(&first.bins());
                image.source = source;
                cx.write(image)
            }
            Output::Heatmap { png } => {
                if !cx.starts_output() {
                    return Err(cx.invalid(
                        "a heatmap is one image, and this output would get more than one frame's: \
                         give -o a field for one image each (-o out/{stem}.png), or use --plot with a field",
                    ));
                }
                let image = heatmap_image(&first.bins());
                histopipe_frame::write_rgb8(cx.text(), image.width, image.height, &image.rgb, png)
                    .map_err(|e| cx.invalid(format!("cannot encode the heatmap: {e}")))
            }
            Output::Npy => {
                if !cx.starts_output() {
                    return Err(cx.invalid(
                        "an .npy file holds one frame's table, and this output would get more than one: \
                         give -o a field (-o out/{stem}.npy) for one file each",
                    ));
                }
                let (rows, lines) = (first.h.bins, first.h.lines);
                let shape = match first.name {
                    Some(_) => vec![channels.len(), rows, lines],
                    None => vec![rows, lines],
                };
                // The header, then the counts widened to uint64 a piece at a time, each piece
                // handed to the writer as it is made: never a second copy of the counts.
                cx.send_bytes(encode_npy_header(&shape, &NpyData::U64(&[])));
                for c in &channels {
                    for piece in c.h.counts.chunks(PIECE_COUNTS) {
                        cx.send_bytes(piece.iter().flat_map(|&n| u64::from(n).to_le_bytes()).collect());
                    }
                }
                Ok(())
            }
            Output::Csv | Output::Tsv => {
                let sep = if self.output == Output::Csv { b',' } else { b'\t' };
                let key = cx.row_key(sep as char);
                let mut header = cx.starts_output();
                for c in &channels {
                    write_table(cx, c, header, key.as_bytes(), sep);
                    header = false;
                }
                Ok(())
            }
        }
    }
}

/// One channel's counts, as the table has them.
struct Counted {
    /// The channel's name under --colour each.
    name: Option<&'static str>,
    /// Every row of the table: the bins, then (with an outside) below, above, nans, neg_inf and
    /// pos_inf.
    h: Histograms,
    /// The bins' rows.
    bins: usize,
    bounds: BinBounds,
    /// The one column of --line or --segment.
    column: Option<usize>,
    /// What was counted, for the figure's title.
    what: String,
}

impl Counted {
    /// The bins' rows alone (not the outside classes'), where they are.
    fn bins(&self) -> Counts<'_> {
        Counts { bins: self.bins, lines: self.h.lines, counts: &self.h.counts[..self.bins * self.h.lines] }
    }

    /// Row `r`'s first fields: the bin's number and bounds, or an outside class's name and two
    /// empty fields.
    fn label(&self, r: usize, sep: u8) -> Vec<u8> {
        let sep = sep as char;
        match self.bounds.bounds.get(r) {
            Some(&(l, h)) => format!("{r}{sep}{}{sep}{}", self.bounds.show(l), self.bounds.show(h)),
            None => format!("{}{sep}{sep}", Outside::ALL[r - self.bins].name()),
        }
        .into_bytes()
    }
}

impl ColHist {
    /// The counts of one channel, `plane`: over its index frame with a range or float samples;
    /// of the pixels `mask` selects, if given.
    fn channel(
        &self,
        cx: &mut Context<'_>,
        name: Option<&'static str>,
        plane: Frame,
        mask: Option<Mask<'_>>,
    ) -> Result<Counted, Error> {
        let int_default = self.binning.range().map(|(lo, hi)| (hi - lo + 1.0).min(256.0) as usize);
        let bins = match plane.depth().is_integer() {
            true => self.params.bins.map(|b| b as usize).or(int_default),
            false => self.params.bins.map(|b| b as usize),
        };
        let (frame, params, layout, bounds) = match classes(cx, &plane, self.binning.range(), bins, mask)? {
            None => (plane, self.params, None, None),
            Some(c) => {
                let params = ColHistParams { bins: Some(c.layout.classes() as u32), ..self.params };
                (c.frame, params, Some(c.layout), Some(c.bounds))
            }
        };
        let op = params.for_frame(&frame).map_err(|e| cx.op_error(e))?;
        // The matrix of counts, as large as the image it may become, is refused before it is made.
        cx.check_pixels(if op.rows { frame.height } else { frame.width }, op.bins as usize)?;
        let column = match &self.along {
            Some((Points::Two(points), segment)) => Some(
                Along { points: *points, segment: *segment }.column(&frame).map_err(|e| cx.op_error(e))?,
            ),
            Some((Points::Through { .. }, _)) => unreachable!("refused without --angles"),
            None => None,
        };
        let h = match (&column, mask) {
            (None, None) => cx.run(&op, &frame)?,
            (None, Some(mask)) => cx.run(&Masked { op: &op, mask }, &frame)?,
            // Only the column's pixels (the mask's, if given) go to the backend, as a frame of one
            // column.
            (Some(c), _) => match op.column(&frame, c.x, c.rows.clone(), inside(cx, mask, &frame)?) {
                (_, pixels) if pixels.height == 0 => {
                    Histograms { bins: op.bins as usize, lines: 1, counts: vec![0; op.bins as usize] }
                }
                (one, pixels) => cx.run(&one, &pixels)?,
            },
        };
        let what = match (&column, self.along.is_some_and(|(_, segment)| segment), op.rows) {
            (Some(c), true, _) => format!("column {}, rows {} to {}", c.x, c.rows.start, c.rows.end - 1),
            (Some(c), false, _) => format!("column {}", c.x),
            (None, _, true) => "rows".to_owned(),
            (None, _, false) => "columns".to_owned(),
        };
        let column = column.map(|c| c.x);
        let Some(layout) = layout else {
            let bounds = (0..op.bins).map(|b| op.bin_range(b)).map(|(l, h)| (l as f64, h as f64)).collect();
            let bins = h.bins;
            return Ok(Counted { name, h, bins, bounds: BinBounds { integer: true, bounds }, column, what });
        };
        // Every outside class gets its row, zeros where the layout has none.
        let lines = h.lines;
        let rows: Vec<&[u32]> = h.counts.chunks_exact(lines.max(1)).take(h.bins).collect();
        let (bin_rows, outside) = layout.split(&rows);
        let zeros = vec![0u32; lines];
        let mut counts = Vec::with_capacity((layout.bins + Outside::ALL.len()) * lines);
        for row in bin_rows.iter().chain(outside.iter()) {
            counts.extend_from_slice(if row.is_empty() { &zeros } else { row });
        }
        let h = Histograms { bins: layout.bins + Outside::ALL.len(), lines, counts };
        Ok(Counted { name, h, bins: layout.bins, bounds: bounds.expect("with the layout"), column, what })
    }
}

/// The option that gives a line (`--line`) or a segment (`--segment`).
fn option_of(segment: bool) -> &'static str {
    if segment {
        "--segment"
    } else {
        "--line"
    }
}

/// Refuses a sweep whose counts, `bins` x `lines` a turn and held whole, are over --max-pixels
/// counters.
fn check_counters(cx: &Context<'_>, bins: usize, lines: &[usize]) -> Result<(), Error> {
    let counters = lines.iter().fold(0u128, |n, &l| n + (bins * l) as u128);
    if counters > cx.common.max_pixels as u128 {
        let widest = lines.iter().max().copied().unwrap_or(0);
        return Err(cx.invalid(format!(
            "the counts would be {} angles x {bins} bins x {widest} lines, {counters} counters ({} bytes), \
             over the limit of {} (--max-pixels): give fewer angles or bins",
            lines.len(),
            counters * 4,
            cx.common.max_pixels
        )));
    }
    Ok(())
}

impl ColHist {
    /// Moves the turns' options into [`Turns`] and refuses what `--angles` does not take, or
    /// what needs it.
    fn check_turns(&mut self) -> Result<(), Error> {
        let Some(turns) = &mut self.turns else {
            let rotate = [
                (self.interpolation == Interpolation::Bilinear, "--bilinear"),
                (self.fill.value().is_some(), "--fill"),
                (self.expand, "--expand"),
            ];
            if let Some((_, name)) = rotate.iter().find(|(given, _)| *given) {
                return Err(Error::usage(format!(
                    "{name} is an option of the turns of --angles: give --angles, or turn first with rotate {name}"
                )));
            }
            if let Some((Points::Through { .. }, segment)) = self.along {
                return Err(Error::usage(format!(
                    "{} takes two points X0,Y0,X1,Y1 of the original; one point is for --angles",
                    option_of(segment)
                )));
            }
            return Ok(());
        };
        turns.interpolation = self.interpolation;
        turns.fill = self.fill.value().copied().unwrap_or_default();
        turns.expand = self.expand;
        if let Some((Points::Two(_), segment)) = self.along {
            return Err(Error::usage(format!(
                "with --angles, {} takes {}",
                option_of(segment),
                if segment {
                    "X,Y,R: a point of the original and a half-length"
                } else {
                    "X,Y: a point of the original, the line through it in each direction"
                }
            )));
        }
        let refused = [
            (self.binning.range().is_some(), "--range"),
            (self.colour == Colour::Each, "--colour each"),
            (self.mask.is_given(), "--mask"),
            (self.plot.is_given(), "--plot"),
        ];
        if let Some((_, name)) = refused.iter().find(|(given, _)| *given) {
            return Err(Error::usage(format!(
                "--angles cannot be combined with {name}: loop over rotate A | colhist {name} for that"
            )));
        }
        Ok(())
    }

    /// `--angles`: the counts after each turn of `frame`, equal to those `colhist` gives of
    /// `rotate A`'s output. Colour is read as `rotate` reads it and made gray as `colhist` reads
    /// `rotate`'s output (OpenCV's BGR2GRAY, alpha dropped): before the turns for nearest
    /// neighbour (a turn moves pixels and fills with one value v, whose gray is v, so the two
    /// orders give the same samples), after each turn for bilinear (which blends each channel).
    fn sweep_frame(&self, cx: &mut Context<'_>, turns: &Turns, frame: Frame) -> Result<(), Error> {
        if !frame.depth().is_integer() {
            return Err(cx.invalid(
                "--angles takes integer frames, and this one is float: make it integers first with stretch",
            ));
        }
        let colour_turns = frame.channels.is_colour() && turns.interpolation == Interpolation::Bilinear;
        let frame = if colour_turns { frame } else { histopipe_frame::colour::into_gray(frame) };
        let sweep = self.sweep_of(cx, turns, &frame)?;
        // The whole sweep's work, though it is counted a turn or a group of turns at a time.
        cx.check_work(&sweep.work(&frame))?;
        let ops = sweep.counts(&frame).map_err(|e| cx.op_error(e))?;
        let bins = ops.first().map_or(0, |op| op.bins as usize);
        // The counts are held whole (and written after): refused beyond --max-pixels counters.
        let lines: Vec<usize> = match self.along {
            Some(_) => vec![1; ops.len()],
            None => sweep.turns.iter().zip(&ops).map(|(r, op)| op.lines(r.out_width, r.out_height)).collect(),
        };
        check_counters(cx, bins, &lines)?;
        if self.output == Output::Npy && !cx.starts_output() {
            return Err(cx.invalid(
                "an .npy file holds one frame's cube, and this output would get more than one: \
                 give -o a field (-o out/{stem}.npy) for one file each",
            ));
        }
        let labels = self.bin_labels(&ops[0], bins);
        self.sweep_header(cx, bins, &lines);
        if self.along.is_none() && !colour_turns {
            // On the cores, each turn's output handed to the writer as soon as it and those
            // before it are counted, while the next are: a long cube is written as it is made.
            let streamed = cx.on_cores(|cx| {
                sweep.cpu_each(&frame, |first, counted| self.sweep_rows(cx, turns, counted, first, &labels))
            });
            if let Some(done) = streamed {
                return done.map_err(|e| cx.op_error(e));
            }
            // Elsewhere (the GPU, or auto's choice frame by frame), the turns a group at a time.
            let per_turn = bins * lines.iter().max().copied().unwrap_or(0) * 4;
            let mut first = 0;
            for part in sweep.groups(&frame, per_turn) {
                let turns_of_part = part.turns.len();
                let counted = cx.run(&part, &frame)?;
                self.sweep_rows(cx, turns, counted, first, &labels);
                first += turns_of_part;
            }
            return Ok(());
        }
        // A turn at a time (colour turned bilinearly, or one column of each turn): see TurnByTurn.
        let through = match self.along {
            Some((Points::Through { point, half }, segment)) => Some(Through { point, half, segment }),
            _ => None,
        };
        let counted = cx.run(&TurnByTurn { sweep, through }, &frame)?;
        self.sweep_rows(cx, turns, counted, 0, &labels);
        Ok(())
    }

    /// The sweep of `frame`: a turn per angle, made as `rotate` makes it, each turned frame
    /// refused beyond --max-pixels.
    fn sweep_of(&self, cx: &Context<'_>, turns: &Turns, frame: &Frame) -> Result<ColHistSweep, Error> {
        let by = |a: f64| RotateParams {
            by: RotateBy::Degrees(a),
            interpolation: turns.interpolation,
            fill: turns.fill,
            expand: turns.expand,
        };
        let rotations = turns
            .angles
            .iter()
            .map(|a| by(a).for_frame(frame))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| cx.op_error(e))?;
        for r in &rotations {
            cx.check_pixels(r.out_width, r.out_height)?;
        }
        Ok(ColHistSweep { turns: rotations, params: self.params })
    }

    /// Each bin's number and bounds, as every turn's rows give them.
    fn bin_labels(&self, op: &histopipe_ops::colhist::ColHist, bins: usize) -> Vec<Vec<u8>> {
        (0..bins as u32)
            .map(|b| {
                let (l, h) = op.bin_range(b);
                let mut label = Vec::new();
                for (k, v) in [b, l, h].into_iter().enumerate() {
                    if k > 0 {
                        label.push(if self.output == Output::Tsv { b'\t' } else { b',' });
                    }
                    push_u64(&mut label, v as u64);
                }
                label
            })
            .collect()
    }

    /// The sweep's header, where the output starts: the cube's (all turns' `lines` equal), or
    /// the table's.
    fn sweep_header(&self, cx: &mut Context<'_>, bins: usize, lines: &[usize]) {
        if self.output == Output::Npy {
            let shape = [lines.len(), bins, lines.first().copied().unwrap_or(0)];
            cx.text().extend_from_slice(&encode_npy_header(&shape, &NpyData::U32(&[])));
            return;
        }
        if !cx.starts_output() {
            return;
        }
        let sep = if self.output == Output::Tsv { b'\t' } else { b',' };
        let header = cx.text();
        for name in TABLE_KEY_COLUMNS.iter().chain(&["angle", "bin", "lower", "upper"]) {
            header.extend_from_slice(name.as_bytes());
            header.push(sep);
        }
        match self.along {
            Some(_) => header.extend_from_slice(b"count"),
            None => {
                for line in 0..lines.first().copied().unwrap_or(0) {
                    if line > 0 {
                        header.push(sep);
                    }
                    push_u64(header, line as u64);
                }
            }
        }
        header.push(b'\n');
    }

    /// The cube's bytes or the table's rows of the turns `counted` holds, turns `first..` of
    /// the sweep, handed to the writer as they are made ([`Context::send_bytes`]).
    fn sweep_rows(
        &self,
        cx: &mut Context<'_>,
        turns: &Turns,
        counted: Sweep,
        first: usize,
        labels: &[Vec<u8>],
    ) {
        if self.output == Output::Npy {
            // The turns' counts in order, the cube's next bytes as they are: copied into bytes
            // (a turn per task), they had held up every group of turns by a few milliseconds.
            cx.send_words(counted.counts);
            return;
        }
        let bins = counted.bins;
        let indices: Vec<usize> = (0..counted.lines.len()).collect();
        let sep = if self.output == Output::Tsv { b'\t' } else { b',' };
        let key = cx.row_key(sep as char);
        // Formatted a turn per task on the pool, a few turns per thread at a time, each turn's
        // text handed to the output as it is: never the whole table in one buffer.
        for group in indices.chunks(4 * parallel::threads()) {
            let texts = parallel::map_parts(group, 1, |_, turn| {
                let i = turn[0];
                let mut key = key.as_bytes().to_vec();
                key.extend_from_slice(turns.angles.0[first + i].to_string().as_bytes());
                key.push(sep);
                let (counts, lines) = (counted.turn(i), counted.lines[i].max(1));
                let mut out = Vec::with_capacity(counts.len() * 3 + bins * (key.len() + 16));
                for (row, label) in counts.chunks_exact(lines).zip(labels) {
                    out.extend_from_slice(&key);
                    out.extend_from_slice(label);
                    push_counts(&mut out, row, sep);
                    out.push(b'\n');
                }
                out
            });
            for text in texts {
                cx.send_bytes(text);
            }
        }
    }
}

/// The counts as an image, one row per bin: samples are the counts (clamped to 65535) and maxval
/// the largest of them (at least 1), so viewers show the matrix stretched to its peak; 8-bit when
/// the peak is at most 255, as PGM has it. It keeps the frame's source, not its geometry: its
/// pixels are no place of the original.
fn matrix_image(h: &Counts) -> Frame {
    let samples: Vec<u16> = h.counts.iter().map(|&c| c.min(65535) as u16).collect();
    let maxval = samples.iter().copied().max().unwrap_or(0).max(1);
    let pixels = if maxval <= 255 {
        Pixels::U8(samples.iter().map(|&s| s as u8).collect())
    } else {
        Pixels::U16(samples.into())
    };
    let mut f = Frame::new(h.lines, h.bins, maxval, pixels);
    f.format = Format::Pgm;
    f
}

/// The table of one channel's counts `c`: the header line if `header`, then one row per bin
/// (and outside class), each starting with `key` (the frame's number and source, with their
/// separators) and the channel's name.
fn write_table(cx: &mut Context<'_>, c: &Counted, header: bool, key: &[u8], sep: u8) {
    let h = &c.h;
    let text = cx.text();
    if header {
        let channel: &[&str] = if c.name.is_some() { &["channel"] } else { &[] };
        for name in TABLE_KEY_COLUMNS.iter().chain(channel).chain(&["bin", "lower", "upper"]) {
            text.extend_from_slice(name.as_bytes());
            text.push(sep);
        }
        match c.column {
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
    let mut key = key.to_vec();
    if let Some(name) = c.name {
        key.extend_from_slice(name.as_bytes());
        key.push(sep);
    }
    let key = &key[..];
    let rows: Vec<&[u32]> = h.counts.chunks_exact(h.lines.max(1)).take(h.bins).collect();
    // A 4K frame's table is a million numbers, more than one core formats in a frame period of a
    // fast stream: large tables are formatted in bands of bins on the CPU backend's pool, each
    // band handed to the writer as it is (a band's text at most [`PIECE_COUNTS`] counts, a group
    // of bands one a thread at a time), so the table is never held whole beside its counts.
    let bands = parallel::threads().min(8).min(h.counts.len() / (1 << 16)).clamp(1, rows.len().max(1));
    if bands == 1 {
        write_rows(text, c, key, 0, &rows, sep);
        return;
    }
    let per = rows.len().div_ceil(bands).min(PIECE_COUNTS / h.lines.max(1)).max(1);
    for (g, group) in rows.chunks(per * bands).enumerate() {
        let written = parallel::map_parts(group, per, |first, band| {
            let mut out = Vec::new();
            write_rows(&mut out, c, key, g * per * bands + first, band, sep);
            out
        });
        for band in written {
            cx.send_bytes(band);
        }
    }
}

/// Counts formatted as a table's rows, or widened for `.npy`, in one piece handed to the writer:
/// 2^20, 2 to 11 MiB of text, 8 MiB of uint64.
const PIECE_COUNTS: usize = 1 << 20;

/// The table's rows `first..`, one per slice of counts.
fn write_rows(text: &mut Vec<u8>, c: &Counted, key: &[u8], first: usize, rows: &[&[u32]], sep: u8) {
    for (row, counts) in (first..).zip(rows) {
        text.extend_from_slice(key);
        text.extend_from_slice(&c.label(row, sep));
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

/// The bytes of `mask` for `frame` (the index frame of a plane the mask was fitted to).
fn inside<'m>(cx: &Context<'_>, mask: Option<Mask<'m>>, frame: &Frame) -> Result<Option<&'m [u8]>, Error> {
    mask.map(|m| m.fit(frame)).transpose().map_err(|e| cx.op_error(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each word `--format` takes is the output format of that name.
    #[test]
    fn the_formats_are_named_by_their_words() {
        for (f, word) in ColHistFormat::ALL.iter().zip(ColHistFormat::NAMES) {
            assert_eq!(f.format().name(), *word);
        }
        let e = ColHistFormat::parse_word("jpg", "format").unwrap_err();
        assert_eq!(e, "unknown format 'jpg' (csv, tsv, pgm, png or npy)");
    }

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
