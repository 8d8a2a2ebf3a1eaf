//! `--plot FILE` of `colhist` and `cdf`: the option's value, and writing each figure.

use std::path::Path;

use histopipe_cli::{Context, Error, ErrorKind, FlagError, Given, PathTemplate};
use histopipe_plot::{FigureFormat, PlotError};

/// `--plot FILE`: where each frame's figure goes, with `-o`'s fields (`{stem}`, `{n}`, ...): one
/// figure per frame where the name has a field, the first frame's alone where it has none.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub template: PathTemplate,
    pub format: FigureFormat,
}

/// Parses `--plot FILE`: a name ending in .svg or .png, with `-o`'s fields; an unknown field is
/// refused here, before any input is read.
pub(crate) fn plot_target(given: &Given) -> Result<Plot, FlagError> {
    let text = given.text().map_err(|_| "the file name is not valid UTF-8")?;
    let template = PathTemplate::parse(given.flag.long, text).map_err(FlagError::AfterValue)?;
    let format = FigureFormat::of_path(Path::new(text)).ok_or_else(|| {
        FlagError::AfterValue("the file name must end in .svg or .png (written out, not as a field)".into())
    })?;
    Ok(Plot { template, format })
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
