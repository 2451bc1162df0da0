//! Renderers that turn a [`Report`](crate::Report) into output.
//!
//! Renderers always emit ANSI styles; the binary writes through a stream that
//! strips them when standard output is not a terminal or `NO_COLOR` is set.

pub mod html;
pub mod human;
pub mod json;
pub mod printable;
pub mod sarif;
pub mod snippet;
mod style;

/// `text` without the ANSI styles the renderers emit (`ESC [ … m`): what a
/// renderer's output reads like where colour is off, for documentation and
/// tests that hold it. Escapes from the input never reach here raw (they
/// are written as `\x1b`), so every `ESC` is one of ours.
pub fn without_styles(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&next| next == 'm');
        } else {
            plain.push(c);
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_are_removed_and_text_kept() {
        assert_eq!(
            without_styles("\u{1b}[1m\u{1b}[31mfail\u{1b}[0m KRN001 \\x1b"),
            "fail KRN001 \\x1b"
        );
    }
}
