//! The walk of `hough-segments` and its refinement: a line's steps across the frame in OpenCV's
//! fixed point ([`Walk`]), a step that found an edge pixel ([`Hit`]) in its band of three
//! ([`BAND`]), and the edge map as bits that the walks read and clear ([`EdgeBits`]). Shared by
//! the search for segments (segments.rs) and the refinement of their runs (refine.rs), which both
//! import it, neither the other's.

use crate::{parallel, Sample};

/// Bits of the walk's fixed-point minor coordinate, as OpenCV's `shift`.
const SHIFT: u32 = 16;

/// Words of [`EdgeBits`] worth a part of their own on the pool.
const MIN_PART_WORDS: usize = 1 << 12;

/// A line's walk: `steps` positions along the major axis from `first`, the minor coordinate in
/// fixed point (`minor + k · slope` at step k, pixel = value >> [`SHIFT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Walk {
    /// x is the major axis.
    pub(super) x_major: bool,
    pub(super) first: i64,
    pub(super) steps: i64,
    minor: i64,
    slope: i64,
}

impl Walk {
    /// The walk of x cos θ + y sin θ = ρ over a `width x height` frame, limited to the steps
    /// whose band can touch it.
    pub(super) fn new(rho: f64, theta: f64, width: usize, height: usize) -> Walk {
        let (c, s) = (theta.cos(), theta.sin());
        let x_major = s.abs() >= c.abs();
        // Along the major axis t, the minor one is (ρ − t a) / b.
        let (a, b) = if x_major { (c, s) } else { (s, c) };
        Walk::along(x_major, rho / b, -a / b, width, height)
    }

    /// The walk of the line whose minor coordinate is `at_0 + t · slope` at major coordinate t
    /// (|slope| ≤ 1) over a `width x height` frame, limited to the steps whose band can touch it.
    pub(super) fn along(x_major: bool, at_0: f64, slope: f64, width: usize, height: usize) -> Walk {
        let (major, minor_len) = if x_major { (width, height) } else { (height, width) };
        let one = (1i64 << SHIFT) as f64;
        // + 1/2: the pixel is the minor coordinate rounded, OpenCV's `(1 << (shift - 1))`.
        let minor = ((at_0 + 0.5) * one).round() as i64;
        let slope = (slope * one).round() as i64;
        // Steps where the minor pixel is within [-1, minor_len]: the band reaches the frame.
        let (lo, hi) = (-(2i64 << SHIFT), (minor_len as i64 + 2) << SHIFT);
        let (mut first, mut last) = (0i64, major as i64 - 1);
        if slope == 0 {
            if minor < lo || minor >= hi {
                last = -1;
            }
        } else {
            let t_lo = (lo - minor) as f64 / slope as f64;
            let t_hi = (hi - minor) as f64 / slope as f64;
            let (t0, t1) = if t_lo < t_hi { (t_lo, t_hi) } else { (t_hi, t_lo) };
            first = first.max(t0.floor() as i64 - 1);
            last = last.min(t1.ceil() as i64 + 1);
        }
        let steps = (last - first + 1).max(0);
        Walk { x_major, first, steps, minor: minor + first * slope, slope }
    }

    /// The walk over a `width x height` frame of the line through pixels `p` and `q` (not the
    /// same), along the axis on which they lie further apart, the minor coordinate exact at
    /// `p` (and within 2⁻¹⁶ a step of exact elsewhere); its steps of `p` and `q`, in order.
    pub(super) fn through(p: (i64, i64), q: (i64, i64), width: usize, height: usize) -> (Walk, i64, i64) {
        let x_major = p.0.abs_diff(q.0) >= p.1.abs_diff(q.1);
        let tm = |(x, y): (i64, i64)| if x_major { (x, y) } else { (y, x) };
        let ((t0, m0), (t1, m1)) = (tm(p), tm(q));
        let slope = (m1 - m0) as f64 / (t1 - t0) as f64;
        let mut walk = Walk::along(x_major, m0 as f64 - slope * t0 as f64, slope, width, height);
        walk.minor = (m0 << SHIFT) + (1 << (SHIFT - 1)) + (walk.first - t0) * walk.slope;
        let (k0, k1) = (t0 - walk.first, t1 - walk.first);
        (walk, k0.min(k1), k0.max(k1))
    }

