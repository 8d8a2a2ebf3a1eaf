//! The histopipe tools. Each module is one tool's command line ([`histopipe_cli::Tool`]); its
//! binary in `src/bin/` is a one-line `main`. Formats live in `histopipe-frame`, operations in
//! `histopipe-ops`, the GPU runtime in `histopipe-gpu`, the shared plumbing in `histopipe-cli`.

mod binning;
pub mod cdf;
pub mod clahe;
pub mod colhist;
pub mod deskew;
mod drawing;
pub mod edges;
pub mod equalize;
pub mod hough_lines;
pub mod hough_segments;
pub mod hough_vote;
mod mask;
pub mod pad;
mod plot;
pub mod radon;
pub mod rotate;
pub mod stretch;
mod table_output;
pub mod threshold;
