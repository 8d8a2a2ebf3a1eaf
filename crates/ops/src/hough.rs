//! `hough-vote` and `hough-lines`: the standard Hough transform for lines, vote for vote and line
//! for line as OpenCV's `cv::HoughLines` (`HoughLinesStandard`).
//!
//! The accumulator has one row per angle and one column per distance. With the angles given in
//! degrees and converted to radians in f64 (`f64::to_radians`), θ_step as f32, ρ_step as f32:
//! - rows: n = floor((θ_max − θ_min) / θ_step) + 1, less one if n > 1 and
//!   |π − (n − 1) θ_step| < θ_step / 2 (so that θ and θ + π are not both voted for);
//! - columns: m = round_half_even(f32(2 (W + H) + 1) / ρ_step), column c holding distance
//!   (c − (m − 1) / 2) ρ_step (integer division): [`HoughSpace::rho_offset`] is (m − 1) / 2;
//! - tables: a = f32(θ_min), then a += θ_step in f32 after each row; cos_n = f32(cos(a) · (1 / ρ_step)),
//!   sin_n = f32(sin(a) · (1 / ρ_step)), the product taken in f64 and 1 / ρ_step in f32;
//! - each non-zero pixel (x, y) votes in every row n for column
//!   round_half_even(f32(x) · cos_n + f32(y) · sin_n) + (m − 1) / 2, in f32 without fused
//!   multiply-add.
//!
//! Lines are the cells with more than `threshold` votes that beat their 4 neighbours (cells
//! outside count as 0) strictly on the left and above and at least equally on the right and below,
//! ordered by votes, then by row-major index; a line's ρ is f32(c − (m − 1) / 2) · ρ_step and its θ
//! f32(θ_min) + f32(n) · θ_step, in f32 as OpenCV reports them.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use histopipe_frame::{Frame, Pixels, Samples};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::{kernels, launch, Buffer, LaunchConfig};

use crate::histogram::check_len;
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample};

/// The annotation key of an accumulator's parameterization (`# histopipe-hough ...`).
pub const ANNOTATION: &str = "hough";

/// The most cells an accumulator may have (4 GiB of u32 counters would be absurd for lines).
pub const MAX_CELLS: u64 = 1 << 28;

/// The accumulator's axes as given on the command line: angles in degrees, ρ step in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughParams {
    pub theta_min: f64,
    pub theta_max: f64,
    pub theta_step: f64,
    pub rho_step: f64,
}

impl Default for HoughParams {
    /// OpenCV's `HoughLines(img, 1, CV_PI / 180, ...)`: θ in [0°, 180°) by 1°, ρ by 1 pixel.
    fn default() -> Self {
        HoughParams { theta_min: 0.0, theta_max: 180.0, theta_step: 1.0, rho_step: 1.0 }
    }
}

/// An accumulator's layout for a `width x height` source: see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughSpace {
    pub params: HoughParams,
    /// The edge map's size.
    pub width: usize,
    pub height: usize,
    /// Rows of the accumulator (angles).
    pub thetas: usize,
    /// Columns of the accumulator (distances).
    pub rhos: usize,
}

impl HoughParams {
    /// Checks what holds for every edge map: positive, finite steps and a range of angles; returns
    /// the angle span in steps.
    pub fn check(&self) -> Result<f64, OpError> {
        let HoughParams { theta_min, theta_max, theta_step, rho_step } = *self;
        if !(theta_step > 0.0 && theta_step.is_finite() && (theta_step.to_radians() as f32) > 0.0) {
            return Err(OpError::invalid(format!(
                "--theta-step {theta_step} must be a positive number of degrees"
            )));
        }
        if !(rho_step > 0.0
            && rho_step.is_finite()
            && (rho_step as f32) > 0.0
            && (rho_step as f32).is_finite())
        {
            return Err(OpError::invalid(format!(
                "--rho-step {rho_step} must be a positive number of pixels"
            )));
        }
        if !(theta_min.is_finite() && theta_max.is_finite() && theta_max >= theta_min) {
            return Err(OpError::invalid(format!(
                "--theta-max {theta_max} must be at least --theta-min {theta_min}"
            )));
        }
        let step = (theta_step.to_radians() as f32) as f64;
        let span = (theta_max.to_radians() - theta_min.to_radians()) / step;
        if span > 1e7 {
            return Err(OpError::invalid("too many angles: raise --theta-step"));
        }
        Ok(span)
    }
}

impl HoughSpace {
    /// The layout for a `width x height` edge map, or why the parameters cannot make one.
    pub fn new(params: HoughParams, width: usize, height: usize) -> Result<HoughSpace, OpError> {
        let span = params.check()?;
        let HoughParams { theta_step, rho_step, .. } = params;
        let step = (theta_step.to_radians() as f32) as f64;
        let mut thetas = span.floor() as i64 + 1;
        if thetas > 1 && (std::f64::consts::PI - (thetas - 1) as f64 * step).abs() < step / 2.0 {
            thetas -= 1;
        }
        let rhos = (((width + height) * 2 + 1) as f32 / rho_step as f32).round_ties_even();
        if !(1.0..=1e9).contains(&rhos) {
            return Err(OpError::invalid(format!("--rho-step {rho_step} gives no distance bins")));
        }
        let space = HoughSpace { params, width, height, thetas: thetas as usize, rhos: rhos as usize };
        if space.thetas as u64 * space.rhos as u64 > MAX_CELLS {
            return Err(OpError::invalid(format!(
                "the accumulator would have {} x {} cells, over {MAX_CELLS}: raise --theta-step or --rho-step",
                space.rhos, space.thetas
            )));
        }
        space.check_votes_fit()?;
        Ok(space)
    }

