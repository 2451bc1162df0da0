//! Texts from either side shortened for the diff's output: a snapshot may
//! hold a 4 MiB line, a 4,096-byte path or an error message of any length,
//! and the diff's output stays bounded whatever it holds.

use std::borrow::Cow;

/// The most characters of one text in the diff: a line of a unified diff,
/// a path, a value, a message.
pub const MAX_TEXT_CHARS: usize = 400;

/// `text` cut after `max` characters, saying how many bytes were left out.
pub(crate) fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((end, _)) => Cow::Owned(format!(
            "{}… ({} more bytes)",
            &text[..end],
            text.len() - end
        )),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character() {
        assert_eq!(clip("short", 5), "short");
        assert_eq!(clip("ééé", 2), "éé… (2 more bytes)");
        assert!(clip(&"x".repeat(4 << 20), MAX_TEXT_CHARS).len() < MAX_TEXT_CHARS + 32);
    }
}
