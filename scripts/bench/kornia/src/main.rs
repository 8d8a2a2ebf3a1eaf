//! `kornia-peer`: kornia-rs (`kornia-imgproc`), the Rust library a user would pick instead of
//! histopipe, timed on the inputs histopipe-bench writes, as scripts/bench/cpu_peers.py times
//! OpenCV; one JSON line per case in the format of histopipe-bench.
//!
//!   kornia-peer kernels --dir D [--sizes WxH,...] [--content real,random] [--ops a,b]
//!                       [--threads all|N] [--quick] [--angle 30] [--low 50] [--high 150]
//!                       [--outputs DIR] [--device cpu|cuda]
//!
//! `--threads` sizes rayon's global pool, which kornia-imgproc runs on (impl `kornia-all` or
//! `kornia-N`). `--device cuda` (a build with the `cuda` feature) times kornia-imgproc's CUDA
//! paths instead (impl `kornia-cuda`, see cuda.rs). `--outputs DIR` writes each case's output
//! once, after its timing, as `<impl>-<op>-<content>-<W>x<H>.u8` with impl `kornia` or
//! `kornia-cuda` (a histogram: 256 little-endian u32 counts, `.u32`), for `cpu_peers.py agree` to
//! compare with OpenCV's.

mod cases;
#[cfg(feature = "cuda")]
mod cuda;
mod timing;

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kornia_image::{Image, ImageError, ImageSize};
use lexopt::{Arg, Parser, ValueExt};

use cases::{Case, Output, Params};
use timing::{time_cpu, Plan};

const VERSION: &str = env!("KORNIA_IMGPROC_VERSION");
const USAGE: &str = "\
usage: kornia-peer [--version] kernels --dir D [--sizes WxH,...] [--content real,random] [--ops a,b]
                           [--threads all|N] [--quick] [--angle 30] [--low 50] [--high 150]
                           [--outputs DIR] [--device cpu|cuda]
ops: histogram, equalize, rotate (rotate.nearest, rotate.bilinear), pad, edges, clahe
";

struct Options {
    dir: PathBuf,
    sizes: Vec<(usize, usize)>,
    content: Vec<String>,
    ops: Vec<String>,
    threads: Option<usize>,
    plan: Plan,
    params: Params,
    outputs: Option<PathBuf>,
    cuda: bool,
}

