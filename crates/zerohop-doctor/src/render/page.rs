//! The HTML pages: the topology drawing alone (`topo --format html`) and
//! the doctor's report (`doctor --format html`), the page a user attaches
//! to a support ticket: the verdict, the verdict of each layer, what to fix
//! first, the drawing, and every finding with its evidence and fix,
//! grouped by check.

use std::collections::HashMap;
use std::fmt::Write as _;

use zerohop_core::render::html::{escape, page};
use zerohop_core::{Finding, Report, Status};

use crate::verdict::{self, Readiness};

/// The most subjects a line of alike findings that need no action names;
/// the rest are counted. Problems name every subject.
const QUIET_SUBJECTS: usize = 8;

/// The page of `topo --format html`: the drawing `svg` of `host`.
pub fn topology(svg: &str, host: &str) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>Data path of {}</h1>\n<p class=\"muted\">zerohop {} topo</p>\n<div class=\"drawing\">\n{svg}</div>\n",
        escape(host),
        env!("CARGO_PKG_VERSION")
    );
    page(&format!("zerohop topo: {host}"), &body)
}

/// The page of `doctor --format html`: `report` of `host`, with the
/// topology drawing `svg`.
pub fn doctor(report: &Report, svg: &str, host: &str) -> String {
    let mut body = String::with_capacity(64 * 1024);
    let _ = writeln!(body, "<h1>zerohop doctor: {}</h1>", escape(host));
    identity(report, &mut body);
    let judged = verdict::judge(report);
    let class = match judged.readiness {
        Readiness::Ready => "pass",
        Readiness::NotReady => "fail",
        Readiness::Unknown => "unknown",
    };
    let word = match judged.readiness {
        Readiness::Ready => "data path ready",
        Readiness::NotReady => "data path not ready",
        Readiness::Unknown => "data path unknown",
    };
    let _ = writeln!(
        body,
        "<p class=\"verdict {class}\" id=\"verdict\">{word}: {}</p>",
        escape(&judged.message)
    );
    layers(report, &mut body);
    plan(report, &mut body);
    let _ = writeln!(
        body,
        "<h2 id=\"topology\">Topology</h2>\n<div class=\"drawing\">\n{svg}</div>"
    );
    checks(report, &mut body);
    page(&format!("zerohop doctor: {host}"), &body)
}

/// The host and the pass as the report names them.
fn identity(report: &Report, out: &mut String) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(pass) = &report.pass {
        rows.push((
            "host",
            pass.node
                .clone()
                .unwrap_or_else(|| "unknown (no hostname in the root)".to_owned()),
        ));
    }
    rows.push(("root", report.target.clone()));
    if let Some(pass) = &report.pass {
        rows.push(("checked at", pass.started_at.clone()));
        rows.push(("took", format!("{} ms", pass.duration_ms)));
    }
    rows.push(("zerohop", report.zerohop_version.clone()));
    let s = &report.summary;
    rows.push((
        "findings",
        format!(
            "{} fail, {} warn, {} blocked, {} unknown, {} info, {} pass, {} not applicable",
            s.fail, s.warn, s.blocked, s.unknown, s.info, s.pass, s.not_applicable
        ),
    ));
    out.push_str("<dl class=\"identity\" id=\"identity\">\n");
    for (name, value) in rows {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{}</dd>", escape(&value));
    }
    out.push_str("</dl>\n");
}

