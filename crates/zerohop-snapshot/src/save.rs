//! Writing the archive file (and the redaction map): whole or not at all,
//! never through a link, never over anything but a regular file, and over
//! a regular file only when it is what `zerohop snapshot` writes there (an
//! archive, a redaction map) unless forced, as `plan -o` and
//! `bench prepare` replace only what they wrote.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use zerohop_input::{FileKind, Follow, NotRegular, os_reason, read_regular};

use crate::limits::{MAX_ARCHIVE_BYTES, MAX_MANIFEST_BYTES};
use crate::manifest::FORMAT_NAME;

/// What a file holds, so that only a file of the same kind is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A snapshot archive.
    Archive,
    /// A redaction map (`--redact-map`).
    RedactionMap,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Archive => "a zerohop snapshot",
            Kind::RedactionMap => "a zerohop redaction map",
        }
    }

    /// Whether `bytes` are a file of this kind.
    fn holds(self, bytes: &[u8]) -> bool {
        match self {
            Kind::Archive => is_archive(bytes),
            Kind::RedactionMap => is_redaction_map(bytes),
        }
    }
}

/// Which existing file [`save`] may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Only a file of the same [`Kind`]: one a previous run wrote.
    SameKind,
    /// Any regular file (`--force`). Links and special files are refused
    /// all the same.
    AnyRegularFile,
}

/// Why the file was not written.
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
    /// The path is a regular file that this command did not write.
    #[error("{path} exists and is not {what}: not replaced (--force replaces it)")]
    NotOurs {
        /// The path.
        path: PathBuf,
        /// What it would have to be.
        what: &'static str,
    },
    /// The path changed between the check and the rename.
    #[error("{0} changed while it was written: not replaced")]
    Changed(PathBuf),
    /// Writing failed; nothing was left at the path.
    #[error("cannot write {path}: {reason}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Writes `bytes`, a file of `kind`, to `path`: into a new file beside it,
/// then renamed over it, so that a reader never sees half a file and a
/// failure leaves what was there. An existing regular file is replaced
/// only as `replace` allows. The file is readable by its owner only: a
/// snapshot describes a host in detail.
pub fn save(path: &Path, bytes: &[u8], kind: Kind, replace: Replace) -> Result<(), SaveError> {
    let existing = match fs::symlink_metadata(path) {
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
            Some((meta.dev(), meta.ino()))
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(io_error(path, &err)),
    };
    if existing.is_some() && replace == Replace::SameKind {
        // Read without following a link swapped in since, and without
        // waiting on a FIFO: at most what an archive may be, and a byte.
        let held =
            read_regular(path, Follow::NoLinks, MAX_ARCHIVE_BYTES + 1).map_err(
                |err| match err {
                    NotRegular::Kind(kind) => SaveError::NotAFile {
                        path: path.to_path_buf(),
                        kind,
                    },
                    NotRegular::Io(err) => io_error(path, &err),
                },
            )?;
        if !kind.holds(&held) {
            return Err(SaveError::NotOurs {
                path: path.to_path_buf(),
                what: kind.name(),
            });
        }
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
        });
    let placed = written.map_err(|err| io_error(path, &err)).and_then(|()| {
        // What was checked is what is replaced: a file swapped in since
        // (or one created where there was none) is left alone.
        let now = match fs::symlink_metadata(path) {
            Ok(meta) => Some((meta.dev(), meta.ino())),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(io_error(path, &err)),
        };
        if now != existing {
            return Err(SaveError::Changed(path.to_path_buf()));
        }
        fs::rename(&temp, path).map_err(|err| io_error(path, &err))
    });
    placed.inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })
}

/// Whether `bytes` are a zerohop snapshot: a zstd stream whose first tar
/// member is a manifest of this format (of any version).
fn is_archive(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        format: String,
    }
    let Ok(decoder) = zstd::Decoder::with_buffer(bytes) else {
        return false;
    };
    let mut archive = tar::Archive::new(decoder.take(MAX_MANIFEST_BYTES + 512));
    let Ok(mut entries) = archive.entries() else {
        return false;
    };
    let Some(Ok(first)) = entries.next() else {
        return false;
    };
    if first.path_bytes().as_ref() != b"manifest.json" || first.size() > MAX_MANIFEST_BYTES {
        return false;
    }
    serde_json::from_reader::<_, Head>(first).is_ok_and(|head| head.format == FORMAT_NAME)
}

/// Whether `bytes` are a redaction map: a JSON list of `{kind, original,
/// pseudonym}`.
fn is_redaction_map(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the shape is checked")]
    struct Pseudonym {
        kind: String,
        original: String,
        pseudonym: String,
    }
    serde_json::from_slice::<Vec<Pseudonym>>(bytes).is_ok()
}

fn io_error(path: &Path, err: &io::Error) -> SaveError {
    SaveError::Io {
        path: path.to_path_buf(),
        reason: os_reason(err),
    }
}
