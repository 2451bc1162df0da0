//! A scanner for the subset of YAML that manifests are written in, several
//! times faster than the general parser on the same text.
//!
//! The subset: block mappings and sequences (a sequence indented under its
//! key or not, a mapping compact after `- `), plain and quoted scalars on one
//! line, flow collections of those that
//! close on their line, anchors and aliases of values, core-schema tags of
//! scalars (`!!str`), comments, blank lines, and `---` and `...` alone on
//! their line. At anything else (other tags, block scalars, anchored keys,
//! scalars over several lines, escapes, directives, explicit keys, tabs, CR
//! line breaks) and at any syntax error the scan stops and the general
//! parser loads the whole stream, so an input outside the subset reads
//! exactly as before and syntax errors come from one place. A limit on
//! nodes or nesting passed inside the subset is reported by the scanner, so
//! that a stream refused at the limit is not read twice: the builder counts
//! the same events either way, and the parser refuses the stream too, at
//! the same node, or at a syntax error a little further on that it reads
//! before it hands over that node (it looks up to 1,024 characters ahead
//! for a possible key).
//!
//! The scanner hands the tree builder the events the general parser would,
//! with the same spans (which the parser's own conventions fix: a block
//! collection ends where the next token starts, an empty value sits on its
//! key's colon). `tests::subset` holds the two to the same trees on every
//! YAML file of the reference data and on generated streams, and checks that
//! the scanner never accepts what the parser refuses; so does the
//! `yaml_subset` fuzz target.
//!
//! Why it is faster: the general parser moves every character through a
//! queue of tokens and a state machine that must allow for every construct
//! above; this one reads a line at a time and finds the few bytes that
//! matter in it (`:`, `#`, quotes) with `memchr`.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;

use granit_parser::ScalarStyle;
use memchr::{memchr, memchr2};

use super::tree::Builder;
use super::{Limits, LoadError, LoadErrorKind, Mark, Node, Span};

/// The core schema's types, which a `!!` tag names; another `!!` tag is
/// kept as no type, as the parser keeps it (`YAML_CORE_SCHEMA_SUFFIXES` in
/// granit-parser 2.2.0's `src/parser.rs`).
const CORE_TYPES: [&str; 7] = ["bool", "float", "int", "map", "null", "seq", "str"];

/// Longest key read here: YAML bounds an implicit key at 1,024 characters,
/// and the parser refuses a longer one.
const MAX_KEY_BYTES: usize = 1_024;

/// Loads `text` when it lies within the subset (or refuses it at a limit),
/// else `None`: the general parser then decides.
pub(super) fn build(text: &str, limits: &Limits) -> Option<Result<Vec<Node>, LoadError>> {
    if memchr2(b'\t', b'\r', text.as_bytes()).is_some() || text.starts_with('\u{feff}') {
        return None;
    }
    let mut scanner = Scanner {
        // Which anchors are aliased is not known ahead: each anchored node
        // is kept for a copy. Anchors are few in manifests; where their
        // copies would pass the byte limit, the scan stops and the parser,
        // which keeps only the aliased ones, loads the stream.
        builder: Builder::new(limits, None),
        anchors: HashMap::new(),
        defined: 0,
        open: Vec::new(),
        pending: None,
        document: Document::Closed,
    };
    match scanner.stream(text) {
        Ok(()) => Some(Ok(scanner.builder.into_documents())),
        Err(Stop::Limit(error)) => Some(Err(error)),
        Err(Outside) => None,
    }
}

/// Why the scan stopped.
enum Stop {
    /// The stream leaves the subset here, or is not valid YAML: the general
    /// parser takes it.
    Outside,
    /// A limit on nodes or nesting is passed within the subset.
    Limit(LoadError),
}

use Stop::Outside;

impl From<LoadError> for Stop {
    fn from(error: LoadError) -> Stop {
        match error.kind {
            LoadErrorKind::TooManyNodes(_) | LoadErrorKind::TooDeep(_) => Stop::Limit(error),
            _ => Outside,
        }
    }
}

