//! Integration tests: one test binary, one module per tool, all through the real binaries
//! (assert_cmd) and, for CPU/GPU parity, through the operations themselves.

mod cdf;
mod colhist;
mod common;
mod edges;
mod equalize;
mod failures;
mod frames;
mod hough;
mod huge;
mod opencv;
mod pad;
mod rotate;
mod streams;
mod threads;
