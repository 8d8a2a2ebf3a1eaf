//! What every operation is: a CPU and a GPU implementation of one computation, giving the same
//! output ([`Op`]), and the error either may give ([`OpError`]). Which of the two runs is chosen
//! by the caller (histopipe-cli's dispatch module).
//!
//! An error names the parameters it is about by their names here (`bins`, `theta_step`), never
//! as a command line spells them: the caller says each as its user knows it (histopipe-cli: as
//! the option that sets it, `--bins`, from the options' definitions).

use std::fmt;

use histopipe_frame::Frame;
use histopipe_gpu::{Gpu, GpuError};

use crate::lightness::PlaneMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpErrorKind {
    /// The frame or the parameters do not allow the operation (a usage or input error).
    Invalid,
    /// The GPU could not be used or failed.
    Gpu,
}

/// The parameter an error is about, and the value it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamValue {
    /// The parameter's name, as the operation's parameters spell it: `bins`, `theta_step`.
    pub name: &'static str,
    /// The value, as the message shows it: `300`, `8x8`.
    pub value: String,
    /// Whether the message goes on from the value as one sentence (`fill 256 is over the frame's
    /// maxval 255`) rather than after a colon (`bins 300: a frame with maxval 255 has ...`).
    pub sentence: bool,
}

/// A piece of an error's words: text, or a parameter they name (`raise theta_step`), which the
/// caller says as its user knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Param(&'static str),
}

/// An operation's error: what is wrong, and the parameter whose value it is about, if one is.
/// Made by its constructors ([`OpError::invalid`], [`OpError::param`], ...).
#[derive(Debug, Clone)]
pub struct OpError {
    pub kind: OpErrorKind,
    /// The parameter the error is about, said before [`OpError::why`].
    pub param: Option<ParamValue>,
    /// What is wrong (with the parameter's value, where there is one).
    pub why: Vec<Piece>,
}

impl OpError {
    /// The frame or the parameters do not allow the operation.
    pub fn invalid(message: impl Into<String>) -> OpError {
        OpError { kind: OpErrorKind::Invalid, param: None, why: vec![Piece::Text(message.into())] }
    }

    /// The operation takes integer samples, and the frame's are float: an error of the caller,
    /// which refuses float frames (with a way to convert them) before such an operation.
    pub fn needs_integers() -> OpError {
        OpError::invalid("this operation takes integer samples, and the frame's are 32-bit float")
    }

    /// The GPU could not be used or failed.
    pub fn gpu(message: impl Into<String>) -> OpError {
        OpError { kind: OpErrorKind::Gpu, ..OpError::invalid(message) }
    }

    /// Parameter `name`'s `value` does not allow the operation: `bins 300: why`.
    pub fn param(name: &'static str, value: impl fmt::Display, why: impl Into<String>) -> OpError {
        let param = ParamValue { name, value: value.to_string(), sentence: false };
        OpError { param: Some(param), ..OpError::invalid(why) }
    }

    /// The same, said as one sentence about the value: `fill 256` `is over the frame's maxval 255`.
    pub fn param_is(name: &'static str, value: impl fmt::Display, rest: impl Into<String>) -> OpError {
        let param = ParamValue { name, value: value.to_string(), sentence: true };
        OpError { param: Some(param), ..OpError::invalid(rest) }
    }

    /// The words go on naming parameter `name`: `raise` `theta_step`.
    pub fn and_param(mut self, name: &'static str) -> OpError {
        self.why.push(Piece::Param(name));
        self
    }

    /// The words go on with `text`.
    pub fn and_text(mut self, text: impl Into<String>) -> OpError {
        self.why.push(Piece::Text(text.into()));
        self
    }

    /// What is wrong, each parameter it names said as `name` says it.
    pub fn why_naming<'a>(&self, name: impl Fn(&'static str) -> &'a str) -> String {
        self.why
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.as_str(),
                Piece::Param(param) => name(param),
            })
            .collect()
    }

    /// The whole message, each parameter said as `name` says it: `bins 300: why`, `fill 256 is
    /// over ...`, `why` (histopipe-cli says it in options, in its own words).
    pub fn naming<'a>(&self, name: impl Fn(&'static str) -> &'a str) -> String {
        let why = self.why_naming(&name);
        match &self.param {
            Some(ParamValue { name: param, value, sentence: true }) => {
                format!("{} {value} {why}", name(param))
            }
            Some(ParamValue { name: param, value, sentence: false }) => {
                format!("{} {value}: {why}", name(param))
            }
            None => why,
        }
    }

    /// Every parameter the error names: the one it is about, then those its words name.
    pub fn params(&self) -> impl Iterator<Item = &'static str> + '_ {
        let named = self.why.iter().filter_map(|piece| match piece {
            Piece::Param(p) => Some(*p),
            Piece::Text(_) => None,
        });
        self.param.iter().map(|p| p.name).chain(named)
    }
}

