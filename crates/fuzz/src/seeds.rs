//! The starting corpus: small valid inputs of every container and variant the reader takes, made
//! here with the formats' encoders (the frame crate's own for PFM, NPY and JPEG, by hand where no
//! encoder writes a variant: big-endian PFM, NPY 2.0 headers, FITS), plus crops of the real images
//! in `tests/fixtures/`, streams of several frames in mixed containers, and raw streams.

use std::io::Cursor;
use std::path::Path;

use histopipe_frame::{
    encode_jpeg, encode_npy, encode_pfm, Depth, FrameReader, Pixels, Raster, RawSpec, ReadOptions,
};
use image::ExtendedColorType;
use jpeg_encoder::{ColorType as JpegColor, SamplingFactor};
use tiff::encoder::{colortype, Compression as TiffCompression};

use crate::input::Input;

/// A named starting input.
#[derive(Debug, Clone)]
pub struct Seed {
    pub name: String,
    pub input: Input,
}

/// Every seed, generated fresh (a few milliseconds). Fixture crops are left out when the fixtures
/// folder is not there (a binary run away from its repository).
pub fn seeds() -> Result<Vec<Seed>, String> {
    let mut images: Vec<(String, Vec<u8>)> = Vec::new();
    netpbm(&mut images);
    png_images(&mut images)?;
    jpeg_images(&mut images)?;
    own_jpegs(&mut images)?;
    tiff_images(&mut images)?;
    float_tiffs(&mut images)?;
    pfm_images(&mut images);
    npy_images(&mut images);
    fits_images(&mut images);
    bmp_images(&mut images)?;
    hostile_shapes(&mut images)?;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    if fixtures.is_dir() {
        fixture_crops(&fixtures, &mut images)?;
    }
    let mut seeds: Vec<Seed> = streams(&images)
        .into_iter()
        .chain(images)
        .map(|(name, bytes)| Seed { name, input: Input::described(bytes) })
        .collect();
    seeds.extend(raw_streams());
    Ok(seeds)
}

/// Samples with some structure (gradients and a checker) and some noise, so encoders make typical
/// streams: `channels` interleaved samples of `bits` bits per pixel.
fn pattern(width: usize, height: usize, channels: usize, bits: u32, salt: u32) -> Vec<u16> {
    let mut state = 0x9e37_79b9u32 ^ salt.wrapping_mul(0x85eb_ca6b);
    let max = (1u32 << bits) - 1;
    (0..width * height * channels)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let (p, c) = (i / channels, i % channels);
            let (x, y) = ((p % width) as u32, (p / width) as u32);
            let smooth =
                (x * 37 + y * 23 + c as u32 * 71) * max / (width as u32 * 37 + height as u32 * 23 + 142);
            let checker = if (x / 4 + y / 4) % 2 == 0 { max / 8 } else { 0 };
            ((smooth + checker + (state % 8)) % (max + 1)) as u16
        })
        .collect()
}

fn bytes8(samples: &[u16]) -> Vec<u8> {
    samples.iter().map(|&s| s as u8).collect()
}

fn bytes16_be(samples: &[u16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_be_bytes()).collect()
}

fn ascii(samples: &[u16]) -> Vec<u8> {
    let lines: Vec<String> = samples
        .chunks(8)
        .map(|row| row.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" "))
        .collect();
    (lines.join("\n") + "\n").into_bytes()
}

fn with_header(header: &str, raster: Vec<u8>) -> Vec<u8> {
    let mut out = header.as_bytes().to_vec();
    out.extend(raster);
    out
}

const GEOMETRY: &str = "# histopipe-geometry 0.5 0 -2 0 0.5 -3 10 8\n";
const HOUGH: &str =
    "# histopipe-hough theta-min=0 theta-max=180 theta-step=1 rho-step=1 rho-offset=5 source=8x6\n";

fn netpbm(out: &mut Vec<(String, Vec<u8>)>) {
    let gray = pattern(5, 4, 1, 8, 1);
    let gray16 = pattern(4, 3, 1, 16, 2).iter().map(|&s| s % 1001).collect::<Vec<_>>();
    let small = pattern(4, 2, 1, 3, 3);
    let rgb = pattern(3, 2, 3, 8, 4);
    let rgb16 = pattern(2, 2, 3, 16, 5);
    out.extend([
        ("pgm-p5-8".into(), with_header("P5\n5 4\n255\n", bytes8(&gray))),
        ("pgm-p5-16".into(), with_header("P5 4 3 1000\n", bytes16_be(&gray16))),
        ("pgm-p5-maxval-7".into(), with_header("P5\n# a comment\n4 2\n7\n", bytes8(&small))),
        ("pgm-p2-8".into(), with_header("P2\n5 4\n255\n", ascii(&gray))),
        ("pgm-p2-16".into(), with_header("P2\n4 3\n1000\n", ascii(&gray16))),
        (
            "pgm-p5-geometry-hough".into(),
            with_header(&format!("P5\n{GEOMETRY}{HOUGH}5 4\n255\n"), bytes8(&gray)),
        ),
        ("pgm-p2-geometry".into(), with_header(&format!("P2 {GEOMETRY}4 2 7\n"), ascii(&small))),
        ("ppm-p6-8".into(), with_header("P6\n3 2\n255\n", bytes8(&rgb))),
        ("ppm-p6-16".into(), with_header("P6\n2 2\n65535\n", bytes16_be(&rgb16))),
        ("ppm-p3".into(), with_header("P3\n3 2\n255\n", ascii(&rgb))),
        (
            "pam-gray-8".into(),
            with_header(
                "P7\nWIDTH 5\nHEIGHT 4\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n",
                bytes8(&gray),
            ),
        ),
        (
            "pam-gray-16-geometry".into(),
            with_header(
                &format!("P7\n{GEOMETRY}WIDTH 4\nHEIGHT 3\nDEPTH 1\nMAXVAL 1000\nENDHDR\n"),
                bytes16_be(&gray16),
            ),
        ),
        (
            "pam-rgb-8".into(),
            with_header("P7\nWIDTH 3\nHEIGHT 2\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n", bytes8(&rgb)),
        ),
        // Headers of frames near 2^20 pixels whose samples are cut short, as from a pipe that
        // closed early: the reader must not hold a whole frame's worth before it has the bytes.
        ("pgm-p5-16-large-truncated".into(), with_header("P5 1000 1000 65535\n", bytes16_be(&gray16))),
        ("ppm-p6-8-large-truncated".into(), with_header("P6 1024 1000 255\n", bytes8(&rgb))),
        ("ppm-p6-16-large-truncated".into(), with_header("P6 1000 1000 65535\n", bytes16_be(&rgb16))),
        (
            "pam-rgb-16".into(),
            with_header(
                "P7\nWIDTH 2\nHEIGHT 2\nDEPTH 3\nMAXVAL 65535\nTUPLTYPE RGB\nENDHDR\n",
                bytes16_be(&rgb16),
            ),
        ),
    ]);
    pbm(out);
    colour_netpbm(out);
}

