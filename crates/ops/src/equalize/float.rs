//! `equalize` of float frames: scikit-image's `exposure.equalize_hist(image, nbins=256, mask)`
//! (0.26) on a float32 image, step for step in its own precision, returning float32 as it does.
//!
//! 1. The counted samples: those the mask selects (every one without a mask) that are finite.
//!    scikit-image refuses a NaN or an infinity among them (numpy.histogram's range is then not
//!    finite); leaving them out makes the answer `equalize_hist(image, mask=mask & isfinite(image))`.
//! 2. numpy.histogram of the counted samples with 256 bins over their least to greatest, in
//!    float32 as numpy does it for a float32 array (numpy/lib/_histograms_impl.py): lo, hi the
//!    extremes (lo - 0.5, hi + 0.5 in f32 when equal); the edges are numpy.linspace's in f32,
//!    e_i = f32(f32(i * step) + lo) with step = f32(f32(hi - lo) / 256) (e_i = f32(f32(i / 256) *
//!    delta) + lo when step is 0), e_256 = hi; numpy refuses edges that do not increase ("Too many
//!    bins for data range"), and so do we. A sample a falls in i = trunc(f32(f32(f32(a - lo) /
//!    f32(hi - lo)) * 256)) (255 when 256), one down if a < e_i, one up if a >= e_{i+1} and i < 255.
//! 3. cdf_i = f32(f64(c_i) / f64(N)), c the cumulative counts and N their total;
//!    centre_i = f32(f32(e_i + e_{i+1}) / 2).
//! 4. Each sample, counted or not: numpy.interp(x, centres, cdf) in f64 (numpy's arr_interp:
//!    x < centre_0 gives cdf_0, x > centre_255 or x = centre_255 gives cdf_255, x equal to a
//!    centre its cdf, else slope_j (x - centre_j) + cdf_j with slope_j = (cdf_{j+1} - cdf_j) /
//!    (centre_{j+1} - centre_j), j the last centre not above x, the other side if that is NaN),
//!    rounded to the nearest f32 (`astype(float32)`). NaN stays NaN (written as the one quiet NaN).
//! 5. No sample counted: the cdf is 0 / 0, and every output is NaN, as scikit-image's.
//!
//! The GPU makes the same histogram (equalize.cu's `float_counts`, each float32 operation an
//! `_rn` intrinsic) and the same interpolation (`float_interp`, f64 `_rn` intrinsics) from the
//! edges, centres, cdf and slopes made here: both backends write the same bits.

use std::mem::MaybeUninit;

use histopipe_frame::{Frame, Pixels};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer};

use crate::histogram::check_len;
use crate::mask::{self, Mask};
use crate::{Gpu, Op, OpError, CANONICAL_NAN};

/// scikit-image's default `nbins`, the one `equalize` uses.
pub const BINS: usize = 256;

/// numpy.histogram's 256 bins of float32 samples over `lo..=hi` (the module's step 2).
#[derive(Debug, Clone, PartialEq)]
pub struct F32Bins {
    pub lo: f32,
    pub hi: f32,
    /// hi - lo, in f32: numpy's `norm_denom`.
    pub delta: f32,
    pub edges: [f32; BINS + 1],
}

impl F32Bins {
    /// The bins over the counted samples' least and greatest (`None`: no sample, numpy's 0..1);
    /// refused, as numpy refuses them, when the edges do not increase.
    pub fn new(extremes: Option<(f32, f32)>) -> Result<F32Bins, OpError> {
        let (mut lo, mut hi) = extremes.unwrap_or((0.0, 1.0));
        if lo == hi {
            (lo, hi) = (lo - 0.5, hi + 0.5);
        }
        let delta = hi - lo;
        let step = delta / BINS as f32;
        let mut edges = [0f32; BINS + 1];
        for (i, e) in edges.iter_mut().enumerate() {
            let y = if step == 0.0 { i as f32 / BINS as f32 * delta } else { i as f32 * step };
            *e = y + lo;
        }
        edges[BINS] = hi;
        if edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(OpError::invalid(format!(
                "the counted samples span {lo}..{hi}, too narrow for {BINS} float32 bins (numpy.histogram, \
                 which scikit-image's equalize_hist calls, refuses it: too many bins for data range)"
            )));
        }
        Ok(F32Bins { lo, hi, delta, edges })
    }

    /// The bin of a sample `a` with lo <= a <= hi.
    pub fn bin(&self, a: f32) -> usize {
        let f = (a - self.lo) / self.delta * BINS as f32;
        let mut i = (f as usize).min(BINS - 1);
        if a < self.edges[i] {
            i -= 1;
        }
        if i != BINS - 1 && a >= self.edges[i + 1] {
            i += 1;
        }
        i
    }

    /// Whether sample `a` is counted by these bins (finite, within lo..=hi; a NaN is not).
    pub fn holds(&self, a: f32) -> bool {
        a >= self.lo && a <= self.hi
    }
}

