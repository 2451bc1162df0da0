//! What a check sees ([`Context`]) and what it returns ([`Outcome`]).

use zerohop_core::{Evidence, Remediation, Status};
use zerohop_host::{Facts, Gap, GapKind, IoKind};

use crate::profile::Profile;

/// The input of every check: the host's facts and the user's expectations.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// What was read from the host.
    pub facts: &'a Facts,
    /// What the user expects of it.
    pub profile: &'a Profile,
}

/// One judgement of a check about one subject; the runner adds the check's
/// ID, name, group and severity to make a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The verdict.
    pub status: Status,
    /// What the outcome is about (a PCI address, a port); empty for the host.
    pub subject: String,
    /// What was found, lowercase, no trailing period.
    pub message: String,
    /// What was read.
    pub evidence: Vec<Evidence>,
    /// How to fix it.
    pub remediation: Option<Remediation>,
}

impl Outcome {
    /// An outcome with `status` and `message`.
    pub fn new(status: Status, message: impl Into<String>) -> Outcome {
        Outcome {
            status,
            subject: String::new(),
            message: message.into(),
            evidence: Vec::new(),
            remediation: None,
        }
    }

    /// A pass.
    pub fn pass(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::Pass, message)
    }

    /// Information that needs no action.
    pub fn info(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::Info, message)
    }

    /// A degraded data path.
    pub fn warn(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::Warn, message)
    }

    /// A broken data path.
    pub fn fail(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::Fail, message)
    }

    /// Could not tell, with the reason in the message.
    pub fn unknown(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::Unknown, message)
    }

    /// The feature is absent or not wanted.
    pub fn not_applicable(message: impl Into<String>) -> Outcome {
        Outcome::new(Status::NotApplicable, message)
    }

    /// `unknown` because a fact could not be established: quotes the path,
    /// why, and the kind of gap (absent, not captured, unreadable and why)
    /// as the evidence's value, never one word for all three.
    pub fn gap(gap: &Gap) -> Outcome {
        Outcome::unknown(format!("cannot tell: {}", gap.reason))
            .evidence(&gap.path, gap_value(gap.kind))
    }

    /// Sets the subject.
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> Outcome {
        self.subject = subject.into();
        self
    }

    /// Adds evidence: `source` held `value`.
    #[must_use]
    pub fn evidence(mut self, source: impl Into<String>, value: impl Into<String>) -> Outcome {
        self.evidence.push(Evidence::new(source, value));
        self
    }

    /// Sets the remediation.
    #[must_use]
    pub fn fix(mut self, remediation: Remediation) -> Outcome {
        self.remediation = Some(remediation);
        self
    }
}

/// How evidence shows a gap of `kind`.
pub(crate) fn gap_value(kind: GapKind) -> String {
    match kind {
        GapKind::Missing => "<missing>".to_owned(),
        GapKind::NotRecorded => "<not captured>".to_owned(),
        GapKind::Withheld => "<captured without its content>".to_owned(),
        GapKind::Empty => "<empty>".to_owned(),
        GapKind::Malformed => "<not understood>".to_owned(),
        GapKind::TooLarge => "<too large to read>".to_owned(),
        GapKind::NotText => "<not text>".to_owned(),
        GapKind::NotRegular => "<not a regular file>".to_owned(),
        GapKind::SymlinkLoop => "<symlink loop>".to_owned(),
        GapKind::TimedOut => "<read timed out>".to_owned(),
        GapKind::GaveUp => "<not read: earlier reads are stuck>".to_owned(),
        GapKind::Io(io) => format!("<unreadable: {}>", io_text(io)),
    }
}

/// What the operating system said, in the words of its error.
fn io_text(kind: IoKind) -> &'static str {
    match kind {
        IoKind::PermissionDenied => "permission denied",
        IoKind::InvalidInput => "invalid argument",
        IoKind::Unsupported => "not supported",
        IoKind::Busy => "device busy",
        IoKind::TimedOut => "timed out",
        IoKind::Other => "i/o error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_gap_reads_differently() {
        let missing = Outcome::gap(&Gap::new("/x", GapKind::Missing, "absent"));
        assert_eq!(missing.evidence[0].value, "<missing>");
        assert_eq!(gap_value(GapKind::NotRecorded), "<not captured>");
        assert_eq!(
            gap_value(GapKind::Io(IoKind::PermissionDenied)),
            "<unreadable: permission denied>"
        );
        assert_ne!(gap_value(GapKind::Empty), gap_value(GapKind::Malformed));
    }
}
