//! `threshold` of float frames: scikit-image 0.26's `threshold_otsu(image, nbins=256)`,
//! `threshold_triangle(image, nbins=256)` and `threshold_multiotsu(image, classes, nbins=256)`
//! on a float32 image, in its own precision, and the binary frame `image > t` (or the labels,
//! `np.digitize(image, thresholds)`) as an 8-bit frame.
//!
//! The samples counted: the finite ones (the mask's, with one). scikit-image refuses a NaN or an
//! infinity (numpy.histogram's range is then not finite); leaving them out gives its answer for
//! `image[np.isfinite(image)]`, and in the map a NaN is never above t (0, maxval inverted; the
//! last label, as np.digitize puts it), ±infinity are above or below every t.
//!
//! The histogram is numpy.histogram's of float32 samples, 256 bins over their least to greatest
//! ([`F32Bins`], shared with `equalize`); the bin centres (e_i + e_{i+1}) / 2 in f32. Then:
//! - Otsu: a frame whose counted samples all equal the first gives that value; else, in f32 as
//!   scikit-image (its counts cast to float32): w1 = cumsum(c), w2 = reversed cumsum,
//!   m1 = cumsum(c·x) / w1, m2 = reversed cumsum(c·x) / w2, σ_i = w1_i·w2_{i+1}·(m1_i − m2_{i+1})²
//!   for i < 255, t the centre of the first largest σ.
//! - Triangle: scikit-image's line from the peak (the first highest bin) to the end of its longer
//!   side, in f64 (`peak / norm`, `width / norm`, norm = sqrt(peak² + width²), the distances
//!   peak·x − width·h(x + low) for x < width), t the centre of the first largest; one non-empty
//!   bin gives the first counted sample.
//! - Multi-Otsu: the same search as integer frames' over the 256 bins' probabilities, the
//!   thresholds the centres of the bins chosen.

use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use super::{multi_otsu, Method, Mode};
use crate::equalize::F32Bins;
use crate::{Gpu, OpError};

/// The bins of float32 histograms (scikit-image's `nbins`).
const BINS: usize = 256;

