//! `hough-lines`: the local maxima of an accumulator, as OpenCV orders them, and its CPU peak
//! search.

use std::ops::Range;

use histopipe_frame::{Frame, Pixels};

use super::{HoughLinesPlan, HoughSpace, MIN_PART_CELLS};
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample};

/// One detected line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Distance from the edge map's pixel (0, 0), in pixels (f32, as OpenCV reports it).
    pub rho: f32,
    /// Angle of the normal, radians (f32, as OpenCV reports it).
    pub theta: f32,
    /// The same angle on the nominal degree grid.
    pub theta_degrees: f64,
    pub votes: u32,
    /// The accumulator cell: row (angle) and column (distance).
    pub row: usize,
    pub column: usize,
}

/// `hough-lines`: local maxima of an accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoughLines {
    /// Keep cells with more votes than this.
    pub threshold: u32,
    /// Keep at most this many, the strongest.
    pub top: Option<usize>,
}

impl HoughLines {
    /// The accumulator's counts as u16.
    pub(super) fn counts(frame: &Frame) -> Vec<u16> {
        match &frame.pixels {
            Pixels::U8(v) => v.iter().map(|&s| s as u16).collect(),
            Pixels::U16(v) => v.to_vec(),
            Pixels::F32(v) => v.iter().map(|&s| s as u16).collect(),
        }
    }

    /// A peak's sort key: fewer missing votes first, then the smaller row-major index, which is
    /// OpenCV's order (votes descending, index ascending); plain u64 comparisons sort it.
    fn key(votes: u32, index: usize) -> u64 {
        (u64::from(65535u32.saturating_sub(votes)) << 32) | index as u64
    }

    /// The local maxima over the threshold of `acc` (`rows x cols`), as sort keys, row by row:
    /// bands of rows on the pool's threads, their keys then joined in order.
    fn peaks<T: Sample>(&self, acc: &[T], cols: usize, rows: usize) -> Vec<u64> {
        if cols == 0 || rows == 0 {
            return Vec::new();
        }
        let band = rows.div_ceil(parallel::parts(rows * cols, MIN_PART_CELLS));
        if band >= rows {
            return self.peaks_in(acc, cols, rows, 0..rows);
        }
        use rayon::prelude::*;
        let bands: Vec<Vec<u64>> = (0..rows.div_ceil(band))
            .into_par_iter()
            .map(|k| self.peaks_in(acc, cols, rows, k * band..((k + 1) * band).min(rows)))
            .collect();
        bands.concat()
    }

    /// [`HoughLines::peaks`] of the rows `band` of the accumulator.
    fn peaks_in<T: Sample>(&self, acc: &[T], cols: usize, rows: usize, band: Range<usize>) -> Vec<u64> {
        let mut keys = Vec::new();
        // Rows outside the accumulator count as 0, as OpenCV's border does.
        let zeros = vec![T::default(); cols];
        let row = |r: usize| if r < rows { &acc[r * cols..(r + 1) * cols] } else { &zeros[..] };
        for r in band {
            let (up, here, down) = (if r > 0 { row(r - 1) } else { &zeros[..] }, row(r), row(r + 1));
            // The cells by iterator, not index: the scan over cells under the threshold, nearly
            // all of them, then needs no bounds check (measured a third faster).
            for (c, &v) in here.iter().enumerate() {
                let v: u32 = v.into();
                if v <= self.threshold {
                    continue;
                }
                let left = if c > 0 { here[c - 1].into() } else { 0 };
                let right = if c + 1 < cols { here[c + 1].into() } else { 0 };
                if v > left && v >= right && v > up[c].into() && v >= down[c].into() {
                    keys.push(Self::key(v, r * cols + c));
                }
            }
        }
        keys
    }

    /// Orders the peaks (sort keys) as OpenCV does, keeps the `top` first and makes them lines.
    fn lines(&self, space: &HoughSpace, mut keys: Vec<u64>) -> Vec<Line> {
        if let Some(top) = self.top.filter(|&top| top < keys.len()) {
            // Only the `top` smallest keys need sorting.
            keys.select_nth_unstable(top);
            keys.truncate(top);
        }
        keys.sort_unstable();
        keys.into_iter()
            .map(|key| {
                let (votes, i) = (65535 - (key >> 32) as u32, (key & 0xffff_ffff) as usize);
                let (row, column) = (i / space.rhos, i % space.rhos);
                Line {
                    rho: space.rho(column),
                    theta: space.theta(row),
                    theta_degrees: space.theta_degrees(row),
                    votes,
                    row,
                    column,
                }
            })
            .collect()
    }
}

impl Op for HoughLines {
    type Output = Vec<Line>;

    fn cpu(&self, frame: &Frame) -> Result<Vec<Line>, OpError> {
        let space = HoughSpace::of_frame(frame)?;
        let keys = with_samples!(&frame.pixels, v => self.peaks(v, space.rhos, space.thetas));
        Ok(self.lines(&space, keys))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Vec<Line>, OpError> {
        let space = HoughSpace::of_frame(frame)?;
        let acc = Self::counts(frame);
        let src = gpu.upload::<u16>("lines.in", &acc)?;
        let mut plan = HoughLinesPlan::new(gpu, self, space)?;
        plan.queue(&src)?;
        let found = plan.found()?;
        let keys = found.into_iter().map(|i| Self::key(acc[i as usize].into(), i as usize)).collect();
        Ok(self.lines(&space, keys))
    }
}
