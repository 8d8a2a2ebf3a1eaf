//! `colhist`: a histogram of every column (or row) of a frame, the `Histogram[bin][column]` matrix
//! of the published system.
//!
//! Sample v falls in bin floor(v N / (maxval + 1)) of N equal-width bins (integer arithmetic:
//! v N < 2^32 for every 16-bit sample and N <= 65536). Only data pixels are counted: pixels whose
//! centre the frame's geometry maps into the original ([`Geometry::is_original`]), unless the
//! padding is asked for too or the frame has no geometry. The GPU evaluates that test with the
//! same `f64` operations in the same order, so both backends count the same pixels.
//!
//! On the GPU each block keeps the histograms of a tile of lines (columns, or rows) in shared
//! memory with shared atomics, then adds its non-zero counts to the global matrix; with too many
//! bins for even one line's histogram in shared memory it counts into global memory directly.

use std::mem::MaybeUninit;
use std::ops::Range;

use histopipe_frame::{Affine, Frame, Geometry, Pixels};
use histopipe_gpu::cudarc::driver::sys::CUdevice_attribute;
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use crate::bins::Bins;
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample};

/// u32 counters of shared memory a block may use: 48 KiB, the limit without opting in.
const SHARED_COUNTERS: u32 = 12 * 1024;
/// Lines (columns or rows) per block at most: one warp's worth of neighbouring columns.
const MAX_TILE: u32 = 32;
const THREADS: u32 = 256;

/// Most bins of the column kernel `colhist_pairs_*` (`PAIR_MAX_BINS` in colhist.cu): a tile's
/// 64 columns of 16-bit counters, bins x 128 bytes, within the 48 KiB of shared memory every GPU
/// gives a block without opting in.
const PAIR_MAX_BINS: u32 = 384;
/// Columns per block of `colhist_pairs_*` (`PAIR_TILE`): two per lane of a warp.
const PAIR_TILE: usize = 64;
const PAIR_THREADS: u32 = 512;
/// Threads per block of `colhist_warp_rows_*`: eight rows.
const ROW_THREADS: u32 = 256;
/// Blocks of `colhist_pairs_*` an SM holds at once: 512 threads of 45-48 registers (ptxas, sm_90)
/// take 24576 of its 65536 registers.
const PAIR_BLOCKS_PER_SM: usize = 2;
/// Fewest rows per block of `colhist_pairs_*`: fewer would make the merge cost more than counting.
const PAIR_MIN_ROWS: usize = 256;

/// Half the fewest samples for the CPU's work to be split at all ([`parallel::parts`]): 0.4 ns a
/// sample on one core (2560x1707 in 1.7 ms), so a frame is split from about 0.4 ms of work.
const MIN_SPLIT: usize = 1 << 19;
/// Fewest samples in a part once a frame is split: 2560x1707 makes 64 parts, four for each of 16
/// threads, so that the pool balances them (in 8 parts of 0.2 ms, a 16-thread pool had half its
/// threads idle and the frame took 1.73 to 2.08x OpenCV's calcHist on all of them).
const MIN_PART: usize = 1 << 16;

/// Interleaved copies of a row's histogram on the CPU: runs of equal samples would otherwise make
/// each increment wait for the previous one's store.
const ROW_COPIES: usize = 4;
/// Above this many bins the copies' zeroing and summing per row would cost more than they save.
const ROW_COPY_MAX_BINS: usize = 1024;

/// Columns of 8-bit samples counted together on the CPU: their 16-bit counters take 16 KiB, half
/// an L1 data cache, the rest left to the rows being read (measured: 32 columns a little faster
/// than 64 or 128 on random content; narrower strips spend more per row than per sample).
const BYTE_STRIP: usize = 32;
/// Columns of 8-bit samples read together: the strips of a group are counted one after the other
/// over the same band of rows, so each row's cache lines and page translation, fetched for the
/// first strip, serve the other three from the L2 cache and TLB. Their counters, 64 KiB, stay in
/// the L2 cache between bands.
const BYTE_GROUP: usize = 4 * BYTE_STRIP;
/// Rows of a band: 128 rows of a group, 16 KiB, fit the L2 cache and their pages the L2 TLB.
/// (Strips counted down the whole frame, one after the other, found each row's line and page
/// translation evicted since the strip before: 3932x4000 random took 6.6 ms against 5.7 ms with
/// groups and bands, on a Zen 4 core; 64 to 256 columns and 256 to 1024 rows measured alike.)
/// Not more: rows a multiple of 4096 bytes apart all fall in the same few sets of the L2 cache,
/// where 512 rows of a group did not fit: 4096x3112 random took 8.5 ms against 5.1 ms for 4100
/// columns; with 128 rows, 5.2 ms, and the other sizes as before (Sapphire Rapids core).
const BYTE_BAND: usize = 128;
/// Bands whose rows the 16-bit counters can take before one could overflow (a column gains at
/// most one count per row); they are then added to the 32-bit counts.
const BYTE_FLUSH_BANDS: usize = u16::MAX as usize / BYTE_BAND;
/// Rows ahead whose group is prefetched: in a frame at least a page wide every row of a group is
/// on its own page, where the hardware prefetchers stop.
const PREFETCH_ROWS: usize = 16;
/// Narrower frames, several rows to a page, are left to the hardware prefetchers (measured: the
/// prefetches cost 8% on 1920x1080 and 640x651, whose rows are read well without them).
const PREFETCH_MIN_WIDTH: usize = 2048;

