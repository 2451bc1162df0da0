//! [`HostRoot`]: the one way zerohop reads a host.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::in_root::InRoot;
use crate::resolve::{ResolveError, Resolver};
use crate::watchdog::Watchdog;

/// The most bytes read from one file unless a caller asks for more. Sysfs
/// attributes are one page; the largest procfs files the doctor reads
/// (`/proc/cpuinfo`, `/proc/self/mountinfo`) stay well below this on
/// hosts with hundreds of CPUs and mounts.
pub const DEFAULT_READ_CAP: usize = 4 << 20;

/// How long a live sysfs read may take before it is abandoned.
pub const SYSFS_TIMEOUT: Duration = Duration::from_secs(2);

/// The most entries one directory listing returns. Larger directories are
/// a sign of a broken tree, not of a real host.
pub const MAX_DIR_ENTRIES: usize = 1 << 16;

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
    /// The file holds bytes that are not text.
    #[error("{path} is not text (binary or not UTF-8)")]
    NotText {
        /// The host path.
        path: String,
    },
    /// A read on a live host did not finish in time.
    #[error("reading {path} did not finish within {seconds} s")]
    Timeout {
        /// The host path.
        path: String,
        /// The deadline in seconds.
        seconds: f64,
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
            | ReadError::NotText { path }
            | ReadError::Timeout { path, .. }
            | ReadError::SymlinkLoop { path }
            | ReadError::Io { path, .. } => path,
        }
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
}

/// A host's file system as zerohop sees it: read-only, bounded, and with
/// every path interpreted relative to the host's `/`.
pub struct HostRoot {
    base: PathBuf,
    /// `None` for the live `/`, where the OS resolves symlinks correctly.
    resolver: Option<Resolver>,
    /// Kernel-side resolution inside the root, when `openat2` is available.
    in_root: Option<InRoot>,
    watchdog: Option<Watchdog>,
}

impl HostRoot {
    /// The live host this process runs on. Sysfs reads have a deadline.
    pub fn live() -> HostRoot {
        HostRoot {
            base: PathBuf::from("/"),
            resolver: None,
            in_root: None,
            watchdog: Some(Watchdog::new(SYSFS_TIMEOUT)),
        }
    }

    /// A host tree under `dir`: a fixture, an unpacked snapshot, or a host
    /// mounted at `/host`. `dir` = `/` is the live host.
    pub fn at(dir: impl AsRef<Path>) -> Result<HostRoot, RootError> {
        let dir = dir.as_ref();
        let meta = fs::metadata(dir).map_err(|_| RootError::Missing(dir.to_path_buf()))?;
        if !meta.is_dir() {
            return Err(RootError::NotADirectory(dir.to_path_buf()));
        }
        if fs::canonicalize(dir).is_ok_and(|real| real == Path::new("/")) {
            return Ok(HostRoot::live());
        }
        Ok(HostRoot {
            base: dir.to_path_buf(),
            resolver: Some(Resolver::new(dir.to_path_buf())),
            in_root: InRoot::open(dir),
            watchdog: None,
        })
    }

    /// Whether this is the machine zerohop runs on, so that process-level
    /// facts (memlock limit, probes) describe it.
    pub fn is_live(&self) -> bool {
        self.resolver.is_none()
    }

    /// The directory this root stands for, for display.
    pub fn display(&self) -> String {
        self.base.display().to_string()
    }

    /// Reads a text file of at most [`DEFAULT_READ_CAP`] bytes. A missing
    /// file is `Ok(None)`.
    pub fn read(&self, path: &str) -> Result<Option<String>, ReadError> {
        self.read_with_cap(path, DEFAULT_READ_CAP)
    }

    /// Reads a text file of at most `cap` bytes. A missing file is `Ok(None)`.
    pub fn read_with_cap(&self, path: &str, cap: usize) -> Result<Option<String>, ReadError> {
        let bytes = self.read_bytes(path, cap)?;
        bytes
            .map(|bytes| {
                if bytes.contains(&0) {
                    return Err(ReadError::NotText {
                        path: path.to_owned(),
                    });
                }
                String::from_utf8(bytes).map_err(|_| ReadError::NotText {
                    path: path.to_owned(),
                })
            })
            .transpose()
    }

