//! Errors in an intent file, each with the file, line and column.

use std::fmt;

use serde_saphyr::Location;

/// One problem in the intent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
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
    /// A diagnostic at a parser location.
    pub(crate) fn at(location: &Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
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

/// Why an intent file cannot be planned: every problem found, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
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
            if let Some(help) = &diagnostic.help {
                write!(f, "\n  help: {help}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for PlanError {}