/// PBM: plain (P1) with comments and spaces between bits or none, packed (P4) rows of a width
/// that is not a multiple of 8 (their padding bits set), and a large packed one cut short.
fn pbm(out: &mut Vec<(String, Vec<u8>)>) {
    let bits = |w: usize, h: usize, salt| -> Vec<u8> {
        pattern(w, h, 1, 1, salt).iter().map(|&b| b as u8).collect()
    };
    let plain = |bits: &[u8], sep: &str| bits.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(sep);
    let packed = |bits: &[u8], w: usize| -> Vec<u8> {
        bits.chunks(w)
            .flat_map(|row| {
                row.chunks(8).map(|b| b.iter().chain([1; 8].iter()).take(8).fold(0, |a, &x| a << 1 | x))
            })
            .collect()
    };
    let (small, wide) = (bits(5, 3, 120), bits(11, 4, 121));
    out.extend([
        ("pbm-p1".into(), with_header("P1\n# a comment\n5 3\n", plain(&small, " ").into_bytes())),
        ("pbm-p1-digits-together".into(), with_header("P1 11 4\n", plain(&wide, "").into_bytes())),
        ("pbm-p4".into(), with_header("P4\n11 4\n", packed(&wide, 11))),
        ("pbm-p4-geometry".into(), with_header(&format!("P4\n{GEOMETRY}5 3\n"), packed(&small, 5))),
        ("pbm-p4-large-truncated".into(), with_header("P4 1000 1000\n", packed(&wide, 11))),
    ]);
}

/// Colour and alpha netpbm rasters: PAM's RGB_ALPHA and GRAYSCALE_ALPHA at 8 and 16 bits, PPM at
/// 16 bits below 65535.
fn colour_netpbm(out: &mut Vec<(String, Vec<u8>)>) {
    let pam = |depth, maxval, tupltype| {
        format!("P7\nWIDTH 3\nHEIGHT 2\nDEPTH {depth}\nMAXVAL {maxval}\nTUPLTYPE {tupltype}\nENDHDR\n")
    };
    let under = |v: Vec<u16>, max: u16| v.iter().map(|&s| s % (max + 1)).collect::<Vec<_>>();
    out.extend([
        ("pam-rgb-alpha-8".into(), with_header(&pam(4, 255, "RGB_ALPHA"), bytes8(&pattern(3, 2, 4, 8, 70)))),
        (
            "pam-rgb-alpha-16".into(),
            with_header(&pam(4, 65535, "RGB_ALPHA"), bytes16_be(&pattern(3, 2, 4, 16, 71))),
        ),
        (
            "pam-gray-alpha-8".into(),
            with_header(&pam(2, 255, "GRAYSCALE_ALPHA"), bytes8(&pattern(3, 2, 2, 8, 72))),
        ),
        (
            "pam-gray-alpha-16-maxval-1000".into(),
            with_header(&pam(2, 1000, "GRAYSCALE_ALPHA"), bytes16_be(&under(pattern(3, 2, 2, 16, 73), 1000))),
        ),
        (
            "pam-rgb-alpha-8-maxval-15".into(),
            with_header(&pam(4, 15, "RGB_ALPHA"), bytes8(&pattern(3, 2, 4, 4, 74))),
        ),
        (
            "ppm-p6-16-maxval-4095".into(),
            with_header("P6\n3 2\n4095\n", bytes16_be(&pattern(3, 2, 3, 12, 75))),
        ),
        ("ppm-p3-16".into(), with_header("P3\n2 2\n65535\n", ascii(&pattern(2, 2, 3, 16, 76)))),
        // A colour frame near 2^20 pixels cut short: read as gray, it is converted in pieces.
        (
            "pam-rgb-alpha-16-large-truncated".into(),
            with_header(
                "P7\nWIDTH 1000\nHEIGHT 1000\nDEPTH 4\nMAXVAL 65535\nTUPLTYPE RGB_ALPHA\nENDHDR\n",
                bytes16_be(&pattern(3, 2, 4, 16, 77)),
            ),
        ),
    ]);
}

/// A PNG by the `png` crate; `palette` is (PLTE, tRNS).
fn png_with(
    width: u32,
    height: u32,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
    palette: Option<(Vec<u8>, Option<Vec<u8>>)>,
    text: bool,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(color);
    enc.set_depth(depth);
    if let Some((plte, trns)) = palette {
        enc.set_palette(plte);
        if let Some(trns) = trns {
            enc.set_trns(trns);
        }
    }
    if text {
        enc.add_text_chunk("Comment".into(), "made by histopipe-fuzz".into()).map_err(|e| e.to_string())?;
    }
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(data).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// Packs samples of `bits` < 8 bits into rows of bytes, as PNG does.
fn pack(samples: &[u16], width: usize, bits: usize) -> Vec<u8> {
    samples
        .chunks(width)
        .flat_map(|row| {
            row.chunks(8 / bits).map(move |group| {
                group.iter().enumerate().fold(0u8, |b, (i, &s)| b | (s as u8) << (8 - bits * (i + 1)))
            })
        })
        .collect()
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32fast::hash(&out[start..]);
    out.extend(crc.to_be_bytes());
}

/// zlib's format with stored (uncompressed) deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if data.is_empty() { vec![&[]] } else { data.chunks(65535).collect() };
    for (i, block) in blocks.iter().enumerate() {
        out.push((i + 1 == blocks.len()) as u8);
        let len = block.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + byte as u32) % 65521;
        b = (b + a) % 65521;
    }
    out.extend((b << 16 | a).to_be_bytes());
    out
}

