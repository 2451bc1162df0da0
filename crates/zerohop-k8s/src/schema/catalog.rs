//! The set of known CRDs, loaded from files or documents.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use serde_json::Value;
use zerohop_input::{Follow, NotRegular, read_regular};

use super::validate::Walker;
use super::violation::Listing;
use super::violation::SchemaViolation;

/// The most bytes a compiled `pattern` may use; a larger one is skipped.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The largest CRD file read, far above the largest real CRD (~150 KiB).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Why CRDs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file is not valid YAML or JSON.
    #[error("cannot parse {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A document claims to be a CRD but lacks what every CRD has.
    #[error("invalid customresourcedefinition {name:?}: {reason}")]
    InvalidCrd {
        /// `metadata.name`, or empty when absent.
        name: String,
        /// What is missing or malformed.
        reason: String,
    },
}

/// An object whose apiVersion and kind no known CRD serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no customresourcedefinition known for apiVersion {api_version:?} kind {kind:?}")]
pub struct UnknownKind {
    /// The object's `apiVersion` (empty when absent).
    pub api_version: String,
    /// The object's `kind` (empty when absent).
    pub kind: String,
}

/// A schema constraint that is not checked, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedConstraint {
    /// `metadata.name` of the CRD.
    pub crd: String,
    /// The constraint, e.g. `pattern "(?=x)"`.
    pub constraint: String,
    /// Why it is skipped.
    pub reason: String,
}

/// One served version of one CRD.
#[derive(Debug)]
struct ServedSchema {
    /// `openAPIV3Schema`, `None` when the version declares none.
    schema: Option<Value>,
    /// Whether the version has the status subresource: the API server then
    /// resets the `status` of an object created or updated through the main
    /// resource before validating it (apiextensions-apiserver
    /// `customResourceStrategy.PrepareForCreate`), so only the unknown
    /// fields there count (refused while the request is decoded, under
    /// strict field validation).
    status_subresource: bool,
}

/// The CustomResourceDefinitions known to a validation run.
#[derive(Debug, Default)]
pub struct CrdCatalog {
    /// `(apiVersion, kind)` → every served schema for it, in load order.
    /// Two copies of one CRD (e.g. an operator's chart copy and upstream)
    /// may both be loaded; an object is judged by the copy it fits best.
    served: BTreeMap<(String, String), Vec<ServedSchema>>,
    patterns: HashMap<String, Option<Regex>>,
    skipped: Vec<SkippedConstraint>,
    /// How many CustomResourceDefinition documents were loaded.
    crds: usize,
}

impl CrdCatalog {
    /// Reads every `*.yaml`/`*.yml`/`*.json` file in `dir` (multi-document
    /// YAML allowed), keeps the CustomResourceDefinitions
    /// (apiextensions.k8s.io/v1), including those in the `items` of a list
    /// (`kubectl get crd -o yaml` writes a `kind: List`), skips other
    /// documents. Files are read in
    /// name order, so the result does not depend on the file system.
    pub fn load_dir(dir: &Path) -> Result<CrdCatalog, SchemaError> {
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            let wanted = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if wanted && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        let mut docs = Vec::new();
        for path in files {
            // Read through a cap rather than trusting the size first seen:
            // a file may grow between the two.
            // Opened without waiting and refused unless it is a regular
            // file: a FIFO named `*.yaml` must not hang the run.
            let cap = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
            let bytes = read_regular(&path, Follow::Links, cap).map_err(|err| match err {
                NotRegular::Kind(kind) => SchemaError::Parse {
                    path: path.clone(),
                    message: format!("{kind}, not a regular file"),
                },
                NotRegular::Io(err) => io(&path)(err),
            })?;
            let text = String::from_utf8(bytes).map_err(|_| SchemaError::Parse {
                path: path.clone(),
                message: "not UTF-8 text".to_owned(),
            })?;
            if text.len() > cap {
                return Err(SchemaError::Parse {
                    path,
                    message: format!("file is larger than {MAX_FILE_BYTES} bytes"),
                });
            }
            docs.extend(parse_documents(&path, &text)?);
        }
        CrdCatalog::from_documents(docs)
    }

    /// Same as [`CrdCatalog::load_dir`], from in-memory documents (for tests
    /// and for CRDs found among linted files).
    pub fn from_documents(
        docs: impl IntoIterator<Item = Value>,
    ) -> Result<CrdCatalog, SchemaError> {
        let mut catalog = CrdCatalog::default();
        for doc in docs {
            catalog.add(doc)?;
        }
        Ok(catalog)
    }

    /// True when a CRD for this apiVersion (group/version) and kind is known
    /// and serves that version.
    pub fn knows(&self, api_version: &str, kind: &str) -> bool {
        self.served
            .contains_key(&(api_version.to_owned(), kind.to_owned()))
    }

    /// Validates one object. Err when no CRD covers its apiVersion/kind.
    /// When several copies of the CRD are known, the violations against the
    /// copy the object fits best (fewest violations, earliest loaded on a
    /// tie) are returned. At most a thousand are listed; when there are more,
    /// a last violation at the object's root (kind
    /// [`ViolationKind::Other`](super::ViolationKind::Other)) says how many
    /// more there are. Time is linear in the size of the object.
    pub fn validate(&self, object: &Value) -> Result<Vec<SchemaViolation>, UnknownKind> {
        let text = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let (Some(map), Some(schemas)) = (
            object.as_object(),
            self.served.get(&(api_version.clone(), kind.clone())),
        ) else {
            return Err(UnknownKind { api_version, kind });
        };
        let mut best: Option<Listing> = None;
        for served in schemas {
            let found = Walker::new(&self.patterns).object(
                served.schema.as_ref(),
                map,
                served.status_subresource,
            );
            if best.as_ref().is_none_or(|b| found.found() < b.found()) {
                best = Some(found);
            }
        }
        Ok(best.map(Listing::into_violations).unwrap_or_default())
    }

