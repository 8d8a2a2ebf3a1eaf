//! `--plot FILE`, the option group that `colhist` and `cdf` hold ([`Plotting`]): the option's
//! value, its check, the side file it names for each frame, and writing each figure.

use std::path::{Path, PathBuf};

use histopipe_cli::{Context, Error, ErrorKind, Flag, FlagError, Given, PathTemplate};
use histopipe_plot::{FigureFormat, PlotError};

/// `--plot FILE`: where each frame's figure goes, with `-o`'s fields (`{stem}`, `{n}`, ...): one
/// figure per frame where the name has a field, the first frame's alone where it has none.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub template: PathTemplate,
    pub format: FigureFormat,
}

/// `--plot` as a tool holds it: the figure's file, if asked for. A tool lists
/// [`Plotting::flag`] (with what its figure shows) among its flags, takes the option through
/// [`Plotting::option`], names its side file with [`Plotting::side_files`] and finds where each
/// frame's figure goes with [`Plotting::target`].
#[derive(Debug, Default)]
pub(crate) struct Plotting(Option<Plot>);

impl Plotting {
    /// `--plot FILE`, `help` saying what the figure shows.
    pub(crate) const fn flag(help: &'static str) -> Flag {
        Flag::with_value("--plot", "FILE", help)
    }

    /// Takes `--plot`; `Ok(false)` for another option.
    pub(crate) fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        if !given.is("--plot") {
            return Ok(false);
        }
        self.0 = Some(plot_target(given)?);
        Ok(true)
    }

    /// Whether `--plot` was given.
    pub(crate) fn is_given(&self) -> bool {
        self.0.is_some()
    }

    /// Refused before any input is read where the counts are several histograms (`--colour
    /// each`): a figure draws one.
    pub(crate) fn check(&self, several: bool) -> Result<(), Error> {
        if self.is_given() && several {
            return Err(Error::usage("--plot draws one histogram: it cannot be combined with --colour each"));
        }
        Ok(())
    }

    /// The side file `--plot` names for each frame (none without it).
    pub(crate) fn side_files(&self) -> Vec<PathTemplate> {
        self.0.iter().map(|p| p.template.clone()).collect()
    }

    /// Where this frame's figure goes, and in which format: `None` without `--plot`, or for a
    /// frame past the first when the name has no field.
    pub(crate) fn target(&self, cx: &Context<'_>) -> Option<(&Plot, PathBuf)> {
        Some((self.0.as_ref()?, cx.side_file(0)?.to_path_buf()))
    }
}

/// Parses `--plot FILE`: a name ending in .svg or .png, with `-o`'s fields; an unknown field is
/// refused here, before any input is read.
fn plot_target(given: &Given) -> Result<Plot, FlagError> {
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
