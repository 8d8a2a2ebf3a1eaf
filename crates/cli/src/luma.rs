//! A colour frame's luma as a gray frame for an operation, and the colour frame again from what the
//! operation made of it ([`Context::run_on_luma`](crate::Context::run_on_luma)); alpha carried
//! past an operation. The conversions are OpenCV's (`histopipe_frame::colour`) and run on the CPU
//! whichever backend runs the operation, so both backends give the same colour frames.

use histopipe_frame::{colour, Channels, Frame, Pixels};
use histopipe_ops::OpError;

/// The Cr and Cb planes of a frame whose Y an operation works on.
pub(crate) struct Chroma {
    cr: Pixels,
    cb: Pixels,
}

/// The Y of YCrCb of an integer colour frame (RGB or RGBA), as `cv2.cvtColor(COLOR_BGR2YCrCb)`
/// makes it, as a gray frame of the same size, maxval, container and geometry; with its Cr and Cb.
/// Y is a weighted mean of R, G and B whose weights sum to one, so it never exceeds the maxval.
pub(crate) fn split(frame: &Frame) -> Result<(Frame, Chroma), OpError> {
    let n = frame.channels.count();
    assert!(frame.channels.is_colour(), "the luma of a {} frame", frame.channels.name());
    let len = frame.pixel_count();
    let (y, chroma) = match &frame.pixels {
        Pixels::U8(v) => {
            let (mut y, mut cr, mut cb) = (vec![0u8; len], vec![0u8; len], vec![0u8; len]);
            colour::to_ycrcb_u8(v, n, &mut y, &mut cr, &mut cb);
            (Pixels::U8(y.into()), Chroma { cr: Pixels::U8(cr.into()), cb: Pixels::U8(cb.into()) })
        }
        Pixels::U16(v) => {
            let (mut y, mut cr, mut cb) = (vec![0u16; len], vec![0u16; len], vec![0u16; len]);
            colour::to_ycrcb_u16(v, n, &mut y, &mut cr, &mut cb);
            (Pixels::U16(y.into()), Chroma { cr: Pixels::U16(cr.into()), cb: Pixels::U16(cb.into()) })
        }
        Pixels::F32(_) => return Err(OpError::needs_integers()),
    };
    Ok((frame.derive(frame.width, frame.height, frame.maxval, y), chroma))
}

/// The colour frame of `original`'s channels from `y`, an operation's output from [`split`]'s Y
/// (same size and sample width), and `chroma`, as `cv2.cvtColor(COLOR_YCrCb2BGR)` makes it; its
/// maxval is `y`'s, colour samples above it clamped to it (only where that maxval is under the
/// sample width's range: OpenCV's conversion clamps to the range). Alpha as [`carry_alpha`] has it.
pub(crate) fn merge(y: &Frame, chroma: &Chroma, original: &Frame) -> Frame {
    let n = original.channels.count();
    let maxval = y.maxval;
    let mut pixels = original.pixels.clone();
    match (&y.pixels, &chroma.cr, &chroma.cb, &mut pixels) {
        (Pixels::U8(y), Pixels::U8(cr), Pixels::U8(cb), Pixels::U8(out)) => {
            colour::from_ycrcb_u8(y, cr, cb, out, n);
            if maxval < u8::MAX.into() {
                clamp_colour(out, n, maxval as u8);
            }
        }
        (Pixels::U16(y), Pixels::U16(cr), Pixels::U16(cb), Pixels::U16(out)) => {
            colour::from_ycrcb_u16(y, cr, cb, out, n);
            if maxval < u16::MAX {
                clamp_colour(out, n, maxval);
            }
        }
        _ => panic!("an operation on the luma changed its sample width"),
    }
    let mut out = y.derive_with(original.width, original.height, original.channels, maxval, pixels);
    if original.channels.has_alpha() && original.maxval != maxval {
        rescale_alpha(&mut out.pixels, n, original.maxval, maxval);
    }
    out
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
    fn luma_round_trips_and_keeps_alpha() {
        let rgba: Vec<u8> = vec![255, 0, 0, 7, 10, 20, 30, 200, 0, 0, 255, 0];
        let frame = Frame::with_channels(3, 1, Channels::RgbAlpha, 255, Pixels::U8(rgba.clone().into()));
        let (y, chroma) = split(&frame).unwrap();
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
        let (mut y, chroma) = split(&frame).unwrap();
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
