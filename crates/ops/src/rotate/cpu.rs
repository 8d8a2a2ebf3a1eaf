//! `rotate` on the CPU, the reference: quarter turns as exact permutations, general turns output
//! row by output row, each row's interior run evaluated by a kernel ([`Kernel`]: portable code,
//! or `super::avx2`) and its edges by [`sample_at`], the per-pixel definition.

use std::mem::MaybeUninit;
use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use super::avx2;
use super::row_map::{RowMap, TILE_W};
use super::{Interpolation, Rotate, Turn};
use crate::{canonical_nan, parallel, Element};

/// Exact floor((s + 1) / 2) for a doubled coordinate s: the half-up rounding of s / 2.
fn halve_rounding_up(s: i64) -> i64 {
    (s + 1).div_euclid(2)
}

impl Rotate {
    pub(super) fn cpu_samples<T: Blend>(&self, input: &[T]) -> Vec<T> {
        self.cpu_samples_with(input, Kernel::detect())
    }

    /// [`Self::cpu_samples`] with the interior runs of general turns evaluated by `kernel`. Bands
    /// of output rows are made on the pool's threads (see [`MIN_SPLIT`]); each pixel is the same
    /// function of the input whichever band it is in.
    pub(super) fn cpu_samples_with<T: Blend>(&self, input: &[T], kernel: Kernel) -> Vec<T> {
        let (w, h) = (self.width, self.height);
        let (ow, oh) = (self.out_width, self.out_height);
        let n = ow * oh;
        // The SIMD kernels form indices y w + x in f64, exact (and below 2^52) only here, and read
        // the input unchecked (the portable kernel checks, as it always did).
        let fits = (w as u64).saturating_mul(h as u64) < 1 << 52 && input.len() >= w * h;
        let kernel = if fits { kernel } else { Kernel::Scalar };
        let parts =
            parallel::parts_split_finely(n, parallel::split_from(MIN_SPLIT), MIN_PART, PARTS_PER_THREAD);
        let band = oh.div_ceil(parts) * ow;
        let rows_of = |first: usize, part: &mut [MaybeUninit<T>]| {
            let rows = first / ow..(first + part.len()) / ow;
            match self.turn {
                Turn::Quarter(q) => self.quarter(input, q, rows, part),
                Turn::Angle { .. } => self.affine(input, kernel, rows, part),
            }
        };
        // SAFETY: the parts are of whole rows, and `quarter` and `affine` write every sample of
        // their rows.
        unsafe { parallel::output_in_parts(n, band, rows_of) }
    }

    /// Writes the output rows `rows` of the quarter turn `q` to `out` (those rows' samples).
    fn quarter<T: Element>(&self, input: &[T], q: u8, rows: Range<usize>, out: &mut [MaybeUninit<T>]) {
        let ow = self.out_width;
        for (y, line) in rows.zip(out.chunks_exact_mut(ow)) {
            self.quarter_span(input, q, y, 0..ow, line);
        }
    }

    /// Writes the pixels `xs` of output row `y` of the quarter turn `q` to `out` (as long as `xs`).
    fn quarter_span<T: Element>(
        &self,
        input: &[T],
        q: u8,
        y: usize,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        let (w, h) = (self.width, self.height);
        let fill = T::from_fill(self.fill);
        for (x, slot) in xs.zip(out) {
            let (sx, sy) = self.quarter_source(q, x, y);
            let inside = sx >= 0 && sy >= 0 && sx < w as i64 && sy < h as i64;
            slot.write(if inside { input[sy as usize * w + sx as usize] } else { fill });
        }
    }

    /// The input pixel `(sx, sy)` (maybe outside the input) of output pixel `(x, y)` of the
    /// quarter turn `q`. Along an output row it moves a pixel per pixel: +x for q = 0, +y for
    /// q = 1, -x for q = 2, -y for q = 3 (floor((2 x + k + 1) / 2) is x plus a constant).
    fn quarter_source(&self, q: u8, x: usize, y: usize) -> (i64, i64) {
        let (ow, oh) = (self.out_width as i64, self.out_height as i64);
        let (w2, h2) = (self.width as i64 - 1, self.height as i64 - 1);
        // Doubled offsets from the output's centre keep half-pixel centres in integers; they
        // are the input's offsets from its own centre, turned.
        let (dx, dy) = (2 * x as i64 - (ow - 1), 2 * y as i64 - (oh - 1));
        let (sx2, sy2) = match q & 3 {
            0 => (dx, dy),
            1 => (-dy, dx),
            2 => (-dx, -dy),
            _ => (dy, -dx),
        };
        (halve_rounding_up(sx2 + w2), halve_rounding_up(sy2 + h2))
    }

