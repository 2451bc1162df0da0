//! SIGINT and SIGTERM for the commands that write or run for a while
//! (`plan -o`, `bench`): the first raises a flag the command polls, so it
//! finishes or stops cleanly and exits with [`ExitCode::INTERRUPTED`]; a
//! second ends the process at once with the same code.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::anyhow;
use zerohop_core::exit::ExitCode;

use crate::error::CliError;

/// Raises `stop` on the first SIGINT or SIGTERM; a second one exits.
pub(crate) fn stop_on_signal(stop: &Arc<AtomicBool>) -> Result<(), CliError> {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            signal,
            ExitCode::INTERRUPTED,
            Arc::clone(stop),
        )
        .and_then(|_| signal_hook::flag::register(signal, Arc::clone(stop)))
        .map_err(|err| CliError::Internal(anyhow!("cannot install the signal handlers: {err}")))?;
    }
    Ok(())
}
