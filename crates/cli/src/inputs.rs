//! The inputs named on the command line: `TOOL [OPTIONS] [FILE...]`, standard input for `-` or
//! when no file is named. Their frames form one stream, in order, as `cat` would give them, but
//! each file is read on its own, so a JPEG or TIFF file is exactly its own frames.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::Place;
use crate::Error;

/// One input.
#[derive(Debug, Clone)]
pub(crate) enum Input {
    Stdin,
    File(PathBuf),
    /// Bytes in memory, a stand-in for standard input in tests.
    #[cfg(test)]
    Bytes(std::sync::Arc<[u8]>),
}

impl Input {
    fn from_operand(operand: OsString) -> Input {
        if operand == "-" {
            Input::Stdin
        } else {
            Input::File(operand.into())
        }
    }

    /// The file's path as given: the source of its frames and the place of its errors.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Input::File(p) => Some(p),
            _ => None,
        }
    }

    /// The input's bytes, opened.
    pub(crate) fn open(&self) -> Result<Box<dyn io::Read + Send>, Error> {
        match self {
            Input::Stdin => Ok(Box::new(io::stdin())),
            Input::File(path) => match File::open(path) {
                Ok(file) => Ok(Box::new(file)),
                Err(e) => Err(Error::io(&e).at(Place::file(path))),
            },
            #[cfg(test)]
            Input::Bytes(bytes) => Ok(Box::new(io::Cursor::new(bytes.clone()))),
        }
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

    /// Checks, before anything is read, that every named file is there and is not a folder: a
    /// misspelt name among many fails the command at once, not after the files before it.
    pub(crate) fn check(&self) -> Result<(), Error> {
        for path in self.0.iter().filter_map(Input::path) {
            match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => {
                    return Err(Error::usage("is a folder, not an image file").at(Place::file(path)))
                }
                Ok(_) => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn no_operand_or_a_dash_is_standard_input() {
        assert!(matches!(Inputs::new([]).0[..], [Input::Stdin]));
        let inputs = Inputs::new(["a.pgm".into(), "-".into(), "--".into()]);
        assert!(matches!(&inputs.0[..], [Input::File(a), Input::Stdin, Input::File(b)]
            if a == Path::new("a.pgm") && b == Path::new("--")));
    }

    #[test]
    fn missing_files_and_folders_are_refused_before_reading() {
        let dir = std::env::temp_dir();
        let e = Inputs::new([dir.clone().into_os_string()]).check().unwrap_err();
        assert_eq!((e.kind, e.place.file.as_deref()), (ErrorKind::Usage, Some(dir.as_path())));
        let missing = dir.join("histopipe-no-such-file.pgm");
        let e = Inputs::new([missing.clone().into_os_string()]).check().unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no such file", missing.display()));
        assert!(Inputs::new(["-".into()]).check().is_ok());
    }
}