    /// Counts the samples `xs` of output row `y` of the quarter turn `q` of the 8-bit `input`
    /// in their columns' counters (`counts[x - xs.start][v] += 1`), the samples
    /// [`Self::quarter_span`] writes: the source pixel stepped along the row, not made anew
    /// each pixel. Odd turns read down input columns, each output row the next column over: a
    /// line ahead is asked for (64 output rows on), as no prefetcher foresees those lines.
    fn quarter_count(&self, input: &[u8], q: u8, y: usize, xs: Range<usize>, counts: &mut [ColumnCounts]) {
        let (w, h) = (self.width as i64, self.height as i64);
        let fill = u8::from_fill(self.fill) as usize;
        let Some(last) = xs.end.checked_sub(1) else { return };
        let (mut sx, mut sy) = self.quarter_source(q, xs.start, y);
        let (step_x, step_y, ahead) = match q & 3 {
            0 => (1, 0, 0),
            1 => (0, 1, -64),
            2 => (-1, 0, 0),
            _ => (0, -1, 64),
        };
        let n = (last - xs.start) as i64;
        debug_assert_eq!(self.quarter_source(q, last, y), (sx + n * step_x, sy + n * step_y));
        for column in counts {
            let v = if sx >= 0 && sy >= 0 && sx < w && sy < h {
                let i = (sy * w + sx) as usize;
                prefetch(input.as_ptr().wrapping_add(i).wrapping_offset(ahead));
                input[i] as usize
            } else {
                fill
            };
            column[v] += 1;
            (sx, sy) = (sx + step_x, sy + step_y);
        }
    }

    /// Writes the output rows `rows` of a general turn to `out` (those rows' samples), tile by
    /// tile: [`TILE_H`] rows at a time, in [`TILE_W`]-pixel columns. A tile's source points lie
    /// in a small turned square, whose cache lines (and pages) stay cached while the tile is
    /// made; a whole output row would read across a different input row every pixel or two,
    /// thousands of lines and pages. Each row of a tile asks for the output lines of the same row
    /// in the next tile, a tile before they are written (the kernels do the same for the input
    /// they will read there): written in place, each line waited for its read from memory, the
    /// store buffer holding only a line or two of one-sample stores (7680x4320 frames took 2.4
    /// times as long without either).
    fn affine<T: Blend>(&self, input: &[T], kernel: Kernel, rows: Range<usize>, out: &mut [MaybeUninit<T>]) {
        let w = self.out_width;
        let mut tile = Vec::with_capacity(TILE_H);
        for y0 in rows.clone().step_by(TILE_H) {
            tile.clear();
            tile.extend((y0..(y0 + TILE_H).min(rows.end)).map(|y| self.row(y)));
            for x0 in (0..w).step_by(TILE_W) {
                let xs = x0..(x0 + TILE_W).min(w);
                for (y, row) in (y0 - rows.start..).zip(&tile) {
                    let line = &mut out[y * w..];
                    prefetch_for_writing(line.as_ptr().wrapping_add(xs.end), TILE_W);
                    self.affine_span(input, row, xs.clone(), kernel, &mut line[xs.clone()]);
                }
            }
        }
    }

    /// Output row `y` of a general turn, split into the parts evaluated differently. Each pixel
    /// is exactly [`sample_at`] of `new_to_old().apply(x, y)`.
    ///
    /// `a x + b y + c` is evaluated as `(a x + B) + c` with `B = b y` computed once per row: the
    /// same operations in the same order as `Affine::apply`. Each coordinate, and each rounded
    /// step after it, is a monotone function of x, so the pixels whose nearest source pixel is
    /// inside (and, for bilinear, those whose four taps are) form one run of the row, found by
    /// binary search with the exact per-pixel test. Outside it is the fill value; inside it, no
    /// test and no `floor` (a library call without SSE4.1) is needed, since the coordinates there
    /// are non-negative and `floor` is truncation.
    pub(super) fn row(&self, y: usize) -> Row {
        let (w, h) = (self.width, self.height);
        let (wf, hf) = (w as f64, h as f64);
        let m = self.new_to_old();
        let map = RowMap::new(&m, y, w);
        let (sx, sy) = (|x| map.sx(x), |x| map.sy(x));
        let (x_at_0, y_at_0) = (sx(0), sy(0));
        // The nearest pixel floor(s + 0.5) is in 0..W exactly when 0 <= s + 0.5 < W (W integer).
        let ow = self.out_width;
        let (lo, hi) = intersect(
            run_within(ow, (m.a, x_at_0 + 0.5), |x| sx(x) + 0.5, wf),
            run_within(ow, (m.d, y_at_0 + 0.5), |x| sy(x) + 0.5, hf),
        );
        let (ilo, ihi) = if self.interpolation == Interpolation::Bilinear {
            // All four taps are inside when 0 <= s and floor(s) + 1 < W, that is s < W - 1; such
            // points are also inside for nearest, so this run lies within (lo, hi).
            let (i0, i1) = intersect(
                run_within(ow, (m.a, x_at_0), sx, wf - 1.0),
                run_within(ow, (m.d, y_at_0), sy, hf - 1.0),
            );
            let ilo = i0.clamp(lo, hi);
            (ilo, i1.clamp(ilo, hi))
        } else {
            (lo, hi)
        };
        Row { map, nearest: lo..hi, inner: ilo..ihi }
    }

