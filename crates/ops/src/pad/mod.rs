//! `pad`: place a frame inside a larger one, filling the new border with one value, or with the
//! frame's own pixels as one of OpenCV's border types ([`Border`]). Samples of every depth (8-,
//! 16-bit, float) are copied as they are.
//!
//! The default size is the square of side D = ceil(sqrt(w^2 + h^2)), the frame's diagonal, with the
//! frame at offset (floor((D - w) / 2), floor((D - h) / 2)): any rotation about the centre of the
//! result keeps the whole original in view. The output's geometry maps each pixel back to the
//! original image through that offset.

use std::mem::MaybeUninit;

use histopipe_frame::{Affine, Frame, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch};

use crate::{parallel, with_elements, Element, Fill, Gpu, Op, OpError};

mod border;
pub use border::Border;

/// Half the fewest output samples for the CPU's work to be split at all ([`parallel::parts`]):
/// padding costs about as much as writing its output once, and 725 x 725 samples took 16
/// microseconds on one core (two parts were 30% slower).
const MIN_SPLIT: usize = 1 << 20;
/// Fewest output samples in a part once split: 2560x1707's 3077 x 3077 makes 64 parts, four for
/// each of 16 threads.
const MIN_PART: usize = 1 << 17;
/// Outputs of this many bytes or more are always fresh pages from the kernel, already zero: glibc
/// maps allocations of 32 MiB and more on their own (its mmap threshold rises to 32 MiB at most,
/// and the tools set it there). Below, the heap reuses the last frame's memory, which calloc
/// would have to clear with a memset on one thread.
const FRESH_BYTES: usize = 32 << 20;

/// How large the padded frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PadSize {
    /// A square of side ceil(sqrt(w^2 + h^2)), the input centred.
    Diagonal,
    /// Exactly `width x height`, the input centred (offsets rounded down).
    To { width: usize, height: usize },
    /// Explicit borders on each side.
    Border { left: usize, top: usize, right: usize, bottom: usize },
}

/// `pad`'s parameters, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PadParams {
    pub size: PadSize,
    pub fill: Fill,
}

/// `pad` for one frame: the output size and where the input goes in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pad {
    pub width: usize,
    pub height: usize,
    pub left: usize,
    pub top: usize,
    /// The border's sample, of the frame's kind ([`Fill::for_samples`]), for a constant border.
    pub fill: Fill,
    /// What the border holds: the fill, or the frame's pixels ([`Pad::with_border`]).
    pub border: Border,
}

/// ceil(sqrt(n)) exactly, for any n up to 2^65.
fn ceil_sqrt(n: u128) -> u128 {
    let mut r = (n as f64).sqrt() as u128;
    while r * r > n {
        r -= 1;
    }
    while r * r < n {
        r += 1;
    }
    r
}

impl PadParams {
    /// The layout for `frame` (of any depth; one channel or many, each padded alike).
    pub fn for_frame_of(&self, frame: &Frame) -> Result<Pad, OpError> {
        let float = !frame.depth().is_integer();
        self.layout(frame.width, frame.height, self.fill.for_samples("fill", float, frame.maxval)?)
    }

    /// The layout for a `width x height` frame of integer samples up to `maxval`.
    pub fn for_frame(&self, width: usize, height: usize, maxval: u16) -> Result<Pad, OpError> {
        self.layout(width, height, self.fill.for_samples("fill", false, maxval)?)
    }

    fn layout(&self, width: usize, height: usize, fill: Fill) -> Result<Pad, OpError> {
        let too_big = || OpError::invalid("padded size overflows");
        let (w, h) = (width as u128, height as u128);
        let (ow, oh, left, top) = match self.size {
            PadSize::Diagonal => {
                let d = ceil_sqrt(w * w + h * h);
                (d, d, (d - w) / 2, (d - h) / 2)
            }
            PadSize::To { width: tw, height: th } => {
                let (tw, th) = (tw as u128, th as u128);
                if tw < w || th < h {
                    return Err(OpError::param_is(
                        "size",
                        format!("{tw}x{th}"),
                        format!("is smaller than the {width}x{height} frame (pad never crops)"),
                    ));
                }
                (tw, th, (tw - w) / 2, (th - h) / 2)
            }
            PadSize::Border { left, top, right, bottom } => (
                w + left as u128 + right as u128,
                h + top as u128 + bottom as u128,
                left as u128,
                top as u128,
            ),
        };
        if ow > u32::MAX as u128 || oh > u32::MAX as u128 {
            return Err(too_big());
        }
        let (width, height, left, top) = (ow as usize, oh as usize, left as usize, top as usize);
        Ok(Pad { width, height, left, top, fill, border: Border::Constant })
    }
}

