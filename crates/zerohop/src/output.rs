//! Writing to standard output, with colour only on a terminal and a broken
//! pipe treated as the reader having seen enough.

use std::io::{self, Write};

use anstream::AutoStream;
use anyhow::Context as _;
use zerohop_core::Report;
use zerohop_core::render::{human, json};

/// The output formats of the commands that answer with a report or a
/// document: `doctor`, `topo`, `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Tables and findings for people.
    Human,
    /// One versioned JSON document.
    Json,
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
        Format::Human => human::write(report, human::HumanOptions { verbose }, out),
        Format::Json => json::write(report, out),
    })
    .context("failed to write the report")
}
