//! Test support: a way to run the doctor on a root, a builder of fixture
//! roots, and (from `zerohop-testkit`, shared with every suite) the real
//! captures under `../shared/corpus`, unpacked into temporary host roots.
//!
//! The captures are read in place and never copied into the repository.
//! When `../shared` is absent, [`corpus`] returns `None` and the calling
//! test prints why and returns; in CI it fails.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the support module"
)]

pub mod builder;

use std::path::Path;

use zerohop_core::{Finding, Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
pub use zerohop_testkit::shared_data::*;

/// Runs the whole doctor on `root` with the default profile.
pub fn doctor(root: &Path) -> Report {
    doctor_with(root, &Profile::default(), &Selection::all())
}

/// Runs the doctor on `root` with a profile and a selection.
pub fn doctor_with(root: &Path, profile: &Profile, selection: &Selection) -> Report {
    let host = HostRoot::at(root).expect("a directory root");
    let facts = Facts::collect(&host);
    zerohop_doctor::run(&facts, profile, selection)
}

/// The findings of check `id`.
pub fn findings<'a>(report: &'a Report, id: &str) -> Vec<&'a Finding> {
    report.findings.iter().filter(|f| f.id == id).collect()
}

/// The statuses of check `id`'s findings.
pub fn statuses(report: &Report, id: &str) -> Vec<Status> {
    findings(report, id).iter().map(|f| f.status).collect()
}

/// Asserts the invariants every run must keep, whatever the input: every
/// selected check reported, no finding without a message, every problem
/// with a remediation, every unknown with evidence or a reason.
pub fn assert_well_formed(report: &Report) {
    for check in zerohop_doctor::checks::CHECKS {
        assert!(
            report.findings.iter().any(|f| f.id == check.info.id),
            "{} reported nothing on {}",
            check.info.id,
            report.target
        );
    }
    for finding in &report.findings {
        assert!(
            !finding.message.is_empty(),
            "{} has an empty message",
            finding.id
        );
        if finding.status.is_problem() {
            assert!(
                finding.remediation.is_some(),
                "{} {:?} has no remediation: {}",
                finding.id,
                finding.status,
                finding.message
            );
        }
    }
}
