//! `clahe`'s tests: the threads, the grid's parsing, OpenCV's border, clip limit, redistribution and
//! rounding, and the masked tiles.

use super::*;
use crate::mask::{Mask, Masked};
use histopipe_frame::Pixels;

use crate::parallel;

fn tiling(clip: f64, gx: usize, gy: usize, w: usize, h: usize) -> Tiling {
    Clahe { clip, tiles: TileGrid { x: gx, y: gy } }.tiling(w, h, 256).unwrap()
}

/// Split over any number of threads, the output is the one thread's.
#[test]
fn every_split_equalizes_as_one_thread() {
    let mut rng = fastrand::Rng::with_seed(0x636c_6168);
    for (w, h) in parallel::testing::sizes(&mut rng) {
        for maxval in [255, 4000] {
            let f = parallel::testing::frame(&mut rng, w, h, maxval);
            for (clip, gx, gy) in [(40.0, 8, 8), (2.0, 3, 5), (0.0, 1, 1), (1.0, 16, 2)] {
                let op = Clahe { clip, tiles: TileGrid { x: gx, y: gy } };
                let what = format!("{w}x{h} maxval {maxval} clip {clip} {gx}x{gy}");
                parallel::testing::same_on_each_pool(&what, || op.cpu(&f).map_err(|e| e.to_string()));
            }
        }
    }
}

#[test]
fn grids_parse() {
    assert_eq!("8x8".parse(), Ok(TileGrid { x: 8, y: 8 }));
    assert_eq!("3x5".parse(), Ok(TileGrid { x: 3, y: 5 }));
    assert_eq!("4".parse(), Ok(TileGrid { x: 4, y: 4 }));
    for bad in ["0x8", "8x0", "x8", "8x", "-1x2", "+3x3", "8x8x8", "", "a"] {
        assert!(bad.parse::<TileGrid>().is_err(), "{bad}");
    }
}

#[test]
fn reflect_101_as_opencv() {
    // n = 5: 0 1 2 3 4 | 3 2 1 0 1 2 3 4 3 ...
    let got: Vec<usize> = (0..14).map(|p| reflect_101(p, 5)).collect();
    assert_eq!(got, [0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4, 3]);
    assert_eq!((0..4).map(|p| reflect_101(p, 2)).collect::<Vec<_>>(), [0, 1, 0, 1]);
    assert_eq!(reflect_101(7, 1), 0);
}

#[test]
fn extension_follows_opencv() {
    // Divisible both ways: no extension.
    let t = tiling(40.0, 8, 8, 64, 32);
    assert_eq!((t.tile_w, t.tile_h), (8, 4));
    // One axis not divisible: both axes extended, the divisible one by a whole grid.
    let t = tiling(40.0, 8, 8, 64, 33);
    assert_eq!((t.tile_w, t.tile_h), (9, 5));
    // A grid larger than the frame: 3 -> 8 columns, 1 -> 5 rows.
    let t = tiling(40.0, 8, 5, 3, 1);
    assert_eq!((t.tile_w, t.tile_h), (1, 1));
}

#[test]
fn clip_limit_as_opencv() {
    // 64x64 tiles of 4096 pixels: 40 * 4096 / 256 = 640.
    assert_eq!(tiling(40.0, 1, 1, 64, 64).limit, 640);
    assert_eq!(tiling(0.0, 1, 1, 64, 64).limit, 0);
    assert_eq!(tiling(-3.0, 1, 1, 64, 64).limit, 0);
    // Tiny clips still keep one count per bin.
    assert_eq!(tiling(0.001, 1, 1, 64, 64).limit, 1);
    // Beyond int: saturated, so nothing is clipped.
    assert_eq!(tiling(1e12, 1, 1, 64, 64).limit, i32::MAX as u32);
    assert!(Clahe { clip: f64::NAN, ..Clahe::default() }.tiling(8, 8, 256).is_err());
}

#[test]
fn too_many_tables_are_refused() {
    let c = Clahe { clip: 40.0, tiles: TileGrid { x: 65, y: 64 } };
    assert!(c.tiling(100, 100, 65536).unwrap_err().to_string().contains("table entries"));
    assert!(c.tiling(100, 100, 256).is_ok());
}

#[test]
fn redistribution_keeps_the_total_and_steps_the_remainder() {
    // 8 bins, limit 2: 10 cut off -> 1 each, 2 left over: bins 0 and 4 (step 8 / 2).
    let mut hist = vec![12, 0, 0, 0, 0, 0, 0, 0];
    clip_histogram(&mut hist, 2);
    assert_eq!(hist, [4, 1, 1, 1, 2, 1, 1, 1]);
    // 3 left over of 8: step 2, bins 0, 2, 4.
    let mut hist = vec![5, 0, 0, 0, 0, 0, 0, 0];
    clip_histogram(&mut hist, 2);
    assert_eq!(hist, [3, 0, 1, 0, 1, 0, 0, 0]);
    let mut hist = vec![5, 1, 0, 9];
    clip_histogram(&mut hist, 0);
    assert_eq!(hist, [5, 1, 0, 9]);
}

#[test]
fn rounding_is_rint() {
    let mut rng = fastrand::Rng::with_seed(7);
    let ties = (0..140_000).map(|i| i as f32 / 2.0);
    let near_ties = (0..100_000).map(|i| f32::from_bits((i as f32 / 2.0 + 0.25).to_bits() ^ 1));
    let random = (0..1_000_000).map(|_| (rng.f32() - 0.1) * 70_000.0);
    for x in ties.chain(near_ties).chain(random) {
        assert_eq!(round_half_even(x), x.round_ties_even() as i32, "{x}");
    }
}

