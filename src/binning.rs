//! What the histogram tools (`cdf`, `colhist`) share: the `--bins` and `--range` group
//! ([`Binning`]), and how a frame's channels are binned (crates/ops/src/range.rs).

use std::fmt::Display;
use std::str::FromStr;

use histopipe_cli::{Context, Error, Flag, FlagError, Given};
use histopipe_frame::{Frame, Pixels};
use histopipe_ops::mask::Mask;
use histopipe_ops::range::{FloatClasses, FloatRange, IntRange, Layout};

/// `--bins`, with the tool's `help` (what its default is).
pub const fn bins_flag(help: &'static str) -> Flag {
    Flag::with_value("--bins", "N", help).param("bins")
}

/// `--range`, with the tool's `help` (where the samples outside it go).
pub const fn range_flag(help: &'static str) -> Flag {
    Flag::with_value("--range", "LO:HI", help).param("range")
}

/// `--bins N` and `--range LO:HI`, the group `cdf` and `colhist` hold: N, at least 1, of the
/// tool's number type `N` (its largest is the tool's limit: `usize` for cdf, `u32` for colhist),
/// and the range ([`parse_range`]). Nothing is checked before any input: the bins a frame may
/// have depend on its maxval, which the operations check ([`classes`], the ops' `Bins`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Binning<N> {
    bins: Option<N>,
    range: Option<(f64, f64)>,
}

impl<N: FromStr + Default + PartialEq + Copy> Binning<N>
where
    N::Err: Display,
{
    /// Takes `--bins` or `--range`; `Ok(false)` for another option.
    pub fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--bins" => {
                let n: N = given.parse()?;
                if n == N::default() {
                    return Err("must be at least 1".into());
                }
                self.bins = Some(n);
            }
            "--range" => self.range = Some(parse_range(given)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `--bins`, if given.
    pub fn bins(&self) -> Option<N> {
        self.bins
    }

    /// `--range`, if given.
    pub fn range(&self) -> Option<(f64, f64)> {
        self.range
    }
}

/// `--range LO:HI`'s two numbers.
fn parse_range(given: &Given) -> Result<(f64, f64), FlagError> {
    let text = given.text()?;
    let (lo, hi) = text.split_once(':').ok_or("give LO:HI, as in 0:255 or -1.5:2")?;
    let number = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    match (number(lo), number(hi)) {
        (Some(lo), Some(hi)) if lo < hi || (lo == hi && lo.fract() == 0.0) => Ok((lo, hi)),
        (Some(_), Some(_)) => Err("LO must be under HI".into()),
        _ => Err(format!("bad range '{text}': two finite numbers LO:HI").into()),
    }
}

/// The bins of one channel as the tables show them.
#[derive(Debug, Clone)]
pub struct BinBounds {
    /// Whole values, each bin's lowest and highest (inclusive); else float edges, each bin
    /// [lower, upper) (the last closed).
    pub integer: bool,
    pub bounds: Vec<(f64, f64)>,
}

impl BinBounds {
    /// A bound as the text tables write it.
    pub fn show(&self, v: f64) -> String {
        if self.integer {
            (v as u64).to_string()
        } else {
            format!("{v:?}")
        }
    }

    /// The figure's span of values and each bin's drawn interval: whole values v as v - 0.5..v + 0.5.
    pub fn drawn(&self) -> (std::ops::Range<f64>, Vec<(f64, f64)>) {
        let pad = if self.integer { 0.5 } else { 0.0 };
        let bins: Vec<(f64, f64)> = self.bounds.iter().map(|&(l, h)| (l - pad, h + pad)).collect();
        let span = bins.first().map_or(0.0, |b| b.0)..bins.last().map_or(1.0, |b| b.1);
        (span, bins)
    }
}

/// A channel's index frame (crates/ops/src/range.rs), its layout and its bins.
pub struct Classes {
    pub frame: Frame,
    pub layout: Layout,
    pub bounds: BinBounds,
}

/// The index frame of `plane` for `--range` (`range`) and `--bins` (`bins`), or `None` for the
/// integer frames without a range, which keep the bins over 0..maxval. A float frame's default
/// range is that of the samples `mask` selects (every sample without one).
pub fn classes(
    cx: &mut Context<'_>,
    plane: &Frame,
    range: Option<(f64, f64)>,
    bins: Option<usize>,
    mask: Option<Mask<'_>>,
) -> Result<Option<Classes>, Error> {
    if let Pixels::F32(v) = &plane.pixels {
        let r = match mask.map(|m| m.inside()) {
            Some(mask) if range.is_none() => {
                let inside: Vec<f32> = v.iter().zip(mask).filter(|(_, &m)| m != 0).map(|(&s, _)| s).collect();
                FloatRange::new(range, bins, &inside)
            }
            _ => FloatRange::new(range, bins, v),
        }
        .map_err(|e| cx.op_error(e))?;
        let bounds = (0..r.count()).map(|b| (r.edge(b), r.edge(b + 1))).collect();
        let frame = cx.run(&FloatClasses { range: r }, plane)?;
        return Ok(Some(Classes { frame, layout: r.layout(), bounds: BinBounds { integer: false, bounds } }));
    }
    let Some((lo, hi)) = range else { return Ok(None) };
    let r = IntRange::new(lo, hi, bins).map_err(|e| cx.op_error(e))?;
    let (frame, layout) = r.index_frame(plane).map_err(|e| cx.op_error(e))?;
    let bounds = (0..r.count()).map(|b| r.range(b)).map(|(l, h)| (l as f64, h as f64)).collect();
    Ok(Some(Classes { frame, layout, bounds: BinBounds { integer: true, bounds } }))
}
