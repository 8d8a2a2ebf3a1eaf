//! Hostile and streamed inputs: what the reader allocates for them, how long it spends, and that
//! no frame of a stream is dropped.
//!
//! A counting allocator measures each test's own thread, so the tests can run side by side.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;

use histopipe_frame::{
    read_memory_bound, read_rgb8, Frame, FrameError, FrameErrorKind, FrameReader, Pixels, ReadOptions,
};

struct Counting;

thread_local! {
    static NOW: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn count(add: usize, sub: usize) {
    // Allocations while the thread is being torn down are not counted.
    let _ = NOW.try_with(|now| {
        let v = now.get() + add - sub.min(now.get() + add);
        now.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; the counting touches only
// const-initialized thread-locals, which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size(), 0);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size(), 0);
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(0, layout.size());
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size, layout.size());
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most heap `f` held at once on this thread, beyond what it started with.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(Cell::get) - base)
}

fn read_all(bytes: &[u8], max_pixels: u64) -> Result<Vec<Frame>, FrameError> {
    let mut r = FrameReader::new(bytes, ReadOptions { raw: None, max_pixels, gray: true });
    let mut out = Vec::new();
    while let Some(f) = r.next_frame()? {
        out.push(f);
    }
    Ok(out)
}

/// Reads `bytes` as the fuzzing harness does and checks the memory contract.
fn within_bound(bytes: &[u8], max_pixels: u64) -> Result<Vec<Frame>, FrameError> {
    let (frames, used) = peak(|| read_all(bytes, max_pixels));
    let bound = read_memory_bound(max_pixels, bytes.len());
    assert!(used as u64 <= bound, "{used} bytes held, over the bound of {bound}");
    frames
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn encode(img: image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn noise_rgb(w: u32, h: u32) -> image::RgbImage {
    let mut rng = fastrand::Rng::with_seed(1);
    image::RgbImage::from_fn(w, h, |_, _| image::Rgb([rng.u8(..), rng.u8(..), rng.u8(..)]))
}

/// One page of a TIFF made by [`tiff`]: a single strip.
#[derive(Clone, Copy)]
struct Page<'a> {
    width: u32,
    height: u32,
    bits: u16,
    samples: u16,
    /// SampleFormat: 1 unsigned, 3 floating point.
    format: u16,
    compression: u16,
    data: &'a [u8],
}

impl<'a> Page<'a> {
    fn gray(width: u32, height: u32, bits: u16, data: &'a [u8]) -> Page<'a> {
        Page { width, height, bits, samples: 1, format: 1, compression: 1, data }
    }
}

/// A little-endian TIFF of these pages.
fn tiff(pages: &[Page]) -> Vec<u8> {
    let mut out = b"II*\0".to_vec();
    out.extend_from_slice(&8u32.to_le_bytes());
    for (p, page) in pages.iter().enumerate() {
        let Page { width: w, height: h, bits, samples, format, compression, data } = *page;
        let ifd = out.len() as u32;
        let entries = 12u32;
        let bits_at = ifd + 2 + entries * 12 + 4;
        let formats_at = bits_at + 2 * samples as u32;
        let data_at = formats_at + 2 * samples as u32;
        let photometric = if samples >= 3 { 2 } else { 1 };
        let extra = if samples == 4 || samples == 2 { 2 } else { 0 };
        out.extend_from_slice(&(entries as u16).to_le_bytes());
        let mut e = |tag, kind, count, value| ifd_entry(&mut out, tag, kind, count, value);
        e(256, 4, 1, w);
        e(257, 4, 1, h);
        e(258, 3, samples as u32, if samples == 1 { bits as u32 } else { bits_at });
        e(259, 3, 1, compression as u32);
        e(262, 3, 1, photometric);
        e(273, 4, 1, data_at);
        e(277, 3, 1, samples as u32);
        e(278, 4, 1, h);
        e(279, 4, 1, data.len() as u32);
        e(284, 3, 1, 1);
        e(338, 3, 1, extra);
        e(339, 3, samples as u32, if samples == 1 { format as u32 } else { formats_at });
        let next = if p + 1 < pages.len() { data_at + data.len() as u32 } else { 0 };
        out.extend_from_slice(&next.to_le_bytes());
        for _ in 0..samples {
            out.extend_from_slice(&bits.to_le_bytes());
        }
        for _ in 0..samples {
            out.extend_from_slice(&format.to_le_bytes());
        }
        out.extend_from_slice(data);
    }
    out
}

/// `bytes` with the big-endian u16s at `at` and `at + 2` set to `height` and `width`.
fn patch_jpeg_size(mut bytes: Vec<u8>, height: u16, width: u16) -> Vec<u8> {
    let sof = bytes.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

#[test]
fn colour_netpbm_is_converted_a_piece_at_a_time() {
    // 2^16 pixels at 16 bits: the RGB raster is 384 KiB, the gray frame 128 KiB.
    let (w, h) = (256usize, 256usize);
    let raster: Vec<u8> = (0..w * h * 6).map(|i| (i * 7 % 251) as u8).collect();
    let mut p6 = format!("P6 {w} {h} 65535\n").into_bytes();
    p6.extend_from_slice(&raster);
    let mut pam =
        format!("P7\nWIDTH {w}\nHEIGHT {h}\nDEPTH 3\nMAXVAL 65535\nTUPLTYPE RGB\nENDHDR\n").into_bytes();
    pam.extend_from_slice(&raster);
    for input in [p6, pam] {
        let (frames, used) = peak(|| read_all(&input, 1 << 16).unwrap());
        assert_eq!(frames[0].pixels.depth(), histopipe_frame::Depth::U16);
        let gray = 2 * w * h;
        assert!(used < gray + (128 << 10), "{used} bytes held for a gray frame of {gray}");
    }
}

#[test]
fn every_format_keeps_to_the_memory_bound() {
    let max = 1u64 << 16;
    let rgb = noise_rgb(256, 256);
    let rgba16 = image::DynamicImage::ImageRgba16(image::ImageBuffer::from_fn(256, 256, |x, y| {
        image::Rgba([x as u16 * 257, y as u16 * 255, (x * y) as u16, 65535])
    }));
    let rgb32f = image::DynamicImage::ImageRgb32F(image::ImageBuffer::from_fn(128, 128, |x, y| {
        image::Rgb([x as f32 / 128.0, y as f32 / 128.0, 0.5])
    }));
    let inputs = [
        encode(rgb.clone().into(), image::ImageFormat::Png),
        encode(rgba16.clone(), image::ImageFormat::Png),
        encode(rgb.clone().into(), image::ImageFormat::Jpeg),
        encode(rgb.clone().into(), image::ImageFormat::Bmp),
        encode(rgb.into(), image::ImageFormat::Tiff),
        encode(rgba16, image::ImageFormat::Tiff),
        encode(rgb32f, image::ImageFormat::Tiff),
        fixture("rocket.jpg"),
        fixture("camera.png"),
    ];
    for input in &inputs {
        let frames = within_bound(input, max);
        // Some are too large for 2^16 pixels; those must be refused as such, nothing else.
        if let Err(e) = frames {
            assert_eq!(e.kind, FrameErrorKind::TooLarge, "{e}");
        }
        within_bound(input, 1 << 20).unwrap();
    }
}

#[test]
fn huge_declared_sizes_are_refused_before_allocating() {
    let max = histopipe_frame::DEFAULT_MAX_PIXELS;
    let small =
        image::DynamicImage::ImageRgba16(image::ImageBuffer::from_pixel(1, 1, image::Rgba([1, 2, 3, 4])));
    let mut png = encode(small, image::ImageFormat::Png);
    png[16..24].copy_from_slice(&[0, 0, 0x80, 0, 0, 0, 0x80, 0]);
    let deflated = [0x78, 0x9c, 0x63, 0, 0, 0, 1, 0, 1];
    let cases = [
        ("PNG RGBA16", png),
        (
            "TIFF RGBA16",
            tiff(&[Page {
                width: 32768,
                height: 32768,
                bits: 16,
                samples: 4,
                format: 1,
                compression: 8,
                data: &deflated,
            }]),
        ),
        (
            "TIFF RGBA32F",
            tiff(&[Page {
                width: 16384,
                height: 16384,
                bits: 32,
                samples: 4,
                format: 3,
                compression: 5,
                data: &[0x80, 0, 0x20, 0x10],
            }]),
        ),
        (
            "TIFF uncompressed",
            tiff(&[Page {
                width: 30000,
                height: 30000,
                bits: 8,
                samples: 3,
                format: 1,
                compression: 1,
                data: &[0; 64],
            }]),
        ),
    ];
    for (what, input) in cases {
        let (result, used) = peak(|| read_all(&input, max));
        let e = result.unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::Invalid, "{what}: {e}");
        assert!(used < 1 << 20, "{what}: {used} bytes allocated before refusing");
    }
}

#[test]
fn a_tiny_jpeg_declaring_a_huge_image_is_refused_at_once() {
    let small = encode(noise_rgb(16, 16).into(), image::ImageFormat::Jpeg);
    let bomb = patch_jpeg_size(small, 32768, 32768);
    // "At once" is shown by what was held, not by a clock (which a loaded machine would fail):
    // less than a megabyte, so nothing of the declared image was decoded.
    let (result, used) = peak(|| read_all(&bomb, histopipe_frame::DEFAULT_MAX_PIXELS));
    let e = result.unwrap_err();
    assert!(used < 1 << 20, "{used} bytes");
    assert_eq!(e.kind, FrameErrorKind::Invalid);
    assert!(e.message.contains("cannot hold"), "{e}");
}

#[test]
fn a_truncated_jpeg_is_an_error_not_gray() {
    let rocket = fixture("rocket.jpg");
    let e = read_all(&rocket[..rocket.len() / 2], 1 << 30).unwrap_err();
    assert_eq!(e.kind, FrameErrorKind::Invalid);
    assert!(e.message.starts_with("truncated JPEG"), "{e}");
    // Coded data cut in the middle by a marker (a restart marker, in an image without a restart
    // interval) is an error too, not a frame with gray blocks. (Runs of 1 bits, which no Huffman
    // code is, are not always caught: libjpeg-turbo's fast path decodes them as 0, as OpenCV does.)
    let sos = rocket.windows(2).rposition(|w| w == [0xff, 0xda]).unwrap();
    let cut = sos + 200 + rocket[sos + 200..].iter().position(|&b| b != 0xff).unwrap() + 1;
    let damaged = [&rocket[..cut], b"\xff\xd3", &rocket[cut..]].concat();
    let e = read_all(&damaged, 1 << 30).unwrap_err();
    assert!(e.message.starts_with("bad JPEG image: Corrupt JPEG data"), "{e}");
}

#[test]
fn a_malformed_jpeg_is_an_error_not_a_panic() {
    // The 143-byte input that made zune-jpeg 0.5.15 panic in its IDCT.
    let hex = format!(
        "ffd8ffdb004300{}ffc0000e080001000902011100022100ffc40014000100000000000000000000000000000000\
         ffc40014100100000000000000000000000000000000ffda0008010100003f00ffd9",
        "01".repeat(64)
    );
    let bytes: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    assert_eq!(bytes.len(), 143);
    let e = read_all(&bytes, 1 << 30).unwrap_err();
    assert_eq!(e.kind, FrameErrorKind::Invalid);
    // The same, with coded data, reaches the decoder, which refuses it.
    let mut longer = bytes[..bytes.len() - 2].to_vec();
    longer.extend_from_slice(&[0x55; 16]);
    longer.extend_from_slice(&[0xff, 0xd9]);
    assert_eq!(read_all(&longer, 1 << 30).unwrap_err().kind, FrameErrorKind::Invalid);
}

#[test]
fn library_messages_are_one_line() {
    let e = read_all(b"\xff\xd8", 1 << 30).unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e:?}");
    let e = read_all(b"\x00\x01rest", 1 << 30).unwrap_err();
    assert!(e.message.contains(r"'\x00\x01'"), "{e}");
}

#[test]
fn every_jpeg_of_a_stream_is_a_frame() {
    let rocket = fixture("rocket.jpg");
    let camera = fixture("camera.pgm");
    let frames = within_bound(&[rocket.clone(), rocket.clone()].concat(), 1 << 20).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].pixels, frames[1].pixels);
    let frames = within_bound(&[camera.clone(), rocket.clone(), camera.clone()].concat(), 1 << 20).unwrap();
    let sizes: Vec<(usize, usize)> = frames.iter().map(|f| (f.width, f.height)).collect();
    assert_eq!(sizes, [(512, 512), (640, 427), (512, 512)]);
    // From a pipe, where the reader's buffer holds a little of each image at a time.
    let stream = [rocket.clone(), camera.clone(), rocket].concat();
    let mut r = FrameReader::new(
        std::io::BufReader::with_capacity(1000, &stream[..]),
        ReadOptions { gray: true, ..Default::default() },
    );
    let expected = [&frames[1], &frames[0], &frames[1]];
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(f.pixels, expected[n].pixels, "frame {}", n + 1);
        n += 1;
    }
    assert_eq!(n, 3);
}