    /// Every vote must land inside the accumulator. The vote is monotone in x and in y for a fixed
    /// angle (rounded products and sums are monotone), so the four corners bound it.
    fn check_votes_fit(&self) -> Result<(), OpError> {
        let (cos, sin) = self.tables();
        let (xm, ym) = (self.width.saturating_sub(1), self.height.saturating_sub(1));
        for n in 0..self.thetas {
            for (x, y) in [(0, 0), (xm, 0), (0, ym), (xm, ym)] {
                let c = vote_column(x, y, cos[n], sin[n], self.rho_offset());
                if c < 0 || c >= self.rhos as i64 {
                    return Err(OpError::invalid(format!(
                        "--rho-step {} is too coarse for a {}x{} frame: votes would fall outside the accumulator",
                        self.params.rho_step, self.width, self.height
                    )));
                }
            }
        }
        Ok(())
    }

    /// The column of distance 0: (m − 1) / 2.
    pub fn rho_offset(&self) -> usize {
        (self.rhos - 1) / 2
    }

    fn theta_step_f32(&self) -> f32 {
        self.params.theta_step.to_radians() as f32
    }

    fn theta_min_f32(&self) -> f32 {
        self.params.theta_min.to_radians() as f32
    }

    /// OpenCV's cosine and sine tables, divided by ρ_step.
    pub fn tables(&self) -> (Vec<f32>, Vec<f32>) {
        let irho = 1.0f32 / self.params.rho_step as f32;
        let step = self.theta_step_f32();
        let mut ang = self.theta_min_f32();
        let (mut cos, mut sin) = (Vec::with_capacity(self.thetas), Vec::with_capacity(self.thetas));
        for _ in 0..self.thetas {
            cos.push(((ang as f64).cos() * irho as f64) as f32);
            sin.push(((ang as f64).sin() * irho as f64) as f32);
            ang += step;
        }
        (cos, sin)
    }

    /// The distance of column `c`, as OpenCV reports it.
    pub fn rho(&self, c: usize) -> f32 {
        (c as i64 - self.rho_offset() as i64) as f32 * self.params.rho_step as f32
    }

    /// The angle of row `n` in radians, as OpenCV reports it.
    pub fn theta(&self, n: usize) -> f32 {
        self.theta_min_f32() + n as f32 * self.theta_step_f32()
    }

    /// The angle of row `n` in degrees on the nominal grid, θ_min + n θ_step (f64).
    pub fn theta_degrees(&self, n: usize) -> f64 {
        self.params.theta_min + n as f64 * self.params.theta_step
    }

    /// The annotation value that describes this layout.
    pub fn annotation(&self) -> String {
        let p = &self.params;
        format!(
            "theta-min={} theta-max={} theta-step={} rho-step={} rho-offset={} source={}x{}",
            p.theta_min,
            p.theta_max,
            p.theta_step,
            p.rho_step,
            self.rho_offset(),
            self.width,
            self.height
        )
    }

    /// The layout of an accumulator frame, from its annotation; checked against its size.
    pub fn of_frame(frame: &Frame) -> Result<HoughSpace, OpError> {
        let text = frame.annotation(ANNOTATION).ok_or_else(|| {
            OpError::invalid(
                "no '# histopipe-hough' header comment: not an accumulator written by hough-vote",
            )
        })?;
        let bad = |why: &str| OpError::invalid(format!("bad '# histopipe-hough {text}' comment: {why}"));
        let mut params = HoughParams::default();
        let (mut offset, mut source) = (None, None);
        for field in text.split_whitespace() {
            let (key, value) = field.split_once('=').ok_or_else(|| bad("fields are KEY=VALUE"))?;
            let num = || value.parse::<f64>().map_err(|_| bad(&format!("{key} is not a number")));
            match key {
                "theta-min" => params.theta_min = num()?,
                "theta-max" => params.theta_max = num()?,
                "theta-step" => params.theta_step = num()?,
                "rho-step" => params.rho_step = num()?,
                "rho-offset" => offset = Some(value.parse::<usize>().map_err(|_| bad("bad rho-offset"))?),
                "source" => source = Some(histopipe_frame::parse_size(value).map_err(|e| bad(&e))?),
                _ => {} // later versions may add fields
            }
        }
        let (w, h) = source.ok_or_else(|| bad("no source=WxH"))?;
        let space = HoughSpace::new(params, w, h).map_err(|e| bad(&e.message))?;
        if (frame.width, frame.height) != (space.rhos, space.thetas) || offset != Some(space.rho_offset()) {
            return Err(bad(&format!(
                "it describes a {}x{} accumulator with rho-offset {}, and the frame is {}x{}",
                space.rhos,
                space.thetas,
                space.rho_offset(),
                frame.width,
                frame.height
            )));
        }
        Ok(space)
    }
}

/// The column pixel (x, y) votes for, OpenCV's float arithmetic exactly.
fn vote_column(x: usize, y: usize, cos: f32, sin: f32, offset: usize) -> i64 {
    (x as f32 * cos + y as f32 * sin).round_ties_even() as i64 + offset as i64
}

/// How the GPU votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Edge pixels compacted into a list, each (pixel, angle) adds 1 to a global counter atomically.
    Global,
    /// Edge list as above; one block per angle (and range of distances) counts in shared memory,
    /// then writes its row of the accumulator: no global atomics.
    Shared,
    /// The one measured faster for the number of edge pixels: see docs/hough-vote.md.
    Auto,
}

