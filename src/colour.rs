//! `--colour MODE`: how a tool treats a colour frame's channels, one word list and one meaning
//! for every tool that takes it ([`Colour`]); each tool takes the modes that make sense for it:
//!
//! | mode     | meaning                                         | tools                          |
//! |----------|-------------------------------------------------|--------------------------------|
//! | `luma`   | the frame's luma alone (Y of YCrCb, BGR2GRAY)   | cdf, colhist, equalize, clahe  |
//! | `each`   | every channel on its own                        | the same, and stretch          |
//! | `gray`   | read as gray, written gray                      | equalize, clahe                |
//! | `lab`    | L of L\*a\*b\* alone (BGR2Lab), 8-bit frames    | equalize, clahe                |
//! | `shared` | one computation over all colour samples         | stretch                        |
//!
//! `luma` is the default of the first four tools, `shared` stretch's.
//!
//! A tool that measures (cdf, colhist) reads colour as gray under `luma` (one histogram) and
//! counts every channel, alpha included, under `each`; a tool that maps (equalize, clahe) maps
//! Y under `luma` and makes R, G, B again from it and the frame's Cr and Cb, maps L under `lab`
//! and makes R, G, B again from it and the frame's a and b (OpenCV's 8-bit conversions both
//! ways), maps R, G and B under `each`, and carries alpha. The drawing colour of `hough-lines --draw` is another
//! option, `--draw-colour R,G,B` (src/drawing.rs).

use histopipe_cli::{either, Context, Error, Flag, FlagError, Given, Lightness};
use histopipe_frame::{Channels, Frame};
use histopipe_ops::Op;

histopipe_cli::words! {
    /// What `--colour` says to do with a colour frame (the module's table). The default is
    /// `luma`, the counting and mapping tools' (stretch keeps its own, `shared`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Colour {
        /// The frame's luma: colour read as gray, or Y of YCrCb mapped and converted back.
        #[default]
        Luma = "luma",
        /// Every channel on its own.
        Each = "each",
        /// Colour read as gray (OpenCV's BGR2GRAY, a JPEG's own luma), a gray frame written.
        Gray = "gray",
        /// One computation over every colour sample, used for each channel.
        Shared = "shared",
        /// L of CIE L*a*b* mapped and converted back with the frame's a and b (8-bit frames).
        Lab = "lab",
    }
}

/// The modes one tool takes, and their words (the flag's list), in one declaration.
pub struct Modes {
    pub modes: &'static [Colour],
    pub names: &'static [&'static str],
}

/// [`Modes`] of the variants named: `modes!(Luma, Each)`.
macro_rules! modes {
    ($($mode:ident),+) => {
        Modes { modes: &[$(Colour::$mode),+], names: &[$(Colour::$mode.word()),+] }
    };
}

/// The modes of the tools that count (cdf, colhist): `luma` (the default) or `each`.
pub const COUNTING: Modes = modes!(Luma, Each);
/// The modes of the tools that map levels (equalize, clahe): `luma` (the default), `each`,
/// `gray` or `lab`.
pub const MAPPING: Modes = modes!(Luma, Each, Gray, Lab);
/// The modes of `stretch`'s ranges: `shared` (the default) or `each`.
pub const RANGES: Modes = modes!(Shared, Each);

impl Modes {
    /// `--colour`, taking these modes, with the tool's `help`.
    pub const fn flag(&self, help: &'static str) -> Flag {
        Flag::with_value("--colour", "MODE", help).one_of(self.names)
    }

    /// The mode `given` names, one of these.
    pub fn parse(&self, given: &Given) -> Result<Colour, FlagError> {
        Ok(self.parse_text(given.text()?)?)
    }

    /// The mode `text` names, one of these: `unknown mode 'x' (luma or each)` otherwise.
    fn parse_text(&self, text: &str) -> Result<Colour, String> {
        match Colour::from_word(text).filter(|c| self.modes.contains(c)) {
            Some(c) => Ok(c),
            None => Err(format!("unknown mode '{text}' ({})", either(self.names))),
        }
    }
}

impl Colour {
    /// The frame's channels a counting mode counts, each as a gray frame with its name (`None`
    /// under `luma`, whose frame is read as gray).
    pub fn counted(self, frame: Frame) -> Vec<(Option<&'static str>, Frame)> {
        match (self, frame.channels) {
            (Colour::Each, Channels::Gray) => vec![(Some("gray"), frame)],
            (Colour::Each, ch) => {
                (0..ch.count()).map(|c| (Some(ch.channel_name(c)), frame.plane(c))).collect()
            }
            _ => vec![(None, frame)],
        }
    }

    /// Runs `op` on `frame` as this mapping mode says; gray frames (all of them with `gray`) are
    /// the operation's alone in every mode, and alpha is carried past it.
    pub fn run<O: Op<Output = Frame> + Clone>(
        self,
        cx: &mut Context<'_>,
        frame: &Frame,
        op: &O,
    ) -> Result<Frame, Error> {
        self.run_with(cx, frame, |_| op.clone())
    }

    /// [`Colour::run`] with `op(c)` on plane c: the one plane (c = 0) in `luma`, `lab` and `gray`,
    /// and of gray frames; R, G and B (c = 0, 1, 2) of colour frames in `each`.
    pub fn run_with<O: Op<Output = Frame>>(
        self,
        cx: &mut Context<'_>,
        frame: &Frame,
        op: impl Fn(usize) -> O,
    ) -> Result<Frame, Error> {
        match self {
            Colour::Each => cx.run_each_colour_channel(frame, op),
            Colour::Lab => cx.run_on_lightness(frame, &op(0), Lightness::Lab),
            _ => cx.run_on_lightness(frame, &op(0), Lightness::Luma),
        }
    }

    /// How many planes of `frame` this mapping mode maps, each by its own table: R, G and B of a
    /// colour frame in `each`, one otherwise.
    pub fn mapped_planes(self, frame: &Frame) -> usize {
        if self == Colour::Each && frame.channels.is_colour() {
            3
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each tool's list is words of the one enum, its default first; `gray` and `shared` are
    /// refused where they mean nothing, with the words the tool takes.
    #[test]
    fn each_tool_takes_its_modes() {
        assert_eq!(COUNTING.names, ["luma", "each"]);
        assert_eq!(MAPPING.names, ["luma", "each", "gray", "lab"]);
        assert_eq!(RANGES.names, ["shared", "each"]);
        for modes in [COUNTING, MAPPING, RANGES] {
            for (m, name) in modes.modes.iter().zip(modes.names) {
                assert_eq!(m.word(), *name);
            }
        }
        assert_eq!(COUNTING.parse_text("each").unwrap(), Colour::Each);
        assert_eq!(RANGES.parse_text("shared").unwrap(), Colour::Shared);
        assert_eq!(COUNTING.parse_text("gray").unwrap_err(), "unknown mode 'gray' (luma or each)");
        assert_eq!(RANGES.parse_text("luma").unwrap_err(), "unknown mode 'luma' (shared or each)");
        assert_eq!(COUNTING.flag("h").values, ["luma", "each"]);
        assert_eq!(MAPPING.parse_text("lab").unwrap(), Colour::Lab);
        assert_eq!(COUNTING.parse_text("lab").unwrap_err(), "unknown mode 'lab' (luma or each)");
    }
}
