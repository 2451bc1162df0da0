//! The envelope every JSON output of every command shares.

use serde::Serialize;

use crate::report::SCHEMA_VERSION;

/// A command's JSON output: `schema_version`, `command` and
/// `zerohop_version` first, then the command's own fields (`body`, which
/// must serialise as a JSON object). The doctor's and lint's [`Report`]
/// carries the same three fields itself.
///
/// [`Report`]: crate::Report
#[derive(Debug, Serialize)]
pub struct Document<'a, T: Serialize> {
    /// Version of the document's format, [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The command that wrote it (`topo`, `bench`, `checks`).
    pub command: &'a str,
    /// zerohop's version.
    pub zerohop_version: &'static str,
    /// The command's own fields.
    #[serde(flatten)]
    pub body: &'a T,
}

impl<'a, T: Serialize> Document<'a, T> {
    /// The document `command` writes for `body`.
    pub fn new(command: &'a str, body: &'a T) -> Document<'a, T> {
        Document {
            schema_version: SCHEMA_VERSION,
            command,
            zerohop_version: env!("CARGO_PKG_VERSION"),
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_comes_first_and_the_body_is_flattened() {
        #[derive(Serialize)]
        struct Body {
            gpus: u32,
        }
        let text = serde_json::to_string(&Document::new("topo", &Body { gpus: 8 })).unwrap();
        assert!(
            text.starts_with(&format!(
                r#"{{"schema_version":{SCHEMA_VERSION},"command":"topo","#
            )),
            "{text}"
        );
        assert!(text.ends_with(r#""gpus":8}"#), "{text}");
    }
}
