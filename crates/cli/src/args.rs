use std::str::FromStr;

use histopipe_frame::{RawSpec, DEFAULT_MAX_PIXELS};
use histopipe_ops::BackendChoice;
use lexopt::{Parser, ValueExt};

use crate::Error;

/// The options every tool takes.
#[derive(Debug, Clone)]
pub struct Common {
    pub backend: BackendChoice,
    pub device: usize,
    pub raw: Option<RawSpec>,
    pub max_pixels: u64,
    pub png: bool,
    /// The CPU backend's threads (`--threads`, `HISTOPIPE_THREADS`); `None`: every core the
    /// process may use.
    pub threads: Option<usize>,
}

/// The `--help` section for [`Common`]'s options.
pub const COMMON_HELP: &str = "\
Input and output:
  --raw WxH[:16]     headerless frames of W x H samples, 8-bit or (:16) 16-bit little-endian
                     (ffmpeg -f rawvideo -pix_fmt gray / gray16le); frames until end of input
  --png              write PNG instead of the input's container (a single frame only)
  --max-pixels N     refuse frames of more than N pixels [default: 1073741824]
Backend:
  --backend B        auto, cpu or gpu [default: $HISTOPIPE_BACKEND, else auto]; auto uses the GPU
                     when one is usable, else the CPU; the output is the same on both
  --device N         which CUDA device to use [default: 0]
  --threads N        the CPU backend's threads [default: $HISTOPIPE_THREADS, else every core the
                     process may use: its CPU affinity (taskset) and cgroup CPU quota]; the
                     output is the same for any number
  -h, --help         print this help
  -V, --version      print the version";

impl Common {
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
        Ok(Common { backend, device: 0, raw: None, max_pixels: DEFAULT_MAX_PIXELS, png: false, threads })
    }

    /// Takes option `name` if it is a common one; `Ok(false)` if it is not.
    pub fn accept(&mut self, name: &str, parser: &mut Parser) -> Result<bool, Error> {
        match name {
            "--backend" => {
                let v = parser.value()?;
                self.backend = BackendChoice::parse(&v.string()?)
                    .map_err(|e| Error::usage(format!("--backend: {e}")))?;
            }
            "--device" => self.device = parse_value(parser, "--device")?,
            "--raw" => {
                let v = parser.value()?.string()?;
                self.raw = Some(RawSpec::parse(&v).map_err(|e| Error::usage(format!("--raw: {e}")))?);
            }
            "--max-pixels" => self.max_pixels = parse_value(parser, "--max-pixels")?,
            "--png" => self.png = true,
            "--threads" => {
                let v = parser.value()?.string()?;
                self.threads = Some(parse_threads(&v).map_err(|e| Error::usage(format!("--threads: {e}")))?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A thread count: a whole number, at least 1.
fn parse_threads(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("bad thread count '{text}' (a whole number, at least 1)")),
    }
}

/// The value of option `name`, parsed; the error names the option and the value.
pub fn parse_value<T: FromStr>(parser: &mut Parser, name: &str) -> Result<T, Error>
where
    T::Err: std::fmt::Display,
{
    let raw = parser.value().map_err(|e| Error::usage(format!("{name}: {e}")))?;
    let text = raw.string().map_err(|_| Error::usage(format!("{name}: value is not valid UTF-8")))?;
    text.parse::<T>().map_err(|e| Error::usage(format!("{name}: bad value '{text}': {e}")))
}
