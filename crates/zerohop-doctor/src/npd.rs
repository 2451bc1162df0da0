//! The node-problem-detector custom plugin protocol: an exit code (0 OK,
//! 1 NonOK, anything else Unknown) and one short line on standard output.
//!
//! NPD keeps the first `max_output_length` bytes of the line (80 by
//! default) as the condition message, so the line fits in 80 bytes and
//! never splits a check ID.

use std::collections::BTreeSet;

use zerohop_core::{Report, Status};

use crate::verdict::{Readiness, cap, id_list, judge};

/// NPD's default `max_output_length`.
pub const MAX_LINE: usize = 80;

/// The plugin's answer: exit code and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpdResult {
    /// 0 OK, 1 NonOK, 2 Unknown.
    pub exit_code: i32,
    /// At most [`MAX_LINE`] bytes, no line break.
    pub line: String,
}

/// The NPD answer for a finished doctor report: NonOK with the failing
/// check IDs, Unknown when nothing could be judged, OK otherwise.
pub fn result(report: &Report) -> NpdResult {
    let verdict = judge(report);
    match verdict.readiness {
        Readiness::NotReady => NpdResult {
            exit_code: 1,
            line: id_list("failing", &verdict.failing, MAX_LINE),
        },
        Readiness::Unknown => unknown(&format!("no check could judge {}", report.target)),
        Readiness::Ready => {
            let warnings: BTreeSet<String> = report
                .findings
                .iter()
                .filter(|f| f.status == Status::Warn)
                .map(|f| f.id.clone())
                .collect();
            let line = if warnings.is_empty() {
                "ok: no check fails".to_owned()
            } else {
                format!("ok: {}", id_list("warning", &warnings, MAX_LINE - 4))
            };
            NpdResult { exit_code: 0, line }
        }
    }
}

/// The NPD answer when the doctor could not run at all (a `--root` that is
/// not a host): Unknown, with why. `why` may hold a path the user gave, so
/// control characters are dropped from the one line NPD keeps.
pub fn unknown(why: &str) -> NpdResult {
    let line: String = format!("unknown: {why}")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    NpdResult {
        exit_code: 2,
        line: cap(&line, MAX_LINE),
    }
}

#[cfg(test)]
mod tests {
    use zerohop_core::{Finding, Severity};

    use super::*;

    fn finding(id: &str, status: Status) -> Finding {
        Finding {
            id: id.into(),
            name: "x".into(),
            group: "rdma".into(),
            status,
            severity: Severity::Error,
            subject: String::new(),
            message: "m".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn report(findings: Vec<Finding>) -> Report {
        Report::new("doctor", "/", findings)
    }

    #[test]
    fn failing_checks_are_non_ok_with_their_ids_in_80_bytes() {
        let many: Vec<Finding> = (0..40)
            .map(|i| finding(&format!("RDMA{i:03}"), Status::Fail))
            .collect();
        let answer = result(&report(many));
        assert_eq!(answer.exit_code, 1);
        assert!(answer.line.len() <= MAX_LINE, "{}", answer.line);
        assert!(answer.line.starts_with("40 failing: RDMA000, RDMA001"));
        assert!(answer.line.ends_with(" more"), "{}", answer.line);
        let few = result(&report(vec![
            finding("RDMA004", Status::Fail),
            finding("GPU012", Status::Fail),
            finding("QOS001", Status::Warn),
        ]));
        assert_eq!(few.line, "2 failing: GPU012, RDMA004");
    }

    #[test]
    fn ok_and_unknown() {
        let ok = result(&report(vec![finding("QOS001", Status::Warn)]));
        assert_eq!(
            (ok.exit_code, ok.line.as_str()),
            (0, "ok: 1 warning: QOS001")
        );
        let mut unknown_report = report(vec![finding("KRN001", Status::Unknown)]);
        unknown_report.target = format!("/host/\u{1b}[2J{}", "é".repeat(60));
        let unknown = result(&unknown_report);
        assert_eq!(unknown.exit_code, 2);
        assert!(unknown.line.len() <= MAX_LINE, "{}", unknown.line.len());
        assert!(!unknown.line.contains('\u{1b}'));
    }
}
