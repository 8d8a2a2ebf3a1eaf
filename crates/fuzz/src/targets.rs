//! What a campaign fuzzes (`--target`): the frame reader (the default, [`crate::target`]), the
//! frame writers ([`crate::writers`]), the side-file readers ([`crate::side`]), path templates
//! ([`crate::templates`]), the tools' binaries ([`crate::tools`]), or the GPU service's messages
//! ([`crate::service`]). Each takes one input and gives an outcome (for feedback) or a finding;
//! each has its own seeds and its own folder of saved findings.

pub use crate::kind::{Checked, Target};

use crate::finding::{Finding, Regressions};
use crate::input::Input;
use crate::seeds::Seed;
use crate::target::Limits;

impl Target {
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
            #[cfg(feature = "cli")]
            Target::Service => Ok(crate::service::seeds()),
            Target::Tools => {
                let mut seeds = crate::seeds::seeds()?;
                seeds.extend(crate::tools::table_seeds());
                Ok(seeds)
            }
            _ => crate::seeds::seeds(),
        }
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
        #[cfg(feature = "cli")]
        Target::Service => crate::service::check(input, limits),
        #[cfg(not(feature = "cli"))]
        Target::Side | Target::Templates | Target::Service => {
            Ok(Checked { shape: 0, text: "not built (the cli feature)".into() })
        }
        Target::Tools => crate::tools::check(input, limits),
    }
}
