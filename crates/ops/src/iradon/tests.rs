//! `iradon`'s tests: the sizes and the filters against scikit-image's numbers, numpy's `interp`,
//! a round trip through `radon`, the thread count, and GPU = CPU bit for bit.

use histopipe_frame::{Frame, Pixels};

use super::*;
use crate::radon::RadonParams;
use crate::{parallel, CANONICAL_NAN};

fn params(filter: Filter, circle: bool) -> IradonParams {
    IradonParams { filter, circle, ..IradonParams::default() }
}

fn sinogram(rng: &mut fastrand::Rng, positions: usize, angles: usize) -> Frame {
    let v: Vec<f32> = (0..positions * angles).map(|_| rng.f32() * 10.0 - 2.0).collect();
    Frame::new(angles, positions, 1, Pixels::F32(v.into()))
}

fn values(frame: &Frame) -> &[f32] {
    let Pixels::F32(v) = &frame.pixels else { panic!("not a float frame") };
    v
}

#[test]
fn sizes_are_scikit_images() {
    // iradon(np.zeros((725, 180)), circle=False).shape == (512, 512); circle=True: 725, its
    // sinogram padded to ceil(sqrt(2) 725) = 1026 and its FFT of 4096.
    let r = params(Filter::Ramp, false).for_size(725, 180).unwrap();
    assert_eq!((r.side, r.padded, r.pad_before, r.fft_len), (512, 725, 0, 2048));
    let r = params(Filter::Ramp, true).for_size(725, 180).unwrap();
    assert_eq!((r.side, r.padded, r.pad_before, r.fft_len), (725, 1026, 151, 4096));
    assert_eq!(fft_len(1), 64);
    assert_eq!(fft_len(32), 64);
    assert_eq!(fft_len(33), 128);
    assert_eq!(output_side(1, false), 0);
    assert_eq!(output_side(2, false), 1);
    assert_eq!(output_side(10, false), 7);
    assert!(params(Filter::Ramp, false).for_size(1, 3).is_err(), "a side of 0");
    assert!(params(Filter::Ramp, false).for_size(0, 3).is_err());
    assert!(params(Filter::Ramp, false).for_size(3, 0).is_err());
    let p = IradonParams { angles: Some("0,90".parse().unwrap()), ..IradonParams::default() };
    let e = p.for_size(10, 3).unwrap_err().to_string();
    assert!(e.contains("angles") && e.contains("3 angles"), "{e}");
    let p = IradonParams { size: Some(MAX_SIDE + 1), ..IradonParams::default() };
    assert!(p.for_size(10, 3).is_err());
}

#[test]
fn default_angles_are_numpys_linspace() {
    assert_eq!(default_angles(180).0, (0..180).map(|k| k as f64).collect::<Vec<_>>());
    assert_eq!(default_angles(4).0, vec![0.0, 45.0, 90.0, 135.0]);
    // np.linspace(0, 180, 7, endpoint=False)[3] == 77.14285714285714
    assert_eq!(default_angles(7).0[3], 77.14285714285714);
}

/// scikit-image's `_get_fourier_filter(64, name)[:, 0]` at frequencies 0, 1, 8, 32 and 63
/// (printed by scikit-image 0.26 with repr), times 1/64: hamming's and hann's are not symmetric.
#[test]
fn filters_are_scikit_images() {
    let fft = FftPlannerScalar::<f64>::new().plan_fft_forward(64);
    let cases: [(Filter, [f64; 5]); 6] = [
        (
            Filter::Ramp,
            [
                0.006330515402529435,
                0.03051260854933452,
                0.25001713229017897,
                0.9936694845974705,
                0.03051260854933452,
            ],
        ),
        (
            Filter::SheppLogan,
            [
                0.006330515402529435,
                0.03050035630747646,
                0.2436405349383664,
                0.6325896410930536,
                0.03050035630747646,
            ],
        ),
        (
            Filter::Cosine,
            [0.006330515402529435, 0.030475854776042414, 0.23098571130006307, 0.0, 0.030475854776042414],
        ),
        (
            Filter::Hamming,
            [
                0.006326895511019158,
                0.030355840260816933,
                0.2111083374094729,
                0.07949355876779765,
                0.03049516094426274,
            ],
        ),
        (
            Filter::Hann,
            [0.00632658073784435, 0.030342208235728443, 0.2077249639415854, 0.0, 0.030493643761213014],
        ),
        (Filter::None, [1.0; 5]),
    ];
    for (filter, want) in cases {
        let f = fourier_filter(64, filter, fft.as_ref());
        assert_eq!(f.len(), 64);
        for (&k, w) in [0usize, 1, 8, 32, 63].iter().zip(want) {
            let got = f[k] * 64.0;
            assert!((got - w).abs() <= 1e-14, "{filter:?} [{k}]: {got} against {w}");
        }
    }
}

