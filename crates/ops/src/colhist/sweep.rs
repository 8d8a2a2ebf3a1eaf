//! `colhist --angles`: the counts of every column (or row) of a frame after each of many turns,
//! from one read of the frame (and, on the GPU, one upload).
//!
//! Angle i's counts are exactly [`ColHist`]'s of [`Rotate`]'s output for turn i: the same turn
//! (the caller builds it as `rotate` does), the same geometry composed onto the turned frame
//! ([`Rotate::turned_geometry`]), so the same data pixels are counted. Both backends run those two
//! operations themselves, turn after turn: the CPU on the pool's threads, a turn per task, the
//! GPU on one stream into a scratch frame and one output buffer. So the counts are the loop's,
//! bit for bit, whatever the backend and the thread count.
//!
//! [`TurnByTurn`] is the sweep one turn at a time, for what that one pass does not do: a colour
//! frame turned bilinearly, made gray after each turn, and one column of each turned frame
//! (`colhist --angles` with `--line X,Y` or `--segment X,Y,R`).

use histopipe_frame::colour::into_gray;
use histopipe_frame::{Channels, Frame, Line, Pixels};
use histopipe_gpu::cudarc::driver::CudaSlice;
use histopipe_gpu::Buffer;

use super::{fused, Along, ColHist, ColHistParams, ColHistPlan, Histograms};
use crate::rotate::Rotate;
use crate::{parallel, with_samples, Gpu, Op, OpError, Sample, Work};

/// Turns counted at once by [`ColHistSweep::cpu_each`]: while a turn's last strips are counted,
/// the pool's other threads count the next turns'.
const TURNS_AT_ONCE: usize = 3;

/// `colhist` after each turn of one frame.
#[derive(Debug, Clone)]
pub struct ColHistSweep {
    /// The turns, in order; each of the frame the op is run on (its size and fill).
    pub turns: Vec<Rotate>,
    pub params: ColHistParams,
}

/// The counts of a sweep: turn i's `bins x lines[i]` matrix (bin-major, as
/// [`Histograms`]) at `offsets()[i]` of `counts`, turn after turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub bins: usize,
    /// Each turn's columns (or rows): all equal unless the turns change the frame's size.
    pub lines: Vec<usize>,
    pub counts: Vec<u32>,
}

impl Sweep {
    /// Where each turn's counts start in `counts`, and (last) their end.
    pub fn offsets(&self) -> Vec<usize> {
        offsets(self.bins, &self.lines)
    }

    /// Turn `i`'s counts, `bins x lines[i]`.
    pub fn turn(&self, i: usize) -> &[u32] {
        let start: usize = self.lines[..i].iter().map(|l| l * self.bins).sum();
        &self.counts[start..start + self.bins * self.lines[i]]
    }
}

/// The samples of an 8-bit gray frame, the frames whose turns are counted without being made
/// (`fused`).
fn gray_bytes(frame: &Frame) -> Option<&[u8]> {
    match &frame.pixels {
        Pixels::U8(bytes) if frame.channels.count() == 1 => Some(bytes),
        _ => None,
    }
}

fn offsets(bins: usize, lines: &[usize]) -> Vec<usize> {
    let mut at = vec![0];
    for l in lines {
        at.push(at[at.len() - 1] + bins * l);
    }
    at
}

impl ColHistSweep {
    /// The count after each turn of `frame`: [`ColHistParams::for_shape`] of the turned frame's
    /// size and geometry, as `colhist` builds it for `rotate`'s output.
    pub fn counts(&self, frame: &Frame) -> Result<Vec<ColHist>, OpError> {
        self.turns
            .iter()
            .map(|r| {
                let geometry = r.turned_geometry(frame);
                self.params.for_shape(r.out_width, r.out_height, frame.maxval, geometry.as_ref())
            })
            .collect()
    }