#[test]
fn tables_round_half_to_even() {
    // scale 255 / 2 = 127.5: cdf 1 -> 127.5 -> 128 (even); cdf 2 -> 255.
    let mut lut = [0u8; 3];
    table(&[1, 0, 1], 127.5, &mut lut);
    assert_eq!(lut, [128, 128, 255]);
}

#[test]
fn constant_frames_map_to_one_value_and_keep_the_range_maxval() {
    let frame = Frame::new(5, 3, 100, Pixels::U8(vec![40; 15].into()));
    let out = Clahe::default().cpu(&frame).unwrap();
    assert_eq!(out.maxval, 255);
    let Pixels::U8(v) = &out.pixels else { panic!() };
    assert!(v.iter().all(|&s| s == v[0]));
    let frame = Frame::new(4, 4, 1000, Pixels::U16(vec![7; 16].into()));
    assert_eq!(Clahe::default().cpu(&frame).unwrap().maxval, 65535);
}

/// `op` under `mask`, of `f`'s size.
fn masked<'m>(op: Clahe, mask: &'m [u8], f: &Frame) -> Masked<'m, Clahe> {
    Masked { op, mask: Mask::of_frame(mask, f).unwrap() }
}

/// Under a mask: one of every pixel is CLAHE without one; one of none maps every pixel to
/// itself (identity tables); and the values of the pixels left out change no other pixel's
/// output. 8- and 16-bit, grids that divide the frame or extend it, with and without clipping.
#[test]
fn a_masks_pixels_alone_make_the_tables() {
    let mut rng = fastrand::Rng::with_seed(0x6d61_736b);
    for (w, h) in [(1, 1), (7, 5), (40, 33), (64, 64), (101, 17)] {
        let n = w * h;
        for maxval in [255u16, 4000] {
            let f = parallel::testing::frame(&mut rng, w, h, maxval);
            for (clip, gx, gy) in [(40.0, 8, 8), (2.0, 3, 5), (0.0, 1, 1), (1.0, 4, 2)] {
                let op = Clahe { clip, tiles: TileGrid { x: gx, y: gy } };
                let what = format!("{w}x{h} maxval {maxval} clip {clip} {gx}x{gy}");
                let all = vec![1u8; n];
                let plain = op.cpu(&f).unwrap();
                assert!(masked(op, &all, &f).cpu(&f).unwrap() == plain, "{what}: every pixel");
                let none = vec![0u8; n];
                let same = masked(op, &none, &f).cpu(&f).unwrap();
                let top = if maxval <= 255 { 255 } else { 65535 };
                assert_eq!((same.pixels.clone(), same.maxval), (f.pixels.clone(), top), "{what}: no pixel");
                let mask: Vec<u8> = (0..n).map(|_| rng.u8(..) % 3).collect();
                let with_mask = masked(op, &mask, &f).cpu(&f).unwrap();
                let mut other = f.clone();
                let changed: Vec<usize> = (0..n).filter(|&i| mask[i] == 0 && rng.bool()).collect();
                other.pixels = match &f.pixels {
                    Pixels::U8(v) => {
                        let mut v = v.to_vec();
                        changed.iter().for_each(|&i| v[i] = rng.u8(..));
                        Pixels::U8(v.into())
                    }
                    Pixels::U16(v) => {
                        let mut v = v.to_vec();
                        changed.iter().for_each(|&i| v[i] = rng.u16(..=maxval));
                        Pixels::U16(v.into())
                    }
                    Pixels::F32(_) => unreachable!(),
                };
                let moved = masked(op, &mask, &f).cpu(&other).unwrap();
                for i in (0..n).filter(|i| !changed.contains(i)) {
                    assert_eq!(with_mask.pixels.get(i), moved.pixels.get(i), "{what}: pixel {i}");
                }
                parallel::testing::same_on_each_pool(&what, || {
                    masked(op, &mask, &f).cpu(&f).map_err(|e| e.to_string())
                });
            }
        }
    }
    let f = Frame::new(2, 2, 255, Pixels::U8(vec![0; 4].into()));
    let e = Masked { op: Clahe::default(), mask: Mask::new(&[1; 3], 3, 1).unwrap() }.cpu(&f).unwrap_err();
    assert_eq!(e.to_string(), "a mask of 3x1 pixels for a frame of 2x2");
}

/// A tile's limit and scale under a mask: OpenCV's rules with its counted pixels for its
/// area; none for a tile of no counted pixel.
#[test]
fn masked_tiles_clip_and_scale_by_their_counted_pixels() {
    let t = tiling(40.0, 2, 2, 64, 64);
    assert_eq!(t.masked_tile(1024, 40.0), Some((t.limit, t.scale)), "a whole tile");
    assert_eq!(t.masked_tile(100, 40.0), Some((15, 255.0 / 100.0)));
    assert_eq!(t.masked_tile(3, 40.0), Some((1, 85.0)));
    assert_eq!(t.masked_tile(100, 0.0), Some((0, 2.55)));
    assert_eq!(t.masked_tile(100, 1e300), Some((i32::MAX as u32, 2.55)));
    assert_eq!(t.masked_tile(0, 40.0), None);
}
