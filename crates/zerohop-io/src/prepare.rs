//! `zerohop bench prepare`: writes a file filled with the per-offset
//! pattern, so that later reads can be checked with `--verify`.
//!
//! The destination is never written in place. The new file is written
//! under a temporary name in the same directory, synced, and renamed over
//! the destination only once it is complete, so an interrupted or failed
//! prepare (Ctrl-C, a full disk, an I/O error) leaves the destination as it
//! was. Before anything is created the destination is checked: a symbolic
//! link, a directory, a device, a FIFO or a socket is refused; an existing
//! regular file is replaced only when it holds the pattern at both ends (a
//! previous prepare) or with [`Replace::AnyRegularFile`] (`--force`); and
//! the filesystem must have room for the whole file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::Serialize;

use crate::engine::{Control, RunError};
use crate::pattern;
use crate::sys;
use crate::target::{InputError, classify_open_error, special_kind};

/// Which existing file `prepare` may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Only a file that holds the pattern, i.e. one a previous prepare wrote.
    BenchFileOnly,
    /// Any regular file (`--force`). Links and special files are refused all
    /// the same.
    AnyRegularFile,
}

/// What `prepare` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct PrepareReport {
    /// The file.
    pub path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds, fsync included.
    pub elapsed_s: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// False when interrupted before the end: then nothing was put at
    /// `path`, which is as it was.
    pub complete: bool,
    /// Whether an existing file at `path` was replaced.
    pub replaced: bool,
}

/// Bytes written per `write` call.
const CHUNK: usize = 4 << 20;

/// Bytes compared with the pattern at each end of an existing file to
/// recognise a previous prepare. A file of another origin matches one
/// 8-byte word by chance with a probability of 2^-64.
const SIGNATURE: usize = 4096;

/// The destination as found before writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// Nothing at the path.
    New,
    /// A regular file that may be replaced, identified by device and inode
    /// so that a swap before the rename is noticed.
    Existing { dev: u64, ino: u64 },
}

/// The directory `path` lives in.
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Maps an error met while looking at the destination: permission denied
/// here is about writing, not reading as for a run's targets.
fn classify(path: &Path, err: io::Error) -> InputError {
    match err.kind() {
        io::ErrorKind::PermissionDenied => InputError::WriteDenied {
            path: path.to_path_buf(),
        },
        _ => classify_open_error(path, err),
    }
}

/// Checks what is at `path` without following a link or opening anything
/// but a regular file.
fn check_destination(path: &Path, replace: Replace) -> Result<Destination, InputError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let dir = parent_dir(path);
            return if dir.is_dir() {
                Ok(Destination::New)
            } else {
                Err(InputError::NotFound {
                    path: dir.to_path_buf(),
                })
            };
        }
        Err(err) => return Err(classify(path, err)),
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Err(InputError::Symlink {
            path: path.to_path_buf(),
        });
    }
    if file_type.is_dir() {
        return Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if !file_type.is_file() {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: special_kind(file_type),
        });
    }
    if replace == Replace::BenchFileOnly {
        recognise_bench_file(path, &meta)?;
    }
    Ok(Destination::Existing {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Refuses `path` unless it holds the pattern at both ends.
fn recognise_bench_file(path: &Path, meta: &std::fs::Metadata) -> Result<(), InputError> {
    let not_ours = |why| InputError::NotABenchFile {
        path: path.to_path_buf(),
        why,
    };
    // O_NOFOLLOW and O_NONBLOCK: the path was a regular file a moment ago,
    // but a link or a FIFO swapped in since must not be followed or waited on.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => InputError::Symlink {
                path: path.to_path_buf(),
            },
            _ => classify_open_error(path, err),
        })?;
    let opened = file
        .metadata()
        .map_err(|err| classify_open_error(path, err))?;
    if !opened.is_file() || (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(InputError::Changed {
            path: path.to_path_buf(),
        });
    }
    let len = opened.len();
    if len == 0 {
        return Err(not_ours("it is empty"));
    }
    let mut buf = vec![0u8; SIGNATURE.min(len as usize)];
    let tail = len - buf.len() as u64;
    for (offset, why) in [
        (0, "its first bytes are not the pattern"),
        (tail, "its last bytes are not the pattern"),
    ] {
        match file.read_exact_at(&mut buf, offset) {
            Ok(()) => {}
            // Shrunk since the fstat: not a file to trust.
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(InputError::Changed {
                    path: path.to_path_buf(),
                });
            }
            Err(err) => return Err(classify_open_error(path, err)),
        }
        if pattern::first_mismatch(&buf, offset).is_some() {
            return Err(not_ours(why));
        }
    }
    Ok(())
}

/// Refuses `size` bytes when the filesystem of `dir` has less room.
fn check_space(dir: &Path, size: u64) -> Result<(), InputError> {
    let available = sys::available_bytes(dir).map_err(|err| classify(dir, err))?;
    if size > available {
        return Err(InputError::NoSpace {
            dir: dir.to_path_buf(),
            needed: size,
            available,
        });
    }
    Ok(())
}

/// The new file under its temporary name; removed when dropped unless it
/// was put in place.
struct Partial {
    path: PathBuf,
    file: File,
    placed: bool,
}

impl Partial {
    /// Creates `zerohop-prepare.PID.N.partial` next to `dest`. `O_EXCL`
    /// never opens an existing file or follows a link.
    fn create(dest: &Path) -> Result<Partial, InputError> {
        let dir = parent_dir(dest);
        let pid = std::process::id();
        let mut last = None;
        for attempt in 0..16 {
            let path = dir.join(format!("zerohop-prepare.{pid}.{attempt}.partial"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Partial {
                        path,
                        file,
                        placed: false,
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
                Err(err) => {
                    return Err(InputError::CannotCreate {
                        dir: dir.to_path_buf(),
                        error: err,
                    });
                }
            }
        }
        Err(InputError::CannotCreate {
            dir: dir.to_path_buf(),
            error: last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)),
        })
    }

