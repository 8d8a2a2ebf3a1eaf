//! Where a tool's output goes (`-o PATH`) and in what format: standard output; one file, written
//! atomically; or, when PATH holds fields (`out/{stem}.png`), one file per frame, named after the
//! file the frame came from. The format follows PATH's extension.

use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

use histopipe_frame::{Container, Frame, Origin, Source};

use crate::error::{one_line, Place};
use crate::taken::{resolved_folder, Taken, TakenFiles};
use crate::Error;

/// A format an output file's extension names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `.pgm`: binary PGM, gray frames.
    Pgm,
    /// `.pnm`: binary netpbm by the frame's channels.
    Pnm,
    Pam,
    /// `.jpg`, `.jpeg`.
    Jpeg,
    Pfm,
    /// NumPy's `.npy`: a frame, or a table.
    Npy,
    Png,
    /// `.tif`, `.tiff`.
    Tiff,
    Raw,
    Ppm,
    Csv,
    Tsv,
}

impl OutputFormat {
    /// The format extension `ext` names, in any case.
    pub fn from_extension(ext: &str) -> Option<OutputFormat> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "pgm" => OutputFormat::Pgm,
            "pnm" => OutputFormat::Pnm,
            "jpg" | "jpeg" => OutputFormat::Jpeg,
            "pfm" => OutputFormat::Pfm,
            "npy" => OutputFormat::Npy,
            "pam" => OutputFormat::Pam,
            "png" => OutputFormat::Png,
            "tif" | "tiff" => OutputFormat::Tiff,
            "raw" => OutputFormat::Raw,
            "ppm" => OutputFormat::Ppm,
            "csv" => OutputFormat::Csv,
            "tsv" => OutputFormat::Tsv,
            _ => return None,
        })
    }

    /// The extension's usual spelling.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Pgm => "pgm",
            OutputFormat::Pnm => "pnm",
            OutputFormat::Jpeg => "jpg",
            OutputFormat::Pfm => "pfm",
            OutputFormat::Npy => "npy",
            OutputFormat::Pam => "pam",
            OutputFormat::Png => "png",
            OutputFormat::Tiff => "tiff",
            OutputFormat::Raw => "raw",
            OutputFormat::Ppm => "ppm",
            OutputFormat::Csv => "csv",
            OutputFormat::Tsv => "tsv",
        }
    }

    /// The format a tool's own `--format` option and `-o`'s extension agree on: either, or
    /// `default` when neither is given; an error when they differ.
    pub fn agreed(
        option: Option<OutputFormat>,
        extension: Option<OutputFormat>,
        default: OutputFormat,
    ) -> Result<OutputFormat, Error> {
        match (option, extension) {
            (Some(o), Some(e)) if o != e => {
                Err(Error::usage(format!("--format {} contradicts -o's extension .{}", o.name(), e.name())))
            }
            (o, e) => Ok(e.or(o).unwrap_or(default)),
        }
    }

    /// The container frames are written in, for the formats of frames.
    pub fn container(self) -> Option<Container> {
        match self {
            OutputFormat::Pgm => Some(Container::Pgm),
            OutputFormat::Pnm => Some(Container::Pnm),
            OutputFormat::Ppm => Some(Container::Ppm),
            OutputFormat::Jpeg => Some(Container::Jpeg { quality: 95 }),
            OutputFormat::Pfm => Some(Container::Pfm),
            OutputFormat::Npy => Some(Container::Npy),
            OutputFormat::Pam => Some(Container::Pam),
            OutputFormat::Png => Some(Container::Png { compression: None }),
            OutputFormat::Tiff => Some(Container::Tiff),
            OutputFormat::Raw => Some(Container::Raw),
            OutputFormat::Csv | OutputFormat::Tsv => None,
        }
    }
}

/// What a tool writes for each frame; it decides which formats `-o` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// Frames: netpbm, PNG, JPEG, TIFF, PFM, NPY or raw.
    Frames,
    /// A table: CSV, TSV or NPY.
    Table,
    /// A picture in colour: PNG or PPM.
    Drawing,
}

