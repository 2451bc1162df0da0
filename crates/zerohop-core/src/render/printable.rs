//! Text from hosts and manifests made safe to print on a terminal.
//!
//! A `/proc/cmdline`, a mount point or a YAML scalar can carry escape
//! sequences (`ESC ]0;…BEL` retitles the terminal, others rewrite what was
//! printed or worse). Every human renderer passes such text through
//! [`printable`], on a terminal or not: output piped to a file is often
//! printed later with `cat`.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character that could control a terminal written as an
/// escape: C0 and C1 control characters and DEL as `\n`, `\r`, `\x1b`,
/// `\u{85}`, and the bidirectional overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069) that reorder what a reader sees as `\u{202e}`. A tab is
/// kept. Text without such characters is returned as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is written as an escape by [`printable`].
pub fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str(r"\n"),
        '\r' => out.push_str(r"\r"),
        c if u32::from(c) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(printable("ro quiet\tx"), Cow::Borrowed(_)));
    }

    #[test]
    fn terminal_controls_are_escaped() {
        assert_eq!(printable("a\u{1b}]0;pwned\u{7}b"), r"a\x1b]0;pwned\x07b");
        assert_eq!(printable("l1\nl2\r"), r"l1\nl2\r");
        assert_eq!(printable("\u{9b}31m\u{7f}"), r"\u{9b}31m\x7f");
        assert_eq!(printable("abc\u{202e}fed"), r"abc\u{202e}fed");
    }

    proptest! {
        #[test]
        fn nothing_that_controls_a_terminal_survives(text in "\\PC*|[\\x00-\\x1f\\x7f-\\u{9f}\\u{202a}-\\u{202e}a]{0,40}") {
            prop_assert!(!printable(&text).chars().any(needs_escape));
        }
    }
}