impl From<GpuError> for OpError {
    fn from(e: GpuError) -> Self {
        OpError::gpu(e.0)
    }
}

impl From<histopipe_gpu::cudarc::driver::DriverError> for OpError {
    fn from(e: histopipe_gpu::cudarc::driver::DriverError) -> Self {
        GpuError::from(e).into()
    }
}

/// The message, each parameter by its name here.
impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.naming(|p| p))
    }
}

impl std::error::Error for OpError {}

/// What [`Op::gpu_parts`] gives once the GPU's part is queued: the output, or the host's work
/// still to do on the GPU's results.
pub enum GpuPart<'a, T> {
    Done(T),
    Host(Box<dyn FnOnce() -> Result<T, OpError> + 'a>),
}

impl<T> GpuPart<'_, T> {
    /// The output: the host's work done, if any is left.
    pub fn finish(self) -> Result<T, OpError> {
        match self {
            GpuPart::Done(out) => Ok(out),
            GpuPart::Host(work) => work(),
        }
    }
}

/// An operation on one frame, with a CPU and a GPU implementation that give the same output.
pub trait Op {
    type Output;
    fn cpu(&self, frame: &Frame) -> Result<Self::Output, OpError>;
    /// Queues the operation on `gpu`'s stream; what it returns may still be in flight on the
    /// device until the stream is synchronized.
    fn gpu(&self, gpu: &Gpu, frame: &Frame) -> Result<Self::Output, OpError>;

    /// [`Op::gpu`] in two parts: what needs the GPU, queued on its stream (which the caller
    /// synchronizes before another frame may have the GPU), and the host's work on its results,
    /// which the caller then finishes with the GPU free for the next frame ([`GpuPart::finish`]).
    /// The same output as [`Op::gpu`]. By default the GPU's part is all of it; an operation whose
    /// host part is long (`hough-segments` walks its lines on the host) returns it apart, so that
    /// a stream's frames do not wait for one another's host work to use the GPU.
    fn gpu_parts<'a>(&'a self, gpu: &Gpu, frame: &'a Frame) -> Result<GpuPart<'a, Self::Output>, OpError> {
        self.gpu(gpu, frame).map(GpuPart::Done)
    }

    /// The operation as a map of a gray frame's samples already on the device, for an operation
    /// that keeps a gray frame's size, sample width and maxval and has such a sequence: a colour
    /// frame's luma is then mapped with every step on the GPU ([`crate::lightness::on_luma`]).
    fn plane_map(&self) -> Option<&dyn PlaneMap> {
        None
    }

    /// How many times the CPU backend visits each pixel of `frame`: 1 for an operation whose work
    /// is in proportion to the frame (the default), the number of directions for one that works
    /// in many (`radon` reads each sample once per angle). The caller's `auto` backend opens the
    /// GPUs at once for a single frame whose visits make it slower on the cores than a GPU's
    /// opening, instead of waiting for a stream to show the GPU is worth opening.
    fn visits_per_pixel(&self, frame: &Frame) -> f64 {
        let _ = frame;
        1.0
    }

    /// The operation's work on `frame`, known before any of it is done, for the caller's bound on
    /// one frame's work (histopipe-cli's `--max-work`), which refuses a frame over it whichever
    /// backend would run it. By default the frame's pixels times [`Op::visits_per_pixel`]; an
    /// operation whose work grows faster than its frame (`radon`: angles x N^2 reads of the padded
    /// square; a Hough vote: edge pixels x angles) says so, and what it counted.
    fn work(&self, frame: &Frame) -> Work {
        let pixels = (frame.width as u128) * (frame.height as u128);
        let visits = self.visits_per_pixel(frame);
        Work {
            amount: (pixels as f64 * visits).ceil() as u128,
            what: format!("{}x{} pixels x {visits} visits", frame.width, frame.height),
        }
    }
}

