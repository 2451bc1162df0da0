//! `zerohop lint`.

use crate::error::CliError;

/// Arguments of `zerohop lint`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `zerohop lint`.
pub(crate) fn run(_args: Args) -> Result<i32, CliError> {
    Err(CliError::usage("zerohop lint is not available in this build"))
}