/// An Adam7-interlaced 8-bit PNG, made by hand: the `png` crate writes no interlaced images.
fn png_interlaced(width: usize, height: usize, channels: usize, samples: &[u16]) -> Vec<u8> {
    const PASSES: [(usize, usize, usize, usize); 7] =
        [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)];
    let mut raw = Vec::new();
    for (x0, y0, dx, dy) in PASSES {
        if x0 >= width || y0 >= height {
            continue;
        }
        for y in (y0..height).step_by(dy) {
            raw.push(0); // filter: none
            for x in (x0..width).step_by(dx) {
                raw.extend(samples[(y * width + x) * channels..][..channels].iter().map(|&s| s as u8));
            }
        }
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend((width as u32).to_be_bytes());
    ihdr.extend((height as u32).to_be_bytes());
    ihdr.extend([8, if channels == 3 { 2 } else { 0 }, 0, 0, 1]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    png_chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    png_chunk(&mut out, b"IEND", &[]);
    out
}

fn png_images(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    use png::{BitDepth as B, ColorType as C};
    let (w, h) = (6, 5);
    let s = |channels, bits, salt| pattern(w, h, channels, bits, salt);
    let plte: Vec<u8> = (0..16u8).flat_map(|i| [i * 16, 255 - i * 16, i * 7]).collect();
    let (w32, h32) = (w as u32, h as u32);
    out.extend([
        ("png-gray-8".into(), png_with(w32, h32, C::Grayscale, B::Eight, &bytes8(&s(1, 8, 10)), None, true)?),
        (
            "png-gray-16".into(),
            png_with(w32, h32, C::Grayscale, B::Sixteen, &bytes16_be(&s(1, 16, 11)), None, false)?,
        ),
        (
            "png-gray-1".into(),
            png_with(w32, h32, C::Grayscale, B::One, &pack(&s(1, 1, 12), w, 1), None, false)?,
        ),
        (
            "png-gray-alpha-8".into(),
            png_with(w32, h32, C::GrayscaleAlpha, B::Eight, &bytes8(&s(2, 8, 13)), None, false)?,
        ),
        ("png-rgb-8".into(), png_with(w32, h32, C::Rgb, B::Eight, &bytes8(&s(3, 8, 14)), None, false)?),
        (
            "png-rgb-16".into(),
            png_with(w32, h32, C::Rgb, B::Sixteen, &bytes16_be(&s(3, 16, 15)), None, false)?,
        ),
        ("png-rgba-8".into(), png_with(w32, h32, C::Rgba, B::Eight, &bytes8(&s(4, 8, 16)), None, false)?),
        (
            "png-rgba-16".into(),
            png_with(w32, h32, C::Rgba, B::Sixteen, &bytes16_be(&s(4, 16, 17)), None, false)?,
        ),
        (
            "png-palette-8".into(),
            png_with(
                w32,
                h32,
                C::Indexed,
                B::Eight,
                &bytes8(&s(1, 4, 18)),
                Some((plte.clone(), None)),
                false,
            )?,
        ),
        (
            "png-palette-4-trns".into(),
            png_with(
                w32,
                h32,
                C::Indexed,
                B::Four,
                &pack(&s(1, 4, 19), w, 4),
                Some((plte, Some(vec![0, 128, 255]))),
                false,
            )?,
        ),
        ("png-interlaced-gray".into(), png_interlaced(w, h, 1, &s(1, 8, 20))),
        // Near 2^20 pixels and a few kilobytes, as flat images compress: for the inputs read with
        // the larger pixel limit, where a decoder's bytes per pixel show above the bound's 1 MiB.
        (
            "png-rgba-16-large-flat".into(),
            png_with(700, 700, C::Rgba, B::Sixteen, &[0x12; 700 * 700 * 8], None, false)?,
        ),
        (
            "png-gray-8-large-flat".into(),
            png_with(1000, 1000, C::Grayscale, B::Eight, &[7; 1000 * 1000], None, false)?,
        ),
        ("png-interlaced-rgb".into(), png_interlaced(9, 10, 3, &pattern(9, 10, 3, 8, 21))),
    ]);
    Ok(())
}

/// A JPEG by `jpeg-encoder`: baseline or progressive, any chroma subsampling, restart markers.
struct JpegRecipe {
    color: JpegColor,
    sampling: SamplingFactor,
    progressive: bool,
    restart: Option<u16>,
    optimized: bool,
}

impl JpegRecipe {
    fn baseline(color: JpegColor) -> JpegRecipe {
        JpegRecipe {
            color,
            sampling: SamplingFactor::R_4_2_0,
            progressive: false,
            restart: None,
            optimized: false,
        }
    }

    fn encode(&self, width: usize, height: usize, data: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut enc = jpeg_encoder::Encoder::new(&mut out, 85);
        enc.set_sampling_factor(self.sampling);
        enc.set_progressive(self.progressive);
        if let Some(interval) = self.restart {
            enc.set_restart_interval(interval);
        }
        enc.set_optimized_huffman_tables(self.optimized);
        enc.encode(data, width as u16, height as u16, self.color).map_err(|e| e.to_string())?;
        Ok(out)
    }
}

fn jpeg_images(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let (w, h) = (20, 18);
    let gray = bytes8(&pattern(w, h, 1, 8, 30));
    let rgb = bytes8(&pattern(w, h, 3, 8, 31));
    let cmyk = bytes8(&pattern(w, h, 4, 8, 32));
    let recipes = [
        ("jpeg-gray-baseline", JpegRecipe::baseline(JpegColor::Luma), &gray),
        ("jpeg-rgb-420", JpegRecipe::baseline(JpegColor::Rgb), &rgb),
        (
            "jpeg-rgb-444",
            JpegRecipe { sampling: SamplingFactor::R_4_4_4, ..JpegRecipe::baseline(JpegColor::Rgb) },
            &rgb,
        ),
        (
            "jpeg-rgb-422",
            JpegRecipe { sampling: SamplingFactor::R_4_2_2, ..JpegRecipe::baseline(JpegColor::Rgb) },
            &rgb,
        ),
        (
            "jpeg-rgb-411",
            JpegRecipe { sampling: SamplingFactor::R_4_1_1, ..JpegRecipe::baseline(JpegColor::Rgb) },
            &rgb,
        ),
        (
            "jpeg-gray-progressive",
            JpegRecipe { progressive: true, ..JpegRecipe::baseline(JpegColor::Luma) },
            &gray,
        ),
        (
            "jpeg-rgb-progressive",
            JpegRecipe { progressive: true, ..JpegRecipe::baseline(JpegColor::Rgb) },
            &rgb,
        ),
        // Not both: jpeg-encoder 0.7.1's optimized tables miss the codes restarts need.
        ("jpeg-rgb-restart", JpegRecipe { restart: Some(2), ..JpegRecipe::baseline(JpegColor::Rgb) }, &rgb),
        ("jpeg-rgb-optimized", JpegRecipe { optimized: true, ..JpegRecipe::baseline(JpegColor::Rgb) }, &rgb),
        (
            "jpeg-rgb-progressive-restart",
            JpegRecipe { progressive: true, restart: Some(1), ..JpegRecipe::baseline(JpegColor::Rgb) },
            &rgb,
        ),
        (
            "jpeg-cmyk",
            JpegRecipe { sampling: SamplingFactor::R_4_4_4, ..JpegRecipe::baseline(JpegColor::Cmyk) },
            &cmyk,
        ),
        ("jpeg-ycck", JpegRecipe::baseline(JpegColor::Ycck), &cmyk),
    ];
    for (name, recipe, data) in recipes {
        out.push((name.into(), recipe.encode(w, h, data)?));
    }
    Ok(())
}

/// A TIFF by the `tiff` crate.
fn tiff_with<C: colortype::ColorType>(
    width: u32,
    height: u32,
    data: &[C::Inner],
    compression: TiffCompression,
    predictor: bool,
) -> Result<Vec<u8>, String>
where
    [C::Inner]: tiff::encoder::TiffValue,
{
    let mut out = Cursor::new(Vec::new());
    let predictor = if predictor { tiff::tags::Predictor::Horizontal } else { tiff::tags::Predictor::None };
    let mut enc = tiff::encoder::TiffEncoder::new(&mut out)
        .map_err(|e| e.to_string())?
        .with_compression(compression)
        .with_predictor(predictor);
    enc.write_image::<C>(width, height, data).map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}

fn tiff_images(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    use colortype::{Gray16, Gray8, GrayI16, RGB16, RGB8, RGBA8};
    use TiffCompression as Z;
    let (w, h) = (7, 6);
    let s8 = |channels, salt| bytes8(&pattern(w as usize, h as usize, channels, 8, salt));
    let s16 = |channels, salt| pattern(w as usize, h as usize, channels, 16, salt);
    let deflate = || Z::Deflate(tiff::encoder::compression::DeflateLevel::Fast);
    let i16s = |salt| s16(1, salt).iter().map(|&v| v as i16).collect::<Vec<i16>>();
    out.extend([
        ("tiff-gray-8".into(), tiff_with::<Gray8>(w, h, &s8(1, 40), Z::Uncompressed, false)?),
        ("tiff-gray-16".into(), tiff_with::<Gray16>(w, h, &s16(1, 41), Z::Uncompressed, false)?),
        ("tiff-rgb-8".into(), tiff_with::<RGB8>(w, h, &s8(3, 42), Z::Uncompressed, false)?),
        ("tiff-rgb-16".into(), tiff_with::<RGB16>(w, h, &s16(3, 43), Z::Uncompressed, false)?),
        ("tiff-rgba-8".into(), tiff_with::<RGBA8>(w, h, &s8(4, 44), Z::Uncompressed, false)?),
        ("tiff-gray-8-lzw".into(), tiff_with::<Gray8>(w, h, &s8(1, 45), Z::Lzw, false)?),
        ("tiff-gray-16-lzw-predictor".into(), tiff_with::<Gray16>(w, h, &s16(1, 46), Z::Lzw, true)?),
        ("tiff-rgb-8-deflate".into(), tiff_with::<RGB8>(w, h, &s8(3, 47), deflate(), false)?),
        ("tiff-gray-8-packbits".into(), tiff_with::<Gray8>(w, h, &s8(1, 48), Z::Packbits, false)?),
        ("tiff-gray-i16-lzw-predictor".into(), tiff_with::<GrayI16>(w, h, &i16s(49), Z::Lzw, true)?),
    ]);
    // Big-endian ("MM"), which the crate does not write: the same little image by hand.
    let mut mm = b"MM\0*\0\0\0\x08".to_vec();
    let entries: [(u16, u16, u32); 8] = [
        (256, 3, 2),
        (257, 3, 2),
        (258, 3, 8),
        (259, 3, 1),
        (262, 3, 1),
        (273, 4, 110),
        (278, 3, 2),
        (279, 4, 4),
    ];
    mm.extend((entries.len() as u16).to_be_bytes());
    for (tag, kind, value) in entries {
        mm.extend(tag.to_be_bytes());
        mm.extend(kind.to_be_bytes());
        mm.extend(1u32.to_be_bytes());
        // A SHORT value sits in the first two bytes of the four.
        let value = if kind == 3 { value << 16 } else { value };
        mm.extend(value.to_be_bytes());
    }
    mm.extend(0u32.to_be_bytes());
    mm.extend([10, 80, 160, 240]);
    out.push(("tiff-gray-8-big-endian".into(), mm));
    Ok(())
}

/// JPEGs by the frame crate's own encoder (libjpeg-turbo, as OpenCV writes them), gray and RGB at
/// qualities from coarse to fine: the writer's output is the reader's input in a pipeline. The
/// encoder makes no progressive JPEGs; jpeg-encoder's progressive ones are in [`jpeg_images`].
fn own_jpegs(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let (w, h) = (17, 13);
    let gray = bytes8(&pattern(w, h, 1, 8, 80));
    let rgb = bytes8(&pattern(w, h, 3, 8, 81));
    for (channels, samples, qualities) in [(1, &gray, [10, 50, 95]), (3, &rgb, [20, 75, 100])] {
        let kind = if channels == 1 { "gray" } else { "rgb" };
        for quality in qualities {
            let jpeg = encode_jpeg(w, h, channels, samples, quality)?;
            out.push((format!("jpeg-own-{kind}-q{quality}"), jpeg));
        }
    }
    Ok(())
}

/// Float samples of every kind a float container holds: a gradient, negatives, zero and minus
/// zero, the largest finite float, infinities and a NaN.
fn floats(width: usize, height: usize, channels: usize, salt: u32) -> Vec<f32> {
    const SPECIAL: [f32; 6] = [-0.0, f32::MAX, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -1.5e-40];
    pattern(width, height, channels, 16, salt)
        .iter()
        .enumerate()
        .map(|(i, &s)| if i % 7 == 3 { SPECIAL[i / 7 % SPECIAL.len()] } else { s as f32 / 4096.0 - 4.0 })
        .collect()
}

fn float_tiffs(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    use colortype::{Gray32Float, RGB32Float};
    let (w, h) = (5, 4);
    out.extend([
        (
            "tiff-gray-f32".into(),
            tiff_with::<Gray32Float>(w, h, &floats(5, 4, 1, 82), TiffCompression::Uncompressed, false)?,
        ),
        (
            "tiff-rgb-f32".into(),
            tiff_with::<RGB32Float>(w, h, &floats(5, 4, 3, 83), TiffCompression::Uncompressed, false)?,
        ),
        (
            "tiff-rgb-f32-lzw".into(),
            tiff_with::<RGB32Float>(w, h, &floats(5, 4, 3, 84), TiffCompression::Lzw, false)?,
        ),
    ]);
    Ok(())
}

/// A PFM written by hand in either byte order (the scale's sign says which: negative for
/// little-endian), rows bottom to top as the format keeps them.
fn pfm(width: usize, height: usize, channels: usize, samples: &[f32], big_endian: bool) -> Vec<u8> {
    let magic = if channels == 3 { "PF" } else { "Pf" };
    let scale = if big_endian { "1.0" } else { "-1.0" };
    let mut out = format!("{magic}\n{width} {height}\n{scale}\n").into_bytes();
    for row in samples.chunks(width * channels).rev() {
        for v in row {
            out.extend(if big_endian { v.to_be_bytes() } else { v.to_le_bytes() });
        }
    }
    out
}

fn pfm_images(out: &mut Vec<(String, Vec<u8>)>) {
    let (gray, rgb) = (floats(4, 3, 1, 85), floats(3, 2, 3, 86));
    out.extend([
        ("pfm-gray-le".into(), encode_pfm(4, 3, 1, &gray)),
        ("pfm-rgb-le".into(), encode_pfm(3, 2, 3, &rgb)),
        ("pfm-gray-be".into(), pfm(4, 3, 1, &gray, true)),
        ("pfm-rgb-be".into(), pfm(3, 2, 3, &rgb, true)),
        // A scale of another size and spaces for newlines: only its sign matters.
        ("pfm-gray-le-spaced".into(), {
            let mut v = b"Pf 2 1 -0.003906".to_vec();
            v.push(b'\n');
            v.extend([1.0f32, -2.0].iter().flat_map(|f| f.to_le_bytes()));
            v
        }),
        (
            "pfm-rgb-large-truncated".into(),
            [&b"PF\n700 700\n-1.0\n"[..], &pfm(3, 2, 3, &rgb, false)[16..]].concat(),
        ),
    ]);
}

/// An `.npy` of format `version` (1 or 2) by hand: the dict padded, as NumPy pads it, so that the
/// samples start at a multiple of 64.
fn npy(version: u8, descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let prefix = if version == 1 { 10 } else { 12 };
    let pad = 64 - (prefix + dict.len() + 1) % 64;
    let header_len = dict.len() + pad + 1;
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((header_len as u16).to_le_bytes());
    } else {
        out.extend((header_len as u32).to_le_bytes());
    }
    out.extend(dict.bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out.extend_from_slice(data);
    out
}

fn npy_images(out: &mut Vec<(String, Vec<u8>)>) {
    let (w, h) = (4, 3);
    let u16s = |c, salt, big: bool| -> Vec<u8> {
        let v = pattern(w, h, c, 16, salt);
        v.iter().flat_map(|s| if big { s.to_be_bytes() } else { s.to_le_bytes() }).collect()
    };
    let f32s = |c, salt, big: bool| -> Vec<u8> {
        floats(w, h, c, salt)
            .iter()
            .flat_map(|s| if big { s.to_be_bytes() } else { s.to_le_bytes() })
            .collect()
    };
    let f64s = |c, salt, big: bool| -> Vec<u8> {
        let v = floats(w, h, c, salt).iter().map(|&s| s as f64 * 1.000_000_1).collect::<Vec<f64>>();
        let mut v = v;
        v[1] = 1e300;
        v.iter().flat_map(|s| if big { s.to_be_bytes() } else { s.to_le_bytes() }).collect()
    };
    let shape = |c: usize| if c == 0 { format!("({h}, {w})") } else { format!("({h}, {w}, {c})") };
    let bools: Vec<u8> = pattern(w, h, 2, 2, 87).iter().map(|&s| s as u8).collect();
    out.extend([
        ("npy-u1-gray".into(), npy(1, "|u1", &shape(0), &bytes8(&pattern(w, h, 1, 8, 88)))),
        ("npy-u1-hw1".into(), npy(1, "|u1", &shape(1), &bytes8(&pattern(w, h, 1, 8, 89)))),
        ("npy-u1-rgb".into(), npy(1, "|u1", &shape(3), &bytes8(&pattern(w, h, 3, 8, 114)))),
        ("npy-u2le-gray".into(), npy(1, "<u2", &shape(0), &u16s(1, 111, false))),
        ("npy-u2be-gray-alpha-v2".into(), npy(2, ">u2", &shape(2), &u16s(2, 112, true))),
        ("npy-f4le-rgba".into(), npy(1, "<f4", &shape(4), &f32s(4, 113, false))),
        ("npy-u2le-rgb".into(), npy(1, "<u2", &shape(3), &u16s(3, 90, false))),
        ("npy-i2le-gray".into(), npy(1, "<i2", &shape(0), &u16s(1, 122, false))),
        ("npy-i2be-rgb".into(), npy(1, ">i2", &shape(3), &u16s(3, 123, true))),
        ("npy-u2be-rgba".into(), npy(1, ">u2", &shape(4), &u16s(4, 91, true))),
        ("npy-f4le-gray-alpha".into(), npy(1, "<f4", &shape(2), &f32s(2, 92, false))),
        ("npy-f4be-gray-v2".into(), npy(2, ">f4", &shape(0), &f32s(1, 93, true))),
        ("npy-f8be-rgb-v2".into(), npy(2, ">f8", &shape(3), &f64s(3, 94, true))),
        ("npy-f8le-gray".into(), npy(1, "<f8", &shape(1), &f64s(1, 95, false))),
        ("npy-b1-gray-alpha".into(), npy(1, "|b1", &shape(2), &bools)),
        ("npy-u1-rgba-v2".into(), npy(2, "|u1", &shape(4), &bytes8(&pattern(w, h, 4, 8, 96)))),
        ("npy-f4le-rgb-own".into(), encode_npy(w, h, 3, &Raster::F32(floats(w, h, 3, 97)))),
        ("npy-f4le-large-truncated".into(), npy(1, "<f4", "(1000, 1000)", &f32s(1, 98, false))),
    ]);
}

/// A FITS primary image by hand: header cards of `cards` (keyword, value) after SIMPLE, then
/// `data` (big-endian), both padded to whole 2880-byte blocks unless `pad_data` is false (astropy
/// forgives a file that ends in its padding).
fn fits(cards: &[(&str, String)], data: &[u8], pad_data: bool) -> Vec<u8> {
    let card = |text: String| format!("{text:<80}").into_bytes();
    let mut out = card(format!("{:<8}= {:>20}", "SIMPLE", "T"));
    for (key, value) in cards {
        out.extend(card(format!("{key:<8}= {value:>20}")));
    }
    out.extend(card("END".into()));
    out.resize(out.len().div_ceil(2880) * 2880, b' ');
    out.extend_from_slice(data);
    if pad_data {
        out.resize(out.len().div_ceil(2880) * 2880, 0);
    }
    out
}

fn fits_images(out: &mut Vec<(String, Vec<u8>)>) {
    let (w, h) = (4, 3);
    let axes = |bitpix: i32, planes: usize| {
        let mut cards = vec![("BITPIX", bitpix.to_string())];
        cards.push(("NAXIS", if planes > 1 { "3" } else { "2" }.to_string()));
        cards.push(("NAXIS1", w.to_string()));
        cards.push(("NAXIS2", h.to_string()));
        if planes > 1 {
            cards.push(("NAXIS3", planes.to_string()));
        }
        cards
    };
    let with = |mut cards: Vec<(&'static str, String)>, more: &[(&'static str, &str)]| {
        cards.extend(more.iter().map(|(k, v)| (*k, v.to_string())));
        cards
    };
    let i16s = |c, salt| pattern(w, h, c, 16, salt).iter().flat_map(|s| s.to_be_bytes()).collect::<Vec<u8>>();
    let f32s = |c, salt| floats(w, h, c, salt).iter().flat_map(|s| s.to_be_bytes()).collect::<Vec<u8>>();
    let f64s =
        |c, salt| floats(w, h, c, salt).iter().flat_map(|&s| (s as f64).to_be_bytes()).collect::<Vec<u8>>();
    let i32s = |c, salt| {
        pattern(w, h, c, 16, salt)
            .iter()
            .flat_map(|&s| (s as i32 * 40503 - 7).to_be_bytes())
            .collect::<Vec<u8>>()
    };
    out.extend([
        ("fits-8-gray".into(), fits(&axes(8, 1), &bytes8(&pattern(w, h, 1, 8, 100)), true)),
        ("fits-8-rgba-planes".into(), fits(&axes(8, 4), &bytes8(&pattern(w, h, 4, 8, 101)), true)),
        (
            "fits-8-rgba-bscale".into(),
            fits(
                &with(axes(8, 4), &[("BSCALE", "0.5"), ("BZERO", "-3")]),
                &bytes8(&pattern(w, h, 4, 8, 102)),
                true,
            ),
        ),
        ("fits-16-bzero-32768".into(), fits(&with(axes(16, 1), &[("BZERO", "32768")]), &i16s(1, 103), true)),
        ("fits-16-signed-rgb".into(), fits(&axes(16, 3), &i16s(3, 104), true)),
        (
            "fits-16-signed-blank-unpadded".into(),
            fits(&with(axes(16, 2), &[("BLANK", "-1")]), &i16s(2, 105), false),
        ),
        (
            "fits-32-bscale-blank".into(),
            fits(&with(axes(32, 1), &[("BSCALE", "0.25"), ("BLANK", "33")]), &i32s(1, 106), true),
        ),
        ("fits-f32-gray".into(), fits(&axes(-32, 1), &f32s(1, 107), true)),
        ("fits-f32-rgb-planes".into(), fits(&axes(-32, 3), &f32s(3, 108), true)),
        ("fits-f64-rgb-planes-unpadded".into(), fits(&axes(-64, 3), &f64s(3, 109), false)),
        (
            "fits-16-large-truncated".into(),
            fits(
                &[
                    ("BITPIX", "16".into()),
                    ("NAXIS", "2".into()),
                    ("NAXIS1", "1000".into()),
                    ("NAXIS2", "1000".into()),
                    ("BZERO", "32768".into()),
                ],
                &i16s(1, 110),
                false,
            ),
        ),
    ]);
}

