//! The diff for people: findings, facts by layer, files, each section only
//! when something differs in it.

use std::io::{self, Write};

use zerohop_core::Status;

use super::Diff;
use super::files::Change;

fn status(status: Option<Status>) -> &'static str {
    status.map_or("(none)", Status::as_str)
}

fn value(value: Option<&String>) -> &str {
    value.map_or("(none)", String::as_str)
}

/// Writes `diff` as text.
pub fn write_human(diff: &Diff, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "a: {}\nb: {}", diff.a, diff.b)?;
    if diff.is_empty() {
        let scope = if diff.all {
            ""
        } else {
            " (volatile data left out; --all compares it)"
        };
        return writeln!(out, "\nno differences{scope}");
    }
    if !diff.findings.is_empty() {
        writeln!(
            out,
            "\nfindings whose status changed ({})",
            diff.findings.len()
        )?;
        for change in &diff.findings {
            writeln!(
                out,
                "  {:<8} {:<28} {} → {}  {}",
                change.id,
                change.subject,
                status(change.a),
                status(change.b),
                change.message
            )?;
        }
    }
    if !diff.facts.is_empty() {
        writeln!(out, "\nfacts that differ ({})", diff.facts.len())?;
        let mut layer = "";
        for change in &diff.facts {
            if change.layer != layer {
                layer = change.layer;
                writeln!(out, "  {layer}")?;
            }
            writeln!(
                out,
                "    {}: {} → {}",
                change.key,
                value(change.a.as_ref()),
                value(change.b.as_ref())
            )?;
        }
    }
    if !diff.files.is_empty() {
        writeln!(out, "\nfiles that differ ({})", diff.files.len())?;
        for change in &diff.files {
            let what = match change.change {
                Change::Added => "added",
                Change::Removed => "removed",
                Change::Changed => "changed",
            };
            writeln!(
                out,
                "  {what:<8} {}: {} → {}",
                change.path,
                value(change.a.as_ref()),
                value(change.b.as_ref())
            )?;
            if let Some(text) = &change.diff {
                for line in text.lines() {
                    writeln!(out, "      {line}")?;
                }
            }
        }
    }
    if !diff.all {
        writeln!(out, "\nvolatile data left out; --all compares it")?;
    }
    Ok(())
}
