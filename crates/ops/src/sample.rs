use std::fmt;

use histopipe_frame::{Pixels, Samples};
use histopipe_gpu::cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// A sample type of any depth (u8, u16 or f32): what code that only moves samples (copies,
/// permutations, fills) and kernel launches need to know of it.
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static {
    /// The suffix of this type's kernel names: `pad_u8`, `pad_u16`, `pad_f32`.
    const KERNEL_SUFFIX: &'static str;
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels;
    /// The fill value as this type's sample: an integer fill as itself (or as the float of that
    /// value), a float fill as itself. Ops check that a fill fits their frame before they use it.
    fn from_fill(fill: Fill) -> Self;
}

/// An integer sample type (u8 or u16): what generic CPU code and kernel launches need to know of it.
pub trait Sample: Element + Into<u32> {
    fn from_u16(v: u16) -> Self;
    /// The samples as bytes when they are 8-bit, for CPU loops specialised to them.
    fn bytes(samples: &[Self]) -> Option<&[u8]>;
}

impl Element for u8 {
    const KERNEL_SUFFIX: &'static str = "u8";
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels {
        Pixels::U8(v.into())
    }
    fn from_fill(fill: Fill) -> Self {
        fill.bits() as u8
    }
}

impl Sample for u8 {
    fn from_u16(v: u16) -> Self {
        v as u8
    }
    fn bytes(samples: &[Self]) -> Option<&[u8]> {
        Some(samples)
    }
}

impl Element for u16 {
    const KERNEL_SUFFIX: &'static str = "u16";
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels {
        Pixels::U16(v.into())
    }
    fn from_fill(fill: Fill) -> Self {
        fill.bits() as u16
    }
}

impl Sample for u16 {
    fn from_u16(v: u16) -> Self {
        v
    }
    fn bytes(_: &[Self]) -> Option<&[u8]> {
        None
    }
}

impl Element for f32 {
    const KERNEL_SUFFIX: &'static str = "f32";
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels {
        Pixels::F32(v.into())
    }
    fn from_fill(fill: Fill) -> Self {
        fill.as_f32()
    }
}

/// The bits of the one NaN the tools write: the quiet NaN `0x7FC00000` (sign clear, no payload),
/// `f32::NAN`'s and NumPy's `float32(nan)`'s. Arithmetic makes others, and which depends on the
/// machine and on the compiler's order of operands (x86 makes `0xFFC00000` of inf - inf and keeps
/// the first of two NaN operands, CUDA's double add another), so a value an operation computes
/// goes through [`canonical_nan`] before it is stored; histopipe.cuh's `canonical_nan` is the
/// kernels' (a test reads its `HP_CANONICAL_NAN`). Samples an operation only copies keep their bits.
pub const CANONICAL_NAN: u32 = 0x7FC0_0000;

/// `v`, or the quiet NaN [`CANONICAL_NAN`] when `v` is any NaN: a select, no branch.
#[inline]
pub fn canonical_nan(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(CANONICAL_NAN)
    } else {
        v
    }
}

/// The value of pixels that come from outside a frame (`pad`'s border, `rotate`'s corners): an
/// integer sample, or a float for float frames (any `f32`: NaN and infinities are values too).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    Int(u16),
    Float(f32),
}

impl Default for Fill {
    fn default() -> Fill {
        Fill::Int(0)
    }
}

impl From<u16> for Fill {
    fn from(v: u16) -> Fill {
        Fill::Int(v)
    }
}

impl Fill {
    /// The value as a float sample: integers are exact in `f32` (below 2^24).
    pub fn as_f32(self) -> f32 {
        match self {
            Fill::Int(v) => v as f32,
            Fill::Float(v) => v,
        }
    }

    /// The bits of the sample it makes (an integer's value, a float's IEEE bits): what a kernel
    /// takes as its `u32 fill`, and zero exactly when the sample's bytes are all zero.
    pub fn bits(self) -> u32 {
        match self {
            Fill::Int(v) => v as u32,
            Fill::Float(v) => v.to_bits(),
        }
    }

    /// This fill for a frame of samples up to `maxval` (`float`: of `f32` samples, where any fill
    /// goes, as a float); `name` is the parameter's, for the error: an integer frame takes an
    /// integer 0..=maxval.
    pub fn for_samples(self, name: &'static str, float: bool, maxval: u16) -> Result<Fill, crate::OpError> {
        match self {
            _ if float => Ok(Fill::Float(self.as_f32())),
            Fill::Int(v) if v <= maxval => Ok(self),
            Fill::Int(_) => {
                Err(crate::OpError::param_is(name, self, format!("is over the frame's maxval {maxval}")))
            }
            Fill::Float(_) => Err(crate::OpError::param_is(
                name,
                self,
                format!("is not a sample of this integer frame (an integer 0..{maxval})"),
            )),
        }
    }
}

/// The values of a fill option: `V` (every channel) or `V1,V2,...` (one per channel, in the
/// frame's order: gray or R, G, B, then alpha).
#[derive(Debug, Clone, PartialEq)]
pub struct Fills(pub Vec<Fill>);

