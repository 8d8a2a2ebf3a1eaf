//! `colhist`: a histogram of every column (or row) of a frame, the `Histogram[bin][column]` matrix
//! of the published system.
//!
//! Sample v falls in bin floor(v N / (maxval + 1)) of N equal-width bins (integer arithmetic:
//! v N < 2^32 for every 16-bit sample and N <= 65536). Only data pixels are counted: pixels whose
//! centre the frame's geometry maps into the original ([`Geometry::is_original`]), unless the
//! padding is asked for too or the frame has no geometry. The GPU evaluates that test with the
//! same `f64` operations in the same order, so both backends count the same pixels.
//! [`Masked`]`<&ColHist>` counts, of those, only the pixels whose byte in a mask of the frame's
//! size is non-zero (`colhist --mask`): both backends read the same byte per pixel.
//!
//! On the GPU each block keeps the histograms of a tile of lines (columns, or rows) in shared
//! memory with shared atomics, then adds its non-zero counts to the global matrix; with too many
//! bins for even one line's histogram in shared memory it counts into global memory directly.
//!
//! The operation's parts: this module (the parameters, the op and its counts), `cpu` (the
//! reference: lines split over the pool's threads, counted in strips of columns or row by row),
//! `strips` (its fast path for 8-bit columns, in cache-sized strips, groups and bands), [`gpu`]
//! (the device plan and its kernels' launch shapes), [`sweep`] (the counts after each of many turns
//! of one frame, `colhist --angles`), `along` (the one column `--line` or `--segment` picks).

use std::ops::Range;

use histopipe_frame::{Frame, Geometry, Pixels};

use crate::bins::Bins;
use crate::mask::Masked;
use crate::{with_samples, Gpu, Op, OpError};

mod along;
mod cpu;
mod fused;
pub mod gpu;
mod strips;
pub mod sweep;
#[cfg(test)]
mod tests;

pub use along::{Along, Column};
pub use gpu::ColHistPlan;
pub use sweep::{ColHistSweep, ColHistSweepPlan, Sweep, Through, TurnByTurn};

/// The default number of bins: one per value for 8-bit frames, 256 for 16-bit ones.
pub fn default_bins(maxval: u16) -> u32 {
    (maxval as u32 + 1).min(256)
}

/// The bin of sample `v` among `bins` over 0..=maxval ([`Bins::of`]).
pub fn bin_of(v: u32, bins: u32, maxval: u16) -> u32 {
    Bins { count: bins, levels: maxval as u32 + 1 }.of(v) as u32
}

/// `colhist`'s parameters, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColHistParams {
    /// `None`: [`default_bins`].
    pub bins: Option<u32>,
    /// Histograms of rows instead of columns.
    pub rows: bool,
    /// Count every pixel, not only the original's.
    pub count_padding: bool,
}

impl ColHistParams {
    pub fn for_frame(&self, frame: &Frame) -> Result<ColHist, OpError> {
        self.for_shape(frame.width, frame.height, frame.maxval, frame.geometry.as_ref())
    }

    /// [`ColHistParams::for_frame`] of a `width x height` frame of `maxval` and `geometry`, which
    /// need not be made ([`ColHistSweep`]'s turned frames).
    pub fn for_shape(
        &self,
        width: usize,
        height: usize,
        maxval: u16,
        geometry: Option<&Geometry>,
    ) -> Result<ColHist, OpError> {
        if width > u32::MAX as usize || height > u32::MAX as usize {
            return Err(OpError::invalid("frames wider or taller than 2^32 - 1 pixels are not supported"));
        }
        let bins = self.bins.unwrap_or_else(|| default_bins(maxval));
        let bins = Bins::new(Some(bins as usize), maxval)?.count() as u32;
        let mask = if self.count_padding { None } else { geometry.cloned() };
        Ok(ColHist { bins, rows: self.rows, maxval, mask })
    }
}

/// `colhist` for one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ColHist {
    pub bins: u32,
    pub rows: bool,
    pub maxval: u16,
    /// Count only the pixels this geometry maps into the original; `None`: count all.
    pub mask: Option<Geometry>,
}

/// The counts of one frame: `counts[bin * lines + line]`, a line being a column (or a row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histograms {
    pub bins: usize,
    pub lines: usize,
    pub counts: Vec<u32>,
}

