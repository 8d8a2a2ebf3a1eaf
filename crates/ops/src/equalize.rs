//! `equalize`: global histogram equalization, each frame through a look-up table built from its
//! own cumulative distribution: l' = round((cdf(l) - cdf_min) / (N - cdf_min) * maxval), with N the
//! pixel count and cdf_min the smallest non-zero cdf value (the count of the lowest level present).
//!
//! - 8-bit frames use OpenCV's `equalizeHist` arithmetic, so a maxval-255 frame comes out byte for
//!   byte as `cv2.equalizeHist` makes it: scale = maxval / (N - cdf_min) and the product
//!   (cdf(l) - cdf_min) * scale in `f32`, each rounded to nearest, then rounded half to even and
//!   clamped to 0..=maxval.
//! - 16-bit frames round exactly, half up, in integers: (2 (cdf - cdf_min) maxval + D) div 2D with
//!   D = N - cdf_min.
//! - A frame of one value (D = 0) is left as it is, as OpenCV does.
//!
//! Levels below the lowest present map to 0; no sample uses them.
//!
//! Float frames are scikit-image's `equalize_hist` ([`FloatEqualize`], the `float` module).

use std::mem::MaybeUninit;
use std::sync::Mutex;

use histopipe_frame::{Frame, Pixels, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use crate::bins::Bins;
use crate::histogram::{self, check_len, Distribution, DistributionPlan};
use crate::lightness::{Plane, PlaneMap};
use crate::mask::{self, Mask};
use crate::{lut, matching, parallel, with_samples, Element, Gpu, Op, OpError, Sample};

mod float;
pub use float::{F32Bins, FloatEqualize, FloatEqualizePlan, Interp};

/// The equalization operation (it has no parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Equalize;

/// The output level of a level whose cumulative count is `cdf`; see the module's documentation.
/// `eight_bit` selects OpenCV's float rule. Needs cdf_min < total (a frame of several values).
fn level(cdf: u64, cdf_min: u64, total: u64, maxval: u16, eight_bit: bool) -> u16 {
    let above = cdf.saturating_sub(cdf_min);
    let span = total - cdf_min;
    if eight_bit {
        // u64 -> f32 rounds to nearest-even, as C's int -> float does in OpenCV.
        let scale = maxval as f32 / span as f32;
        let r = (above as f32 * scale).round_ties_even();
        r.clamp(0.0, maxval as f32) as u16
    } else {
        ((2 * above as u128 * maxval as u128 + span as u128) / (2 * span as u128)) as u16
    }
}

/// The look-up table for a frame with cumulative distribution `cdf` (one entry per level).
pub fn table<T: Sample>(cdf: &[u64], maxval: u16) -> Vec<T> {
    let total = cdf.last().copied().unwrap_or(0);
    let cdf_min = cdf.iter().copied().find(|&c| c != 0).unwrap_or(0);
    let eight_bit = std::mem::size_of::<T>() == 1;
    cdf.iter()
        .enumerate()
        .map(|(l, &c)| {
            // One value everywhere: the identity (only that level is ever looked up).
            let out = if cdf_min == total { l as u16 } else { level(c, cdf_min, total, maxval, eight_bit) };
            T::from_u16(out)
        })
        .collect()
}

/// The device plan of `equalize`: the frame's distribution ([`DistributionPlan`]), its look-up
/// table, and the mapping of every sample through it. The one GPU sequence that `Op::gpu` and
/// the benchmark (whole, and step by step) run.
pub struct EqualizePlan<'g, T: Sample> {
    gpu: &'g Gpu,
    distribution: DistributionPlan<'g>,
    lut: Buffer<'g, T>,
    /// Samples of a frame.
    n: usize,
}

