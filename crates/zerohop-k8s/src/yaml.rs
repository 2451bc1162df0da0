//! YAML loading that keeps a source span on every node.
//!
//! Kubernetes reads manifests with `sigs.k8s.io/yaml`, which follows YAML 1.1
//! (goyaml.v2): `0644` is the octal number 420 and `yes`/`on` are booleans.
//! The loader resolves plain scalars the same way, so that what a rule sees
//! is what the API server would see, and marks every scalar that a YAML 1.2
//! reader would read differently (see [`Yaml11`]).
//!
//! Input is bounded: a size cap, a cap on nodes (one per 8 bytes of the
//! size cap), a nesting-depth cap and caps on what aliases may expand to (the
//! "billion laughs" attack), in nodes and in bytes. The stream must be printable text, as the YAML specification and
//! Kubernetes' YAML library require: a raw control character (an escape
//! sequence aimed at a terminal, say) is refused, never loaded. Every failure
//! is a [`LoadError`] with a line and column, never a panic.
//!
//! Loading is linear in the input. A stream written in the subset of YAML
//! that manifests use (block collections, one-line scalars, flow
//! collections on one line, anchors; see `subset.rs`) is read by a line
//! scanner, three to five times faster than the general parser; any other
//! is read by the general parser, which reads each character once and holds
//! at most 1,024 characters' worth of tokens ahead of the tree. Both give
//! the same tree, spans included (the tests and a fuzz target hold them to
//! it). Merge keys are applied through a hash set, and no step scans the
//! siblings of a node once per sibling. To look up many paths in one large
//! document, use a [`Finder`] rather than [`Node::find`].

mod charset;
mod finder;
mod path;
mod resolve;
mod subset;
mod tree;

use std::fmt;

use thiserror::Error;

pub use finder::Finder;
pub use path::{Found, PathStep};

/// Bounds on what one input may cost to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest input accepted, in bytes. It also bounds the nodes of a
    /// stream, at one per 8 bytes ([`Limits::max_nodes`]), since memory and
    /// time grow with nodes, and a stream of one-character nodes holds
    /// several times more of them than any manifest of its size.
    pub max_bytes: usize,
    /// Deepest nesting of sequences and mappings accepted; never more than
    /// 1,024 whatever this says, so that the recursive walks of a tree fit
    /// on any thread's stack.
    pub max_depth: usize,
    /// Most nodes that aliases may add to a stream by expansion. What
    /// anchors and aliases copy is also capped at [`Limits::max_bytes`]
    /// bytes (text and nodes together), so that one long scalar aliased many
    /// times cannot exhaust memory either.
    pub max_alias_nodes: usize,
}

impl Limits {
    /// The most nodes a stream may hold (mapping keys aside, aliases
    /// counted as what they expand to): one per 8 bytes of
    /// [`Limits::max_bytes`], 4,194,304 by default. Real manifests hold one
    /// node per 15 to 30 bytes.
    pub fn max_nodes(&self) -> usize {
        self.max_bytes / 8
    }
}

impl Default for Limits {
    /// 32 MiB, 128 levels and 100,000 alias-expanded nodes: far above any
    /// real manifest (the API server caps one object near 1.5 MiB), far
    /// below what would exhaust memory. A stream at the size limit loads in
    /// under a second of CPU when it is written in the common subset, and
    /// in at most two and a half seconds otherwise (BENCHMARKS.md, "lint:
    /// the loader"), and holds at most a few dozen bytes per input byte
    /// (the worst case is a stream of one- and two-character nodes).
    fn default() -> Limits {
        Limits {
            max_bytes: 32 * 1024 * 1024,
            max_depth: 128,
            max_alias_nodes: 100_000,
        }
    }
}

/// A position in the source, 1-based, the column counted in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Mark {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// The source range of a node: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// Where the node starts.
    pub start: Mark,
    /// Where the node ends (exclusive).
    pub end: Mark,
}

/// How a plain scalar's YAML 1.1 reading (Kubernetes) differs from its YAML
/// 1.2 reading (most editors, linters and newer libraries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Yaml11 {
    /// A leading-zero integer such as `0644`: octal under YAML 1.1, decimal
    /// under YAML 1.2.
    Octal,
    /// `yes`, `no`, `on`, `off`, `y`, `n`: booleans under YAML 1.1, strings
    /// under YAML 1.2.
    Boolean,
    /// `1:20` or `0000:18:00.1`: base-60 numbers to YAML 1.1 libraries such as
    /// PyYAML, strings to Go's YAML library and to YAML 1.2.
    Sexagesimal,
}

