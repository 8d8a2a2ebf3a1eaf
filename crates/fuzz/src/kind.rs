//! The names of what a campaign fuzzes and of what an input gave: [`Target`] and [`Checked`],
//! which every target's module uses. What each target does with an input is theirs, and the
//! dispatch among them is [`crate::targets`]'s (which imports them all, none of them it).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Reader,
    Writers,
    Side,
    Templates,
    Tools,
    Service,
}

impl Target {
    pub const ALL: [Target; 6] =
        [Target::Reader, Target::Writers, Target::Side, Target::Templates, Target::Tools, Target::Service];

    pub fn name(self) -> &'static str {
        match self {
            Target::Reader => "reader",
            Target::Writers => "writers",
            Target::Side => "side",
            Target::Templates => "templates",
            Target::Tools => "tools",
            Target::Service => "service",
        }
    }

    pub fn parse(text: &str) -> Result<Target, String> {
        let target = Target::ALL.into_iter().find(|t| t.name() == text).ok_or_else(|| {
            format!("unknown target '{text}' (there are reader, writers, side, templates, tools, service)")
        })?;
        if matches!(target, Target::Side | Target::Templates | Target::Service) && !cfg!(feature = "cli") {
            return Err(format!("the {text} target is not built in (the cli feature)"));
        }
        Ok(target)
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