impl<'g, T: Sample> EqualizePlan<'g, T> {
    /// The plan for frames of `n` samples of at most `maxval`.
    pub fn new(gpu: &'g Gpu, maxval: u16, n: usize) -> Result<EqualizePlan<'g, T>, OpError> {
        let bins = Bins::new(None, maxval)?;
        if bins.levels() > 1 << (8 * std::mem::size_of::<T>()) {
            return Err(OpError::invalid(format!(
                "a {}-bit table of {} levels",
                8 * std::mem::size_of::<T>(),
                bins.levels()
            )));
        }
        Ok(EqualizePlan {
            gpu,
            distribution: DistributionPlan::new(gpu, bins)?,
            lut: gpu.buffer::<T>("equalize.lut", bins.levels())?,
            n,
        })
    }

    /// Queues the whole equalization of the `n` samples of `src` into `dst`: the distribution
    /// (histogram and scan in one kernel), the table, the mapping.
    pub fn queue(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        self.distribution.queue(src, self.n)?;
        self.queue_table()?;
        self.queue_map(src, dst)
    }

    /// Queues the first step alone: the histogram of `src` (zeroing included).
    pub fn queue_counts(&mut self, src: &CudaSlice<T>) -> Result<(), OpError> {
        self.distribution.queue_counts(src, self.n)
    }

    /// Queues the middle steps after [`EqualizePlan::queue_counts`]: the scan of the counts
    /// (the one-block scan kernel), then the table.
    pub fn queue_scan_and_table(&mut self) -> Result<(), OpError> {
        self.distribution.queue_scan()?;
        self.queue_table()
    }

    /// Queues the look-up table from the cumulative distribution, its smallest non-zero value and
    /// the pixel count.
    fn queue_table(&mut self) -> Result<(), OpError> {
        let levels = self.distribution.bins().levels();
        let (cdf, cdf_min) = self.distribution.cumulative();
        let (levels, total, maxval) = (levels as u32, self.n as u64, levels as u32 - 1);
        let name = format!("lut_{}", T::KERNEL_SUFFIX);
        // SAFETY: lut_*(cdf, cdf_min, levels, total, maxval, lut) in equalize.cu; `cdf` and `lut`
        // hold `levels` entries, `cdf_min` one.
        unsafe {
            launch!(self.gpu, kernels::EQUALIZE, name, launch::cover(levels as usize, 256);
                cdf, cdf_min, &levels, &total, &maxval, &mut *self.lut)
        }?;
        Ok(())
    }

    /// Queues the last step alone: `dst[i] = lut[src[i]]` for the `n` samples of `src`, through the
    /// table made last.
    pub fn queue_map(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        queue_map(self.gpu, src, self.n, &self.lut, self.distribution.bins().levels(), dst)
    }
}

/// Queues `dst[i] = lut[src[i]]` for the first `n` samples of `src`, through a table of `levels`
/// entries on the device (samples are at most `levels - 1`): the map kernel of equalize.cu, which
/// `threshold` maps its binary frames with too.
pub fn queue_map<T: Sample>(
    gpu: &Gpu,
    src: &CudaSlice<T>,
    n: usize,
    lut: &CudaSlice<T>,
    levels: usize,
    dst: &mut CudaSlice<T>,
) -> Result<(), OpError> {
    check_len("map input", src.len(), n)?;
    check_len("map output", dst.len(), n)?;
    check_len("map table", lut.len(), levels)?;
    if n == 0 {
        return Ok(());
    }
    // Each thread maps 16 bytes per step.
    let chunks = n.div_ceil(16 / std::mem::size_of::<T>());
    let (n, levels) = (n as u64, levels as u32);
    let name = format!("map_{}", T::KERNEL_SUFFIX);
    // SAFETY: map_*(in, n, lut, levels, out) in equalize.cu; `src` and `dst` hold `n` samples
    // (checked above), `lut` `levels` entries, and an 8-bit table at most 256 (its shared copy).
    unsafe { launch!(gpu, kernels::EQUALIZE, name, launch::cover(chunks, 256); src, &n, lut, &levels, dst) }?;
    Ok(())
}

/// Every sample through `lut` (indexed by value; samples are at most its last index): the last
/// step of [`Equalize`] on the CPU, and of `threshold`'s 16-bit frames.
pub(crate) fn map<T: Sample>(samples: &[T], lut: &[T]) -> Vec<T> {
    map_parts(samples, |src, out| {
        for (slot, &v) in out.iter_mut().zip(src) {
            slot.write(lut[v.into() as usize]);
        }
    })
}

/// Every 8-bit sample through `lut` (indexed by value; samples are at most its last index), the
/// last step of [`Equalize`] on the CPU: [`lut::look_up`], 32 samples at a time where the CPU has
/// AVX2.
pub fn map_bytes(samples: &[u8], lut: &[u8]) -> Vec<u8> {
    let mut full = [0u8; 256];
    for (slot, &out) in full.iter_mut().zip(lut) {
        *slot = out;
    }
    map_parts(samples, |src, out| lut::look_up(src, &full, out))
}

/// Half the fewest samples for the CPU's mapping to be split at all ([`parallel::parts`]): 0.1 ns
/// a sample on one core with AVX2 (4096x3112 in 1.3 ms on Zen 5; 0.2 ns a byte at a time), twice
/// that on the GPU machine's, so a frame is split from about 0.05 ms of work. (At 2^20, 1920x1080
/// stayed on one thread: `equalize` took 0.67 to 0.71 ms on 16 threads, against 0.16 to 0.19 with
/// its map split, and 640x651 0.25 to 0.30, against 0.08. Earlier, on the 2-core build machine,
/// 1920x1080 in two parts took 0.46 ms against 0.41 in one: much of a small frame's time is the
/// first writes to the output's fresh pages.)
const MIN_SPLIT: usize = 1 << 17;
/// Fewest samples in a part once a frame is split: 2560x1707 makes 64 parts, four for each of 16
/// threads (in parts of 2^20 samples it made 4, and with the histogram's 8 the frame took 1.56 to
/// 3.08x OpenCV's equalizeHist on 16 threads).
const MIN_PART: usize = 1 << 13;

/// `map(src, out)` over consecutive parts of `samples` and the output, in parts on the pool's
/// threads: `map` writes every slot of its `out`, as long as its `src`.
fn map_parts<T: Copy + Send + Sync>(
    samples: &[T],
    map: impl Fn(&[T], &mut [MaybeUninit<T>]) + Sync,
) -> Vec<T> {
    let n = samples.len();
    let part = n.div_ceil(parallel::parts_split_from(n, parallel::split_from(MIN_SPLIT), MIN_PART));
    let map_part = |first: usize, part: &mut [MaybeUninit<T>]| map(&samples[first..first + part.len()], part);
    // SAFETY: `map` writes every slot of its `out`.
    unsafe { parallel::output_in_parts(n, part, map_part) }
}

impl Equalize {
    fn cpu_samples<T: Sample>(samples: &[T], maxval: u16) -> Result<Vec<T>, OpError> {
        let bins = Bins::new(None, maxval)?;
        let dist = Distribution::from_counts(bins, histogram::count(samples, bins));
        let lut = table::<T>(&dist.cumulative, maxval);
        Ok(map(samples, &lut))
    }