/// A scalar that YAML 1.1 and YAML 1.2 read differently, with its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Yaml11Reading {
    /// What differs.
    pub kind: Yaml11,
    /// The scalar as written.
    pub text: String,
}

/// The value of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    String(String),
    /// A sequence.
    Sequence(Vec<Node>),
    /// A mapping, in source order. Duplicate keys are kept (the last one
    /// wins in [`Node::to_json`]) so that a rule can report them.
    Mapping(Vec<Entry>),
}

/// One key and value of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key as a string (scalar keys only, as in Kubernetes).
    pub key: String,
    /// Where the key is written.
    pub key_span: Span,
    /// The value.
    pub value: Node,
}

/// A YAML node with its source span.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the node is written. A node reached through an alias keeps the
    /// span of its anchor.
    pub span: Span,
    /// The node's value.
    pub value: Value,
    /// Set on plain scalars that YAML 1.2 would read differently.
    pub yaml11: Option<Box<Yaml11Reading>>,
}

impl Node {
    /// The value of `key` when this node is a mapping (the last one when the
    /// key is repeated).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    /// The entry of `key` when this node is a mapping (the last one when the
    /// key is repeated).
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Mapping(entries) => entries.iter().rev().find(|entry| entry.key == key),
            _ => None,
        }
    }

    /// The string when this node is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The integer when this node is an integer scalar.
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Value::Int(number) => Some(number),
            _ => None,
        }
    }

    /// The boolean when this node is a boolean scalar.
    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(value) => Some(value),
            _ => None,
        }
    }

    /// The items when this node is a sequence, else an empty slice.
    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Sequence(items) => items,
            _ => &[],
        }
    }

    /// The entries when this node is a mapping, else an empty slice.
    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Mapping(entries) => entries,
            _ => &[],
        }
    }

    /// A scalar as text the way Kubernetes would print it back (`true`,
    /// `420`, the string itself); `None` for collections and null.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Bool(value) => Some(value.to_string()),
            Value::Int(number) => Some(number.to_string()),
            Value::Float(number) => Some(number.to_string()),
            Value::String(text) => Some(text.clone()),
            Value::Null | Value::Sequence(_) | Value::Mapping(_) => None,
        }
    }
}

/// Why an input could not be loaded, with where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{kind} at line {}, column {}", .at.line, .at.column)]
pub struct LoadError {
    /// Where the problem is (line 1, column 1 for problems with the whole input).
    pub at: Mark,
    /// What the problem is.
    pub kind: LoadErrorKind,
}

/// What went wrong while loading.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LoadErrorKind {
    /// The input is larger than [`Limits::max_bytes`].
    #[error("input is larger than the {limit}-byte limit")]
    TooLarge {
        /// Size of the input (at least; reading stops past the limit).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The input is not UTF-8 text (a binary file, or another encoding).
    #[error("input is not UTF-8 text (a binary file?)")]
    NotText,
    /// The input holds a character that YAML does not allow raw in a stream
    /// (a C0 or C1 control character other than tab and line breaks, DEL, or
    /// U+FFFE/U+FFFF). The message names it by code point, never raw.
    #[error(
        "control character U+{:04X} is not allowed in YAML (write it as an escape in a double-quoted string)",
        u32::from(*.0)
    )]
    ControlCharacter(char),
    /// The YAML parser rejected the input.
    #[error("invalid YAML: {0}")]
    Syntax(String),
    /// A JSON document (`cufile.json`, read as JSON with comments) that is
    /// not valid JSON.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Nesting deeper than [`Limits::max_depth`].
    #[error("nesting is deeper than the limit of {0} levels")]
    TooDeep(usize),
    /// Aliases would expand to more than [`Limits::max_alias_nodes`] nodes.
    #[error("aliases expand to more than {0} nodes (an alias bomb?)")]
    AliasBomb(usize),
    /// What anchors and aliases copy would take more than this many bytes
    /// ([`Limits::max_bytes`]): a long scalar or a large mapping aliased many
    /// times.
    #[error("anchors and aliases copy more than {0} bytes (an alias bomb?)")]
    AliasBytes(usize),
    /// The stream holds more nodes than [`Limits::max_nodes`].
    #[error("input holds more than {0} nodes (one per 8 bytes of the size limit)")]
    TooManyNodes(usize),
    /// An alias names an anchor that is not defined before it.
    #[error("alias refers to an unknown anchor")]
    UnknownAnchor,
    /// A mapping key is a sequence or mapping, which Kubernetes cannot read.
    #[error("mapping key is not a scalar")]
    ComplexKey,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Loads every document of a YAML stream from raw bytes: checks the size,
