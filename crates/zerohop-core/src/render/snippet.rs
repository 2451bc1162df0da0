//! The human report of the linter, in the style of rustc's diagnostics: the
//! rule and message, the file position, the source line with a caret under
//! the span, and the fix.
//!
//! ```text
//! error[ZL020]: `useOpenKernelModules` is deprecated and no longer honored
//!   --> cluster-policy.yaml:12:5
//!    |
//! 12 |     useOpenKernelModules: true
//!    |     ^^^^^^^^^^^^^^^^^^^^
//!    = object: ClusterPolicy/cluster-policy
//!    = help: replace it with `kernelModuleType: open`
//! ```

use std::io::{self, Write};

use crate::finding::{Finding, Status};
use crate::render::style;
use crate::report::Report;

/// Finds the text of an input by the name findings use for it; `None` when
/// the source is not available (the snippet is then left out).
pub type SourceLookup<'a> = &'a dyn Fn(&str) -> Option<&'a str>;

/// Writes every problem (and `info`) finding of `report` as a rustc-style
/// diagnostic, then a summary line.
pub fn write(report: &Report, source: SourceLookup<'_>, out: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.status,
                Status::Fail | Status::Warn | Status::Info | Status::Unknown
            )
        })
        .collect();
    for finding in &shown {
        write_finding(finding, source, out)?;
        writeln!(out)?;
    }
    write_summary(report, out)
}

fn label(status: Status) -> &'static str {
    match status {
        Status::Fail => "error",
        Status::Warn => "warning",
        Status::Info => "info",
        other => other.as_str(),
    }
}

/// Writes one finding as a diagnostic.
pub fn write_finding(
    finding: &Finding,
    source: SourceLookup<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let status = style::status(finding.status);
    let bold = style::HEADING;
    writeln!(
        out,
        "{status}{}[{}]{status:#}{bold}: {}{bold:#}",
        label(finding.status),
        finding.id,
        finding.message
    )?;
    let line_text = finding.location.as_ref().and_then(|location| {
        let text = source(&location.file)?;
        let index = usize::try_from(location.line).ok()?.checked_sub(1)?;
        text.lines()
            .nth(index)
            .map(|line| line.trim_end_matches('\r'))
    });
    let number = finding
        .location
        .as_ref()
        .map_or(String::new(), |l| l.line.to_string());
    let gutter = " ".repeat(number.len());
    let dim = style::DIM;
    if let Some(location) = &finding.location {
        writeln!(
            out,
            "{gutter}{dim}-->{dim:#} {}:{}:{}",
            location.file, location.line, location.column
        )?;
    }
    if let (Some(location), Some(line)) = (&finding.location, line_text) {
        // Tabs are shown as one space so that the caret lines up: columns
        // count characters.
        let shown: String = line
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        let length = shown.chars().count();
        let start = usize::try_from(location.column)
            .unwrap_or(1)
            .saturating_sub(1)
            .min(length);
        let end = match (location.end_line, location.end_column) {
            (Some(end_line), Some(end_column)) if end_line == location.line => {
                usize::try_from(end_column)
                    .unwrap_or(1)
                    .saturating_sub(1)
                    .min(length)
            }
            _ => shown.trim_end().chars().count(),
        };
        let width = end.saturating_sub(start).max(1);
        writeln!(out, "{gutter} {dim}|{dim:#}")?;
        writeln!(out, "{dim}{number} |{dim:#} {shown}")?;
        writeln!(
            out,
            "{gutter} {dim}|{dim:#} {}{status}{}{status:#}",
            " ".repeat(start),
            "^".repeat(width)
        )?;
    }
    if let Some(object) = &finding.object {
        let namespace = object
            .namespace
            .as_deref()
            .map_or(String::new(), |ns| format!("{ns}/"));
        writeln!(
            out,
            "{gutter} {dim}={dim:#} object: {}/{namespace}{}",
            object.kind, object.name
        )?;
    }
    if let Some(fix) = &finding.remediation {
        writeln!(out, "{gutter} {dim}={dim:#} help: {}", fix.summary)?;
        for command in &fix.commands {
            for line in command.lines() {
                writeln!(out, "{gutter}         {line}")?;
            }
        }
        for doc in &fix.docs {
            writeln!(out, "{gutter} {dim}={dim:#} see: {doc}")?;
        }
    }
    Ok(())
}

