use histopipe_frame::{Frame, Geometry, Pixels};
use histopipe_ops::colhist::ColHistParams;
use histopipe_ops::mask::{Mask, Masked};
use histopipe_ops::Op;

use crate::common::*;

/// One frame's block of colhist's text output.
#[derive(Debug, PartialEq)]
struct Block {
    /// The frame's number in the stream and its source.
    frame: usize,
    source: String,
    /// The column (or row) numbers: the header's for the first frame, else 0.. as many as counted.
    lines: Vec<usize>,
    /// Per bin: low, high, counts.
    rows: Vec<(u32, u32, Vec<u32>)>,
}

impl Block {
    fn count(&self, bin: usize, line: usize) -> u32 {
        self.rows[bin].2[line]
    }
}

/// The one table of an output: a header, then each frame's rows, frame after frame.
fn parse(text: &[u8], sep: char) -> Vec<Block> {
    let text = std::str::from_utf8(text).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(sep).collect();
    assert_eq!(header[..5], ["frame", "source", "bin", "lower", "upper"], "one header, first");
    let named: Vec<usize> = header[5..].iter().map(|c| c.parse().unwrap()).collect();
    let mut blocks: Vec<Block> = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(sep).collect();
        let frame: usize = f[0].parse().unwrap();
        if blocks.last().is_none_or(|b| b.frame != frame) {
            assert_eq!(frame, blocks.len() + 1, "frames in order, each a block of rows");
            let lines = if blocks.is_empty() { named.clone() } else { (0..f.len() - 5).collect() };
            blocks.push(Block { frame, source: f[1].to_owned(), lines, rows: Vec::new() });
        }
        let block = blocks.last_mut().unwrap();
        let fields: Vec<u32> = f[2..].iter().map(|c| c.parse().unwrap()).collect();
        assert_eq!(fields[0] as usize, block.rows.len(), "bins in order");
        assert_eq!(fields.len(), 3 + block.lines.len());
        block.rows.push((fields[1], fields[2], fields[3..].to_vec()));
    }
    blocks
}

fn colhist_cpu(args: &[&str], input: &[u8]) -> Vec<Block> {
    parse(&run_ok("colhist", "cpu", args, input), ',')
}

/// The straightforward count: every pixel, its bin by the documented formula, data pixels only
/// unless `all`.
fn expected_counts(f: &Frame, bins: u32, rows: bool, all: bool) -> Vec<Vec<u32>> {
    let lines = if rows { f.height } else { f.width };
    let mut counts = vec![vec![0u32; lines]; bins as usize];
    for y in 0..f.height {
        for x in 0..f.width {
            let data = all || f.geometry.as_ref().is_none_or(|g| g.is_original(x as f64, y as f64));
            if data {
                let v = f.pixels.get(y * f.width + x) as u64;
                let bin = (v * bins as u64 / (f.maxval as u64 + 1)) as usize;
                counts[bin][if rows { y } else { x }] += 1;
            }
        }
    }
    counts
}

fn block_counts(b: &Block) -> Vec<Vec<u32>> {
    b.rows.iter().map(|r| r.2.clone()).collect()
}

#[test]
fn counts_match_a_straightforward_count() {
    let mut rng = rng();
    for (i, maxval) in [255u16, 100, 1076, 65535].into_iter().enumerate() {
        let (w, h) = (rng.usize(1..90), rng.usize(1..90));
        let f = random_frame(&mut rng, w, h, maxval);
        let rotated = read_frames(&run_ok(
            "rotate",
            "cpu",
            &["37"],
            &run_ok("pad", "cpu", &["--border", "3"], &stream(std::slice::from_ref(&f))),
        ))
        .remove(0);
        let bins = [None, Some(7), Some(256), Some(1)][i];
        let mut args: Vec<String> = bins.map(|b| vec!["--bins".into(), b.to_string()]).unwrap_or_default();
        let n = bins.unwrap_or(if maxval <= 255 { maxval as u32 + 1 } else { 256 });
        for (rows, all) in [(false, false), (true, false), (false, true)] {
            let mut a = args.clone();
            if rows {
                a.push("--rows".into());
            }
            if all {
                a.push("--count-padding".into());
            }
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let out = colhist_cpu(&a, &stream(std::slice::from_ref(&rotated)));
            assert_eq!(
                block_counts(&out[0]),
                expected_counts(&rotated, n, rows, all),
                "maxval {maxval} {a:?}"
            );
            let lines = if rows { rotated.height } else { rotated.width };
            assert_eq!(out[0].lines, (0..lines).collect::<Vec<_>>());
        }
        // Without geometry every pixel counts.
        let out = colhist_cpu(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &stream(std::slice::from_ref(&f)),
        );
        assert_eq!(block_counts(&out[0]), expected_counts(&f, n, false, true));
        args.clear();
    }
}

#[test]
fn bin_ranges_in_the_table() {
    let f = Frame::new(2, 1, 9, Pixels::U8(vec![3, 4].into()));
    let out = colhist_cpu(&["--bins", "3"], &stream(&[f]));
    let ranges: Vec<(u32, u32)> = out[0].rows.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(ranges, [(0, 3), (4, 6), (7, 9)]);
    assert_eq!(block_counts(&out[0]), [vec![1, 0], vec![0, 1], vec![0, 0]]);
    assert_eq!((out[0].frame, out[0].source.as_str()), (1, "-"), "from standard input");
}

/// Every column's counts sum to its number of data pixels (Geometry::is_original, the documented
/// rule), on 8- and 16-bit fixtures padded and turned.
#[test]
fn column_sums_are_the_data_pixels() {
    for name in ["camera.pgm", "dem16.pgm"] {
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        let rotated = run_ok("rotate", "cpu", &["45"], &padded);
        let frame = read_frames(&rotated).remove(0);
        let g = frame.geometry.clone().unwrap();
        let block = colhist_cpu(&[], &rotated).remove(0);
        let mut total = 0;
        for x in 0..frame.width {
            let data = (0..frame.height).filter(|&y| g.is_original(x as f64, y as f64)).count() as u32;
            let sum: u32 = block.rows.iter().map(|r| r.2[x]).sum();
            assert_eq!(sum, data, "{name} column {x}");
            total += sum as usize;
        }
        // A nearest-neighbour turn keeps the original's area, give or take its outline.
        let original = fixture_frame(name).pixel_count() as f64;
        assert!((total as f64 - original).abs() < 0.01 * original, "{name}: {total} data pixels");
    }
}

