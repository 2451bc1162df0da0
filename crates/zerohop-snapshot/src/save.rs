//! Writing the archive file: whole or not at all, never through a link and
//! never over anything but a regular file.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use zerohop_input::{FileKind, os_reason};

/// Why the archive file was not written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The path is a symlink, which is not followed.
    #[error("{0} is a symlink: not followed, name the file itself")]
    Symlink(PathBuf),
    /// The path is something other than a regular file.
    #[error("{path} is {kind}: only a regular file is replaced")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// Writing failed; nothing was left at the path.
    #[error("cannot write {path}: {reason}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Writes `bytes` to `path`: into a new file beside it, then renamed over
/// it, so that a reader never sees half an archive and a failure leaves
/// what was there. The file is readable by its owner only: a snapshot
/// describes a host in detail.
pub fn save(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(SaveError::Symlink(path.to_path_buf()));
        }
        Ok(meta) => {
            if let Some(kind) = FileKind::from_mode(meta.mode()) {
                return Err(SaveError::NotAFile {
                    path: path.to_path_buf(),
                    kind,
                });
            }
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(io_error(path, &err)),
    }
    let name = path.file_name().ok_or_else(|| SaveError::Io {
        path: path.to_path_buf(),
        reason: "it names no file".to_owned(),
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        // `O_CREAT | O_EXCL` fails on any existing name, a planted link
        // included, so the temporary file is always a new one.
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, path));
    written.map_err(|err| {
        let _ = fs::remove_file(&temp);
        io_error(path, &err)
    })
}

fn io_error(path: &Path, err: &io::Error) -> SaveError {
    SaveError::Io {
        path: path.to_path_buf(),
        reason: os_reason(err),
    }
}