#[test]
fn tiff_pages_are_frames_and_what_follows_a_tiff_is_read_or_named() {
    let a: Vec<u8> = (0..12).collect();
    let b = [9u8; 6];
    let two_pages = tiff(&[Page::gray(4, 3, 8, &a), Page::gray(3, 2, 8, &b)]);
    let frames = within_bound(&two_pages, 1 << 16).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].pixels, Pixels::U8(a.clone().into()));
    assert_eq!(frames[1].pixels, Pixels::U8(b.to_vec().into()));
    let camera = fixture("camera.pgm");
    let frames =
        within_bound(&[two_pages.clone(), camera.clone(), two_pages.clone()].concat(), 1 << 20).unwrap();
    assert_eq!(frames.len(), 5);
    let e = read_all(&[two_pages, b"\0\0junk".to_vec()].concat(), 1 << 20).unwrap_err();
    assert_eq!(e.frame, 3);
    assert!(e.message.contains("after the TIFF image of frame 2"), "{e}");
    let encoded = encode(noise_rgb(5, 4).into(), image::ImageFormat::Tiff);
    assert_eq!(within_bound(&[encoded.clone(), encoded].concat(), 1 << 16).unwrap().len(), 2);
}

#[test]
fn rgb8_reading_keeps_to_its_limit() {
    let rocket = fixture("rocket.jpg");
    let ((w, h, rgb), used) = peak(|| read_rgb8(&rocket, 1 << 20).unwrap());
    assert_eq!((w, h, rgb.len()), (640, 427, 640 * 427 * 3));
    assert!(used as u64 <= read_memory_bound(1 << 20, rocket.len()));
    // libjpeg-turbo's RGB, as OpenCV's `imread` gives it (tests/tools/jpeg.rs compares with cv2).
    let mut decoder = mozjpeg::Decompress::new_mem(&rocket).unwrap().rgb().unwrap();
    let expected: Vec<u8> = decoder.read_scanlines().unwrap();
    assert!(rgb == expected);
    assert!(read_rgb8(&rocket, 1000).unwrap_err().contains("--max-pixels"));
}

