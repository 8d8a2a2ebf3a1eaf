//! Detected lines and segments drawn over a picture (`hough-lines --draw`, `hough-segments
//! --draw`).

use super::{Line, Segment};

/// Paints the pixel nearest (x, y), each rounded half to even, red (255, 0, 0) if it lies in the
/// RGB image (`width * height` triples).
fn put(rgb: &mut [u8], width: usize, height: usize, x: f64, y: f64) {
    let (x, y) = (x.round_ties_even(), y.round_ties_even());
    if x >= 0.0 && y >= 0.0 && x < width as f64 && y < height as f64 {
        let i = (y as usize * width + x as usize) * 3;
        rgb[i..i + 3].copy_from_slice(&[255, 0, 0]);
    }
}

/// Draws `lines` in red (255, 0, 0), one pixel wide, across an RGB image (`width * height`
/// triples) whose pixel (0, 0) is the edge map's: each line x cos θ + y sin θ = ρ is sampled once
/// per column where it is closer to horizontal (y rounded half to even), else once per row.
pub fn draw_lines(rgb: &mut [u8], width: usize, height: usize, lines: &[Line]) {
    for l in lines {
        let (rho, theta) = (l.rho as f64, l.theta as f64);
        let (c, s) = (theta.cos(), theta.sin());
        if s.abs() >= c.abs() {
            for x in 0..width {
                put(rgb, width, height, x as f64, (rho - x as f64 * c) / s);
            }
        } else {
            for y in 0..height {
                put(rgb, width, height, (rho - y as f64 * s) / c, y as f64);
            }
        }
    }
}

/// Draws `segments` in red, one pixel wide, as [`draw_lines`] draws lines: sampled once per
/// column between the ends where the segment is closer to horizontal, else once per row.
pub fn draw_segments(rgb: &mut [u8], width: usize, height: usize, segments: &[Segment]) {
    for s in segments {
        let (x0, y0, x1, y1) = (s.x0 as f64, s.y0 as f64, s.x1 as f64, s.y1 as f64);
        let steps = (x1 - x0).abs().max((y1 - y0).abs());
        if steps == 0.0 {
            put(rgb, width, height, x0, y0);
            continue;
        }
        for k in 0..=steps as u64 {
            let t = k as f64 / steps;
            put(rgb, width, height, x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        }
    }
}