    /// The part of the walk of `steps` steps from step `k`.
    pub(super) fn part(&self, k: i64, steps: i64) -> Walk {
        Walk { first: self.first + k, steps, minor: self.minor + k * self.slope, ..*self }
    }

    /// The most steps in a row without an edge pixel that a segment bridges: those whose
    /// length along the line, √(1 + slope²) pixels a step, is at most `max_gap` pixels.
    pub(super) fn gap_steps(&self, max_gap: u32) -> i64 {
        let slope = self.slope as f64 / (1i64 << SHIFT) as f64;
        (f64::from(max_gap) / slope.hypot(1.0)).floor() as i64
    }

    /// The index in [`BAND`] of step `k`'s first edge pixel, if it has one.
    pub(super) fn band_edge(&self, edges: &EdgeBits, k: i64) -> Option<usize> {
        BAND.iter().position(|&across| {
            let (x, y) = self.pixel(k, across);
            edges.get(x, y)
        })
    }

    /// The pixel of step `k` (0-based from `first`) at `across` pixels from the line.
    #[inline(always)]
    pub(super) fn pixel(&self, k: i64, across: i64) -> (i64, i64) {
        let t = self.first + k;
        let m = ((self.minor + k * self.slope) >> SHIFT) + across;
        if self.x_major {
            (t, m)
        } else {
            (m, t)
        }
    }

    /// Appends to `hits` the steps with an edge pixel in `edges`, in order, each as a [`Hit`].
    pub(super) fn hits(&self, edges: &EdgeBits, hits: &mut Vec<Hit>) {
        if self.slope.unsigned_abs() <= (1 << SHIFT) / 8 {
            self.hits_by_runs(edges, hits);
        } else {
            self.hits_by_steps(edges, hits);
        }
    }

    /// The first step from step `from` on whose band may hold an edge ([`Walk::skip`] passes
    /// over the others): the step, its minor coordinate and its major one; `None` past the walk's
    /// end. The walk of both [`Walk::hits`] strategies.
    #[inline(always)]
    fn next_step(&self, edges: &EdgeBits, mut from: i64) -> Option<(i64, i64, usize)> {
        while from < self.steps {
            let m = (self.minor + from * self.slope) >> SHIFT;
            match self.skip(edges, from, m) {
                Some(skip) => from += skip,
                None => return Some((from, m, (self.first + from) as usize)),
            }
        }
        None
    }

    /// The steps from step `k`, on minor coordinate `m`, whose bands hold no edge for certain
    /// ([`EdgeBits::no_edge_for`]), if any: none where the step's pixel is outside the frame.
    #[inline(always)]
    fn skip(&self, edges: &EdgeBits, k: i64, m: i64) -> Option<i64> {
        let t = (self.first + k) as usize;
        let minor_len = if self.x_major { edges.h } else { edges.w };
        if (m as u64) >= minor_len as u64 {
            return None;
        }
        let (x, y) = if self.x_major { (t, m as usize) } else { (m as usize, t) };
        edges.no_edge_for(x, y)
    }