/// One strip's counters, [bin][column of the strip], a bin's 32 counters in one cache line:
/// neighbouring columns of equal value hit the same line (column-major histograms 512 bytes apart
/// would share a few cache sets, and measured slower).
#[derive(Clone)]
#[repr(C, align(64))]
struct ByteStrip([[u16; BYTE_STRIP]; 256]);

/// The columns `columns` of 8-bit samples, group by group of [`BYTE_GROUP`] columns and band by
/// band of [`BYTE_BAND`] rows; in each band, strip by strip of [`BYTE_STRIP`] columns, each
/// counted into its own [`ByteStrip`]. `counts` (zeroed; bin b's counts of the columns in
/// `counts[b]`) receives them every [`BYTE_FLUSH_BANDS`] bands and at the end of the group. Only
/// `spans[y]` of row `y` is counted; `MASKED` false: every span is the whole row, and they are
/// not read.
///
/// Not inlined: each instance (table or not, masked or not) gets registers of its own; inlined
/// together into their caller they spilled in the loops (measured 8% slower).
#[inline(never)]
fn count_columns_8bit<const MASKED: bool>(
    w: usize,
    input: &[u8],
    bin: impl Fn(u8) -> u8,
    spans: &[Range<usize>],
    columns: Range<usize>,
    counts: &mut [&mut [u32]],
) {
    const S: usize = BYTE_STRIP;
    let h = spans.len();
    // Only the strips a group of these columns uses: a part of one strip zeroes 16 KiB, not 64.
    let mut strips = vec![ByteStrip([[0; S]; 256]); columns.len().min(BYTE_GROUP).div_ceil(S)];
    for g0 in columns.clone().step_by(BYTE_GROUP) {
        let g1 = (g0 + BYTE_GROUP).min(columns.end);
        let group = g0 - columns.start..g1 - columns.start;
        for (band, y0) in (0..h).step_by(BYTE_BAND).enumerate() {
            if band > 0 && band % BYTE_FLUSH_BANDS == 0 {
                add_strips(&mut strips, group.clone(), band == BYTE_FLUSH_BANDS, counts);
            }
            let rows = y0..(y0 + BYTE_BAND).min(h);
            for (k, (x0, strip)) in (g0..g1).step_by(S).zip(strips.iter_mut()).enumerate() {
                let ahead = (k == 0 && w >= PREFETCH_MIN_WIDTH).then_some(g0..g1);
                count_strip::<MASKED>(
                    w,
                    input,
                    &bin,
                    spans,
                    rows.clone(),
                    x0..(x0 + S).min(g1),
                    ahead,
                    strip,
                );
            }
        }
        add_strips(&mut strips, group, h <= BYTE_FLUSH_BANDS * BYTE_BAND, counts);
    }
}

/// The rows `rows` of the strip of columns `xs` (at most [`BYTE_STRIP`]), counted into `strip`;
/// `ahead`: the group's columns, prefetched [`PREFETCH_ROWS`] rows ahead. A function of its own,
/// not inlined: the registers of its loops do not depend on the caller's (measured 9% faster
/// than inlined into `count_columns_8bit`).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn count_strip<const MASKED: bool>(
    w: usize,
    input: &[u8],
    bin: &impl Fn(u8) -> u8,
    spans: &[Range<usize>],
    rows: Range<usize>,
    xs: Range<usize>,
    ahead: Option<Range<usize>>,
    strip: &mut ByteStrip,
) {
    const S: usize = BYTE_STRIP;
    let (x0, x1) = (xs.start, xs.end);
    for y in rows {
        if let Some(group) = &ahead {
            let ahead = (y + PREFETCH_ROWS) * w;
            if let Some(group) = input.get(ahead + group.start..ahead + group.end) {
                prefetch(group);
            }
        }
        let (from, to) = if MASKED { (spans[y].start.max(x0), spans[y].end.min(x1)) } else { (x0, x1) };
        if from >= to {
            continue;
        }
        let row = &input[y * w + from..y * w + to];
        if let Ok(full) = <&[u8; S]>::try_from(row) {
            // A whole strip: constant column offsets, a loop the compiler unrolls.
            for (c, &v) in full.iter().enumerate() {
                strip.0[bin(v) as usize][c] += 1;
            }
            continue;
        }
        // Indices a byte and a masked column: the compiler drops their bounds checks.
        for (c, &v) in (from - x0..).zip(row) {
            strip.0[bin(v) as usize][c & (S - 1)] += 1;
        }
    }
}

