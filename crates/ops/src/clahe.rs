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
//! [`MaskedClahe`] (`clahe --mask`) counts in each tile only the pixels whose mask byte is
//! non-zero (the mask extended as the frame is), and takes a tile's clip limit and scale from its
//! N counted pixels where 2. and 3. take its area: limit = max(trunc(clip * N / B), 1), scale =
//! f32(B - 1) / f32(N) ([`Tiling::masked_tile`]); a tile of no counted pixel gets the identity
//! table. Every pixel is then mapped as in 4. A mask of every pixel is CLAHE without one.

use std::mem::MaybeUninit;
use std::str::FromStr;

use histopipe_frame::{Frame, Samples};
use histopipe_gpu::cudarc::driver::{CudaSlice, DeviceRepr};
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use crate::histogram::check_len;
use crate::{parallel, with_samples, Element, Gpu, Op, OpError, Sample};

/// Pixels (counted or mapped) a part of the CPU's work holds at least: about 0.02 ms of one
/// thread's work at the 5 ns a pixel the interpolation takes (see `parallel.rs`). (At 2^16,
/// 640x651 took 0.63 to 0.64 ms on the GPU machine's 16 threads and 0.23 at 2^12, where OpenCV
/// took 0.29; 1280x720, 0.77 against 0.47, OpenCV 0.39.)
const MIN_PART: usize = 1 << 12;

/// OpenCV's default clip limit (`cv2.createCLAHE()`).
pub const DEFAULT_CLIP: f64 = 40.0;
/// OpenCV's default grid (`cv2.createCLAHE()`): 8 x 8 tiles.
pub const DEFAULT_TILES: TileGrid = TileGrid { x: 8, y: 8 };

/// Most table entries (tiles x bins) a frame may need: 2^28 (512 MiB of 16-bit tables, and as
/// many 32-bit counts on the GPU); 16-bit frames get at most 4096 tiles, 8-bit ones 2^20.
pub const MAX_TABLE_ENTRIES: u64 = 1 << 28;

/// Pixels one block of the GPU's histogram kernel counts, about (64 per thread): a tile of a large
/// frame is shared by several blocks, so a grid of 8 x 8 tiles still fills the GPU.
const HISTOGRAM_PIXELS_PER_BLOCK: usize = 16 * 1024;
const HISTOGRAM_THREADS: u32 = 256;
/// Rows of the frame each block of the interpolation kernel maps, about.
const ROWS_PER_MAP_BLOCK: usize = 4;

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

// SAFETY: plain 4-byte fields, `repr(C)`: the kernels read it as their `struct Tiling`.
unsafe impl DeviceRepr for Tiling {}

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

    fn cpu_samples<T: Sample>(
        &self,
        samples: &[T],
        mask: Option<&[u8]>,
        width: usize,
        height: usize,
    ) -> Result<Vec<T>, OpError> {
        if samples.is_empty() {
            return Ok(Vec::new());
        }
        let tiling = self.tiling(width, height, bins_of::<T>())?;
        let clip = mask.map(|m| (m, self.clip));
        Ok(tiling.interpolate(samples, &tiling.tables(samples, clip)))
    }

    fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        mask: Option<&[u8]>,
        width: usize,
        height: usize,
    ) -> Result<Samples<T>, OpError> {
        if samples.is_empty() {
            return Ok(Vec::new().into());
        }
        let mut plan = ClahePlan::<T>::new(gpu, self.tiling(width, height, bins_of::<T>())?)?;
        let n = samples.len();
        let src = gpu.upload("clahe.in", samples)?;
        let mut dst = gpu.buffer::<T>("clahe.out", n)?;
        match mask {
            Some(mask) => {
                let mask = gpu.upload("clahe.mask", mask)?;
                plan.queue_masked(&src, &mask, self.clip, &mut dst)?;
            }
            None => plan.queue(&src, &mut dst)?,
        }
        Ok(gpu.download_samples(&dst, n)?)
    }
}

