//! The operations the benchmark times: one [`Entry`] per timed operation.
//!
//! An entry says which input it reads and builds a [`Case`] for one input: device buffers already
//! filled, and a closure that queues one run of the operation's kernels on `gpu.stream()` (through
//! the operation's device plan, the sequence its `Op::gpu` queues, so only kernels are timed: no
//! upload, no download, no allocation). The harness (`main.rs`) does the rest: input sets, the memory floor, timing,
//! JSON. Its CPU implementation, if timed, is a second function, which needs no GPU (so that
//! `histopipe-bench cpu` runs where there is none). Adding an operation is one or two functions
//! here and one line in [`all`]; `equalize` below is a typical one:
//!
//! ```ignore
//! fn equalize<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
//!     let n = input.width * input.height;
//!     let mut sets = Sets::new(gpu, input, n)?;                 // K inputs, K outputs of n bytes
//!     let mut plan = EqualizePlan::<u8>::new(gpu, 255, n)?;     // the op's scratch and kernels
//!     Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
//!         let (src, dst) = sets.pair(i);
//!         Ok(plan.queue(src, dst)?)
//!     }))
//! }
//! fn equalize_cpu(_: &Input) -> Result<CpuRun, BenchError> {
//!     cpu_run(move |frame| {
//!         black_box(Equalize.cpu(frame)?);
//!         Ok(())
//!     })
//! }
//! // in all():  Entry::frame("equalize", equalize).with_cpu(equalize_cpu),
//! ```
//!
//! [`Sets`] also makes outputs of other types ([`Sets::with_output`]), no outputs
//! ([`Sets::inputs_only`], for a histogram or a list of lines kept in one buffer) and copies of an
//! input made on the device ([`Sets::from_device`], the accumulator of `hough-lines`). Buffers that
//! an operation only passes between its own kernels are one per entry, as the tools' pool keeps
//! one per slot (the plans' own buffers). A closure may wait on the host (Canny's hysteresis does, as the tool does): the
//! waits are then part of its time, and its `queue_us` is about its median.

use std::hint::black_box;

use histopipe_frame::{Frame, Pixels};
use histopipe_gpu::cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use histopipe_gpu::Gpu;
use histopipe_ops::angles::Angles;
use histopipe_ops::bins::Bins;
use histopipe_ops::clahe::{Clahe, ClahePlan};
use histopipe_ops::colhist::{default_bins, ColHist, ColHistParams, ColHistSweep};
use histopipe_ops::deskew::{Deskew, DeskewParams, DeskewPlan};
use histopipe_ops::edges::Canny;
use histopipe_ops::equalize::{
    Equalize, EqualizePlan, F32Bins, FloatEqualize, FloatEqualizePlan, Remap, RemapPlan, TableRule,
};
use histopipe_ops::histogram::{self, DistributionPlan, Histogram};
use histopipe_ops::hough::{
    HoughLines, HoughLinesPlan, HoughParams, HoughSegments, HoughSpace, HoughVote, HoughVotePlan, Strategy,
};
use histopipe_ops::iradon::{Iradon, IradonParams};
use histopipe_ops::mask::Mask;
use histopipe_ops::pad::{Border, Pad, PadParams, PadSize};
use histopipe_ops::radon::{Radon, RadonParams};
use histopipe_ops::rotate::{Flip, Interpolation, Rotate, Turn};
use histopipe_ops::stretch::{self as stretch_op, cuts, Curve, Scale, Stretch, StretchTo};
use histopipe_ops::threshold::local::{Local, LocalPlan, LocalThreshold, Offset, StatsPlan};
use histopipe_ops::threshold::{FloatScan, FloatThresholdPlan, Method, Mode, Threshold, ThresholdPlan};
use histopipe_ops::{Fill, Op};

use crate::inputs::{self, Content, Input, InputKind};
use crate::BenchError;

/// Queues one run on the GPU; the argument counts runs (pick the input set with `i % sets`).
pub type GpuRun<'g> = Box<dyn FnMut(&Gpu, usize) -> Result<(), BenchError> + 'g>;
/// Makes the case of an entry for one input, its device buffers on `gpu`.
pub type Prepare = for<'g> fn(&'g Gpu, &Input) -> Result<Case<'g>, BenchError>;
/// One run of the CPU implementation on a frame.
pub type CpuRun = Box<dyn FnMut(&Frame) -> Result<(), BenchError>>;
/// Makes the CPU run of an entry for one input (on the host only: no GPU is needed).
pub type CpuPrepare = fn(&Input) -> Result<CpuRun, BenchError>;

/// A timed operation.
pub struct Entry {
    /// Its name in the results: `pad`, `rotate.nearest`, `equalize.histogram`, `hough-vote`...
    /// The report pairs it with the peers' results of the same name (see scripts/bench/report.py).
    pub name: &'static str,
    pub input: InputKind,
    pub prepare: Prepare,
    /// Its CPU implementation, if that is timed too.
    pub cpu: Option<CpuPrepare>,
}

impl Entry {
    pub const fn frame(name: &'static str, prepare: Prepare) -> Entry {
        Entry { name, input: InputKind::Frame, prepare, cpu: None }
    }

    /// An entry whose input is the frame's Canny edge map (the Hough entries).
    pub const fn edges(name: &'static str, prepare: Prepare) -> Entry {
        Entry { name, input: InputKind::Edges, prepare, cpu: None }
    }

    /// The entry with its CPU implementation timed too.
    pub const fn with_cpu(self, cpu: CpuPrepare) -> Entry {
        Entry { cpu: Some(cpu), ..self }
    }
}