type Scan<T = ()> = Result<T, Stop>;

/// One line of the stream, without its line break.
struct Line<'a> {
    text: &'a str,
    /// 1-based.
    number: u32,
    ascii: bool,
    /// On a line that is not ASCII, the last byte whose column was counted
    /// and that column: marks are asked for left to right, and counting
    /// each from the start of the line would make a long line of many
    /// nodes quadratic.
    counted: Cell<(usize, usize)>,
}

impl Line<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The mark of byte `at` of the line, its column counted in characters
    /// as the parser counts it.
    fn mark(&self, at: usize) -> Mark {
        let column = if self.ascii {
            at
        } else {
            let (mut from, mut column) = self.counted.get();
            if at < from {
                (from, column) = (0, 0);
            }
            column += self
                .text
                .get(from..at)
                .map_or(at - from, |between| between.chars().count());
            self.counted.set((at, column));
            column
        };
        Mark {
            line: self.number,
            column: u32::try_from(column.saturating_add(1)).unwrap_or(u32::MAX),
        }
    }

    /// The empty span at byte `at`.
    fn point(&self, at: usize) -> Span {
        let mark = self.mark(at);
        Span {
            start: mark,
            end: mark,
        }
    }

    /// The span of bytes `start..end`.
    fn span(&self, start: usize, end: usize) -> Span {
        Span {
            start: self.mark(start),
            end: self.mark(end),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mapping,
    Sequence,
}

/// A block collection still open, with the column of its keys or dashes.
struct Open {
    indent: usize,
    kind: Kind,
    /// A sequence whose dashes sit in its key's column (`key:` then `- a`
    /// below it): the next key in that column ends it.
    indentless: bool,
}

/// A value that a line left to the next ones: a collection below it, or
/// null.
#[derive(Clone, Copy)]
enum Pending {
    /// `key:` and nothing after it (or an anchor), in a mapping at
    /// `indent`; a null value sits on the colon (or past the anchor), at
    /// `at`.
    Value {
        indent: usize,
        at: Mark,
        anchor: usize,
    },
    /// `-` and nothing after it (or an anchor), at column `indent`; a null
    /// item sits past the dash and its spaces, or past the comment after
    /// them, or past the anchor, at `at`.
    Item {
        indent: usize,
        at: Mark,
        anchor: usize,
    },
}

enum Document {
    Closed,
    Open {
        /// Whether its root node has begun.
        root: bool,
        /// Where its null root would sit when nothing follows `---`.
        empty_at: Option<Mark>,
    },
}

/// One scalar as written: its text, style and byte range on its line.
struct Scalar<'a> {
    text: Cow<'a, str>,
    style: ScalarStyle,
    start: usize,
    end: usize,
}

/// What a node written at some column of a line is.
enum Start<'a> {
    /// A key, whose colon is at the given byte.
    Key(Scalar<'a>, usize),
    /// A scalar.
    Scalar(Scalar<'a>),
    /// A flow collection.
    Flow,
}

struct Scanner<'l> {
    builder: Builder<'l>,
    /// Each anchor name of the open document with the number of its latest
    /// definition: anchors are numbered from 1 in order, a name defined
    /// again getting a new number.
    anchors: HashMap<String, usize>,
    /// Anchors defined so far.
    defined: usize,
    open: Vec<Open>,
    pending: Option<Pending>,
    document: Document,
}