/// The device plan of `clahe` for one tiling: the tiles' counts and tables as scratch, and the
/// three kernels. The one GPU sequence that `Op::gpu` and the benchmark run.
pub struct ClahePlan<'g, T: Sample> {
    gpu: &'g Gpu,
    tiling: Tiling,
    counts: Buffer<'g, u32>,
    tables: Buffer<'g, T>,
}

impl<'g, T: Sample> ClahePlan<'g, T> {
    pub fn new(gpu: &'g Gpu, tiling: Tiling) -> Result<ClahePlan<'g, T>, OpError> {
        if tiling.bins != bins_of::<T>() {
            return Err(OpError::invalid(format!(
                "a tiling of {} bins for {}-bit samples",
                tiling.bins,
                8 * std::mem::size_of::<T>()
            )));
        }
        Ok(ClahePlan {
            gpu,
            tiling,
            counts: gpu.buffer::<u32>("clahe.counts", tiling.table_len())?,
            tables: gpu.buffer::<T>("clahe.tables", tiling.table_len())?,
        })
    }

    /// Queues the whole of CLAHE: `src` (width x height samples) into `dst`.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        self.tiling.queue(self.gpu, src, None, &mut self.counts, &mut self.tables, dst)
    }

    /// [`ClahePlan::queue`] counting only the pixels whose byte in `mask` (one a pixel) is
    /// non-zero, each tile clipped at OpenCV's clip limit `clip` of its counted pixels
    /// ([`MaskedClahe`]).
    pub fn queue_masked(
        &mut self,
        src: &CudaSlice<T>,
        mask: &CudaSlice<u8>,
        clip: f64,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        self.tiling.queue(self.gpu, src, Some((mask, clip)), &mut self.counts, &mut self.tables, dst)
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

    /// The histogram of tile (tx, ty) of the extended frame, added to `hist`: of the pixels whose
    /// byte in `mask` (extended as the frame) is non-zero, if given.
    fn count_tile<T: Sample>(
        &self,
        samples: &[T],
        mask: Option<&[u8]>,
        tx: usize,
        ty: usize,
        hist: &mut [u32],
    ) {
        let (w, h) = (self.width as usize, self.height as usize);
        let (tw, th) = (self.tile_w as usize, self.tile_h as usize);
        let x0 = tx * tw;
        let inside = x0.min(w)..(x0 + tw).min(w);
        let outside: Vec<usize> = (x0.max(w)..x0 + tw).map(|x| reflect_101(x, w)).collect();
        for y in ty * th..(ty + 1) * th {
            let sy = reflect_101(y, h);
            let row = &samples[sy * w..(sy + 1) * w];
            match mask {
                None => {
                    for &v in &row[inside.clone()] {
                        hist[v.into() as usize] += 1;
                    }
                    for &sx in &outside {
                        hist[row[sx].into() as usize] += 1;
                    }
                }
                Some(mask) => {
                    let counted = &mask[sy * w..(sy + 1) * w];
                    for (&v, &m) in row[inside.clone()].iter().zip(&counted[inside.clone()]) {
                        hist[v.into() as usize] += (m != 0) as u32;
                    }
                    for &sx in &outside {
                        hist[row[sx].into() as usize] += (counted[sx] != 0) as u32;
                    }
                }
            }
        }
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

    /// Every tile's look-up table, tile after tile in row-major order, `bins` entries each; with
    /// `mask` (a mask of the frame and OpenCV's clip limit), of the masked pixels alone
    /// ([`Tiling::masked_tile`]). The tiles are shared out among the CPU backend's threads
    /// whole: each table is made by one thread, as on one.
    pub fn tables<T: Sample>(&self, samples: &[T], mask: Option<(&[u8], f64)>) -> Vec<T> {
        let bins = self.bins as usize;
        let tiles = self.tiles();
        let mut luts = vec![T::default(); self.table_len()];
        let pixels = self.tile_w as usize * self.tile_h as usize * tiles;
        let per_part = tiles.div_ceil(parallel::parts_warm(pixels, MIN_PART).min(tiles)) * bins;
        parallel::for_each_part(&mut luts, per_part, |first, part| {
            let mut hist = vec![0u32; bins];
            for (j, lut) in part.chunks_exact_mut(bins).enumerate() {
                let k = first / bins + j;
                hist.fill(0);
                let (tx, ty) = (k % self.tiles_x as usize, k / self.tiles_x as usize);
                self.count_tile(samples, mask.map(|(m, _)| m), tx, ty, &mut hist);
                let (limit, scale) = match mask {
                    None => (self.limit, self.scale),
                    Some((_, clip)) => match self.masked_tile(hist.iter().sum(), clip) {
                        Some(tile) => tile,
                        None => {
                            for (v, out) in lut.iter_mut().enumerate() {
                                *out = T::from_u16(v as u16);
                            }
                            continue;
                        }
                    },
                };
                clip_histogram(&mut hist, limit);
                table(&hist, scale, lut);
            }
        });
        luts
    }

    /// Every pixel mapped by bilinear interpolation between its four nearest tiles' tables. Each
    /// row goes run by run of columns between the same two tile columns, so the four tables of a
    /// run are four slices of `bins` entries, looked up by the sample alone.
    /// Bands of rows go to the CPU backend's threads; each pixel is the same arithmetic there.
    pub fn interpolate<T: Sample>(&self, samples: &[T], luts: &[T]) -> Vec<T> {
        let (w, h, bins) = (self.width as usize, self.height as usize, self.bins as usize);
        let n = w * h;
        if n == 0 {
            return Vec::new();
        }
        let row_tables = self.tiles_x as usize * bins;
        let top = top_of::<T>() as i32;
        let columns: Vec<Weights> = (0..w).map(|x| Weights::at(x, self.inv_tw, self.tiles_x)).collect();
        let runs: Vec<&[Weights]> =
            columns.chunk_by(|a, b| (a.first, a.second) == (b.first, b.second)).collect();
        let band = h.div_ceil(parallel::parts_warm(n, MIN_PART)) * w;
        let rows_of = |first: usize, part: &mut [MaybeUninit<T>]| {
            let y0 = first / w;
            for (y, (row, line)) in (y0..).zip(samples[first..].chunks_exact(w).zip(part.chunks_exact_mut(w)))
            {
                let wy = Weights::at(y, self.inv_th, self.tiles_y);
                let plane1 = &luts[wy.first * row_tables..][..row_tables];
                let plane2 = &luts[wy.second * row_tables..][..row_tables];
                let (mut row, mut line) = (row, line);
                for run in &runs {
                    let (pixels, rest) = row.split_at(run.len());
                    row = rest;
                    let (slots, rest) = line.split_at_mut(run.len());
                    line = rest;
                    let (c1, c2) = (run[0].first * bins, run[0].second * bins);
                    let (l11, l12) = (&plane1[c1..][..bins], &plane1[c2..][..bins]);
                    let (l21, l22) = (&plane2[c1..][..bins], &plane2[c2..][..bins]);
                    let look = |table: &[T], v: usize| Into::<u32>::into(table[v]) as f32;
                    for ((&v, c), slot) in pixels.iter().zip(run.iter()).zip(slots) {
                        let v = Into::<u32>::into(v) as usize;
                        let top_row = look(l11, v) * c.a1 + look(l12, v) * c.a;
                        let bottom_row = look(l21, v) * c.a1 + look(l22, v) * c.a;
                        let res = top_row * wy.a1 + bottom_row * wy.a;
                        slot.write(T::from_u16(round_half_even(res).clamp(0, top) as u16));
                    }
                }
            }
        };
        // SAFETY: the parts are of whole rows, and every sample of a row is written, run by run.
        unsafe { parallel::output_in_parts(n, band, rows_of) }
    }

    /// Queues the whole of CLAHE on the GPU: `src` (width x height samples) into `dst`, with
    /// `counts` and `tables` ([`Tiling::table_len`] entries each) as scratch ([`ClahePlan`]).
    fn queue<T: Sample>(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<T>,
        mask: Option<(&CudaSlice<u8>, f64)>,
        counts: &mut CudaSlice<u32>,
        tables: &mut CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        let n = self.width as usize * self.height as usize;
        check_len("clahe input", src.len(), n)?;
        check_len("clahe output", dst.len(), n)?;
        check_len("clahe counts", counts.len(), self.table_len())?;
        check_len("clahe tables", tables.len(), self.table_len())?;
        if let Some((mask, _)) = mask {
            check_len("clahe mask", mask.len(), n)?;
        }
        let suffix = T::KERNEL_SUFFIX;
        gpu.stream().memset_zeros(&mut counts.slice_mut(..self.table_len()))?;

        let (tw, th) = (self.tile_w as usize, self.tile_h as usize);
        let rows_per_slice = HISTOGRAM_PIXELS_PER_BLOCK.div_ceil(tw).clamp(1, th);
        let slices = th.div_ceil(rows_per_slice);
        let blocks = self.tiles() * slices;
        if blocks > i32::MAX as usize {
            return Err(OpError::invalid(format!("{blocks} histogram blocks: the frame is too large")));
        }
        let (rows_per_slice, slices) = (rows_per_slice as u32, slices as u32);
        let cfg = launch::linear(blocks as u32, HISTOGRAM_THREADS);
        let histograms = format!("histograms_{suffix}");
        // A null pointer for no mask.
        let null = 0u64;
        // SAFETY: histograms_*(in, mask, tiling, rows_per_slice, slices, counts) in clahe.cu; the
        // lengths are checked above, the mask's too (n bytes) where there is one.
        unsafe {
            match mask {
                Some((mask, _)) => launch!(gpu, kernels::CLAHE, histograms, cfg;
                    src, mask, self, &rows_per_slice, &slices, &mut *counts),
                None => launch!(gpu, kernels::CLAHE, histograms, cfg;
                    src, &null, self, &rows_per_slice, &slices, &mut *counts),
            }
        }?;

        // One thread per bin for 8-bit tables, 64 rounds of 1024 for 16-bit ones.
        let cfg = launch::linear(self.tiles() as u32, self.bins.min(1024));
        let (masked, clip) = match mask {
            Some((_, clip)) => (1u32, clip),
            None => (0u32, 0.0f64),
        };
        // SAFETY: tables_*(counts, tiling, masked, clip, tables) in clahe.cu; the lengths are
        // checked above.
        unsafe {
            launch!(gpu, kernels::CLAHE, format!("tables_{suffix}"), cfg;
                &*counts, self, &masked, &clip, &mut *tables)
        }?;

        let h = self.height as usize;
        let cfg = LaunchConfig {
            grid_dim: (
                (self.width as usize).div_ceil(256) as u32,
                h.div_ceil(ROWS_PER_MAP_BLOCK).min(65535) as u32,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: interpolate_*(in, tiling, tables, out) in clahe.cu; the lengths are checked
        // above.
        unsafe {
            launch!(gpu, kernels::CLAHE, format!("interpolate_{suffix}"), cfg; src, self, &*tables, dst)
        }?;
        Ok(())
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
    fn cpu_masked(&self, frame: &Frame, mask: Option<&[u8]>) -> Result<Frame, OpError> {
        let (w, h) = (frame.width, frame.height);
        let (pixels, maxval) = with_samples!(&frame.pixels, v => {
            (Element::into_pixels(self.cpu_samples(v, mask, w, h)?), top_of_samples(v))
        });
        Ok(frame.derive(w, h, maxval, pixels))
    }

    fn gpu_masked(&self, gpu: &Gpu, frame: &Frame, mask: Option<&[u8]>) -> Result<Frame, OpError> {
        let (w, h) = (frame.width, frame.height);
        let (pixels, maxval) = with_samples!(&frame.pixels, v => {
            (Element::into_pixels(self.gpu_samples(gpu, v, mask, w, h)?), top_of_samples(v))
        });
        Ok(frame.derive(w, h, maxval, pixels))
    }
}

/// [`Clahe`] whose tiles count only the pixels a mask selects: `mask` holds one byte a pixel of
/// the frame, row by row, non-zero where the pixel is counted; every pixel is mapped. A tile's
/// clip limit and scale come from its counted pixels ([`Tiling::masked_tile`]), a tile of none
/// maps as the identity. A mask of another pixel count is refused.
#[derive(Debug, Clone, Copy)]
pub struct MaskedClahe<'m> {
    pub op: Clahe,
    pub mask: &'m [u8],
}

impl MaskedClahe<'_> {
    fn check(&self, frame: &Frame) -> Result<(), OpError> {
        crate::op::check_mask(self.mask, frame.pixel_count())
    }
}

impl Op for MaskedClahe<'_> {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        self.op.cpu_masked(frame, Some(self.mask))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        self.check(frame)?;
        self.op.gpu_masked(gpu, frame, Some(self.mask))
    }
}

/// The output maxval for these samples ([`top_of`] by value, for `with_samples!`).
fn top_of_samples<T: Sample>(_: &[T]) -> u16 {
    top_of::<T>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::Pixels;

    fn tiling(clip: f64, gx: usize, gy: usize, w: usize, h: usize) -> Tiling {
        Clahe { clip, tiles: TileGrid { x: gx, y: gy } }.tiling(w, h, 256).unwrap()
    }

    /// Split over any number of threads, the output is the one thread's.
    #[test]
    fn every_split_equalizes_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(0x636c_6168);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            for maxval in [255, 4000] {
                let f = parallel::testing::frame(&mut rng, w, h, maxval);
                for (clip, gx, gy) in [(40.0, 8, 8), (2.0, 3, 5), (0.0, 1, 1), (1.0, 16, 2)] {
                    let op = Clahe { clip, tiles: TileGrid { x: gx, y: gy } };
                    let what = format!("{w}x{h} maxval {maxval} clip {clip} {gx}x{gy}");
                    parallel::testing::same_on_each_pool(&what, || op.cpu(&f).map_err(|e| e.to_string()));
                }
            }
        }
    }

    #[test]
    fn grids_parse() {
        assert_eq!("8x8".parse(), Ok(TileGrid { x: 8, y: 8 }));
        assert_eq!("3x5".parse(), Ok(TileGrid { x: 3, y: 5 }));
        assert_eq!("4".parse(), Ok(TileGrid { x: 4, y: 4 }));
        for bad in ["0x8", "8x0", "x8", "8x", "-1x2", "+3x3", "8x8x8", "", "a"] {
            assert!(bad.parse::<TileGrid>().is_err(), "{bad}");
        }
    }

    #[test]
    fn reflect_101_as_opencv() {
        // n = 5: 0 1 2 3 4 | 3 2 1 0 1 2 3 4 3 ...
        let got: Vec<usize> = (0..14).map(|p| reflect_101(p, 5)).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4, 3]);
        assert_eq!((0..4).map(|p| reflect_101(p, 2)).collect::<Vec<_>>(), [0, 1, 0, 1]);
        assert_eq!(reflect_101(7, 1), 0);
    }

    #[test]
    fn extension_follows_opencv() {
        // Divisible both ways: no extension.
        let t = tiling(40.0, 8, 8, 64, 32);
        assert_eq!((t.tile_w, t.tile_h), (8, 4));
        // One axis not divisible: both axes extended, the divisible one by a whole grid.
        let t = tiling(40.0, 8, 8, 64, 33);
        assert_eq!((t.tile_w, t.tile_h), (9, 5));
        // A grid larger than the frame: 3 -> 8 columns, 1 -> 5 rows.
        let t = tiling(40.0, 8, 5, 3, 1);
        assert_eq!((t.tile_w, t.tile_h), (1, 1));
    }

    #[test]
    fn clip_limit_as_opencv() {
        // 64x64 tiles of 4096 pixels: 40 * 4096 / 256 = 640.
        assert_eq!(tiling(40.0, 1, 1, 64, 64).limit, 640);
        assert_eq!(tiling(0.0, 1, 1, 64, 64).limit, 0);
        assert_eq!(tiling(-3.0, 1, 1, 64, 64).limit, 0);
        // Tiny clips still keep one count per bin.
        assert_eq!(tiling(0.001, 1, 1, 64, 64).limit, 1);
        // Beyond int: saturated, so nothing is clipped.
        assert_eq!(tiling(1e12, 1, 1, 64, 64).limit, i32::MAX as u32);
        assert!(Clahe { clip: f64::NAN, ..Clahe::default() }.tiling(8, 8, 256).is_err());
    }

    #[test]
    fn too_many_tables_are_refused() {
        let c = Clahe { clip: 40.0, tiles: TileGrid { x: 65, y: 64 } };
        assert!(c.tiling(100, 100, 65536).unwrap_err().to_string().contains("table entries"));
        assert!(c.tiling(100, 100, 256).is_ok());
    }

    #[test]
    fn redistribution_keeps_the_total_and_steps_the_remainder() {
        // 8 bins, limit 2: 10 cut off -> 1 each, 2 left over: bins 0 and 4 (step 8 / 2).
        let mut hist = vec![12, 0, 0, 0, 0, 0, 0, 0];
        clip_histogram(&mut hist, 2);
        assert_eq!(hist, [4, 1, 1, 1, 2, 1, 1, 1]);
        // 3 left over of 8: step 2, bins 0, 2, 4.
        let mut hist = vec![5, 0, 0, 0, 0, 0, 0, 0];
        clip_histogram(&mut hist, 2);
        assert_eq!(hist, [3, 0, 1, 0, 1, 0, 0, 0]);
        let mut hist = vec![5, 1, 0, 9];
        clip_histogram(&mut hist, 0);
        assert_eq!(hist, [5, 1, 0, 9]);
    }

    #[test]
    fn rounding_is_rint() {
        let mut rng = fastrand::Rng::with_seed(7);
        let ties = (0..140_000).map(|i| i as f32 / 2.0);
        let near_ties = (0..100_000).map(|i| f32::from_bits((i as f32 / 2.0 + 0.25).to_bits() ^ 1));
        let random = (0..1_000_000).map(|_| (rng.f32() - 0.1) * 70_000.0);
        for x in ties.chain(near_ties).chain(random) {
            assert_eq!(round_half_even(x), x.round_ties_even() as i32, "{x}");
        }
    }

    #[test]
    fn tables_round_half_to_even() {
        // scale 255 / 2 = 127.5: cdf 1 -> 127.5 -> 128 (even); cdf 2 -> 255.
        let mut lut = [0u8; 3];
        table(&[1, 0, 1], 127.5, &mut lut);
        assert_eq!(lut, [128, 128, 255]);
    }

    #[test]
    fn constant_frames_map_to_one_value_and_keep_the_range_maxval() {
        let frame = Frame::new(5, 3, 100, Pixels::U8(vec![40; 15].into()));
        let out = Clahe::default().cpu(&frame).unwrap();
        assert_eq!(out.maxval, 255);
        let Pixels::U8(v) = &out.pixels else { panic!() };
        assert!(v.iter().all(|&s| s == v[0]));
        let frame = Frame::new(4, 4, 1000, Pixels::U16(vec![7; 16].into()));
        assert_eq!(Clahe::default().cpu(&frame).unwrap().maxval, 65535);
    }

    /// Under a mask: one of every pixel is CLAHE without one; one of none maps every pixel to
    /// itself (identity tables); and the values of the pixels left out change no other pixel's
    /// output. 8- and 16-bit, grids that divide the frame or extend it, with and without clipping.
    #[test]
    fn a_masks_pixels_alone_make_the_tables() {
        let mut rng = fastrand::Rng::with_seed(0x6d61_736b);
        for (w, h) in [(1, 1), (7, 5), (40, 33), (64, 64), (101, 17)] {
            let n = w * h;
            for maxval in [255u16, 4000] {
                let f = parallel::testing::frame(&mut rng, w, h, maxval);
                for (clip, gx, gy) in [(40.0, 8, 8), (2.0, 3, 5), (0.0, 1, 1), (1.0, 4, 2)] {
                    let op = Clahe { clip, tiles: TileGrid { x: gx, y: gy } };
                    let what = format!("{w}x{h} maxval {maxval} clip {clip} {gx}x{gy}");
                    let all = vec![1u8; n];
                    let plain = op.cpu(&f).unwrap();
                    assert!(MaskedClahe { op, mask: &all }.cpu(&f).unwrap() == plain, "{what}: every pixel");
                    let none = vec![0u8; n];
                    let same = MaskedClahe { op, mask: &none }.cpu(&f).unwrap();
                    let top = if maxval <= 255 { 255 } else { 65535 };
                    assert_eq!(
                        (same.pixels.clone(), same.maxval),
                        (f.pixels.clone(), top),
                        "{what}: no pixel"
                    );
                    let mask: Vec<u8> = (0..n).map(|_| rng.u8(..) % 3).collect();
                    let masked = MaskedClahe { op, mask: &mask }.cpu(&f).unwrap();
                    let mut other = f.clone();
                    let changed: Vec<usize> = (0..n).filter(|&i| mask[i] == 0 && rng.bool()).collect();
                    other.pixels = match &f.pixels {
                        Pixels::U8(v) => {
                            let mut v = v.to_vec();
                            changed.iter().for_each(|&i| v[i] = rng.u8(..));
                            Pixels::U8(v.into())
                        }
                        Pixels::U16(v) => {
                            let mut v = v.to_vec();
                            changed.iter().for_each(|&i| v[i] = rng.u16(..=maxval));
                            Pixels::U16(v.into())
                        }
                        Pixels::F32(_) => unreachable!(),
                    };
                    let moved = MaskedClahe { op, mask: &mask }.cpu(&other).unwrap();
                    for i in (0..n).filter(|i| !changed.contains(i)) {
                        assert_eq!(masked.pixels.get(i), moved.pixels.get(i), "{what}: pixel {i}");
                    }
                    parallel::testing::same_on_each_pool(&what, || {
                        MaskedClahe { op, mask: &mask }.cpu(&f).map_err(|e| e.to_string())
                    });
                }
            }
        }
        let f = Frame::new(2, 2, 255, Pixels::U8(vec![0; 4].into()));
        let e = MaskedClahe { op: Clahe::default(), mask: &[1; 3] }.cpu(&f).unwrap_err();
        assert_eq!(e.to_string(), "a mask of 3 pixels for a frame of 4");
    }

    /// A tile's limit and scale under a mask: OpenCV's rules with its counted pixels for its
    /// area; none for a tile of no counted pixel.
    #[test]
    fn masked_tiles_clip_and_scale_by_their_counted_pixels() {
        let t = tiling(40.0, 2, 2, 64, 64);
        assert_eq!(t.masked_tile(1024, 40.0), Some((t.limit, t.scale)), "a whole tile");
        assert_eq!(t.masked_tile(100, 40.0), Some((15, 255.0 / 100.0)));
        assert_eq!(t.masked_tile(3, 40.0), Some((1, 85.0)));
        assert_eq!(t.masked_tile(100, 0.0), Some((0, 2.55)));
        assert_eq!(t.masked_tile(100, 1e300), Some((i32::MAX as u32, 2.55)));
        assert_eq!(t.masked_tile(0, 40.0), None);
    }
}
