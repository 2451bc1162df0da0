//! Test support: judging a capture and the invariants of every finding,
//! and (from `zerohop-testkit`, shared with every suite) the real captures
//! under `../shared/corpus`, read in place (never copied into the
//! repository).
//!
//! When `../shared` is absent altogether, [`capture`] returns `None` and the
//! calling test says so and returns; in CI it fails (`.ci/run` refuses to
//! run without it). When `../shared` is there, a missing capture fails the
//! test: a renamed file must not turn into a skipped test.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the support module, so `expect` would be unfulfilled in some"
)]

use zerohop_core::{Finding, Status};
pub use zerohop_testkit::shared_data::*;
use zerohop_validate::judge::{self, Capture, Expectations};

/// Judges `text` as the capture `name` with `expectations`.
pub fn judge_with(name: &str, text: &str, expectations: &Expectations) -> Vec<Finding> {
    let (_, findings) =
        judge::judge(&Capture { name, text }, expectations).unwrap_or_else(|err| panic!("{err}"));
    assert_well_formed(&findings);
    findings
}

/// Judges `text` with the default expectations.
pub fn judge(name: &str, text: &str) -> Vec<Finding> {
    judge_with(name, text, &Expectations::default())
}

/// The findings of judgement `id`.
pub fn of<'a>(findings: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.id == id).collect()
}

/// The one finding of judgement `id`; panics when there is not exactly one.
pub fn one<'a>(findings: &'a [Finding], id: &str) -> &'a Finding {
    let found = of(findings, id);
    assert_eq!(found.len(), 1, "{id}: {found:#?}");
    found[0]
}

/// The line a finding is placed at.
pub fn line(finding: &Finding) -> u32 {
    finding
        .location
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no location: {finding:#?}", finding.id))
        .line
}

/// The invariants of every finding: a message, a remediation on every
/// problem, evidence or a reason on every unknown, evidence that cites a
/// line of the capture it is placed in.
pub fn assert_well_formed(findings: &[Finding]) {
    for finding in findings {
        assert!(!finding.message.is_empty(), "{} has no message", finding.id);
        assert!(
            !finding.message.ends_with('.'),
            "{}: messages are fragments: {}",
            finding.id,
            finding.message
        );
        if finding.status.is_problem() {
            assert!(
                finding.remediation.is_some(),
                "{} is a problem without a remediation: {finding:#?}",
                finding.id
            );
        }
        if let Some(location) = &finding.location {
            assert!(
                finding
                    .evidence
                    .iter()
                    .any(|e| e.source == format!("{}:{}", location.file, location.line)),
                "{}: its location is not among its evidence",
                finding.id
            );
        }
        if finding.status == Status::Unknown {
            assert!(
                finding.remediation.is_some() || !finding.evidence.is_empty(),
                "{} is unknown without evidence or a way to find out",
                finding.id
            );
        }
    }
}