    /// The counters of the whole sweep, `None` past `usize`: each turn's bins x lines, summed.
    pub fn len(&self, frame: &Frame) -> Result<Option<usize>, OpError> {
        let ops = self.counts(frame)?;
        Ok(self.turns.iter().zip(&ops).try_fold(0usize, |n, (r, op)| {
            (op.bins as usize).checked_mul(op.lines(r.out_width, r.out_height))?.checked_add(n)
        }))
    }

    /// Turns to count at once where the counts go to a writer a group at a time (`colhist
    /// --angles`, which writes a long cube while the rest is counted), each turn's counts being
    /// `turn_bytes` long: about 16 MiB of counts a group, in groups of equal size. An 8-bit gray
    /// frame's turns are each split over the pool's threads (`fused`: 3 to 4 turns of a padded 4K
    /// frame a group, the first written after a few ms); others' are not as evenly, and take at
    /// least a turn a thread (with 3 turns a group, 16 cores made a 4K cube of 37 turns in 0.21
    /// s).
    fn turns_per_group(&self, frame: &Frame, turn_bytes: usize) -> usize {
        let mut most = ((16 << 20) / turn_bytes.max(1)).max(1);
        if gray_bytes(frame).is_none() {
            most = most.max(parallel::threads());
        }
        let n = self.turns.len();
        n.div_ceil(n.div_ceil(most).max(1)).max(1)
    }

    /// The sweep in parts to count one after the other where each part's counts go to a writer
    /// while the next is counted: groups of turns ([`ColHistSweep::turns_per_group`], each
    /// turn's counts `turn_bytes` long), the last group's turns one at a time, so that what is
    /// left to write once the counting is done is one turn's counts, not a group's.
    pub fn groups(&self, frame: &Frame, turn_bytes: usize) -> Vec<ColHistSweep> {
        let group = self.turns_per_group(frame, turn_bytes);
        let n = self.turns.len();
        let (body, last) = self.turns.split_at(if n > group { n - group } else { n });
        let part = |turns: &[Rotate]| ColHistSweep { turns: turns.to_vec(), params: self.params };
        body.chunks(group).chain(last.chunks(1)).map(part).collect()
    }

    /// [`Op::cpu`]'s counts handed on as they are made: `each(first, part)` for consecutive
    /// parts of the sweep in order, `part` holding turns `first..`, each as soon as it and the
    /// turns before it are counted. An 8-bit gray frame's turns (`fused`) go a turn at a time, a
    /// few counted at once ([`parallel::in_order`]): in groups of turns, the pool's threads
    /// waited for each group's last strips and for the calling thread between groups (a padded
    /// 4K cube of 36 turns: 16 threads busy 75% of the time, 100% once all in one group). Other
    /// frames go a group at a time ([`ColHistSweep::groups`]). The counts are
    /// [`Op::cpu`]'s, bit for bit.
    pub fn cpu_each(&self, frame: &Frame, mut each: impl FnMut(usize, Sweep)) -> Result<(), OpError> {
        let ops = self.check(frame)?;
        let bins = ops.first().map_or(0, |op| op.bins as usize);
        let lines: Vec<usize> =
            self.turns.iter().zip(&ops).map(|(r, op)| op.lines(r.out_width, r.out_height)).collect();
        let fused_all = self.turns.iter().zip(&ops).all(|(r, op)| fused::applies(r, op));
        let Some(bytes) = gray_bytes(frame).filter(|_| fused_all) else {
            let mut first = 0;
            for part in self.groups(frame, 4 * bins * lines.iter().max().copied().unwrap_or(0)) {
                let turns = part.turns.len();
                each(first, part.cpu(frame)?);
                first += turns;
            }
            return Ok(());
        };
        let turn = |t: usize| {
            // Every word written by `fused`, as in `Op::cpu`.
            let mut counts = parallel::words(bins * lines[t]);
            fused::count(bytes, vec![(&self.turns[t], &ops[t], &mut counts[..])]);
            counts
        };
        parallel::in_order(self.turns.len(), TURNS_AT_ONCE, turn, |t, counts| {
            each(t, Sweep { bins, lines: vec![lines[t]], counts })
        });
        Ok(())
    }

