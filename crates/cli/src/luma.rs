//! A colour frame's lightness as a gray frame for an operation, and the colour frame again from
//! what the operation made of it ([`Context::run_on_lightness`](crate::Context::run_on_lightness)):
//! the Y of YCrCb with Cr and Cb carried, or the L of L\*a\*b\* with a and b carried
//! ([`Lightness`]); alpha carried past an operation. The conversions are OpenCV's
//! (`histopipe_frame::colour`) and run on the CPU, split over its pool's threads, whichever
//! backend runs the operation, so both backends give the same colour frames; but for an operation
//! on the luma that maps a plane on the device ([`Op::plane_map`]), which a GPU runs with the
//! conversions on the device too ([`OnLuma`]: the same samples).

use histopipe_frame::{colour, Channels, Frame, Pixels};
use histopipe_ops::{lightness, parallel, Gpu, Op, OpError, Work};

/// `op` on the luma of a colour frame as one operation: on the CPU, [`split`], `op`, [`merge`];
/// on a GPU, every step on the device ([`lightness::on_luma`]), for an operation with a
/// [`Op::plane_map`] (any other's GPU run converts on the host, as the CPU's).
pub(crate) struct OnLuma<'a, O> {
    pub(crate) op: &'a O,
}

impl<O: Op<Output = Frame>> Op for OnLuma<'_, O> {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let (l, chroma) = split(frame, Lightness::Luma)?;
        Ok(merge(&self.op.cpu(&l)?, &chroma, frame))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        match self.op.plane_map() {
            Some(map) => lightness::on_luma(gpu, frame, map),
            None => {
                let (l, chroma) = split(frame, Lightness::Luma)?;
                Ok(merge(&self.op.gpu(gpu, &l)?, &chroma, frame))
            }
        }
    }

    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        self.op.visits_per_pixel(frame)
    }

    fn work(&self, frame: &Frame) -> Work {
        self.op.work(frame)
    }
}

/// The plane of a colour frame that an operation on its lightness works on, and the two carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lightness {
    /// Y of YCrCb (`cv2.cvtColor(COLOR_BGR2YCrCb)` and back): 8- and 16-bit frames.
    Luma,
    /// L of CIE L\*a\*b\* (`cv2.cvtColor(COLOR_BGR2Lab)` and back), sRGB and D65: 8-bit frames,
    /// as OpenCV's integer conversion (its others are float).
    Lab,
}

/// The two planes carried past an operation on a frame's lightness: Cr and Cb, or a and b.
pub(crate) struct Chroma {
    space: Lightness,
    planes: [Pixels; 2],
}

/// The lightness plane of an integer colour frame (RGB or RGBA) in `space`, as OpenCV makes it,
/// as a gray frame of the same size, container and geometry; with the two planes carried. Y is a
/// weighted mean of R, G and B whose weights sum to one, so it never exceeds the maxval, which
/// its frame keeps; L is 255 L*/100 of the samples read as 0..255 (as OpenCV reads 8-bit ones),
/// above a maxval under 255 (sample 100 is L* 42, L 108): its frame's maxval is 255.
pub(crate) fn split(frame: &Frame, space: Lightness) -> Result<(Frame, Chroma), OpError> {
    let n = frame.channels.count();
    assert!(frame.channels.is_colour(), "the lightness of a {} frame", frame.channels.name());
    let width = frame.width;
    let (l, planes) = match (&frame.pixels, space) {
        (Pixels::U8(v), Lightness::Luma) => {
            let [y, cr, cb] = to_planes(v, n, width, colour::to_ycrcb_u8);
            (Pixels::U8(y.into()), [Pixels::U8(cr.into()), Pixels::U8(cb.into())])
        }
        (Pixels::U16(v), Lightness::Luma) => {
            let [y, cr, cb] = to_planes(v, n, width, colour::to_ycrcb_u16);
            (Pixels::U16(y.into()), [Pixels::U16(cr.into()), Pixels::U16(cb.into())])
        }
        (Pixels::U8(v), Lightness::Lab) => {
            let [l, a, b] = to_planes(v, n, width, colour::to_lab_u8);
            (Pixels::U8(l.into()), [Pixels::U8(a.into()), Pixels::U8(b.into())])
        }
        (Pixels::U16(_), Lightness::Lab) => return Err(OpError::invalid(LAB_8_BIT)),
        (Pixels::F32(_), _) => return Err(OpError::needs_integers()),
    };
    // L spans 0..255 whatever the frame's maxval (OpenCV reads 8-bit samples as 0..255): its
    // frame has maxval 255, and the frame made again from it too.
    let maxval = if space == Lightness::Lab { u8::MAX.into() } else { frame.maxval };
    Ok((frame.derive(frame.width, frame.height, maxval, l), Chroma { space, planes }))
}