    /// Writes the pixels `xs` of `row` to `out` (as long as `xs`).
    fn affine_span<T: Blend>(
        &self,
        input: &[T],
        row: &Row,
        xs: Range<usize>,
        kernel: Kernel,
        out: &mut [MaybeUninit<T>],
    ) {
        let (w, h) = (self.width, self.height);
        let fill = T::from_fill(self.fill);
        let map = &row.map;
        let part = |r: &Range<usize>| {
            let lo = r.start.clamp(xs.start, xs.end);
            lo..r.end.clamp(lo, xs.end)
        };
        let (near, inner) = (part(&row.nearest), part(&row.inner));
        let (left, right) = (xs.start..near.start, near.end..xs.end);
        let (edge_l, edge_r) = (near.start..inner.start, inner.end..near.end);
        let slots = |r: &Range<usize>| r.start - xs.start..r.end - xs.start;
        let edge = |x: usize| sample_at(input, w, h, map.sx(x), map.sy(x), fill, self.maxval, true);
        for (slot, x) in out[slots(&edge_l)].iter_mut().zip(edge_l) {
            slot.write(edge(x));
        }
        for (slot, x) in out[slots(&edge_r)].iter_mut().zip(edge_r) {
            slot.write(edge(x));
        }
        out[slots(&left)].fill(MaybeUninit::new(fill));
        out[slots(&right)].fill(MaybeUninit::new(fill));
        let run = &mut out[slots(&inner)];
        match self.interpolation {
            Interpolation::Nearest => kernel.nearest(input, w, map, inner, run),
            Interpolation::Bilinear => kernel.bilinear(input, w, map, self.maxval, inner, run),
        }
    }
}

/// Half the fewest output pixels for the CPU's work to be split at all ([`parallel::parts`]): 1.4
/// ns a pixel on one of the GPU machine's cores for nearest, 3 for bilinear (640x480 turned 30
/// degrees in 0.42 and 0.96 ms), so each of two parts takes 0.05 ms or more. (At 2^18, 640x651
/// stayed on one thread: 0.37 ms nearest and 0.8 to 1.3 bilinear on 16 threads, against 0.06 and
/// 0.11 split, where OpenCV took 0.05 and 0.11.)
const MIN_SPLIT: usize = 1 << 15;
/// Fewest output pixels in a part once a frame is split, and parts per thread at most: 2560x1707
/// makes 256 parts on 16 threads, for the pool to balance bands of unequal cost (those across a
/// turned frame's corners are mostly fill, and the threads share the cores' caches and memory).
/// Measured on the GPU machine's 16 threads (histopipe-bench, part timings logged per call): in 64
/// parts of at least 2^16 pixels, 2560x1707 nearest took 520 us a call, its threads started 24 to
/// 55 us in, and the busiest part ran 170 us, twice the mean, so the last parts ended late; in
/// parts of 2^14, 16 a thread, the busiest took 49 us, and the median times went from 0.74 to 0.59
/// ms (bilinear) and 0.37 to 0.36 (nearest) at 2560x1707, 2.8 to 2.1 ms and 5.9 to 4.9 at
/// 7680x4320 (the narrower bands' own cost, 7 rows at 2560x1707, is in those times). Frames of 2^18
/// pixels and more still make at most 16 parts a thread; smaller ones are split into parts of at
/// least 2^11 pixels (640x651: 203 parts).
const MIN_PART: usize = 1 << 11;
/// Parts per thread at most (see [`MIN_PART`]).
const PARTS_PER_THREAD: usize = 16;

