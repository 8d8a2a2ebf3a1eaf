//! The conversions against OpenCV itself: `$HISTOPIPE_PYTHON` (default `python3`) with cv2 and
//! NumPy, which scripts/test installs into .deps/venv, as tests/tools/opencv.rs runs them. A
//! missing cv2 fails the test. Inputs and cv2's outputs pass as raw files in a temp folder.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::*;

/// A temp folder that one Python run reads its inputs from and writes its outputs to.
struct Peer {
    dir: PathBuf,
}

impl Peer {
    fn new(name: &str) -> Peer {
        let dir = std::env::temp_dir().join(format!("histopipe-colour-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Peer { dir }
    }

    fn put(&self, file: &str, bytes: &[u8]) {
        std::fs::write(self.dir.join(file), bytes).unwrap();
    }

    fn get(&self, file: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(file)).unwrap()
    }

    /// Runs `script` with sys, numpy as np and cv2 imported and `d` the folder's path (with a
    /// trailing separator).
    fn run(&self, script: &str) {
        let exe = std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
        let full = format!("import sys\nimport numpy as np\nimport cv2\nd = sys.stdin.read()\n{script}");
        let mut child = Command::new(&exe)
            .args(["-c", &full])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {exe} ({e}): run scripts/test, which sets up Python and OpenCV")
            });
        let dir = format!("{}{}", self.dir.display(), std::path::MAIN_SEPARATOR);
        child.stdin.take().unwrap().write_all(dir.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("No module named"),
            "OpenCV (cv2) or NumPy cannot be imported by {exe}: run scripts/test, which installs \
             them into .deps/venv and sets $HISTOPIPE_PYTHON to its python\n{stderr}"
        );
        assert!(out.status.success(), "python failed:\n{stderr}");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bytes16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|s| s.to_ne_bytes()).collect()
}

fn samples16(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect()
}

fn bytes32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|s| s.to_ne_bytes()).collect()
}

fn samples32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Interleaved samples of `channels` split into `n` planes of the first `n` channels.
fn planes<T: Copy>(v: &[T], channels: usize, n: usize) -> Vec<Vec<T>> {
    (0..n).map(|c| v.iter().skip(c).step_by(channels).copied().collect()).collect()
}

/// The index of the first difference, to say where a comparison failed.
fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// Reads `{name}` (H x W x ch, R,G,B order), writes cv2's gray, YCrCb of it and RGB of it read as
/// Y,Cr,Cb (`back`), in `{name}.gray`, `{name}.ycc`, `{name}.back`.
const CONVERT: &str = "
def convert(name, dtype, h, w, ch, ycc=True):
    rgb = np.fromfile(d + name, dtype).reshape(h, w, ch)
    bgr = np.ascontiguousarray(rgb[..., [2, 1, 0, 3][:ch]])
    gray = cv2.COLOR_BGR2GRAY if ch == 3 else cv2.COLOR_BGRA2GRAY
    cv2.cvtColor(bgr, gray).tofile(d + name + '.gray')
    if ycc:
        cv2.cvtColor(bgr, cv2.COLOR_BGR2YCrCb).tofile(d + name + '.ycc')
        yc = np.ascontiguousarray(rgb[..., :3])
        np.ascontiguousarray(cv2.cvtColor(yc, cv2.COLOR_YCrCb2BGR)[..., ::-1]).tofile(d + name + '.back')
";

/// [`to_ycrcb_u8`] and [`to_ycrcb_u16`]; [`from_ycrcb_u8`] and [`from_ycrcb_u16`].
type ToYcrcb<T> = fn(&[T], usize, &mut [T], &mut [T], &mut [T]);
type FromYcrcb<T> = fn(&[T], &[T], &[T], &mut [T], usize);

