//! The path templates' target: `histopipe_cli::PathTemplate` (`-o out/{dir}/{stem}.png`,
//! `--draw '{dir}/{name}'`) parsed from mutated text and expanded against hostile sources.
//!
//! An input is the template's text, and after its first line break a source file's name (any
//! bytes). The template is expanded for that name and for [`HOSTILE`] names, each as read from a
//! stream (`# histopipe-source`) and as named by the user. Parsing and expanding must not panic,
//! and a name read from a stream must keep docs/formats.md's promise ("A source read from a stream
//! is untrusted"): the path never leaves the folder the pattern names ([`escape`]) where a plain
//! name (`f/f.f`) keeps inside it and the template's text has no `..` of its own, and holds no
//! control character the template's text does not.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use histopipe_cli::PathTemplate;
use histopipe_frame::Source;

use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Checked;
use crate::panics::guarded;
use crate::seeds::Seed;
use crate::target::Limits;

/// Names a stream may give: climbing, absolute, dots, control characters, long, empty.
pub const HOSTILE: &[&[u8]] = &[
    b"x.pgm",
    b"./x.pgm",
    b"a/./b.pgm",
    b"../x.pgm",
    b"a/../../b.pgm",
    b"/etc/passwd",
    b"//x",
    b".",
    b"..",
    b"...",
    b"..pgm",
    b"a/..",
    b"a/.",
    b"a/",
    b"",
    b"a\nb.pgm",
    b"\x1b[2J.pgm",
    b"dir\x7f/x.pgm",
    b"\xff\xfe.pgm",
];

/// The plain name whose path says where the template's own text puts a file.
const PLAIN: &str = "f/f.f";

/// Templates and names to start from.
pub fn seeds() -> Vec<Seed> {
    let long = "d/".repeat(600) + &"n".repeat(300) + ".pgm";
    [
        "out/{stem}.png\nsub/a.pgm",
        "out/{dir}/{stem}-{i:03}.png\n../../etc/x.pgm",
        "{dir}/{name}\nimages/a.jpg",
        "out/{n:04}-{i}.tif\na.pgm",
        "out/{{x}}/{stem}.{n}.png\nb.png",
        "/tmp/out/{dir}/{stem}.pgm\na/b/c.pgm",
        "./{stem}_{i:020}.npy\nc.npy",
        "out/{dir}{stem}/x.png\nd/e.pgm",
        &format!("o/{{dir}}/{{stem}}.png\n{long}"),
    ]
    .iter()
    .map(|text| Seed {
        name: format!("template {}", text.lines().next().unwrap_or("")),
        input: Input::described(text.as_bytes().to_vec()),
    })
    .collect()
}

/// Why `path`, made from a template whose text is `text`, is outside the folder the pattern names
/// (the text before its first field, up to its last `/`), if it is: it does not start with that
/// folder, or climbs above it (`..`), or is absolute where the folder is not.
pub fn escape(text: &str, path: &Path) -> Option<String> {
    let before = &text[..text.find('{').unwrap_or(text.len())];
    let folder = Path::new(&before[..before.rfind('/').map_or(0, |i| i + 1)]);
    let mut parts = path.components();
    for want in folder.components() {
        if parts.next() != Some(want) {
            return Some(format!("not in {}", folder.display()));
        }
    }
    let mut depth = 0i64;
    for part in parts {
        match part {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => depth -= 1,
            Component::RootDir | Component::Prefix(_) => return Some("absolute".into()),
        }
        if depth < 0 {
            return Some(format!("climbs out of '{}'", folder.display()));
        }
    }
    None
}

fn panic_finding(what: &str, note: crate::panics::PanicNote) -> Finding {
    let file = note.location.rsplit_once(':').map_or(note.location.as_str(), |(file, _)| file);
    Finding {
        kind: FindingKind::Panic,
        signature: format!("panic in {file} ({what})"),
        detail: format!("{what}: {note}").replace('\n', " "),
    }
}