impl Pad {
    fn output(&self, frame: &Frame, pixels: histopipe_frame::Pixels) -> Frame {
        let mut out = frame.derive(self.width, self.height, frame.maxval, pixels);
        let new_to_old = Affine::translation(-(self.left as f64), -(self.top as f64));
        out.geometry = Some(frame.geometry_or_identity().then(&new_to_old));
        out
    }

    /// The padded samples, split into bands of output rows over the cores (see [`MIN_PART`]).
    /// Each sample is written once: the fill, or the frame's sample. Only a fill of zero bytes (0,
    /// or the float +0.0) of an output of [`FRESH_BYTES`] or more starts from calloc's zero pages and writes the frame's rows
    /// alone (the border's pages stay untouched until they are read).
    fn cpu_samples<T: Element>(&self, w: usize, h: usize, input: &[T]) -> Vec<T> {
        let fill = T::from_fill(self.fill);
        let n = self.width * self.height;
        if n == 0 {
            return Vec::new();
        }
        let band = self.height.div_ceil(parallel::parts_split_from(n, MIN_SPLIT, MIN_PART)) * self.width;
        if self.border != Border::Constant {
            return self.cpu_copied_border(w, h, input, band);
        }
        // The frame's row of output row y, if y has one.
        let frame_row = |y: usize| {
            let y = y.checked_sub(self.top).filter(|&y| y < h && w > 0)?;
            Some(&input[y * w..][..w])
        };
        let columns = self.left..self.left + w;
        if self.fill.bits() == 0 && n * std::mem::size_of::<T>() >= FRESH_BYTES {
            let mut out = parallel::zeroed(n);
            parallel::for_each_part(&mut out, band, |first, part| {
                for (y, row) in (first / self.width..).zip(part.chunks_exact_mut(self.width)) {
                    if let Some(frame) = frame_row(y) {
                        row[columns.clone()].copy_from_slice(frame);
                    }
                }
            });
            return out;
        }
        let rows_of = |first: usize, part: &mut [MaybeUninit<T>]| {
            for (y, row) in (first / self.width..).zip(part.chunks_exact_mut(self.width)) {
                let Some(frame) = frame_row(y) else {
                    row.fill(MaybeUninit::new(fill));
                    continue;
                };
                row[..columns.start].fill(MaybeUninit::new(fill));
                row[columns.end..].fill(MaybeUninit::new(fill));
                let to = &mut row[columns.clone()];
                // SAFETY: `to` and `frame` are w samples each, and distinct (one is the output's).
                unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), to.as_mut_ptr().cast::<T>(), w) };
            }
        };
        // SAFETY: the parts are of whole rows, and every slot of a row is written: the fill on
        // either side of `columns`, and the frame's row (or the fill) in them.
        unsafe { parallel::output_in_parts(n, band, rows_of) }
    }

    fn gpu_samples<T: Element>(
        &self,
        gpu: &Gpu,
        w: usize,
        h: usize,
        input: &[T],
    ) -> Result<Samples<T>, OpError> {
        let src = gpu.upload::<T>("pad.in", input)?;
        let mut dst = gpu.buffer::<T>("pad.out", self.width * self.height)?;
        self.plan(gpu, w, h).queue(&src, &mut dst)?;
        let out = gpu.download_samples(&dst, self.width * self.height)?;
        Ok(out)
    }

    /// The device plan of this padding for `w x h` frames.
    pub fn plan<'g>(&self, gpu: &'g Gpu, w: usize, h: usize) -> PadPlan<'g> {
        PadPlan { gpu, pad: *self, w, h }
    }
}

/// The device plan of `pad`: one kernel, no scratch. The one GPU sequence that `Op::gpu` and the
/// benchmark run.
pub struct PadPlan<'g> {
    gpu: &'g Gpu,
    pad: Pad,
    /// The input frames' size.
    w: usize,
    h: usize,
}

