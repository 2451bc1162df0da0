//! Errors in an intent file, each with the rule it breaks, the file, line
//! and column.

use std::fmt;

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_saphyr::Location;
use zerohop_core::RuleInfo;

use crate::rule::Rule;

/// One problem in the intent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The rule it breaks (`zerohop explain` documents it).
    pub rule: &'static RuleInfo,
    /// 1-based line, 0 when unknown.
    pub line: u64,
    /// 1-based column, 0 when unknown.
    pub column: u64,
    /// What is wrong, a lowercase fragment.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic of `rule` at a parser location.
    pub(crate) fn at(
        rule: &'static Rule,
        location: &Location,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            rule: &rule.info,
            line: location.line(),
            column: location.column(),
            message: message.into(),
            help: None,
        }
    }

    /// Adds what to do.
    pub(crate) fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
}

/// In JSON, the rule by its ID and name beside the place and the text.
impl Serialize for Diagnostic {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Diagnostic", 6)?;
        out.serialize_field("id", self.rule.id)?;
        out.serialize_field("name", self.rule.name)?;
        out.serialize_field("line", &self.line)?;
        out.serialize_field("column", &self.column)?;
        out.serialize_field("message", &self.message)?;
        out.serialize_field("help", &self.help)?;
        out.end()
    }
}

/// Why an intent file cannot be planned: every problem found, in file order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanError {
    /// The file name as given by the caller.
    pub file: String,
    /// The problems, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

impl PlanError {
    pub(crate) fn new(file: &str, mut diagnostics: Vec<Diagnostic>) -> PlanError {
        diagnostics.sort_by_key(|d| (d.line, d.column));
        PlanError {
            file: file.to_owned(),
            diagnostics,
        }
    }
}

/// One diagnostic a line, `file:line:column: message [ID]` (the rule's ID
/// last, as compilers put a warning's flag), then its help.
impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, diagnostic) in self.diagnostics.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            if diagnostic.line == 0 {
                write!(f, "{}: {}", self.file, diagnostic.message)?;
            } else {
                write!(
                    f,
                    "{}:{}:{}: {}",
                    self.file, diagnostic.line, diagnostic.column, diagnostic.message
                )?;
            }
            write!(f, " [{}]", diagnostic.rule.id)?;
            if let Some(help) = &diagnostic.help {
                write!(f, "\n  help: {help}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for PlanError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::HOST_LOCAL_IPAM;

    fn error() -> PlanError {
        let diagnostic = Diagnostic {
            rule: &HOST_LOCAL_IPAM.info,
            line: 3,
            column: 11,
            message: "ipam host-local allocates from the same range on every node".to_owned(),
            help: Some("use whereabouts".to_owned()),
        };
        PlanError::new("cluster.yaml", vec![diagnostic])
    }

    #[test]
    fn the_text_ends_each_diagnostic_with_its_rule() {
        assert_eq!(
            error().to_string(),
            "cluster.yaml:3:11: ipam host-local allocates from the same range on every node [ZP036]\n  help: use whereabouts"
        );
    }

    #[test]
    fn the_json_names_the_rule() {
        let json = serde_json::to_value(error()).expect("json");
        let diagnostic = &json["diagnostics"][0];
        assert_eq!(diagnostic["id"], "ZP036");
        assert_eq!(diagnostic["name"], "host-local-ipam");
        assert_eq!(diagnostic["line"], 3);
        assert_eq!(json["file"], "cluster.yaml");
    }
}
