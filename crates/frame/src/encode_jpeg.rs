//! Writing JPEG with libjpeg-turbo's encoder, set up as OpenCV's `imwrite` sets it up.

use std::os::raw::{c_int, c_ulong};
use std::panic::{catch_unwind, AssertUnwindSafe};

use mozjpeg_sys::{
    boolean, jpeg_CreateCompress, jpeg_c_set_int_param, jpeg_compress_struct, jpeg_destroy_compress,
    jpeg_finish_compress, jpeg_mem_dest, jpeg_set_defaults, jpeg_set_quality, jpeg_start_compress,
    jpeg_write_scanlines, JCP_FASTEST, JPEG_LIB_VERSION, JSAMPROW, J_COLOR_SPACE, J_INT_PARAM,
};

use crate::decode::jpeg::{error_manager, LibjpegError};

/// Encodes `width` x `height` pixels of `channels` samples each (1: gray, 3: RGB), row by row, as
/// a JPEG of `quality` (0 to 100, 0 taken as 1, as libjpeg does).
///
/// The settings are OpenCV's for `cv2.imwrite(path, bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])`:
/// libjpeg-turbo's defaults (mozjpeg's own extensions off: no trellis quantization, no
/// progressive scans, no optimized Huffman tables), the standard quantization tables scaled to
/// `quality` and kept to baseline's 8 bits (`jpeg_set_quality`'s `force_baseline`, as OpenCV
/// asks: below quality 25 some values would pass 255), 4:2:0 chroma subsampling, a JFIF header:
/// OpenCV's bytes at every quality. libjpeg's API is called directly, since the `mozjpeg` crate
/// sets the quality without `force_baseline`.
pub fn encode_jpeg(
    width: usize,
    height: usize,
    channels: usize,
    samples: &[u8],
    quality: u8,
) -> Result<Vec<u8>, String> {
    let space = match channels {
        1 => J_COLOR_SPACE::JCS_GRAYSCALE,
        3 => J_COLOR_SPACE::JCS_RGB,
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
    let mut err = error_manager();
    // SAFETY: `jpeg_compress_struct` is a C struct of integers, pointers and optional function
    // pointers, for which all-zero bytes are valid; `jpeg_CreateCompress` then sets it up.
    let mut cinfo: jpeg_compress_struct = unsafe { std::mem::zeroed() };
    cinfo.common.err = &mut err;
    let mut buffer: *mut u8 = std::ptr::null_mut();
    let mut size: c_ulong = 0;
    let stride = width * channels;
    let encoded = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: libjpeg's compression sequence on a struct made here, whose error manager
        // unwinds out of any failing call (caught below); the dimensions were checked above, and
        // every row pointer handed over points at `stride` bytes of `samples`, which outlives
        // the calls. `jpeg_mem_dest` keeps the output in a buffer libjpeg mallocs, read here
        // once compression is finished and freed below.
        unsafe {
            jpeg_CreateCompress(&mut cinfo, JPEG_LIB_VERSION, std::mem::size_of::<jpeg_compress_struct>());
            cinfo.in_color_space = space;
            cinfo.input_components = channels as c_int;
            // libjpeg-turbo's defaults: mozjpeg's profile reset, which also turns Huffman
            // optimization off.
            jpeg_c_set_int_param(&mut cinfo, J_INT_PARAM::JINT_COMPRESS_PROFILE, JCP_FASTEST as c_int);
            jpeg_set_defaults(&mut cinfo);
            cinfo.optimize_coding = 0;
            cinfo.image_width = width as u32;
            cinfo.image_height = height as u32;
            jpeg_set_quality(&mut cinfo, c_int::from(quality.max(1)), 1 as boolean);
            jpeg_mem_dest(&mut cinfo, &mut buffer, &mut size);
            jpeg_start_compress(&mut cinfo, 1);
            // Two MCU rows of 4:2:0 at a time, as many as libjpeg takes in one call.
            let mut rows: [JSAMPROW; 16] = [std::ptr::null(); 16];
            while (cinfo.next_scanline as usize) < height {
                let first = cinfo.next_scanline as usize;
                let n = (height - first).min(rows.len());
                for (i, row) in rows[..n].iter_mut().enumerate() {
                    *row = samples[(first + i) * stride..].as_ptr();
                }
                if jpeg_write_scanlines(&mut cinfo, rows.as_ptr(), n as u32) == 0 {
                    return Err("JPEG: the encoder took no rows".to_string());
                }
            }
            jpeg_finish_compress(&mut cinfo);
            Ok(std::slice::from_raw_parts(buffer, size as usize).to_vec())
        }
    }));
    // SAFETY: destroying a struct made by jpeg_CreateCompress (or still zeroed, where libjpeg
    // frees nothing) is always allowed; `buffer` is null or libjpeg's malloc'd output.
    unsafe {
        jpeg_destroy_compress(&mut cinfo);
        if !buffer.is_null() {
            libc::free(buffer.cast());
        }
    }
    match encoded {
        Ok(result) => result,
        Err(payload) => match payload.downcast::<LibjpegError>() {
            Ok(e) => Err(format!("JPEG: {}", e.0)),
            Err(_) => Err("JPEG: the encoder failed".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mozjpeg::ColorSpace;

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

/// A build with the `simd` feature whose libjpeg-turbo was built where nasm was missing falls
/// back to the portable C silently (mozjpeg-sys only warns), and cargo keeps that build after nasm
/// is installed; this test catches it (scripts/env.sh's `hp_cargo_features` cleans such a build).
#[cfg(all(test, feature = "simd", target_arch = "x86_64"))]
mod simd {
    extern "C" {
        /// libjpeg-turbo's: 1 where its SIMD forward DCT is built in and usable, else 0
        /// (jsimd_none.c, the build without nasm).
        fn jsimd_can_fdct_islow() -> std::os::raw::c_int;
    }

    #[test]
    fn libjpeg_turbo_simd_is_built_in() {
        // SAFETY: a libjpeg-turbo function of no arguments that reads the CPU's features.
        let can = unsafe { jsimd_can_fdct_islow() };
        assert_eq!(
            can, 1,
            "the simd feature is on but libjpeg-turbo was built without nasm: \
             run `cargo clean -p mozjpeg-sys` (scripts/env.sh's hp_cargo_features does) and build again"
        );
    }
}