/// Adds the counters of the strips of a group to `counts[b][group]` for each bin b (as many as
/// `counts` has), or stores them there if `first` (the group's first flush: its counts are still
/// zero), and zeroes them. Bin by bin, so that the group's counts of a bin, up to 512 contiguous
/// bytes, are written together (strip by strip, each bin's 128 bytes would be on a page of their
/// own).
fn add_strips(strips: &mut [ByteStrip], group: Range<usize>, first: bool, counts: &mut [&mut [u32]]) {
    for (b, line) in counts.iter_mut().enumerate() {
        add_bin(strips, b, first, &mut line[group.clone()]);
    }
}

/// [`add_strips`] for bin `b`, into `line` (the group's counts of the bin). A function of its
/// own, not inlined, so that `line`, an argument, is known not to overlap the strips: read from
/// `counts`, it could, and the loops were not vectorised (measured: 10% of colhist's time, from 5%).
#[inline(never)]
fn add_bin(strips: &mut [ByteStrip], b: usize, first: bool, line: &mut [u32]) {
    if let (Ok(line), true) = (<&mut [u32; BYTE_GROUP]>::try_from(&mut *line), first) {
        // A whole group, the usual case: fixed lengths, which the compiler vectorises.
        for (part, strip) in line.chunks_exact_mut(BYTE_STRIP).zip(strips.iter_mut()) {
            for (t, n) in part.iter_mut().zip(strip.0[b].iter_mut()) {
                *t = *n as u32;
                *n = 0;
            }
        }
        return;
    }
    for (part, strip) in line.chunks_mut(BYTE_STRIP).zip(strips.iter_mut()) {
        for (t, n) in part.iter_mut().zip(strip.0[b].iter_mut()) {
            *t += *n as u32;
            *n = 0;
        }
    }
}

/// Asks for the cache lines of `bytes` ahead of their use: one address in each 64-byte line it
/// touches (every 64th byte from the first, and the last, for an unaligned end).
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(last) = bytes.len().checked_sub(1) {
        let hint = |at: usize| {
            // SAFETY: a prefetch is only a hint: it reads nothing into the program and never
            // faults; the address is inside `bytes` anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    bytes[at..].as_ptr().cast(),
                )
            }
        };
        for at in (0..last).step_by(64) {
            hint(at);
        }
        hint(last);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Splits `counts` (`bins x lines`, bin-major) by the consecutive line ranges `parts`: for each