/// Every timed operation, in report order. A name with a `.` is a part (or a variant) of the
/// operation before the `.`: `--only equalize` selects `equalize.histogram` too.
pub fn all() -> Vec<Entry> {
    vec![
        Entry::frame("pad", pad).with_cpu(pad_cpu),
        Entry::frame("pad.reflect101", pad_reflect101).with_cpu(pad_reflect101_cpu),
        Entry::frame("rotate.nearest", rotate_nearest).with_cpu(rotate_nearest_cpu),
        Entry::frame("rotate.bilinear", rotate_bilinear).with_cpu(rotate_bilinear_cpu),
        Entry::frame("rotate.flip", rotate_flip).with_cpu(rotate_flip_cpu),
        Entry::frame("colhist", colhist).with_cpu(colhist_cpu),
        Entry::frame("colhist.angles", colhist_angles).with_cpu(colhist_angles_cpu),
        Entry::frame("cdf", cdf).with_cpu(cdf_cpu),
        Entry::frame("radon", radon).with_cpu(radon_cpu),
        Entry::frame("radon.fine", radon_fine).with_cpu(radon_fine_cpu),
        Entry::frame("iradon", iradon).with_cpu(iradon_cpu),
        Entry::frame("equalize.histogram", equalize_histogram).with_cpu(equalize_histogram_cpu),
        Entry::frame("equalize.scan", equalize_scan).with_cpu(equalize_scan_cpu),
        Entry::frame("equalize.map", equalize_map).with_cpu(equalize_map_cpu),
        Entry::frame("equalize", equalize).with_cpu(equalize_cpu),
        Entry::frame("equalize.reference", equalize_reference).with_cpu(equalize_reference_cpu),
        Entry::frame("equalize.mask", equalize_mask).with_cpu(equalize_mask_cpu),
        Entry::frame("equalize.float", equalize_float).with_cpu(equalize_float_cpu),
        Entry::frame("stretch", stretch).with_cpu(stretch_cpu),
        Entry::frame("stretch.float", stretch_float).with_cpu(stretch_float_cpu),
        Entry::frame("stretch.to_float", stretch_to_float).with_cpu(stretch_to_float_cpu),
        Entry::frame("clahe", clahe).with_cpu(clahe_cpu),
        Entry::frame("threshold", threshold).with_cpu(threshold_cpu),
        Entry::frame("threshold.multiotsu", threshold_multiotsu).with_cpu(threshold_multiotsu_cpu),
        Entry::frame("threshold.mean", threshold_mean).with_cpu(threshold_mean_cpu),
        Entry::frame("threshold.gaussian", threshold_gaussian).with_cpu(threshold_gaussian_cpu),
        Entry::frame("threshold.sauvola", threshold_sauvola).with_cpu(threshold_sauvola_cpu),
        Entry::frame("threshold.float", threshold_float).with_cpu(threshold_float_cpu),
        Entry::frame("deskew", deskew).with_cpu(deskew_cpu),
        Entry::frame("edges.gradient", edges_gradient),
        Entry::frame("edges", edges).with_cpu(edges_cpu),
        Entry::edges("hough-vote.global", hough_vote_global),
        Entry::edges("hough-vote.shared", hough_vote_shared),
        Entry::edges("hough-vote", hough_vote).with_cpu(hough_vote_cpu),
        Entry::edges("hough-lines", hough_lines).with_cpu(hough_lines_cpu),
        Entry::edges("hough", hough_vote_and_lines).with_cpu(hough_vote_and_lines_cpu),
        Entry::edges("hough-segments", hough_segments).with_cpu(hough_segments_cpu),
    ]
}

/// One operation on one input, ready to time.
pub struct Case<'g> {
    /// Bytes of the memory-floor copy: the harness times a device-to-device copy of this many
    /// bytes in the same run. By the issue's definition, the frame's bytes, or the output's when
    /// the operation writes more than it reads.
    pub copy_bytes: usize,
    /// The fewest bytes the operation must move through device memory (each input read once,
    /// each output written once), for its achieved bandwidth.
    pub traffic_bytes: usize,
    /// Input sets the runs rotate among (see [`Sets`]).
    pub sets: usize,
    pub gpu: GpuRun<'g>,
}

impl<'g> Case<'g> {
    pub fn new(
        copy_bytes: usize,
        traffic_bytes: usize,
        sets: usize,
        gpu: impl FnMut(&Gpu, usize) -> Result<(), BenchError> + 'g,
    ) -> Case<'g> {
        Case { copy_bytes, traffic_bytes, sets, gpu: Box::new(gpu) }
    }
}

/// A CPU run, boxed.
fn cpu_run(run: impl FnMut(&Frame) -> Result<(), BenchError> + 'static) -> Result<CpuRun, BenchError> {
    Ok(Box::new(run))
}

/// Together, the input sets should overflow the L2 cache several times over (50 MB on an H100 or
/// H200), so that each run reads its input from device memory as a frame of a stream would.
const SETS_BYTES: usize = 256 << 20;
const MAX_SETS: usize = 256;

/// How many (input, output) sets of `bytes_per_set` bytes fill [`SETS_BYTES`].
pub fn set_count(bytes_per_set: usize) -> usize {
    SETS_BYTES.div_ceil(bytes_per_set.max(1)).clamp(1, MAX_SETS)
}

/// K copies of the input on the device, each with its own output buffer, K from [`set_count`].
/// Inputs of `I` (the 8-bit frame, or a device-made input such as an accumulator), outputs of `O`.
pub struct Sets<I = u8, O = u8> {
    inputs: Vec<CudaSlice<I>>,
    outputs: Vec<CudaSlice<O>>,
}

impl Sets {
    /// Uploads `input` once and copies it on the device into the other sets; outputs of
    /// `out_len` bytes, zeroed.
    pub fn new(gpu: &Gpu, input: &Input, out_len: usize) -> Result<Sets, BenchError> {
        Sets::with_output(gpu, input, out_len)
    }

    /// The input's copies only, for operations whose outputs are too small to matter (a
    /// histogram, a list of lines): they keep theirs in one buffer of their own; [`Sets::pair`]
    /// must not be called.
    pub fn inputs_only(gpu: &Gpu, input: &Input) -> Result<Sets, BenchError> {
        Sets::with_output(gpu, input, 0)
    }
}

impl<O: DeviceRepr + ValidAsZeroBits> Sets<u8, O> {
    /// As [`Sets::new`], with outputs of `out_len` elements of `O` (none when 0).
    pub fn with_output(gpu: &Gpu, input: &Input, out_len: usize) -> Result<Sets<u8, O>, BenchError> {
        let first = gpu.stream().clone_htod(&input.pixels)?;
        Sets::from_device(gpu, first, out_len)
    }
}

impl<I: DeviceRepr, O: DeviceRepr + ValidAsZeroBits> Sets<I, O> {
    /// `first` and its copies on the device, each with an output of `out_len` elements of `O`,
    /// zeroed (no outputs when 0).
    pub fn from_device(gpu: &Gpu, first: CudaSlice<I>, out_len: usize) -> Result<Sets<I, O>, BenchError> {
        let stream = gpu.stream();
        let per_set = first.len() * std::mem::size_of::<I>() + out_len * std::mem::size_of::<O>();
        let k = set_count(per_set);
        let mut inputs = Vec::with_capacity(k);
        let mut outputs = Vec::with_capacity(if out_len > 0 { k } else { 0 });
        for _ in 1..k {
            // SAFETY: uninitialised device memory, written whole by the copy below.
            let mut copy = unsafe { stream.alloc::<I>(first.len()) }?;
            stream.memcpy_dtod(&first, &mut copy)?;
            inputs.push(copy);
        }
        inputs.push(first);
        if out_len > 0 {
            for _ in 0..k {
                outputs.push(stream.alloc_zeros::<O>(out_len)?);
            }
        }
        stream.synchronize()?;
        Ok(Sets { inputs, outputs })
    }

