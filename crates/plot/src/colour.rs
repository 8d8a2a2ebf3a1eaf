//! Counts as colours: a logarithmic scale through viridis.

use std::sync::OnceLock;

use plotters::style::colors::colormaps::{ColorMap, ViridisRGB};

/// Viridis (matplotlib's default map: perceptually uniform, readable in gray and by the colour
/// blind) at `t` in 0..=1 (clamped), from dark purple to yellow. `plotters` defines it by eight
/// anchors joined linearly in RGB; this is its value at 256 steps, looked up.
pub fn viridis(t: f64) -> [u8; 3] {
    static TABLE: OnceLock<[[u8; 3]; 256]> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        std::array::from_fn(|i| {
            let c = ViridisRGB.get_color(i as f32 / 255.0);
            [c.0, c.1, c.2]
        })
    });
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    table[(t * 255.0).round() as usize]
}

/// A count's place on a logarithmic scale from 0 to the largest count, `ln(1 + c) / ln(1 + max)`:
/// 0 is at 0 and the largest count at 1, and a count of 1 stands apart from none at all, which a
/// linear scale would lose next to a peak of thousands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogColour {
    /// The largest count.
    pub max: u64,
}

impl LogColour {
    pub fn new(max: u64) -> LogColour {
        LogColour { max }
    }

    /// Where `count` falls, 0..=1 (0 for every count when the largest is 0).
    pub fn position(&self, count: u64) -> f64 {
        if self.max == 0 {
            return 0.0;
        }
        ((count.min(self.max) as f64).ln_1p() / (self.max as f64).ln_1p()).clamp(0.0, 1.0)
    }

    /// The colour of `count`.
    pub fn colour(&self, count: u64) -> [u8; 3] {
        viridis(self.position(count))
    }

    /// The counts a colour bar labels: 0, the powers of ten up to the largest count, and the
    /// largest count itself (without a power of ten that would crowd it: above a third of it).
    pub fn ticks(&self) -> Vec<u64> {
        let mut ticks = vec![0];
        let mut p = 1u64;
        while p.checked_mul(3).is_some_and(|crowd| crowd <= self.max) {
            ticks.push(p);
            match p.checked_mul(10) {
                Some(next) => p = next,
                None => break,
            }
        }
        if self.max > 0 {
            ticks.push(self.max);
        }
        ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow_getting_lighter() {
        assert_eq!(viridis(0.0), [68, 1, 84]);
        assert_eq!(viridis(1.0), [254, 232, 37]);
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        // Rec.601 luma rises all the way: the map reads in gray too.
        let luma = |c: [u8; 3]| 299 * c[0] as u32 + 587 * c[1] as u32 + 114 * c[2] as u32;
        let steps: Vec<u32> = (0..=32).map(|i| luma(viridis(i as f64 / 32.0))).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    }

    #[test]
    fn log_positions_and_ticks() {
        let s = LogColour::new(999);
        assert_eq!(s.position(0), 0.0);
        assert_eq!(s.position(999), 1.0);
        assert!((LogColour::new(99).position(9) - 0.5).abs() < 1e-12, "ln 10 / ln 100");
        assert!(s.position(1) > 0.09, "one count stands apart from none");
        assert_eq!(s.ticks(), vec![0, 1, 10, 100, 999]);
        assert_eq!(LogColour::new(250).ticks(), vec![0, 1, 10, 250], "100 would crowd 250");
        assert_eq!(LogColour::new(0).ticks(), vec![0]);
        assert_eq!(LogColour::new(0).position(0), 0.0);
        assert_eq!(LogColour::new(1).ticks(), vec![0, 1]);
        assert_eq!(LogColour::new(u64::MAX).ticks().len(), 21);
    }
}
