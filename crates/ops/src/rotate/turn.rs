//! What a turn is ([`Turn`]: a quarter turn, or an angle by its cosine and sine, and the map from
//! the output's pixels to the input's) and which one `rotate`'s options ask for ([`RotateParams`]).

use histopipe_frame::{Affine, Frame, Line};

use super::{Flip, Interpolation, Rotate};
use crate::{Fill, OpError};

/// How far a frame is turned, counter-clockwise as displayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Turn {
    /// 0 to 3 quarter turns: an exact permutation of the pixels.
    Quarter(u8),
    /// Any other angle, by its cosine and sine.
    Angle { cos: f64, sin: f64 },
}

impl Turn {
    /// The turn by `degrees`; multiples of 90 (after reduction modulo 360, which is exact) are
    /// quarter turns.
    pub fn degrees(degrees: f64) -> Result<Turn, OpError> {
        if !degrees.is_finite() {
            return Err(OpError::invalid(format!("the angle {degrees} is not a finite number")));
        }
        let r = degrees % 360.0;
        if r % 90.0 == 0.0 {
            return Ok(Turn::Quarter(((r / 90.0) as i64).rem_euclid(4) as u8));
        }
        let (sin, cos) = r.to_radians().sin_cos();
        Ok(Turn::Angle { cos, sin })
    }

    /// The turn after which the direction (dx, dy) of the frame points straight down (+y), or
    /// `None` for the zero vector. Axis-parallel directions give exact quarter turns.
    pub fn making_vertical(dx: f64, dy: f64) -> Option<Turn> {
        // The forward map turns (dx, dy) into (cos dx + sin dy, -sin dx + cos dy); setting that to
        // (0, |v|) gives cos = dy / |v|, sin = -dx / |v|.
        match (dx == 0.0, dy == 0.0) {
            (true, true) => None,
            (true, false) => Some(Turn::Quarter(if dy > 0.0 { 0 } else { 2 })),
            (false, true) => Some(Turn::Quarter(if dx > 0.0 { 3 } else { 1 })),
            (false, false) => {
                let len = dx.hypot(dy);
                (len.is_finite() && len > 0.0).then(|| Turn::Angle { cos: dy / len, sin: -dx / len })
            }
        }
    }

    /// Quarter turn `q` as a general angle, its cosine and sine exact (0 and ±1): the same map
    /// evaluated per pixel, for a centre off the pixel grid ([`Rotate::about`]).
    pub fn quarter_as_angle(q: u8) -> Turn {
        let (cos, sin) = Turn::Quarter(q).cos_sin();
        Turn::Angle { cos, sin }
    }

    fn cos_sin(self) -> (f64, f64) {
        match self {
            Turn::Quarter(q) => [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][q as usize & 3],
            Turn::Angle { cos, sin } => (cos, sin),
        }
    }

    /// The map from output pixel coordinates to input ones for a `width x height` frame. For
    /// quarter turns every coefficient is an integer or a half-integer, so it is exact.
    pub fn new_to_old(self, width: usize, height: usize) -> Affine {
        self.new_to_old_sized((width, height), (width, height))
    }

    /// The map from the pixel coordinates of an `output`-sized frame to those of the `input`-sized
    /// one it is turned from, centre onto centre. With `output == input` it is
    /// [`Turn::new_to_old`], bit for bit (the same operations).
    pub fn new_to_old_sized(self, input: (usize, usize), output: (usize, usize)) -> Affine {
        let (cos, sin) = self.cos_sin();
        let centre = |(w, h): (usize, usize)| ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
        let ((cx, cy), (ox, oy)) = (centre(input), centre(output));
        let (a, b, d, e) = (cos, -sin, sin, cos);
        Affine { a, b, c: cx - (a * ox + b * oy), d, e, f: cy - (d * ox + e * oy) }
    }

