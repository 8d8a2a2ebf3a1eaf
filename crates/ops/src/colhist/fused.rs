//! `colhist --angles` on the CPU for 8-bit frames, without the turned frames: each turn's
//! columns are counted as the turn's rows are read, a strip of columns at a time, from samples
//! that `rotate` makes exactly as it makes its output (the same rows and kernels, through
//! [`TurnedRows`]). Only each row's data span is read, the pixels `colhist` counts: on a padded
//! 4K photo, under half of every turned frame. Made whole, each turn was written out (19 MB for a
//! padded 4K frame) and read back to be counted, and its fill and padding turned as well.
//!
//! The counts are [`ColHist`]'s of `rotate`'s output, bit for bit: each column's pixels are the
//! same, counted once each, in whatever order.

use std::mem::MaybeUninit;
use std::ops::Range;

use rayon::prelude::*;

use super::cpu::split_lines;
use super::{bin_of, ColHist};
use crate::rotate::{Rotate, TurnedRows};

/// Columns counted by one task, as wide as `rotate`'s tiles: their counters, 16-bit, one per
/// sample value, take 32 KiB (a core's L1 data cache).
const STRIP: usize = 64;
/// Rows of a turn whose maps one task makes.
const ROW_BAND: usize = 256;

/// A band of a turn's rows: their samples, each row's data span, and the first row's number.
type Band<'a> = (TurnedRows<'a, u8>, Vec<Range<usize>>, usize);

/// Turn `r` of the 8-bit frame `input`, counted as `op` counts the turned frame, into `out`
/// (`op.bins x r.out_width`, bin-major; zeroed, and each bin that holds a value overwritten).
/// Returns false, having written nothing, where this path does not apply: rows instead of
/// columns, more than 256 bins, a geometry whose data pixels in a row are not one span, or
/// over 65535 rows (the caller makes the turn whole).
pub(super) fn turn_counts(r: &Rotate, op: &ColHist, input: &[u8], out: &mut [u32]) -> bool {
    let (w, h) = (r.out_width, r.out_height);
    // A column's count fits 16 bits: at most h.
    if op.rows
        || op.bins > 256
        || w == 0
        || h == 0
        || h > u16::MAX as usize
        || out.len() != op.bins as usize * w
    {
        return false;
    }
    // Each band of rows: their maps, and their data spans.
    let bands: Vec<Option<Band<'_>>> = (0..h)
        .step_by(ROW_BAND)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|y0| {
            let ys = y0..(y0 + ROW_BAND).min(h);
            let spans = match &op.mask {
                None => Some(vec![0..w; ys.len()]),
                Some(g) => g.row_spans(ys.clone(), w),
            };
            Some((r.turned_rows(input, ys.clone()), spans?, ys.start))
        })
        .collect();
    let Some(bands) = bands.into_iter().collect::<Option<Vec<_>>>() else {
        return false;
    };
    let mut bins = [0u8; 256];
    for (v, b) in (0u32..).zip(bins.iter_mut()) {
        // At most 255: there are at most 256 bins.
        *b = bin_of(v, op.bins, op.maxval) as u8;
    }
    let strips: Vec<Range<usize>> = (0..w).step_by(STRIP).map(|x| x..(x + STRIP).min(w)).collect();
    let mut pieces = split_lines(out, w, &strips);
    strips
        .into_par_iter()
        .zip(pieces.par_iter_mut())
        .for_each(|(xs, piece)| count_strip(&bands, xs, &bins, piece));
    true
}

/// Adds the counts of the columns `xs` of the turn whose row bands are `bands` to `out` (bin b's
/// counts of those columns in `out[b]`), `bins` being each sample value's bin.
fn count_strip(bands: &[Band<'_>], xs: Range<usize>, bins: &[u8; 256], out: &mut [&mut [u32]]) {
    let mut counts = [[0u16; 256]; STRIP];
    let mut samples = [MaybeUninit::<u8>::uninit(); STRIP];
    for (rows, spans, first) in bands {
        for (y, span) in (*first..).zip(spans) {
            let (lo, hi) = (span.start.max(xs.start), span.end.min(xs.end));
            if lo >= hi {
                continue;
            }
            let run = &mut samples[..hi - lo];
            rows.span(y, lo..hi, run);
            for (column, v) in counts[lo - xs.start..].iter_mut().zip(run.iter()) {
                // SAFETY: `span` writes every sample of `run`.
                column[unsafe { v.assume_init() } as usize] += 1;
            }
        }
    }
    // A bin's counts at a time: each a run of the matrix's row (a column at a time, each count
    // went to a different row, hundreds of pages apart). Stored by the bin's first value (the
    // values of a bin are consecutive), added by the others: the output is written before it
    // is ever read, so its fresh pages are never first mapped to the zero page and then copied
    // on write, each copy a TLB shootdown on every core the process runs on (on the 16-core GPU
    // host, 2 threads took 2.8 times as long as 1 with `+=` alone).
    let counts = &counts[..xs.len()];
    for (v, &b) in bins.iter().enumerate() {
        let first = v == 0 || bins[v - 1] != b;
        for (slot, column) in out[b as usize].iter_mut().zip(counts) {
            let n = column[v] as u32;
            *slot = if first { n } else { *slot + n };
        }
    }
}
