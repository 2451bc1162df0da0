//! A whole run's findings with the context needed to read them later.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    /// The pass that found them: set by the command that ran it (see
    /// [`Report::with_pass`]), absent otherwise, so that a report made
    /// without one (a snapshot's, a test's) depends on its findings alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<Box<Pass>>,
}

/// When, where and for how long a doctor's pass ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pass {
    /// When it started, RFC 3339 in UTC (`2026-01-05T10:00:00Z`).
    pub started_at: String,
    /// The node it judged, when known: the Kubernetes node name for the
    /// agent, the host's name for the doctor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

impl Report {
    /// A report of `command` about `target`, with its summary computed and
    /// each finding's severity graded by its status ([`Status::severity`]):
    /// a check whose problem is an error reports its information, passes
    /// and unknowns at `info`, and its degraded cases at `warning`.
    pub fn new(command: &str, target: impl Into<String>, mut findings: Vec<Finding>) -> Report {
        for finding in &mut findings {
            finding.severity = finding.status.severity();
        }
        Report {
            schema_version: SCHEMA_VERSION,
            command: command.to_owned(),
            zerohop_version: env!("CARGO_PKG_VERSION").to_owned(),
            target: target.into(),
            summary: Summary::of(&findings),
            findings,
            pass: None,
        }
    }

    /// The report with its pass: started at `started`, on `node` when
    /// known, lasting `took`.
    #[must_use]
    pub fn with_pass(self, started: SystemTime, node: Option<String>, took: Duration) -> Report {
        let seconds = started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        Report {
            pass: Some(Box::new(Pass {
                started_at: rfc3339(seconds),
                node,
                duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            })),
            ..self
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

/// `seconds` since the Unix epoch as RFC 3339 in UTC,
/// `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @951782400` = 2000-02-29 00:00:00 (a leap day).
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        // `date -u -d @1767225599` = 2025-12-31 23:59:59.
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn a_findings_severity_follows_its_status() {
        use crate::finding::Severity;
        let finding = |status: Status| Finding {
            id: "RDMA008".into(),
            name: "rdma-port-errors".into(),
            group: "rdma".into(),
            status,
            // As the check was declared: its problem breaks the data path.
            severity: Severity::Error,
            subject: "mlx5_0/1".into(),
            message: "m".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        };
        let report = Report::new(
            "doctor",
            "/",
            [
                Status::Fail,
                Status::Warn,
                Status::Info,
                Status::Unknown,
                Status::Pass,
            ]
            .map(finding)
            .into(),
        );
        let value = serde_json::to_value(&report).unwrap();
        let severities: Vec<&str> = value["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["severity"].as_str().unwrap())
            .collect();
        assert_eq!(severities, ["error", "warning", "info", "info", "info"]);
    }

    #[test]
    fn a_pass_is_written_only_when_it_was_set() {
        let bare = Report::new("doctor", "/", Vec::new());
        let value = serde_json::to_value(&bare).unwrap();
        assert_eq!(value.get("pass"), None, "{value}");
        // A document written before the field existed reads as without.
        let read: Report = serde_json::from_value(value).unwrap();
        assert_eq!(read, bare);

        let started = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        let passed = bare.with_pass(
            started,
            Some("gpu-node-1".to_owned()),
            Duration::from_micros(250_600),
        );
        let value = serde_json::to_value(&passed).unwrap();
        assert_eq!(value["pass"]["started_at"], "2025-12-31T23:59:59Z");
        assert_eq!(value["pass"]["node"], "gpu-node-1");
        assert_eq!(value["pass"]["duration_ms"], 250);
        let read: Report = serde_json::from_value(value).unwrap();
        assert_eq!(read, passed);
    }
}