    pub fn count(&self) -> usize {
        self.inputs.len()
    }

    /// The input of run `i`.
    pub fn input(&self, i: usize) -> &CudaSlice<I> {
        &self.inputs[i % self.inputs.len()]
    }

    /// The input and output of run `i`.
    pub fn pair(&mut self, i: usize) -> (&CudaSlice<I>, &mut CudaSlice<O>) {
        let k = i % self.inputs.len();
        (&self.inputs[k], &mut self.outputs[k])
    }
}

/// The host frame of an input, for the CPU implementations.
pub fn host_frame(input: &Input) -> Frame {
    Frame::new(input.width, input.height, 255, Pixels::U8(input.pixels.clone().into()))
}

/// `pad` to the frame's diagonal (the tool's default), fill 0. Memory floor: a copy of the
/// output's bytes (pad writes more than it reads).
fn pad<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    pad_with(gpu, input, Border::Constant)
}

/// `pad --mode reflect101` to the frame's diagonal: the border of the frame's own pixels
/// (OpenCV's `BORDER_REFLECT_101`, its default), each gathered through the border's index.
fn pad_reflect101<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    pad_with(gpu, input, Border::Reflect101)
}

/// `pad` to the frame's diagonal with the border `border`, fill 0.
fn pad_op(input: &Input, border: Border) -> Result<Pad, BenchError> {
    let (w, h) = (input.width, input.height);
    let op = PadParams { size: PadSize::Diagonal, fill: Fill::Int(0) }.for_frame(w, h, 255)?;
    Ok(op.with_border(border, w, h)?)
}

fn pad_with<'g>(gpu: &'g Gpu, input: &Input, border: Border) -> Result<Case<'g>, BenchError> {
    let (w, h) = (input.width, input.height);
    let op = pad_op(input, border)?;
    let out_len = op.width * op.height;
    let mut sets = Sets::new(gpu, input, out_len)?;
    let mut plan = op.plan(gpu, w, h);
    Ok(Case::new(out_len, w * h + out_len, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn pad_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    pad_cpu_with(input, Border::Constant)
}

fn pad_reflect101_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    pad_cpu_with(input, Border::Reflect101)
}

fn pad_cpu_with(input: &Input, border: Border) -> Result<CpuRun, BenchError> {
    let op = pad_op(input, border)?;
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `radon` with scikit-image's default angles (0:180:1, 180 of them), padded to the diagonal
/// (`circle=False`). GPU: the border kernel and the one launch of every angle, as `RadonPlan`
/// queues them. Memory floor: the frame read once and the sinogram written once (the work is far
/// above its bytes: about 180 N^2 / 2 taps).
fn radon_op(input: &Input) -> Result<Radon, BenchError> {
    Ok(RadonParams::default().for_size(input.width, input.height)?)
}

/// `radon --angles 0:180:0.1`: 1800 angles (issue 28 times it at 1024 x 1024).
fn radon_fine_op(input: &Input) -> Result<Radon, BenchError> {
    let angles = Angles::range(0.0, 180.0, 0.1).map_err(BenchError)?;
    Ok(RadonParams { angles, circle: false }.for_size(input.width, input.height)?)
}

fn radon<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    radon_case(gpu, input, radon_op(input)?)
}

fn radon_fine<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    radon_case(gpu, input, radon_fine_op(input)?)
}

fn radon_fine_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let op = radon_fine_op(input)?;
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

fn radon_case<'g>(gpu: &'g Gpu, input: &Input, op: Radon) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let (angles, side) = op.out_size();
    let out_len = angles * side;
    let mut sets = Sets::<u8, f32>::with_output(gpu, input, out_len)?;
    let mut plan = op.plan::<u8>(gpu)?;
    Ok(Case::new(n.max(4 * out_len), n + 4 * out_len, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn radon_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let op = radon_op(input)?;
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `iradon` of the frame's sinogram (`radon` with scikit-image's default angles, 0:180:1, made
/// once on the host): scikit-image's ramp filter and default size, floor(N / sqrt 2) for the
/// N positions (512 x 512 from a 512 x 512 frame's 725 x 180 sinogram). GPU: the one launch of
/// the back-projection, as `IradonPlan` queues it, from the filtered sinogram uploaded once (the
/// filter is the host's, for either backend: its time is in the CPU run and the whole-tool
/// benchmark). CPU: the whole op, filter and back-projection. Memory floor: the filtered
/// sinogram read once and the output written once (the work is 180 reads a pixel).
fn iradon_sinogram(input: &Input) -> Result<(Iradon, Frame), BenchError> {
    let frame = Frame::new(input.width, input.height, 255, Pixels::U8(input.pixels.clone().into()));
    let sinogram = RadonParams::default().for_size(input.width, input.height)?.cpu(&frame)?;
    let op = IradonParams::default().for_size(sinogram.height, sinogram.width)?;
    Ok((op, sinogram))
}

fn iradon<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let (op, sinogram) = iradon_sinogram(input)?;
    let Pixels::F32(samples) = &sinogram.pixels else { unreachable!("radon makes float frames") };
    let filtered = op.filtered(&samples.iter().map(|&s| s as f64).collect::<Vec<f64>>());
    let (w, h) = op.out_size();
    let src = gpu.upload::<f64>("bench.iradon.filtered", &filtered)?;
    let mut dst = gpu.buffer::<f32>("bench.iradon.out", w * h)?;
    let mut plan = op.plan(gpu)?;
    let bytes = 8 * filtered.len() + 4 * w * h;
    Ok(Case::new(4 * w * h, bytes, 1, move |_, _| Ok(plan.queue(&src, &mut dst)?)))
}

fn iradon_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let (op, sinogram) = iradon_sinogram(input)?;
    cpu_run(move |_| {
        black_box(op.cpu(&sinogram)?);
        Ok(())
    })
}

/// The benchmark's parameters, shared with the peers (scripts/bench/run sets theirs to the same).
const ROTATE_DEGREES: f64 = 30.0;
const CANNY: Canny = Canny { low: 50.0, high: 150.0, l2: false, blur: None };
const HOUGH_THRESHOLD: u32 = 200;

