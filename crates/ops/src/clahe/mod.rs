//! `clahe`: contrast-limited adaptive histogram equalization, with the arithmetic of OpenCV's
//! `CLAHE::apply`, so the output equals `cv2.createCLAHE(clip, (gx, gy)).apply(img)` byte for
//! byte on 8-bit and 16-bit frames. docs/clahe.md states every rule; in short:
//!
//! 1. Tiling: a `w x h` frame is cut into gx x gy tiles. If gx does not divide w or gy does not
//!    divide h, the frame is first extended on the right by gx - w mod gx columns and at the bottom
//!    by gy - h mod gy rows, by BORDER_REFLECT_101 (both sides, even if one divides: a whole
//!    extra gx columns then), as OpenCV does. Tiles are tile_w = w' / gx by tile_h = h' / gy.
//! 2. Per tile, a histogram of B bins (256 for 8-bit samples, 65536 for 16-bit, whatever the
//!    maxval); with clip > 0, each bin is cut to limit = max(trunc(clip * tile_w * tile_h / B), 1)
//!    and the E counts cut off are handed back: E div B to every bin, then one each to R = E mod B
//!    bins 0, s, 2s, ... with s = max(B div R, 1).
//! 3. Per tile, lut(v) = saturate(round_half_even(f32(cdf(v)) * scale)), scale = f32(B - 1) /
//!    f32(tile_w * tile_h), all in `f32`.
//! 4. Each pixel (x, y) of the frame: with fx = f32(x) * (1 / tile_w) - 0.5, x1 = floor(fx),
//!    xa = fx - x1 (likewise for y), the tables of tile columns x1, x1 + 1 and rows y1, y1 + 1
//!    (clamped to the grid) at the pixel's value, combined as
//!    (l11 * (1 - xa) + l12 * xa) * (1 - ya) + (l21 * (1 - xa) + l22 * xa) * ya in `f32`, each
//!    operation rounded to nearest in that order (no fused multiply-add), rounded half to even
//!    and saturated.
//!
//! The output's maxval is 255 for 8-bit frames and 65535 for 16-bit ones: OpenCV's tables span
//! 0..B - 1 whatever the input's range.
//!
//! [`Masked`]`<Clahe>` (`clahe --mask`) counts in each tile only the pixels whose mask byte is
//! non-zero (the mask extended as the frame is), and takes a tile's clip limit and scale from its
//! N counted pixels where 2. and 3. take its area: limit = max(trunc(clip * N / B), 1), scale =
//! f32(B - 1) / f32(N) ([`Tiling::masked_tile`]); a tile of no counted pixel gets the identity
//! table. Every pixel is then mapped as in 4. A mask of every pixel is CLAHE without one.
//!
//! Float frames are scikit-image's `equalize_adapthist` instead, on both backends by the same host
//! code ([`float`], which documents it); they take no mask.
//!
//! The operation's parts: this module (the parameters, the tiling and the per-tile arithmetic:
//! clipping, tables, rounding, interpolation weights), `cpu` (the tables and the interpolation
//! on the pool's threads), [`gpu`] (the device plan, [`ClahePlan`], kernels-common/clahe.cu).

use std::str::FromStr;

use histopipe_frame::Frame;

use crate::mask::Masked;
use crate::{with_samples, Element, Gpu, Op, OpError, Sample};

mod cpu;
pub mod float;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use gpu::ClahePlan;

/// OpenCV's default clip limit (`cv2.createCLAHE()`).
pub const DEFAULT_CLIP: f64 = 40.0;
/// OpenCV's default grid (`cv2.createCLAHE()`): 8 x 8 tiles.
pub const DEFAULT_TILES: TileGrid = TileGrid { x: 8, y: 8 };

/// Most table entries (tiles x bins) a frame may need: 2^28 (512 MiB of 16-bit tables, and as
/// many 32-bit counts on the GPU); 16-bit frames get at most 4096 tiles, 8-bit ones 2^20.
pub const MAX_TABLE_ENTRIES: u64 = 1 << 28;