fn list(text: &str) -> Vec<String> {
    text.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn parse_sizes(text: &str) -> Result<Vec<(usize, usize)>, String> {
    list(text)
        .iter()
        .map(|s| {
            let (w, h) = s.split_once('x').ok_or_else(|| format!("size '{s}' is not WxH"))?;
            let n = |v: &str| v.parse::<usize>().map_err(|_| format!("size '{s}' is not WxH"));
            Ok((n(w)?, n(h)?))
        })
        .collect()
}

fn parse() -> Result<Options, lexopt::Error> {
    let mut p = Parser::from_env();
    let mut o = Options {
        dir: PathBuf::from("bench-inputs"),
        sizes: parse_sizes("640x651,2560x1707,3932x4000,4096x3112,7680x4320,16384x16384").unwrap(),
        content: list("real,random"),
        ops: cases::OPS.iter().map(|s| s.to_string()).collect(),
        threads: None,
        plan: Plan::FULL,
        params: Params { angle: 30.0, low: 50.0, high: 150.0 },
        outputs: None,
        cuda: false,
    };
    let mut command = None;
    while let Some(arg) = p.next()? {
        match arg {
            Arg::Value(v) if command.is_none() => command = Some(v.string()?),
            Arg::Long("dir") => o.dir = p.value()?.into(),
            Arg::Long("sizes") => o.sizes = parse_sizes(&p.value()?.string()?)?,
            Arg::Long("content") => o.content = list(&p.value()?.string()?),
            Arg::Long("ops") => o.ops = list(&p.value()?.string()?),
            Arg::Long("threads") => {
                let v = p.value()?.string()?;
                o.threads = if v == "all" {
                    None
                } else {
                    Some(v.parse().map_err(|_| format!("--threads {v}: all or a number"))?)
                };
            }
            Arg::Long("quick") => o.plan = Plan::QUICK,
            Arg::Long("angle") => o.params.angle = p.value()?.parse()?,
            Arg::Long("low") => o.params.low = p.value()?.parse()?,
            Arg::Long("high") => o.params.high = p.value()?.parse()?,
            Arg::Long("outputs") => o.outputs = Some(p.value()?.into()),
            Arg::Long("device") => {
                o.cuda = match p.value()?.string()?.as_str() {
                    "cpu" => false,
                    "cuda" if cfg!(feature = "cuda") => true,
                    "cuda" => return Err("this kornia-peer was built without its cuda feature".into()),
                    d => return Err(format!("--device {d}: cpu or cuda").into()),
                }
            }
            Arg::Short('V') | Arg::Long("version") => {
                let cuda = if cfg!(feature = "cuda") { ", cuda" } else { "" };
                println!("kornia-peer {} (kornia-imgproc {VERSION}{cuda})", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Arg::Short('h') | Arg::Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    match command.as_deref() {
        Some("kernels") => {}
        Some(c) => return Err(format!("unknown command '{c}' (kernels)").into()),
        None => return Err("a command is needed: kernels".into()),
    }
    for op in &o.ops {
        if let Some((_, why)) = cases::MISSING.iter().find(|(m, _)| m == op) {
            eprintln!("kornia-peer: kornia-imgproc {VERSION} has {why}: no '{op}'");
        } else if !cases::OPS.contains(&op.as_str()) {
            return Err(format!("unknown op '{op}' ({})", cases::OPS.join(", ")).into());
        }
    }
    Ok(o)
}

/// The frame `<content>-<W>x<H>.u8` of histopipe-bench gen, or None (said on stderr) when absent.
fn load(o: &Options, content: &str, w: usize, h: usize) -> Option<Image<u8, 1>> {
    let path = o.dir.join(format!("{content}-{w}x{h}.u8"));
    match std::fs::read(&path) {
        Ok(bytes) if bytes.len() == w * h => Image::new(ImageSize { width: w, height: h }, bytes).ok(),
        _ => {
            eprintln!("kornia-peer: {} missing, skipped", path.display());
            None
        }
    }
}

fn write_output(dir: &Path, prefix: &str, case: &mut Case, frame: &str) -> Result<(), String> {
    let name = format!("{prefix}-{}-{frame}", case.op);
    let err = |e: ImageError| format!("{}: {e}", case.op);
    let mut output = (case.run)().map_err(err)?;
    if let Some(fetch) = case.fetch.as_mut() {
        output = fetch().map_err(err)?;
    }
    let (path, bytes) = match output {
        Output::Image(img) => (dir.join(format!("{name}.u8")), img.as_slice().to_vec()),
        Output::Histogram(h) => {
            (dir.join(format!("{name}.u32")), h.iter().flat_map(|&c| (c as u32).to_le_bytes()).collect())
        }
        Output::OnDevice => return Err(format!("{}: nothing to fetch", case.op)),
    };
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(o: &Options) -> Result<(), String> {
    let threads = o.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().map_err(|e| e.to_string())?;
    #[cfg(feature = "cuda")]
    let device = if o.cuda { Some(cuda::Device::open()?) } else { None };
    #[cfg(feature = "cuda")]
    let gpu = device.as_ref().map(|d| d.name.as_str());
    #[cfg(not(feature = "cuda"))]
    let gpu: Option<&str> = None;
    let (imp, prefix, header) = match gpu {
        Some(name) => (
            "kornia-cuda".to_string(),
            "kornia-cuda",
            format!(r#""kornia_imgproc":"{VERSION}","name":"{name}""#),
        ),
        None => {
            let imp =
                if o.threads.is_none() { "kornia-all".to_string() } else { format!("kornia-{threads}") };
            (imp, "kornia", format!(r#""kornia_imgproc":"{VERSION}","threads":{threads}"#))
        }
    };
    let mut out = io::stdout().lock();
    let line = |out: &mut io::StdoutLock, s: String| {
        writeln!(out, "{s}").and_then(|_| out.flush()).map_err(|e| e.to_string())
    };
    line(&mut out, format!(r#"{{"suite":"device","impl":"{imp}",{header}}}"#))?;
    if let Some(dir) = &o.outputs {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut skipped = 0;
    for &(w, h) in &o.sizes {
        for content in &o.content {
            let Some(src) = load(o, content, w, h) else { continue };
            let frame = format!("{content}-{w}x{h}");
            #[cfg(feature = "cuda")]
            let cases = match &device {
                Some(dev) => cuda::cases(dev, &src, &o.ops, o.params).map_err(|e| format!("{frame}: {e}"))?,
                None => cases::cases(&src, &o.ops, o.params),
            };
            #[cfg(not(feature = "cuda"))]
            let cases = cases::cases(&src, &o.ops, o.params);
            for mut case in cases {
                let fail = |e: ImageError| format!("{} {frame}: {e}", case.op);
                // A case kornia cannot run (its CUDA warp_affine takes 3-channel f32 alone) is
                // reported and skipped: the cases after it are still timed, and the exit status
                // says one was lost. On CUDA the first call compiles the kernels (NVRTC): not a
                // sample.
                let first = if o.cuda { (case.run)().map(drop).map_err(fail) } else { Ok(()) };
                let stats = match first.and_then(|()| {
                    time_cpu(o.plan, &mut || (case.run)().map(|r| drop(std::hint::black_box(r)))).map_err(fail)
                }) {
                    Ok(stats) => stats,
                    Err(e) => {
                        eprintln!("kornia-peer: {e}");
                        skipped += 1;
                        continue;
                    }
                };
                let mut s = format!(
                    r#"{{"suite":"kernel","impl":"{imp}","content":"{content}","width":{w},"height":{h},"threads":{threads},"op":"{}","median_ms":{},"min_ms":{},"p90_ms":{},"runs":{},"call":"{}""#,
                    case.op, stats.median, stats.min, stats.p90, stats.runs, case.call
                );
                if let Some(note) = case.note {
                    let _ = write!(s, r#","note":"{note}""#);
                }
                s.push('}');
                line(&mut out, s)?;
                if let Some(dir) = &o.outputs {
                    write_output(dir, prefix, &mut case, &frame)?;
                }
            }
        }
    }
    match skipped {
        0 => Ok(()),
        n => Err(format!("{n} case(s) could not run (above)")),
    }
}

fn main() -> ExitCode {
    let result = parse().map_err(|e| e.to_string()).and_then(|o| run(&o));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kornia-peer: {e}");
            ExitCode::FAILURE
        }
    }
}