    /// Renames the file to `dest` if `dest` is still what was checked.
    fn place(&mut self, dest: &Path, was: Destination) -> Result<(), InputError> {
        let changed = || InputError::Changed {
            path: dest.to_path_buf(),
        };
        let cannot = |error| InputError::CannotReplace {
            path: dest.to_path_buf(),
            error,
        };
        match was {
            Destination::New => match sys::rename_noreplace(&self.path, dest) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(changed()),
                // No RENAME_NOREPLACE on this filesystem (NFS before 4.x,
                // some FUSE): look, then rename.
                Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                    if std::fs::symlink_metadata(dest).is_ok() {
                        return Err(changed());
                    }
                    std::fs::rename(&self.path, dest).map_err(cannot)?;
                }
                Err(err) => return Err(cannot(err)),
            },
            Destination::Existing { dev, ino } => {
                let now = std::fs::symlink_metadata(dest).map_err(|_| changed())?;
                if !now.is_file() || (now.dev(), now.ino()) != (dev, ino) {
                    return Err(changed());
                }
                std::fs::rename(&self.path, dest).map_err(cannot)?;
            }
        }
        self.placed = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.placed {
            // Best effort: the name says what it is if it stays behind.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `size` bytes of the pattern to `path` (through a temporary file,
/// see the module documentation), syncs it and drops it from the page
/// cache so that the first read is cold.
pub fn prepare(
    path: &Path,
    size: u64,
    replace: Replace,
    control: &Control,
) -> Result<PrepareReport, RunError> {
    if size == 0 {
        return Err(InputError::OutOfRange {
            option: "--size",
            reason: "must be more than 0".into(),
        }
        .into());
    }
    let destination = check_destination(path, replace)?;
    check_space(parent_dir(path), size)?;
    let mut partial = Partial::create(path)?;
    let start = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    let mut written = 0u64;
    let write_error = |offset, error| RunError::Write {
        path: path.to_path_buf(),
        offset,
        error,
    };
    while written < size && !control.stop.load(Ordering::Relaxed) {
        let len = (size - written).min(CHUNK as u64) as usize;
        pattern::fill(&mut buf[..len], written);
        // `write_all` would not say where a full disk stopped it.
        let mut rest = &buf[..len];
        while !rest.is_empty() {
            match partial.file.write(rest) {
                Ok(0) => return Err(write_error(written, io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    rest = &rest[n..];
                    written += n as u64;
                    control.progress.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(write_error(written, err)),
            }
        }
    }
    let complete = written == size;
    if complete {
        partial.file.sync_all().map_err(|e| write_error(0, e))?;
        partial.place(path, destination)?;
        // Best effort: the rename is durable once the directory is synced,
        // and a warm cache would only make the first buffered read faster.
        let _ = File::open(parent_dir(path)).and_then(|dir| dir.sync_all());
        let _ = sys::drop_cached_pages(&partial.file);
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(PrepareReport {
        path: path.to_path_buf(),
        bytes: written,
        elapsed_s: elapsed,
        bw_bytes_per_s: if elapsed > 0.0 {
            written as f64 / elapsed
        } else {
            0.0
        },
        complete,
        replaced: complete && destination != Destination::New,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare_new(path: &Path, size: u64) -> Result<PrepareReport, RunError> {
        prepare(path, size, Replace::BenchFileOnly, &Control::default())
    }

    #[test]
    fn prepared_files_hold_the_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let size = CHUNK as u64 + 12_345;
        let report = prepare_new(&path, size).unwrap();
        assert!(report.complete && !report.replaced);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len() as u64, size);
        assert_eq!(pattern::first_mismatch(&data, 0), None);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "the temporary file is gone"
        );
    }

    #[test]
    fn a_previous_bench_file_is_recognised_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        for size in [1, 7, 5000, 3 * SIGNATURE as u64] {
            prepare_new(&path, 3 * SIGNATURE as u64).unwrap();
            let report = prepare_new(&path, size).unwrap();
            assert!(report.replaced, "size {size}");
            assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        }
    }

    #[test]
    fn a_file_with_the_pattern_at_one_end_only_is_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        prepare_new(&path, 3 * SIGNATURE as u64).unwrap();
        let mut data = std::fs::read(&path).unwrap();
        let last = data.len() - 1;
        data[last] ^= 1;
        std::fs::write(&path, &data).unwrap();
        match prepare_new(&path, 10) {
            Err(RunError::Input(InputError::NotABenchFile { why, .. })) => {
                assert!(why.contains("last bytes"), "{why}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }

    #[test]
    fn bad_destinations_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            prepare_new(dir.path(), 10),
            Err(RunError::Input(InputError::IsDirectory { .. }))
        ));
        let orphan = dir.path().join("missing/dir/file");
        assert!(matches!(
            prepare_new(&orphan, 10),
            Err(RunError::Input(InputError::NotFound { .. }))
        ));
        assert!(matches!(
            prepare_new(&dir.path().join("f"), 0),
            Err(RunError::Input(InputError::OutOfRange { .. }))
        ));
        assert!(matches!(
            prepare(
                Path::new("/dev/null"),
                10,
                Replace::AnyRegularFile,
                &Control::default()
            ),
            Err(RunError::Input(InputError::NotRegular {
                kind: "character device",
                ..
            }))
        ));
    }
}
