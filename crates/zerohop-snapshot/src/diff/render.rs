//! The diff for people: findings, facts by layer, files, each section only
//! when something differs in it. Every text from either side (labels,
//! subjects, messages, keys, values, paths, diff lines) is written through
//! [`printable`]: a capture's `cmdline`, a listed name or an error message
//! may carry terminal escapes.

use std::io::{self, Write};

use zerohop_core::Status;
use zerohop_core::render::printable::printable;

use super::Diff;
use super::files::Change;

fn status(status: Option<Status>) -> &'static str {
    status.map_or("(none)", Status::as_str)
}

fn value(value: Option<&String>) -> std::borrow::Cow<'_, str> {
    value.map_or("(none)".into(), |value| printable(value))
}

/// The line that counts what a section left out, if it left anything out.
fn left_out(out: &mut dyn Write, count: usize, what: &str) -> io::Result<()> {
    if count > 0 {
        writeln!(
            out,
            "  … and {count} more {what} (at most {} are listed)",
            super::MAX_CHANGES
        )?;
    }
    Ok(())
}

/// Writes `diff` as text.
pub fn write_human(diff: &Diff, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "a: {}\nb: {}", printable(&diff.a), printable(&diff.b))?;
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
            diff.findings.len() + diff.left_out.findings
        )?;
        for change in &diff.findings {
            writeln!(
                out,
                "  {:<8} {:<28} {} → {}  {}",
                printable(&change.id),
                printable(&change.subject),
                status(change.a),
                status(change.b),
                printable(&change.message)
            )?;
        }
        left_out(out, diff.left_out.findings, "findings")?;
    }
    if !diff.facts.is_empty() {
        writeln!(
            out,
            "\nfacts that differ ({})",
            diff.facts.len() + diff.left_out.facts
        )?;
        let mut layer = "";
        for change in &diff.facts {
            if change.layer != layer {
                layer = change.layer;
                writeln!(out, "  {layer}")?;
            }
            writeln!(
                out,
                "    {}: {} → {}",
                printable(&change.key),
                value(change.a.as_ref()),
                value(change.b.as_ref())
            )?;
        }
        left_out(out, diff.left_out.facts, "facts")?;
    }
    if !diff.files.is_empty() {
        writeln!(
            out,
            "\nfiles that differ ({})",
            diff.files.len() + diff.left_out.files
        )?;
        for change in &diff.files {
            let what = match change.change {
                Change::Added => "added",
                Change::Removed => "removed",
                Change::Changed => "changed",
            };
            writeln!(
                out,
                "  {what:<8} {}: {} → {}",
                printable(&change.path),
                value(change.a.as_ref()),
                value(change.b.as_ref())
            )?;
            if let Some(text) = &change.diff {
                for line in text.lines() {
                    writeln!(out, "      {}", printable(line))?;
                }
            }
            if let Some(cut) = &change.cut {
                writeln!(out, "      (cut: {cut})")?;
            }
        }
        left_out(out, diff.left_out.files, "files")?;
    }
    if !diff.all {
        writeln!(out, "\nvolatile data left out; --all compares it")?;
    }
    Ok(())
}
