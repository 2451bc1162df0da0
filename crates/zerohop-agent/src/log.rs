//! The agent's log: one logfmt line per event on standard error, which the
//! kubelet collects.
//!
//! `ts=2026-11-23T10:00:00.123Z level=info msg="pass published" ready=True`

use std::io::Write as _;

use k8s_openapi::jiff::Timestamp;

/// Logs something that went as expected.
pub fn info(message: &str, fields: &[(&str, &str)]) {
    line("info", message, fields);
}

/// Logs something that went wrong and will be retried or worked around.
pub fn warn(message: &str, fields: &[(&str, &str)]) {
    line("warn", message, fields);
}

fn line(level: &str, message: &str, fields: &[(&str, &str)]) {
    let mut text = format!(
        "ts={} level={level} msg={}",
        Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
        value(message)
    );
    for (key, field) in fields {
        text.push(' ');
        text.push_str(key);
        text.push('=');
        text.push_str(&value(field));
    }
    text.push('\n');
    // A closed standard error must not stop the agent.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// A logfmt value: bare when it is one plain word, quoted and escaped
/// otherwise (control characters included, so one event stays one line).
pub fn value(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '=' && c != '\\');
    if plain {
        text.to_owned()
    } else {
        format!("{text:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_on_one_line() {
        assert_eq!(value("True"), "True");
        assert_eq!(value("two words"), "\"two words\"");
        assert_eq!(value("a\nb"), "\"a\\nb\"");
        assert_eq!(value(""), "\"\"");
        assert_eq!(value("k=v"), "\"k=v\"");
        assert_eq!(value("\u{1b}[31m"), "\"\\u{1b}[31m\"");
    }
}
