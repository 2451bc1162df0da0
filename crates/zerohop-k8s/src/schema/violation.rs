//! What a schema check reports: where, which rule, and a message.

use std::fmt;

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
    /// A `required` field is absent (and has no default).
    MissingRequired,
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
            PathSegment::Key(key) => out.push_str(&format!("[{key:?}]")),
        }
    }
    out
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
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