fn bmp_with(width: u32, height: u32, data: &[u8], color: ExtendedColorType) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    image::codecs::bmp::BmpEncoder::new(&mut out)
        .encode(data, width, height, color)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fn bmp_images(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let (w, h) = (5, 3);
    let s = |channels, salt| bytes8(&pattern(w as usize, h as usize, channels, 8, salt));
    out.extend([
        ("bmp-rgb-24".into(), bmp_with(w, h, &s(3, 50), ExtendedColorType::Rgb8)?),
        ("bmp-rgba-32".into(), bmp_with(w, h, &s(4, 51), ExtendedColorType::Rgba8)?),
        ("bmp-gray-palette".into(), bmp_with(w, h, &s(1, 52), ExtendedColorType::L8)?),
    ]);
    Ok(())
}

/// A BMP with a BITMAPINFOHEADER and a gray palette of `colours`, its pixel data `data` stored with
/// `compression` (1: RLE8, 2: RLE4).
fn bmp_rle(width: i32, height: i32, bits: u16, compression: u32, colours: u32, data: &[u8]) -> Vec<u8> {
    let offset = 14 + 40 + 4 * colours;
    let mut out = b"BM".to_vec();
    out.extend((offset + data.len() as u32).to_le_bytes());
    out.extend([0; 4]);
    out.extend(offset.to_le_bytes());
    for v in [40, width as u32, height as u32] {
        out.extend(v.to_le_bytes());
    }
    out.extend(1u16.to_le_bytes());
    out.extend(bits.to_le_bytes());
    for v in [compression, data.len() as u32, 2835, 2835, colours, 0] {
        out.extend(v.to_le_bytes());
    }
    for i in 0..colours {
        let v = (i * 255 / (colours - 1)) as u8;
        out.extend([v, v, v, 0]);
    }
    out.extend_from_slice(data);
    out
}

