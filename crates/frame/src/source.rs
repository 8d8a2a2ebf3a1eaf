//! Where a frame came from: the file it was read from and its place in that file. A tool that
//! reads named files sets it; every filter keeps it (as it keeps the geometry), and it travels
//! through pipes as a header comment, so the last tool of a pipeline can still name its outputs and
//! its errors after the input files: `# histopipe-source scans/a\x20b.jpg 1` is the first frame of
//! `scans/a b.jpg`. The path is written with every byte outside printable ASCII, and the
//! backslash, as `\xHH`: a path may hold spaces, line breaks or bytes that are not UTF-8, and must
//! come back the same.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

const COMMENT_KEY: &str = "histopipe-source";

/// The file a frame was read from, and which of its frames it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    /// The path as it was given on the command line.
    pub path: PathBuf,
    /// The frame's number in that file, from 1.
    pub index: usize,
    /// Who gave the path: the user, or the bytes of a stream.
    pub origin: Origin,
}

/// Who named a frame's source file. A name the user gave is the user's to choose; a name read
/// from a stream's header is as untrusted as every other byte of it, so it may not steer where
/// outputs go (see `-o`'s fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Named on the command line: the reader read the file itself.
    Named,
    /// Read from a `# histopipe-source` comment of the stream.
    Stream,
}

impl Source {
    /// A file named on the command line.
    pub fn new(path: impl Into<PathBuf>, index: usize) -> Source {
        Source { path: path.into(), index, origin: Origin::Named }
    }

    /// A file named by a stream's header.
    pub fn from_stream(path: impl Into<PathBuf>, index: usize) -> Source {
        Source { path: path.into(), index, origin: Origin::Stream }
    }

    /// Parses the text after `#` of a header comment: `None` if it is not a source comment, an
    /// error if it is a malformed one.
    pub(crate) fn parse_comment(comment: &str) -> Option<Result<Source, String>> {
        let rest = comment.trim().strip_prefix(COMMENT_KEY)?;
        if !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            // Another key that starts with the same word, e.g. `histopipe-sources`.
            return None;
        }
        let bad = || format!("bad source comment '{}'", comment.trim());
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        let [path, index] = fields[..] else { return Some(Err(bad())) };
        let index = match index.parse::<usize>() {
            Ok(i) if i >= 1 && index.bytes().all(|b| b.is_ascii_digit()) => i,
            _ => return Some(Err(bad())),
        };
        Some(unescape(path).map(|path| Source::from_stream(path, index)).ok_or_else(bad))
    }
}

/// The header comment's text, without the leading `#`.
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " {COMMENT_KEY} {} {}", escape(&self.path), self.index)
    }
}

fn path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        path.to_string_lossy().into_owned().into_bytes()
    }
}

fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(OsString::from_vec(bytes)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(bytes).ok().map(|s| PathBuf::from(OsString::from(s)))
    }
}

/// The path as one token of printable ASCII.
fn escape(path: &Path) -> String {
    let mut out = String::new();
    for b in path_bytes(path) {
        if b.is_ascii_graphic() && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The inverse of [`escape`]; `None` for anything it cannot have written.
fn unescape(text: &str) -> Option<PathBuf> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'\\' {
            bytes.push(b);
            rest = tail;
            continue;
        }
        let hex = tail.strip_prefix(b"x").filter(|h| h.len() >= 2)?;
        let digits = std::str::from_utf8(&hex[..2]).ok()?;
        if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
            return None;
        }
        bytes.push(u8::from_str_radix(digits, 16).ok()?);
        rest = &hex[2..];
    }
    if bytes.is_empty() {
        return None;
    }
    path_from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(source: &Source) -> Source {
        Source::parse_comment(&source.to_string()).unwrap().unwrap()
    }

    #[test]
    fn paths_round_trip_whatever_they_hold() {
        for path in ["a.pgm", "scans/b c.jpg", "line\nbreak", "back\\slash", "tab\there", "é.png", "%x"] {
            let s = Source::new(path, 3);
            let text = s.to_string();
            assert!(text.bytes().all(|b| b.is_ascii_graphic() || b == b' '), "{text:?}");
            assert_eq!(round_trip(&s), Source::from_stream(path, 3), "{path:?}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let raw = PathBuf::from(OsString::from_vec(vec![b'a', 0xff, 0xfe, b'/', 0x80]));
            let s = Source::new(raw.clone(), 1);
            assert_eq!(round_trip(&s), Source::from_stream(raw, 1), "bytes that are not UTF-8");
        }
    }

    #[test]
    fn malformed_comments_are_errors_and_others_are_ignored() {
        assert!(Source::parse_comment(" histopipe-geometry 1 0 0 0 1 0 1 1").is_none());
        assert!(Source::parse_comment(" histopipe-sources a 1").is_none());
        for bad in ["a", "a 0", "a -1", "a 1 2", "a\\x4 1", "a\\y41 1", "a +1", ""] {
            let comment = format!(" histopipe-source {bad}");
            assert!(Source::parse_comment(&comment).unwrap().is_err(), "{bad:?}");
        }
        assert_eq!(
            Source::parse_comment(" histopipe-source a\\x20b 7").unwrap().unwrap(),
            Source::from_stream("a b", 7),
            "a name read from a stream is marked as such"
        );
    }
}
