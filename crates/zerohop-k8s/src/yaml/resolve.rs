//! Scalar resolution the way Kubernetes' YAML library (goyaml.v2, YAML 1.1)
//! does it, noting where YAML 1.2 would disagree.

use std::borrow::Cow;

use super::{Node, Span, Value, Yaml11, Yaml11Reading};

/// Resolves a plain (unquoted, untagged) scalar. The text the parser hands
/// over is kept as the string value when it is one, not copied: most
/// scalars of a manifest are strings.
pub(super) fn resolve_plain(text: Cow<'_, str>, span: Span) -> Node {
    let (value, yaml11) = plain_reading(&text);
    let reading = yaml11.map(|kind| {
        Box::new(Yaml11Reading {
            kind,
            text: text.as_ref().to_owned(),
        })
    });
    Node {
        span,
        value: value.unwrap_or_else(|| Value::String(text.into_owned())),
        yaml11: reading,
    }
}

/// Resolves a scalar with a core-schema tag (`!!str`, `!!int`, ...). A value
/// that does not fit its tag is kept as a string, which the schema check
/// then reports with its type.
pub(super) fn resolve_tagged(text: &str, suffix: &str, span: Span) -> Node {
    let resolved = match suffix {
        "null" => Some(Value::Null),
        "bool" => match plain_reading(text).0 {
            Some(value @ Value::Bool(_)) => Some(value),
            _ => None,
        },
        "int" => match plain_reading(text).0 {
            Some(value @ Value::Int(_)) => Some(value),
            _ => None,
        },
        "float" => match plain_reading(text).0 {
            Some(Value::Int(number)) => Some(Value::Float(number as f64)),
            Some(value @ Value::Float(_)) => Some(value),
            _ => None,
        },
        _ => None,
    };
    Node {
        span,
        value: resolved.unwrap_or_else(|| Value::String(text.to_owned())),
        yaml11: None,
    }
}

/// How Kubernetes reads a plain scalar: its value, `None` for a scalar
/// that stays a string (so that the caller can keep the text it has), and
/// where YAML 1.2 would read it otherwise.
fn plain_reading(text: &str) -> (Option<Value>, Option<Yaml11>) {
    let value = match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return (Some(Value::Bool(true)), Some(Yaml11::Boolean));
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return (Some(Value::Bool(false)), Some(Yaml11::Boolean));
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Value::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => Value::Float(f64::NAN),
        _ => {
            let first = text.as_bytes().first().copied().unwrap_or(b'x');
            if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
                return (None, None);
            }
            if let Some((value, yaml11)) = number(text) {
                return (Some(value), yaml11);
            }
            return (None, is_sexagesimal(text).then_some(Yaml11::Sexagesimal));
        }
    };
    (Some(value), None)
}

/// An integer or float as goyaml.v2 reads it: underscores ignored, `0x`,
/// `0o`, `0b` prefixes, and a leading zero meaning octal.
fn number(text: &str) -> Option<(Value, Option<Yaml11>)> {
    // Copied only when it has underscores: this runs for every plain scalar
    // that starts like a number, `1Gi` and `2025-01-01` included.
    let cleaned: Cow<'_, str> = if text.contains('_') {
        Cow::Owned(text.chars().filter(|&c| c != '_').collect())
    } else {
        Cow::Borrowed(text)
    };
    let (negative, digits) = match cleaned.as_bytes().first() {
        Some(b'-') => (true, cleaned.get(1..)?),
        Some(b'+') => (false, cleaned.get(1..)?),
        _ => (false, cleaned.as_ref()),
    };
    if digits.is_empty() {
        return None;
    }
    let radix_digits = [("0x", 16), ("0o", 8), ("0b", 2)]
        .into_iter()
        .find_map(|(prefix, radix)| digits.strip_prefix(prefix).map(|rest| (rest, radix)));
    let (body, radix, yaml11) = match radix_digits {
        Some((rest, radix)) => (rest, radix, None),
        None if digits.len() > 1
            && digits.starts_with('0')
            && digits.bytes().all(|b| matches!(b, b'0'..=b'7')) =>
        {
            (digits, 8, Some(Yaml11::Octal))
        }
        // goyaml.v2 reads `0999` (not octal) as the float 999.
        None if digits.len() > 1 && digits.starts_with('0') => ("", 10, None),
        None => (digits, 10, None),
    };
    if !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_hexdigit())
        && let Ok(magnitude) = i128::from_str_radix(body, radix)
        && let Ok(number) = i64::try_from(if negative { -magnitude } else { magnitude })
    {
        return Some((Value::Int(number), yaml11));
    }
    let is_float_text = cleaned
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && cleaned.bytes().any(|b| b.is_ascii_digit());
    if is_float_text && let Ok(number) = cleaned.parse::<f64>() {
        return Some((Value::Float(number), None));
    }
    None
}

/// YAML 1.1's base-60 forms: `190:20:30` (int) and `190:20:30.15` (float).
fn is_sexagesimal(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (unsigned, None),
    };
    let mut parts = whole.split(':');
    let Some(head) = parts.next() else {
        return false;
    };
    let head_ok = !head.is_empty() && head.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let mut count = 0;
    let tail_ok = parts.all(|part| {
        count += 1;
        (1..=2).contains(&part.len())
            && part.bytes().all(|b| b.is_ascii_digit())
            && part.parse::<u8>().is_ok_and(|n| n < 60)
    });
    let fraction_ok = fraction.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit() || b == b'_'));
    head_ok && count > 0 && tail_ok && fraction_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> (Value, Option<Yaml11>) {
        let (value, yaml11) = plain_reading(text);
        (
            value.unwrap_or_else(|| Value::String(text.to_owned())),
            yaml11,
        )
    }

    #[test]
    fn kubernetes_reads_yaml_1_1_numbers_and_booleans() {
        assert_eq!(value("0644"), (Value::Int(420), Some(Yaml11::Octal)));
        assert_eq!(value("0"), (Value::Int(0), None));
        assert_eq!(value("0x1f"), (Value::Int(31), None));
        assert_eq!(value("-12"), (Value::Int(-12), None));
        assert_eq!(value("1_000"), (Value::Int(1000), None));
        assert_eq!(value("yes"), (Value::Bool(true), Some(Yaml11::Boolean)));
        assert_eq!(value("off"), (Value::Bool(false), Some(Yaml11::Boolean)));
        assert_eq!(value("1.5"), (Value::Float(1.5), None));
        assert_eq!(value("1e3"), (Value::Float(1000.0), None));
        assert_eq!(value("~"), (Value::Null, None));
    }

    #[test]
    fn strings_stay_strings() {
        assert_eq!(value("101e"), (Value::String("101e".into()), None));
        assert_eq!(value("inf"), (Value::String("inf".into()), None));
        assert_eq!(value("0999"), (Value::Float(999.0), None));
        assert_eq!(value("10.0.0.1"), (Value::String("10.0.0.1".into()), None));
        assert_eq!(value("-"), (Value::String("-".into()), None));
    }

    #[test]
    fn pci_addresses_are_flagged_as_base_60() {
        assert_eq!(
            value("0000:18:00.1"),
            (
                Value::String("0000:18:00.1".into()),
                Some(Yaml11::Sexagesimal)
            )
        );
        assert_eq!(
            value("1:20"),
            (Value::String("1:20".into()), Some(Yaml11::Sexagesimal))
        );
        assert_eq!(value("12:99"), (Value::String("12:99".into()), None));
        assert_eq!(
            value("0000:3b:00.0"),
            (Value::String("0000:3b:00.0".into()), None)
        );
    }
}
