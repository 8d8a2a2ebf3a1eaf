use histopipe_cli::{Common, Context, Error, Flag, FlagError, Given, Tool};
use histopipe_frame::Frame;
use histopipe_ops::hough::{HoughParams, HoughVote as Vote, Strategy};

/// `hough-vote`: the Hough accumulator of an edge map, as a 16-bit PGM.
pub struct HoughVote {
    vote: Vote,
}

impl Default for HoughVote {
    fn default() -> Self {
        HoughVote { vote: Vote { params: HoughParams::default(), strategy: Strategy::Auto } }
    }
}

histopipe_cli::words! {
    /// `--strategy`'s words: what completions offer, what the parser takes and what its error
    /// lists.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum StrategyWord {
        Global = "global",
        Shared = "shared",
        Auto = "auto",
    }
}

impl StrategyWord {
    fn strategy(self) -> Strategy {
        match self {
            StrategyWord::Global => Strategy::Global,
            StrategyWord::Shared => Strategy::Shared,
            StrategyWord::Auto => Strategy::Auto,
        }
    }
}

impl Tool for HoughVote {
    const NAME: &'static str = "hough-vote";
    const HELP: &'static str = "\
hough-vote: the standard Hough transform of an edge map (non-zero samples are edges).

Each edge pixel (x, y) votes, for every angle theta of the grid, for the distance
rho = x cos(theta) + y sin(theta), with OpenCV's float arithmetic: the counts equal those of
cv2.HoughLines(edges, RHO_STEP, radians(THETA_STEP), ...). The output is a 16-bit PGM with one
row per angle and one column per distance (maxval: the most votes, at least 256); its header
comment '# histopipe-hough ...' records the axes and the source size for hough-lines. A cell
with more than 65535 votes is an error.

Usage: hough-vote [OPTIONS] [FILE...]";
    const FLAGS: &'static [Flag] = &[
        Flag::with_value("--theta-min", "DEG", "first angle [default: 0]").param("theta_min"),
        Flag::with_value(
            "--theta-max",
            "DEG",
            "end of the angles, OpenCV's rule: floor((max - min) / step) + 1 angles, less one when they \
             would span 180 degrees [default: 180]",
        )
        .param("theta_max"),
        Flag::with_value("--theta-step", "DEG", "angle step [default: 1]").param("theta_step"),
        Flag::with_value("--rho-step", "PX", "distance step [default: 1]").param("rho_step"),
        Flag::with_value(
            "--strategy",
            "S",
            "GPU voting: global (atomics in global memory), shared (one block per angle, counts in \
             shared memory) or auto [default: auto]; same output",
        )
        .one_of(StrategyWord::NAMES),
    ];
    const HELP_END: &'static str = "\
Example:
  edges brick.pgm | hough-vote --theta-min -90 --theta-max 90 -o acc.pgm";

    fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        let p = &mut self.vote.params;
        match given.flag.long {
            "--theta-min" => p.theta_min = given.parse()?,
            "--theta-max" => p.theta_max = given.parse()?,
            "--theta-step" => p.theta_step = given.parse()?,
            "--rho-step" => p.rho_step = given.parse()?,
            "--strategy" => {
                self.vote.strategy = StrategyWord::parse_word(given.text()?, "strategy")?.strategy()
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&mut self, _: &Common) -> Result<(), Error> {
        self.vote.params.check().map(drop).map_err(|e| Error::op_usage(e, Self::FLAGS))
    }

    fn frame(&self, cx: &mut Context<'_>, frame: Frame) -> Result<(), Error> {
        let space = self.vote.space(&frame).map_err(|e| cx.op_error(e))?;
        cx.check_pixels(space.rhos, space.thetas)?;
        let mut out = cx.run(&self.vote, &frame)?;
        // Its pixels are no place of the edge map, but it still comes from the edge map's file.
        out.source = frame.source;
        cx.write(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of `--strategy` name the three strategies, each once.
    #[test]
    fn each_strategy_has_one_word() {
        let strategies: Vec<Strategy> = StrategyWord::ALL.iter().map(|w| w.strategy()).collect();
        assert_eq!(strategies, [Strategy::Global, Strategy::Shared, Strategy::Auto]);
        let e = StrategyWord::parse_word("fast", "strategy").unwrap_err();
        assert_eq!(e, "unknown strategy 'fast' (global, shared or auto)");
    }
}