/// A little-endian 8-bit gray TIFF of one strip of `strip`, compressed with `compression`, with
/// `tables` as its JPEGTables.
fn tiff_strip(width: u32, height: u32, compression: u16, strip: &[u8], tables: Option<&[u8]>) -> Vec<u8> {
    let mut entries: Vec<(u16, u16, u32, u32)> = vec![
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 1, 8),
        (259, 3, 1, compression as u32),
        (262, 3, 1, 1),
        (273, 4, 1, 0),
        (277, 3, 1, 1),
        (278, 4, 1, height),
        (279, 4, 1, strip.len() as u32),
    ];
    if let Some(t) = tables {
        entries.push((347, 7, t.len() as u32, 0));
    }
    let data_at = 8 + 2 + 12 * entries.len() as u32 + 4;
    let tables_at = data_at + strip.len() as u32;
    let mut out = b"II*\0".to_vec();
    out.extend(8u32.to_le_bytes());
    out.extend((entries.len() as u16).to_le_bytes());
    for (tag, kind, count, value) in entries {
        let value = match tag {
            273 => data_at,
            347 => tables_at,
            _ => value,
        };
        out.extend(tag.to_le_bytes());
        out.extend(kind.to_le_bytes());
        out.extend(count.to_le_bytes());
        out.extend(value.to_le_bytes());
    }
    out.extend(0u32.to_le_bytes());
    out.extend_from_slice(strip);
    out.extend_from_slice(tables.unwrap_or_default());
    out
}

