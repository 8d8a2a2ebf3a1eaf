//! The benchmark's inputs: 8-bit frames of the published systems' sizes, with real content (a
//! fixture scaled up by nearest neighbour) or uniform random values, kept as raw files so that the
//! peer programs (CUB/NPP, OpenCV) time exactly the same bytes.
//!
//! File names, shared with `scripts/bench/`: `DIR/<content>-<W>x<H>.u8` for a frame and
//! `DIR/edges-<content>-<W>x<H>.u8` for its Canny edge map (0 or 255, written by OpenCV in
//! `scripts/bench/cpu_peers.py edges`, the input of every Hough entry).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use histopipe_frame::{parse_size, FrameReader, Pixels, ReadOptions};

/// The published systems' sizes (640x651, 2560x1707, 3932x4000, 4096x3112), 8K UHD and 16K^2.
pub const DEFAULT_SIZES: &[(usize, usize)] =
    &[(640, 651), (2560, 1707), (3932, 4000), (4096, 3112), (7680, 4320), (16384, 16384)];

/// What a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// A fixture scaled up by nearest neighbour: real image statistics (sparse edges, skewed
    /// histogram).
    Real,
    /// Uniform random bytes: the worst case for histogram atomics' locality, dense edges.
    Random,
}

impl Content {
    pub const ALL: [Content; 2] = [Content::Real, Content::Random];

    pub fn name(self) -> &'static str {
        match self {
            Content::Real => "real",
            Content::Random => "random",
        }
    }

    pub fn parse(text: &str) -> Result<Content, String> {
        match text {
            "real" => Ok(Content::Real),
            "random" => Ok(Content::Random),
            _ => Err(format!("unknown content '{text}' (real or random)")),
        }
    }
}

/// Which frame an entry reads: the frame itself or its edge map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Frame,
    Edges,
}

/// One input frame, 8-bit, on the host.
pub struct Input {
    pub content: Content,
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

pub fn parse_sizes(text: &str) -> Result<Vec<(usize, usize)>, String> {
    text.split(',').filter(|s| !s.is_empty()).map(parse_size).collect()
}

pub fn path(dir: &Path, kind: InputKind, content: Content, width: usize, height: usize) -> PathBuf {
    let prefix = match kind {
        InputKind::Frame => "",
        InputKind::Edges => "edges-",
    };
    dir.join(format!("{prefix}{}-{width}x{height}.u8", content.name()))
}

/// Reads an input written by [`generate`] (or, for edge maps, by the OpenCV script).
pub fn load(
    dir: &Path,
    kind: InputKind,
    content: Content,
    width: usize,
    height: usize,
) -> Result<Input, String> {
    let p = path(dir, kind, content, width, height);
    let pixels = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    if pixels.len() != width * height {
        return Err(format!("{}: {} bytes, expected {width}x{height}", p.display(), pixels.len()));
    }
    Ok(Input { content, width, height, pixels })
}

/// The first frame of an 8-bit fixture (PGM, PNG, ...), as (width, height, samples).
pub fn read_fixture(path: &Path) -> Result<(usize, usize, Vec<u8>), String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = FrameReader::new(BufReader::new(file), ReadOptions::default());
    let frame = reader
        .next_frame()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no frame", path.display()))?;
    match frame.pixels {
        Pixels::U8(v) => Ok((frame.width, frame.height, v.into_vec())),
        _ => Err(format!("{}: a 16-bit or float fixture; the benchmark is 8-bit", path.display())),
    }
}

/// `width x height` samples of `content`: the fixture scaled by nearest neighbour (source pixel
/// (x * fw / width, y * fh / height)), or uniform random bytes from a fixed seed.
pub fn generate(content: Content, fixture: &(usize, usize, Vec<u8>), width: usize, height: usize) -> Vec<u8> {
    match content {
        Content::Real => {
            let (fw, fh, src) = fixture;
            let cols: Vec<usize> = (0..width).map(|x| x * fw / width).collect();
            let mut out = Vec::with_capacity(width * height);
            for y in 0..height {
                let row = &src[(y * fh / height) * fw..][..*fw];
                out.extend(cols.iter().map(|&x| row[x]));
            }
            out
        }
        Content::Random => {
            let mut rng = fastrand::Rng::with_seed(0x6869_7374_6f70_6970 ^ (width * 65_537 + height) as u64);
            let mut out = vec![0u8; width * height];
            rng.fill(&mut out);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_neighbour_scaling_repeats_pixels() {
        let fixture = (2, 2, vec![1u8, 2, 3, 4]);
        assert_eq!(generate(Content::Real, &fixture, 4, 2), vec![1, 1, 2, 2, 3, 3, 4, 4]);
        assert_eq!(generate(Content::Real, &fixture, 3, 3), vec![1, 1, 2, 1, 1, 2, 3, 3, 4]);
    }

    #[test]
    fn random_content_is_deterministic_and_spread() {
        let fixture = (1, 1, vec![0u8]);
        let a = generate(Content::Random, &fixture, 64, 64);
        assert_eq!(a, generate(Content::Random, &fixture, 64, 64));
        let distinct = a.iter().copied().collect::<std::collections::HashSet<u8>>().len();
        assert!(distinct > 200);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_sizes("640x651,16384x16384").unwrap(), vec![(640, 651), (16384, 16384)]);
        assert!(parse_sizes("640").is_err());
    }
}
