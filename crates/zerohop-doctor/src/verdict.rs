//! The judgement of one pass: is this node's zero-copy data path ready,
//! and if not, what is the first thing to fix.
//!
//! Everything that publishes readiness (the agent's node condition, events,
//! report object and `zerohop_data_path_status` metric, and
//! `zerohop doctor --format npd`) is derived from one [`Verdict`], so they
//! cannot disagree.

use std::collections::BTreeSet;
use std::fmt;

use zerohop_core::{Finding, Report, Status};
use zerohop_known::zerohop_api::MESSAGE_CAP;

/// Whether the data path is ready, as a node condition status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Readiness {
    /// Every check that judges the data path passes (warnings allowed).
    Ready,
    /// At least one check fails.
    NotReady,
    /// The pass did not finish, or could not judge anything.
    Unknown,
}

impl Readiness {
    /// The condition status: `True`, `False` or `Unknown`.
    pub fn condition_status(self) -> &'static str {
        match self {
            Readiness::Ready => "True",
            Readiness::NotReady => "False",
            Readiness::Unknown => "Unknown",
        }
    }

    /// Parses a condition status; anything else is `None`.
    pub fn from_condition_status(status: &str) -> Option<Readiness> {
        match status {
            "True" => Some(Readiness::Ready),
            "False" => Some(Readiness::NotReady),
            "Unknown" => Some(Readiness::Unknown),
            _ => None,
        }
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.condition_status())
    }
}

/// The judgement of one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Ready, not ready, or unknown.
    pub readiness: Readiness,
    /// A CamelCase reason: `DataPathReady`, the first root cause's check
    /// name (`IommuDisabled`), `PassDidNotFinish` or `NothingJudged`.
    pub reason: String,
    /// For people, at most [`MESSAGE_CAP`] bytes; the same text while the
    /// same checks fail, so rewriting it is not a change.
    pub message: String,
    /// The IDs of the failing checks, sorted and unique.
    pub failing: BTreeSet<String>,
}

/// Judges a finished pass: `NotReady` when a check fails, with the first
/// root cause (the report lists root causes first) as the reason and its
/// fix in the message; `Unknown` when no check could judge anything;
/// `Ready` otherwise. Warnings never make a node not ready.
pub fn judge(report: &Report) -> Verdict {
    let failing: BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.id.clone())
        .collect();
    if let Some(first) = report.fix_first().find(|f| f.status == Status::Fail) {
        let mut message = root_cause(first);
        let listed = id_list(
            "failing",
            &failing,
            MESSAGE_CAP.saturating_sub(message.len() + 2),
        );
        message.push_str("; ");
        message.push_str(&listed);
        return Verdict {
            readiness: Readiness::NotReady,
            reason: camel_case(&first.name),
            message: cap(&message, MESSAGE_CAP),
            failing,
        };
    }
    let s = &report.summary;
    if s.pass + s.info + s.warn == 0 && s.unknown + s.blocked > 0 {
        return Verdict {
            readiness: Readiness::Unknown,
            reason: "NothingJudged".to_owned(),
            message: format!(
                "no check could judge this host: {} unknown, {} blocked; `zerohop doctor` shows why",
                s.unknown, s.blocked
            ),
            failing,
        };
    }
    let warnings: BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Warn)
        .map(|f| f.id.clone())
        .collect();
    let message = if warnings.is_empty() {
        "no check fails".to_owned()
    } else {
        format!(
            "no check fails; {}",
            id_list("warning", &warnings, MESSAGE_CAP - 17)
        )
    };
    Verdict {
        readiness: Readiness::Ready,
        reason: "DataPathReady".to_owned(),
        message,
        failing,
    }
}

/// The verdict when a pass produced no report: it hit its deadline, or the
/// previous pass is still blocked. `why` is a lowercase fragment.
pub fn not_judged(why: &str) -> Verdict {
    Verdict {
        readiness: Readiness::Unknown,
        reason: "PassDidNotFinish".to_owned(),
        message: cap(why, MESSAGE_CAP),
        failing: BTreeSet::new(),
    }
}

