//! The walk of a value against one structural schema.
//!
//! The walk is linear in the value for a given schema: every value node is
//! visited once per schema node that applies to it, list uniqueness is
//! checked through a hash map, and no check scans a node's siblings once
//! per sibling. What it keeps is bounded too: a [`Listing`] lists the first
//! violations of an object and counts the rest.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use regex::Regex;
use serde_json::{Map, Value};

use super::object_meta::{check_object_meta, json_type};
use super::violation::{Listing, PathSegment, ViolationKind, compact, quoted};
use zerohop_known::suggest::closest;

/// How many enum values a message lists before eliding the rest.
const ENUM_LISTED: usize = 8;

/// The fields every object has at its root, whatever its schema declares.
const ROOT_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// [`ROOT_FIELDS`] and a `status` the server resets (a status subresource).
const ROOT_FIELDS_AND_STATUS: &[&str] = &["apiVersion", "kind", "metadata", "status"];

/// Walks values against schemas; collects violations.
pub(crate) struct Walker<'a> {
    /// Compiled `pattern`s; `None` for one the regex crate cannot compile.
    patterns: &'a HashMap<String, Option<Regex>>,
    /// What each schema node met so far says, by the node's address.
    rules: HashMap<usize, Rules<'a>>,
    out: Listing,
}

/// What one schema node says, read from its JSON map once per walk and
/// kept by the node's address: a list of 300,000 conditions is walked
/// against the same item schema 300,000 times, and reading its rules was a
/// score of map lookups each time.
#[derive(Clone, Copy)]
struct Rules<'a> {
    map: &'a Map<String, Value>,
    typed: bool,
    kind: Option<&'a str>,
    nullable: bool,
    int_or_string: bool,
    allowed: Option<&'a Vec<Value>>,
    junctors: bool,
    properties: Option<&'a Map<String, Value>>,
    additional: Option<&'a Value>,
    open: bool,
    embedded: bool,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<&'a str>,
    format: Option<Format>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    list_type: Option<&'a str>,
    unique: bool,
    items: Option<&'a Value>,
}

