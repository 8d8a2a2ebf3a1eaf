//! The histopipe tools. Each module is one tool's command line ([`histopipe_cli::Tool`]); its
//! binary in `src/bin/` is a one-line `main`. Formats live in `histopipe-frame`, operations in
//! `histopipe-ops`, the GPU runtime in `histopipe-gpu`, the shared plumbing in `histopipe-cli`.

mod binning;
mod colour;
mod drawing;
mod fill;
mod mask;
mod plot;
mod table_output;

/// Declares each tool's module and lists it in [`TOOLS`].
macro_rules! tools {
    ($($module:ident::$tool:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every tool: its name (its module's, `_` for `-`) and its options
        /// ([`histopipe_cli::Tool::FLAGS`]), in the order of the modules; tests/tools/flags.rs
        /// checks each tool's option table against them, and tools.toml holds the same tools.
        pub const TOOLS: &[(&str, &[histopipe_cli::Flag])] =
            &[$((stringify!($module), <$module::$tool as histopipe_cli::Tool>::FLAGS)),*];

        /// Every tool, as the GPU service (`histopipe-service`) runs it for a client.
        pub const SERVICE_TOOLS: &[histopipe_cli::service::Entry] =
            &[$(histopipe_cli::service::entry::<$module::$tool>()),*];
    };
}

// A tool's module, and its type (a histopipe_cli::Tool): a new tool is a line here.
tools! {
    cdf::Cdf,
    clahe::Clahe,
    colhist::ColHist,
    deskew::Deskew,
    edges::Edges,
    equalize::Equalize,
    hough_lines::HoughLines,
    hough_segments::HoughSegments,
    hough_vote::HoughVote,
    iradon::Iradon,
    pad::Pad,
    radon::Radon,
    rotate::Rotate,
    stretch::Stretch,
    threshold::Threshold,
}
