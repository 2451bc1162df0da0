//! Live probes: what the data path does, not what files say. They run only
//! when asked (`zerohop doctor --probe PATH`), only on the live host, and
//! only read: `O_DIRECT` open and one aligned block read of the target,
//! and an io_uring instance set up (and closed) in this process.
//!
//! The target is opened as a reader of the data path would open it, so a
//! hung NFS mount (or a FIFO, whose open waits for a writer) blocks the
//! probe as it would block the reader: the probes of the path run on a
//! thread that is abandoned after [`PROBE_TIMEOUT`], and the result says
//! that they timed out.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::root::HostRoot;
use crate::watchdog::Watchdog;

/// The block read with `O_DIRECT`: a multiple of every logical block size
/// in use (512 B and 4 KiB), and the buffer alignment that satisfies them.
pub const DIRECT_BLOCK: usize = 4096;

/// How long the probes of a path may take together (a lookup, a listing of
/// at most 256 entries, an open and one block read) before they are
/// abandoned. A busy filer answers one block in milliseconds; seconds mean
/// the mount is hung or the path is not a file a reader can use.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most directory entries looked at for a file to read.
const MAX_ENTRIES: usize = 256;

/// What the probes found, or why they did not run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub enum ProbeState {
    /// `--probe` was not given.
    #[default]
    NotRequested,
    /// The facts are of another root (a capture, `/host`): probing this
    /// process would describe the wrong machine.
    NotLive,
    /// The probes ran.
    Done(Probes),
}

/// Results of the live probes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Probes {
    /// The target as given.
    pub target: String,
    /// The target with symlinks resolved, to find its mount.
    pub canonical: Option<String>,
    /// The `O_DIRECT` probe.
    pub direct: DirectIo,
    /// The io_uring probe.
    pub io_uring: Result<(), OsFailure>,
    /// `Seccomp:` of `/proc/self/status`: 0 off, 1 strict, 2 filter.
    pub seccomp: Option<u8>,
}

/// A failed system call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OsFailure {
    /// The errno, when the OS gave one.
    pub errno: Option<i32>,
    /// The symbolic name (`EINVAL`) or the OS message.
    pub name: String,
}

impl OsFailure {
    fn from_io(err: &io::Error) -> OsFailure {
        let errno = err.raw_os_error();
        let name = match errno {
            Some(libc::EINVAL) => "EINVAL".to_owned(),
            Some(libc::EPERM) => "EPERM".to_owned(),
            Some(libc::EACCES) => "EACCES".to_owned(),
            Some(libc::ENOSYS) => "ENOSYS".to_owned(),
            Some(libc::ENOENT) => "ENOENT".to_owned(),
            Some(libc::ENOMEM) => "ENOMEM".to_owned(),
            Some(libc::EISDIR) => "EISDIR".to_owned(),
            Some(libc::EIO) => "EIO".to_owned(),
            _ => err.kind().to_string(),
        };
        OsFailure { errno, name }
    }

    /// Whether the failure is `EINVAL`.
    pub fn is_einval(&self) -> bool {
        self.errno == Some(libc::EINVAL)
    }
}

/// The `O_DIRECT` probe's result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum DirectIo {
    /// A block was read from `file` with `O_DIRECT`.
    Read {
        /// The file read.
        file: String,
        /// Bytes returned (less than a block at the end of a short file).
        bytes: usize,
    },
    /// The target is a directory without a non-empty regular file to read.
    NoFile {
        /// The directory.
        dir: String,
    },
    /// Opening with `O_DIRECT` failed.
    OpenFailed {
        /// The path opened.
        file: String,
        /// Why.
        error: OsFailure,
    },
    /// The aligned read failed.
    ReadFailed {
        /// The file read.
        file: String,
        /// Why.
        error: OsFailure,
    },
    /// The probe did not answer within [`PROBE_TIMEOUT`] (a hung mount, a
    /// FIFO without a writer) and was abandoned.
    TimedOut {
        /// The target.
        path: String,
        /// What the deadline said, as a lowercase fragment.
        reason: String,
    },
}

/// `--probe` named a path that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: no such file or directory")]
pub struct MissingTarget(pub PathBuf);

/// What the probes of the path found.
enum PathProbe {
    Missing,
    Found {
        canonical: Option<String>,
        direct: DirectIo,
    },
}

/// Runs every probe on `target`, when the process that reads `root` runs
/// on that host ([`Process::is_live`]), with the probes of the path cut at
/// [`PROBE_TIMEOUT`].
///
/// [`Process::is_live`]: crate::process::Process::is_live
pub fn run(root: &HostRoot, target: &Path) -> Result<ProbeState, MissingTarget> {
    run_within(root, target, PROBE_TIMEOUT)
}

/// [`run`] with another deadline for the probes of the path.
pub fn run_within(
    root: &HostRoot,
    target: &Path,
    timeout: Duration,
) -> Result<ProbeState, MissingTarget> {
    if !root.process().is_live() {
        return Ok(ProbeState::NotLive);
    }
    let shown = target.display().to_string();
    let owned = target.to_path_buf();
    let label = shown.clone();
    let probed = Arc::new(Watchdog::new(timeout))
        .run(move |lane| lane.read(&label, || Ok(probe_path(&owned))));
    let (canonical, direct) = match probed {
        Ok(PathProbe::Missing) => return Err(MissingTarget(target.to_path_buf())),
        Ok(PathProbe::Found { canonical, direct }) => (canonical, direct),
        Err(err) => (
            None,
            DirectIo::TimedOut {
                path: shown.clone(),
                reason: err.to_string(),
            },
        ),
    };
    Ok(ProbeState::Done(Probes {
        target: shown,
        canonical,
        direct,
        io_uring: io_uring_setup(),
        seccomp: seccomp(root),
    }))
}