    fn read_bytes(&self, path: &str, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        // A sysfs attribute is at most one page and arrives whole in one
        // read; procfs files may come a page at a time and are read to the end.
        let whole = if path.starts_with("/sys/") {
            Extent::OneShot
        } else {
            Extent::ToEnd
        };
        if let Some(in_root) = &self.in_root {
            return match in_root.file(path) {
                Ok(file) => read_open(file, cap, path, whole).map(Some),
                Err(err) => missing_or(path, &err),
            };
        }
        match (&self.resolver, &self.watchdog) {
            (Some(resolver), _) => {
                // Most files are not symlinks: open the last component without
                // following it, and resolve it only when it is a link.
                let unfollowed = resolver
                    .resolve(path, false)
                    .map_err(|err| resolve_error(path, &err))?;
                match read_capped(&unfollowed, cap, path, true) {
                    Err(ReadError::SymlinkLoop { .. }) => {
                        let real = resolver
                            .resolve(path, true)
                            .map_err(|err| resolve_error(path, &err))?;
                        read_capped(&real, cap, path, false)
                    }
                    other => other,
                }
            }
            (None, Some(watchdog)) if path.starts_with("/sys/") => {
                watchdog.read(PathBuf::from(path), cap, path)
            }
            (None, _) => read_capped(Path::new(path), cap, path, false),
        }
    }

    /// Reads a one-value file (a sysfs attribute), trimmed.
    pub fn read_value(&self, path: &str) -> Result<Option<String>, ReadError> {
        Ok(self
            .read_with_cap(path, 64 << 10)?
            .map(|text| text.trim().to_owned()))
    }

    /// The names in a directory, sorted. A missing directory is `Ok(None)`.
    pub fn list(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        let mut names = if let Some(in_root) = &self.in_root {
            match in_root.names(path, MAX_DIR_ENTRIES) {
                Ok(Ok(names)) => names,
                Ok(Err(cap)) => {
                    return Err(ReadError::TooLarge {
                        path: path.to_owned(),
                        cap,
                    });
                }
                Err(err) => return missing_or(path, &err),
            }
        } else {
            let real = self.real_path(path, true)?;
            let entries = match fs::read_dir(&real) {
                Ok(entries) => entries,
                Err(err) => return missing_or(path, &err),
            };
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|err| io_error(path, &err))?;
                if names.len() == MAX_DIR_ENTRIES {
                    return Err(ReadError::TooLarge {
                        path: path.to_owned(),
                        cap: MAX_DIR_ENTRIES,
                    });
                }
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
            names
        };
        names.sort_unstable();
        Ok(Some(names))
    }

    /// The target of a symlink, as written. `Ok(None)` when `path` is missing
    /// or not a symlink.
    pub fn read_link(&self, path: &str) -> Result<Option<String>, ReadError> {
        let real = self.real_path(path, false)?;
        match fs::read_link(&real) {
            Ok(target) => Ok(Some(target.to_string_lossy().into_owned())),
            Err(err) if is_missing(&err) || err.kind() == io::ErrorKind::InvalidInput => Ok(None),
            Err(err) => Err(io_error(path, &err)),
        }
    }

    /// The last component of a symlink's target: the driver name of
    /// `.../driver`, the group number of `.../iommu_group`.
    pub fn link_name(&self, path: &str) -> Result<Option<String>, ReadError> {
        Ok(self.read_link(path)?.and_then(|target| {
            target
                .rsplit('/')
                .find(|part| !part.is_empty())
                .map(str::to_owned)
        }))
    }

    /// The path with every symlink resolved, as a host path: the PCI device
    /// directory `/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0` for
    /// `/sys/bus/pci/devices/0000:3b:00.0`. `Ok(None)` when it does not exist.
    pub fn canonical(&self, path: &str) -> Result<Option<String>, ReadError> {
        match &self.resolver {
            Some(resolver) => {
                let host = resolver
                    .canonical(path)
                    .map_err(|err| resolve_error(path, &err))?;
                let exists =
                    fs::symlink_metadata(self.base.join(host.trim_start_matches('/'))).is_ok();
                Ok(exists.then_some(host))
            }
            None => match fs::canonicalize(path) {
                Ok(real) => Ok(Some(real.to_string_lossy().into_owned())),
                Err(err) if is_missing(&err) => Ok(None),
                Err(err) => Err(io_error(path, &err)),
            },
        }
    }

    /// Whether anything exists at `path` (a dangling symlink counts as absent).
    pub fn exists(&self, path: &str) -> bool {
        self.real_path(path, true).is_ok_and(|real| real.exists())
    }

    fn real_path(&self, path: &str, follow_last: bool) -> Result<PathBuf, ReadError> {
        match &self.resolver {
            Some(resolver) => resolver
                .resolve(path, follow_last)
                .map_err(|err| resolve_error(path, &err)),
            None => Ok(PathBuf::from(path)),
        }
    }
}

/// How much of a file one read brings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extent {
    /// The whole content in one read (sysfs attributes).
    OneShot,
    /// Read until end of file.
    ToEnd,
}

