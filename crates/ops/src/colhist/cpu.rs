//! `colhist` on the CPU: the lines (columns, or rows) split into parts on the pool's threads,
//! each counted in strips of columns whose counters stay in the L1 cache, or row by row.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::strips::{byte_part_columns, count_columns_8bit, ChunkRegions, BYTE_STRIP};
use super::{bin_of, ColHist};
use crate::{parallel, Sample};

/// Half the fewest samples for the CPU's work to be split at all ([`parallel::parts`]): 0.6 to 0.7
/// ns a sample on one of the GPU machine's cores (2560x1707 in 3.0 ms, 1280x720 in 0.95), so a
/// frame is split from about 0.08 ms of work. (At 2^19 samples, 1280x720 stayed on one thread, 0.75
/// to 0.83 ms on 16 threads, against 0.25 to 0.28 split, where OpenCV's calcHist took 0.65.)
const MIN_SPLIT: usize = 1 << 16;
/// Fewest samples in a part once a frame is split: 2560x1707 makes 64 parts, four for each of 16
/// threads, so that the pool balances them (in 8 parts of 0.2 ms, a 16-thread pool had half its
/// threads idle and the frame took 1.73 to 2.08x OpenCV's calcHist on all of them); 640x651, 50.
const MIN_PART: usize = 1 << 13;

/// Interleaved copies of a row's histogram on the CPU: runs of equal samples would otherwise make
/// each increment wait for the previous one's store.
const ROW_COPIES: usize = 4;
/// Above this many bins the copies' zeroing and summing per row would cost more than they save.
const ROW_COPY_MAX_BINS: usize = 1024;

/// Splits `counts` (`bins x lines`, bin-major) by the consecutive line ranges `parts`: for each
/// part, its piece of every bin's line, so that the parts can be counted at once.
pub(super) fn split_lines<'a, T>(
    counts: &'a mut [T],
    lines: usize,
    parts: &[Range<usize>],
) -> Vec<Vec<&'a mut [T]>> {
    let mut pieces: Vec<Vec<&mut [T]>> = parts.iter().map(|_| Vec::new()).collect();
    for mut line in counts.chunks_exact_mut(lines.max(1)) {
        for (part, piece) in parts.iter().zip(&mut pieces) {
            let (this, rest) = std::mem::take(&mut line).split_at_mut(part.len());
            piece.push(this);
            line = rest;
        }
    }
    pieces
}

/// Columns counted together on the CPU: their counters take about 32 KiB (an L1 data cache), at
/// least 8 columns so each row's read covers a few bytes, at most 512.
fn cpu_strip(bins: usize) -> usize {
    (8192 / bins).clamp(8, 512)
}

