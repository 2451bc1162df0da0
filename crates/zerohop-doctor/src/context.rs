//! What a check sees ([`Context`]) and what it returns ([`Outcome`]).

use zerohop_core::{Evidence, Remediation, Status};
use zerohop_host::{Facts, Gap};

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

    /// `unknown` because a fact could not be read: quotes the path and why.
    pub fn gap(gap: &Gap) -> Outcome {
        Outcome::unknown(format!("cannot tell: {}", gap.reason)).evidence(&gap.path, "<unreadable>")
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
