//! Figures as files: their format, where `--plot` puts them, the bundled font, and drawing on
//! either backend.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::PlotError;
use crate::heatmap::RgbImage;
use crate::rect::PixelRect;
use crate::svg;

/// The size of every figure, in pixels (SVG user units): 4 : 2.5, as a notebook's figure.
pub(crate) const SIZE: (u32, u32) = (960, 600);

/// The font family every text of a figure is set in: the bundled DejaVu Sans subset.
pub(crate) const FONT: &str = "sans-serif";

static FONT_FILE: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

/// The file formats a figure is written in, by the name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureFormat {
    /// Scalable: text as text, the heatmap as an embedded PNG.
    Svg,
    /// 960 x 600 pixels.
    Png,
}

impl FigureFormat {
    /// The format a path's extension names (`.svg`, `.png`, any case).
    pub fn of_path(path: &Path) -> Option<FigureFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "svg" => Some(FigureFormat::Svg),
            "png" => Some(FigureFormat::Png),
            _ => None,
        }
    }
}

/// Registers the bundled font for `plotters`, once; the font is part of the binary, so this only
/// fails if the file in `fonts/` is broken (a test reads it).
pub(crate) fn register_font() -> Result<(), PlotError> {
    static DONE: OnceLock<Result<(), PlotError>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_FILE)
            .map_err(|_| PlotError("the bundled font cannot be read".into()))
    })
    .clone()
}

/// An axis label for whole numbers only: ticks between them (a short axis gets ticks at halves)
/// stay unlabelled rather than show `2.5` for a sample value.
pub(crate) fn whole_number(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else {
        String::new()
    }
}

/// Where a figure's raster (the heatmap) goes: drawn in place, or left to the SVG writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RasterPlacement {
    /// Copied into the bitmap.
    Blit,
    /// A placeholder the SVG writer replaces with an embedded PNG ([`svg::embed_raster`]).
    Placeholder,
}

/// A figure: what it draws on any backend.
pub(crate) trait Figure {
    /// Draws the figure on `root`, its raster (if it has one) placed as `placement` says;
    /// returns the raster and where it goes, for the SVG writer.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        placement: RasterPlacement,
    ) -> Result<Option<(RgbImage, PixelRect)>, PlotError>;
}

/// `figure` in `format`, as the bytes of its file.
pub(crate) fn render(format: FigureFormat, figure: &impl Figure) -> Result<Vec<u8>, PlotError> {
    register_font()?;
    let (w, h) = SIZE;
    match format {
        FigureFormat::Png => {
            let mut rgb = vec![255u8; (w * h * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
                figure.draw(&root, RasterPlacement::Blit)?;
                root.present()?;
            }
            let mut bytes = Vec::new();
            histopipe_frame::write_rgb8(&mut bytes, w as usize, h as usize, &rgb, true)
                .map_err(|e| PlotError(format!("cannot encode the PNG: {e}")))?;
            Ok(bytes)
        }
        FigureFormat::Svg => {
            let mut text = String::new();
            let raster = {
                let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
                let raster = figure.draw(&root, RasterPlacement::Placeholder)?;
                root.present()?;
                raster
            };
            if let Some((image, rect)) = raster {
                text = svg::embed_raster(&text, &image, rect)?;
            }
            Ok(text.into_bytes())
        }
    }
}

/// Places `image` (of `rect`'s size) at `rect` on `root` as `placement` says.
pub(crate) fn place_raster<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    image: &RgbImage,
    rect: PixelRect,
    placement: RasterPlacement,
) -> Result<(), PlotError> {
    match placement {
        RasterPlacement::Blit => {
            let element = BitMapElement::with_ref(
                (rect.x, rect.y),
                (image.width as u32, image.height as u32),
                &image.rgb,
            )
            .ok_or_else(|| PlotError("internal error: a raster of the wrong size".into()))?;
            root.draw(&element)?;
        }
        RasterPlacement::Placeholder => {
            root.draw(&Rectangle::new(
                [(rect.x, rect.y), (rect.x + rect.width as i32, rect.y + rect.height as i32)],
                svg::PLACEHOLDER.filled(),
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_font_loads() {
        register_font().unwrap();
        let font = FontDesc::new(FontFamily::Name(FONT), 20.0, FontStyle::Normal);
        let (w, h) = font.box_size("column").unwrap();
        assert!(w > 40 && h > 10, "{w}x{h}");
    }
}