/// A JPEG split as TIFF keeps it with JPEGTables: its DQT and DHT segments between SOI and EOI,
/// and the rest.
fn abbreviated(jpeg: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut tables, mut image) = (b"\xff\xd8".to_vec(), b"\xff\xd8".to_vec());
    let mut pos = 2;
    while pos + 4 <= jpeg.len() && jpeg[pos + 1] != 0xda {
        let len = u16::from_be_bytes([jpeg[pos + 2], jpeg[pos + 3]]) as usize;
        let segment = &jpeg[pos..(pos + 2 + len).min(jpeg.len())];
        if matches!(jpeg[pos + 1], 0xc4 | 0xdb) { &mut tables } else { &mut image }
            .extend_from_slice(segment);
        pos += 2 + len;
    }
    tables.extend_from_slice(b"\xff\xd9");
    image.extend_from_slice(&jpeg[pos.min(jpeg.len())..]);
    (tables, image)
}

/// The shapes of the defects the reader once had: RLE bitmaps that leave pixels blank, TIFFs with
/// JPEG strips, long header comments and JPEGs full of metadata segments.
fn hostile_shapes(out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    // Runs, an absolute run, a delta, end of line, end of bitmap.
    let rle8 = [3, 1, 0, 3, 2, 0, 1, 0, 0, 0, 0, 2, 2, 1, 2, 3, 0, 0, 4, 2, 0, 1];
    out.push(("bmp-rle8".into(), bmp_rle(6, 4, 8, 1, 4, &rle8)));
    let rle4 = [4, 0x12, 0, 0, 0, 4, 0x21, 0x30, 2, 0x33, 0, 0, 0, 2, 1, 1, 3, 0x10, 0, 1];
    out.push(("bmp-rle4".into(), bmp_rle(6, 4, 4, 2, 4, &rle4)));
    let (w, h) = (16, 8);
    let gray = bytes8(&pattern(w, h, 1, 8, 60));
    let jpeg = JpegRecipe::baseline(JpegColor::Luma).encode(w, h, &gray)?;
    out.push(("tiff-gray-8-jpeg".into(), tiff_strip(w as u32, h as u32, 7, &jpeg, None)));
    let (tables, image) = abbreviated(&jpeg);
    out.push(("tiff-gray-8-jpeg-tables".into(), tiff_strip(w as u32, h as u32, 7, &image, Some(&tables))));
    let mut comment = b"P5\n# ".to_vec();
    comment.extend((0..6000).map(|i| b"comment "[i % 8]));
    comment.extend_from_slice(
        b"\n# histopipe-note a long comment came first\n3 2 255\n\x01\x02\x03\x04\x05\x06",
    );
    out.push(("pgm-long-comment".into(), comment));
    let mut many = jpeg[..2].to_vec();
    for (k, marker) in [0xe0u8, 0xe1, 0xe2, 0xed, 0xee, 0xef, 0xfe, 0xe1, 0xe3, 0xf0].iter().enumerate() {
        let body: Vec<u8> = match marker {
            0xe1 => [&b"Exif\0\0"[..], &[k as u8; 120]].concat(),
            0xe2 => [&b"ICC_PROFILE\0\x01\x01"[..], &[7; 200]].concat(),
            0xee => b"Adobe\0\x64\0\0\0\0\x01".to_vec(),
            _ => vec![k as u8; 90],
        };
        many.extend([0xff, *marker]);
        many.extend(((body.len() + 2) as u16).to_be_bytes());
        many.extend(body);
    }
    many.extend_from_slice(&jpeg[2..]);
    out.push(("jpeg-gray-many-app-segments".into(), many));
    Ok(())
}