/// The most edge pixels `auto` votes with the shared strategy. Every block of that strategy reads
/// the whole edge list (4 bytes a pixel), so it wins while the list stays in L2 and loses once it
/// spills. On an H200 (60 MB of L2), shared against global: 0.39 / 1.10 ms with 0.5 M points,
/// 2.8 / 7.0 ms with 4.7 M, 10.2 / 16.7 ms with 12.2 M, 5.3 / 5.1 ms with 2.3 M points of a
/// 16384 x 16384 frame (whose wide accumulator makes shared read the list 6 times), and
/// 234 / 112 ms with 99 M (docs/BENCHMARKS.md, docs/hough-vote.md).
pub const AUTO_SHARED_MAX_POINTS: u64 = 16 << 20;

impl Strategy {
    /// The strategy to vote `points` edge pixels with: `auto` resolved, the others as they are.
    pub fn for_points(self, points: u64) -> Strategy {
        match self {
            Strategy::Auto if points <= AUTO_SHARED_MAX_POINTS => Strategy::Shared,
            Strategy::Auto => Strategy::Global,
            other => other,
        }
    }

    pub fn parse(text: &str) -> Result<Strategy, String> {
        match text {
            "global" => Ok(Strategy::Global),
            "shared" => Ok(Strategy::Shared),
            "auto" => Ok(Strategy::Auto),
            _ => Err(format!("unknown strategy '{text}' (global, shared or auto)")),
        }
    }
}

/// `hough-vote` for frames of any size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughVote {
    pub params: HoughParams,
    pub strategy: Strategy,
}

/// Shared memory per block of the shared strategy: 12288 counters, 48 KiB, the limit every
/// architecture grants without opting in. Wider accumulators are split into column ranges.
pub const SHARED_COLUMNS: usize = 12288;

impl HoughVote {
    pub fn space(&self, frame: &Frame) -> Result<HoughSpace, OpError> {
        HoughSpace::new(self.params, frame.width, frame.height)
    }

    /// The counters, row-major, `thetas x rhos`.
    pub fn votes_cpu(space: &HoughSpace, frame: &Frame) -> Vec<u32> {
        let mut acc = vec![0u32; space.thetas * space.rhos];
        with_samples!(&frame.pixels, v => vote_samples(space, v, &mut acc));
        acc
    }

    /// The accumulator frame: 16-bit, maxval max(256, most votes), the layout as annotation.
    fn output(space: &HoughSpace, counts: impl Into<Samples<u16>>, most: u32) -> Frame {
        let mut f = Frame::new(space.rhos, space.thetas, most.max(256) as u16, Pixels::U16(counts.into()));
        f.set_annotation(ANNOTATION, &space.annotation());
        f
    }

    fn too_many(most: u32) -> OpError {
        OpError::invalid(format!(
            "a cell has {most} votes, more than a 16-bit accumulator holds (65535): split the frame"
        ))
    }

    fn gpu_samples<T: Sample>(&self, gpu: &Gpu, space: &HoughSpace, input: &[T]) -> Result<Frame, OpError> {
        let src = gpu.upload::<T>("hough.in", input)?;
        let mut plan = HoughVotePlan::new(gpu, *space)?;
        let mut narrow = gpu.buffer::<u16>("hough.out", plan.cells())?;
        plan.queue(&src, self.strategy, &mut narrow)?;
        let most = plan.most()?;
        if most > 65535 {
            return Err(Self::too_many(most));
        }
        let out = gpu.download_samples(&narrow, plan.cells())?;
        Ok(Self::output(space, out, most))
    }
}

/// The device plan of `hough-vote` for one layout: the edge list and its length, the tables, the
/// u32 counters and the most votes, and the kernels (compaction, votes, narrowing to u16). The
/// one GPU sequence that `Op::gpu` and the benchmark run.
pub struct HoughVotePlan<'g> {
    gpu: &'g Gpu,
    space: HoughSpace,
    points: Buffer<'g, u32>,
    count: Buffer<'g, u32>,
    most: Buffer<'g, u32>,
    cos: Buffer<'g, f32>,
    sin: Buffer<'g, f32>,
    acc: Buffer<'g, u32>,
}