    /// The map from output pixel coordinates to input ones for a turn about the point `centre`
    /// of the input, the output of the input's size: [`Turn::new_to_old_sized`] with both
    /// centres `centre` (the same operations, so a centre of ((W - 1) / 2, (H - 1) / 2) gives
    /// the same bits). It is the inverse of `cv2.getRotationMatrix2D(centre, degrees, 1)`.
    pub fn new_to_old_about(self, (cx, cy): (f64, f64)) -> Affine {
        let (cos, sin) = self.cos_sin();
        let (a, b, d, e) = (cos, -sin, sin, cos);
        Affine { a, b, c: cx - (a * cx + b * cy), d, e, f: cy - (d * cx + e * cy) }
    }

    /// The size of the bounding box of a `width x height` frame turned this far: its pixels are
    /// unit squares, so the box is |cos| W + |sin| H by |sin| W + |cos| H, rounded up (after
    /// taking off 10^-6, so that the rounding of cos and sin never adds a pixel: a turn by 10^-9
    /// degrees keeps the size). Quarter turns give exactly H x W or W x H.
    pub fn bounding_size(self, width: usize, height: usize) -> (usize, usize) {
        let (cos, sin) = self.cos_sin();
        let (c, s) = (cos.abs(), sin.abs());
        let (w, h) = (width as f64, height as f64);
        let side = |v: f64| ((v - 1e-6).ceil() as usize).max(1);
        (side(c * w + s * h), side(s * w + c * h))
    }
}

/// What `rotate` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RotateBy {
    /// This many degrees, counter-clockwise as displayed.
    Degrees(f64),
    /// As far as makes this line of the original point straight down, first point on top.
    Line(Line),
}

/// `rotate`'s parameters, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RotateParams {
    pub by: RotateBy,
    pub interpolation: Interpolation,
    /// The fill value: an integer for integer frames, any value for float ones.
    pub fill: Fill,
    /// Make the output the turned frame's bounding box ([`Turn::bounding_size`]) instead of the
    /// input's size.
    pub expand: bool,
}

impl RotateParams {
    /// The rotation of `frame`, which needs the frame for `--line` (its geometry) and `--fill`.
    pub fn for_frame(&self, frame: &Frame) -> Result<Rotate, OpError> {
        self.for_mirrored_frame(frame, None)
    }

    /// The rotation of `frame` mirrored first by `flip` (`--flip`): the turn takes the mirrored
    /// frame, so `--line` is found through the mirrored frame's geometry, as a `rotate --line`
    /// after `rotate 0 --flip` would find it.
    pub fn for_mirrored_frame(&self, frame: &Frame, flip: Option<Flip>) -> Result<Rotate, OpError> {
        let fill = self.fill.for_samples("fill", !frame.depth().is_integer(), frame.maxval)?;
        if frame.width > u32::MAX as usize || frame.height > u32::MAX as usize {
            return Err(OpError::invalid("frames wider or taller than 2^32 - 1 pixels are not supported"));
        }
        let turn = match self.by {
            RotateBy::Degrees(d) => Turn::degrees(d)?,
            RotateBy::Line(line) => {
                let mut geometry = frame.geometry_or_identity();
                if let Some(flip) = flip {
                    geometry = geometry.then(&flip.new_to_old(frame.width, frame.height));
                }
                let ((x0, y0), (x1, y1)) = line.in_frame(&geometry).map_err(OpError::invalid)?;
                Turn::making_vertical(x1 - x0, y1 - y0)
                    .ok_or_else(|| OpError::invalid("the line has no direction in this frame"))?
            }
        };
        let (out_width, out_height) = if self.expand {
            turn.bounding_size(frame.width, frame.height)
        } else {
            (frame.width, frame.height)
        };
        if out_width > u32::MAX as usize || out_height > u32::MAX as usize {
            return Err(OpError::invalid(format!(
                "the turned frame would be {out_width}x{out_height}, wider or taller than 2^32 - 1 pixels"
            )));
        }
        Ok(Rotate {
            turn,
            width: frame.width,
            height: frame.height,
            out_width,
            out_height,
            interpolation: self.interpolation,
            fill,
            maxval: frame.maxval,
            flip,
            centre: None,
        })
    }
}
