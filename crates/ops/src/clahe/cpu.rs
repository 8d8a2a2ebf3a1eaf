//! `clahe` on the CPU: each tile's table by one thread, then the interpolation in bands of rows.

use std::mem::MaybeUninit;

use super::{bins_of, clip_histogram, reflect_101, round_half_even, table, top_of, Clahe, Tiling, Weights};
use crate::{parallel, OpError, Sample};

/// Pixels (counted or mapped) a part of the CPU's work holds at least: about 0.02 ms of one
/// thread's work at the 5 ns a pixel the interpolation takes (see `parallel.rs`). (At 2^16,
/// 640x651 took 0.63 to 0.64 ms on the GPU machine's 16 threads and 0.23 at 2^12, where OpenCV
/// took 0.29; 1280x720, 0.77 against 0.47, OpenCV 0.39.)
const MIN_PART: usize = 1 << 12;

impl Clahe {
    pub(super) fn cpu_samples<T: Sample>(
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
}

impl Tiling {
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
}
