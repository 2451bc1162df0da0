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

/// Walks values against schemas; collects violations.
pub(crate) struct Walker<'a> {
    /// Compiled `pattern`s; `None` for one the regex crate cannot compile.
    patterns: &'a HashMap<String, Option<Regex>>,
    out: Listing,
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
            out: Listing::default(),
        }
    }

    /// Validates a whole object: `apiVersion`, `kind` and `metadata` (as
    /// ObjectMeta) at the root, the rest against `schema`.
    pub(crate) fn object(mut self, schema: Option<&Value>, object: &Map<String, Value>) -> Listing {
        let mut path = Vec::new();
        if let Some(meta) = object.get("metadata") {
            check_object_meta(
                meta,
                &mut vec![PathSegment::Key("metadata".to_owned())],
                &mut self.out,
            );
        }
        if let Some(schema) = schema {
            self.map(schema, object, &mut path, Strictness::Strict, ROOT_FIELDS);
            if ["allOf", "anyOf", "oneOf", "not"]
                .iter()
                .any(|key| schema.get(key).is_some())
            {
                self.junctors(schema, &Value::Object(object.clone()), &mut path);
            }
        }
        self.out
    }

    fn push(
        &mut self,
        path: &[PathSegment],
        kind: ViolationKind,
        message: impl FnOnce() -> String,
    ) {
        self.out.push(path, kind, message);
    }

    fn node(
        &mut self,
        schema: &Value,
        value: &Value,
        path: &mut Vec<PathSegment>,
        strictness: Strictness,
    ) {
        let Some(rules) = schema.as_object() else {
            return;
        };
        if value.is_null() {
            if !flag(rules, "nullable") && rules.contains_key("type") {
                self.push(path, ViolationKind::WrongType, || {
                    "must not be null".to_owned()
                });
            }
            return;
        }
        if flag(rules, "x-kubernetes-int-or-string") {
            if !(value.is_string() || is_integer(value)) {
                self.push(path, ViolationKind::WrongType, || {
                    format!("expected integer or string, found {}", json_type(value))
                });
                return;
            }
        } else if let Some(wanted) = rules.get("type").and_then(Value::as_str)
            && !has_type(value, wanted)
        {
            self.push(path, ViolationKind::WrongType, || {
                format!("expected {wanted}, found {}", json_type(value))
            });
            return;
        }
        if let Some(allowed) = rules.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|candidate| json_equal(candidate, value))
        {
            self.push(path, ViolationKind::NotInEnum, || {
                enum_message(value, allowed)
            });
        }
        match value {
            Value::String(s) => self.string(rules, s, path),
            Value::Number(_) => self.number(rules, value, path),
            Value::Array(items) => self.array(rules, items, path, strictness),
            Value::Object(map) => self.map(schema, map, path, strictness, &[]),
            Value::Null | Value::Bool(_) => {}
        }
        self.junctors(schema, value, path);
    }

    fn string(&mut self, rules: &Map<String, Value>, s: &str, path: &[PathSegment]) {
        let length = s.chars().count();
        if let Some(min) = unsigned(rules, "minLength")
            && (length as u64) < min
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("{} is shorter than {min} characters", quoted(s))
            });
        }
        if let Some(max) = unsigned(rules, "maxLength")
            && length as u64 > max
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("value is longer than {max} characters ({length})")
            });
        }
        if let Some(pattern) = rules.get("pattern").and_then(Value::as_str)
            && let Some(Some(regex)) = self.patterns.get(pattern)
            && !regex.is_match(s)
        {
            self.push(path, ViolationKind::PatternMismatch, || {
                format!("{} does not match pattern {}", quoted(s), quoted(pattern))
            });
        }
    }

    fn number(&mut self, rules: &Map<String, Value>, value: &Value, path: &[PathSegment]) {
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

    fn array(
        &mut self,
        rules: &Map<String, Value>,
        items: &[Value],
        path: &mut Vec<PathSegment>,
        strictness: Strictness,
    ) {
        let count = items.len() as u64;
        if let Some(min) = unsigned(rules, "minItems")
            && count < min
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} items, fewer than {min}")
            });
        }
        if let Some(max) = unsigned(rules, "maxItems")
            && count > max
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} items, more than {max}")
            });
        }
        let list_type = rules.get("x-kubernetes-list-type").and_then(Value::as_str);
        if flag(rules, "uniqueItems") || list_type == Some("set") {
            self.duplicates(items, path, |item| Some(Cow::Borrowed(item)));
        }
        if list_type == Some("map")
            && let Some(keys) = rules
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
        {
            let keys: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
            self.duplicates(items, path, |item| {
                let map = item.as_object()?;
                Some(Cow::Owned(Value::Array(
                    keys.iter()
                        .map(|key| map.get(*key).cloned().unwrap_or(Value::Null))
                        .collect(),
                )))
            });
        }
        if let Some(item_schema) = rules.get("items") {
            for (index, item) in items.iter().enumerate() {
                path.push(PathSegment::Index(index));
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
        path: &mut Vec<PathSegment>,
        key: impl Fn(&'v Value) -> Option<Cow<'v, Value>>,
    ) {
        let hasher = RandomState::new();
        let mut seen = Seen::default();
        for (index, item) in items.iter().enumerate() {
            let Some(identity) = key(item) else { continue };
            let mut state = hasher.build_hasher();
            hash_json(&identity, &mut state);
            if let Some(repeated) = seen.insert(state.finish(), identity) {
                path.push(PathSegment::Index(index));
                self.push(path, ViolationKind::Other, || {
                    format!("duplicate entry {}", compact(&repeated))
                });
                path.pop();
            }
        }
    }

    fn map(
        &mut self,
        schema: &Value,
        map: &Map<String, Value>,
        path: &mut Vec<PathSegment>,
        strictness: Strictness,
        implicit: &[&str],
    ) {
        let Some(rules) = schema.as_object() else {
            return;
        };
        let count = map.len() as u64;
        if let Some(min) = unsigned(rules, "minProperties")
            && count < min
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} fields, fewer than {min}")
            });
        }
        if let Some(max) = unsigned(rules, "maxProperties")
            && count > max
        {
            self.push(path, ViolationKind::OutOfRange, || {
                format!("has {count} fields, more than {max}")
            });
        }
        let properties = rules.get("properties").and_then(Value::as_object);
        let additional = rules.get("additionalProperties");
        let open = flag(rules, "x-kubernetes-preserve-unknown-fields")
            || additional.and_then(Value::as_bool) == Some(true);
        let embedded = flag(rules, "x-kubernetes-embedded-resource");
        for (key, field) in map {
            path.push(PathSegment::Key(key.clone()));
            if implicit.contains(&key.as_str()) {
                // apiVersion and kind were used to find this schema; metadata is ObjectMeta.
            } else if let Some(field_schema) = properties.and_then(|p| p.get(key)) {
                self.field(field_schema, field, path, strictness);
            } else if let Some(field_schema) = additional.filter(|a| a.is_object()) {
                self.field(field_schema, field, path, strictness);
            } else if embedded && key == "metadata" {
                check_object_meta(field, path, &mut self.out);
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
    fn field(
        &mut self,
        schema: &Value,
        value: &Value,
        path: &mut Vec<PathSegment>,
        strictness: Strictness,
    ) {
        let nullable = schema.as_object().is_some_and(|s| flag(s, "nullable"));
        if !value.is_null() || nullable {
            self.node(schema, value, path, strictness);
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: each branch is walked on its
    /// own, leniently, and only its verdict counts.
    fn junctors(&mut self, schema: &Value, value: &Value, path: &mut Vec<PathSegment>) {
        let Some(rules) = schema.as_object() else {
            return;
        };
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

    fn branch(&self, schema: &Value, value: &Value, path: &mut Vec<PathSegment>) -> Listing {
        let mut walker = Walker::new(self.patterns);
        walker.node(schema, value, path, Strictness::Lenient);
        walker.out
    }
}

/// The identities of a list's items seen so far, by hash.
#[derive(Default)]
struct Seen<'v> {
    identities: Vec<Cow<'v, Value>>,
    /// The first identity seen with each hash.
    by_hash: HashMap<u64, usize>,
    /// Further identities with a hash already taken but not equal to its
    /// first: a collision, next to never with a random key, but possible.
    collided: HashMap<u64, Vec<usize>>,
}

impl<'v> Seen<'v> {
    /// Keeps `identity` when no equal one was seen before; gives it back
    /// when one was.
    fn insert(&mut self, hash: u64, identity: Cow<'v, Value>) -> Option<Cow<'v, Value>> {
        let identities = &self.identities;
        let equal = |index: &usize| {
            identities
                .get(*index)
                .is_some_and(|seen| json_equal(seen, &identity))
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
            .map(|value| seen.insert(0, Cow::Borrowed(value)).is_some())
            .collect();
        assert_eq!(repeated, [false, false, true, false, true, true]);
    }
}
