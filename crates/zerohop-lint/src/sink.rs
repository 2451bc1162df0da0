//! Where rules report what they find, as the doctor's findings.
//!
//! What a run reports is bounded whatever the input: every text taken from
//! the input is clipped to [`MAX_TEXT_CHARS`], and a rule lists at most
//! [`MAX_LISTED_PER_FILE`] findings per file, then one that counts the rest.

use std::collections::HashMap;
use std::fmt;

use zerohop_core::{Evidence, Finding, Location, ObjectRef, Remediation, RuleInfo, Severity};
use zerohop_k8s::yaml::{Found, Node, PathStep, Span, Value};

use crate::model::{Object, display_path};
use crate::paths::PathIndex;

/// Longest text (message, value, name, path) a finding carries; longer ones
/// keep their start and end around a `…`. Far above any real message, far
/// below the 32 MiB a scalar may hold.
pub(crate) const MAX_TEXT_CHARS: usize = 1000;

/// Most findings one rule lists for one file. A real file never comes near
/// it; a generated one with a problem on each of a million lines would
/// otherwise cost a gigabyte of findings.
pub(crate) const MAX_LISTED_PER_FILE: usize = 1000;

/// Collects the findings of the rule being run, at its effective severity.
#[derive(Debug)]
pub(crate) struct Sink<'r> {
    rule: &'r RuleInfo,
    severity: Severity,
    paths: &'r mut PathIndex,
    findings: Vec<Finding>,
    /// Per file: findings listed, findings not listed, where the last
    /// listed one is. Looked up once per finding, listed or not (a million
    /// times on a large input): foldhash, faster than SipHash on paths;
    /// its seed is random per process.
    per_file: HashMap<String, (usize, usize, Location), foldhash::fast::RandomState>,
}

