//! A whole run's findings with the context needed to read them later.

use serde::{Deserialize, Serialize};

use crate::exit::ExitCode;
use crate::finding::{Finding, Status};

/// Version of the JSON report document. Bumped when a field is removed or
/// changes meaning; adding a field does not bump it.
pub const SCHEMA_VERSION: u32 = 1;

/// Every finding of one run of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Version of this document's format, see [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The command that produced the report: `doctor` or `lint`.
    pub command: String,
    /// zerohop's version.
    pub zerohop_version: String,
    /// What was examined: the host root for the doctor, the inputs for lint.
    pub target: String,
    /// Counts of findings by status.
    pub summary: Summary,
    /// The findings, root causes first in deploy order, as the command sorted them.
    pub findings: Vec<Finding>,
}

impl Report {
    /// A report of `command` about `target`, with its summary computed.
    pub fn new(command: &str, target: impl Into<String>, findings: Vec<Finding>) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            command: command.to_owned(),
            zerohop_version: env!("CARGO_PKG_VERSION").to_owned(),
            target: target.into(),
            summary: Summary::of(&findings),
            findings,
        }
    }

    /// The process exit code this report calls for.
    pub fn exit_code(&self) -> i32 {
        if self.summary.fail > 0 {
            ExitCode::FAILED
        } else {
            ExitCode::OK
        }
    }

    /// The problems to fix, root causes only: `fail` then `warn`, in report
    /// order. Findings blocked by a prerequisite are left out because fixing
    /// the prerequisite is the first step.
    pub fn fix_first(&self) -> impl Iterator<Item = &Finding> {
        let fails = self.findings.iter().filter(|f| f.status == Status::Fail);
        let warns = self.findings.iter().filter(|f| f.status == Status::Warn);
        fails.chain(warns)
    }
}

/// Number of findings with each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Summary {
    /// Findings with status `pass`.
    pub pass: usize,
    /// Findings with status `info`.
    pub info: usize,
    /// Findings with status `warn`.
    pub warn: usize,
    /// Findings with status `fail`.
    pub fail: usize,
    /// Findings with status `unknown`.
    pub unknown: usize,
    /// Findings with status `not-applicable`.
    pub not_applicable: usize,
    /// Findings with status `blocked`.
    pub blocked: usize,
}

impl Summary {
    /// Counts the statuses of `findings`.
    pub fn of(findings: &[Finding]) -> Summary {
        let mut summary = Summary::default();
        for finding in findings {
            *summary.slot(finding.status) += 1;
        }
        summary
    }

    /// The count for one status.
    pub fn count(&self, status: Status) -> usize {
        match status {
            Status::Pass => self.pass,
            Status::Info => self.info,
            Status::Warn => self.warn,
            Status::Fail => self.fail,
            Status::Unknown => self.unknown,
            Status::NotApplicable => self.not_applicable,
            Status::Blocked => self.blocked,
        }
    }

    fn slot(&mut self, status: Status) -> &mut usize {
        match status {
            Status::Pass => &mut self.pass,
            Status::Info => &mut self.info,
            Status::Warn => &mut self.warn,
            Status::Fail => &mut self.fail,
            Status::Unknown => &mut self.unknown,
            Status::NotApplicable => &mut self.not_applicable,
            Status::Blocked => &mut self.blocked,
        }
    }
}
