//! Why a figure could not be made ([`PlotError`]): drawing it, encoding it or embedding its raster.

use std::fmt;

use plotters::drawing::DrawingAreaErrorKind;

/// Why a figure could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> PlotError {
        PlotError(format!("cannot draw the figure: {e}"))
    }
}
