//! `--plot FILE` of `colhist` and `cdf`: the option's value, and writing each figure.

use std::path::Path;

use histopipe_cli::lexopt::{Parser, ValueExt};
use histopipe_cli::{Context, Error, ErrorKind};
use histopipe_plot::{PlotError, PlotTarget};

/// Parses `--plot FILE` (option `name`): the name must end in .svg or .png.
pub(crate) fn plot_target(parser: &mut Parser, name: &str) -> Result<PlotTarget, Error> {
    let value = parser.value()?;
    let text =
        value.string().map_err(|_| Error::usage(format!("{name}: the file name is not valid UTF-8")))?;
    PlotTarget::parse(&text).map_err(|e| Error::usage(format!("{name} {e}")))
}

/// Writes the figure made for this frame to `path`, whole or not at all (atomically, as `-o`
/// writes); a figure that cannot be made or written fails the frame.
pub(crate) fn write_figure(
    cx: &Context<'_>,
    path: &Path,
    figure: Result<Vec<u8>, PlotError>,
) -> Result<(), Error> {
    let bytes = figure.map_err(|e| cx.invalid(format!("--plot: {e}")))?;
    histopipe_cli::write_whole(path, &bytes).map_err(|e| Error {
        kind: ErrorKind::Runtime,
        place: cx.place(),
        message: format!("--plot: cannot write '{}': {e}", path.display()),
    })
}
