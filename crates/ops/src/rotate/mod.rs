//! `rotate`: turn a frame about its centre, keeping its size or (`--expand`) in a frame the size of
//! the turned one's bounding box.
//!
//! Coordinates are pixel indices with y pointing down; the centre of a W x H frame is the point
//! ((W - 1) / 2, (H - 1) / 2). A positive angle turns the picture counter-clockwise as displayed.
//! Output pixel (x, y) takes its value from the input point (sx, sy) given by the inverse map
//!
//! sx = cos t x - sin t y + cx - (cos t cx - sin t cy)
//! sy = sin t x + cos t y + cy - (sin t cx + cos t cy)
//!
//! (with `--expand`, x and y are taken from the output's centre, which maps to the input's: see
//! [`Turn::new_to_old_sized`]), written as the [`Affine`] `new_to_old` and evaluated per pixel
//! exactly as [`Affine::apply`]
//! evaluates it, in `f64`, by both backends (cos and sin are computed once, on the host). That map
//! is also what the output's geometry composes, so `colhist` finds the same pixels.
//!
//! Multiples of 90 degrees are never evaluated in floating point: they are pixel permutations in
//! integer arithmetic (with the same rounding as the general case where the centre falls between
//! pixels), whatever the interpolation.
//!
//! Float samples go through the same map: nearest neighbour and quarter turns copy them (NaN and
//! all); bilinear blends them in `f64` exactly as integers are blended, and rounds the blend to
//! the nearest `f32` instead of to an integer (see `docs/rotate.md`).
//!
//! `--flip` mirrors the input first ([`Flip`], an exact permutation), and the turn takes the
//! mirrored frame as its input. `--centre` turns about a given point instead of the frame's
//! centre ([`Rotate::about`], [`Turn::new_to_old_about`]).
//!
//! The operation's parts: [`turn`] (what a turn is, and which one the options ask for), `cpu`
//! (the reference: quarter turns as permutations, general turns row by row with `avx2`'s
//! kernels where the CPU has them), `row_map` (an output row's map, which `cpu` and `avx2` both
//! evaluate), [`gpu`] (the device plan), [`flip`] (the mirroring before the turn).

use histopipe_frame::{Affine, Frame, Geometry, Pixels};

use crate::{with_elements, Element, Fill, Gpu, Op, OpError};

#[cfg(target_arch = "x86_64")]
mod avx2;
mod cpu;
pub mod flip;
pub mod gpu;
mod row_map;
#[cfg(test)]
mod tests;
pub mod turn;

pub(crate) use cpu::{ColumnCounts, TurnedRows, COLUMN_COUNTS};
pub use flip::Flip;
pub use gpu::RotatePlan;
pub use turn::{RotateBy, RotateParams, Turn};

/// How a sample is read at a point between pixel centres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interpolation {
    /// The pixel at (floor(sx + 0.5), floor(sy + 0.5)).
    #[default]
    Nearest,
    /// The four pixels around the point, weighted by distance; see `docs/rotate.md`.
    Bilinear,
}

/// `rotate` for one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotate {
    pub turn: Turn,
    /// The input's size.
    pub width: usize,
    pub height: usize,
    /// The output's size: the input's, or a turned frame's bounding box.
    pub out_width: usize,
    pub out_height: usize,
    pub interpolation: Interpolation,
    /// The value of pixels from outside the input, of the frame's kind ([`Fill::for_samples`]).
    pub fill: Fill,
    /// The largest sample of integer frames (bilinear results are clamped to it); unused for
    /// float frames.
    pub maxval: u16,
    /// The input mirrored first (`--flip`), the turn then taking the mirrored frame.
    pub flip: Option<Flip>,
    /// The point the turn is about, in the input's pixel coordinates (`--centre`; see
    /// [`Rotate::about`]); the frame's centre where `None`.
    pub centre: Option<(f64, f64)>,
}

impl Rotate {
    /// A turn whose output keeps the input's `width` x `height` (what `rotate` does without
    /// `--expand`).
    pub fn in_place(
        turn: Turn,
        width: usize,
        height: usize,
        interpolation: Interpolation,
        fill: Fill,
        maxval: u16,
    ) -> Rotate {
        let (flip, centre) = (None, None);
        Rotate {
            turn,
            width,
            height,
            out_width: width,
            out_height: height,
            interpolation,
            fill,
            maxval,
            flip,
            centre,
        }
    }

