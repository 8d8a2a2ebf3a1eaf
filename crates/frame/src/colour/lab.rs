//! CIE L\*a\*b\* as `cv2.cvtColor` makes it of 8-bit images, `COLOR_BGR2Lab` and `COLOR_Lab2BGR`
//! (OpenCV 5.0, imgproc's `color_lab.cpp`: `RGB2Lab_b` and `Lab2RGBinteger`, the integer path
//! `Lab2RGB_b` takes), on our interleaved R,G,B(,A) samples; sRGB and the D65 white.
//!
//! OpenCV computes both directions in integers from tables it builds once in single or double
//! precision (its `softfloat`, IEEE arithmetic in software); [`Tables`] builds the same tables with
//! the same operations in the same precisions, rounding as `cvRound` does (ties to even). Two of
//! its functions are its own: the cube root (Turkowski's approximation, cut to single: see
//! [`cbrt_f32`], done as OpenCV does it) and the sRGB powers x^2.4 and x^(1/2.4) (its
//! exp(y log x) in double, here the platform's `pow`, within an ulp or two of double: the tables
//! round them to single and then to integers, and come out the same, as the tests over every
//! input show).
//!
//! To L\*a\*b\*, with γ(v) the sRGB decoding of v/255 scaled by 2040 (`sRGBGammaTab_b`), f the
//! cube root (below (6/29)^3 its linear piece) of X/2040 scaled by 2^15 (`LabCbrtTab_b`), and each
//! row of the sRGB-to-XYZ matrix divided by its white and scaled by 2^12:
//!
//! | | |
//! |---|---|
//! | X, Y, Z | (Σ coefficient · γ(channel) + 2^11) >> 12 |
//! | L | (296 f(Y) − 1336934 + 2^14) >> 15, saturated to 0..255 |
//! | a | (500 (f(X) − f(Y)) + 128 · 2^15 + 2^14) >> 15, saturated |
//! | b | (200 (f(Y) − f(Z)) + 128 · 2^15 + 2^14) >> 15, saturated |
//!
//! Back, in units of 2^-14: y and f(y) of L from a table (`LabToYF_b`), f(x) = f(y) + a′ and
//! f(z) = f(y) − b′ with a′ ≈ (a − 128) · 2^14 / 500 and b′ ≈ (b − 128) · 2^14 / 200 by OpenCV's
//! multiply-and-shift approximations, x and z their cubes (or the linear piece) in integers
//! (`abToXZ_b`); then R, G, B = the XYZ-to-sRGB matrix (times the white, scaled by 2^12) applied
//! and shifted by 14 (to 12-bit linear light), clamped to 0..4095 and encoded by a 4096-entry sRGB
//! table (`sRGBInvGammaTab_b`).
//!
//! OpenCV's SIMD paths compute the same integers as its scalar ones, so one scalar formula is
//! exact for every pixel; the tests run cv2 on all 2^24 colours and all 2^24 L,a,b triples.

use std::sync::OnceLock;

/// sRGB to XYZ (rows X, Y, Z; columns R, G, B): OpenCV's `sRGB2XYZ_D65`.
const RGB_TO_XYZ: [[f64; 3]; 3] =
    [[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]];
/// XYZ to sRGB (rows R, G, B; columns X, Y, Z): OpenCV's `XYZ2sRGB_D65`.
const XYZ_TO_RGB: [[f64; 3]; 3] =
    [[3.240479, -1.53715, -0.498535], [-0.969256, 1.875991, 0.041556], [0.055648, -0.204043, 1.057311]];
/// The D65 white, X, Y, Z.
const D65: [f64; 3] = [0.950456, 1.0, 1.088754];

/// `lab_shift` (= `xyz_shift`): the matrices' fixed point.
const LAB_SHIFT: u32 = 12;
/// `gamma_shift`: γ's samples are v · 2^3 at most.
const GAMMA_SHIFT: u32 = 3;
/// `lab_shift2`: f's fixed point.
const LAB_SHIFT2: u32 = LAB_SHIFT + GAMMA_SHIFT;
/// `LAB_CBRT_TAB_SIZE_B`: X, Y, Z up to 1.5 · 2040.
const CBRT_SIZE: usize = 256 * 3 / 2 * (1 << GAMMA_SHIFT);
/// `inv_gamma_shift`: linear light in 12 bits on the way back.
const INV_GAMMA_SHIFT: u32 = 12;
const INV_GAMMA_SIZE: usize = 1 << INV_GAMMA_SHIFT;
/// `LUT_BASE`, `LAB_BASE`: the way back's fixed point, 2^14.
const BASE_SHIFT: u32 = 14;
const BASE: i32 = 1 << BASE_SHIFT;
/// `minABvalue`: the smallest f(y) − b′ (L = 0, b = 255), the first index of `ab_to_xz`.
const MIN_AB: i32 = -8145;
/// `Lab2RGBinteger::shift`: the matrix's 2^12 and the 2^14 of x, y, z down to 12 bits.
const BACK_SHIFT: u32 = LAB_SHIFT + (BASE_SHIFT - INV_GAMMA_SHIFT);