    /// [`Walk::hits`] of a line that stays 8 steps or more on a minor coordinate: a run of steps
    /// on one minor coordinate reads its three rows 64 steps a word, along the layout in which the
    /// major axis is contiguous.
    fn hits_by_runs(&self, edges: &EdgeBits, hits: &mut Vec<Hit>) {
        let (bits, major_len, minor_len) =
            if self.x_major { (&edges.rows, edges.w, edges.h) } else { (&edges.cols, edges.h, edges.w) };
        let one = 1i64 << SHIFT;
        let mut from = 0;
        while let Some((k, m, t)) = self.next_step(edges, from) {
            // The first step past this minor coordinate.
            let next = match self.slope {
                0 => self.steps,
                // Both numerators are positive.
                s if s > 0 => ((m + 1) * one - self.minor + s - 1) / s,
                s => (self.minor - m * one).div_euclid(-s) + 1,
            };
            let end = next.min(self.steps).min(k + 64).max(k + 1);
            let n = (end - k) as u32;
            let row = |across: i64| {
                let r = m + across;
                if (r as u64) < minor_len as u64 {
                    take_bits(bits, r as usize * major_len + t, n)
                } else {
                    0
                }
            };
            let (on, before, after) = (row(0), row(-1), row(1));
            let mut any = on | before | after;
            while any != 0 {
                let j = any.trailing_zeros();
                let band = if on >> j & 1 != 0 {
                    0
                } else if before >> j & 1 != 0 {
                    1
                } else {
                    2
                };
                hits.push(Hit::new(k + i64::from(j), band));
                any &= any - 1;
            }
            from = end;
        }
    }

    /// [`Walk::hits`] step by step: each step's band is three bits in a row of the layout in
    /// which the minor axis is contiguous.
    fn hits_by_steps(&self, edges: &EdgeBits, hits: &mut Vec<Hit>) {
        // The band's first edge in [`BAND`]'s order, from its bits (before, on, after the line).
        const FIRST: [u8; 8] = [0, 1, 0, 0, 2, 1, 0, 0];
        let (bits, minor_len) = if self.x_major { (&edges.cols, edges.h) } else { (&edges.rows, edges.w) };
        // Every step writes its hit and only those with an edge pixel advance: no branch on the
        // edges, which are as good as random.
        let mut n = hits.len();
        hits.resize(n + self.steps as usize, Hit::default());
        let mut from = 0;
        while let Some((k, m, t)) = self.next_step(edges, from) {
            let band = if m >= 1 && m + 1 < minor_len as i64 {
                take_bits(bits, t * minor_len + m as usize - 1, 3)
            } else {
                // At the frame's edge: the band's pixels in the frame, one by one.
                (0..3).fold(0, |band, j| {
                    let r = m - 1 + j;
                    let on =
                        (r as u64) < minor_len as u64 && take_bits(bits, t * minor_len + r as usize, 1) != 0;
                    band | u64::from(on) << j
                })
            };
            hits[n] = Hit::new(k, usize::from(FIRST[band as usize]));
            n += usize::from(band != 0);
            from = k + 1;
        }
        hits.truncate(n);
    }

    /// Brings `hits`, found on an earlier state of `edges`, up to date with it: a step's pixel
    /// that was removed since gives way to the next edge of its band, in the band's order.
    pub(super) fn update(&self, hits: &mut Vec<Hit>, edges: &EdgeBits) {
        hits.retain_mut(|hit| {
            let step = hit.step();
            let live = (hit.band()..BAND.len()).find(|&b| {
                let (x, y) = self.pixel(step, BAND[b]);
                edges.get(x, y)
            });
            live.map(|b| *hit = Hit::new(step, b)).is_some()
        });
    }
}

/// Whether (x, y) is in a `w x h` frame (negative coordinates wrap to huge ones and fail).
#[inline(always)]
fn inside(x: i64, y: i64, w: usize, h: usize) -> bool {
    (x as u64) < w as u64 && (y as u64) < h as u64
}

/// A step of a walk with an edge pixel: the step (below 2^30: frames' sides are, see
/// [`HoughSegments::segments`]) and the index of its pixel in [`BAND`].
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct Hit(u32);

impl Hit {
    #[inline(always)]
    pub(super) fn new(step: i64, band: usize) -> Hit {
        Hit((step as u32) << 2 | band as u32)
    }

    pub(super) fn step(self) -> i64 {
        i64::from(self.0 >> 2)
    }

    pub(super) fn band(self) -> usize {
        (self.0 & 3) as usize
    }
}

/// The band's order at a step: on the line, then before it, then after it.
pub(super) const BAND: [i64; 3] = [0, -1, 1];