    fn check(&self, frame: &Frame) -> Result<Vec<ColHist>, OpError> {
        if let Some(r) = self.turns.iter().find(|r| (r.width, r.height) != (frame.width, frame.height)) {
            return Err(OpError::invalid(format!(
                "a turn of a {}x{} frame for a frame of {}x{}",
                r.width, r.height, frame.width, frame.height
            )));
        }
        self.counts(frame)
    }

    fn sweep(&self, ops: &[ColHist], counts: Vec<u32>) -> Sweep {
        let lines = self.turns.iter().zip(ops).map(|(r, op)| op.lines(r.out_width, r.out_height)).collect();
        Sweep { bins: ops.first().map_or(0, |op| op.bins as usize), lines, counts }
    }
}

impl Op for ColHistSweep {
    type Output = Sweep;

    /// Every pixel of every turned frame, made by its turn and counted.
    fn work(&self, frame: &Frame) -> Work {
        let turned: u128 = self.turns.iter().map(|r| (r.out_width * r.out_height) as u128).sum();
        let channels = frame.channels.count() as u128;
        let widest = self.turns.iter().map(|r| (r.out_width, r.out_height)).max_by_key(|&(w, h)| w * h);
        let (w, h) = widest.unwrap_or((0, 0));
        Work {
            amount: turned * channels,
            what: format!("{} angles x turned pixels, up to {w}x{h}", self.turns.len()),
        }
    }

    /// Turn i's counts are `ops[i].cpu(&turns[i].cpu(frame))`, each written to its own part of the
    /// output: an 8-bit frame's turns counted as they are read, strips of every turn at once on
    /// the pool's threads (`fused`); others made and counted, turns spread over the pool's threads
    /// (each turn's operations split further as they do alone). The counts do not depend on the
    /// threads.
    fn cpu(&self, frame: &Frame) -> Result<Sweep, OpError> {
        let ops = self.check(frame)?;
        let lines: Vec<usize> =
            self.turns.iter().zip(&ops).map(|(r, op)| op.lines(r.out_width, r.out_height)).collect();
        let bins = ops.first().map_or(0, |op| op.bins as usize);
        let at = offsets(bins, &lines);
        // Every word written below: `fused` writes each bin of each column (every bin holds a
        // value), a made turn's counts are copied whole.
        let mut counts = parallel::words(at[at.len() - 1]);
        let mut parts = Vec::with_capacity(self.turns.len());
        let mut rest = &mut counts[..];
        for l in &lines {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(bins * l);
            parts.push(part);
            rest = tail;
        }
        let work = self.turns.iter().zip(&ops).zip(parts).map(|((r, op), out)| (r, op, out));
        // An 8-bit gray frame's turns counted without being made (`fused`), all at once; the
        // rest made and counted.
        let made: Vec<_> = match gray_bytes(frame) {
            Some(bytes) => {
                let (fused, made) = work.partition(|(r, op, _)| fused::applies(r, op));
                fused::count(bytes, fused);
                made
            }
            None => work.collect(),
        };
        let one = |(r, op, out): (&Rotate, &ColHist, &mut [u32])| -> Result<(), OpError> {
            let turned = r.cpu(frame)?;
            out.copy_from_slice(&op.cpu(&turned)?.counts);
            Ok(())
        };
        if parallel::threads() > 1 && made.len() > 1 {
            use rayon::prelude::*;
            made.into_par_iter().try_for_each(one)?;
        } else {
            made.into_iter().try_for_each(one)?;
        }
        Ok(self.sweep(&ops, counts))
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Sweep, OpError> {
        let ops = self.check(frame)?;
        let counts = with_samples!(&frame.pixels, v => self.gpu_counts(gpu, frame, v)?);
        Ok(self.sweep(&ops, counts))
    }
}

impl ColHistSweep {
    fn gpu_counts<T: Sample>(&self, gpu: &Gpu, frame: &Frame, input: &[T]) -> Result<Vec<u32>, OpError> {
        let n =
            self.len(frame)?.ok_or_else(|| OpError::invalid("the sweep's counts do not fit in memory"))?;
        let src = gpu.upload::<T>("colhist.sweep.in", input)?;
        let mut out = gpu.buffer::<u32>("colhist.sweep.counts", n.max(1))?;
        self.plan::<T>(gpu, frame)?.queue(&src, &mut out)?;
        // Into a buffer the writer gave back, if one is kept: fresh pages cost their faults.
        let mut counts = parallel::words(n);
        gpu.download(&out, &mut counts)?;
        Ok(counts)
    }

