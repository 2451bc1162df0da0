//! The basics of `metadata` (ObjectMeta), which CRD schemas leave out and
//! the API server checks for every object.

use serde_json::{Map, Value};

use super::violation::{Listing, PathSegment, SchemaViolation, ViolationKind, quoted};
use zerohop_known::suggest::closest;

/// The fields of ObjectMeta, with the JSON type each must have.
const FIELDS: &[(&str, Expect)] = &[
    ("annotations", Expect::StringMap),
    ("creationTimestamp", Expect::StringOrNull),
    ("deletionGracePeriodSeconds", Expect::Integer),
    ("deletionTimestamp", Expect::StringOrNull),
    ("finalizers", Expect::StringList),
    ("generateName", Expect::String),
    ("generation", Expect::Integer),
    ("labels", Expect::StringMap),
    ("managedFields", Expect::ObjectList),
    ("name", Expect::String),
    ("namespace", Expect::String),
    ("ownerReferences", Expect::ObjectList),
    ("resourceVersion", Expect::String),
    ("selfLink", Expect::String),
    ("uid", Expect::String),
];

#[derive(Clone, Copy)]
enum Expect {
    String,
    StringOrNull,
    Integer,
    StringMap,
    StringList,
    ObjectList,
}

const DNS_LABEL_MAX: usize = 63;
const DNS_SUBDOMAIN_MAX: usize = 253;

/// Checks `metadata` at `path` as the API server does for any object:
/// known fields with their types, `name` a DNS-1123 subdomain, `namespace`
/// a DNS-1123 label, label keys and values and annotation keys in the
/// Kubernetes syntax. Lists at most a thousand violations, then one that
/// counts the rest.
pub fn validate_object_meta(value: &Value, path: &[PathSegment]) -> Vec<SchemaViolation> {
    let mut out = Listing::default();
    check_object_meta(value, &mut path.to_vec(), &mut out);
    out.into_violations()
}

/// [`validate_object_meta`] into a listing shared with the rest of a check.
pub(crate) fn check_object_meta(value: &Value, path: &mut Vec<PathSegment>, out: &mut Listing) {
    let Some(meta) = value.as_object() else {
        out.push(path, ViolationKind::WrongType, || {
            format!("expected object, found {}", json_type(value))
        });
        return;
    };
    for (key, field) in meta {
        path.push(PathSegment::Key(key.clone()));
        match FIELDS.iter().find(|(name, _)| name == key) {
            None if out.full() => out.count(),
            None => {
                let suggestion =
                    closest(key, FIELDS.iter().map(|(name, _)| *name)).map(str::to_owned);
                out.push(path, ViolationKind::UnknownField { suggestion }, || {
                    format!("unknown field {}", quoted(key))
                });
            }
            Some((name, expect)) => check_field(name, *expect, field, path, out),
        }
        path.pop();
    }
}