impl Product {
    fn accepts(self, format: OutputFormat) -> bool {
        match self {
            Product::Frames => format.container().is_some(),
            Product::Table => matches!(format, OutputFormat::Csv | OutputFormat::Tsv | OutputFormat::Npy),
            Product::Drawing => matches!(format, OutputFormat::Png | OutputFormat::Ppm),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Product::Frames => {
                "frames: give a .pgm, .ppm, .pnm, .pam, .png, .jpg, .tif, .tiff, .pfm, .npy or .raw file"
            }
            Product::Table => "a table: give a .csv, .tsv or .npy file",
            Product::Drawing => "a picture: give a .png or .ppm file",
        }
    }
}

/// Where the output goes.
#[derive(Debug)]
pub(crate) enum Target {
    Stdout,
    /// One file, written atomically.
    File(PathBuf),
    /// One file per frame, written atomically.
    Template(PathTemplate),
}

/// `-o`'s value: where, and the format its extension names (`None`: no extension, or standard
/// output; the tool's own default then).
#[derive(Debug)]
pub(crate) struct OutputSpec {
    pub target: Target,
    pub format: Option<OutputFormat>,
}

impl OutputSpec {
    /// Parses `-o`'s value (`None` or `-`: standard output); an extension that names no format
    /// histopipe writes is an error.
    pub(crate) fn parse(value: Option<&OsStr>) -> Result<OutputSpec, Error> {
        let Some(value) = value.filter(|v| *v != "-") else {
            return Ok(OutputSpec { target: Target::Stdout, format: None });
        };
        let shown = value.to_string_lossy();
        let bad = |why: String| Error::usage(format!("-o {shown}: {why}"));
        let name = Path::new(value).file_name().ok_or_else(|| bad("names no file".into()))?;
        let text = value.to_str().filter(|t| t.contains(['{', '}']));
        let target = match text {
            Some(text) => Target::Template(PathTemplate::parse("-o", text).map_err(bad)?),
            None => Target::File(value.into()),
        };
        if matches!(target, Target::Template(_)) && name.to_string_lossy().ends_with("{name}") {
            return Err(bad("{name} would keep the input's extension: write the output's out, as in \
                 out/{stem}.png"
                .into()));
        }
        let format = match Path::new(name).extension().map(|e| e.to_string_lossy()) {
            None => None,
            Some(ext) if ext.contains(['{', '}']) => {
                return Err(bad("write the extension out (as in out/{stem}-{i}.png), not as a field".into()))
            }
            Some(ext) => Some(OutputFormat::from_extension(&ext).ok_or_else(|| {
                bad(format!(
                    "histopipe does not write .{ext} files (it writes pgm, ppm, pnm, pam, png, jpg, jpeg, \
                     tif, tiff, pfm, npy, raw, csv and tsv)"
                ))
            })?),
        };
        Ok(OutputSpec { target, format })
    }

    /// The container the frames of a `product` are written in (`None`: each in the one it was
    /// read in), or why this output does not fit the product. `png`: `--png` was given.
    pub(crate) fn container(&self, product: Product, png: bool) -> Result<Option<Container>, Error> {
        if let Some(format) = self.format {
            if !product.accepts(format) {
                return Err(Error::usage(format!(
                    "-o {}: this tool writes {}",
                    self.shown(),
                    product.describe()
                )));
            }
        }
        match (product, self.format, png) {
            (Product::Frames, Some(format), true) if format != OutputFormat::Png => Err(Error::usage(
                format!("--png contradicts -o {}: the extension says the format", self.shown()),
            )),
            (Product::Frames, format, png) => Ok(format
                .and_then(OutputFormat::container)
                .or(png.then_some(Container::Png { compression: None }))),
            (Product::Table, _, true) => Err(Error::usage("--png does not apply: this tool writes a table")),
            (Product::Drawing, Some(OutputFormat::Ppm), true) => {
                Err(Error::usage("--png contradicts -o with a .ppm file"))
            }
            (Product::Table | Product::Drawing, _, _) => Ok(None),
        }
    }

