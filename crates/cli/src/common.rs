//! The options every tool takes: their definitions ([`COMMON_FLAGS`]), their values ([`Common`])
//! with their defaults from the environment, each one checked as it is parsed.

use std::ffi::OsString;
use std::time::Duration;

use histopipe_frame::{RawSpec, DEFAULT_MAX_PIXELS};

use crate::dispatch::{BackendChoice, Devices};
use crate::flags::{Flag, FlagError, Given, Operand};
use crate::Error;

/// The options every tool takes.
#[derive(Debug, Clone)]
pub struct Common {
    pub backend: BackendChoice,
    pub device: Devices,
    pub raw: Option<RawSpec>,
    pub max_pixels: u64,
    /// `--max-work`: the most work one frame's operation may do ([`Common::MAX_WORK`]).
    pub max_work: u64,
    pub png: bool,
    /// `--quality`: JPEG output's quality, 1..=100.
    pub quality: u8,
    /// `--compression`: PNG output's zlib level, 0..=9; `None`, OpenCV's default.
    pub compression: Option<u8>,
    /// `-o PATH`, as given.
    pub output: Option<OsString>,
    /// `--fail-fast`: the first input that fails ends the run.
    pub fail_fast: bool,
    /// `--threads` (or `HISTOPIPE_THREADS`): frames worked on at once (see [`Common::workers`]),
    /// and the CPU backend's threads each frame's work is split over; `None`: every core the
    /// process may use.
    pub threads: Option<usize>,
    /// `--progress`: frames done, frames/s and MB/s on stderr.
    pub progress: bool,
    /// With `auto`, how long a stream runs on the CPU before the GPUs are opened for it
    /// (`HISTOPIPE_GPU_AFTER`, seconds) [`Common::GPU_AFTER`].
    pub gpu_after: Duration,
}

/// What every tool takes besides options: its input files.
pub const COMMON_OPERANDS: &[Operand] = &[Operand {
    name: "FILE...",
    help: "read these files, in order, each on its own; '-' or no FILE: standard input",
    group: "Files",
}];