/// What each sample is interpolated in (the module's steps 3 and 4), in f64 as numpy.interp has
/// them: the centres, the cdf at them, and the slopes between.
#[derive(Debug, Clone, PartialEq)]
pub struct Interp {
    pub centres: [f64; BINS],
    pub cdf: [f64; BINS],
    pub slopes: [f64; BINS - 1],
}

impl Interp {
    /// From the bins and their counts.
    pub fn new(bins: &F32Bins, counts: &[u64]) -> Interp {
        let total = counts.iter().sum::<u64>() as f64;
        let mut centres = [0f64; BINS];
        let mut cdf = [0f64; BINS];
        let mut running = 0u64;
        for i in 0..BINS {
            running += counts[i];
            cdf[i] = (running as f64 / total) as f32 as f64;
            centres[i] = ((bins.edges[i] + bins.edges[i + 1]) / 2.0) as f64;
        }
        let mut slopes = [0f64; BINS - 1];
        for (j, s) in slopes.iter_mut().enumerate() {
            *s = (cdf[j + 1] - cdf[j]) / (centres[j + 1] - centres[j]);
        }
        Interp { centres, cdf, slopes }
    }

    /// numpy.interp(x, centres, cdf), rounded to f32; NaN as [`CANONICAL_NAN`].
    pub fn map(&self, x: f32) -> f32 {
        let (dx, dy) = (&self.centres, &self.cdf);
        let x = x as f64;
        let r = if x.is_nan() {
            x
        } else if x > dx[BINS - 1] {
            dy[BINS - 1]
        } else if x < dx[0] {
            dy[0]
        } else {
            let j = dx.partition_point(|&c| c <= x) - 1;
            if j == BINS - 1 || dx[j] == x {
                dy[j]
            } else {
                let slope = self.slopes[j];
                let r = slope * (x - dx[j]) + dy[j];
                if !r.is_nan() {
                    r
                } else {
                    let r = slope * (x - dx[j + 1]) + dy[j + 1];
                    if r.is_nan() && dy[j] == dy[j + 1] {
                        dy[j]
                    } else {
                        r
                    }
                }
            }
        };
        let r = r as f32;
        if r.is_nan() {
            f32::from_bits(CANONICAL_NAN)
        } else {
            r
        }
    }

    /// The table as float_interp takes it: centres, cdf, slopes, one after another.
    fn packed(&self) -> Vec<f64> {
        self.centres.iter().chain(&self.cdf).chain(&self.slopes).copied().collect()
    }
}

/// Fewest samples a part of the CPU's counting or mapping holds.
const PART: usize = 1 << 15;

/// The least and greatest counted sample (finite, selected by `mask`), if any.
fn extremes(samples: &[f32], mask: Option<&[u8]>) -> Option<(f32, f32)> {
    use rayon::prelude::*;
    let fold = |a: Option<(f32, f32)>, b: Option<(f32, f32)>| match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (a, b) => a.or(b),
    };
    let counted = |k: usize, v: f32| v.is_finite() && mask.is_none_or(|m| m[k] != 0);
    samples
        .par_chunks(PART)
        .enumerate()
        .map(|(c, part)| {
            part.iter()
                .enumerate()
                .filter(|&(k, &v)| counted(c * PART + k, v))
                .fold(None, |m, (_, &v)| fold(m, Some((v, v))))
        })
        .reduce(|| None, fold)
}

