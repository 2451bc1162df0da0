//! The human report of the doctor: a table per layer, then what to fix first.

use std::collections::HashMap;
use std::hash::Hash;
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

/// The most subjects a line of alike findings names; the rest are counted
/// (`and 2059 more`), so that a host with thousands of ports gives a line
/// per verdict, not per port.
pub const MAX_SUBJECTS: usize = 5;

/// Writes the doctor's human report: one section per group (layer) in the
/// report's order, each verdict on a line with its evidence below problems,
/// then a numbered plan of root causes with their fixes and a summary line.
///
/// Findings alike but for their subject (same check, status and message,
/// the same values read) share one line naming their subjects, at the place
/// of the first; in the plan, findings alike with the same fix share one
/// step, which shows the first one's commands.
/// The JSON report keeps every finding.
pub fn write(report: &Report, options: HumanOptions, out: &mut dyn Write) -> io::Result<()> {
    let shown = alike(
        report.findings.iter().filter(|f| {
            options.verbose || !matches!(f.status, Status::Pass | Status::NotApplicable)
        }),
        |f| {
            (
                f.evidence
                    .iter()
                    .map(|e| e.value.as_str())
                    .collect::<Vec<_>>(),
                f.blocked_by.as_deref(),
            )
        },
    );
    let id_width = shown.iter().map(|g| g.first.id.len()).max().unwrap_or(0);
    let name_width = shown.iter().map(|g| g.first.name.len()).max().unwrap_or(0);

    let mut group: Option<&str> = None;
    for alike in &shown {
        let finding = alike.first;
        if group != Some(finding.group.as_str()) {
            if group.is_some() {
                writeln!(out)?;
            }
            group = Some(&finding.group);
            let heading = style::HEADING;
            writeln!(out, "{heading}{}{heading:#}", finding.group)?;
        }
        write_line(alike, id_width, name_width, out)?;
    }
    if shown.is_empty() {
        writeln!(out, "no problems found in {} checks", report.findings.len())?;
    }

    let plan = alike(report.fix_first(), |f| {
        f.remediation.as_ref().map(|fix| fix.summary.as_str())
    });
    if !plan.is_empty() {
        let heading = style::HEADING;
        writeln!(out, "\n{heading}what to fix first{heading:#}")?;
        for (index, step) in plan.iter().enumerate() {
            write_plan_step(index + 1, step, out)?;
        }
    }

    writeln!(out)?;
    write_summary(report, out)
}

/// Findings alike but for their subject, shown once: the first of them
/// and every subject, in report order.
struct Alike<'a> {
    first: &'a Finding,
    subjects: Vec<&'a str>,
    /// Whether the others' fixes run other commands than the first's (the
    /// same commands on their own device, say).
    commands_differ: bool,
}

impl Alike<'_> {
    /// The subjects as a line shows them: all of one, or the first
    /// [`MAX_SUBJECTS`] of several, the others counted, and how many in all.
    fn subjects(&self) -> String {
        let named: Vec<String> = self
            .subjects
            .iter()
            .take(MAX_SUBJECTS)
            .map(|subject| printable(subject).into_owned())
            .collect();
        let mut text = named.join(", ");
        let count = self.subjects.len();
        if count > MAX_SUBJECTS {
            text.push_str(&format!(" and {} more", count - MAX_SUBJECTS));
        }
        if count > 1 {
            text.push_str(&format!(" ({count})"));
        }
        text
    }
}

/// `findings` with those alike merged, in the order of each one's first:
/// alike is the same check, status and message, and the same `more` (what
/// else the caller holds to be the same verdict). Findings about the host
/// as a whole (no subject) are never merged.
fn alike<'a, K: Eq + Hash>(
    findings: impl Iterator<Item = &'a Finding>,
    more: impl Fn(&'a Finding) -> K,
) -> Vec<Alike<'a>> {
    let mut shown: Vec<Alike<'a>> = Vec::new();
    let mut index: HashMap<(&str, Status, &str, K), usize> = HashMap::new();
    for finding in findings {
        if finding.subject.is_empty() {
            shown.push(Alike {
                first: finding,
                subjects: Vec::new(),
                commands_differ: false,
            });
            continue;
        }
        let key = (
            finding.id.as_str(),
            finding.status,
            finding.message.as_str(),
            more(finding),
        );
        match index.get(&key) {
            Some(&at) => {
                let alike = &mut shown[at];
                alike.subjects.push(&finding.subject);
                alike.commands_differ |= commands(finding) != commands(alike.first);
            }
            None => {
                index.insert(key, shown.len());
                shown.push(Alike {
                    first: finding,
                    subjects: vec![&finding.subject],
                    commands_differ: false,
                });
            }
        }
    }
    shown
}

/// The commands of a finding's fix, none without one.
fn commands(finding: &Finding) -> &[String] {
    finding
        .remediation
        .as_ref()
        .map_or(&[], |fix| fix.commands.as_slice())
}

fn write_line(
    alike: &Alike<'_>,
    id_width: usize,
    name_width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    let finding = alike.first;
    let status = style::status(finding.status);
    let label = finding.status.as_str();
    let subject = if alike.subjects.is_empty() {
        String::new()
    } else {
        format!("{}: ", alike.subjects())
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
        // The others read the same values, each at its own paths.
        let others = alike.subjects.len().saturating_sub(1);
        if others > 0 && !finding.evidence.is_empty() {
            writeln!(
                out,
                "  {:<14} {dim}the same values for the other {others}{dim:#}",
                ""
            )?;
        }
    }
    Ok(())
}

