//! Reading the intent file with spans, strict on unknown keys.

use serde_saphyr::Error;

use crate::diagnostic::Diagnostic;
use crate::intent::DataPathPlan;

/// The largest intent file read; a real one is a few KiB.
pub const MAX_INTENT_BYTES: usize = 1 << 20;

/// Parses an intent file's text. Unknown keys, wrong types and YAML syntax
/// errors come back as one diagnostic at the offending node.
pub(crate) fn parse(text: &str) -> Result<DataPathPlan, Diagnostic> {
    if text.len() > MAX_INTENT_BYTES {
        return Err(Diagnostic {
            line: 0,
            column: 0,
            message: format!("file is larger than {MAX_INTENT_BYTES} bytes"),
            help: None,
        });
    }
    serde_saphyr::from_str(text).map_err(|err| diagnostic(&err))
}

fn diagnostic(err: &Error) -> Diagnostic {
    let err = err.without_snippet();
    let location = err.location().unwrap_or(serde_saphyr::Location::UNKNOWN);
    match err {
        Error::SerdeUnknownField {
            field, expected, ..
        } => {
            let found = Diagnostic::at(&location, format!("unknown field {field:?}"));
            match zerohop_known::suggest::closest(field, expected.iter().copied()) {
                Some(suggestion) => found.help(format!("did you mean {suggestion:?}?")),
                None => found.help(format!("expected one of {}", quoted(expected))),
            }
        }
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let found = Diagnostic::at(&location, format!("unknown value {variant:?}"));
            match zerohop_known::suggest::closest(variant, expected.iter().copied()) {
                Some(suggestion) => found.help(format!("did you mean {suggestion:?}?")),
                None => found.help(format!("expected one of {}", quoted(expected))),
            }
        }
        Error::SerdeMissingField { field, .. } => {
            Diagnostic::at(&location, format!("missing required field {field:?}"))
                .help("see docs/plan.md for the intent format")
        }
        other => Diagnostic::at(&location, plain_message(other)),
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The parser's message without its own "at line X column Y" suffix (the
/// diagnostic carries the position), starting lowercase.
fn plain_message(err: &Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default();
    let trimmed = match first.rfind(" at line ") {
        Some(index) => &first[..index],
        None => first,
    };
    let mut chars = trimmed.trim().trim_end_matches('.').chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => "invalid yaml".to_owned(),
    }
}