/// The number of tiles across (`x`, OpenCV's tileGridSize.width) and down (`y`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileGrid {
    pub x: usize,
    pub y: usize,
}

impl FromStr for TileGrid {
    type Err = String;

    /// `GXxGY`, or `N` for N x N; each at least 1.
    fn from_str(text: &str) -> Result<TileGrid, String> {
        let bad = || format!("bad grid '{text}' (expected GXxGY, e.g. 8x8, or N for N x N)");
        let count = |s: &str| match s.parse::<u32>() {
            Ok(0) => Err(format!("bad grid '{text}': at least one tile each way")),
            Ok(n) if s.bytes().all(|b| b.is_ascii_digit()) => Ok(n as usize),
            _ => Err(bad()),
        };
        match text.split_once('x') {
            Some((x, y)) => Ok(TileGrid { x: count(x)?, y: count(y)? }),
            None => count(text).map(|n| TileGrid { x: n, y: n }),
        }
    }
}

/// The CLAHE operation: OpenCV's clip limit (0 or less: no clipping) and tile grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clahe {
    pub clip: f64,
    pub tiles: TileGrid,
}

impl Default for Clahe {
    fn default() -> Clahe {
        Clahe { clip: DEFAULT_CLIP, tiles: DEFAULT_TILES }
    }
}

/// CLAHE of one frame size: the tiles, the clip limit and the float constants, as the CPU uses
/// them and as the kernels get them (`struct Tiling` in kernels-common/clahe.cu, field for field).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tiling {
    pub width: u32,
    pub height: u32,
    pub tiles_x: u32,
    pub tiles_y: u32,
    /// A tile's size, in the extended frame.
    pub tile_w: u32,
    pub tile_h: u32,
    /// 256 or 65536.
    pub bins: u32,
    /// Most counts a bin keeps; 0: no clipping.
    pub limit: u32,
    /// (bins - 1) / (tile_w * tile_h), in `f32`.
    pub scale: f32,
    /// 1 / tile_w and 1 / tile_h, in `f32`.
    pub inv_tw: f32,
    pub inv_th: f32,
}
impl Clahe {
    /// The tiling of a `width x height` frame (both at least 1) with `bins` bins.
    pub fn tiling(&self, width: usize, height: usize, bins: u32) -> Result<Tiling, OpError> {
        let TileGrid { x: gx, y: gy } = self.tiles;
        if !self.clip.is_finite() {
            return Err(OpError::param("clip", self.clip, "not a finite number"));
        }
        if width == 0 || height == 0 || gx == 0 || gy == 0 {
            return Err(OpError::invalid(format!("a {width}x{height} frame in {gx}x{gy} tiles")));
        }
        let entries = gx as u128 * gy as u128 * bins as u128;
        if entries > MAX_TABLE_ENTRIES as u128 {
            return Err(OpError::param(
                "tiles",
                format!("{gx}x{gy}"),
                format!(
                    "{entries} table entries of {bins} bins per tile, over the limit of {MAX_TABLE_ENTRIES}"
                ),
            ));
        }
        // OpenCV extends both axes when either is not a multiple of its tile count.
        let extend = width % gx != 0 || height % gy != 0;
        let (ew, eh) =
            if extend { (width + gx - width % gx, height + gy - height % gy) } else { (width, height) };
        if ew > u32::MAX as usize || eh > u32::MAX as usize {
            return Err(OpError::invalid(format!("a {width}x{height} frame is too large for CLAHE")));
        }
        let (tile_w, tile_h) = (ew / gx, eh / gy);
        let area = tile_w as u64 * tile_h as u64;
        // OpenCV counts in `int`: a tile of 2^31 pixels would overflow it.
        if area > i32::MAX as u64 {
            return Err(OpError::invalid(format!(
                "tiles of {tile_w}x{tile_h} pixels: at most {} pixels per tile (use more tiles)",
                i32::MAX
            )));
        }
        // OpenCV: (int)(clip * area / bins) in double, at least 1. Where that overflows `int` (C++
        // leaves it undefined), the limit saturates: no bin reaches it, as with no clipping.
        let limit =
            if self.clip > 0.0 { ((self.clip * area as f64 / bins as f64) as i32).max(1) as u32 } else { 0 };
        Ok(Tiling {
            width: width as u32,
            height: height as u32,
            tiles_x: gx as u32,
            tiles_y: gy as u32,
            tile_w: tile_w as u32,
            tile_h: tile_h as u32,
            bins,
            limit,
            // int -> float conversions round to nearest, as C's do.
            scale: (bins - 1) as f32 / area as f32,
            inv_tw: 1.0 / tile_w as f32,
            inv_th: 1.0 / tile_h as f32,
        })
    }
}

