//! The command line: the parsing of the whole of it into what a run needs ([`Invocation`]): the
//! tool's own options, those every tool takes ([`Common`]), the output and the input files,
//! every value checked before any input is read.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Write};

use histopipe_frame::Container;
use lexopt::{Arg, Parser, ValueExt};

use crate::common::{Common, COMMON_FLAGS, COMMON_OPERANDS};
use crate::flags::{find, flags_table, help_text, Given};
use crate::inputs::Inputs;
use crate::outputs::{OutputSpec, Product};
use crate::tool::Tool;
use crate::{Error, Place};

/// A command line, parsed and checked: what a run needs.
pub(crate) struct Invocation {
    pub common: Common,
    pub inputs: Inputs,
    pub output: OutputSpec,
    /// The container frames are written in (`None`: each in the one it came in).
    pub container: Option<Container>,
    /// The command line's words, for the GPU service, which parses them again.
    pub args: Vec<OsString>,
    /// Whether an option but `-o` names a file (`--mask FILE`): the service, which does not
    /// read or write files for a client, is not asked to run such a command line.
    pub names_files: bool,
}

/// The tool's part of a command line: its options and those every tool takes, the tool's own
/// operands, all checked, and what it writes; the operands left name the input files.
pub(crate) struct Command {
    pub common: Common,
    pub operands: VecDeque<OsString>,
    pub output: OutputSpec,
    pub product: Product,
    pub names_files: bool,
}

/// What the command line asked for.
pub(crate) enum Parsed {
    Run(Box<Invocation>),
    /// `--help` or `--version`, printed.
    Printed,
}

/// Prints `text` on standard output (`--help`, `--version`): a closed or full output is an
/// error, not a panic.
fn print_out(text: &str) -> Result<(), Error> {
    crate::stdout::is_open()?;
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::writing_stdout(Error::io(&e), Some(e.kind())))
}

/// Parses the command line into `tool`'s options and the rest; checks every value, the output
/// against what the tool writes, and that the input files are there, before any is read.
pub(crate) fn parse<T: Tool>(
    tool: &mut T,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Parsed, Error> {
    let args: Vec<OsString> = args.into_iter().collect();
    let Some(command) = parse_command(tool, args.clone(), Asked::Print)? else {
        return Ok(Parsed::Printed);
    };
    let Command { common, operands, output, product, names_files } = command;
    let container = match output.container(product, common.png)? {
        Some(Container::Jpeg { .. }) => Some(Container::Jpeg { quality: common.quality }),
        Some(Container::Png { .. }) => Some(Container::Png { compression: common.compression }),
        other => other,
    };
    let inputs = Inputs::new(operands);
    inputs.check(common.fail_fast)?;
    Ok(Parsed::Run(Box::new(Invocation { common, inputs, output, container, args, names_files })))
}

/// What `--help` and `--version` do: print, or (for the service, which parses a client's
/// command line) fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    Print,
    Refuse,
}

/// The values options that name files go by ([`Flag::value`](crate::Flag)).
const FILE_VALUES: [&str; 4] = ["FILE", "PATH", "DIR", "IMAGE"];

/// Parses the tool's part of a command line ([`Command`]); `None` when `--help` or `--version`
/// was printed.
pub(crate) fn parse_command<T: Tool>(
    tool: &mut T,
    args: impl IntoIterator<Item = OsString>,
    asked: Asked,
) -> Result<Option<Command>, Error> {
    let mut common = Common::from_env()?;
    let mut operands = VecDeque::new();
    let mut names_files = false;
    let mut parser = Parser::from_args(args);
    while let Some(arg) = parser.next()? {
        let written = match arg {
            Arg::Short('h' | 'V') | Arg::Long("help" | "help-flags" | "version")
                if asked == Asked::Refuse =>
            {
                return Err(Error::usage("--help and --version are answered by the tool itself"));
            }
            Arg::Short('h') | Arg::Long("help") => {
                print_out(&help::<T>())?;
                return Ok(None);
            }
            Arg::Long("help-flags") => {
                print_out(&flags_table(T::FLAGS, COMMON_OPERANDS, COMMON_FLAGS))?;
                return Ok(None);
            }
            Arg::Short('V') | Arg::Long("version") => {
                print_out(&format!("{} (histopipe) {}\n", T::NAME, env!("CARGO_PKG_VERSION")))?;
                return Ok(None);
            }
            Arg::Value(v) => {
                operands.push_back(v);
                continue;
            }
            Arg::Short(c) if c.is_ascii_digit() || c == '.' => {
                let rest = parser.optional_value().map(|v| v.string()).transpose()?.unwrap_or_default();
                if tool.negative_number(&format!("-{c}{rest}"))? {
                    continue;
                }
                format!("-{c}")
            }
            Arg::Short(c) => format!("-{c}"),
            Arg::Long(l) => format!("--{l}"),
        };
        names_files |= option(&mut common, tool, written, &mut parser)?;
    }
    if asked == Asked::Refuse && names_files {
        // The service parses a client's command line: it opens no file the options name (a
        // check may read one, `--mask`), whatever the client sent.
        return Err(Error::usage("a command line that names files runs in its tool"));
    }
    tool.operands(&mut operands)?;
    tool.check(&common)?;
    let output = OutputSpec::parse(common.output.as_deref())?;
    let product = tool.product(output.format)?;
    Ok(Some(Command { common, operands, output, product, names_files }))
}

/// `--help`: the tool's text and options, then those every tool takes, all from their definitions.
fn help<T: Tool>() -> String {
    let mut text = T::HELP.trim_end().to_owned();
    if !T::FLAGS.is_empty() {
        text += &format!("\n\n{}", help_text(&[], T::FLAGS).trim_end());
    }
    if !T::HELP_END.trim().is_empty() {
        text += &format!("\n\n{}", T::HELP_END.trim_start_matches('\n').trim_end());
    }
    format!("{text}\n\n{}", help_text(COMMON_OPERANDS, COMMON_FLAGS))
}

/// Hands option `written` (with its value, if it takes one) to whichever definition names it;
/// whether it names a file other than the output.
fn option<T: Tool>(
    common: &mut Common,
    tool: &mut T,
    written: String,
    parser: &mut Parser,
) -> Result<bool, Error> {
    let (flag, is_common) = match find(COMMON_FLAGS, &written) {
        Some(f) => (f, true),
        None => match find(T::FLAGS, &written) {
            Some(f) => (f, false),
            None => return Err(Error::usage(format!("unknown option '{written}' (see --help)"))),
        },
    };
    let value = match flag.value {
        Some(_) => Some(parser.value()?),
        None => None,
    };
    let names_file = flag.value.is_some_and(|v| FILE_VALUES.contains(&v)) && flag.long != "--output";
    let given = Given::new(flag, written, value);
    let taken = if is_common { common.accept(&given) } else { tool.option(&given) };
    match taken {
        Ok(true) => Ok(names_file),
        Ok(false) => Err(Error::internal(
            Place::default(),
            "command line",
            &format!("{} is not handled", given.written),
        )),
        Err(e) => Err(e.into_error(&given)),
    }
}
