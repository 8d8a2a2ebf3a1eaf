//! One definition per option ([`Flag`]), as ripgrep's `crates/core/flags` has it: its names, the
//! name of its value, its help and the words its value may be. Everything said about an option is
//! made from its definition: `--help` ([`help_text`]), the manual page's option sections and the
//! bash, zsh and fish completions (from [`flags_table`], which the hidden `--help-flags` prints for
//! scripts/install), and the parser, which takes only the options defined and names the option in
//! any error about its value ([`Given`], [`FlagError`]), so that no handler writes `--x:` itself.
//! An operation's error about one of its parameters names the option that sets it
//! ([`Flag::param`], [`op_message`]); a tool's own message about one option's value is made by
//! [`Flag::message`]. All of them say the option as [`about`] does, the one place that does. A
//! value that is one of a few words is an enum declared with [`words!`](crate::words!): its
//! words, written once beside its variants, are the flag's list ([`Flag::one_of`]) and its
//! handler's parser.

use std::ffi::{OsStr, OsString};
use std::fmt::Display;
use std::str::FromStr;

use histopipe_ops::OpError;

use crate::Error;

/// One option: everything `--help`, the manual page, the completions and the parser know of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// The long name, dashes included: `--bins`.
    pub long: &'static str,
    pub short: Option<char>,
    /// The name its value goes by (`N`, `FILE`; FILE, PATH, DIR and IMAGE complete as file names),
    /// `None` for a switch.
    pub value: Option<&'static str>,
    /// The words its value may be, where it is one of a few (an enum's `NAMES`,
    /// [`words!`](crate::words!)): what completions offer. A word `NAME:P` (P in capitals:
    /// `multiotsu:K`) stands for a value that takes a parameter after the colon: completions
    /// offer `NAME:` and leave the cursor after it.
    pub values: &'static [&'static str],
    /// One paragraph: what it does, then `[default: ...]`.
    pub help: &'static str,
    /// The heading `--help` lists it under (a tool's own: `Options`).
    pub group: &'static str,
    /// The parameter of histopipe-ops this option sets (`theta_step`), if it sets one: an
    /// operation's error about that parameter names this option.
    pub param: Option<&'static str>,
    /// An old long name the parser still takes for this option (`--colour` for `--draw-colour`),
    /// hidden: help, manuals and completions say the long name alone.
    pub alias: Option<&'static str>,
}

impl Flag {
    /// An option without a value.
    pub const fn switch(long: &'static str, help: &'static str) -> Flag {
        Flag { long, short: None, value: None, values: &[], help, group: "Options", param: None, alias: None }
    }

    /// An option with a value, named `value` in the help.
    pub const fn with_value(long: &'static str, value: &'static str, help: &'static str) -> Flag {
        Flag { value: Some(value), ..Flag::switch(long, help) }
    }

    pub const fn short(self, short: char) -> Flag {
        Flag { short: Some(short), ..self }
    }

    /// The value is one of `values`.
    pub const fn one_of(self, values: &'static [&'static str]) -> Flag {
        Flag { values, ..self }
    }

    pub const fn group(self, group: &'static str) -> Flag {
        Flag { group, ..self }
    }

    /// The parser takes `long` (an old name, dashes included) for this option too, unlisted.
    pub const fn alias(self, long: &'static str) -> Flag {
        Flag { alias: Some(long), ..self }
    }

    /// The option sets the operations' parameter `name` (`rho_step`, `size` for `--to`): their
    /// errors about it name this option.
    pub const fn param(self, name: &'static str) -> Flag {
        Flag { param: Some(name), ..self }
    }

    /// A message about this option: `--clip: why`.
    pub fn message(&self, why: impl Display) -> String {
        about(self.long, None, Joint::Colon, &why.to_string())
    }

    /// A message about this option's `value`: `--tiles 8x8: why`.
    pub fn message_of(&self, value: impl Display, why: impl Display) -> String {
        about(self.long, Some(&value.to_string()), Joint::Colon, &why.to_string())
    }

    /// A sentence about this option's `value`: `--draw a.png` `is 512x512, but ...`.
    pub fn sentence_of(&self, value: impl Display, rest: impl Display) -> String {
        about(self.long, Some(&value.to_string()), Joint::Space, &rest.to_string())
    }

    /// The option as help lists it: `-o, --output PATH`, `--bins N`, `--rows`.
    pub fn synopsis(&self) -> String {
        let short = self.short.map(|c| format!("-{c}, ")).unwrap_or_default();
        let value = self.value.map(|v| format!(" {v}")).unwrap_or_default();
        format!("{short}{}{value}", self.long)
    }

    /// Whether the command line's `arg` (`-o`, `--output`) names this option.
    fn named(&self, arg: &str) -> bool {
        arg == self.long
            || self.alias == Some(arg)
            || self.short.is_some_and(|c| arg.strip_prefix('-') == Some(c.encode_utf8(&mut [0; 4])))
    }
}