/// The edge map as one bit a pixel, in two layouts: row-major (bit y w + x) and column-major
/// (bit x h + y). A walk reads the one along which its band, or its run, is contiguous; the bits
/// of a 4096 x 4096 frame (2 MiB a layout) stay in the caches where bytes would not.
pub(super) struct EdgeBits {
    pub(super) w: usize,
    pub(super) h: usize,
    rows: Vec<u64>,
    cols: Vec<u64>,
    /// Each tile's Chebyshev distance in tiles to the nearest tile with an edge when the map was
    /// made, at most 255.
    far: Vec<u8>,
    tiles_w: usize,
}

/// The side of [`EdgeBits::far`]'s tiles.
const TILE: usize = 8;

impl EdgeBits {
    /// The non-zero samples of the `w x h` frame `px`, each layout's words on the pool's
    /// threads: the row-major words from 64 samples each, the column-major ones from the
    /// row-major bits ([`column_bits`]; reading down the frame's columns took a cache line a
    /// sample: a 3840x2160 map's two layouts took 45 ms of a core with a call through a pointer
    /// per bit).
    pub(super) fn new<T: Sample>(px: &[T], w: usize, h: usize) -> EdgeBits {
        let n = w * h;
        // One word more than the bits: [`take_bits`] reads the word after a bit's.
        let words = n.div_ceil(64) + 1;
        let mut rows = vec![0u64; words];
        let len = words.div_ceil(parallel::parts(words, MIN_PART_WORDS));
        parallel::for_each_part(&mut rows, len, |first, part| {
            for (j, word) in part.iter_mut().enumerate() {
                let start = ((first + j) * 64).min(n);
                let end = (start + 64).min(n);
                *word = match T::bytes(px) {
                    Some(bytes) if end - start == 64 => nonzero_bytes(&bytes[start..end]),
                    _ => px[start..end]
                        .iter()
                        .enumerate()
                        .fold(0, |v, (k, &p)| v | u64::from(p.into() != 0) << k),
                };
            }
        });
        let cols = column_bits(&rows, w, h, words);
        let (tiles_w, tiles_h) = (w.div_ceil(TILE), h.div_ceil(TILE));
        let far = tile_distances(&rows, w, h, tiles_w, tiles_h);
        EdgeBits { w, h, rows, cols, far, tiles_w }
    }

    /// How many steps a walk at pixel (x, y) of the frame may skip, if more than none: the
    /// steps whose bands hold no edge for certain. A step moves one pixel along the major axis
    /// and at most one across, so the band of the i-th step on reaches at most i + 1 pixels
    /// from (x, y) across, and [`TILE`] (d − 1) steps stay within d − 1 tiles of a tile d tiles
    /// from any edge.
    #[inline(always)]
    fn no_edge_for(&self, x: usize, y: usize) -> Option<i64> {
        let d = self.far[y / TILE * self.tiles_w + x / TILE];
        (d >= 2).then(|| (TILE * (d as usize - 1)) as i64)
    }

    /// Whether (x, y) is in the frame and an edge.
    pub(super) fn get(&self, x: i64, y: i64) -> bool {
        inside(x, y, self.w, self.h) && take_bits(&self.rows, y as usize * self.w + x as usize, 1) != 0
    }

    /// Clears (x, y); whether it was in the frame and an edge.
    pub(super) fn take(&mut self, x: i64, y: i64) -> bool {
        if !self.get(x, y) {
            return false;
        }
        let (r, c) = (y as usize * self.w + x as usize, x as usize * self.h + y as usize);
        self.rows[r / 64] &= !(1 << (r % 64));
        self.cols[c / 64] &= !(1 << (c % 64));
        true
    }
}

