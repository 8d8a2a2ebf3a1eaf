//! Where the binary containers in a stream keep their numbers: PNG chunk lengths and IHDR, JPEG
//! segment lengths and frame headers, BMP's header, TIFF's offsets and directory entries, the
//! header length of a NumPy `.npy` (the other new containers, PFM and FITS, keep their numbers in
//! text, which the mutator's decimal changes reach). The
//! mutator replaces these with values a parser is likely to get wrong.
//!
//! The walk is forgiving: it follows each structure as far as its own lengths allow and stops at
//! the first one that points outside the input; a mutated input is mostly malformed.

/// A number stored in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub at: usize,
    /// 1, 2 or 4 bytes.
    pub width: usize,
    pub big_endian: bool,
}

impl Field {
    fn be(at: usize, width: usize) -> Field {
        Field { at, width, big_endian: true }
    }

    fn le(at: usize, width: usize) -> Field {
        Field { at, width, big_endian: false }
    }

    pub fn read(&self, bytes: &[u8]) -> u32 {
        let b = &bytes[self.at..self.at + self.width];
        let fold = |acc: u32, &x: &u8| acc << 8 | x as u32;
        if self.big_endian {
            b.iter().fold(0, fold)
        } else {
            b.iter().rev().fold(0, fold)
        }
    }

    pub fn write(&self, bytes: &mut [u8], value: u32) {
        let b = &mut bytes[self.at..self.at + self.width];
        for (i, byte) in b.iter_mut().enumerate() {
            let shift = if self.big_endian { 8 * (self.width - 1 - i) } else { 8 * i };
            *byte = (value >> shift) as u8;
        }
    }
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Every number field of every PNG, JPEG, BMP and TIFF image that starts somewhere in `bytes`.
pub fn fields(bytes: &[u8]) -> Vec<Field> {
    let mut out = Vec::new();
    for start in 0..bytes.len().saturating_sub(1) {
        match &bytes[start..start + 2] {
            [0x89, b'P'] if bytes[start..].starts_with(PNG_SIGNATURE) => png(bytes, start, &mut out),
            [0xff, 0xd8] => jpeg(bytes, start, &mut out),
            b"BM" => bmp(start, &mut out),
            b"II" | b"MM" => tiff(bytes, start, &mut out),
            [0x93, b'N'] if bytes[start..].starts_with(b"\x93NUMPY") => npy(bytes, start, &mut out),
            _ => {}
        }
    }
    out.retain(|f| f.at + f.width <= bytes.len());
    out
}

/// The header length of the `.npy` at `start`: 2 bytes in format 1.0, 4 in 2.0 and 3.0, little-endian
/// after the magic and the version.
fn npy(bytes: &[u8], start: usize, out: &mut Vec<Field>) {
    let width = if bytes.get(start + 6) == Some(&1) { 2 } else { 4 };
    out.push(Field::le(start + 8, width));
}

/// One PNG chunk: where its length field is and how long its data is.
struct Chunk {
    at: usize,
    len: usize,
    kind: [u8; 4],
}

/// The chunks of the PNG at `start`, while they fit.
fn png_chunks(bytes: &[u8], start: usize) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut at = start + PNG_SIGNATURE.len();
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = [head[4], head[5], head[6], head[7]];
        if at + 12 + len > bytes.len() {
            break;
        }
        chunks.push(Chunk { at, len, kind });
        if &kind == b"IEND" {
            break;
        }
        at += 12 + len;
    }
    chunks
}

fn png(bytes: &[u8], start: usize, out: &mut Vec<Field>) {
    for c in png_chunks(bytes, start) {
        out.push(Field::be(c.at, 4));
        if &c.kind == b"IHDR" {
            // Width, height, then bit depth, colour type, compression, filter, interlace.
            out.extend([Field::be(c.at + 8, 4), Field::be(c.at + 12, 4)]);
            out.extend((16..21).map(|i| Field::be(c.at + i, 1)));
        }
    }
}

