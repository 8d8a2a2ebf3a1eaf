use super::*;
use crate::mask::{Mask, Masked};
use crate::parallel;
use histopipe_frame::{Affine, Pixels};

#[test]
fn bins_split_the_value_range_evenly() {
    assert_eq!(default_bins(255), 256);
    assert_eq!(default_bins(100), 101);
    assert_eq!(default_bins(1076), 256);
    assert_eq!(bin_of(255, 256, 255), 255);
    assert_eq!(bin_of(127, 2, 255), 0);
    assert_eq!(bin_of(128, 2, 255), 1);
    assert_eq!(bin_of(65535, 65536, 65535), 65535);
    assert_eq!(bin_of(300, 4, 255), 3);
    let h = ColHist { bins: 3, rows: false, maxval: 9, mask: None };
    // 10 values in 3 bins: 0..=3, 4..=6, 7..=9
    assert_eq!((h.bin_range(0), h.bin_range(1), h.bin_range(2)), ((0, 3), (4, 6), (7, 9)));
    let f = Frame::new(1, 1, 3, Pixels::U8(vec![0].into()));
    let too_many = ColHistParams { bins: Some(5), ..Default::default() }.for_frame(&f);
    let e = too_many.unwrap_err();
    assert_eq!(e.to_string(), "bins 5: a frame with maxval 3 has 1 to 4 bins");
    assert_eq!(e.param.map(|p| p.name), Some("bins"));
}

#[test]
fn strips_and_spans_count_as_testing_every_pixel() {
    let mut seed = 7u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed >> 8
    };
    let turned =
        Geometry::identity(150, 90).then(&Affine { a: 0.8, b: -0.6, c: 30.0, d: 0.6, e: 0.8, f: -40.0 });
    // 8-bit and 16-bit, widths across strip boundaries, bins dividing evenly or not.
    for (w, h, maxval, bins) in
        [(200, 70, 255, None), (130, 9, 255, Some(7)), (77, 40, 1076, None), (65, 3, 300, Some(301))]
    {
        let n = w * h;
        let pixels = if maxval <= 255 {
            Pixels::U8((0..n).map(|i| if i % 3 == 0 { (i / 11 % 256) as u8 } else { next() as u8 }).collect())
        } else {
            Pixels::U16((0..n).map(|_| (next() % (maxval as u32 + 1)) as u16).collect())
        };
        let mut f = Frame::new(w, h, maxval, pixels);
        for geometry in [None, Some(turned.clone())] {
            f.geometry = geometry;
            for rows in [false, true] {
                let op = ColHistParams { bins, rows, count_padding: false }.for_frame(&f).unwrap();
                let mut expected = vec![0u32; op.bins as usize * op.lines(w, h)];
                let mut per_pixel = || -> Result<(), crate::OpError> {
                    with_samples!(&f.pixels, v => op.cpu_counts_per_pixel(w, h, v, None, &mut expected));
                    Ok(())
                };
                per_pixel().unwrap();
                assert_eq!(op.cpu(&f).unwrap().counts, expected, "{w}x{h}, maxval {maxval}, rows {rows}");
            }
        }
    }
}

/// Every CPU count of `f` (columns and rows, with and without `geometry`, each `bins`) is the
/// per-pixel count's.
fn assert_counts_as_every_pixel(f: &mut Frame, geometries: &[Option<Geometry>], bins: &[Option<u32>]) {
    let (w, h) = (f.width, f.height);
    for geometry in geometries {
        f.geometry = geometry.clone();
        for &bins in bins {
            for rows in [false, true] {
                let op = ColHistParams { bins, rows, count_padding: false }.for_frame(f).unwrap();
                let mut expected = vec![0u32; op.bins as usize * op.lines(w, h)];
                let mut per_pixel = || -> Result<(), crate::OpError> {
                    with_samples!(&f.pixels, v => op.cpu_counts_per_pixel(w, h, v, None, &mut expected));
                    Ok(())
                };
                per_pixel().unwrap();
                let got = op.cpu(f).unwrap().counts;
                assert!(
                    got == expected,
                    "{w}x{h}, maxval {}, {} bins, rows {rows}, geometry {}",
                    f.maxval,
                    op.bins,
                    geometry.is_some()
                );
            }
        }
    }
}