/// Parses the template of `input` and expands it, as the module says.
pub fn check(input: &Input, _limits: &Limits) -> Result<Checked, Finding> {
    let (text, name) = match input.bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (&input.bytes[..i], &input.bytes[i + 1..]),
        None => (&input.bytes[..], &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    let parsed =
        guarded(|| PathTemplate::parse("-o", &text)).map_err(|note| panic_finding("parsing", note))?;
    let mut shape = Digest::new();
    let template = match parsed {
        Ok(template) => template,
        Err(e) => {
            shape.bytes(e.split(['\'', '{']).next().unwrap_or_default().as_bytes());
            return Ok(Checked { shape: shape.finish(), text: format!("refused: {e}") });
        }
    };
    shape.word(template.has_fields() as u64);
    let n = (input.fingerprint() % 1000) as usize + 1;
    let expand = |source: &Source| {
        guarded(|| template.input_of(Some(source), n).map_err(|e| e.to_string()))
            .map_err(|note| panic_finding("expanding", note))
    };
    let plain = expand(&Source::from_stream(PLAIN, 1))?;
    // A template that climbs itself (`{dir}/..`) is the user's own; one that climbs only when a
    // field is `.` (`.{dir}`, `{dir}{dir}`) is not.
    let plain_inside = plain.as_ref().is_ok_and(|p| escape(&text, p).is_none()) && !text.contains("..");
    let mut made = 0;
    for name in std::iter::once(name).chain(HOSTILE.iter().copied()) {
        let path = Path::new(OsStr::from_bytes(name));
        let index = name.len() % 7 + 1;
        let named = expand(&Source::new(path, index))?;
        let streamed = expand(&Source::from_stream(path, index))?;
        shape.word(named.is_ok() as u64 * 2 + streamed.is_ok() as u64);
        let Ok(out) = streamed else { continue };
        made += 1;
        let shown = format!("'{}' from the name {:?}", out.display(), OsStr::from_bytes(name));
        let bytes = out.as_os_str().as_bytes();
        if bytes.iter().any(|b| b.is_ascii_control() && !text.as_bytes().contains(b)) {
            return Err(Finding {
                kind: FindingKind::Mismatch,
                signature: "mismatch in templates: a control character from the stream".into(),
                detail: format!("{text:?} made {shown}, read from a stream"),
            });
        }
        if plain_inside {
            if let Some(why) = escape(&text, &out) {
                return Err(Finding {
                    kind: FindingKind::Mismatch,
                    signature: "mismatch in templates: a stream's name leaves the folder".into(),
                    detail: format!("{text:?} made {shown}, read from a stream: {why}"),
                });
            }
        }
    }
    Ok(Checked { shape: shape.finish(), text: format!("{text:?}: {made} paths from a stream's names") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_leaves_its_folder_by_climbing_or_by_being_elsewhere() {
        assert_eq!(escape("out/{stem}.png", Path::new("out/a.png")), None);
        assert_eq!(escape("out/{dir}/x", Path::new("out/a/../b/x")), None);
        assert!(escape("out/{dir}/x", Path::new("out/../x")).unwrap().starts_with("climbs out"));
        assert!(escape("out/{dir}/x", Path::new("x")).unwrap().starts_with("not in"));
        assert!(escape("{dir}/x", Path::new("/etc/x")).is_some());
        assert_eq!(escape("/tmp/o/{stem}", Path::new("/tmp/o/a")), None);
        assert_eq!(escape("../up/{stem}", Path::new("../up/a")), None);
    }

    #[test]
    fn the_seeds_and_hostile_names_keep_the_promise() {
        for seed in seeds() {
            let checked = check(&seed.input, &Limits::standard());
            assert!(checked.is_ok(), "{}: {checked:?}", seed.name);
        }
    }

    /// A template whose text is itself a climb is the user's, not a finding; but a field that
    /// climbs is (planted here by a name given as the user's own, which may climb, checked as
    /// if it had come from a stream).
    #[test]
    fn a_climbing_name_is_caught() {
        let template = PathTemplate::parse("-o", "out/{dir}/{stem}.png").unwrap();
        let own = template.input_of(Some(&Source::new("../../home/x.pgm", 1)), 1).unwrap();
        assert!(escape(template.text(), &own).is_some(), "{}", own.display());
        let text = "out/{stem}/../../../x.png";
        let plain =
            PathTemplate::parse("-o", text).unwrap().input_of(Some(&Source::from_stream(PLAIN, 1)), 1);
        assert!(escape(text, &plain.unwrap()).is_some(), "the user's own climb: not checked");
    }
}
