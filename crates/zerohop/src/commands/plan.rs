//! `zerohop plan`.

use crate::error::CliError;

/// Arguments of `zerohop plan`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `zerohop plan`.
pub(crate) fn run(_args: Args) -> Result<i32, CliError> {
    Err(CliError::usage("zerohop plan is not available in this build"))
}