/// `(x + 2^(n−1)) >> n`, OpenCV's `CV_DESCALE` (an arithmetic shift: it floors).
fn descale(x: i32, n: u32) -> i32 {
    (x + (1 << (n - 1))) >> n
}

/// `cvRound` of a float: to the nearest integer, ties to even.
fn round_f32(x: f32) -> i32 {
    x.round_ties_even() as i32
}

/// The tables and coefficients of both directions, built once.
struct Tables {
    /// `LabCbrtTab_b`: round(2^15 · f(i/2040)).
    cbrt: [u16; CBRT_SIZE],
    /// For channel c (R, G, B) and value v, the products [`to_xyz`]`[row][c]` · [`gamma`]`[v]` of
    /// the rows X, Y, Z, R's with the rounding's 2^11 added: X, Y, Z are sums of three lookups.
    xyz_terms: [[[i32; 3]; 256]; 3],
    /// `LabToYF_b`: y and f(y) of each L, in 1/2^14.
    l_to_yf: [(i32, i32); 256],
    /// `abToXZ_b`: x (or z) of f(x) = i + [`MIN_AB`], in 1/2^14.
    ab_to_xz: Vec<i32>,
    /// For each a, the index in `ab_to_xz` of f(x) = f(y) + a′ less f(y): a′ − [`MIN_AB`].
    a_index: [i32; 256],
    /// For each b, the index in `ab_to_xz` of f(z) = f(y) − b′ less f(y): −b′ − [`MIN_AB`].
    b_index: [i32; 256],
    /// The columns of [`XYZ_TO_RGB`] times the white, in 1/2^12; rows R, G, B.
    to_rgb: [[i32; 3]; 3],
    /// `sRGBInvGammaTab_b`: round(255 · sRGB encoding of i/4096).
    inv_gamma: [u8; INV_GAMMA_SIZE],
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(Tables::new)
}

/// sRGB decoding (`applyGamma`): the argument single, the arithmetic double, the result single.
fn decode_srgb(x: f32) -> f32 {
    let x = f64::from(x);
    let linear = if x <= 809.0 / 20000.0 {
        x / (323.0 / 25.0)
    } else {
        let shift = 11.0 / 200.0;
        ((x + shift) / (1.0 + shift)).powf(12.0 / 5.0)
    };
    linear as f32
}

/// sRGB encoding (`applyInvGamma`), in the precisions of [`decode_srgb`].
fn encode_srgb(x: f32) -> f32 {
    let x = f64::from(x);
    let encoded = if x <= 7827.0 / 2500000.0 {
        x * (323.0 / 25.0)
    } else {
        let shift = 11.0 / 200.0;
        x.powf(1.0 / (12.0 / 5.0)) * (1.0 + shift) - shift
    };
    encoded as f32
}

/// L\*a\*b\*'s f of t: t^(1/3), or 841/108 t + 16/116 below (6/29)^3 = 216/24389; single
/// precision, the linear piece one fused multiply-add, as OpenCV's `softfloat` computes it.
fn lab_f(t: f32) -> f32 {
    let (threshold, scale, bias) = (216f32 / 24389.0, 841f32 / 108.0, 16f32 / 116.0);
    if t < threshold {
        super::fma_f32(t, scale, bias)
    } else {
        cbrt_f32(t)
    }
}

