//! Signed 16-bit samples where a container holds them (issue 49, 6): NPY `<i2` and `>i2` as NumPy
//! saves them, TIFF of SampleFormat 2 as OpenCV writes it (CV_16S), FITS of BITPIX 16 without
//! BZERO as astropy writes it. Each is a float frame of the very values NumPy, `cv2.imread` and
//! `fits.getdata` hold (-5 stays -5.0; every int16 is exact in float32), so the tools that take
//! float frames give NumPy's answers on them; a FITS of BZERO 32768 (unsigned) stays 16-bit.

use histopipe_frame::{Channels, Pixels};

use crate::common::*;

/// `h x w` random int16 values, the extremes, 0 and -1 among them.
fn values(rng: &mut fastrand::Rng, w: usize, h: usize) -> Vec<i16> {
    let mut v: Vec<i16> = (0..w * h).map(|_| rng.i16(..)).collect();
    v[..5].copy_from_slice(&[i16::MIN, i16::MAX, 0, -1, -5]);
    rng.shuffle(&mut v);
    v
}

fn le_bytes(v: &[i16]) -> Vec<u8> {
    v.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// Splits what a snippet wrote as (8-byte little-endian length, bytes) records.
fn records(mut out: &[u8]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    while !out.is_empty() {
        let n = u64::from_le_bytes(out[..8].try_into().unwrap()) as usize;
        parts.push(out[8..8 + n].to_vec());
        out = &out[8 + n..];
    }
    parts
}

/// Python that writes its list `outs` as [`records`].
const WRITE_RECORDS: &str =
    "for o in outs:\n    sys.stdout.buffer.write(len(o).to_bytes(8, 'little') + bytes(o))\n";

/// The `h x w` int16 array `v` in each container, as the peers write it, named; each checked to
/// read back (by the peer) as the same array.
fn files(v: &[i16], w: usize, h: usize) -> Vec<(&'static str, Vec<u8>)> {
    let script = format!(
        "import io\nfrom astropy.io import fits\n\
         a = np.fromfile(sys.argv[1], '<i2').reshape({h}, {w})\n\
         outs = []\n\
         for d in ('<i2', '>i2'):\n    b = io.BytesIO(); np.save(b, a.astype(d)); outs.append(b.getvalue())\n\
         ok, t = cv2.imencode('.tif', a); assert ok; outs.append(t)\n\
         assert (cv2.imdecode(t, cv2.IMREAD_UNCHANGED) == a).all()\n\
         b = io.BytesIO(); fits.PrimaryHDU(a).writeto(b); outs.append(b.getvalue())\n\
         hdr = fits.getheader(io.BytesIO(outs[-1]))\n\
         assert hdr['BITPIX'] == 16 and 'BZERO' not in hdr, hdr\n\
         assert (fits.getdata(io.BytesIO(outs[-1])) == a).all()\n\
         {WRITE_RECORDS}"
    );
    let names = ["npy <i2", "npy >i2", "tiff", "fits"];
    names.into_iter().zip(records(&opencv(&script, &[&le_bytes(v)]))).collect()
}

/// Each container reads as a gray float frame of the values (through `pad --border 0`, the
/// identity); a colour int16 TIFF and a colour NPY too, channels as `cv2.imread` and NumPy give
/// them (OpenCV's BGR reversed: frames are RGB).
#[test]
fn every_container_reads_the_values_numpy_holds() {
    let mut rng = rng();
    let (w, h) = (37, 11);
    let v = values(&mut rng, w, h);
    let want = Pixels::F32(v.iter().map(|&s| s as f32).collect::<Vec<f32>>().into());
    for (name, file) in files(&v, w, h) {
        let f = read_frames(&run_ok("pad", "cpu", &["--border", "0"], &file)).remove(0);
        assert_eq!((f.width, f.height, f.channels, &f.pixels), (w, h, Channels::Gray, &want), "{name}");
    }
    let cw = w / 3;
    let script = format!(
        "import io\na = np.fromfile(sys.argv[1], '<i2').reshape({h}, {cw}, 3)\n\
         ok, t = cv2.imencode('.tif', a); assert ok\n\
         bgr = cv2.imdecode(t, cv2.IMREAD_UNCHANGED); assert bgr.dtype == np.int16\n\
         b = io.BytesIO(); np.save(b, a); outs = [t, b.getvalue(), bgr[..., ::-1].astype('<i2').tobytes()]\n\
         {WRITE_RECORDS}"
    );
    let rgb = &v[..h * cw * 3];
    let out = records(&opencv(&script, &[&le_bytes(rgb)]));
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(2).map(|p| i16::from_le_bytes([p[0], p[1]]) as f32).collect()
    };
    for (name, file, want) in [("tiff", &out[0], floats(&out[2])), ("npy", &out[1], floats(&le_bytes(rgb)))] {
        let f = read_frames(&run_ok("pad", "cpu", &["--border", "0"], file)).remove(0);
        assert_eq!((f.width, f.channels), (cw, Channels::Rgb), "{name}");
        assert_eq!(f.pixels, Pixels::F32(want.into()), "colour {name}");
    }
}