/// The counted samples' first, whether all equal it, and their bins (finite; where `mask` is
/// non-zero, with one); `None` where no sample is counted.
fn scan(
    samples: &[f32],
    mask: Option<&[u8]>,
    method: Method,
) -> Result<Option<(f32, bool, F32Bins)>, OpError> {
    let mut first = None;
    let (mut lo, mut hi, mut all_equal) = (f32::INFINITY, f32::NEG_INFINITY, true);
    for (_, &v) in samples.iter().enumerate().filter(|&(k, &v)| counted(mask, k, v)) {
        let f = *first.get_or_insert(v);
        all_equal &= v == f;
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let Some(first) = first else {
        return match method {
            Method::MultiOtsu(_) => {
                Err(OpError::param("method", method, "the frame has no finite sample to class"))
            }
            _ => Ok(None),
        };
    };
    Ok(Some((first, all_equal, F32Bins::new(Some((lo, hi)))?)))
}

/// Whether sample `v`, the `k`-th, is counted.
fn counted(mask: Option<&[u8]>, k: usize, v: f32) -> bool {
    v.is_finite() && mask.is_none_or(|m| m[k] != 0)
}

/// The counted samples' histogram in `bins`, on the CPU.
fn count(samples: &[f32], mask: Option<&[u8]>, bins: &F32Bins) -> Vec<u64> {
    let mut counts = vec![0u64; BINS];
    for (k, &v) in samples.iter().enumerate() {
        if counted(mask, k, v) {
            counts[bins.bin(v)] += 1;
        }
    }
    counts
}

/// The centres of the bins, as scikit-image has them: (e_i + e_{i+1}) / 2 in f32.
fn centres(bins: &F32Bins) -> Vec<f32> {
    bins.edges.windows(2).map(|e| (e[0] + e[1]) / 2.0).collect()
}

/// The threshold of a frame without a finite sample: NaN, above which nothing lies (refused for
/// value and percentile, which take integer frames).
fn no_threshold(method: Method) -> Result<Vec<f32>, OpError> {
    choose(method, f32::NAN, true, &F32Bins::new(None)?, &[0; BINS]).map(|_| vec![f32::NAN])
}

/// The thresholds `method` chooses from the counted samples' first, whether all equal it, their
/// bins and counts.
fn choose(
    method: Method,
    first: f32,
    all_equal: bool,
    bins: &F32Bins,
    counts: &[u64],
) -> Result<Vec<f32>, OpError> {
    let centre = centres(bins);
    Ok(match method {
        Method::Otsu if all_equal => vec![first],
        Method::Otsu => vec![centre[otsu(counts, &centre)]],
        Method::Triangle => match triangle(counts) {
            Some(i) => vec![centre[i]],
            None => vec![first],
        },
        Method::MultiOtsu(k) => {
            multi_otsu(counts, k, method)?.into_iter().map(|i| centre[i as usize]).collect()
        }
        Method::Value(_) | Method::Percentile(_) => {
            return Err(OpError::param(
                "method",
                method,
                "takes integer frames; float frames take otsu, triangle, multiotsu, sauvola and niblack",
            ))
        }
    })
}

/// scikit-image's `threshold_otsu` on its float32 histogram: the index of the threshold's bin.
fn otsu(counts: &[u64], centre: &[f32]) -> usize {
    let c: Vec<f32> = counts.iter().map(|&v| v as f32).collect();
    let cumsum = |v: &mut dyn Iterator<Item = f32>| -> Vec<f32> {
        let mut s = 0f32;
        let mut first = true;
        v.map(|x| {
            s = if first { x } else { s + x };
            first = false;
            s
        })
        .collect()
    };
    let weight1 = cumsum(&mut c.iter().copied());
    let mut weight2 = cumsum(&mut c.iter().rev().copied());
    weight2.reverse();
    let products: Vec<f32> = c.iter().zip(centre).map(|(&n, &x)| n * x).collect();
    let mean1: Vec<f32> =
        cumsum(&mut products.iter().copied()).iter().zip(&weight1).map(|(s, w)| s / w).collect();
    // (cumsum(reversed products) / weight2 reversed), reversed.
    let rev_w2: Vec<f32> = weight2.iter().rev().copied().collect();
    let mut mean2: Vec<f32> =
        cumsum(&mut products.iter().rev().copied()).iter().zip(&rev_w2).map(|(s, w)| s / w).collect();
    mean2.reverse();
    let (mut best, mut best_at) = (f32::NEG_INFINITY, 0);
    for i in 0..BINS - 1 {
        let d = mean1[i] - mean2[i + 1];
        let v = weight1[i] * weight2[i + 1] * (d * d);
        // np.argmax: the first largest; a NaN is largest of all.
        if v > best || (v.is_nan() && !best.is_nan()) {
            best = v;
            best_at = i;
            if v.is_nan() {
                break;
            }
        }
    }
    best_at
}

/// scikit-image's `threshold_triangle` on its histogram: the index of the threshold's bin, or
/// `None` where one bin holds every sample (it returns the image's first sample then).
fn triangle(counts: &[u64]) -> Option<usize> {
    let n = counts.len();
    let mut hist: Vec<i64> = counts.iter().map(|&c| c as i64).collect();
    let mut peak_at = (0..n).fold(0, |best, i| if hist[i] > hist[best] { i } else { best });
    let peak = hist[peak_at];
    let mut low = hist.iter().position(|&c| c > 0)?;
    let high = hist.iter().rposition(|&c| c > 0)?;
    if low == high {
        return None;
    }
    let flip = (peak_at as i64 - low as i64) < (high as i64 - peak_at as i64);
    if flip {
        hist.reverse();
        low = n - high - 1;
        peak_at = n - peak_at - 1;
    }
    let width = peak_at - low;
    let norm = ((peak * peak + (width * width) as i64) as f64).sqrt();
    let (peak_n, width_n) = (peak as f64 / norm, width as f64 / norm);
    let (mut best, mut best_at) = (f64::NEG_INFINITY, 0);
    for x in 0..width {
        let length = peak_n * x as f64 - width_n * hist[x + low] as f64;
        if length > best {
            best = length;
            best_at = x;
        }
    }
    let level = best_at + low;
    Some(if flip { n - level - 1 } else { level })
}

/// The 8-bit output sample of float sample `v` through `thresholds`: binary (maxval 255 where
/// v > t, NaN never) or, for `labels` classes, np.digitize's label (NaN the last).
pub(crate) fn map(v: f32, thresholds: &[f32], labels: Option<u16>, mode: Mode) -> u8 {
    let inverted = mode == Mode::BinaryInv;
    match labels {
        None => {
            if (v > thresholds[0]) != inverted {
                255
            } else {
                0
            }
        }
        Some(k) => {
            let label =
                if v.is_nan() { k - 1 } else { thresholds.iter().filter(|&&t| t <= v).count() as u16 };
            (if inverted { k - 1 - label } else { label }) as u8
        }
    }
}

/// The thresholds and the 8-bit output of a float frame's `samples` on the CPU.
pub(crate) fn cpu(
    method: Method,
    mode: Mode,
    samples: &[f32],
    mask: Option<&[u8]>,
) -> Result<(Vec<f32>, Vec<u8>), OpError> {
    check_mode(method, mode)?;
    let t = match scan(samples, mask, method)? {
        Some((first, all_equal, bins)) => {
            choose(method, first, all_equal, &bins, &count(samples, mask, &bins))?
        }
        None => no_threshold(method)?,
    };
    let out = crate::parallel::map_parts(samples, 1 << 16, |_, part| {
        part.iter().map(|&v| map(v, &t, method.labels(), mode)).collect::<Vec<u8>>()
    });
    Ok((t, out.concat()))
}

/// Float frames take binary and binary-inv (scikit-image's `image > t` and its negation).
pub(crate) fn check_mode(method: Method, mode: Mode) -> Result<(), OpError> {
    match mode.binary() {
        Some(_) => Ok(()),
        None => Err(OpError::param(
            "mode",
            mode,
            format!("{method} of a float frame is scikit-image's image > t: binary or binary-inv only"),
        )),
    }
}

/// What the host finds of a float frame before the counts: the first counted sample, whether all
/// equal it, and the bins over their extremes.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatScan {
    first: f32,
    all_equal: bool,
    bins: F32Bins,
}