impl Histograms {
    pub fn get(&self, bin: usize, line: usize) -> u32 {
        self.counts[bin * self.lines + line]
    }
}

impl ColHist {
    /// The lines counted in a `w x h` frame: its columns, or its rows.
    pub fn lines(&self, w: usize, h: usize) -> usize {
        if self.rows {
            h
        } else {
            w
        }
    }

    /// The bins counted.
    pub fn bins(&self) -> Bins {
        Bins { count: self.bins, levels: self.maxval as u32 + 1 }
    }

    /// The lowest and highest sample value of bin `b` ([`Bins::range`]).
    pub fn bin_range(&self, b: u32) -> (u32, u32) {
        self.bins().range(b as usize)
    }
    /// The part of column `x` of `frame` in rows `rows` that this op counts, as a one-column frame
    /// without geometry, and the op that counts every pixel of it (columns, no mask): its
    /// histogram is column x's of this op over those rows only, on either backend, from the same
    /// kernels (`colhist --line` and `--segment`). A pixel is kept when the mask's
    /// [`Geometry::is_original`] accepts it (every pixel without a mask) and its byte in `pixels`
    /// (a mask of the frame's size, as [`Masked`]`<&ColHist>`'s) is non-zero, if given: the tests
    /// that both backends evaluate, so the counts are those of the whole frame's column x. Keeps the
    /// rows' order; the frame has no rows when none is kept.
    ///
    /// Panics if `x` is not a column of the frame, `rows` goes past its last row, or `pixels` is
    /// not one byte a pixel.
    pub fn column(
        &self,
        frame: &Frame,
        x: usize,
        rows: Range<usize>,
        pixels: Option<&[u8]>,
    ) -> (ColHist, Frame) {
        assert!(x < frame.width && rows.end <= frame.height, "column {x}, rows {rows:?} outside the frame");
        assert!(pixels.is_none_or(|m| m.len() == frame.width * frame.height), "one mask byte a pixel");
        let kept: Vec<usize> = rows
            .filter(|&y| self.mask.as_ref().is_none_or(|g| g.is_original(x as f64, y as f64)))
            .map(|y| y * frame.width + x)
            .filter(|&i| pixels.is_none_or(|m| m[i] != 0))
            .collect();
        let pixels = match &frame.pixels {
            Pixels::U8(v) => Pixels::U8(kept.iter().map(|&i| v[i]).collect()),
            Pixels::U16(v) => Pixels::U16(kept.iter().map(|&i| v[i]).collect()),
            Pixels::F32(v) => Pixels::F32(kept.iter().map(|&i| v[i]).collect()),
        };
        let one = ColHist { rows: false, mask: None, ..self.clone() };
        (one, Frame::new(1, kept.len(), frame.maxval, pixels))
    }

    fn histograms(&self, frame: &Frame, counts: Vec<u32>) -> Histograms {
        Histograms { bins: self.bins as usize, lines: self.lines(frame.width, frame.height), counts }
    }
}

impl Op for ColHist {
    type Output = Histograms;

    fn cpu(&self, frame: &Frame) -> Result<Histograms, OpError> {
        let counts = with_samples!(&frame.pixels, v => self.cpu_counts(frame.width, frame.height, v, None));
        Ok(self.histograms(frame, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Histograms, OpError> {
        let counts =
            with_samples!(&frame.pixels, v => self.gpu_counts(gpu, frame.width, frame.height, v, None)?);
        Ok(self.histograms(frame, counts))
    }
}

/// [`ColHist`] counting only the pixels a mask of the frame's size selects (of those the op's own
/// geometry test passes).
impl Op for Masked<'_, &ColHist> {
    type Output = Histograms;

    fn cpu(&self, frame: &Frame) -> Result<Histograms, OpError> {
        let (op, mask) = (self.op, Some(self.mask.fit(frame)?));
        let counts = with_samples!(&frame.pixels, v => op.cpu_counts(frame.width, frame.height, v, mask));
        Ok(op.histograms(frame, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Histograms, OpError> {
        let (op, mask) = (self.op, Some(self.mask.fit(frame)?));
        let counts =
            with_samples!(&frame.pixels, v => op.gpu_counts(gpu, frame.width, frame.height, v, mask)?);
        Ok(op.histograms(frame, counts))
    }
}