/// The levels `--compression` takes, zlib's 0 to 9, at their positions: parsed and completed
/// from this one list.
const COMPRESSION_LEVELS: &[&str] = &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// The options every tool takes: their one definition ([`Common::accept`] takes each).
pub const COMMON_FLAGS: &[Flag] = &[
    Flag::with_value(
        "--output",
        "PATH",
        "write PATH instead of standard output, atomically: a temporary file beside it, renamed when \
         complete (on failure nothing is left, an old PATH is kept); its extension gives the format \
         (pgm, ppm, pnm, pam, png, jpg, tif, tiff, pfm, npy, raw; csv, tsv, npy for tables); fields {stem} {name} {dir} (of the \
         source file), {i} (frame in its file), {n} (frame in the stream) make one file per frame, \
         e.g. -o out/{stem}.png; folders are made as needed",
    )
    .short('o')
    .group("Files"),
    Flag::switch(
        "--fail-fast",
        "stop at the first input file that fails; by default every file is read and worked on, each \
         failure is one line naming the file (a bad frame ends its file), and a last line counts the \
         files that failed, with a non-zero exit status (2 if all were bad input, else 1)",
    )
    .group("Files"),
    Flag::with_value(
        "--raw",
        "WxH[:16]",
        "headerless frames of W x H samples, 8-bit or (:16) 16-bit little-endian (ffmpeg -f rawvideo \
         -pix_fmt gray / gray16le); frames until end of input [default: $HISTOPIPE_RAW, so one export \
         serves a whole pipeline; --raw none: frames with headers, whatever $HISTOPIPE_RAW says]",
    )
    .group("Input and output"),
    Flag::switch("--png", "write PNG instead of the input's container (a single frame only)")
        .group("Input and output"),
    Flag::with_value(
        "--quality",
        "Q",
        "JPEG output's quality, 1 to 100 [default: 95, as OpenCV's imwrite]",
    )
    .group("Input and output"),
    Flag::with_value(
        "--compression",
        "N",
        "PNG output's compression, 0 to 9, as OpenCV's IMWRITE_PNG_COMPRESSION: zlib's level N, each \
         row's filter chosen as libpng chooses it [default: OpenCV's own, for speed: every row \
         filtered by Sub, zlib's level 1 with its run-length strategy]",
    )
    .one_of(COMPRESSION_LEVELS)
    .group("Input and output"),
    Flag::with_value("--max-pixels", "N", "refuse frames of more than N pixels [default: 1073741824]")
        .group("Input and output"),
    Flag::with_value(
        "--max-work",
        "N",
        "refuse, before any of it is done, a frame whose operation would take more than N steps \
         of work, counted as the CPU backend does them: radon's angles x N^2 reads of its padded \
         square, colhist --angles' angles x turned pixels, a Hough vote's edge pixels x angles \
         (hough-segments: twice, and its walks' steps), other tools' pixels; the same on every \
         backend [default: 17179869184, 2^34]",
    )
    .group("Input and output"),
    Flag::with_value(
        "--backend",
        "B",
        "auto, cpu or gpu [default: $HISTOPIPE_BACKEND, else auto]; auto opens the GPUs once a stream \
         has run for $HISTOPIPE_GPU_AFTER seconds [1] (at once for a frame of many directions' work, \
         as radon's), then gives each frame to a GPU or to the CPU, whichever is done first; with the \
         GPU service up, a whole run to the service or to the CPU, whichever earlier runs of its kind \
         were faster on (histopipe-service(1)); the output is the same on all",
    )
    .one_of(BackendChoice::NAMES)
    .group("Backend"),
    Flag::with_value(
        "--device",
        "D",
        "the CUDA devices to use: a number, a list (0,1: frames dealt to both, the output in the \
         input's order) or all [default: 0]",
    )
    .group("Backend"),
    Flag::with_value(
        "--threads",
        "N",
        "CPU threads: frames worked on at once, and the threads a frame's CPU work is split over \
         [default: $HISTOPIPE_THREADS, else every core the process may use: its CPU affinity \
         (taskset) and cgroup CPU quota, whatever the backend: a GPU takes one frame at a time, and \
         the others are read, decoded and encoded meanwhile]; the output is the same for any number",
    )
    .group("Backend"),
    Flag::switch(
        "--progress",
        "report on stderr frames done, frames/s and MB/s of frame samples (as read: width x height x 1 \
         or 2 bytes), in place on a terminal (about 4 times a second), else a line at most once a \
         second; a last line at the end and, with auto or gpu, a line of the operations run on the CPU \
         and on each GPU (with $HISTOPIPE_TRACE=FILE, each tool appends a CSV line per stage of each \
         frame to FILE: read, work, write...; scripts/trace-summary sums it up)",
    )
    .group("Reporting"),
    Flag::switch("--help", "print this help").short('h').group("Reporting"),
    Flag::switch("--version", "print the version").short('V').group("Reporting"),
];

impl Common {
    /// The default of [`Common::gpu_after`]: about what opening a GPU takes (0.5 to 1 s measured
    /// on H100 and H200 machines), during which the cores are slower.
    pub const GPU_AFTER: Duration = Duration::from_secs(1);

    /// The default of [`Common::max_work`]: 2^34 steps, about 20 s of the CPU backend on two
    /// cores (radon reads 0.7 x 10^9 a second there) and a fraction of a second on a GPU. It
    /// admits every realistic job: radon of a 4096x4096 frame at 180 angles (6.0 x 10^9 reads)
    /// or at 0.5 degrees (1.2 x 10^10), colhist --angles 0:180:1 of a padded 4K frame (6.0 x
    /// 10^9), hough-segments of a 16384x16384 map with 5% edges (1.3 x 10^10); and refuses
    /// radon of a 1 MB PNG of 32768x32768 zeros (3.9 x 10^11, 40 minutes) and hough-segments of
    /// an 88 KB PNG of 8500x8500 edges (2.8 x 10^10, 34 s of two cores).
    pub const MAX_WORK: u64 = 1 << 34;

