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
    /// Stopped by SIGINT or SIGTERM before finishing, as a shell reports a
    /// process killed by SIGINT (128 + 2). Commands that write (`plan -o`,
    /// `bench prepare`) leave nothing half-written.
    pub const INTERRUPTED: i32 = 130;
}
