//! Types shared by every zerohop command: findings, reports, renderers and
//! exit codes.
//!
//! This crate does no I/O beyond writing a rendered report to a caller's
//! writer. The doctor and the linter both produce [`Finding`]s gathered into a
//! [`Report`]; one set of renderers turns a report into text for people or
//! JSON for machines.

pub mod document;
pub mod exit;
pub mod finding;
pub mod render;
pub mod report;
pub mod rule;

pub use document::Document;
pub use finding::{Evidence, Finding, Location, ObjectRef, Remediation, Severity, Status};
pub use report::{Report, SCHEMA_VERSION, Summary};
pub use rule::RuleInfo;