/// Checks our integer conversions of `rgb` against cv2's outputs for it (`peer_*`).
fn check_integer<T: Copy + PartialEq + Default + std::fmt::Debug>(
    what: &str,
    rgb: &[T],
    channels: usize,
    [peer_gray, peer_ycc, peer_back]: [Vec<T>; 3],
    gray: fn(&[T], usize, &mut [T]),
    to: ToYcrcb<T>,
    from: FromYcrcb<T>,
) {
    let n = rgb.len() / channels;
    let mut ours = vec![T::default(); n];
    gray(rgb, channels, &mut ours);
    if let Some(i) = first_difference(&ours, &peer_gray) {
        panic!(
            "{what} gray, pixel {i} {:?}: ours {:?}, cv2 {:?}",
            &rgb[i * channels..][..3],
            ours[i],
            peer_gray[i]
        );
    }
    let (mut y, mut cr, mut cb) = (vec![T::default(); n], vec![T::default(); n], vec![T::default(); n]);
    to(rgb, channels, &mut y, &mut cr, &mut cb);
    for (c, (ours, theirs)) in [y, cr, cb].iter().zip(planes(&peer_ycc, 3, 3)).enumerate() {
        if let Some(i) = first_difference(ours, &theirs) {
            panic!(
                "{what} YCrCb plane {c}, pixel {i} {:?}: ours {:?}, cv2 {:?}",
                &rgb[i * channels..][..3],
                ours[i],
                theirs[i]
            );
        }
    }
    // Backwards: the input's first three channels read as Y, Cr, Cb; alpha must survive.
    let [y, cr, cb]: [Vec<T>; 3] = planes(rgb, channels, 3).try_into().unwrap();
    let mut out = rgb.to_vec();
    from(&y, &cr, &cb, &mut out, channels);
    for (i, (p, q)) in out.chunks_exact(channels).zip(peer_back.chunks_exact(3)).enumerate() {
        assert_eq!(&p[..3], q, "{what} from YCrCb, pixel {i} (Y,Cr,Cb) {:?}", &rgb[i * channels..][..3]);
        assert_eq!(p[3..], rgb[i * channels + 3..(i + 1) * channels], "{what}: alpha kept");
    }
}

#[test]
fn every_8_bit_colour_and_every_ycrcb_triple_as_cv2() {
    // Pixel i of the 4096 x 4096 cube is (i >> 16, i >> 8 & 255, i & 255).
    let cube: Vec<u8> = (0..1u32 << 24).flat_map(|i| [(i >> 16) as u8, (i >> 8) as u8, i as u8]).collect();
    let peer = Peer::new("cube");
    peer.put("cube", &cube);
    peer.run(&format!("{CONVERT}\nconvert('cube', np.uint8, 4096, 4096, 3)\n"));
    let got = ["cube.gray", "cube.ycc", "cube.back"].map(|f| peer.get(f));
    check_integer("8-bit cube", &cube, 3, got, gray_u8, to_ycrcb_u8, from_ycrcb_u8);
}

#[test]
fn random_images_with_alpha_as_cv2() {
    let mut rng = fastrand::Rng::with_seed(11);
    let (h, w) = (389, 613);
    let rgba8: Vec<u8> = (0..h * w * 4).map(|_| rng.u8(..)).collect();
    // Whole range, with the extremes frequent: saturation happens at both ends.
    let rgba16: Vec<u16> = (0..h * w * 4)
        .map(|_| match rng.u8(..8) {
            0 => 0,
            1 => 65535,
            2 => 32768,
            _ => rng.u16(..),
        })
        .collect();
    let peer = Peer::new("random");
    peer.put("rgba8", &rgba8);
    peer.put("rgba16", &bytes16(&rgba16));
    let rgb16: Vec<u16> = rgba16.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    peer.put("rgb16", &bytes16(&rgb16));
    peer.run(&format!(
        "{CONVERT}\nconvert('rgba8', np.uint8, {h}, {w}, 4)\nconvert('rgba16', np.uint16, {h}, {w}, 4)\n\
         convert('rgb16', np.uint16, {h}, {w}, 3)\n"
    ));
    let got = ["rgba8.gray", "rgba8.ycc", "rgba8.back"].map(|f| peer.get(f));
    check_integer("random 8-bit RGBA", &rgba8, 4, got, gray_u8, to_ycrcb_u8, from_ycrcb_u8);
    for (name, v, ch) in [("rgba16", &rgba16, 4), ("rgb16", &rgb16, 3)] {
        let got = [".gray", ".ycc", ".back"].map(|f| samples16(&peer.get(&format!("{name}{f}"))));
        check_integer(name, v, ch, got, gray_u16, to_ycrcb_u16, from_ycrcb_u16);
    }
}