impl<'a> Rules<'a> {
    fn of(map: &'a Map<String, Value>) -> Rules<'a> {
        let additional = map.get("additionalProperties");
        Rules {
            map,
            typed: map.contains_key("type"),
            kind: map.get("type").and_then(Value::as_str),
            nullable: flag(map, "nullable"),
            int_or_string: flag(map, "x-kubernetes-int-or-string"),
            allowed: map.get("enum").and_then(Value::as_array),
            junctors: ["allOf", "anyOf", "oneOf", "not"]
                .iter()
                .any(|key| map.contains_key(*key)),
            properties: map.get("properties").and_then(Value::as_object),
            additional,
            open: flag(map, "x-kubernetes-preserve-unknown-fields")
                || additional.and_then(Value::as_bool) == Some(true),
            embedded: flag(map, "x-kubernetes-embedded-resource"),
            min_properties: unsigned(map, "minProperties"),
            max_properties: unsigned(map, "maxProperties"),
            min_length: unsigned(map, "minLength"),
            max_length: unsigned(map, "maxLength"),
            pattern: map.get("pattern").and_then(Value::as_str),
            format: map
                .get("format")
                .and_then(Value::as_str)
                .and_then(Format::of),
            min_items: unsigned(map, "minItems"),
            max_items: unsigned(map, "maxItems"),
            list_type: map.get("x-kubernetes-list-type").and_then(Value::as_str),
            unique: flag(map, "uniqueItems"),
            items: map.get("items"),
        }
    }
}

/// Whether unknown fields count. Branches of `allOf`/`anyOf`/`oneOf`/`not`
/// list only the fields they constrain, so they never reject extra fields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Strict,
    Lenient,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(patterns: &'a HashMap<String, Option<Regex>>) -> Walker<'a> {
        Walker {
            patterns,
            rules: HashMap::new(),
            out: Listing::default(),
        }
    }

    /// The rules of `schema`, `None` when it is not a JSON object.
    fn rules(&mut self, schema: &'a Value) -> Option<Rules<'a>> {
        let map = schema.as_object()?;
        let address = std::ptr::from_ref(map).addr();
        Some(*self.rules.entry(address).or_insert_with(|| Rules::of(map)))
    }

    /// Validates a whole object: `apiVersion`, `kind` and `metadata` (as
    /// ObjectMeta) at the root, the rest against `schema`. With a status
    /// subresource (`status_subresource`), a declared `status` is checked
    /// for unknown fields only: the API server resets it before it
    /// validates an object created or updated through the main resource,
    /// but refuses an unknown field there while decoding the request, under
    /// strict field validation (as `server_verdicts.rs` in zerohop-lint
    /// shows against the real server).
    pub(crate) fn object(
        mut self,
        schema: Option<&'a Value>,
        object: &Map<String, Value>,
        status_subresource: bool,
    ) -> Listing {
        // The junctors of the root see the object as one value.
        let whole;
        let mut path = Vec::new();
        if let Some(meta) = object.get("metadata") {
            check_object_meta(
                meta,
                &mut vec![PathSegment::Key("metadata".to_owned())],
                &mut self.out,
            );
        }
        if let Some(rules) = schema.and_then(|schema| self.rules(schema)) {
            let status = rules
                .properties
                .and_then(|properties| properties.get("status"))
                .filter(|_| status_subresource);
            let implicit = if status.is_some() {
                ROOT_FIELDS_AND_STATUS
            } else {
                ROOT_FIELDS
            };
            self.map(&rules, object, &mut path, Strictness::Strict, implicit);
            if let (Some(schema), Some(value)) = (status, object.get("status")) {
                path.push(Step::Key("status"));
                self.unknown_fields_only(schema, value, &mut path);
                path.pop();
            }
            if rules.junctors {
                let mut seen = object.clone();
                if status.is_some() {
                    // Reset before validation, as above.
                    seen.remove("status");
                }
                whole = Value::Object(seen);
                self.junctors(rules.map, &whole, &mut path);
            }
        }
        self.out
    }

    /// The unknown fields of `value` against `schema`, and nothing else.
    fn unknown_fields_only<'v>(
        &mut self,
        schema: &'a Value,
        value: &'v Value,
        path: &mut Vec<Step<'v>>,
    ) {
        let mut walker = Walker::new(self.patterns);
        walker.field(schema, value, path, Strictness::Strict);
        for violation in walker.out.into_violations() {
            if matches!(violation.kind, ViolationKind::UnknownField { .. }) {
                let message = violation.message;
                self.out.push(&violation.path, violation.kind, || message);
            }
        }
    }

    /// Records a violation at `path`, whose steps are written out only for
    /// one that is listed.
    fn push(&mut self, path: &[Step<'_>], kind: ViolationKind, message: impl FnOnce() -> String) {
        if self.out.full() {
            self.out.count();
        } else {
            self.out.push(&owned(path), kind, message);
        }
    }

    fn node<'v>(
        &mut self,
        schema: &'a Value,
        value: &'v Value,
        path: &mut Vec<Step<'v>>,
        strictness: Strictness,
    ) {
        let Some(rules) = self.rules(schema) else {
            return;
        };
        if value.is_null() {
            if !rules.nullable && rules.typed {
                self.push(path, ViolationKind::WrongType, || {
                    "must not be null".to_owned()
                });
            }
            return;
        }
        if rules.int_or_string {
            if !(value.is_string() || is_integer(value)) {
                self.push(path, ViolationKind::WrongType, || {
                    format!("expected integer or string, found {}", json_type(value))
                });
                return;
            }
        } else if let Some(wanted) = rules.kind
            && !has_type(value, wanted)
        {
            self.push(path, ViolationKind::WrongType, || {
                format!("expected {wanted}, found {}", json_type(value))
            });
            return;
        }
        if let Some(allowed) = rules.allowed
            && !allowed.iter().any(|candidate| json_equal(candidate, value))
        {
            self.push(path, ViolationKind::NotInEnum, || {
                enum_message(value, allowed)
            });
        }
        match value {
            Value::String(s) => self.string(&rules, s, path),
            Value::Number(_) => self.number(rules.map, value, path),
            Value::Array(items) => self.array(&rules, items, path, strictness),
            Value::Object(map) => self.map(&rules, map, path, strictness, &[]),
            Value::Null | Value::Bool(_) => {}
        }
        if rules.junctors {
            self.junctors(rules.map, value, path);
        }
    }

    fn string<'v>(&mut self, rules: &Rules<'a>, s: &str, path: &[Step<'v>]) {
        if rules.min_length.is_some() || rules.max_length.is_some() {
            let length = s.chars().count();
            if let Some(min) = rules.min_length
                && (length as u64) < min
            {
                self.push(path, ViolationKind::OutOfRange, || {
                    format!("{} is shorter than {min} characters", quoted(s))
                });
            }
            if let Some(max) = rules.max_length
                && length as u64 > max
            {
                self.push(path, ViolationKind::OutOfRange, || {
                    format!("value is longer than {max} characters ({length})")
                });
            }
        }
        if let Some(pattern) = rules.pattern
            && let Some(Some(regex)) = self.patterns.get(pattern)
            && !regex.is_match(s)
        {
            self.push(path, ViolationKind::PatternMismatch, || {
                format!("{} does not match pattern {}", quoted(s), quoted(pattern))
            });
        }
        if let Some(format) = rules.format
            && !format.admits(s)
        {
            self.push(path, ViolationKind::PatternMismatch, || {
                format!("{} is not a {}", quoted(s), format.name())
            });
        }
    }

    fn number<'v>(&mut self, rules: &Map<String, Value>, value: &Value, path: &[Step<'v>]) {
        let Some(n) = value.as_f64() else { return };
        if let Some(min) = rules.get("minimum").and_then(Value::as_f64) {
            let exclusive = flag(rules, "exclusiveMinimum");
            if n < min || (exclusive && n == min) {
                let relation = if exclusive {
                    "greater than"
                } else {
                    "at least"
                };
                self.push(path, ViolationKind::OutOfRange, || {
                    format!("{value} must be {relation} {}", number_text(min))
                });
            }
        }
        if let Some(max) = rules.get("maximum").and_then(Value::as_f64) {
            let exclusive = flag(rules, "exclusiveMaximum");
            if n > max || (exclusive && n == max) {
                let relation = if exclusive { "less than" } else { "at most" };
                self.push(path, ViolationKind::OutOfRange, || {
                    format!("{value} must be {relation} {}", number_text(max))
                });
            }
        }
        if let Some(step) = rules.get("multipleOf").and_then(Value::as_f64)
            && step > 0.0
            && (n / step).fract() != 0.0
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("{value} is not a multiple of {}", number_text(step))
            });
        }
    }

    fn array<'v>(
        &mut self,
        rules: &Rules<'a>,
        items: &'v [Value],
        path: &mut Vec<Step<'v>>,
        strictness: Strictness,
    ) {
        let count = items.len() as u64;
        if let Some(min) = rules.min_items
            && count < min
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} items, fewer than {min}")
            });
        }
        if let Some(max) = rules.max_items
            && count > max
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} items, more than {max}")
            });
        }
        let list_type = rules.list_type;
        if rules.unique || list_type == Some("set") {
            self.duplicates(items, path, |item| Some(Identity::Whole(item)));
        }
        if list_type == Some("map")
            && let Some(keys) = rules
                .map
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
        {
            let keys: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
            self.duplicates(items, path, |item| {
                let map = item.as_object()?;
                Some(Identity::Keys(
                    keys.iter()
                        .map(|key| map.get(*key).unwrap_or(&NULL))
                        .collect(),
                ))
            });
        }
        if let Some(item_schema) = rules.items {
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                self.node(item_schema, item, path, strictness);
                path.pop();
            }
        }
    }

    /// Reports every item whose identity (`key`) an earlier item has. The
    /// identities are hashed (with [`json_equal`]'s notion of equality, and
    /// a random key so that no input can make them collide on purpose) and
    /// compared only with the earlier ones of the same hash: linear in the
    /// list, where comparing each item with every earlier one took seconds
    /// for 20,000 conditions.
    fn duplicates<'v>(
        &mut self,
        items: &'v [Value],
        path: &mut Vec<Step<'v>>,
        key: impl Fn(&'v Value) -> Option<Identity<'v>>,
    ) {
        let hasher = RandomState::new();
        let mut seen = Seen::default();
        for (index, item) in items.iter().enumerate() {
            let Some(identity) = key(item) else { continue };
            let mut state = hasher.build_hasher();
            identity.hash(&mut state);
            if let Some(repeated) = seen.insert(state.finish(), identity) {
                path.push(Step::Index(index));
                self.push(path, ViolationKind::Other, || {
                    format!("duplicate entry {}", compact(&repeated.value()))
                });
                path.pop();
            }
        }
    }

    fn map<'v>(
        &mut self,
        rules: &Rules<'a>,
        map: &'v Map<String, Value>,
        path: &mut Vec<Step<'v>>,
        strictness: Strictness,
        implicit: &[&str],
    ) {
        let count = map.len() as u64;
        if let Some(min) = rules.min_properties
            && count < min
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} fields, fewer than {min}")
            });
        }
        if let Some(max) = rules.max_properties
            && count > max
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} fields, more than {max}")
            });
        }
        let (properties, additional) = (rules.properties, rules.additional);
        let (open, embedded) = (rules.open, rules.embedded);
        for (key, field) in map {
            path.push(Step::Key(key));
            if implicit.contains(&key.as_str()) {
                // apiVersion and kind were used to find this schema; metadata is ObjectMeta.
            } else if let Some(field_schema) = properties.and_then(|p| p.get(key)) {
                self.field(field_schema, field, path, strictness);
            } else if let Some(field_schema) = additional.filter(|a| a.is_object()) {
                self.field(field_schema, field, path, strictness);
            } else if embedded && key == "metadata" {
                check_object_meta(field, &mut owned(path), &mut self.out);
            } else if embedded && (key == "apiVersion" || key == "kind") {
                if !field.is_string() {
                    self.push(path, ViolationKind::WrongType, || {
                        format!("expected string, found {}", json_type(field))
                    });
                }
            } else if !open && strictness == Strictness::Strict {
                if self.out.full() {
                    // Only counted: spare the suggestion, which compares the
                    // key with every declared field.
                    self.out.count();
                } else {
                    let embedded_fields = if embedded { ROOT_FIELDS } else { &[] };
                    let declared = properties
                        .into_iter()
                        .flat_map(|p| p.keys().map(String::as_str))
                        .chain(embedded_fields.iter().copied());
                    let suggestion = closest(key, declared).map(str::to_owned);
                    self.push(path, ViolationKind::UnknownField { suggestion }, || {
                        format!("unknown field {}", quoted(key))
                    });
                }
            }
            path.pop();
        }
        for name in rules
            .map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let field_schema = properties.and_then(|p| p.get(name));
            let nullable = field_schema
                .and_then(Value::as_object)
                .is_some_and(|s| flag(s, "nullable"));
            let present = map.get(name).is_some_and(|v| !v.is_null() || nullable);
            // The API server applies defaults before it validates, so a
            // required field with a default is never missing.
            let defaulted = field_schema.and_then(|s| s.get("default")).is_some();
            if !present && !defaulted && !implicit.contains(&name) {
                let kind = ViolationKind::MissingRequired {
                    field: name.to_owned(),
                };
                self.push(path, kind, || {
                    format!("missing required field {}", quoted(name))
                });
            }
        }
    }

    /// A field of an object: a null in a field that is not nullable is
    /// pruned by the API server, not rejected.
    fn field<'v>(
        &mut self,
        schema: &'a Value,
        value: &'v Value,
        path: &mut Vec<Step<'v>>,
        strictness: Strictness,
    ) {
        let nullable = self.rules(schema).is_some_and(|rules| rules.nullable);
        if !value.is_null() || nullable {
            self.node(schema, value, path, strictness);
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: each branch is walked on its
    /// own, leniently, and only its verdict counts.
    /// `rules` is the schema node's map.
    fn junctors<'v>(
        &mut self,
        rules: &'a Map<String, Value>,
        value: &'v Value,
        path: &mut Vec<Step<'v>>,
    ) {
        if let Some(branches) = rules.get("allOf").and_then(Value::as_array) {
            for branch in branches {
                let found = self.branch(branch, value, path);
                self.out.absorb(found);
            }
        }
        if let Some(branches) = rules.get("anyOf").and_then(Value::as_array) {
            let results: Vec<Listing> = branches
                .iter()
                .map(|b| self.branch(b, value, path))
                .collect();
            if !results.is_empty() && results.iter().all(|r| r.found() > 0) {
                let mut message = "does not match any of the allowed schemas".to_owned();
                if let [only] = results
                    .iter()
                    .filter(|r| r.found() == 1)
                    .collect::<Vec<_>>()
                    .as_slice()
                    && let [violation] = only.listed()
                {
                    message = format!("{message} ({})", violation.message);
                }
                self.push(path, ViolationKind::Other, || message);
            }
        }
        if let Some(branches) = rules.get("oneOf").and_then(Value::as_array) {
            let matching = branches
                .iter()
                .filter(|b| self.branch(b, value, path).found() == 0)
                .count();
            if matching != 1 {
                self.push(path, ViolationKind::Other, || {
                    format!("must match exactly one of the allowed schemas, matches {matching}")
                });
            }
        }
        if let Some(forbidden) = rules.get("not")
            && self.branch(forbidden, value, path).found() == 0
        {
            self.push(path, ViolationKind::Other, || {
                "matches a schema it must not match".to_owned()
            });
        }
    }

    fn branch<'v>(&self, schema: &'a Value, value: &'v Value, path: &mut Vec<Step<'v>>) -> Listing {
        let mut walker = Walker::new(self.patterns);
        walker.node(schema, value, path, Strictness::Lenient);
        walker.out
    }
}