fn write_plan_step(step: usize, alike: &Alike<'_>, out: &mut dyn Write) -> io::Result<()> {
    let finding = alike.first;
    let status = style::status(finding.status);
    let subject = if alike.subjects.is_empty() {
        String::new()
    } else {
        format!(" ({})", alike.subjects())
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
        if alike.commands_differ {
            let others = alike.subjects.len() - 1;
            let first = printable(&finding.subject);
            writeln!(
                out,
                "     (the commands for {first}; the other {others} have their own: --format json lists each)"
            )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Evidence, Remediation, Severity};

    fn finding(status: Status, subject: &str, message: &str) -> Finding {
        Finding {
            id: "RDMA008".into(),
            name: "rdma-port-errors".into(),
            group: "rdma".into(),
            status,
            severity: Severity::Error,
            subject: subject.into(),
            message: message.into(),
            evidence: vec![Evidence::new(
                format!("/sys/class/infiniband/{subject}/ports/1/counters"),
                "<missing>",
            )],
            remediation: status.is_problem().then(|| {
                Remediation::new("find the failing link part")
                    .command(format!("mlxlink -d {}", subject.split('/').next().unwrap()))
            }),
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn human(report: &Report) -> String {
        let mut out = Vec::new();
        write(report, HumanOptions::default(), &mut out).unwrap();
        crate::render::without_styles(&String::from_utf8(out).unwrap())
    }

    const NO_COUNTERS: &str = "port has neither counters/ nor hw_counters/";

    #[test]
    fn thousands_of_alike_findings_are_one_line_and_json_keeps_each() {
        let findings: Vec<Finding> = (0..2064)
            .map(|i| finding(Status::Unknown, &format!("mlx5_{i}/1"), NO_COUNTERS))
            .collect();
        let report = Report::new("doctor", "/", findings);
        let text = human(&report);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(NO_COUNTERS)).collect();
        assert_eq!(
            lines,
            [format!(
                "  unknown        RDMA008  rdma-port-errors  mlx5_0/1, mlx5_1/1, mlx5_2/1, mlx5_3/1, mlx5_4/1 and 2059 more (2064): {NO_COUNTERS}"
            )],
            "{text}"
        );
        // The first one's evidence, once, and what holds for the others.
        assert_eq!(text.matches("= <missing>").count(), 1, "{text}");
        assert!(
            text.contains("the same values for the other 2063"),
            "{text}"
        );
        assert!(text.ends_with("/: 2064 unknown\n"), "{text}");
        assert!(text.lines().count() < 10, "{text}");

        let mut json = Vec::new();
        crate::render::json::write(&report, &mut json).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["findings"].as_array().unwrap().len(), 2064);
    }

    #[test]
    fn the_same_fix_is_one_step_and_other_verdicts_stay_apart() {
        let mut findings: Vec<Finding> = (0..8)
            .map(|i| finding(Status::Warn, &format!("mlx5_{i}/1"), "port_rcv_errors 14"))
            .collect();
        // A different message, a different value read, a host-wide finding:
        // each its own line.
        findings.insert(
            1,
            finding(Status::Fail, "mlx5_9/1", "link_downed saturated"),
        );
        let mut other_value = finding(Status::Warn, "mlx5_10/1", "port_rcv_errors 14");
        other_value.evidence[0].value = "15".into();
        findings.push(other_value);
        let mut host_wide = finding(Status::Warn, "", "port_rcv_errors 14");
        host_wide.evidence.clear();
        findings.push(host_wide.clone());
        findings.push(host_wide);
        let text = human(&Report::new("doctor", "/", findings));

        let table: Vec<&str> = text
            .lines()
            .take_while(|l| !l.is_empty())
            .filter(|l| l.starts_with("  warn") || l.starts_with("  fail"))
            .collect();
        assert_eq!(table.len(), 5, "{text}");
        assert!(
            table[0].ends_with(
                "mlx5_0/1, mlx5_1/1, mlx5_2/1, mlx5_3/1, mlx5_4/1 and 3 more (8): port_rcv_errors 14"
            ),
            "{text}"
        );
        assert!(
            table[1].ends_with("mlx5_9/1: link_downed saturated"),
            "{text}"
        );
        assert!(
            table[2].ends_with("mlx5_10/1: port_rcv_errors 14"),
            "{text}"
        );

        let plan = &text[text.find("what to fix first").unwrap()..];
        let steps: Vec<&str> = plan.lines().filter(|l| l.contains(". RDMA008")).collect();
        // The fail first; the nine warns with one fix are one step (the
        // value read does not change the fix); the two host-wide ones stay.
        assert_eq!(steps.len(), 4, "{plan}");
        assert!(
            steps[0].ends_with("(mlx5_9/1): link_downed saturated"),
            "{plan}"
        );
        assert!(
            steps[1].ends_with("and 4 more (9)): port_rcv_errors 14"),
            "{plan}"
        );
        assert_eq!(
            plan.matches("fix: find the failing link part").count(),
            4,
            "{plan}"
        );
        // The first one's commands, and a word for the others' own.
        assert_eq!(plan.matches("mlxlink -d mlx5_0").count(), 1, "{plan}");
        assert!(!plan.contains("mlxlink -d mlx5_1\n"), "{plan}");
        assert!(
            plan.contains(
                "(the commands for mlx5_0/1; the other 8 have their own: --format json lists each)"
            ),
            "{plan}"
        );
    }
}