/// One row per layer (check group) with its worst status and its counts.
fn layers(report: &Report, out: &mut String) {
    let mut order: Vec<&str> = Vec::new();
    let mut counts: HashMap<&str, [usize; 7]> = HashMap::new();
    for finding in &report.findings {
        let group = finding.group.as_str();
        let entry = counts.entry(group).or_insert_with(|| {
            order.push(group);
            [0; 7]
        });
        if let Some(i) = Status::ALL.iter().position(|s| *s == finding.status) {
            entry[i] += 1;
        }
    }
    out.push_str(
        "<h2 id=\"layers\">Verdict per layer</h2>\n<table class=\"layers\">\n\
         <thead><tr><th style=\"width:18%\">layer</th><th style=\"width:14%\">verdict</th><th>findings</th></tr></thead>\n<tbody>\n",
    );
    for group in order {
        let count = counts[group];
        let worst = Status::ALL
            .iter()
            .zip(count)
            .find(|(_, n)| *n > 0)
            .map_or(Status::NotApplicable, |(s, _)| *s);
        let parts: Vec<String> = Status::ALL
            .iter()
            .zip(count)
            .filter(|(_, n)| *n > 0)
            .map(|(s, n)| format!("{n} {}", s.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><span class=\"status {}\">{}</span></td><td>{}</td></tr>",
            escape(group),
            worst.as_str(),
            worst.as_str(),
            escape(&parts.join(", "))
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Findings alike but for their subject, shown once.
struct Alike<'a> {
    first: &'a Finding,
    subjects: Vec<&'a str>,
}

/// Groups `findings` that share check, status, message and evidence
/// values (or, for the plan, the fix), in order of their first.
fn alike<'a, K: Eq + std::hash::Hash>(
    findings: impl Iterator<Item = &'a Finding>,
    key: impl Fn(&'a Finding) -> K,
) -> Vec<Alike<'a>> {
    let mut groups: Vec<Alike<'a>> = Vec::new();
    let mut index: HashMap<(&str, Status, &str, K), usize> = HashMap::new();
    for finding in findings {
        let k = (
            finding.id.as_str(),
            finding.status,
            finding.message.as_str(),
            key(finding),
        );
        match index.get(&k) {
            Some(&i) => groups[i].subjects.push(&finding.subject),
            None => {
                index.insert(k, groups.len());
                groups.push(Alike {
                    first: finding,
                    subjects: vec![&finding.subject],
                });
            }
        }
    }
    groups
}

/// The subjects of a group, all of them for a problem, the first few and
/// a count otherwise.
fn subjects(group: &Alike<'_>) -> String {
    let named: Vec<&str> = group
        .subjects
        .iter()
        .copied()
        .filter(|s| !s.is_empty())
        .collect();
    if named.is_empty() {
        return String::new();
    }
    let most = if group.first.status.is_problem() {
        named.len()
    } else {
        QUIET_SUBJECTS
    };
    let mut text = named
        .iter()
        .take(most)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if named.len() > most {
        let _ = write!(text, " and {} more", named.len() - most);
    }
    text
}

/// What to fix first: root causes, failures before warnings, one step per
/// fix.
fn plan(report: &Report, out: &mut String) {
    let steps = alike(report.fix_first(), |f| {
        f.remediation.as_ref().map(|fix| fix.summary.as_str())
    });
    out.push_str("<h2 id=\"fix-first\">What to fix first</h2>\n");
    if steps.is_empty() {
        out.push_str("<p>nothing: no check fails or warns</p>\n");
        return;
    }
    out.push_str("<ol class=\"plan\">\n");
    for step in &steps {
        let finding = step.first;
        let _ = write!(
            out,
            "<li><span class=\"status {0}\">{0}</span> <b>{1}</b> {2}: {3}",
            finding.status.as_str(),
            escape(&finding.id),
            escape(&finding.name),
            escape(&finding.message)
        );
        let on = subjects(step);
        if !on.is_empty() {
            let _ = write!(out, " <span class=\"subjects\">({})</span>", escape(&on));
        }
        if let Some(fix) = &finding.remediation {
            let _ = write!(out, "<br>fix: {}", escape(&fix.summary));
            for command in &fix.commands {
                let _ = write!(out, "<pre>{}</pre>", escape(command));
            }
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
}

/// Every finding, grouped by check: checks with a problem open, the others
/// folded.
fn checks(report: &Report, out: &mut String) {
    let mut order: Vec<&str> = Vec::new();
    let mut by_check: HashMap<&str, Vec<&Finding>> = HashMap::new();
    for finding in &report.findings {
        by_check
            .entry(finding.id.as_str())
            .or_insert_with(|| {
                order.push(finding.id.as_str());
                Vec::new()
            })
            .push(finding);
    }
    out.push_str("<h2 id=\"findings\">Findings by check</h2>\n");
    for id in order {
        let findings = &by_check[id];
        let worst = findings
            .iter()
            .map(|f| f.status)
            .max()
            .unwrap_or(Status::NotApplicable);
        let open = if worst.is_problem() { " open" } else { "" };
        let _ = writeln!(
            out,
            "<details class=\"check\" id=\"check-{0}\"{open}><summary><span class=\"status {1}\">{1}</span> {0} {2} <span class=\"muted\">({3} finding(s), {4})</span></summary>",
            escape(id),
            worst.as_str(),
            escape(&findings[0].name),
            findings.len(),
            escape(&findings[0].group),
        );
        let groups = alike(findings.iter().copied(), |f| {
            (
                f.evidence
                    .iter()
                    .map(|e| e.value.as_str())
                    .collect::<Vec<_>>(),
                f.blocked_by.as_deref(),
            )
        });
        for group in &groups {
            finding(group, out);
        }
        out.push_str("</details>\n");
    }
}

/// One group of alike findings: status, message, subjects, evidence, fix.
fn finding(group: &Alike<'_>, out: &mut String) {
    let finding = group.first;
    let _ = write!(
        out,
        "<div class=\"finding\"><span class=\"status {0}\">{0}</span> {1}",
        finding.status.as_str(),
        escape(&finding.message)
    );
    let on = subjects(group);
    if !on.is_empty() {
        let _ = write!(
            out,
            "<br><span class=\"subjects\">on {}</span>",
            escape(&on)
        );
    }
    if let Some(by) = &finding.blocked_by {
        let _ = write!(out, "<br>blocked by {}", escape(by));
    }
    if !finding.evidence.is_empty() {
        out.push_str("<pre>");
        for evidence in &finding.evidence {
            let _ = writeln!(
                out,
                "{}: {}",
                escape(&evidence.source),
                escape(&evidence.value)
            );
        }
        out.push_str("</pre>");
    }
    if let Some(fix) = finding
        .remediation
        .as_ref()
        .filter(|_| finding.status.is_problem())
    {
        let _ = write!(out, "fix: {}", escape(&fix.summary));
        for command in &fix.commands {
            let _ = write!(out, "<pre>{}</pre>", escape(command));
        }
        for doc in &fix.docs {
            // A link would be a request the page does not make: the
            // address is shown as text.
            let _ = write!(out, "<br><span class=\"muted\">see {}</span>", escape(doc));
        }
    }
    out.push_str("</div>\n");
}
