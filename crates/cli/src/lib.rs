//! What every histopipe tool shares: common options, errors and exit codes, and the frame loop.
//!
//! A tool implements [`Tool`] (its own options and what it does with one frame); [`main`] does the
//! rest: parses the command line with lexopt, opens the input and output streams, chooses the
//! backend, loops over the frames, and turns every error, a panic included, into one line on
//! stderr, prefixed with the tool's name, and an exit code (2 for bad input or usage, 1 for
//! runtime failures and internal errors). A closed output pipe ends the tool quietly with status
//! 0, as ripgrep does.

mod args;
mod error;
mod panic;
mod reader;
mod run;
mod tool;
mod writer;

pub use args::{parse_value, Common, COMMON_HELP};
pub use error::{Error, ErrorKind};
pub use lexopt;
pub use run::main;
pub use tool::{Context, Tool};