impl ColHist {
    /// The counts on the CPU. Columns are counted in strips of [`cpu_strip`] columns whose
    /// counters stay in the L1 cache (counting the whole width at once spreads one row's
    /// increments over bins x width counters: 4 MiB for 4096 columns), rows one at a time with
    /// [`ROW_COPIES`] interleaved copies of the row's histogram. Data pixels come as one range per
    /// row ([`Geometry::row_span`]); only a geometry whose coefficients are too large for that
    /// falls back to testing every pixel.
    ///
    /// The lines (columns, or rows) are split into parts counted on the pool's threads, each part
    /// writing its lines' counts of every bin: a line's counts are made by one thread, the same
    /// way whatever the split, and nothing is merged.
    ///
    /// With `mask` (one byte a pixel, [`Masked`](crate::mask::Masked)`<&ColHist>`'s) a pixel of the
    /// spans adds 1 where its byte is non-zero and 0 elsewhere, without a branch, in
    /// [`ColHist::cpu_counts_any`]'s loops (the 8-bit strips count every pixel of a span).
    pub(super) fn cpu_counts<T: Sample>(
        &self,
        w: usize,
        h: usize,
        input: &[T],
        mask: Option<&[u8]>,
    ) -> Vec<u32> {
        let lines = self.lines(w, h);
        let bins = self.bins as usize;
        if w == 0 || h == 0 {
            return vec![0u32; bins * lines];
        }
        let spans = match &self.mask {
            None => Some(vec![0..w; h]),
            Some(g) => g.row_spans(0..h, w),
        };
        let Some(spans) = spans else {
            let mut counts = vec![0u32; bins * lines];
            self.cpu_counts_per_pixel(w, h, input, mask, &mut counts);
            return counts;
        };
        let eight_bit = T::bytes(input).is_some() && bins <= 256 && mask.is_none();
        let parts = parallel::parts_split_from(w * h, parallel::split_from(MIN_SPLIT), MIN_PART);
        if let (Some(bytes), true, false, true) = (T::bytes(input), eight_bit, self.rows, parts > 1) {
            return self.cpu_counts_8bit_chunks(w, bytes, &spans, parts);
        }
        // Parts of whole strips, as the loops below take them (an 8-bit frame's columns come here
        // in one part: split, they go to `cpu_counts_8bit_chunks`); rows one by one.
        let unit = match (self.rows, eight_bit) {
            (true, _) => 1,
            (false, true) => BYTE_STRIP,
            (false, false) => cpu_strip(bins),
        };
        let units = lines.div_ceil(unit);
        let parts = parts.min(units);
        // Rounded down: at least `parts` parts, of whole units.
        let per_part = units / parts * unit;
        let ranges: Vec<Range<usize>> =
            (0..lines).step_by(per_part).map(|l| l..(l + per_part).min(lines)).collect();
        // The 8-bit count stores every count itself; the other loops' parts are first zeroed on
        // their own threads: zeroing the whole matrix on this one (calloc's memset of memory reused
        // from the last frame, 2.6 MB at 2560 columns) would be serial work of the order of the 0.2
        // ms that OpenCV's calcHist takes for such a frame on 16 threads (an estimate, not a
        // measurement).
        let n = bins * lines;
        let mut counts = Vec::with_capacity(n);
        let mut pieces = split_lines(&mut counts.spare_capacity_mut()[..n], lines, &ranges);
        let count = |part: Range<usize>, out: &mut Vec<&mut [MaybeUninit<u32>]>| match T::bytes(input) {
            // The 8-bit count stores every count itself.
            Some(bytes) if eight_bit => self.cpu_counts_8bit(w, bytes, &spans, part, out),
            _ => {
                let mut out: Vec<&mut [u32]> =
                    out.iter_mut().map(|piece| parallel::filled(piece, 0)).collect();
                self.cpu_counts_any(w, input, mask, &spans, part, &mut out)
            }
        };
        if let ([part], [out]) = (&ranges[..], &mut pieces[..]) {
            count(part.clone(), out);
        } else {
            use rayon::prelude::*;
            ranges.into_par_iter().zip(pieces.par_iter_mut()).for_each(|(part, out)| count(part, out));
        }
        // SAFETY: the pieces cover the n slots (every bin's line, split at the ranges, which
        // cover 0..lines), and each piece was written: by `parallel::filled`, or by the 8-bit
        // count, which stores every count of its lines.
        unsafe { counts.set_len(n) };
        counts
    }