/// Opens and reads at most `cap` bytes; more is an error, a missing file is
/// `None`. With `no_follow`, a symlink in the last component is reported as
/// [`ReadError::SymlinkLoop`] for the caller to resolve.
pub(crate) fn read_capped(
    real: &Path,
    cap: usize,
    shown: &str,
    no_follow: bool,
) -> Result<Option<Vec<u8>>, ReadError> {
    let mut options = OpenOptions::new();
    options.read(true);
    if no_follow {
        options.custom_flags(libc::O_NOFOLLOW);
    }
    match options.open(real) {
        Ok(file) => read_open(file, cap, shown, Extent::ToEnd).map(Some),
        Err(err) => missing_or(shown, &err),
    }
}

/// Reads an open file: at most `cap` bytes, more is an error.
fn read_open(mut file: File, cap: usize, shown: &str, whole: Extent) -> Result<Vec<u8>, ReadError> {
    // One page covers every sysfs attribute; reserving it avoids the small
    // probing reads `read_to_end` makes into an empty vector.
    let mut bytes = Vec::with_capacity(cap.min(4096) + 1);
    if whole == Extent::OneShot {
        bytes.resize(bytes.capacity(), 0);
        let read = file.read(&mut bytes).map_err(|err| io_error(shown, &err))?;
        if read < bytes.len() {
            bytes.truncate(read);
            return Ok(bytes);
        }
        // A full buffer: not an attribute after all, read on to the end.
        bytes.truncate(read);
    }
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let budget = limit.saturating_sub(bytes.len() as u64);
    match file.take(budget).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() > cap => Err(ReadError::TooLarge {
            path: shown.to_owned(),
            cap,
        }),
        Ok(_) => Ok(bytes),
        // Reading a directory, or an attribute the driver refuses (EINVAL,
        // EIO, ENODEV are common in sysfs), is a read error with its reason.
        Err(err) => Err(io_error(shown, &err)),
    }
}

/// `Ok(None)` for a missing path, the loop error for `ELOOP`, else the error.
fn missing_or<T>(shown: &str, err: &io::Error) -> Result<Option<T>, ReadError> {
    if is_missing(err) {
        Ok(None)
    } else if err.raw_os_error() == Some(libc::ELOOP) {
        Err(ReadError::SymlinkLoop {
            path: shown.to_owned(),
        })
    } else {
        Err(io_error(shown, err))
    }
}

fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn io_error(path: &str, err: &io::Error) -> ReadError {
    ReadError::Io {
        path: path.to_owned(),
        message: err.kind().to_string(),
    }
}

fn resolve_error(path: &str, err: &ResolveError) -> ReadError {
    match err {
        ResolveError::TooManyLinks => ReadError::SymlinkLoop {
            path: path.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        fs::write(dir.path().join("proc/cmdline"), "ro quiet\n").unwrap();
        fs::write(dir.path().join("proc/binary"), [0u8, 159, 146, 150]).unwrap();
        fs::write(dir.path().join("proc/big"), vec![b'a'; 100]).unwrap();
        symlink("/proc/cmdline", dir.path().join("link")).unwrap();
        symlink("/nowhere", dir.path().join("dangling")).unwrap();
        dir
    }

    #[test]
    fn reads_are_bounded_and_missing_is_none() {
        let dir = tree();
        let root = HostRoot::at(dir.path()).unwrap();
        assert!(!root.is_live());
        assert_eq!(
            root.read("/proc/cmdline").unwrap().as_deref(),
            Some("ro quiet\n")
        );
        assert_eq!(root.read("/proc/absent").unwrap(), None);
        assert_eq!(root.read("/dangling").unwrap(), None);
        assert_eq!(root.read("/link").unwrap().as_deref(), Some("ro quiet\n"));
        assert!(matches!(
            root.read("/proc/binary"),
            Err(ReadError::NotText { .. })
        ));
        assert!(matches!(
            root.read_with_cap("/proc/big", 10),
            Err(ReadError::TooLarge { cap: 10, .. })
        ));
        assert!(matches!(root.read("/proc"), Err(ReadError::Io { .. })));
        assert_eq!(root.link_name("/link").unwrap().as_deref(), Some("cmdline"));
        assert_eq!(
            root.list("/proc").unwrap().unwrap(),
            vec!["big", "binary", "cmdline"]
        );
    }

    #[test]
    fn a_file_is_not_a_root() {
        let dir = tree();
        assert!(matches!(
            HostRoot::at(dir.path().join("proc/cmdline")),
            Err(RootError::NotADirectory(_))
        ));
        assert!(matches!(
            HostRoot::at(dir.path().join("nope")),
            Err(RootError::Missing(_))
        ));
        assert!(HostRoot::at("/").unwrap().is_live());
    }
}
