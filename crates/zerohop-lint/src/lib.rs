//! `zerohop lint`: finds the mistakes in Kubernetes manifests for the
//! storage → RDMA NIC → GPU data path, within one object and across objects.
//!
//! Inputs are loaded with source spans ([`zerohop_k8s::yaml`]), turned into a
//! [`Workspace`] of objects, and every rule of the registry ([`RULES`]) runs
//! over the whole workspace. Rules are pure functions of the workspace; they
//! report the doctor's [`Finding`]s with a location and the object.

pub mod inputs;
mod loaded;
mod model;
mod paths;
mod registry;
mod rules;
mod scope;
mod sink;

use std::collections::{HashMap, HashSet};
use std::fmt;

use zerohop_core::{Finding, Severity};
use zerohop_input::FileKind;
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{self, Limits};

pub use loaded::{Batch, CollectError, Loaded, MAX_HELD_BYTES, load, load_crds, texts};
pub use model::{HostFile, InputFailure, Object, Workspace};
pub use registry::Rule;
pub use rules::{RULES, rule, rules};
pub use scope::Scope;

use crate::loaded::Content;
use crate::paths::PathIndex;
use crate::sink::Sink;

/// One input to lint.
#[derive(Debug, Clone)]
pub struct Input {
    /// The name findings use for it: the path as given, or `-` for stdin.
    pub name: String,
    /// The bytes read, or why they were not.
    pub content: Result<Vec<u8>, NotRead>,
}

/// Why an input was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRead {
    /// Not a regular file; what it is.
    NotRegular(FileKind),
    /// Reading failed; the system's message.
    Failed(String),
    /// A symlink under a linted directory whose target lies outside it.
    LeavesTree {
        /// The link's target as written.
        target: String,
    },
    /// A symlink under a linted directory that does not resolve.
    Unresolved {
        /// The link's target as written.
        target: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// A directory nested deeper than the search goes (the depth).
    TooDeep(usize),
}

impl NotRead {
    /// An I/O error as a failure.
    pub fn failed(err: std::io::Error) -> NotRead {
        NotRead::Failed(err.to_string())
    }

    /// Whether the path was skipped on purpose (reported as information),
    /// rather than failed (an error that makes the run exit 2).
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            NotRead::LeavesTree { .. } | NotRead::Unresolved { .. } | NotRead::TooDeep(_)
        )
    }
}

impl fmt::Display for NotRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRead::NotRegular(what) => write!(f, "not a regular file but {what}; not read"),
            NotRead::Failed(reason) => write!(f, "cannot read input: {reason}"),
            NotRead::LeavesTree { target } => write!(
                f,
                "symlink to `{target}` leads outside the linted directory; not followed"
            ),
            NotRead::Unresolved { target, reason } => {
                write!(
                    f,
                    "symlink to `{target}` does not resolve ({reason}); skipped"
                )
            }
            NotRead::TooDeep(depth) => write!(
                f,
                "directory nested deeper than {depth} levels below the linted one; not searched"
            ),
        }
    }
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

/// Whether an input is named `cufile.json`, and so is read as a cuFile
/// configuration whatever its content (other `.json` inputs are, when
/// their content is one).
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
    let loaded: Vec<Loaded> = inputs
        .iter()
        .map(|input| load(input.clone(), &options.limits))
        .collect();
    lint_loaded(&loaded, options)
}

/// Runs every rule over the loaded inputs together, as one cluster, and
/// returns the sorted findings.
pub fn lint_loaded(loaded: &[Loaded], options: &Options) -> Outcome {
    lint_cluster(loaded.iter(), options)
}

/// Lints each cluster of the batch on its own ([`Scope`]) and returns all
/// the findings, sorted.
pub fn lint_batch(batch: &Batch, options: &Options) -> Outcome {
    let mut all = Outcome {
        findings: Vec::new(),
        invalid_inputs: 0,
    };
    for cluster in batch.clusters() {
        let outcome = lint_cluster(cluster.into_iter(), options);
        all.findings.extend(outcome.findings);
        all.invalid_inputs += outcome.invalid_inputs;
    }
    sort(&mut all.findings);
    all
}

fn sort(findings: &mut [Finding]) {
    findings
        .sort_by(|a, b| (&a.location, &a.id, &a.message).cmp(&(&b.location, &b.id, &b.message)));
}

/// Runs every rule over `loaded` together and returns the sorted findings.
fn lint_cluster<'a>(loaded: impl Iterator<Item = &'a Loaded>, options: &Options) -> Outcome {
    let mut workspace = Workspace {
        catalog: options.catalog.as_ref(),
        ..Workspace::default()
    };
    for input in loaded {
        let name = input.name.as_str();
        match &input.content {
            Content::NotRead(not_read) if not_read.is_skip() => {
                workspace.skipped.push((name, not_read));
            }
            Content::NotRead(not_read) => workspace
                .failed_inputs
                .push((name, InputFailure::Unreadable(not_read))),
            Content::Invalid { error, .. } => workspace
                .failed_inputs
                .push((name, InputFailure::Invalid(error))),
            Content::HostFile { text } if inputs::is_instructions(std::path::Path::new(name)) => {
                workspace.instructions.push(HostFile { file: name, text })
            }
            Content::HostFile { text } => workspace.host_files.push(HostFile { file: name, text }),
            Content::Documents {
                documents,
                cufile: true,
                ..
            } => workspace
                .cufiles
                .extend(documents.iter().map(|doc| (name, doc))),
            Content::Documents { documents, .. } => {
                for node in yaml::objects(documents) {
                    match Object::from_node(name, node) {
                        Some(object) => workspace.objects.push(object),
                        None if zerohop_known::operators::is_helm_values_file(name) => {
                            workspace.helm_values.push((name, node));
                        }
                        None => workspace.other_documents.push((name, node)),
                    }
                }
            }
        }
    }

    let mut paths = PathIndex::default();
    let mut findings = Vec::new();
    for rule in RULES {
        let severity = options
            .overrides
            .get(rule.info.id)
            .copied()
            .unwrap_or(rule.info.severity);
        let mut sink = Sink::new(&rule.info, severity, &mut paths);
        (rule.check)(&workspace, &mut sink);
        findings.extend(sink.into_findings());
    }
    drop_shadowed_schema_findings(&mut findings);
    sort(&mut findings);
    Outcome {
        findings,
        invalid_inputs: workspace.failed_inputs.len(),
    }
}

/// A schema "unknown field" at the same place as a more specific finding
/// (a removed field, a misspelled env var) says the same thing less well.
fn drop_shadowed_schema_findings(findings: &mut Vec<Finding>) {
    let unknown_field = rules::schema::UNKNOWN_FIELD.info.id;
    let specific: HashSet<_> = findings
        .iter()
        .filter(|f| f.id != unknown_field)
        .filter_map(|f| f.location.clone())
        .collect();
    findings.retain(|f| {
        f.id != unknown_field || !f.location.as_ref().is_some_and(|l| specific.contains(l))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

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
