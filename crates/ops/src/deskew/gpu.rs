//! `deskew` on the GPU: its device plan ([`DeskewPlan`]), kernels of kernels-common/deskew.cu.
//! The frame is uploaded once: its histogram (for Otsu's threshold and the fill), its ink (two
//! separable passes, then its count), each level's profiles (one launch for every angle of the
//! level) and scores, and the turn, all from it.

use std::marker::PhantomData;

use histopipe_frame::{Frame, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, LaunchConfig};

use super::{
    bits, search, upright, Deskew, DeskewParams, Deskewed, InkRule, Projection, Skew, MARGIN_DEN,
    PROFILE_BUDGET, WINDOW,
};
use crate::bins::Bins;
use crate::histogram::DistributionPlan;
use crate::{Element, Gpu, OpError, Sample};

/// Threads of a block of the profile and score kernels.
const THREADS: u32 = 256;
/// About how many pixels a block of the profile kernel reads (a band of whole rows).
const BAND_PIXELS: usize = 1 << 16;
/// Most bins of a band's profile in shared memory (48 KiB); wider bands count in global memory.
const SHARED_MAX_BINS: usize = 12 * 1024;

/// Most blocks of the ink's count (each adds its part; the host adds the parts).
const COUNT_BLOCKS: u32 = 1024;

/// The device plan of `deskew` for `width x height` frames of `T` samples up to `maxval`: the
/// histogram ([`DistributionPlan`], counts only), its download and Otsu's threshold on the host
/// (the ink's polarity), the ink (rows' sums, then the window's and the test, one thread a
/// pixel each) and its count, then each level of the search: the angles' projections uploaded, the profiles zeroed and
/// counted (one launch), the scores summed (one launch) and downloaded, the best chosen on the
/// host; and the turn of the frame upright ([`crate::rotate::RotatePlan`]). The one GPU sequence
/// of `Op::gpu` and the benchmark.
pub struct DeskewPlan<'g, T: Sample> {
    gpu: &'g Gpu,
    params: DeskewParams,
    width: usize,
    height: usize,
    maxval: u16,
    distribution: DistributionPlan<'g>,
    _sample: PhantomData<T>,
}