fn check_gray_f32(what: &str, rgb: &[f32], channels: usize, theirs: &[f32]) {
    let mut ours = vec![0f32; rgb.len() / channels];
    gray_f32(rgb, channels, &mut ours);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if let Some(i) = first_difference(&bits(&ours), &bits(theirs)) {
        panic!("{what}, pixel {i} {:?}: ours {:?}, cv2 {:?}", &rgb[i * channels..][..3], ours[i], theirs[i]);
    }
}

#[test]
fn random_float_images_as_cv2() {
    let mut rng = fastrand::Rng::with_seed(5);
    // A width that is not 4 to 7 past a multiple of 8: see gray_f32 on IPP's odd pixels there.
    let (h, w) = (333, 1001);
    let special = [0.0, -0.0, 1.0, -1.0, 0.5, 255.0, 1e-3, -1e6, 3e7, 1e-40];
    let sample = |rng: &mut fastrand::Rng| match rng.u8(..16) {
        0 => special[rng.usize(..special.len())],
        1..=3 => rng.f32(),
        _ => (rng.f32() - 0.3) * 2f32.powi(rng.i32(-10..10)),
    };
    let peer = Peer::new("float");
    let images: Vec<(String, Vec<f32>, usize)> = [3, 4]
        .into_iter()
        .map(|ch| (format!("f{ch}"), (0..h * w * ch).map(|_| sample(&mut rng)).collect(), ch))
        .collect();
    let mut script = CONVERT.to_string();
    for (name, v, ch) in &images {
        peer.put(name, &bytes32(v));
        script.push_str(&format!("convert('{name}', np.float32, {h}, {w}, {ch}, ycc=False)\n"));
    }
    peer.run(&script);
    for (name, v, ch) in &images {
        check_gray_f32(name, v, *ch, &samples32(&peer.get(&format!("{name}.gray"))));
    }
}

#[test]
fn astronaut_as_cv2() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/astronaut.png");
    let (w, h, rgb) = crate::read_rgb8(&std::fs::read(path).unwrap(), 1 << 24).unwrap();
    let peer = Peer::new("astronaut");
    // The decoded pixels are the input to both sides; as 16-bit (v · 257) and as float (v / 255) too.
    let rgb16: Vec<u16> = rgb.iter().map(|&v| u16::from(v) * 257).collect();
    let rgbf: Vec<f32> = rgb.iter().map(|&v| f32::from(v) / 255.0).collect();
    peer.put("a8", &rgb);
    peer.put("a16", &bytes16(&rgb16));
    peer.put("af", &bytes32(&rgbf));
    peer.run(&format!(
        "{CONVERT}\nconvert('a8', np.uint8, {h}, {w}, 3)\nconvert('a16', np.uint16, {h}, {w}, 3)\n\
         convert('af', np.float32, {h}, {w}, 3, ycc=False)\n"
    ));
    let got = ["a8.gray", "a8.ycc", "a8.back"].map(|f| peer.get(f));
    check_integer("astronaut", &rgb, 3, got, gray_u8, to_ycrcb_u8, from_ycrcb_u8);
    let got = ["a16.gray", "a16.ycc", "a16.back"].map(|f| samples16(&peer.get(f)));
    check_integer("astronaut 16-bit", &rgb16, 3, got, gray_u16, to_ycrcb_u16, from_ycrcb_u16);
    check_gray_f32("astronaut float", &rgbf, 3, &samples32(&peer.get("af.gray")));
}

/// Our [`to_lab_u8`] of `rgb` (3 channels) against cv2's `lab` (its L, a, b interleaved).
fn check_lab(what: &str, rgb: &[u8], channels: usize, peer_lab: &[u8]) {
    let n = rgb.len() / channels;
    let (mut l, mut a, mut b) = (vec![0u8; n], vec![0u8; n], vec![0u8; n]);
    to_lab_u8(rgb, channels, &mut l, &mut a, &mut b);
    for (c, (ours, theirs)) in [l, a, b].iter().zip(planes(peer_lab, 3, 3)).enumerate() {
        if let Some(i) = first_difference(ours, &theirs) {
            let count = ours.iter().zip(&theirs).filter(|(x, y)| x != y).count();
            panic!(
                "{what} Lab plane {c}, pixel {i} {:?}: ours {}, cv2 {} ({count} pixels differ)",
                &rgb[i * channels..][..3],
                ours[i],
                theirs[i]
            );
        }
    }
}