/// Rotated by `turn` radians about the centre of a `w x h` original.
fn turned(w: usize, h: usize, turn: f64) -> Geometry {
    let (s, c) = turn.sin_cos();
    let (cx, cy) = (w as f64 / 2.0, h as f64 / 2.0);
    let m = Affine { a: c, b: -s, c: cx - c * cx + s * cy, d: s, e: c, f: cy - s * cx - c * cy };
    Geometry::identity(w, h).then(&m)
}

#[test]
fn groups_bands_and_partial_strips_count_as_every_pixel() {
    let mut rng = fastrand::Rng::with_seed(11);
    // Widths around the strip (32) and group (128) sizes, heights across bands (128 rows).
    let shapes = [
        (1, 1),
        (1, 700),
        (700, 1),
        (2, 3),
        (31, 5),
        (32, 4),
        (33, 9),
        (127, 3),
        (128, 2),
        (129, 515),
        (161, 64),
        (300, 1030),
    ];
    for (w, h) in shapes {
        let geometries = [None, Some(turned(w, h, 0.5)), Some(turned(w, h, 2.0))];
        // Uniform random bytes, and runs of equal values down and across the columns.
        let mut f = Frame::new(w, h, 255, Pixels::U8((0..w * h).map(|_| rng.u8(..)).collect()));
        assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(256), Some(7), Some(1)]);
        f.pixels = Pixels::U8((0..w * h).map(|i| ((i % w) / 5 + (i / w) / 3) as u8).collect());
        assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(100)]);
        let mut f = Frame::new(w, h, 100, Pixels::U8((0..w * h).map(|_| rng.u8(..=120)).collect()));
        assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(3)]);
        let mut f = Frame::new(w, h, 1076, Pixels::U16((0..w * h).map(|_| rng.u16(..=1076)).collect()));
        assert_counts_as_every_pixel(&mut f, &geometries, &[None, Some(1077)]);
    }
}

/// Split over any number of threads, the counts are the one thread's: columns and rows, 8-
/// and 16-bit, with and without a geometry, bin counts dividing the levels evenly or not.
#[test]
fn every_split_counts_as_one_thread() {
    let mut rng = fastrand::Rng::with_seed(17);
    // 1030 columns: the 8-bit count's chunks are whole groups on 2 and 3 threads, pairs of strips
    // on 7 (`byte_part_columns`), the last of a few columns, in a region a thread
    // (`ChunkRegions`).
    let wide = [(1030, 9)];
    for (w, h) in parallel::testing::sizes(&mut rng).into_iter().chain(wide) {
        for (maxval, bins) in [(255, None), (255, Some(7)), (200, None), (1076, None), (1076, Some(1077))] {
            let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
            for geometry in [None, Some(turned(w, h, 0.7))] {
                f.geometry = geometry;
                for rows in [false, true] {
                    let op = ColHistParams { bins, rows, count_padding: false }.for_frame(&f).unwrap();
                    let what = format!("{w}x{h} maxval {maxval} {bins:?} rows {rows}");
                    parallel::testing::same_on_each_pool(&what, || op.cpu(&f).unwrap());
                }
            }
        }
    }
}

#[test]
fn columns_taller_than_the_narrow_counters_hold() {
    // 131 100 rows: the 16-bit counters are added to the counts twice before the end, and a
    // column of one value reaches 65 408 counts between flushes. 129 columns: a whole group
    // and one of a single column.
    let (w, h) = (129, 131_100);
    let mut rng = fastrand::Rng::with_seed(5);
    let pixels = (0..w * h).map(|i| if i % w < 40 { (i % w) as u8 } else { rng.u8(..) }).collect();
    let mut f = Frame::new(w, h, 255, Pixels::U8(pixels));
    assert_counts_as_every_pixel(&mut f, &[None, Some(turned(w, h, 1.5))], &[None]);
    f.geometry = None;
    let counts = ColHistParams::default().for_frame(&f).unwrap().cpu(&f).unwrap();
    assert_eq!(counts.get(7, 7), h as u32);
}

#[test]
fn the_camera_fixture_counts_as_every_pixel() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/camera.pgm");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut f = histopipe_frame::FrameReader::new(file, histopipe_frame::ReadOptions::default())
        .next_frame()
        .unwrap()
        .unwrap();
    let (w, h) = (f.width, f.height);
    assert!(matches!(f.pixels, Pixels::U8(_)));
    assert_counts_as_every_pixel(&mut f, &[None, Some(turned(w, h, 0.3))], &[None, Some(16)]);
}