/// part, its piece of every bin's line, so that the parts can be counted at once.
fn split_lines<'a, T>(counts: &'a mut [T], lines: usize, parts: &[Range<usize>]) -> Vec<Vec<&'a mut [T]>> {
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
        if frame.width > u32::MAX as usize || frame.height > u32::MAX as usize {
            return Err(OpError::invalid("frames wider or taller than 2^32 - 1 pixels are not supported"));
        }
        let bins = self.bins.unwrap_or_else(|| default_bins(frame.maxval));
        let bins = Bins::new(Some(bins as usize), frame.maxval)?.count() as u32;
        let mask = if self.count_padding { None } else { frame.geometry.clone() };
        Ok(ColHist { bins, rows: self.rows, maxval: frame.maxval, mask })
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
    fn lines(&self, w: usize, h: usize) -> usize {
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
    fn cpu_counts<T: Sample>(&self, w: usize, h: usize, input: &[T]) -> Vec<u32> {
        let lines = self.lines(w, h);
        let bins = self.bins as usize;
        if w == 0 || h == 0 {
            return vec![0u32; bins * lines];
        }
        let spans = match &self.mask {
            None => Some(vec![0..w; h]),
            Some(g) => (0..h).map(|y| g.row_span(y, w)).collect::<Option<Vec<_>>>(),
        };
        let Some(spans) = spans else {
            let mut counts = vec![0u32; bins * lines];
            self.cpu_counts_per_pixel(w, h, input, &mut counts);
            return counts;
        };
        let eight_bit = T::bytes(input).is_some() && bins <= 256;
        // Parts of whole strips, as the loops below take them; rows one by one.
        let unit = match (self.rows, eight_bit) {
            (true, _) => 1,
            (false, true) => BYTE_STRIP,
            (false, false) => cpu_strip(bins),
        };
        let units = lines.div_ceil(unit);
        let parts = match parallel::parts(w * h, MIN_SPLIT) {
            1 => 1,
            _ => parallel::parts(w * h, MIN_PART).min(units),
        };
        // Rounded down: at least `parts` parts, of whole units (2560 columns in 64 parts: 80 parts
        // of one strip, not 40 of two, which would leave 16 threads 2.5 parts each).
        let per_part = units / parts * unit;
        let ranges: Vec<Range<usize>> =
            (0..lines).step_by(per_part).map(|l| l..(l + per_part).min(lines)).collect();
        // Every count is stored by the loops below, but their parts are first zeroed on their own
        // threads: zeroing the whole matrix on this one (calloc's memset of memory reused from the
        // last frame, 2.6 MB at 2560 columns) would be serial work of the order of the 0.2 ms that
        // OpenCV's calcHist takes for such a frame on 16 threads (an estimate, not a measurement).
        let n = bins * lines;
        let mut counts = Vec::with_capacity(n);
        let mut pieces = split_lines(&mut counts.spare_capacity_mut()[..n], lines, &ranges);
        let count = |part: Range<usize>, out: &mut Vec<&mut [MaybeUninit<u32>]>| {
            let mut out: Vec<&mut [u32]> = out.iter_mut().map(|piece| parallel::filled(piece, 0)).collect();
            match T::bytes(input) {
                Some(bytes) if eight_bit => self.cpu_counts_8bit(w, bytes, &spans, part, &mut out),
                _ => self.cpu_counts_any(w, input, &spans, part, &mut out),
            }
        };
        if let ([part], [out]) = (&ranges[..], &mut pieces[..]) {
            count(part.clone(), out);
        } else {
            use rayon::prelude::*;
            ranges.into_par_iter().zip(pieces.par_iter_mut()).for_each(|(part, out)| count(part, out));
        }
        // SAFETY: the pieces cover the n slots (every bin's line, split at the ranges, which
        // cover 0..lines), and `parallel::filled` wrote each piece.
        unsafe { counts.set_len(n) };
        counts
    }

    /// The counts of the lines `part` of samples of any width and any number of bins into `out`
    /// (bin b's counts of those lines in `out[b]`, zeroed).
    fn cpu_counts_any<T: Sample>(
        &self,
        w: usize,
        input: &[T],
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
                for (row, span) in rows.clone().zip(spans) {
                    let (from, to) = (span.start.max(x0), span.end.min(x1));
                    if from >= to {
                        continue;
                    }
                    // local[bin * strip + column in the strip]: one row's samples hit distinct
                    // counters, so equal neighbours never wait on each other's increments.
                    for (c, &v) in (from - x0..).zip(&row[from..to]) {
                        local[bin(v) * strip + c] += 1;
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
    /// checked at run time.
    fn cpu_counts_8bit(
        &self,
        w: usize,
        input: &[u8],
        spans: &[Range<usize>],
        part: Range<usize>,
        out: &mut [&mut [u32]],
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
                    line[i] = local.iter().map(|copy| copy[b]).sum();
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

    /// The straightforward count, testing every pixel against the mask.
    fn cpu_counts_per_pixel<T: Sample>(&self, w: usize, h: usize, input: &[T], counts: &mut [u32]) {
        let lines = self.lines(w, h);
        for (y, row) in input.chunks_exact(w).enumerate().take(h) {
            for (x, &v) in row.iter().enumerate() {
                if self.mask.as_ref().is_some_and(|g| !g.is_original(x as f64, y as f64)) {
                    continue;
                }
                let bin = bin_of(v.into(), self.bins, self.maxval) as usize;
                counts[bin * lines + if self.rows { y } else { x }] += 1;
            }
        }
    }

    fn gpu_counts<T: Sample>(&self, gpu: &Gpu, w: usize, h: usize, input: &[T]) -> Result<Vec<u32>, OpError> {
        let n = self.bins as usize * self.lines(w, h);
        let src = gpu.upload::<T>("colhist.in", input)?;
        let mut counts = gpu.buffer::<u32>("colhist.counts", n)?;
        self.plan(gpu, w, h)?.queue(&src, &mut counts)?;
        let out = gpu.download_vec(&counts, n)?;
        Ok(out)
    }

    /// The device plan of these counts for `w x h` frames.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> Result<ColHistPlan<'g>, OpError> {
        let pairs = if self.uses_pairs(w, h) { Some(Pairs::new(gpu, w, h)?) } else { None };
        // colhist_pairs_*'s scratch: each part's packed counters (bins x 32 words per block), and
        // per tile the count of its blocks done.
        let several = pairs.filter(|p| p.parts > 1);
        let (partials, done) = match several {
            Some(p) => (p.tiles * p.parts * self.bins as usize * 32, p.tiles),
            None => (1, 1),
        };
        Ok(ColHistPlan {
            gpu,
            op: self.clone(),
            w,
            h,
            pairs,
            partials: gpu.buffer::<u32>("colhist.partials", partials)?,
            done: gpu.buffer::<u32>("colhist.done", done)?,
        })
    }

    /// Whether the columns of a `w x h` frame are counted by `colhist_pairs_*`.
    fn uses_pairs(&self, w: usize, h: usize) -> bool {
        !self.rows && self.bins <= PAIR_MAX_BINS && w > 0 && h > 0
    }

    /// The kernels' mask arguments: whether to mask, the map to the original and the original's
    /// size (the identity of a `w x h` frame when there is no mask).
    fn mask_args(&self, w: usize, h: usize) -> (u32, Affine, f64, f64) {
        let (masked, g) = match &self.mask {
            Some(g) => (1u32, g.clone()),
            None => (0u32, Geometry::identity(w, h)),
        };
        (masked, g.to_original, g.original_width as f64, g.original_height as f64)
    }

    /// The part of column `x` of `frame` in rows `rows` that this op counts, as a one-column frame
    /// without geometry, and the op that counts every pixel of it (columns, no mask): its
    /// histogram is column x's of this op over those rows only, on either backend, from the same
    /// kernels (`colhist --line` and `--segment`). A pixel is kept when the mask's
    /// [`Geometry::is_original`] accepts it (every pixel without a mask): the one test that both
    /// backends evaluate, so the counts are those of the whole frame's column x. Keeps the rows'
    /// order; the frame has no rows when none is kept.
    ///
    /// Panics if `x` is not a column of the frame or `rows` goes past its last row.
    pub fn column(&self, frame: &Frame, x: usize, rows: Range<usize>) -> (ColHist, Frame) {
        assert!(x < frame.width && rows.end <= frame.height, "column {x}, rows {rows:?} outside the frame");
        let kept: Vec<usize> = rows
            .filter(|&y| self.mask.as_ref().is_none_or(|g| g.is_original(x as f64, y as f64)))
            .map(|y| y * frame.width + x)
            .collect();
        let pixels = match &frame.pixels {
            Pixels::U8(v) => Pixels::U8(kept.iter().map(|&i| v[i]).collect()),
            Pixels::U16(v) => Pixels::U16(kept.iter().map(|&i| v[i]).collect()),
        };
        let one = ColHist { rows: false, mask: None, ..self.clone() };
        (one, Frame::new(1, kept.len(), frame.maxval, pixels))
    }

    fn histograms(&self, frame: &Frame, counts: Vec<u32>) -> Histograms {
        Histograms { bins: self.bins as usize, lines: self.lines(frame.width, frame.height), counts }
    }
}

/// The launch shape of `colhist_pairs_*` for a frame: blocks of [`PAIR_TILE`] columns by `span`
/// rows, `tiles x parts` of them.
#[derive(Debug, Clone, Copy)]
struct Pairs {
    tiles: usize,
    parts: usize,
    span: usize,
}

impl Pairs {
    fn new(gpu: &Gpu, w: usize, h: usize) -> Result<Pairs, OpError> {
        let tiles = w.div_ceil(PAIR_TILE);
        // Enough blocks to cover the GPU, but no more: every extra part along the rows adds
        // bins x 128 bytes of partial counts, stored, then read by the tile's last block. At
        // least PAIR_MIN_ROWS rows per block, at most 65535 (a 16-bit counter's limit).
        // PAIR_BLOCKS_PER_SM blocks fit on an SM at once: fill the GPU in one wave.
        let sms = gpu
            .stream()
            .context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_or(132, |n| n.max(1) as usize);
        let parts = (PAIR_BLOCKS_PER_SM * sms / tiles)
            .clamp(1, h.div_ceil(PAIR_MIN_ROWS))
            .max(h.div_ceil(u16::MAX as usize));
        let span = h.div_ceil(parts);
        let parts = h.div_ceil(span);
        if parts > u16::MAX as usize {
            return Err(OpError::invalid("frames taller than 65535 x 65535 rows are not supported"));
        }
        Ok(Pairs { tiles, parts, span })
    }
}

/// The device plan of `colhist`: the counting kernel for the frame's shape and the scratch of
/// `colhist_pairs_*` (each part's packed counters, each tile's count of blocks done). The one GPU
/// sequence that `Op::gpu` and the benchmark run.
pub struct ColHistPlan<'g> {
    gpu: &'g Gpu,
    op: ColHist,
    w: usize,
    h: usize,
    /// The shape of `colhist_pairs_*`, when it counts the columns.
    pairs: Option<Pairs>,
    partials: Buffer<'g, u32>,
    done: Buffer<'g, u32>,
}

impl ColHistPlan<'_> {
    /// Queues the counts of the `w x h` frame in `src` into the first `bins x lines` counters of
    /// `counts` (zeroed first where the kernel adds to them).
    pub fn queue<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        let (op, w, h) = (&self.op, self.w, self.h);
        let lines = op.lines(w, h);
        let along = if op.rows { w } else { h };
        if lines == 0 || along == 0 {
            return Ok(());
        }
        if op.bins <= PAIR_MAX_BINS {
            return self.queue_small(src, counts);
        }
        self.gpu.stream().memset_zeros(&mut counts.slice_mut(..op.bins as usize * lines))?;
        let direction = if op.rows { "rows" } else { "cols" };
        let tile = (SHARED_COUNTERS / op.bins).min(MAX_TILE);
        let (name, cfg, tile, span) = if tile == 0 {
            let blocks = launch::blocks(w * h, THREADS, 1 << 16);
            ("global", launch::linear(blocks, THREADS), 0, 0)
        } else {
            let tiles = (lines as u32).div_ceil(tile);
            // Enough blocks to fill a large GPU, each still covering a long stretch of its lines
            // so that merging its shared counts stays cheap next to counting.
            // The kernel indexes a block's tile * span pixels in 32 bits: keep them under 2^31.
            let fewest = ((along as u64 * tile as u64) >> 31) as u32 + 1;
            let parts = 2048u32
                .div_ceil(tiles)
                .max(fewest)
                .clamp(1, (along as u32).div_ceil(64).clamp(fewest, 65535));
            let span = (along as u32).div_ceil(parts);
            let parts = (along as u32).div_ceil(span);
            let cfg = LaunchConfig {
                grid_dim: (tiles, parts, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: op.bins * tile * 4,
            };
            ("tiled", cfg, tile, span)
        };
        let name = format!("colhist_{name}_{direction}_{}", T::KERNEL_SUFFIX);
        let (w32, h32, maxval, bins) = (w as u32, h as u32, op.maxval as u32, op.bins);
        let (masked, m, ow, oh) = op.mask_args(w, h);
        // SAFETY: colhist_{global,tiled}_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow,
        // oh, counts) in colhist.cu; `src` holds the w x h frame, `counts` bins x lines counters.
        unsafe {
            launch!(self.gpu, kernels::COLHIST, name, cfg;
                src, &w32, &h32, &maxval, &bins, &tile, &span,
                &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, counts)
        }?;
        Ok(())
    }

    /// [`ColHistPlan::queue`] for at most [`PAIR_MAX_BINS`] bins: columns by `colhist_pairs_*` in
    /// colhist.cu, blocks of [`PAIR_TILE`] columns by `span` rows; rows by
    /// `colhist_warp_rows_*`, a warp per row.
    fn queue_small<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        let (op, w, h) = (&self.op, self.w, self.h);
        let (masked, m, ow, oh) = op.mask_args(w, h);
        let (w32, h32, maxval, bins, tile) =
            (w as u32, h as u32, op.maxval as u32, op.bins, PAIR_TILE as u32);
        let Some(pairs) = self.pairs else {
            // Each warp stores its row's whole histogram: nothing to zero.
            let warps = (ROW_THREADS / 32) as usize;
            // h < 2^32 (for_frame), so at most 2^29 blocks: within the grid's 2^31 - 1.
            let blocks = h.div_ceil(warps);
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (ROW_THREADS, 1, 1),
                shared_mem_bytes: op.bins * warps as u32 * 4,
            };
            let name = format!("colhist_warp_rows_{}", T::KERNEL_SUFFIX);
            let span = 0u32;
            // SAFETY: colhist_warp_rows_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow,
            // oh, counts) in colhist.cu; `src` holds the w x h frame, `counts` bins x h counters.
            unsafe {
                launch!(self.gpu, kernels::COLHIST, name, cfg;
                    src, &w32, &h32, &maxval, &bins, &tile, &span,
                    &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, counts)
            }?;
            return Ok(());
        };
        let cfg = LaunchConfig {
            grid_dim: (pairs.tiles as u32, pairs.parts as u32, 1),
            block_dim: (PAIR_THREADS, 1, 1),
            shared_mem_bytes: op.bins * 32 * 4,
        };
        if pairs.parts > 1 {
            // The next launch on this stream reuses the plan's scratch only after this kernel.
            self.gpu.stream().memset_zeros(&mut self.done.slice_mut(..pairs.tiles))?;
        }
        let name = format!("colhist_pairs_{}", T::KERNEL_SUFFIX);
        let span = pairs.span as u32;
        // SAFETY: colhist_pairs_*(px, w, h, maxval, bins, tile, span, masked, a..f, ow, oh,
        // counts, partials, done) in colhist.cu; `src` holds the w x h frame, `counts` bins x w
        // counters, the scratch was sized for this shape (`ColHist::plan`).
        unsafe {
            launch!(self.gpu, kernels::COLHIST, name, cfg;
                src, &w32, &h32, &maxval, &bins, &tile, &span,
                &masked, &m.a, &m.b, &m.c, &m.d, &m.e, &m.f, &ow, &oh, counts,
                &mut *self.partials, &mut *self.done)
        }?;
        Ok(())
    }
}

