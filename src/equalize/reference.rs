//! `--reference FILE`: the image whose first frame `equalize` reads before any input, and what it
//! keeps of it (`--mask` is src/mask.rs, which other tools share).

use histopipe_frame::{colour, Channels, Frame, Pixels};
use histopipe_ops::bins::Bins;
use histopipe_ops::histogram;

use crate::mask::FLOAT;

/// The histograms of a reference image's planes that `--reference` matches frames to, each with
/// one count per level 0..=maxval of the reference.
pub struct Reference {
    /// Its gray plane (a gray image, or colour read as gray with `--colour gray`), or the Y of
    /// YCrCb of a colour image as OpenCV's `cvtColor(COLOR_BGR2YCrCb)` makes it (its L of
    /// L*a*b*, `COLOR_BGR2Lab`, with `--colour lab`): what a gray frame, and the luma (or L) of a
    /// colour frame, are matched to.
    pub luma: Vec<u64>,
    /// R, G and B of a colour image, which `--colour each` matches a colour frame's channels to;
    /// `None` for a gray image (its gray plane is then every channel's).
    pub channels: Option<[Vec<u64>; 3]>,
}

impl Reference {
    /// What `--reference` keeps of `frame` (alpha is no plane of it), with its L of L*a*b* for
    /// the luma with `lab` (8-bit colour images only); float samples are refused.
    pub fn of(frame: &Frame, lab: bool) -> Result<Reference, String> {
        let bins = Bins::new(None, frame.maxval).map_err(|e| e.to_string())?;
        let count = |plane: &Frame| match &plane.pixels {
            Pixels::U8(v) => histogram::count(v, bins),
            Pixels::U16(v) => histogram::count(v, bins),
            Pixels::F32(_) => unreachable!("refused below"),
        };
        if matches!(frame.pixels, Pixels::F32(_)) {
            return Err(FLOAT.into());
        }
        if !frame.channels.is_colour() {
            let gray = if frame.channels == Channels::Gray { count(frame) } else { count(&frame.plane(0)) };
            return Ok(Reference { luma: gray, channels: None });
        }
        let n = frame.channels.count();
        let len = frame.pixel_count();
        let luma = match &frame.pixels {
            Pixels::U8(v) if lab => {
                let (mut l, mut a, mut b) = (vec![0u8; len], vec![0u8; len], vec![0u8; len]);
                colour::to_lab_u8(v, n, &mut l, &mut a, &mut b);
                histogram::count(&l, bins)
            }
            Pixels::U16(_) if lab => {
                return Err("--colour lab takes 8-bit images, and this one's samples are 16-bit".into())
            }
            Pixels::U8(v) => {
                let (mut y, mut cr, mut cb) = (vec![0u8; len], vec![0u8; len], vec![0u8; len]);
                colour::to_ycrcb_u8(v, n, &mut y, &mut cr, &mut cb);
                histogram::count(&y, bins)
            }
            Pixels::U16(v) => {
                let (mut y, mut cr, mut cb) = (vec![0u16; len], vec![0u16; len], vec![0u16; len]);
                colour::to_ycrcb_u16(v, n, &mut y, &mut cr, &mut cb);
                histogram::count(&y, bins)
            }
            Pixels::F32(_) => unreachable!("refused above"),
        };
        let channels = [0, 1, 2].map(|c| count(&frame.plane(c)));
        Ok(Reference { luma, channels: Some(channels) })
    }

    /// The counts plane `c` of a frame is matched to: `each`, a colour frame's channel c under
    /// `--colour each`; otherwise the luma (a gray frame, a colour frame's Y, or colour read as gray).
    pub fn plane(&self, each: bool, c: usize) -> &[u64] {
        match (&self.channels, each) {
            (Some(channels), true) => &channels[c],
            _ => &self.luma,
        }
    }
}