    /// The path given, for messages.
    fn shown(&self) -> String {
        match &self.target {
            Target::Stdout => "-".into(),
            Target::File(p) => p.to_string_lossy().into_owned(),
            Target::Template(t) => t.text.clone(),
        }
    }
}

/// A path with fields, one file per frame: `{stem}`, `{name}`, `{dir}` of the frame's source
/// file, `{i}` its number in that file, `{n}` its number in the stream; `{i:03}` and `{n:03}`
/// pad with zeros; `{{` and `}}` are braces. `-o` and every other option that names a file per
/// frame (`--plot`) take this one grammar.
#[derive(Debug, Clone)]
pub struct PathTemplate {
    /// The option that gave it, for messages.
    option: &'static str,
    text: String,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Field(FieldSpec),
}

/// A field, and the width its number is padded to with zeros (0: not padded).
#[derive(Debug, Clone, Copy)]
struct FieldSpec {
    field: Field,
    width: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Stem,
    Name,
    Dir,
    Index,
    Number,
}

impl Field {
    /// As a path writes it.
    fn spelled(self) -> &'static str {
        match self {
            Field::Stem => "{stem}",
            Field::Name => "{name}",
            Field::Dir => "{dir}",
            Field::Index => "{i}",
            Field::Number => "{n}",
        }
    }
}