#[test]
fn pad_then_rotate_0_shifts_the_columns_by_the_offset() {
    for name in ["coins.pgm", "dem16.pgm"] {
        let original = fixture_frame(name);
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        let frame = read_frames(&padded).remove(0);
        let left = (frame.width - original.width) / 2;
        let block = colhist_cpu(&[], &run_ok("rotate", "cpu", &["0"], &padded)).remove(0);
        let plain = block_counts(&colhist_cpu(&[], &fixture_bytes(name)).remove(0));
        for x in 0..frame.width {
            for (bin, row) in plain.iter().enumerate() {
                let expected = if x >= left && x - left < original.width { row[x - left] } else { 0 };
                assert_eq!(block.count(bin, x), expected, "{name}: column {x} bin {bin}");
            }
        }
    }
}

/// The line through (0, 0) and (4, 4) of a 6x6 frame whose diagonal pixels hold known values.
/// pad makes it 9x9 with the frame at (1, 1), so the line y = x goes through the centre (4, 4)
/// and rotate --line leaves it on column 4. That column samples the line at unit steps from the
/// centre: row y comes from the original point (k, k), k = floor(3 + (y - 4) cos 45 + 0.5), the
/// documented nearest-neighbour sampling, and only those diagonal pixels are counted.
#[test]
fn the_histogram_of_a_diagonal_line() {
    let mut pixels = vec![0u8; 36];
    for k in 0..6 {
        pixels[k * 6 + k] = 10 + 20 * k as u8;
    }
    let f = Frame::new(6, 6, 255, Pixels::U8(pixels.into()));
    let padded = run_ok("pad", "cpu", &[], &stream(&[f]));
    let turned = run_ok("rotate", "cpu", &["--line", "0,0,4,4"], &padded);
    let block = colhist_cpu(&["--line", "0,0,4,4"], &turned).remove(0);
    assert_eq!(block.lines, [4]);
    let mut expected = vec![0u32; 256];
    for y in 0..9 {
        let k = (3.0 + (y as f64 - 4.0) * std::f64::consts::FRAC_1_SQRT_2 + 0.5).floor() as i64;
        if (0..6).contains(&k) {
            expected[10 + 20 * k as usize] += 1;
        }
    }
    let got: Vec<u32> = block.rows.iter().map(|r| r.2[0]).collect();
    assert_eq!(got, expected);
    // Every diagonal pixel is seen, nothing off the diagonal is.
    assert!((0..6).all(|k| got[10 + 20 * k] >= 1) && got[0] == 0);
}

#[test]
fn the_line_pipeline_on_8_and_16_bit_fixtures() {
    for name in ["camera.pgm", "dem16.pgm"] {
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        let line = "0,0,300,200";
        let turned = run_ok("rotate", "cpu", &["--line", line], &padded);
        let frame = read_frames(&turned).remove(0);
        let block = colhist_cpu(&["--line", line], &turned).remove(0);
        let x = block.lines[0];
        let full = colhist_cpu(&[], &turned).remove(0);
        let column: Vec<u32> = full.rows.iter().map(|r| r.2[x]).collect();
        assert_eq!(block.rows.iter().map(|r| r.2[0]).collect::<Vec<_>>(), column, "{name}");
        // The column holds the line: the original's line from (0, 0) through (300, 200) runs to
        // the far edge, ceil(hypot) pixels at unit steps, give or take one at each end.
        let g = frame.geometry.unwrap();
        let data = (0..frame.height).filter(|&y| g.is_original(x as f64, y as f64)).count();
        assert_eq!(column.iter().sum::<u32>() as usize, data);
        assert!(data > 300, "{name}: {data}");
    }
}

/// The one column of a `--line` or `--segment` output, bin by bin.
fn one_column(block: &Block) -> Vec<u32> {
    block.rows.iter().map(|r| r.2[0]).collect()
}

/// The histogram, one bin per value, of the samples of `f` at `pixels`.
fn histogram_of(f: &Frame, pixels: impl Iterator<Item = (usize, usize)>) -> Vec<u32> {
    let mut counts = vec![0u32; f.maxval as usize + 1];
    for (x, y) in pixels {
        counts[f.pixels.get(y * f.width + x) as usize] += 1;
    }
    counts
}

/// The issue's pipeline on a photo: `--line` counts the whole line across the padded frame (671
/// pixels), `--segment` only the pixels between the two points: the rows from the one nearest
/// the first to the one nearest the second, both included, hypot(200, 150) + 1 = 251 of them,
/// the same whichever end comes first.
#[test]
fn a_segment_counts_its_pixels_not_the_whole_line() {
    let points = "100,100,300,250";
    let padded = run_ok("pad", "cpu", &[], &fixture_bytes("rocket.jpg"));
    let turned = run_ok("rotate", "cpu", &["--segment", points], &padded);
    assert_eq!(turned, run_ok("rotate", "cpu", &["--line", points], &padded), "the same turn");
    let line = colhist_cpu(&["--line", points], &turned).remove(0);
    let segment = colhist_cpu(&["--segment", points], &turned).remove(0);
    assert_eq!(segment.lines, line.lines, "the same column");
    let (line, segment) = (one_column(&line), one_column(&segment));
    assert_eq!(line.iter().sum::<u32>(), 671, "the whole line across the frame");
    assert_eq!(segment.iter().sum::<u32>(), 251, "the segment's pixels, both ends included");
    assert!(segment.iter().zip(&line).all(|(s, l)| s <= l), "a part of the line's pixels");
    let reversed = colhist_cpu(&["--segment", "300,250,100,100"], &turned).remove(0);
    assert_eq!(one_column(&reversed), segment, "either end first");
    // Exactly the documented pixels: the column and rows nearest the mapped ends, data pixels only,
    // of the luma colhist reads (the photo stays colour through pad and rotate).
    let gray = histopipe_frame::ReadOptions { gray: true, ..Default::default() };
    let frame = read_frames_with(&turned, gray).remove(0);
    let g = frame.geometry.clone().unwrap();
    let (a, b) = points.parse::<histopipe_frame::Line>().unwrap().in_frame(&g).unwrap();
    let x = ((a.0 + b.0) / 2.0 + 0.5).floor() as usize;
    let rows = (a.1 + 0.5).floor() as usize..=(b.1 + 0.5).floor() as usize;
    assert_eq!(rows.clone().count(), 251);
    let kept = rows.filter(|&y| g.is_original(x as f64, y as f64)).map(|y| (x, y));
    assert_eq!(segment, histogram_of(&frame, kept));
}