    /// The device plan of this sweep of `frame` (its size, maxval and geometry; not its samples).
    pub fn plan<'g, T: Sample>(
        &self,
        gpu: &'g Gpu,
        frame: &Frame,
    ) -> Result<ColHistSweepPlan<'g, T>, OpError> {
        let ops = self.check(frame)?;
        let pixels = self.turns.iter().map(|r| r.out_width * r.out_height).max().unwrap_or(0);
        let counters = self
            .turns
            .iter()
            .zip(&ops)
            .map(|(r, op)| op.bins as usize * op.lines(r.out_width, r.out_height))
            .max()
            .unwrap_or(0);
        Ok(ColHistSweepPlan {
            gpu,
            turns: self.turns.clone(),
            ops,
            colhist: None,
            turned: gpu.buffer::<T>("colhist.sweep.turned", pixels.max(1))?,
            counts: gpu.buffer::<u32>("colhist.sweep.one", counters.max(1))?,
        })
    }
}

/// The device plan of a sweep: per turn, `rotate`'s kernel into a scratch frame, `colhist`'s
/// plan on it into a scratch matrix, and a copy of that matrix into the turn's part of the
/// output, all on the one stream. The one GPU sequence that `Op::gpu` and the benchmark run.
pub struct ColHistSweepPlan<'g, T: Sample> {
    gpu: &'g Gpu,
    turns: Vec<Rotate>,
    ops: Vec<ColHist>,
    /// `colhist`'s plan for the last turn's output size (a sweep without `expand` has one size).
    colhist: Option<ColHistPlan<'g>>,
    turned: Buffer<'g, T>,
    counts: Buffer<'g, u32>,
}

impl<T: Sample> ColHistSweepPlan<'_, T> {
    /// Queues the sweep of the frame in `src` (the plan's frame's size) into `out`, which holds
    /// every turn's counts one after the other ([`Sweep`]'s layout).
    pub fn queue(&mut self, src: &CudaSlice<T>, out: &mut CudaSlice<u32>) -> Result<(), OpError> {
        let mut at = 0usize;
        for (r, op) in self.turns.iter().zip(&self.ops) {
            let (w, h) = (r.out_width, r.out_height);
            let n = op.bins as usize * op.lines(w, h);
            if at + n > out.len() {
                return Err(OpError::invalid(format!(
                    "an output of {} counters for a sweep of more",
                    out.len()
                )));
            }
            r.plan(self.gpu).queue(src, &mut self.turned)?;
            let plan = match &mut self.colhist {
                Some(p) if p.shape() == (w, h) => p,
                slot => slot.insert(op.plan(self.gpu, w, h)?),
            };
            plan.set_mask(op.mask.clone());
            plan.queue(&self.turned, None, &mut self.counts)?;
            if n > 0 {
                self.gpu.stream().memcpy_dtod(&self.counts.slice(..n), &mut out.slice_mut(at..at + n))?;
            }
            at += n;
        }
        Ok(())
    }
}

/// `colhist --angles` a turn at a time: each turn's operations run one after the other on the
/// backend this op is run on (each splitting its work as it does alone), the counts the same as
/// [`ColHistSweep`]'s loop of `rotate` then `colhist`. For what its one pass does not do:
/// - a colour frame turned bilinearly: each channel turned as `rotate` turns it, then made gray
///   as `colhist` reads `rotate`'s output (OpenCV's BGR2GRAY, alpha dropped); bilinear blends
///   each channel, so gray before the turns would not give the same samples;
/// - [`Through`]: one column of each turned frame.
#[derive(Debug, Clone)]
pub struct TurnByTurn {
    pub sweep: ColHistSweep,
    pub through: Option<Through>,
}