/// Output rows per tile of a general turn (see `Rotate::affine`; its columns: [`TILE_W`]).
const TILE_H: usize = 64;

/// A column's counters of 8-bit samples for [`TurnedRows::count_span`]: `[v]` counts value v;
/// the last 32 are never counted. They pad a column's counters to 9 cache lines, so that
/// neighbouring columns' counters of one value (a photo's neighbouring columns hold alike values)
/// fall in different sets of the L1 cache: 512 bytes apart, a strip's 64 columns shared 8 of its
/// 64 sets, with the input's lines besides.
pub(crate) type ColumnCounts = [u16; COLUMN_COUNTS];

/// The length of [`ColumnCounts`].
pub(crate) const COLUMN_COUNTS: usize = 256 + 32;

/// A turn of one frame, read a span of an output row at a time without the turned frame being
/// made: every sample exactly the turned frame's (`Rotate::quarter_span`'s, or
/// `Rotate::affine_span`'s with the same rows and kernel). `colhist --angles` counts each turned
/// frame's columns this way as it reads them.
pub(crate) struct TurnedRows<'a, T> {
    turn: &'a Rotate,
    input: &'a [T],
    kernel: Kernel,
    /// The first row's number.
    first: usize,
    /// A general turn's rows; none for a quarter turn.
    rows: Vec<Row>,
}

impl Rotate {
    /// The rows `rows` of this turn of the 8-bit `input` (the frame it was made for).
    pub(crate) fn turned_rows<'a>(&'a self, input: &'a [u8], rows: Range<usize>) -> TurnedRows<'a, u8> {
        // As `cpu_samples_with`: the SIMD kernels only where their indices are exact.
        let fits = (self.width as u64).saturating_mul(self.height as u64) < 1 << 52
            && input.len() >= self.width * self.height;
        let kernel = if fits { Kernel::detect() } else { Kernel::Scalar };
        let first = rows.start;
        if let Turn::Quarter(_) = self.turn {
            return TurnedRows { turn: self, input, kernel, first, rows: Vec::new() };
        }
        // Read a strip of columns down its rows, not tile by tile: the kernels ask ahead for the
        // input that the same pixels read [`ROWS_AHEAD`] rows down (see `RowMap::next_tile`).
        let m = self.new_to_old();
        let step = |v: f64| (v * ROWS_AHEAD as f64).round() as isize;
        let below = step(m.b).wrapping_add(step(m.e).wrapping_mul(self.width as isize));
        let row = |y| {
            let mut row = self.row(y);
            row.map.next_tile = below;
            row
        };
        TurnedRows { turn: self, input, kernel, first, rows: rows.map(row).collect() }
    }
}

/// How far down a strip [`TurnedRows`] asks for input ahead of its reads: 16 rows of a 64-pixel
/// strip are about 1 us of a core's work, a few times the wait for memory.
const ROWS_AHEAD: usize = 16;

impl TurnedRows<'_, u8> {
    /// Writes the samples `xs` of output row `y` (one of these rows) to `out` (as long as `xs`).
    pub(crate) fn span(&self, y: usize, xs: Range<usize>, out: &mut [MaybeUninit<u8>]) {
        match self.turn.turn {
            Turn::Quarter(q) => self.turn.quarter_span(self.input, q, y, xs, out),
            Turn::Angle { .. } => {
                self.turn.affine_span(self.input, &self.rows[y - self.first], xs, self.kernel, out)
            }
        }
    }
}

