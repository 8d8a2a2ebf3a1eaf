//! The operations the benchmark times: one [`Entry`] per timed operation.
//!
//! An entry says which input it reads and builds a [`Case`] for one input: device buffers already
//! filled, and a closure that queues one run of the operation's kernels on `gpu.stream()` (through
//! the operation's public `launch` functions, so only kernels are timed: no upload, no download,
//! no allocation). The harness (`main.rs`) does the rest: input sets, the memory floor, timing,
//! JSON. Adding an operation is one function here and one line in [`all`]; for instance, once
//! `histopipe_ops::equalize` exists:
//!
//! ```ignore
//! fn equalize(gpu: &Gpu, input: &Input) -> Result<Case, BenchError> {
//!     let op = Equalize::new(255);                               // the op's parameters
//!     let n = input.width * input.height;
//!     let mut sets = Sets::new(gpu, input, n)?;                  // K inputs, K outputs of n bytes
//!     let mut scratch = gpu.stream().alloc_zeros::<u32>(256)?;   // whatever the launch needs
//!     let (w, h) = (input.width, input.height);
//!     Ok(Case::new(n, n, 2 * n, sets.count(), move |gpu, i| {
//!         let (src, dst) = sets.pair(i);
//!         op.launch(gpu, src, w, h, &mut scratch, dst)?;
//!         Ok(())
//!     })
//!     .with_cpu(move |frame| op.cpu(frame).map(drop)))
//! }
//! // in all():  Entry::frame("equalize", equalize),
//! ```

use histopipe_frame::{Frame, Pixels};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::Gpu;
use histopipe_ops::pad::{PadParams, PadSize};
use histopipe_ops::Op;

use crate::inputs::{Input, InputKind};
use crate::BenchError;

/// Queues one run on the GPU; the argument counts runs (pick the input set with `i % sets`).
pub type GpuRun = Box<dyn FnMut(&Gpu, usize) -> Result<(), BenchError>>;
/// One run of the CPU implementation on a frame.
pub type CpuRun = Box<dyn FnMut(&Frame) -> Result<(), BenchError>>;

/// A timed operation.
pub struct Entry {
    /// Its name in the results: `pad`, `rotate.nearest`, `equalize.histogram`, `hough-vote`...
    /// The report pairs it with the peers' results of the same name (see scripts/bench/report.py).
    pub name: &'static str,
    pub input: InputKind,
    pub prepare: fn(&Gpu, &Input) -> Result<Case, BenchError>,
}

impl Entry {
    pub const fn frame(name: &'static str, prepare: fn(&Gpu, &Input) -> Result<Case, BenchError>) -> Entry {
        Entry { name, input: InputKind::Frame, prepare }
    }

    #[allow(dead_code)] // for the Hough entries, which land with the Hough operations
    pub const fn edges(name: &'static str, prepare: fn(&Gpu, &Input) -> Result<Case, BenchError>) -> Entry {
        Entry { name, input: InputKind::Edges, prepare }
    }
}

/// Every timed operation, in report order.
pub fn all() -> Vec<Entry> {
    vec![
        Entry::frame("pad", pad),
        // Entry::frame("rotate.nearest", rotate_nearest),
        // Entry::frame("rotate.bilinear", rotate_bilinear),
        // Entry::frame("colhist", colhist),
        // Entry::frame("cdf", cdf),
        // Entry::frame("equalize.histogram", equalize_histogram),
        // Entry::frame("equalize", equalize),
        // Entry::frame("edges", edges),
        // Entry::edges("hough-vote", hough_vote),
        // Entry::edges("hough-lines", hough_lines),
        // Entry::edges("hough", hough_vote_and_lines),
    ]
}

/// One operation on one input, ready to time.
pub struct Case {
    /// Bytes of the memory-floor copy: the harness times a device-to-device copy of this many
    /// bytes in the same run. By the issue's definition, the frame's bytes, or the output's when
    /// the operation writes more than it reads.
    pub copy_bytes: usize,
    /// The fewest bytes the operation must move through device memory (each input read once,
    /// each output written once), for its achieved bandwidth.
    pub traffic_bytes: usize,
    /// Input sets the runs rotate among (see [`Sets`]).
    pub sets: usize,
    pub gpu: GpuRun,
    pub cpu: Option<CpuRun>,
}

impl Case {
    pub fn new(
        copy_bytes: usize,
        traffic_bytes: usize,
        sets: usize,
        gpu: impl FnMut(&Gpu, usize) -> Result<(), BenchError> + 'static,
    ) -> Case {
        Case { copy_bytes, traffic_bytes, sets, gpu: Box::new(gpu), cpu: None }
    }

    /// Also time the CPU implementation (on the host frame of the same input).
    pub fn with_cpu(mut self, cpu: impl FnMut(&Frame) -> Result<(), BenchError> + 'static) -> Case {
        self.cpu = Some(Box::new(cpu));
        self
    }
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
pub struct Sets {
    inputs: Vec<CudaSlice<u8>>,
    outputs: Vec<CudaSlice<u8>>,
}

impl Sets {
    /// Uploads `input` once and copies it on the device into the other sets; outputs of
    /// `out_len` bytes, zeroed.
    pub fn new(gpu: &Gpu, input: &Input, out_len: usize) -> Result<Sets, BenchError> {
        let stream = gpu.stream();
        let k = set_count(input.pixels.len() + out_len);
        let first = stream.clone_htod(&input.pixels)?;
        let mut inputs = Vec::with_capacity(k);
        let mut outputs = Vec::with_capacity(k);
        for _ in 1..k {
            let mut copy = unsafe { stream.alloc::<u8>(input.pixels.len()) }?;
            stream.memcpy_dtod(&first, &mut copy)?;
            inputs.push(copy);
        }
        inputs.push(first);
        for _ in 0..k {
            outputs.push(stream.alloc_zeros::<u8>(out_len.max(1))?);
        }
        stream.synchronize()?;
        Ok(Sets { inputs, outputs })
    }

    pub fn count(&self) -> usize {
        self.inputs.len()
    }

    /// The input and output of run `i`.
    pub fn pair(&mut self, i: usize) -> (&CudaSlice<u8>, &mut CudaSlice<u8>) {
        let k = i % self.inputs.len();
        (&self.inputs[k], &mut self.outputs[k])
    }
}

/// The host frame of an input, for the CPU implementations.
pub fn host_frame(input: &Input) -> Frame {
    Frame::new(input.width, input.height, 255, Pixels::U8(input.pixels.clone()))
}

/// `pad` to the frame's diagonal (the tool's default), fill 0. Memory floor: a copy of the
/// output's bytes (pad writes more than it reads).
fn pad(gpu: &Gpu, input: &Input) -> Result<Case, BenchError> {
    let (w, h) = (input.width, input.height);
    let op = PadParams { size: PadSize::Diagonal, fill: 0 }.for_frame(w, h, 255)?;
    let out_len = op.width * op.height;
    let mut sets = Sets::new(gpu, input, out_len)?;
    let case = Case::new(out_len, w * h + out_len, sets.count(), move |gpu, i| {
        let (src, dst) = sets.pair(i);
        op.launch(gpu, src, w, h, dst)?;
        Ok(())
    });
    Ok(case.with_cpu(move |frame| {
        op.cpu(frame)?;
        Ok(())
    }))
}
