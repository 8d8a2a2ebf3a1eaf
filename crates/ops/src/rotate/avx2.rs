//! The interior runs four pixels at a time, in AVX2 registers: per lane, the same `f64`
//! operations in the same order as the portable code (Rust never contracts a product and a sum
//! into an FMA, and these functions do not enable FMA anyway), so the same bits.

use std::any::TypeId;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::ops::Range;

use super::cpu::ColumnCounts;
use super::row_map::RowMap;
use crate::{Element, Sample};

/// A row's map on four lanes, and the constants the loops need.
struct Lanes {
    a: __m256d,
    c: __m256d,
    d: __m256d,
    f: __m256d,
    by: __m256d,
    ey: __m256d,
    /// The frame's width, for indices.
    w: __m256d,
}

impl Lanes {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(row: &RowMap, w: usize) -> Lanes {
        let v = _mm256_set1_pd;
        Lanes {
            a: v(row.a),
            c: v(row.c),
            d: v(row.d),
            f: v(row.f),
            by: v(row.by),
            ey: v(row.ey),
            w: v(w as f64),
        }
    }

    /// `(sx, sy)` of the four pixels whose x coordinates are the lanes of `fx`: as
    /// `RowMap::sx` and `RowMap::sy` compute them, the product `a x` per pixel.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn at(&self, fx: __m256d) -> (__m256d, __m256d) {
        let sx = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(self.a, fx), self.by), self.c);
        let sy = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(self.d, fx), self.ey), self.f);
        (sx, sy)
    }

    /// The indices `y w + x` of the four pixels whose coordinates are the lanes of `x` and
    /// `y`, integers with `y w + x` in `0..2^52`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn indices(&self, x: __m256d, y: __m256d) -> [u64; 4] {
        // Integers below 2^52, so the product and the sums are exact (no rounding, whatever
        // the order), and the bits of i + 2^52 are those of 2^52 with i in the low 52.
        let two_52 = _mm256_set1_pd(4503599627370496.0);
        let biased = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(y, self.w), x), two_52);
        let i = _mm256_xor_si256(_mm256_castpd_si256(biased), _mm256_castpd_si256(two_52));
        // SAFETY: any 256 bits are four u64.
        unsafe { std::mem::transmute::<__m256i, [u64; 4]>(i) }
    }
}

/// The x coordinates `x0..x0 + 4` as `f64` lanes (exact: below 2^32).
#[inline]
#[target_feature(enable = "avx2")]
fn first_lanes(x0: usize) -> __m256d {
    _mm256_add_pd(_mm256_set1_pd(x0 as i64 as f64), _mm256_setr_pd(0.0, 1.0, 2.0, 3.0))
}

/// Writes the nearest samples of the pixels `xs` of `row` to `out`, four at a time, as
/// `Kernel::nearest` does: all but the last `xs.len() % 4`, left to the caller. Returns how many
/// it wrote.
///
/// # Safety
/// The CPU has AVX2; `input` holds the `w`-wide frame, of fewer than 2^52 pixels, and `xs`
/// lies in the row's nearest run (0 <= s + 0.5 < W, resp. H, for both coordinates).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn nearest<T: Element>(
    input: &[T],
    w: usize,
    row: &RowMap,
    xs: Range<usize>,
    out: &mut [MaybeUninit<T>],
) -> usize {
    let lanes = Lanes::new(row, w);
    let half = _mm256_set1_pd(0.5);
    let mut fx = first_lanes(xs.start);
    let whole = xs.len() / 4 * 4;
    // In groups of QUADS quads, in passes as in `bilinear`: the indices, then the loads, in a
    // loop short enough for the out-of-order window to hold many of them (and their misses).
    // Not initialised, as in `bilinear`.
    let mut indices = [const { MaybeUninit::<[u64; 4]>::uninit() }; QUADS];
    for group in out[..whole].chunks_mut(4 * QUADS) {
        let quads = group.len() / 4;
        for slot in &mut indices[..quads] {
            let (sx, sy) = lanes.at(fx);
            // floor(s + 0.5), as the portable code's truncation (s + 0.5 >= 0 in the run).
            let (nx, ny) =
                (_mm256_floor_pd(_mm256_add_pd(sx, half)), _mm256_floor_pd(_mm256_add_pd(sy, half)));
            slot.write(lanes.indices(nx, ny));
            // Exact: integers below 2^53. Only x advances this way; `a x` is a product per pixel.
            fx = _mm256_add_pd(fx, _mm256_set1_pd(4.0));
        }
        for (quad, i) in group.chunks_exact_mut(4).zip(&indices[..quads]) {
            // SAFETY: the first `quads` are written above.
            let i = unsafe { i.assume_init_ref() };
            prefetch_next_tile(input, row, i[0]);
            for (slot, &i) in quad.iter_mut().zip(i) {
                // SAFETY: the pixel (nx, ny) is inside the frame (the run), so i < W H.
                slot.write(unsafe { *input.get_unchecked(i as usize) });
            }
        }
    }
    whole
}

