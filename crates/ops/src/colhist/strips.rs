//! `colhist`'s fast path on the CPU: columns of 8-bit samples counted into 16-bit counters, strip
//! by strip of [`BYTE_STRIP`] columns, in groups and bands sized for the caches and the TLB.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::Mutex;

/// Columns of 8-bit samples counted together on the CPU: their 16-bit counters take 16 KiB, half
/// an L1 data cache, the rest left to the rows being read (measured: 32 columns a little faster
/// than 64 or 128 on random content; narrower strips spend more per row than per sample).
pub(super) const BYTE_STRIP: usize = 32;
/// Columns of 8-bit samples read together: the strips of a group are counted one after the other
/// over the same band of rows, so each row's cache lines and page translation, fetched for the
/// first strip, serve the other three from the L2 cache and TLB. Their counters, 64 KiB, stay in
/// the L2 cache between bands.
const BYTE_GROUP: usize = 4 * BYTE_STRIP;
/// The columns a chunk of the 8-bit count is made of when the lines are split into `parts` for
/// the pool's threads (4 a thread): whole groups where there are at least half as many as parts (2
/// a thread), else whole 64-byte lines of a row (2 strips) on the same terms, else strips. Chunks
/// of one strip read half a cache line of each row, whose other half a neighbouring chunk, on
/// another thread, reads again, and they lose the group's sharing of each row's line and page
/// translation. Measured on the GPU machine's 16 threads, random content, the lowest median of 2
/// or 3 rounds in each of two calls (parts of one strip, two, a group; ms): 2560x1707 0.68 to
/// 0.74, 0.53 to 0.62, 0.48 to 0.73; 3932x4000 1.45 to 1.67, 1.18 to 1.45, 1.22 to 1.66;
/// 4096x3112 1.18 to 1.29, 1.01 to 1.40, 1.04 to 1.30; 7680x4320 2.42 to 2.83, 2.19 to 3.31,
/// 2.34 to 2.77. Two strips or a group, which of them the noise did not tell. (Tiles of 256 to
/// 1024 columns by 2 or 4 bands of rows, whose bands' counts are then added, were slower at every
/// size: 3932x4000 random 1.39 to 1.67 ms against 1.26 with this rule, 1.43 with strips.)
pub(super) fn byte_part_columns(lines: usize, parts: usize) -> usize {
    [BYTE_GROUP, 2 * BYTE_STRIP].into_iter().find(|&unit| 2 * (lines / unit) >= parts).unwrap_or(BYTE_STRIP)
}

/// The 8-bit count's columns shared out among its workers, one a thread, in chunks of `unit`
/// columns ([`byte_part_columns`]): each worker has a region of consecutive chunks, which it
/// takes from the front; a worker whose region is empty takes the last chunk of the region with
/// the most left (work stealing). A thread that starts late, or runs slower beside the others,
/// has its region's last chunks taken by the others, and the frame does not wait on it; yet the
/// chunks a thread counts are consecutive but for those it takes from another region, so two
/// threads seldom write neighbouring columns' counts at once. (Chunks handed out in turn from one
/// cursor did: neighbouring chunks on two threads, ending together, wrote the 64-byte lines their
/// counts share in each bin's row at once, and on 2 threads of the build machine 2560x1707 random
/// took 1.5 to 1.8 ms against 0.93 to 0.96 for fixed parts; the profile showed the zeroing and
/// storing of the counts at 55% of the time, against 11%. On the GPU machine's 16 threads, the
/// lowest of 3 rounds' medians, fixed parts, one cursor and regions, ms: random 2560x1707 0.56,
/// 0.46, 0.43; 3932x4000 1.30, 1.22, 1.11; 4096x3112 1.03, 0.99, 0.97; 7680x4320 2.28, 2.28,
/// 2.10; real 0.53, 0.47, 0.42; 1.22, 1.23, 1.10; 1.05, 1.05, 0.95; 2.25, 2.15, 2.10. On 2
/// threads regions and fixed parts timed alike, the cursor 10 to 40% slower.)
pub(super) struct ChunkRegions {
    unit: usize,
    lines: usize,
    /// Each worker's chunks not yet taken, by index (chunk i is columns unit i .. unit (i + 1)).
    regions: Vec<Region>,
}

/// A worker's chunks left, alone in its cache lines (the workers lock their own regions, and their
/// locks should not share a line).
#[repr(align(128))]
struct Region(Mutex<Range<usize>>);