/// `rotate 30` (`--bilinear` or not): the frame turned by 30 degrees about its centre, in place of
/// itself, fill 0. Not a quarter turn, so the general (affine) kernel. One op for the GPU case and
/// the CPU run.
fn rotate_op(input: &Input, interpolation: Interpolation) -> Result<Rotate, BenchError> {
    Ok(Rotate::in_place(
        Turn::degrees(ROTATE_DEGREES)?,
        input.width,
        input.height,
        interpolation,
        Fill::Int(0),
        255,
    ))
}

fn rotate<'g>(gpu: &'g Gpu, input: &Input, interpolation: Interpolation) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut plan = rotate_op(input, interpolation)?.plan(gpu);
    let mut sets = Sets::new(gpu, input, n)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn rotate_cpu(input: &Input, interpolation: Interpolation) -> Result<CpuRun, BenchError> {
    let op = rotate_op(input, interpolation)?;
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `rotate 0 --flip h`: the frame mirrored left to right (cv2.flip(a, 1)), the flip kernel
/// alone. Memory floor: the frame read and written once.
fn rotate_flip<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let (w, h) = (input.width, input.height);
    let mut sets = Sets::new(gpu, input, w * h)?;
    Ok(Case::new(w * h, 2 * w * h, sets.count(), move |gpu, i| {
        let (src, dst) = sets.pair(i);
        Ok(Flip::Horizontal.queue(gpu, w, h, src, dst)?)
    }))
}

fn rotate_flip_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let turn = Rotate::in_place(
        Turn::Quarter(0),
        input.width,
        input.height,
        Interpolation::Nearest,
        Fill::Int(0),
        255,
    );
    let op = turn.flipped(Some(Flip::Horizontal));
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

fn rotate_nearest<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    rotate(gpu, input, Interpolation::Nearest)
}

fn rotate_bilinear<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    rotate(gpu, input, Interpolation::Bilinear)
}

fn rotate_nearest_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    rotate_cpu(input, Interpolation::Nearest)
}

fn rotate_bilinear_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    rotate_cpu(input, Interpolation::Bilinear)
}

/// `colhist`: 256 bins (the 8-bit default), columns, every pixel counted (a frame without
/// geometry). Output: the 256 x width u32 counts, one matrix per set. Memory floor: a copy of the
/// frame or of the counts, whichever is larger.
fn colhist<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let (w, h) = (input.width, input.height);
    let n = w * h;
    let op = colhist_op();
    let out_len = op.bins as usize * w;
    let out_bytes = 4 * out_len;
    let mut sets = Sets::<u8, u32>::with_output(gpu, input, out_len)?;
    let mut plan = op.plan(gpu, w, h)?;
    Ok(Case::new(n.max(out_bytes), n + out_bytes, sets.count(), move |_, i| {
        let (src, counts) = sets.pair(i);
        Ok(plan.queue(src, None, counts)?)
    }))
}

/// `colhist`'s benchmark parameters.
fn colhist_op() -> ColHist {
    ColHist { bins: default_bins(255), rows: false, maxval: 255, mask: None }
}

fn colhist_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let op = colhist_op();
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `colhist --angles 0:180:1`'s op on an 8-bit frame without geometry: 180 turns (nearest, the
/// frame's size, fill 0), each counted as `colhist` counts the turned frame (256 bins, columns,
/// the original's pixels only).
fn colhist_sweep(frame: &Frame) -> Result<ColHistSweep, BenchError> {
    let turns = Angles::default()
        .iter()
        .map(|a| {
            let turn = Turn::degrees(a)?;
            Ok(Rotate::in_place(turn, frame.width, frame.height, Interpolation::Nearest, Fill::Int(0), 255))
        })
        .collect::<Result<Vec<_>, BenchError>>()?;
    Ok(ColHistSweep { turns, params: ColHistParams::default() })
}

/// `colhist.angles`: the sweep's plan (per angle, the turn into a scratch frame, its count, the
/// copy of its counts into the output), on one input set: the 180 x 256 x width counters of the
/// output (707 MB at 3840 columns) leave no room for more. Memory floor: a copy of the output,
/// which the sweep writes once.
fn colhist_angles<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let frame = Frame::new(input.width, input.height, 255, Pixels::U8(input.pixels.clone().into()));
    let sweep = colhist_sweep(&frame)?;
    let out_len = sweep.len(&frame)?.unwrap_or(usize::MAX);
    let src = gpu.upload::<u8>("bench.colhist.angles.in", &input.pixels)?;
    let mut out = gpu.buffer::<u32>("bench.colhist.angles.out", out_len.max(1))?;
    let mut plan = sweep.plan::<u8>(gpu, &frame)?;
    let out_bytes = 4 * out_len;
    Ok(Case::new(out_bytes, input.pixels.len() + out_bytes, 1, move |_, _| Ok(plan.queue(&src, &mut out)?)))
}

fn colhist_angles_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let frame = Frame::new(input.width, input.height, 255, Pixels::U8(input.pixels.clone().into()));
    let sweep = colhist_sweep(&frame)?;
    cpu_run(move |frame| {
        black_box(sweep.cpu(frame)?);
        Ok(())
    })
}

/// The 8-bit frames' bins: one per level, 256.
fn levels() -> Result<Bins, BenchError> {
    Ok(Bins::new(None, 255)?)
}

/// `cdf`: the 256-bin histogram and its inclusive scan (with cdf_min), as `Histogram::gpu`
/// queues them (its downloads aside).
fn cdf<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let bins = levels()?;
    let sets = Sets::inputs_only(gpu, input)?;
    let mut plan = DistributionPlan::new(gpu, bins)?;
    let out_bytes = 2 * 8 * bins.count() + 8;
    Ok(Case::new(n, n + out_bytes, sets.count(), move |_, i| Ok(plan.queue(sets.input(i), n)?)))
}

fn cdf_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(Histogram { bins: None }.cpu(frame)?);
        Ok(())
    })
}

/// The 8-bit samples of a host frame.
fn samples(frame: &Frame) -> Result<&[u8], BenchError> {
    match &frame.pixels {
        Pixels::U8(v) => Ok(v),
        _ => Err(BenchError("the benchmark's frames are 8-bit".into())),
    }
}

/// `equalize`'s first step, alone: the 256-bin histogram (zeroing included), the work CUB's
/// HistogramEven does.
fn equalize_histogram<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let sets = Sets::inputs_only(gpu, input)?;
    let mut plan = EqualizePlan::<u8>::new(gpu, 255, n)?;
    Ok(Case::new(n, n + 8 * 256, sets.count(), move |_, i| Ok(plan.queue_counts(sets.input(i))?)))
}