/// Mangled images of every decoded container keep to the memory bound, and fail their frame
/// rather than the program.
#[test]
fn mutated_images_keep_to_the_bound() {
    let rgb = noise_rgb(24, 16);
    let seeds = [
        encode(rgb.clone().into(), image::ImageFormat::Jpeg),
        encode(rgb.clone().into(), image::ImageFormat::Png),
        encode(rgb.clone().into(), image::ImageFormat::Tiff),
        encode(rgb.into(), image::ImageFormat::Bmp),
        tiff(&[Page::gray(4, 3, 8, &[7; 12]), Page::gray(3, 2, 16, &[9; 12])]),
    ];
    let iterations = std::env::var("HISTOPIPE_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let mut rng = fastrand::Rng::with_seed(0xbad);
    for _ in 0..iterations {
        let mut input = seeds[rng.usize(..seeds.len())].clone();
        for _ in 0..rng.usize(1..6) {
            let i = rng.usize(..input.len());
            match rng.u8(..4) {
                0 | 1 => input[i] = rng.u8(..),
                2 => input.truncate(i.max(2)),
                _ => input.insert(i, [0, 0xff, 0x80, 0x7f][rng.usize(..4)]),
            }
        }
        let _ = within_bound(&input, 1 << 16);
    }
}

/// The error reading `input` ends with; its frames' sizes if it gave frames instead.
fn refused(result: Result<Vec<Frame>, FrameError>) -> FrameError {
    match result {
        Ok(frames) => {
            let sizes: Vec<(usize, usize)> = frames.iter().map(|f| (f.width, f.height)).collect();
            panic!("read as frames of {sizes:?}, not refused")
        }
        Err(e) => e,
    }
}

/// A pipe's view of `bytes`: reads of at most 4 KiB behind a buffer of 4 KiB, so the reader never
/// sees more than a little of the input at once.
fn piped(bytes: &[u8]) -> std::io::BufReader<Trickle<'_>> {
    std::io::BufReader::with_capacity(4096, Trickle(bytes))
}

struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(4096);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Every frame of `input` read from a pipe, and the most heap held meanwhile; the same frames (or
/// error) as reading it from a slice.
fn read_piped(input: &[u8], max_pixels: u64) -> (Result<Vec<Frame>, FrameError>, usize) {
    let (piped_frames, used) = peak(|| -> Result<Vec<Frame>, FrameError> {
        let mut r = FrameReader::new(piped(input), ReadOptions { raw: None, max_pixels, gray: true });
        let mut out = Vec::new();
        while let Some(f) = r.next_frame()? {
            out.push(f);
        }
        Ok(out)
    });
    let sliced = read_all(input, max_pixels);
    match (&piped_frames, &sliced) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.len(), b.len());
            for (a, b) in a.iter().zip(b) {
                assert_eq!((a.width, a.height, &a.pixels), (b.width, b.height, &b.pixels));
            }
        }
        (Err(a), Err(b)) => assert_eq!((a.frame, a.kind, &a.message), (b.frame, b.kind, &b.message)),
        (a, b) => panic!("a pipe gave {a:?}, a slice {b:?}"),
    }
    (piped_frames, used)
}

/// A BMP with a BITMAPINFOHEADER: `palette` gray entries, then `data` at the pixel data offset.
/// `file_size` is what its file header says (its real length if `None`).
fn bmp(
    width: i32,
    height: i32,
    bits: u16,
    compression: u32,
    palette: u32,
    data: &[u8],
    file_size: Option<u32>,
) -> Vec<u8> {
    let offset = 14 + 40 + 4 * palette;
    let len = offset + data.len() as u32;
    let mut out = b"BM".to_vec();
    out.extend_from_slice(&file_size.unwrap_or(len).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&offset.to_le_bytes());
    for v in [40u32, width as u32, height as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    for v in [compression, data.len() as u32, 2835, 2835, palette, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for i in 0..palette {
        let v = (i * 255 / palette.max(2).saturating_sub(1)).min(255) as u8;
        out.extend_from_slice(&[v, v, v, 0]);
    }
    out.extend_from_slice(data);
    out
}

/// A little-endian 8-bit gray TIFF of `width` x `height` in strips of `rows` rows, compressed
/// with `compression`, strip `i` being `data[strips[i]]`: strips may share their bytes.
fn tiff_strips(
    width: u32,
    height: u32,
    rows: u32,
    compression: u16,
    data: &[&[u8]],
    strips: &[usize],
) -> Vec<u8> {
    let n = strips.len() as u32;
    let entries = 10u32;
    let offsets_at = 8 + 2 + entries * 12 + 4;
    let counts_at = offsets_at + 4 * n;
    let mut data_at = vec![counts_at + 4 * n];
    for d in data {
        data_at.push(data_at[data_at.len() - 1] + d.len() as u32);
    }
    let mut out = b"II*\0".to_vec();
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&(entries as u16).to_le_bytes());
    let mut e = |tag, kind, count, value| ifd_entry(&mut out, tag, kind, count, value);
    e(256, 4, 1, width);
    e(257, 4, 1, height);
    e(258, 3, 1, 8);
    e(259, 3, 1, compression as u32);
    e(262, 3, 1, 1);
    e(273, 4, n, if n == 1 { data_at[strips[0]] } else { offsets_at });
    e(277, 3, 1, 1);
    e(278, 4, 1, rows);
    e(279, 4, n, if n == 1 { data[strips[0]].len() as u32 } else { counts_at });
    e(284, 3, 1, 1);
    out.extend_from_slice(&0u32.to_le_bytes());
    if n > 1 {
        for &s in strips {
            out.extend_from_slice(&data_at[s].to_le_bytes());
        }
        for &s in strips {
            out.extend_from_slice(&(data[s].len() as u32).to_le_bytes());
        }
    } else {
        out.resize(data_at[0] as usize, 0);
    }
    for d in data {
        out.extend_from_slice(d);
    }
    out
}

fn gray_jpeg(w: u32, h: u32) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(3);
    let img = image::GrayImage::from_fn(w, h, |x, y| image::Luma([(x * 7 + y * 3) as u8 ^ rng.u8(..16)]));
    encode(img.into(), image::ImageFormat::Jpeg)
}

