//! The human report of the doctor: a table per layer, then what to fix first.

use std::io::{self, Write};

use crate::finding::{Finding, Status};
use crate::render::printable::printable;
use crate::render::style;
use crate::report::Report;

/// Options for the human renderer.
#[derive(Debug, Clone, Copy, Default)]
pub struct HumanOptions {
    /// Also list findings that passed or do not apply.
    pub verbose: bool,
}

/// `findings` of `command` as a rule's `## Example` shows them: the
/// verbose report without colour, without the summary line (which names
/// the target) and without blanks at line ends, which documentation does
/// not keep. The tests that hold each example to its fixture compare this.
pub fn as_documented(command: &str, findings: Vec<Finding>) -> String {
    let report = Report::new(command, "", findings);
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    let _ = write(&report, HumanOptions { verbose: true }, &mut out);
    let plain = crate::render::without_styles(&String::from_utf8_lossy(&out));
    let body = plain
        .trim_end()
        .rsplit_once('\n')
        .map_or("", |(body, _)| body);
    body.trim_end()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes the doctor's human report: one section per group (layer) in the
/// report's order, each finding on a line with its evidence below problems,
/// then a numbered plan of root causes with their fixes and a summary line.
pub fn write(report: &Report, options: HumanOptions, out: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| options.verbose || !matches!(f.status, Status::Pass | Status::NotApplicable))
        .collect();
    let id_width = shown.iter().map(|f| f.id.len()).max().unwrap_or(0);
    let name_width = shown.iter().map(|f| f.name.len()).max().unwrap_or(0);

    let mut group: Option<&str> = None;
    for finding in &shown {
        if group != Some(finding.group.as_str()) {
            if group.is_some() {
                writeln!(out)?;
            }
            group = Some(&finding.group);
            let heading = style::HEADING;
            writeln!(out, "{heading}{}{heading:#}", finding.group)?;
        }
        write_line(finding, id_width, name_width, out)?;
    }
    if shown.is_empty() {
        writeln!(out, "no problems found in {} checks", report.findings.len())?;
    }

    let plan: Vec<&Finding> = report.fix_first().collect();
    if !plan.is_empty() {
        let heading = style::HEADING;
        writeln!(out, "\n{heading}what to fix first{heading:#}")?;
        for (index, finding) in plan.iter().enumerate() {
            write_plan_step(index + 1, finding, out)?;
        }
    }

    writeln!(out)?;
    write_summary(report, out)
}

fn write_line(
    finding: &Finding,
    id_width: usize,
    name_width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    let status = style::status(finding.status);
    let label = finding.status.as_str();
    let subject = if finding.subject.is_empty() {
        String::new()
    } else {
        format!("{}: ", printable(&finding.subject))
    };
    writeln!(
        out,
        "  {status}{label:<14}{status:#} {:<id_width$}  {:<name_width$}  {subject}{}",
        finding.id,
        finding.name,
        printable(&finding.message)
    )?;
    // A blocked finding's message already names its prerequisite.
    let dim = style::DIM;
    if finding.status.is_problem() || finding.status == Status::Unknown {
        for evidence in &finding.evidence {
            writeln!(
                out,
                "  {:<14} {dim}{} = {}{dim:#}",
                "",
                printable(&evidence.source),
                printable(&evidence.value)
            )?;
        }
    }
    Ok(())
}

fn write_plan_step(step: usize, finding: &Finding, out: &mut dyn Write) -> io::Result<()> {
    let status = style::status(finding.status);
    let subject = if finding.subject.is_empty() {
        String::new()
    } else {
        format!(" ({})", printable(&finding.subject))
    };
    writeln!(
        out,
        "{step:>3}. {status}{}{status:#} {}{subject}: {}",
        finding.id,
        finding.name,
        printable(&finding.message)
    )?;
    if let Some(fix) = &finding.remediation {
        writeln!(out, "     fix: {}", printable(&fix.summary))?;
        // Commands may span lines (a heredoc, YAML); each line is escaped.
        for command in &fix.commands {
            for line in command.lines() {
                writeln!(out, "       {}", printable(line))?;
            }
        }
    }
    Ok(())
}

fn write_summary(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let parts: Vec<String> = Status::ALL
        .iter()
        .filter_map(|&status| {
            let count = report.summary.count(status);
            (count > 0).then(|| {
                let style = style::status(status);
                format!("{style}{count} {status}{style:#}")
            })
        })
        .collect();
    if parts.is_empty() {
        writeln!(out, "{}: no findings", printable(&report.target))
    } else {
        writeln!(out, "{}: {}", printable(&report.target), parts.join(", "))
    }
}
