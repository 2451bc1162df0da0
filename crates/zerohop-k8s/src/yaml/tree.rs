//! Builds spanned node trees from the parser's event stream, enforcing the
//! depth and alias limits as it goes.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::mem::size_of;

use granit_parser::{
    Event, Marker, Options, Parser, ScalarStyle, ScanError, Span as ParserSpan, Tag,
};

use super::resolve::{resolve_plain, resolve_tagged};
use super::{Entry, Limits, LoadError, LoadErrorKind, Mark, Node, Span, Value};

/// The deepest nesting loaded whatever the limits say: trees are cloned,
/// converted, validated and dropped by recursion, and a thread's stack
/// (2 MiB for a spawned one) must hold that many levels.
const MAX_DEPTH: usize = 1_024;

/// Children from which an open collection gathers them in a vector of its
/// own rather than on the builder's shared stacks. A collection this large
/// would otherwise be written twice, onto the stack and then into its final
/// vector, and at the input limit that is hundreds of MiB of fresh pages
/// touched and copied for one mapping of two million keys; its own vector
/// grows in place instead (the allocator moves a large block's pages rather
/// than copying them) and is trimmed to its length when it closes.
const OWN_VECTOR_FROM: usize = 4_096;

/// A collection whose children are still being read.
enum Frame {
    Sequence {
        start: Mark,
        anchor: usize,
        /// Where its items begin in `Builder::items`.
        base: usize,
        /// Its items once it has [`OWN_VECTOR_FROM`] of them; empty
        /// (unallocated) before.
        own: Vec<Node>,
    },
    Mapping {
        start: Mark,
        anchor: usize,
        /// Where its entries begin in `Builder::entries`.
        base: usize,
        /// Its entries once it has [`OWN_VECTOR_FROM`] of them; empty
        /// (unallocated) before.
        own: Vec<Entry>,
        /// The key read, waiting for its value; `is_merge` for a plain `<<`.
        pending: Option<(String, Span, bool)>,
        /// The mappings brought in by `<<` merge keys, in order, applied at
        /// the end where the mapping does not set the key itself.
        merged: Vec<Vec<Entry>>,
    },
}

/// What a copy of a node costs: its nodes, and its bytes (the nodes
/// themselves plus the text of their keys and strings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Footprint {
    nodes: usize,
    bytes: usize,
}

/// An anchored node that an alias refers to, and what a copy of it costs.
struct Anchored {
    node: Node,
    footprint: Footprint,
}

/// Builds the nodes of a stream from its events, in order.
pub(super) struct Builder<'a> {
    limits: &'a Limits,
    stack: Vec<Frame>,
    /// The items of every open sequence, innermost last. Children are
    /// gathered here and moved into a vector of their final size when their
    /// collection closes: one allocation and one copy per collection,
    /// where a vector of its own would grow by doubling and then be
    /// trimmed, copying its children several times. A collection with
    /// [`OWN_VECTOR_FROM`] children moves them to a vector of its own.
    items: Vec<Node>,
    /// The entries of every open mapping, innermost last, gathered as
    /// `items` are.
    entries: Vec<Entry>,
    /// The anchors some alias refers to; no other anchored node is copied.
    /// `None` when that is not known ahead: every anchored node is copied.
    aliased: Option<HashSet<usize>>,
    anchors: HashMap<usize, Anchored>,
    documents: Vec<Node>,
    /// Nodes added by aliases so far, against `Limits::max_alias_nodes`.
    alias_nodes: usize,
    /// Bytes copied for anchors and aliases so far, against
    /// `Limits::max_bytes`.
    copied_bytes: usize,
    /// Nodes so far (mapping keys aside), against `Limits::max_nodes`.
    nodes: usize,
}

/// Parses `text` into one node per document: through the scanner of the
/// common subset when the whole stream lies within it, else through the
/// general parser (see [`super::subset`]).
pub(super) fn build(text: &str, limits: &Limits) -> Result<Vec<Node>, LoadError> {
    if let Some(loaded) = super::subset::build(text, limits) {
        return loaded;
    }
    build_general(text, limits)
}

/// Parses `text` into one node per document with the general parser.
pub(super) fn build_general(text: &str, limits: &Limits) -> Result<Vec<Node>, LoadError> {
    let mut builder = Builder::new(limits, Some(aliased_anchors(text, limits)?));
    let mut parser = parser(text);
    while let Some(event) = parser.next_event() {
        let (event, span) = event.map_err(|err| syntax_error(&err))?;
        builder.on_event(event, span)?;
    }
    Ok(builder.documents)
}