// Item 4: decompression bombs.

#[test]
fn an_rle_bmp_declaring_more_than_its_bytes_can_code_is_refused_at_once() {
    // 8 bytes of RLE8 data: one run of 4 pixels, then the end of the bitmap, which leaves the
    // rest of a 4096x4096 image blank.
    let rle = [4, 1, 0, 0, 0, 1, 0, 0];
    for (bits, compression) in [(8, 1), (4, 2)] {
        let bomb = bmp(4096, 4096, bits, compression, 2, &rle, None);
        // Refused before the blank rest is made: under a megabyte held (no clock: see above).
        let (result, used) = peak(|| read_all(&bomb, histopipe_frame::DEFAULT_MAX_PIXELS));
        let e = refused(result);
        assert!(used < 1 << 20, "{used} bytes");
        assert_eq!(e.kind, FrameErrorKind::Invalid, "{e}");
        assert!(e.message.contains("RLE"), "{e}");
    }
    // The same run in a small image is a frame, its blank rest black.
    let frames = within_bound(&bmp(8, 2, 8, 1, 2, &rle, None), 1 << 16).unwrap();
    assert_eq!(
        frames[0].pixels,
        Pixels::U8([vec![0; 8], vec![255, 255, 255, 255, 0, 0, 0, 0]].concat().into())
    );
}

