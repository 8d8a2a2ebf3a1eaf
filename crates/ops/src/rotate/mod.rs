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
//! The operation's parts: [`turn`] (what a turn is, and which one the options ask for), `cpu`
//! (the reference: quarter turns as permutations, general turns row by row with `avx2`'s
//! kernels where the CPU has them), `row_map` (an output row's map, which `cpu` and `avx2` both
//! evaluate), [`gpu`] (the device plan).

use histopipe_frame::{Affine, Frame, Geometry, Pixels};

use crate::{with_elements, Element, Fill, Gpu, Op, OpError};

#[cfg(target_arch = "x86_64")]
mod avx2;
mod cpu;
pub mod gpu;
mod row_map;
#[cfg(test)]
mod tests;
pub mod turn;

pub(crate) use cpu::TurnedRows;
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
        Rotate { turn, width, height, out_width: width, out_height: height, interpolation, fill, maxval }
    }

    pub fn new_to_old(&self) -> Affine {
        self.turn.new_to_old_sized((self.width, self.height), (self.out_width, self.out_height))
    }

    /// The geometry of `frame` turned: the frame's (the identity when it has none) composed with
    /// [`Rotate::new_to_old`]; the frame's own, unchanged, for no turn at all.
    pub fn turned_geometry(&self, frame: &Frame) -> Option<Geometry> {
        match self.turn {
            Turn::Quarter(0) => frame.geometry.clone(),
            _ => Some(frame.geometry_or_identity().then(&self.new_to_old())),
        }
    }

    pub(crate) fn output(&self, frame: &Frame, pixels: Pixels) -> Frame {
        let mut out = frame.derive(self.out_width, self.out_height, frame.maxval, pixels);
        out.geometry = self.turned_geometry(frame);
        out
    }
}

impl Op for Rotate {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        if self.turn == Turn::Quarter(0) {
            return Ok(frame.clone());
        }
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.cpu_samples(v)));
        Ok(self.output(frame, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        if self.turn == Turn::Quarter(0) {
            return Ok(frame.clone());
        }
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.gpu_samples(gpu, v)?));
        Ok(self.output(frame, pixels))
    }
}