/// Counts the nearest samples of the pixels `xs` of `row` of an 8-bit frame, each in its
/// column's counters (`counts[x - xs.start][v] += 1`), four at a time, as [`nearest`] makes
/// them: all but the last `xs.len() % 4`, left to the caller. Returns how many it counted. The
/// samples never go through memory: each is loaded by its index and counted at once (made into
/// a span and counted from there, a store, a reload and a call a span more).
///
/// # Safety
/// As [`nearest`]'s; `counts` is as long as `xs`, and no column's count overflows.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn nearest_count(
    input: &[u8],
    w: usize,
    row: &RowMap,
    xs: Range<usize>,
    counts: &mut [ColumnCounts],
) -> usize {
    let lanes = Lanes::new(row, w);
    let half = _mm256_set1_pd(0.5);
    let mut fx = first_lanes(xs.start);
    let whole = xs.len() / 4 * 4;
    for quad in counts[..whole].chunks_exact_mut(4) {
        let (sx, sy) = lanes.at(fx);
        // floor(s + 0.5), as in `nearest`.
        let (nx, ny) = (_mm256_floor_pd(_mm256_add_pd(sx, half)), _mm256_floor_pd(_mm256_add_pd(sy, half)));
        let i = lanes.indices(nx, ny);
        fx = _mm256_add_pd(fx, _mm256_set1_pd(4.0));
        prefetch_next_tile(input, row, i[0]);
        for (column, &i) in quad.iter_mut().zip(&i) {
            // SAFETY: as in `nearest`, i < W H.
            let v = unsafe { *input.get_unchecked(i as usize) };
            column[v as usize] += 1;
        }
    }
    whole
}

/// Writes the bilinear samples of the pixels `xs` of `row` to `out`, at most `maxval`, four at a
/// time, as `Kernel::bilinear` does: all but the last `xs.len() % 4`, left to the caller. Returns
/// how many it wrote.
///
/// # Safety
/// The CPU has AVX2; `input` holds the `w`-wide frame, of fewer than 2^52 pixels, and `xs`
/// lies in the row's bilinear run (0 <= s < W - 1, resp. H - 1, for both coordinates).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn bilinear<T: Sample>(
    input: &[T],
    w: usize,
    row: &RowMap,
    maxval: u16,
    xs: Range<usize>,
    out: &mut [MaybeUninit<T>],
) -> usize {
    let lanes = Lanes::new(row, w);
    let (one, half) = (_mm256_set1_pd(1.0), _mm256_set1_pd(0.5));
    let top_of = _mm_set1_epi32(maxval as i32);
    let mut fx = first_lanes(xs.start);
    let whole = xs.len() / 4 * 4;
    // In groups of QUADS quads, three passes: the points (indices and weights), the taps, then
    // the blends. In one pass, each quad is a chain so long (the map, floor, index, loads,
    // conversions, blend) that the out-of-order window holds only a few quads. The taps go
    // through memory, by scalar loads and stores (ports the vector code leaves free): inserted
    // into vector lanes one by one, they took a quarter of the vector instructions (this pass
    // made 2560x1707 9% faster).
    // Not initialised: zeroing them would cost a tenth of a 64-pixel span.
    let mut points = [const { MaybeUninit::<([u64; 4], __m256d, __m256d)>::uninit() }; QUADS];
    let mut pairs = [const { MaybeUninit::<[[u32; 4]; 2]>::uninit() }; QUADS];
    for group in out[..whole].chunks_mut(4 * QUADS) {
        let quads = group.len() / 4;
        for point in &mut points[..quads] {
            let (sx, sy) = lanes.at(fx);
            // floor(s), as the portable code's truncation (s >= 0 in the run).
            let (x0, y0) = (_mm256_floor_pd(sx), _mm256_floor_pd(sy));
            point.write((lanes.indices(x0, y0), _mm256_sub_pd(sx, x0), _mm256_sub_pd(sy, y0)));
            // Exact: integers below 2^53. Only x advances this way; `a x` is a product per
            // pixel.
            fx = _mm256_add_pd(fx, _mm256_set1_pd(4.0));
        }
        for (pair, point) in pairs.iter_mut().zip(&points[..quads]) {
            // SAFETY: the first `quads` points are written above.
            let i = unsafe { &point.assume_init_ref().0 };
            prefetch_next_tile(input, row, i[0]);
            let pair = pair.as_mut_ptr().cast::<u32>();
            for (k, &i) in i.iter().enumerate() {
                // SAFETY: each pixel's four taps are inside the frame (the run): i + w + 1 < W
                // H. `pair` holds eight u32. Volatile keeps each store on its own: the compiler
                // otherwise gathers the 16-bit pairs into vector lanes, the shuffles this pass
                // is here to avoid (16-bit frames were 20% slower).
                unsafe {
                    pair.add(k).write_volatile(tap_pair(input, i as usize));
                    pair.add(4 + k).write_volatile(tap_pair(input, i as usize + w));
                }
            }
        }
        for ((quad, point), pair) in group.chunks_exact_mut(4).zip(&points[..quads]).zip(&pairs) {
            // SAFETY: the first `quads` points and pairs are written above.
            let (&(_, tx, ty), pair) = unsafe { (point.assume_init_ref(), pair.assume_init_ref()) };
            let ((p00, p10), (p01, p11)) = (taps::<T>(&pair[0]), taps::<T>(&pair[1]));
            // `blend_at`, operation for operation.
            let ux = _mm256_sub_pd(one, tx);
            let top = _mm256_add_pd(_mm256_mul_pd(ux, p00), _mm256_mul_pd(tx, p10));
            let bottom = _mm256_add_pd(_mm256_mul_pd(ux, p01), _mm256_mul_pd(tx, p11));
            let uy = _mm256_sub_pd(one, ty);
            let v = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(uy, top), _mm256_mul_pd(ty, bottom)), half);
            // v is in 0.5..=65535.5 (non-negative taps and weights summing to 1), where the
            // truncating conversion to i32 is the floor, exactly; the clamp commutes with it.
            store(quad, _mm_min_epi32(_mm256_cvttpd_epi32(v), top_of));
        }
    }
    whole
}