/// The cube root of `t` > 0 as OpenCV's `softfloat` computes it (Ken Turkowski's "fast cube
/// root"): t = m · 2^(3k) with m in [1/8, 1), m^(1/3) by a quartic rational approximation in
/// double precision (error under 2^-24, each step rounded), its bits after the 23rd cut off (not
/// rounded) to make a single, times 2^k. The cut makes it an ulp below the rounded root at times:
/// at t = 324/2040 the table's 2^15 f is 17745 where the rounded root would tie to 17746.
fn cbrt_f32(t: f32) -> f32 {
    const NUM: [f64; 5] =
        [45.2548339756803, 192.2798368355061, 119.16548242855816, 13.432501390862399, 0.16361612265857542];
    const DEN: [f64; 5] =
        [14.808840932191346, 151.97140510444356, 168.52544141015682, 33.99059413502156, 1.0];
    let bits = t.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 127;
    // m's exponent, −3..=−1, and the root's, less one (the root of m is in [1/2, 1)).
    let shift = match e % 3 {
        r if r >= 0 => r - 3,
        r => r,
    };
    let k = (e - shift) / 3 - 1;
    let m = f64::from_bits(((shift + 1023) as u64) << 52 | u64::from(bits & 0x7f_ffff) << 29);
    let horner = |c: &[f64; 5]| c[1..].iter().fold(c[0], |acc, &ci| acc * m + ci);
    let root = horner(&NUM) / horner(&DEN);
    let fraction = ((root.to_bits() & ((1 << 52) - 1)) >> 29) as u32;
    f32::from_bits(((k + 127) as u32) << 23 | fraction)
}

/// `sRGBGammaTab_b`: round(2040 · sRGB decoding of v/255) of each 8-bit v.
fn gamma() -> [u16; 256] {
    std::array::from_fn(|v| round_f32(2040.0 * decode_srgb(v as f32 / 255.0)) as u16)
}

/// The rows of [`RGB_TO_XYZ`] divided by the white, in 1/2^12, rounded (ties to even); columns
/// R, G, B.
fn to_xyz() -> [[i32; 3]; 3] {
    let lshift = f64::from(1 << LAB_SHIFT);
    std::array::from_fn(|row| RGB_TO_XYZ[row].map(|c| (lshift * c / D65[row]).round_ties_even() as i32))
}

impl Tables {
    fn new() -> Tables {
        let (gamma, to_xyz) = (gamma(), to_xyz());
        let mut cbrt = [0u16; CBRT_SIZE];
        let step = 1.0f32 / 2040.0;
        for (i, c) in cbrt.iter_mut().enumerate() {
            *c = round_f32((1 << LAB_SHIFT2) as f32 * lab_f(step * i as f32)) as u16;
        }
        let lshift = f64::from(1 << LAB_SHIFT);
        let to_rgb = std::array::from_fn(|row| {
            std::array::from_fn(|col| (lshift * XYZ_TO_RGB[row][col] * D65[col]).round_ties_even() as i32)
        });
        let mut inv_gamma = [0u8; INV_GAMMA_SIZE];
        for (i, g) in inv_gamma.iter_mut().enumerate() {
            let x = i as f32 / INV_GAMMA_SIZE as f32;
            *g = round_f32(255.0 * encode_srgb(x)) as u8;
        }
        let xyz_terms = std::array::from_fn(|c| {
            std::array::from_fn(|v| {
                let rounding = if c == 0 { 1 << (LAB_SHIFT - 1) } else { 0 };
                to_xyz.map(|row| row[c] * i32::from(gamma[v]) + rounding)
            })
        });
        // a · 2^14 / 500 and b · 2^14 / 200, less 128's, as OpenCV approximates them.
        let a_index = std::array::from_fn(|a| {
            let a = a as i32;
            ((5 * a * 53687 + (1 << 7)) >> 13) - 128 * BASE / 500 - MIN_AB
        });
        let b_index = std::array::from_fn(|b| {
            let b = b as i32;
            -(((b * 41943 + (1 << 4)) >> 9) - 128 * BASE / 200 + 1) - MIN_AB
        });
        Tables {
            cbrt,
            xyz_terms,
            l_to_yf: l_to_yf(),
            ab_to_xz: ab_to_xz(),
            a_index,
            b_index,
            to_rgb,
            inv_gamma,
        }
    }
}

/// `LabToYF_b`: for each 8-bit L (L* = 100 L / 255), y = Y/Yn and f(y) in 1/2^14, single
/// precision as OpenCV builds it (every integer below converts to single exactly).
fn l_to_yf() -> [(i32, i32); 256] {
    let base = BASE as f32;
    std::array::from_fn(|l| {
        let li = l as i32;
        if li <= 20 {
            // Below L* = 8: y = L* / (29/3)^3, f(y) = (29/3)^3/116 y + 16/116, with 255 = 3 · 5 · 17.
            let y = round_f32((li * BASE * 20 * 9) as f32 / (17 * 29 * 29 * 29) as f32);
            let fy = round_f32(base * (16.0f32 / 116.0 + (li * 5) as f32 / (3 * 17 * 29) as f32));
            (y, fy)
        } else {
            // f(y) = (L* + 16) / 116, y its cube.
            let fy = (li * 100 * BASE) as f32 / (255 * 116) as f32 + (16 * BASE) as f32 / 116.0;
            (round_f32(fy * fy * fy / (base * base)), round_f32(fy))
        }
    })
}

