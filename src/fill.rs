//! `--fill`, the group of the tools that turn or pad a frame and so make pixels from outside it:
//! `pad` (the border), `rotate`, `deskew` (one value, or one per channel: [`Fills`]) and
//! `colhist --angles` (rotate's, one value: [`Fill`]). The group owns the flag's shape
//! ([`fill_flag`], which sets the operations' parameter `fill`, so that their errors name it),
//! its parsing, and each frame's fills ([`Filling::per_channel`]). A value is checked against a
//! frame's maxval by the operations, as each frame comes: nothing is checked before any input.
//!
//! Beside the fill, the border's other makings: `--mode` ([`BorderWord`], `pad`'s), a border of
//! the frame's own pixels as OpenCV's border types, which takes no fill.

use std::fmt::Display;
use std::str::FromStr;

use histopipe_cli::{Context, Error, Flag, FlagError, Given};
use histopipe_frame::Frame;
use histopipe_ops::pad::Border;
use histopipe_ops::{Fill, Fills};

histopipe_cli::words! {
    /// What `--mode` makes a border of: the fill, or the frame's pixels as `cv2.copyMakeBorder`'s
    /// border type of the same name (docs/options.md, *Border modes*).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub(crate) enum BorderWord {
        /// `BORDER_CONSTANT`: the fill value.
        #[default]
        Constant = "constant",
        /// `BORDER_REPLICATE`: the nearest edge pixel.
        Replicate = "replicate",
        /// `BORDER_REFLECT`: mirrored, edge pixels repeated.
        Reflect = "reflect",
        /// `BORDER_REFLECT_101`: mirrored about the edge pixels.
        Reflect101 = "reflect101",
        /// `BORDER_WRAP`: the frame repeated.
        Wrap = "wrap",
    }
}

impl BorderWord {
    /// `--mode`, its value one of these words, with the tool's `help`.
    pub(crate) const fn flag(help: &'static str) -> Flag {
        Flag::with_value("--mode", "MODE", help).one_of(BorderWord::NAMES)
    }

    /// The mode `given` names: `unknown mode 'x' (constant, replicate, ...)` otherwise.
    pub(crate) fn parse(given: &Given) -> Result<BorderWord, FlagError> {
        Ok(BorderWord::parse_word(given.text()?, "mode")?)
    }

    /// The operations' border of this mode.
    pub(crate) fn border(self) -> Border {
        match self {
            BorderWord::Constant => Border::Constant,
            BorderWord::Replicate => Border::Replicate,
            BorderWord::Reflect => Border::Reflect,
            BorderWord::Reflect101 => Border::Reflect101,
            BorderWord::Wrap => Border::Wrap,
        }
    }
}

/// `--fill`, its value named `value` (`V[,V...]` where it takes one per channel), with the tool's
/// `help` (what the fill is of, and its default).
pub(crate) const fn fill_flag(value: &'static str, help: &'static str) -> Flag {
    Flag::with_value("--fill", value, help).param("fill")
}

/// `--fill`, as given: a value of `F` ([`Fills`], or one [`Fill`]), `None` until given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filling<F> {
    value: Option<F>,
}

impl<F: FromStr> Filling<F>
where
    F::Err: Display,
{
    /// Takes `--fill`; `Ok(false)` for another option. The last one given counts.
    pub(crate) fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        if !given.is("--fill") {
            return Ok(false);
        }
        self.value = Some(given.parse()?);
        Ok(true)
    }

    /// `--fill`, if given.
    pub(crate) fn value(&self) -> Option<&F> {
        self.value.as_ref()
    }
}

impl Filling<Fills> {
    /// The fill of each of `frame`'s channels, where `--fill` was given: its one value for every
    /// channel, or its value for each; another count is refused, naming `--fill`.
    pub(crate) fn per_channel(&self, cx: &Context<'_>, frame: &Frame) -> Result<Option<Vec<Fill>>, Error> {
        let channels = frame.channels.count();
        self.value.as_ref().map(|f| f.per_channel("fill", channels).map_err(|e| cx.op_error(e))).transpose()
    }

    /// [`Filling::per_channel`], 0 in every channel without `--fill`.
    pub(crate) fn per_channel_or_zero(&self, cx: &Context<'_>, frame: &Frame) -> Result<Vec<Fill>, Error> {
        let zero = || vec![Fill::default(); frame.channels.count()];
        Ok(self.per_channel(cx, frame)?.unwrap_or_else(zero))
    }
}