/// numpy's `np.interp(t, np.arange(5) - 2, col, left=0, right=0)`.
#[test]
fn interp_is_numpys() {
    let col = [1.0, 2.0, 4.0, 8.0, 16.0];
    let cases = [
        (-2.5, 0.0),
        (-2.0, 1.0),
        (-1.5, 1.5),
        (0.25, 5.0),
        (1.75, 14.0),
        (2.0, 16.0),
        (2.0000001, 0.0),
        (-2.0000001, 0.0),
    ];
    for (t, want) in cases {
        assert_eq!(interp(&col, t), want, "{t}");
    }
    // Infinities (numpy 2.4's answers): equal neighbours, numpy's second try, and a NaN.
    let inf = f64::INFINITY;
    for (t, want) in [(-0.5, inf), (0.5, inf), (-1.0, inf), (0.0, inf), (1.0, 1.0)] {
        assert_eq!(interp(&[inf, inf, 1.0], t), want, "{t}");
    }
    assert!(interp(&[inf, -inf, 1.0], -0.5).is_nan());
    assert_eq!(interp(&[1.0], 0.0), 1.0);
    assert_eq!(interp(&[1.0], 0.5), 0.0);
}

/// `radon` then `iradon`: the reconstruction of a smooth disc is near the disc (scikit-image's own
/// test of the round trip holds the error to a few percent).
#[test]
fn round_trip_through_radon() {
    let n = 48;
    let disc: Vec<f32> = (0..n * n)
        .map(|i| {
            let (x, y) = ((i % n) as f64 - 24.0, (i / n) as f64 - 24.0);
            ((x * x + y * y).sqrt() < 12.0) as u8 as f32
        })
        .collect();
    let frame = Frame::new(n, n, 1, Pixels::F32(disc.clone().into()));
    let sino = RadonParams { angles: "0:180:1".parse().unwrap(), circle: true }.for_size(n, n).unwrap();
    let sino = sino.cpu(&frame).unwrap();
    for filter in [Filter::Ramp, Filter::SheppLogan, Filter::Hann] {
        let p = IradonParams { angles: Some("0:180:1".parse().unwrap()), circle: true, filter, size: None };
        let r = p.for_size(sino.height, sino.width).unwrap();
        let back = r.cpu(&sino).unwrap();
        assert_eq!((back.width, back.height), (n, n));
        let err =
            values(&back).iter().zip(&disc).map(|(a, b)| (a - b).abs() as f64).sum::<f64>() / (n * n) as f64;
        assert!(err < 0.05, "{filter:?}: mean error {err}");
    }
}

/// The CPU's rows (the angles outermost) are the per-pixel definition, bit for bit, with NaN,
/// infinities and sizes other than the default.
#[test]
fn rows_are_the_pixels_definition() {
    let mut rng = fastrand::Rng::with_seed(11);
    for (positions, angles) in [(1, 1), (7, 3), (30, 12), (41, 17)] {
        let mut v = values(&sinogram(&mut rng, positions, angles)).to_vec();
        if v.len() > 20 {
            (v[3], v[10], v[11]) = (f32::INFINITY, f32::NEG_INFINITY, -0.0);
        }
        let frame = Frame::new(angles, positions, 1, Pixels::F32(v.clone().into()));
        for circle in [false, true] {
            for size in [None, Some(positions + 5), Some(2)] {
                let p = IradonParams { size, circle, filter: Filter::Hann, angles: None };
                let Ok(r) = p.for_size(positions, angles) else { continue };
                let filtered = r.filtered(&v.iter().map(|&x| x as f64).collect::<Vec<f64>>());
                let got = r.cpu(&frame).unwrap();
                let want: Vec<u32> = (0..r.side * r.side)
                    .map(|k| r.pixel(&filtered, k / r.side, k % r.side).to_bits())
                    .collect();
                let got: Vec<u32> = values(&got).iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "{positions}x{angles} circle {circle} size {size:?}");
            }
        }
    }
}

