//! What a schema check reports: where, which rule, and a message.

use std::fmt;
use std::io;

use serde_json::Value;

/// How many characters of a value a message quotes before eliding the rest:
/// enough for any name Kubernetes accepts, little enough that a value of
/// megabytes does not turn into a message of megabytes.
const QUOTED_CHARS: usize = 64;

/// One step of the path from the object's root to a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSegment {
    /// A key of a mapping.
    Key(String),
    /// An index into a sequence.
    Index(usize),
}

/// Which schema rule a value breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViolationKind {
    /// A field the schema does not declare; `suggestion` is a declared
    /// field with a close spelling.
    UnknownField {
        /// The closest declared field, when one is close enough.
        suggestion: Option<String>,
    },
    /// A `required` field is absent (and has no default); the violation's
    /// path is the object that lacks it.
    MissingRequired {
        /// The field's name.
        field: String,
    },
    /// The value has the wrong JSON type (or is null where not nullable).
    WrongType,
    /// The value is not one of the `enum` values.
    NotInEnum,
    /// A string does not match the `pattern` (or a name/label syntax).
    PatternMismatch,
    /// A number, length, or count is outside its bounds.
    OutOfRange,
    /// Anything else: junctors, list uniqueness.
    Other,
}

/// A value that breaks the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where the value is, from the object's root.
    pub path: Vec<PathSegment>,
    /// Which rule it breaks.
    pub kind: ViolationKind,
    /// What is wrong, a lowercase fragment.
    pub message: String,
}

impl SchemaViolation {
    pub(crate) fn new(
        path: &[PathSegment],
        kind: ViolationKind,
        message: String,
    ) -> SchemaViolation {
        SchemaViolation {
            path: path.to_vec(),
            kind,
            message,
        }
    }
}

/// How many violations of one object are listed; the rest are counted in
/// one last violation. A real object breaks its schema in a handful of
/// places; a generated one may break it in millions, and listing each would
/// only multiply the input into memory and output.
pub(crate) const MAX_LISTED: usize = 1_000;

/// Violations as a check finds them: the first [`MAX_LISTED`] listed, every
/// one counted.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    listed: Vec<SchemaViolation>,
    found: usize,
}

impl Listing {
    /// Whether the list is full: what is found now is only counted, so a
    /// check can skip the work of describing it.
    pub(crate) fn full(&self) -> bool {
        self.listed.len() >= MAX_LISTED
    }

    /// Counts a violation, and lists it while there is room; `message` is
    /// only written for a violation that is listed.
    pub(crate) fn push(
        &mut self,
        path: &[PathSegment],
        kind: ViolationKind,
        message: impl FnOnce() -> String,
    ) {
        self.found += 1;
        if !self.full() {
            self.listed
                .push(SchemaViolation::new(path, kind, message()));
        }
    }

    /// Counts a violation without describing it (the list is full).
    pub(crate) fn count(&mut self) {
        self.found += 1;
    }

    /// Takes in what another check found.
    pub(crate) fn absorb(&mut self, other: Listing) {
        let unlisted = other.found - other.listed.len();
        self.found += unlisted;
        for violation in other.listed {
            self.found += 1;
            if !self.full() {
                self.listed.push(violation);
            }
        }
    }

    /// How many violations were found, listed or not.
    pub(crate) fn found(&self) -> usize {
        self.found
    }

    /// The violations listed.
    pub(crate) fn listed(&self) -> &[SchemaViolation] {
        &self.listed
    }

    /// The violations listed, then, when some were only counted, one at the
    /// object's root that says how many.
    pub(crate) fn into_violations(mut self) -> Vec<SchemaViolation> {
        let unlisted = self.found - self.listed.len();
        if unlisted > 0 {
            self.listed.push(SchemaViolation::new(
                &[],
                ViolationKind::Other,
                format!("{unlisted} more schema violations in this object, not listed"),
            ));
        }
        self.listed
    }
}

/// Writes a path the way `kubectl explain` and the API server do:
/// `spec.nicSelector.pfNames[0]`; a key that is not a plain identifier is
/// quoted (`metadata.labels["app.kubernetes.io/name"]`). The root is `.`.
pub fn display_path(path: &[PathSegment]) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let mut out = String::new();
    for segment in path {
        match segment {
            PathSegment::Index(index) => out.push_str(&format!("[{index}]")),
            PathSegment::Key(key) if is_plain_key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            PathSegment::Key(key) => out.push_str(&format!("[{}]", quoted(key))),
        }
    }
    out
}

/// A key written bare: short, and of letters, digits, `_` and `-` only.
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= QUOTED_CHARS
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `text` quoted for a message (`"name"`, control characters escaped), its
/// first [`QUOTED_CHARS`] characters only, then `…` when there is more.
pub(crate) fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{:?}…", text.get(..end).unwrap_or_default()),
        None => format!("{text:?}"),
    }
}

/// A value as compact JSON for a message, elided past [`QUOTED_CHARS`]
/// characters. Serialisation stops there, so a value of megabytes costs no
/// more than a short one.
pub(crate) fn compact(value: &Value) -> String {
    let mut out = Capped {
        text: Vec::new(),
        // Room for one character past the quoted ones, so the cut is seen.
        limit: (QUOTED_CHARS + 1) * 4,
    };
    // The only error is the cap being reached, which is what ends it early.
    let _ = serde_json::to_writer(&mut out, value);
    let text = String::from_utf8_lossy(&out.text);
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.into_owned(),
    }
}

/// A writer that takes at most `limit` bytes, then fails.
struct Capped {
    text: Vec<u8>,
    limit: usize,
}

impl io::Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = self.limit.saturating_sub(self.text.len());
        if room == 0 {
            return Err(io::Error::other("message length reached"));
        }
        let taken = bytes.get(..room).unwrap_or(bytes);
        self.text.extend_from_slice(taken);
        Ok(taken.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", display_path(&self.path), self.message)?;
        if let ViolationKind::UnknownField {
            suggestion: Some(suggestion),
        } = &self.kind
        {
            write!(f, " (did you mean {suggestion:?}?)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_kubectl() {
        let path = vec![
            PathSegment::Key("spec".into()),
            PathSegment::Key("pfNames".into()),
            PathSegment::Index(0),
        ];
        assert_eq!(display_path(&path), "spec.pfNames[0]");
        let path = vec![
            PathSegment::Key("metadata".into()),
            PathSegment::Key("labels".into()),
            PathSegment::Key("a.b/c".into()),
        ];
        assert_eq!(display_path(&path), r#"metadata.labels["a.b/c"]"#);
        assert_eq!(display_path(&[]), ".");
    }
}
