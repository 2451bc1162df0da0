//! The text the parser reads, and the way back from its positions to the
//! input's.
//!
//! The parser (like libyaml) keeps a flow collection that might turn out to
//! be an implicit key, `[a, b]: c`, as a possible key until the collection
//! ends, and holds every token scanned meanwhile: a JSON document, one flow
//! mapping from its first line to its last, would be held whole as tokens,
//! about a hundred bytes of memory per byte of input. After a document start
//! marker no implicit key may begin on the same line, so the parser reads the
//! collection as it goes. A stream whose first content is a flow collection
//! (every JSON manifest) is therefore read with `--- ` put in front of that
//! line, and positions on that line are moved back by its width. A root flow
//! collection used as an implicit key is not something Kubernetes can read
//! (its keys are strings): that now fails as a syntax error rather than as a
//! complex key.

use std::borrow::Cow;

use saphyr_parser::{Marker, ScanError, Span as ParserSpan};

use super::{LoadError, LoadErrorKind, Mark, Span};

/// What is put before a root flow collection.
const DOCUMENT_START: &str = "--- ";

/// The parser's input: the text, with a document start marker before the
/// line of a root flow collection.
pub(super) struct Source<'t> {
    text: Cow<'t, str>,
    /// The 1-based line that starts with [`DOCUMENT_START`] not in the input.
    marked_line: Option<usize>,
}

impl<'t> Source<'t> {
    /// The parser's input for `text`.
    pub(super) fn new(text: &'t str) -> Source<'t> {
        match root_flow_line(text) {
            Some((offset, line)) => {
                let mut marked = String::with_capacity(text.len() + DOCUMENT_START.len());
                marked.push_str(text.get(..offset).unwrap_or_default());
                marked.push_str(DOCUMENT_START);
                marked.push_str(text.get(offset..).unwrap_or_default());
                Source {
                    text: Cow::Owned(marked),
                    marked_line: Some(line),
                }
            }
            None => Source {
                text: Cow::Borrowed(text),
                marked_line: None,
            },
        }
    }

    /// The text the parser reads.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// A parser position as a position in the input.
    pub(super) fn mark(&self, marker: Marker) -> Mark {
        let column = if self.marked_line == Some(marker.line()) {
            marker.col().saturating_sub(DOCUMENT_START.len())
        } else {
            marker.col()
        };
        Mark {
            line: u32::try_from(marker.line()).unwrap_or(u32::MAX),
            column: u32::try_from(column.saturating_add(1)).unwrap_or(u32::MAX),
        }
    }

    /// A parser span as a span of the input.
    pub(super) fn span(&self, span: ParserSpan) -> Span {
        Span {
            start: self.mark(span.start),
            end: self.mark(span.end),
        }
    }

    /// A parser error as a load error at its position in the input.
    pub(super) fn syntax_error(&self, err: &ScanError) -> LoadError {
        LoadError {
            at: self.mark(*err.marker()),
            kind: LoadErrorKind::Syntax(err.info().to_owned()),
        }
    }
}

/// The byte offset and 1-based number of the line holding the stream's first
/// content, when that content is a flow collection (`{` or `[`) and only
/// blank lines and comments come before it. Streams with a byte order mark,
/// a directive, or a lone CR line break are left as they are.
fn root_flow_line(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        if content.contains('\r') {
            return None;
        }
        let first = content.trim_start_matches(' ');
        match first.chars().next() {
            None | Some('#') => offset += line.len(),
            Some('{' | '[') => return Some((offset, index + 1)),
            Some(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_flow_collection_is_marked() {
        assert_eq!(root_flow_line("{\"a\": 1}\n"), Some((0, 1)));
        assert_eq!(root_flow_line("# c\n\n  [1, 2]\n"), Some((5, 3)));
        assert_eq!(root_flow_line("a: [1]\n"), None);
        assert_eq!(root_flow_line("--- {a: 1}\n"), None);
        assert_eq!(root_flow_line("\u{FEFF}{}"), None);
        assert_eq!(root_flow_line("# c\r{}"), None);
        assert_eq!(root_flow_line("\n\n"), None);
    }
}
