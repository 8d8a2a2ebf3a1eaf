//! `histopipe-bench`: histopipe's kernels timed in process with CUDA events, each next to a
//! device-to-device copy of the same bytes (the memory floor) timed in the same run, and the CPU
//! implementations timed with the host clock. One JSON object per line, the format the peer
//! programs of `scripts/bench/` print too; `scripts/bench/run` drives it all.
//!
//!   histopipe-bench gen --dir D [--sizes WxH,...] [--fixture F]     write the inputs
//!   histopipe-bench kernels --dir D [--sizes ...] [--only a,b] [--quick] [--content real,random]
//!                          [--cpu-max-pixels N] [--no-cpu] [--threads N]   time them
//!   histopipe-bench cpu --dir D [...as kernels]                     the CPU implementations only,
//!                                                                    no GPU needed
//!   histopipe-bench list                                             the entries' names

mod inputs;
mod registry;
mod timing;

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use histopipe_gpu::cudarc::driver::sys::CUdevice_attribute;
use histopipe_gpu::cudarc::driver::{CudaSlice, DriverError};
use histopipe_gpu::{Gpu, GpuError};
use histopipe_ops::{parallel, OpError};
use lexopt::{Arg, Parser, ValueExt};

use inputs::{Content, Input, InputKind};
use registry::{host_frame, set_count, Entry};
use timing::{time_cpu, GpuTimer, Plan, Stats};

/// Any failure: the benchmark reports it on one line and exits 1.
#[derive(Debug)]
pub struct BenchError(pub String);

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for BenchError {
    fn from(e: String) -> Self {
        BenchError(e)
    }
}

impl From<GpuError> for BenchError {
    fn from(e: GpuError) -> Self {
        BenchError(e.0)
    }
}

impl From<DriverError> for BenchError {
    fn from(e: DriverError) -> Self {
        BenchError(format!("CUDA: {e:?}"))
    }
}

impl From<OpError> for BenchError {
    fn from(e: OpError) -> Self {
        BenchError(e.to_string())
    }
}

impl From<io::Error> for BenchError {
    fn from(e: io::Error) -> Self {
        BenchError(e.to_string())
    }
}

impl From<lexopt::Error> for BenchError {
    fn from(e: lexopt::Error) -> Self {
        BenchError(e.to_string())
    }
}

struct Options {
    command: String,
    dir: PathBuf,
    sizes: Vec<(usize, usize)>,
    contents: Vec<Content>,
    only: Option<Vec<String>>,
    plan: Plan,
    fixture: PathBuf,
    cpu_max_pixels: usize,
    /// The CPU implementations' threads (`None`: every core the process may use).
    threads: Option<usize>,
}

const HELP: &str = "\
histopipe-bench: time histopipe's kernels (CUDA events) next to a device-to-device copy

Usage:
  histopipe-bench gen --dir D [--sizes WxH,...] [--fixture F]
  histopipe-bench kernels --dir D [--sizes WxH,...] [--only a,b] [--quick] [--content real,random]
                  [--cpu-max-pixels N | --no-cpu] [--threads N]
  histopipe-bench cpu --dir D [--sizes WxH,...] [--only a,b] [--quick] [--content real,random]
                  [--cpu-max-pixels N] [--threads N]
  histopipe-bench list

Options:
  --dir D              where the raw inputs are (gen writes them; kernels reads them)
  --sizes WxH,...      frame sizes [default: 640x651,2560x1707,3932x4000,4096x3112,7680x4320,16384x16384]
  --content C,...      real (the fixture scaled up), random (uniform) [default: both]
  --fixture F          the real content's source [default: tests/fixtures/camera.pgm]
  --only a,b           only these entries (see list); a name also selects its sub-entries (rotate:
                       rotate.nearest, rotate.bilinear; equalize: equalize.histogram, .scan, .map;
                       edges: edges.gradient; hough: hough-vote, hough-vote.global, .shared,
                       hough-lines); =name selects that entry alone (=radon: not radon.fine)
  --quick              fewer runs per case
  --cpu-max-pixels N   time the CPU implementations on frames of at most N pixels [default: 33554432]
  --no-cpu             never time the CPU implementations
  --threads N          the CPU implementations' threads [default: every core the process may use]
Output: one JSON object per line on stdout.";

