//! The ways a command can fail before producing its result, and how each
//! becomes an exit code and one sentence on standard error.

use std::fmt::{Debug, Display};
use std::io;

use zerohop_core::exit::ExitCode;

/// An error that ends a command; decides between exit code 2 and 3.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Bad arguments or bad input: exit code 2, the message says what to do.
    Usage(anyhow::Error),
    /// Anything else; exit code 2 when an operating-system error is its cause
    /// (a full disk, a refused permission: the environment, not zerohop),
    /// else 3 (a bug).
    Internal(anyhow::Error),
}

impl CliError {
    /// A usage error with a message.
    pub(crate) fn usage(message: impl Display + Debug + Send + Sync + 'static) -> CliError {
        CliError::Usage(anyhow::Error::msg(message))
    }

    /// The exit code and the message to print for this error.
    pub(crate) fn exit(&self) -> (i32, String) {
        match self {
            CliError::Usage(err) => (ExitCode::USAGE, format!("error: {}", sentence(err))),
            CliError::Internal(err) if caused_by_environment(err) => {
                (ExitCode::USAGE, format!("error: {}", sentence(err)))
            }
            CliError::Internal(err) => (
                ExitCode::INTERNAL,
                format!("internal error: {}", sentence(err)),
            ),
        }
    }
}

impl From<anyhow::Error> for CliError {
    fn from(err: anyhow::Error) -> CliError {
        CliError::Internal(err)
    }
}

/// Whether an operating-system error is among the causes: writing to a full
/// disk or a closed terminal, a directory without permission.
fn caused_by_environment(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<io::Error>())
}

/// The error and its causes as one line, each cause said once: an error
/// whose message already includes its cause (`cannot write x: disk full`
/// caused by `disk full`) does not repeat it.
fn sentence(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if parts.iter().any(|part| part.contains(&text)) {
            continue;
        }
        parts.push(text);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use anyhow::Context as _;

    use super::*;

    #[test]
    fn an_os_error_is_the_environment_and_said_once() {
        let disk_full = io::Error::from(io::ErrorKind::StorageFull);
        let os_text = disk_full.to_string();
        let err =
            anyhow::Error::new(disk_full).context(format!("cannot write out/x.yaml: {os_text}"));
        let (code, message) = CliError::Internal(err).exit();
        assert_eq!(code, ExitCode::USAGE);
        assert_eq!(message.matches(&os_text).count(), 1, "{message}");
        assert!(
            message.starts_with("error: cannot write out/x.yaml"),
            "{message}"
        );
    }

    #[test]
    fn other_failures_are_internal() {
        let err = anyhow::anyhow!("a bug").context("while rendering");
        let (code, message) = CliError::Internal(err).exit();
        assert_eq!(code, ExitCode::INTERNAL);
        assert_eq!(message, "internal error: while rendering: a bug");
    }

    #[test]
    fn context_on_an_os_error_keeps_both_once() {
        let err: anyhow::Result<()> = Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "permission denied",
        ))
        .context("failed to write the report");
        let (code, message) = CliError::from(err.unwrap_err()).exit();
        assert_eq!(code, ExitCode::USAGE);
        assert_eq!(
            message,
            "error: failed to write the report: permission denied"
        );
    }
}