/// A `width x height` window from the middle of an interleaved image.
fn crop<T: Copy>(
    samples: &[T],
    (width, height): (usize, usize),
    channels: usize,
    (w, h): (usize, usize),
) -> Vec<T> {
    let (x0, y0) = ((width - w) / 2, (height - h) / 2);
    (y0..y0 + h)
        .flat_map(|y| samples[(y * width + x0) * channels..][..w * channels].iter().copied())
        .collect()
}

fn fixture_crops(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let first_frame = |name: &str| -> Result<(usize, usize, Pixels), String> {
        let bytes = read(name)?;
        let mut reader = FrameReader::new(&bytes[..], ReadOptions::default());
        let frame = reader.next_frame().map_err(|e| e.to_string())?.ok_or(format!("{name}: no frame"))?;
        Ok((frame.width, frame.height, frame.pixels))
    };
    let (w, h) = (24, 20);
    for name in ["camera.pgm", "moon.pgm", "chessboard.pgm", "coins.pgm"] {
        let (width, height, pixels) = first_frame(name)?;
        let Pixels::U8(v) = pixels else { continue };
        let gray = crop(&v, (width, height), 1, (w, h));
        let stem = name.trim_end_matches(".pgm");
        out.push((format!("fixture-{stem}-pgm"), with_header(&format!("P5\n{w} {h}\n255\n"), gray.clone())));
        let (w32, h32) = (w as u32, h as u32);
        let encoded = match stem {
            "camera" => {
                png_with(w32, h32, png::ColorType::Grayscale, png::BitDepth::Eight, &gray, None, false)?
            }
            "moon" => JpegRecipe { progressive: true, ..JpegRecipe::baseline(JpegColor::Luma) }
                .encode(w, h, &gray)?,
            "chessboard" => tiff_with::<colortype::Gray8>(w32, h32, &gray, TiffCompression::Lzw, false)?,
            _ => bmp_with(w32, h32, &gray, ExtendedColorType::L8)?,
        };
        out.push((format!("fixture-{stem}-encoded"), encoded));
    }
    let (width, height, pixels) = first_frame("dem16.pgm")?;
    if let Pixels::U16(v) = pixels {
        let dem = crop(&v, (width, height), 1, (w, h));
        out.push(("fixture-dem16-pgm".into(), with_header(&format!("P5 {w} {h} 1076\n"), bytes16_be(&dem))));
        let (w32, h32) = (w as u32, h as u32);
        let png16 = png_with(
            w32,
            h32,
            png::ColorType::Grayscale,
            png::BitDepth::Sixteen,
            &bytes16_be(&dem),
            None,
            false,
        )?;
        out.push(("fixture-dem16-png".into(), png16));
    }
    for (name, progressive) in [("astronaut.png", false), ("rocket.jpg", true)] {
        let img = image::load_from_memory(&read(name)?).map_err(|e| format!("{name}: {e}"))?.to_rgb8();
        let size = (img.width() as usize, img.height() as usize);
        let rgb = crop(img.as_raw(), size, 3, (w, h));
        let stem = name.split('.').next().unwrap_or(name);
        let recipe = JpegRecipe { progressive, ..JpegRecipe::baseline(JpegColor::Rgb) };
        out.push((format!("fixture-{stem}-jpeg"), recipe.encode(w, h, &rgb)?));
        let png = png_with(w as u32, h as u32, png::ColorType::Rgb, png::BitDepth::Eight, &rgb, None, false)?;
        out.push((format!("fixture-{stem}-png"), png));
    }
    Ok(())
}

/// Several frames back to back: mixed containers, whitespace between frames, a JPEG and a TIFF
/// both last and in the middle, the float containers and colour PAMs among the others (a FITS
/// last when its padding is left out).
fn streams(images: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let get = |name: &str| images.iter().find(|(n, _)| n == name).map(|(_, b)| b.clone()).unwrap_or_default();
    let recipes: [&[&str]; 14] = [
        &["pgm-p5-8", "png-gray-8", "bmp-rgb-24", "pam-gray-8", "ppm-p6-8"],
        &["pgm-p2-8", "pgm-p5-16", "png-rgba-8", "pam-rgb-16"],
        &["pgm-p5-geometry-hough", "pgm-p5-geometry-hough", "jpeg-gray-baseline"],
        &["jpeg-rgb-420", "pgm-p5-8"],
        &["tiff-gray-8", "pgm-p5-8"],
        &["png-palette-8", "png-interlaced-gray", "png-gray-16"],
        &["bmp-gray-palette", "pgm-p2-geometry", "tiff-gray-8-lzw"],
        &["pfm-rgb-le", "npy-u1-gray", "pgm-p5-8", "pfm-gray-be"],
        &["fits-8-rgba-planes", "pam-rgb-alpha-8", "jpeg-own-rgb-q75"],
        &["npy-f8be-rgb-v2", "tiff-rgb-f32", "ppm-p6-16-maxval-4095", "npy-b1-gray-alpha"],
        &["pam-gray-alpha-16-maxval-1000", "jpeg-own-gray-q50", "npy-u2be-rgba", "png-rgba-16"],
        &["jpeg-own-rgb-q20", "fits-f32-rgb-planes", "pfm-rgb-be"],
        &["pam-rgb-alpha-16", "npy-f4le-rgb-own", "fits-f64-rgb-planes-unpadded"],
        &[
            "pbm-p4",
            "pbm-p4",
            "pbm-p1",
            "npy-i2be-rgb",
            "pbm-p1-digits-together",
            "tiff-gray-i16-lzw-predictor",
        ],
    ];
    recipes
        .iter()
        .map(|parts| {
            let bytes = parts.iter().enumerate().fold(Vec::new(), |mut acc, (i, name)| {
                if i % 2 == 1 {
                    acc.extend(b"\n \n");
                }
                acc.extend(get(name));
                acc
            });
            (format!("stream-{}", parts.join("+")), bytes)
        })
        .collect()
}

