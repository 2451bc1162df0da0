//! JSON with `//` and `/* */` comments, as NVIDIA ships `cufile.json`.
//!
//! libcufile's reader accepts both comment styles outside strings; NVIDIA's
//! own file (`/usr/local/cuda/gds/cufile.json`, and the "JSON schema" of
//! the GPUDirect Storage Benchmarking and Configuration Guide) uses them to
//! comment out whole keys. The doctor reads the document with [`parse`];
//! the linter checks it with [`parse`] too, then loads the text of
//! [`strip_comments`] with its span-keeping YAML loader. serde_json is
//! this crate's one parsing dependency because JSON's grammar is the
//! knowledge here: the doctor and the linter must call the same file valid.

use std::fmt;

/// A `/*` with no `*/` after it: the rest of the file would be a comment,
/// which no configuration means, so the document is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnclosedComment {
    /// 1-based line of the `/*`.
    pub line: usize,
    /// 1-based column of the `/*`, in characters.
    pub column: usize,
}

impl fmt::Display for UnclosedComment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("block comment is not closed")
    }
}

impl std::error::Error for UnclosedComment {}

/// Replaces every comment outside strings with spaces, one per character,
/// keeping newlines: lines and character columns in the result are those of
/// the original, so a parser's error points into the file as written.
///
/// # Errors
/// [`UnclosedComment`] at the `/*` of a block comment that never ends.
pub fn strip_comments(text: &str) -> Result<String, UnclosedComment> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some((offset, c)) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek().map(|&(_, next)| next)) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                out.push(' ');
                while let Some(&(_, next)) = chars.peek() {
                    if next == '\n' {
                        break;
                    }
                    out.push(' ');
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                let Some(end) = text[offset + 2..].find("*/") else {
                    let (line, column) = position(text, offset);
                    return Err(UnclosedComment { line, column });
                };
                let stop = offset + 2 + end + 2;
                out.extend(text[offset..stop].chars().map(|c| match c {
                    '\n' => '\n',
                    _ => ' ',
                }));
                while chars.peek().is_some_and(|&(next, _)| next < stop) {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// Why a JSON-with-comments document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// Parses JSON with comments into a value: comments stripped, then strict
/// JSON (no trailing comma), as libcufile's reader takes it.
///
/// # Errors
/// A [`JsoncError`] at the line and column of the problem.
pub fn parse(text: &str) -> Result<serde_json::Value, JsoncError> {
    let stripped = strip_comments(text).map_err(|err| JsoncError {
        line: err.line,
        column: err.column,
        message: err.to_string(),
    })?;
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

/// The 1-based line and character column of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn comments_go_strings_stay() {
        let text = "{\n  // a comment with \"quotes\"\n  \"url\": \"http://x/*y*/\", /* block\n spanning */ \"n\": 1\n}";
        let stripped = strip_comments(text).unwrap();
        assert!(stripped.contains("\"http://x/*y*/\""));
        assert!(!stripped.contains("comment") && !stripped.contains("spanning"));
        assert_eq!(stripped.lines().count(), text.lines().count());
    }

    #[test]
    fn escaped_quotes_do_not_end_strings() {
        let text = r#"{"a": "x\"//y", "b": 2}"#;
        assert_eq!(strip_comments(text).unwrap(), text);
    }

    #[test]
    fn an_unclosed_block_comment_is_refused_where_it_starts() {
        let err = strip_comments("{\n  \"a\": 1 /* open\n}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 10));
        assert_eq!(err.to_string(), "block comment is not closed");
        // After the closing brace too: the file cannot be meant that way.
        assert!(strip_comments("{}\n/*").is_err());
        assert!(strip_comments("{} /* a */ /**/").is_ok());
    }

    #[test]
    fn characters_keep_their_columns() {
        let text = "{ /* é */ \"a\": 1 }";
        let stripped = strip_comments(text).unwrap();
        assert_eq!(stripped.chars().count(), text.chars().count());
        assert_eq!(stripped.find('"'), Some(10));
        assert_eq!(position("ab\néx", 5), (2, 2));
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,300}") {
            let _ = strip_comments(&text);
        }

        #[test]
        fn stripping_keeps_characters_and_lines(text in "[ -~é\\n]{0,200}") {
            if let Ok(stripped) = strip_comments(&text) {
                prop_assert_eq!(stripped.chars().count(), text.chars().count());
                prop_assert_eq!(stripped.matches('\n').count(), text.matches('\n').count());
            }
        }

        #[test]
        fn text_without_comments_is_unchanged(text in "[a-z\"{}:, \\n]{0,200}") {
            prop_assert_eq!(strip_comments(&text).unwrap(), text);
        }
    }
}

#[cfg(test)]
mod parse_tests {
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
        fn json_without_comments_parses_the_same(map in proptest::collection::btree_map("[a-z/*]{1,8}", "[ -~]{0,12}", 0..6)) {
            let text = serde_json::to_string(&map).unwrap();
            let value = parse(&text).unwrap();
            prop_assert_eq!(value, serde_json::to_value(&map).unwrap());
        }
    }
}