impl PathTemplate {
    /// Parses a path with fields, given to `option`; the error names an unknown or malformed
    /// field.
    pub fn parse(option: &'static str, text: &str) -> Result<PathTemplate, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err("a '}' that closes no field (write '}}' for a brace)".into()),
                '{' => {
                    let mut spec = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) => spec.push(c),
                            None => return Err(format!("the field '{{{spec}' has no '}}'")),
                        }
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    pieces.push(Piece::Field(PathTemplate::field(&spec)?));
                }
                c => literal.push(c),
            }
        }
        pieces.push(Piece::Text(literal));
        Ok(PathTemplate { option, text: text.to_owned(), pieces })
    }

    /// Whether the path has a field: without one it names one file for the whole stream.
    pub fn has_fields(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Field(_)))
    }

    /// The fields this path lacks that would tell the frame at `second` from the one at `first`
    /// (`None`: a frame no longer held, known only to be another one): `{i}` two frames of one
    /// file, `{dir}`, `{stem}` or `{name}` frames of two files where theirs differ, `{n}` any
    /// two. Two spellings of one file (`a.pgm`, `./a.pgm`) are one file, as for the outputs.
    fn missing_fields(&self, first: Option<&Place>, second: &Place) -> Vec<&'static str> {
        let mut telling = Vec::new();
        if let (Some(Place { file: Some(a), frame: i }), Place { file: Some(b), frame: j }) = (first, second)
        {
            let same_folder = resolved_folder(a) == resolved_folder(b);
            if same_folder && a.file_name() == b.file_name() {
                if i != j {
                    telling.push(Field::Index);
                }
            } else {
                if !same_folder {
                    telling.push(Field::Dir);
                }
                if a.file_stem() != b.file_stem() {
                    telling.push(Field::Stem);
                } else if a.file_name() != b.file_name() {
                    telling.push(Field::Name);
                }
            }
        }
        telling.push(Field::Number);
        let uses = |f: Field| self.pieces.iter().any(|p| matches!(p, Piece::Field(s) if s.field == f));
        telling.into_iter().filter(|&f| !uses(f)).map(Field::spelled).collect()
    }

    /// The path as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The path of the file to read for frame `n` of the stream (`hough-lines --draw
    /// '{dir}/{name}'`: the frame's own source): the fields expanded as for an output. A name
    /// read from a stream is trusted no more for reading than for writing: a `{dir}` from the
    /// stream is relative and never climbs out (`..`), so a stream cannot point a tool at
    /// `/etc` or `../../`.
    pub fn input_of(&self, source: Option<&Source>, n: usize) -> Result<PathBuf, Error> {
        self.expand(source, n).map_err(|e| e.at(Place::of(source, n)))
    }

    /// The field `{spec}` names.
    fn field(spec: &str) -> Result<FieldSpec, String> {
        let (name, width) = spec.split_once(':').unwrap_or((spec, ""));
        let field = match name {
            "stem" => Field::Stem,
            "name" => Field::Name,
            "dir" => Field::Dir,
            "i" => Field::Index,
            "n" => Field::Number,
            _ => {
                return Err(format!(
                    "unknown field {{{spec}}} (there are {{stem}}, {{name}}, {{dir}}, {{i}}, {{n}})"
                ))
            }
        };
        if width.is_empty() {
            return Ok(FieldSpec { field, width: 0 });
        }
        let numeric = matches!(field, Field::Index | Field::Number);
        match width.strip_prefix('0').map(str::parse::<usize>) {
            Some(Ok(width)) if numeric && width <= 20 => Ok(FieldSpec { field, width }),
            _ => Err(format!("bad field {{{spec}}}: only {{i}} and {{n}} take a width, as in {{{name}:04}}")),
        }
    }

    /// The path of the output of frame `n` of the stream, from `source`. A field names a file
    /// or a folder inside the folder the pattern names, never outside it: `{stem}` and `{name}`
    /// are one name (not `.` or `..`), and a `{dir}` read from a stream is a relative path
    /// without `..`; a name read from a stream holds no control characters. (A `{dir}` the user
    /// named on the command line is the user's own: `{dir}/{stem}-eq.png` writes beside an input
    /// wherever it is.)
    fn expand(&self, source: Option<&Source>, n: usize) -> Result<PathBuf, FieldError> {
        let mut path = OsString::new();
        for piece in &self.pieces {
            let FieldSpec { field, width } = match piece {
                Piece::Text(t) => {
                    path.push(t);
                    continue;
                }
                Piece::Field(spec) => *spec,
            };
            if field == Field::Number {
                path.push(format!("{n:0width$}"));
                continue;
            }
            let Some(source) = source else {
                return Err(FieldError::Usage(format!(
                    "{} {}: the frame came from standard input, with no file name for its fields: \
                     name the input files, or use {{n}}",
                    self.option, self.text
                )));
            };
            let file = &source.path;
            let refuse = |field: &str, why: &str| {
                let origin = match source.origin {
                    Origin::Named => "",
                    Origin::Stream => " (read from the stream)",
                };
                FieldError::Input(format!(
                    "{} {}: the source file's name{origin}, '{}', gives a {field} {why}",
                    self.option,
                    self.text,
                    one_line(&file.to_string_lossy())
                ))
            };
            if source.origin == Origin::Stream
                && file.as_os_str().as_encoded_bytes().iter().any(u8::is_ascii_control)
            {
                return Err(refuse("name", "with control characters"));
            }
            match field {
                Field::Stem | Field::Name => {
                    let (label, part) = if field == Field::Stem {
                        ("{stem}", file.file_stem())
                    } else {
                        ("{name}", file.file_name())
                    };
                    match part {
                        Some(p) if p != "." && p != ".." => path.push(p),
                        _ => return Err(refuse(label, "that is no file name")),
                    }
                }
                Field::Dir => match file.parent() {
                    Some(p) if !p.as_os_str().is_empty() => {
                        if source.origin == Origin::Stream {
                            if p.is_absolute() {
                                return Err(refuse("{dir}", "that is an absolute path"));
                            }
                            if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
                            {
                                return Err(refuse("{dir}", "that leaves the folder the pattern names (..)"));
                            }
                        }
                        path.push(p)
                    }
                    _ => path.push("."),
                },
                Field::Index => path.push(format!("{:0width$}", source.index)),
                Field::Number => {}
            }
        }
        let path = PathBuf::from(path);
        if source.is_some_and(|s| s.origin == Origin::Stream) && self.climbs(&path) {
            return Err(FieldError::Input(format!(
                "{} {}: the fields of a source read from the stream make '{}', which leaves the \
                 folder the pattern names",
                self.option,
                self.text,
                one_line(&path.to_string_lossy())
            )));
        }
        Ok(path)
    }

    /// Whether `path`, made from this pattern, leaves the folder the pattern's own text names:
    /// it climbs (`..`) more often than the text does with every field one plain name, or it is
    /// absolute where the text is not. Each field is checked on its own above; this catches
    /// fields that make `..` together (`{dir}{dir}` of a name with no folder is `..`).
    fn climbs(&self, path: &Path) -> bool {
        let mut plain = OsString::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => plain.push(t),
                Piece::Field(_) => plain.push("f"),
            }
        }
        let plain = Path::new(&plain);
        let ups = |p: &Path| p.components().filter(|c| matches!(c, Component::ParentDir)).count();
        ups(path) > ups(plain) || (path.has_root() && !plain.has_root())
    }
}