fn raw_streams() -> Vec<Seed> {
    let spec = |width, height, depth| RawSpec { width, height, depth };
    let raw = |name: &str, bytes: Vec<u8>, spec| Seed { name: name.into(), input: Input::raw(bytes, spec) };
    vec![
        raw("raw-4x3-8-three-frames", bytes8(&pattern(4, 9, 1, 8, 60)), spec(4, 3, Depth::U8)),
        raw(
            "raw-3x2-16-two-frames",
            pattern(3, 4, 1, 16, 61).iter().flat_map(|s| s.to_le_bytes()).collect(),
            spec(3, 2, Depth::U16),
        ),
        raw("raw-1x1-8-five-frames", vec![0, 1, 127, 128, 255], spec(1, 1, Depth::U8)),
        raw(
            "raw-5x5-8-trailing-byte",
            bytes8(&pattern(5, 5, 1, 8, 62)).into_iter().chain([9]).collect(),
            spec(5, 5, Depth::U8),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::target::Container;

    #[test]
    fn every_seed_starts_with_a_good_frame_or_is_cut_short_on_purpose() {
        let seeds = seeds().unwrap();
        assert!(seeds.len() > 120, "{} seeds", seeds.len());
        for seed in &seeds {
            for gray in [false, true] {
                let mut reader = FrameReader::new(&seed.input.bytes[..], seed.input.options(1 << 20, gray));
                let first = reader.next_frame().map(|f| f.map(|f| (f.width, f.height)));
                if seed.name.ends_with("-truncated") {
                    assert!(
                        matches!(&first, Err(e) if e.message.contains("truncated")),
                        "{} (gray {gray}): {first:?}",
                        seed.name
                    );
                } else {
                    assert!(matches!(first, Ok(Some(_))), "{} (gray {gray}): {first:?}", seed.name);
                }
            }
        }
    }

    #[test]
    fn every_stream_reads_to_its_end() {
        for seed in seeds().unwrap().iter().filter(|s| s.name.starts_with("stream-")) {
            for gray in [false, true] {
                let mut reader = FrameReader::new(&seed.input.bytes[..], seed.input.options(1 << 20, gray));
                let frames =
                    std::iter::from_fn(|| reader.next_frame().transpose()).collect::<Result<Vec<_>, _>>();
                let parts = seed.name.matches('+').count() + 1;
                assert!(
                    matches!(&frames, Ok(f) if f.len() == parts),
                    "{} (gray {gray}): {frames:?}",
                    seed.name
                );
            }
        }
    }

    #[test]
    fn every_channel_count_and_sample_type_is_seeded_in_colour() {
        let mut seen = HashSet::new();
        for seed in seeds().unwrap().iter().filter(|s| s.input.raw.is_none()) {
            let mut reader = FrameReader::new(&seed.input.bytes[..], seed.input.options(1 << 20, false));
            // The first frame only: the seed's container is the first frame's.
            if let Ok(Some(f)) = reader.next_frame() {
                let sample = match f.pixels {
                    Pixels::U8(_) => 8,
                    Pixels::U16(_) => 16,
                    Pixels::F32(_) => 32,
                };
                seen.insert((Container::sniff(&seed.input.bytes).name(), f.channels.count(), sample));
            }
        }
        for c in [Container::Pam, Container::Npy] {
            for channels in 1..=4 {
                for sample in [8, 16] {
                    assert!(
                        seen.contains(&(c.name(), channels, sample)),
                        "no {}-bit {} of {channels} channels",
                        sample,
                        c.name()
                    );
                }
            }
        }
        for (c, channels) in
            [(Container::Pfm, 1), (Container::Pfm, 3), (Container::Tiff, 1), (Container::Tiff, 3)]
                .into_iter()
                .chain((1..=4).map(|n| (Container::Fits, n)))
                .chain((1..=4).map(|n| (Container::Npy, n)))
        {
            assert!(seen.contains(&(c.name(), channels, 32)), "no float {} of {channels} channels", c.name());
        }
        assert!(seen.contains(&("jpeg", 3, 8)) && seen.contains(&("jpeg", 1, 8)));
    }

    #[test]
    fn every_container_and_fixture_is_seeded() {
        let seeds = seeds().unwrap();
        let containers: Vec<Container> = seeds.iter().map(|s| Container::sniff(&s.input.bytes)).collect();
        for c in [Container::Pgm, Container::PlainPgm, Container::Ppm, Container::PlainPpm, Container::Pam]
            .into_iter()
            .chain([Container::Png, Container::Jpeg, Container::Tiff, Container::Bmp])
            .chain([Container::Pfm, Container::Npy, Container::Fits])
        {
            assert!(containers.contains(&c), "no {} seed", c.name());
        }
        assert!(seeds.iter().any(|s| s.input.raw.is_some()));
        assert!(seeds.iter().any(|s| s.name == "fixture-rocket-jpeg"), "fixture crops are made");
        assert!(seeds.iter().all(|s| s.input.bytes.len() < 8192), "seeds stay small");
    }

    /// The packed and plain PBMs of the same bits are the same frame, not all of one colour.
    #[test]
    fn packed_and_plain_pbm_seeds_agree() {
        let seeds = seeds().unwrap();
        let first = |name: &str| {
            let seed = seeds.iter().find(|s| s.name == name).unwrap();
            FrameReader::new(&seed.input.bytes[..], seed.input.options(1 << 20, false))
                .next_frame()
                .unwrap()
                .unwrap()
        };
        let (packed, plain) = (first("pbm-p4"), first("pbm-p1-digits-together"));
        assert_eq!(packed, plain);
        let Pixels::U8(v) = &packed.pixels else { panic!("{:?}", packed.pixels) };
        assert!(v.contains(&0) && v.contains(&255), "{v:?}");
    }

    #[test]
    fn interlaced_png_decodes_to_its_samples() {
        let samples = pattern(9, 10, 1, 8, 5);
        let png = png_interlaced(9, 10, 1, &samples);
        let img = image::load_from_memory(&png).unwrap().to_luma8();
        assert_eq!(img.into_raw(), bytes8(&samples));
    }

    #[test]
    fn big_endian_tiff_decodes() {
        let mut images = Vec::new();
        tiff_images(&mut images).unwrap();
        let (_, mm) = images.iter().find(|(n, _)| n == "tiff-gray-8-big-endian").unwrap();
        let img = image::load_from_memory(mm).unwrap().to_luma8();
        assert_eq!(img.into_raw(), vec![10, 80, 160, 240]);
    }
}
