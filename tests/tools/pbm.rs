//! PBM input (issue 49, 6): plain (P1) and packed (P4) bitmaps read as OpenCV's `cv2.imread`
//! reads them, 8-bit gray with netpbm's 1 (black) as 0 and 0 (white) as 255, through the tools'
//! shared reader (`pad --border 0`, the identity); frames one after another as netpbm streams
//! them; hostile ones refused in one line.

use histopipe_frame::{Channels, Format, Pixels};

use crate::common::*;

/// Rows of random bits (true: 1, black).
fn bits(rng: &mut fastrand::Rng, w: usize, h: usize) -> Vec<Vec<bool>> {
    (0..h).map(|_| (0..w).map(|_| rng.bool()).collect()).collect()
}

/// How a plain PBM's raster is laid out.
#[derive(Clone, Copy)]
enum Plain {
    /// A space between bits, a comment line between rows and one in the header.
    Spaced,
    /// Digits with nothing between them, in lines of at most 70 (as `pnmtoplainpnm` writes them).
    Packed,
}

fn p1(rows: &[Vec<bool>], plain: Plain) -> Vec<u8> {
    let (w, h) = (rows[0].len(), rows.len());
    let digits = rows.iter().flatten().map(|&b| if b { b'1' } else { b'0' });
    match plain {
        Plain::Spaced => {
            let mut out = format!("P1\n# made by hand\n{w} {h}\n").into_bytes();
            for (y, row) in rows.iter().enumerate() {
                let line: Vec<&str> = row.iter().map(|&b| if b { "1" } else { "0" }).collect();
                out.extend(line.join(" ").bytes());
                // Not after the last row: what follows a raster is the next frame (as netpbm
                // reads a stream), and a comment is none.
                out.extend(if y + 1 < h { &b"\n# a comment among the bits 0 1\n"[..] } else { b"\n" });
            }
            out
        }
        Plain::Packed => {
            let digits: Vec<u8> = digits.collect();
            let mut out = format!("P1\n{w} {h}\n").into_bytes();
            for line in digits.chunks(70) {
                out.extend(line);
                out.push(b'\n');
            }
            out
        }
    }
}

/// A packed PBM, the bits past each row's width (its padding) random: they are not pixels.
fn p4(rng: &mut fastrand::Rng, rows: &[Vec<bool>]) -> Vec<u8> {
    let (w, h) = (rows[0].len(), rows.len());
    let mut out = format!("P4\n# c\n{w} {h}\n").into_bytes();
    for row in rows {
        for byte in 0..w.div_ceil(8) {
            let mut bit = |k: usize| row.get(8 * byte + k).copied().unwrap_or_else(|| rng.bool());
            out.push((0..8).fold(0u8, |acc, k| acc << 1 | bit(k) as u8));
        }
    }
    out
}

/// `cv2.imread(path, IMREAD_UNCHANGED)` of each file, its bytes (each must be 8-bit, one channel).
fn cv2_imread(files: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    opencv(
        "for p in sys.argv[1:]:\n    a = cv2.imread(p, cv2.IMREAD_UNCHANGED)\n    \
         assert a.dtype == np.uint8 and a.ndim == 2, (a.dtype, a.shape)\n    \
         sys.stdout.buffer.write(a.tobytes())",
        &refs,
    )
}

#[test]
fn plain_and_packed_pbm_read_as_cv2_imread() {
    let mut rng = rng();
    let sizes = [(1, 1), (7, 3), (8, 2), (9, 5), (17, 4), (64, 3), (101, 7), (3, 40)];
    let mut files = Vec::new();
    let mut shapes = Vec::new();
    for (w, h) in sizes {
        let rows = bits(&mut rng, w, h);
        for file in [p1(&rows, Plain::Spaced), p1(&rows, Plain::Packed), p4(&mut rng, &rows)] {
            files.push(file);
            shapes.push((w, h));
        }
    }
    let want = cv2_imread(&files);
    let mut at = 0;
    for (file, (w, h)) in files.iter().zip(shapes) {
        let frames = read_frames(&run_ok("pad", "cpu", &["--border", "0"], file));
        let f = &frames[0];
        assert_eq!((frames.len(), f.width, f.height, f.channels, f.maxval), (1, w, h, Channels::Gray, 255));
        assert_eq!(f.format, Format::Pgm, "written back as PGM");
        assert_eq!(
            f.pixels,
            Pixels::U8(want[at..at + w * h].to_vec().into()),
            "{}",
            String::from_utf8_lossy(file)
        );
        at += w * h;
    }
    assert_eq!(at, want.len());
}

/// A stream of P4, P4, P1 and P5 frames back to back, as netpbm concatenates them, from standard
/// input and from a file: four frames, each its own file's; with a GPU, the same bytes.
#[test]
fn pbm_frames_follow_each_other_in_a_stream() {
    let mut rng = rng();
    let (a, b, c) = (bits(&mut rng, 13, 4), bits(&mut rng, 8, 1), bits(&mut rng, 5, 6));
    let pgm = b"P5 2 1 255\n\x07\x09".to_vec();
    let parts = [p4(&mut rng, &a), p4(&mut rng, &b), p1(&c, Plain::Packed), pgm];
    let one_by_one: Vec<_> =
        parts.iter().map(|p| read_frames(&run_ok("pad", "cpu", &["--border", "0"], p)).remove(0)).collect();
    let whole = parts.concat();
    let out = run_ok("pad", "cpu", &["--border", "0"], &whole);
    assert_eq!(read_frames(&out), one_by_one);
    let dir = temp_dir("pbm-stream");
    let path = dir.join("s.pbm");
    std::fs::write(&path, &whole).unwrap();
    let named = read_frames(&run_ok("pad", "cpu", &["--border", "0", path.to_str().unwrap()], b""));
    let pixels = |f: &[histopipe_frame::Frame]| f.iter().map(|f| f.pixels.clone()).collect::<Vec<_>>();
    assert_eq!(pixels(&named), pixels(&one_by_one));
    if let Some(_gpu) = gpu() {
        assert!(
            run_ok("pad", "gpu", &["--border", "2"], &whole)
                == run_ok("pad", "cpu", &["--border", "2"], &whole)
        );
    }
}

/// Cut, oversized and garbled PBMs: one escaped line naming the problem, exit 2, never a panic.
#[test]
fn hostile_pbm_is_refused_in_one_line() {
    let cases: [(&[u8], &str); 7] = [
        (b"P4 9 2\n\x00\x00\x00", "frame 1: truncated pixel data: 3 of 4 bytes for 9x2"),
        (b"P1 3 2 1 0 1 1", "frame 1: truncated pixel data: 4 of 6 bits"),
        (b"P1 3 1 1 0 2", "frame 1: bad bit '2' at pixel 2 (0 or 1)"),
        (b"P1 3 1 1 \x1b[2J", r"frame 1: bad bit '\x1b' at pixel 1 (0 or 1)"),
        (b"P4 40000 40000\n\x00", "frame 1: 40000x40000 is 1600000000 pixels, over the limit"),
        (b"P1 2 1 01 P4 2 1\n", "frame 2: truncated pixel data: 0 of 1 bytes for 2x1"),
        (b"P4 2 x\n\x00", "frame 1: bad height 'x'"),
    ];
    for (input, says) in cases {
        let e = run_err("pad", &["--border", "0"], input, 2);
        assert!(e.contains(says), "{}: {e}", String::from_utf8_lossy(input));
    }
}