/// An operation's work on one frame ([`Op::work`]): a count of its inner steps (sample reads,
/// votes, steps of a walk), and what was counted, for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    pub amount: u128,
    /// What was multiplied: `180 angles x 5793^2 reads`.
    pub what: String,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use histopipe_frame::Pixels;

    use super::*;
    use crate::bins::Bins;
    use crate::clahe::{Clahe, TileGrid};
    use crate::edges::Canny;
    use crate::hough::{HoughParams, HoughSpace};
    use crate::pad::{PadParams, PadSize};
    use crate::rotate::{Interpolation, RotateBy, RotateParams};
    use crate::Fill;

    /// Every error about a parameter's value, one of each.
    fn parameter_errors() -> Vec<OpError> {
        let frame = Frame::new(3, 2, 255, Pixels::U8(vec![0; 6].into()));
        let hough = HoughParams::default();
        let canny = Canny { low: 50.0, high: 150.0, l2: false, blur: None };
        let rotate = RotateParams {
            by: RotateBy::Degrees(0.0),
            interpolation: Interpolation::Nearest,
            fill: Fill::Int(256),
            expand: false,
        };
        let errors = [
            Bins::new(Some(300), 255).map(drop),
            HoughParams { theta_step: 0.0, ..hough }.check().map(drop),
            HoughParams { rho_step: f64::NAN, ..hough }.check().map(drop),
            HoughParams { theta_min: 50.0, theta_max: 10.0, ..hough }.check().map(drop),
            HoughParams { theta_step: 1e-9, ..hough }.check().map(drop),
            HoughSpace::new(HoughParams { rho_step: 1e12, ..hough }, 512, 512).map(drop),
            HoughSpace::new(HoughParams { rho_step: 1000.0, ..hough }, 512, 512).map(drop),
            HoughSpace::new(HoughParams { theta_step: 0.001, rho_step: 0.01, ..hough }, 512, 512).map(drop),
            Clahe { clip: f64::INFINITY, ..Clahe::default() }.tiling(8, 8, 256).map(drop),
            Clahe { tiles: TileGrid { x: 100, y: 100 }, ..Clahe::default() }
                .tiling(100, 100, 65536)
                .map(drop),
            PadParams { size: PadSize::Diagonal, fill: Fill::Int(256) }.for_frame(3, 2, 255).map(drop),
            PadParams { size: PadSize::To { width: 2, height: 2 }, fill: Fill::Int(0) }
                .for_frame(3, 2, 255)
                .map(drop),
            rotate.for_frame(&frame).map(drop),
            Canny { low: -1.0, ..canny }.check(),
            Canny { high: f64::NAN, ..canny }.check(),
            Canny { blur: Some(0.0), ..canny }.check(),
        ];
        errors.into_iter().map(|e| e.expect_err("parameters that do not allow the operation")).collect()
    }

    /// An error says which parameter it is about, by its name here; how a command line spells
    /// it (`--bins`) is the command line's business.
    #[test]
    fn errors_name_parameters_not_options() {
        for e in parameter_errors() {
            assert!(e.params().next().is_some(), "names no parameter: {e}");
            assert!(!e.to_string().contains("--"), "{e}");
            assert_eq!(e.naming(|_| "P").matches('P').count(), e.params().count(), "{e}");
        }
        let e = Bins::new(Some(300), 255).unwrap_err();
        assert_eq!(e.param, Some(ParamValue { name: "bins", value: "300".into(), sentence: false }));
        assert_eq!(e.to_string(), "bins 300: a frame with maxval 255 has 1 to 256 bins");
        let e =
            HoughParams { theta_min: 50.0, theta_max: 10.0, ..HoughParams::default() }.check().unwrap_err();
        assert_eq!(e.params().collect::<Vec<_>>(), ["theta_max", "theta_min"]);
        assert_eq!(e.naming(|p| p.strip_prefix("theta_").unwrap()), "max 10 must be at least min 50");
    }

    /// No message in this crate's sources spells an option (`"--bins ..."`): the parameters are
    /// named as [`OpError::param`] and [`OpError::and_param`] name them. Comments may.
    #[test]
    fn the_sources_spell_no_option() {
        fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    rust_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        assert!(files.len() > 20, "{files:?}");
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let spelt = code.match_indices("--").any(|(i, _)| {
                    code[i + 2..].starts_with(|c: char| c.is_ascii_lowercase()) && !code[..i].contains("// ")
                });
                assert!(!spelt, "{}:{}: an option in a message: {line}", path.display(), n + 1);
            }
        }
    }
}