/// A part of a column, gathered by [`ColHist::column`] and counted alone, is the whole
/// frame's column over those rows: 8- and 16-bit, with and without a mask, rows of padding
/// only, none at all.
#[test]
fn a_columns_rows_count_as_in_the_whole_frame() {
    let mut rng = fastrand::Rng::with_seed(23);
    let (w, h) = (70, 90);
    for maxval in [255u16, 1076] {
        let pixels = match maxval {
            255 => Pixels::U8((0..w * h).map(|_| rng.u8(..)).collect()),
            _ => Pixels::U16((0..w * h).map(|_| rng.u16(..=maxval)).collect()),
        };
        let mut f = Frame::new(w, h, maxval, pixels);
        for geometry in [None, Some(turned(w, h, 0.6))] {
            f.geometry = geometry;
            let op = ColHistParams::default().for_frame(&f).unwrap();
            let whole = op.cpu(&f).unwrap();
            for (x, rows) in [(0, 0..h), (35, 0..h), (35, 10..61), (69, 89..90), (20, 40..40)] {
                let (one, column) = op.column(&f, x, rows.clone(), None);
                assert_eq!((column.width, column.geometry.as_ref()), (1, None));
                let got = one.cpu(&column).unwrap();
                let mut expected = vec![0u32; op.bins as usize];
                for y in rows.clone() {
                    if f.geometry.as_ref().is_none_or(|g| g.is_original(x as f64, y as f64)) {
                        expected[bin_of(f.pixels.get(y * w + x) as u32, op.bins, maxval) as usize] += 1;
                    }
                }
                assert_eq!((got.lines, &got.counts), (1, &expected), "column {x} rows {rows:?}");
                if rows == (0..h) {
                    let full: Vec<u32> = (0..whole.bins).map(|b| whole.get(b, x)).collect();
                    assert_eq!(got.counts, full, "column {x}");
                }
            }
        }
    }
}