/// OpenCV's bin count for a sample type: every value its own bin.
fn bins_of<T: Sample>() -> u32 {
    1 << (8 * std::mem::size_of::<T>())
}

/// The largest output value for a sample type: OpenCV's tables span 0..bins - 1.
fn top_of<T: Sample>() -> u16 {
    (bins_of::<T>() - 1) as u16
}

/// Position `p` of an extended axis on an axis of `n` (>= 1) samples, by BORDER_REFLECT_101
/// (OpenCV's `borderInterpolate`): reflected about the last sample (p -> 2n - 2 - p) and the
/// first (p -> -p) as often as it takes, since the extension may be longer than the axis.
pub fn reflect_101(p: usize, n: usize) -> usize {
    if p < n {
        return p;
    }
    if n == 1 {
        return 0;
    }
    let (mut q, n) = (p as i128, n as i128);
    while q < 0 || q >= n {
        q = if q < 0 { -q } else { 2 * n - 2 - q };
    }
    q as usize
}

/// OpenCV's clipping of a tile's histogram at `limit` (0: none): each bin cut to the limit, the
/// E counts cut off handed back, E div bins to every bin and one more to each of the first
/// R = E mod bins of bins 0, s, 2s, ... (s = max(bins div R, 1)). The total is kept.
pub fn clip_histogram(hist: &mut [u32], limit: u32) {
    if limit == 0 {
        return;
    }
    let mut clipped = 0u64;
    for h in hist.iter_mut() {
        if *h > limit {
            clipped += (*h - limit) as u64;
            *h = limit;
        }
    }
    let bins = hist.len() as u64;
    let (batch, residual) = (clipped / bins, clipped % bins);
    for h in hist.iter_mut() {
        *h += batch as u32;
    }
    // No remainder: no step (and nothing to hand out).
    if let Some(step) = bins.checked_div(residual) {
        for h in hist.iter_mut().step_by(step.max(1) as usize).take(residual as usize) {
            *h += 1;
        }
    }
}

/// `x` rounded to an integer, ties to even (C's `rint`, OpenCV's `cvRound`), for |x| < 2^22:
/// x + 1.5 * 2^23 has no fraction bits left, so the addition itself rounds as IEEE does, ties to
/// even (the constant is even), and the integer is then the sum's bits less the constant's.
/// `round_ties_even` is a call to `rintf` per pixel on x86-64 without SSE4.1, and a saturating
/// float-to-int conversion after it costs as much again: together more than the rest of the
/// interpolation.
fn round_half_even(x: f32) -> i32 {
    const SHIFT: f32 = 12_582_912.0;
    (x + SHIFT).to_bits() as i32 - SHIFT.to_bits() as i32
}

/// A tile's look-up table from its (clipped) histogram: the cumulative count, converted to `f32`
/// (to nearest), times `scale` (one rounding), rounded half to even, saturated to the sample type.
fn table<T: Sample>(hist: &[u32], scale: f32, lut: &mut [T]) {
    let top = top_of::<T>() as i32;
    let mut cdf = 0u32;
    for (&h, out) in hist.iter().zip(lut) {
        cdf += h;
        *out = T::from_u16(round_half_even(cdf as f32 * scale).clamp(0, top) as u16);
    }
}

/// The tiles on each side of a position along one axis, and their weights (OpenCV's
/// interpolation): pf = p * inv - 0.5, p1 = floor(pf), a = pf - p1; tiles p1 and p1 + 1, clamped
/// to the grid, weighted 1 - a and a.
#[derive(Debug, Clone, Copy)]
struct Weights {
    first: usize,
    second: usize,
    a: f32,
    a1: f32,
}