    /// The counts of an 8-bit frame's columns ([`ColHist::cpu_counts_8bit`], at most 256 bins)
    /// split over the pool into `parts` (four a thread): a worker a thread takes chunks of columns
    /// from its region and, once that is empty, from the others' ([`ChunkRegions`]), each chunk's
    /// counts stored in place into the `bins x lines` matrix returned. A thread
    /// that starts late, or runs slower beside the others, has its last chunks taken by the
    /// others; the frame does not wait on it. (Parts fixed in advance, four a thread, left the
    /// busiest of 16 threads at 1.1 to 1.3 times the mean busy time: 4096x3112 random, 32 parts of
    /// a group, one thread idled after one part while another did three.)
    fn cpu_counts_8bit_chunks(
        &self,
        w: usize,
        bytes: &[u8],
        spans: &[Range<usize>],
        parts: usize,
    ) -> Vec<u32> {
        use rayon::prelude::*;

        /// The matrix's start, shared by the workers, each writing only its chunks' columns.
        struct Matrix(*mut MaybeUninit<u32>);
        // SAFETY: the workers write disjoint slots through it (see below), and nothing reads it
        // until they are done.
        unsafe impl Sync for Matrix {}

        let (bins, lines) = (self.bins as usize, w);
        let n = bins * lines;
        let mut counts: Vec<u32> = Vec::with_capacity(n);
        let matrix = Matrix(counts.spare_capacity_mut().as_mut_ptr());
        let regions = ChunkRegions::new(
            lines,
            byte_part_columns(lines, parts),
            parts.div_ceil(parallel::PARTS_PER_THREAD),
        );
        let work = |home: usize| {
            let matrix = &matrix;
            while let Some(chunk) = regions.next(home) {
                let mut out: Vec<&mut [MaybeUninit<u32>]> = (0..bins)
                    .map(|b| {
                        // SAFETY: bin b's counts of the chunk's columns, slots b * lines + chunk,
                        // lie within the n reserved; the regions hand each column to one chunk
                        // only, so no two slices overlap.
                        unsafe {
                            std::slice::from_raw_parts_mut(matrix.0.add(b * lines + chunk.start), chunk.len())
                        }
                    })
                    .collect();
                self.cpu_counts_8bit(w, bytes, spans, chunk, &mut out);
            }
        };
        (0..regions.workers()).into_par_iter().for_each(work);
        // SAFETY: the workers ran until every chunk was taken, and the chunks cover every column;
        // the 8-bit count stored each chunk's counts of every bin: all n are initialised.
        unsafe { counts.set_len(n) };
        counts
    }

    /// The counts of the lines `part` of samples of any width and any number of bins into `out`
    /// (bin b's counts of those lines in `out[b]`, zeroed), of the pixels whose `mask` byte is
    /// non-zero if given.
    fn cpu_counts_any<T: Sample>(
        &self,
        w: usize,
        input: &[T],
        mask: Option<&[u8]>,
        spans: &[Range<usize>],
        part: Range<usize>,
        out: &mut [&mut [u32]],
    ) {
        let bins = self.bins as usize;
        // bin_of for every value a sample of this type can hold (values over maxval: the last bin).
        let all_values = 1usize << (8 * std::mem::size_of::<T>());
        let lut: Vec<u32> = (0..all_values as u32).map(|v| bin_of(v, self.bins, self.maxval)).collect();
        let bin = |v: T| lut[Into::<u32>::into(v) as usize] as usize;
        let rows = input.chunks_exact(w).take(spans.len());
        if self.rows {
            let copies = if bins <= ROW_COPY_MAX_BINS { ROW_COPIES } else { 1 };
            let mut local = vec![0u32; copies * bins];
            for (i, (row, span)) in rows.zip(spans).skip(part.start).take(part.len()).enumerate() {
                local.fill(0);
                let row = &row[span.clone()];
                if let Some(mask) = mask {
                    let y = part.start + i;
                    let inside = &mask[y * w..][span.clone()];
                    for (&v, &m) in row.iter().zip(inside) {
                        local[bin(v)] += (m != 0) as u32;
                    }
                    for (b, line) in out.iter_mut().enumerate() {
                        line[i] = local[b];
                    }
                    continue;
                }
                let mut quads = row.chunks_exact(copies);
                for quad in &mut quads {
                    for (k, &v) in quad.iter().enumerate() {
                        local[k * bins + bin(v)] += 1;
                    }
                }
                for &v in quads.remainder() {
                    local[bin(v)] += 1;
                }
                for (b, line) in out.iter_mut().enumerate() {
                    line[i] = (0..copies).map(|k| local[k * bins + b]).sum();
                }
            }
        } else {
            let strip = cpu_strip(bins);
            let mut local = vec![0u32; bins * strip];
            for x0 in part.clone().step_by(strip) {
                let x1 = (x0 + strip).min(part.end);
                local.fill(0);
                for (y, (row, span)) in rows.clone().zip(spans).enumerate() {
                    let (from, to) = (span.start.max(x0), span.end.min(x1));
                    if from >= to {
                        continue;
                    }
                    // local[bin * strip + column in the strip]: one row's samples hit distinct
                    // counters, so equal neighbours never wait on each other's increments.
                    match mask {
                        Some(mask) => {
                            let inside = &mask[y * w + from..y * w + to];
                            for ((c, &v), &m) in (from - x0..).zip(&row[from..to]).zip(inside) {
                                local[bin(v) * strip + c] += (m != 0) as u32;
                            }
                        }
                        None => {
                            for (c, &v) in (from - x0..).zip(&row[from..to]) {
                                local[bin(v) * strip + c] += 1;
                            }
                        }
                    }
                }
                for (b, line) in out.iter_mut().enumerate() {
                    line[x0 - part.start..x1 - part.start]
                        .copy_from_slice(&local[b * strip..b * strip + x1 - x0]);
                }
            }
        }
    }

