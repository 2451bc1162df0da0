//! One result of one check or lint rule.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The outcome of a check for one subject.
///
/// Ordered from best to worst for display; [`Status::Blocked`] sorts with
/// `unknown` because the real problem is reported by the prerequisite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The feature is not present or not wanted on this host or input.
    NotApplicable,
    /// Everything checked is as it should be.
    Pass,
    /// A fact worth knowing that needs no action.
    Info,
    /// Could not tell; the message says why (a file this kernel does not expose, say).
    Unknown,
    /// A prerequisite failed, so this check could not be judged on its own.
    Blocked,
    /// Works, but not as well as it should.
    Warn,
    /// Broken: the data path will not work, or will silently fall back.
    Fail,
}

impl Status {
    /// Every status, in display order.
    pub const ALL: [Status; 7] = [
        Status::Fail,
        Status::Warn,
        Status::Blocked,
        Status::Unknown,
        Status::Info,
        Status::Pass,
        Status::NotApplicable,
    ];

    /// The kebab-case name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotApplicable => "not-applicable",
            Status::Pass => "pass",
            Status::Info => "info",
            Status::Unknown => "unknown",
            Status::Blocked => "blocked",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }

    /// Whether a finding with this status needs someone to act.
    pub fn is_problem(self) -> bool {
        matches!(self, Status::Warn | Status::Fail)
    }

    /// The severity a finding with this status carries: `error` for
    /// `fail`, `warning` for `warn`, and `info` for every status that asks
    /// nothing of anyone (`info`, `pass`, `not-applicable`, `unknown`, and
    /// `blocked`, whose problem is its prerequisite's finding). The inverse
    /// of [`Severity::status`] on the statuses that one gives, so that a
    /// consumer filtering on either routes a finding the same way.
    pub fn severity(self) -> Severity {
        match self {
            Status::Fail => Severity::Error,
            Status::Warn => Severity::Warning,
            Status::Info
            | Status::Pass
            | Status::NotApplicable
            | Status::Unknown
            | Status::Blocked => Severity::Info,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a check's problem is, declared with the check and
/// overridable by the user.
///
/// A check that finds its problem reports [`Severity::status`]: `error`
/// becomes `fail`, `warning` becomes `warn`, `info` stays `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing; never fails a run.
    Info,
    /// Degrades the data path; reported as `warn`.
    Warning,
    /// Breaks the data path; reported as `fail`.
    Error,
}

impl Severity {
    /// The status a problem of this severity is reported with.
    pub fn status(self) -> Status {
        match self {
            Severity::Info => Status::Info,
            Severity::Warning => Status::Warn,
            Severity::Error => Status::Fail,
        }
    }

    /// The kebab-case name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// Parses `info`, `warning` (or `warn`) and `error`.
    pub fn parse(text: &str) -> Option<Severity> {
        match text {
            "info" => Some(Severity::Info),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was read to reach a finding: a path or command, and the value seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Where the value came from: a host path such as `/proc/cmdline`, a
    /// command, or a manifest field path.
    pub source: String,
    /// The value read, trimmed; `<missing>` when the source was absent.
    pub value: String,
}

impl Evidence {
    /// Evidence that `source` held `value`.
    pub fn new(source: impl Into<String>, value: impl Into<String>) -> Evidence {
        Evidence {
            source: source.into(),
            value: value.into(),
        }
    }
}

/// How to fix a finding: a one-line summary and the exact commands or YAML.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Remediation {
    /// What to do, as a lowercase fragment.
    pub summary: String,
    /// Commands or snippets to run or apply, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Links to the documentation that explains the fix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub docs: Vec<String>,
}

impl Remediation {
    /// A remediation with a summary and no commands.
    pub fn new(summary: impl Into<String>) -> Remediation {
        Remediation {
            summary: summary.into(),
            ..Remediation::default()
        }
    }

    /// Adds a command or snippet to run.
    #[must_use]
    pub fn command(mut self, command: impl Into<String>) -> Remediation {
        self.commands.push(command.into());
        self
    }

    /// Adds a documentation link.
    #[must_use]
    pub fn doc(mut self, url: impl Into<String>) -> Remediation {
        self.docs.push(url.into());
        self
    }
}

/// A position in an input file, 1-based, for findings about files.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Location {
    /// The file as the user named it (`-` for standard input).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
    /// 1-based line where the span ends, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// 1-based column where the span ends (exclusive), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
}

/// The Kubernetes object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// `kind` of the object.
    pub kind: String,
    /// `metadata.namespace`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

/// One result of one check (or lint rule) about one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable check or rule ID, such as `KRN001` or `ZL004`.
    pub id: String,
    /// Kebab-case name of the check, such as `iommu-disabled`.
    pub name: String,
    /// The group (layer) the check belongs to, such as `kernel`.
    pub group: String,
    /// The outcome.
    pub status: Status,
    /// How serious this finding is. A check builds it with the severity it
    /// was run with (its default unless overridden); a [`Report`] grades it
    /// by the status ([`Status::severity`]), so that information is never
    /// routed as an error.
    ///
    /// [`Report`]: crate::Report
    pub severity: Severity,
    /// What the finding is about: a PCI address, a device and port, a mount
    /// point. Empty for host-wide findings.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// What was found, as a lowercase fragment without a trailing period.
    pub message: String,
    /// What was read to reach this result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// How to fix it; present on `warn` and `fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<Remediation>,
    /// The ID of the failed prerequisite, when the status is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// Where in an input file, for findings about files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The Kubernetes object, for findings about manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
}

impl Finding {
    /// Re-grades a finding for a user-chosen severity: a problem reported at
    /// the old severity's status is reported at the new one's.
    pub fn override_severity(&mut self, severity: Severity) {
        if self.status == self.severity.status() {
            self.status = severity.status();
        }
        self.severity = severity;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(status: Status, severity: Severity) -> Finding {
        Finding {
            id: "KRN001".into(),
            name: "iommu-disabled".into(),
            group: "kernel".into(),
            status,
            severity,
            subject: String::new(),
            message: "iommu is off".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    #[test]
    fn override_regrades_problems_only() {
        let mut failed = finding(Status::Fail, Severity::Error);
        failed.override_severity(Severity::Warning);
        assert_eq!(failed.status, Status::Warn);

        // A pass stays a pass whatever the severity: overriding must never
        // invent a problem.
        let mut passed = finding(Status::Pass, Severity::Error);
        passed.override_severity(Severity::Info);
        assert_eq!(passed.status, Status::Pass);
    }

    #[test]
    fn severity_follows_status_and_inverts_severity_status() {
        for severity in [Severity::Info, Severity::Warning, Severity::Error] {
            assert_eq!(severity.status().severity(), severity);
        }
        assert_eq!(Status::Fail.severity(), Severity::Error);
        assert_eq!(Status::Warn.severity(), Severity::Warning);
        for status in [
            Status::Info,
            Status::Pass,
            Status::NotApplicable,
            Status::Unknown,
            Status::Blocked,
        ] {
            assert_eq!(status.severity(), Severity::Info, "{status}");
        }
    }

    #[test]
    fn status_names_are_kebab_case_in_json() {
        let json = serde_json::to_string(&Status::NotApplicable).unwrap();
        assert_eq!(json, "\"not-applicable\"");
        for status in Status::ALL {
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{}\"", status.as_str())
            );
        }
    }
}
