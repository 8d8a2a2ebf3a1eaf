//! Detected lines drawn over a picture (`hough-lines --draw`).

use super::Line;

/// Draws `lines` in red (255, 0, 0), one pixel wide, across an RGB image (`width * height`
/// triples) whose pixel (0, 0) is the edge map's: each line x cos θ + y sin θ = ρ is sampled once
/// per column where it is closer to horizontal (y rounded half to even), else once per row.
pub fn draw_lines(rgb: &mut [u8], width: usize, height: usize, lines: &[Line]) {
    let mut put = |x: f64, y: f64| {
        let (x, y) = (x.round_ties_even(), y.round_ties_even());
        if x >= 0.0 && y >= 0.0 && x < width as f64 && y < height as f64 {
            let i = (y as usize * width + x as usize) * 3;
            rgb[i..i + 3].copy_from_slice(&[255, 0, 0]);
        }
    };
    for l in lines {
        let (rho, theta) = (l.rho as f64, l.theta as f64);
        let (c, s) = (theta.cos(), theta.sin());
        if s.abs() >= c.abs() {
            for x in 0..width {
                put(x as f64, (rho - x as f64 * c) / s);
            }
        } else {
            for y in 0..height {
                put((rho - y as f64 * s) / c, y as f64);
            }
        }
    }
}