impl Scanner<'_> {
    fn stream(&mut self, text: &str) -> Scan {
        let bytes = text.as_bytes();
        let (mut start, mut number) = (0, 0u32);
        let mut end = Mark { line: 1, column: 1 };
        while start < bytes.len() {
            number = number.checked_add(1).ok_or(Outside)?;
            let (stop, next) = match memchr(b'\n', bytes.get(start..).unwrap_or_default()) {
                Some(length) => (start + length, start + length + 1),
                None => (bytes.len(), bytes.len()),
            };
            let text = text.get(start..stop).ok_or(Outside)?;
            let line = Line {
                text,
                number,
                ascii: text.is_ascii(),
                counted: Cell::new((0, 0)),
            };
            // The parser takes these for line breaks or a byte-order mark.
            if !line.ascii
                && text
                    .chars()
                    .any(|c| matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}'))
            {
                return Err(Outside);
            }
            self.line(&line)?;
            // Where the stream ends, should this be its last line.
            end = if next > stop {
                Mark {
                    line: number.saturating_add(1),
                    column: 1,
                }
            } else {
                line.mark(text.len())
            };
            start = next;
        }
        self.end_document(end)
    }

    fn line(&mut self, line: &Line<'_>) -> Scan {
        let bytes = line.bytes();
        let indent = spaces(bytes, 0);
        let Some(&first) = bytes.get(indent) else {
            return Ok(());
        };
        if first == b'#' {
            return Ok(());
        }
        if indent == 0 && (bytes.starts_with(b"---") || bytes.starts_with(b"...")) {
            if bytes.len() != 3 || (first == b'.' && matches!(self.document, Document::Closed)) {
                return Err(Outside);
            }
            self.end_document(line.mark(0))?;
            if first == b'-' {
                self.document = Document::Open {
                    root: false,
                    empty_at: Some(line.mark(3)),
                };
            }
            return Ok(());
        }
        if matches!(self.document, Document::Closed) {
            self.document = Document::Open {
                root: false,
                empty_at: None,
            };
        }
        self.content(line, indent)
    }

    /// Ends the open document, if any, at `at`.
    fn end_document(&mut self, at: Mark) -> Scan {
        let Document::Open { root, empty_at } = self.document else {
            return Ok(());
        };
        self.settle()?;
        while !self.open.is_empty() {
            self.close(at)?;
        }
        if !root {
            self.null(empty_at.ok_or(Outside)?, 0)?;
        }
        // Anchors are the document's own.
        self.anchors.clear();
        self.document = Document::Closed;
        Ok(())
    }

    /// A line with content at column `indent`.
    fn content(&mut self, line: &Line<'_>, indent: usize) -> Scan {
        let bytes = line.bytes();
        let dash = is_dash(bytes.get(indent..).unwrap_or_default());
        match self.pending.take() {
            Some(Pending::Value {
                indent: key,
                at,
                anchor,
            }) => {
                if dash && indent >= key {
                    // Dashes in the key's own column start a sequence
                    // there, which the parser starts past the first dash.
                    let start = if indent == key {
                        line.point(past_dash(bytes, indent))
                    } else {
                        line.point(indent)
                    };
                    self.open_block(Kind::Sequence, indent, indent == key, start, anchor)?;
                    return self.item(line, indent);
                }
                if indent > key {
                    return self.mapping(line, indent, anchor);
                }
                self.null(at, anchor)?;
            }
            Some(Pending::Item {
                indent: dash_at,
                at,
                anchor,
            }) => {
                if indent > dash_at {
                    if dash {
                        self.open_block(Kind::Sequence, indent, false, line.point(indent), anchor)?;
                        return self.item(line, indent);
                    }
                    return self.mapping(line, indent, anchor);
                }
                self.null(at, anchor)?;
            }
            None => {}
        }
        // Close what this line's indentation ends.
        let at = line.mark(indent);
        while let Some(top) = self.open.last() {
            if top.indent > indent || (top.indent == indent && top.indentless && !dash) {
                self.close(at)?;
            } else {
                break;
            }
        }
        match self.open.last() {
            None => {
                let Document::Open { root, .. } = &mut self.document else {
                    return Err(Outside);
                };
                if *root {
                    return Err(Outside);
                }
                *root = true;
                if dash {
                    self.open_block(Kind::Sequence, indent, false, line.point(indent), 0)?;
                    self.item(line, indent)
                } else {
                    self.mapping(line, indent, 0)
                }
            }
            Some(top) if top.indent != indent => Err(Outside),
            Some(top) if top.kind == Kind::Sequence && dash => self.item(line, indent),
            Some(top) if top.kind == Kind::Mapping && !dash => self.key(line, indent),
            Some(_) => Err(Outside),
        }
    }

    /// Opens a block mapping whose first key is at byte `at`, and reads it.
    fn mapping(&mut self, line: &Line<'_>, at: usize, anchor: usize) -> Scan {
        self.open_block(Kind::Mapping, at, false, line.point(at), anchor)?;
        self.key(line, at)
    }

    /// A `key: …` at byte `at`, in the mapping open at that column.
    fn key(&mut self, line: &Line<'_>, at: usize) -> Scan {
        let Start::Key(key, colon) = start(line, at)? else {
            return Err(Outside);
        };
        self.emit(line, key, 0)?;
        self.after_key(line, at, colon)
    }

    /// What follows the colon of a key at column `indent`.
    fn after_key(&mut self, line: &Line<'_>, indent: usize, colon: usize) -> Scan {
        let bytes = line.bytes();
        let at = spaces(bytes, colon + 1);
        match bytes.get(at) {
            None | Some(b'#') => {
                self.pending = Some(Pending::Value {
                    indent,
                    at: line.mark(colon),
                    anchor: 0,
                });
                Ok(())
            }
            Some(b'&') => {
                let (anchor, end) = self.anchor(line, at)?;
                if end == bytes.len() {
                    self.pending = Some(Pending::Value {
                        indent,
                        at: line.mark(end),
                        anchor,
                    });
                    return Ok(());
                }
                self.inline(line, spaces(bytes, end), anchor)
            }
            Some(b'!') => self.tagged(line, at),
            Some(_) => self.inline(line, at, 0),
        }
    }

    /// A sequence item whose dash is at byte `dash`.
    fn item(&mut self, line: &Line<'_>, dash: usize) -> Scan {
        let bytes = line.bytes();
        let at = spaces(bytes, dash + 1);
        match bytes.get(at) {
            None | Some(b'#') => {
                self.pending = Some(Pending::Item {
                    indent: dash,
                    at: line.mark(past_dash(bytes, dash)),
                    anchor: 0,
                });
                Ok(())
            }
            Some(_) if is_dash(bytes.get(at..).unwrap_or_default()) => Err(Outside),
            Some(b'&') => {
                let (anchor, end) = self.anchor(line, at)?;
                if end == bytes.len() {
                    self.pending = Some(Pending::Item {
                        indent: dash,
                        at: line.mark(end),
                        anchor,
                    });
                    return Ok(());
                }
                self.inline(line, spaces(bytes, end), anchor)
            }
            Some(b'*') => self.inline(line, at, 0),
            Some(b'!') => self.tagged(line, at),
            Some(_) => match start(line, at)? {
                Start::Key(key, colon) => {
                    self.open_block(Kind::Mapping, at, false, line.point(at), 0)?;
                    self.emit(line, key, 0)?;
                    self.after_key(line, at, colon)
                }
                Start::Scalar(scalar) => {
                    let end = scalar.end;
                    self.emit(line, scalar, 0)?;
                    line_ends(bytes, end)
                }
                Start::Flow => {
                    let end = self.flow(line, at, 0)?;
                    line_ends(bytes, end)
                }
            },
        }
    }

    /// A value that ends its line, at byte `at`: a scalar, a flow
    /// collection or an alias, anchored as `anchor` (0 for none).
    fn inline(&mut self, line: &Line<'_>, at: usize, anchor: usize) -> Scan {
        let bytes = line.bytes();
        let end = match bytes.get(at) {
            Some(b'*') if anchor == 0 => self.alias(line, at)?,
            _ => match start(line, at)? {
                Start::Key(..) => return Err(Outside),
                Start::Scalar(scalar) => {
                    let end = scalar.end;
                    self.emit(line, scalar, anchor)?;
                    end
                }
                Start::Flow => self.flow(line, at, anchor)?,
            },
        };
        line_ends(bytes, end)
    }

    /// A scalar that ends its line, with the tag written at byte `at`.
    fn tagged(&mut self, line: &Line<'_>, at: usize) -> Scan {
        let bytes = line.bytes();
        let (tag, value) = tag(bytes, at)?;
        let Start::Scalar(scalar) = start(line, value)? else {
            return Err(Outside);
        };
        let end = scalar.end;
        self.emit_tagged(line, scalar, 0, tag)?;
        line_ends(bytes, end)
    }

    /// Defines the anchor written at byte `at` (`&name`); its number and
    /// the byte after its name, which must end the line or be a space.
    fn anchor(&mut self, line: &Line<'_>, at: usize) -> Scan<(usize, usize)> {
        let bytes = line.bytes();
        let end = name_end(bytes, at);
        if !matches!(bytes.get(end), None | Some(b' ')) {
            return Err(Outside);
        }
        let name = line.text.get(at + 1..end).ok_or(Outside)?;
        if name.is_empty() {
            return Err(Outside);
        }
        self.defined += 1;
        self.anchors.insert(name.to_owned(), self.defined);
        Ok((self.defined, end))
    }

    /// The alias written at byte `at` (`*name`); the byte after it.
    fn alias(&mut self, line: &Line<'_>, at: usize) -> Scan<usize> {
        let end = name_end(line.bytes(), at);
        let name = line.text.get(at + 1..end).ok_or(Outside)?;
        // An unknown name is the parser's error to report.
        let anchor = *self.anchors.get(name).ok_or(Outside)?;
        self.builder.alias(anchor, line.span(at, end))?;
        Ok(end)
    }

    /// A flow collection opening at byte `open`, anchored as `anchor`;
    /// returns the byte after it.
    fn flow(&mut self, line: &Line<'_>, open: usize, anchor: usize) -> Scan<usize> {
        let bytes = line.bytes();
        let mapping = bytes.get(open) == Some(&b'{');
        let close = if mapping { b'}' } else { b']' };
        let opening = line.span(open, open + 1);
        if mapping {
            self.builder.open_mapping(anchor, opening)?;
        } else {
            self.builder.open_sequence(anchor, opening)?;
        }
        let mut at = spaces(bytes, open + 1);
        if bytes.get(at) == Some(&close) {
            self.builder.close(line.span(at, at + 1))?;
            return Ok(at + 1);
        }
        loop {
            if mapping {
                let key = flow_scalar(line, at)?;
                let colon = key.end;
                if bytes.get(colon) != Some(&b':') || bytes.get(colon + 1) != Some(&b' ') {
                    return Err(Outside);
                }
                self.emit(line, key, 0)?;
                at = spaces(bytes, colon + 1);
            }
            let mut anchor = 0;
            if bytes.get(at) == Some(&b'&') {
                let end;
                (anchor, end) = self.anchor(line, at)?;
                at = spaces(bytes, end);
            }
            at = match bytes.get(at) {
                Some(b'{' | b'[') => self.flow(line, at, anchor)?,
                Some(b'*') if anchor == 0 => self.alias(line, at)?,
                Some(b'!') if anchor == 0 => {
                    let (tag, start) = tag(bytes, at)?;
                    let value = flow_scalar(line, start)?;
                    let end = value.end;
                    self.emit_tagged(line, value, 0, tag)?;
                    end
                }
                _ => {
                    let value = flow_scalar(line, at)?;
                    let end = value.end;
                    self.emit(line, value, anchor)?;
                    end
                }
            };
            at = spaces(bytes, at);
            match bytes.get(at) {
                Some(b',') => {
                    at = spaces(bytes, at + 1);
                    // A trailing comma is left to the parser.
                    if bytes.get(at) == Some(&close) {
                        return Err(Outside);
                    }
                }
                Some(&byte) if byte == close => {
                    self.builder.close(line.span(at, at + 1))?;
                    return Ok(at + 1);
                }
                _ => return Err(Outside),
            }
        }
    }

    fn emit(&mut self, line: &Line<'_>, scalar: Scalar<'_>, anchor: usize) -> Scan {
        self.emit_tagged(line, scalar, anchor, None)
    }

    /// A scalar with the core-schema type its tag names.
    fn emit_tagged(
        &mut self,
        line: &Line<'_>,
        scalar: Scalar<'_>,
        anchor: usize,
        tag: Option<&str>,
    ) -> Scan {
        let at = line.span(scalar.start, scalar.end);
        Ok(self
            .builder
            .scalar(scalar.text, scalar.style, anchor, tag, at)?)
    }

    /// A null where a value was left for later lines that gave none.
    fn null(&mut self, at: Mark, anchor: usize) -> Scan {
        let at = Span { start: at, end: at };
        Ok(self
            .builder
            .scalar(Cow::Borrowed("~"), ScalarStyle::Plain, anchor, None, at)?)
    }

    fn settle(&mut self) -> Scan {
        match self.pending.take() {
            Some(Pending::Value { at, anchor, .. } | Pending::Item { at, anchor, .. }) => {
                self.null(at, anchor)
            }
            None => Ok(()),
        }
    }

    fn open_block(
        &mut self,
        kind: Kind,
        indent: usize,
        indentless: bool,
        at: Span,
        anchor: usize,
    ) -> Scan {
        match kind {
            Kind::Mapping => self.builder.open_mapping(anchor, at)?,
            Kind::Sequence => self.builder.open_sequence(anchor, at)?,
        }
        self.open.push(Open {
            indent,
            kind,
            indentless,
        });
        Ok(())
    }

    /// Closes the innermost block collection where the next token starts.
    fn close(&mut self, at: Mark) -> Scan {
        self.open.pop();
        Ok(self.builder.close(Span { start: at, end: at })?)
    }
}