fn write_summary(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let counts = [
        (report.summary.fail, "error"),
        (report.summary.warn, "warning"),
        (report.summary.info, "info"),
    ];
    let parts: Vec<String> = counts
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, word)| {
            let plural = if *count == 1 || *word == "info" {
                ""
            } else {
                "s"
            };
            format!("{count} {word}{plural}")
        })
        .collect();
    if parts.is_empty() {
        writeln!(out, "{}: no problems found", report.target)
    } else {
        writeln!(out, "{}: {}", report.target, parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Location, ObjectRef, Remediation, Severity};

    fn finding() -> Finding {
        Finding {
            id: "ZL020".into(),
            name: "ignored-use-open-kernel-modules".into(),
            group: "lint".into(),
            status: Status::Fail,
            severity: Severity::Error,
            subject: "spec.driver.useOpenKernelModules".into(),
            message: "`useOpenKernelModules` is no longer honored".into(),
            evidence: vec![],
            remediation: Some(
                Remediation::new("use `kernelModuleType: open`").command("kernelModuleType: open"),
            ),
            blocked_by: None,
            location: Some(Location {
                file: "cp.yaml".into(),
                line: 3,
                column: 5,
                end_line: Some(3),
                end_column: Some(25),
            }),
            object: Some(ObjectRef {
                api_version: "nvidia.com/v1".into(),
                kind: "ClusterPolicy".into(),
                namespace: None,
                name: "cluster-policy".into(),
            }),
        }
    }

    #[test]
    fn caret_under_the_span() {
        let report = Report::new("lint", "cp.yaml", vec![finding()]);
        let text = "kind: ClusterPolicy\nspec:\n  driver:\n    useOpenKernelModules: true\n";
        // The finding's line 3 is `  driver:`; point at line 4 instead.
        let mut report = report;
        if let Some(location) = report.findings[0].location.as_mut() {
            location.line = 4;
            location.end_line = Some(4);
        }
        let lookup = |name: &str| (name == "cp.yaml").then_some(text);
        let mut out = Vec::new();
        write(&report, &lookup, &mut out).unwrap();
        let plain = String::from_utf8(out).unwrap();
        let plain = anstream_strip(&plain);
        assert!(
            plain.contains("error[ZL020]: `useOpenKernelModules` is no longer honored"),
            "{plain}"
        );
        assert!(plain.contains(" --> cp.yaml:4:5"), "{plain}");
        assert!(
            plain.contains("4 |     useOpenKernelModules: true"),
            "{plain}"
        );
        assert!(plain.contains("  |     ^^^^^^^^^^^^^^^^^^^^\n"), "{plain}");
        assert!(
            plain.contains("= help: use `kernelModuleType: open`"),
            "{plain}"
        );
        assert!(plain.ends_with("cp.yaml: 1 error\n"), "{plain}");
    }

    #[test]
    fn missing_source_leaves_out_the_snippet() {
        let report = Report::new("lint", "x", vec![finding()]);
        let lookup = |_: &str| None;
        let mut out = Vec::new();
        write(&report, &lookup, &mut out).unwrap();
        let plain = anstream_strip(&String::from_utf8(out).unwrap());
        assert!(plain.contains("--> cp.yaml:3:5"));
        assert!(!plain.contains('^'));
    }

    /// Removes ANSI escape sequences (`ESC [ ... m`).
    fn anstream_strip(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for next in chars.by_ref() {
                    if next == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}