impl TurnedRows<'_, u8> {
    /// Counts the samples `xs` of output row `y` (one of these rows) in their columns'
    /// counters: `counts[x - xs.start][v] += 1` for each pixel x of `xs` and its sample v, the
    /// sample [`Self::span`] writes. Nearest general turns are counted as they are read
    /// ([`Kernel::nearest_count`]); others are made a span at a time, then counted.
    pub(crate) fn count_span(&self, y: usize, xs: Range<usize>, counts: &mut [ColumnCounts]) {
        assert_eq!(counts.len(), xs.len());
        if let Turn::Quarter(q) = self.turn.turn {
            return self.turn.quarter_count(self.input, q, y, xs, counts);
        }
        if let (Turn::Angle { .. }, Interpolation::Nearest) = (self.turn.turn, self.turn.interpolation) {
            let row = &self.rows[y - self.first];
            let lo = row.nearest.start.clamp(xs.start, xs.end);
            let near = lo..row.nearest.end.clamp(lo, xs.end);
            let fill = u8::from_fill(self.turn.fill) as usize;
            let (left, rest) = counts.split_at_mut(near.start - xs.start);
            let (run, right) = rest.split_at_mut(near.len());
            for column in left.iter_mut().chain(right) {
                column[fill] += 1;
            }
            self.kernel.nearest_count(self.input, self.turn.width, &row.map, near, run);
            return;
        }
        let mut samples = [MaybeUninit::<u8>::uninit(); 64];
        for (x0, counts) in xs.clone().step_by(64).zip(counts.chunks_mut(64)) {
            let run = &mut samples[..counts.len()];
            self.span(y, x0..x0 + counts.len(), run);
            for (column, v) in counts.iter_mut().zip(run.iter()) {
                // SAFETY: `span` writes every sample of `run`.
                column[unsafe { v.assume_init() } as usize] += 1;
            }
        }
    }
}

/// An output row of a general turn: its map, and where it is evaluated how. Outside `nearest`
/// the output is the fill value; inside `inner` (within `nearest`) a kernel evaluates it (for
/// nearest, `inner` is `nearest`); between them, for bilinear, `sample_at` does.
pub(super) struct Row {
    pub(super) map: RowMap,
    pub(super) nearest: Range<usize>,
    pub(super) inner: Range<usize>,
}