/// Recomputes the CRC of every whole PNG chunk, so a mutation inside a chunk reaches the decoder
/// instead of stopping at the checksum.
pub fn fix_png_crcs(bytes: &mut [u8]) {
    let mut start = 0;
    while let Some(found) = find(&bytes[start..], PNG_SIGNATURE) {
        let png = start + found;
        for c in png_chunks(bytes, png) {
            let crc = crc32fast::hash(&bytes[c.at + 4..c.at + 8 + c.len]);
            bytes[c.at + 8 + c.len..c.at + 12 + c.len].copy_from_slice(&crc.to_be_bytes());
        }
        start = png + 1;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn jpeg(bytes: &[u8], start: usize, out: &mut Vec<Field>) {
    let mut at = start + 2;
    // A bound on segments, so a long run of fill bytes costs little.
    for _ in 0..256 {
        let Some(&[0xff, marker]) = bytes.get(at..at + 2) else { return };
        match marker {
            0xff => {
                at += 1;
                continue;
            }
            0xd9 => return,
            0x01 | 0xd0..=0xd7 => {
                at += 2;
                continue;
            }
            _ => {}
        }
        let Some(len) = bytes.get(at + 2..at + 4).map(|l| u16::from_be_bytes([l[0], l[1]]) as usize) else {
            return;
        };
        out.push(Field::be(at + 2, 2));
        let body = at + 4;
        match marker {
            // SOFn: precision, height, width, component count, then (id, sampling, table) each.
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                out.extend([Field::be(body, 1), Field::be(body + 1, 2), Field::be(body + 3, 2)]);
                out.push(Field::be(body + 5, 1));
                let components = bytes.get(body + 5).copied().unwrap_or(0) as usize;
                out.extend(
                    (0..components.min(4)).flat_map(|i| {
                        [Field::be(body + 6 + 3 * i + 1, 1), Field::be(body + 6 + 3 * i + 2, 1)]
                    }),
                );
            }
            // DHT: class and id, then the sixteen code-length counts.
            0xc4 => out.extend((0..17).map(|i| Field::be(body + i, 1))),
            // DQT: precision and id.
            0xdb => out.push(Field::be(body, 1)),
            // DRI: the restart interval.
            0xdd => out.push(Field::be(body, 2)),
            // SOS: component count, (id, tables) each, then spectral start, end, approximation.
            0xda => {
                let components = bytes.get(body).copied().unwrap_or(0) as usize;
                out.push(Field::be(body, 1));
                out.extend((0..components.min(4)).map(|i| Field::be(body + 2 + 2 * i, 1)));
                let tail = body + 1 + 2 * components;
                out.extend((0..3).map(|i| Field::be(tail + i, 1)));
                // The entropy-coded data runs to the next marker that is not a stuffed 0xff00 or
                // a restart.
                let mut p = at + 2 + len;
                while let Some(&b) = bytes.get(p) {
                    if b == 0xff && bytes.get(p + 1).is_some_and(|&m| m != 0 && !(0xd0..=0xd7).contains(&m)) {
                        break;
                    }
                    p += 1;
                }
                at = p;
                continue;
            }
            _ => {}
        }
        at += 2 + len;
    }
}

fn bmp(start: usize, out: &mut Vec<Field>) {
    // File size, pixel offset, header size, width, height, planes, bits per pixel, compression,
    // image size, two resolutions, colours used, colours important.
    let fields = [(2, 4), (10, 4), (14, 4), (18, 4), (22, 4), (26, 2), (28, 2), (30, 4), (34, 4)];
    out.extend(fields.iter().map(|&(at, w)| Field::le(start + at, w)));
    out.extend([46, 50].map(|at| Field::le(start + at, 4)));
}

fn tiff(bytes: &[u8], start: usize, out: &mut Vec<Field>) {
    let big_endian = match bytes.get(start..start + 4) {
        Some(b"II*\0") => false,
        Some(b"MM\0*") => true,
        _ => return,
    };
    let field = |at, width| Field { at, width, big_endian };
    let mut next = field(start + 4, 4);
    // The first few directories of the chain; a loop in it ends here too.
    for _ in 0..4 {
        if next.at + 4 > bytes.len() {
            return;
        }
        out.push(next);
        let ifd = start + next.read(bytes) as usize;
        let Some(count) = bytes.get(ifd..ifd + 2).map(|_| field(ifd, 2)) else { return };
        out.push(count);
        let entries = count.read(bytes) as usize;
        for e in 0..entries.min(64) {
            let entry = ifd + 2 + 12 * e;
            if entry + 12 > bytes.len() {
                return;
            }
            // Type, count, and the value or the offset of the values (the tag stays: an unknown
            // tag is merely skipped).
            out.extend([field(entry + 2, 2), field(entry + 4, 4), field(entry + 8, 4)]);
        }
        next = field(ifd + 2 + 12 * entries, 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_of(w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let img = image::GrayImage::from_pixel(w, h, image::Luma([7]));
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
        out
    }

    #[test]
    fn png_lengths_and_size_are_found_and_crcs_fixed() {
        let mut png = png_of(5, 3);
        let found = fields(&png);
        let ihdr_width = Field::be(16, 4);
        assert!(found.contains(&Field::be(8, 4)), "IHDR's length");
        assert!(found.contains(&ihdr_width));
        assert_eq!(ihdr_width.read(&png), 5);
        ihdr_width.write(&mut png, 9);
        assert_eq!(ihdr_width.read(&png), 9);
        let before = png.clone();
        fix_png_crcs(&mut png);
        assert_ne!(png, before, "the IHDR checksum was recomputed");
        let decoded = image::load_from_memory(&png).map(|i| i.width());
        assert!(!matches!(decoded, Err(ref e) if e.to_string().contains("CRC")), "{decoded:?}");
    }

    #[test]
    fn jpeg_frame_header_is_found() {
        let mut out = Vec::new();
        let enc = jpeg_encoder::Encoder::new(&mut out, 80);
        enc.encode(&[128; 6 * 4], 6, 4, jpeg_encoder::ColorType::Luma).unwrap();
        let found = fields(&out);
        let sof = out.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
        assert!(found.contains(&Field::be(sof + 2, 2)), "SOF's length");
        assert_eq!(Field::be(sof + 5, 2).read(&out), 4, "height");
        assert!(found.contains(&Field::be(sof + 5, 2)));
        assert!(found.contains(&Field::be(sof + 7, 2)), "width");
    }

    #[test]
    fn tiff_directory_entries_are_found_in_either_byte_order() {
        let mut le = b"II*\0\x08\0\0\0\x01\0".to_vec();
        le.extend_from_slice(&[0x00, 0x01, 0x03, 0x00, 0x01, 0, 0, 0, 0x05, 0, 0, 0, 0, 0, 0, 0]);
        let found = fields(&le);
        assert!(found.contains(&Field::le(4, 4)), "the first directory's offset");
        assert!(found.contains(&Field::le(8, 2)), "the entry count");
        assert_eq!(Field::le(18, 4).read(&le), 5, "the entry's value");
        assert!(found.contains(&Field::le(18, 4)));
        assert!(found.contains(&Field::le(22, 4)), "the next directory's offset");
    }

    #[test]
    fn bmp_header_fields_are_little_endian() {
        let bmp = b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0\x02\0\0\0";
        let found = fields(bmp);
        assert_eq!(Field::le(2, 4).read(bmp), 0x3a);
        assert!(found.contains(&Field::le(18, 4)));
        assert!(!found.iter().any(|f| f.at + f.width > bmp.len()), "fields past the end are left out");
    }
}
