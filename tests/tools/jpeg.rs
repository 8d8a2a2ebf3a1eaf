//! JPEG reading and writing against OpenCV, which decodes and encodes with libjpeg-turbo as we
//! do: gray and colour decoding byte for byte, through the reader every tool uses, through a
//! tool, and through `read_rgb8`; encoding byte for byte with `cv2.imwrite`'s settings.

use histopipe_frame::{encode_jpeg, read_rgb8, Channels, Pixels, ReadOptions};

use crate::common::*;

/// One JPEG and what OpenCV decodes from it.
struct Case {
    jpeg: Vec<u8>,
    width: usize,
    height: usize,
    /// `cv2.imread(path, cv2.IMREAD_GRAYSCALE)`.
    gray: Vec<u8>,
    /// `cv2.imread(path, cv2.IMREAD_COLOR)[..., ::-1]`.
    rgb: Vec<u8>,
}

/// JPEGs by `cv2.imwrite` of the astronaut, of noise (odd sizes) and of gray images, at every
/// chroma subsampling OpenCV offers, baseline and progressive, and rocket.jpg as it is; each
/// with OpenCV's gray and colour decoding.
fn cases() -> Vec<Case> {
    let script = r#"
import os, struct
astronaut = cv2.imread(sys.argv[1], cv2.IMREAD_COLOR)
noise = np.random.default_rng(1).integers(0, 256, (67, 45, 3), dtype=np.uint8)
samplings = [cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
             cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440,
             cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444]
path = sys.argv[1] + '.jpg'
jpegs = []
for image in (astronaut, noise):
    for sampling in samplings:
        for progressive in (0, 1):
            cv2.imwrite(path, image, [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                                      sampling, cv2.IMWRITE_JPEG_PROGRESSIVE, progressive])
            jpegs.append(open(path, 'rb').read())
    for progressive in (0, 1):
        cv2.imwrite(path, cv2.cvtColor(image, cv2.COLOR_BGR2GRAY),
                    [cv2.IMWRITE_JPEG_QUALITY, 50, cv2.IMWRITE_JPEG_PROGRESSIVE, progressive])
        jpegs.append(open(path, 'rb').read())
jpegs.append(open(sys.argv[2], 'rb').read())
out = sys.stdout.buffer
for jpeg in jpegs:
    open(path, 'wb').write(jpeg)
    gray = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    rgb = np.ascontiguousarray(cv2.imread(path, cv2.IMREAD_COLOR)[..., ::-1])
    out.write(struct.pack('<III', len(jpeg), gray.shape[1], gray.shape[0]))
    out.write(jpeg + gray.tobytes() + rgb.tobytes())
os.remove(path)
"#;
    let out = opencv(script, &[&fixture_bytes("astronaut.png"), &fixture_bytes("rocket.jpg")]);
    let mut cases = Vec::new();
    let mut rest = &out[..];
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at(n);
        rest = tail;
        head.to_vec()
    };
    for _ in 0..2 * (10 + 2) + 1 {
        let head: Vec<usize> =
            take(12).chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize).collect();
        let (len, width, height) = (head[0], head[1], head[2]);
        let (jpeg, gray, rgb) = (take(len), take(width * height), take(3 * width * height));
        cases.push(Case { jpeg, width, height, gray, rgb });
    }
    assert!(
        take(0).is_empty() && out.len() == cases.iter().map(|c| 12 + c.jpeg.len() + 4 * c.gray.len()).sum()
    );
    cases
}