    fn gpu_samples<T: Sample>(gpu: &Gpu, samples: &[T], maxval: u16) -> Result<Samples<T>, OpError> {
        let n = samples.len();
        let src = gpu.upload("equalize.in", samples)?;
        let mut dst = gpu.buffer::<T>("equalize.out", n)?;
        EqualizePlan::new(gpu, maxval, n)?.queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(out)
    }
}

impl Op for Equalize {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let pixels = match &frame.pixels {
            Pixels::U8(v) => {
                let bins = Bins::new(None, frame.maxval)?;
                let dist = Distribution::from_counts(bins, histogram::count(v, bins));
                Pixels::U8(map_bytes(v, &table::<u8>(&dist.cumulative, frame.maxval)).into())
            }
            Pixels::U16(v) => Pixels::U16(Self::cpu_samples(v, frame.maxval)?.into()),
            Pixels::F32(_) => return FloatEqualize::default().cpu(frame),
        };
        Ok(frame.derive(frame.width, frame.height, frame.maxval, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        if let Pixels::F32(_) = frame.pixels {
            return FloatEqualize::default().gpu(gpu, frame);
        }
        let pixels =
            with_samples!(&frame.pixels, v => Element::into_pixels(Self::gpu_samples(gpu, v, frame.maxval)?));
        Ok(frame.derive(frame.width, frame.height, frame.maxval, pixels))
    }

    fn plane_map(&self) -> Option<&dyn PlaneMap> {
        Some(self)
    }
}

/// A colour frame's luma equalized on the device ([`crate::lightness::on_luma`]): the sequence
/// of [`Op::gpu`] on a plane already there.
impl PlaneMap for Equalize {
    fn queue(&self, gpu: &Gpu, maxval: u16, n: usize, plane: Plane<'_>) -> Result<(), OpError> {
        match plane {
            Plane::U8(src, dst) => EqualizePlan::new(gpu, maxval, n)?.queue(src, dst),
            Plane::U16(src, dst) => EqualizePlan::new(gpu, maxval, n)?.queue(src, dst),
        }
    }
}

/// Where [`Remap`]'s table comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRule<'a> {
    /// Equalization of the frame's histogram ([`table`], the rules of [`Equalize`]).
    Equalize,
    /// Matching to a reference's counts, one per level of the reference ([`matching::table`]).
    Match(&'a [u64]),
    /// A table given whole: one entry per level 0..=maxval of the frame, none above maxval.
    Given(&'a [u16]),
}

/// The variants of [`Equalize`] that need the table on the host: a table made there from the
/// frame's histogram (the histogram op's, [`Histogram`](crate::histogram::Histogram) or, with a
/// mask, [`Masked`](crate::mask::Masked)`<Histogram>`, on the backend that runs the
/// op) by `rule`, or a given one; then every sample, masked or not, through it (the map of
/// [`Equalize`]). Both backends make the same table from the same counts, so give the same frames.
#[derive(Debug, Clone, Copy)]
pub struct Remap<'a> {
    pub rule: TableRule<'a>,
    /// The pixels counted; `None`: every pixel.
    pub mask: Option<Mask<'a>>,
    /// Where the table made is left too (one entry per level, as [`TableRule::Given`] takes it).
    pub keep: Option<&'a Mutex<Option<Vec<u16>>>>,
}

impl<'a> Remap<'a> {
    /// The rule alone: no mask, nothing kept.
    pub fn new(rule: TableRule<'a>) -> Remap<'a> {
        Remap { rule, mask: None, keep: None }
    }

    /// The mask's bytes for `frame` (refused for another size: [`Mask::fit_samples`]); refuses a
    /// given table of other levels.
    fn check(&self, frame: &Frame) -> Result<Option<&'a [u8]>, OpError> {
        let mask = mask::fit_samples(self.mask, frame)?;
        if let TableRule::Given(t) = self.rule {
            let maxval = frame.maxval;
            if t.len() != maxval as usize + 1 {
                return Err(OpError::invalid(format!(
                    "the table maps levels 0 to {}, and the frame's maxval is {maxval}",
                    t.len().saturating_sub(1)
                )));
            }
            if let Some(&over) = t.iter().find(|&&m| m > maxval) {
                return Err(OpError::invalid(format!(
                    "the table maps to {over}, over the frame's maxval {maxval}"
                )));
            }
        }
        Ok(mask)
    }

