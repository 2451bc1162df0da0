//! Documented process exit codes, the same for every command.
//!
//! A broken pipe on standard output (`zerohop doctor | head`) is not an error
//! and exits with the code the command would have had.

/// Namespace for the exit code constants.
pub enum ExitCode {}

impl ExitCode {
    /// Nothing failed (findings may still warn).
    pub const OK: i32 = 0;
    /// At least one finding has status `fail`.
    pub const FAILED: i32 = 1;
    /// The command line or an input file was invalid, or the environment
    /// refused (a permission, a full disk); nothing was checked.
    pub const USAGE: i32 = 2;
    /// An internal error, a bug in zerohop.
    pub const INTERNAL: i32 = 3;
    /// Stopped by SIGINT (Ctrl-C) before finishing: 128 + 2, see
    /// [`ExitCode::signalled`].
    pub const INTERRUPTED: i32 = ExitCode::signalled(2);
    /// Stopped by SIGTERM before finishing: 128 + 15, see
    /// [`ExitCode::signalled`].
    pub const TERMINATED: i32 = ExitCode::signalled(15);

    /// The code of a command stopped by signal `signal` before finishing:
    /// 128 + its number, as a shell reports a process the signal killed
    /// (POSIX `sh`, "Exit Status for Commands"), whether the command ended
    /// at once or stopped cleanly first. Commands that write (`plan -o`,
    /// `bench prepare`) leave nothing half-written.
    pub const fn signalled(signal: i32) -> i32 {
        128 + signal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_gives_128_plus_its_number() {
        assert_eq!(ExitCode::INTERRUPTED, 130);
        assert_eq!(ExitCode::TERMINATED, 143);
    }
}