/// What the node written at byte `at` of a line (block context) is.
fn start<'a>(line: &Line<'a>, at: usize) -> Scan<Start<'a>> {
    let bytes = line.bytes();
    let scalar = match bytes.get(at) {
        Some(b'"' | b'\'') => quoted(line, at)?,
        Some(b'{' | b'[') => return Ok(Start::Flow),
        Some(&first) if plain_may_start(first, bytes.get(at + 1).copied()) => {
            let (end, colon) = block_plain(bytes, at);
            if let Some(colon) = colon
                && (colon != end || colon - at > MAX_KEY_BYTES)
            {
                return Err(Outside);
            }
            let scalar = Scalar {
                text: Cow::Borrowed(line.text.get(at..end).ok_or(Outside)?),
                style: ScalarStyle::Plain,
                start: at,
                end,
            };
            return Ok(match colon {
                Some(colon) => Start::Key(scalar, colon),
                None => Start::Scalar(scalar),
            });
        }
        _ => return Err(Outside),
    };
    let after = scalar.end;
    if bytes.get(after) == Some(&b':') && matches!(bytes.get(after + 1), None | Some(b' ')) {
        if after - at > MAX_KEY_BYTES {
            return Err(Outside);
        }
        return Ok(Start::Key(scalar, after));
    }
    Ok(Start::Scalar(scalar))
}