/// `cdf` counts as `np.histogram` of the values and `stretch --saturate 0` maps as NumPy's
/// `rint((a - lo) / (hi - lo) * 65535)` in float64, from every container; with a GPU, the same
/// bytes.
#[test]
fn float_tools_give_numpys_answers() {
    let mut rng = rng();
    let (w, h) = (53, 29);
    let v = values(&mut rng, w, h);
    let script = format!(
        "a = np.fromfile(sys.argv[1], '<i2').astype(np.float64)\n\
         lo, hi = a.min(), a.max()\n\
         outs = [np.histogram(a, 16)[0].astype('<i8').tobytes(),\n        \
                 np.rint((a - lo) / (hi - lo) * 65535).astype('<u2').tobytes()]\n\
         {WRITE_RECORDS}"
    );
    let want = records(&opencv(&script, &[&le_bytes(&v)]));
    let counts: Vec<u64> =
        want[0].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
    let levels: Vec<u16> = want[1].chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    for (name, file) in files(&v, w, h) {
        let table = String::from_utf8(run_ok("cdf", "cpu", &["--bins", "16"], &file)).unwrap();
        let got: Vec<u64> =
            table.lines().skip(1).map(|l| l.split(',').nth(5).unwrap().parse().unwrap()).collect();
        assert_eq!(got, counts, "{name}: cdf\n{table}");
        let stretch = ["--saturate", "0", "--depth", "16"];
        let out = run_ok("stretch", "cpu", &stretch, &file);
        let f = read_frames(&out).remove(0);
        assert_eq!((f.maxval, &f.pixels), (65535, &Pixels::U16(levels.clone().into())), "{name}: stretch");
        if let Some(_gpu) = gpu() {
            assert!(run_ok("stretch", "gpu", &stretch, &file) == out, "{name}: stretch on the GPU");
            let gpu = run_ok("cdf", "gpu", &["--bins", "16"], &file);
            assert!(gpu == table.as_bytes(), "{name}: cdf on the GPU");
        }
    }
}

/// A FITS of unsigned 16-bit samples as astropy writes it (BITPIX 16, BZERO 32768) stays a 16-bit
/// frame of maxval 65535, written back as PGM.
#[test]
fn fits_with_bzero_32768_stays_unsigned() {
    let mut rng = rng();
    let (w, h) = (9, 4);
    let v: Vec<u16> = (0..w * h).map(|i| if i < 2 { [0, 65535][i] } else { rng.u16(..) }).collect();
    let raw: Vec<u8> = v.iter().flat_map(|s| s.to_le_bytes()).collect();
    let script = format!(
        "import io\nfrom astropy.io import fits\na = np.fromfile(sys.argv[1], '<u2').reshape({h}, {w})\n\
         b = io.BytesIO(); fits.PrimaryHDU(a).writeto(b)\n\
         hdr = fits.getheader(io.BytesIO(b.getvalue()))\n\
         assert hdr['BITPIX'] == 16 and hdr['BZERO'] == 32768, hdr\n\
         sys.stdout.buffer.write(b.getvalue())"
    );
    let fits = opencv(&script, &[&raw]);
    let out = run_ok("pad", "cpu", &["--border", "0"], &fits);
    assert!(out.starts_with(b"P5"), "{:?}", String::from_utf8_lossy(&out[..20]));
    let f = read_frames(&out).remove(0);
    assert_eq!((f.width, f.height, f.maxval, f.pixels), (w, h, 65535, Pixels::U16(v.into())));
}