impl Op for ColHist {
    type Output = Histograms;

    fn cpu(&self, frame: &Frame) -> Result<Histograms, OpError> {
        let counts = with_samples!(&frame.pixels, v => self.cpu_counts(frame.width, frame.height, v));
        Ok(self.histograms(frame, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Histograms, OpError> {
        let counts = with_samples!(&frame.pixels, v => self.gpu_counts(gpu, frame.width, frame.height, v)?);
        Ok(self.histograms(frame, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::{Affine, Pixels};

    #[test]
    fn bins_split_the_value_range_evenly() {
        assert_eq!(default_bins(255), 256);
        assert_eq!(default_bins(100), 101);
        assert_eq!(default_bins(1076), 256);
        assert_eq!(bin_of(255, 256, 255), 255);
        assert_eq!(bin_of(127, 2, 255), 0);
        assert_eq!(bin_of(128, 2, 255), 1);
        assert_eq!(bin_of(65535, 65536, 65535), 65535);
        assert_eq!(bin_of(300, 4, 255), 3);
        let h = ColHist { bins: 3, rows: false, maxval: 9, mask: None };
        // 10 values in 3 bins: 0..=3, 4..=6, 7..=9
        assert_eq!((h.bin_range(0), h.bin_range(1), h.bin_range(2)), ((0, 3), (4, 6), (7, 9)));
        let f = Frame::new(1, 1, 3, Pixels::U8(vec![0].into()));
        let too_many = ColHistParams { bins: Some(5), ..Default::default() }.for_frame(&f);
        assert!(too_many.unwrap_err().message.contains("--bins 5: a frame with maxval 3 has 1 to 4 bins"));
    }

    #[test]
    fn strips_and_spans_count_as_testing_every_pixel() {
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed >> 8
        };
        let turned =
            Geometry::identity(150, 90).then(&Affine { a: 0.8, b: -0.6, c: 30.0, d: 0.6, e: 0.8, f: -40.0 });
        // 8-bit and 16-bit, widths across strip boundaries, bins dividing evenly or not.
        for (w, h, maxval, bins) in
            [(200, 70, 255, None), (130, 9, 255, Some(7)), (77, 40, 1076, None), (65, 3, 300, Some(301))]
        {
            let n = w * h;
            let pixels = if maxval <= 255 {
                Pixels::U8(
                    (0..n).map(|i| if i % 3 == 0 { (i / 11 % 256) as u8 } else { next() as u8 }).collect(),
                )
            } else {
                Pixels::U16((0..n).map(|_| (next() % (maxval as u32 + 1)) as u16).collect())
            };
            let mut f = Frame::new(w, h, maxval, pixels);
            for geometry in [None, Some(turned.clone())] {
                f.geometry = geometry;
                for rows in [false, true] {
                    let op = ColHistParams { bins, rows, count_padding: false }.for_frame(&f).unwrap();
                    let mut expected = vec![0u32; op.bins as usize * op.lines(w, h)];
                    with_samples!(&f.pixels, v => op.cpu_counts_per_pixel(w, h, v, &mut expected));
                    assert_eq!(op.cpu(&f).unwrap().counts, expected, "{w}x{h}, maxval {maxval}, rows {rows}");
                }
            }
        }
    }

    /// Every CPU count of `f` (columns and rows, with and without `geometry`, each `bins`) is the
    /// per-pixel count's.
    fn assert_counts_as_every_pixel(f: &mut Frame, geometries: &[Option<Geometry>], bins: &[Option<u32>]) {
        let (w, h) = (f.width, f.height);
        for geometry in geometries {
            f.geometry = geometry.clone();
            for &bins in bins {
                for rows in [false, true] {
                    let op = ColHistParams { bins, rows, count_padding: false }.for_frame(f).unwrap();
                    let mut expected = vec![0u32; op.bins as usize * op.lines(w, h)];
                    with_samples!(&f.pixels, v => op.cpu_counts_per_pixel(w, h, v, &mut expected));
                    let got = op.cpu(f).unwrap().counts;
                    assert!(
                        got == expected,
                        "{w}x{h}, maxval {}, {} bins, rows {rows}, geometry {}",
                        f.maxval,
                        op.bins,
                        geometry.is_some()
                    );
                }
            }
        }
    }

    /// Rotated by `turn` radians about the centre of a `w x h` original.
    fn turned(w: usize, h: usize, turn: f64) -> Geometry {
        let (s, c) = turn.sin_cos();
        let (cx, cy) = (w as f64 / 2.0, h as f64 / 2.0);
        let m = Affine { a: c, b: -s, c: cx - c * cx + s * cy, d: s, e: c, f: cy - s * cx - c * cy };
        Geometry::identity(w, h).then(&m)
    }

    #[test]
    fn groups_bands_and_partial_strips_count_as_every_pixel() {
        let mut rng = fastrand::Rng::with_seed(11);
        // Widths around the strip (32) and group (128) sizes, heights across bands (128 rows).
        let shapes = [
            (1, 1),
            (1, 700),
            (700, 1),
            (2, 3),
            (31, 5),
            (32, 4),
            (33, 9),
            (127, 3),
            (128, 2),
            (129, 515),
            (161, 64),
            (300, 1030),
        ];
        for (w, h) in shapes {
            let geometries = [None, Some(turned(w, h, 0.5)), Some(turned(w, h, 2.0))];
            // Uniform random bytes, and runs of equal values down and across the columns.
            let mut f = Frame::new(w, h, 255, Pixels::U8((0..w * h).map(|_| rng.u8(..)).collect()));
            assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(256), Some(7), Some(1)]);
            f.pixels = Pixels::U8((0..w * h).map(|i| ((i % w) / 5 + (i / w) / 3) as u8).collect());
            assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(100)]);
            let mut f = Frame::new(w, h, 100, Pixels::U8((0..w * h).map(|_| rng.u8(..=120)).collect()));
            assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(3)]);
            let mut f = Frame::new(w, h, 1076, Pixels::U16((0..w * h).map(|_| rng.u16(..=1076)).collect()));
            assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(1077)]);
        }
    }

    /// Split over any number of threads, the counts are the one thread's: columns and rows, 8-
    /// and 16-bit, with and without a geometry, bin counts dividing the levels evenly or not.
    #[test]
    fn every_split_counts_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(17);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            for (maxval, bins) in [(255, None), (255, Some(7)), (200, None), (1076, None), (1076, Some(1077))]
            {
                let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
                for geometry in [None, Some(turned(w, h, 0.7))] {
                    f.geometry = geometry;
                    for rows in [false, true] {
                        let op = ColHistParams { bins, rows, count_padding: false }.for_frame(&f).unwrap();
                        let what = format!("{w}x{h} maxval {maxval} {bins:?} rows {rows}");
                        parallel::testing::same_on_each_pool(&what, || op.cpu(&f).unwrap());
                    }
                }
            }
        }
    }

    #[test]
    fn columns_taller_than_the_narrow_counters_hold() {
        // 131 100 rows: the 16-bit counters are added to the counts twice before the end, and a
        // column of one value reaches 65 408 counts between flushes. 129 columns: a whole group
        // and one of a single column.
        let (w, h) = (129, 131_100);
        let mut rng = fastrand::Rng::with_seed(5);
        let pixels = (0..w * h).map(|i| if i % w < 40 { (i % w) as u8 } else { rng.u8(..) }).collect();
        let mut f = Frame::new(w, h, 255, Pixels::U8(pixels));
        assert_counts_as_every_pixel(&mut f, &[None, Some(turned(w, h, 1.5))], &[None]);
        f.geometry = None;
        let counts = ColHistParams::default().for_frame(&f).unwrap().cpu(&f).unwrap();
        assert_eq!(counts.get(7, 7), h as u32);
    }

    #[test]
    fn the_camera_fixture_counts_as_every_pixel() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/camera.pgm");
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let mut f = histopipe_frame::FrameReader::new(file, histopipe_frame::ReadOptions::default())
            .next_frame()
            .unwrap()
            .unwrap();
        let (w, h) = (f.width, f.height);
        assert!(matches!(f.pixels, Pixels::U8(_)));
        assert_counts_as_every_pixel(&mut f, &[None, Some(turned(w, h, 0.3))], &[None, Some(16)]);
    }

    /// A part of a column, gathered by [`ColHist::column`] and counted alone, is the whole
    /// frame's column over those rows: 8- and 16-bit, with and without a mask, rows of padding
    /// only, none at all.
    #[test]
    fn a_columns_rows_count_as_in_the_whole_frame() {
        let mut rng = fastrand::Rng::with_seed(23);
        let (w, h) = (70, 90);
        for maxval in [255u16, 1076] {
            let pixels = match maxval {
                255 => Pixels::U8((0..w * h).map(|_| rng.u8(..)).collect()),
                _ => Pixels::U16((0..w * h).map(|_| rng.u16(..=maxval)).collect()),
            };
            let mut f = Frame::new(w, h, maxval, pixels);
            for geometry in [None, Some(turned(w, h, 0.6))] {
                f.geometry = geometry;
                let op = ColHistParams::default().for_frame(&f).unwrap();
                let whole = op.cpu(&f).unwrap();
                for (x, rows) in [(0, 0..h), (35, 0..h), (35, 10..61), (69, 89..90), (20, 40..40)] {
                    let (one, column) = op.column(&f, x, rows.clone());
                    assert_eq!((column.width, column.geometry.as_ref()), (1, None));
                    let got = one.cpu(&column).unwrap();
                    let mut expected = vec![0u32; op.bins as usize];
                    for y in rows.clone() {
                        if f.geometry.as_ref().is_none_or(|g| g.is_original(x as f64, y as f64)) {
                            expected[bin_of(f.pixels.get(y * w + x) as u32, op.bins, maxval) as usize] += 1;
                        }
                    }
                    assert_eq!((got.lines, &got.counts), (1, &expected), "column {x} rows {rows:?}");
                    if rows == (0..h) {
                        let full: Vec<u32> = (0..whole.bins).map(|b| whole.get(b, x)).collect();
                        assert_eq!(got.counts, full, "column {x}");
                    }
                }
            }
        }
    }

    #[test]
    fn counts_columns_rows_and_only_data_pixels() {
        let mut f = Frame::new(3, 2, 3, Pixels::U8(vec![0, 1, 3, 0, 3, 3].into()));
        let all = ColHistParams { bins: None, rows: false, count_padding: false }.for_frame(&f).unwrap();
        let h = all.cpu(&f).unwrap();
        assert_eq!((h.bins, h.lines), (4, 3));
        assert_eq!(h.counts, vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
        let rows = ColHistParams { bins: Some(2), rows: true, count_padding: false }.for_frame(&f).unwrap();
        assert_eq!(rows.cpu(&f).unwrap().counts, vec![2, 1, 1, 2]);
        // Column 0 is padding.
        f.geometry = Some(Geometry::identity(2, 2).then(&Affine::translation(-1.0, 0.0)));
        assert_eq!(all.cpu(&f).unwrap().counts, h.counts);
        let masked = ColHistParams::default().for_frame(&f).unwrap();
        assert_eq!(masked.cpu(&f).unwrap().counts, vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
        let padding = ColHistParams { count_padding: true, ..Default::default() }.for_frame(&f).unwrap();
        assert_eq!(padding.cpu(&f).unwrap().counts, h.counts);
    }
}
