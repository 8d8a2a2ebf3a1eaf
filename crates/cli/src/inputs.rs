//! The inputs named on the command line: `TOOL [OPTIONS] [FILE...]`, standard input for `-` or
//! when no file is named. Their frames form one stream, in order, as `cat` would give them, but
//! each file is read on its own, so a JPEG or TIFF file is exactly its own frames.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Seek};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use histopipe_frame::Unread;

use crate::error::Place;
use crate::Error;

/// One input.
#[derive(Debug, Clone)]
pub(crate) enum Input {
    Stdin,
    /// A file named on the command line, and what its opening has come to.
    File(PathBuf, Arc<Mutex<Opening>>),
    /// Bytes in memory, a stand-in for standard input in tests.
    #[cfg(test)]
    Bytes(std::sync::Arc<[u8]>),
}

/// How far the opening of a named input has come: an output that is about to replace the file
/// before it is read opens it first ([`hold_before_replacing`]), so it is read as it was when the
/// tool started (`pad -o 'frames/{n}.pgm' frames/*.pgm` renumbering a folder in place).
#[derive(Debug, Default)]
pub(crate) enum Opening {
    #[default]
    NotYet,
    /// Opened ahead of its turn, its bytes kept from an output that replaced its path.
    Held(File),
    Opened,
}

impl Input {
    fn from_operand(operand: OsString) -> Input {
        if operand == "-" {
            Input::Stdin
        } else {
            Input::file(operand.into())
        }
    }

    pub(crate) fn file(path: PathBuf) -> Input {
        Input::File(path, Arc::default())
    }

    /// The file's path as given: the source of its frames and the place of its errors.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Input::File(p, _) => Some(p),
            _ => None,
        }
    }

    /// The input's bytes, opened.
    pub(crate) fn open(&self) -> Result<Opened, Error> {
        match self {
            Input::Stdin => {
                let probe = io::stdin().as_fd().try_clone_to_owned().ok().map(File::from);
                Ok(Opened { stream: Box::new(io::stdin()), unread: probe.map(unread_of) })
            }
            Input::File(path, opening) => {
                // Under the lock, so that no output replaces the path between the look and the open.
                let mut opening = opening.lock().unwrap_or_else(|e| e.into_inner());
                let file = match std::mem::replace(&mut *opening, Opening::Opened) {
                    Opening::Held(file) => Ok(file),
                    _ => File::open(path),
                };
                let place = Place::file(path);
                match file {
                    Ok(file) if file.metadata().is_ok_and(|m| m.is_dir()) => {
                        Err(Error::usage("is a folder, not an image file").at(place))
                    }
                    Ok(file) => {
                        let probe = file.try_clone().ok();
                        Ok(Opened { stream: Box::new(file), unread: probe.map(unread_of) })
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        Err(Error::usage("no such file").at(place))
                    }
                    Err(e) => Err(Error::io(&e).at(place)),
                }
            }
            #[cfg(test)]
            Input::Bytes(bytes) => {
                Ok(Opened { stream: Box::new(io::Cursor::new(bytes.clone())), unread: None })
            }
        }
    }
}

/// The named inputs by their files' identity (device and inode), as [`Inputs::check`] found
/// them: what an output must not replace unread.
type Identity = (u64, u64);
type Named = HashMap<Identity, Vec<Arc<Mutex<Opening>>>>;
static NAMED: Mutex<Option<Named>> = Mutex::new(None);

