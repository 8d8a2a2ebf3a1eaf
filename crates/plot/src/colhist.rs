//! `colhist --plot`: the histograms of every column as a heatmap with axes and a colour bar.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::colour::{viridis, LogColour};
use crate::error::PlotError;
use crate::figure::{place_raster, render, whole_number, Figure, FigureFormat, RasterPlacement, FONT};
use crate::heatmap::{raster, Counts, RgbImage};
use crate::rect::PixelRect;

/// What `colhist --plot` draws: one frame's matrix.
#[derive(Debug, Clone)]
pub struct ColhistFigure<'a> {
    pub counts: Counts<'a>,
    /// Each bin's lowest and highest value on the y axis, in order, covering `values`.
    pub bin_ranges: &'a [(u32, u32)],
    /// The y axis: the values the bins span (a range's LO..HI + 1; 0..bins for float bins, drawn
    /// by number).
    pub values: std::ops::Range<u32>,
    /// What the y axis shows: `sample value`, or `bin` for float bins.
    pub value_name: &'a str,
    /// The number of the first line in the frame (`colhist --line` has one column, `X`).
    pub first_line: usize,
    /// What a line is, for the x axis: `column` or `row`.
    pub line_name: &'a str,
    /// The caption above the plot.
    pub title: String,
}

/// The figure as the bytes of a `format` file: x the column (or row), y the sample value (low
/// values at the bottom), each bin's count in each column as a colour on a log scale
/// ([`LogColour`]), with a colour bar. Where the plot has fewer pixels than the matrix has cells,
/// a pixel shows the largest count among those it covers.
pub fn colhist_figure(format: FigureFormat, figure: &ColhistFigure) -> Result<Vec<u8>, PlotError> {
    render(format, figure)
}

/// The colour bar's width and its gap from the plot, in pixels.
const BAR_WIDTH: i32 = 22;
const BAR_GAP: i32 = 24;
/// What the right side holds: the bar, its tick labels and its title.
const SIDE: u32 = 150;

impl Figure for ColhistFigure<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        placement: RasterPlacement,
    ) -> Result<Option<(RgbImage, PixelRect)>, PlotError> {
        root.fill(&WHITE)?;
        let (width, _) = root.dim_in_pixel();
        let (main, _) = root.split_horizontally(width - SIDE);
        let first = self.first_line as f64;
        let lines = self.counts.lines.max(1) as f64;
        // Cells are centred on their numbers: column x spans x - 0.5 .. x + 0.5.
        let mut chart = ChartBuilder::on(&main)
            .caption(&self.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(
                first - 0.5..first + lines - 0.5,
                self.values.start as f64 - 0.5..self.values.end as f64 - 0.5,
            )?;
        let rect = PixelRect::of_range(chart.plotting_area().get_pixel_range());
        let lows: Vec<u32> = self.bin_ranges.iter().map(|r| r.0).collect();
        let bin_of = |v: u32| lows.partition_point(|&low| low <= v).saturating_sub(1);
        let image =
            raster(&self.counts, self.values.clone(), bin_of, (rect.width as usize, rect.height as usize));
        place_raster(root, &image, rect, placement)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(self.line_name)
            .y_desc(self.value_name)
            .x_labels(10.min(self.counts.lines + 1))
            .y_labels(10.min(self.values.len() + 1))
            .x_label_formatter(&whole_number)
            .y_label_formatter(&whole_number)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        colour_bar(root, rect, LogColour::new(self.counts.max()))?;
        Ok(Some((image, rect)))
    }
}

/// The colour bar right of the plot `rect`: the map from 0 (bottom) to the largest count (top),
/// its ticks at [`LogColour::ticks`], and its title.
fn colour_bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    scale: LogColour,
) -> Result<(), PlotError> {
    let (x0, x1) = (rect.x + rect.width as i32 + BAR_GAP, rect.x + rect.width as i32 + BAR_GAP + BAR_WIDTH);
    let (top, height) = (rect.y, rect.height.max(2) as i32);
    let y_of = |t: f64| top + ((1.0 - t) * (height - 1) as f64).round() as i32;
    for dy in 0..height {
        let t = 1.0 - dy as f64 / (height - 1) as f64;
        let [r, g, b] = viridis(t);
        root.draw(&Rectangle::new([(x0, top + dy), (x1, top + dy + 1)], RGBColor(r, g, b).filled()))?;
    }
    root.draw(&Rectangle::new([(x0, top), (x1, top + height)], BLACK.stroke_width(1)))?;
    let label = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut widest = 0;
    for count in scale.ticks() {
        let y = y_of(scale.position(count));
        root.draw(&PathElement::new(vec![(x1, y), (x1 + 5, y)], BLACK.stroke_width(1)))?;
        let text = count.to_string();
        widest = widest.max(root.estimate_text_size(&text, &label)?.0 as i32);
        root.draw(&Text::new(text, (x1 + 8, y), label.clone()))?;
    }
    let title = TextStyle::from((FONT, 15).into_font().transform(FontTransform::Rotate270))
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new("count (log scale)", (x1 + 16 + widest, top + height / 2), title))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(counts: &[u32], bins: usize, lines: usize, ranges: &[(u32, u32)], maxval: u16) -> Vec<u8> {
        let f = ColhistFigure {
            counts: Counts { bins, lines, counts },
            bin_ranges: ranges,
            values: 0..maxval as u32 + 1,
            value_name: "sample value",
            first_line: 0,
            line_name: "column",
            title: "colhist test".into(),
        };
        colhist_figure(FigureFormat::Png, &f).unwrap()
    }

    #[test]
    fn png_and_svg_figures_are_made() {
        let ranges: Vec<(u32, u32)> = (0..8).map(|b| (b * 32, b * 32 + 31)).collect();
        let counts: Vec<u32> = (0..8 * 50).map(|i| (i % 50 * (i / 50)) as u32).collect();
        let png = figure(&counts, 8, 50, &ranges, 255);
        let img = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), crate::figure::SIZE);
        // The largest count's colour is in the picture (the plot), and so is black text.
        let peak = viridis(1.0);
        assert!(img.pixels().any(|p| p.0 == peak));
        assert!(img.pixels().filter(|p| p.0 == [0, 0, 0]).count() > 500, "axes and labels");
        let f = ColhistFigure {
            counts: Counts { bins: 8, lines: 50, counts: &counts },
            bin_ranges: &ranges,
            values: 0..256,
            value_name: "sample value",
            first_line: 0,
            line_name: "column",
            title: "colhist test".into(),
        };
        let svg = String::from_utf8(colhist_figure(FigureFormat::Svg, &f).unwrap()).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<image").count(), 1);
        assert!(svg.contains(">\nsample value\n<") && svg.contains(">\ncount (log scale)\n<"));
        assert!(!svg.contains("#010203"), "the placeholder is replaced");
    }
}
