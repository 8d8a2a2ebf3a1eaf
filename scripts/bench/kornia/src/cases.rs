//! Each benchmark operation as a kornia-rs user would call it on an 8-bit grey frame, under the
//! operation names of histopipe-bench and scripts/bench/cpu_peers.py, with the benchmark's
//! parameters (scripts/bench/run). Every call allocates its output, as OpenCV's Python calls and
//! histopipe's CPU entries do; where kornia-imgproc 0.2 takes only `f32` images, the conversions
//! to and from `u8` are part of the timed call (and named in the case's `note`).

use kornia_image::{Image, ImageError, ImageSize};
use kornia_imgproc::canny::canny;
use kornia_imgproc::clahe::clahe;
use kornia_imgproc::histogram::{compute_histogram, equalize_hist};
use kornia_imgproc::interpolation::InterpolationMode;
use kornia_imgproc::padding::{spatial_padding, Padding2D, PaddingMode};
use kornia_imgproc::warp::{get_rotation_matrix2d, warp_affine, warp_affine_u8};

/// The benchmark's parameters, shared with every program of scripts/bench/.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// rotate: degrees, counter-clockwise, about ((w - 1) / 2, (h - 1) / 2).
    pub angle: f64,
    /// edges: Canny's hysteresis thresholds (aperture 3, L1 gradient).
    pub low: f64,
    pub high: f64,
}

/// cv2.createCLAHE()'s defaults, which cpu_peers.py and histopipe's `clahe` use.
pub(crate) const CLAHE_CLIP: f64 = 40.0;
pub(crate) const CLAHE_GRID: (usize, usize) = (8, 8);

/// What one call produced: an image, a histogram's counts, or (GPU) an image left on the device,
/// which the case's `fetch` brings back.
pub enum Output {
    Image(Image<u8, 1>),
    Histogram(Vec<usize>),
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    OnDevice,
}

/// One timed case: the benchmark's name for it, the kornia function called, what the call does
/// beyond it, and (GPU) how to fetch the last call's output to the host, untimed.
pub struct Case<'a> {
    pub op: &'static str,
    pub call: &'static str,
    pub note: Option<&'static str>,
    pub run: Box<dyn FnMut() -> Result<Output, ImageError> + 'a>,
    pub fetch: Option<Box<dyn FnMut() -> Result<Output, ImageError> + 'a>>,
}

/// Operations of the benchmark that kornia-imgproc 0.2 has, by the name `--ops` takes.
pub const OPS: [&str; 6] = ["histogram", "equalize", "rotate", "pad", "edges", "clahe"];
/// Operations of the benchmark it lacks: `--ops` accepts them and says so on stderr.
pub const MISSING: [(&str, &str); 1] = [("hough", "no Hough transform")];

pub(crate) fn blank(size: ImageSize) -> Result<Image<u8, 1>, ImageError> {
    Image::from_size_val(size, 0)
}

/// `ceil(sqrt(n))`: the side of the square that holds the frame's diagonal (pad's default).
pub(crate) fn ceil_sqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r * r > n {
        r -= 1;
    }
    while r * r < n {
        r += 1;
    }
    r
}

/// cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), angle, 1), through kornia's own (in f32).
pub(crate) fn rotation(size: ImageSize, angle: f64) -> [f32; 6] {
    let centre = ((size.width as f32 - 1.0) / 2.0, (size.height as f32 - 1.0) / 2.0);
    get_rotation_matrix2d(centre, angle as f32, 1.0)
}

