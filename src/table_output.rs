//! Frames or a table, written once for the tools that write frames unless asked for a table of
//! what they measured: `threshold` (its thresholds), `radon` (the sinogram's values) and `deskew`
//! (the angles). The group owns `--format csv|tsv` (its words, [`TableFormat`], for the parser,
//! the completions and the error), the decision between frames and a table (`--format`, or `-o`
//! with a `.csv` or `.tsv` file; the two must agree), and each frame's rows: the header once per
//! output, then the frame's key columns ([`TABLE_KEY_COLUMNS`]) and the tool's own on each row.
//! It has nothing to check before any input is read: the decision waits for `-o`'s extension.
//!
//! [`TABLE_KEY_COLUMNS`]: histopipe_cli::TABLE_KEY_COLUMNS

use std::fmt::{Display, Write as _};
use std::io::Write as _;

use histopipe_cli::{Context, Error, Flag, FlagError, Given, OutputFormat, Product};

histopipe_cli::words! {
    /// The tables `--format` takes: what completions offer, and what its error lists.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum TableFormat {
        Csv = "csv",
        Tsv = "tsv",
    }
}

impl TableFormat {
    /// The table `format` (`-o`'s extension, or `--format`'s) is, if it is one.
    fn of(format: OutputFormat) -> Option<TableFormat> {
        match format {
            OutputFormat::Csv => Some(TableFormat::Csv),
            OutputFormat::Tsv => Some(TableFormat::Tsv),
            _ => None,
        }
    }

    fn format(self) -> OutputFormat {
        match self {
            TableFormat::Csv => OutputFormat::Csv,
            TableFormat::Tsv => OutputFormat::Tsv,
        }
    }

    /// The separator of the columns.
    fn sep(self) -> char {
        match self {
            TableFormat::Csv => ',',
            TableFormat::Tsv => '\t',
        }
    }
}

/// `--format`, with the tool's `help` (which says what the table holds, and the default).
pub(crate) const fn format_flag(help: &'static str) -> Flag {
    Flag::with_value("--format", "F", help).one_of(TableFormat::NAMES)
}

/// What `--format` and `-o` ask for: frames, or a table.
#[derive(Default)]
pub(crate) struct TableOutput {
    /// `--format`, if given.
    option: Option<TableFormat>,
    /// The table, once [`TableOutput::product`] has decided on one; `None`: frames.
    table: Option<TableFormat>,
}

impl TableOutput {
    /// Takes `--format`; `Ok(false)` for another option.
    pub(crate) fn option(&mut self, given: &Given) -> Result<bool, FlagError> {
        if !given.is("--format") {
            return Ok(false);
        }
        self.option = Some(TableFormat::parse_word(given.text()?, "format")?);
        Ok(true)
    }

    /// What the tool writes, given the format `-o`'s extension names: a table where `--format`
    /// or the extension is CSV or TSV, frames otherwise; `--format` and an extension that differ
    /// are refused.
    pub(crate) fn product(&mut self, extension: Option<OutputFormat>) -> Result<Product, Error> {
        let option = self.option.map(TableFormat::format);
        let Some(chosen) = option.or(extension) else { return Ok(Product::Frames) };
        // The default is never used: one of the two is given. The contradiction is refused.
        self.table = TableFormat::of(OutputFormat::agreed(option, extension, chosen)?);
        Ok(if self.table.is_some() { Product::Table } else { Product::Frames })
    }

    /// This frame's rows, to be filled and written, where the output is a table; `None` where it
    /// is frames. `columns`: the tool's own, after the key columns.
    pub(crate) fn rows(&self, cx: &Context<'_>, columns: &[&str]) -> Option<Rows> {
        let sep = self.table?.sep();
        Some(Rows { text: cx.table_header(columns, sep), key: cx.row_key(sep), sep })
    }
}

/// One frame's rows of the table: its header where the frame starts the output, then a row for
/// each [`Rows::push`], written by [`Rows::write`].
pub(crate) struct Rows {
    text: String,
    /// The frame's key columns, each with the separator after it.
    key: String,
    sep: char,
}

impl Rows {
    /// A row: the frame's key columns, then `fields` as they display.
    pub(crate) fn push(&mut self, fields: &[&dyn Display]) {
        self.text.push_str(&self.key);
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                self.text.push(self.sep);
            }
            write!(self.text, "{field}").expect("writing to a String");
        }
        self.text.push('\n');
    }

    /// Writes the rows to the output.
    pub(crate) fn write(self, cx: &mut Context<'_>) -> Result<(), Error> {
        cx.text().write_all(self.text.as_bytes()).map_err(|e| Error::io(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word completions offer is one the parser takes, the table of its extension, and
    /// the error lists them.
    #[test]
    fn the_formats_listed_are_the_formats_parsed() {
        for name in TableFormat::NAMES {
            assert_eq!(TableFormat::parse_word(name, "format").unwrap().format().name(), *name);
        }
        for bad in ["CSV", "npy", "png", ""] {
            let e = TableFormat::parse_word(bad, "format").unwrap_err();
            assert_eq!(e, format!("unknown format '{bad}' (csv or tsv)"));
        }
    }

    /// A table where `--format` or the extension names one, frames otherwise; the two must agree.
    #[test]
    fn the_output_is_a_table_where_either_names_one() {
        use OutputFormat::{Csv, Png, Tsv};
        let product = |option, extension| {
            let mut t = TableOutput { option, table: None };
            t.product(extension).map(|p| (p, t.table))
        };
        let (csv, tsv) = (Some(TableFormat::Csv), Some(TableFormat::Tsv));
        assert_eq!(product(None, None).unwrap(), (Product::Frames, None));
        assert_eq!(product(None, Some(Png)).unwrap(), (Product::Frames, None));
        assert_eq!(product(None, Some(Tsv)).unwrap(), (Product::Table, tsv));
        assert_eq!(product(csv, None).unwrap(), (Product::Table, csv));
        assert_eq!(product(csv, Some(Csv)).unwrap(), (Product::Table, csv));
        let e = product(csv, Some(Png)).unwrap_err();
        assert_eq!(e.message, "--format csv contradicts -o's extension .png");
    }
}