/// `abToXZ_b`: x of f(x) = v / 2^14, in 1/2^14, for v from [`MIN_AB`]: the cube in integers, or
/// the linear piece at and below 6/29 (3390 / 2^14), with C's truncating divisions.
fn ab_to_xz() -> Vec<i32> {
    (MIN_AB..BASE * 9 / 4 + MIN_AB)
        .map(
            |v| if v <= 3390 { v * 108 / 841 - BASE * 16 / 116 * 108 / 841 } else { v * v / BASE * v / BASE },
        )
        .collect()
}

/// L\*a\*b\* of one R, G, B ([`to_lab_u8`]).
#[inline(always)]
fn lab_of(t: &Tables, [r, g, b]: [u8; 3]) -> [u8; 3] {
    let [tr, tg, tb] = &t.xyz_terms;
    let (r, g, b) = (&tr[usize::from(r)], &tg[usize::from(g)], &tb[usize::from(b)]);
    // The rows' coefficients sum to under 1.01 · 2^12, so each of X, Y, Z is under 1.01 · 2040,
    // inside the table of CBRT_SIZE.
    let f = [0, 1, 2].map(|k| i32::from(t.cbrt[((r[k] + g[k] + b[k]) >> LAB_SHIFT) as usize]));
    let l_scale = (116 * 255 + 50) / 100;
    let l_shift = -((16 * 255 * (1 << LAB_SHIFT2) + 50) / 100);
    let half = 128 << LAB_SHIFT2;
    let l = descale(l_scale * f[1] + l_shift, LAB_SHIFT2);
    let a = descale(500 * (f[0] - f[1]) + half, LAB_SHIFT2);
    let b = descale(200 * (f[1] - f[2]) + half, LAB_SHIFT2);
    [l, a, b].map(|v| v.clamp(0, 255) as u8)
}

/// R, G, B of one 8-bit L, a, b ([`from_lab_u8`]).
#[inline(always)]
fn rgb_of(t: &Tables, [l, a, b]: [u8; 3]) -> [u8; 3] {
    let (y, fy) = t.l_to_yf[usize::from(l)];
    // fy is 2260..=16384, a′ −4194..=4162 and b′ −10484..=10405: the indices are 0..=35013,
    // inside the table's 36864.
    let x = t.ab_to_xz[(fy + t.a_index[usize::from(a)]) as usize];
    let z = t.ab_to_xz[(fy + t.b_index[usize::from(b)]) as usize];
    t.to_rgb.map(|row| {
        let linear = descale(row[0] * x + row[1] * y + row[2] * z, BACK_SHIFT);
        t.inv_gamma[linear.clamp(0, INV_GAMMA_SIZE as i32 - 1) as usize]
    })
}

/// Checks that `samples` holds whole pixels of `channels` samples and the planes one a pixel.
fn check(samples: usize, channels: usize, planes: [usize; 3]) {
    assert!(channels == 3 || channels == 4, "colour pixels have 3 or 4 channels, not {channels}");
    assert_eq!(samples % channels, 0, "{samples} samples are not whole {channels}-channel pixels");
    assert!(planes.iter().all(|&n| n == samples / channels), "L, a and b planes of one sample a pixel");
}

/// L\*a\*b\* as `cv2.cvtColor(img, COLOR_BGR2Lab)` on `CV_8U`, into three planes: L = 255 L\*/100,
/// a = a\* + 128, b = b\* + 128 (see the module's formulas).
///
/// # Example
/// ```
/// let (mut l, mut a, mut b) = ([0u8; 2], [0u8; 2], [0u8; 2]);
/// histopipe_frame::colour::to_lab_u8(&[255, 255, 255, 255, 0, 0], 3, &mut l, &mut a, &mut b);
/// assert_eq!((l, a, b), ([255, 136], [128, 208], [128, 195]));
/// ```
pub fn to_lab_u8(rgb: &[u8], channels: usize, l: &mut [u8], a: &mut [u8], b: &mut [u8]) {
    check(rgb.len(), channels, [l.len(), a.len(), b.len()]);
    match channels {
        3 => to_lab::<3>(tables(), rgb, l, a, b),
        _ => to_lab::<4>(tables(), rgb, l, a, b),
    }
}

fn to_lab<const N: usize>(t: &Tables, rgb: &[u8], l: &mut [u8], a: &mut [u8], b: &mut [u8]) {
    let planes = l.iter_mut().zip(a.iter_mut()).zip(b.iter_mut());
    for (p, ((l, a), b)) in rgb.chunks_exact(N).zip(planes) {
        [*l, *a, *b] = lab_of(t, [p[0], p[1], p[2]]);
    }
}