/// A parser for `text`. The parser gives up on a possible implicit key
/// after 1,024 characters (YAML's own bound on implicit keys) in flow
/// collections too, so it holds no more than that many characters' tokens
/// at a time: a parser that waits for the end of a flow collection that
/// might be a key (`[a, b]: c`) holds every token of a JSON document until
/// its last line, about a hundred bytes per byte of input. Its nesting
/// limits sit just past the loader's, which speaks first with a clearer
/// error; comments are not wanted. Indentation inside quoted scalars is
/// checked as goyaml (a libyaml port, behind `sigs.k8s.io/yaml` and
/// `kubectl`) checks it, that is not at all: the continuation lines of a
/// quoted scalar may sit left of its key (`config: '{` … `}'`, a common way
/// to write a CNI config), which YAML 1.2's strict reading refuses and the
/// API server's clients accept.
fn parser(text: &str) -> Parser<'_, granit_parser::StrInput<'_>> {
    let mut options = Options::default();
    options.emit_comments = false;
    options.strict_indentation = false;
    options.flow_nesting_limit = MAX_DEPTH + 1;
    options.block_nesting_limit = MAX_DEPTH + 1;
    Parser::new_from_str_with_options(text, options)
}

/// The anchors that some alias refers to. Knowing them up front spares a
/// copy of every anchored node that nothing refers to, which nested anchors
/// would otherwise multiply. A stream without both `&` and `*` has no alias
/// and is parsed once; any other is parsed twice, which is still linear.
///
/// This first pass stops early where the second is sure to fail before it:
/// past `max_alias_nodes` aliases (each adds at least one node), or past
/// four events per node allowed (a node takes at most four: its start and
/// end, then its key, or its document's start and end for a root). The
/// anchors it has not seen are then never reached.
fn aliased_anchors(text: &str, limits: &Limits) -> Result<HashSet<usize>, LoadError> {
    let mut aliased = HashSet::new();
    if !(text.contains('&') && text.contains('*')) {
        return Ok(aliased);
    }
    let most_events = limits.max_nodes().saturating_mul(4).saturating_add(2);
    let mut parser = parser(text);
    let (mut events, mut aliases) = (0usize, 0usize);
    while let Some(event) = parser.next_event() {
        let (event, _) = event.map_err(|err| syntax_error(&err))?;
        events += 1;
        if let Event::Alias(anchor) = event {
            aliases += 1;
            aliased.insert(anchor);
        }
        if events > most_events || aliases > limits.max_alias_nodes {
            break;
        }
    }
    Ok(aliased)
}

fn syntax_error(err: &ScanError) -> LoadError {
    LoadError {
        at: mark(*err.marker()),
        kind: LoadErrorKind::Syntax(err.info()),
    }
}

fn mark(marker: Marker) -> Mark {
    Mark {
        line: u32::try_from(marker.line()).unwrap_or(u32::MAX),
        column: u32::try_from(marker.col().saturating_add(1)).unwrap_or(u32::MAX),
    }
}

fn span(parser_span: ParserSpan) -> Span {
    Span {
        start: mark(parser_span.start),
        end: mark(parser_span.end),
    }
}

/// What a copy of `node` costs; recursion is bounded by the depth limit.
fn footprint(node: &Node) -> Footprint {
    let mut total = Footprint {
        nodes: 1,
        bytes: size_of::<Node>(),
    };
    let mut add = |child: Footprint, extra: usize| {
        total.nodes = total.nodes.saturating_add(child.nodes);
        total.bytes = total
            .bytes
            .saturating_add(child.bytes)
            .saturating_add(extra);
    };
    match &node.value {
        Value::String(text) => add(Footprint::default(), text.len()),
        Value::Sequence(items) => items.iter().for_each(|item| add(footprint(item), 0)),
        Value::Mapping(entries) => entries.iter().for_each(|entry| {
            let key = size_of::<Entry>() - size_of::<Node>() + entry.key.len();
            add(footprint(&entry.value), key);
        }),
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => {}
    }
    total
}

/// Adds `child` to an open collection whose children begin at `base` on
/// the `shared` stack, or to its `own` vector once it has one; moves them
/// there when they reach [`OWN_VECTOR_FROM`].
fn gather<T>(shared: &mut Vec<T>, own: &mut Vec<T>, base: usize, child: T) {
    if own.capacity() > 0 {
        own.push(child);
        return;
    }
    shared.push(child);
    if shared.len().saturating_sub(base) >= OWN_VECTOR_FROM {
        let mut children = Vec::with_capacity(2 * OWN_VECTOR_FROM);
        children.extend(shared.drain(base..));
        *own = children;
    }
}

