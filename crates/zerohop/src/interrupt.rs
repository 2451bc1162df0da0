//! SIGINT and SIGTERM, the same way for every command: the process exits
//! with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a
//! shell reports a process a signal ended.
//!
//! [`install`], called once before any command runs, makes a signal end the
//! process at once with that code. A command that stops cleanly instead
//! (`plan -o`, `bench` finish or stop their write; `agent`, `fleet --watch`
//! and `validate run` clean up after themselves) takes the signal over:
//! the first one then raises its flag, or reaches its own handler, and a
//! second one still ends the process at once. Such a command exits with
//! [`exit_code`] once it has stopped.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::anyhow;
use signal_hook::consts::{SIGINT, SIGTERM};
use zerohop_core::exit::ExitCode;

use crate::error::CliError;

/// What the handlers share.
struct Handlers {
    /// Whether the next signal ends the process at once: true until a
    /// command takes the signals over, and again after the first signal.
    exit_now: Arc<AtomicBool>,
    /// The number of the last signal received, 0 before any.
    received: Arc<AtomicUsize>,
}

static HANDLERS: OnceLock<Handlers> = OnceLock::new();

/// Installs the handlers of SIGINT and SIGTERM for the whole process.
pub(crate) fn install() -> Result<(), CliError> {
    let handlers = HANDLERS.get_or_init(|| Handlers {
        exit_now: Arc::new(AtomicBool::new(true)),
        received: Arc::new(AtomicUsize::new(0)),
    });
    for signal in [SIGINT, SIGTERM] {
        // Actions run in the order they are registered: the exit is decided
        // on the flag as it was before this signal, then the signal is
        // recorded and the next one armed to exit.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            ExitCode::signalled(signal),
            Arc::clone(&handlers.exit_now),
        )
        .and_then(|_| {
            signal_hook::flag::register_usize(
                signal,
                Arc::clone(&handlers.received),
                usize::try_from(signal).unwrap_or_default(),
            )
        })
        .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&handlers.exit_now)))
        .map_err(|err| CliError::Internal(anyhow!("cannot install the signal handlers: {err}")))?;
    }
    Ok(())
}

/// Takes the signals over for a command that stops cleanly: the first
/// SIGINT or SIGTERM raises `stop`, which the command polls, instead of
/// ending the process; a second one ends it at once.
pub(crate) fn stop_on_signal(stop: &Arc<AtomicBool>) -> Result<(), CliError> {
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(stop)).map_err(|err| {
            CliError::Internal(anyhow!("cannot install the signal handlers: {err}"))
        })?;
    }
    handled_by_the_command();
    Ok(())
}

/// A fresh flag for [`stop_on_signal`]: for a command whose write is all or
/// nothing (`plan -o`, `snapshot -o`), which is better finished, or stopped
/// before it writes, than killed with a temporary file left behind.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>, CliError> {
    let flag = Arc::new(AtomicBool::new(false));
    stop_on_signal(&flag)?;
    Ok(flag)
}

/// Takes the signals over for a command with handlers of its own (the
/// agent, `fleet --watch` and `validate run` wait for the signals on their
/// runtime and clean up): the first signal no longer ends the process.
pub(crate) fn handled_by_the_command() {
    if let Some(handlers) = HANDLERS.get() {
        handlers.exit_now.store(false, Ordering::SeqCst);
    }
}

/// The signal that stopped the command, if one did.
fn received() -> Option<i32> {
    let number = HANDLERS.get()?.received.load(Ordering::SeqCst);
    i32::try_from(number).ok().filter(|&signal| signal != 0)
}

/// The exit code of a command that a signal stopped: 128 + its number,
/// [`ExitCode::INTERRUPTED`] when none was recorded.
pub(crate) fn exit_code() -> i32 {
    received().map_or(ExitCode::INTERRUPTED, ExitCode::signalled)
}

/// `code`, the exit code of a command that ran until it returned, unless a
/// signal is what made it return (the agent, `fleet --watch`): then
/// 128 + the signal's number.
#[cfg(feature = "cluster")]
pub(crate) fn unless_signalled(code: i32) -> i32 {
    received().map_or(code, ExitCode::signalled)
}