/// The counts of the counted samples in `bins`.
fn counts(samples: &[f32], mask: Option<&[u8]>, bins: &F32Bins) -> Vec<u64> {
    use rayon::prelude::*;
    samples
        .par_chunks(PART)
        .enumerate()
        .map(|(c, part)| {
            let mut n = vec![0u64; BINS];
            for (k, &a) in part.iter().enumerate() {
                if bins.holds(a) && mask.is_none_or(|m| m[c * PART + k] != 0) {
                    n[bins.bin(a)] += 1;
                }
            }
            n
        })
        .reduce(
            || vec![0u64; BINS],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// scikit-image's `equalize_hist` of a float frame (the module's documentation), counting the
/// pixels `mask` selects (every pixel without one); every sample is mapped. Integer frames are
/// refused: [`Equalize`](super::Equalize) is theirs.
#[derive(Debug, Clone, Copy, Default)]
pub struct FloatEqualize<'a> {
    pub mask: Option<Mask<'a>>,
}

/// A frame's samples, the mask's bytes fitted to them, and their bins.
type Prepared<'f, 'm> = (&'f [f32], Option<&'m [u8]>, F32Bins);

impl<'m> FloatEqualize<'m> {
    /// The samples, the mask's bytes fitted to them, and the bins.
    fn prepare<'f>(&self, frame: &'f Frame) -> Result<Prepared<'f, 'm>, OpError> {
        let Pixels::F32(v) = &frame.pixels else {
            return Err(OpError::invalid("float equalization of a frame of integer samples"));
        };
        let mask = mask::fit_samples(self.mask, frame)?;
        let bins = F32Bins::new(extremes(v, mask))?;
        Ok((v, mask, bins))
    }
}

impl Op for FloatEqualize<'_> {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let (v, mask, bins) = self.prepare(frame)?;
        let interp = Interp::new(&bins, &counts(v, mask, &bins));
        let out = super::map_parts(v, |src, out: &mut [MaybeUninit<f32>]| {
            for (slot, &x) in out.iter_mut().zip(src) {
                slot.write(interp.map(x));
            }
        });
        Ok(frame.derive(frame.width, frame.height, frame.maxval, Pixels::F32(out.into())))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let (v, mask, bins) = self.prepare(frame)?;
        let n = v.len();
        if n == 0 {
            return self.cpu(frame);
        }
        let src = gpu.upload("equalize.float.in", v)?;
        let mask = mask.map(|m| gpu.upload("histogram.mask", m)).transpose()?;
        let mut dst = gpu.buffer::<f32>("equalize.float.out", n)?;
        FloatEqualizePlan::new(gpu, n)?.queue(&bins, &src, mask.as_deref(), &mut dst)?;
        let out = gpu.download_samples(&dst, n)?;
        Ok(frame.derive(frame.width, frame.height, frame.maxval, Pixels::F32(out)))
    }
}

/// The device plan of [`FloatEqualize`] for frames of `n` samples, given their bins (the host's
/// part, from the counted samples' extremes): the counts (`float_counts`), their download, the
/// interpolation's table made on the host and uploaded, and every sample through it
/// (`float_interp`). The one GPU sequence of `Op::gpu` and the benchmark.
pub struct FloatEqualizePlan<'g> {
    gpu: &'g Gpu,
    counts: Buffer<'g, u64>,
    /// The mask kernel argument without a mask: one byte, never read.
    no_mask: Buffer<'g, u8>,
    n: usize,
}