impl Weights {
    fn at(p: usize, inv: f32, tiles: u32) -> Weights {
        let pf = p as f32 * inv - 0.5;
        let p1 = pf.floor() as i64;
        let a = pf - p1 as f32;
        Weights {
            first: p1.max(0) as usize,
            second: ((p1 + 1) as usize).min(tiles as usize - 1),
            a,
            a1: 1.0 - a,
        }
    }
}

impl Tiling {
    fn tiles(&self) -> usize {
        self.tiles_x as usize * self.tiles_y as usize
    }

    /// Entries of all the tiles' tables (and of the GPU's counts): tiles x bins.
    pub fn table_len(&self) -> usize {
        self.tiles() * self.bins as usize
    }

    /// The clip limit and scale of a tile of `counted` pixels under a mask, with OpenCV's clip
    /// limit `clip` (0 or less: none): this tiling's rules with `counted` for the tile's area,
    /// limit = max(trunc(clip * counted / bins), 1) in `f64` (saturated where that overflows an
    /// `i32`), scale = f32(bins - 1) / f32(counted). `None` for a tile of no counted pixel,
    /// whose table is the identity. The GPU's `tables_*` (clahe.cu) compute the same.
    pub fn masked_tile(&self, counted: u32, clip: f64) -> Option<(u32, f32)> {
        if counted == 0 {
            return None;
        }
        let limit =
            if clip > 0.0 { ((clip * counted as f64 / self.bins as f64) as i32).max(1) as u32 } else { 0 };
        Some((limit, (self.bins - 1) as f32 / counted as f32))
    }
}

impl Op for Clahe {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.cpu_masked(frame, None)
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        self.gpu_masked(gpu, frame, None)
    }
}

impl Clahe {
    /// A float frame's CLAHE ([`float`]), which takes no mask; `None` for an integer frame.
    fn float(&self, frame: &Frame, mask: Option<&[u8]>) -> Option<Result<Frame, OpError>> {
        if frame.depth().is_integer() {
            return None;
        }
        Some(match mask {
            Some(_) => Err(OpError::invalid(
                "a mask with a float frame: scikit-image's equalize_adapthist, which float frames \
                 follow, takes none",
            )),
            None => float::clahe(self, frame),
        })
    }

    fn cpu_masked(&self, frame: &Frame, mask: Option<&[u8]>) -> Result<Frame, OpError> {
        if let Some(out) = self.float(frame, mask) {
            return out;
        }
        let (w, h) = (frame.width, frame.height);
        let (pixels, maxval) = with_samples!(&frame.pixels, v => {
            (Element::into_pixels(self.cpu_samples(v, mask, w, h)?), top_of_samples(v))
        });
        Ok(frame.derive(w, h, maxval, pixels))
    }

    fn gpu_masked(&self, gpu: &Gpu, frame: &Frame, mask: Option<&[u8]>) -> Result<Frame, OpError> {
        // Float frames: the same host code as the CPU backend's (the float module).
        if let Some(out) = self.float(frame, mask) {
            return out;
        }
        let (w, h) = (frame.width, frame.height);
        let (pixels, maxval) = with_samples!(&frame.pixels, v => {
            (Element::into_pixels(self.gpu_samples(gpu, v, mask, w, h)?), top_of_samples(v))
        });
        Ok(frame.derive(w, h, maxval, pixels))
    }
}

/// [`Clahe`] whose tiles count only the pixels a mask of the frame's size selects; every pixel is
/// mapped. A tile's clip limit and scale come from its counted pixels ([`Tiling::masked_tile`]),
/// a tile of none maps as the identity.
impl Op for Masked<'_, Clahe> {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.op.cpu_masked(frame, Some(self.mask.fit(frame)?))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        self.op.gpu_masked(gpu, frame, Some(self.mask.fit(frame)?))
    }
}

/// The output maxval for these samples ([`top_of`] by value, for `with_samples!`).
fn top_of_samples<T: Sample>(_: &[T]) -> u16 {
    top_of::<T>()
}