/// The probes that touch the target; they can block on a hung mount.
fn probe_path(target: &Path) -> PathProbe {
    match fs::metadata(target) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => PathProbe::Missing,
        _ => PathProbe::Found {
            canonical: fs::canonicalize(target)
                .ok()
                .map(|p| p.display().to_string()),
            direct: direct_read(target),
        },
    }
}

/// Opens `target` with `O_DIRECT` and reads one aligned block from it, or
/// from the first non-empty regular file in it when it is a directory.
/// Directories themselves are not opened with `O_DIRECT`: some file
/// systems refuse that (tmpfs) while serving direct reads of their files.
pub fn direct_read(target: &Path) -> DirectIo {
    let is_dir = fs::metadata(target).is_ok_and(|meta| meta.is_dir());
    let file = if is_dir {
        match first_file(target) {
            Some(file) => file,
            None => {
                return DirectIo::NoFile {
                    dir: target.display().to_string(),
                };
            }
        }
    } else {
        target.to_path_buf()
    };
    let shown = file.display().to_string();
    match open_direct(&file) {
        Ok(opened) => read_block(opened, shown),
        Err(err) => DirectIo::OpenFailed {
            file: shown,
            error: OsFailure::from_io(&err),
        },
    }
}

fn open_direct(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_NOATIME)
        .open(path)
        .or_else(|err| {
            // O_NOATIME is refused (EPERM) for files this user does not own;
            // it only spares an atime update, so try without it.
            if err.raw_os_error() == Some(libc::EPERM) {
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(path)
            } else {
                Err(err)
            }
        })
}

fn read_block(mut file: File, shown: String) -> DirectIo {
    let mut buffer = vec![0u8; DIRECT_BLOCK * 2];
    // An aligned window inside an over-sized buffer: O_DIRECT needs the
    // memory address aligned to the logical block size as well.
    let offset = buffer.as_ptr().align_offset(DIRECT_BLOCK);
    let Some(window) = buffer.get_mut(offset..offset + DIRECT_BLOCK) else {
        return DirectIo::ReadFailed {
            file: shown,
            error: OsFailure {
                errno: None,
                name: "no aligned buffer".to_owned(),
            },
        };
    };
    match file.read(window) {
        Ok(bytes) => DirectIo::Read { file: shown, bytes },
        Err(err) => DirectIo::ReadFailed {
            file: shown,
            error: OsFailure::from_io(&err),
        },
    }
}

fn first_file(dir: &Path) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .take(MAX_ENTRIES)
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    entries
        .into_iter()
        .find(|path| fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() > 0))
}

/// Sets up (and tears down) an io_uring instance in this process: the
/// `io_uring_setup(2)` that storage readers make first.
pub fn io_uring_setup() -> Result<(), OsFailure> {
    io_uring::IoUring::new(8)
        .map(drop)
        .map_err(|err| OsFailure::from_io(&err))
}

fn seccomp(root: &HostRoot) -> Option<u8> {
    let status = root.read("/proc/self/status").ok().flatten()?;
    parse_seccomp(&status)
}

/// The `Seccomp:` mode from a `/proc/<pid>/status` text.
pub fn parse_seccomp(status: &str) -> Option<u8> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Seccomp:"))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn seccomp_mode() {
        assert_eq!(
            parse_seccomp("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n"),
            Some(2)
        );
        assert_eq!(parse_seccomp("Name:\tx\n"), None);
    }

    #[test]
    fn probes_refuse_other_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::at(dir.path()).unwrap();
        assert_eq!(run(&root, dir.path()), Ok(ProbeState::NotLive));
    }

    #[test]
    fn a_missing_target_is_an_error_not_a_result() {
        let target = Path::new("/nonexistent/zerohop-probe");
        assert_eq!(
            run(&HostRoot::live(), target),
            Err(MissingTarget(target.to_path_buf()))
        );
    }

    #[test]
    fn procfs_refuses_o_direct_with_einval() {
        // procfs has no direct i/o: a real EINVAL on every Linux host.
        if !Path::new("/proc/self/status").exists() {
            eprintln!("skipped: /proc is not mounted");
            return;
        }
        match direct_read(Path::new("/proc/self/status")) {
            DirectIo::OpenFailed { error, .. } | DirectIo::ReadFailed { error, .. } => {
                assert!(error.is_einval(), "{error:?}")
            }
            other => panic!("procfs accepted O_DIRECT: {other:?}"),
        }
    }

    #[test]
    fn reads_one_block_from_a_file_in_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b"), vec![7u8; 10_000]).unwrap();
        fs::write(dir.path().join("a"), b"").unwrap();
        match direct_read(dir.path()) {
            DirectIo::Read { file, bytes } => {
                assert!(file.ends_with("/b"), "{file}");
                assert_eq!(bytes, DIRECT_BLOCK);
            }
            // tmpfs before Linux 6.6 and some overlay setups refuse direct i/o.
            DirectIo::OpenFailed { error, .. } if error.is_einval() => {
                eprintln!("skipped: the temporary directory's file system refuses O_DIRECT");
            }
            other => panic!("unexpected {other:?}"),
        }
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(direct_read(empty.path()), DirectIo::NoFile { .. }));
    }

    #[test]
    fn missing_target_fails_to_open() {
        match direct_read(Path::new("/nonexistent/zerohop-probe")) {
            DirectIo::OpenFailed { error, .. } => assert_eq!(error.name, "ENOENT"),
            other => panic!("unexpected {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn seccomp_never_panics(text in "(?s).{0,200}") {
            let _ = parse_seccomp(&text);
        }
    }
}
