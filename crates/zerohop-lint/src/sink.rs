//! Where rules report what they find, as the doctor's findings.

use zerohop_core::{Evidence, Finding, Location, ObjectRef, Remediation, RuleInfo, Severity};
use zerohop_k8s::yaml::{Node, PathStep, Span, Value};

use crate::model::{Object, display_path};

/// Collects the findings of the rule being run, at its effective severity.
#[derive(Debug)]
pub(crate) struct Sink<'r> {
    rule: &'r RuleInfo,
    severity: Severity,
    findings: Vec<Finding>,
}

impl<'r> Sink<'r> {
    /// A sink for `rule` reporting at `severity`.
    pub(crate) fn new(rule: &'r RuleInfo, severity: Severity) -> Sink<'r> {
        Sink {
            rule,
            severity,
            findings: Vec::new(),
        }
    }

    /// The findings reported.
    pub(crate) fn into_findings(self) -> Vec<Finding> {
        self.findings
    }

    /// Reports a problem at `path` in `object`. When the path does not
    /// exist in full (a missing field), the finding points at the deepest
    /// part that does.
    pub(crate) fn report(
        &mut self,
        object: &Object<'_>,
        path: &[PathStep<'_>],
        message: impl Into<String>,
        fix: Remediation,
    ) {
        let found = object.node.find(path.iter().copied());
        let value = if found.depth == path.len() {
            found
                .node
                .scalar_text()
                .unwrap_or_else(|| summary(found.node))
        } else {
            "<missing>".to_owned()
        };
        let subject = display_path(path);
        let span = found.span();
        let evidence = Evidence::new(
            format!(
                "{}:{}:{} {}",
                object.file, span.start.line, span.start.column, subject
            ),
            value,
        );
        self.push(Report {
            file: object.file,
            span,
            subject,
            object: Some(object.object_ref()),
            message: message.into(),
            evidence: vec![evidence],
            fix,
        });
    }

    /// Reports a problem in a document that is not a Kubernetes object (or
    /// a whole input), at `span`.
    pub(crate) fn report_in_file(
        &mut self,
        file: &str,
        object: Option<&Object<'_>>,
        span: Span,
        subject: String,
        message: impl Into<String>,
        fix: Remediation,
    ) {
        self.push(Report {
            file,
            span,
            subject,
            object: object.map(Object::object_ref),
            message: message.into(),
            evidence: Vec::new(),
            fix,
        });
    }

    fn push(&mut self, report: Report<'_>) {
        let status = self.severity.status();
        let start = report.span.start;
        let end = report.span.end;
        let has_end = end.line > 0 && end > start;
        self.findings.push(Finding {
            id: self.rule.id.to_owned(),
            name: self.rule.name.to_owned(),
            group: self.rule.group.to_owned(),
            status,
            severity: self.severity,
            subject: report.subject,
            message: report.message,
            evidence: report.evidence,
            remediation: Some(report.fix),
            blocked_by: None,
            location: Some(Location {
                file: report.file.to_owned(),
                line: start.line.max(1),
                column: start.column.max(1),
                end_line: has_end.then_some(end.line),
                end_column: has_end.then_some(end.column),
            }),
            object: report.object,
        });
    }
}

struct Report<'f> {
    file: &'f str,
    span: Span,
    subject: String,
    object: Option<ObjectRef>,
    message: String,
    evidence: Vec<Evidence>,
    fix: Remediation,
}

/// A short description of a collection or null for evidence.
fn summary(node: &Node) -> String {
    match &node.value {
        Value::Sequence(items) => format!("<sequence of {}>", items.len()),
        Value::Mapping(entries) => format!("<mapping of {}>", entries.len()),
        _ => "null".to_owned(),
    }
}
