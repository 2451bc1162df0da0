//! Builds spanned node trees from the parser's event stream, enforcing the
//! depth and alias-expansion limits as it goes.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span as ParserSpan};

use super::resolve::{resolve_plain, resolve_tagged};
use super::{Entry, Limits, LoadError, LoadErrorKind, Mark, Node, Span, Value};

/// A collection whose children are still being read.
enum Frame {
    Sequence {
        start: Mark,
        anchor: usize,
        items: Vec<Node>,
    },
    Mapping {
        start: Mark,
        anchor: usize,
        entries: Vec<Entry>,
        /// The key read, waiting for its value; `is_merge` for a plain `<<`.
        pending: Option<(String, Span, bool)>,
        /// Entries brought in by `<<` merge keys, applied at the end where
        /// the mapping does not set the key itself.
        merged: Vec<Entry>,
    },
}

/// An anchored node and how many nodes an alias to it adds.
struct Anchored {
    node: Node,
    size: usize,
}

struct Builder<'a> {
    limits: &'a Limits,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    documents: Vec<Node>,
    alias_nodes: usize,
}

/// Parses `text` into one node per document.
pub(super) fn build(text: &str, limits: &Limits) -> Result<Vec<Node>, LoadError> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        limits,
        stack: Vec::new(),
        anchors: HashMap::new(),
        documents: Vec::new(),
        alias_nodes: 0,
    };
    while let Some(event) = parser.next_event() {
        let (event, span) = event.map_err(syntax_error)?;
        builder.on_event(event, span)?;
    }
    Ok(builder.documents)
}

fn syntax_error(err: ScanError) -> LoadError {
    LoadError {
        at: mark(err.marker().line(), err.marker().col()),
        kind: LoadErrorKind::Syntax(err.info().to_owned()),
    }
}

fn mark(line: usize, col: usize) -> Mark {
    Mark {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(col.saturating_add(1)).unwrap_or(u32::MAX),
    }
}

fn span(parser_span: ParserSpan) -> Span {
    Span {
        start: mark(parser_span.start.line(), parser_span.start.col()),
        end: mark(parser_span.end.line(), parser_span.end.col()),
    }
}

/// Number of nodes in a tree; recursion is bounded by the depth limit.
fn size(node: &Node) -> usize {
    match &node.value {
        Value::Sequence(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Mapping(entries) => {
            1 + entries
                .iter()
                .map(|entry| size(&entry.value))
                .sum::<usize>()
        }
        _ => 1,
    }
}

impl Builder<'_> {
    fn on_event(&mut self, event: Event<'_>, at: ParserSpan) -> Result<(), LoadError> {
        let at = span(at);
        match event {
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => Ok(()),
            Event::Scalar(text, style, anchor, tag) => {
                // Keys keep their text: `y:` or `0644:` as a key names a field,
                // it is not a boolean or a number.
                let node = if self.expects_key() {
                    Node {
                        span: at,
                        value: Value::String(text.clone().into_owned()),
                        yaml11: None,
                    }
                } else if let Some(tag) = tag.filter(|tag| tag.is_yaml_core_schema()) {
                    resolve_tagged(&text, &tag.suffix, at)
                } else if style == ScalarStyle::Plain {
                    resolve_plain(&text, at)
                } else {
                    Node {
                        span: at,
                        value: Value::String(text.into_owned()),
                        yaml11: None,
                    }
                };
                let is_merge_key = style == ScalarStyle::Plain
                    && matches!(&node.value, Value::String(key) if key == "<<");
                self.finish(node, anchor, is_merge_key, at)
            }
            Event::Alias(anchor) => {
                let Some(anchored) = self.anchors.get(&anchor) else {
                    return Err(LoadError {
                        at: at.start,
                        kind: LoadErrorKind::UnknownAnchor,
                    });
                };
                self.alias_nodes = self.alias_nodes.saturating_add(anchored.size);
                if self.alias_nodes > self.limits.max_alias_nodes {
                    return Err(LoadError {
                        at: at.start,
                        kind: LoadErrorKind::AliasBomb(self.limits.max_alias_nodes),
                    });
                }
                let node = anchored.node.clone();
                self.finish(node, 0, false, at)
            }
            Event::SequenceStart(anchor, _) => self.open(
                Frame::Sequence {
                    start: at.start,
                    anchor,
                    items: Vec::new(),
                },
                at,
            ),
            Event::MappingStart(anchor, _) => self.open(
                Frame::Mapping {
                    start: at.start,
                    anchor,
                    entries: Vec::new(),
                    pending: None,
                    merged: Vec::new(),
                },
                at,
            ),
            Event::SequenceEnd | Event::MappingEnd => self.close(at),
        }
    }

    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Mapping { pending: None, .. })
        )
    }

    fn open(&mut self, frame: Frame, at: Span) -> Result<(), LoadError> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::TooDeep(self.limits.max_depth),
            });
        }
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self, at: Span) -> Result<(), LoadError> {
        let (node, anchor) = match self.stack.pop() {
            Some(Frame::Sequence {
                start,
                anchor,
                items,
            }) => (
                Node {
                    span: Span { start, end: at.end },
                    value: Value::Sequence(items),
                    yaml11: None,
                },
                anchor,
            ),
            Some(Frame::Mapping {
                start,
                anchor,
                mut entries,
                merged,
                ..
            }) => {
                for entry in merged {
                    if !entries.iter().any(|own| own.key == entry.key) {
                        entries.push(entry);
                    }
                }
                (
                    Node {
                        span: Span { start, end: at.end },
                        value: Value::Mapping(entries),
                        yaml11: None,
                    },
                    anchor,
                )
            }
            // The parser balances start and end events; an unbalanced end
            // would be a parser bug, reported as a syntax error.
            None => {
                return Err(LoadError {
                    at: at.start,
                    kind: LoadErrorKind::Syntax("unbalanced end of collection".to_owned()),
                });
            }
        };
        self.finish(node, anchor, false, at)
    }

    /// Places a completed node in its parent, or as a document.
    fn finish(
        &mut self,
        node: Node,
        anchor: usize,
        is_merge_key: bool,
        at: Span,
    ) -> Result<(), LoadError> {
        if anchor != 0 {
            let size = size(&node);
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    size,
                },
            );
        }
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Frame::Sequence { items, .. }) => items.push(node),
            Some(Frame::Mapping {
                entries,
                pending,
                merged,
                ..
            }) => match pending.take() {
                None => {
                    let key = match node.value {
                        Value::String(text) => text,
                        Value::Null => String::new(),
                        Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                            node.scalar_text().unwrap_or_default()
                        }
                        Value::Sequence(_) | Value::Mapping(_) => {
                            return Err(LoadError {
                                at: at.start,
                                kind: LoadErrorKind::ComplexKey,
                            });
                        }
                    };
                    *pending = Some((key, node.span, is_merge_key));
                }
                Some((key, key_span, true)) => match node.value {
                    Value::Mapping(more) => merged.extend(more),
                    Value::Sequence(sources) => {
                        for source in sources {
                            if let Value::Mapping(more) = source.value {
                                merged.extend(more);
                            }
                        }
                    }
                    _ => entries.push(Entry {
                        key,
                        key_span,
                        value: node,
                    }),
                },
                Some((key, key_span, false)) => entries.push(Entry {
                    key,
                    key_span,
                    value: node,
                }),
            },
        }
        Ok(())
    }
}
