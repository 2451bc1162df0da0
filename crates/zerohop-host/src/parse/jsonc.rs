//! JSON with `//` and `/* */` comments, as NVIDIA ships `cufile.json`.
//!
//! Comments are replaced by spaces (newlines kept), never inside strings,
//! so the positions serde_json reports are positions in the original file.

use std::fmt;

/// Why a JSON-with-comments document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsoncError {
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// What is wrong, lowercase.
    pub message: String,
}

impl fmt::Display for JsoncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for JsoncError {}

/// Deepest nesting accepted; serde_json's own limit is 128, which a
/// hostile file reaches before ours matters, but a clear message helps.
const MAX_DEPTH: usize = 64;

/// Replaces every comment outside strings with spaces, keeping newlines.
/// An unterminated block comment is an error at the place it starts.
pub fn strip_comments(text: &str) -> Result<String, JsoncError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    let mut in_string = false;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            out.push(byte);
            if byte == b'\\' {
                if let Some(&next) = bytes.get(index + 1) {
                    out.push(next);
                    index += 1;
                }
            } else if byte == b'"' {
                in_string = false;
            }
            index += 1;
            continue;
        }
        match (byte, bytes.get(index + 1)) {
            (b'"', _) => {
                in_string = true;
                out.push(byte);
                index += 1;
            }
            (b'/', Some(b'/')) => {
                while index < bytes.len() && bytes[index] != b'\n' {
                    out.push(b' ');
                    index += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let start = index;
                let Some(end) = text[index + 2..].find("*/") else {
                    let (line, column) = position(text, start);
                    return Err(JsoncError {
                        line,
                        column,
                        message: "block comment is not closed".to_owned(),
                    });
                };
                let stop = index + 2 + end + 2;
                out.extend(
                    bytes[index..stop]
                        .iter()
                        .map(|&b| if b == b'\n' { b'\n' } else { b' ' }),
                );
                index = stop;
            }
            _ => {
                out.push(byte);
                index += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, and only outside multi-byte sequences.
    String::from_utf8(out).map_err(|_| JsoncError {
        line: 1,
        column: 1,
        message: "not utf-8 after removing comments".to_owned(),
    })
}

/// Parses JSON with comments into a value.
pub fn parse(text: &str) -> Result<serde_json::Value, JsoncError> {
    let stripped = strip_comments(text)?;
    if let Some((offset, depth)) = too_deep(&stripped) {
        let (line, column) = position(&stripped, offset);
        return Err(JsoncError {
            line,
            column,
            message: format!("nested deeper than {depth} levels"),
        });
    }
    serde_json::from_str(&stripped).map_err(|err| JsoncError {
        line: err.line(),
        column: err.column(),
        message: lowercase_first(&strip_position(&err.to_string())),
    })
}

fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, byte) in text.bytes().enumerate() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some((offset, MAX_DEPTH));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, column)
}

/// serde_json appends " at line L column C"; the error carries them apart.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// Lowercases the first letter of a message unless it starts an acronym (`EOF`).
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if !second.is_uppercase() => first
            .to_lowercase()
            .chain(std::iter::once(second))
            .chain(chars)
            .collect(),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn comments_go_strings_stay() {
        let text = "{\n  // a comment with \"quotes\"\n  \"url\": \"http://x/*y*/\", /* block\n spanning */ \"n\": 1\n}";
        let value = parse(text).unwrap();
        assert_eq!(value["url"], "http://x/*y*/");
        assert_eq!(value["n"], 1);
    }

    #[test]
    fn escaped_quotes_do_not_end_strings() {
        let value = parse(r#"{"a": "x\"//y", "b": 2}"#).unwrap();
        assert_eq!(value["a"], "x\"//y");
    }

    #[test]
    fn errors_point_into_the_original_file() {
        let err = parse("{\n  // fine\n  \"a\": 1,\n  \"b\": \n").unwrap_err();
        assert_eq!(err.line, 5);
        assert!(err.message.starts_with("EOF while parsing"), "{err}");
        let err = parse("{ /* open\n\"a\": 1 }").unwrap_err();
        assert_eq!((err.line, err.column), (1, 3));
        assert!(err.to_string().contains("block comment is not closed"));
        let err = parse("{\"a\": 1,}").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.starts_with("trailing comma"), "{err}");
        assert_eq!(lowercase_first("Expected value"), "expected value");
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(1000);
        let err = parse(&deep).unwrap_err();
        assert!(err.message.contains("nested deeper"));
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,300}") {
            let _ = parse(&text);
        }

        #[test]
        fn stripping_keeps_length_and_lines(text in "[ -~\\n]{0,200}") {
            if let Ok(stripped) = strip_comments(&text) {
                prop_assert_eq!(stripped.len(), text.len());
                prop_assert_eq!(stripped.matches('\n').count(), text.matches('\n').count());
            }
        }

        #[test]
        fn json_without_comments_parses_the_same(map in proptest::collection::btree_map("[a-z/*]{1,8}", "[ -~]{0,12}", 0..6)) {
            let text = serde_json::to_string(&map).unwrap();
            let value = parse(&text).unwrap();
            prop_assert_eq!(value, serde_json::to_value(&map).unwrap());
        }
    }
}