/// With `--angles`, `--line X,Y` (`--segment X,Y,R`): in each turned frame, the column through
/// `point` of the original in each direction (within `half` pixels of it).
#[derive(Debug, Clone, Copy)]
pub struct Through {
    pub point: (f64, f64),
    pub half: f64,
    pub segment: bool,
}

/// The backend a [`TurnByTurn`] runs its turns' operations on: the one it is run on.
#[derive(Clone, Copy)]
enum On<'g> {
    Cpu,
    Gpu(&'g Gpu),
}

impl On<'_> {
    fn run<O: Op>(self, op: &O, frame: &Frame) -> Result<O::Output, OpError> {
        match self {
            On::Cpu => op.cpu(frame),
            On::Gpu(gpu) => op.gpu(gpu, frame),
        }
    }

    /// `r` of each channel of `frame`, turned as a gray frame of its own ([`Frame::plane`]) and
    /// put back together, as `rotate` turns colour; a gray frame turned as it is.
    fn turn(self, r: &Rotate, frame: &Frame) -> Result<Frame, OpError> {
        if frame.channels == Channels::Gray {
            return self.run(r, frame);
        }
        let planes = (0..frame.channels.count())
            .map(|c| self.run(r, &frame.plane(c)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Frame::from_planes(frame.channels, &planes))
    }
}

impl Through {
    /// The counts of `op` (`bins` bins) of the column of `turned` through the point: a line of
    /// `turned`'s original, vertical in it, which [`Along::column`] picks; no rows, no counts.
    fn count(&self, on: On<'_>, op: &ColHist, turned: &Frame, bins: usize) -> Result<Histograms, OpError> {
        let g = turned.geometry_or_identity();
        let points = Line::vertical_through(self.point, &g, self.half).map_err(OpError::invalid)?;
        let c = Along { points, segment: self.segment }.column(turned)?;
        match op.column(turned, c.x, c.rows, None) {
            (_, pixels) if pixels.height == 0 => Ok(Histograms { bins, lines: 1, counts: vec![0; bins] }),
            (one, pixels) => on.run(&one, &pixels),
        }
    }
}

impl TurnByTurn {
    /// One turn at a time: the turned frame, made gray, counted as colhist counts it.
    fn counts(&self, on: On<'_>, frame: &Frame) -> Result<Sweep, OpError> {
        let ops = self.sweep.counts(frame)?;
        let bins = ops.first().map_or(0, |op| op.bins as usize);
        let lines: Vec<usize> = match self.through {
            Some(_) => vec![1; ops.len()],
            None => {
                self.sweep.turns.iter().zip(&ops).map(|(r, op)| op.lines(r.out_width, r.out_height)).collect()
            }
        };
        let mut counts = Vec::with_capacity(lines.iter().map(|l| bins * l).sum());
        for (r, op) in self.sweep.turns.iter().zip(&ops) {
            let turned = into_gray(on.turn(r, frame)?);
            let h = match &self.through {
                Some(through) => through.count(on, op, &turned, bins)?,
                None => on.run(op, &turned)?,
            };
            counts.extend_from_slice(&h.counts);
        }
        Ok(Sweep { bins, lines, counts })
    }
}

impl Op for TurnByTurn {
    type Output = Sweep;

    /// [`ColHistSweep`]'s: every pixel of every turned frame, made by its turn and counted.
    fn work(&self, frame: &Frame) -> Work {
        self.sweep.work(frame)
    }

    fn cpu(&self, frame: &Frame) -> Result<Sweep, OpError> {
        self.counts(On::Cpu, frame)
    }

    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Sweep, OpError> {
        self.counts(On::Gpu(gpu), frame)
    }
}