/// A step of the path to a value being walked, borrowing its key: written
/// out as a [`PathSegment`] only for a violation that is listed.
#[derive(Clone, Copy)]
enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

fn owned(path: &[Step<'_>]) -> Vec<PathSegment> {
    path.iter()
        .map(|step| match *step {
            Step::Key(key) => PathSegment::Key(key.to_owned()),
            Step::Index(index) => PathSegment::Index(index),
        })
        .collect()
}

/// A value missing from a map, where the API server reads null.
static NULL: Value = Value::Null;

/// What tells an item of a list apart from the others: the whole item (a
/// set), or the values of its map keys, borrowed (`x-kubernetes-list-map-keys`,
/// a missing key read as null).
enum Identity<'v> {
    Whole(&'v Value),
    Keys(Vec<&'v Value>),
}

impl Identity<'_> {
    fn hash(&self, state: &mut impl Hasher) {
        match self {
            Identity::Whole(value) => hash_json(value, state),
            Identity::Keys(values) => values.iter().for_each(|value| hash_json(value, state)),
        }
    }

    fn equal(&self, other: &Identity<'_>) -> bool {
        match (self, other) {
            (Identity::Whole(a), Identity::Whole(b)) => json_equal(a, b),
            (Identity::Keys(a), Identity::Keys(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(a, b)| json_equal(a, b))
            }
            _ => false,
        }
    }

    /// The identity as one value, for a message: the keys' values as a list.
    fn value(&self) -> Cow<'_, Value> {
        match self {
            Identity::Whole(value) => Cow::Borrowed(*value),
            Identity::Keys(values) => Cow::Owned(Value::Array(
                values.iter().map(|value| (*value).clone()).collect(),
            )),
        }
    }
}