/// Axis-aligned segments, whose pixels are known exactly: down a column of the padded original
/// (no turn), and along a row turned upright by an exact quarter turn; 8- and 16-bit. Each is the
/// histogram of the original's pixels between the two points, ends included, computed here.
#[test]
fn axis_aligned_segments_are_the_originals_pixels_between_the_points() {
    for (name, bins) in [("camera.pgm", None), ("dem16.pgm", Some(1077))] {
        let original = fixture_frame(name);
        let padded = run_ok("pad", "cpu", &[], &fixture_bytes(name));
        let mut args = bins.map(|b: u32| vec!["--bins".to_owned(), b.to_string()]).unwrap_or_default();
        args.extend(["--segment".to_owned(), String::new()]);
        let mut segment = |points: &str, input: &[u8]| {
            *args.last_mut().unwrap() = points.to_owned();
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            one_column(&colhist_cpu(&a, input).remove(0))
        };
        let down = histogram_of(&original, (20..=300).map(|y| (10, y)));
        assert_eq!(segment("10,20,10,300", &padded), down, "{name}: down column 10");
        assert_eq!(segment("10,300,10,20", &padded), down, "{name}: the same, upwards");
        let across = histogram_of(&original, (30..=250).map(|x| (x, 40)));
        let upright = run_ok("rotate", "cpu", &["--segment", "30,40,250,40"], &padded);
        assert_eq!(segment("30,40,250,40", &upright), across, "{name}: along row 40");
        assert_eq!(segment("250,40,30,40", &upright), across, "{name}: the same, leftwards");
        // Ends off the original but in the padded frame: the padding is not counted, unless
        // asked for.
        let clipped = histogram_of(&original, (0..=100).map(|y| (10, y)));
        assert_eq!(segment("10,-50,10,100", &padded), clipped, "{name}: from above the original");
        let all = colhist_cpu(&["--segment", "10,-50,10,100", "--count-padding", "--bins", "2"], &padded);
        assert_eq!(one_column(&all[0]).iter().sum::<u32>(), 151, "{name}: padding counted");
    }
}

#[test]
fn tsv_pgm_rows_and_streams() {
    let camera = fixture_bytes("camera.pgm");
    let csv = run_ok("colhist", "cpu", &["--bins", "16"], &camera);
    let tsv = run_ok("colhist", "cpu", &["--bins", "16", "--format", "tsv"], &camera);
    assert_eq!(parse(&tsv, '\t'), parse(&csv, ','));
    // PGM: one row per bin, samples the counts.
    let pgm = read_frames(&run_ok("colhist", "cpu", &["--bins", "16", "--format", "pgm"], &camera)).remove(0);
    let block = parse(&csv, ',').remove(0);
    assert_eq!((pgm.width, pgm.height), (512, 16));
    let top = block.rows.iter().flat_map(|r| r.2.iter()).copied().max().unwrap();
    assert_eq!(pgm.maxval as u32, top, "maxval is the largest count");
    for bin in 0..16 {
        for x in 0..512 {
            assert_eq!(pgm.pixels.get(bin * 512 + x) as u32, block.count(bin, x));
        }
    }
    // Counts over 65535 are clamped.
    let tall = Frame::new(1, 70000, 255, Pixels::U8(vec![0; 70000].into()));
    let pgm = read_frames(&run_ok("colhist", "cpu", &["--format", "pgm", "--bins", "2"], &stream(&[tall])))
        .remove(0);
    assert_eq!((pgm.maxval, pgm.pixels), (65535, Pixels::U16(vec![65535, 0].into())));
    // A stream: one table, a block of rows per frame, each its own size.
    let frames = [fixture_frame("camera.pgm"), fixture_frame("coins.pgm"), fixture_frame("dem16.pgm")];
    let blocks = colhist_cpu(&["--rows"], &stream(&frames));
    assert_eq!(blocks.len(), 3);
    for (i, (b, f)) in blocks.iter().zip(&frames).enumerate() {
        assert_eq!(b.frame, i + 1);
        assert_eq!(b.rows[0].2.len(), f.height, "one count per row of frame {}", i + 1);
        assert_eq!(block_counts(b), expected_counts(f, 256, true, true));
    }
    assert_eq!(read_frames(&run_ok("colhist", "cpu", &["--format", "pgm"], &stream(&frames))).len(), 3);
}

#[test]
fn option_errors() {
    let camera = fixture_bytes("camera.pgm");
    assert!(run_err("colhist", &["--bins", "0"], &camera, 2).contains("--bins: must be at least 1"));
    assert!(run_err("colhist", &["--bins", "300"], &camera, 2)
        .contains("frame 1: --bins 300: a frame with maxval 255 has 1 to 256 bins"));
    assert!(run_err("colhist", &["--bins", "x"], &camera, 2).contains("--bins: bad value 'x'"));
    assert!(run_err("colhist", &["--format", "xml"], &camera, 2).contains("unknown format 'xml'"));
    assert!(run_err("colhist", &["--line", "0,0,1,1", "--rows"], &camera, 2).contains("cannot be combined"));
    assert!(
        run_err("colhist", &["--line", "0,0,10,10"], &camera, 2).contains("frame 1: --line is not vertical")
    );
    assert!(run_err("colhist", &["--line", "600,0,600,10"], &camera, 2).contains("outside"));
    assert!(run_err("colhist", &["--segment", "0,0,1,1", "--rows"], &camera, 2)
        .contains("--segment takes one column: it cannot be combined with --rows"));
    assert!(
        run_err("colhist", &["--line", "0,0,0,1", "--segment", "0,0,0,1"], &camera, 2).contains("not both")
    );
    assert!(run_err("colhist", &["--segment", "0,0,10,10"], &camera, 2)
        .contains("frame 1: --segment is not vertical in this frame"));
    assert!(run_err("colhist", &["--segment", "600,0,600,10"], &camera, 2).contains("outside"));
    for (points, rows) in
        [("5,-1,5,100", "-1 and 100"), ("5,600,5,100", "100 and 600"), ("5,0,5,511.5", "0 and 512")]
    {
        let e = run_err("colhist", &["--segment", points], &camera, 2);
        assert!(
            e.contains(&format!(
                "frame 1: --segment leaves the frame: its ends are at rows {rows} of a 512-row frame"
            )),
            "{e}"
        );
    }
    assert!(run_err("colhist", &["--segment", "3,3,3,3"], &camera, 2).contains("the two points are the same"));
    // The matrix of counts is held to --max-pixels like any output: 300 columns x 256 bins.
    let wide = stream(&[random_frame(&mut rng(), 300, 2, 255)]);
    let limit = ["--max-pixels", "1000"];
    assert!(
        run_err("colhist", &limit, &wide, 2).contains("frame 1: the output would be 300x256, 76800 pixels")
    );
    assert!(!run_ok("colhist", "cpu", &[&limit[..], &["--rows"]].concat(), &wide).is_empty());
}

