//! Pages drawn at a known skew: the truth of `deskew`'s tests (here and the tools') and of its
//! benchmark.

use crate::rotate::Turn;

/// A `w x h` page of text-like lines (rows of blocks of varied widths, 12 pixels high, every 40),
/// `ink` on `paper`, turned `degrees` counter-clockwise as `rotate` turns (each pixel the
/// upright page's point that `rotate`'s inverse map gives it, nearest): its skew is `degrees`.
pub fn drawn_page_with(w: usize, h: usize, degrees: f64, seed: u64, ink: u8, paper: u8) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Each line's blocks: [start, end) along x.
    let lines: Vec<Vec<(f64, f64)>> = (0..h / 40 + 2)
        .map(|_| {
            let mut blocks = Vec::new();
            let mut x = 0.1 * w as f64 + rng.f64() * 20.0;
            while x < 0.9 * w as f64 {
                let len = 6.0 + rng.f64() * 30.0;
                blocks.push((x, x + len));
                x += len + 4.0 + rng.f64() * 10.0;
            }
            blocks
        })
        .collect();
    let m = Turn::degrees(degrees).expect("a finite angle").new_to_old(w, h);
    let mut out = vec![paper; w * h];
    for y in 0..h {
        for x in 0..w {
            let (u, v) = m.apply(x as f64, y as f64);
            if v < 20.0 || v > h as f64 - 20.0 {
                continue;
            }
            let (line, within) = ((v / 40.0).floor() as usize, v % 40.0);
            if within >= 12.0 {
                continue;
            }
            if lines[line].iter().any(|&(a, b)| u >= a && u < b) {
                out[y * w + x] = ink;
            }
        }
    }
    out
}