fn check_field(
    name: &str,
    expect: Expect,
    value: &Value,
    path: &mut Vec<PathSegment>,
    out: &mut Listing,
) {
    let type_ok = match expect {
        Expect::String => value.is_string(),
        Expect::StringOrNull => value.is_string() || value.is_null(),
        Expect::Integer => value.as_i64().is_some(),
        Expect::StringMap => value.is_object(),
        Expect::StringList | Expect::ObjectList => value.is_array(),
    };
    let wanted = match expect {
        Expect::String | Expect::StringOrNull => "string",
        Expect::Integer => "integer",
        Expect::StringMap => "object",
        Expect::StringList | Expect::ObjectList => "array",
    };
    if !type_ok {
        out.push(path, ViolationKind::WrongType, || {
            format!("expected {wanted}, found {}", json_type(value))
        });
        return;
    }
    match (name, value) {
        ("name", Value::String(s)) => {
            if let Some(problem) = dns_subdomain_problem(s) {
                out.push(path, ViolationKind::PatternMismatch, || {
                    format!("name {} {problem}", quoted(s))
                });
            }
        }
        ("namespace", Value::String(s)) => {
            if let Some(problem) = dns_label_problem(s) {
                out.push(path, ViolationKind::PatternMismatch, || {
                    format!("namespace {} {problem}", quoted(s))
                });
            }
        }
        ("labels" | "annotations", Value::Object(map)) => {
            check_string_map(name == "labels", map, path, out)
        }
        ("finalizers", Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if !item.is_string() {
                    path.push(PathSegment::Index(index));
                    out.push(path, ViolationKind::WrongType, || {
                        format!("expected string, found {}", json_type(item))
                    });
                    path.pop();
                }
            }
        }
        ("managedFields" | "ownerReferences", Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if !item.is_object() {
                    path.push(PathSegment::Index(index));
                    out.push(path, ViolationKind::WrongType, || {
                        format!("expected object, found {}", json_type(item))
                    });
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn check_string_map(
    labels: bool,
    map: &Map<String, Value>,
    path: &mut Vec<PathSegment>,
    out: &mut Listing,
) {
    let what = if labels { "label" } else { "annotation" };
    for (key, value) in map {
        path.push(PathSegment::Key(key.clone()));
        if let Some(problem) = qualified_name_problem(key) {
            out.push(path, ViolationKind::PatternMismatch, || {
                format!("{what} key {} {problem}", quoted(key))
            });
        }
        match value {
            Value::String(s) if labels => {
                if let Some(problem) = label_value_problem(s) {
                    out.push(path, ViolationKind::PatternMismatch, || {
                        format!("label value {} {problem}", quoted(s))
                    });
                }
            }
            Value::String(_) => {}
            other => out.push(path, ViolationKind::WrongType, || {
                format!(
                    "{what} value must be a string, found {} (quote it)",
                    json_type(other)
                )
            }),
        }
        path.pop();
    }
}

/// Why `s` is not a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at
/// most 63 characters), or `None` when it is one.
pub(crate) fn dns_label_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if s.len() > DNS_LABEL_MAX {
        return Some(format!("is longer than {DNS_LABEL_MAX} characters"));
    }
    let bytes = s.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let ends_ok = bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    (!(inner_ok && ends_ok)).then(|| {
        "must be a dns-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit".to_owned()
    })
}

/// Why `s` is not a DNS-1123 subdomain (dot-separated labels, at most 253
/// characters), or `None` when it is one.
pub(crate) fn dns_subdomain_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if s.len() > DNS_SUBDOMAIN_MAX {
        return Some(format!("is longer than {DNS_SUBDOMAIN_MAX} characters"));
    }
    s.split('.').any(|label| dns_label_problem(label).is_some()).then(|| {
        "must be a dns-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
            .to_owned()
    })
}

/// A label/annotation key: `[prefix/]name`, prefix a DNS subdomain, name at
/// most 63 characters of `[A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]`.
fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && dns_subdomain_problem(prefix).is_some()
    {
        return Some("has a prefix that is not a dns-1123 subdomain".to_owned());
    }
    if name.is_empty() || name.len() > DNS_LABEL_MAX || !is_label_syntax(name) {
        return Some(
            "must be at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
                .to_owned(),
        );
    }
    None
}

fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    (value.len() > DNS_LABEL_MAX || !is_label_syntax(value)).then(|| {
        "must be at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
            .to_owned()
    })
}

fn is_label_syntax(s: &str) -> bool {
    let bytes = s.as_bytes();
    bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// The JSON type name of a value, as schema messages use it.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(value: &Value) -> Vec<String> {
        validate_object_meta(value, &[PathSegment::Key("metadata".into())])
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn accepts_ordinary_metadata() {
        let meta = json!({"name": "nic-cluster-policy", "namespace": "nvidia-network-operator",
            "labels": {"app.kubernetes.io/name": "zerohop", "empty": ""},
            "annotations": {"k8s.v1.cni.cncf.io/resourceName": "nvidia.com/rdma_rail0"}});
        assert_eq!(messages(&meta), Vec::<String>::new());
    }

    #[test]
    fn reports_bad_names_labels_and_unknown_fields() {
        let meta = json!({"name": "Bad_Name", "namespace": "a.b", "lables": {}, "labels": {"x": 1, "-bad": "ok"}});
        insta::assert_debug_snapshot!(messages(&meta));
    }

    #[test]
    fn label_syntax() {
        assert!(qualified_name_problem("nvidia.com/gpu.present").is_none());
        assert!(qualified_name_problem("a/b/c").is_some());
        assert!(label_value_problem(&"a".repeat(64)).is_some());
        assert!(dns_subdomain_problem("99-worker-zerohop-kargs").is_none());
        assert!(dns_label_problem("nvidia-network-operator").is_none());
        assert!(dns_label_problem("-x").is_some());
    }
}