/// CPU and GPU count the same: random frames, sizes, bins (past shared memory too), columns and
/// rows, with and without a data-pixel mask, with and without a user's mask (`--mask`).
#[test]
fn gpu_matches_cpu_on_random_frames() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut sizes = vec![(1, 1), (1, 3000), (3000, 1), (4097, 3), (33, 65), (200, 300)];
    sizes.extend((0..12).map(|_| (rng.usize(1..900), rng.usize(1..900))));
    for (i, (w, h)) in sizes.into_iter().enumerate() {
        let maxval = match i {
            3 | 5 => 65535,
            _ if i % 2 == 0 => 255,
            _ => rng.u16(256..=65535),
        };
        let mut frame = random_frame(&mut rng, w, h, maxval);
        if i % 3 != 2 {
            let turn = histopipe_ops::rotate::Turn::degrees(rng.f64() * 360.0).unwrap();
            let g = Geometry::identity(rng.usize(1..=w), rng.usize(1..=h));
            frame.geometry = Some(g.then(&turn.new_to_old(w, h)));
        }
        let levels = maxval as u32 + 1;
        // Odd i are 16-bit: there, bin counts past 12288 take the global-atomics kernel.
        let bins = match i % 4 {
            0 => None,
            1 => Some(levels.min(rng.u32(12289..=65536))),
            2 => Some(rng.u32(1..=levels.min(300))),
            _ => Some(levels.min(rng.u32(300..=5000))),
        };
        // Mostly set, mostly clear, or half and half.
        let odds = [2, 5, 9][i % 3];
        let mask: Vec<u8> = (0..w * h).map(|_| (rng.u32(..10) < odds) as u8 * rng.u8(1..)).collect();
        for (rows, count_padding) in [(false, false), (true, false), (false, true), (true, true)] {
            let op = ColHistParams { bins, rows, count_padding }.for_frame(&frame).unwrap();
            let cpu = op.cpu(&frame).unwrap();
            let gpu_out = op.gpu(&gpu, &frame).unwrap();
            assert!(
                cpu == gpu_out,
                "{w}x{h} maxval {maxval} bins {} rows {rows}: GPU counts differ",
                op.bins
            );
            let masked = Masked { op: &op, mask: Mask::of_frame(&mask, &frame).unwrap() };
            assert!(
                masked.cpu(&frame).unwrap() == masked.gpu(&gpu, &frame).unwrap(),
                "{w}x{h} maxval {maxval} bins {} rows {rows}: GPU counts differ under a mask",
                op.bins
            );
        }
        // --line and --segment count a part of one column, gathered into a frame of its own.
        let op = ColHistParams { bins, rows: false, count_padding: false }.for_frame(&frame).unwrap();
        let top = rng.usize(..h);
        let (x, bottom) = (rng.usize(..w), rng.usize(top + 1..=h));
        for pixels in [None, Some(&mask[..])] {
            let (one, column) = op.column(&frame, x, top..bottom, pixels);
            if column.height > 0 {
                assert!(
                    one.cpu(&column).unwrap() == one.gpu(&gpu, &column).unwrap(),
                    "{w}x{h}: a column's part"
                );
            }
        }
    }
}

/// The pipelines of the issue on both backends, 8- and 16-bit, single frames and a stream.
#[test]
fn gpu_pipelines_match_cpu() {
    let Some(_gpu) = gpu() else { return };
    let frames = [fixture_frame("camera.pgm"), fixture_frame("dem16.pgm"), fixture_frame("coins.pgm")];
    let inputs = [fixture_bytes("camera.pgm"), fixture_bytes("dem16.pgm"), stream(&frames)];
    for input in &inputs {
        for backend_args in [
            (&["45"][..], &[][..]),
            (&["--line", "0,0,300,300"], &["--line", "0,0,300,300"]),
            (&["--segment", "0,0,300,300"], &["--segment", "290,290,30,30", "--bins", "16"]),
            (&["--segment", "20,30,250,30"], &["--segment", "20,30,250,30"]),
            (&["0"], &["--segment", "10,-50,10,300", "--bins", "200"]),
            (&["-20", "--bilinear"], &["--rows", "--bins", "64"]),
        ] {
            let (rot, hist) = backend_args;
            let run = |b: &str| {
                let padded = run_ok("pad", b, &[], input);
                let turned = run_ok("rotate", b, rot, &padded);
                run_ok("colhist", b, hist, &turned)
            };
            assert!(run("cpu") == run("gpu"), "{rot:?} | colhist {hist:?}: GPU output differs");
        }
    }
}

