//! Detected lines and segments drawn over a picture (`hough-lines --draw`, `hough-segments
//! --draw`).

use super::{Line, Segment};

/// Paints with `pen` the square around the pixel nearest (x, y) (each rounded half to even):
/// `pen.width` x `pen.width` pixels from (x − (w − 1) / 2, y − (w − 1) / 2) (integer division),
/// the part of it inside the RGB image (`width * height` triples).
fn put(rgb: &mut [u8], width: usize, height: usize, x: f64, y: f64, pen: Pen) {
    let w = pen.width.max(1) as i64;
    let back = (w - 1) / 2;
    let (x, y) = (x.round_ties_even(), y.round_ties_even());
    // Far outside: nothing of the square is inside (and the cast below stays exact).
    if !(x > -(w as f64)
        && y > -(w as f64)
        && x < (width as f64 + w as f64)
        && y < (height as f64 + w as f64))
    {
        return;
    }
    let (x0, y0) = (x as i64 - back, y as i64 - back);
    for y in y0.max(0)..(y0 + w).min(height as i64) {
        for x in x0.max(0)..(x0 + w).min(width as i64) {
            let i = (y as usize * width + x as usize) * 3;
            rgb[i..i + 3].copy_from_slice(&pen.rgb);
        }
    }
}

/// How lines are drawn: their colour and width in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pen {
    pub rgb: [u8; 3],
    /// At least 1.
    pub width: usize,
}

impl Default for Pen {
    /// Red, one pixel wide.
    fn default() -> Self {
        Pen { rgb: [255, 0, 0], width: 1 }
    }
}

/// Draws `lines` with `pen` across an RGB image (`width * height` triples) whose pixel (0, 0) is
/// the edge map's: each line x cos θ + y sin θ = ρ is sampled once per column where it is closer
/// to horizontal (y rounded half to even), else once per row, and each sample (x, y) paints the
/// square of `pen.width` x `pen.width` pixels from (x − (w − 1) / 2, y − (w − 1) / 2) (integer
/// division), the part of it inside the image.
pub fn draw_lines(rgb: &mut [u8], width: usize, height: usize, lines: &[Line], pen: Pen) {
    for l in lines {
        let (rho, theta) = (l.rho as f64, l.theta as f64);
        let (c, s) = (theta.cos(), theta.sin());
        if s.abs() >= c.abs() {
            for x in 0..width {
                put(rgb, width, height, x as f64, (rho - x as f64 * c) / s, pen);
            }
        } else {
            for y in 0..height {
                put(rgb, width, height, (rho - y as f64 * s) / c, y as f64, pen);
            }
        }
    }
}

/// Draws `segments` with `pen` as [`draw_lines`] draws lines: sampled once per column between the
/// ends where the segment is closer to horizontal, else once per row.
pub fn draw_segments(rgb: &mut [u8], width: usize, height: usize, segments: &[Segment], pen: Pen) {
    for s in segments {
        let (x0, y0, x1, y1) = (s.x0 as f64, s.y0 as f64, s.x1 as f64, s.y1 as f64);
        let steps = (x1 - x0).abs().max((y1 - y0).abs());
        if steps == 0.0 {
            put(rgb, width, height, x0, y0, pen);
            continue;
        }
        for k in 0..=steps as u64 {
            let t = k as f64 / steps;
            put(rgb, width, height, x0 + t * (x1 - x0), y0 + t * (y1 - y0), pen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_pen_paints_a_square_around_each_sample() {
        // A horizontal line y = 2 (θ = 90°, ρ = 2) on 4x5, 2 pixels wide: rows 2 and 3.
        let line = Line {
            rho: 2.0,
            theta: std::f32::consts::FRAC_PI_2,
            theta_degrees: 90.0,
            votes: 1,
            row: 0,
            column: 0,
        };
        let mut rgb = vec![0u8; 4 * 5 * 3];
        draw_lines(&mut rgb, 4, 5, &[line], Pen { rgb: [1, 2, 3], width: 2 });
        let painted: Vec<usize> =
            (0..20).filter(|p| rgb[p * 3..p * 3 + 3] == [1, 2, 3]).map(|p| p / 4).collect();
        assert_eq!(painted, [2, 2, 2, 2, 3, 3, 3, 3]);
        let mut rgb = vec![0u8; 4 * 5 * 3];
        draw_lines(&mut rgb, 4, 5, &[line], Pen { rgb: [9, 9, 9], width: 3 });
        assert_eq!(rgb.chunks(3).filter(|p| p == &[9, 9, 9]).count(), 12, "rows 1 to 3");
    }
}
