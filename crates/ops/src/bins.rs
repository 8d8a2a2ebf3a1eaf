//! Equal-width bins over a frame's levels, the one definition `cdf`, `equalize` and `colhist`
//! (and their kernels, `bin_of` in kernels-common/histopipe.cuh) count with.
//!
//! With L = maxval + 1 levels and N bins (1 <= N <= L), sample v falls in bin floor(v * N / L);
//! bin b holds the values ceil(b * L / N) ..= ceil((b + 1) * L / N) - 1, so the bins partition
//! 0..=maxval, none is empty, and their widths differ by at most one. A sample over maxval (never
//! in a valid frame) is put in the last bin, on both backends, rather than out of bounds.

use crate::OpError;

/// Equal-width bins over 0..=maxval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bins {
    pub(crate) count: u32,
    /// maxval + 1.
    pub(crate) levels: u32,
}

impl Bins {
    /// `count` bins for samples 0..=maxval, or `None` for one bin per level.
    pub fn new(count: Option<usize>, maxval: u16) -> Result<Bins, OpError> {
        Bins::of_levels(count, maxval as u32 + 1, || format!("a frame with maxval {maxval}"))
    }

    /// `count` bins for `levels` values, or `None` for one bin per value; a count refused names
    /// what holds the values (`whose()`: "a frame with maxval 255", say).
    pub(crate) fn of_levels(
        count: Option<usize>,
        levels: u32,
        whose: impl FnOnce() -> String,
    ) -> Result<Bins, OpError> {
        let count = match count {
            None => levels,
            // More bins than values would leave some bins holding no value at all.
            Some(n) if n >= 1 && n <= levels as usize => n as u32,
            Some(n) => return Err(OpError::param("bins", n, format!("{} has 1 to {levels} bins", whose()))),
        };
        Ok(Bins { count, levels })
    }

    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// maxval + 1.
    pub fn levels(&self) -> usize {
        self.levels as usize
    }

    /// The bin of sample `v`: floor(v N / L), the last bin for a sample over maxval.
    pub fn of(&self, v: u32) -> usize {
        // v * count < 2^32: v <= 65535 and count <= 65536.
        (v * self.count / self.levels).min(self.count - 1) as usize
    }

    /// The lowest and highest value of bin `b`.
    pub fn range(&self, b: usize) -> (u32, u32) {
        let ceil_div = |b: u64| (b * self.levels as u64).div_ceil(self.count as u64) as u32;
        (ceil_div(b as u64), ceil_div(b as u64 + 1) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_partition_the_levels() {
        for maxval in [1u16, 2, 7, 100, 255, 1076, 4095, 65535] {
            let levels = maxval as usize + 1;
            let mut counts: Vec<usize> = (1..=levels.min(40)).collect();
            counts.extend([levels / 3 + 1, levels - 1, levels].into_iter().filter(|&n| n >= 1));
            for n in counts {
                let bins = Bins::new(Some(n), maxval).unwrap();
                let mut next = 0u32;
                for b in 0..n {
                    let (lo, hi) = bins.range(b);
                    assert_eq!(lo, next, "maxval {maxval}, {n} bins, bin {b}");
                    assert!(hi >= lo);
                    assert_eq!((bins.of(lo), bins.of(hi)), (b, b));
                    next = hi + 1;
                }
                assert_eq!(next, maxval as u32 + 1);
            }
        }
    }

    #[test]
    fn eight_bins_of_32_on_8_bit() {
        let bins = Bins::new(Some(8), 255).unwrap();
        for b in 0..8 {
            assert_eq!(bins.range(b), (32 * b as u32, 32 * b as u32 + 31));
        }
    }

    #[test]
    fn samples_over_maxval_fall_in_the_last_bin() {
        assert_eq!(Bins::new(Some(4), 255).unwrap().of(300), 3);
        assert_eq!(Bins::new(None, 100).unwrap().of(255), 100);
        assert_eq!(Bins::new(None, 65535).unwrap().of(65535), 65535);
    }

    #[test]
    fn bad_bin_counts() {
        assert!(Bins::new(Some(0), 255).is_err());
        assert!(Bins::new(Some(257), 255).unwrap_err().to_string().contains("1 to 256 bins"));
        assert_eq!(Bins::new(None, 1076).unwrap().count(), 1077);
    }
}
