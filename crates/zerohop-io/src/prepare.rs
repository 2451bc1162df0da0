//! `zerohop bench prepare`: writes a file filled with the per-offset
//! pattern, so that later reads can be checked with `--verify`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::Serialize;

use crate::engine::{Control, RunError};
use crate::pattern;
use crate::sys;
use crate::target::{InputError, classify_open_error};

/// What `prepare` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct PrepareReport {
    /// The file.
    pub path: std::path::PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds, fsync included.
    pub elapsed_s: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// False when interrupted before the end.
    pub complete: bool,
}

/// Bytes written per `write` call.
const CHUNK: usize = 4 << 20;

/// Checks that `path` can be (over)written as a regular file.
fn check_path(path: &Path, size: u64) -> Result<(), InputError> {
    if size == 0 {
        return Err(InputError::OutOfRange {
            option: "--size",
            reason: "must be more than 0".into(),
        });
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        }),
        Ok(meta) if !meta.is_file() => Err(InputError::NotAFile {
            path: path.to_path_buf(),
            kind: "device or special file (prepare only writes regular files)",
        }),
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok(())
            } else {
                Err(InputError::NotFound {
                    path: parent.to_path_buf(),
                })
            }
        }
        Err(err) => Err(classify_open_error(path, err)),
    }
}

/// Writes `size` bytes of the pattern to `path`, then syncs it and drops it
/// from the page cache so that the first read is cold.
pub fn prepare(path: &Path, size: u64, control: &Control) -> Result<PrepareReport, RunError> {
    check_path(path, size)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|err| classify_open_error(path, err))?;
    let start = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    let mut written = 0u64;
    let write_error = |offset, len, source| RunError::Read {
        path: path.to_path_buf(),
        offset,
        len,
        source,
    };
    while written < size && !control.stop.load(Ordering::Relaxed) {
        let len = (size - written).min(CHUNK as u64) as usize;
        pattern::fill(&mut buf[..len], written);
        file.write_all(&buf[..len])
            .map_err(|e| write_error(written, len as u64, e))?;
        written += len as u64;
        control.progress.fetch_add(len as u64, Ordering::Relaxed);
    }
    file.sync_all().map_err(|e| write_error(0, written, e))?;
    // Best effort: a warm cache would only make the first buffered read faster.
    let _ = sys::drop_cached_pages(&file);
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
        complete: written == size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_files_hold_the_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let size = CHUNK as u64 + 12_345;
        let report = prepare(&path, size, &Control::default()).unwrap();
        assert!(report.complete);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len() as u64, size);
        assert_eq!(pattern::first_mismatch(&data, 0), None);
    }

    #[test]
    fn bad_destinations_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        let control = Control::default();
        assert!(matches!(
            prepare(dir.path(), 10, &control),
            Err(RunError::Input(InputError::IsDirectory { .. }))
        ));
        let orphan = dir.path().join("missing/dir/file");
        assert!(matches!(
            prepare(&orphan, 10, &control),
            Err(RunError::Input(InputError::NotFound { .. }))
        ));
        assert!(matches!(
            prepare(&dir.path().join("f"), 0, &control),
            Err(RunError::Input(InputError::OutOfRange { .. }))
        ));
        assert!(matches!(
            prepare(Path::new("/dev/null"), 10, &control),
            Err(RunError::Input(InputError::NotAFile { .. }))
        ));
    }
}