fn equalize_histogram_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let bins = levels()?;
    cpu_run(move |frame| {
        black_box(histogram::count(samples(frame)?, bins));
        Ok(())
    })
}

/// `equalize`'s middle steps, alone: the scan of the frame's histogram (computed once,
/// beforehand) and the look-up table from it; two one-block kernels, latency more than
/// bandwidth. No input sets (the histogram is 2 KiB); the memory floor is still the frame's copy.
/// CPU: the same two steps of `Equalize::cpu` on the frame's counts.
fn equalize_scan<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let levels = 256;
    let stream = gpu.stream();
    let src = stream.clone_htod(&input.pixels)?;
    let mut plan = EqualizePlan::<u8>::new(gpu, 255, n)?;
    plan.queue_counts(&src)?;
    stream.synchronize()?;
    drop(src);
    let traffic = 8 * levels + 8 * levels + 8 + levels;
    Ok(Case::new(n, traffic, 1, move |_, _| Ok(plan.queue_scan_and_table()?)))
}

fn equalize_scan_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let bins = levels()?;
    let counts = histogram::count(&input.pixels, bins);
    cpu_run(move |_frame| {
        let dist = histogram::Distribution::from_counts(bins, counts.clone());
        black_box(histopipe_ops::equalize::table::<u8>(&dist.cumulative, 255));
        Ok(())
    })
}

/// `equalize`'s last step, alone: each sample through the frame's look-up table (computed once,
/// beforehand, by the same kernels), the work NPP's LUTPalette does. CPU: the same mapping as
/// `Equalize::cpu` (`lut[v]` for each sample).
fn equalize_map<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = EqualizePlan::<u8>::new(gpu, 255, n)?;
    plan.queue_counts(sets.input(0))?;
    plan.queue_scan_and_table()?;
    gpu.synchronize()?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue_map(src, dst)?)
    }))
}

/// `equalize --reference`'s reference in the benchmark: the uniform random frame of 640x651
/// (`random-640x651.u8` of the inputs; matching to it is close to an equalization). Its counts,
/// one per level; the peers (scripts/bench/skimage_peers.py) read the same frame.
fn reference_counts() -> Vec<u64> {
    let (w, h) = REFERENCE_SIZE;
    let mut counts = vec![0u64; 256];
    for v in inputs::generate(Content::Random, &(1, 1, vec![0]), w, h) {
        counts[v as usize] += 1;
    }
    counts
}

/// The reference's size (see [`reference_counts`]).
pub const REFERENCE_SIZE: (usize, usize) = (640, 651);

/// `equalize --mask`'s mask in the benchmark: the disc inscribed in the frame, centred (a
/// microscope's field of view), 1 inside: (2x + 1 - w)^2 + (2y + 1 - h)^2 <= min(w, h)^2. The
/// peers (scripts/bench/cpu_peers.py) make the same.
pub fn disc_mask(width: usize, height: usize) -> Vec<u8> {
    let d = width.min(height) as i64;
    let (w, h) = (width as i64, height as i64);
    let mut mask = Vec::with_capacity(width * height);
    for y in 0..h {
        let dy = (2 * y + 1 - h).pow(2);
        mask.extend((0..w).map(|x| u8::from((2 * x + 1 - w).pow(2) + dy <= d * d)));
    }
    mask
}

/// `equalize --reference` (histogram matching) as `Remap::gpu` runs it (`RemapPlan`): the
/// frame's histogram, its download (a wait on the host, as the tool's), the table from the two
/// histograms on the host, its upload and the map. Memory floor: a copy of the frame (the frame
/// read and the output written once).
fn equalize_reference<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    // Leaked (2 KiB a case): the plan borrows the counts for as long as the case lives.
    let reference: &'static [u64] = Box::leak(reference_counts().into_boxed_slice());
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = RemapPlan::<u8>::new(gpu, Remap::new(TableRule::Match(reference)), 255, n)?;
    Ok(Case::new(n, 3 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, None, dst)?)
    }))
}

fn equalize_reference_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let reference = reference_counts();
    cpu_run(move |frame| {
        black_box(Remap::new(TableRule::Match(&reference)).cpu(frame)?);
        Ok(())
    })
}

/// `equalize --mask` (the histogram of the pixels in [`disc_mask`], equalizeHist's table from it,
/// every pixel mapped) as `Remap::gpu` runs it (`RemapPlan`, the mask on the device already).
/// Memory floor: a copy of the bytes the operation must move, the frame and the mask read and the
/// output written (a copy of 1.5 frames reads and writes as many).
fn equalize_mask<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let host_mask = disc_mask(input.width, input.height);
    let mask = gpu.stream().clone_htod(&host_mask)?;
    let mut sets = Sets::new(gpu, input, n)?;
    let remap = Remap { rule: TableRule::Equalize, mask: None, keep: None };
    let mut plan = RemapPlan::<u8>::new(gpu, remap, 255, n)?;
    Ok(Case::new(3 * n / 2, 4 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, Some(&mask), dst)?)
    }))
}

fn equalize_mask_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let mask = disc_mask(input.width, input.height);
    cpu_run(move |frame| {
        let mask = Some(Mask::of_frame(&mask, frame)?);
        black_box(Remap { rule: TableRule::Equalize, mask, keep: None }.cpu(frame)?);
        Ok(())
    })
}

/// `threshold --method multiotsu:3` (scikit-image's `threshold_multiotsu(image, classes=3)`, then
/// the labels as `np.digitize`), as `Threshold::gpu` runs it: the histogram, its download, the
/// exhaustive search on the host, the table's upload and the map. Memory floor: a copy of the
/// frame.
fn threshold_multiotsu<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    threshold_case(gpu, input, Method::MultiOtsu(3))
}

fn threshold_multiotsu_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let op = Threshold { method: Method::MultiOtsu(3), mode: Mode::Binary, mask: None };
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `threshold` with Otsu's method, as `Threshold::gpu` runs it: the histogram, its download (a
/// wait on the host, as the tool's), the choice and the table on the host, the table's upload and
/// the map.
fn threshold<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    threshold_case(gpu, input, Method::Otsu)
}

/// `threshold` by `method` on the GPU (see [`threshold`]).
fn threshold_case<'g>(gpu: &'g Gpu, input: &Input, method: Method) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let op = Threshold { method, mode: Mode::Binary, mask: None };
    let mut plan = ThresholdPlan::<u8>::new(gpu, op, 255, n)?;
    Ok(Case::new(n, 3 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        plan.queue(src, dst)?;
        Ok(())
    }))
}