impl Region {
    fn lock(&self) -> std::sync::MutexGuard<'_, Range<usize>> {
        // Nothing panics while a region is locked (ranges are only read and shortened).
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ChunkRegions {
    /// The `lines` columns in chunks of `unit`, in up to `workers` regions of as equal a number
    /// of chunks as can be (at least one chunk each).
    pub(super) fn new(lines: usize, unit: usize, workers: usize) -> ChunkRegions {
        let unit = unit.max(1);
        let chunks = lines.div_ceil(unit);
        let workers = workers.clamp(1, chunks.max(1));
        let regions = (0..workers)
            .map(|i| Region(Mutex::new(i * chunks / workers..(i + 1) * chunks / workers)))
            .collect();
        ChunkRegions { unit, lines, regions }
    }

    /// The number of workers (of regions).
    pub(super) fn workers(&self) -> usize {
        self.regions.len()
    }

    /// The columns of worker `home`'s next chunk: the first left in its region, else the last of
    /// the region with the most left; `None` once every chunk is taken.
    pub(super) fn next(&self, home: usize) -> Option<Range<usize>> {
        let own = self.regions[home].lock().next();
        let chunk = own.or_else(|| self.steal())?;
        Some(chunk * self.unit..((chunk + 1) * self.unit).min(self.lines))
    }

    fn steal(&self) -> Option<usize> {
        loop {
            let (fullest, left) = self
                .regions
                .iter()
                .enumerate()
                .map(|(i, r)| (i, r.lock().len()))
                .max_by_key(|&(_, left)| left)?;
            if left == 0 {
                return None;
            }
            // Another worker may have taken it meanwhile: look again.
            if let Some(chunk) = self.regions[fullest].lock().next_back() {
                return Some(chunk);
            }
        }
    }
}

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
/// counted into its own [`ByteStrip`]. `counts` (bin b's counts of the columns in `counts[b]`)
/// receives them every [`BYTE_FLUSH_BANDS`] bands and at the end of the group; every count is
/// stored at its group's first flush, so `counts` need not be initialised. Only
/// `spans[y]` of row `y` is counted; `MASKED` false: every span is the whole row, and they are
/// not read.
///
/// Not inlined: each instance (table or not, masked or not) gets registers of its own; inlined
/// together into their caller they spilled in the loops (measured 8% slower).
#[inline(never)]
pub(super) fn count_columns_8bit<const MASKED: bool>(
    w: usize,
    input: &[u8],
    bin: impl Fn(u8) -> u8,
    spans: &[Range<usize>],
    columns: Range<usize>,
    counts: &mut [&mut [MaybeUninit<u32>]],
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

/// Stores the counters of the strips of a group in `counts[b][group]` for each bin b (as many as
/// `counts` has) if `first` (the group's first flush), else adds them to what is there, and zeroes
/// them. Bin by bin, so that the group's counts of a bin, up to 512 contiguous bytes, are written
/// together (strip by strip, each bin's 128 bytes would be on a page of their own).
fn add_strips(
    strips: &mut [ByteStrip],
    group: Range<usize>,
    first: bool,
    counts: &mut [&mut [MaybeUninit<u32>]],
) {
    for (b, line) in counts.iter_mut().enumerate() {
        add_bin(strips, b, first, &mut line[group.clone()]);
    }
}

/// [`add_strips`] for bin `b`, into `line` (the group's counts of the bin). A function of its
/// own, not inlined, so that `line`, an argument, is known not to overlap the strips: read from
/// `counts`, it could, and the loops were not vectorised (measured: 10% of colhist's time, from 5%).
#[inline(never)]
fn add_bin(strips: &mut [ByteStrip], b: usize, first: bool, line: &mut [MaybeUninit<u32>]) {
    if !first {
        for (part, strip) in line.chunks_mut(BYTE_STRIP).zip(strips.iter_mut()) {
            for (t, n) in part.iter_mut().zip(strip.0[b].iter_mut()) {
                // SAFETY: the group's first flush stored every count of the group.
                unsafe { *t.assume_init_mut() += *n as u32 };
                *n = 0;
            }
        }
        return;
    }
    if let Ok(line) = <&mut [MaybeUninit<u32>; BYTE_GROUP]>::try_from(&mut *line) {
        // A whole group, the usual case: fixed lengths, which the compiler vectorises.
        for (part, strip) in line.chunks_exact_mut(BYTE_STRIP).zip(strips.iter_mut()) {
            for (t, n) in part.iter_mut().zip(strip.0[b].iter_mut()) {
                t.write(*n as u32);
                *n = 0;
            }
        }
        return;
    }
    for (part, strip) in line.chunks_mut(BYTE_STRIP).zip(strips.iter_mut()) {
        for (t, n) in part.iter_mut().zip(strip.0[b].iter_mut()) {
            t.write(*n as u32);
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