#[test]
fn a_tiff_strip_whose_jpeg_is_larger_than_the_strip_is_refused() {
    let strip = gray_jpeg(16, 16);
    let honest = tiff_strips(16, 16, 16, 7, &[&strip], &[0]);
    let frames = within_bound(&honest, 1 << 16).unwrap();
    assert_eq!((frames[0].width, frames[0].height), (16, 16));
    // A real 256x256 JPEG in a strip of 16x16: the decoder would make all of it.
    let big = gray_jpeg(256, 256);
    let e = refused(read_all(&tiff_strips(16, 16, 16, 7, &[&big], &[0]), 1 << 16));
    assert_eq!(e.kind, FrameErrorKind::Invalid, "{e}");
    assert!(e.message.contains("JPEG of 256x256"), "{e}");
    // A strip's JPEG declaring 8192x8192 in 300-odd bytes sized the decoder's buffer.
    let bomb = patch_jpeg_size(strip.clone(), 8192, 8192);
    let (result, used) = peak(|| read_all(&tiff_strips(16, 16, 16, 7, &[&bomb], &[0]), 1 << 16));
    let e = refused(result);
    assert_eq!(e.kind, FrameErrorKind::Invalid, "{e}");
    assert!(used < 1 << 20, "{used} bytes");
}

