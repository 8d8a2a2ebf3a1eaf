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

use histopipe_frame::{Frame, Geometry};
use histopipe_gpu::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use histopipe_gpu::kernels;

use crate::{with_samples, Gpu, Op, OpError, Sample};

/// u32 counters of shared memory a block may use: 48 KiB, the limit without opting in.
const SHARED_COUNTERS: u32 = 12 * 1024;
/// Lines (columns or rows) per block at most: one warp's worth of neighbouring columns.
const MAX_TILE: u32 = 32;
const THREADS: u32 = 256;

/// The default number of bins: one per value for 8-bit frames, 256 for 16-bit ones.
pub fn default_bins(maxval: u16) -> u32 {
    (maxval as u32 + 1).min(256)
}

/// The bin of sample `v` among `bins` over 0..=maxval. Samples are never over maxval in a valid
/// frame; a larger one is put in the last bin, on both backends, rather than out of bounds.
pub fn bin_of(v: u32, bins: u32, maxval: u16) -> u32 {
    (v * bins / (maxval as u32 + 1)).min(bins - 1)
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
        let levels = frame.maxval as u32 + 1;
        if bins == 0 || bins > levels {
            // More bins than values would leave some bins holding no value at all.
            return Err(OpError::invalid(format!(
                "--bins {bins} is not in 1..={levels} (the frame's maxval {} + 1)",
                frame.maxval
            )));
        }
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

    /// The lowest and highest sample value of bin `b`: from ceil(b (maxval + 1) / N) to the next
    /// bin's lowest minus one.
    pub fn bin_range(&self, b: u32) -> (u32, u32) {
        let levels = self.maxval as u64 + 1;
        let low = |b: u64| (b * levels).div_ceil(self.bins as u64) as u32;
        (low(b as u64), low(b as u64 + 1) - 1)
    }

    fn cpu_counts<T: Sample>(&self, w: usize, h: usize, input: &[T]) -> Vec<u32> {
        let lines = self.lines(w, h);
        let mut counts = vec![0u32; self.bins as usize * lines];
        let lut: Vec<u32> =
            (0..=self.maxval as u32).map(|v| bin_of(v, self.bins, self.maxval) * lines as u32).collect();
        let last = (self.bins - 1) * lines as u32;
        for (y, row) in input.chunks_exact(w.max(1)).enumerate().take(h) {
            for (x, &v) in row.iter().enumerate() {
                if let Some(g) = &self.mask {
                    if !g.is_original(x as f64, y as f64) {
                        continue;
                    }
                }
                let base = lut.get(Into::<u32>::into(v) as usize).copied().unwrap_or(last);
                counts[base as usize + if self.rows { y } else { x }] += 1;
            }
        }
        counts
    }

    fn gpu_counts<T: Sample>(&self, gpu: &Gpu, w: usize, h: usize, input: &[T]) -> Result<Vec<u32>, OpError> {
        let n = self.bins as usize * self.lines(w, h);
        let src = gpu.upload::<T>("colhist.in", input)?;
        let mut counts = gpu.buffer::<u32>("colhist.counts", n)?;
        self.launch(gpu, &src, w, h, &mut counts)?;
        let mut out = vec![0u32; n];
        gpu.download(&counts, &mut out)?;
        Ok(out)
    }

    /// Queues the work on the GPU's stream: zeroes the first `bins x lines` counters of `counts`,
    /// then counts the `w x h` frame in `src` into them. Device buffers in, device buffers out, so
    /// benchmarks can time the kernel alone.
    pub fn launch<T: Sample>(
        &self,
        gpu: &Gpu,
        src: &CudaSlice<T>,
        w: usize,
        h: usize,
        counts: &mut CudaSlice<u32>,
    ) -> Result<(), OpError> {
        let lines = self.lines(w, h);
        let along = if self.rows { w } else { h };
        if lines == 0 || along == 0 {
            return Ok(());
        }
        gpu.stream().memset_zeros(&mut counts.slice_mut(..self.bins as usize * lines))?;
        let direction = if self.rows { "rows" } else { "cols" };
        let tile = (SHARED_COUNTERS / self.bins).min(MAX_TILE);
        let (w32, h32, maxval, bins) = (w as u32, h as u32, self.maxval as u32, self.bins);
        let (masked, g) = match &self.mask {
            Some(g) => (1u32, g.clone()),
            None => (0u32, Geometry::identity(w, h)),
        };
        let m = g.to_original;
        let (ow, oh) = (g.original_width as f64, g.original_height as f64);
        let (name, cfg, tile, span) = if tile == 0 {
            let blocks = (w * h).div_ceil(THREADS as usize).clamp(1, 1 << 16) as u32;
            let cfg =
                LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
            ("global", cfg, 0, 0)
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
                shared_mem_bytes: self.bins * tile * 4,
            };
            ("tiled", cfg, tile, span)
        };
        let f =
            gpu.function(&kernels::COLHIST, &format!("colhist_{name}_{direction}_{}", T::KERNEL_SUFFIX))?;
        let mut launch = gpu.stream().launch_builder(&f);
        launch.arg(src).arg(&w32).arg(&h32).arg(&maxval).arg(&bins).arg(&tile).arg(&span);
        launch.arg(&masked).arg(&m.a).arg(&m.b).arg(&m.c).arg(&m.d).arg(&m.e).arg(&m.f).arg(&ow).arg(&oh);
        launch.arg(counts);
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    fn histograms(&self, frame: &Frame, counts: Vec<u32>) -> Histograms {
        Histograms { bins: self.bins as usize, lines: self.lines(frame.width, frame.height), counts }
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
        let f = Frame::new(1, 1, 3, Pixels::U8(vec![0]));
        let too_many = ColHistParams { bins: Some(5), ..Default::default() }.for_frame(&f);
        assert!(too_many.unwrap_err().message.contains("not in 1..=4"));
    }

    #[test]
    fn counts_columns_rows_and_only_data_pixels() {
        let mut f = Frame::new(3, 2, 3, Pixels::U8(vec![0, 1, 3, 0, 3, 3]));
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
