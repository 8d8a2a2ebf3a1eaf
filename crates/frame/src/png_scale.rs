//! A frame's maxval in PNG, which has none: samples scaled to the PNG's depth as `pnmtopng` scales
//! them, and the maxval recorded for reading them back exactly.
//!
//! PNG samples run to 2^depth − 1, and every viewer shows that as white. A frame of maxval M is
//! written at 8 bits when M ≤ 255, else at 16 (P = 255 or 65535), each sample v as
//!
//! `v' = floor((v · P + floor(M / 2)) / M)`, the nearest integer to v · P / M (netpbm's `PPM_DEPTH`),
//!
//! so the picture looks as a netpbm viewer shows the frame. When M < P the file also holds an
//! `sBIT` chunk with the bits M needs (pnmtopng's rule: the smallest n with M ≤ 2^n − 1), and a
//! `tEXt` chunk `histopipe-maxval` = M, which the reader uses to scale back:
//!
//! `v = floor((v' · M + floor(P / 2)) / P)`.
//!
//! Why that gives v back exactly: |v' − v P / M| ≤ 1/2, so |v' M / P − v| ≤ M / (2 P) < 1/2 when
//! M < P, and rounding to the nearest integer (whichever way halves go) lands on v.

/// The `tEXt` keyword that records the frame's maxval.
pub(crate) const MAXVAL_KEYWORD: &str = "histopipe-maxval";

/// How the samples of a frame of one maxval go into PNG and back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PngScale {
    /// The frame's maxval, M.
    pub maxval: u16,
    /// The PNG's largest sample, P: 255 or 65535.
    pub png_max: u16,
}

impl PngScale {
    /// The scale for a frame of `maxval`: 8-bit PNG up to 255, 16-bit above.
    pub fn for_maxval(maxval: u16) -> PngScale {
        PngScale { maxval, png_max: if maxval <= 255 { 255 } else { 65535 } }
    }

    /// Whether samples change on the way: the maxval is not the PNG's own.
    pub fn scales(self) -> bool {
        self.maxval != self.png_max
    }

    /// The `sBIT` value: the bits the original samples need, when fewer than the PNG's depth.
    pub fn significant_bits(self) -> Option<u8> {
        self.scales().then(|| 16 - self.maxval.leading_zeros() as u8)
    }

    /// A frame sample as written to the PNG.
    pub fn written(self, v: u16) -> u16 {
        let (m, p) = (self.maxval as u32, self.png_max as u32);
        ((v.min(self.maxval) as u32 * p + m / 2) / m) as u16
    }

    /// A PNG sample as read back into the frame.
    pub fn read_back(self, v: u16) -> u16 {
        let (m, p) = (self.maxval as u32, self.png_max as u32);
        ((v.min(self.png_max) as u32 * m + p / 2) / p) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every maxval: the ends, and a spread of samples (all of them for every 8-bit maxval and a
    /// few 16-bit ones) round-trip exactly; the written samples keep their order.
    #[test]
    fn every_maxval_round_trips() {
        for maxval in 1..=u16::MAX {
            let s = PngScale::for_maxval(maxval);
            assert_eq!((s.written(0), s.written(maxval)), (0, s.png_max), "{maxval}");
            let every = maxval <= 255 || [256, 257, 1076, 1023, 4095, 32768, 65534].contains(&maxval);
            let step = if every { 1 } else { (maxval / 61).max(1) };
            for v in (0..=maxval).step_by(step as usize).chain([maxval - 1, maxval / 2 + 1]) {
                let w = s.written(v);
                assert_eq!(s.read_back(w), v, "maxval {maxval}, sample {v} written as {w}");
            }
            if every {
                assert!((1..=maxval).all(|v| s.written(v - 1) < s.written(v)), "maxval {maxval}: order");
            }
        }
    }

    #[test]
    fn scaled_as_pnmtopng_scales() {
        // pnmtopng's example: maxval 5 to PNG maxval 7 takes 2 to 3; here to 255, 2 -> 102.
        let s = PngScale::for_maxval(5);
        assert_eq!(s.written(2), 102);
        assert_eq!(s.significant_bits(), Some(3));
        let dem = PngScale::for_maxval(1076);
        assert_eq!((dem.png_max, dem.written(538), dem.significant_bits()), (65535, 32768, Some(11)));
        assert_eq!(PngScale::for_maxval(255).significant_bits(), None);
        assert_eq!(PngScale::for_maxval(65535).significant_bits(), None);
        assert_eq!(PngScale::for_maxval(256).significant_bits(), Some(9));
        assert_eq!(PngScale::for_maxval(1).significant_bits(), Some(1));
    }
}
