//! The characters a YAML stream may hold raw.
//!
//! YAML 1.2 §5.1 (`c-printable`) allows tab, LF, CR, 0x20–0x7E, NEL (0x85),
//! 0xA0–0xD7FF, 0xE000–0xFFFD and 0x10000–0x10FFFF; everything else must be
//! written as an escape in a double-quoted scalar (`"\e"`, `"\x1b"`).
//! Kubernetes' YAML library enforces the same set while it reads:
//! `yaml_parser_update_buffer` in go-yaml's `readerc.go` (`gopkg.in/yaml.v2`
//! as vendored by kubernetes/kubernetes, and the same switch in `yaml.v3`)
//! fails with "control characters are not allowed" for any other code point,
//! in comments and quoted scalars alike. Refusing them here keeps a raw escape
//! sequence out of every message and snippet that quotes the input, and keeps
//! the loader from accepting what `kubectl apply` would reject.

/// Bytes decided at a time on the fast path of [`first_forbidden`].
const CHUNK: usize = 32;

/// The first character YAML does not allow raw, with its byte offset.
///
/// Nearly every byte of a manifest is printable ASCII, so the text is read
/// in chunks of [`CHUNK`] bytes, each decided by one test over all its bytes
/// without an early exit (which the compiler turns into a few vector
/// instructions); only a chunk that holds something else (a multibyte
/// character, or a forbidden byte) is decoded character by character. At
/// the 32 MiB input limit this is a few milliseconds, where decoding every
/// character took tens.
pub(super) fn first_forbidden(text: &str) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    // Always a character boundary: chunks skipped whole are ASCII, and the
    // slow path moves by whole characters.
    let mut offset = 0;
    while let Some(rest) = bytes.get(offset..).filter(|rest| !rest.is_empty()) {
        let chunk = rest.get(..CHUNK).unwrap_or(rest);
        if chunk
            .iter()
            .fold(true, |plain, &byte| plain & is_plain_ascii(byte))
        {
            offset += chunk.len();
            continue;
        }
        let end = offset + chunk.len();
        for character in text.get(offset..)?.chars() {
            if !is_allowed(character) {
                return Some((offset, character));
            }
            offset += character.len_utf8();
            if offset >= end {
                break;
            }
        }
    }
    None
}

/// Whether `byte` is ASCII that YAML allows raw: the fast path's test.
fn is_plain_ascii(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | b'\r' | 0x20..=0x7E)
}

/// Whether YAML 1.2 `c-printable` (and go-yaml's reader) allows `character`.
fn is_allowed(character: char) -> bool {
    matches!(
        character,
        '\t' | '\n' | '\r'
            | '\u{20}'..='\u{7E}'
            | '\u{85}'
            | '\u{A0}'..='\u{D7FF}'
            | '\u{E000}'..='\u{FFFD}'
            | '\u{10000}'..='\u{10FFFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printable_set_is_exactly_yaml_c_printable() {
        for allowed in [
            '\t', '\n', '\r', ' ', '~', '\u{85}', '\u{A0}', 'é', '\u{D7FF}',
        ]
        .into_iter()
        .chain([
            '\u{E000}',
            '\u{FEFF}',
            '\u{FFFD}',
            '\u{10000}',
            '\u{10FFFF}',
        ]) {
            assert!(is_allowed(allowed), "{:?}", allowed);
        }
        for refused in [
            '\0', '\u{7}', '\u{8}', '\u{B}', '\u{C}', '\u{1B}', '\u{1F}', '\u{7F}',
        ]
        .into_iter()
        .chain([
            '\u{80}', '\u{84}', '\u{86}', '\u{9B}', '\u{9F}', '\u{FFFE}', '\u{FFFF}',
        ]) {
            assert!(!is_allowed(refused), "{:?}", refused);
        }
    }

    #[test]
    fn the_offset_is_in_bytes_past_multibyte_characters() {
        assert_eq!(first_forbidden("é€😀\u{9B}x"), Some((9, '\u{9B}')));
        assert_eq!(first_forbidden("a: \"\\e\"\n"), None);
        assert_eq!(first_forbidden(""), None);
    }

    #[test]
    fn chunks_of_ascii_and_characters_across_their_ends_are_decided_alike() {
        // A forbidden byte after whole chunks of ASCII, at every place in a
        // chunk.
        for at in 0..3 * CHUNK {
            let text = format!("{}\u{1b}[31m", "a".repeat(at));
            assert_eq!(first_forbidden(&text), Some((at, '\u{1b}')), "{at}");
        }
        // A multibyte character straddling the end of a chunk, with a
        // forbidden one after it in the next chunk, and the same text clean.
        let head = "b".repeat(CHUNK - 1);
        let text = format!("{head}é{}\u{9B}", "c".repeat(CHUNK));
        assert_eq!(first_forbidden(&text), Some((2 * CHUNK + 1, '\u{9B}')));
        assert_eq!(
            first_forbidden(&format!("{head}é{}", "c".repeat(CHUNK))),
            None
        );
    }
}