fn threshold_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let op = Threshold { method: Method::Otsu, mode: Mode::Binary, mask: None };
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `threshold --method mean:11,2` (OpenCV's `adaptiveThreshold(img, 255, ADAPTIVE_THRESH_MEAN_C,
/// THRESH_BINARY, 11, 2)`, the block and offset of OpenCV's tutorial), as `LocalThreshold::gpu`
/// runs it: the row sums, then the column sums, the mean and the comparison. Memory floor: the
/// frame read and the output written (the row sums between are the method's own traffic).
fn threshold_mean<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    local_case(gpu, input, Local::Mean { block: 11, c: Offset { millionths: 2_000_000 } })
}

fn threshold_mean_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    local_cpu(Local::Mean { block: 11, c: Offset { millionths: 2_000_000 } })
}

/// `threshold --method gaussian:11,2` (`ADAPTIVE_THRESH_GAUSSIAN_C`), as [`threshold_mean`]: the
/// float row and column passes of the Gaussian.
fn threshold_gaussian<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    local_case(gpu, input, Local::Gaussian { block: 11, c: Offset { millionths: 2_000_000 } })
}

fn threshold_gaussian_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    local_cpu(Local::Gaussian { block: 11, c: Offset { millionths: 2_000_000 } })
}

/// `threshold --method sauvola` (scikit-image's `threshold_sauvola(image)`: window 15, k 0.2, r
/// 127.5, then `image > t`), as `LocalThreshold::gpu` runs it: the f64 integral images of the
/// reflected frame and its squares (down the columns, then along the rows), then each window's
/// statistics and the comparison. Memory floor: the frame read and the output written.
fn threshold_sauvola<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let op = LocalThreshold { method: SAUVOLA, mode: Mode::Binary };
    let mut plan = StatsPlan::<u8>::new(gpu, &op, input.width, input.height)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        plan.queue(src, dst)?;
        Ok(())
    }))
}

fn threshold_sauvola_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    local_cpu(SAUVOLA)
}

/// scikit-image's defaults.
const SAUVOLA: Local = Local::Sauvola { window: 15, k: 0.2, r: None };

/// A local method on the GPU (see [`threshold_mean`]).
fn local_case<'g>(gpu: &'g Gpu, input: &Input, method: Local) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let op = LocalThreshold { method, mode: Mode::Binary };
    let mut plan = LocalPlan::new(gpu, &op, input.width, input.height, 255)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        plan.queue(src, dst)?;
        Ok(())
    }))
}

fn local_cpu(method: Local) -> Result<CpuRun, BenchError> {
    let op = LocalThreshold { method, mode: Mode::Binary };
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// `deskew` with its defaults (±15 degrees to 0.02), as `Deskew::gpu` runs it: the histogram and
/// its download, each level's profiles and scores and their download (waits on the host, as the
/// tool's), then the turn upright.
fn deskew<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = DeskewPlan::<u8>::new(gpu, DeskewParams::default(), input.width, input.height, 255)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        plan.queue(src, dst, None)?;
        Ok(())
    }))
}

fn deskew_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(Deskew::default().cpu(frame)?);
        Ok(())
    })
}

/// `equalize.map` on the CPU: the frame's look-up table (the same as the GPU's) made once, then
/// the mapping of `Equalize::cpu` alone.
fn equalize_map_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let bins = levels()?;
    let dist = histogram::Distribution::from_counts(bins, histogram::count(&input.pixels, bins));
    let lut = histopipe_ops::equalize::table::<u8>(&dist.cumulative, 255);
    cpu_run(move |frame| {
        black_box(histopipe_ops::equalize::map_bytes(samples(frame)?, &lut));
        Ok(())
    })
}

/// `equalize`: histogram, scan, look-up table, mapping: all of OpenCV's equalizeHist, as
/// `Equalize::gpu` queues it (its upload and download aside). Memory floor: a copy of the frame.
fn equalize<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = EqualizePlan::<u8>::new(gpu, 255, n)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn equalize_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(Equalize.cpu(frame)?);
        Ok(())
    })
}

/// `stretch`'s benchmark map: the frame's own `--saturate 0.35` cuts (the tool's default), to
/// `maxout`, on `scale`.
fn stretch_curve(frame: &Frame, scale: Scale, maxout: u16) -> Result<Curve, BenchError> {
    let (lo, hi) = cuts::of_frame(frame, &[0], 0.35, None)?.unwrap_or((0.0, 0.0));
    Ok(Curve { lo, hi, scale, maxout })
}

/// `stretch` of an 8-bit frame to 8 bits, linear: the look-up of every sample in the table made
/// on the host (`LutPlan`, as `Stretch::gpu` queues it); the cuts and the table, made on the host
/// for both backends, are not timed here (the CPU run does them). Memory floor: a copy of the
/// frame.
fn stretch<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let curve = stretch_curve(&host_frame(input), Scale::Linear, 255)?;
    let table: Vec<u8> = curve.table(255).into_iter().map(|l| l as u8).collect();
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = stretch_op::LutPlan::new(gpu, &table, n)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

/// The whole of `stretch` on the CPU: the cuts (a histogram), the table, the map.
fn stretch_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(Stretch { curve: stretch_curve(frame, Scale::Linear, 255)? }.cpu(frame)?);
        Ok(())
    })
}

/// The frame's samples as a float frame (the values 0..255).
fn float_frame(input: &Input) -> Frame {
    let floats: Vec<f32> = input.pixels.iter().map(|&v| v as f32).collect();
    Frame::new(input.width, input.height, 1, Pixels::F32(floats.into()))
}

/// `threshold` of the frame as float samples (0..255): scikit-image's `threshold_otsu` as
/// `Threshold::gpu` runs a float frame (`FloatThresholdPlan`): `float_counts`, the counts'
/// download (a wait on the host, as the tool's), the choice on the host, `float_map`. The scan
/// (first sample, extremes, bins), on the host, is not timed (the CPU run does it). Memory floor:
/// the float frame read and the 8-bit output written.
fn threshold_float<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let frame = float_frame(input);
    let Pixels::F32(floats) = &frame.pixels else { unreachable!("a float frame") };
    let scan = FloatScan::new(Method::Otsu, floats, None)?
        .ok_or_else(|| BenchError("the frame has no finite sample".into()))?;
    let first = gpu.stream().clone_htod(&floats[..])?;
    let mut sets = Sets::<f32, u8>::from_device(gpu, first, n)?;
    let mut plan = FloatThresholdPlan::new(gpu, Method::Otsu, Mode::Binary, n)?;
    Ok(Case::new(4 * n, 5 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        plan.queue(&scan, src, None, dst)?;
        Ok(())
    }))
}