fn parse() -> Result<Option<Options>, BenchError> {
    let mut o = Options {
        command: String::new(),
        dir: PathBuf::from("bench-inputs"),
        sizes: inputs::DEFAULT_SIZES.to_vec(),
        contents: Content::ALL.to_vec(),
        only: None,
        plan: Plan::FULL,
        fixture: PathBuf::from("tests/fixtures/camera.pgm"),
        cpu_max_pixels: 1 << 25,
        threads: None,
    };
    let mut p = Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Arg::Short('h') | Arg::Long("help") => {
                // A closed pipe (`--help | head`) is not an error worth a panic.
                let _ = writeln!(io::stdout(), "{HELP}");
                return Ok(None);
            }
            Arg::Long("dir") => o.dir = p.value()?.into(),
            Arg::Long("sizes") => o.sizes = inputs::parse_sizes(&p.value()?.string()?)?,
            Arg::Long("content") => {
                o.contents = p.value()?.string()?.split(',').map(Content::parse).collect::<Result<_, _>>()?;
            }
            Arg::Long("fixture") => o.fixture = p.value()?.into(),
            Arg::Long("only") => {
                o.only = Some(p.value()?.string()?.split(',').map(str::to_owned).collect());
            }
            Arg::Long("quick") => o.plan = Plan::QUICK,
            Arg::Long("cpu-max-pixels") => o.cpu_max_pixels = p.value()?.parse()?,
            Arg::Long("no-cpu") => o.cpu_max_pixels = 0,
            Arg::Long("threads") => {
                let n: usize = p.value()?.parse()?;
                if n == 0 {
                    return Err(BenchError("--threads must be at least 1".into()));
                }
                o.threads = Some(n);
            }
            Arg::Value(v) if o.command.is_empty() => o.command = v.string()?,
            other => return Err(other.unexpected().into()),
        }
    }
    Ok(Some(o))
}

fn selected(entry: &Entry, only: &Option<Vec<String>>) -> bool {
    let Some(names) = only else { return true };
    names.iter().any(|n| match n.strip_prefix('=') {
        Some(exact) => entry.name == exact,
        None => {
            entry.name == n
                || entry.name.starts_with(&format!("{n}."))
                || entry.name.starts_with(&format!("{n}-"))
        }
    })
}

fn gen(o: &Options) -> Result<(), BenchError> {
    std::fs::create_dir_all(&o.dir)?;
    let fixture = inputs::read_fixture(&o.fixture)?;
    for &(w, h) in &o.sizes {
        for &c in &o.contents {
            let path = inputs::path(&o.dir, InputKind::Frame, c, w, h);
            if std::fs::metadata(&path).map(|m| m.len() == (w * h) as u64).unwrap_or(false) {
                continue;
            }
            std::fs::write(&path, inputs::generate(c, &fixture, w, h))?;
            eprintln!("histopipe-bench: wrote {}", path.display());
        }
    }
    Ok(())
}

/// One result line; `extra` is raw JSON members (`"k":v,...`) or empty.
fn emit(
    out: &mut impl Write,
    op: &str,
    imp: &str,
    input: &Input,
    stats: &Stats,
    extra: &str,
) -> Result<(), BenchError> {
    let num = |v: f64| if v.is_finite() { format!("{v:.6}") } else { "null".into() };
    let queue = stats.queue_us.map(|q| format!(",\"queue_us\":{}", num(q))).unwrap_or_default()
        + &stats.faults.map(|f| format!(",\"faults\":{}", num(f))).unwrap_or_default();
    writeln!(
        out,
        "{{\"suite\":\"kernel\",\"op\":\"{op}\",\"impl\":\"{imp}\",\"content\":\"{}\",\"width\":{},\
         \"height\":{},\"median_ms\":{},\"min_ms\":{},\"p90_ms\":{},\"runs\":{}{queue}{}{extra}}}",
        input.content.name(),
        input.width,
        input.height,
        num(stats.median),
        num(stats.min),
        num(stats.p90),
        stats.runs,
        if extra.is_empty() { "" } else { "," },
    )?;
    out.flush()?;
    Ok(())
}

/// The memory floor: a device-to-device copy of `bytes` bytes, rotating among as many buffer
/// pairs as the operation's input sets.
fn time_copy(gpu: &Gpu, timer: &GpuTimer<'_>, bytes: usize) -> Result<(Stats, usize), BenchError> {
    let stream = gpu.stream();
    let k = set_count(2 * bytes);
    let mut pairs: Vec<(CudaSlice<u8>, CudaSlice<u8>)> = Vec::with_capacity(k);
    for _ in 0..k {
        pairs.push((stream.alloc_zeros::<u8>(bytes.max(1))?, stream.alloc_zeros::<u8>(bytes.max(1))?));
    }
    let stats = timer.time(&mut |i| {
        let (src, dst) = &mut pairs[i % k];
        stream.memcpy_dtod(src, dst)?;
        Ok(())
    })?;
    Ok((stats, k))
}

