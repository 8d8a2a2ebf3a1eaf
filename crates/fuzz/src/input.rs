//! One fuzz input: the bytes of a stream and how the reader is told to read them.

use std::path::Path;

use histopipe_frame::{Depth, RawSpec, ReadOptions};

use crate::digest::Digest;

/// A stream of bytes, read either as self-describing frames or as headerless raw frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub bytes: Vec<u8>,
    /// `Some` for `--raw WxH[:16]` reading.
    pub raw: Option<RawSpec>,
}

impl Input {
    pub fn described(bytes: Vec<u8>) -> Input {
        Input { bytes, raw: None }
    }

    pub fn raw(bytes: Vec<u8>, spec: RawSpec) -> Input {
        Input { bytes, raw: Some(spec) }
    }

    /// How the reader reads this input; `gray` asks for colour frames as gray (the harness reads
    /// every input both ways: [`crate::target::Mode`]).
    pub fn options(&self, max_pixels: u64, gray: bool) -> ReadOptions {
        ReadOptions { raw: self.raw, max_pixels, gray }
    }

    /// A fingerprint of the bytes and the mode: names files, seeds the pipe's chunk sizes.
    pub fn fingerprint(&self) -> u64 {
        let mut d = Digest::new();
        d.bytes(&self.bytes);
        if let Some(spec) = self.raw {
            d.word(spec.width as u64);
            d.word(spec.height as u64);
            d.word(spec.depth.bytes() as u64);
        }
        d.finish()
    }

    /// The file name for this input: `STEM.bin`, or `STEM.raw-WxH.bin` / `STEM.raw-WxH-16.bin`
    /// for raw reading, so that a saved input says how to read it.
    pub fn file_name(&self, stem: &str) -> String {
        match self.raw {
            None => format!("{stem}.bin"),
            Some(spec) => format!("{stem}.{}.bin", raw_tag(spec)),
        }
    }

    /// Reads an input saved under a name made by [`Input::file_name`]; `None` for other files.
    pub fn load(path: &Path) -> std::io::Result<Option<Input>> {
        let Some(mode) = path.file_name().and_then(|n| n.to_str()).and_then(mode_of_name) else {
            return Ok(None);
        };
        let bytes = std::fs::read(path)?;
        Ok(Some(Input { bytes, raw: mode }))
    }

    /// The option a `histopipe` tool takes to read this input as the harness does.
    pub fn describe_mode(&self) -> String {
        match self.raw {
            None => "self-describing frames, kept in colour and read as gray".to_owned(),
            Some(spec) => format!("--raw {}", raw_tag(spec).trim_start_matches("raw-").replace('-', ":")),
        }
    }
}

fn raw_tag(spec: RawSpec) -> String {
    let bits = if spec.depth == Depth::U16 { "-16" } else { "" };
    format!("raw-{}x{}{bits}", spec.width, spec.height)
}

/// `Some(None)` for `STEM.bin`, `Some(Some(spec))` for `STEM.raw-WxH[-16].bin`, `None` otherwise.
fn mode_of_name(name: &str) -> Option<Option<RawSpec>> {
    let stem = name.strip_suffix(".bin")?;
    match stem.rsplit_once(".raw-") {
        None => Some(None),
        Some((_, spec)) => RawSpec::parse(&spec.replace('-', ":")).ok().map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_carry_the_mode() {
        let spec = RawSpec { width: 3, height: 2, depth: Depth::U16 };
        let raw = Input::raw(vec![1, 2], spec);
        assert_eq!(raw.file_name("panic-00ff"), "panic-00ff.raw-3x2-16.bin");
        assert_eq!(mode_of_name("panic-00ff.raw-3x2-16.bin"), Some(Some(spec)));
        assert_eq!(raw.describe_mode(), "--raw 3x2:16");
        let described = Input::described(vec![1, 2]);
        assert_eq!(described.file_name("x"), "x.bin");
        assert_eq!(mode_of_name("x.bin"), Some(None));
        assert_eq!(mode_of_name("x.txt"), None);
        assert_ne!(raw.fingerprint(), described.fingerprint());
    }
}