impl<'g> HoughVotePlan<'g> {
    pub fn new(gpu: &'g Gpu, space: HoughSpace) -> Result<HoughVotePlan<'g>, OpError> {
        let pixels = space.width * space.height;
        if pixels > u32::MAX as usize {
            return Err(OpError::invalid("the GPU votes frames of fewer than 2^32 pixels"));
        }
        let (cos, sin) = space.tables();
        Ok(HoughVotePlan {
            gpu,
            space,
            points: gpu.buffer::<u32>("hough.points", pixels)?,
            count: gpu.buffer::<u32>("hough.count", 1)?,
            most: gpu.buffer::<u32>("hough.most", 1)?,
            cos: gpu.upload::<f32>("hough.cos", &cos)?,
            sin: gpu.upload::<f32>("hough.sin", &sin)?,
            acc: gpu.buffer::<u32>("hough.acc", space.thetas * space.rhos)?,
        })
    }

    /// Accumulator cells: thetas x rhos.
    pub fn cells(&self) -> usize {
        self.space.thetas * self.space.rhos
    }

    /// Queues the votes of the edge map `src` with `strategy` into `out` (the accumulator,
    /// [`HoughVotePlan::cells`] u16 counters, saturated) and the most votes: the compaction of
    /// the edge pixels, the votes, the narrowing. `auto` waits for the compaction's count to
    /// choose (a host round trip); a strategy resolved beforehand queues no wait.
    pub fn queue<T: Sample>(
        &mut self,
        src: &CudaSlice<T>,
        strategy: Strategy,
        out: &mut CudaSlice<u16>,
    ) -> Result<(), OpError> {
        let gpu = self.gpu;
        let stream = gpu.stream();
        stream.memset_zeros(&mut *self.count)?;
        stream.memset_zeros(&mut *self.most)?;
        let n = self.space.width * self.space.height;
        check_len("edge map", src.len(), n)?;
        let n64 = n as u64;
        // SAFETY: hough_compact_*(in, n, points, count) in hough.cu; `src` holds n pixels,
        // `points` room for all of them, `count` is zeroed above.
        unsafe {
            launch!(gpu, kernels::HOUGH, format!("hough_compact_{}", T::KERNEL_SUFFIX), launch::cover(n, 256);
                src, &n64, &mut *self.points, &mut *self.count)
        }?;
        let strategy = match strategy {
            Strategy::Auto => {
                let mut found = [0u32];
                gpu.download(&self.count, &mut found)?;
                strategy.for_points(found[0] as u64)
            }
            chosen => chosen,
        };
        let space = &self.space;
        let (w, thetas, rhos, off) =
            (space.width as u32, space.thetas as u32, space.rhos as u32, space.rho_offset() as u32);
        let (points, count, cos, sin) = (&*self.points, &*self.count, &*self.cos, &*self.sin);
        match strategy {
            Strategy::Global => {
                // One atomic add per (edge pixel, angle) into the zeroed counters; enough blocks
                // along the points to fill the GPU even with few angles.
                let cells = self.cells();
                stream.memset_zeros(&mut self.acc.slice_mut(..cells))?;
                let cfg = LaunchConfig {
                    grid_dim: (64, space.thetas.min(65535) as u32, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: hough_vote_global(points, count, w, cos, sin, thetas, rhos, offset,
                // acc) in hough.cu; the tables hold `thetas` entries, `acc` thetas x rhos.
                unsafe {
                    launch!(gpu, kernels::HOUGH, "hough_vote_global", cfg;
                        points, count, &w, cos, sin, &thetas, &rhos, &off, &mut *self.acc)
                }?;
            }
            Strategy::Shared | Strategy::Auto => {
                // One block per (angle, range of SHARED_COLUMNS columns) counts in shared memory
                // and writes its part of the row (no zeroing needed).
                let columns = space.rhos.min(SHARED_COLUMNS);
                let cfg = LaunchConfig {
                    grid_dim: (thetas, space.rhos.div_ceil(columns) as u32, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: (columns * 4) as u32,
                };
                let cols = columns as u32;
                // SAFETY: hough_vote_shared(points, count, w, cos, sin, rhos, offset, columns,
                // acc) in hough.cu; the tables hold `thetas` entries, `acc` thetas x rhos.
                unsafe {
                    launch!(gpu, kernels::HOUGH, "hough_vote_shared", cfg;
                        points, count, &w, cos, sin, &rhos, &off, &cols, &mut *self.acc)
                }?;
            }
        }
        let cells = self.cells();
        check_len("accumulator", out.len(), cells)?;
        let cells64 = cells as u64;
        let cfg = launch::linear(launch::blocks(cells, 256, 4096), 256);
        // SAFETY: hough_narrow(acc, n, out, most) in hough.cu; `acc` and `out` hold `cells`
        // counters, `most` is zeroed above.
        unsafe {
            launch!(gpu, kernels::HOUGH, "hough_narrow", cfg; &*self.acc, &cells64, out, &mut *self.most)
        }?;
        Ok(())
    }

    /// The most votes of a cell in the accumulator queued last (waits for the stream).
    pub fn most(&self) -> Result<u32, OpError> {
        let mut top = [0u32];
        self.gpu.download(&self.most, &mut top)?;
        Ok(top[0])
    }
}

/// Edge-map columns voted together. Along a row of a strip, each angle's votes move through about
/// `STRIP |cos θ|` columns of its accumulator row, and the next row shifts them by at most one: the
/// cells in use (one such run per angle) stay in the L1/L2 cache, where whole edge-map rows would
/// sweep the entire accumulator (10 MiB for 4096 x 3112) once per row.
const STRIP: usize = 256;

/// Samples tested at once for being all 0, which most of an edge map is.
const EDGE_RUN: usize = 32;

/// 1.5 · 2^23. For |v| < 2^22 the f32 sum v + ROUND_MAGIC lies in [2^23, 2^24), where the floats
/// are the integers: the addition rounds v half to even (the default rounding mode, which Rust
/// assumes) and the sum's bits are [`ROUND_MAGIC_BITS`] + round_half_even(v). That is OpenCV's
/// `cvRound` (`cvtss2si`) in plain SSE2 arithmetic that vectorizes, where `f32::round_ties_even`
/// is a library call on x86-64 without SSE4.1.
const ROUND_MAGIC: f32 = 12_582_912.0;
const ROUND_MAGIC_BITS: u32 = 0x4B40_0000;

/// The most distance columns for which [`ROUND_MAGIC`] rounds exactly: every vote lands in
/// [0, rhos) ([`HoughSpace::check_votes_fit`]), so |v| ≤ rhos + 1/2, below 2^22 with room to spare.
const MAGIC_MAX_RHOS: usize = 1 << 21;

/// Adds the votes of `px` (the edge map of `space`, row-major) to `acc` (`thetas x rhos`). The
/// order of the additions does not matter: the counts are those of `HoughLinesStandard`.
///
/// The angles are split into ranges voted for on the pool's threads, each owning its rows of
/// the accumulator: a cell is counted by one thread, so nothing is merged. Every thread reads the
/// whole edge map, so the angles are split into no more ranges than there are threads.
fn vote_samples<T: Sample>(space: &HoughSpace, px: &[T], acc: &mut [u32]) {
    let (cos, sin) = space.tables();
    let rhos = space.rhos;
    // Checked here again, not trusted from `HoughSpace::new`: the fields are public.
    let fits = rhos <= MAGIC_MAX_RHOS
        && space.check_votes_fit().is_ok()
        && acc.len() == space.thetas * rhos
        && px.len() >= space.width * space.height;
    let votes = (space.width * space.height).saturating_mul(space.thetas);
    let parts = parallel::parts(votes, MIN_PART_VOTES).min(parallel::threads()).min(space.thetas);
    let row = rhos.max(1);
    parallel::for_each_part(acc, space.thetas.div_ceil(parts.max(1)) * row, |first, rows| {
        let n = (first / row).min(space.thetas)..((first + rows.len()) / row).min(space.thetas);
        vote_angles(space, px, (&cos[n.clone()], &sin[n]), fits, rows);
    });
}

/// Fewest (pixel, angle) pairs in a part of the CPU's voting ([`parallel::parts`]): 0.03 to 0.1 ns
/// a pair on one core (a real 4096x3112's edge map, 4% edges, in 67 ms; 320x240's, denser, in
/// 1.3 ms), so a part takes 0.1 to 0.4 ms.
const MIN_PART_VOTES: usize = 1 << 22;

/// The votes of `px` for the angles whose tables are `cos` and `sin` (a range of the space's),
/// into `acc`, those angles' rows of the accumulator; `fits`: every vote of the space falls in it
/// and rounds exactly with [`ROUND_MAGIC`] (see [`vote_rounded`]).
fn vote_angles<T: Sample>(
    space: &HoughSpace,
    px: &[T],
    (cos, sin): (&[f32], &[f32]),
    fits: bool,
    acc: &mut [u32],
) {
    let (width, height, rhos, offset) = (space.width, space.height, space.rhos, space.rho_offset());
    if !fits {
        for_each_edge(px, width, height, |x, y| {
            for (n, (&c, &s)) in cos.iter().zip(sin).enumerate() {
                acc[n * rhos + vote_column(x, y, c, s, offset) as usize] += 1;
            }
        });
        return;
    }
    // Cell of (angle n, distance 0) less the magic bits: a vote's cell is its rounded sum's bits
    // plus this, in wrapping u32 (cells < 2^28).
    let base: Vec<u32> =
        (0..cos.len()).map(|n| ((n * rhos + offset) as u32).wrapping_sub(ROUND_MAGIC_BITS)).collect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the votes fit (the caller's `fits`).
        unsafe { vote_rounded_avx2(px, width, height, cos, sin, &base, acc) };
        return;
    }
    // SAFETY: the votes fit (the caller's `fits`).
    unsafe { vote_rounded(px, width, height, cos, sin, &base, acc) };
}

/// [`vote_rounded`] compiled for AVX2: the cells of 8 angles at a time. (No FMA: the products and
/// the sum stay rounded one by one, as Rust never contracts them.)
///
/// # Safety
/// The CPU has AVX2, and [`vote_rounded`]'s conditions hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn vote_rounded_avx2<T: Sample>(
    px: &[T],
    width: usize,
    height: usize,
    cos: &[f32],
    sin: &[f32],
    base: &[u32],
    acc: &mut [u32],
) {
    vote_rounded(px, width, height, cos, sin, base, acc)
}

/// The votes of the `width x height` edge map `px`, rounded with [`ROUND_MAGIC`], `base` the cells
/// of distance 0 less [`ROUND_MAGIC_BITS`].
///
/// # Safety
/// Every pixel's vote falls inside `acc` and rounds exactly: the space's distances are at most
/// [`MAGIC_MAX_RHOS`] and pass [`HoughSpace::check_votes_fit`], and `acc` has its cells.
#[inline(always)]
unsafe fn vote_rounded<T: Sample>(
    px: &[T],
    width: usize,
    height: usize,
    cos: &[f32],
    sin: &[f32],
    base: &[u32],
    acc: &mut [u32],
) {
    let mut cells = vec![0u32; base.len()];
    for_each_edge(px, width, height, |x, y| {
        // All angles' cells first, in a loop that vectorizes; then the increments, independent of
        // each other (one per accumulator row), so that they overlap.
        let (xf, yf) = (x as f32, y as f32);
        for (((cell, &c), &s), &b) in cells.iter_mut().zip(cos).zip(sin).zip(base) {
            *cell = (xf * c + yf * s + ROUND_MAGIC).to_bits().wrapping_add(b);
        }
        for &cell in &cells {
            // SAFETY: the cell is in `acc` (the caller's condition); no bounds check here saves
            // a third of the voting time.
            unsafe { *acc.get_unchecked_mut(cell as usize) += 1 };
        }
    });
}

/// Calls `vote(x, y)` for every non-zero sample of the `width x height` edge map `px`, strip by
/// strip of [`STRIP`] columns, each strip top to bottom.
#[inline(always)]
fn for_each_edge<T: Sample>(px: &[T], width: usize, height: usize, mut vote: impl FnMut(usize, usize)) {
    if width == 0 {
        return;
    }
    for x0 in (0..width).step_by(STRIP) {
        let x1 = (x0 + STRIP).min(width);
        for (y, row) in px.chunks_exact(width).take(height).enumerate() {
            for (x, run) in (x0..).step_by(EDGE_RUN).zip(row[x0..x1].chunks(EDGE_RUN)) {
                // Most of an edge map is 0: a run of zeros costs one vectorized test.
                if run.iter().fold(0u32, |any, &p| any | p.into()) == 0 {
                    continue;
                }
                for (x, &p) in (x..).zip(run) {
                    if p.into() != 0 {
                        vote(x, y);
                    }
                }
            }
        }
    }
}

impl Op for HoughVote {
    type Output = Frame;

    fn cpu(&self, frame: &Frame) -> Result<Frame, OpError> {
        let space = self.space(frame)?;
        let acc = Self::votes_cpu(&space, frame);
        // The counters narrowed to 16 bits, and the most votes, in parts on the pool's threads.
        let cells = acc.len();
        let most = AtomicU32::new(0);
        let mut narrow = Vec::with_capacity(cells);
        let part = cells.div_ceil(parallel::parts(cells, MIN_PART_CELLS));
        parallel::for_each_part(&mut narrow.spare_capacity_mut()[..cells], part, |first, out| {
            let mut top = 0;
            for (slot, &v) in out.iter_mut().zip(&acc[first..]) {
                top = top.max(v);
                slot.write(v as u16);
            }
            most.fetch_max(top, Ordering::Relaxed);
        });
        // SAFETY: the parts cover the cells, and each slot of a part was written.
        unsafe { narrow.set_len(cells) };
        let most = most.into_inner();
        if most > 65535 {
            return Err(Self::too_many(most));
        }
        Ok(Self::output(&space, narrow, most))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Frame, OpError> {
        let space = self.space(frame)?;
        with_samples!(&frame.pixels, v => self.gpu_samples(gpu, &space, v))
    }
}

/// Fewest accumulator cells in a part of the CPU's narrowing or peak search
/// ([`parallel::parts`]): 0.7 ns a cell on one core (4096x3112's 180 x 14417 in 1.8 ms), so a
/// part takes 0.2 ms or more.
const MIN_PART_CELLS: usize = 1 << 18;

/// One detected line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Distance from the edge map's pixel (0, 0), in pixels (f32, as OpenCV reports it).
    pub rho: f32,
    /// Angle of the normal, radians (f32, as OpenCV reports it).
    pub theta: f32,
    /// The same angle on the nominal degree grid.
    pub theta_degrees: f64,
    pub votes: u32,
    /// The accumulator cell: row (angle) and column (distance).
    pub row: usize,
    pub column: usize,
}

/// `hough-lines`: local maxima of an accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoughLines {
    /// Keep cells with more votes than this.
    pub threshold: u32,
    /// Keep at most this many, the strongest.
    pub top: Option<usize>,
}

impl HoughLines {
    fn counts(frame: &Frame) -> Vec<u16> {
        match &frame.pixels {
            Pixels::U8(v) => v.iter().map(|&s| s as u16).collect(),
            Pixels::U16(v) => v.to_vec(),
        }
    }

    /// A peak's sort key: fewer missing votes first, then the smaller row-major index, which is
    /// OpenCV's order (votes descending, index ascending); plain u64 comparisons sort it.
    fn key(votes: u32, index: usize) -> u64 {
        (u64::from(65535u32.saturating_sub(votes)) << 32) | index as u64
    }

    /// The local maxima over the threshold of `acc` (`rows x cols`), as sort keys, row by row:
    /// bands of rows on the pool's threads, their keys then joined in order.
    fn peaks<T: Sample>(&self, acc: &[T], cols: usize, rows: usize) -> Vec<u64> {
        if cols == 0 || rows == 0 {
            return Vec::new();
        }
        let band = rows.div_ceil(parallel::parts(rows * cols, MIN_PART_CELLS));
        if band >= rows {
            return self.peaks_in(acc, cols, rows, 0..rows);
        }
        use rayon::prelude::*;
        let bands: Vec<Vec<u64>> = (0..rows.div_ceil(band))
            .into_par_iter()
            .map(|k| self.peaks_in(acc, cols, rows, k * band..((k + 1) * band).min(rows)))
            .collect();
        bands.concat()
    }

    /// [`HoughLines::peaks`] of the rows `band` of the accumulator.
    fn peaks_in<T: Sample>(&self, acc: &[T], cols: usize, rows: usize, band: Range<usize>) -> Vec<u64> {
        let mut keys = Vec::new();
        // Rows outside the accumulator count as 0, as OpenCV's border does.
        let zeros = vec![T::default(); cols];
        let row = |r: usize| if r < rows { &acc[r * cols..(r + 1) * cols] } else { &zeros[..] };
        for r in band {
            let (up, here, down) = (if r > 0 { row(r - 1) } else { &zeros[..] }, row(r), row(r + 1));
            // The cells by iterator, not index: the scan over cells under the threshold, nearly
            // all of them, then needs no bounds check (measured a third faster).
            for (c, &v) in here.iter().enumerate() {
                let v: u32 = v.into();
                if v <= self.threshold {
                    continue;
                }
                let left = if c > 0 { here[c - 1].into() } else { 0 };
                let right = if c + 1 < cols { here[c + 1].into() } else { 0 };
                if v > left && v >= right && v > up[c].into() && v >= down[c].into() {
                    keys.push(Self::key(v, r * cols + c));
                }
            }
        }
        keys
    }

    /// Orders the peaks (sort keys) as OpenCV does, keeps the `top` first and makes them lines.
    fn lines(&self, space: &HoughSpace, mut keys: Vec<u64>) -> Vec<Line> {
        if let Some(top) = self.top.filter(|&top| top < keys.len()) {
            // Only the `top` smallest keys need sorting.
            keys.select_nth_unstable(top);
            keys.truncate(top);
        }
        keys.sort_unstable();
        keys.into_iter()
            .map(|key| {
                let (votes, i) = (65535 - (key >> 32) as u32, (key & 0xffff_ffff) as usize);
                let (row, column) = (i / space.rhos, i % space.rhos);
                Line {
                    rho: space.rho(column),
                    theta: space.theta(row),
                    theta_degrees: space.theta_degrees(row),
                    votes,
                    row,
                    column,
                }
            })
            .collect()
    }
}

/// The device plan of `hough-lines` for one layout: the peak search's list of cells and its
/// length. The one GPU sequence that `Op::gpu` and the benchmark run; the few peaks are sorted
/// on the host.
pub struct HoughLinesPlan<'g> {
    gpu: &'g Gpu,
    threshold: u32,
    space: HoughSpace,
    peaks: Buffer<'g, u32>,
    count: Buffer<'g, u32>,
}

impl<'g> HoughLinesPlan<'g> {
    pub fn new(gpu: &'g Gpu, lines: &HoughLines, space: HoughSpace) -> Result<HoughLinesPlan<'g>, OpError> {
        Ok(HoughLinesPlan {
            gpu,
            threshold: lines.threshold,
            space,
            peaks: gpu.buffer::<u32>("lines.peaks", space.thetas * space.rhos)?,
            count: gpu.buffer::<u32>("lines.count", 1)?,
        })
    }

    /// Queues the peak search over `acc` (thetas x rhos u16): the indices of the local maxima
    /// over the threshold, in no particular order, and their number.
    pub fn queue(&mut self, acc: &CudaSlice<u16>) -> Result<(), OpError> {
        let (cols, rows) = (self.space.rhos, self.space.thetas);
        check_len("accumulator", acc.len(), cols * rows)?;
        self.gpu.stream().memset_zeros(&mut *self.count)?;
        let (c, r, t) = (cols as u32, rows as u32, self.threshold);
        // SAFETY: hough_peaks(acc, cols, rows, threshold, peaks, count) in hough.cu; `acc` and
        // `peaks` hold cols x rows entries, `count` is zeroed above.
        unsafe {
            launch!(self.gpu, kernels::HOUGH, "hough_peaks", launch::cover(cols * rows, 256);
                acc, &c, &r, &t, &mut *self.peaks, &mut *self.count)
        }?;
        Ok(())
    }

    /// The indices of the peaks found last (waits for the stream).
    pub fn found(&self) -> Result<Vec<u32>, OpError> {
        let mut k = [0u32];
        self.gpu.download(&self.count, &mut k)?;
        Ok(self.gpu.download_vec(&self.peaks, k[0] as usize)?)
    }
}

impl Op for HoughLines {
    type Output = Vec<Line>;

    fn cpu(&self, frame: &Frame) -> Result<Vec<Line>, OpError> {
        let space = HoughSpace::of_frame(frame)?;
        let keys = with_samples!(&frame.pixels, v => self.peaks(v, space.rhos, space.thetas));
        Ok(self.lines(&space, keys))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Vec<Line>, OpError> {
        let space = HoughSpace::of_frame(frame)?;
        let acc = Self::counts(frame);
        let src = gpu.upload::<u16>("lines.in", &acc)?;
        let mut plan = HoughLinesPlan::new(gpu, self, space)?;
        plan.queue(&src)?;
        let found = plan.found()?;
        let keys = found.into_iter().map(|i| Self::key(acc[i as usize].into(), i as usize)).collect();
        Ok(self.lines(&space, keys))
    }
}

/// Draws `lines` in red (255, 0, 0), one pixel wide, across an RGB image (`width * height`
/// triples) whose pixel (0, 0) is the edge map's: each line x cos θ + y sin θ = ρ is sampled once
/// per column where it is closer to horizontal (y rounded half to even), else once per row.
pub fn draw_lines(rgb: &mut [u8], width: usize, height: usize, lines: &[Line]) {
    let mut put = |x: f64, y: f64| {
        let (x, y) = (x.round_ties_even(), y.round_ties_even());
        if x >= 0.0 && y >= 0.0 && x < width as f64 && y < height as f64 {
            let i = (y as usize * width + x as usize) * 3;
            rgb[i..i + 3].copy_from_slice(&[255, 0, 0]);
        }
    };
    for l in lines {
        let (rho, theta) = (l.rho as f64, l.theta as f64);
        let (c, s) = (theta.cos(), theta.sin());
        if s.abs() >= c.abs() {
            for x in 0..width {
                put(x as f64, (rho - x as f64 * c) / s);
            }
        } else {
            for y in 0..height {
                put((rho - y as f64 * s) / c, y as f64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_votes_in_shared_memory_while_the_edge_list_fits_in_cache() {
        assert_eq!(Strategy::Auto.for_points(0), Strategy::Shared);
        assert_eq!(Strategy::Auto.for_points(AUTO_SHARED_MAX_POINTS), Strategy::Shared);
        assert_eq!(Strategy::Auto.for_points(AUTO_SHARED_MAX_POINTS + 1), Strategy::Global);
        assert_eq!(Strategy::Shared.for_points(u64::MAX), Strategy::Shared);
        assert_eq!(Strategy::Global.for_points(0), Strategy::Global);
    }

    #[test]
    fn default_layout_is_opencvs() {
        let s = HoughSpace::new(HoughParams::default(), 384, 191).unwrap();
        assert_eq!((s.thetas, s.rhos, s.rho_offset()), (180, 2 * (384 + 191) + 1, 384 + 191));
        assert_eq!(s.theta(90), 90.0f32 * (std::f64::consts::PI / 180.0) as f32);
        // A full turn keeps its last angle, 360°: only a span of π drops it (OpenCV's rule).
        let full = HoughSpace::new(HoughParams { theta_max: 360.0, ..Default::default() }, 10, 10).unwrap();
        assert_eq!(full.thetas, 361);
    }

    #[test]
    fn a_horizontal_line_peaks_at_90_degrees() {
        let (w, h) = (40, 30);
        let px: Vec<u8> = (0..w * h).map(|i| if i / w == 12 { 255 } else { 0 }).collect();
        let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
        let acc = HoughVote { params: HoughParams::default(), strategy: Strategy::Auto }.cpu(&f).unwrap();
        let lines = HoughLines { threshold: 30, top: None }.cpu(&acc).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].rho, lines[0].theta_degrees, lines[0].votes), (12.0, 90.0, 40));
    }

    #[test]
    fn annotation_round_trips_and_is_checked() {
        let s = HoughSpace::new(
            HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 0.5, rho_step: 0.7 },
            33,
            21,
        )
        .unwrap();
        let mut f = Frame::new(s.rhos, s.thetas, 65535, Pixels::U16(vec![0; s.rhos * s.thetas].into()));
        f.set_annotation(ANNOTATION, &s.annotation());
        assert_eq!(HoughSpace::of_frame(&f).unwrap(), s);
        f.set_annotation(ANNOTATION, "theta-min=0 source=33x21");
        assert!(HoughSpace::of_frame(&f).unwrap_err().message.contains("frame is"));
    }

    /// OpenCV's loop as it reads: pixel by pixel, every angle, `round_ties_even`.
    fn reference_votes(space: &HoughSpace, frame: &Frame) -> Vec<u32> {
        let (cos, sin) = space.tables();
        let mut acc = vec![0u32; space.thetas * space.rhos];
        for i in 0..frame.pixel_count() {
            if frame.pixels.get(i) != 0 {
                let (x, y) = (i % frame.width, i / frame.width);
                for n in 0..space.thetas {
                    acc[n * space.rhos + vote_column(x, y, cos[n], sin[n], space.rho_offset()) as usize] += 1;
                }
            }
        }
        acc
    }

    #[test]
    fn votes_are_opencvs_loop_exactly() {
        let mut rng = fastrand::Rng::with_seed(6);
        let axes = [
            HoughParams::default(),
            HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 0.5, rho_step: 0.7 },
            HoughParams { theta_min: 10.0, theta_max: 370.0, theta_step: 0.37, rho_step: 1.3 },
            HoughParams { theta_min: 45.0, theta_max: 45.0, theta_step: 1.0, rho_step: 0.25 },
            // Over MAGIC_MAX_RHOS columns: the plain rounding.
            HoughParams { theta_min: 0.0, theta_max: 2.0, theta_step: 1.0, rho_step: 2e-5 },
        ];
        for (k, params) in axes.into_iter().enumerate() {
            let (w, h) = if k == 4 { (13, 9) } else { (300 + rng.usize(..300), 1 + rng.usize(..200)) };
            let density = [0.02, 0.5, 1.0][k % 3];
            let px: Vec<u16> =
                (0..w * h).map(|_| if rng.f64() < density { 1 + rng.u16(..1000) } else { 0 }).collect();
            let wide = Frame::new(w, h, 1000, Pixels::U16(px.clone().into()));
            let narrow = Frame::new(w, h, 255, Pixels::U8(px.iter().map(|&v| v.min(255) as u8).collect()));
            let space = HoughSpace::new(params, w, h).unwrap();
            assert_eq!(space.rhos > MAGIC_MAX_RHOS, k == 4);
            for frame in [wide, narrow] {
                assert!(
                    HoughVote::votes_cpu(&space, &frame) == reference_votes(&space, &frame),
                    "{params:?}"
                );
            }
        }
    }

    /// Split over any number of threads, the votes and the lines are the one thread's.
    #[test]
    fn every_split_votes_as_one_thread() {
        let mut rng = fastrand::Rng::with_seed(31);
        let axes = [
            HoughParams::default(),
            HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 7.5, rho_step: 0.7 },
            // Over MAGIC_MAX_RHOS columns: the plain rounding.
            HoughParams { theta_min: 0.0, theta_max: 2.0, theta_step: 1.0, rho_step: 2e-5 },
        ];
        for (w, h) in crate::parallel::testing::sizes(&mut rng) {
            for (k, params) in axes.into_iter().enumerate() {
                if k == 2 && w * h > 400 {
                    continue;
                }
                let density = rng.f64();
                let px: Vec<u8> = (0..w * h).map(|_| if rng.f64() < density { 255 } else { 0 }).collect();
                let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
                let vote = HoughVote { params, strategy: Strategy::Auto };
                let what = format!("{w}x{h} {params:?}");
                crate::parallel::testing::same_on_each_pool(&what, || {
                    let acc = vote.cpu(&f).unwrap();
                    let lines = HoughLines { threshold: 2, top: None }.cpu(&acc).unwrap();
                    (acc, lines)
                });
            }
        }
    }

    #[test]
    fn coarse_rho_steps_are_refused() {
        let p = HoughParams { rho_step: 1000.0, ..Default::default() };
        assert!(HoughSpace::new(p, 512, 512).unwrap_err().message.contains("too coarse"));
    }
}