#[test]
fn tiff_strips_sharing_one_jpeg_cost_no_more_than_their_pixels() {
    let strip = gray_jpeg(16, 16);
    let frames = within_bound(&tiff_strips(16, 16 * 200, 16, 7, &[&strip], &[0; 200]), 1 << 16).unwrap();
    assert_eq!((frames[0].width, frames[0].height), (16, 3200));
    // 200 strips of 16 rows, each pointing at one 128x128 JPEG: 200 times its decoding.
    let big = gray_jpeg(128, 128);
    let (result, used) = peak(|| read_all(&tiff_strips(16, 16 * 200, 16, 7, &[&big], &[0; 200]), 1 << 16));
    assert_eq!(refused(result).kind, FrameErrorKind::Invalid);
    assert!(used < 1 << 20, "{used} bytes");
}

// Item 5: metadata from a pipe is not held.

#[test]
fn a_long_pgm_comment_is_skipped_as_it_streams_by() {
    let mut input = b"P5\n#".to_vec();
    input.resize(input.len() + (16 << 20), b'x');
    input.extend_from_slice(b"\n# histopipe-note kept\n2 1 255\n\x01\x02");
    let (frames, used) = read_piped(&input, 1 << 16);
    let frames = frames.unwrap();
    assert_eq!(frames[0].pixels, Pixels::U8(vec![1, 2].into()));
    assert_eq!(frames[0].annotations[0].value, "kept");
    assert!(used < 1 << 20, "{used} bytes held for a comment");
    // Annotations are kept, a few of them: a stream of distinct keys is not held whole.
    let mut many = b"P5\n".to_vec();
    for k in 0..100_000 {
        many.extend_from_slice(format!("# histopipe-k{k} {}\n", "v".repeat(100)).as_bytes());
    }
    many.extend_from_slice(b"1 1 255\n\0");
    let (result, used) = read_piped(&many, 1 << 16);
    assert!(used < 1 << 20, "{used} bytes held for annotations");
    let e = refused(result);
    assert!(e.message.contains("annotations"), "{e}");
}

#[test]
fn jpeg_app_segments_are_skipped_as_they_stream_by() {
    let small = encode(noise_rgb(16, 16).into(), image::ImageFormat::Jpeg);
    let mut input = small[..2].to_vec();
    for _ in 0..256 {
        input.extend_from_slice(&[0xff, 0xe1, 0xff, 0xff]);
        input.extend_from_slice(b"Exif\0\0");
        input.resize(input.len() + 65533 - 6, 0x41);
    }
    input.extend_from_slice(&small[2..]);
    let (frames, used) = read_piped(&input, 1 << 16);
    let expected = read_all(&small, 1 << 16).unwrap();
    assert_eq!(frames.unwrap()[0].pixels, expected[0].pixels);
    assert!(used < 1 << 20, "{used} bytes held for 16 MiB of APP1 segments");
}

#[test]
fn png_ancillary_chunks_are_skipped_as_they_stream_by() {
    let small = encode(noise_rgb(16, 16).into(), image::ImageFormat::Png);
    let mut input = small[..33].to_vec();
    for _ in 0..256 {
        input.extend_from_slice(&65536u32.to_be_bytes());
        input.extend_from_slice(b"zzZz");
        input.resize(input.len() + 65536 + 4, 0x41);
    }
    input.extend_from_slice(&small[33..]);
    let (frames, used) = read_piped(&input, 1 << 16);
    let expected = read_all(&small, 1 << 16).unwrap();
    assert_eq!(frames.unwrap()[0].pixels, expected[0].pixels);
    assert!(used < 1 << 20, "{used} bytes held for 16 MiB of ancillary chunks");
}