impl<'g, T: Sample> DeskewPlan<'g, T> {
    pub fn new(
        gpu: &'g Gpu,
        params: DeskewParams,
        width: usize,
        height: usize,
        maxval: u16,
    ) -> Result<DeskewPlan<'g, T>, OpError> {
        params.check()?;
        super::check_size(width, height)?;
        let distribution = DistributionPlan::new(gpu, Bins::new(None, maxval)?)?;
        Ok(DeskewPlan { gpu, params, width, height, maxval, distribution, _sample: PhantomData })
    }

    /// The skew of the frame in `src`, and its histogram (waits for the stream at each level).
    pub fn measure(&mut self, src: &CudaSlice<T>) -> Result<(Skew, Vec<u64>), OpError> {
        let n = self.width * self.height;
        self.distribution.queue_counts(src, n)?;
        let counts = self.distribution.download_counts()?;
        let rule = InkRule::of_histogram(&counts, bits::<T>(), self.maxval)?;
        let mut ink = self.gpu.buffer::<u8>("deskew.ink", n)?;
        let count = self.ink(src, rule, &mut ink)?;
        let skew = search(self.params, rule, count, |angles| self.scores(&ink, angles))?;
        Ok((skew, counts))
    }

    /// The ink of the frame in `src` by `rule` into `ink` (1 a pixel of ink, else 0), and its
    /// count (waits for the stream).
    fn ink(&self, src: &CudaSlice<T>, rule: InkRule, ink: &mut CudaSlice<u8>) -> Result<u64, OpError> {
        let (gpu, n) = (self.gpu, self.width * self.height);
        let mut rows = gpu.buffer::<u32>("deskew.rows", n)?;
        let (w, h, r, dark) = (self.width as u32, self.height as u32, WINDOW, rule.dark as u32);
        let name = format!("deskew_row_sums_{}", T::KERNEL_SUFFIX);
        // SAFETY: deskew_row_sums_*(in, w, h, r, rows) in deskew.cu; `src` holds the w x h frame
        // and `rows` at least w h sums; the kernel's grid-stride loop covers them all.
        unsafe {
            launch!(gpu, kernels::DESKEW, name, launch::cover(n, THREADS); src, &w, &h, &r, &mut *rows)
        }?;
        let (margin, den) = (rule.margin, MARGIN_DEN);
        let name = format!("deskew_ink_{}", T::KERNEL_SUFFIX);
        // SAFETY: deskew_ink_*(in, rows, w, h, r, dark, margin, den, ink) in deskew.cu; `src`
        // and `rows` hold w h samples and sums, `ink` room for w h flags, all written.
        unsafe {
            launch!(gpu, kernels::DESKEW, name, launch::cover(n, THREADS);
                src, &*rows, &w, &h, &r, &dark, &margin, &den, &mut *ink)
        }?;
        let blocks = launch::blocks(n, THREADS, COUNT_BLOCKS);
        let mut partial = gpu.buffer::<u64>("deskew.count", blocks as usize)?;
        let n64 = n as u64;
        // SAFETY: deskew_count(ink, n, partial) in deskew.cu; `ink` holds n flags, `partial` one
        // count a block of the grid.
        unsafe {
            launch!(gpu, kernels::DESKEW, "deskew_count", launch::linear(blocks, THREADS); &*ink, &n64, &mut *partial)
        }?;
        let mut parts = vec![0u64; blocks as usize];
        gpu.download(&partial, &mut parts)?;
        Ok(parts.iter().sum())
    }

    /// The whole operation on `src` into `dst` (the same size): the skew, then the turn upright
    /// queued, with `fill` (`None`: the most common sample). Returns the skew and the turn.
    pub fn queue(
        &mut self,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
        fill: Option<crate::Fill>,
    ) -> Result<(Skew, crate::rotate::Rotate), OpError> {
        let (skew, counts) = self.measure(src)?;
        let op = Deskew { params: self.params, fill };
        let fill = op.fill_for(&counts, self.maxval)?;
        let turn = upright(skew.angle, self.width, self.height, fill, self.maxval)?;
        turn.plan(self.gpu).queue(src, dst)?;
        Ok((skew, turn))
    }

    /// The scores of `angles`, in groups whose profiles fit [`PROFILE_BUDGET`].
    fn scores(&self, ink: &CudaSlice<u8>, angles: &[f64]) -> Result<Vec<u64>, OpError> {
        let (w, h) = (self.width, self.height);
        let projections: Vec<Projection> = angles.iter().map(|&a| Projection::new(a, w, h)).collect();
        let stride = projections.iter().map(|p| p.bins).max().unwrap_or(1);
        let group = (PROFILE_BUDGET / (4 * stride)).clamp(1, 65535);
        let mut scores = Vec::with_capacity(angles.len());
        for chunk in projections.chunks(group) {
            scores.extend(self.group_scores(ink, chunk, stride)?);
        }
        Ok(scores)
    }

    fn group_scores(
        &self,
        ink: &CudaSlice<u8>,
        projections: &[Projection],
        stride: usize,
    ) -> Result<Vec<u64>, OpError> {
        let (gpu, w, h) = (self.gpu, self.width, self.height);
        let count = projections.len();
        let table: Vec<i64> = projections.iter().flat_map(|p| [p.s, p.c, p.offset]).collect();
        let proj = gpu.upload("deskew.projections", &table)?;
        let mut profiles = gpu.buffer::<u32>("deskew.profiles", count * stride)?;
        let mut scores = gpu.buffer::<u64>("deskew.scores", count)?;
        gpu.stream().memset_zeros(&mut profiles.slice_mut(..count * stride))?;
        let band_rows = (BAND_PIXELS / w).clamp(1, h);
        // A band's bins: its rows' span across the lines, and the frame's width's, plus two for
        // the roundings at either end.
        let one = 1i64 << super::FRAC_BITS;
        let span = projections
            .iter()
            .map(|p| ((band_rows as i64 - 1) * p.c.abs() + (w as i64 - 1) * p.s.abs()) / one + 2)
            .max()
            .unwrap_or(1) as usize;
        let shared_bins = if span <= SHARED_MAX_BINS { span } else { 0 };
        let cfg = LaunchConfig {
            grid_dim: (h.div_ceil(band_rows) as u32, count as u32, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: shared_bins as u32 * 4,
        };
        let (wu, hu) = (w as u32, h as u32);
        let (band, shared, stride64) = (band_rows as u32, shared_bins as u32, stride as u64);
        // SAFETY: deskew_profiles(ink, w, h, proj, band_rows, shared_bins, stride, out) in
        // deskew.cu; `ink` holds the w x h frame's flags, `proj` 3 values an angle of the grid's y,
        // `profiles` `stride` counts an angle, at least each angle's bins (Projection::bins), and
        // `shared_bins` counts of dynamic shared memory cover a band's span (bounded above).
        unsafe {
            launch!(gpu, kernels::DESKEW, "deskew_profiles", cfg;
                ink, &wu, &hu, &*proj, &band, &shared, &stride64, &mut *profiles)
        }?;
        // SAFETY: deskew_scores(profiles, stride, scores) in deskew.cu; one block an angle, of
        // `stride` counts in `profiles`, one score each in `scores`.
        unsafe {
            launch!(gpu, kernels::DESKEW, "deskew_scores", launch::linear(count as u32, THREADS);
                &*profiles, &stride64, &mut *scores)
        }?;
        let mut out = vec![0u64; count];
        gpu.download(&scores, &mut out)?;
        Ok(out)
    }
}

/// The skew of the gray frame `frame`, whose samples are `samples`.
pub(super) fn measure<T: Sample>(
    gpu: &Gpu,
    params: &DeskewParams,
    samples: &[T],
    frame: &Frame,
) -> Result<Skew, OpError> {
    let src = gpu.upload("deskew.in", samples)?;
    let mut plan = DeskewPlan::<T>::new(gpu, *params, frame.width, frame.height, frame.maxval)?;
    Ok(plan.measure(&src)?.0)
}

/// [`Deskew`] of the gray frame `frame`, whose samples are `samples`: one upload.
pub(super) fn deskew<T: Sample>(
    gpu: &Gpu,
    op: &Deskew,
    samples: &[T],
    frame: &Frame,
) -> Result<Deskewed, OpError> {
    let n = samples.len();
    let src = gpu.upload("deskew.in", samples)?;
    let mut dst = gpu.buffer::<T>("deskew.out", n)?;
    let mut plan = DeskewPlan::<T>::new(gpu, op.params, frame.width, frame.height, frame.maxval)?;
    let (skew, turn) = plan.queue(&src, &mut dst, op.fill)?;
    let out: Samples<T> = gpu.download_samples(&dst, n)?;
    let pixels = <T as Element>::into_pixels(out);
    let frame =
        if turn.turn == crate::rotate::Turn::Quarter(0) { frame.clone() } else { turn.output(frame, pixels) };
    Ok(Deskewed { skew, frame })
}