impl FloatScan {
    /// The scan of `samples` (counting those `mask` selects) for `method`; `None` where no sample
    /// is finite (otsu and triangle then have no threshold; multi-Otsu refuses the frame).
    pub fn new(method: Method, samples: &[f32], mask: Option<&[u8]>) -> Result<Option<FloatScan>, OpError> {
        Ok(scan(samples, mask, method)?.map(|(first, all_equal, bins)| FloatScan { first, all_equal, bins }))
    }
}

/// The thresholds and the 8-bit output of a float frame's `samples` on the GPU.
pub(crate) fn gpu(
    gpu: &Gpu,
    method: Method,
    mode: Mode,
    samples: &[f32],
    mask: Option<&[u8]>,
) -> Result<(Vec<f32>, Vec<u8>), OpError> {
    check_mode(method, mode)?;
    let Some(scan) = FloatScan::new(method, samples, mask)? else {
        let t = no_threshold(method)?;
        return Ok((t.clone(), samples.iter().map(|&v| map(v, &t, method.labels(), mode)).collect()));
    };
    let n = samples.len();
    let src = gpu.upload("threshold.float.in", samples)?;
    let mask = mask.map(|m| gpu.upload("threshold.float.mask", m)).transpose()?;
    let mut dst = gpu.buffer::<u8>("threshold.float.out", n.max(1))?;
    let t = FloatThresholdPlan::new(gpu, method, mode, n)?.queue(&scan, &src, mask.as_deref(), &mut dst)?;
    Ok((t, gpu.download_samples(&dst, n)?.into_vec()))
}

/// The device plan of a float frame's global threshold, given its [`FloatScan`] (the host's
/// part): the counts (equalize.cu's `float_counts`, numpy's float32 binning in `_rn` steps), their
/// download, the choice on the host, the thresholds' upload and the map (`float_map`). The one
/// GPU sequence of `Op::gpu` and the benchmark.
pub struct FloatThresholdPlan<'g> {
    gpu: &'g Gpu,
    method: Method,
    mode: Mode,
    counts: Buffer<'g, u64>,
    /// The mask kernel argument without a mask: one byte, never read.
    no_mask: Buffer<'g, u8>,
    n: usize,
}

impl<'g> FloatThresholdPlan<'g> {
    pub fn new(
        gpu: &'g Gpu,
        method: Method,
        mode: Mode,
        n: usize,
    ) -> Result<FloatThresholdPlan<'g>, OpError> {
        check_mode(method, mode)?;
        Ok(FloatThresholdPlan {
            gpu,
            method,
            mode,
            counts: gpu.buffer("threshold.float.counts", BINS)?,
            no_mask: gpu.upload("threshold.float.no_mask", &[0u8])?,
            n,
        })
    }

    /// The whole operation on the `n` samples of `src` into `dst` (8-bit), counting those whose
    /// byte in `mask` is non-zero (every one without); waits for the counts; the thresholds.
    pub fn queue(
        &mut self,
        scan: &FloatScan,
        src: &CudaSlice<f32>,
        mask: Option<&CudaSlice<u8>>,
        dst: &mut CudaSlice<u8>,
    ) -> Result<Vec<f32>, OpError> {
        let (gpu, n, bins) = (self.gpu, self.n, &scan.bins);
        gpu.stream().memset_zeros(&mut *self.counts)?;
        let edges = gpu.upload("threshold.float.edges", &bins.edges)?;
        let (n64, masked) = (n as u64, mask.is_some() as u32);
        let mask = mask.unwrap_or(&self.no_mask);
        // SAFETY: float_counts(in, mask, masked, n, edges, lo, hi, delta, counts) in equalize.cu;
        // `src` holds `n` samples, `mask` `n` bytes when `masked`, `edges` 257, `counts` 256.
        unsafe {
            launch!(gpu, kernels::EQUALIZE, "float_counts", launch::cover(n, 256);
                src, mask, &masked, &n64, &*edges, &bins.lo, &bins.hi, &bins.delta, &mut *self.counts)
        }?;
        let counts = gpu.download_vec(&self.counts, BINS)?;
        let t = choose(self.method, scan.first, scan.all_equal, bins, &counts)?;
        let thresholds = gpu.upload("threshold.float.thresholds", &t)?;
        let (count, labels) = (t.len() as u32, self.method.labels().is_some() as u32);
        let inverted = (self.mode == Mode::BinaryInv) as u32;
        // SAFETY: float_map(in, n, thresholds, count, labels, inverted, out) in threshold.cu; `src`
        // and `dst` hold `n` samples, `thresholds` `count`.
        unsafe {
            launch!(gpu, kernels::THRESHOLD, "float_map", launch::cover(n, 256);
                src, &n64, &*thresholds, &count, &labels, &inverted, dst)
        }?;
        Ok(t)
    }
}
