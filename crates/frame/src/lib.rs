//! Frames and frame streams: everything histopipe knows about image formats.
//!
//! A [`Frame`] is one image: gray, gray+alpha, RGB or RGBA ([`Channels`]), of 8-bit, 16-bit or
//! 32-bit float samples, with a maxval, the container it came in and optional [`Geometry`],
//! [`Annotation`]s and [`Source`]. [`FrameReader`] reads a stream of frames from any byte source:
//! PGM, PPM (P5, P6, P2, P3), PAM, PNG, JPEG, TIFF, BMP, PFM, NumPy `.npy` and FITS, or headerless
//! raw frames; colour stays colour unless the reader is asked for gray. [`FrameWriter`] writes
//! frames back in the container they were read in, or in a [`Container`] asked for (PGM, PPM, PAM,
//! PNG, JPEG, TIFF, PFM, NPY, raw).
//! Every byte read is untrusted: reading a frame keeps to [`read_memory_bound`], decoding one
//! input to [`read_work_bound`], gathering one image to [`read_gather_bound`], and each image of
//! a stream (a JPEG, PNG, TIFF page, BMP, PFM, NPY or FITS) is a frame of its own.
//!
//! The float containers' codecs ([`read_float`], [`decode_float`], [`encode_pfm`], [`encode_npy`],
//! [`encode_npy_array`]) also serve tables written as `.npy`. [`colour`] holds OpenCV's colour
//! conversions (gray, YCrCb), exact to the bit, which reading colour as gray and the tools share.
//!
//! This crate is for bytes and formats only: no GPU, no image processing, no command line.

mod budget;
pub mod colour;
mod decode;
mod encode_jpeg;
mod encode_png;
mod error;
mod fallible;
mod float;
mod frame;
mod geometry;
mod png_scale;
mod pnm;
mod read;
mod samples;
mod source;
mod write;

pub use budget::{read_gather_bound, read_memory_bound, read_work_bound, WORK_PER_BYTE};
pub use decode::{read_rgb8, Rgb8Image};
pub use encode_jpeg::encode_jpeg;
pub use error::{FrameError, FrameErrorKind};
pub use fallible::{fallibly, is_fallible};
pub use float::{
    decode_float, encode_npy, encode_npy_array, encode_npy_header, encode_pfm, read_float, Decoded,
    FloatFormat, NpyData, NpyShapeError, Raster,
};
pub use frame::{Annotation, Channels, Depth, Format, Frame, Pixels};
pub use geometry::{Affine, Geometry, Line, Point};
pub use read::{parse_size, FrameReader, RawSpec, ReadOptions, Unread, DEFAULT_MAX_PIXELS};
pub use samples::{advise_huge_pages, Lender, SampleMemory, Samples};
pub use source::{Origin, Source};
pub use write::{read_back_format, write_rgb8, Container, FrameWriter, WriteOptions};