fn threshold_float_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let frame = float_frame(input);
    let op = Threshold { method: Method::Otsu, mode: Mode::Binary, mask: None };
    cpu_run(move |_| {
        black_box(op.cpu(&frame)?);
        Ok(())
    })
}

/// `equalize` of the frame as float samples (0..255): scikit-image's `equalize_hist` as
/// `FloatEqualize::gpu` runs it (`FloatEqualizePlan`): `float_counts`, the counts' download (a
/// wait on the host, as the tool's), the interpolation's table made on the host and uploaded,
/// `float_interp`. The bins, from the samples' extremes on the host, are not timed (the CPU run
/// finds them). Memory floor: a copy of the float frame.
fn equalize_float<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let frame = float_frame(input);
    let Pixels::F32(floats) = &frame.pixels else { unreachable!("a float frame") };
    let extremes = floats.iter().fold(None, |m: Option<(f32, f32)>, &v| match m {
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        None => Some((v, v)),
    });
    let bins = F32Bins::new(extremes)?;
    let first = gpu.stream().clone_htod(&floats[..])?;
    let mut sets = Sets::<f32, f32>::from_device(gpu, first, n)?;
    let mut plan = FloatEqualizePlan::new(gpu, n)?;
    Ok(Case::new(4 * n, 8 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(&bins, src, None, dst)?)
    }))
}

fn equalize_float_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let frame = float_frame(input);
    cpu_run(move |_| {
        black_box(FloatEqualize::default().cpu(&frame)?);
        Ok(())
    })
}

/// `stretch --scale asinh` of the frame as float samples to 16 bits: the per-sample curve of the
/// `curve_f32_u16` kernel (the cuts, on the host, not timed). Memory floor: a copy of the float
/// frame.
fn stretch_float<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let frame = float_frame(input);
    let curve = stretch_curve(&frame, Scale::Asinh, 65535)?;
    let Pixels::F32(floats) = &frame.pixels else { unreachable!("a float frame") };
    let first = gpu.stream().clone_htod(&floats[..])?;
    let mut sets = Sets::<f32, u16>::from_device(gpu, first, n)?;
    Ok(Case::new(4 * n, 6 * n, sets.count(), move |gpu, i| {
        let (src, dst) = sets.pair(i);
        Ok(stretch_op::queue_curve(gpu, &curve, src, n, dst)?)
    }))
}

fn stretch_float_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let frame = float_frame(input);
    cpu_run(move |_| {
        black_box(Stretch { curve: stretch_curve(&frame, Scale::Asinh, 65535)? }.cpu(&frame)?);
        Ok(())
    })
}

/// `stretch --saturate 0 --out 0:1` of the frame as float samples: scikit-image's float32 rescale
/// of every sample (`to_float_f32_linear`; the range, the frame's minimum and maximum found on
/// the host, not timed), as scripts/bench/expected.py's peer, `rescale_intensity(f,
/// in_range="image", out_range=(0, 1))`. Memory floor: a copy of the float frame.
fn stretch_to_float<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let frame = float_frame(input);
    let to = stretch_to_unit(&frame)?;
    let Pixels::F32(floats) = &frame.pixels else { unreachable!("a float frame") };
    let first = gpu.stream().clone_htod(&floats[..])?;
    let mut sets = Sets::<f32, f32>::from_device(gpu, first, n)?;
    Ok(Case::new(4 * n, 8 * n, sets.count(), move |gpu, i| {
        let (src, dst) = sets.pair(i);
        Ok(stretch_op::queue_to_float(gpu, &to, src, n, dst)?)
    }))
}

/// The frame's minimum and maximum (`--saturate 0`) onto [0, 1], linearly.
fn stretch_to_unit(frame: &Frame) -> Result<StretchTo, BenchError> {
    let (lo, hi) = cuts::of_frame(frame, &[0], 0.0, None)?.unwrap_or((0.0, 0.0));
    Ok(StretchTo { curve: Curve { lo, hi, scale: Scale::Linear, maxout: 0 }, out: (0.0, 1.0) })
}

/// The whole of `stretch --saturate 0 --out 0:1` on the CPU: the range, then the rescale.
fn stretch_to_float_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let frame = float_frame(input);
    cpu_run(move |_| {
        black_box(stretch_to_unit(&frame)?.cpu(&frame)?);
        Ok(())
    })
}

/// `clahe` with OpenCV's defaults (clip 40, 8 x 8 tiles): the tiles' histograms, their tables
/// and the interpolation, as `Clahe::gpu` queues them (`ClahePlan`, its upload and download
/// aside). Memory floor: a copy of the frame.
fn clahe<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let tiling = Clahe::default().tiling(input.width, input.height, 256)?;
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = ClahePlan::<u8>::new(gpu, tiling)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn clahe_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let op = Clahe::default();
    cpu_run(move |frame| {
        black_box(op.cpu(frame)?);
        Ok(())
    })
}

/// Canny's stages 1 to 3 alone (`edges --low 50 --high 150`): one kernel from the frame to the bit
/// maps of kept and edge pixels, the strong pixels grown within each 128 x 16 tile, and the
/// union-find labels of the tiles' weak ring pixels (the plan's buffers, as the tool's pool keeps
/// them); the union across tiles and the output are not in it. No CPU timing: that stage of the
/// CPU implementation is not public.
fn edges_gradient<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let (w, h) = (input.width, input.height);
    let n = w * h;
    let sets = Sets::inputs_only(gpu, input)?;
    let mut plan = CANNY.plan(gpu, w, h)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| Ok(plan.queue_gradient(sets.input(i))?)))
}

/// `edges --low 50 --high 150` (L1, no blur), the whole of `Canny::gpu` but its upload and
/// download: the fused gradient / suppression / threshold / in-tile hysteresis kernel, the
/// union-find across tiles, and the tiles' last growth with the 0/255 output (three kernels;
/// nothing waits on the host).
fn edges<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let (w, h) = (input.width, input.height);
    let n = w * h;
    let mut sets = Sets::new(gpu, input, n)?;
    let mut plan = CANNY.plan(gpu, w, h)?;
    Ok(Case::new(n, 2 * n, sets.count(), move |_, i| {
        let (src, dst) = sets.pair(i);
        Ok(plan.queue(src, dst)?)
    }))
}

fn edges_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(CANNY.cpu(frame)?);
        Ok(())
    })
}

