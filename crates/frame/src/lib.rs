//! Frames and frame streams: everything histopipe knows about image formats.
//!
//! A [`Frame`] is one grayscale image (8- or 16-bit samples, a maxval, the container it came in and
//! optional [`Geometry`], [`Annotation`]s and [`Source`]). [`FrameReader`] reads a stream of frames
//! from any byte source: PGM (P5, P2), PAM (P7 GRAYSCALE), PPM (P6) and PNG/JPEG/TIFF/BMP converted
//! to gray, or headerless raw frames; [`FrameWriter`] writes frames back in the container they were read in, or in a
//! [`Container`] asked for (PGM, PAM, PNG, TIFF, raw).
//! Every byte read is untrusted: reading a frame keeps to [`read_memory_bound`], and each JPEG,
//! PNG, TIFF page or BMP of a stream is a frame of its own.
//!
//! [`colour`] holds OpenCV's colour conversions (gray, YCrCb), exact to the bit, which decoding
//! colour inputs and drawing on them share.
//!
//! This crate is for bytes and formats only: no GPU, no image processing, no command line.

mod budget;
pub mod colour;
mod decode;
mod error;
mod frame;
mod geometry;
mod png_scale;
mod pnm;
mod read;
mod samples;
mod source;
mod write;

pub use budget::read_memory_bound;
pub use decode::{read_rgb8, Rgb8Image};
pub use error::{FrameError, FrameErrorKind};
pub use frame::{Annotation, Channels, Depth, Format, Frame, Pixels};
pub use geometry::{Affine, Geometry, Line, Point};
pub use read::{parse_size, FrameReader, RawSpec, ReadOptions, Unread, DEFAULT_MAX_PIXELS};
pub use samples::{advise_huge_pages, Lender, SampleMemory, Samples};
pub use source::{Origin, Source};
pub use write::{write_rgb8, Container, FrameWriter, WriteOptions};