/// The PGM's maxval is its largest count, however small, so viewers stretch it to its peak (no
/// floor at 256, which showed a peak of 60 at 23%), and `--png` makes that peak white.
#[test]
fn pgm_peak_is_white() {
    let turned = run_ok("rotate", "cpu", &["45"], &run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm")));
    let pgm = read_frames(&run_ok("colhist", "cpu", &["--format", "pgm"], &turned)).remove(0);
    let peak = (0..pgm.pixel_count()).map(|i| pgm.pixels.get(i)).max().unwrap();
    assert!(peak < 256, "{peak}");
    assert_eq!((pgm.maxval, pgm.depth()), (peak, histopipe_frame::Depth::U8));
    let png = run_ok("colhist", "cpu", &["--format", "pgm", "--png"], &turned);
    let shown = image::load_from_memory(&png).unwrap().to_luma8();
    assert_eq!(shown.pixels().map(|p| p.0[0]).max(), Some(255), "the peak is white");
    assert_eq!(read_frames(&png).remove(0), Frame { format: histopipe_frame::Format::Decoded, ..pgm });
}

/// `--format png`: every pixel is its cell's count through the log colour scale, bin 0 at the
/// bottom; tiny matrices are drawn in blocks; a second frame is refused.
#[test]
fn png_heatmap_shows_every_count() {
    use histopipe_plot::LogColour;
    let camera = fixture_bytes("camera.pgm");
    let block = parse(&run_ok("colhist", "cpu", &["--bins", "64"], &camera), ',').remove(0);
    let img =
        image::load_from_memory(&run_ok("colhist", "cpu", &["--bins", "64", "--format", "png"], &camera))
            .unwrap()
            .to_rgb8();
    // 64 bins drawn 4 pixels high, to make 256.
    assert_eq!(img.dimensions(), (512, 256));
    let max = block.rows.iter().flat_map(|r| r.2.iter()).copied().max().unwrap();
    let colour = LogColour::new(max as u64);
    for y in 0..256 {
        for x in 0..512 {
            let bin = 63 - y as usize / 4;
            assert_eq!(
                img.get_pixel(x, y).0,
                colour.colour(block.count(bin, x as usize) as u64),
                "({x}, {y})"
            );
        }
    }
    let line = image::load_from_memory(&run_ok(
        "colhist",
        "cpu",
        &["--line", "5,0,5,100", "--format", "png"],
        &camera,
    ))
    .unwrap();
    assert_eq!((line.width(), line.height()), (256, 256), "one column, 256 bins");
    let two = stream(&[fixture_frame("camera.pgm"), fixture_frame("camera.pgm")]);
    assert!(run_err("colhist", &["--format", "png"], &two, 2).contains("frame 2: a heatmap is one image"));
}

/// `--plot`: the figure beside the usual output, which it leaves as it was; SVG or PNG by the
/// name; with `{n}` one file per frame, without it the first frame's; bad names and unwritable
/// places are errors.
#[test]
fn plot_writes_figures() {
    let dir = temp_dir("colhist-plot");
    let frames = [fixture_frame("camera.pgm"), fixture_frame("dem16.pgm")];
    let input = stream(&frames);
    let plain = run_ok("colhist", "cpu", &[], &input);
    let svg = dir.join("h.svg");
    let out = run_ok("colhist", "cpu", &["--plot", svg.to_str().unwrap()], &input);
    assert_eq!(out, plain, "stdout is unchanged");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("colhist: frame 1, 512x512") && !text.contains("frame 2"), "the first frame only");
    assert!(text.contains("<image") && text.contains("count (log scale)"));
    let each = dir.join("h-{n}.png");
    run_ok("colhist", "cpu", &["--rows", "--plot", each.to_str().unwrap()], &input);
    for n in [1, 2] {
        let img = image::open(dir.join(format!("h-{n}.png"))).unwrap();
        assert_eq!((img.width(), img.height()), (960, 600), "frame {n}");
    }
    assert!(!dir.join("h-3.png").exists());
    assert!(run_err("colhist", &["--plot", "h.pdf"], &input, 2).contains("must end in .svg or .png"));
    // Folders are made as -o makes them; a place that cannot be a folder is an error.
    let made = dir.join("missing/h.svg");
    run_ok("colhist", "cpu", &["--plot", made.to_str().unwrap()], &input);
    assert!(std::fs::read(&made).unwrap().starts_with(b"<svg"), "the figure is written, its folder made");
    std::fs::write(dir.join("file"), b"").unwrap();
    let nowhere = dir.join("file/h.svg");
    let e = run_err("colhist", &["--plot", nowhere.to_str().unwrap()], &input, 1);
    assert!(e.contains("frame 1: --plot: cannot write"), "{e}");
}

/// `--colour each`, `--range` and float frames: every column's counts are numpy.histogram's of that
/// column (float64 samples), the rows after the bins count what was left out; `-o x.npy` holds the
/// same counts as uint64, (channels, rows, columns).
#[test]
fn channels_ranges_and_floats_match_numpy() {
    use crate::cdf::{float_tiff, run_to};
    let dir = temp_dir("colhist-numpy");
    let astronaut = fixture("astronaut.png");
    let (csv, npy) = (dir.join("each.csv"), dir.join("each.npy"));
    let args = ["--colour", "each", "--range", "10:200", "--bins", "16"];
    run_to("colhist", "cpu", &[&args[..], &[astronaut.to_str().unwrap()]].concat(), &csv);
    let o = ["-o", npy.to_str().unwrap(), astronaut.to_str().unwrap()];
    run_to("colhist", "cpu", &[&args[..], &o].concat(), &dir.join("none"));
    let script = "import pandas as pd\n\
        png, csv, npy = sys.stdin.read().split('\\t')\n\
        rgb = cv2.imread(png, cv2.IMREAD_UNCHANGED)[..., ::-1].astype(int)\n\
        df = pd.read_csv(csv, keep_default_na=False, float_precision='round_trip')\n\
        x = np.load(npy)\n\
        assert x.shape == (3, 21, 512) and x.dtype == np.uint64, x.shape\n\
        for c, name in enumerate(['red', 'green', 'blue']):\n\
            \x20\x20\x20\x20sub = df[df.channel == name]\n\
            \x20\x20\x20\x20assert list(sub.bin[16:]) == ['below', 'above', 'nans', 'neg_inf', 'pos_inf']\n\
            \x20\x20\x20\x20m = sub.iloc[:, 6:].to_numpy().astype(np.uint64)\n\
            \x20\x20\x20\x20assert (m == x[c]).all()\n\
            \x20\x20\x20\x20v = rgb[..., c]\n\
            \x20\x20\x20\x20ref = np.stack([np.bincount((col[(col >= 10) & (col <= 200)] - 10) * 16 // 191, minlength=16) for col in v.T], 1)\n\
            \x20\x20\x20\x20assert (m[:16] == ref).all(), name\n\
            \x20\x20\x20\x20assert (m[16] == (v < 10).sum(0)).all() and (m[17] == (v > 200).sum(0)).all() and (m[18:] == 0).all()\n\
        print('ok')\n";
    let input = format!("{}\t{}\t{}", astronaut.display(), csv.display(), npy.display());
    assert_eq!(crate::opencv::python(script, &input).trim(), "ok");

    let tif = float_tiff(&dir, 3);
    for (k, a) in [&["--bins", "10", "--range", "-1:1"][..], &["--bins", "7"], &["--rows"]].iter().enumerate()
    {
        let out = dir.join(format!("f{k}.csv"));
        run_to("colhist", "cpu", &[&a[..], &[tif.to_str().unwrap()]].concat(), &out);
        let axis = if a.contains(&"--rows") { 1 } else { 0 };
        let check = format!(
            "df = pd.read_csv(csv, keep_default_na=False, float_precision='round_trip')\n\
             n = len(df) - 5\n\
             m = df.iloc[:, 5:].to_numpy().astype(np.int64)\n\
             lines = a.T if {axis} == 0 else a\n\
             ref = np.stack([np.histogram(l, bins=n, range=r)[0] for l in lines], 1)\n\
             assert (m[:n] == ref).all()\n\
             f = lambda t: t.sum({axis})\n\
             assert (m[n + 2] == f(np.isnan(a))).all() and (m[n + 3] == f(np.isneginf(a))).all()\n\
             assert (m[n + 4] == f(np.isposinf(a))).all()\n\
             fa = np.where(np.isfinite(a), a, np.nan)\n\
             assert (m[n] == f(fa < r[0])).all() and (m[n + 1] == f(fa > r[1])).all()\n\
             print('ok')\n"
        );
        crate::opencv::check_float_table(&tif, &out, a, &check);
    }
}

