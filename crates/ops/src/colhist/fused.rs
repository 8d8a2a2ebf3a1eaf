//! `colhist --angles` on the CPU for 8-bit frames, without the turned frames: each turn's
//! columns are counted as the turn's rows are read, a strip of columns at a time, from samples
//! that `rotate` makes exactly as it makes its output (the same rows and kernels, through
//! [`TurnedRows`]). Only each row's data span is read, the pixels `colhist` counts: on a padded
//! 4K photo, under half of every turned frame. Made whole, each turn was written out (19 MB for a
//! padded 4K frame) and read back to be counted, and its fill and padding turned as well.
//!
//! All the turns given are counted in two parallel loops, each over every turn at once: the
//! bands of rows' maps, then the strips of columns. Split turn by turn (two loops a turn, under
//! a loop over the turns), the pool's threads slept and woke between the many short loops: on
//! the 16-core GPU host one thread ran a third of a cube's strips and six ran none.
//!
//! The counts are [`ColHist`]'s of `rotate`'s output, bit for bit: each column's pixels are the
//! same, counted once each, in whatever order.

use std::ops::Range;

use rayon::prelude::*;

use super::cpu::split_lines;
use super::{bin_of, ColHist};
use crate::parallel;
use crate::rotate::{ColumnCounts, Rotate, TurnedRows, COLUMN_COUNTS};

/// Columns counted by one task, as wide as `rotate`'s tiles: their counters, 16-bit, one per
/// sample value ([`ColumnCounts`], padded), take 36 KiB, about a core's L1 data cache.
const STRIP: usize = 64;
/// Rows of a turn whose maps one task makes.
const ROW_BAND: usize = 256;
/// Fewest turned pixels for the loops to run on the pool's threads.
const MIN_PART: usize = 1 << 16;

/// A band of a turn's rows: their samples, each row's data span, and the first row's number.
type Band<'a> = (TurnedRows<'a, u8>, Vec<Range<usize>>, usize);

/// A turn, how `colhist` counts its turned frame, and where its counts go (`op.bins x
/// r.out_width`, bin-major; every count overwritten, whatever it held: every bin holds a value,
/// as [`Bins`](crate::bins::Bins) has it).
pub(super) type Turn<'a> = (&'a Rotate, &'a ColHist, &'a mut [u32]);

/// Whether this path counts turn `r` as `op` counts it: columns, at most 256 bins, at most 65535
/// rows (a column's count fits 16 bits), and data pixels that are one span a row (a geometry
/// whose [`Geometry::row_span`](histopipe_frame::Geometry::row_span) answers for row 0 answers
/// for all).
pub(super) fn applies(r: &Rotate, op: &ColHist) -> bool {
    let (w, h) = (r.out_width, r.out_height);
    !op.rows
        && op.bins <= 256
        && w > 0
        && h > 0
        && h <= u16::MAX as usize
        && op.mask.as_ref().is_none_or(|g| g.row_span(0, w).is_some())
}

/// Counts the turns `turns` (each one this path [`applies`] to) of the 8-bit frame `input`.
pub(super) fn count(input: &[u8], turns: Vec<Turn<'_>>) {
    let pixels: usize = turns.iter().map(|(r, _, _)| r.out_width * r.out_height).sum();
    let split = parallel::parts(pixels, MIN_PART) > 1;
    // Every turn's bands, in order.
    let starts: Vec<(usize, usize)> = (0..turns.len())
        .flat_map(|t| (0..turns[t].0.out_height).step_by(ROW_BAND).map(move |y| (t, y)))
        .collect();
    let band = |&(t, y0): &(usize, usize)| -> Band<'_> {
        let (r, op, _) = &turns[t];
        let (w, h) = (r.out_width, r.out_height);
        let ys = y0..(y0 + ROW_BAND).min(h);
        let spans = match &op.mask {
            None => vec![0..w; ys.len()],
            Some(g) => g.row_spans(ys.clone(), w).expect("a geometry this path applies to"),
        };
        (r.turned_rows(input, ys.clone()), spans, ys.start)
    };
    let bands: Vec<Band<'_>> =
        if split { starts.par_iter().map(band).collect() } else { starts.iter().map(band).collect() };
    let mut bands_of: Vec<&[Band<'_>]> = Vec::with_capacity(turns.len());
    let mut rest = &bands[..];
    for (r, _, _) in &turns {
        let (these, tail) = rest.split_at(r.out_height.div_ceil(ROW_BAND));
        bands_of.push(these);
        rest = tail;
    }
    // Every turn's strips, each with its counts' pieces.
    let mut strips = Vec::new();
    for (t, (r, op, out)) in turns.into_iter().enumerate() {
        let w = r.out_width;
        let xs: Vec<Range<usize>> = (0..w).step_by(STRIP).map(|x| x..(x + STRIP).min(w)).collect();
        let mut values = [0u8; 256];
        for (v, b) in (0u32..).zip(values.iter_mut()) {
            // At most 255: there are at most 256 bins.
            *b = bin_of(v, op.bins, op.maxval) as u8;
        }
        let pieces = split_lines(out, w, &xs);
        strips.extend(xs.into_iter().zip(pieces).map(|(xs, piece)| (t, xs, values, piece)));
    }
    let strip = |(t, xs, values, mut piece): (usize, Range<usize>, [u8; 256], Vec<&mut [u32]>)| {
        count_strip(bands_of[t], xs, &values, &mut piece)
    };
    if split {
        strips.into_par_iter().for_each(strip);
    } else {
        strips.into_iter().for_each(strip);
    }
}

/// Writes the counts of the columns `xs` of the turn whose row bands are `bands` to `out` (bin
/// b's counts of those columns in `out[b]`), `bins` being each sample value's bin.
fn count_strip(bands: &[Band<'_>], xs: Range<usize>, bins: &[u8; 256], out: &mut [&mut [u32]]) {
    let mut counts: [ColumnCounts; STRIP] = [[0; COLUMN_COUNTS]; STRIP];
    for (rows, spans, first) in bands {
        for (y, span) in (*first..).zip(spans) {
            let (lo, hi) = (span.start.max(xs.start), span.end.min(xs.end));
            if lo >= hi {
                continue;
            }
            rows.count_span(y, lo..hi, &mut counts[lo - xs.start..hi - xs.start]);
        }
    }
    // A bin's counts at a time: each a run of the matrix's row (a column at a time, each count
    // went to a different row, hundreds of pages apart). Stored by the bin's first value (the
    // values of a bin are consecutive), added by the others: the output is written before it
    // is ever read, so its fresh pages are never first mapped to the zero page and then copied
    // on write, each copy a TLB shootdown on every core the process runs on (2.9% of a cube's
    // time on the build machine's 2 threads with `+=` alone).
    let counts = &counts[..xs.len()];
    for (v, &b) in bins.iter().enumerate() {
        let first = v == 0 || bins[v - 1] != b;
        for (slot, column) in out[b as usize].iter_mut().zip(counts) {
            let n = column[v] as u32;
            *slot = if first { n } else { *slot + n };
        }
    }
}
