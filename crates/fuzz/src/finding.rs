//! What a check found, and the folder of saved findings that the regression test replays.
//!
//! Each finding is two files: `KIND-HASH.bin` (the input; `KIND-HASH.raw-WxH[-16].bin` when it is
//! read as raw frames) and `KIND-HASH.txt`, one line `SIGNATURE | DETAIL`. The signature names the
//! defect (kind and place), so one defect found again by another input is not saved twice.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::input::Input;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// The reader panicked.
    Panic,
    /// A read held more heap than `allocation_bound` allows.
    Alloc,
    /// A read took longer than the time limit, but ended.
    Slow,
    /// A read had not ended long after the time limit: the run stops there.
    Hang,
    /// Reading from a slice and from a pipe gave different frames or errors.
    Mismatch,
    /// More frames than the input has bytes: the reader is not consuming its input.
    Endless,
    /// The process aborted while reading (stack overflow, failed allocation, double panic).
    Crash,
}

impl FindingKind {
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Panic => "panic",
            FindingKind::Alloc => "alloc",
            FindingKind::Slow => "slow",
            FindingKind::Hang => "hang",
            FindingKind::Mismatch => "mismatch",
            FindingKind::Endless => "endless",
            FindingKind::Crash => "crash",
        }
    }

    /// Whether shrinking an input of this kind is affordable: slow ones take seconds per try.
    pub fn minimizable(self) -> bool {
        !matches!(self, FindingKind::Slow | FindingKind::Hang | FindingKind::Crash)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// Kind and place, e.g. `panic in zune-jpeg-0.5.15/src/mcu.rs` or `alloc in png`: the same
    /// signature is taken for the same defect.
    pub signature: String,
    /// What happened to this input, one line.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} | {}", self.signature, self.detail)
    }
}

/// A finding as saved: its input and its description line.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub input: Input,
    pub signature: String,
    pub detail: String,
}

/// The folder of saved findings (`crates/fuzz/regressions` for the real thing).
#[derive(Debug, Clone)]
pub struct Regressions {
    pub dir: PathBuf,
}

impl Regressions {
    /// The project's own folder, where the replay test looks.
    pub fn in_repository() -> Regressions {
        Regressions { dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions") }
    }

    /// Every saved finding, in file-name order; an absent folder holds none.
    pub fn load(&self) -> io::Result<Vec<Saved>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut paths = entries.map(|e| e.map(|e| e.path())).collect::<io::Result<Vec<_>>>()?;
        paths.sort();
        let mut saved = Vec::new();
        for path in paths {
            let Some(input) = Input::load(&path)? else { continue };
            let note = fs::read_to_string(description_path(&path)).unwrap_or_default();
            let (signature, detail) = note.trim().split_once(" | ").unwrap_or((note.trim(), ""));
            saved.push(Saved { path, input, signature: signature.to_owned(), detail: detail.to_owned() });
        }
        Ok(saved)
    }

    /// Saves `input` as a finding of `finding`'s kind; returns the input's path.
    pub fn save(&self, input: &Input, finding: &Finding) -> io::Result<PathBuf> {
        fs::create_dir_all(&self.dir)?;
        let stem = format!("{}-{:016x}", finding.kind.name(), input.fingerprint());
        let path = self.dir.join(input.file_name(&stem));
        fs::write(&path, &input.bytes)?;
        fs::write(description_path(&path), format!("{finding}\n"))?;
        Ok(path)
    }
}

/// `KIND-HASH.txt` beside `KIND-HASH[.raw-...].bin`.
fn description_path(input: &Path) -> PathBuf {
    let name = input.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or(name);
    input.with_file_name(format!("{stem}.txt"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use histopipe_frame::{Depth, RawSpec};

    #[test]
    fn saved_findings_load_back_with_their_mode_and_signature() {
        let dir = std::env::temp_dir().join(format!("histopipe-fuzz-finding-{}", std::process::id()));
        let regressions = Regressions { dir: dir.clone() };
        assert!(regressions.load().unwrap().is_empty(), "an absent folder holds nothing");
        let spec = RawSpec { width: 2, height: 1, depth: Depth::U16 };
        let input = Input::raw(vec![1, 2, 3], spec);
        let finding = Finding {
            kind: FindingKind::Mismatch,
            signature: "mismatch in raw".into(),
            detail: "slice: 1 frame; pipe: 0".into(),
        };
        let path = regressions.save(&input, &finding).unwrap();
        assert!(path.to_string_lossy().ends_with(".raw-2x1-16.bin"));
        let saved = regressions.load().unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].input, input);
        assert_eq!(saved[0].signature, "mismatch in raw");
        assert_eq!(saved[0].detail, "slice: 1 frame; pipe: 0");
    }
}