/// Why a frame's fields name no file: the command line's fault (exit 2 as a usage error), or the
/// input's (a name that would leave the output folder: exit 2 as bad input).
#[derive(Debug)]
enum FieldError {
    Usage(String),
    Input(String),
}

impl FieldError {
    fn at(self, place: Place) -> Error {
        match self {
            FieldError::Usage(m) => Error::usage(m).at(place),
            FieldError::Input(m) => Error::input(place, m),
        }
    }
}

/// Where one frame's output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Destination {
    /// The one output stream (standard output or the one file); `starts`: the frame is its first.
    Stream { starts: bool },
    /// A file of its own.
    File(PathBuf),
}

/// Gives each frame its destination and its side files (`--plot`), and refuses two frames one
/// file.
pub(crate) struct Destinations {
    template: Option<PathTemplate>,
    /// The tool's side files ([`crate::Tool::side_files`]).
    side: Vec<PathTemplate>,
    taken: TakenFiles<Claim>,
}

/// What is recorded with a file given to a frame, for the message should another want it.
#[derive(Debug, Clone)]
struct Claim {
    place: Place,
    /// The frame's number in the stream.
    n: usize,
    /// The option whose path gave it (`-o`, `--plot`).
    option: &'static str,
}

impl Destinations {
    /// Every frame to the one output stream.
    pub(crate) fn stream(side: Vec<PathTemplate>) -> Destinations {
        Destinations { template: None, side, taken: TakenFiles::new() }
    }

    /// Each frame to the file `template` names for it.
    pub(crate) fn per_frame(template: PathTemplate, side: Vec<PathTemplate>) -> Destinations {
        Destinations { template: Some(template), side, taken: TakenFiles::new() }
    }

    /// The destination of `frame`, frame `n` of the stream.
    pub(crate) fn of(&mut self, n: usize, frame: &Frame) -> Result<Destination, Error> {
        let Some(template) = &self.template else { return Ok(Destination::Stream { starts: n == 1 }) };
        let place = Place::of(frame.source.as_ref(), n);
        let path = template.expand(frame.source.as_ref(), n).map_err(|e| e.at(place.clone()))?;
        claim(&mut self.taken, &path, Claim { place, n, option: template.option }, template)?;
        Ok(Destination::File(path))
    }

    /// The paths of `frame`'s side files, in the tool's order: each template's path for it, or
    /// `None` for a template without fields after the first frame (it names one file, the first
    /// frame's).
    pub(crate) fn side_files(&mut self, n: usize, frame: &Frame) -> Result<Vec<Option<PathBuf>>, Error> {
        let place = Place::of(frame.source.as_ref(), n);
        let mut paths = Vec::with_capacity(self.side.len());
        for template in &self.side {
            if n > 1 && !template.has_fields() {
                paths.push(None);
                continue;
            }
            let path = template.expand(frame.source.as_ref(), n).map_err(|e| e.at(place.clone()))?;
            let by = Claim { place: place.clone(), n, option: template.option };
            claim(&mut self.taken, &path, by, template)?;
            paths.push(Some(path));
        }
        Ok(paths)
    }
}