#[test]
fn gray_and_colour_decoding_match_opencv_byte_for_byte() {
    let cases = cases();
    let mut stream = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let frames = read_frames_with(&case.jpeg, ReadOptions { gray: true, ..ReadOptions::default() });
        let colour = read_frames(&case.jpeg);
        let Pixels::U8(colour) = &colour[0].pixels else { panic!("case {i}: not 8-bit") };
        let want = if colour.len() == case.gray.len() { &case.gray } else { &case.rgb };
        assert!(colour[..] == want[..], "case {i}: colour read differs from cv2.IMREAD_COLOR");
        let Pixels::U8(gray) = &frames[0].pixels else { panic!("case {i}: not 8-bit") };
        assert_eq!((frames[0].width, frames[0].height), (case.width, case.height), "case {i}");
        assert!(gray[..] == case.gray[..], "case {i}: gray differs from cv2.IMREAD_GRAYSCALE");
        let (w, h, rgb) = read_rgb8(&case.jpeg, 1 << 30).unwrap();
        assert_eq!((w, h), (case.width, case.height), "case {i}");
        assert!(rgb == case.rgb, "case {i}: RGB differs from cv2.IMREAD_COLOR");
        stream.extend_from_slice(&case.jpeg);
    }
    // Through a tool: `pad --border 0` passes every pixel through, one frame a JPEG, colour as
    // cv2.IMREAD_COLOR gives it (a gray JPEG stays gray).
    let out = read_frames(&run_ok("pad", "cpu", &["--border", "0"], &stream));
    assert_eq!(out.len(), cases.len());
    for (i, (frame, case)) in out.iter().zip(&cases).enumerate() {
        let Pixels::U8(got) = &frame.pixels else { panic!("case {i}: not 8-bit") };
        let want = if got.len() == case.gray.len() { &case.gray } else { &case.rgb };
        assert!(got[..] == want[..], "case {i}: pad's output differs from cv2.imread");
    }
}

/// Every quality gives `cv2.imwrite`'s bytes, gray and colour: below 25 too, where scaled
/// quantization values pass 255 and both keep them to 255 (baseline JPEG).
#[test]
fn encoding_matches_cv2_imwrite() {
    let (w, h, rgb) = read_rgb8(&fixture_bytes("astronaut.png"), 1 << 30).unwrap();
    let gray: Vec<u8> = rgb.chunks_exact(3).map(|p| p[1]).collect();
    let qualities: Vec<u8> = (1..=100).collect();
    let script = format!(
        r#"
import struct
rgb = np.fromfile(sys.argv[1], np.uint8).reshape({h}, {w}, 3)
gray = np.fromfile(sys.argv[2], np.uint8).reshape({h}, {w})
for q in {qualities:?}:
    for image in (rgb[..., ::-1], gray):
        ok, jpeg = cv2.imencode('.jpg', image, [cv2.IMWRITE_JPEG_QUALITY, q])
        sys.stdout.buffer.write(struct.pack('<I', len(jpeg)) + jpeg.tobytes())
"#
    );
    let out = opencv(&script, &[&rgb, &gray]);
    let mut at = 0;
    for q in qualities {
        for (channels, samples) in [(3, &rgb), (1, &gray)] {
            let len = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            let want = &out[at + 4..at + 4 + len];
            at += 4 + len;
            let ours = encode_jpeg(w, h, channels, samples, q).unwrap();
            assert!(ours == want, "quality {q}, {channels} channels: not cv2.imwrite's bytes");
        }
    }
    assert_eq!(at, out.len());
}

/// A frame with alpha to `.jpg` is refused in one line that says where alpha is kept and how to
/// drop it, and no file is left (docs/formats.md); OpenCV's `imwrite` would drop it silently.
/// The same frame without alpha is written.
#[test]
fn alpha_to_jpeg_is_refused_saying_how_to_drop_it() {
    let dir = temp_dir("jpeg-alpha");
    let out = dir.join("x.jpg");
    let out = out.to_str().unwrap();
    let mut rng = rng();
    for (channels, instead) in
        [(Channels::RgbAlpha, ".png, .tif or .pam"), (Channels::GrayAlpha, ".png or .pam")]
    {
        let input = stream(&[random_colour_frame(&mut rng, 9, 7, channels, 255)]);
        let e = run_err("pad", &["--border", "1", "-o", out], &input, 2);
        assert_eq!(
            e,
            format!(
                "pad: frame 1: a JPEG file cannot hold this 8-bit {} frame: write {instead}, or drop the \
                 alpha first (ImageMagick: -alpha off)\n",
                channels.name()
            )
        );
        assert!(!dir.join("x.jpg").exists(), "{channels:?}: nothing written");
    }
    let rgb = stream(&[random_colour_frame(&mut rng, 9, 7, Channels::Rgb, 255)]);
    run_ok("pad", "cpu", &["--border", "1", "-o", out], &rgb);
    assert!(dir.join("x.jpg").exists());
}