#[test]
fn counts_columns_rows_and_only_data_pixels() {
    let mut f = Frame::new(3, 2, 3, Pixels::U8(vec![0, 1, 3, 0, 3, 3].into()));
    let all = ColHistParams { bins: None, rows: false, count_padding: false }.for_frame(&f).unwrap();
    let h = all.cpu(&f).unwrap();
    assert_eq!((h.bins, h.lines), (4, 3));
    assert_eq!(h.counts, vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
    let rows = ColHistParams { bins: Some(2), rows: true, count_padding: false }.for_frame(&f).unwrap();
    assert_eq!(rows.cpu(&f).unwrap().counts, vec![2, 1, 1, 2]);
    // Column 0 is padding.
    f.geometry = Some(Geometry::identity(2, 2).then(&Affine::translation(-1.0, 0.0)));
    assert_eq!(all.cpu(&f).unwrap().counts, h.counts);
    let masked = ColHistParams::default().for_frame(&f).unwrap();
    assert_eq!(masked.cpu(&f).unwrap().counts, vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
    let padding = ColHistParams { count_padding: true, ..Default::default() }.for_frame(&f).unwrap();
    assert_eq!(padding.cpu(&f).unwrap().counts, h.counts);
}

/// With a user mask, the counts are the per-pixel count of the pixels both the geometry and the
/// mask select: every path (8-bit and 16-bit, strips, rows, a geometry or none, bin counts
/// dividing evenly or not, any split), and a column's part gathered with the mask.
#[test]
fn a_masks_pixels_alone_count() {
    let mut rng = fastrand::Rng::with_seed(29);
    for (w, h) in [(1, 1), (33, 9), (129, 140), (300, 61), (7, 700)] {
        let mask: Vec<u8> = (0..w * h).map(|_| if rng.bool() { rng.u8(1..) } else { 0 }).collect();
        for (maxval, bins) in
            [(255u16, None), (255, Some(7)), (1076, None), (1076, Some(1077)), (255, Some(1))]
        {
            let pixels = match maxval {
                255 => Pixels::U8((0..w * h).map(|_| rng.u8(..)).collect()),
                _ => Pixels::U16((0..w * h).map(|_| rng.u16(..=maxval)).collect()),
            };
            let mut f = Frame::new(w, h, maxval, pixels);
            for geometry in [None, Some(turned(w, h, 0.8))] {
                f.geometry = geometry;
                for rows in [false, true] {
                    let op = ColHistParams { bins, rows, count_padding: false }.for_frame(&f).unwrap();
                    let mut expected = vec![0u32; op.bins as usize * op.lines(w, h)];
                    let mut per_pixel = || -> Result<(), crate::OpError> {
                        with_samples!(&f.pixels, v => op.cpu_counts_per_pixel(w, h, v, Some(&mask), &mut expected));
                        Ok(())
                    };
                    per_pixel().unwrap();
                    let what = format!("{w}x{h} maxval {maxval} {bins:?} rows {rows}");
                    let masked = Masked { op: &op, mask: Mask::of_frame(&mask, &f).unwrap() };
                    assert!(masked.cpu(&f).unwrap().counts == expected, "{what}");
                    parallel::testing::same_on_each_pool(&what, || masked.cpu(&f).unwrap());
                    if rows {
                        continue;
                    }
                    let x = w / 2;
                    let (one, column) = op.column(&f, x, 0..h, Some(&mask));
                    let got = one.cpu(&column).unwrap().counts;
                    let full: Vec<u32> = (0..op.bins as usize).map(|b| expected[b * w + x]).collect();
                    assert_eq!(got, full, "{what}: column {x}");
                }
            }
        }
    }
}

/// By hand: the mask's zeros leave their pixels out, on top of the geometry's padding.
#[test]
fn a_mask_of_the_frames_size_and_no_other() {
    let mut f = Frame::new(3, 2, 3, Pixels::U8(vec![0, 1, 3, 0, 3, 3].into()));
    let op = ColHistParams::default().for_frame(&f).unwrap();
    let mask = [1, 0, 9, 0, 1, 1];
    let masked = |op| Masked { op, mask: Mask::new(&mask, 3, 2).unwrap() };
    let got = masked(&op).cpu(&f).unwrap();
    assert_eq!(got.counts, vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
    // Column 0 is padding: the geometry's test and the mask's both apply.
    f.geometry = Some(Geometry::identity(2, 2).then(&Affine::translation(-1.0, 0.0)));
    let op = ColHistParams::default().for_frame(&f).unwrap();
    let got = masked(&op).cpu(&f).unwrap();
    assert_eq!(got.counts, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
    let e = Masked { op: &op, mask: Mask::new(&[1; 6], 2, 3).unwrap() }.cpu(&f).unwrap_err();
    assert_eq!(e.to_string(), "a mask of 2x3 pixels for a frame of 3x2");
}

/// The turns of a sweep of `f` by `angles`, as `rotate` builds them (one fill, both sizes).
fn sweep_of(
    f: &Frame,
    angles: &[f64],
    bilinear: bool,
    expand: bool,
    params: ColHistParams,
) -> super::ColHistSweep {
    use crate::rotate::{Interpolation, RotateBy, RotateParams};
    let interpolation = if bilinear { Interpolation::Bilinear } else { Interpolation::Nearest };
    let turns = angles
        .iter()
        .map(|&a| {
            let by = RotateBy::Degrees(a);
            RotateParams { by, interpolation, fill: crate::Fill::Int(3), expand }.for_frame(f).unwrap()
        })
        .collect();
    super::ColHistSweep { turns, params }
}

/// A sweep's counts are, turn by turn, those of `colhist` of `rotate`'s output (the two ops run
/// one after the other, as the loop of processes runs them), on any number of threads: 8- and
/// 16-bit, with and without a geometry, both interpolations, quarter turns, negative angles,
/// `expand`'s sizes, rows.
#[test]
fn a_sweep_is_the_loop_of_rotate_then_colhist() {
    let mut rng = fastrand::Rng::with_seed(28);
    let angles = [0.0, 90.0, -90.0, 180.0, 270.0, 30.0, -12.5, 45.0, 359.9, 720.0];
    for (w, h, maxval) in [(1, 1, 255), (7, 5, 255), (64, 33, 255), (40, 71, 1000), (129, 20, 65535)] {
        let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
        for geometry in
            [None, Some(Geometry::identity(w / 2 + 1, h / 2 + 1).then(&Affine::translation(-2.0, -1.0)))]
        {
            f.geometry = geometry;
            for (bilinear, expand, rows, bins) in [
                (false, false, false, None),
                (true, false, true, Some(7)),
                (false, true, false, Some(3)),
                (true, true, true, None),
            ] {
                let params = ColHistParams { bins, rows, count_padding: false };
                let sweep = sweep_of(&f, &angles, bilinear, expand, params);
                let what = format!("{w}x{h} maxval {maxval} bilinear {bilinear} expand {expand} rows {rows}");
                let got = sweep.cpu(&f).unwrap();
                for (i, r) in sweep.turns.iter().enumerate() {
                    let turned = r.cpu(&f).unwrap();
                    let expected = params.for_frame(&turned).unwrap().cpu(&turned).unwrap();
                    assert_eq!(got.lines[i], expected.lines, "{what}, angle {}", angles[i]);
                    assert!(got.turn(i) == &expected.counts[..], "{what}, angle {}", angles[i]);
                }
                parallel::testing::same_on_each_pool(&what, || sweep.cpu(&f).unwrap());
            }
        }
    }
}

/// The 8-bit sweep counted without its turned frames (`fused`) gives the loop's counts, on
/// fresh random frames each run (the seed is in the message): wider than a strip of columns and
/// taller than a band of rows, any maxval, both interpolations, quarter and other turns, with
/// and without a padded original's geometry, any bins, `expand`.
#[test]
fn an_8_bit_sweep_counted_in_strips_is_the_loop() {
    let seed = fastrand::u64(..);
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..12 {
        let (w, h) = (rng.usize(1..700), rng.usize(1..400));
        let maxval = if rng.bool() { 255 } else { rng.u16(3..=255) }; // the fill, 3, is a sample
        let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
        if rng.bool() {
            let (ow, oh) = (rng.usize(1..=w), rng.usize(1..=h));
            let (dx, dy) = (rng.usize(0..=w - ow) as f64, rng.usize(0..=h - oh) as f64);
            f.geometry = Some(Geometry::identity(ow, oh).then(&Affine::translation(-dx, -dy)));
        }
        // A quarter in four a quarter turn (`TurnedRows` steps those along each row).
        let angle = |rng: &mut fastrand::Rng| match rng.u8(0..4) {
            0 => 90.0 * rng.i8(-4..=4) as f64,
            _ => rng.f64() * 720.0 - 360.0,
        };
        let angles: Vec<f64> = (0..4).map(|_| angle(&mut rng)).collect();
        let (bilinear, expand) = (rng.bool(), rng.bool());
        // At most maxval + 1 bins: 7 only where the levels are as many.
        let bins = [None, Some(1), Some(7.min(maxval as u32 + 1)), Some(maxval as u32 + 1)][rng.usize(0..4)];
        let params = ColHistParams { bins, rows: false, count_padding: rng.u8(0..4) == 0 };
        let what = format!(
            "seed {seed}: {w}x{h} maxval {maxval} bilinear {bilinear} expand {expand} {params:?} {angles:?}"
        );
        let fail = |e: crate::OpError| -> ! { panic!("{what}: {e}") };
        let sweep = sweep_of(&f, &angles, bilinear, expand, params);
        let got = sweep.cpu(&f).unwrap_or_else(|e| fail(e));
        for (i, r) in sweep.turns.iter().enumerate() {
            let turned = r.cpu(&f).unwrap_or_else(|e| fail(e));
            let op = params.for_frame(&turned).unwrap_or_else(|e| fail(e));
            let expected = op.cpu(&turned).unwrap_or_else(|e| fail(e));
            assert!(got.turn(i) == &expected.counts[..], "{what}, angle {}", angles[i]);
        }
    }
}

/// `fused` writes every count of its output, whatever the output held (a buffer given back by
/// the writer is not cleared), and `cpu_each` hands on the sweep's counts in order, a turn at a
/// time for 8-bit gray frames and a group at a time for others, as `Op::cpu` makes them.
#[test]
fn a_sweep_handed_on_as_it_is_counted_is_the_whole_sweep() {
    let seed = fastrand::u64(..);
    let mut rng = fastrand::Rng::with_seed(seed);
    for maxval in [255, 40, 1000] {
        let (w, h) = (rng.usize(70..300), rng.usize(1..300));
        let f = parallel::testing::frame(&mut rng, w, h, maxval);
        let angles: Vec<f64> = (0..rng.usize(1..6)).map(|_| rng.f64() * 360.0).collect();
        let bins = [None, Some(1), Some(7)][rng.usize(0..3)];
        let params = ColHistParams { bins, rows: false, count_padding: false };
        let what = format!("seed {seed}: {w}x{h} maxval {maxval} {params:?} {angles:?}");
        let sweep = sweep_of(&f, &angles, false, false, params);
        let whole = sweep.cpu(&f).unwrap();
        let (mut counts, mut next) = (Vec::new(), 0);
        sweep
            .cpu_each(&f, |first, part| {
                assert_eq!(first, next, "{what}: parts in order");
                assert!(maxval > 255 || part.lines.len() == 1, "{what}: an 8-bit frame's turns one by one");
                next += part.lines.len();
                counts.extend_from_slice(&part.counts);
            })
            .unwrap();
        assert_eq!(next, angles.len(), "{what}");
        assert!(counts == whole.counts, "{what}");
        if maxval > 255 {
            continue;
        }
        let Pixels::U8(bytes) = &f.pixels else { unreachable!("an 8-bit frame") };
        let ops = sweep.counts(&f).unwrap();
        for (i, (r, op)) in sweep.turns.iter().zip(&ops).enumerate() {
            let mut dirty = vec![u32::MAX; whole.turn(i).len()];
            super::fused::count(bytes, vec![(r, op, &mut dirty[..])]);
            assert!(dirty == whole.turn(i), "{what}, angle {}: counted into a used buffer", angles[i]);
        }
    }
}

/// The GPU's sweep is the CPU's, bit for bit: both interpolations, 8- and 16-bit, several bin
/// counts (the pairs kernel and the tiled one), rows, padding, `expand`'s changing sizes.
#[test]
fn a_sweep_on_the_gpu_is_the_cpus() {
    let Some(gpu) = histopipe_gpu::testing::gpu_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(29);
    let angles: Vec<f64> = (0..24).map(|i| -180.0 + 17.5 * i as f64).chain([90.0, 0.0, -270.0]).collect();
    for (w, h, maxval) in [(1, 1, 255), (333, 200, 255), (640, 427, 255), (301, 150, 4095), (90, 700, 65535)]
    {
        let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
        f.geometry =
            Some(Geometry::identity(w * 2 / 3 + 1, h * 2 / 3 + 1).then(&Affine::translation(-5.0, -3.0)));
        for (bilinear, expand, rows, bins, count_padding) in [
            (false, false, false, None, false),
            (true, false, false, Some(500), false),
            (false, true, true, Some(16), false),
            (true, true, false, None, true),
        ] {
            let params =
                ColHistParams { bins: bins.map(|b: u32| b.min(maxval as u32 + 1)), rows, count_padding };
            let sweep = sweep_of(&f, &angles, bilinear, expand, params);
            let cpu = sweep.cpu(&f).unwrap();
            let on_gpu = sweep.gpu(&gpu, &f).unwrap();
            assert!(cpu == on_gpu, "{w}x{h} maxval {maxval} bilinear {bilinear} expand {expand} rows {rows}");
        }
    }
}

/// Both column kernels (`colhist_pairs_*`, two samples a lane, and `colhist_pairs_wide_*`, four)
/// count as the CPU does, in one part a tile and in several (their partial counts merged by each
/// tile's last block, whose completion count must be left zero for the next launch: every frame
/// runs twice on one plan), on rows aligned and not aligned to the kernels' vector loads (odd
/// widths), with a user's mask and a data-pixel mask, 8- and 16-bit, and with bins that are not
/// one per value. On a GPU of at least 64 SMs, every one of the three shapes must have come up.
#[test]
fn both_column_kernels_on_the_gpu_are_the_cpus() {
    let Some(gpu) = histopipe_gpu::testing::gpu_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(30);
    let mut shapes = std::collections::BTreeSet::new();
    for (w, h, maxval, bins) in [
        (7680, 4320, 255, None),
        (7683, 4321, 255, Some(100)),
        (4096, 3112, 255, None),
        (2561, 1707, 255, None),
        (700, 200, 255, None),
        (3001, 2001, 4095, Some(384)),
        (131, 70000, 255, None),
    ] {
        let mut f = parallel::testing::frame(&mut rng, w, h, maxval);
        f.geometry =
            Some(Geometry::identity(w * 3 / 4 + 1, h * 3 / 4 + 1).then(&Affine::translation(-7.0, -2.0)));
        let op = ColHistParams { bins, rows: false, count_padding: false }.for_frame(&f).unwrap();
        let cpu = op.cpu(&f).unwrap();
        let mut plan = op.plan(&gpu, w, h).unwrap();
        let p = plan.pairs.expect("columns of at most 384 bins take colhist_pairs_*");
        shapes.insert((p.k, p.parts > 1));
        let src = match &f.pixels {
            Pixels::U8(v) => gpu.upload::<u8>("test.in", v).map(|s| (Some(s), None)),
            Pixels::U16(v) => gpu.upload::<u16>("test.in", v).map(|s| (None, Some(s))),
            _ => unreachable!(),
        }
        .unwrap();
        let n = op.bins as usize * w;
        let mut counts = gpu.buffer::<u32>("test.counts", n).unwrap();
        for round in 0..2 {
            match &src {
                (Some(s), _) => plan.queue(s, None, &mut counts).unwrap(),
                (_, Some(s)) => plan.queue(s, None, &mut counts).unwrap(),
                _ => unreachable!(),
            }
            let got = gpu.download_vec(&counts, n).unwrap();
            assert!(got == cpu.counts, "{w}x{h} maxval {maxval} k {} parts {} round {round}", p.k, p.parts);
        }
        let mask: Vec<u8> = (0..w * h).map(|_| rng.u8(..) & 1).collect();
        let masked = Masked { op: &op, mask: Mask::of_frame(&mask, &f).unwrap() };
        assert!(masked.cpu(&f).unwrap() == masked.gpu(&gpu, &f).unwrap(), "{w}x{h} under a mask");
    }
    let sms = gpu
        .stream()
        .context()
        .attribute(
            histopipe_gpu::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .unwrap_or(0);
    if sms >= 64 {
        assert!(shapes.len() >= 3, "shapes (k, several parts) seen: {shapes:?}");
    }
}

/// The 8-bit count's chunks: groups while there are two a thread, else pairs of strips, else strips.
#[test]
fn byte_chunks_are_as_wide_as_the_threads_allow() {
    use super::strips::byte_part_columns;
    assert_eq!(byte_part_columns(4096, 64), 128);
    assert_eq!(byte_part_columns(3932, 64), 64);
    assert_eq!(byte_part_columns(2560, 64), 64);
    assert_eq!(byte_part_columns(1920, 64), 32);
    assert_eq!(byte_part_columns(640, 64), 32);
    assert_eq!(byte_part_columns(640, 1), 128);
    assert_eq!(byte_part_columns(40, 1), 32);
}

/// The regions hand out every column once, each worker's own chunks from the front, and a
/// worker that never starts has its chunks taken by the others; from several threads at once.
#[test]
fn chunk_regions_hand_out_every_column_once() {
    use super::strips::ChunkRegions;
    use std::sync::Mutex;
    for (lines, unit, workers) in [(1030, 128, 3), (4096, 128, 16), (100, 32, 8), (5, 32, 4), (3932, 64, 7)] {
        let regions = ChunkRegions::new(lines, unit, workers);
        assert!(regions.workers() >= 1 && regions.workers() <= workers.min(lines.div_ceil(unit)));
        // Worker 0 alone takes them all: first its own, in order, then the others' from their
        // ends.
        let mut alone = Vec::new();
        while let Some(c) = regions.next(0) {
            alone.push(c);
        }
        let mut sorted = alone.clone();
        sorted.sort_by_key(|c| c.start);
        let covered: Vec<usize> = sorted.iter().flat_map(|c| c.clone()).collect();
        assert_eq!(covered, (0..lines).collect::<Vec<_>>(), "{lines} columns, one worker");
        assert_eq!(alone[0].start, 0, "worker 0 starts at its region's front");
        // All workers at once, on threads of their own, the odd ones starting late.
        let regions = ChunkRegions::new(lines, unit, workers);
        let taken = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for home in 0..regions.workers() {
                let (regions, taken) = (&regions, &taken);
                s.spawn(move || {
                    if home % 2 == 1 {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    while let Some(c) = regions.next(home) {
                        assert!(c.len() <= unit && !c.is_empty());
                        taken.lock().unwrap().push(c);
                    }
                });
            }
        });
        let mut taken = taken.into_inner().unwrap();
        taken.sort_by_key(|c| c.start);
        let covered: Vec<usize> = taken.iter().flat_map(|c| c.clone()).collect();
        assert_eq!(covered, (0..lines).collect::<Vec<_>>(), "{lines} columns, {workers} workers");
    }
}
