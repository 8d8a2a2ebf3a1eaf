use histopipe_frame::{Pixels, Samples};
use histopipe_gpu::cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// A sample type (u8 or u16): what generic CPU code and kernel launches need to know of it.
pub trait Sample: DeviceRepr + ValidAsZeroBits + Copy + Default + Into<u32> + Send + Sync + 'static {
    /// The suffix of this type's kernel names: `pad_u8`, `pad_u16`.
    const KERNEL_SUFFIX: &'static str;
    fn from_u16(v: u16) -> Self;
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels;
    /// The samples as bytes when they are 8-bit, for CPU loops specialised to them.
    fn bytes(samples: &[Self]) -> Option<&[u8]>;
}

impl Sample for u8 {
    const KERNEL_SUFFIX: &'static str = "u8";
    fn from_u16(v: u16) -> Self {
        v as u8
    }
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels {
        Pixels::U8(v.into())
    }
    fn bytes(samples: &[Self]) -> Option<&[u8]> {
        Some(samples)
    }
}

impl Sample for u16 {
    const KERNEL_SUFFIX: &'static str = "u16";
    fn from_u16(v: u16) -> Self {
        v
    }
    fn into_pixels(v: impl Into<Samples<Self>>) -> Pixels {
        Pixels::U16(v.into())
    }
    fn bytes(_: &[Self]) -> Option<&[u8]> {
        None
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