    /// The `(apiVersion, kind)` pairs known, sorted.
    pub fn kinds(&self) -> impl Iterator<Item = (&str, &str)> {
        self.served
            .keys()
            .map(|(api_version, kind)| (api_version.as_str(), kind.as_str()))
    }

    /// How many CustomResourceDefinitions were loaded (a CRD given twice
    /// counts twice); zero when the documents held none.
    pub fn crd_count(&self) -> usize {
        self.crds
    }

    /// Constraints present in the loaded schemas that are not checked.
    pub fn skipped(&self) -> &[SkippedConstraint] {
        &self.skipped
    }

    fn add(&mut self, doc: Value) -> Result<(), SchemaError> {
        if is_list(&doc) {
            // A list nests no deeper than the API writes it: items that are
            // lists themselves are not CRDs and are skipped like any other
            // document, which also bounds the recursion.
            if let Some(Value::Array(items)) = doc.get("items") {
                for item in items.iter().filter(|item| !is_list(item)) {
                    self.add(item.clone())?;
                }
            }
            return Ok(());
        }
        let is_crd = doc.get("apiVersion").and_then(Value::as_str)
            == Some("apiextensions.k8s.io/v1")
            && doc.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
        if !is_crd {
            return Ok(());
        }
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let invalid = |reason: &str| SchemaError::InvalidCrd {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        let group = doc
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("spec.group is missing"))?;
        let kind = doc
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("spec.names.kind is missing"))?;
        let versions = doc
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("spec.versions is missing"))?;
        for version in versions {
            let version_name = version
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("a version has no name"))?;
            if version.get("served").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let schema = version.pointer("/schema/openAPIV3Schema").cloned();
            if let Some(schema) = &schema {
                self.compile_patterns(&name, schema);
            }
            let api_version = if group.is_empty() {
                version_name.to_owned()
            } else {
                format!("{group}/{version_name}")
            };
            let status_subresource = version
                .pointer("/subresources/status")
                .is_some_and(Value::is_object);
            self.served
                .entry((api_version, kind.to_owned()))
                .or_default()
                .push(ServedSchema {
                    schema,
                    status_subresource,
                });
        }
        self.crds += 1;
        Ok(())
    }

    /// Compiles every `pattern` in a schema once. Schema keywords sit next
    /// to each other in one mapping, while `properties` maps field names to
    /// schemas, so a field named `pattern` is never mistaken for a keyword.
    fn compile_patterns(&mut self, crd: &str, schema: &Value) {
        let mut stack = vec![schema];
        while let Some(node) = stack.pop() {
            let Some(rules) = node.as_object() else {
                continue;
            };
            for (key, value) in rules {
                match (key.as_str(), value) {
                    ("pattern", Value::String(pattern)) if !self.patterns.contains_key(pattern) => {
                        let compiled = compile_pattern(pattern);
                        if let Err(reason) = &compiled {
                            self.skipped.push(SkippedConstraint {
                                crd: crd.to_owned(),
                                constraint: format!("pattern {pattern:?}"),
                                reason: reason.clone(),
                            });
                        }
                        self.patterns.insert(pattern.clone(), compiled.ok());
                    }
                    ("properties", Value::Object(fields)) => stack.extend(fields.values()),
                    ("items" | "additionalProperties" | "not", value) => stack.push(value),
                    ("allOf" | "anyOf" | "oneOf", Value::Array(branches)) => stack.extend(branches),
                    _ => {}
                }
            }
        }
    }
}

/// Whether a document is a list of objects: `kind: List` (what `kubectl get
/// -o yaml` writes for several objects, kubernetes
/// `staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion` `List`)
/// or a typed `…List` such as `CustomResourceDefinitionList`, with `items`.
fn is_list(doc: &Value) -> bool {
    doc.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("List"))
        && doc.get("items").is_some_and(Value::is_array)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SchemaError + '_ {
    move |source| SchemaError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Compiles an ECMA-262-style schema pattern. ASCII semantics first (`\d`
/// is `[0-9]` in ECMA); Unicode when the pattern needs it (`.` on text).
fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    let build = |unicode: bool| {
        RegexBuilder::new(pattern)
            .unicode(unicode)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
    };
    build(false).or_else(|_| build(true)).map_err(|err| {
        let detail = err.to_string();
        let last = detail
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("unsupported syntax")
            .trim()
            .to_owned();
        format!(
            "the regex engine cannot compile it: {}",
            last.trim_start_matches("error: ")
        )
    })
}

fn parse_documents(path: &Path, text: &str) -> Result<Vec<Value>, SchemaError> {
    let parse_error = |message: String| SchemaError::Parse {
        path: path.to_owned(),
        message,
    };
    if path.extension().and_then(|e| e.to_str()) == Some("json") {
        return serde_json::from_str::<Value>(text)
            .map(|doc| vec![doc])
            .map_err(|err| parse_error(err.to_string()));
    }
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|err| parse_error(err.to_string()))?;
    Ok(docs.into_iter().filter(|doc| !doc.is_null()).collect())
}

impl fmt::Display for SkippedConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} not checked: {}",
            self.crd, self.constraint, self.reason
        )
    }
}
