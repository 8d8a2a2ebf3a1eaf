//! Histogram matching (specification): the look-up table that gives a frame the distribution of a
//! reference, as scikit-image's `match_histograms` computes it for integer images
//! (`_match_cumulative_cdf`), rounded to integers.
//!
//! With the source's counts s(l) over its levels (S pixels) and the reference's non-zero counts
//! r(v_k) at its levels v_0 < v_1 < ... (R pixels):
//!
//! - q(l) = (s(0) + ... + s(l)) / S and p_k = (r(v_0) + ... + r(v_k)) / R, each a float64
//!   division of two integers (NumPy's `cumsum(counts) / size`);
//! - level l becomes `np.interp(q(l), p, v)`: v_0 where q(l) < p_0, v_k where q(l) = p_k, and
//!   between p_k < q(l) < p_{k+1}: slope (v_{k+1} - v_k) / (p_{k+1} - p_k), then
//!   slope * (q(l) - p_k) + v_k, each operation rounded to float64 as NumPy's C loop does (no
//!   fused multiply-add);
//! - then rounded to the nearest integer, ties to even (`np.rint`), and clamped to 0..maxval.
//!
//! A source with no pixels counted (an all-zero mask) maps every level to itself.

/// The table (one entry per level 0..=maxval of the source) that matches `source`'s counts (one
/// per level; levels above the last are never looked up by a sample) to `reference`'s counts
/// (one per level of the reference, which may have another maxval).
///
/// # Example
/// ```
/// use histopipe_ops::matching::table;
/// // Half the source at 0, half at 1; the reference half at 0, half at 2.
/// assert_eq!(table(&[2, 2], &[1, 0, 1], 255), [0, 2]);
/// ```
pub fn table(source: &[u64], reference: &[u64], maxval: u16) -> Vec<u16> {
    let total: u64 = source.iter().sum();
    if total == 0 {
        return (0..source.len()).map(|l| l as u16).collect();
    }
    // The reference's levels present (xp's values, fp) and their quantiles (xp).
    let ref_total: u64 = reference.iter().sum();
    let mut values = Vec::new();
    let mut quantiles = Vec::new();
    let mut sum = 0u64;
    for (v, &c) in reference.iter().enumerate() {
        if c != 0 {
            sum += c;
            values.push(v as f64);
            quantiles.push(sum as f64 / ref_total as f64);
        }
    }
    assert!(!values.is_empty(), "a reference with pixels");
    let mut sum = 0u64;
    source
        .iter()
        .map(|&c| {
            sum += c;
            let q = sum as f64 / total as f64;
            let matched = interp(q, &quantiles, &values).round_ties_even();
            matched.clamp(0.0, maxval as f64) as u16
        })
        .collect()
}

/// `np.interp(x, xp, fp)` for increasing `xp` (numpy/_core/src/multiarray/compiled_base.c,
/// `arr_interp`): fp[0] left of xp[0], fp[last] right of xp[last], fp[j] where x = xp[j], else
/// slope * (x - xp[j]) + fp[j] with xp[j] < x < xp[j + 1].
fn interp(x: f64, xp: &[f64], fp: &[f64]) -> f64 {
    let last = xp.len() - 1;
    if x < xp[0] {
        return fp[0];
    }
    if x > xp[last] {
        return fp[last];
    }
    // The largest j with xp[j] <= x.
    let j = xp.partition_point(|&p| p <= x) - 1;
    if j == last || xp[j] == x {
        return fp[j];
    }
    let slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    slope * (x - xp[j]) + fp[j]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interp_as_numpy() {
        let (xp, fp) = ([0.25, 0.5, 1.0], [10.0, 20.0, 40.0]);
        assert_eq!(interp(0.1, &xp, &fp), 10.0);
        assert_eq!(interp(0.25, &xp, &fp), 10.0);
        assert_eq!(interp(0.375, &xp, &fp), 15.0);
        assert_eq!(interp(0.75, &xp, &fp), 30.0);
        assert_eq!(interp(1.0, &xp, &fp), 40.0);
        assert_eq!(interp(1.5, &xp, &fp), 40.0);
    }

    #[test]
    fn matching_to_itself_is_the_identity_where_levels_are_present() {
        let counts = [3u64, 0, 5, 1, 0, 7];
        let t = table(&counts, &counts, 5);
        for (l, &c) in counts.iter().enumerate() {
            if c != 0 {
                assert_eq!(t[l], l as u16);
            }
        }
    }

    #[test]
    fn no_source_pixels_is_the_identity_and_values_clamp() {
        assert_eq!(table(&[0, 0, 0], &[1, 1], 2), [0, 1, 2]);
        let mut reference = vec![0u64; 1001];
        reference[1000] = 4;
        assert_eq!(table(&[1, 1], &reference, 255), [255, 255]);
    }

    #[test]
    fn ties_round_to_even() {
        // q = 1/4, 1/2, 3/4, 1 against p = 1/2, 1 at levels 0, 5: 0, 0, 2.5, 5.
        assert_eq!(table(&[1, 1, 1, 1], &[1, 0, 0, 0, 0, 1], 255), [0, 0, 2, 5]);
    }
}
