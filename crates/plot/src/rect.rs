//! A rectangle of a figure in pixels ([`PixelRect`]), as plotters' drawing areas give it: where a
//! figure's raster goes, for the figures that draw it and the SVG writer that embeds it.

/// A rectangle of a figure, in pixels: `x..x + width`, `y..y + height`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PixelRect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl PixelRect {
    /// The rectangle of a drawing area's pixel range.
    pub fn of_range((xs, ys): (std::ops::Range<i32>, std::ops::Range<i32>)) -> PixelRect {
        PixelRect { x: xs.start, y: ys.start, width: xs.len() as u32, height: ys.len() as u32 }
    }
}