    /// [`ColHist::cpu_counts_any`] for 8-bit samples and at most 256 bins: a sample's bin is one
    /// byte of a 256-entry table and every counter array has 256 entries, so no index is ever
    /// checked at run time. Every count of the lines `part` is stored into `out`, which need not
    /// be initialised.
    fn cpu_counts_8bit(
        &self,
        w: usize,
        input: &[u8],
        spans: &[Range<usize>],
        part: Range<usize>,
        out: &mut [&mut [MaybeUninit<u32>]],
    ) {
        let mut lut = [0u8; 256];
        for (v, b) in (0u32..).zip(lut.iter_mut()) {
            *b = bin_of(v, self.bins, self.maxval) as u8;
        }
        let rows = input.chunks_exact(w).take(spans.len());
        if self.rows {
            for (i, (row, span)) in rows.zip(spans).skip(part.start).take(part.len()).enumerate() {
                let mut local = [[0u32; 256]; ROW_COPIES];
                let row = &row[span.clone()];
                let mut groups = row.chunks_exact(ROW_COPIES);
                for group in &mut groups {
                    for (copy, &v) in local.iter_mut().zip(group) {
                        copy[lut[v as usize] as usize] += 1;
                    }
                }
                for &v in groups.remainder() {
                    local[0][lut[v as usize] as usize] += 1;
                }
                for (b, line) in out.iter_mut().enumerate() {
                    line[i].write(local.iter().map(|copy| copy[b]).sum());
                }
            }
        } else {
            // One bin per level (256 of them): the sample is its bin, no table load.
            let masked = spans.iter().any(|span| *span != (0..w));
            match (self.bins == 256, masked) {
                (true, false) => count_columns_8bit::<false>(w, input, |v| v, spans, part, out),
                (true, true) => count_columns_8bit::<true>(w, input, |v| v, spans, part, out),
                // Fewer bins, the rarer case: one instance, reading the spans.
                (false, _) => count_columns_8bit::<true>(w, input, |v| lut[v as usize], spans, part, out),
            }
        }
    }

    /// The straightforward count, testing every pixel against the geometry and `mask`.
    pub(super) fn cpu_counts_per_pixel<T: Sample>(
        &self,
        w: usize,
        h: usize,
        input: &[T],
        mask: Option<&[u8]>,
        counts: &mut [u32],
    ) {
        let lines = self.lines(w, h);
        for (y, row) in input.chunks_exact(w).enumerate().take(h) {
            for (x, &v) in row.iter().enumerate() {
                if self.mask.as_ref().is_some_and(|g| !g.is_original(x as f64, y as f64))
                    || mask.is_some_and(|m| m[y * w + x] == 0)
                {
                    continue;
                }
                let bin = bin_of(v.into(), self.bins, self.maxval) as usize;
                counts[bin * lines + if self.rows { y } else { x }] += 1;
            }
        }
    }
}