/// Asks for the cache lines of the `n` samples from `at` (any address: a prefetch never faults,
/// and the pointer is never read), to be written soon.
#[inline(always)]
fn prefetch_for_writing<T>(at: *const T, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        let bytes = n * size_of::<T>();
        let at = at.cast::<i8>();
        for offset in (0..bytes).step_by(64).chain([bytes.saturating_sub(1)]) {
            // SAFETY: prefetching has no effect on memory, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_ET0>(at.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, n);
}

/// Asks for the cache line of `at` (any address: a prefetch never faults, and the pointer is
/// never read), to be read soon.
#[inline(always)]
fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching has no effect on memory, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// What evaluates the interior runs of general turns (see `Rotate::row`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Portable code, one pixel at a time.
    Scalar,
    /// Four pixels at a time in AVX2 registers (`super::avx2`), on CPUs that have it.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(super) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }

    /// Writes the nearest samples of the pixels `xs` of `row` to `out` (as long as `xs`).
    ///
    /// `xs` must lie in the row's nearest run: 0 <= s + 0.5 < W (resp. H) for both coordinates.
    pub(super) fn nearest<T: Element>(
        self,
        input: &[T],
        w: usize,
        row: &RowMap,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        // The pixels the AVX2 kernel wrote, four at a time; the rest are written one by one.
        #[cfg(target_arch = "x86_64")]
        let done = if self == Kernel::Avx2 {
            // SAFETY: the CPU has AVX2 (`detect`); `xs` is in the run (the caller's condition), and
            // `cpu_samples_with` picks this kernel only for frames of fewer than 2^52 pixels whose
            // input holds them all.
            unsafe { avx2::nearest(input, w, row, xs.clone(), out) }
        } else {
            0
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        for (slot, x) in out[done..].iter_mut().zip(xs.start + done..xs.end) {
            slot.write(nearest_at(input, w, row, x));
        }
    }

    /// Counts the nearest samples of the 8-bit pixels `xs` of `row` in their columns'
    /// counters (`counts[x - xs.start][v] += 1`), as [`Self::nearest`] makes them.
    ///
    /// `xs` must lie in the row's nearest run, and `counts` be as long as `xs`.
    pub(super) fn nearest_count(
        self,
        input: &[u8],
        w: usize,
        row: &RowMap,
        xs: Range<usize>,
        counts: &mut [ColumnCounts],
    ) {
        assert_eq!(counts.len(), xs.len());
        #[cfg(target_arch = "x86_64")]
        let done = if self == Kernel::Avx2 {
            // SAFETY: as in `nearest`; `counts` is as long as `xs`, and the caller's columns
            // are at most 65535 rows (`TurnedRows`' frames).
            unsafe { avx2::nearest_count(input, w, row, xs.clone(), counts) }
        } else {
            0
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        for (column, x) in counts[done..].iter_mut().zip(xs.start + done..xs.end) {
            column[nearest_at(input, w, row, x) as usize] += 1;
        }
    }

    /// Writes the bilinear samples of the pixels `xs` of `row` to `out` (as long as `xs`), at
    /// most `maxval`.
    ///
    /// `xs` must lie in the row's bilinear run: 0 <= s < W - 1 (resp. H - 1) for both coordinates.
    pub(super) fn bilinear<T: Blend>(
        self,
        input: &[T],
        w: usize,
        row: &RowMap,
        maxval: u16,
        xs: Range<usize>,
        out: &mut [MaybeUninit<T>],
    ) {
        // As in `nearest`: the pixels an AVX2 kernel wrote, and the rest.
        #[cfg(target_arch = "x86_64")]
        let done = if self == Kernel::Avx2 {
            // SAFETY: as in `nearest`, with the bilinear run.
            unsafe { T::avx2_bilinear(input, w, row, maxval, xs.clone(), out) }
        } else {
            0
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        let (xs, out) = (xs.start + done..xs.end, &mut out[done..]);
        // In chunks, two passes: the coordinates (short, independent chains), then the gathers
        // and blends. One pass per pixel makes a chain so long (conversions, a load, more
        // conversions) that the out-of-order window holds only three or four pixels.
        let end = xs.end;
        for (xs, out) in xs.step_by(CHUNK).map(|x| x..(x + CHUNK).min(end)).zip(out.chunks_mut(CHUNK)) {
            let mut at = [(0usize, 0.0f64, 0.0f64); CHUNK];
            for (x, slot) in xs.zip(&mut at) {
                *slot = bilinear_point(w, row, x);
            }
            for (slot, &(i, tx, ty)) in out.iter_mut().zip(&at) {
                slot.write(blend_at(input, w, i, tx, ty, maxval));
            }
        }
    }
}

/// The nearest sample of pixel `x` of `row`, which must be in the row's nearest run.
#[inline(always)]
fn nearest_at<T: Element>(input: &[T], w: usize, row: &RowMap, x: usize) -> T {
    // SAFETY: in the run, 0 <= s + 0.5 < W (resp. H) <= 2^32.
    let (nx, ny) = unsafe { (to_index(row.sx(x) + 0.5), to_index(row.sy(x) + 0.5)) };
    input[ny * w + nx]
}

/// The top-left tap's index and the weights `(tx, ty)` of pixel `x` of `row`, which must be in
/// the row's bilinear run: `floor(s)` and `s - floor(s)` for both coordinates.
#[inline(always)]
fn bilinear_point(w: usize, row: &RowMap, x: usize) -> (usize, f64, f64) {
    let (sx, sy) = (row.sx(x), row.sy(x));
    // SAFETY: in the run, 0 <= s < W - 1 (resp. H - 1) < 2^32.
    let (ix, iy) = unsafe { (to_index(sx), to_index(sy)) };
    (iy * w + ix, sx - ix as i64 as f64, sy - iy as i64 as f64)
}

/// Pixels per pass of the portable bilinear loop (see `Kernel::bilinear`).
const CHUNK: usize = 64;

/// The bilinear blend of the four pixels `i`, `i + 1`, `i + w`, `i + w + 1` with weights `tx`,
/// `ty` in 0..1, made a sample by [`Blend::finish`]: the end of [`sample_at`] when all four taps
/// are inside.
#[inline(always)]
fn blend_at<T: Blend>(input: &[T], w: usize, i: usize, tx: f64, ty: f64, maxval: u16) -> T {
    let (r0, r1) = (&input[i..i + 2], &input[i + w..i + w + 2]);
    let (p00, p10, p01, p11) = (r0[0].tap(), r0[1].tap(), r1[0].tap(), r1[1].tap());
    let top = (1.0 - tx) * p00 + tx * p10;
    let bottom = (1.0 - tx) * p01 + tx * p11;
    T::finish((1.0 - ty) * top + ty * bottom, maxval)
}

/// What bilinear interpolation needs of a sample type: a tap's value, and the output sample of a
/// blend. The kernel `rotate_pixel` in rotate.cu has the same two steps per type.
pub(super) trait Blend: Element {
    /// The sample as `f64` (exact for every type).
    fn tap(self) -> f64;
    /// The output sample of the blend `v = (1 - ty) top + ty bottom`: integers round half up,
    /// floor(v + 0.5), at most `maxval`; floats round to the nearest `f32` (ties to even), and
    /// a NaN blend is the quiet NaN `0x7FC00000` (so that both backends give the same bits,
    /// whatever NaN payloads their arithmetic keeps).
    fn finish(v: f64, maxval: u16) -> Self;
    /// Writes the first pixels of the bilinear run `xs` of `row` with AVX2 where this type has
    /// such a kernel (`avx2::bilinear`), returning how many it wrote (none without one).
    ///
    /// # Safety
    /// As `avx2::bilinear`'s.
    #[cfg(target_arch = "x86_64")]
    unsafe fn avx2_bilinear(
        _input: &[Self],
        _w: usize,
        _row: &RowMap,
        _maxval: u16,
        _xs: Range<usize>,
        _out: &mut [MaybeUninit<Self>],
    ) -> usize {
        0
    }
}

macro_rules! integer_blend {
    ($t:ty) => {
        impl Blend for $t {
            fn tap(self) -> f64 {
                self as f64
            }
            fn finish(v: f64, maxval: u16) -> $t {
                // At least 0.5 (non-negative taps and weights), at most 65535.5: the floor is a
                // truncation, and the clamp commutes with it.
                // SAFETY: that range.
                unsafe { to_index(v + 0.5) }.min(maxval as usize) as $t
            }
            #[cfg(target_arch = "x86_64")]
            unsafe fn avx2_bilinear(
                input: &[$t],
                w: usize,
                row: &RowMap,
                maxval: u16,
                xs: Range<usize>,
                out: &mut [MaybeUninit<$t>],
            ) -> usize {
                // SAFETY: the caller's contract, avx2::bilinear's.
                unsafe { avx2::bilinear(input, w, row, maxval, xs, out) }
            }
        }
    };
}
integer_blend!(u8);
integer_blend!(u16);

impl Blend for f32 {
    fn tap(self) -> f64 {
        self as f64
    }
    fn finish(v: f64, _maxval: u16) -> f32 {
        canonical_nan(v as f32)
    }
}

/// The run `lo..hi` of `0..n` where `0 <= v(x) < limit`, for `v` non-decreasing in x when
/// `slope >= 0`, else non-increasing (constant either way): each bound is where a monotone test
/// flips, found with the exact test. `(slope, intercept)` is a line close to `v`, which only
/// says where to look first: the bounds are exact whatever it is.
fn run_within(
    n: usize,
    (slope, intercept): (f64, f64),
    v: impl Fn(usize) -> f64,
    limit: f64,
) -> (usize, usize) {
    let (at_least_zero, below_limit) = (|x| v(x) >= 0.0, |x| v(x) < limit);
    // Where the line crosses `t`; `as` saturates (NaN, for a constant line, is 0).
    let near = |t: f64| ((t - intercept) / slope) as usize;
    let (lo, hi) = if slope >= 0.0 {
        (first(n, near(0.0), at_least_zero), first(n, near(limit), |x| !below_limit(x)))
    } else {
        (first(n, near(limit), below_limit), first(n, near(0.0), |x| !at_least_zero(x)))
    };
    (lo, hi.max(lo))
}

/// The first x in `0..n` where `test` holds (`n` if none), for a test that is false, then true:
/// bracketed by steps doubling away from `guess`, then found by bisection. A few tests when the
/// guess is off by a pixel or two, about 2 log2 n at worst.
pub(super) fn first(n: usize, guess: usize, test: impl Fn(usize) -> bool) -> usize {
    if n == 0 {
        return 0;
    }
    let g = guess.min(n - 1);
    // The answer is in lo..=hi: the test fails below lo, and holds at hi (or hi = n).
    let (mut lo, mut hi) = (0, n);
    let mut step = 1;
    if test(g) {
        hi = g;
        while hi > 0 {
            let probe = hi.saturating_sub(step);
            if !test(probe) {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step *= 2;
        }
    } else {
        lo = g + 1;
        while lo < n {
            let probe = (g + step).min(n - 1);
            if test(probe) {
                hi = probe;
                break;
            }
            lo = probe + 1;
            step *= 2;
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if test(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The common part of two runs, as a run `lo..hi` with `lo <= hi`.
fn intersect((a0, a1): (usize, usize), (b0, b1): (usize, usize)) -> (usize, usize) {
    let lo = a0.max(b0);
    (lo, a1.min(b1).max(lo))
}

/// floor(v) for v in `0..2^52`, where it is truncation: one instruction, where `as` adds the
/// saturation and NaN tests (a seventh of the bilinear loop's time).
///
/// # Safety
/// `v` must be in `0..2^52` (finite and representable, as `f64::to_int_unchecked` requires).
unsafe fn to_index(v: f64) -> usize {
    debug_assert!((0.0..4503599627370496.0).contains(&v), "{v}");
    // SAFETY: the caller's contract above.
    unsafe { v.to_int_unchecked::<i64>() as usize }
}

/// The sample at input point (sx, sy). A point whose nearest pixel is outside the input takes the
/// fill value; for bilinear, neighbours outside the input count as the fill value. The kernel
/// `rotate_pixel` in rotate.cu repeats this operation for operation.
#[allow(clippy::too_many_arguments)]
pub(super) fn sample_at<T: Blend>(
    input: &[T],
    w: usize,
    h: usize,
    sx: f64,
    sy: f64,
    fill: T,
    maxval: u16,
    bilinear: bool,
) -> T {
    let (wf, hf) = (w as f64, h as f64);
    let (nx, ny) = ((sx + 0.5).floor(), (sy + 0.5).floor());
    if !(nx >= 0.0 && ny >= 0.0 && nx < wf && ny < hf) {
        return fill;
    }
    if !bilinear {
        return input[ny as usize * w + nx as usize];
    }
    let (x0, y0) = (sx.floor(), sy.floor());
    let (tx, ty) = (sx - x0, sy - y0);
    let at = |x: f64, y: f64| -> f64 {
        let v =
            if x >= 0.0 && y >= 0.0 && x < wf && y < hf { input[y as usize * w + x as usize] } else { fill };
        v.tap()
    };
    let (p00, p10, p01, p11) = (at(x0, y0), at(x0 + 1.0, y0), at(x0, y0 + 1.0), at(x0 + 1.0, y0 + 1.0));
    let top = (1.0 - tx) * p00 + tx * p10;
    let bottom = (1.0 - tx) * p01 + tx * p11;
    T::finish((1.0 - ty) * top + ty * bottom, maxval)
}

#[cfg(test)]
mod counts {
    use std::mem::MaybeUninit;

    use histopipe_frame::{Frame, Pixels};

    use super::{ColumnCounts, Kernel, TurnedRows, COLUMN_COUNTS};
    use crate::rotate::{Interpolation, RotateBy, RotateParams};
    use crate::Fill;

    /// Every way this CPU counts a span (`count_span`: the portable kernel, AVX2, quarter
    /// turns stepped) counts the samples `span` makes: random 8-bit frames and turns,
    /// both interpolations, `expand`, random spans of random rows, counters already holding
    /// counts.
    #[test]
    fn each_kernel_counts_the_samples_span_makes() {
        let seed = fastrand::u64(..);
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut kernels = vec![Kernel::Scalar];
        if Kernel::detect() != Kernel::Scalar {
            kernels.push(Kernel::detect());
        }
        for _ in 0..40 {
            let (w, h) = (rng.usize(1..300), rng.usize(1..300));
            let input: Vec<u8> = (0..w * h).map(|_| rng.u8(..)).collect();
            let frame = Frame::new(w, h, 255, Pixels::U8(input.clone().into()));
            let degrees = if rng.bool() { 90.0 * rng.i8(-4..=4) as f64 } else { rng.f64() * 720.0 - 360.0 };
            let interpolation = if rng.bool() { Interpolation::Nearest } else { Interpolation::Bilinear };
            let by = RotateBy::Degrees(degrees);
            let params =
                RotateParams { by, interpolation, fill: Fill::Int(rng.u16(0..256)), expand: rng.bool() };
            let r = params.for_frame(&frame).unwrap();
            let what = format!("seed {seed}: {w}x{h} {degrees} {interpolation:?}");
            let rows = r.turned_rows(&input, 0..r.out_height);
            for _ in 0..20 {
                let y = rng.usize(0..r.out_height);
                let x0 = rng.usize(0..r.out_width);
                let xs = x0..rng.usize(x0 + 1..=r.out_width);
                let mut samples = vec![MaybeUninit::uninit(); xs.len()];
                rows.span(y, xs.clone(), &mut samples);
                let start: Vec<ColumnCounts> = xs.clone().map(|_| [rng.u16(..1000); COLUMN_COUNTS]).collect();
                let mut expected = start.clone();
                for (column, v) in expected.iter_mut().zip(&samples) {
                    // SAFETY: `span` writes every sample.
                    column[unsafe { v.assume_init() } as usize] += 1;
                }
                for &kernel in &kernels {
                    let rows = TurnedRows { kernel, ..r.turned_rows(&input, y..y + 1) };
                    let mut got = start.clone();
                    rows.count_span(y, xs.clone(), &mut got);
                    assert!(got == expected, "{what}, row {y}, {xs:?}, {kernel:?}");
                }
            }
        }
    }
}
