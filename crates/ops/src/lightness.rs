//! An operation on the luma of a colour frame with every step on the GPU: the frame's Y of YCrCb
//! made on the device, the operation's map of it, and the colour frame made again from the mapped
//! Y and the frame's own Cr and Cb (lightness.cu), as `cv2.cvtColor(COLOR_BGR2YCrCb)`, the
//! operation, and `COLOR_YCrCb2BGR` make it. The CPU's sequence (histopipe-cli's luma module, with
//! `histopipe_frame::colour`'s conversions) gives the same samples: the same integer arithmetic.
//!
//! Before it, a colour frame's conversions ran on the host whichever backend ran the operation:
//! on a GPU, 4K colour frames then spent 10 times the GPU's time on the CPU's conversions.

use histopipe_frame::{Frame, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch};

use crate::{with_samples, Element, Gpu, OpError, Sample};

/// A gray plane on the device and where its map goes, of one sample width.
pub enum Plane<'a> {
    U8(&'a CudaSlice<u8>, &'a mut CudaSlice<u8>),
    U16(&'a CudaSlice<u16>, &'a mut CudaSlice<u16>),
}

/// An operation that maps a gray frame of integer samples to one of the same size, sample width
/// and maxval, queued on samples already on the device: what [`on_luma`] runs on a colour frame's
/// luma there. An operation with one says so ([`Op::plane_map`](crate::Op::plane_map)).
pub trait PlaneMap {
    /// Queues the map of the first `n` samples (maxval `maxval`) of `plane`'s source into the
    /// first `n` of its output.
    fn queue(&self, gpu: &Gpu, maxval: u16, n: usize, plane: Plane<'_>) -> Result<(), OpError>;
}

/// A sample type's [`Plane`].
trait Planar: Sample {
    fn plane<'a>(src: &'a CudaSlice<Self>, dst: &'a mut CudaSlice<Self>) -> Plane<'a>;
}

impl Planar for u8 {
    fn plane<'a>(src: &'a CudaSlice<u8>, dst: &'a mut CudaSlice<u8>) -> Plane<'a> {
        Plane::U8(src, dst)
    }
}

impl Planar for u16 {
    fn plane<'a>(src: &'a CudaSlice<u16>, dst: &'a mut CudaSlice<u16>) -> Plane<'a> {
        Plane::U16(src, dst)
    }
}

/// `frame` (RGB or RGBA, 8- or 16-bit) with its luma mapped by `map` on `gpu`: the frame's size,
/// channels, maxval and metadata, its alpha carried, R, G and B clamped to its maxval.
pub fn on_luma(gpu: &Gpu, frame: &Frame, map: &dyn PlaneMap) -> Result<Frame, OpError> {
    let channels = frame.channels.count();
    if !frame.channels.is_colour() {
        return Err(OpError::invalid(format!("the luma of a {} frame", frame.channels.name())));
    }
    let pixels =
        with_samples!(&frame.pixels, v => Element::into_pixels(queue(gpu, frame, v, channels, map)?));
    Ok(frame.derive_with(frame.width, frame.height, frame.channels, frame.maxval, pixels))
}

fn queue<T: Planar>(
    gpu: &Gpu,
    frame: &Frame,
    samples: &[T],
    channels: usize,
    map: &dyn PlaneMap,
) -> Result<Samples<T>, OpError> {
    let pixels = frame.pixel_count();
    if samples.len() != pixels * channels {
        return Err(OpError::invalid("a colour frame whose samples are not its pixels' channels"));
    }
    let src = gpu.upload("lightness.in", samples)?;
    let mut y = gpu.buffer::<T>("lightness.luma", pixels.max(1))?;
    let mut mapped = gpu.buffer::<T>("lightness.mapped", pixels.max(1))?;
    let mut out = gpu.buffer::<T>("lightness.out", samples.len().max(1))?;
    if pixels > 0 {
        let (n, ch, maxval) = (pixels as u64, channels as u32, u32::from(frame.maxval));
        let cfg = launch::cover(pixels, 256);
        // SAFETY: luma_*(rgb, pixels, channels, y) in lightness.cu: `src` holds pixels * channels
        // samples (checked above), `y` `pixels`.
        unsafe {
            launch!(gpu, kernels::LIGHTNESS, format!("luma_{}", T::KERNEL_SUFFIX), cfg; &*src, &n, &ch, &mut *y)
        }?;
        map.queue(gpu, frame.maxval, pixels, T::plane(&y, &mut mapped))?;
        // SAFETY: from_luma_*(rgb, mapped, pixels, channels, maxval, out): `mapped` holds `pixels`
        // samples, `out` as many as `src`.
        unsafe {
            launch!(gpu, kernels::LIGHTNESS, format!("from_luma_{}", T::KERNEL_SUFFIX), cfg;
                &*src, &*mapped, &n, &ch, &maxval, &mut *out)
        }?;
    }
    Ok(gpu.download_samples(&out, samples.len())?)
}