/// `--mask`: each column's (row's) counts are np.bincount's of that column's masked samples:
/// 8-bit columns and rows, 16-bit with fewer bins, --line and --segment, a float frame with its
/// default range (the masked samples' extremes) and a given one, `--colour each` (every channel
/// under the one mask); the GPU the CPU's.
#[test]
fn mask_counts_the_masked_pixels_as_numpy() {
    let (w, h) = (61, 47);
    let inputs = MaskInputs::new("colhist-mask", &mut rng(), w, h);
    let MaskInputs { path: m, gray, deep, tiff, colour, .. } = &inputs;
    let (gray_stream, deep_stream) = (stream(std::slice::from_ref(gray)), stream(std::slice::from_ref(deep)));
    let colour_stream = stream(std::slice::from_ref(colour));
    let cases: [(&[&str], &[u8]); 8] = [
        (&[], &gray_stream),
        (&["--rows"], &gray_stream),
        (&["--bins", "30"], &deep_stream),
        (&["--line", "20,0,20,46"], &gray_stream),
        (&["--segment", "20,30,20,5"], &gray_stream),
        (&["--bins", "20"], tiff),
        (&["--bins", "7", "--range", "-20:40"], tiff),
        (&["--colour", "each"], &colour_stream),
    ];
    let npys: Vec<Vec<u8>> = cases
        .iter()
        .map(|(args, input)| {
            let mut all = args.to_vec();
            all.extend(["--format", "npy", "--mask", m]);
            let out = run_ok("colhist", "cpu", &all, input);
            if let Some(_gpu) = gpu() {
                assert_eq!(run_ok("colhist", "gpu", &all, input), out, "{args:?}: GPU and CPU");
            }
            out
        })
        .collect();
    let script = format!(
        r#"h, w = {h}, {w}
m = np.fromfile(sys.argv[1], np.uint8).reshape(h, w) != 0
g = np.fromfile(sys.argv[2], np.uint8).reshape(h, w).astype(np.int64)
d = np.fromfile(sys.argv[3], '<u2').reshape(h, w).astype(np.int64)
f = np.fromfile(sys.argv[4], '<f4').astype(np.float64).reshape(h, w)
c = np.fromfile(sys.argv[5], np.uint8).reshape(h, w, 3).astype(np.int64)
got = [np.load(p) for p in sys.argv[6:]]
cols = lambda a, hist: np.stack([hist(a[:, x][m[:, x]]) for x in range(w)], 1)
rows = lambda a, hist: np.stack([hist(a[y][m[y]]) for y in range(h)], 1)
byte = lambda v: np.bincount(v, minlength=256)
fm = f[m]
want = [cols(g, byte), rows(g, byte), cols(d, lambda v: np.bincount(v * 30 // 4001, minlength=30)),
        byte(g[:, 20][m[:, 20]])[:, None], byte(g[5:31, 20][m[5:31, 20]])[:, None],
        cols(f, lambda v: np.histogram(v, 20, (fm.min(), fm.max()))[0]),
        cols(f, lambda v: np.histogram(v, 7, (-20, 40))[0]),
        np.stack([cols(c[..., k], byte) for k in range(3)])]
for i, (a, b) in enumerate(zip(got, want)):
    bins = a[:b.shape[0]] if a.ndim == 2 else a
    assert a.dtype == np.uint64 and bins.shape == b.shape, (i, a.shape, b.shape)
    assert (bins == b).all(), i
# Float frames: below, above, nans, neg_inf, pos_inf of the masked samples alone.
assert (got[5][20:] == 0).all()
assert (got[6][7] == (m & (f < -20)).sum(0)).all() and (got[6][8] == (m & (f > 40)).sum(0)).all()
print('ok')
"#
    );
    let raw = inputs.raw();
    let files: Vec<&[u8]> = raw.iter().chain(&npys).map(Vec::as_slice).collect();
    assert_eq!(String::from_utf8(opencv(&script, &files)).unwrap().trim(), "ok");
}

/// `--mask` on a padded frame has the padded frame's size: the padding stays out unless
/// `--count-padding`, which leaves the mask in force.
#[test]
fn mask_and_padding_both_apply() {
    let dir = temp_dir("colhist-mask-pad");
    let mut rng = rng();
    let (w, h, border) = (20, 13, 3);
    let (pw, ph) = (w + 2 * border, h + 2 * border);
    let mask = random_mask(&mut rng, pw, ph);
    let path = mask_file(&dir, "mask.pgm", pw, ph, &mask);
    let gray = random_frame(&mut rng, w, h, 255);
    let padded = run_ok("pad", "cpu", &["--border", "3"], &stream(std::slice::from_ref(&gray)));
    for count_padding in [false, true] {
        let mut args = vec!["--mask", path.to_str().unwrap()];
        if count_padding {
            args.push("--count-padding");
        }
        let got = block_counts(&parse(&run_ok("colhist", "cpu", &args, &padded), ',')[0]);
        let mut want = vec![vec![0u32; pw]; 256];
        for y in 0..ph {
            for x in 0..pw {
                let inside = (border..border + w).contains(&x) && (border..border + h).contains(&y);
                if mask[y * pw + x] == 0 || !(inside || count_padding) {
                    continue;
                }
                let v = if inside { gray.pixels.get((y - border) * w + x - border) as usize } else { 0 };
                want[v][x] += 1;
            }
        }
        assert_eq!(got, want, "--count-padding {count_padding}");
    }
}

#[test]
fn a_mask_of_another_size_is_refused_in_one_line() {
    assert_mask_size_refused("colhist", &[]);
}

/// `colhist --angles ANGLES ROTATE.. COLHIST..` on `input`, checked against the loop of processes
/// `for A in ANGLES: rotate A ROTATE.. < input | colhist COLHIST..`: the header is the first
/// angle's with `angle` after `source`, and every row is the loop's, byte for byte, with its
/// angle after the source. With `point`, `--line` (or `--segment`, `half` given) takes one point
/// in the sweep, and in the loop the two points [`Line::vertical_through`] gives in each turned
/// frame, written in the shortest form that reads back to the same numbers.
fn assert_sweep_is_the_loop(
    input: &[u8],
    angles: &str,
    rotate: &[&str],
    colhist: &[&str],
    point: Option<((f64, f64), Option<f64>)>,
    backend: &str,
) {
    let list: histopipe_ops::angles::Angles = angles.parse().unwrap();
    let along = point.map(|((x, y), half)| match half {
        None => vec!["--line".to_owned(), format!("{x},{y}")],
        Some(r) => vec!["--segment".to_owned(), format!("{x},{y},{r}")],
    });
    let mut args = vec!["--angles", angles];
    args.extend(rotate);
    args.extend(colhist);
    args.extend(along.iter().flatten().map(String::as_str));
    let sweep = String::from_utf8(run_ok("colhist", backend, &args, input)).unwrap();
    let mut sweep_lines = sweep.lines();
    let header: Vec<&str> = sweep_lines.next().unwrap().split(',').collect();
    assert_eq!(header[2], "angle", "{args:?}");
    let mut rows = sweep_lines;
    for (k, a) in list.iter().enumerate() {
        let a = a.to_string();
        let mut rargs = vec![a.as_str()];
        rargs.extend(rotate);
        let turned = run_ok("rotate", "cpu", &rargs, input);
        let mut hargs: Vec<String> = colhist.iter().map(|s| s.to_string()).collect();
        if let Some(((x, y), half)) = point {
            let g = read_frames(&turned).remove(0).geometry_or_identity();
            let l = histopipe_frame::Line::vertical_through((x, y), &g, half.unwrap_or(1.0)).unwrap();
            let option = if half.is_some() { "--segment" } else { "--line" };
            hargs.extend([option.to_owned(), format!("{},{},{},{}", l.from.0, l.from.1, l.to.0, l.to.1)]);
        }
        let hargs: Vec<&str> = hargs.iter().map(String::as_str).collect();
        let looped = String::from_utf8(run_ok("colhist", "cpu", &hargs, &turned)).unwrap();
        let mut looped = looped.lines();
        let loop_header = looped.next().unwrap();
        if k == 0 {
            let mut h = header.clone();
            h.remove(2);
            match point {
                None => assert_eq!(h.join(","), loop_header, "{args:?}"),
                Some(_) => {
                    assert_eq!(h[..h.len() - 1], loop_header.split(',').collect::<Vec<_>>()[..h.len() - 1])
                }
            }
        }
        for expected in looped {
            let got = rows.next().unwrap_or_else(|| panic!("{args:?}: angle {a}: rows missing"));
            let mut f: Vec<&str> = got.split(',').collect();
            assert_eq!(f[2], a, "{args:?}: angles in order");
            f.remove(2);
            assert!(f.join(",") == expected, "{args:?}: angle {a}: {got} is not {expected}");
        }
    }
    assert!(rows.next().is_none(), "{args:?}: rows left over");
}

/// A sweep's input, angles, rotate's options and colhist's.
type SweepCase<'a> = (&'a [u8], &'a str, &'a [&'a str], &'a [&'a str]);

/// The sweep is the loop of processes: 8-bit (camera after pad), colour (the rocket photo, after
/// pad and as the JPEG itself) and 16-bit frames, nearest and bilinear, quarter turns and negative
/// angles, bins, rows, fill and expand.
#[test]
fn angles_are_the_loop_of_rotate_then_colhist() {
    let camera = run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"));
    let rocket = run_ok("pad", "cpu", &[], &fixture_bytes("rocket.jpg"));
    let dem = run_ok("pad", "cpu", &[], &fixture_bytes("dem16.pgm"));
    let cases: [SweepCase; 10] = [
        (&camera, "0:360:90", &[], &[]),
        (&camera, "-45,30,-90,180,12.5", &["--bilinear"], &["--bins", "16"]),
        (&camera, "-30:31:20", &[], &["--rows", "--bins", "7"]),
        (&camera, "10,90,-33", &["--bilinear", "--fill", "200"], &["--count-padding", "--bins", "5"]),
        (&camera, "0,37,90,270", &["--expand"], &["--bins", "4"]),
        (&rocket, "-90:90:45", &[], &["--bins", "32"]),
        (&rocket, "15,-60,90", &["--bilinear"], &["--bins", "64"]),
        (&fixture_bytes("rocket.jpg"), "0,30", &[], &["--bins", "8"]),
        (&dem, "-20,0,45,90", &[], &[]),
        (&dem, "5,-135", &["--bilinear", "--fill", "1000"], &["--bins", "1077", "--rows"]),
    ];
    for (input, angles, rotate, colhist) in cases {
        assert_sweep_is_the_loop(input, angles, rotate, colhist, None, "cpu");
    }
}

/// `--line X,Y` and `--segment X,Y,R` with `--angles`: in each direction, the turned frame's
/// column through the point (the pixels within R of it), as `colhist --line` (`--segment`) counts
/// it after `rotate A` given two points of that line.
#[test]
fn angles_through_a_point_are_the_loop_with_a_line() {
    let camera = run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"));
    let dem = run_ok("pad", "cpu", &[], &fixture_bytes("dem16.pgm"));
    let rocket = run_ok("pad", "cpu", &[], &fixture_bytes("rocket.jpg"));
    assert_sweep_is_the_loop(&camera, "0:180:30", &[], &[], Some(((200.0, 150.5), None)), "cpu");
    assert_sweep_is_the_loop(
        &camera,
        "-90,17,135",
        &["--bilinear"],
        &["--bins", "9"],
        Some(((10.0, 300.0), Some(80.0))),
        "cpu",
    );
    assert_sweep_is_the_loop(&dem, "0,45,-90", &[], &[], Some(((100.0, 100.0), Some(40.5))), "cpu");
    assert_sweep_is_the_loop(
        &rocket,
        "0,60",
        &["--bilinear"],
        &[],
        Some(((300.0, 200.0), Some(100.0))),
        "cpu",
    );
    // A segment of radius R counts 2R + 1 pixels (R whole, the point's row the middle one) wherever
    // it lies on the original.
    let out = run_ok("colhist", "cpu", &["--angles", "0:180:15", "--segment", "256,256,50"], &camera);
    let text = String::from_utf8(out).unwrap();
    let mut sums = std::collections::BTreeMap::<String, u32>::new();
    for row in text.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        *sums.entry(f[2].to_owned()).or_default() += f[6].parse::<u32>().unwrap();
    }
    assert_eq!(sums.len(), 12);
    assert!(sums.values().all(|&n| n == 101), "{sums:?}");
}

/// `-o cube.npy`: a uint32 array (angles, bins, columns), or rows with --rows, the table's counts.
#[test]
fn angles_write_a_cube_as_npy() {
    let dir = temp_dir("colhist-angles-npy");
    let padded = run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"));
    let input = dir.join("padded.pgm");
    std::fs::write(&input, &padded).unwrap();
    for extra in [&[][..], &["--rows", "--bins", "16", "--bilinear"][..]] {
        let (csv, npy) = (dir.join("c.csv"), dir.join("c.npy"));
        for out in [&csv, &npy] {
            let mut args = vec!["--angles", "-30:90:40", "-o", out.to_str().unwrap()];
            args.extend(extra);
            args.push(input.to_str().unwrap());
            run_ok("colhist", "cpu", &args, &[]);
        }
        let script = "import pandas\n\
            x = np.load(sys.argv[2])\n\
            t = np.loadtxt(sys.argv[1], delimiter=',', skiprows=1, usecols=None, dtype=str)\n\
            angles = sorted(set(t[:, 2]), key=lambda a: list(t[:, 2]).index(a))\n\
            c = t[:, 6:].astype(np.int64).reshape(len(angles), -1, t.shape[1] - 6)\n\
            assert x.dtype == np.uint32, x.dtype\n\
            assert x.shape == c.shape, (x.shape, c.shape)\n\
            assert (x == c).all()\n\
            sys.stdout.write(repr(x.shape))\n";
        let script = script.replace("import pandas\n", "");
        let shape = opencv(&script, &[&std::fs::read(&csv).unwrap(), &std::fs::read(&npy).unwrap()]);
        let expected = if extra.is_empty() { "(3, 256, 725)" } else { "(3, 16, 725)" };
        assert_eq!(String::from_utf8(shape).unwrap(), expected);
    }
}

/// What --angles refuses, each in one line, before any input is read where it can be.
#[test]
fn angles_option_errors() {
    let camera = fixture_bytes("camera.pgm");
    for (args, says) in [
        (&["--bilinear"][..], "--bilinear is an option of the turns of --angles"),
        (&["--expand"], "--expand is an option of the turns of --angles"),
        (
            &["--line", "3,4"],
            "--line takes two points X0,Y0,X1,Y1 of the original; one point is for --angles",
        ),
        (&["--angles", "0:90:45", "--line", "0,0,10,10"], "with --angles, --line takes X,Y"),
        (&["--angles", "0:90:45", "--segment", "5,5,0"], "the half-length R must be more than 0"),
        (&["--angles", "0:90:0"], "the step must not be 0"),
        (&["--angles", "0,x"], "'x' is not a number of degrees"),
        (&["--angles", "0,90", "--mask", "m.pgm"], "--angles cannot be combined with --mask"),
        (&["--angles", "0,90", "--range", "0:9"], "--angles cannot be combined with --range"),
        (&["--angles", "0,90", "--expand", "-o", "x.npy"], "--expand gives every angle its own size"),
        (&["--angles", "0,90", "--format", "png"], "--angles writes a table"),
    ] {
        let e = run_err("colhist", args, &camera, 2);
        assert!(e.contains(says), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
    }
    let e = run_err("colhist", &["--angles", "0:180:1", "--max-pixels", "1000000"], &camera, 2);
    assert!(e.contains("180 angles x 256 bins x 512 lines, 23592960 counters"), "{e}");
    // 2 turns of 725x725 (camera.pgm turned by 45 degrees, expanded) and 512x512.
    let e = run_err("colhist", &["--angles", "45,90", "--expand", "--max-work", "787768"], &camera, 2);
    assert_eq!(
        e,
        "colhist: frame 1: this frame's work would be 787769 steps (2 angles x turned pixels, up to \
         725x725), over the limit of 787768 (--max-work): raise --max-work to run it\n"
    );
    run_ok("colhist", "cpu", &["--angles", "45,90", "--expand", "--max-work", "787769"], &camera);
    let e = run_err("colhist", &["--angles", "0,90", "--fill", "300"], &camera, 2);
    assert!(e.contains("--fill 300"), "{e}");
    let e = run_err("colhist", &["--angles", "0,90", "--segment", "5,5,20"], &camera, 2);
    assert!(e.contains("--segment leaves the frame"), "{e}");
}

/// A matrix of many counters is held as its 32-bit counts and what of the output is not yet
/// written, nothing more: `--bins 65536` over 512 columns of a 1 KB 16-bit PGM, as `.npy`, once
/// held the counts widened to uint64, encoded and copied again (27 bytes a counter, 906 MB);
/// now at most 12 (the counts, and the output if the writer fell behind). The child's peak
/// resident set, by Python's getrusage.
#[test]
fn many_counters_are_held_as_the_counts_and_the_output() {
    let dir = temp_dir("colhist-counters");
    let pgm = dir.join("wide.pgm");
    let mut bytes = b"P5 512 1 65535\n".to_vec();
    bytes.extend((0..512u32).flat_map(|x| ((x * 128) as u16).to_be_bytes()));
    std::fs::write(&pgm, bytes).unwrap();
    let npy = dir.join("h.npy");
    let script = r#"
import resource, subprocess, sys
p = subprocess.run([sys.argv[1], "--backend", "cpu", "--bins", "65536", "-o", sys.argv[3], sys.argv[2]])
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"#;
    let python = std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
    let colhist = assert_cmd::cargo::cargo_bin("colhist");
    let out = std::process::Command::new(python)
        .args(["-c", script, colhist.to_str().unwrap(), pgm.to_str().unwrap(), npy.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text.split_whitespace().map(|f| f.parse().unwrap()).collect();
    assert_eq!(fields[0], 0, "colhist failed: {}", String::from_utf8_lossy(&out.stderr));
    let counters = 65536 * 512;
    assert_eq!(std::fs::metadata(&npy).unwrap().len(), 128 + 8 * counters);
    let peak = fields[1] * 1024;
    assert!(peak < 16 * counters + (64 << 20), "peak memory {peak} bytes for {counters} counters");
}

/// The GPU's sweep is the CPU's, and so the loop's: both interpolations, 8- and 16-bit, with a
/// point.
#[test]
fn angles_on_the_gpu_are_the_loop() {
    let Some(_gpu) = gpu() else { return };
    let camera = run_ok("pad", "cpu", &[], &fixture_bytes("camera.pgm"));
    let dem = run_ok("pad", "cpu", &[], &fixture_bytes("dem16.pgm"));
    assert_sweep_is_the_loop(&camera, "-90:180:33", &[], &[], None, "gpu");
    assert_sweep_is_the_loop(&camera, "0,12.5,-77", &["--bilinear"], &["--bins", "100"], None, "gpu");
    assert_sweep_is_the_loop(
        &dem,
        "0,45,90,-10",
        &["--bilinear", "--expand"],
        &["--rows", "--bins", "500"],
        None,
        "gpu",
    );
    assert_sweep_is_the_loop(&dem, "0,45", &[], &[], Some(((50.0, 60.0), Some(30.0))), "gpu");
}