/// Whether a plain scalar may start with `first` (then `next`) here: not
/// with an indicator, save `-` before a non-space (`-1`).
fn plain_may_start(first: u8, next: Option<u8>) -> bool {
    match first {
        b'-' => !matches!(next, None | Some(b' ')),
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' => false,
        _ => true,
    }
}

/// A plain scalar in block context from byte `start`: where its text ends
/// (trailing spaces dropped), and the colon that ends it when it is a key.
fn block_plain(bytes: &[u8], start: usize) -> (usize, Option<usize>) {
    let mut from = start;
    loop {
        let Some(found) = memchr2(b':', b'#', bytes.get(from..).unwrap_or_default()) else {
            return (trimmed(bytes, start, bytes.len()), None);
        };
        let at = from + found;
        if bytes.get(at) == Some(&b'#') {
            if at > start && bytes.get(at - 1) == Some(&b' ') {
                return (trimmed(bytes, start, at), None);
            }
        } else if matches!(bytes.get(at + 1), None | Some(b' ')) {
            return (trimmed(bytes, start, at), Some(at));
        }
        from = at + 1;
    }
}

/// A scalar in a flow collection from byte `start`: quoted, or plain up to
/// the next `,`, `]`, `}` or the colon after a key. A plain one holding a
/// colon or `#` is left to the parser.
fn flow_scalar<'a>(line: &Line<'a>, start: usize) -> Scan<Scalar<'a>> {
    let bytes = line.bytes();
    match bytes.get(start) {
        Some(b'"' | b'\'') => return quoted(line, start),
        Some(&first) if plain_may_start(first, bytes.get(start + 1).copied()) && first != b'-' => {}
        _ => return Err(Outside),
    }
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b',' | b']' | b'}' | b':' => break,
            b'#' | b'[' | b'{' => return Err(Outside),
            _ => at += 1,
        }
    }
    if bytes.get(at) == Some(&b':') && bytes.get(at + 1) != Some(&b' ') {
        return Err(Outside);
    }
    let end = trimmed(bytes, start, at);
    Ok(Scalar {
        text: Cow::Borrowed(line.text.get(start..end).ok_or(Outside)?),
        style: ScalarStyle::Plain,
        start,
        end,
    })
}