/// Why a 16-bit frame has no L\*a\*b\* here.
const LAB_8_BIT: &str = "--colour lab takes 8-bit frames (OpenCV converts L*a*b* in integers only \
                         at 8 bits), and this frame's samples are 16-bit";

/// The colour frame of `original`'s channels from `l`, an operation's output from [`split`]'s
/// lightness (same size and sample width), and `chroma`, as OpenCV converts back
/// (`COLOR_YCrCb2BGR`, `COLOR_Lab2BGR`); its maxval is `l`'s, colour samples above it clamped to it
/// (only where that maxval is under the sample width's range: OpenCV's conversion clamps to the
/// range). Alpha as [`carry_alpha`] has it.
pub(crate) fn merge(l: &Frame, chroma: &Chroma, original: &Frame) -> Frame {
    let n = original.channels.count();
    let maxval = l.maxval;
    let width = original.width;
    let mut pixels = original.pixels.clone();
    match (&l.pixels, &chroma.planes, &mut pixels) {
        (Pixels::U8(l), [Pixels::U8(c1), Pixels::U8(c2)], Pixels::U8(out)) => {
            let back = match chroma.space {
                Lightness::Luma => colour::from_ycrcb_u8,
                Lightness::Lab => colour::from_lab_u8,
            };
            from_planes([&l[..], &c1[..], &c2[..]], out, n, width, back);
            if maxval < u8::MAX.into() {
                clamp_colour(out, n, maxval as u8);
            }
        }
        (Pixels::U16(y), [Pixels::U16(cr), Pixels::U16(cb)], Pixels::U16(out)) => {
            from_planes([&y[..], &cr[..], &cb[..]], out, n, width, colour::from_ycrcb_u16);
            if maxval < u16::MAX {
                clamp_colour(out, n, maxval);
            }
        }
        _ => panic!("an operation on the lightness changed its sample width"),
    }
    let mut out = l.derive_with(original.width, original.height, original.channels, maxval, pixels);
    if original.channels.has_alpha() && original.maxval != maxval {
        rescale_alpha(&mut out.pixels, n, original.maxval, maxval);
    }
    out
}

/// A conversion of interleaved pixels into three planes: `colour::to_ycrcb_u8` and the like.
type ToPlanes<T> = fn(&[T], usize, &mut [T], &mut [T], &mut [T]);
/// A conversion of three planes into interleaved pixels: `colour::from_ycrcb_u8` and the like.
type FromPlanes<T> = fn(&[T], &[T], &[T], &mut [T], usize);

/// Pixels below which a conversion runs on the calling thread: a 256 x 256 frame converts in
/// about a tenth of a millisecond, the time waking the pool's threads may take.
const SPLIT_FROM: usize = 1 << 16;

/// Whole rows of `width` pixels per part to convert `pixels` in: the frame in one part, on the
/// calling thread, when it is small or the pool has one thread (so that `--threads 1` starts no
/// pool), else about four parts per thread.
fn part_pixels(pixels: usize, width: usize) -> usize {
    let width = width.max(1);
    let rows = pixels.div_ceil(width).max(1);
    let threads = if pixels < SPLIT_FROM { 1 } else { parallel::threads() };
    let parts = if threads > 1 { threads * 4 } else { 1 };
    rows.div_ceil(parts) * width
}

