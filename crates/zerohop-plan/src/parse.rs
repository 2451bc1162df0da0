//! Reading the intent file with spans, strict on unknown keys.

use serde_saphyr::Error;

use crate::diagnostic::Diagnostic;
use crate::intent::DataPathPlan;
use crate::rule::declare_intent_rule;

declare_intent_rule! {
    /// The file is not an intent the planner can read: not YAML, a value of the wrong type, a field it does not know or one it needs left out.
    ///
    /// ## What it checks
    /// The intent file as YAML and against the intent's format
    /// (`schemas/datapathplan.schema.json`): the YAML syntax, every
    /// field's type (`gpus: eight` is not a number), fields the format
    /// does not have (with the closest one it has, when one is close),
    /// values outside a field's list (`platform: kubernets`), required
    /// fields left out, and a file over 1 MiB. Reading stops at the first
    /// of these: what follows cannot be placed.
    ///
    /// ## Why it matters
    /// A misspelled field is not a default: read leniently, `gpusPerPd: 8`
    /// would leave the pod's GPUs unset and render a plan for something
    /// else than what was meant. Nothing is rendered from a file that is
    /// not read whole.
    ///
    /// ## How to fix
    /// Correct the field the diagnostic points at; the help names the
    /// field or value meant. `docs/plan.md` describes every field, and
    /// editors that read JSON Schema complete them from
    /// `schemas/datapathplan.schema.json`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP001/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   workload:
    ///     gpusPerPd: 8
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:21:5: unknown field "gpusPerPd" [ZP001]
    ///   help: did you mean "gpusPerPod"?
    /// ```
    pub(crate) static INVALID_INTENT = {
        id: "ZP001",
        name: "invalid-intent",
        severity: Error,
    };
}

/// The largest intent file read; a real one is a few KiB.
pub const MAX_INTENT_BYTES: usize = 1 << 20;

/// Parses an intent file's text. Unknown keys, wrong types and YAML syntax
/// errors come back as one diagnostic at the offending node.
pub(crate) fn parse(text: &str) -> Result<DataPathPlan, Diagnostic> {
    if text.len() > MAX_INTENT_BYTES {
        return Err(Diagnostic::at(
            &INVALID_INTENT,
            &serde_saphyr::Location::UNKNOWN,
            format!("file is larger than {MAX_INTENT_BYTES} bytes"),
        ));
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
            let found = Diagnostic::at(
                &INVALID_INTENT,
                &location,
                format!("unknown field {field:?}"),
            );
            match zerohop_known::suggest::closest(field, expected.iter().copied()) {
                Some(suggestion) => found.help(format!("did you mean {suggestion:?}?")),
                None => found.help(format!("expected one of {}", quoted(expected))),
            }
        }
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let found = Diagnostic::at(
                &INVALID_INTENT,
                &location,
                format!("unknown value {variant:?}"),
            );
            match zerohop_known::suggest::closest(variant, expected.iter().copied()) {
                Some(suggestion) => found.help(format!("did you mean {suggestion:?}?")),
                None => found.help(format!("expected one of {}", quoted(expected))),
            }
        }
        Error::SerdeMissingField { field, .. } => Diagnostic::at(
            &INVALID_INTENT,
            &location,
            format!("missing required field {field:?}"),
        )
        .help("see docs/plan.md for the intent format"),
        other => Diagnostic::at(&INVALID_INTENT, &location, plain_message(other)),
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