/// Quads per group, each made in passes (see `nearest` and `bilinear`).
const QUADS: usize = 16;

/// Asks for the cache line that the pixel of input index `i` reads, moved to the next tile
/// (`RowMap::next_tile`): a tile's time before that tile reads it. A turned tile reads across
/// many input rows, in lines no hardware prefetcher foresees, and the waits for them were half
/// the time of 7680x4320 frames. One pixel a quad is enough: the next tile's rows go over the
/// same input rows, shifted, so their first pixels reach every line (also two a quad, or eight
/// rows ahead, measured no faster).
#[inline]
#[target_feature(enable = "avx2")]
fn prefetch_next_tile<T>(input: &[T], row: &RowMap, i: u64) {
    // Any address: a prefetch never faults, and the pointer is never read.
    let at = input.as_ptr().wrapping_offset(i as isize).wrapping_offset(row.next_tile);
    _mm_prefetch::<_MM_HINT_T0>(at.cast());
}

/// The pixels `i` and `i + 1` as one u32, left | right << bits (two adjacent loads, which the
/// compiler merges into one).
///
/// # Safety
/// Both are in `input`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn tap_pair<T: Sample>(input: &[T], i: usize) -> u32 {
    // SAFETY: the caller's condition.
    let (l, r) = unsafe { (*input.get_unchecked(i), *input.get_unchecked(i + 1)) };
    Into::<u32>::into(l) | Into::<u32>::into(r) << (8 * size_of::<T>())
}

/// The left and right taps of four `tap_pair`s, as `f64` lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn taps<T>(pairs: &[u32; 4]) -> (__m256d, __m256d) {
    // SAFETY: 16 bytes to read, unaligned.
    let pairs = unsafe { _mm_loadu_si128(pairs.as_ptr().cast()) };
    let (left, right) = if size_of::<T>() == 1 {
        (_mm_and_si128(pairs, _mm_set1_epi32(0xff)), _mm_srli_epi32::<8>(pairs))
    } else {
        (_mm_and_si128(pairs, _mm_set1_epi32(0xffff)), _mm_srli_epi32::<16>(pairs))
    };
    (_mm256_cvtepi32_pd(left), _mm256_cvtepi32_pd(right))
}

/// Writes the four lanes of `v` (in 0..=65535, at most the frame's maxval) to `quad`.
#[inline]
#[target_feature(enable = "avx2")]
fn store<T: Sample>(quad: &mut [MaybeUninit<T>], v: __m128i) {
    assert_eq!(quad.len(), 4);
    let words = _mm_packus_epi32(v, v);
    if TypeId::of::<T>() == TypeId::of::<u8>() {
        let bytes = _mm_cvtsi128_si32(_mm_packus_epi16(words, words));
        // SAFETY: `quad` is four u8 slots: four bytes.
        unsafe { quad.as_mut_ptr().cast::<i32>().write_unaligned(bytes) };
    } else if TypeId::of::<T>() == TypeId::of::<u16>() {
        // SAFETY: `quad` is four u16 slots: eight bytes.
        unsafe { _mm_storel_epi64(quad.as_mut_ptr().cast(), words) };
    } else {
        // SAFETY: any 128 bits are four i32.
        let lanes = unsafe { std::mem::transmute::<__m128i, [i32; 4]>(v) };
        for (slot, v) in quad.iter_mut().zip(lanes) {
            slot.write(T::from_u16(v as u16));
        }
    }
}
