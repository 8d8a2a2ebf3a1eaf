//! `cdf --plot`: a frame's histogram as bars, its cumulative distribution as a curve on a second
//! axis.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::PlotError;
use crate::figure::{render, whole_number, Figure, FigureFormat, RasterPlacement, FONT};
use crate::heatmap::RgbImage;
use crate::rect::PixelRect;

/// What `cdf --plot` draws: one frame's distribution.
#[derive(Debug, Clone)]
pub struct CdfFigure<'a> {
    /// Each bin's count.
    pub counts: &'a [u64],
    /// The counts summed up to each bin.
    pub cumulative: &'a [u64],
    /// Each bin's extent on the x axis, in order: a bin of whole values lo..=hi as lo - 0.5..hi +
    /// 0.5, a bin of floats its edges.
    pub bins: &'a [(f64, f64)],
    /// The x axis: the range the bins span.
    pub values: std::ops::Range<f64>,
    /// Whether the samples are whole numbers: the x axis then labels whole values only.
    pub whole: bool,
    /// The caption above the plot.
    pub title: String,
}

/// The bars' colour (matplotlib's first, a blue) and the curve's (its fourth, a red).
const BARS: RGBColor = RGBColor(31, 119, 180);
const CURVE: RGBColor = RGBColor(214, 39, 40);

/// The figure as the bytes of a `format` file: x the sample value over the bins' range, a bar per
/// bin over its extent as high as its count (left axis), and the cumulative fraction of the
/// binned pixels up to each bin's end (right axis, 0 to 1), joined by straight lines. Where bins
/// are narrower than a pixel, each pixel column's bar is the largest count in it. The legend sits
/// below the plot, outside it, so that it never hides bars or curve.
pub fn cdf_figure(format: FigureFormat, figure: &CdfFigure) -> Result<Vec<u8>, PlotError> {
    render(format, figure)
}

impl Figure for CdfFigure<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        _: RasterPlacement,
    ) -> Result<Option<(RgbImage, PixelRect)>, PlotError> {
        root.fill(&WHITE)?;
        let values = self.values.clone();
        let top = self.counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.05;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(72)
            .y_label_area_size(80)
            .right_y_label_area_size(80)
            .build_cartesian_2d(values.clone(), 0.0..top)?
            .set_secondary_coord(values.clone(), 0.0..1.05);
        let rect = PixelRect::of_range(chart.plotting_area().get_pixel_range());
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(230, 230, 230))
            .x_desc("sample value")
            .y_desc("pixels per bin")
            .x_label_formatter(&|v: &f64| match self.whole {
                true => whole_number(v),
                false => short_number(*v, values.end - values.start),
            })
            .y_label_formatter(&whole_number)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_desc("cumulative fraction")
            .y_label_formatter(&|v: &f64| format!("{v:.1}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        let bars = self.bars(rect.width as usize, &values);
        chart.draw_series(
            bars.into_iter()
                .map(|(x0, x1, count)| Rectangle::new([(x0, 0.0), (x1, count as f64)], BARS.filled())),
        )?;
        chart.draw_secondary_series(LineSeries::new(
            self.curve(rect.width as usize, &values),
            CURVE.stroke_width(2),
        ))?;
        legend(root, rect)?;
        Ok(None)
    }
}

/// The legend, below the x axis' title, right-aligned: outside the plot `rect`, where it cannot
/// cover the data.
fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rect: PixelRect) -> Result<(), PlotError> {
    let y = rect.y + rect.height as i32 + 62;
    let right = rect.x + rect.width as i32;
    let style = (FONT, 14).into_font().color(&BLACK);
    let (bars_x, curve_x) = (right - 330, right - 160);
    root.draw(&Rectangle::new([(bars_x, y - 5), (bars_x + 14, y + 5)], BARS.filled()))?;
    root.draw(&Text::new("pixels per bin", (bars_x + 20, y - 7), style.clone()))?;
    root.draw(&PathElement::new(vec![(curve_x, y), (curve_x + 14, y)], CURVE.stroke_width(2)))?;
    root.draw(&Text::new("cumulative fraction", (curve_x + 20, y - 7), style))?;
    Ok(())
}

/// An x-axis label of float samples: as few decimals as the axis' `span` needs.
fn short_number(v: f64, span: f64) -> String {
    let decimals = (2.0 - span.log10().floor()).clamp(0.0, 12.0) as usize;
    format!("{v:.decimals$}")
}