#[test]
fn a_bmp_file_size_past_its_pixels_is_skipped_not_held() {
    // A 2x1 8-bit BMP saying it is 16 MiB long: what follows its pixels is read past.
    let mut input = bmp(2, 1, 8, 0, 2, &[1, 0, 0, 0], Some(16 << 20));
    input.resize(16 << 20, 0);
    input.extend_from_slice(b"P5 1 1 255\n\x07");
    let (frames, used) = read_piped(&input, 1 << 16);
    let frames = frames.unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].pixels, Pixels::U8(vec![255, 0].into()));
    assert!(used < 1 << 20, "{used} bytes held for a 2x1 BMP");
}

// Item 6: nothing is allocated for samples that have not arrived.

#[test]
fn a_tiny_header_declaring_a_huge_frame_allocates_as_bytes_arrive() {
    let max = histopipe_frame::DEFAULT_MAX_PIXELS;
    let cases: [&[u8]; 8] = [
        b"P5 32768 32768 255\n\x01\x02\x03",
        b"P4 32768 32768\n\x01\x02\x03",
        b"P1 32768 32768 1 0 1",
        b"P5 32768 16384 65535\n\x01\x02\x03",
        b"P2 32768 32768 255 1 2 3",
        b"P6 32768 32768 255\n\x01\x02\x03",
        b"P3 32768 32768 255 1 2 3",
        b"P7\nWIDTH 32768\nHEIGHT 32768\nDEPTH 1\nMAXVAL 255\nENDHDR\n\x01\x02\x03",
    ];
    for input in cases {
        let (result, used) = read_piped(input, max);
        let e = refused(result);
        assert!(e.message.contains("truncated pixel data"), "{e}");
        assert!(used < 2 << 20, "{used} bytes allocated for {:?}", shown(input));
    }
    let spec = histopipe_frame::RawSpec::parse("32768x32768").unwrap();
    let (result, used) = peak(|| {
        FrameReader::new(piped(b"\x01\x02\x03"), ReadOptions { raw: Some(spec), max_pixels: max, gray: true })
            .next_frame()
    });
    assert!(result.unwrap_err().message.contains("raw stream ends 3 bytes into a frame"));
    assert!(used < 2 << 20, "{used} bytes allocated for a raw frame");
    for input in [&b"P3 32768 32768 255 1 2 3"[..], b"P6 32768 32768 255\n\x01\x02\x03"] {
        let (result, used) = peak(|| read_rgb8(input, max));
        assert!(result.unwrap_err().contains("truncated"));
        assert!(used < 2 << 20, "{used} bytes allocated for {:?} to draw on", shown(input));
    }
}

#[test]
fn frames_read_from_a_pipe_in_pieces_are_whole() {
    // Over the first piece the reader reads before it commits the frame's memory.
    let (w, h) = (3000usize, 1500usize);
    for (maxval, bytes) in [(255, 1), (65535, 2)] {
        let raster: Vec<u8> = (0..w * h * bytes).map(|i| (i * 31 % 253) as u8).collect();
        let mut input = format!("P5 {w} {h} {maxval}\n").into_bytes();
        input.extend_from_slice(&raster);
        let (frames, _) = read_piped(&[input.clone(), input].concat(), 1 << 24);
        let frames = frames.unwrap();
        assert_eq!(frames.len(), 2);
        match &frames[1].pixels {
            Pixels::U8(v) => assert_eq!(&v[..], &raster[..]),
            Pixels::U16(v) => assert!(v
                .iter()
                .zip(raster.chunks_exact(2))
                .all(|(s, b)| *s == u16::from_be_bytes([b[0], b[1]]))),
            Pixels::F32(_) => panic!("PGM is integer"),
        }
    }
}

fn shown(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// One little-endian TIFF directory entry: tag, field type, count, value (or offset).
fn ifd_entry(out: &mut Vec<u8>, tag: u16, kind: u16, count: u32, value: u32) {
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&value.to_le_bytes());
}