    pub fn from_env() -> Result<Common, Error> {
        let backend = match std::env::var("HISTOPIPE_BACKEND") {
            Ok(v) if !v.is_empty() => {
                BackendChoice::parse(&v).map_err(|e| Error::usage(format!("HISTOPIPE_BACKEND: {e}")))?
            }
            _ => BackendChoice::Auto,
        };
        let threads = match std::env::var("HISTOPIPE_THREADS") {
            Ok(v) if !v.is_empty() => {
                Some(parse_threads(&v).map_err(|e| Error::usage(format!("HISTOPIPE_THREADS: {e}")))?)
            }
            _ => None,
        };
        let raw = match std::env::var("HISTOPIPE_RAW") {
            Ok(v) if !v.is_empty() => {
                parse_raw(&v).map_err(|e| Error::usage(format!("HISTOPIPE_RAW: {e}")))?
            }
            _ => None,
        };
        let gpu_after = match std::env::var("HISTOPIPE_GPU_AFTER") {
            Ok(v) if !v.is_empty() => match v.parse::<f64>() {
                Ok(s) if s.is_finite() && (0.0..=1e6).contains(&s) => Duration::from_secs_f64(s),
                _ => {
                    let e = format!("HISTOPIPE_GPU_AFTER: bad value '{v}' (seconds, from 0 to 1000000)");
                    return Err(Error::usage(e));
                }
            },
            _ => Common::GPU_AFTER,
        };
        Ok(Common {
            backend,
            device: Devices::List(vec![0]),
            raw,
            max_pixels: DEFAULT_MAX_PIXELS,
            max_work: Common::MAX_WORK,
            png: false,
            quality: 95,
            compression: None,
            output: None,
            fail_fast: false,
            threads,
            progress: false,
            gpu_after,
        })
    }

    /// Takes one of [`COMMON_FLAGS`] (but `--help` and `--version`, which the parser answers);
    /// `Ok(false)` for another.
    pub fn accept(&mut self, given: &Given) -> Result<bool, FlagError> {
        match given.flag.long {
            "--backend" => self.backend = BackendChoice::parse(given.text()?)?,
            "--device" => self.device = Devices::parse(given.text()?)?,
            "--raw" => self.raw = parse_raw(given.text()?)?,
            "--max-pixels" => self.max_pixels = given.parse()?,
            "--max-work" => self.max_work = given.parse()?,
            "--png" => self.png = true,
            "--compression" => {
                let text = given.text()?;
                let level = COMPRESSION_LEVELS.iter().position(|&l| l == text);
                let level = level.ok_or("the compression is a whole number from 0 to 9")?;
                self.compression = Some(level as u8);
            }
            "--quality" => {
                self.quality = match given.parse::<u8>() {
                    Ok(q @ 1..=100) => q,
                    _ => return Err("the quality is a whole number from 1 to 100".into()),
                }
            }
            "--progress" => self.progress = true,
            "--fail-fast" => self.fail_fast = true,
            "--output" => {
                if given.os().is_empty() {
                    return Err("the path is empty".into());
                }
                self.output = Some(given.os().to_owned());
            }
            "--threads" => self.threads = Some(parse_threads(given.text()?)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Common {
    /// How many frames are worked on at once: `--threads`, else one per core, whatever the
    /// backend. With `gpu` each frame still takes its turn on a GPU, but a worker also decodes
    /// its frame's input and encodes its output, and those are most of a batch's time (100 4K
    /// JPEGs equalized to PNG on the 16-core H200 host: 7.7 s with 4 workers, 3.4 s with 16, as
    /// on the CPU backend).
    pub fn workers(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.threads.unwrap_or(cores)
    }
}

/// `--raw`'s value: `WxH[:16]`, or `none` for frames with headers.
fn parse_raw(text: &str) -> Result<Option<RawSpec>, String> {
    match text {
        "none" => Ok(None),
        spec => RawSpec::parse(spec).map(Some),
    }
}

/// A thread count: a whole number, at least 1.
fn parse_threads(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("bad thread count '{text}' (a whole number, at least 1)")),
    }
}
