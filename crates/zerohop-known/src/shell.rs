//! Quoting for the words zerohop writes into shell scripts and into the
//! commands it shows as fixes.
//!
//! Every string that comes from an intent file, a manifest or a host tree
//! and lands in a script or a command goes through [`quote`], even when its
//! grammar was validated first: validation keeps the meaning right, quoting
//! keeps the shell from finding a second meaning.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Quotes `word` so that a POSIX shell reads it back as exactly one word
/// with exactly these characters.
///
/// - Words made only of characters no shell treats specially
///   (`A-Z a-z 0-9 _ @ % + = : , . / -`) are returned as they are.
/// - Others are put in single quotes, inside which no shell expands
///   anything; a `'` in the word becomes `'\''`.
/// - Words with control characters (a newline, an escape sequence) use the
///   dollar-single-quote form `$'…'` of POSIX.1-2024 (bash, zsh, ksh and
///   busybox sh have it too), with each control character written as
///   `\xHH`, so the command stays on one line and prints safely.
pub fn quote(word: &str) -> Cow<'_, str> {
    if !word.is_empty() && word.bytes().all(is_plain) {
        return Cow::Borrowed(word);
    }
    if !word.chars().any(char::is_control) {
        return Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")));
    }
    let mut out = String::with_capacity(word.len() + 8);
    out.push_str("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            c if c.is_control() => {
                let mut bytes = [0u8; 4];
                for byte in c.encode_utf8(&mut bytes).bytes() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    Cow::Owned(out)
}

/// Quotes each word and joins them with spaces: one command line.
pub fn join<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words.into_iter().map(quote).collect::<Vec<_>>().join(" ")
}

fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&byte)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn plain_words_stay_as_they_are() {
        assert_eq!(quote("/mnt/ai-data"), "/mnt/ai-data");
        assert_eq!(quote("mlx5_0"), "mlx5_0");
        assert_eq!(
            quote("rsize=1048576,proto=rdma"),
            "rsize=1048576,proto=rdma"
        );
    }

    #[test]
    fn special_words_are_single_quoted() {
        assert_eq!(quote(""), "''");
        assert_eq!(
            quote("/mnt/data;$(touch /tmp/p)"),
            "'/mnt/data;$(touch /tmp/p)'"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("~root"), "'~root'");
    }

    #[test]
    fn control_characters_are_escaped_on_one_line() {
        assert_eq!(quote("/mnt/a\nb"), r"$'/mnt/a\x0ab'");
        assert_eq!(quote("\u{1b}]0;x\u{7}'\\"), r"$'\x1b]0;x\x07\'\\'");
        assert_eq!(quote("a\u{85}b"), r"$'a\xc2\x85b'");
        assert!(!quote("a\nb\rc").contains(['\n', '\r']));
    }

    #[test]
    fn join_makes_one_command() {
        assert_eq!(join(["mount", "-o", "a b", "/x"]), "mount -o 'a b' /x");
    }

    /// The shell that reads the quoted word back, when this machine has it.
    fn echo_back(shell: &str, quoted: &str) -> Option<Vec<u8>> {
        let output = Command::new(shell)
            .arg("-c")
            .arg(format!("printf '%s' {quoted}"))
            .output()
            .ok()?;
        assert!(output.status.success(), "{shell} rejected {quoted}");
        Some(output.stdout)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the word, the shell reads it back unchanged and runs
        /// nothing: the real shells are the oracle, not a model of them.
        #[test]
        fn shells_read_back_the_same_word(word in "[ -~\u{80}-\u{10ffff}\\t\\n\\r\u{1b}\u{7}\u{7f}]{0,24}") {
            // The word is the argument of a `%s` format, so only the
            // shell's reading of it is tested, not printf's.
            let quoted = quote(&word);
            // The `$'…'` form is left to bash: Debian's dash predates it.
            if !quoted.starts_with("$'")
                && let Some(read) = echo_back("sh", &quoted)
            {
                prop_assert_eq!(read, word.as_bytes().to_vec());
            }
            if let Some(read) = echo_back("bash", &quoted) {
                prop_assert_eq!(read, word.as_bytes().to_vec());
            }
        }
    }
}