    /// The table for a frame of `maxval`, from the histogram `counts` gives (one bin per level)
    /// where the rule needs one; kept where asked.
    fn table_for<T: Sample>(
        &self,
        maxval: u16,
        counts: impl FnOnce(Bins) -> Result<Vec<u64>, OpError>,
    ) -> Result<Vec<T>, OpError> {
        let bins = Bins::new(None, maxval)?;
        let levels: Vec<u16> = match self.rule {
            TableRule::Given(t) => t.to_vec(),
            TableRule::Equalize => {
                let dist = Distribution::from_counts(bins, counts(bins)?);
                table::<T>(&dist.cumulative, maxval).into_iter().map(|m| m.into() as u16).collect()
            }
            TableRule::Match(reference) => matching::table(&counts(bins)?, reference, maxval),
        };
        let out = levels.iter().map(|&m| T::from_u16(m)).collect();
        if let Some(keep) = self.keep {
            *keep.lock().unwrap_or_else(|e| e.into_inner()) = Some(levels);
        }
        Ok(out)
    }

    fn cpu_counts<T: Sample>(samples: &[T], mask: Option<&[u8]>, bins: Bins) -> Vec<u64> {
        match mask {
            Some(mask) => histogram::count_masked(samples, mask, bins),
            None => histogram::count(samples, bins),
        }
    }