impl PadPlan<'_> {
    /// Queues the padding of the `w x h` frame in `src` into `dst` (the padded size).
    pub fn queue<T: Element>(&mut self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), OpError> {
        let p = &self.pad;
        let n_out = p.width * p.height;
        let (w, h, ow, oh) = (self.w as u32, self.h as u32, p.width as u32, p.height as u32);
        // The fill as the sample's bits (an integer's value, a float's IEEE bits).
        let (left, top, fill) = (p.left as u32, p.top as u32, p.fill.bits());
        // Each thread writes 16 bytes of output.
        let chunks = n_out.div_ceil(16 / std::mem::size_of::<T>());
        let cfg = launch::cover(chunks, 256);
        if p.border != Border::Constant {
            let name = format!("pad_border_{}", T::KERNEL_SUFFIX);
            let mode = p.border.kernel_mode();
            // SAFETY: pad_border_*(in, w, h, out, ow, oh, left, top, mode) in pad.cu; `src` holds
            // the w x h frame (at least one pixel: [`Pad::with_border`]), `dst` the ow x oh one.
            unsafe {
                launch!(self.gpu, kernels::PAD, name, cfg; src, &w, &h, dst, &ow, &oh, &left, &top, &mode)
            }?;
            return Ok(());
        }
        let name = format!("pad_{}", T::KERNEL_SUFFIX);
        // SAFETY: pad_*(in, w, h, out, ow, oh, left, top, fill) in pad.cu; `src` holds the w x h
        // frame, `dst` the ow x oh one.
        unsafe {
            launch!(self.gpu, kernels::PAD, name, cfg; src, &w, &h, dst, &ow, &oh, &left, &top, &fill)
        }?;
        Ok(())
    }
}