/// `hough-vote`'s layout for an edge map: OpenCV's default axes (rho 1 pixel, theta 1 degree
/// over 180).
fn hough_space(input: &Input) -> Result<HoughSpace, BenchError> {
    Ok(HoughSpace::new(HoughParams::default(), input.width, input.height)?)
}

/// `strategy` resolved for the edge map, its edge pixels counted on the host (`auto` in the tool
/// reads the compaction's count back instead: a host round trip the kernel timing leaves out).
fn resolved(input: &Input, strategy: Strategy) -> Strategy {
    strategy.for_points(input.pixels.iter().filter(|&&v| v != 0).count() as u64)
}

/// `hough-vote` with `strategy` on the edge map: one u16 accumulator per set. Memory floor: a copy
/// of the edge map or of the accumulator, whichever is larger.
fn hough_vote_case<'g>(gpu: &'g Gpu, input: &Input, strategy: Strategy) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let mut plan = HoughVotePlan::new(gpu, hough_space(input)?)?;
    let strategy = resolved(input, strategy);
    let cells = plan.cells();
    let out_bytes = 2 * cells;
    let mut sets = Sets::<u8, u16>::with_output(gpu, input, cells)?;
    Ok(Case::new(n.max(out_bytes), n + out_bytes, sets.count(), move |_, i| {
        let (src, acc) = sets.pair(i);
        Ok(plan.queue(src, strategy, acc)?)
    }))
}

/// `hough-vote --strategy global`: atomics in global memory. No CPU timing (the CPU has one way
/// to vote: see `hough-vote`).
fn hough_vote_global<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    hough_vote_case(gpu, input, Strategy::Global)
}

/// `hough-vote --strategy shared`: one block per angle counting in shared memory.
fn hough_vote_shared<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    hough_vote_case(gpu, input, Strategy::Shared)
}

/// `hough-vote` as the tool runs it (`--strategy auto`).
fn hough_vote<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    hough_vote_case(gpu, input, HOUGH_VOTE.strategy)
}

/// `hough-vote` as the tool runs it: OpenCV's default axes (`HoughParams::default()`), `auto`.
const HOUGH_VOTE: HoughVote = HoughVote {
    params: HoughParams { theta_min: 0.0, theta_max: 180.0, theta_step: 1.0, rho_step: 1.0 },
    strategy: Strategy::Auto,
};

fn hough_vote_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(HOUGH_VOTE.cpu(frame)?);
        Ok(())
    })
}

/// `hough-lines --threshold 200` on the accumulator `hough-vote` makes of the edge map (made once,
/// beforehand, on the GPU, and copied into the sets): the peak search as `HoughLines::gpu` queues
/// it. Its sorting of the few peaks on the host is not timed. Memory floor: a copy of the
/// accumulator.
fn hough_lines<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let lines = HoughLines { threshold: HOUGH_THRESHOLD, top: None };
    let space = hough_space(input)?;
    let stream = gpu.stream();
    let acc = {
        let mut vote = HoughVotePlan::new(gpu, space)?;
        let src = stream.clone_htod(&input.pixels)?;
        let mut acc = stream.alloc_zeros::<u16>(vote.cells())?;
        vote.queue(&src, resolved(input, Strategy::Auto), &mut acc)?;
        stream.synchronize()?;
        acc
    };
    let cells = acc.len();
    let sets = Sets::<u16, u8>::from_device(gpu, acc, 0)?;
    let mut plan = HoughLinesPlan::new(gpu, &lines, space)?;
    Ok(Case::new(2 * cells, 2 * cells, sets.count(), move |_, i| Ok(plan.queue(sets.input(i))?)))
}

/// `hough-lines` on the CPU: `HoughLines::cpu` on the accumulator `hough-vote` makes of the edge
/// map (made once, beforehand, by the CPU backend: the same counts as the GPU's).
fn hough_lines_cpu(input: &Input) -> Result<CpuRun, BenchError> {
    let lines = HoughLines { threshold: HOUGH_THRESHOLD, top: None };
    let acc = HOUGH_VOTE.cpu(&host_frame(input))?;
    cpu_run(move |_edges| {
        black_box(lines.cpu(&acc)?);
        Ok(())
    })
}

/// `hough-vote | hough-lines --threshold 200` on the edge map, the GPU work of both tools (what
/// NPP's FilterHoughLine and OpenCV's HoughLines do): compaction, votes (auto), narrowing, peak
/// search. Memory floor: a copy of the edge map.
fn hough_vote_and_lines<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let lines = HoughLines { threshold: HOUGH_THRESHOLD, top: None };
    let space = hough_space(input)?;
    let mut vote = HoughVotePlan::new(gpu, space)?;
    let strategy = resolved(input, HOUGH_VOTE.strategy);
    let mut sets = Sets::<u8, u16>::with_output(gpu, input, vote.cells())?;
    let mut peaks = HoughLinesPlan::new(gpu, &lines, space)?;
    Ok(Case::new(n, n, sets.count(), move |_, i| {
        let (src, acc) = sets.pair(i);
        vote.queue(src, strategy, acc)?;
        Ok(peaks.queue(acc)?)
    }))
}

fn hough_vote_and_lines_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    let lines = HoughLines { threshold: HOUGH_THRESHOLD, top: None };
    cpu_run(move |frame| {
        let acc = HOUGH_VOTE.cpu(frame)?;
        black_box(lines.cpu(&acc)?);
        Ok(())
    })
}

/// `hough-segments` with its defaults on the edge map, the tool's whole work: the votes on the
/// GPU (auto), the u32 counters read back and the walk on the host (host code on both backends),
/// so each run waits for the device. Memory floor: a copy of the edge map.
fn hough_segments<'g>(gpu: &'g Gpu, input: &Input) -> Result<Case<'g>, BenchError> {
    let n = input.width * input.height;
    let space = hough_space(input)?;
    let mut vote = HoughVotePlan::new(gpu, space)?;
    let strategy = resolved(input, HOUGH_VOTE.strategy);
    let mut sets = Sets::<u8, u16>::with_output(gpu, input, vote.cells())?;
    let edges = host_frame(input);
    Ok(Case::new(n, n, sets.count(), move |_, i| {
        let (src, acc) = sets.pair(i);
        vote.queue(src, strategy, acc)?;
        black_box(HoughSegments::default().segments(&space, vote.counts()?, &edges)?);
        Ok(())
    }))
}

/// `hough-segments` with its defaults on the CPU: the votes and the walk.
fn hough_segments_cpu(_: &Input) -> Result<CpuRun, BenchError> {
    cpu_run(move |frame| {
        black_box(HoughSegments::default().cpu(frame)?);
        Ok(())
    })
}