/// The identities of a list's items seen so far, by hash.
#[derive(Default)]
struct Seen<'v> {
    identities: Vec<Identity<'v>>,
    /// The first identity seen with each hash.
    by_hash: HashMap<u64, usize>,
    /// Further identities with a hash already taken but not equal to its
    /// first: a collision, next to never with a random key, but possible.
    collided: HashMap<u64, Vec<usize>>,
}

impl<'v> Seen<'v> {
    /// Keeps `identity` when no equal one was seen before; gives it back
    /// when one was.
    fn insert(&mut self, hash: u64, identity: Identity<'v>) -> Option<Identity<'v>> {
        let identities = &self.identities;
        let equal = |index: &usize| {
            identities
                .get(*index)
                .is_some_and(|seen| seen.equal(&identity))
        };
        let repeated = match self.by_hash.get(&hash) {
            None => {
                self.by_hash.insert(hash, identities.len());
                false
            }
            Some(first) if equal(first) => true,
            Some(_) => {
                let others = self.collided.entry(hash).or_default();
                let repeated = others.iter().any(equal);
                if !repeated {
                    others.push(identities.len());
                }
                repeated
            }
        };
        if repeated {
            Some(identity)
        } else {
            self.identities.push(identity);
            None
        }
    }
}

/// A string `format` the API server checks (kube-openapi
/// `pkg/validation/strfmt` at d427ff9ee9ad, the formats
/// apiextensions-apiserver v0.37.2 keeps in `validation/formats.go`; the
/// versions `tools/control-plane/go.mod` pins): the two dates. The server checks more (`uri`,
/// `email`, `ipv4`, `cidr` …), which no reference CRD uses; those are not
/// checked, nor `int32`/`int64` on integers, which the server does not
/// check either.
#[derive(Clone, Copy)]
enum Format {
    /// `date-time` (or `datetime`): `strfmt.IsDateTime`.
    DateTime,
    /// `date`: `strfmt.IsDate`, a full date of RFC 3339.
    Date,
}

impl Format {
    /// The format a schema names, with go-openapi's normalization (dashes
    /// dropped), when it is one of those checked.
    fn of(name: &str) -> Option<Format> {
        match name.replace('-', "").as_str() {
            "datetime" => Some(Format::DateTime),
            "date" => Some(Format::Date),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::DateTime => "date-time (RFC 3339, such as 2026-01-31T12:00:00Z)",
            Format::Date => "date (RFC 3339 full-date, such as 2026-01-31)",
        }
    }