impl Op for Pad {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.cpu_samples(frame.width, frame.height, v)));
        Ok(self.output(frame, pixels))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let pixels = with_elements!(&frame.pixels, v => Element::into_pixels(self.gpu_samples(gpu, frame.width, frame.height, v)?));
        Ok(self.output(frame, pixels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::Pixels;

    #[test]
    fn diagonal_is_the_exact_ceiling() {
        for (w, h, d) in [(3usize, 4usize, 5usize), (1, 1, 2), (1, 2, 3), (512, 512, 725), (4096, 4096, 5793)]
        {
            let p = PadParams { size: PadSize::Diagonal, fill: Fill::Int(0) }.for_frame(w, h, 255).unwrap();
            assert_eq!((p.width, p.height), (d, d), "{w}x{h}");
            assert!(d * d >= w * w + h * h && (d - 1) * (d - 1) < w * w + h * h);
            assert_eq!((p.left, p.top), ((d - w) / 2, (d - h) / 2));
        }
        let huge = u32::MAX as u128;
        let n = huge * huge * 2;
        let r = ceil_sqrt(n);
        assert!(r * r >= n && (r - 1) * (r - 1) < n);
    }

    #[test]
    fn cpu_places_the_frame_and_records_the_offset() {
        let f = Frame::new(3, 2, 255, Pixels::U8(vec![1, 2, 3, 4, 5, 6].into()));
        let p =
            PadParams { size: PadSize::Border { left: 1, top: 2, right: 0, bottom: 1 }, fill: Fill::Int(9) };
        let out = p.for_frame(3, 2, 255).unwrap().cpu(&f).unwrap();
        assert_eq!((out.width, out.height), (4, 5));
        #[rustfmt::skip]
        assert_eq!(out.pixels, Pixels::U8(vec![
            9, 9, 9, 9,
            9, 9, 9, 9,
            9, 1, 2, 3,
            9, 4, 5, 6,
            9, 9, 9, 9,
        ].into()));
        let g = out.geometry.unwrap();
        assert_eq!(g.to_original.apply(1.0, 2.0), (0.0, 0.0));
        assert_eq!((g.original_width, g.original_height), (3, 2));
    }

    #[test]
    fn every_split_pads_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(13);
        for (w, h) in parallel::testing::sizes(&mut rng) {
            for maxval in [255, 1000] {
                let f = parallel::testing::frame(&mut rng, w, h, maxval);
                for fill in [0, 7] {
                    let (left, top, right, bottom) =
                        (rng.usize(..5), rng.usize(..5), rng.usize(..5), rng.usize(..5));
                    let size = PadSize::Border { left, top, right, bottom };
                    for size in [size, PadSize::Diagonal] {
                        let p = PadParams { size, fill: Fill::Int(fill) }.for_frame(w, h, maxval).unwrap();
                        let naive: Vec<u16> = (0..p.width * p.height)
                            .map(|i| {
                                let (x, y) =
                                    ((i % p.width).wrapping_sub(p.left), (i / p.width).wrapping_sub(p.top));
                                if x < w && y < h {
                                    f.pixels.get(y * w + x)
                                } else {
                                    fill
                                }
                            })
                            .collect();
                        let out = p.cpu(&f).unwrap().pixels;
                        assert!((0..naive.len()).all(|i| out.get(i) == naive[i]), "{w}x{h} {size:?}");
                        parallel::testing::same_on_each_pool(
                            &format!("{w}x{h} {size:?} fill {fill}"),
                            || p.cpu(&f).unwrap(),
                        );
                    }
                }
            }
        }
    }

    /// An output of 32 MiB or more starts from calloc's zero pages with a zero fill: the same
    /// samples as any other, split or not.
    #[test]
    fn large_zero_fills_write_only_the_frame() {
        let (w, h, border) = (100, 60, 2100);
        let mut rng = fastrand::Rng::with_seed(29);
        let f = parallel::testing::frame(&mut rng, w, h, 1000);
        let size = PadSize::Border { left: border, top: border + 1, right: border + 3, bottom: border };
        for fill in [0, 7] {
            let p = PadParams { size, fill: Fill::Int(fill) }.for_frame(w, h, 1000).unwrap();
            assert!(p.width * p.height * 2 >= FRESH_BYTES);
            let out = p.cpu(&f).unwrap();
            let Pixels::U16(out) = &out.pixels else { panic!("16-bit in, 16-bit out") };
            for (y, row) in out.chunks_exact(p.width).enumerate() {
                let frame = y.checked_sub(p.top).filter(|&y| y < h);
                let (left, right) = match frame {
                    Some(_) => (&row[..p.left], &row[p.left + w..]),
                    None => (row, &row[..0]),
                };
                assert!(left.iter().chain(right).all(|&v| v == fill), "row {y} fill {fill}");
                if let (Some(fy), Pixels::U16(input)) = (frame, &f.pixels) {
                    assert_eq!(&row[p.left..p.left + w], &input[fy * w..][..w], "row {y}");
                }
            }
            parallel::testing::same_on_each_pool(&format!("fill {fill}"), || p.cpu(&f).unwrap());
        }
    }

    /// Float samples are copied bit for bit, and any float fills: NaN, infinities, -0.
    #[test]
    fn float_frames_are_copied() {
        let input = [1.5f32, f32::from_bits(0x7FC0_1234), -0.0, f32::INFINITY];
        let f = Frame::new(2, 2, 1, Pixels::F32(input.to_vec().into()));
        let size = PadSize::Border { left: 1, top: 0, right: 0, bottom: 1 };
        for fill in [Fill::Float(f32::NAN), Fill::Float(-0.0), Fill::Int(7)] {
            let out = PadParams { size, fill }.for_frame_of(&f).unwrap().cpu(&f).unwrap();
            let Pixels::F32(v) = &out.pixels else { panic!("float in, float out") };
            let b = fill.as_f32();
            let expected = [b, input[0], input[1], b, input[2], input[3], b, b, b];
            let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(v), bits(&expected), "{fill:?}");
        }
        let integer = Frame::new(1, 1, 255, Pixels::U8(vec![0].into()));
        let nan = PadParams { size, fill: Fill::Float(f32::NAN) };
        assert!(nan.for_frame_of(&integer).unwrap_err().to_string().contains("not a sample"));
    }

    #[test]
    fn bad_parameters() {
        let to = PadParams { size: PadSize::To { width: 2, height: 9 }, fill: Fill::Int(0) };
        assert!(to.for_frame(3, 2, 255).unwrap_err().to_string().contains("smaller"));
        let fill = PadParams { size: PadSize::Diagonal, fill: Fill::Int(300) };
        assert!(fill.for_frame(3, 2, 255).unwrap_err().to_string().contains("over the frame's maxval"));
    }
}