/// Times the CPU implementation of `entry` on `input`, if it has one and the input is not over
/// `--cpu-max-pixels`: `histopipe-cpu` on several threads, `histopipe-cpu-1` on one.
fn time_cpu_case(o: &Options, entry: &Entry, input: &Input, out: &mut impl Write) -> Result<(), BenchError> {
    let Some(prepare) = entry.cpu.filter(|_| input.width * input.height <= o.cpu_max_pixels) else {
        return Ok(());
    };
    let mut cpu = prepare(input)?;
    let frame = host_frame(input);
    let stats = time_cpu(o.plan, &mut || cpu(&frame))?;
    // The report sets one thread (scripts/bench/run: `cpu --threads 1`) beside OpenCV's one.
    let threads = parallel::threads();
    let imp = if threads == 1 { "histopipe-cpu-1" } else { "histopipe-cpu" };
    emit(out, entry.name, imp, input, &stats, &format!("\"threads\":{threads}"))
}

/// Times one entry on one input: our kernels, the copy floor, and the CPU implementation.
fn time_case(
    o: &Options,
    gpu: &Gpu,
    timer: &GpuTimer<'_>,
    entry: &Entry,
    input: &Input,
    out: &mut impl Write,
) -> Result<(), BenchError> {
    let mut case = (entry.prepare)(gpu, input)?;
    let stats = timer.time(&mut |i| (case.gpu)(gpu, i))?;
    let (copy, copy_sets) = time_copy(gpu, timer, case.copy_bytes)?;
    let bytes = format!("\"traffic_bytes\":{},\"copy_bytes\":{}", case.traffic_bytes, case.copy_bytes);
    emit(out, entry.name, "histopipe-gpu", input, &stats, &format!("{bytes},\"sets\":{}", case.sets))?;
    emit(out, entry.name, "copy", input, &copy, &format!("{bytes},\"sets\":{copy_sets}"))?;
    // Free the device buffers before the CPU runs.
    drop(case);
    time_cpu_case(o, entry, input, out)
}

/// The entries `--only` selects (all without it); an error if none.
fn entries(o: &Options) -> Result<Vec<Entry>, BenchError> {
    let entries: Vec<Entry> = registry::all().into_iter().filter(|e| selected(e, &o.only)).collect();
    if entries.is_empty() {
        return Err(BenchError("--only selects no entry (see histopipe-bench list)".into()));
    }
    Ok(entries)
}

/// Calls `case` for every selected entry on every input it reads; a failed case is reported and
/// the others still run, and the error at the end counts them.
fn each_case(
    o: &Options,
    entries: &[Entry],
    mut case: impl FnMut(&Entry, &Input) -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    let mut failed = 0;
    for entry in entries {
        for &(w, h) in &o.sizes {
            for &c in &o.contents {
                let input = match inputs::load(&o.dir, entry.input, c, w, h) {
                    Ok(i) => i,
                    Err(e) => {
                        eprintln!("histopipe-bench: {}: skipped: {e}", entry.name);
                        continue;
                    }
                };
                if let Err(e) = case(entry, &input) {
                    eprintln!("histopipe-bench: {} {w}x{h} {}: {e}", entry.name, c.name());
                    failed += 1;
                }
            }
        }
    }
    if failed > 0 {
        return Err(BenchError(format!("{failed} case(s) failed")));
    }
    Ok(())
}

/// `cpu`: the CPU implementations alone, on a machine with or without a GPU.
fn cpu(o: &Options) -> Result<(), BenchError> {
    let entries: Vec<Entry> = entries(o)?.into_iter().filter(|e| e.cpu.is_some()).collect();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{{\"suite\":\"host\",\"impl\":\"histopipe-bench\",\"threads\":{},\"available_threads\":{}}}",
        parallel::threads(),
        parallel::available_threads()
    )?;
    each_case(o, &entries, |entry, input| time_cpu_case(o, entry, input, &mut out))
}

fn kernels(o: &Options) -> Result<(), BenchError> {
    let entries = entries(o)?;
    let gpu = Gpu::open(0)?;
    let ctx = gpu.context();
    let l2 = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
    let sms = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let threads = parallel::threads();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{{\"suite\":\"device\",\"impl\":\"histopipe-bench\",\"name\":\"{}\",\"arch\":{},\"l2_bytes\":{l2},\
         \"sms\":{sms},\"host_threads\":{threads}}}",
        gpu.name(),
        gpu.arch()
    )?;
    let timer = GpuTimer::new(&gpu, o.plan)?;
    each_case(o, &entries, |entry, input| time_case(o, &gpu, &timer, entry, input, &mut out))
}

fn run() -> Result<(), BenchError> {
    let Some(o) = parse()? else { return Ok(()) };
    parallel::set_threads(o.threads);
    match o.command.as_str() {
        "gen" => gen(&o),
        "kernels" => kernels(&o),
        "cpu" => cpu(&o),
        "list" => {
            let mut out = io::stdout().lock();
            for e in registry::all() {
                writeln!(out, "{}", e.name)?;
            }
            Ok(())
        }
        "" => Err(BenchError("no command (gen, kernels, cpu or list; see --help)".into())),
        other => Err(BenchError(format!("unknown command '{other}' (gen, kernels, cpu or list)"))),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("histopipe-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
