//! Structure-aware mutations: each new input is a corpus input changed one to eight times.
//!
//! Besides the byte-level changes any fuzzer makes (flips, inserts, deletions, truncation,
//! duplicated runs, splices with another input), two kinds know the formats: decimal numbers in
//! text headers and comments become values at the edges of the integer types, and the number
//! fields of binary containers ([`crate::fields`]) become values at the edges of their widths or
//! off by one. Half the inputs then get their PNG checksums recomputed, so the decoders see the
//! change.

use fastrand::Rng;
use histopipe_frame::{Depth, RawSpec};

use crate::fields::{fields, fix_png_crcs};
use crate::input::Input;

/// Inputs grow no larger than this: enough for several small frames, small enough to stay fast.
pub const MAX_LEN: usize = 32 * 1024;

/// Byte strings the formats give meaning to, for inserting.
const TOKENS: &[&[u8]] = &[
    b"P5",
    b"P2",
    b"P6",
    b"P3",
    b"P7",
    b"P5 1 1 255\n\0",
    b"#",
    b"\n",
    b" ",
    b"# histopipe-geometry 1 0 -2 0 1 -3 4 4\n",
    b"# histopipe-geometry 1e308 0 0 0 1 0 1 1\n",
    b"# histopipe-hough theta-min=0 theta-max=180 theta-step=1 rho-step=1 rho-offset=2 source=4x4\n",
    b"# histopipe-x\n",
    b"WIDTH ",
    b"HEIGHT ",
    b"DEPTH ",
    b"MAXVAL ",
    b"TUPLTYPE ",
    b"ENDHDR\n",
    b"GRAYSCALE",
    b"RGB",
    b"RGB_ALPHA",
    b"\x89PNG\r\n\x1a\n",
    b"IHDR",
    b"IDAT",
    b"IEND",
    b"PLTE",
    b"tRNS",
    b"\0\0\0\0IEND\xaeB`\x82",
    b"\xff\xd8",
    b"\xff\xd9",
    b"\xff\xc0",
    b"\xff\xc2",
    b"\xff\xc4",
    b"\xff\xda",
    b"\xff\xdb",
    b"\xff\xdd\0\x04\0\x01",
    b"\xff\xe0",
    b"\xff\xd0",
    b"\xff\0",
    b"II*\0",
    b"MM\0*",
    b"BM",
    b"\xff\xff\xff\xff",
    b"\0\0\0\0",
    b"\x7f\xff\xff\xff",
    b"\x80\0\0\0",
    b"GRAYSCALE_ALPHA",
    b"Pf\n",
    b"PF\n",
    b"\n-1.0\n",
    b"\x7f\xc0\0\0",
    b"\x93NUMPY\x01\0",
    b"\x93NUMPY\x02\0",
    b"'descr': '<f4', ",
    b"'descr': '>f8', ",
    b"'descr': '|b1', ",
    b"'fortran_order': False, ",
    b"'shape': (2, 3, 4), ",
    b"SIMPLE  =                    T",
    b"BITPIX  =                  -32",
    b"NAXIS3  =                    4",
    b"BZERO   =                32768",
    b"BSCALE  =                  0.5",
    b"BLANK   =                    0",
    b"END                                                                             ",
];

/// Decimal numbers a text header's parser is likely to get wrong.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "255",
    "256",
    "1000",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999999999999999999999",
    "00000000001",
    "-1",
    "+1",
    "1e9",
    "0.5",
    "1e308",
    "1e309",
    "nan",
    "inf",
    "-0",
];

fn interesting(rng: &mut Rng, width: usize, old: u32, len: usize) -> u32 {
    let edges: &[u32] = match width {
        1 => &[0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 64, 127, 128, 255],
        2 => &[0, 1, 2, 3, 4, 8, 16, 255, 256, 257, 1024, 0x7fff, 0x8000, 0xfffe, 0xffff],
        _ => &[0, 1, 2, 4, 256, 0xffff, 0x10000, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff],
    };
    let mask = if width >= 4 { u32::MAX } else { (1 << (8 * width)) - 1 };
    let v = match rng.u8(..6) {
        0 => old.wrapping_add(1),
        1 => old.wrapping_sub(1),
        2 => old.wrapping_mul(2),
        3 => old / 2,
        4 => len as u32,
        _ => edges[rng.usize(..edges.len())],
    };
    v & mask
}

/// A random range `[a, b)` of a nonempty `len`, usually short.
fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let a = rng.usize(..len);
    let most = if rng.u8(..4) == 0 { len - a } else { (len - a).min(16) };
    (a, a + rng.usize(1..=most))
}