/// Our [`from_lab_u8`] of the first three channels of `lab` read as L, a, b against cv2's RGB of
/// them (`peer_rgb`); alpha must survive.
fn check_from_lab(what: &str, lab: &[u8], channels: usize, peer_rgb: &[u8]) {
    let [l, a, b]: [Vec<u8>; 3] = planes(lab, channels, 3).try_into().unwrap();
    let mut out = lab.to_vec();
    from_lab_u8(&l, &a, &b, &mut out, channels);
    let ours: Vec<u8> = out.chunks_exact(channels).flat_map(|p| [p[0], p[1], p[2]]).collect();
    if let Some(i) = first_difference(&ours, peer_rgb) {
        let count = ours.iter().zip(peer_rgb).filter(|(x, y)| x != y).count();
        let p = i / 3;
        panic!(
            "{what} from Lab, pixel {p} (L,a,b) {:?}: ours {:?}, cv2 {:?} ({count} samples differ)",
            &lab[p * channels..][..3],
            &ours[p * 3..][..3],
            &peer_rgb[p * 3..][..3]
        );
    }
    for (p, q) in out.chunks_exact(channels).zip(lab.chunks_exact(channels)) {
        assert_eq!(p[3..], q[3..], "{what}: alpha kept");
    }
}

/// Reads `{name}` (H x W x ch, R,G,B order, 8-bit), writes cv2's Lab of it (`{name}.lab`, L,a,b)
/// and its RGB of the samples read as L,a,b (`{name}.rgb`).
const LAB: &str = "
def lab(name, h, w, ch):
    rgb = np.fromfile(d + name, np.uint8).reshape(h, w, ch)
    bgr = np.ascontiguousarray(rgb[..., [2, 1, 0, 3][:ch]])
    cv2.cvtColor(bgr, cv2.COLOR_BGR2Lab).tofile(d + name + '.lab')
    l = np.ascontiguousarray(rgb[..., :3])
    np.ascontiguousarray(cv2.cvtColor(l, cv2.COLOR_Lab2BGR)[..., ::-1]).tofile(d + name + '.rgb')
";

#[test]
fn every_8_bit_colour_and_every_lab_triple_as_cv2() {
    // Pixel i of the 4096 x 4096 cube is (i >> 16, i >> 8 & 255, i & 255).
    let cube: Vec<u8> = (0..1u32 << 24).flat_map(|i| [(i >> 16) as u8, (i >> 8) as u8, i as u8]).collect();
    let peer = Peer::new("lab-cube");
    peer.put("cube", &cube);
    peer.run(&format!("{LAB}\nlab('cube', 4096, 4096, 3)\n"));
    check_lab("8-bit cube", &cube, 3, &peer.get("cube.lab"));
    check_from_lab("8-bit cube", &cube, 3, &peer.get("cube.rgb"));
}

#[test]
fn random_lab_images_with_alpha_and_astronaut_as_cv2() {
    let mut rng = fastrand::Rng::with_seed(49);
    let (h, w) = (211, 367);
    let rgba: Vec<u8> = (0..h * w * 4).map(|_| rng.u8(..)).collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/astronaut.png");
    let (aw, ah, astronaut) = crate::read_rgb8(&std::fs::read(path).unwrap(), 1 << 24).unwrap();
    let peer = Peer::new("lab-random");
    peer.put("rgba", &rgba);
    peer.put("astronaut", &astronaut);
    peer.run(&format!("{LAB}\nlab('rgba', {h}, {w}, 4)\nlab('astronaut', {ah}, {aw}, 3)\n"));
    check_lab("random RGBA", &rgba, 4, &peer.get("rgba.lab"));
    check_from_lab("random RGBA", &rgba, 4, &peer.get("rgba.rgb"));
    check_lab("astronaut", &astronaut, 3, &peer.get("astronaut.lab"));
    check_from_lab("astronaut", &astronaut, 3, &peer.get("astronaut.rgb"));
}
