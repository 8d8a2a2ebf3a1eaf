//! Pictures for people: what histopipe's histograms look like, as images and as figures.
//!
//! - [`heatmap_image`]: a matrix of counts as an RGB picture, counts on a log scale through a
//!   perceptual colour map, bin 0 at the bottom (`colhist --format png`);
//! - [`colhist_figure`] and [`cdf_figure`]: the figures a person would otherwise make in a
//!   notebook, with axes, labels and a colour bar, as SVG or PNG (`--plot FILE`), drawn with
//!   `plotters` and a font bundled in the crate (`fonts/`), so they look the same on every
//!   machine, with no system fonts.
//!
//! The data comes in as plain numbers (counts, bin ranges): this crate knows nothing of frames'
//! formats, of the operations that count, or of the command line.

mod cdf;
mod colhist;
mod colour;
mod error;
mod figure;
mod heatmap;
mod rect;
mod svg;

pub use cdf::{cdf_figure, CdfFigure};
pub use colhist::{colhist_figure, ColhistFigure};
pub use colour::{viridis, LogColour};
pub use error::PlotError;
pub use figure::FigureFormat;
pub use heatmap::{heatmap_image, Counts, RgbImage};
