//! The command line: the parsing of the whole of it into what a run needs ([`Invocation`]): the
//! tool's own options, those every tool takes ([`Common`]), the output and the input files,
//! every value checked before any input is read.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Write};

use histopipe_frame::Container;
use lexopt::{Arg, Parser};

use crate::common::{Common, COMMON_HELP};
use crate::inputs::Inputs;
use crate::outputs::OutputSpec;
use crate::tool::Tool;
use crate::Error;

/// A command line, parsed and checked: what a run needs.
pub(crate) struct Invocation {
    pub common: Common,
    pub inputs: Inputs,
    pub output: OutputSpec,
    /// The container frames are written in (`None`: each in the one it came in).
    pub container: Option<Container>,
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
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io(&e))
}

/// Parses the command line into `tool`'s options and the rest; checks every value, the output
/// against what the tool writes, and that the input files are there, before any is read.
pub(crate) fn parse<T: Tool>(
    tool: &mut T,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Parsed, Error> {
    let mut common = Common::from_env()?;
    let mut operands = VecDeque::new();
    let mut parser = Parser::from_args(args);
    while let Some(arg) = parser.next()? {
        match arg {
            Arg::Short('h') | Arg::Long("help") => {
                let text = format!("{}\n\n{COMMON_HELP}\n", T::HELP.trim_end());
                print_out(&text)?;
                return Ok(Parsed::Printed);
            }
            Arg::Short('V') | Arg::Long("version") => {
                print_out(&format!("{} (histopipe) {}\n", T::NAME, env!("CARGO_PKG_VERSION")))?;
                return Ok(Parsed::Printed);
            }
            Arg::Value(v) => operands.push_back(v),
            Arg::Short(c) => option(&mut common, tool, &format!("-{c}"), &mut parser)?,
            Arg::Long(l) => {
                let name = format!("--{l}");
                option(&mut common, tool, &name, &mut parser)?
            }
        }
    }
    tool.operands(&mut operands)?;
    tool.check(&common)?;
    let output = OutputSpec::parse(common.output.as_deref())?;
    let product = tool.product(output.format)?;
    let container = output.container(product, common.png)?;
    let inputs = Inputs::new(operands);
    inputs.check()?;
    Ok(Parsed::Run(Box::new(Invocation { common, inputs, output, container })))
}

fn option<T: Tool>(common: &mut Common, tool: &mut T, name: &str, parser: &mut Parser) -> Result<(), Error> {
    if common.accept(name, parser)? || tool.option(name, parser)? {
        Ok(())
    } else {
        Err(Error::usage(format!("unknown option '{name}' (see --help)")))
    }
}