#[test]
fn the_thread_count_changes_nothing() {
    let mut rng = fastrand::Rng::with_seed(48);
    let frame = sinogram(&mut rng, 37, 23);
    for circle in [false, true] {
        let r = params(Filter::Hamming, circle).for_size(37, 23).unwrap();
        parallel::testing::same_on_each_pool("iradon", || {
            values(&r.cpu(&frame).unwrap()).iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
        });
    }
}

#[test]
fn integer_sinograms_are_their_values() {
    let mut rng = fastrand::Rng::with_seed(3);
    let bytes: Vec<u8> = (0..20 * 9).map(|_| rng.u8(..)).collect();
    let floats: Vec<f32> = bytes.iter().map(|&b| b as f32).collect();
    let a = Frame::new(9, 20, 255, Pixels::U8(bytes.into()));
    let b = Frame::new(9, 20, 1, Pixels::F32(floats.into()));
    let r = params(Filter::Ramp, false).for_size(20, 9).unwrap();
    assert_eq!(r.cpu(&a).unwrap().pixels, r.cpu(&b).unwrap().pixels);
}

#[test]
fn nan_is_the_quiet_nan_and_outside_the_circle_is_zero() {
    let mut rng = fastrand::Rng::with_seed(4);
    let mut v = values(&sinogram(&mut rng, 16, 5)).to_vec();
    v[7] = f32::from_bits(0xFFC0_0001);
    let frame = Frame::new(5, 16, 1, Pixels::F32(v.into()));
    let r = params(Filter::Ramp, true).for_size(16, 5).unwrap();
    let out = r.cpu(&frame).unwrap();
    let v = values(&out);
    assert_eq!(v[0].to_bits(), 0, "outside the circle");
    assert_eq!(v[8 * 16 + 8].to_bits(), CANONICAL_NAN);
}

#[test]
fn the_kernel_is_registered() {
    assert!(histopipe_gpu::kernels::IRADON.text.contains("iradon_interp"));
}

/// GPU = CPU, bit for bit: every filter, both modes, odd and thin sinograms, NaN and infinities,
/// a --size larger than the default.
#[test]
fn gpu_matches_cpu() {
    let Some(gpu) = crate::testing::gpu_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(48);
    let mut frames = vec![sinogram(&mut rng, 1, 1), sinogram(&mut rng, 33, 1), sinogram(&mut rng, 1, 40)];
    frames.push(sinogram(&mut rng, 64, 45));
    frames.push(sinogram(&mut rng, 91, 180));
    let mut v = values(&sinogram(&mut rng, 30, 12)).to_vec();
    (v[3], v[50], v[51], v[100]) = (f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0);
    frames.push(Frame::new(12, 30, 1, Pixels::F32(v.into())));
    let bits = |f: &Frame| values(f).iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    for f in &frames {
        for (k, filter) in
            [Filter::Ramp, Filter::SheppLogan, Filter::Cosine, Filter::Hamming, Filter::Hann, Filter::None]
                .into_iter()
                .enumerate()
        {
            for circle in [false, true] {
                let size = (k == 5).then_some(f.height + 7);
                let p = IradonParams { angles: None, size, filter, circle };
                let Ok(r) = p.for_size(f.height, f.width) else { continue };
                let (cpu, gpu_out) = (r.cpu(f).unwrap(), r.gpu(&gpu, f).unwrap());
                assert!(bits(&cpu) == bits(&gpu_out), "{}x{} {filter:?} circle {circle}", f.width, f.height);
            }
        }
    }
}