/// The cases of `ops` on `src`, in cpu_peers.py's order.
pub fn cases<'a>(src: &'a Image<u8, 1>, ops: &[String], p: Params) -> Vec<Case<'a>> {
    let size = src.size();
    let (w, h) = (size.width, size.height);
    let wants = |op: &str| ops.iter().any(|o| o == op);
    let mut out: Vec<Case<'a>> = Vec::new();
    if wants("histogram") {
        out.push(Case {
            op: "histogram",
            call: "kornia_imgproc::histogram::compute_histogram(256 bins)",
            note: None,
            run: Box::new(move || {
                let mut hist = vec![0; 256];
                compute_histogram(src, &mut hist, 256)?;
                Ok(Output::Histogram(hist))
            }),
            fetch: None,
        });
    }
    if wants("equalize") {
        out.push(Case {
            op: "equalize",
            call: "kornia_imgproc::histogram::equalize_hist",
            note: None,
            run: Box::new(move || {
                let mut dst = blank(size)?;
                equalize_hist(src, &mut dst)?;
                Ok(Output::Image(dst))
            }),
            fetch: None,
        });
    }
    if wants("rotate") {
        let m = rotation(size, p.angle);
        out.push(Case {
            op: "rotate.nearest",
            call: "kornia_imgproc::warp::warp_affine(Nearest)",
            note: Some("f32 only: u8->f32 (Image::scale_and_cast), warp_affine, f32->u8 (scale_and_cast) timed together"),
            run: Box::new(move || {
                let src_f = src.scale_and_cast::<f32>(1)?;
                let mut dst_f = Image::<f32, 1>::from_size_val(size, 0.0)?;
                warp_affine(&src_f, &mut dst_f, &m, InterpolationMode::Nearest)?;
                Ok(Output::Image(dst_f.scale_and_cast::<u8>(1.0)?))
            }),
            fetch: None,
        });
        out.push(Case {
            op: "rotate.bilinear",
            call: "kornia_imgproc::warp::warp_affine_u8",
            note: None,
            run: Box::new(move || {
                let mut dst = blank(size)?;
                warp_affine_u8(src, &mut dst, &m)?;
                Ok(Output::Image(dst))
            }),
            fetch: None,
        });
    }
    if wants("pad") {
        let d = ceil_sqrt((w * w + h * h) as u64) as usize;
        let (left, top) = ((d - w) / 2, (d - h) / 2);
        out.push(Case {
            op: "pad",
            call: "kornia_imgproc::padding::spatial_padding(Constant 0)",
            note: None,
            run: Box::new(move || {
                let mut dst = blank(ImageSize { width: d, height: d })?;
                let padding = Padding2D { top, bottom: d - h - top, left, right: d - w - left };
                spatial_padding(src, &mut dst, padding, PaddingMode::Constant, [0])?;
                Ok(Output::Image(dst))
            }),
            fetch: None,
        });
    }
    if wants("edges") {
        out.push(Case {
            op: "edges",
            call: "kornia_imgproc::canny::canny(L1)",
            note: None,
            run: Box::new(move || {
                let mut dst = blank(size)?;
                canny(src, &mut dst, p.low, p.high, false)?;
                Ok(Output::Image(dst))
            }),
            fetch: None,
        });
    }
    if wants("clahe") {
        out.push(Case {
            op: "clahe",
            call: "kornia_imgproc::clahe::clahe(clip 40, 8x8 tiles)",
            note: None,
            run: Box::new(move || {
                let mut dst = blank(size)?;
                clahe(src, &mut dst, CLAHE_CLIP, CLAHE_GRID)?;
                Ok(Output::Image(dst))
            }),
            fetch: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagonal_side() {
        assert_eq!(ceil_sqrt(640 * 640 + 651 * 651), 913);
        assert_eq!(ceil_sqrt(9), 3);
        assert_eq!(ceil_sqrt(10), 4);
    }

    #[test]
    fn every_case_runs_on_a_small_frame() {
        let src = Image::new(ImageSize { width: 7, height: 5 }, (0..35u8).map(|v| v * 7).collect()).unwrap();
        let ops: Vec<String> = OPS.iter().map(|s| s.to_string()).collect();
        let mut cases = cases(&src, &ops, Params { angle: 30.0, low: 50.0, high: 150.0 });
        let names: Vec<_> = cases.iter().map(|c| c.op).collect();
        assert_eq!(
            names,
            ["histogram", "equalize", "rotate.nearest", "rotate.bilinear", "pad", "edges", "clahe"]
        );
        for case in &mut cases {
            match (case.run)().unwrap() {
                Output::Histogram(h) => assert_eq!(h.iter().sum::<usize>(), 35),
                Output::Image(img) if case.op == "pad" => assert_eq!((img.width(), img.height()), (9, 9)),
                Output::Image(img) => assert_eq!((img.width(), img.height()), (7, 5)),
                Output::OnDevice => unreachable!("a CPU case"),
            }
        }
    }
}
