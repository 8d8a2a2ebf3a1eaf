//! PNG writing against OpenCV's `imwrite`: the same pixels, and files of about its size at its
//! default setting and at each `IMWRITE_PNG_COMPRESSION` level (`--compression`), gray and colour,
//! 8- and 16-bit. The bytes differ (OpenCV's zlib against zlib-rs), so sizes are compared, within
//! 10%.

use crate::common::*;

/// The sizes of `cv2.imencode('.png', image, params)` of each file's image as `IMREAD_UNCHANGED`
/// reads it, for the default and levels 0, 1, 6 and 9, in that order.
fn opencv_sizes(files: &[Vec<u8>]) -> Vec<Vec<usize>> {
    let script = r#"
import struct
for path in sys.argv[1:]:
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    for params in ([], [cv2.IMWRITE_PNG_COMPRESSION, 0], [cv2.IMWRITE_PNG_COMPRESSION, 1],
                   [cv2.IMWRITE_PNG_COMPRESSION, 6], [cv2.IMWRITE_PNG_COMPRESSION, 9]):
        ok, png = cv2.imencode('.png', image, params)
        sys.stdout.buffer.write(struct.pack('<I', len(png)))
"#;
    let inputs: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let out = opencv(script, &inputs);
    let sizes: Vec<usize> =
        out.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize).collect();
    sizes.chunks(5).map(<[usize]>::to_vec).collect()
}

#[test]
fn sizes_are_opencv_s_at_every_setting_and_pixels_are_kept() {
    let dir = temp_dir("png-sizes");
    // A photo in colour and gray, and a 16-bit scan: PPM and PGM, which OpenCV reads as they are.
    let rocket = run_ok("rotate", "cpu", &["0", "--png"], &fixture_bytes("rocket.jpg"));
    let rgb = read_frames(&rocket).remove(0);
    let colour = stream(&[rgb]);
    let gray = fixture_bytes("camera.pgm");
    // OpenCV writes a 16-bit PGM's samples as they are, where the PNG's are scaled to its
    // depth: a full-range frame, so both write the same samples.
    let mut dem = read_frames(&fixture_bytes("dem16.pgm")).remove(0);
    let m = dem.maxval as u32;
    let full: Vec<u16> =
        (0..dem.pixels.len()).map(|i| (dem.pixels.get(i) as u32 * 65535 / m) as u16).collect();
    dem.pixels = histopipe_frame::Pixels::U16(full.into());
    dem.maxval = 65535;
    let deep = stream(&[dem]);
    let files = [colour, gray, deep];
    let expected = opencv_sizes(&files);
    for (file, theirs) in files.iter().zip(&expected) {
        let path = dir.join("in.pnm");
        std::fs::write(&path, file).unwrap();
        for (setting, &their_size) in [None, Some("0"), Some("1"), Some("6"), Some("9")].iter().zip(theirs) {
            let mut args: Vec<&str> = vec!["0", "--png"];
            if let Some(level) = setting {
                args.extend(["--compression", level]);
            }
            args.push(path.to_str().unwrap());
            let ours = run_ok("rotate", "cpu", &args, &[]);
            let ratio = ours.len() as f64 / their_size as f64;
            assert!(
                (0.9..=1.1).contains(&ratio),
                "--compression {setting:?}: {} bytes against OpenCV's {their_size}",
                ours.len()
            );
            let (back, original) = (read_frames(&ours).remove(0), read_frames(file).remove(0));
            assert!(same_bits(&back, &original), "--compression {setting:?}: the pixels changed");
        }
    }
}

#[test]
fn compression_takes_zlib_s_levels_only() {
    for bad in ["10", "-1", "x", "1.5"] {
        let e = run_err("rotate", &["0", "--png", "--compression", bad], &fixture_bytes("camera.pgm"), 2);
        assert!(e.contains("--compression"), "{e}");
    }
}