impl<'g> FloatEqualizePlan<'g> {
    pub fn new(gpu: &'g Gpu, n: usize) -> Result<FloatEqualizePlan<'g>, OpError> {
        Ok(FloatEqualizePlan {
            gpu,
            counts: gpu.buffer("equalize.float.counts", BINS)?,
            no_mask: gpu.upload("equalize.float.no_mask", &[0u8])?,
            n,
        })
    }

    /// The whole operation on the `n` samples of `src` into `dst`, counting those whose byte in
    /// `mask` (the device copy) is non-zero, or every one without it; waits for the counts.
    pub fn queue(
        &mut self,
        bins: &F32Bins,
        src: &CudaSlice<f32>,
        mask: Option<&CudaSlice<u8>>,
        dst: &mut CudaSlice<f32>,
    ) -> Result<(), OpError> {
        let (gpu, n) = (self.gpu, self.n);
        check_len("float equalize input", src.len(), n)?;
        check_len("float equalize output", dst.len(), n)?;
        if let Some(mask) = mask {
            check_len("float equalize mask", mask.len(), n)?;
        }
        gpu.stream().memset_zeros(&mut *self.counts)?;
        let edges = gpu.upload("equalize.float.edges", &bins.edges)?;
        let (n64, masked) = (n as u64, mask.is_some() as u32);
        let mask = mask.unwrap_or(&self.no_mask);
        // SAFETY: float_counts(in, mask, masked, n, edges, lo, hi, delta, counts) in equalize.cu;
        // `src` holds `n` samples, `mask` `n` bytes when `masked` (checked above), `edges` 257,
        // `counts` 256.
        unsafe {
            launch!(gpu, kernels::EQUALIZE, "float_counts", launch::cover(n, 256);
                src, mask, &masked, &n64, &*edges, &bins.lo, &bins.hi, &bins.delta, &mut *self.counts)
        }?;
        let counts = gpu.download_vec(&self.counts, BINS)?;
        let table = gpu.upload("equalize.float.table", &Interp::new(bins, &counts).packed())?;
        // SAFETY: float_interp(in, n, table, out) in equalize.cu; `src` and `dst` hold `n`
        // samples, `table` 3 * 256 - 1 values.
        unsafe {
            launch!(gpu, kernels::EQUALIZE, "float_interp", launch::cover(n, 256); src, &n64, &*table, dst)
        }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equalize(samples: &[f32], mask: Option<&[u8]>) -> Result<Vec<f32>, OpError> {
        let f = Frame::new(samples.len(), 1, 1, Pixels::F32(samples.to_vec().into()));
        let mask = mask.map(|m| Mask::of_frame(m, &f).unwrap());
        let out = FloatEqualize { mask }.cpu(&f)?;
        let Pixels::F32(v) = out.pixels else { panic!("float output") };
        Ok(v.to_vec())
    }

    /// Two values: the lower's bin holds half the samples, the upper's the rest; each sample lies
    /// beyond the outermost centres, so gets cdf_0 or cdf_255 exactly.
    #[test]
    fn two_values_get_the_outer_cdfs() {
        assert_eq!(equalize(&[0.0, 1.0, 1.0, 0.0], None).unwrap(), [0.5, 1.0, 1.0, 0.5]);
        // One value: the bins span v - 0.5..v + 0.5, the sample at bin 128's left edge, halfway
        // between centres 127 (cdf 0) and 128 (cdf 1), as scikit-image has it.
        assert_eq!(equalize(&[3.0; 3], None).unwrap(), [0.5; 3]);
    }

    /// NaN and infinities are not counted; NaN maps to NaN, the infinities beyond the centres.
    #[test]
    fn non_finite_samples_are_left_out() {
        let out = equalize(&[f32::NAN, 0.0, f32::INFINITY, 1.0, f32::NEG_INFINITY], None).unwrap();
        assert_eq!(out[0].to_bits(), CANONICAL_NAN);
        assert_eq!(&out[1..], [0.5, 1.0, 1.0, 0.5]);
        // Nothing counted: every output NaN.
        let out = equalize(&[f32::NAN, 5.0], Some(&[1, 0])).unwrap();
        assert!(out.iter().all(|v| v.to_bits() == CANONICAL_NAN));
    }

    /// The mask chooses the counted samples; every sample is mapped.
    #[test]
    fn the_mask_counts_and_every_sample_maps() {
        let out = equalize(&[0.0, 1.0, 1.0, 9.0], Some(&[1, 1, 1, 0])).unwrap();
        assert_eq!(out, [1.0 / 3.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn a_frame_of_no_pixel_is_itself() {
        assert_eq!(equalize(&[], None).unwrap(), []);
    }

    #[test]
    fn too_narrow_a_range_is_refused_as_numpy_does() {
        let e = equalize(&[1000.0, 1000.01], None).unwrap_err().to_string();
        assert!(e.contains("too narrow for 256 float32 bins"), "{e}");
        assert!(equalize(&[7e4; 2], None).is_err());
        assert!(equalize(&[-3e38, 3e38], None).is_err());
    }

    #[test]
    fn bins_are_numpys() {
        let b = F32Bins::new(Some((0.0, 1.0))).unwrap();
        assert_eq!(b.bin(0.0), 0);
        assert_eq!(b.bin(1.0), 255);
        assert_eq!(b.bin(0.5), 128);
        assert_eq!(b.bin(0.5f32.next_down()), 127);
    }
}
