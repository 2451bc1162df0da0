//! Why a file that exists could not be used.

pub use zerohop_input::FileKind;

/// Why a file that exists could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    /// The file is larger than the cap for this read.
    #[error("{path} is larger than {cap} bytes")]
    TooLarge {
        /// The host path.
        path: String,
        /// The cap in bytes.
        cap: usize,
    },
    /// The directory has more entries than a listing returns.
    #[error("{path} has more than {cap} entries")]
    TooManyEntries {
        /// The host path.
        path: String,
        /// The most entries a listing returns.
        cap: usize,
    },
    /// The file holds bytes that are not text.
    #[error("{path} is not text (binary or not UTF-8)")]
    NotText {
        /// The host path.
        path: String,
    },
    /// The path names something other than a regular file, which is not
    /// read (a FIFO would block, a device would be read instead).
    #[error("{path} is {kind}, not a regular file")]
    NotAFile {
        /// The host path.
        path: String,
        /// What it is.
        kind: FileKind,
    },
    /// The read did not finish in time and was abandoned, or the same path
    /// already did not finish earlier in this run.
    #[error("reading {path} did not finish within {seconds} s")]
    Timeout {
        /// The host path.
        path: String,
        /// The deadline in seconds.
        seconds: f64,
    },
    /// Not attempted: so many earlier reads are stuck that no more threads
    /// are spent on this host.
    #[error("{path} not read: {stuck} earlier reads are stuck, no further reads are attempted")]
    GaveUp {
        /// The host path.
        path: String,
        /// How many reads were stuck when this one was refused.
        stuck: usize,
    },
    /// Symlinks on the way loop or nest too deeply.
    #[error("{path} has a symlink loop")]
    SymlinkLoop {
        /// The host path.
        path: String,
    },
    /// Another I/O error, such as permission denied.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The host path.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl ReadError {
    /// The host path the error is about.
    pub fn path(&self) -> &str {
        match self {
            ReadError::TooLarge { path, .. }
            | ReadError::TooManyEntries { path, .. }
            | ReadError::NotText { path }
            | ReadError::NotAFile { path, .. }
            | ReadError::Timeout { path, .. }
            | ReadError::GaveUp { path, .. }
            | ReadError::SymlinkLoop { path }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// Whether the read was cut by the deadline (or not attempted because
    /// of earlier stuck reads): the host may be fine, the read was not.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ReadError::Timeout { .. } | ReadError::GaveUp { .. })
    }
}