/// One change to `bytes`; `other` is a second corpus input, for splices.
fn mutate_once(rng: &mut Rng, bytes: &mut Vec<u8>, other: &[u8]) {
    let len = bytes.len();
    match rng.u8(..14) {
        0 | 1 if len > 0 => {
            let i = rng.usize(..len);
            bytes[i] ^= 1 << rng.u8(..8);
        }
        2 if len > 0 => {
            let i = rng.usize(..len);
            bytes[i] =
                [0, 0xff, 0x7f, 0x80, 1, b' ', b'\n', b'0'][rng.usize(..8)] ^ (rng.u8(..) & rng.u8(..));
        }
        3 => {
            let at = rng.usize(..=len);
            let fresh: Vec<u8> = (0..rng.usize(1..=8)).map(|_| rng.u8(..)).collect();
            bytes.splice(at..at, fresh);
        }
        4 => {
            let at = rng.usize(..=len);
            bytes.splice(at..at, TOKENS[rng.usize(..TOKENS.len())].iter().copied());
        }
        5 if len > 0 => {
            let (a, b) = range(rng, len);
            bytes.drain(a..b);
        }
        6 if len > 0 => bytes.truncate(rng.usize(..len)),
        7 if len > 0 => {
            // A run repeated in place: doubled chunks, segments, rows.
            let (a, b) = range(rng, len);
            let run = bytes[a..b].to_vec();
            let copies = if rng.bool() { 1 } else { rng.usize(1..=16) };
            let at = if rng.bool() { b } else { rng.usize(..=len) };
            bytes.splice(at..at, run.iter().copied().cycle().take(run.len() * copies));
        }
        8 if !other.is_empty() => {
            // A splice: this input's start, the other's end.
            let cut = rng.usize(..=len);
            let from = rng.usize(..other.len());
            bytes.truncate(cut);
            bytes.extend_from_slice(&other[from..]);
        }
        9 if !other.is_empty() => {
            // Another stream after this one, or a piece of it inside this one.
            if rng.bool() {
                bytes.extend_from_slice(other);
            } else {
                let (a, b) = range(rng, other.len());
                let at = rng.usize(..=len);
                bytes.splice(at..at, other[a..b].iter().copied());
            }
        }
        10 | 11 => replace_number(rng, bytes),
        _ => replace_field(rng, bytes),
    }
}

/// Replaces a run of decimal digits with an interesting number.
fn replace_number(rng: &mut Rng, bytes: &mut Vec<u8>) {
    // A random digit, walked back to the start of its run.
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return;
    }
    let nth = rng.usize(..digits);
    let Some(mut start) =
        bytes.iter().enumerate().filter(|(_, b)| b.is_ascii_digit()).nth(nth).map(|(i, _)| i)
    else {
        return;
    };
    while start > 0 && bytes[start - 1].is_ascii_digit() {
        start -= 1;
    }
    let end = start + bytes[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    let new = NUMBERS[rng.usize(..NUMBERS.len())].as_bytes();
    bytes.splice(start..end, new.iter().copied());
}

/// Replaces a binary container's number field with an interesting value.
fn replace_field(rng: &mut Rng, bytes: &mut [u8]) {
    let found = fields(bytes);
    if found.is_empty() {
        return;
    }
    let f = found[rng.usize(..found.len())];
    let value = interesting(rng, f.width, f.read(bytes), bytes.len());
    f.write(bytes, value);
}

/// A raw frame shape near the old one, or a new small one.
fn mutate_spec(rng: &mut Rng, spec: RawSpec) -> RawSpec {
    let side = |rng: &mut Rng, old: usize| match rng.u8(..4) {
        0 => old + 1,
        1 => old.saturating_sub(1).max(1),
        2 => [1, 2, 3, 255, 256, 257, 65536][rng.usize(..7)],
        _ => rng.usize(1..=32),
    };
    match rng.u8(..3) {
        0 => RawSpec { width: side(rng, spec.width), ..spec },
        1 => RawSpec { height: side(rng, spec.height), ..spec },
        _ => RawSpec { depth: if spec.depth == Depth::U8 { Depth::U16 } else { Depth::U8 }, ..spec },
    }
}

/// A new input made from `parent`, with `other` for splicing.
pub fn mutate(rng: &mut Rng, parent: &Input, other: &Input) -> Input {
    let mut bytes = parent.bytes.clone();
    let mut raw = parent.raw;
    for _ in 0..1 << rng.u32(..4) {
        if let (Some(spec), 0) = (raw, rng.u8(..8)) {
            raw = Some(mutate_spec(rng, spec));
        } else {
            mutate_once(rng, &mut bytes, &other.bytes);
        }
    }
    bytes.truncate(MAX_LEN);
    if rng.bool() {
        fix_png_crcs(&mut bytes);
    }
    Input { bytes, raw }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_text_headers_are_replaced_whole() {
        let mut rng = Rng::with_seed(3);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut header = b"P5 640 480 255\n".to_vec();
            replace_number(&mut rng, &mut header);
            let text = String::from_utf8(header).unwrap();
            let fields: Vec<&str> = text.split_whitespace().collect();
            assert_eq!(fields.len(), 4, "{text:?}");
            seen.extend(fields[1..].iter().filter(|f| NUMBERS.contains(f)).map(|f| f.to_string()));
        }
        assert!(seen.contains("4294967296") && seen.contains("0"), "{seen:?}");
    }

    #[test]
    fn mutation_is_reproducible_from_the_seed_and_changes_the_input() {
        let parent = Input::described(b"P5 2 2 255\n\x01\x02\x03\x04".to_vec());
        let other = Input::described(b"P2 1 1 9 3\n".to_vec());
        let run = |seed| {
            let mut rng = Rng::with_seed(seed);
            (0..50).map(|_| mutate(&mut rng, &parent, &other)).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert!(a.iter().filter(|i| **i != parent).count() > 40);
        assert!(a.iter().all(|i| i.bytes.len() <= MAX_LEN && i.raw.is_none()));
    }

    #[test]
    fn interesting_values_fit_their_field() {
        let mut rng = Rng::with_seed(1);
        for _ in 0..1000 {
            assert!(interesting(&mut rng, 1, 200, 5000) <= 0xff);
            assert!(interesting(&mut rng, 2, 60000, 70000) <= 0xffff);
        }
    }
}
