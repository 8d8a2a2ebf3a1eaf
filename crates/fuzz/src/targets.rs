//! What a campaign fuzzes (`--target`): the frame reader (the default, [`crate::target`]), the
//! frame writers ([`crate::writers`]), the side-file readers ([`crate::side`]), path templates
//! ([`crate::templates`]), or the tools' binaries ([`crate::tools`]). Each takes one input and
//! gives an outcome (for feedback) or a finding; each has its own seeds and its own folder of
//! saved findings.

use std::fmt;

use crate::finding::{Finding, Regressions};
use crate::input::Input;
use crate::seeds::Seed;
use crate::target::Limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Reader,
    Writers,
    Side,
    Templates,
    Tools,
}

impl Target {
    pub const ALL: [Target; 5] =
        [Target::Reader, Target::Writers, Target::Side, Target::Templates, Target::Tools];

    pub fn name(self) -> &'static str {
        match self {
            Target::Reader => "reader",
            Target::Writers => "writers",
            Target::Side => "side",
            Target::Templates => "templates",
            Target::Tools => "tools",
        }
    }

    pub fn parse(text: &str) -> Result<Target, String> {
        let target = Target::ALL.into_iter().find(|t| t.name() == text).ok_or_else(|| {
            format!("unknown target '{text}' (there are reader, writers, side, templates, tools)")
        })?;
        if matches!(target, Target::Side | Target::Templates) && !cfg!(feature = "cli") {
            return Err(format!("the {text} target is not built in (the cli feature)"));
        }
        Ok(target)
    }

    /// Where this target's findings are saved: the reader's in the regressions folder itself (as
    /// they always were), the others' in a folder of its name inside it.
    pub fn regressions(self, root: &Regressions) -> Regressions {
        match self {
            Target::Reader => root.clone(),
            other => Regressions { dir: root.dir.join(other.name()) },
        }
    }

    /// The starting corpus.
    pub fn seeds(self) -> Result<Vec<Seed>, String> {
        match self {
            #[cfg(feature = "cli")]
            Target::Templates => Ok(crate::templates::seeds()),
            Target::Tools => {
                let mut seeds = crate::seeds::seeds()?;
                seeds.extend(crate::tools::table_seeds());
                Ok(seeds)
            }
            _ => crate::seeds::seeds(),
        }
    }
}

/// What an input gave, when it gave no finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The kind of outcome, for feedback: a new shape joins the corpus.
    pub shape: u64,
    /// The outcome in words, for `--replay`.
    pub text: String,
}

impl fmt::Display for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks `input` with the target `limits` names.
pub fn check(input: &Input, limits: &Limits) -> Result<Checked, Finding> {
    match limits.target {
        Target::Reader => {
            crate::target::check(input, limits).map(|o| Checked { shape: o.shape(), text: o.to_string() })
        }
        Target::Writers => crate::writers::check(input, limits),
        #[cfg(feature = "cli")]
        Target::Side => crate::side::check(input, limits),
        #[cfg(feature = "cli")]
        Target::Templates => crate::templates::check(input, limits),
        #[cfg(not(feature = "cli"))]
        Target::Side | Target::Templates => {
            Ok(Checked { shape: 0, text: "not built (the cli feature)".into() })
        }
        Target::Tools => crate::tools::check(input, limits),
    }
}