/// A quoted scalar opening at byte `open` and closing on the same line.
fn quoted<'a>(line: &Line<'a>, open: usize) -> Scan<Scalar<'a>> {
    let (bytes, text) = (line.bytes(), line.text);
    let body = open + 1;
    if bytes.get(open) == Some(&b'"') {
        let mut from = body;
        let mut unescaped: Option<String> = None;
        loop {
            let stop = from
                + memchr2(b'"', b'\\', bytes.get(from..).unwrap_or_default()).ok_or(Outside)?;
            let before = text.get(from..stop).ok_or(Outside)?;
            if bytes.get(stop) == Some(&b'"') {
                return Ok(Scalar {
                    text: joined(unescaped, before),
                    style: ScalarStyle::DoubleQuoted,
                    start: open,
                    end: stop + 1,
                });
            }
            let unescaped = unescaped.get_or_insert_with(String::new);
            unescaped.push_str(before);
            let (character, length) = escape(bytes.get(stop + 1..).unwrap_or_default())?;
            unescaped.push(character);
            from = stop + 1 + length;
        }
    }
    // Single-quoted: `''` stands for one quote.
    let mut from = body;
    let mut unquoted: Option<String> = None;
    loop {
        let quote = from + memchr(b'\'', bytes.get(from..).unwrap_or_default()).ok_or(Outside)?;
        if bytes.get(quote + 1) == Some(&b'\'') {
            unquoted
                .get_or_insert_with(String::new)
                .push_str(text.get(from..=quote).ok_or(Outside)?);
            from = quote + 2;
            continue;
        }
        let rest = text.get(from..quote).ok_or(Outside)?;
        return Ok(Scalar {
            text: joined(unquoted, rest),
            style: ScalarStyle::SingleQuoted,
            start: open,
            end: quote + 1,
        });
    }
}

