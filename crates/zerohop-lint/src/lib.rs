//! `zerohop lint`: finds the mistakes in Kubernetes manifests for the
//! storage → RDMA NIC → GPU data path, within one object and across objects.
//!
//! Inputs are loaded with source spans ([`zerohop_k8s::yaml`]), turned into a
//! [`Workspace`] of objects, and every rule of the registry ([`RULES`]) runs
//! over the whole workspace. Rules are pure functions of the workspace; they
//! report the doctor's [`Finding`]s with a location and the object.

mod model;
mod registry;
mod rules;
mod sink;

use std::collections::HashMap;

use zerohop_core::{Finding, Severity};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{self, Limits, LoadError, Node};

pub use model::{InputFailure, Object, Workspace};
pub use registry::{RULES, Rule, rule, rules};

use crate::sink::Sink;

/// One input to lint.
#[derive(Debug, Clone)]
pub struct Input {
    /// The name findings use for it: the path as given, or `-` for stdin.
    pub name: String,
    /// The bytes read, or why reading failed.
    pub content: Result<Vec<u8>, String>,
}

/// How to lint.
#[derive(Debug, Default)]
pub struct Options {
    /// CRDs to validate custom resources against (`--crds DIR`).
    pub catalog: Option<CrdCatalog>,
    /// Severities chosen by the user, by rule ID (`--severity-override`).
    pub overrides: HashMap<String, Severity>,
    /// Bounds on each input.
    pub limits: Limits,
}

/// The result of a lint run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Every finding, sorted by file, line, column and rule.
    pub findings: Vec<Finding>,
    /// How many inputs could not be read or parsed (exit code 2 when any).
    pub invalid_inputs: usize,
}

/// Whether an input should be read as a cuFile configuration.
pub fn is_cufile(name: &str) -> bool {
    name.rsplit(['/', '\\'])
        .next()
        .is_some_and(|base| base.eq_ignore_ascii_case("cufile.json"))
}

/// Parses a `--severity-override` value, `ID=level` with level `info`,
/// `warning` or `error`.
///
/// # Errors
/// A message naming what is wrong: no `=`, an unknown rule or an unknown level.
pub fn parse_severity_override(text: &str) -> Result<(String, Severity), String> {
    let (id, level) = text.split_once('=').ok_or_else(|| {
        format!("severity override {text:?} is not ID=level (e.g. ZL023=warning)")
    })?;
    let id = id.trim().to_ascii_uppercase();
    if rule(&id).is_none() {
        return Err(format!("no lint rule {id:?}; `zerohop checks` lists them"));
    }
    let severity = Severity::parse(level.trim())
        .ok_or_else(|| format!("severity {level:?} is not one of info, warning, error"))?;
    Ok((id, severity))
}

/// Lints `inputs`: loads each, runs every rule over all of them together,
/// and returns the sorted findings.
pub fn lint(inputs: &[Input], options: &Options) -> Outcome {
    let loaded: Vec<(&str, Result<Vec<Node>, Loading<'_>>)> = inputs
        .iter()
        .map(|input| {
            let documents = match &input.content {
                Err(message) => Err(Loading::Unreadable(message)),
                Ok(bytes) if is_cufile(&input.name) => {
                    load_cufile(bytes, &options.limits).map_err(Loading::Invalid)
                }
                Ok(bytes) => yaml::load_bytes(bytes, &options.limits).map_err(Loading::Invalid),
            };
            (input.name.as_str(), documents)
        })
        .collect();

    let mut workspace = Workspace {
        catalog: options.catalog.as_ref(),
        ..Workspace::default()
    };
    for (name, documents) in &loaded {
        match documents {
            Err(Loading::Unreadable(message)) => workspace
                .failed_inputs
                .push((name, InputFailure::Unreadable(message))),
            Err(Loading::Invalid(err)) => workspace
                .failed_inputs
                .push((name, InputFailure::Invalid(err))),
            Ok(documents) if is_cufile(name) => workspace
                .cufiles
                .extend(documents.iter().map(|doc| (*name, doc))),
            Ok(documents) => {
                for node in yaml::objects(documents) {
                    match Object::from_node(name, node) {
                        Some(object) => workspace.objects.push(object),
                        None => workspace.other_documents.push((name, node)),
                    }
                }
            }
        }
    }

    let mut findings = Vec::new();
    for rule in RULES {
        let severity = options
            .overrides
            .get(rule.info.id)
            .copied()
            .unwrap_or(rule.info.severity);
        let mut sink = Sink::new(&rule.info, severity);
        (rule.check)(&workspace, &mut sink);
        findings.extend(sink.into_findings());
    }
    drop_shadowed_schema_findings(&mut findings);
    findings
        .sort_by(|a, b| (&a.location, &a.id, &a.message).cmp(&(&b.location, &b.id, &b.message)));
    Outcome {
        findings,
        invalid_inputs: workspace.failed_inputs.len(),
    }
}

enum Loading<'a> {
    Unreadable(&'a str),
    Invalid(LoadError),
}

/// `cufile.json` carries `//` comments, which JSON and YAML lack: blank them
/// out (keeping every position) and load the rest as YAML flow.
fn load_cufile(bytes: &[u8], limits: &Limits) -> Result<Vec<Node>, LoadError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ()).ok();
    match text {
        Some(text) if text.len() <= limits.max_bytes => {
            yaml::load_str(&blank_comments(text), limits)
        }
        _ => yaml::load_bytes(bytes, limits),
    }
}

/// Replaces `//` line comments and `/* */` block comments outside strings
/// with spaces, keeping newlines so that lines and columns do not move.
fn blank_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                out.push(' ');
                while let Some(&next) = chars.peek() {
                    if next == '\n' {
                        break;
                    }
                    out.push(' ');
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                out.push(' ');
                let mut previous = ' ';
                for next in chars.by_ref() {
                    out.push(if next == '\n' { '\n' } else { ' ' });
                    if previous == '*' && next == '/' {
                        break;
                    }
                    previous = next;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// A schema "unknown field" at the same place as a more specific finding
/// (a removed field, a misspelled env var) says the same thing less well.
fn drop_shadowed_schema_findings(findings: &mut Vec<Finding>) {
    let specific: Vec<_> = findings
        .iter()
        .filter(|f| f.id != rules::schema::UNKNOWN_FIELD.info.id)
        .filter_map(|f| f.location.clone())
        .collect();
    findings.retain(|f| {
        f.id != rules::schema::UNKNOWN_FIELD.info.id
            || !f.location.as_ref().is_some_and(|l| specific.contains(l))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_blanked_in_place() {
        let text = "{ // c\n \"a\": \"//x\", /* b\n */ \"b\": 1 }";
        let blanked = blank_comments(text);
        assert_eq!(blanked.len(), text.len());
        assert_eq!(blanked.lines().count(), text.lines().count());
        assert!(blanked.contains("\"//x\""));
        assert!(!blanked.contains("/*"));
    }

    #[test]
    fn overrides_are_validated() {
        assert_eq!(
            parse_severity_override("zl001=warn"),
            Ok(("ZL001".to_owned(), Severity::Warning))
        );
        assert!(parse_severity_override("ZL999=info").is_err());
        assert!(parse_severity_override("ZL001").is_err());
        assert!(parse_severity_override("ZL001=fatal").is_err());
    }
}