/// Gives `path` to the frame `by` names, or says which frame has it already and which fields,
/// missing from `template`, would tell the two apart.
fn claim(
    taken: &mut TakenFiles<Claim>,
    path: &Path,
    by: Claim,
    template: &PathTemplate,
) -> Result<(), Error> {
    let Err(first) = taken.take(path, by.clone()) else { return Ok(()) };
    let first = match first {
        Taken::Recently(first) => Some(first.clone()),
        Taken::Earlier => None,
    };
    let place = by.place.clone();
    let message = match first {
        // One frame's two paths (-o's and a side file's, or two side files'): no field helps.
        Some(first) if first.n == by.n => format!(
            "{} is also this frame's {} output: {} {} names the same file (give it another name)",
            path.display(),
            first.option,
            template.option,
            template.text
        ),
        first => {
            let named = first.as_ref().map_or("an earlier frame".into(), |f| f.place.in_words());
            let missing = template.missing_fields(first.as_ref().map(|f| &f.place), &by.place);
            let hint = match missing.split_last() {
                None => String::new(),
                Some((last, [])) => format!(" (add {last})"),
                Some((last, rest)) => format!(" (add {} or {last})", rest.join(", ")),
            };
            format!(
                "{} is also the output of {named}: {} {} gives two frames one file{hint}",
                path.display(),
                template.option,
                template.text
            )
        }
    };
    Err(Error::usage(message).at(place))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<OutputSpec, String> {
        OutputSpec::parse(Some(OsStr::new(text))).map_err(|e| e.to_string())
    }

    #[test]
    fn the_extension_names_the_format() {
        assert_eq!(spec("a.PGM").unwrap().format, Some(OutputFormat::Pgm));
        assert_eq!(spec("out/a.tif").unwrap().format, Some(OutputFormat::Tiff));
        assert_eq!(spec("out/{stem}.csv").unwrap().format, Some(OutputFormat::Csv));
        assert_eq!(spec("Makefile-target").unwrap().format, None);
        assert!(matches!(spec("-").unwrap().target, Target::Stdout));
        assert!(matches!(OutputSpec::parse(None).unwrap().target, Target::Stdout));
        assert_eq!(spec("a.JPG").unwrap().format, Some(OutputFormat::Jpeg));
        assert_eq!(spec("a.npy").unwrap().format, Some(OutputFormat::Npy));
        assert_eq!(spec("a.pfm").unwrap().format, Some(OutputFormat::Pfm));
        assert_eq!(spec("a.pnm").unwrap().format, Some(OutputFormat::Pnm));
        assert!(spec("a.gif").unwrap_err().contains("does not write .gif files"));
        assert!(spec("out/{name}").unwrap_err().contains("{name} would keep the input's extension"));
        assert!(spec("out/{stem}.{n}").unwrap_err().contains("write the extension out"));
    }

    #[test]
    fn an_option_and_the_extension_must_agree() {
        use OutputFormat::*;
        assert_eq!(OutputFormat::agreed(None, None, Csv).unwrap(), Csv);
        assert_eq!(OutputFormat::agreed(Some(Tsv), None, Csv).unwrap(), Tsv);
        assert_eq!(OutputFormat::agreed(None, Some(Tsv), Csv).unwrap(), Tsv);
        assert_eq!(OutputFormat::agreed(Some(Tsv), Some(Tsv), Csv).unwrap(), Tsv);
        let e = OutputFormat::agreed(Some(Tsv), Some(Csv), Csv).unwrap_err();
        assert_eq!(e.message, "--format tsv contradicts -o's extension .csv");
    }

    #[test]
    fn an_output_that_does_not_fit_the_tool_is_refused() {
        let frames = |text: &str, png: bool| spec(text).unwrap().container(Product::Frames, png);
        assert_eq!(frames("a.png", false).unwrap(), Some(Container::Png { compression: None }));
        assert_eq!(frames("a.png", true).unwrap(), Some(Container::Png { compression: None }));
        assert_eq!(frames("a", true).unwrap(), Some(Container::Png { compression: None }));
        assert_eq!(frames("a", false).unwrap(), None, "each frame in the container it came in");
        assert!(frames("a.pgm", true).unwrap_err().message.contains("--png contradicts"));
        assert!(frames("a.csv", false).unwrap_err().message.contains("writes frames"));
        let table = |text: &str, png: bool| spec(text).unwrap().container(Product::Table, png);
        assert!(table("a.tsv", false).is_ok());
        assert!(table("a.png", false).unwrap_err().message.contains("a table: give a .csv, .tsv or .npy"));
        assert!(table("-", true).unwrap_err().message.contains("--png does not apply"));
        let drawing = |text: &str| spec(text).unwrap().container(Product::Drawing, false);
        assert!(drawing("a.ppm").is_ok() && drawing("a.pgm").is_err());
    }

    fn expand(text: &str, source: Option<Source>, n: usize) -> Result<String, String> {
        let t = PathTemplate::parse("-o", text)?;
        t.expand(source.as_ref(), n).map(|p| p.to_string_lossy().into_owned()).map_err(|e| match e {
            FieldError::Usage(m) | FieldError::Input(m) => m,
        })
    }

    #[test]
    fn templates_name_each_frame_after_its_source() {
        let s = || Some(Source::new("scans/b.x.jpg", 3));
        assert_eq!(expand("out/{stem}.png", s(), 9).unwrap(), "out/b.x.png");
        assert_eq!(expand("{dir}/{name}-{i}-{n}.pgm", s(), 9).unwrap(), "scans/b.x.jpg-3-9.pgm");
        assert_eq!(expand("{dir}/{stem}.pgm", Some(Source::new("a.pgm", 1)), 1).unwrap(), "./a.pgm");
        assert_eq!(expand("f{n:04}-{i:02}.raw", s(), 12).unwrap(), "f0012-03.raw");
        assert_eq!(expand("{{x}}{n}.csv", None, 2).unwrap(), "{x}2.csv");
        assert!(expand("{stem}.png", None, 2).unwrap_err().contains("came from standard input"));
        assert!(expand("{nope}.png", s(), 1).unwrap_err().contains("unknown field {nope}"));
        assert!(expand("{stem:04}.png", s(), 1).unwrap_err().contains("only {i} and {n} take a width"));
        assert!(expand("{stem.png", s(), 1).unwrap_err().contains("has no '}'"));
        assert!(expand("a}.png", s(), 1).unwrap_err().contains("closes no field"));
    }

    /// A name read from a stream is trusted no more for reading (`--draw '{dir}/{name}'`) than
    /// for writing: its `{dir}` is relative and never climbs, alone or with other fields.
    #[test]
    fn a_file_to_read_stays_where_an_output_would() {
        let t = PathTemplate::parse("--draw", "{dir}/{name}").unwrap();
        let near = Source::from_stream("scans/a.png", 1);
        assert_eq!(t.input_of(Some(&near), 1).unwrap(), PathBuf::from("scans/a.png"));
        for far in ["/data/../scans/a.png", "/etc/shadow", "../x/a.png", "x/../../a.png"] {
            let e = t.input_of(Some(&Source::from_stream(far, 1)), 1).unwrap_err();
            assert!(e.to_string().contains("gives a {dir} that"), "{far}: {e}");
        }
        let e = t.input_of(None, 2).unwrap_err();
        assert!(e.to_string().contains("--draw {dir}/{name}: the frame came from standard input"), "{e}");
    }

    /// Fields that each stay inside can climb together: `{dir}` of a name without a folder is
    /// `.`, and `{dir}{dir}` is `..`. Refused for a stream's names; the user's own are theirs.
    #[test]
    fn fields_that_climb_together_are_refused() {
        let bare = Source::from_stream("a.pgm", 1);
        for text in ["out/{dir}{dir}/x.pgm", "{dir}{dir}/{dir}", "{dir}./{stem}.pgm"] {
            let t = PathTemplate::parse("-o", text).unwrap();
            let e = t.expand(Some(&bare), 1).map(|p| p.display().to_string());
            assert!(
                matches!(&e, Err(FieldError::Input(m)) if m.contains("leaves the folder the pattern names")),
                "{text}: {e:?}"
            );
            let own = Source::new("a.pgm", 1);
            assert!(t.expand(Some(&own), 1).is_ok(), "{text}: a name the user gave");
        }
        let t = PathTemplate::parse("-o", "../out/{dir}/{stem}.png").unwrap();
        assert_eq!(t.expand(Some(&bare), 1).unwrap(), PathBuf::from("../out/./a.png"), "the text's own ..");
    }

    #[test]
    fn two_frames_for_one_file_are_refused_naming_both() {
        let Target::Template(t) = spec("out/{stem}.png").unwrap().target else { panic!() };
        let mut d = Destinations::per_frame(t, Vec::new());
        let frame = |path: &str, index| {
            let mut f = Frame::new(1, 1, 255, vec![0u8].into());
            f.source = Some(Source::new(path, index));
            f
        };
        assert_eq!(d.of(1, &frame("a/x.pgm", 1)).unwrap(), Destination::File("out/x.png".into()));
        assert!(d.of(2, &frame("a/y.pgm", 1)).is_ok());
        let e = d.of(3, &frame("b/x.pgm", 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "b/x.pgm: frame 1: out/x.png is also the output of frame 1 of a/x.pgm: -o out/{stem}.png \
             gives two frames one file (add {dir} or {n})"
        );
        let e = d.of(4, &frame("a/x.pgm", 2)).unwrap_err();
        assert!(e.to_string().ends_with("gives two frames one file (add {i} or {n})"), "{e}");
        let mut s = Destinations::stream(Vec::new());
        assert_eq!(s.of(1, &frame("a", 1)).unwrap(), Destination::Stream { starts: true });
        assert_eq!(s.of(2, &frame("a", 2)).unwrap(), Destination::Stream { starts: false });
    }

    /// The hint names only fields the path lacks that tell the two frames apart: never `{i}` to a
    /// path that has it, nor to frames of two files with the same numbers.
    #[test]
    fn two_frames_for_one_file_are_told_the_fields_that_part_them() {
        let hint = |text: &str, first: (&str, usize), second: (&str, usize)| {
            let Target::Template(t) = spec(text).unwrap().target else { panic!("{text}") };
            let mut d = Destinations::per_frame(t, Vec::new());
            let frame = |(path, index): (&str, usize)| {
                let mut f = Frame::new(1, 1, 255, vec![0u8].into());
                f.source = Some(Source::new(path, index));
                f
            };
            d.of(1, &frame(first)).unwrap();
            let e = d.of(2, &frame(second)).unwrap_err().to_string();
            assert!(e.contains("gives two frames one file"), "{e}");
            e.rsplit_once(" file").map(|(_, hint)| hint.to_owned()).unwrap()
        };
        let (a1, b1, a2) = (("a/x.pgm", 1), ("b/x.pgm", 1), ("a/x.pgm", 2));
        assert_eq!(hint("out/{stem}-{i}.png", a1, b1), " (add {dir} or {n})");
        assert_eq!(hint("out/{stem}.png", a1, a2), " (add {i} or {n})");
        assert_eq!(hint("out/{stem}-{i}.png", a1, ("./a/x.pgm", 1)), " (add {n})", "one file twice");
        assert_eq!(hint("out/{i}.png", a1, ("b/y.pgm", 1)), " (add {dir}, {stem} or {n})");
        assert_eq!(hint("out/{stem}.png", ("a/x.png", 1), ("a/x.jpg", 1)), " (add {name} or {n})");
        assert_eq!(hint("out/{dir}/{stem}.png", a1, a2), " (add {i} or {n})");
    }

    /// One frame's `-o` path and a side file's path that name one file: no field parts them.
    #[test]
    fn one_frame_with_two_outputs_of_one_file_is_told_so() {
        let Target::Template(t) = spec("out/{stem}.png").unwrap().target else { panic!() };
        let plot = PathTemplate::parse("--plot", "out/./{stem}.png").unwrap();
        let mut d = Destinations::per_frame(t, vec![plot]);
        let mut f = Frame::new(1, 1, 255, vec![0u8].into());
        f.source = Some(Source::new("a/x.pgm", 1));
        d.of(1, &f).unwrap();
        let e = d.side_files(1, &f).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a/x.pgm: frame 1: out/./x.png is also this frame's -o output: --plot out/./{stem}.png \
             names the same file (give it another name)"
        );
    }
}
