//! Integration tests: one test binary, one module per tool, all through the real binaries
//! (assert_cmd) and, for CPU/GPU parity, through the operations themselves.

mod cdf;
mod clahe;
mod colhist;
mod common;
mod deskew;
mod devices;
mod edges;
mod equalize;
mod failures;
mod files;
mod flags;
mod frames;
mod harness;
mod hough;
mod hough_segments;
mod huge;
mod install;
mod jpeg;
mod opencv;
mod outputs;
mod pad;
mod pipes;
mod pixels;
mod progress;
mod radon;
mod readme;
mod registry;
mod rotate;
mod scaling;
mod streams;
mod stretch;
mod tables;
mod threads;
mod threshold;
mod trace;