    /// This turn with the input mirrored first (`--flip`), or not.
    pub fn flipped(self, flip: Option<Flip>) -> Rotate {
        Rotate { flip, ..self }
    }

    /// This turn about the point `centre` of the input ((X, Y), pixel coordinates, the centre of
    /// pixel (x, y) being (x, y): `cv2.getRotationMatrix2D`'s centre) instead of the frame's
    /// centre; only for an output of the input's size (no `--expand`: the bounding box of a turned
    /// frame is the same whatever it is turned about). Quarter turns then go through the general
    /// map (their cosine and sine exact, 0 and ±1), since the centre need not be on the pixel
    /// grid, by nearest neighbour whatever the interpolation: they stay permutations of the
    /// pixels (halves rounded up), as about the frame's centre, which given as `centre` gives
    /// the same bits. No turn at all stays the identity.
    pub fn about(self, centre: (f64, f64)) -> Result<Rotate, OpError> {
        if (self.out_width, self.out_height) != (self.width, self.height) {
            return Err(OpError::param_is(
                "centre",
                format!("{:?},{:?}", centre.0, centre.1),
                "keeps the frame's size; the bounding box (expand) is the same about any centre",
            ));
        }
        if !(centre.0.is_finite() && centre.1.is_finite()) {
            return Err(OpError::param_is(
                "centre",
                format!("{:?},{:?}", centre.0, centre.1),
                "is not finite",
            ));
        }
        let (turn, interpolation) = match self.turn {
            Turn::Quarter(q @ 1..=3) => (Turn::quarter_as_angle(q), Interpolation::Nearest),
            turn => (turn, self.interpolation),
        };
        let about = Rotate { turn, interpolation, centre: Some(centre), ..self };
        let m = about.new_to_old();
        if ![m.a, m.b, m.c, m.d, m.e, m.f].iter().all(|v| v.is_finite()) {
            let text = format!("{:?},{:?}", centre.0, centre.1);
            return Err(OpError::param_is("centre", text, "is too far off: the turn's map overflows"));
        }
        Ok(about)
    }

    /// The map from output pixel coordinates to those of the (mirrored) input.
    pub fn new_to_old(&self) -> Affine {
        match self.centre {
            Some(centre) => self.turn.new_to_old_about(centre),
            None => self.turn.new_to_old_sized((self.width, self.height), (self.out_width, self.out_height)),
        }
    }

    /// No turn and no flip: the frame itself.
    fn is_identity(&self) -> bool {
        self.turn == Turn::Quarter(0) && self.flip.is_none()
    }

    /// The geometry of `frame` turned: the frame's (the identity when it has none) composed with
    /// the flip's map ([`Flip::new_to_old`]) and [`Rotate::new_to_old`]; the frame's own,
    /// unchanged, for no turn and no flip.
    pub fn turned_geometry(&self, frame: &Frame) -> Option<Geometry> {
        let mut geometry = match self.flip {
            Some(flip) => frame.geometry_or_identity().then(&flip.new_to_old(self.width, self.height)),
            None if self.turn == Turn::Quarter(0) => return frame.geometry.clone(),
            None => frame.geometry_or_identity(),
        };
        if self.turn != Turn::Quarter(0) {
            geometry = geometry.then(&self.new_to_old());
        }
        Some(geometry)
    }

    pub(crate) fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        let mut out = frame.derive(self.out_width, self.out_height, frame.maxval, pixels);
        out.geometry = self.turned_geometry(frame);
        out
    }
}

impl Rotate {
    /// The output's samples on the CPU: the input mirrored first where [`Rotate::flip`] says,
    /// then turned (not at all for no turn).
    fn cpu_flipped_samples<T: cpu::Blend>(&self, input: &[T]) -> Vec<T> {
        let Some(flip) = self.flip else { return self.cpu_samples(input) };
        let flipped = flip.cpu_samples(self.width, self.height, input);
        match self.turn {
            Turn::Quarter(0) => flipped,
            _ => self.cpu_samples(&flipped),
        }
    }
}

impl Op for Rotate {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        if self.is_identity() {
            return Ok(frame.clone());
        }
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.cpu_flipped_samples(v)));
        Ok(self.output(frame, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        if self.is_identity() {
            return Ok(frame.clone());
        }
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.gpu_samples(gpu, v)?));
        Ok(self.output(frame, pixels))
    }
}
