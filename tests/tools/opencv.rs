//! OpenCV as the reference: runs `$HISTOPIPE_PYTHON` (default `python3`) with cv2 and NumPy, which
//! scripts/test installs into .deps/venv. A missing cv2 fails the test: CI always has it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use histopipe_frame::{Frame, Pixels};

use crate::common::opencv;

/// A fresh path in the temp directory, unique to this process, this call and `name` (tests run in
/// parallel threads of one process).
pub fn temp_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("histopipe-test-{}-{k}-{name}", std::process::id()))
}

/// Runs a Python script with cv2 and numpy imported, `input` on its stdin; returns its stdout.
/// Inputs that hold paths separate their fields with tabs: a temp folder may have spaces. The
/// script runs through [`opencv`], `input` passed as its file and read back as `sys.stdin`.
pub fn python(script: &str, input: &str) -> String {
    let script = format!("import io\nsys.stdin = io.StringIO(open(sys.argv[1]).read())\n{script}");
    String::from_utf8(opencv(&script, &[input.as_bytes()])).unwrap()
}

/// Checks a tool's CSV table `csv` of the float TIFF `tif`, written with `args`, by `check`, a
/// Python snippet (pandas as pd, NumPy, cv2) that prints ok: it runs with `a` the TIFF's samples
/// (float64), `fin` the finite ones, `r` the range the tool bins (`--range LO:HI` of `args`,
/// else the finite samples' extremes) and `csv` the table's path.
pub fn check_float_table(tif: &Path, csv: &Path, args: &[&str], check: &str) {
    let range = match args.iter().position(|a| *a == "--range") {
        Some(i) => format!("({})", args[i + 1].replace(':', ",")),
        None => "None".into(),
    };
    let script = format!(
        "import pandas as pd\n\
         tif, csv = sys.stdin.read().split('\\t')\n\
         a = cv2.imread(tif, cv2.IMREAD_UNCHANGED).astype(np.float64)\n\
         fin = a[np.isfinite(a)]\n\
         r = {range} or (fin.min(), fin.max())\n\
         {check}"
    );
    let input = format!("{}\t{}", tif.display(), csv.display());
    assert_eq!(python(&script, &input).trim(), "ok", "{args:?}");
}

/// Writes an 8-bit frame's samples, headerless, to a temp file; returns its path.
pub fn write_samples(frame: &Frame, name: &str) -> PathBuf {
    let Pixels::U8(v) = &frame.pixels else { panic!("OpenCV comparisons take 8-bit frames") };
    let path = temp_path(name);
    std::fs::write(&path, v).unwrap();
    path
}

/// One `cv2.Canny` call.
pub struct CannyCase<'a> {
    pub frame: &'a Frame,
    pub low: f64,
    pub high: f64,
    pub l2: bool,
}

/// `cv2.Canny(img, low, high, apertureSize=3, L2gradient=l2)` for every case, in one Python run.
pub fn canny(cases: &[CannyCase]) -> Vec<Vec<u8>> {
    let mut input = String::new();
    let mut outs = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let src = write_samples(c.frame, &format!("canny-in-{i}"));
        let out = temp_path(&format!("canny-out-{i}"));
        input.push_str(&format!(
            "{}\t{}\t{}\t{:?}\t{:?}\t{}\t{}\n",
            src.display(),
            c.frame.width,
            c.frame.height,
            c.low,
            c.high,
            c.l2 as u8,
            out.display()
        ));
        outs.push((src, out));
    }
    python(
        "for line in sys.stdin:\n\
         \x20   src, w, h, lo, hi, l2, out = line.rstrip('\\n').split('\\t')\n\
         \x20   img = np.fromfile(src, np.uint8).reshape(int(h), int(w))\n\
         \x20   cv2.Canny(img, float(lo), float(hi), apertureSize=3, L2gradient=l2 == '1').tofile(out)\n",
        &input,
    );
    outs.into_iter()
        .map(|(src, out)| {
            let v = std::fs::read(&out).unwrap();
            let _ = std::fs::remove_file(src);
            let _ = std::fs::remove_file(out);
            v
        })
        .collect()
}

/// A line as OpenCV reports it: rho, theta (float32) and votes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CvLine {
    pub rho: f32,
    pub theta: f32,
    pub votes: u32,
}