    fn admits(self, text: &str) -> bool {
        match self {
            Format::DateTime => is_date_time(text),
            Format::Date => is_date(text),
        }
    }
}

/// `strfmt.IsDateTime`: at least four characters; lowercased and split at
/// every `t`, a full date before the first and
/// `HH:MM:SS[.fraction](z|±HH:MM)` after it (any one character before the
/// fraction, the pattern's unescaped `.`; what follows a second `t` is not
/// looked at), hours to 23, minutes and seconds to 59.
fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let time = time.as_bytes();
    let two = |at: usize| -> Option<u8> {
        let pair = time.get(at..at + 2)?;
        pair.iter()
            .all(u8::is_ascii_digit)
            .then(|| (pair[0] - b'0') * 10 + (pair[1] - b'0'))
    };
    let (Some(hour), Some(minute), Some(second)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if time.get(2) != Some(&b':') || time.get(5) != Some(&b':') {
        return false;
    }
    let mut rest = &time[8..];
    // `(.[0-9]+)?`: any character, then digits. The regex engine
    // backtracks, so the fraction may also be absent when the zone follows.
    if let Some((_, after)) = rest.split_first()
        && let digits = after.iter().take_while(|c| c.is_ascii_digit()).count()
        && digits > 0
        && is_zone(&after[digits..])
    {
        rest = &after[digits..];
    }
    is_zone(rest) && hour <= 23 && minute <= 59 && second <= 59
}

/// `z` or `±HH:MM`, the whole of `rest`.
fn is_zone(rest: &[u8]) -> bool {
    match rest {
        [b'z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// `strfmt.IsDate`: Go's `time.Parse("2006-01-02", text)`: four digits,
/// two, two, a month of the year and a day of that month.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = bytes.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, c| n * 10 + u32::from(c - b'0')))
    };
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn flag(rules: &Map<String, Value>, key: &str) -> bool {
    rules.get(key).and_then(Value::as_bool) == Some(true)
}

fn unsigned(rules: &Map<String, Value>, key: &str) -> Option<u64> {
    rules.get(key).and_then(Value::as_u64)
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

fn has_type(value: &Value, wanted: &str) -> bool {
    match wanted {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        // An unknown type name is a broken schema, not a broken object.
        _ => true,
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Feeds `value` to `state` so that values [`json_equal`] calls equal hash
/// equally: numbers by their `f64` value (with `-0` as `0`), objects with
/// their keys in sorted order.
fn hash_json(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(flag) => {
            state.write_u8(1);
            flag.hash(state);
        }
        Value::Number(number) => {
            state.write_u8(2);
            let float = number.as_f64().unwrap_or(f64::NAN);
            let float = if float == 0.0 { 0.0 } else { float };
            state.write_u64(float.to_bits());
        }
        Value::String(text) => {
            state.write_u8(3);
            text.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash_json(item, state);
            }
        }
        Value::Object(map) => {
            state.write_u8(5);
            state.write_usize(map.len());
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys {
                key.hash(state);
                if let Some(field) = map.get(key) {
                    hash_json(field, state);
                }
            }
        }
    }
}

fn enum_message(value: &Value, allowed: &[Value]) -> String {
    let mut listed: Vec<String> = allowed.iter().take(ENUM_LISTED).map(compact).collect();
    if allowed.len() > ENUM_LISTED {
        listed.push(format!("… {} more", allowed.len() - ENUM_LISTED));
    }
    format!("{} is not one of {}", compact(value), listed.join(", "))
}

fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn identities_that_share_a_hash_are_still_told_apart() {
        let mut seen = Seen::default();
        let values = [
            json!(1),
            json!("a"),
            json!(1.0),
            json!({"a": [1]}),
            json!("a"),
            json!({"a": [1.0]}),
        ];
        let repeated: Vec<bool> = values
            .iter()
            .map(|value| seen.insert(0, Identity::Whole(value)).is_some())
            .collect();
        assert_eq!(repeated, [false, false, true, false, true, true]);
    }
}