/// The Chebyshev distance, in tiles of [`TILE`] pixels, from each tile of a `w x h` frame
/// (`tiles_w x tiles_h`) to the nearest tile with an edge pixel in `rows` (row-major bits), at
/// most 255: two passes over the tiles, each taking the least of the neighbours already passed
/// plus one.
fn tile_distances(rows: &[u64], w: usize, h: usize, tiles_w: usize, tiles_h: usize) -> Vec<u8> {
    let mut far = vec![u8::MAX; tiles_w * tiles_h];
    for y in 0..h {
        let row = y * w;
        let mut x = 0;
        while x < w {
            // A word's worth of the row at a time.
            let n = (w - x).min(64) as u32;
            let mut bits = take_bits(rows, row + x, n);
            while bits != 0 {
                let at = x + bits.trailing_zeros() as usize;
                far[y / TILE * tiles_w + at / TILE] = 0;
                bits &= bits - 1;
            }
            x += n as usize;
        }
    }
    let at = |tx: usize, ty: usize| ty * tiles_w + tx;
    for ty in 0..tiles_h {
        for tx in 0..tiles_w {
            let mut d = far[at(tx, ty)];
            if tx > 0 {
                d = d.min(far[at(tx - 1, ty)].saturating_add(1));
            }
            if ty > 0 {
                for nx in tx.saturating_sub(1)..=(tx + 1).min(tiles_w - 1) {
                    d = d.min(far[at(nx, ty - 1)].saturating_add(1));
                }
            }
            far[at(tx, ty)] = d;
        }
    }
    for ty in (0..tiles_h).rev() {
        for tx in (0..tiles_w).rev() {
            let mut d = far[at(tx, ty)];
            if tx + 1 < tiles_w {
                d = d.min(far[at(tx + 1, ty)].saturating_add(1));
            }
            if ty + 1 < tiles_h {
                for nx in tx.saturating_sub(1)..=(tx + 1).min(tiles_w - 1) {
                    d = d.min(far[at(nx, ty + 1)].saturating_add(1));
                }
            }
            far[at(tx, ty)] = d;
        }
    }
    far
}

/// Bit k set where byte k of the 64 `bytes` is not zero: eight bytes at a time, each byte's
/// high bit set where it is not zero (its low seven bits plus 0x7F carry into it, or it was
/// set), the eight high bits gathered into one byte by a multiplication (a sample at a time
/// took 8 ms of a core on a 4K map).
fn nonzero_bytes(bytes: &[u8]) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    bytes.chunks_exact(8).enumerate().fold(0, |word, (i, eight)| {
        let x = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
        let high = (((x & LOW) + LOW) | x) & !LOW;
        // Byte j's high bit (bit 8 j + 7) lands on bit 56 + j: the other products fall below
        // bit 56, or above bit 63, and never carry (each bit of the sum comes from one product).
        let mask = (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        word | mask << (8 * i)
    })
}

/// The column-major bits (bit c is (x, y) = (c / h, c % h)) of the row-major `rows` (bit
/// y w + x) of a `w x h` map, in `words` words: 64 columns a task on the pool's threads, their
/// rows' bits taken 64 rows at a time and transposed as a 64 x 64 block (a column's 64 bits one
/// word), each task's bits in a buffer of its own, joined after (the words where two tasks'
/// columns meet hold bits of both). A bit at a time, reading each from the row-major words, took
/// 35% of hough-segments' time on a 4K map (0.05 ns a bit this way, 2.5 that way).
fn column_bits(rows: &[u64], w: usize, h: usize, words: usize) -> Vec<u64> {
    let mut cols = vec![0u64; words];
    if w == 0 || h == 0 {
        return cols;
    }
    let starts: Vec<usize> = (0..w).step_by(64).collect();
    // As many parts as the pool's share of threads allows (one, with as many frames under way as
    // threads: `parallel::parts`).
    let per_part = starts.len().div_ceil(parallel::parts(w * h, MIN_PART_WORDS * 64));
    let parts = parallel::map_parts(&starts, per_part, |_, starts| {
        starts.iter().map(|&x0| column_block(rows, w, h, x0)).collect::<Vec<_>>()
    });
    for (first, bits) in parts.into_iter().flatten() {
        for (slot, b) in cols[first..].iter_mut().zip(bits) {
            *slot |= b;
        }
    }
    cols
}