/// that the bytes are UTF-8 text, then parses.
///
/// # Errors
/// Returns a [`LoadError`] for input that is too large, not text, not valid
/// YAML, too deep, or an alias bomb.
pub fn load_bytes(bytes: &[u8], limits: &Limits) -> Result<Vec<Node>, LoadError> {
    if bytes.len() > limits.max_bytes {
        return Err(LoadError {
            at: Mark { line: 1, column: 1 },
            kind: LoadErrorKind::TooLarge {
                size: bytes.len(),
                limit: limits.max_bytes,
            },
        });
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => load_str(text, limits),
        Err(err) => {
            let valid = bytes.get(..err.valid_up_to()).unwrap_or_default();
            // The prefix is valid UTF-8 by construction; count in characters.
            let prefix = String::from_utf8_lossy(valid);
            Err(LoadError {
                at: mark_after(&prefix),
                kind: LoadErrorKind::NotText,
            })
        }
    }
}

/// Loads every document of a YAML stream. Empty documents load as a
/// [`Value::Null`] node.
///
/// # Errors
/// Returns a [`LoadError`] for input that is too large, holds a raw control
/// character, is not valid YAML, is too deep, or is an alias bomb.
pub fn load_str(text: &str, limits: &Limits) -> Result<Vec<Node>, LoadError> {
    if text.len() > limits.max_bytes {
        return Err(LoadError {
            at: Mark { line: 1, column: 1 },
            kind: LoadErrorKind::TooLarge {
                size: text.len(),
                limit: limits.max_bytes,
            },
        });
    }
    if let Some((offset, character)) = charset::first_forbidden(text) {
        return Err(LoadError {
            at: mark_after(text.get(..offset).unwrap_or_default()),
            kind: LoadErrorKind::ControlCharacter(character),
        });
    }
    tree::build(text, limits)
}

/// Where the scanner of the common subset and the general parser disagree
/// on `text`: `None` when the stream never reaches them (too large, a
/// control character), when the scanner leaves it to the parser, when both
/// give the same documents, or when both refuse it (see [`subset`] for why
/// their reasons may differ); else both results. For the `yaml_subset` fuzz
/// target (feature `differential`); the loader's tests hold the two to each
/// other the same way.
#[cfg(feature = "differential")]
pub fn subset_disagreement(text: &str, limits: &Limits) -> Option<String> {
    if text.len() > limits.max_bytes || charset::first_forbidden(text).is_some() {
        return None;
    }
    let scanned = subset::build(text, limits)?;
    let general = tree::build_general(text, limits);
    let agree = match (&scanned, &general) {
        (Ok(scanned), Ok(general)) => scanned == general,
        (Err(_), Err(_)) => true,
        _ => false,
    };
    (!agree).then(|| format!("subset scanner: {scanned:?}\ngeneral parser: {general:?}"))
}

/// The objects of a loaded stream: every document, with `kind: List` (and
/// `*List` kinds with `items`, as `kubectl get -o yaml` prints them) expanded
/// into their items. Null documents are skipped.
pub fn objects(documents: &[Node]) -> Vec<&Node> {
    let mut objects = Vec::with_capacity(documents.len());
    for document in documents {
        if matches!(document.value, Value::Null) {
            continue;
        }
        let is_list = document
            .get("kind")
            .and_then(Node::as_str)
            .is_some_and(|kind| kind.ends_with("List"));
        match document.get("items") {
            Some(items) if is_list && matches!(items.value, Value::Sequence(_)) => {
                objects.extend(
                    items
                        .items()
                        .iter()
                        .filter(|item| !matches!(item.value, Value::Null)),
                );
            }
            _ => objects.push(document),
        }
    }
    objects
}

/// The mark just after `text` when it starts at line 1, column 1. Line
/// breaks are counted as the parser counts them: CR LF, CR or LF.
fn mark_after(text: &str) -> Mark {
    let mut mark = Mark { line: 1, column: 1 };
    let mut after_cr = false;
    for character in text.chars() {
        match character {
            '\n' if after_cr => {}
            '\n' | '\r' => {
                mark.line = mark.line.saturating_add(1);
                mark.column = 1;
            }
            _ => mark.column = mark.column.saturating_add(1),
        }
        after_cr = character == '\r';
    }
    mark
}

#[cfg(test)]
mod tests;
