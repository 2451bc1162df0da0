//! Reading the intent file: a regular file, at most [`MAX_INTENT_BYTES`],
//! without ever waiting on a FIFO or a terminal.

use std::io;
use std::path::{Path, PathBuf};

use zerohop_input::{Follow, NotRegular, os_reason, read_regular};

use crate::parse::MAX_INTENT_BYTES;

/// Why the intent file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Opening or reading failed.
    #[error("cannot read {}: {reason}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The operating system's reason, a lowercase fragment.
        reason: String,
    },
    /// The path names a directory, a FIFO, a device or a socket.
    #[error("{} is {kind}, not a regular file", path.display())]
    NotAFile {
        /// The path as given.
        path: PathBuf,
        /// What it is, with its article (`a fifo`).
        kind: &'static str,
    },
    /// The file is larger than an intent can be.
    #[error("{} is larger than {MAX_INTENT_BYTES} bytes; an intent file is a few KiB", path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not UTF-8 text", path.display())]
    NotText {
        /// The path as given.
        path: PathBuf,
    },
}

/// Reads the intent file at `path`.
///
/// The file is opened with `O_NONBLOCK` and `O_NOCTTY`, so that opening a
/// FIFO with no writer or a terminal returns at once (and a terminal does
/// not become the controlling one), and is then refused by `fstat` unless
/// it is a regular file: a directory, FIFO, character or block device or
/// socket. At most [`MAX_INTENT_BYTES`] and one more byte are read, so that
/// a file that grows while it is read cannot make the read unbounded.
///
/// # Errors
/// [`InputError`], each naming `path`.
pub fn read_intent(path: &Path) -> Result<String, InputError> {
    let io_error = |err: io::Error| InputError::Io {
        path: path.to_owned(),
        reason: os_reason(&err),
    };
    let bytes = read_regular(path, Follow::Links, MAX_INTENT_BYTES).map_err(|err| match err {
        NotRegular::Kind(kind) => InputError::NotAFile {
            path: path.to_owned(),
            kind: kind.described(),
        },
        NotRegular::Io(err) => io_error(err),
    })?;
    if bytes.len() > MAX_INTENT_BYTES {
        return Err(InputError::TooLarge {
            path: path.to_owned(),
        });
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotText {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_others_refused() {
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join("plan.yaml");
        std::fs::write(&file, "kind: DataPathPlan\n").expect("write");
        assert_eq!(read_intent(&file).expect("read"), "kind: DataPathPlan\n");
        assert!(matches!(
            read_intent(dir.path()),
            Err(InputError::NotAFile {
                kind: "a directory",
                ..
            })
        ));
        assert!(matches!(
            read_intent(Path::new("/dev/null")),
            Err(InputError::NotAFile {
                kind: "a character device",
                ..
            })
        ));
        std::fs::write(&file, vec![b'#'; MAX_INTENT_BYTES + 1]).expect("write");
        assert!(matches!(
            read_intent(&file),
            Err(InputError::TooLarge { .. })
        ));
        std::fs::write(&file, [0xff, 0xfe]).expect("write");
        assert!(matches!(
            read_intent(&file),
            Err(InputError::NotText { .. })
        ));
        assert!(matches!(
            read_intent(&dir.path().join("absent.yaml")),
            Err(InputError::Io { .. })
        ));
    }
}