/// An enum whose variants are the words an option takes, each word written once beside its
/// variant (as clap's `ValueEnum` and ripgrep's lists of choices keep them): the type gets
/// `NAMES`, the words in the variants' order, for [`Flag::one_of`] (completions offer them, the
/// manual lists them), `ALL`, the variants in that order, `word` (a variant's, in const
/// context too), and `from_word` and `parse_word` for
/// the handler (whose error lists the same words, [`either`]), so that no handler restates the
/// list.
///
/// ```
/// histopipe_cli::words! {
///     /// `--colour`: which channels.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Colour { Luma = "luma", Each = "each" }
/// }
/// assert_eq!(Colour::NAMES, ["luma", "each"]);
/// assert_eq!(Colour::ALL, [Colour::Luma, Colour::Each]);
/// assert_eq!(Colour::from_word("each"), Some(Colour::Each));
/// assert_eq!(Colour::Each.word(), "each");
/// assert_eq!(Colour::parse_word("hue", "value").unwrap_err(), "unknown value 'hue' (luma or each)");
/// ```
#[macro_export]
macro_rules! words {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        #[allow(dead_code)] // not every list's handler uses both parsers
        impl $name {
            /// The words, in the variants' order.
            pub const NAMES: &'static [&'static str] = &[$($word),+];

            /// The variants, in the words' order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word of this variant.
            pub const fn word(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant the word `text` names, if one does.
            pub fn from_word(text: &str) -> Option<$name> {
                match text {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The variant `text` names, or `unknown WHAT 'text' (a, b or c)`.
            pub fn parse_word(text: &str, what: &str) -> Result<$name, String> {
                Self::from_word(text)
                    .ok_or_else(|| format!("unknown {what} '{text}' ({})", $crate::either(Self::NAMES)))
            }
        }
    };
}

/// `words` as a sentence lists the choices: `a, b or c`.
pub fn either(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_owned(),
        None => String::new(),
    }
}

/// A thing on the command line that is not an option, with the help `--help` gives it (`FILE...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand {
    pub name: &'static str,
    pub help: &'static str,
    pub group: &'static str,
}

/// How a message about an option goes on after naming it (and its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joint {
    /// `--bins 300: a frame with ...`
    Colon,
    /// `--fill 256 is over ...`
    Space,
}

/// A message about option `name` (as written, or its long name), and its `value` where the
/// message shows it: `--bins: why`, `--bins 300: why`, `--fill 256 is over ...`. Every message
/// that names an option's value says it here.
fn about(name: &str, value: Option<&str>, joint: Joint, rest: &str) -> String {
    let value = value.map(|v| format!(" {v}")).unwrap_or_default();
    match joint {
        Joint::Colon => format!("{name}{value}: {rest}"),
        Joint::Space => format!("{name}{value} {rest}"),
    }
}

/// An operation's error in the command line's words: each parameter it names is said as the
/// option among `flags` that sets it ([`Flag::param`]), and by its own name where none does.
pub(crate) fn op_message(flags: &[Flag], err: &OpError) -> String {
    let option =
        |param: &'static str| flags.iter().find(|f| f.param == Some(param)).map_or(param, |f| f.long);
    let why = err.why_naming(option);
    match &err.param {
        Some(p) => {
            let joint = if p.sentence { Joint::Space } else { Joint::Colon };
            about(option(p.name), Some(&p.value), joint, &why)
        }
        None => why,
    }
}