/// A quoted scalar's text: `rest` as written when nothing before it was
/// unescaped, else appended to the unescaped copy.
fn joined(copy: Option<String>, rest: &str) -> Cow<'_, str> {
    match copy {
        None => Cow::Borrowed(rest),
        Some(mut copy) => {
            copy.push_str(rest);
            Cow::Owned(copy)
        }
    }
}

/// The character that the escape after a `\` stands for, and the bytes it
/// takes after the backslash: YAML's escapes, as the parser reads them
/// (`resolve_flow_scalar_escape_sequence` in granit-parser 2.2.0's
/// `src/scanner.rs`). An escaped line break, and any escape the parser
/// refuses, is left to it.
fn escape(after: &[u8]) -> Scan<(char, usize)> {
    let digits = match after.first() {
        Some(b'x') => 2,
        Some(b'u') => 4,
        Some(b'U') => 8,
        Some(&byte) => {
            let character = match byte {
                b'0' => '\0',
                b'a' => '\x07',
                b'b' => '\x08',
                b't' => '\t',
                b'n' => '\n',
                b'v' => '\x0b',
                b'f' => '\x0c',
                b'r' => '\r',
                b'e' => '\x1b',
                b' ' => ' ',
                b'"' => '"',
                b'/' => '/',
                b'\\' => '\\',
                b'N' => '\u{85}',
                b'_' => '\u{a0}',
                b'L' => '\u{2028}',
                b'P' => '\u{2029}',
                _ => return Err(Outside),
            };
            return Ok((character, 1));
        }
        None => return Err(Outside),
    };
    let hex = after.get(1..=digits).ok_or(Outside)?;
    let hex = std::str::from_utf8(hex).map_err(|_| Outside)?;
    if !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(Outside);
    }
    let code = u32::from_str_radix(hex, 16).map_err(|_| Outside)?;
    Ok((char::from_u32(code).ok_or(Outside)?, 1 + digits))
}