impl Default for Fills {
    fn default() -> Fills {
        Fills(vec![Fill::Int(0)])
    }
}

impl Fills {
    /// The fill of each of a frame's `channels`: the one value for every channel, or exactly one
    /// per channel; any other count is an error naming parameter `name`.
    pub fn per_channel(&self, name: &'static str, channels: usize) -> Result<Vec<Fill>, crate::OpError> {
        match self.0.len() {
            1 => Ok(vec![self.0[0]; channels]),
            n if n == channels => Ok(self.0.clone()),
            n => {
                let s = if channels == 1 { "" } else { "s" };
                Err(crate::OpError::param_is(
                    name,
                    self,
                    format!("gives {n} values for a frame of {channels} channel{s}: give one value, or one per channel"),
                ))
            }
        }
    }
}

impl fmt::Display for Fills {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self.0.iter().map(Fill::to_string).collect();
        f.write_str(&list.join(","))
    }
}

impl std::str::FromStr for Fills {
    type Err = String;
    fn from_str(s: &str) -> Result<Fills, String> {
        let fills = s.split(',').map(str::parse).collect::<Result<Vec<Fill>, String>>()?;
        if fills.len() > 4 {
            return Err("at most 4 values (one per channel)".into());
        }
        Ok(Fills(fills))
    }
}

impl fmt::Display for Fill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fill::Int(v) => write!(f, "{v}"),
            Fill::Float(v) => write!(f, "{v}"),
        }
    }
}

/// Parses `7`, `0.25`, `-1e3`, `nan`, `inf`: an integer 0..=65535 is [`Fill::Int`], anything
/// else that is an `f32` is [`Fill::Float`] (rounded to the nearest `f32`); a finite number too
/// large for `f32` is refused rather than made infinite.
impl std::str::FromStr for Fill {
    type Err = String;
    fn from_str(s: &str) -> Result<Fill, String> {
        if let Ok(v) = s.parse::<u16>() {
            return Ok(Fill::Int(v));
        }
        let v: f32 =
            s.parse().map_err(|_| "expected a sample value: an integer, a decimal number, nan or inf")?;
        // `-nan` parses to a NaN with its sign bit set: the fill is the one NaN tools write.
        let v = canonical_nan(v);
        let written_infinite = s.trim_start_matches(['+', '-']).to_ascii_lowercase().starts_with("inf");
        if v.is_infinite() && !written_infinite {
            return Err("out of the range of 32-bit floats".into());
        }
        Ok(Fill::Float(v))
    }
}

/// Calls `$body` with `$v` bound to the frame's samples as `Samples<u8>` or `Samples<u16>`, for code that
/// is generic over [`Sample`]; float samples return [`OpError::needs_integers`](crate::OpError::needs_integers)
/// from the function it is in.
#[macro_export]
macro_rules! with_samples {
    ($pixels:expr, $v:ident => $body:expr) => {
        match $pixels {
            histopipe_frame::Pixels::U8($v) => $body,
            histopipe_frame::Pixels::U16($v) => $body,
            histopipe_frame::Pixels::F32(_) => return Err($crate::OpError::needs_integers()),
        }
    };
}

/// Calls `$body` with `$v` bound to the frame's samples as `Samples<u8>`, `Samples<u16>` or
/// `Samples<f32>`, for code that is generic over [`Element`].
#[macro_export]
macro_rules! with_elements {
    ($pixels:expr, $v:ident => $body:expr) => {
        match $pixels {
            histopipe_frame::Pixels::U8($v) => $body,
            histopipe_frame::Pixels::U16($v) => $body,
            histopipe_frame::Pixels::F32($v) => $body,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_nan_is_the_kernels() {
        let header = histopipe_gpu::kernels::HEADERS.iter().find(|(n, _)| *n == "histopipe.cuh").unwrap().1;
        let hex = header.lines().find_map(|l| l.strip_prefix("#define HP_CANONICAL_NAN 0x")).unwrap();
        assert_eq!(u32::from_str_radix(hex.trim_end_matches('u'), 16), Ok(CANONICAL_NAN));
        assert_eq!(CANONICAL_NAN, f32::NAN.to_bits());
        for v in [f32::NAN, -f32::NAN, f32::from_bits(0x7FC0_1234), f32::from_bits(0xFFFF_FFFF)] {
            assert_eq!(canonical_nan(v).to_bits(), CANONICAL_NAN);
        }
        for v in [1.5, -0.0, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(canonical_nan(v).to_bits(), v.to_bits());
        }
    }

    /// `-nan` (a NaN with its sign bit set, as Rust parses it) fills with the canonical NaN.
    #[test]
    fn a_nan_fill_is_the_canonical_nan() {
        for text in ["nan", "-nan", "NaN", "-NaN", "+nan"] {
            let Ok(Fill::Float(v)) = text.parse::<Fill>() else { panic!("{text}") };
            assert_eq!(v.to_bits(), CANONICAL_NAN, "{text}");
        }
        let Ok(Fills(fills)) = "1,-nan".parse::<Fills>() else { panic!() };
        assert_eq!(fills[1].bits(), CANONICAL_NAN);
    }
}
