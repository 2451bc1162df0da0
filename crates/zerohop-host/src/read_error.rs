//! Why a file that exists could not be used, and why a root could not be
//! opened.

use std::io;
use std::path::PathBuf;

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
    /// A snapshot does not hold the path: the recording never looked at
    /// it, so whether it exists is not known.
    #[error("cannot read {path}: not recorded in the snapshot")]
    NotRecorded {
        /// The host path.
        path: String,
    },
    /// A snapshot holds the path without its content: it is one of the
    /// files a recording never keeps (see [`crate::record::withheld`]).
    #[error("cannot read {path}: withheld from snapshots")]
    Withheld {
        /// The host path.
        path: String,
    },
    /// Another I/O error, such as permission denied.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The host path.
        path: String,
        /// What kind of error the operating system gave, for code that
        /// acts on it.
        kind: IoKind,
        /// The operating system's message.
        message: String,
    },
}

/// The kinds of operating-system error that callers act on, from
/// [`io::ErrorKind`]: the few that `/proc`, `/sys` and a host's files give
/// and that call for different advice. A snapshot's manifest writes them
/// as their kebab-case names (`permission-denied`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum IoKind {
    /// `EACCES` or `EPERM`: the process lacks a permission or capability.
    PermissionDenied,
    /// `EINVAL`: the driver refuses the attribute (common in sysfs).
    InvalidInput,
    /// `EOPNOTSUPP`: the driver does not implement the attribute.
    Unsupported,
    /// `EBUSY`: the device is busy.
    Busy,
    /// `ETIMEDOUT`: a network file system did not answer.
    TimedOut,
    /// Any other error (`EIO`, `ENODEV`…); its message says which.
    #[default]
    Other,
}

impl IoKind {
    /// The kind of `kind`.
    pub fn of(kind: io::ErrorKind) -> IoKind {
        match kind {
            io::ErrorKind::PermissionDenied => IoKind::PermissionDenied,
            io::ErrorKind::InvalidInput => IoKind::InvalidInput,
            io::ErrorKind::Unsupported => IoKind::Unsupported,
            io::ErrorKind::ResourceBusy => IoKind::Busy,
            io::ErrorKind::TimedOut => IoKind::TimedOut,
            _ => IoKind::Other,
        }
    }

    /// Whether this is [`IoKind::Other`], which a manifest leaves out.
    pub fn is_other(&self) -> bool {
        *self == IoKind::Other
    }
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
            | ReadError::NotRecorded { path }
            | ReadError::Withheld { path }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// Whether the read was cut by the deadline (or not attempted because
    /// of earlier stuck reads): the host may be fine, the read was not.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ReadError::Timeout { .. } | ReadError::GaveUp { .. })
    }

    /// The error of the operating system's `err` reading `path`.
    pub fn io(path: &str, err: &io::Error) -> ReadError {
        ReadError::Io {
            path: path.to_owned(),
            kind: IoKind::of(err.kind()),
            message: err.kind().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_error_keeps_its_kind_beside_its_message() {
        let denied = ReadError::io("/dev/kmsg", &io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(
            denied,
            ReadError::Io {
                path: "/dev/kmsg".to_owned(),
                kind: IoKind::PermissionDenied,
                message: "permission denied".to_owned(),
            }
        );
        let refused = ReadError::io("/sys/x", &io::Error::from_raw_os_error(libc::EINVAL));
        assert!(matches!(
            refused,
            ReadError::Io {
                kind: IoKind::InvalidInput,
                ..
            }
        ));
        // EIO has no kind of its own: its message says what it is.
        let failed = ReadError::io("/sys/x", &io::Error::from_raw_os_error(libc::EIO));
        assert!(matches!(
            failed,
            ReadError::Io {
                kind: IoKind::Other,
                ..
            }
        ));
    }
}

/// Why a root could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The path does not exist.
    #[error("root {0} does not exist")]
    Missing(PathBuf),
    /// The path exists but is not a directory.
    #[error("root {0} is not a directory")]
    NotADirectory(PathBuf),
    /// The directory does not hold a host's files.
    #[error("{dir} is not a host root: {why}")]
    NotAHost {
        /// The directory.
        dir: PathBuf,
        /// What it is instead, as a lowercase fragment.
        why: &'static str,
    },
    /// The directory (or its `proc/` or `sys/`) cannot be read.
    #[error("root {dir} cannot be read: {reason}")]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// Why, from the failed read.
        reason: String,
    },
}
