//! `threshold`'s tests: each method's choice against OpenCV's and scikit-image's numbers, and the
//! tables.

use super::*;

fn counts(samples: &[u16], levels: usize) -> Vec<u64> {
    let mut c = vec![0u64; levels];
    for &s in samples {
        c[s as usize] += 1;
    }
    c
}

#[test]
fn otsu_of_a_flat_frame_is_zero_as_opencv_says() {
    assert_eq!(choose(Method::Otsu, &counts(&[77; 12], 256), 8).unwrap(), [0]);
    assert_eq!(choose(Method::Otsu, &counts(&[0; 3], 256), 8).unwrap(), [0]);
    assert_eq!(choose(Method::Otsu, &[], 8).unwrap(), [0]);
}

#[test]
fn otsu_splits_two_values_at_the_lower() {
    let c = counts(&[10, 10, 200, 200, 200], 256);
    assert_eq!(choose(Method::Otsu, &c, 8).unwrap(), [10]);
    let c = counts(&[1000, 3000, 3000], 4096);
    assert_eq!(choose(Method::Otsu, &c, 16).unwrap(), [1000]);
}

#[test]
fn triangle_of_flat_frames_as_opencv() {
    // cv2.threshold(np.full((4, 4), v, np.uint8), 0, 255, THRESH_BINARY + THRESH_TRIANGLE).
    assert_eq!(choose(Method::Triangle, &counts(&[77; 16], 256), 8).unwrap(), [76]);
    assert_eq!(choose(Method::Triangle, &counts(&[0; 16], 256), 8).unwrap(), [1]);
    assert!(choose(Method::Triangle, &counts(&[7; 4], 300), 16).is_err());
    // Nothing below the line: -1, every sample maxval.
    assert_eq!(
        choose(Method::Triangle, &counts(&[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 256), 8).unwrap(),
        [-1]
    );
}

#[test]
fn percentiles_are_inverted_cdf() {
    let c = counts(&[3, 5, 5, 9], 256);
    let at = |m: u32| choose(Method::Percentile(Percent { millionths: m }), &c, 8).unwrap()[0];
    assert_eq!(at(0), 3); // the smallest sample, not level 0
    assert_eq!(at(25_000_000), 3); // 1 of 4 reaches 25%
    assert_eq!(at(25_000_001), 5);
    assert_eq!(at(75_000_000), 5);
    assert_eq!(at(75_000_001), 9);
    assert_eq!(at(HUNDRED_PERCENT), 9);
}

#[test]
fn multi_otsu_with_as_many_values_as_classes_splits_between_them() {
    let c = counts(&[4, 4, 9, 20, 20, 20], 256);
    assert_eq!(choose(Method::MultiOtsu(3), &c, 8).unwrap(), [4, 9]);
    assert!(choose(Method::MultiOtsu(4), &c, 8).is_err());
}

#[test]
fn tables_map_above_the_threshold_to_maxval() {
    assert_eq!(table::<u8>(Method::Otsu, &[1], 4, Mode::Binary), [0, 0, 3, 3]);
    assert_eq!(table::<u8>(Method::Otsu, &[1], 4, Mode::BinaryInv), [3, 3, 0, 0]);
    assert_eq!(table::<u16>(Method::Value(0), &[0], 3, Mode::Binary), [0, 2, 2]);
    assert_eq!(table::<u8>(Method::MultiOtsu(3), &[1, 3], 5, Mode::Binary), [0, 1, 1, 2, 2]);
    assert_eq!(table::<u8>(Method::MultiOtsu(3), &[1, 3], 5, Mode::BinaryInv), [2, 1, 1, 0, 0]);
}

#[test]
fn methods_display_as_spelt() {
    assert_eq!(Method::Percentile(Percent { millionths: 12_500_000 }).to_string(), "percentile:12.5");
    assert_eq!(Method::Percentile(Percent { millionths: 50_000_000 }).to_string(), "percentile:50");
    assert_eq!(Method::MultiOtsu(4).to_string(), "multiotsu:4");
}

#[test]
fn search_sizes_saturate() {
    assert_eq!(choose_count(255, 2), 255 * 254 / 2);
    assert_eq!(choose_count(65535, 1), 65535);
    assert!(choose_count(65535, 3) > MAX_COMBINATIONS);
}
