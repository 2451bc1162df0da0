//! `zerohop bench`.

use crate::error::CliError;

/// Subcommands of `zerohop bench`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Args {
    /// Read files and report throughput.
    Read,
}

/// Runs `zerohop bench`.
pub(crate) fn run(_args: Args) -> Result<i32, CliError> {
    Err(CliError::usage("zerohop bench is not available in this build"))
}