/// R, G, B as `cv2.cvtColor(img, COLOR_Lab2BGR)` on `CV_8U`. Only R, G and B are written: a
/// 4-channel pixel keeps its alpha.
pub fn from_lab_u8(l: &[u8], a: &[u8], b: &[u8], out_rgb: &mut [u8], channels: usize) {
    check(out_rgb.len(), channels, [l.len(), a.len(), b.len()]);
    match channels {
        3 => from_lab::<3>(tables(), [l, a, b], out_rgb),
        _ => from_lab::<4>(tables(), [l, a, b], out_rgb),
    }
}

fn from_lab<const N: usize>(t: &Tables, [l, a, b]: [&[u8]; 3], out: &mut [u8]) {
    let planes = l.iter().zip(a).zip(b);
    for (p, ((&l, &a), &b)) in out.chunks_exact_mut(N).zip(planes) {
        let [r, g, bl] = rgb_of(t, [l, a, b]);
        p[0] = r;
        p[1] = g;
        p[2] = bl;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer coefficients OpenCV's constructors compute from the matrices and the white.
    #[test]
    fn coefficients_as_opencv_rounds_them() {
        let t = tables();
        assert_eq!(to_xyz(), [[1777, 1541, 778], [871, 2929, 296], [73, 448, 3575]]);
        assert_eq!(t.ab_to_xz.len(), 36864);
        // The largest index rgb_of takes, and the extremes of L's table.
        assert_eq!(t.l_to_yf[0], (0, 2260));
        assert_eq!(t.l_to_yf[255], (16384, 16384));
    }

    /// Every X, Y, Z the forward direction can make lies inside the cube-root table.
    #[test]
    fn every_xyz_is_inside_the_table() {
        let top = gamma()[255] as i32;
        assert_eq!(top, 2040);
        for row in to_xyz() {
            assert!(descale(row.iter().sum::<i32>() * top, LAB_SHIFT) < CBRT_SIZE as i32);
        }
    }

    /// [`cbrt_f32`] is within about an ulp of the cube root (the approximation's error, then the
    /// cut), for every t the table takes it of: (r − 1 ulp)^3 ≤ t < (r + 2 ulp)^3, exactly in
    /// integers (t ≥ 2^-7 is a multiple of 2^-30, r one of 2^-26); and 17745 at 324/2040 where
    /// OpenCV's table has it.
    #[test]
    fn cube_root_is_opencvs() {
        let step = 1.0f32 / 2040.0;
        let threshold = 216f32 / 24389.0;
        let mut checked = 0;
        for t in (0..CBRT_SIZE).map(|i| step * i as f32).filter(|&t| t >= threshold) {
            let r = cbrt_f32(t);
            let t_units = (f64::from(t) * 2f64.powi(30)) as i128;
            assert_eq!(t_units as f64, f64::from(t) * 2f64.powi(30), "{t} on the grid");
            let cube = |x: f32| {
                let x = (f64::from(x) * 2f64.powi(26)) as i128;
                x * x * x
            };
            let (below, two_up) = (f32::from_bits(r.to_bits() - 1), f32::from_bits(r.to_bits() + 2));
            assert!(cube(below) <= t_units << 48 && t_units << 48 < cube(two_up), "{t}: {r}");
            checked += 1;
        }
        assert!(checked > 3000);
        assert_eq!(tables().cbrt[324], 17745);
        assert_eq!(cbrt_f32(0.125), 0.5);
        assert_eq!(cbrt_f32(1.0), 1.0);
    }

    #[test]
    fn by_hand() {
        let (mut l, mut a, mut b) = ([0u8; 3], [0u8; 3], [0u8; 3]);
        to_lab_u8(&[0, 0, 0, 9, 255, 255, 255, 9, 128, 128, 128, 9], 4, &mut l, &mut a, &mut b);
        // Black: f = 16/116 everywhere, L = (296 · 4520 − 1336934 + 2^14) >> 15 = 0; grays have
        // a = b = 128 (f(X) = f(Y) = f(Z): the rows sum alike, X's to one more, too little to show).
        assert_eq!((l, a, b), ([0, 255, 137], [128, 128, 128], [128, 128, 128]));
        let mut rgba = [0u8, 0, 0, 42, 0, 0, 0, 7];
        from_lab_u8(&[0, 255], &[128, 128], &[128, 128], &mut rgba, 4);
        assert_eq!(rgba, [0, 0, 0, 42, 255, 255, 255, 7]);
    }
}