/// The definition of `arg` (`-o`, `--bins`) among `flags`.
pub(crate) fn find(flags: &'static [Flag], arg: &str) -> Option<&'static Flag> {
    flags.iter().find(|f| f.named(arg))
}

/// An option as the command line gave it, for its handler: its definition, the name it was
/// written with and its value. Its methods' errors are [`FlagError`]s, which the parser prefixes
/// with the option's name.
#[derive(Debug, Clone)]
pub struct Given {
    pub flag: &'static Flag,
    /// `-o` or `--output`, as written.
    pub written: String,
    value: OsString,
}

impl Given {
    pub(crate) fn new(flag: &'static Flag, written: String, value: Option<OsString>) -> Given {
        Given { flag, written, value: value.unwrap_or_default() }
    }

    /// Whether this is the option `long` (`--bins`).
    pub fn is(&self, long: &str) -> bool {
        self.flag.long == long
    }

    /// The value as given (empty for a switch).
    pub fn os(&self) -> &OsStr {
        &self.value
    }

    /// The value as text.
    pub fn text(&self) -> Result<&str, FlagError> {
        self.value.to_str().ok_or_else(|| FlagError::Value("value is not valid UTF-8".into()))
    }

    /// The value parsed as a `T`: `bad value 'x': why` if it is not one.
    pub fn parse<T: FromStr>(&self) -> Result<T, FlagError>
    where
        T::Err: Display,
    {
        let text = self.text()?;
        text.parse::<T>().map_err(|e| FlagError::Value(format!("bad value '{text}': {e}")))
    }
}

/// What is wrong with an option: the parser makes it a usage error that names the option.
#[derive(Debug)]
pub enum FlagError {
    /// What is wrong with the value: `--bins: must be at least 1`.
    Value(String),
    /// The same, said after the value: `--plot x.txt: the file name must end in .svg or .png`.
    AfterValue(String),
    /// A message of its own (options that contradict each other name both).
    Usage(Error),
}

impl FlagError {
    /// The usage error for `given`.
    pub(crate) fn into_error(self, given: &Given) -> Error {
        match self {
            FlagError::Value(why) => Error::usage(about(&given.written, None, Joint::Colon, &why)),
            FlagError::AfterValue(why) => {
                let value = given.value.to_string_lossy();
                Error::usage(about(&given.written, Some(&value), Joint::Colon, &why))
            }
            FlagError::Usage(e) => e,
        }
    }
}

impl From<String> for FlagError {
    fn from(why: String) -> Self {
        FlagError::Value(why)
    }
}

impl From<&str> for FlagError {
    fn from(why: &str) -> Self {
        FlagError::Value(why.to_owned())
    }
}

impl From<Error> for FlagError {
    fn from(e: Error) -> Self {
        FlagError::Usage(e)
    }
}

/// The column where `--help` starts an option's help, and the width it wraps at.
const HELP_COLUMN: usize = 21;
const HELP_WIDTH: usize = 100;

/// `--help`'s list of `operands` and `flags`, under their groups' headings, in order.
pub(crate) fn help_text(operands: &[Operand], flags: &[Flag]) -> String {
    let entries = operands.iter().map(|o| (o.group, o.name.to_owned(), o.help));
    let entries = entries.chain(flags.iter().map(|f| (f.group, f.synopsis(), f.help)));
    let mut out = String::new();
    let mut group = None;
    for (heading, synopsis, help) in entries {
        if group != Some(heading) {
            out.push_str(heading);
            out.push_str(":\n");
            group = Some(heading);
        }
        let mut line = format!("  {synopsis}");
        if line.len() + 1 < HELP_COLUMN {
            line.push_str(&" ".repeat(HELP_COLUMN - line.len()));
        } else {
            line.push(' ');
        }
        let mut fresh = true;
        for word in help.split_whitespace() {
            if !fresh && line.len() + 1 + word.len() > HELP_WIDTH {
                out.push_str(&line);
                out.push('\n');
                line = " ".repeat(HELP_COLUMN);
                fresh = true;
            }
            if !fresh {
                line.push(' ');
            }
            line.push_str(word);
            fresh = false;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The definitions as a table for scripts/install (`--help-flags`): one line per operand and
/// option, its fields separated by tabs: whose it is (`tool` or `common`), its group, its short
/// name (without its dash), its long name (without its dashes; both empty for an operand), its value's name, the words its value may be
/// (separated by spaces), its help.
pub(crate) fn flags_table(tool: &[Flag], operands: &[Operand], common: &[Flag]) -> String {
    let flag = |whose: &str, f: &Flag| {
        let short = f.short.map(String::from).unwrap_or_default();
        let long = f.long.trim_start_matches('-');
        [whose, f.group, &short, long, f.value.unwrap_or(""), &f.values.join(" "), f.help].join("\t")
    };
    let operand = |o: &Operand| ["common", o.group, "", "", o.name, "", o.help].join("\t");
    let rows = tool.iter().map(|f| flag("tool", f));
    let rows = rows.chain(operands.iter().map(operand)).chain(common.iter().map(|f| flag("common", f)));
    rows.map(|r| r + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[Flag] = &[
        Flag::with_value("--output", "PATH", "write PATH").short('o').group("Files"),
        Flag::switch(
            "--rows",
            "a histogram of every row instead (a bins x height matrix), and a long enough text to wrap",
        ),
        Flag::with_value("--segment", "X0,Y0,X1,Y1", "only that column's pixels").alias("--column"),
        Flag::with_value("--format", "F", "csv or tsv").one_of(&["csv", "tsv"]),
    ];

    #[test]
    fn help_lists_each_option_under_its_group() {
        let text = help_text(&[Operand { name: "FILE...", help: "read these", group: "Files" }], FLAGS);
        assert_eq!(
            text,
            "Files:\n  FILE...            read these\n  -o, --output PATH  write PATH\nOptions:\n  \
             --rows             a histogram of every row instead (a bins x height matrix), and a long \
             enough\n                     text to wrap\n  --segment X0,Y0,X1,Y1 only that column's pixels\n  \
             --format F         csv or tsv\n"
        );
        assert!(text.lines().all(|l| l.len() <= HELP_WIDTH));
    }

    #[test]
    fn options_are_found_by_either_name() {
        assert_eq!(find(FLAGS, "-o"), Some(&FLAGS[0]));
        assert_eq!(find(FLAGS, "--output"), Some(&FLAGS[0]));
        assert_eq!(find(FLAGS, "--rows"), Some(&FLAGS[1]));
        assert_eq!(find(FLAGS, "--row"), None);
        assert_eq!(find(FLAGS, "-r"), None);
        // An old name is taken, and said nowhere.
        assert_eq!(find(FLAGS, "--column"), Some(&FLAGS[2]));
        assert!(!help_text(&[], FLAGS).contains("--column"));
        assert!(!flags_table(FLAGS, &[], &[]).contains("\tcolumn\t"));
    }

    #[test]
    fn errors_name_the_option_as_written() {
        let given = Given::new(&FLAGS[0], "-o".into(), Some("x".into()));
        assert_eq!(
            given.parse::<u8>().unwrap_err().into_error(&given).message,
            "-o: bad value 'x': invalid digit found in string"
        );
        let e = FlagError::AfterValue("no".into()).into_error(&given);
        assert_eq!(e.message, "-o x: no");
    }

    /// An operation's error names each parameter as the option that sets it, by its definition
    /// (`--to` sets `size`), and says the value as the parser says one.
    #[test]
    fn operations_errors_name_the_options_that_set_their_parameters() {
        const PAD: &[Flag] = &[
            Flag::with_value("--to", "WxH", "pad to W x H").param("size"),
            Flag::with_value("--fill", "V", "fill with V").param("fill"),
        ];
        let e = OpError::param_is("size", "2x2", "is smaller than the 3x2 frame");
        assert_eq!(op_message(PAD, &e), "--to 2x2 is smaller than the 3x2 frame");
        let e = OpError::param("fill", 300, "over the maxval");
        assert_eq!(op_message(PAD, &e), "--fill 300: over the maxval");
        let e = OpError::invalid("raise ").and_param("fill").and_text(" or ").and_param("size");
        assert_eq!(op_message(PAD, &e), "raise --fill or --to");
        assert_eq!(op_message(&[], &e), "raise fill or size", "a parameter no option sets: its own name");
        assert_eq!(op_message(PAD, &OpError::invalid("--x")), "--x");
        assert_eq!(PAD[1].message("bad value 'x'"), "--fill: bad value 'x'");
        assert_eq!(PAD[0].message_of("2x2", "too small"), "--to 2x2: too small");
        assert_eq!(PAD[0].sentence_of("2x2", "is too small"), "--to 2x2 is too small");
    }

    #[test]
    fn choices_are_listed_as_a_sentence() {
        assert_eq!(either(&["a", "b", "c"]), "a, b or c");
        assert_eq!(either(&["csv", "tsv"]), "csv or tsv");
        assert_eq!(either(&["x"]), "x");
    }

    #[test]
    fn the_table_has_a_line_per_option() {
        let table = flags_table(&FLAGS[1..], &[], &FLAGS[..1]);
        assert_eq!(table.lines().count(), 4);
        assert!(table.contains("tool\tOptions\t\tformat\tF\tcsv tsv\tcsv or tsv\n"));
        assert!(table.starts_with("tool\tOptions\t\trows\t\t\ta histogram"));
        assert!(table.ends_with("common\tFiles\to\toutput\tPATH\t\twrite PATH\n"));
    }
}