/// The children of a closing collection, in a vector of exactly their
/// number: its own vector trimmed, or its range of the shared stack (a
/// drained range collects into one allocation of its length).
fn gathered<T>(shared: &mut Vec<T>, mut own: Vec<T>, base: usize) -> Vec<T> {
    if own.capacity() > 0 {
        own.shrink_to_fit();
        own
    } else {
        shared.drain(base..).collect()
    }
}

/// Applies `<<` merge keys to a mapping's own entries. A key the mapping
/// sets itself wins; among the merged mappings, the first one that sets a
/// key wins (the YAML merge-key rule; goyaml.v2 applies them backwards to
/// the same effect); within one merged mapping, its last value of a repeated
/// key wins, as when that mapping is read on its own. One hash set makes
/// this linear in the entries, however many there are.
fn merge(entries: &mut Vec<Entry>, sources: Vec<Vec<Entry>>) {
    let keep: Vec<Vec<bool>> = {
        let mut seen: HashSet<&str> = entries.iter().map(|entry| entry.key.as_str()).collect();
        sources
            .iter()
            .map(|source| {
                let mut keep = vec![false; source.len()];
                for (index, entry) in source.iter().enumerate().rev() {
                    if seen.insert(entry.key.as_str())
                        && let Some(slot) = keep.get_mut(index)
                    {
                        *slot = true;
                    }
                }
                keep
            })
            .collect()
    };
    for (source, keep) in sources.into_iter().zip(keep) {
        entries.extend(
            source
                .into_iter()
                .zip(keep)
                .filter_map(|(entry, keep)| keep.then_some(entry)),
        );
    }
}