/// `cv2.HoughLines(edges, rho, theta, threshold, min_theta=.., max_theta=..)`, with the votes of
/// `cv2.HoughLinesWithAccumulator` (checked to give the same lines in the same order).
pub fn hough_lines(
    edges: &Frame,
    rho: f64,
    theta: f64,
    threshold: u32,
    min_theta: f64,
    max_theta: f64,
) -> Vec<CvLine> {
    let src = write_samples(edges, "hough-in");
    let out = python(
        "src, w, h, rho, theta, thr, mn, mx = sys.stdin.read().split('\\t')\n\
         e = np.fromfile(src, np.uint8).reshape(int(h), int(w))\n\
         args = (e, float(rho), float(theta), int(thr))\n\
         kw = dict(min_theta=float(mn), max_theta=float(mx))\n\
         a = cv2.HoughLines(*args, **kw)\n\
         b = cv2.HoughLinesWithAccumulator(*args, **kw)\n\
         a = np.zeros((0, 2), np.float32) if a is None else a.reshape(-1, 2)\n\
         b = np.zeros((0, 3), np.float32) if b is None else b.reshape(-1, 3)\n\
         assert (a == b[:, :2]).all(), 'HoughLines and HoughLinesWithAccumulator disagree'\n\
         for r, t, v in b: print(repr(float(r)), repr(float(t)), int(v))\n",
        &format!(
            "{}\t{}\t{}\t{rho:?}\t{theta:?}\t{threshold}\t{min_theta:?}\t{max_theta:?}",
            src.display(),
            edges.width,
            edges.height
        ),
    );
    let _ = std::fs::remove_file(src);
    out.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            CvLine {
                rho: f[0].parse::<f64>().unwrap() as f32,
                theta: f[1].parse::<f64>().unwrap() as f32,
                votes: f[2].parse().unwrap(),
            }
        })
        .collect()
}

/// How OpenCV's recipe equalizes a colour frame ([`colour_recipe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColourRecipe {
    /// `ycc = cvtColor(bgr, COLOR_BGR2YCrCb)`, Y equalized, `cvtColor(ycc, COLOR_YCrCb2BGR)`.
    Luma,
    /// B, G and R equalized each on its own.
    Each,
}

/// OpenCV's recipe for each colour frame (RGB or RGBA, 8- or 16-bit), as the samples of our frame
/// of the same channels: `equalize[i]`, a Python expression of the 2-D array `g` (for example
/// `cv2.equalizeHist(g)`), equalizes frame i's Y or channels, as `recipe` says. Alpha, which
/// OpenCV's recipe has no place for, is the input's. All in one Python process.
pub fn colour_recipe(frames: &[Frame], recipe: ColourRecipe, equalize: &[String]) -> Vec<Pixels> {
    assert_eq!(frames.len(), equalize.len(), "one expression a frame");
    let params: Vec<String> = frames
        .iter()
        .zip(equalize)
        .map(|(f, e)| {
            let bits = 8 * f.depth().bytes();
            format!("({}, {}, {}, {bits}, {:?})", f.height, f.width, f.channels.count(), e)
        })
        .collect();
    let script = format!(
        "for path, (h, w, n, bits, f) in zip(sys.argv[1:], [{}]):\n    \
         t = np.uint8 if bits == 8 else np.dtype('<u2')\n    \
         a = np.fromfile(path, t).reshape(h, w, n)\n    \
         bgr = np.ascontiguousarray(a[..., 2::-1])\n    \
         eq = eval('lambda g: ' + f)\n    \
         if {luma}:\n        \
             ycc = cv2.cvtColor(bgr, cv2.COLOR_BGR2YCrCb)\n        \
             ycc[..., 0] = eq(np.ascontiguousarray(ycc[..., 0]))\n        \
             out = cv2.cvtColor(ycc, cv2.COLOR_YCrCb2BGR)\n    \
         else:\n        \
             out = cv2.merge([eq(np.ascontiguousarray(c)) for c in cv2.split(bgr)])\n    \
         res = a.copy()\n    \
         res[..., :3] = out[..., ::-1]\n    \
         sys.stdout.buffer.write(res.astype(t).tobytes())\n",
        params.join(", "),
        luma = if recipe == ColourRecipe::Luma { "True" } else { "False" },
    );
    let inputs: Vec<Vec<u8>> = frames.iter().map(|f| sample_bytes(&f.pixels)).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let out = opencv(&script, &refs);
    let mut rest = &out[..];
    frames
        .iter()
        .map(|f| {
            let (this, next) = rest.split_at(f.pixels.len() * f.depth().bytes());
            rest = next;
            pixels_like(&f.pixels, this)
        })
        .collect()
}

/// Integer samples as OpenCV reads and writes them: bytes, or 16-bit little-endian.
pub fn sample_bytes(pixels: &Pixels) -> Vec<u8> {
    match pixels {
        Pixels::U8(v) => v.to_vec(),
        Pixels::U16(v) => v.iter().flat_map(|s| s.to_le_bytes()).collect(),
        Pixels::F32(_) => panic!("OpenCV comparisons here take integer samples"),
    }
}

/// `bytes` ([`sample_bytes`]) as samples of `like`'s width.
pub fn pixels_like(like: &Pixels, bytes: &[u8]) -> Pixels {
    match like {
        Pixels::U8(_) => Pixels::U8(bytes.to_vec().into()),
        Pixels::U16(_) => {
            Pixels::U16(bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect())
        }
        Pixels::F32(_) => panic!("OpenCV comparisons here take integer samples"),
    }
}