/// The column-major bits of columns `x0..x0 + 64` (or to the last), from the word where they
/// start: that word's index, and the words.
fn column_block(rows: &[u64], w: usize, h: usize, x0: usize) -> (usize, Vec<u64>) {
    let x1 = (x0 + 64).min(w);
    let first = x0 * h / 64;
    let mut bits = vec![0u64; (x1 * h).div_ceil(64) - first + 1];
    let mut block = [0u64; 64];
    for y0 in (0..h).step_by(64) {
        let y1 = (y0 + 64).min(h);
        for (word, y) in block.iter_mut().zip(y0..y1) {
            *word = take_bits(rows, y * w + x0, (x1 - x0) as u32);
        }
        block[y1 - y0..].fill(0);
        transpose_64(&mut block);
        for (x, &column) in (x0..x1).zip(&block) {
            // Column x's bits of rows y0..y1 (the rest zero), at its place in the buffer.
            let at = x * h + y0 - first * 64;
            let (word, off) = (at / 64, at % 64);
            bits[word] |= column << off;
            if off > 0 {
                bits[word + 1] |= column >> (64 - off);
            }
        }
    }
    (first, bits)
}

/// Transposes the 64 x 64 bit matrix `m` (bit j of word i is element (i, j)): in six rounds,
/// each swapping the off-diagonal halves of every block of twice its size.
fn transpose_64(m: &mut [u64; 64]) {
    let mut half = 32;
    let mut mask: u64 = 0x0000_0000_FFFF_FFFF;
    while half > 0 {
        let mut i = 0;
        while i < 64 {
            // Words i (its high `half` bits of each pair) and i + half (its low ones) swap.
            let t = ((m[i] >> half) ^ m[i + half]) & mask;
            m[i + half] ^= t;
            m[i] ^= t << half;
            i = (i + half + 1) & !half;
        }
        half >>= 1;
        mask ^= mask << half;
    }
}

/// Bits `i .. i + n` of `bits` (1 ≤ n ≤ 64), bit i the lowest; `bits` has a word after bit i's.
#[inline(always)]
fn take_bits(bits: &[u64], i: usize, n: u32) -> u64 {
    let (word, off) = (i / 64, (i % 64) as u32);
    // `<< 1 << (63 - off)`: no shift by 64 where off is 0.
    let v = bits[word] >> off | bits[word + 1] << 1 << (63 - off);
    if n == 64 {
        v
    } else {
        v & ((1 << n) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both layouts of the bits hold every sample, and nothing else, in frames of every shape
    /// (one row, one column, sides not multiples of 64, and fresh random sizes), split or not.
    #[test]
    fn edge_bits_hold_every_sample_in_both_layouts() {
        let mut rng = fastrand::Rng::with_seed(46);
        let fresh = fastrand::u64(..);
        let mut drawn = fastrand::Rng::with_seed(fresh);
        let random = (0..6).map(|_| (drawn.usize(1..400), drawn.usize(1..400)));
        let fixed = [(0, 0), (1, 1), (1, 97), (97, 1), (64, 64), (130, 67), (67, 130), (300, 201), (128, 65)];
        for (w, h) in fixed.into_iter().chain(random) {
            let px: Vec<u8> = (0..w * h).map(|_| if rng.u8(..) < 40 { rng.u8(1..) } else { 0 }).collect();
            let layouts = || {
                let e = EdgeBits::new(&px[..], w, h);
                (e.rows, e.cols)
            };
            crate::parallel::testing::same_on_each_pool("edge bits", layouts);
            let bits = layouts();
            // No bit but the edges' in either layout.
            let edges = px.iter().filter(|&&p| p != 0).count();
            for layout in [&bits.0, &bits.1] {
                assert_eq!(layout.iter().map(|b| b.count_ones() as usize).sum::<usize>(), edges, "{w}x{h}");
            }
            for (i, &p) in px.iter().enumerate() {
                let (x, y) = (i % w, i / w);
                assert_eq!(take_bits(&bits.0, i, 1) != 0, p != 0, "{w}x{h} rows ({x}, {y})");
                assert_eq!(
                    take_bits(&bits.1, x * h + y, 1) != 0,
                    p != 0,
                    "{w}x{h} cols ({x}, {y}), seed {fresh}"
                );
            }
        }
    }
}
