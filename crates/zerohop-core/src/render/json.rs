//! The JSON report: one versioned document, stable field names.
//!
//! The format is documented in `docs/report-json.md`.

use std::io::{self, Write};

use crate::report::Report;

/// Writes `report` as one pretty-printed JSON document and a newline.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}
