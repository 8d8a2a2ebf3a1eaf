//! histopipe's fuzz harness for the frame reader, on stable Rust, and for what else takes hostile
//! bytes: the frame writers, side files, path templates, the tools' binaries and the GPU service's
//! messages (`targets`).
//!
//! Seeds of every container (`seeds`), structure-aware mutations (`mutate`, `fields`), and a target
//! that reads each input to its end, keeping colour and as gray, each from a slice and through a
//! trickling pipe, and checks: no panic,
//! heap within [`target::allocation_bound`], time within a limit, the same frames and error both
//! ways (`target`). A campaign (`campaign`) runs it on worker threads, coverage-guided when built
//! by `scripts/fuzz` (`coverage`), and saves each new kind of finding to `regressions/`, which the
//! crate's tests replay.
//!
//! This crate is for finding defects in `histopipe-frame`, `histopipe-cli`'s side files and
//! templates, and the tools; it fixes none, and no tool depends on it.
//! A program that links it and bounds memory invokes [`count_heap!`] once, which makes the C
//! allocator, under Rust's and libjpeg-turbo's blocks alike, count each thread's heap (`alloc`).

pub mod alloc;
pub mod campaign;
pub mod coverage;
pub mod crash;
pub mod digest;
pub mod fields;
pub mod finding;
pub mod input;
pub mod kind;
pub mod minimize;
pub mod mutate;
pub mod panics;
pub mod seeds;
#[cfg(feature = "cli")]
pub mod service;
#[cfg(feature = "cli")]
pub mod side;
pub mod target;
pub mod targets;
#[cfg(feature = "cli")]
pub mod templates;
pub mod tools;
pub mod writers;

#[cfg(all(test, not(feature = "asan")))]
count_heap!();