impl CdfFigure<'_> {
    /// The bars to draw, `(from, to, height)` in values: one per bin while bins are at least a
    /// pixel wide, else one per pixel column of the plot (`pixels` wide, spanning `values`), as
    /// high as the largest count among the bins it covers.
    fn bars(&self, pixels: usize, values: &std::ops::Range<f64>) -> Vec<(f64, f64, u64)> {
        let per_bin = self.bins.iter().zip(self.counts).map(|(&(lo, hi), &c)| (lo, hi, c));
        if self.counts.len() <= pixels.max(1) {
            return per_bin.collect();
        }
        let step = (values.end - values.start) / pixels as f64;
        let mut bars: Vec<(f64, f64, u64)> = Vec::with_capacity(pixels);
        for (x0, x1, count) in per_bin {
            // The pixel column of the bin's middle.
            let px = (((x0 + x1) / 2.0 - values.start) / step).floor();
            let (p0, p1) = (values.start + px * step, values.start + (px + 1.0) * step);
            match bars.last_mut() {
                Some(last) if last.0 == p0 => last.2 = last.2.max(count),
                _ => bars.push((p0, p1, count)),
            }
        }
        bars
    }

    /// The curve's points: (the axis' start, 0), then (the end of bin b, cumulative
    /// fraction up to b); with more bins than pixels, one point per pixel column (the last in it),
    /// which the curve, rising, passes through anyway.
    fn curve(&self, pixels: usize, values: &std::ops::Range<f64>) -> Vec<(f64, f64)> {
        let total = self.cumulative.last().copied().unwrap_or(0).max(1) as f64;
        let step = (values.end - values.start) / pixels.max(1) as f64;
        let column = |x: f64| ((x - values.start) / step).floor() as i64;
        let mut points = vec![(values.start, 0.0)];
        let ends: Vec<(f64, f64)> =
            self.bins.iter().zip(self.cumulative).map(|(&(_, hi), &c)| (hi, c as f64 / total)).collect();
        for (i, &(x, f)) in ends.iter().enumerate() {
            let last_in_column = ends.get(i + 1).is_none_or(|&(next, _)| column(next) != column(x));
            if self.counts.len() <= pixels || last_in_column {
                points.push((x, f));
            }
        }
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_sums(counts: &[u64]) -> Vec<u64> {
        counts
            .iter()
            .scan(0, |s, &c| {
                *s += c;
                Some(*s)
            })
            .collect()
    }

    #[test]
    fn bars_and_curve_follow_the_bins() {
        let ranges = [(-0.5, 3.5), (3.5, 7.5)];
        let f = CdfFigure {
            counts: &[3, 1],
            cumulative: &[3, 4],
            bins: &ranges,
            values: -0.5..7.5,
            whole: true,
            title: String::new(),
        };
        let values = -0.5..7.5;
        assert_eq!(f.bars(100, &values), vec![(-0.5, 3.5, 3), (3.5, 7.5, 1)]);
        assert_eq!(f.curve(100, &values), vec![(-0.5, 0.0), (3.5, 0.75), (7.5, 1.0)]);
        // Eight one-value bins on four pixels: pairs pooled by their largest count.
        let ranges: Vec<(f64, f64)> = (0..8).map(|v| (v as f64 - 0.5, v as f64 + 0.5)).collect();
        let counts = [1, 5, 2, 2, 0, 0, 9, 1];
        let cumulative = running_sums(&counts);
        let f = CdfFigure {
            counts: &counts,
            cumulative: &cumulative,
            bins: &ranges,
            values: -0.5..7.5,
            whole: true,
            title: String::new(),
        };
        assert_eq!(f.bars(4, &values), vec![(-0.5, 1.5, 5), (1.5, 3.5, 2), (3.5, 5.5, 0), (5.5, 7.5, 9)]);
        // The last end in each pixel column (columns 2 values wide, from -0.5), and the end.
        let ends: Vec<f64> = f.curve(4, &values).iter().map(|p| p.0).collect();
        assert_eq!(ends, vec![-0.5, 0.5, 2.5, 4.5, 6.5, 7.5]);
        assert_eq!(f.curve(4, &values)[2], (2.5, 8.0 / 20.0));
    }

    #[test]
    fn png_and_svg_figures_are_made() {
        let ranges: Vec<(f64, f64)> = (0..256).map(|v| (v as f64 - 0.5, v as f64 + 0.5)).collect();
        let counts: Vec<u64> = (0..256u64).map(|v| (v * 7919) % 1000).collect();
        let cumulative = running_sums(&counts);
        let f = CdfFigure {
            counts: &counts,
            cumulative: &cumulative,
            bins: &ranges,
            values: -0.5..255.5,
            whole: true,
            title: "cdf test".into(),
        };
        let img = image::load_from_memory(&cdf_figure(FigureFormat::Png, &f).unwrap()).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), crate::figure::SIZE);
        let has = |c: RGBColor| img.pixels().any(|p| p.0 == [c.0, c.1, c.2]);
        assert!(has(BARS) && has(CURVE));
        let svg = String::from_utf8(cdf_figure(FigureFormat::Svg, &f).unwrap()).unwrap();
        assert!(svg.contains(">\ncumulative fraction\n<") && svg.contains(">\npixels per bin\n<"));
        assert!(!svg.contains("<image"));
    }
}