/// `RDMA004 mlx5_0/1: <fix>`: the first root cause, its subject, and what
/// to do about it (or what was found, when the check has no fix).
fn root_cause(finding: &Finding) -> String {
    let what = finding
        .remediation
        .as_ref()
        .map(|r| r.summary.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(&finding.message);
    let text = if finding.subject.is_empty() {
        format!("{}: {what}", finding.id)
    } else {
        format!("{} {}: {what}", finding.id, finding.subject)
    };
    // Leave room for the list of failing IDs after it.
    cap(&text, MESSAGE_CAP / 2)
}

/// `3 failing: GPU012, RDMA004, SRIOV002` within `budget` bytes, ending in
/// `and N more` when the whole list does not fit.
pub fn id_list(label: &str, ids: &BTreeSet<String>, budget: usize) -> String {
    let total = ids.len();
    let mut out = format!("{total} {label}:");
    for (index, id) in ids.iter().enumerate() {
        let separator = if index == 0 { " " } else { ", " };
        // Room for ", and N more", should the next ID not fit.
        let after = total - index - 1;
        let reserve = if after > 0 {
            format!(", and {after} more").len()
        } else {
            0
        };
        if out.len() + separator.len() + id.len() + reserve > budget {
            out.push_str(separator);
            out.push_str(&format!("and {} more", total - index));
            return out;
        }
        out.push_str(separator);
        out.push_str(id);
    }
    out
}

/// At most `max` bytes of `text`, cut at a character boundary and marked
/// with `…` when cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `iommu-disabled` → `IommuDisabled`: a check's kebab-case name as a
/// condition reason. Characters other than ASCII letters and digits
/// separate words, so the result always matches the API's reason grammar.
pub fn camel_case(name: &str) -> String {
    let mut out = String::new();
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "Check");
    }
    out
}

#[cfg(test)]
mod tests {
    use zerohop_core::{Remediation, Severity};

    use super::*;

    fn finding(id: &str, name: &str, status: Status, subject: &str) -> Finding {
        Finding {
            id: id.into(),
            name: name.into(),
            group: "rdma".into(),
            status,
            severity: Severity::Error,
            subject: subject.into(),
            message: format!("{name} found"),
            evidence: vec![],
            remediation: status
                .is_problem()
                .then(|| Remediation::new(format!("fix {name}"))),
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn report(findings: Vec<Finding>) -> Report {
        Report::new("doctor", "/host", findings)
    }

    #[test]
    fn a_failing_check_makes_the_node_not_ready_with_its_fix() {
        let verdict = judge(&report(vec![
            finding("KRN001", "iommu-disabled", Status::Pass, ""),
            finding("RDMA004", "rdma-port-down", Status::Fail, "mlx5_0/1"),
            finding("GPU012", "peermem-missing", Status::Fail, ""),
            finding("QOS002", "mtu-too-small", Status::Warn, "eth0"),
        ]));
        assert_eq!(verdict.readiness, Readiness::NotReady);
        assert_eq!(verdict.reason, "RdmaPortDown");
        assert_eq!(
            verdict.message,
            "RDMA004 mlx5_0/1: fix rdma-port-down; 2 failing: GPU012, RDMA004"
        );
        assert_eq!(
            verdict.failing.iter().collect::<Vec<_>>(),
            ["GPU012", "RDMA004"]
        );
    }

    #[test]
    fn warnings_never_make_a_node_not_ready() {
        let verdict = judge(&report(vec![
            finding("KRN001", "iommu-disabled", Status::Pass, ""),
            finding("QOS002", "mtu-too-small", Status::Warn, "eth0"),
        ]));
        assert_eq!(verdict.readiness, Readiness::Ready);
        assert_eq!(verdict.reason, "DataPathReady");
        assert_eq!(verdict.message, "no check fails; 1 warning: QOS002");
    }

    #[test]
    fn a_pass_that_judged_nothing_is_unknown() {
        let verdict = judge(&report(vec![
            finding("KRN001", "iommu-disabled", Status::Unknown, ""),
            finding("PCI001", "acs", Status::NotApplicable, ""),
        ]));
        assert_eq!(verdict.readiness, Readiness::Unknown);
        assert_eq!(verdict.reason, "NothingJudged");
    }

    #[test]
    fn the_message_is_capped_and_stays_whole_characters() {
        let findings: Vec<Finding> = (0..500)
            .map(|i| finding(&format!("RDMA{i:03}"), "port-down-é", Status::Fail, "mlx5"))
            .collect();
        let verdict = judge(&report(findings));
        assert!(
            verdict.message.len() <= MESSAGE_CAP,
            "{}",
            verdict.message.len()
        );
        assert!(verdict.message.ends_with(" more"), "{}", verdict.message);
        assert!(verdict.message.contains("500 failing: RDMA000, RDMA001"));
        assert_eq!(verdict.reason, "PortDown");
        assert_eq!(cap("ééé", 4), "…");
        assert_eq!(cap("abcdef", 5), "ab…");
    }

    #[test]
    fn reasons_match_the_api_grammar() {
        assert_eq!(camel_case("iommu-disabled"), "IommuDisabled");
        assert_eq!(camel_case("5g-link"), "Check5gLink");
        assert_eq!(camel_case("a\u{1b}[31mb"), "A31mb");
    }
}
