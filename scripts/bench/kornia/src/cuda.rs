//! The same operations on the GPU (`--device cuda`, impl `kornia-cuda`), where kornia-imgproc 0.2
//! has a CUDA path (its `cuda` feature: NVRTC kernels, chosen when source and destination are
//! device images). The frame is uploaded once and the output allocated once, as the opencv-cuda
//! and NPP peers do; a call is timed with the host clock up to the stream's synchronisation,
//! launch overhead included. `spatial_padding` has no CUDA path: no GPU pad.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use kornia_image::{Image, ImageError, ImageSize};
use kornia_imgproc::canny::canny;
use kornia_imgproc::clahe::clahe;
use kornia_imgproc::histogram::{compute_histogram, equalize_hist};
use kornia_imgproc::interpolation::InterpolationMode;
use kornia_imgproc::warp::{warp_affine, warp_affine_u8};

use crate::cases::{rotation, Case, Output, Params, CLAHE_CLIP, CLAHE_GRID};

fn cuda_err(e: impl std::fmt::Display) -> ImageError {
    ImageError::Cuda(e.to_string())
}

/// The GPU and its stream, with the device's name for the JSON header.
pub struct Device {
    pub name: String,
    pub stream: Arc<CudaStream>,
}

impl Device {
    pub fn open() -> Result<Device, String> {
        // cudarc panics where it finds no driver library: one error line instead.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0));
        std::panic::set_hook(hook);
        let ctx = ctx
            .map_err(|_| "no CUDA driver library (libcuda.so) on this machine".to_string())?
            .map_err(|e| format!("no CUDA device: {e}"))?;
        let name = ctx.name().unwrap_or_else(|_| "?".to_string());
        Ok(Device { name, stream: ctx.default_stream() })
    }
}

/// A device image that both a case's timed call and its fetch use.
type Shared<T> = Rc<RefCell<Image<T, 1>>>;

fn device_image<T>(size: ImageSize, stream: &Arc<CudaStream>) -> Result<Shared<T>, ImageError>
where
    T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Clone + Default + 'static,
{
    Ok(Rc::new(RefCell::new(Image::zeros_cuda(size, stream)?)))
}

/// A call from one device image into another, synchronised; its fetch copies the output back.
type Call = fn(&Image<u8, 1>, &mut Image<u8, 1>, &Params) -> Result<(), ImageError>;

struct DeviceFrame {
    src: Rc<Image<u8, 1>>,
    stream: Arc<CudaStream>,
    params: Params,
}

impl DeviceFrame {
    fn sync(&self) -> impl Fn() -> Result<(), ImageError> + 'static {
        let stream = self.stream.clone();
        move || stream.synchronize().map_err(cuda_err)
    }

    fn image_case(&self, op: &'static str, call: &'static str, f: Call) -> Result<Case<'static>, ImageError> {
        let dst = device_image::<u8>(self.src.size(), &self.stream)?;
        let (src, sync, run_dst, p) = (self.src.clone(), self.sync(), dst.clone(), self.params);
        Ok(Case {
            op,
            call,
            note: None,
            run: Box::new(move || {
                f(&src, &mut run_dst.borrow_mut(), &p)?;
                sync()?;
                Ok(Output::OnDevice)
            }),
            fetch: Some(Box::new(move || Ok(Output::Image(dst.borrow().to_host_owned()?)))),
        })
    }
}

/// The cases of `ops` on `host`, a frame uploaded here once (the upload is not timed), in
/// cpu_peers.py's order.
pub fn cases(
    dev: &Device,
    host: &Image<u8, 1>,
    ops: &[String],
    p: Params,
) -> Result<Vec<Case<'static>>, ImageError> {
    let stream = dev.stream.clone();
    let size = host.size();
    let frame = DeviceFrame { src: Rc::new(host.to_cuda(&stream)?), stream: stream.clone(), params: p };
    let wants = |op: &str| ops.iter().any(|o| o == op);
    let mut out = Vec::new();
    if wants("histogram") {
        let src = frame.src.clone();
        out.push(Case {
            op: "histogram",
            call: "kornia_imgproc::histogram::compute_histogram(256 bins)",
            note: Some("returns the counts on the host: a copy and a synchronisation inside the call"),
            run: Box::new(move || {
                let mut hist = vec![0; 256];
                compute_histogram(&src, &mut hist, 256)?;
                Ok(Output::Histogram(hist))
            }),
            fetch: None,
        });
    }
    if wants("equalize") {
        out.push(frame.image_case("equalize", "kornia_imgproc::histogram::equalize_hist", |s, d, _| {
            equalize_hist(s, d)
        })?);
    }
    if wants("rotate") {
        // warp_affine takes f32 only, and kornia has no device u8 -> f32 cast: the frame is
        // converted on the host and uploaded once; the conversions are not timed.
        let src_f = host.scale_and_cast::<f32>(1)?.to_cuda(&stream)?;
        let dst_f = device_image::<f32>(size, &stream)?;
        let (m, sync, run_dst) = (rotation(size, p.angle), frame.sync(), dst_f.clone());
        out.push(Case {
            op: "rotate.nearest",
            call: "kornia_imgproc::warp::warp_affine(Nearest)",
            note: Some("f32 only: an f32 frame on the device; the u8<->f32 conversions are not timed"),
            run: Box::new(move || {
                warp_affine(&src_f, &mut run_dst.borrow_mut(), &m, InterpolationMode::Nearest)?;
                sync()?;
                Ok(Output::OnDevice)
            }),
            fetch: Some(Box::new(move || {
                Ok(Output::Image(dst_f.borrow().to_host_owned()?.scale_and_cast::<u8>(1.0)?))
            })),
        });
        out.push(frame.image_case(
            "rotate.bilinear",
            "kornia_imgproc::warp::warp_affine_u8",
            |s, d, p| warp_affine_u8(s, d, &rotation(s.size(), p.angle)),
        )?);
    }
    if wants("pad") {
        eprintln!("kornia-peer: kornia-imgproc's spatial_padding has no CUDA path: no GPU 'pad'");
    }
    if wants("edges") {
        out.push(frame.image_case("edges", "kornia_imgproc::canny::canny(L1)", |s, d, p| {
            canny(s, d, p.low, p.high, false)
        })?);
    }
    if wants("clahe") {
        out.push(frame.image_case(
            "clahe",
            "kornia_imgproc::clahe::clahe(clip 40, 8x8 tiles)",
            |s, d, _| clahe(s, d, CLAHE_CLIP, CLAHE_GRID),
        )?);
    }
    Ok(out)
}