/// The three planes `convert` makes of `samples` (`n` a pixel, `width` pixels a row), converted
/// in parts of whole rows on the CPU pool's threads ([`parallel::for_each_part`]).
fn to_planes<T: Copy + Default + Send + Sync>(
    samples: &[T],
    n: usize,
    width: usize,
    convert: ToPlanes<T>,
) -> [Vec<T>; 3] {
    let pixels = samples.len() / n;
    let mut planes = [vec![T::default(); pixels], vec![T::default(); pixels], vec![T::default(); pixels]];
    let part = part_pixels(pixels, width);
    let [p0, p1, p2] = &mut planes;
    let mut parts: Vec<_> = samples
        .chunks(part * n)
        .zip(p0.chunks_mut(part).zip(p1.chunks_mut(part)).zip(p2.chunks_mut(part)))
        .map(|(s, ((a, b), c))| (s, a, b, c))
        .collect();
    parallel::for_each_part(&mut parts, 1, |_, part| {
        for (s, a, b, c) in part {
            convert(s, n, a, b, c);
        }
    });
    planes
}

/// `out`'s pixels (`n` samples, `width` a row) made of three planes by `convert`, in parts as
/// [`to_planes`] converts.
fn from_planes<T: Copy + Send + Sync>(
    planes: [&[T]; 3],
    out: &mut [T],
    n: usize,
    width: usize,
    convert: FromPlanes<T>,
) {
    let part = part_pixels(planes[0].len(), width);
    let mut parts: Vec<_> = out
        .chunks_mut(part * n)
        .zip(planes[0].chunks(part).zip(planes[1].chunks(part)).zip(planes[2].chunks(part)))
        .map(|(o, ((a, b), c))| (o, a, b, c))
        .collect();
    parallel::for_each_part(&mut parts, 1, |_, part| {
        for (o, a, b, c) in part {
            convert(a, b, c, o, n);
        }
    });
}

/// `colours`, an operation's outputs for the colour channels of `original` (one plane, or R, G
/// and B, of one size, sample width and maxval), with `original`'s alpha, as a frame of its
/// channels. Alpha samples are carried unchanged where the maxval is; where the operation changed
/// it (CLAHE's output spans 0..255 or 0..65535 whatever the input's maxval), alpha is rescaled to
/// keep its meaning: a' = round(a · maxval' / maxval), half up.
pub(crate) fn carry_alpha(original: &Frame, mut colours: Vec<Frame>) -> Frame {
    let alpha = original.channels.colour_count();
    let maxval = colours[0].maxval;
    let mut plane = original.plane(alpha);
    if original.maxval != maxval {
        rescale_alpha(&mut plane.pixels, 1, original.maxval, maxval);
        plane.maxval = maxval;
    }
    colours.push(plane);
    let channels = if alpha == 3 { Channels::RgbAlpha } else { Channels::GrayAlpha };
    Frame::from_planes(channels, &colours)
}

/// Clamps the R, G, B samples of `n`-sample pixels to `maxval`.
fn clamp_colour<T: Copy + Ord>(samples: &mut [T], n: usize, maxval: T) {
    for pixel in samples.chunks_exact_mut(n) {
        for s in &mut pixel[..3] {
            *s = (*s).min(maxval);
        }
    }
}

