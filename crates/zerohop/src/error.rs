//! The two ways a command can fail before producing its result.

use std::fmt::{Debug, Display};

/// An error that ends a command; decides between exit code 2 and 3.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Bad arguments or bad input: exit code 2, the message says what to do.
    Usage(anyhow::Error),
    /// A bug or an unexpected I/O failure: exit code 3.
    Internal(anyhow::Error),
}

impl CliError {
    /// A usage error with a message.
    pub(crate) fn usage(message: impl Display + Debug + Send + Sync + 'static) -> CliError {
        CliError::Usage(anyhow::Error::msg(message))
    }
}

impl From<anyhow::Error> for CliError {
    fn from(err: anyhow::Error) -> CliError {
        CliError::Internal(err)
    }
}