    fn gpu_samples<T: Sample>(
        &self,
        gpu: &Gpu,
        samples: &[T],
        mask: Option<&[u8]>,
        maxval: u16,
    ) -> Result<Samples<T>, OpError> {
        let n = samples.len();
        let src = gpu.upload("equalize.in", samples)?;
        let mask = mask.map(|m| gpu.upload("histogram.mask", m)).transpose()?;
        let mut dst = gpu.buffer::<T>("equalize.out", n)?;
        RemapPlan::new(gpu, *self, maxval, n)?.queue(&src, mask.as_deref(), &mut dst)?;
        Ok(gpu.download_samples(&dst, n)?)
    }
}

/// The device plan of [`Remap`]: the frame's histogram (masked or not) by [`DistributionPlan`],
/// its download and the table made on the host by the rule, the table's upload, and the map of
/// every sample through it. The one GPU sequence of `Op::gpu` and the benchmark.
pub struct RemapPlan<'g, 'a, T: Sample> {
    gpu: &'g Gpu,
    remap: Remap<'a>,
    distribution: DistributionPlan<'g>,
    maxval: u16,
    /// Samples of a frame.
    n: usize,
    _sample: std::marker::PhantomData<T>,
}

impl<'g, 'a, T: Sample> RemapPlan<'g, 'a, T> {
    /// The plan for frames of `n` samples of at most `maxval`.
    pub fn new(
        gpu: &'g Gpu,
        remap: Remap<'a>,
        maxval: u16,
        n: usize,
    ) -> Result<RemapPlan<'g, 'a, T>, OpError> {
        Ok(RemapPlan {
            gpu,
            remap,
            distribution: DistributionPlan::new(gpu, Bins::new(None, maxval)?)?,
            maxval,
            n,
            _sample: std::marker::PhantomData,
        })
    }