/// Checks that nothing but spaces and a comment follows byte `at`.
fn line_ends(bytes: &[u8], at: usize) -> Scan {
    let next = spaces(bytes, at);
    match bytes.get(next) {
        None => Ok(()),
        Some(b'#') if next > at => Ok(()),
        Some(_) => Err(Outside),
    }
}

/// Whether a line's content (from its first non-space) is a sequence item.
fn is_dash(content: &[u8]) -> bool {
    content.first() == Some(&b'-') && matches!(content.get(1), None | Some(b' '))
}

/// The `!!type` tag written at byte `at`: the core type it names, if any,
/// and the byte of the node after it. Other tags are left to the parser.
fn tag(bytes: &[u8], at: usize) -> Scan<(Option<&'static str>, usize)> {
    let name = bytes
        .get(at..)
        .and_then(|rest| rest.strip_prefix(b"!!"))
        .ok_or(Outside)?;
    let length = name
        .iter()
        .take_while(|byte| byte.is_ascii_lowercase())
        .count();
    let end = at + 2 + length;
    if length == 0 || bytes.get(end) != Some(&b' ') {
        return Err(Outside);
    }
    let name = name.get(..length).ok_or(Outside)?;
    let core = CORE_TYPES.into_iter().find(|core| core.as_bytes() == name);
    Ok((core, spaces(bytes, end)))
}

/// The end of the anchor or alias name whose `&` or `*` is at byte `at`:
/// the next space or flow indicator, which a name may not hold.
fn name_end(bytes: &[u8], at: usize) -> usize {
    let from = at + 1;
    bytes
        .get(from..)
        .unwrap_or_default()
        .iter()
        .position(|byte| matches!(byte, b' ' | b',' | b'[' | b']' | b'{' | b'}'))
        .map_or(bytes.len(), |length| from + length)
}

/// Where the parser stands after the dash at byte `dash`: past its spaces,
/// or past a comment that follows them.
fn past_dash(bytes: &[u8], dash: usize) -> usize {
    let at = spaces(bytes, dash + 1);
    if bytes.get(at) == Some(&b'#') {
        bytes.len()
    } else {
        at
    }
}

/// The first byte at or after `at` that is not a space.
fn spaces(bytes: &[u8], at: usize) -> usize {
    at + bytes
        .get(at..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&byte| byte == b' ')
        .count()
}

/// `end` moved back over the spaces before it, not past `start`.
fn trimmed(bytes: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && bytes.get(end - 1) == Some(&b' ') {
        end -= 1;
    }
    end
}
