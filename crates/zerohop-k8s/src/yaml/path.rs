//! From a node tree to JSON, and from a JSON path back to a source span.

use serde_json::{Map, Number, Value as Json};

use super::{Entry, Node, Span, Value};

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathStep<'a> {
    /// A mapping key.
    Key(&'a str),
    /// A sequence index, 0-based.
    Index(usize),
}

/// Where a path leads in a document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found<'a> {
    /// The deepest node the path reaches.
    pub node: &'a Node,
    /// The span of the key naming that node, when the last step taken was
    /// a key (for unknown fields, the key is the thing to point at).
    pub key_span: Option<Span>,
    /// How many steps of the path were taken; less than the path's length
    /// when the path leads to something that is not there (a missing
    /// required field, say).
    pub depth: usize,
}

impl Found<'_> {
    /// The best span to point at: the key when there is one, else the node.
    pub fn span(&self) -> Span {
        self.key_span.unwrap_or(self.node.span)
    }
}

impl Node {
    /// Follows `path` as far as it goes. Each key is looked up by scanning
    /// its mapping; for many lookups into one large document, use a
    /// [`Finder`](super::Finder).
    pub fn find<'a, 'p>(&'a self, path: impl IntoIterator<Item = PathStep<'p>>) -> Found<'a> {
        follow(self, path, Node::entry)
    }

    /// The node as JSON, the way the API server would decode it. A repeated
    /// key keeps its last value; a NaN or infinite float becomes its text,
    /// since JSON has no such numbers.
    pub fn to_json(&self) -> Json {
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(value) => Json::Bool(*value),
            Value::Int(number) => Json::Number((*number).into()),
            Value::Float(number) => Number::from_f64(*number)
                .map_or_else(|| Json::String(number.to_string()), Json::Number),
            Value::String(text) => Json::String(text.clone()),
            Value::Sequence(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Value::Mapping(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for entry in entries {
                    map.insert(entry.key.clone(), entry.value.to_json());
                }
                Json::Object(map)
            }
        }
    }
}

/// Follows `path` from `root` as far as it goes, looking keys up with
/// `entry` (a scan, or an index).
pub(super) fn follow<'a, 'p>(
    root: &'a Node,
    path: impl IntoIterator<Item = PathStep<'p>>,
    mut entry: impl FnMut(&'a Node, &str) -> Option<&'a Entry>,
) -> Found<'a> {
    let mut found = Found {
        node: root,
        key_span: None,
        depth: 0,
    };
    for step in path {
        let next = match step {
            PathStep::Key(key) => {
                entry(found.node, key).map(|entry| (&entry.value, Some(entry.key_span)))
            }
            PathStep::Index(index) => found.node.items().get(index).map(|item| (item, None)),
        };
        match next {
            Some((node, key_span)) => {
                found = Found {
                    node,
                    key_span,
                    depth: found.depth + 1,
                };
            }
            None => break,
        }
    }
    found
}
