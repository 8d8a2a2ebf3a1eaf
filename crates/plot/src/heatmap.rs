//! A matrix of counts as a picture: `colhist --format png`, and the raster inside its figure.

use std::ops::Range;

use crate::colour::LogColour;

/// A matrix of counts: `bins` rows of `lines` counts each (a histogram per column, or per row,
/// of a frame), bin 0 first.
#[derive(Debug, Clone, Copy)]
pub struct Counts<'a> {
    pub bins: usize,
    pub lines: usize,
    /// `bins * lines` counts, row-major.
    pub counts: &'a [u32],
}

impl Counts<'_> {
    pub fn get(&self, bin: usize, line: usize) -> u32 {
        self.counts[bin * self.lines + line]
    }

    /// The largest count (0 for an empty matrix).
    pub fn max(&self) -> u64 {
        self.counts.iter().copied().max().unwrap_or(0) as u64
    }
}

/// An 8-bit RGB picture, row-major, 3 bytes a pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
}

/// The shortest side `heatmap_image` draws: a matrix of a few bins or one column still shows.
const MIN_SIDE: usize = 256;

/// The matrix as a picture a person can read: each count's colour by [`LogColour`] (viridis on a
/// log scale up to the largest count), bins upward (bin 0, the lowest values, at the bottom),
/// lines left to right. Each cell is a block of `fx x fy` pixels, the smallest whole numbers that
/// make each side at least 256 pixels (1 x 1 for a 725-column, 256-bin matrix; 256 wide for
/// `--line`'s one column).
pub fn heatmap_image(counts: &Counts) -> RgbImage {
    let colour = LogColour::new(counts.max());
    let (lines, bins) = (counts.lines.max(1), counts.bins.max(1));
    let (fx, fy) = (MIN_SIDE.div_ceil(lines), MIN_SIDE.div_ceil(bins));
    let (width, height) = (counts.lines * fx, counts.bins * fy);
    let mut rgb = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        let bin = counts.bins - 1 - y / fy;
        for x in 0..width {
            rgb.extend_from_slice(&colour.colour(counts.get(bin, x / fx) as u64));
        }
    }
    RgbImage { width, height, rgb }
}

/// The matrix resampled to a `width x height` raster whose columns span lines `0..lines` and
/// whose rows span the values `values` top to bottom (the higher values on top), where
/// `bin_of(v)` is the bin of value v. Each pixel shows the largest count among the cells it
/// covers, so a narrow peak (one bright column among thousands) never falls between pixels.
pub(crate) fn raster(
    counts: &Counts,
    values: Range<u32>,
    bin_of: impl Fn(u32) -> usize,
    (width, height): (usize, usize),
) -> RgbImage {
    let colour = LogColour::new(counts.max());
    let columns: Vec<Range<usize>> = (0..width).map(|px| covered(px, width, counts.lines)).collect();
    // Pass 1: each bin's row pooled to the raster's columns.
    let mut pooled = vec![0u32; counts.bins * width];
    for bin in 0..counts.bins {
        let row = &counts.counts[bin * counts.lines..(bin + 1) * counts.lines];
        for (slot, cols) in pooled[bin * width..(bin + 1) * width].iter_mut().zip(&columns) {
            *slot = row[cols.clone()].iter().copied().max().unwrap_or(0);
        }
    }
    // Pass 2: each raster row pools the bins of the values it covers.
    let span = (values.end - values.start) as usize;
    let mut rgb = Vec::with_capacity(width * height * 3);
    for py in 0..height {
        // Rows run downwards, values upwards.
        let v = covered(height - 1 - py, height, span);
        let (lo, hi) = (values.start as usize + v.start, values.start as usize + v.end - 1);
        let bins = bin_of(lo as u32).min(counts.bins.saturating_sub(1))..bin_of(hi as u32) + 1;
        for px in 0..width {
            let max = bins.clone().filter(|&b| b < counts.bins).map(|b| pooled[b * width + px]).max();
            rgb.extend_from_slice(&colour.colour(max.unwrap_or(0) as u64));
        }
    }
    RgbImage { width, height, rgb }
}

/// The cells `0..cells` that pixel `p` of `pixels` covers when both span the same length: at
/// least one, and every cell that overlaps the pixel.
fn covered(p: usize, pixels: usize, cells: usize) -> Range<usize> {
    if cells == 0 {
        return 0..0;
    }
    let start = p * cells / pixels;
    let end = ((p + 1) * cells).div_ceil(pixels).clamp(start + 1, cells);
    start.min(cells - 1)..end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::viridis;

    #[test]
    fn heatmap_puts_bin_zero_at_the_bottom_on_a_log_scale() {
        // 2 bins x 3 columns: bin 0 = [0, 1, 999], bin 1 = [9, 0, 0].
        let counts = [0, 1, 999, 9, 0, 0];
        let m = Counts { bins: 2, lines: 3, counts: &counts };
        let img = heatmap_image(&m);
        // 256 / 3 -> 86 pixels a column, 128 a bin.
        assert_eq!((img.width, img.height), (258, 256));
        let at = |x: usize, y: usize| {
            [img.rgb[3 * (y * 258 + x)], img.rgb[3 * (y * 258 + x) + 1], img.rgb[3 * (y * 258 + x) + 2]]
        };
        assert_eq!(at(2 * 86, 255), viridis(1.0), "the peak, bin 0, bottom right");
        assert_eq!(at(0, 255), viridis(0.0));
        assert_eq!(at(0, 0), viridis((10f64).ln() / (1000f64).ln()), "bin 1 on top");
        assert_eq!(at(86, 200), viridis((2f64).ln() / (1000f64).ln()));
        let big = vec![5u32; 256 * 725];
        let img = heatmap_image(&Counts { bins: 256, lines: 725, counts: &big });
        assert_eq!((img.width, img.height), (725, 256), "one pixel a cell when both sides are long");
    }

    #[test]
    fn covered_cells_overlap_the_pixel_and_cover_everything() {
        for (pixels, cells) in [(10, 3), (3, 10), (700, 725), (725, 700), (5, 5), (1, 9), (9, 1)] {
            let mut seen = vec![false; cells];
            for p in 0..pixels {
                let r = covered(p, pixels, cells);
                assert!(!r.is_empty() && r.end <= cells, "{pixels} {cells} {p}: {r:?}");
                // Cell c spans [c / cells, (c + 1) / cells), pixel p [p / pixels, (p + 1) / pixels).
                for c in r.clone() {
                    assert!(c * pixels < (p + 1) * cells && p * cells < (c + 1) * pixels, "{p} {c}");
                    seen[c] = true;
                }
            }
            assert!(seen.iter().all(|&s| s), "{pixels} {cells}");
        }
    }

    #[test]
    fn raster_keeps_a_narrow_peak() {
        // 1000 columns, one bin each value of 0..=3; one bright column.
        let mut counts = vec![1u32; 4 * 1000];
        counts[2 * 1000 + 617] = 500;
        let m = Counts { bins: 4, lines: 1000, counts: &counts };
        let img = raster(&m, 0..4, |v| v as usize, (100, 40));
        let peak = viridis(1.0);
        let bright: Vec<(usize, usize)> = (0..40)
            .flat_map(|y| (0..100).map(move |x| (x, y)))
            .filter(|&(x, y)| img.rgb[3 * (y * 100 + x)..3 * (y * 100 + x) + 3] == peak)
            .collect();
        // Value 2 is the third band from the bottom: rows 10..20; column 617 is pixel 61.
        assert_eq!(bright, (10..20).map(|y| (61, y)).collect::<Vec<_>>());
    }
}
