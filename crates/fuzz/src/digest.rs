//! A fast 64-bit fingerprint, for telling frames apart and naming inputs; not cryptographic.

/// Folds bytes eight at a time, each word mixed by a multiply and a rotate (the FxHash step), and
/// finishes with a murmur3 avalanche so nearby inputs get unrelated names.
#[derive(Debug, Clone, Copy)]
pub struct Digest(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Default for Digest {
    fn default() -> Self {
        Digest(0x243f_6a88_85a3_08d3)
    }
}

impl Digest {
    pub fn new() -> Digest {
        Digest::default()
    }

    pub fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        // The length first, so that ("ab", "c") and ("a", "bc") differ.
        self.word(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.word(u64::from_le_bytes(tail));
    }

    pub fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(parts: &[&[u8]]) -> u64 {
        let mut d = Digest::new();
        parts.iter().for_each(|p| d.bytes(p));
        d.finish()
    }

    #[test]
    fn splits_and_single_bytes_change_the_digest() {
        assert_eq!(of(&[b"abc"]), of(&[b"abc"]));
        assert_ne!(of(&[b"ab", b"c"]), of(&[b"a", b"bc"]));
        assert_ne!(of(&[b"abcdefgh"]), of(&[b"abcdefgi"]));
        assert_ne!(of(&[b""]), of(&[b"\0"]));
    }
}
