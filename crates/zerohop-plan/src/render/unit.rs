//! systemd unit files: the one place where values are written into them.
//!
//! A unit file is not a shell script, and its rules differ per setting
//! (systemd.syntax(7), systemd.unit(5), systemd.service(5), systemd.mount(5)):
//!
//! - Every setting is one line; a line ending in a backslash continues on
//!   the next one.
//! - `Description=`, and `What=`, `Where=` and `Options=` of mount units,
//!   take the value as it is, without quoting, but expand `%` specifiers:
//!   "the usual specifier expansion is applied to this setting, literal
//!   percent characters should hence be written as `%%`" (systemd.mount(5)).
//! - `Exec*=` lines are split into words on white space, honour single and
//!   double quotes with C-style escapes (`\\`, `\"`, `\xNN`), expand `%`
//!   specifiers everywhere, quoted or not, and `$VAR`/`${VAR}`, where a
//!   literal dollar is `$$`; a lone `;` separates commands
//!   (systemd.service(5), "Command lines").
//!
//! The intent's validation keeps control characters and backslashes out of
//! every value that gets here; these functions escape them all the same, so
//! that no value can ever add a line or a setting to a unit.

use std::fmt::Write as _;

/// A value for a setting that expands specifiers but takes no quoting
/// (`Description=`, `What=`, `Where=`, `Options=`): `%` doubled, and
/// control characters and a final backslash written as the text `\xNN`,
/// which keeps the setting on its line (such a value is wrong, but
/// harmless, and validation refuses it first).
pub(crate) fn value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, c) in text.char_indices() {
        match c {
            '%' => out.push_str("%%"),
            '\\' if index + 1 == text.len() => out.push_str(r"\x5c"),
            c if c.is_control() => hex_escape(c, &mut out),
            c => out.push(c),
        }
    }
    out
}

/// An `Exec*=` command line of `words`: each word that is not plain goes
/// in double quotes with `\\`, `\"` and control characters escaped, `%`
/// and `$` are doubled in every word, and a lone `;` becomes `\;`.
pub(crate) fn command_line(words: &[&str]) -> String {
    let mut out = String::new();
    for (index, word) in words.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        if *word == ";" {
            out.push_str(r"\;");
            continue;
        }
        let plain = !word.is_empty()
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b));
        if !plain {
            out.push('"');
        }
        for c in word.chars() {
            match c {
                '%' => out.push_str("%%"),
                '$' => out.push_str("$$"),
                '\\' => out.push_str(r"\\"),
                '"' => out.push_str("\\\""),
                c if c.is_control() => hex_escape(c, &mut out),
                c => out.push(c),
            }
        }
        if !plain {
            out.push('"');
        }
    }
    out
}

fn hex_escape(c: char, out: &mut String) {
    let mut bytes = [0u8; 4];
    for byte in c.encode_utf8(&mut bytes).bytes() {
        let _ = write!(out, "\\x{byte:02x}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_double_percent_and_stay_on_one_line() {
        assert_eq!(
            value("10.10.0.10:/export/ai-data"),
            "10.10.0.10:/export/ai-data"
        );
        assert_eq!(value("/mnt/100%"), "/mnt/100%%");
        assert_eq!(value("/mnt/a\nExecStart=/x"), r"/mnt/a\x0aExecStart=/x");
        assert_eq!(value("/mnt/a\\"), r"/mnt/a\x5c");
        assert_eq!(value(r"/mnt/a\b"), r"/mnt/a\b");
        assert!(!value("a\r\n\u{85}b").contains(['\n', '\r', '\u{85}']));
    }

    #[test]
    fn command_lines_quote_split_and_expand_nothing() {
        assert_eq!(
            command_line(&["/usr/local/sbin/zerohop-roce-qos.sh"]),
            "/usr/local/sbin/zerohop-roce-qos.sh"
        );
        assert_eq!(
            command_line(&["/bin/echo", "a b", "$HOME", "%n", ";", "x\"y\\", "", "l\nm"]),
            r#"/bin/echo "a b" "$$HOME" "%%n" \; "x\"y\\" "" "l\x0am""#
        );
    }
}
