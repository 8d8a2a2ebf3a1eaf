//! histopipe's fuzz harness for the frame reader, on stable Rust.
//!
//! Seeds of every container (`seeds`), structure-aware mutations (`mutate`, `fields`), and a target
//! that reads each input to its end, keeping colour and as gray, each from a slice and through a
//! trickling pipe, and checks: no panic,
//! heap within [`target::allocation_bound`], time within a limit, the same frames and error both
//! ways (`target`). A campaign (`campaign`) runs it on worker threads, coverage-guided when built
//! by `scripts/fuzz` (`coverage`), and saves each new kind of finding to `regressions/`, which the
//! crate's tests replay.
//!
//! This crate is for finding defects in `histopipe-frame`; it fixes none, and no tool depends on it.
//! Linking it makes its counting allocator (`alloc`) the program's global allocator.

pub mod alloc;
pub mod campaign;
pub mod coverage;
pub mod crash;
pub mod digest;
pub mod fields;
pub mod finding;
pub mod input;
pub mod minimize;
pub mod mutate;
pub mod panics;
pub mod seeds;
pub mod target;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;
