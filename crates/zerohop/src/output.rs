//! Writing to standard output, with colour only on a terminal and a broken
//! pipe treated as the reader having seen enough.

use std::io::{self, Write};

use anstream::AutoStream;
use anyhow::Context as _;
use zerohop_core::Report;
use zerohop_core::render::{human, json};

/// The output formats, one list for every command's `--format`: each
/// command accepts the ones it writes (see [`formats`]), so `--format json`
/// means the same versioned document everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Tables, findings and diagnostics for people.
    Human,
    /// One versioned JSON document.
    Json,
    /// SARIF 2.1.0 for code scanning (`lint`).
    Sarif,
    /// node-problem-detector's custom plugin protocol (`doctor`).
    Npd,
    /// One self-contained SVG drawing (`topo`).
    Svg,
    /// One self-contained HTML page, nothing to fetch (`topo`, `doctor`,
    /// `fleet`).
    Html,
}

/// What most commands write: for people, or one JSON document.
pub(crate) const HUMAN_OR_JSON: &[Format] = &[Format::Human, Format::Json];

/// The parser of a command's `--format`: the values of `allowed` only, so
/// that `--help` lists what the command writes and anything else is a
/// usage error naming them.
pub(crate) fn formats(
    allowed: &'static [Format],
) -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::ValueEnum as _;
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(allowed.iter().filter_map(Format::to_possible_value))
        .try_map(|name: String| Format::from_str(&name, false))
}

/// Runs `write` against standard output. ANSI styles are stripped unless
/// standard output is a terminal (and `NO_COLOR` is unset). A broken pipe
/// (`zerohop doctor | head`) ends the output quietly.
pub(crate) fn to_stdout(
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    // Standard output is line-buffered: without a buffer of our own, a JSON
    // report of ten thousand findings costs a system call per line.
    let mut stream = io::BufWriter::new(AutoStream::auto(io::stdout().lock()));
    match write(&mut stream).and_then(|()| stream.flush()) {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Writes a report of findings (`doctor`, `validate`) to standard output in
/// `format`: for people, with every finding when `verbose`, or as the
/// versioned JSON report.
pub(crate) fn report(report: &Report, format: Format, verbose: bool) -> anyhow::Result<()> {
    to_stdout(|out| match format {
        Format::Json => json::write(report, out),
        // The commands that write reports parse no other format.
        Format::Human | Format::Sarif | Format::Npd | Format::Svg | Format::Html => {
            human::write(report, human::HumanOptions { verbose }, out)
        }
    })
    .context("failed to write the report")
}
