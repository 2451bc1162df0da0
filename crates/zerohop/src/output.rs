//! Writing to standard output, with colour only on a terminal and a broken
//! pipe treated as the reader having seen enough.

use std::io::{self, Write};

use anstream::AutoStream;

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
