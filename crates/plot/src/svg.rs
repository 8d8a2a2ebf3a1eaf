//! Rasters in SVG figures. Drawn through `plotters`' SVG backend, a heatmap would be one `<rect>`
//! per pixel (hundreds of thousands of elements); like matplotlib's SVG output, the figure holds it
//! as one embedded PNG instead. The figure is drawn with a placeholder rectangle where the raster
//! goes, in a colour nothing else uses, so that it keeps its place in the drawing order (under the
//! axes); the placeholder is then replaced by the `<image>`.

use plotters::style::RGBColor;

use crate::error::PlotError;
use crate::heatmap::RgbImage;
use crate::rect::PixelRect;

/// The placeholder's colour.
pub(crate) const PLACEHOLDER: RGBColor = RGBColor(1, 2, 3);

/// `svg` with its placeholder rectangle replaced by `image`, stretched over `rect` (with its
/// pixels kept sharp: a viewer that scales it up must not blur the cells).
pub(crate) fn embed_raster(svg: &str, image: &RgbImage, rect: PixelRect) -> Result<String, PlotError> {
    let missing = || PlotError("internal error: the figure has no place for its raster".into());
    let fill = svg.find("fill=\"#010203\"").ok_or_else(missing)?;
    let start = svg[..fill].rfind("<rect").ok_or_else(missing)?;
    let end = fill + svg[fill..].find("/>").ok_or_else(missing)? + 2;
    let mut png = Vec::new();
    histopipe_frame::write_rgb8(&mut png, image.width, image.height, &image.rgb, true)
        .map_err(|e| PlotError(format!("cannot encode the raster: {e}")))?;
    let element = format!(
        "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" \
         style=\"image-rendering:pixelated\" href=\"data:image/png;base64,{}\"/>",
        rect.x,
        rect.y,
        rect.width,
        rect.height,
        base64(&png)
    );
    Ok(format!("{}{element}{}", &svg[..start], &svg[end..]))
}

/// Standard base64 (RFC 4648 section 4, with padding).
fn base64(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(DIGITS[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_rfc_4648_gives_it() {
        // RFC 4648 section 10.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        assert_eq!(base64(&[0xff, 0xef, 0x00]), "/+8A");
    }

    #[test]
    fn the_placeholder_becomes_an_image() {
        let svg =
            "<svg><rect x=\"0\" y=\"0\" fill=\"#FFFFFF\"/><rect x=\"5\" y=\"6\" width=\"2\" height=\"1\" \
                   opacity=\"1\" fill=\"#010203\" stroke=\"none\"/><line/></svg>";
        let image = RgbImage { width: 2, height: 1, rgb: vec![0, 0, 0, 255, 255, 255] };
        let rect = PixelRect { x: 5, y: 6, width: 2, height: 1 };
        let out = embed_raster(svg, &image, rect).unwrap();
        assert!(
            out.starts_with("<svg><rect x=\"0\" y=\"0\" fill=\"#FFFFFF\"/><image x=\"5\" y=\"6\""),
            "{out}"
        );
        assert!(out.ends_with("\"/><line/></svg>") && out.contains("base64,iVBORw0KGgo"), "{out}");
        assert!(embed_raster("<svg/>", &image, rect).is_err());
    }
}