/// Called before an output is renamed onto `path`: if the file there is a named input not yet
/// opened, opens it now and keeps it for its turn, so the output never replaces an input unread.
/// Descriptors held so may pass the soft limit on open files: it is raised to the hard one.
pub(crate) fn hold_before_replacing(path: &Path) -> io::Result<()> {
    let Some(id) = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| identity(&m)) else {
        return Ok(());
    };
    let named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
    for opening in named.as_ref().and_then(|n| n.get(&id)).into_iter().flatten() {
        let mut opening = opening.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*opening, Opening::NotYet) {
            let file = File::open(path).or_else(|e| {
                if e.raw_os_error() == Some(libc::EMFILE) && raise_open_files_limit() {
                    File::open(path)
                } else {
                    Err(e)
                }
            })?;
            if file.metadata().map(|m| identity(&m))? == id {
                *opening = Opening::Held(file);
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

/// Raises the soft limit on open files to the hard one; whether it was raised.
fn raise_open_files_limit() -> bool {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write one plain struct, valid for the calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max {
            return false;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0
    }
}

/// Every input, in order; never empty.
#[derive(Debug, Clone)]
pub(crate) struct Inputs(Vec<Input>);

impl Inputs {
    /// The inputs the command line's operands name: standard input when there are none.
    pub(crate) fn new(operands: impl IntoIterator<Item = OsString>) -> Inputs {
        let inputs: Vec<Input> = operands.into_iter().map(Input::from_operand).collect();
        if inputs.is_empty() {
            Inputs(vec![Input::Stdin])
        } else {
            Inputs(inputs)
        }
    }

    #[cfg(test)]
    pub(crate) fn of(inputs: Vec<Input>) -> Inputs {
        Inputs(inputs)
    }

    /// Checks, before anything is read, that every named file is there and is not a folder:
    /// with `--fail-fast` (`strict`), or a single input, a misspelt name fails the command at
    /// once, not after the files before it; otherwise such a file fails on its turn, as any bad
    /// file does, and the others are read. The files are listed by identity, for
    /// [`hold_before_replacing`].
    pub(crate) fn check(&self, strict: bool) -> Result<(), Error> {
        let strict = strict || self.0.len() == 1;
        for input in &self.0 {
            let Input::File(path, opening) = input else { continue };
            let found = std::fs::metadata(path);
            if !strict && !found.as_ref().is_ok_and(|m| !m.is_dir()) {
                continue;
            }
            match found {
                Ok(m) if m.is_dir() => {
                    return Err(Error::usage("is a folder, not an image file").at(Place::file(path)))
                }
                Ok(m) => {
                    let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
                    named.get_or_insert_default().entry(identity(&m)).or_default().push(opening.clone());
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(Error::usage("no such file").at(Place::file(path)))
                }
                Err(e) => return Err(Error::io(&e).at(Place::file(path))),
            }
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Input> {
        self.0.get(i)
    }
}

/// An input, opened: its bytes, and a way to learn how many of them are still unread where the
/// input is a regular file (a named one, or standard input redirected from one).
pub(crate) struct Opened {
    pub stream: Box<dyn io::Read + Send>,
    pub unread: Option<Unread>,
}

/// The bytes of `file` past its offset, while it is a regular file: a copy of the descriptor the
/// input is read through shares its offset, so this is what the input has not handed out yet.
fn unread_of(mut file: File) -> Unread {
    Box::new(move || {
        let meta = file.metadata().ok().filter(|m| m.is_file())?;
        let at = file.stream_position().ok()?;
        Some(meta.len().saturating_sub(at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_regular_file_says_how_much_of_it_is_unread_and_a_pipe_does_not() {
        let path = std::env::temp_dir().join(format!("histopipe-unread-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 1000]).unwrap();
        let Opened { mut stream, unread } = Input::file(path.clone()).open().unwrap();
        let mut unread = unread.expect("a regular file");
        assert_eq!(unread(), Some(1000));
        let mut first = [0u8; 300];
        stream.read_exact(&mut first).unwrap();
        assert_eq!(unread(), Some(700), "the copy of the descriptor shares its offset");
        std::fs::remove_file(&path).unwrap();
        let (r, _w) = {
            let mut fds = [0; 2];
            // SAFETY: pipe fills the two fds, each then owned by one File.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            use std::os::fd::FromRawFd;
            // SAFETY: the two fds are open and owned by nothing else.
            unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
        };
        assert_eq!(unread_of(r)(), None, "a pipe's rest is unknown");
    }
    use crate::ErrorKind;

    #[test]
    fn no_operand_or_a_dash_is_standard_input() {
        assert!(matches!(Inputs::new([]).0[..], [Input::Stdin]));
        let inputs = Inputs::new(["a.pgm".into(), "-".into(), "--".into()]);
        assert!(matches!(&inputs.0[..], [Input::File(a, _), Input::Stdin, Input::File(b, _)]
            if a == Path::new("a.pgm") && b == Path::new("--")));
    }

    #[test]
    fn missing_files_and_folders_are_refused_before_reading() {
        let dir = std::env::temp_dir();
        let e = Inputs::new([dir.clone().into_os_string()]).check(false).unwrap_err();
        assert_eq!((e.kind, e.place.file.as_deref()), (ErrorKind::Usage, Some(dir.as_path())));
        let missing = dir.join("histopipe-no-such-file.pgm");
        let e = Inputs::new([missing.clone().into_os_string()]).check(false).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no such file", missing.display()));
        assert!(Inputs::new(["-".into()]).check(false).is_ok());
    }
}