/// Rescales the last sample (alpha) of each `n`-sample pixel from 0..`from` to 0..`to`, rounding
/// half up.
fn rescale_alpha(pixels: &mut Pixels, n: usize, from: u16, to: u16) {
    let scale = |a: u16| ((2 * a.min(from) as u64 * to as u64 + from as u64) / (2 * from as u64)) as u16;
    match pixels {
        Pixels::U8(v) => v.iter_mut().skip(n - 1).step_by(n).for_each(|a| *a = scale(*a as u16) as u8),
        Pixels::U16(v) => v.iter_mut().skip(n - 1).step_by(n).for_each(|a| *a = scale(*a)),
        Pixels::F32(_) => unreachable!("float frames have no maxval"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_whole_rows_and_cover_the_frame() {
        assert_eq!(part_pixels(0, 0), 1);
        assert_eq!(part_pixels(10, 5), 10);
        assert_eq!(part_pixels(SPLIT_FROM - 1, 1), SPLIT_FROM - 1);
        let (width, height) = (1000, 1000);
        let part = part_pixels(width * height, width);
        assert_eq!(part % width, 0);
        let parts = (width * height).div_ceil(part);
        let threads = parallel::threads();
        assert!(if threads == 1 { parts == 1 } else { (2..=threads * 4).contains(&parts) }, "{parts}");
    }

    /// Equalizing a colour frame's luma with every step on the device gives the CPU's samples:
    /// 8- and 16-bit, RGB and RGBA, maxvals under the type's (R, G and B clamped to them), flat
    /// and saturated frames, sizes that are no multiple of a block.
    #[test]
    fn the_luma_on_the_device_is_the_cpus() {
        let Some(gpu) = histopipe_ops::testing::gpu_or_skip() else { return };
        let mut rng = fastrand::Rng::with_seed(fastrand::u64(..));
        let seed = rng.get_seed();
        let op = OnLuma { op: &histopipe_ops::equalize::Equalize };
        for (channels, maxval) in [
            (Channels::Rgb, 255),
            (Channels::RgbAlpha, 255),
            (Channels::Rgb, 200),
            (Channels::RgbAlpha, 65535),
            (Channels::Rgb, 4000),
            (Channels::RgbAlpha, 1),
        ] {
            for (w, h) in [(1, 1), (7, 3), (257, 31), (640, 480), (0, 4)] {
                let n = w * h * channels.count();
                let skew = rng.u16(0..=maxval);
                let mut sample = || match rng.u8(0..4) {
                    0 => maxval,
                    1 => skew,
                    _ => rng.u16(0..=maxval),
                };
                let pixels = if maxval <= 255 {
                    Pixels::U8((0..n).map(|_| sample() as u8).collect::<Vec<_>>().into())
                } else {
                    Pixels::U16((0..n).map(|_| sample()).collect::<Vec<_>>().into())
                };
                let frame = Frame::with_channels(w, h, channels, maxval, pixels);
                let cpu = op.cpu(&frame).unwrap();
                let on_gpu = op.gpu(&gpu, &frame).unwrap();
                assert!(
                    on_gpu.pixels == cpu.pixels
                        && on_gpu.maxval == cpu.maxval
                        && on_gpu.channels == cpu.channels,
                    "{channels:?} maxval {maxval}, {w}x{h}, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn luma_round_trips_and_keeps_alpha() {
        let rgba: Vec<u8> = vec![255, 0, 0, 7, 10, 20, 30, 200, 0, 0, 255, 0];
        let frame = Frame::with_channels(3, 1, Channels::RgbAlpha, 255, Pixels::U8(rgba.clone().into()));
        let (y, chroma) = split(&frame, Lightness::Luma).unwrap();
        assert_eq!(y.channels, Channels::Gray);
        assert_eq!(y.pixels, Pixels::U8(vec![76, 18, 29].into()));
        let back = merge(&y, &chroma, &frame);
        let Pixels::U8(v) = &back.pixels else { panic!() };
        // OpenCV's YCrCb round trip is not exact (saturated Cr, fixed point), but alpha is.
        assert_eq!(v.iter().skip(3).step_by(4).copied().collect::<Vec<_>>(), [7, 200, 0]);
        assert_eq!(&v[4..7], &[10, 20, 30]);
    }

    #[test]
    fn a_smaller_maxval_clamps_colour_and_rescales_alpha() {
        let frame =
            Frame::with_channels(1, 1, Channels::RgbAlpha, 100, Pixels::U8(vec![100, 0, 0, 50].into()));
        let (mut y, chroma) = split(&frame, Lightness::Luma).unwrap();
        // Y as an operation that keeps the maxval might leave it: R = Y + 1.403 (Cr - 128) > 100.
        y.pixels = Pixels::U8(vec![100].into());
        let Pixels::U8(v) = merge(&y, &chroma, &frame).pixels else { panic!() };
        assert_eq!((v[0], v[3]), (100, 50));
        // An operation onto 0..255: alpha 50 of 100 becomes 127.5, rounded up.
        y.maxval = 255;
        let out = merge(&y, &chroma, &frame);
        assert_eq!(out.maxval, 255);
        let Pixels::U8(v) = out.pixels else { panic!() };
        assert_eq!(v[3], 128);
        let gray_alpha =
            Frame::with_channels(2, 1, Channels::GrayAlpha, 4000, Pixels::U16(vec![1, 4000, 2, 1].into()));
        let colours = vec![Frame::new(2, 1, 65535, Pixels::U16(vec![0, 65535].into()))];
        let out = carry_alpha(&gray_alpha, colours);
        assert_eq!((out.channels, out.maxval), (Channels::GrayAlpha, 65535));
        // 4000 -> 65535; 1 -> 16.38 -> 16.
        assert_eq!(out.pixels, Pixels::U16(vec![0, 65535, 65535, 16].into()));
    }
}
