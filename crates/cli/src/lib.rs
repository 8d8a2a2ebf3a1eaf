//! What every histopipe tool shares: the command line (options, input files, `-o` outputs),
//! errors and exit codes, and the frame loop.
//!
//! A tool implements [`Tool`] (its own options, each defined once as a [`Flag`], what it writes, and what it does with one frame);
//! [`main`] does the rest: parses the command line with lexopt and checks it before reading
//! anything, reads the input files (or standard input) on reader threads, runs the tool on several
//! frames at once on the chosen backend, writes the outputs in order (standard output, one file,
//! or one file per frame, files written atomically), and turns every error, a panic included,
//! into one line on stderr, prefixed with the tool's name and naming the file and frame, and an
//! exit code (2 for bad input or usage, 1 for runtime failures and internal errors). A closed
//! output pipe ends the tool quietly with status 0, as ripgrep does.

mod args;
mod atomic;
mod common;
mod dispatch;
mod error;
mod flags;
mod inputs;
mod luma;
mod memory;
mod outputs;
mod panic;
mod progress;
mod reader;
mod run;
pub mod service;
pub mod side;
mod signals;
mod splice;
mod stdout;
mod taken;
mod tool;
mod workers;
mod writer;

pub use atomic::write_whole;
pub use common::{Common, COMMON_FLAGS, COMMON_OPERANDS};
pub use dispatch::{BackendChoice, Devices};
pub use error::{Error, ErrorKind, Place};
pub use flags::{either, Flag, FlagError, Given, Operand};
pub use lexopt;
pub use luma::Lightness;
pub use outputs::{OutputFormat, PathTemplate, Product};
pub use run::main;
pub use tool::{Context, Tool, FLOAT_REFUSED, TABLE_KEY_COLUMNS};