    /// The whole operation on `src` into `dst`, the histogram counting the pixels whose byte in
    /// `mask` (the device copy of the remap's mask) is non-zero, or every pixel without one: the
    /// histogram queued, downloaded (waits for the stream), the table made and uploaded, the map
    /// queued.
    pub fn queue(
        &mut self,
        src: &CudaSlice<T>,
        mask: Option<&CudaSlice<u8>>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), OpError> {
        let (n, distribution) = (self.n, &mut self.distribution);
        let lut = self.remap.table_for::<T>(self.maxval, |_| {
            match mask {
                Some(mask) => distribution.queue_masked(src, mask, n)?,
                None => distribution.queue(src, n)?,
            }
            Ok(distribution.download()?.counts)
        })?;
        let levels = lut.len();
        let lut = self.gpu.upload("equalize.lut", &lut)?;
        queue_map(self.gpu, src, n, &lut, levels, dst)
    }
}

impl Op for Remap<'_> {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let mask = self.check(frame)?;
        let maxval = frame.maxval;
        let pixels = match &frame.pixels {
            Pixels::U8(v) => {
                let lut = self.table_for::<u8>(maxval, |bins| Ok(Remap::cpu_counts(v, mask, bins)))?;
                Pixels::U8(map_bytes(v, &lut).into())
            }
            Pixels::U16(v) => {
                let lut = self.table_for::<u16>(maxval, |bins| Ok(Remap::cpu_counts(v, mask, bins)))?;
                Pixels::U16(map(v, &lut).into())
            }
            Pixels::F32(_) => return Err(OpError::needs_integers()),
        };
        Ok(frame.derive(frame.width, frame.height, maxval, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let mask = self.check(frame)?;
        let pixels = with_samples!(&frame.pixels, v => Element::into_pixels(self.gpu_samples(gpu, v, mask, frame.maxval)?));
        Ok(frame.derive(frame.width, frame.height, frame.maxval, pixels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equalize(maxval: u16, pixels: Pixels) -> Pixels {
        let n = pixels.len();
        Equalize.cpu(&Frame::new(n, 1, maxval, pixels)).unwrap().pixels
    }

    /// Split over any number of threads, the output is the one thread's.
    #[test]
    fn every_split_equalizes_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(23);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            for maxval in [255, 100, 1076, 65535] {
                let f = parallel::testing::frame(&mut rng, w, h, maxval);
                parallel::testing::same_on_each_pool(&format!("{w}x{h} maxval {maxval}"), || {
                    Equalize.cpu(&f).unwrap()
                });
            }
        }
    }

    /// The equalize rule without a mask is [`Equalize`]; a mask of every pixel too; the table made
    /// is kept; a given table maps, and one of other levels or values is refused.
    #[test]
    fn remap_rules() {
        let mut rng = fastrand::Rng::with_seed(31);
        for maxval in [255, 100, 1076] {
            let f = parallel::testing::frame(&mut rng, 37, 23, maxval);
            let all = vec![1u8; f.pixels.len()];
            let kept = Mutex::new(None);
            let mask = Some(Mask::of_frame(&all, &f).unwrap());
            let op = Remap { rule: TableRule::Equalize, mask, keep: Some(&kept) };
            let out = op.cpu(&f).unwrap();
            assert_eq!(out, Equalize.cpu(&f).unwrap(), "maxval {maxval}");
            let table = kept.lock().unwrap().take().unwrap();
            assert_eq!(table.len(), maxval as usize + 1);
            assert_eq!(Remap::new(TableRule::Given(&table)).cpu(&f).unwrap(), out);
        }
        let f = Frame::new(3, 1, 2, Pixels::U8(vec![0, 1, 2].into()));
        assert_eq!(
            Remap::new(TableRule::Given(&[2, 1, 0])).cpu(&f).unwrap().pixels,
            Pixels::U8(vec![2, 1, 0].into())
        );
        let e = Remap::new(TableRule::Given(&[0, 1])).cpu(&f).unwrap_err();
        assert_eq!(e.to_string(), "the table maps levels 0 to 1, and the frame's maxval is 2");
        let e = Remap::new(TableRule::Given(&[0, 1, 3])).cpu(&f).unwrap_err();
        assert_eq!(e.to_string(), "the table maps to 3, over the frame's maxval 2");
        // No pixel counted: unchanged, by both rules.
        let none = [0u8; 3];
        for rule in [TableRule::Equalize, TableRule::Match(&[1, 1])] {
            let op = Remap { rule, mask: Some(Mask::of_frame(&none, &f).unwrap()), keep: None };
            assert_eq!(op.cpu(&f).unwrap().pixels, f.pixels, "{rule:?}");
        }
    }

    #[test]
    fn constant_frames_are_unchanged() {
        assert_eq!(equalize(255, Pixels::U8(vec![77; 5].into())), Pixels::U8(vec![77; 5].into()));
        assert_eq!(equalize(1000, Pixels::U16(vec![999; 3].into())), Pixels::U16(vec![999; 3].into()));
    }

    #[test]
    fn two_values_go_to_the_extremes() {
        assert_eq!(
            equalize(255, Pixels::U8(vec![10, 20, 20, 10].into())),
            Pixels::U8(vec![0, 255, 255, 0].into())
        );
        assert_eq!(
            equalize(4095, Pixels::U16(vec![7, 9, 9].into())),
            Pixels::U16(vec![0, 4095, 4095].into())
        );
    }

    #[test]
    fn sixteen_bit_rounds_half_up() {
        // N = 5, cdf_min = 1, D = 4.
        assert_eq!(level(2, 1, 5, 1000, false), 250);
        assert_eq!(
            equalize(300, Pixels::U16(vec![0, 1, 2, 2, 2].into())),
            Pixels::U16(vec![0, 75, 300, 300, 300].into())
        );
        assert_eq!(level(3, 1, 5, 1, false), 1); // 2 * 1 / 4 = 0.5 -> 1
        assert_eq!(level(2, 1, 5, 1, false), 0); // 0.25 -> 0
    }

    #[test]
    fn eight_bit_rounds_half_to_even_like_opencv() {
        // N - cdf_min = 2: scale 127.5; 1 * 127.5 rounds to 128 (even), not 127.
        assert_eq!(level(2, 1, 3, 255, true), 128);
        // scale 255 / 6 = 42.5: 3 * 42.5 = 127.5 -> 128; 1 * 42.5 -> 42.
        assert_eq!(level(4, 1, 7, 255, true), 128);
        assert_eq!(level(2, 1, 7, 255, true), 42);
    }
}