impl<'a> Builder<'a> {
    /// A builder for a stream whose aliased anchors are `aliased`, when
    /// known.
    pub(super) fn new(limits: &'a Limits, aliased: Option<HashSet<usize>>) -> Builder<'a> {
        Builder {
            limits,
            stack: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
            aliased,
            anchors: HashMap::new(),
            documents: Vec::new(),
            alias_nodes: 0,
            copied_bytes: 0,
            nodes: 0,
        }
    }

    /// The documents built, once every event has been given.
    pub(super) fn into_documents(self) -> Vec<Node> {
        self.documents
    }

    fn on_event(&mut self, event: Event<'_>, at: ParserSpan) -> Result<(), LoadError> {
        let at = span(at);
        match event {
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(..)
            | Event::DocumentEnd => Ok(()),
            Event::Scalar(text, style, anchor, tag) => self.scalar(
                text,
                style,
                anchor,
                tag.as_deref().and_then(Tag::core_suffix),
                at,
            ),
            Event::Alias(anchor) => self.alias(anchor, at),
            Event::SequenceStart(_, anchor, _) => self.open_sequence(anchor, at),
            Event::MappingStart(_, anchor, _) => self.open_mapping(anchor, at),
            Event::SequenceEnd | Event::MappingEnd => self.close(at),
            // The parser may learn new events; one this loader does not know
            // could carry content, so it is refused rather than dropped.
            _ => Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::Syntax("unsupported YAML construct".to_owned()),
            }),
        }
    }

    /// A scalar: a key when its mapping waits for one, else a value. `tag`
    /// is the suffix of a core-schema tag (`int` for `!!int`).
    pub(super) fn scalar(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&str>,
        at: Span,
    ) -> Result<(), LoadError> {
        let is_key = self.expects_key();
        if !is_key {
            self.count(1, at)?;
        }
        let is_merge_key = is_key && style == ScalarStyle::Plain && text == "<<";
        // Keys keep their text: `y:` or `0644:` as a key names a field,
        // it is not a boolean or a number.
        let node = if is_key {
            Node {
                span: at,
                value: Value::String(text.into_owned()),
                yaml11: None,
            }
        } else if let Some(suffix) = tag {
            resolve_tagged(&text, suffix, at)
        } else if style == ScalarStyle::Plain {
            resolve_plain(text, at)
        } else {
            Node {
                span: at,
                value: Value::String(text.into_owned()),
                yaml11: None,
            }
        };
        self.finish(node, anchor, is_merge_key, at)
    }

    /// An alias of the node anchored as `anchor`: a copy of it.
    pub(super) fn alias(&mut self, anchor: usize, at: Span) -> Result<(), LoadError> {
        // Taken out while the copy is paid for, put back after.
        let Some(anchored) = self.anchors.remove(&anchor) else {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::UnknownAnchor,
            });
        };
        // Checked before the copy is made: a long scalar aliased many
        // times is refused before it takes the memory.
        let copy = self
            .spend_on_alias(anchored.footprint, at)
            .map(|()| anchored.node.clone());
        self.anchors.insert(anchor, anchored);
        self.finish(copy?, 0, false, at)
    }

    /// Opens a sequence that starts at `at.start`.
    pub(super) fn open_sequence(&mut self, anchor: usize, at: Span) -> Result<(), LoadError> {
        self.open(
            Frame::Sequence {
                start: at.start,
                anchor,
                base: self.items.len(),
                own: Vec::new(),
            },
            at,
        )
    }

    /// Opens a mapping that starts at `at.start`.
    pub(super) fn open_mapping(&mut self, anchor: usize, at: Span) -> Result<(), LoadError> {
        self.open(
            Frame::Mapping {
                start: at.start,
                anchor,
                base: self.entries.len(),
                own: Vec::new(),
                pending: None,
                merged: Vec::new(),
            },
            at,
        )
    }

    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Mapping { pending: None, .. })
        )
    }

    /// Counts nodes against the limit on nodes in a stream.
    fn count(&mut self, nodes: usize, at: Span) -> Result<(), LoadError> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > self.limits.max_nodes() {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::TooManyNodes(self.limits.max_nodes()),
            });
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame, at: Span) -> Result<(), LoadError> {
        self.count(1, at)?;
        let max_depth = self.limits.max_depth.min(MAX_DEPTH);
        if self.stack.len() >= max_depth {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::TooDeep(max_depth),
            });
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Charges the copy an alias makes against every limit it counts for.
    fn spend_on_alias(&mut self, footprint: Footprint, at: Span) -> Result<(), LoadError> {
        self.alias_nodes = self.alias_nodes.saturating_add(footprint.nodes);
        if self.alias_nodes > self.limits.max_alias_nodes {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::AliasBomb(self.limits.max_alias_nodes),
            });
        }
        self.charge(footprint, at)?;
        self.count(footprint.nodes, at)
    }

    /// Charges a copy against the byte budget for anchors and aliases.
    fn charge(&mut self, footprint: Footprint, at: Span) -> Result<(), LoadError> {
        self.copied_bytes = self.copied_bytes.saturating_add(footprint.bytes);
        if self.copied_bytes > self.limits.max_bytes {
            return Err(LoadError {
                at: at.start,
                kind: LoadErrorKind::AliasBytes(self.limits.max_bytes),
            });
        }
        Ok(())
    }

    /// Closes the innermost open collection, which ends at `at.end`.
    pub(super) fn close(&mut self, at: Span) -> Result<(), LoadError> {
        // A collection's children end in a vector of exactly their number:
        // a tree of small mappings holds no spare slots.
        let (node, anchor) = match self.stack.pop() {
            Some(Frame::Sequence {
                start,
                anchor,
                base,
                own,
            }) => (
                Node {
                    span: Span { start, end: at.end },
                    value: Value::Sequence(gathered(&mut self.items, own, base)),
                    yaml11: None,
                },
                anchor,
            ),
            Some(Frame::Mapping {
                start,
                anchor,
                base,
                own,
                merged,
                ..
            }) => {
                let mut entries = gathered(&mut self.entries, own, base);
                if !merged.is_empty() {
                    merge(&mut entries, merged);
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
        if anchor != 0
            && self
                .aliased
                .as_ref()
                .is_none_or(|aliased| aliased.contains(&anchor))
        {
            let footprint = footprint(&node);
            self.charge(footprint, at)?;
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    footprint,
                },
            );
        }
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Frame::Sequence { base, own, .. }) => gather(&mut self.items, own, *base, node),
            Some(Frame::Mapping {
                base,
                own,
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
                    Value::Mapping(more) => merged.push(more),
                    Value::Sequence(sources) => {
                        for source in sources {
                            if let Value::Mapping(more) = source.value {
                                merged.push(more);
                            }
                        }
                    }
                    _ => gather(
                        &mut self.entries,
                        own,
                        *base,
                        Entry {
                            key,
                            key_span,
                            value: node,
                        },
                    ),
                },
                Some((key, key_span, false)) => gather(
                    &mut self.entries,
                    own,
                    *base,
                    Entry {
                        key,
                        key_span,
                        value: node,
                    },
                ),
            },
        }
        Ok(())
    }
}
