//! Writing JPEG with libjpeg-turbo's encoder, set up as OpenCV's `imwrite` sets it up.

use std::panic::{catch_unwind, AssertUnwindSafe};

use mozjpeg::{ColorSpace, Compress};

/// Encodes `width` x `height` pixels of `channels` samples each (1: gray, 3: RGB), row by row, as
/// a JPEG of `quality` (0 to 100, 0 taken as 1, as libjpeg does).
///
/// The settings are OpenCV's for `cv2.imwrite(path, bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])`:
/// libjpeg-turbo's defaults (mozjpeg's own extensions off: no trellis quantization, no
/// progressive scans, no optimized Huffman tables), the standard quantization tables scaled to
/// `quality`, 4:2:0 chroma subsampling, a JFIF header. From quality 25 up the bytes are OpenCV's
/// exactly. Below 25 some scaled quantization values pass 255: OpenCV keeps them to 255
/// (`force_baseline`), the `mozjpeg` crate lets them be up to 32767, so those files differ (and
/// are extended rather than baseline JPEGs).
pub fn encode_jpeg(
    width: usize,
    height: usize,
    channels: usize,
    samples: &[u8],
    quality: u8,
) -> Result<Vec<u8>, String> {
    let space = match channels {
        1 => ColorSpace::JCS_GRAYSCALE,
        3 => ColorSpace::JCS_RGB,
        _ => return Err(format!("JPEG: {channels} channels, not 1 (gray) or 3 (RGB)")),
    };
    // JPEG_MAX_DIMENSION.
    if width == 0 || height == 0 || width > 65500 || height > 65500 {
        return Err(format!("JPEG: a {width}x{height} image; JPEG takes 1 to 65500 pixels a side"));
    }
    if width.checked_mul(height).and_then(|n| n.checked_mul(channels)) != Some(samples.len()) {
        return Err(format!(
            "JPEG: {} samples for a {width}x{height} image of {channels} channels",
            samples.len()
        ));
    }
    if quality > 100 {
        return Err(format!("JPEG: quality {quality}, over 100"));
    }
    let encode = || -> std::io::Result<Vec<u8>> {
        let mut c = Compress::new(space);
        // libjpeg-turbo's defaults: mozjpeg's profile reset (jpeg_set_defaults after
        // JINT_COMPRESS_PROFILE = JCP_FASTEST), which also turns Huffman optimization off.
        c.set_fastest_defaults();
        c.set_optimize_coding(false);
        c.set_size(width, height);
        c.set_quality(quality.max(1) as f32);
        let mut started = c.start_compress(Vec::new())?;
        started.write_scanlines(samples)?;
        started.finish()
    };
    // The `mozjpeg` crate's error manager unwinds with libjpeg's message.
    match catch_unwind(AssertUnwindSafe(encode)) {
        Ok(result) => result.map_err(|e| format!("JPEG: {e}")),
        Err(payload) => {
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the encoder failed".into());
            Err(format!("JPEG: {text}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_refused() {
        assert!(encode_jpeg(2, 2, 2, &[0; 8], 90).unwrap_err().contains("channels"));
        assert!(encode_jpeg(2, 2, 1, &[0; 3], 90).unwrap_err().contains("samples"));
        assert!(encode_jpeg(0, 2, 1, &[], 90).is_err());
        assert!(encode_jpeg(2, 2, 1, &[0; 4], 101).is_err());
    }

    #[test]
    fn encoded_images_decode_close_to_their_samples() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (w, h) = (37, 21);
        // Smooth samples, so quality 95 keeps them within a few levels.
        let rgb: Vec<u8> =
            (0..w * h * 3).map(|i| ((i / 3 % w) * 3 + (i / 3 / w) * 2 + i % 3 * 20) as u8).collect();
        let gray: Vec<u8> = (0..w * h).map(|i| ((i % w) * 6 + rng.usize(0..2)) as u8).collect();
        for (channels, samples) in [(3, &rgb), (1, &gray)] {
            let jpeg = encode_jpeg(w, h, channels, samples, 95).unwrap();
            assert_eq!(&jpeg[..4], b"\xff\xd8\xff\xe0", "starts with SOI and JFIF APP0");
            let space = if channels == 1 { ColorSpace::JCS_GRAYSCALE } else { ColorSpace::JCS_RGB };
            let mut d = mozjpeg::Decompress::new_mem(&jpeg).unwrap().to_colorspace(space).unwrap();
            let back: Vec<u8> = d.read_scanlines().unwrap();
            let worst = back.iter().zip(samples.iter()).map(|(&a, &b)| a.abs_diff(b)).max().unwrap();
            assert!(worst <= 12, "{channels} channels: off by {worst}");
        }
    }
}