impl<'r> Sink<'r> {
    /// A sink for `rule` reporting at `severity`, following paths with
    /// `paths` (shared by the rules of a run).
    pub(crate) fn new(
        rule: &'r RuleInfo,
        severity: Severity,
        paths: &'r mut PathIndex,
    ) -> Sink<'r> {
        Sink {
            rule,
            severity,
            paths,
            findings: Vec::new(),
            per_file: HashMap::default(),
        }
    }

    /// The findings reported, with one finding per file that counts those
    /// not listed.
    pub(crate) fn into_findings(mut self) -> Vec<Finding> {
        let mut unlisted: Vec<(String, usize, Location)> = self
            .per_file
            .drain()
            .filter(|(_, (_, unlisted, _))| *unlisted > 0)
            .map(|(file, (_, unlisted, last))| (file, unlisted, last))
            .collect();
        unlisted.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, count, last) in unlisted {
            self.findings.push(Finding {
                id: self.rule.id.to_owned(),
                name: self.rule.name.to_owned(),
                group: self.rule.group.to_owned(),
                status: self.severity.status(),
                severity: self.severity,
                subject: String::new(),
                message: format!(
                    "{count} more findings of this rule in this file are not listed (at most {MAX_LISTED_PER_FILE} are)"
                ),
                evidence: Vec::new(),
                remediation: Some(Remediation::new(
                    "fix the listed ones, then lint again to see the rest",
                )),
                blocked_by: None,
                location: Some(last),
                object: None,
            });
        }
        self.findings
    }

    /// Whether this rule lists no more findings for `file`; when so, the
    /// finding is counted among the unlisted. A rule that may report once
    /// per element asks first, so that it does not build findings nobody
    /// will see.
    pub(crate) fn counted_only(&mut self, file: &str) -> bool {
        match self.per_file.get_mut(file) {
            Some((listed, unlisted, _)) if *listed >= MAX_LISTED_PER_FILE => {
                *unlisted += 1;
                true
            }
            _ => false,
        }
    }

    /// Counts `count` findings for `file` that are not listed, for a rule
    /// that knows them to be past the ones it lists there.
    pub(crate) fn count_unlisted(&mut self, file: &str, count: usize) {
        if let Some((_, unlisted, _)) = self.per_file.get_mut(file) {
            *unlisted += count;
        }
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
        // Past the cap the finding is only counted: following the path
        // would be wasted.
        if self.counted_only(object.file) {
            return;
        }
        let found = self.paths.find(object.node, path);
        self.report_found_listed(object, path, found, message.into(), fix);
    }

    /// Reports a problem at `path` in `object`, which the rule has already
    /// followed to `found` (a rule walking every node knows where it is).
    pub(crate) fn report_found(
        &mut self,
        object: &Object<'_>,
        path: &[PathStep<'_>],
        found: Found<'_>,
        message: impl Into<String>,
        fix: Remediation,
    ) {
        if !self.counted_only(object.file) {
            self.report_found_listed(object, path, found, message.into(), fix);
        }
    }

    /// [`Sink::report_found`] for a finding the cap lets through: builds
    /// the subject, value and evidence only for findings that are listed.
    fn report_found_listed(
        &mut self,
        object: &Object<'_>,
        path: &[PathStep<'_>],
        found: Found<'_>,
        message: String,
        fix: Remediation,
    ) {
        let value = if found.depth == path.len() {
            match &found.node.value {
                // Not `scalar_text`: that would copy all of a long string.
                Value::String(text) => short(text).to_string(),
                _ => found
                    .node
                    .scalar_text()
                    .unwrap_or_else(|| summary(found.node)),
            }
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
            message,
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
        if self.counted_only(report.file) {
            return;
        }
        let start = report.span.start;
        let end = report.span.end;
        let has_end = end.line > 0 && end > start;
        let location = Location {
            file: report.file.to_owned(),
            line: start.line.max(1),
            column: start.column.max(1),
            end_line: has_end.then_some(end.line),
            end_column: has_end.then_some(end.column),
        };
        match self.per_file.get_mut(report.file) {
            Some((listed, _, last)) => {
                *listed += 1;
                *last = location.clone();
            }
            None => {
                self.per_file
                    .insert(report.file.to_owned(), (1, 0, location.clone()));
            }
        }
        let fix = report.fix;
        // Texts built by the rules quote the input through `short`; this
        // keeps any that does not from growing the report.
        self.findings.push(Finding {
            id: self.rule.id.to_owned(),
            name: self.rule.name.to_owned(),
            group: self.rule.group.to_owned(),
            status: self.severity.status(),
            severity: self.severity,
            subject: clip(report.subject),
            message: clip(report.message),
            evidence: report
                .evidence
                .into_iter()
                .map(|evidence| Evidence::new(clip(evidence.source), clip(evidence.value)))
                .collect(),
            remediation: Some(Remediation {
                summary: clip(fix.summary),
                commands: fix.commands.into_iter().map(clip).collect(),
                docs: fix.docs,
            }),
            blocked_by: None,
            location: Some(location),
            object: report.object.map(|object| ObjectRef {
                api_version: clip(object.api_version),
                kind: clip(object.kind),
                namespace: object.namespace.map(clip),
                name: clip(object.name),
            }),
        });
    }
}

/// Most items a message lists by name; the rest are counted.
const MAX_LISTED_ITEMS: usize = 5;

/// `items` joined with `, `: the first few, then how many more, so that a
/// message naming what else the input has stays short whatever the input.
/// Only the items shown are produced.
pub(crate) fn join_some<I>(items: I) -> String
where
    I: IntoIterator,
    I::IntoIter: ExactSizeIterator,
    I::Item: AsRef<str>,
{
    let mut items = items.into_iter();
    let total = items.len();
    let shown: Vec<I::Item> = items.by_ref().take(MAX_LISTED_ITEMS).collect();
    let mut text = shown
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<&str>>()
        .join(", ");
    if total > MAX_LISTED_ITEMS {
        text.push_str(&format!(" and {} more", total - MAX_LISTED_ITEMS));
    }
    text
}

/// `text`, or when it is longer than [`MAX_TEXT_CHARS`], its start and end
/// around a `…`.
pub(crate) fn clip(text: String) -> String {
    if is_short(&text) {
        text
    } else {
        short(&text).to_string()
    }
}

/// Whether `text` has at most [`MAX_TEXT_CHARS`] characters, found without
/// counting all of a long one.
fn is_short(text: &str) -> bool {
    text.len() <= MAX_TEXT_CHARS || text.chars().nth(MAX_TEXT_CHARS).is_none()
}

/// A text from the input as a message shows it: clipped as [`clip`] does,
/// without copying more of it than is shown. A name that many findings
/// quote (the first of several ClusterPolicies, say) costs each of them at
/// most [`MAX_TEXT_CHARS`] characters, however long it is.
pub(crate) fn short(text: &str) -> Short<'_> {
    Short(text)
}

/// See [`short`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Short<'a>(&'a str);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if is_short(text) {
            return f.write_str(text);
        }
        let head = (MAX_TEXT_CHARS - 1) / 2;
        let tail = MAX_TEXT_CHARS - 1 - head;
        let head_end = text
            .char_indices()
            .nth(head)
            .map_or(text.len(), |(at, _)| at);
        let tail_start = text
            .char_indices()
            .nth_back(tail - 1)
            .map_or(head_end, |(at, _)| at);
        write!(f, "{}…{}", &text[..head_end], &text[tail_start..])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_name_a_few_and_count_the_rest() {
        assert_eq!(join_some(["a", "b"]), "a, b");
        assert_eq!(
            join_some((0..12).map(|i| i.to_string())),
            "0, 1, 2, 3, 4 and 7 more"
        );
    }

    #[test]
    fn long_texts_keep_their_start_and_end() {
        assert_eq!(clip("short".to_owned()), "short");
        let exact = "é".repeat(MAX_TEXT_CHARS);
        assert_eq!(clip(exact.clone()), exact);
        let long = format!("start{}end", "é".repeat(5000));
        let clipped = clip(long);
        assert_eq!(clipped.chars().count(), MAX_TEXT_CHARS);
        assert!(clipped.starts_with("startéé") && clipped.ends_with("éend"));
        assert!(clipped.contains('…'));
    }
}
