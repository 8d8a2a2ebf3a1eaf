//! One output row's part of a general turn's map ([`RowMap`]), which the portable code (`super::cpu`)
//! and the AVX2 kernels (`super::avx2`) evaluate alike, and the width of the tiles it is made in.

use histopipe_frame::Affine;

/// Output columns per tile of a general turn (see `Rotate::affine`): how far ahead
/// [`RowMap::next_tile`] looks.
pub(super) const TILE_W: usize = 64;

/// One output row's part of the map: `new_to_old().apply(x, y)` for its `y`, with the products
/// `b y` and `e y` computed once.
pub(super) struct RowMap {
    pub(super) a: f64,
    pub(super) c: f64,
    pub(super) d: f64,
    pub(super) f: f64,
    pub(super) by: f64,
    pub(super) ey: f64,
    /// About how far, in input samples, the source of the pixel [`TILE_W`] to the right is from
    /// a pixel's: where the next tile will read, for prefetching only (rounded, and never read).
    pub(super) next_tile: isize,
}

impl RowMap {
    /// The map of row `y` of a turn into a `w`-wide input.
    pub(super) fn new(m: &Affine, y: usize, w: usize) -> RowMap {
        let fy = y as f64;
        let step = |v: f64| (v * TILE_W as f64).round() as isize;
        let next_tile = step(m.a).wrapping_add(step(m.d).wrapping_mul(w as isize));
        RowMap { a: m.a, c: m.c, d: m.d, f: m.f, by: m.b * fy, ey: m.e * fy, next_tile }
    }

    /// `(a x + b y) + c`, as `Affine::apply` evaluates it.
    #[inline]
    pub(super) fn sx(&self, x: usize) -> f64 {
        // Through i64: exact below 2^53, and one instruction where usize to f64 is a sequence.
        self.a * x as i64 as f64 + self.by + self.c
    }

    /// `(d x + e y) + f`, as `Affine::apply` evaluates it.
    #[inline]
    pub(super) fn sy(&self, x: usize) -> f64 {
        self.d * x as i64 as f64 + self.ey + self.f
    }
}
