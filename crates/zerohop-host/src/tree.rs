//! The reads themselves, without a deadline: open, check, read, list and
//! resolve, in the live `/` or inside a directory. [`HostRoot`] runs each of
//! them under the watchdog.
//!
//! Only regular files are read. A FIFO or a terminal would block the
//! reader, a device would be read instead of a file, so every open is
//! non-blocking and never takes a controlling terminal, and what was opened
//! is checked with `fstat` before a byte is read. In a directory tree (a
//! capture can come from anywhere), what a path names is also looked at
//! before it is opened, so that no device node is ever opened: opening one
//! runs its driver. (On the live `/`, `/proc` and `/sys` hold no device
//! nodes, and what else is read is the host's own configuration.) The one
//! device zerohop reads, the kernel log, is opened elsewhere
//! (`kmsg_device`), under its own checks.
//!
//! [`HostRoot`]: crate::HostRoot

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::in_root::{InRoot, Opened};
use crate::read_error::{FileKind, ReadError, RootError};
use crate::resolve::{ResolveError, Resolver};
use crate::watchdog;

/// The most entries one directory listing returns. Larger directories are
/// a sign of a broken tree, not of a real host.
pub const MAX_DIR_ENTRIES: usize = 1 << 16;

/// The kernel file systems that are no host root, by their magic number,
/// with why.
const PSEUDO_FILE_SYSTEMS: [(libc::c_long, &str); 2] = [
    (
        libc::PROC_SUPER_MAGIC,
        "it is the proc file system itself, not a directory holding proc/ and sys/",
    ),
    (
        libc::SYSFS_MAGIC,
        "it is the sysfs file system itself, not a directory holding proc/ and sys/",
    ),
];

/// The reason [`Tree::pseudo_file_system`] gives as `why`, as the one
/// static text it is (a reader process sends it as a copy).
pub(crate) fn pseudo_file_system_named(why: &str) -> Option<&'static str> {
    PSEUDO_FILE_SYSTEMS
        .iter()
        .map(|(_, known)| *known)
        .find(|known| *known == why)
}

/// A host's files: the live `/`, or a directory that stands for `/`.
pub(crate) struct Tree {
    base: PathBuf,
    /// `None` for the live `/`, where the OS resolves symlinks correctly.
    resolver: Option<Resolver>,
    /// Kernel-side resolution inside the directory, when `openat2` is
    /// available. It keeps nothing about the tree beyond one unit of work,
    /// so a fresh tree shares it.
    in_root: Option<Arc<InRoot>>,
}

impl Tree {
    /// The live `/`.
    pub(crate) fn live() -> Tree {
        Tree {
            base: PathBuf::from("/"),
            resolver: None,
            in_root: None,
        }
    }

    /// The tree under `dir`, which must be a directory other than `/`.
    pub(crate) fn at(dir: &Path) -> Tree {
        Tree {
            base: dir.to_path_buf(),
            resolver: Some(Resolver::new(dir.to_path_buf())),
            in_root: InRoot::open(dir).map(Arc::new),
        }
    }

    /// The same tree with nothing resolved yet (see [`Resolver`]): the
    /// directory is not opened again, so this costs no I/O.
    pub(crate) fn fresh(&self) -> Tree {
        Tree {
            base: self.base.clone(),
            resolver: self
                .resolver
                .as_ref()
                .map(|_| Resolver::new(self.base.clone())),
            in_root: self.in_root.clone(),
        }
    }

    /// The directory that stands for `/`.
    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// Whether this is the live `/`.
    pub(crate) fn is_live(&self) -> bool {
        self.resolver.is_none()
    }

    /// Why the base is no host root when it is a kernel file system itself
    /// rather than a directory holding them (`--root /proc`, whose `sys/`
    /// is the sysctl tree).
    pub(crate) fn pseudo_file_system(&self) -> Option<&'static str> {
        let stat = rustix::fs::statfs(&self.base).ok()?;
        PSEUDO_FILE_SYSTEMS
            .iter()
            .find(|(magic, _)| stat.f_type == *magic)
            .map(|(_, why)| *why)
    }

    /// At most `cap` bytes of the regular file at `path`; `None` when it
    /// does not exist.
    pub(crate) fn read_bytes(&self, path: &str, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        Ok(self.read_direct(path, cap)?.map(|(bytes, _)| bytes))
    }

    /// [`Tree::read_bytes`], and whether the file's own directory entry
    /// was seen to be a regular file (its last component is no link), so
    /// that a recorder knows what the path is without looking again.
    pub(crate) fn read_direct(
        &self,
        path: &str,
        cap: usize,
    ) -> Result<Option<(Vec<u8>, bool)>, ReadError> {
        // A sysfs attribute is at most one page and arrives whole in one
        // read; procfs files may come a page at a time and are read to the end.
        let extent = if path.starts_with("/sys/") {
            Extent::OneShot
        } else {
            Extent::ToEnd
        };
        match self.open_regular(path)? {
            Some((file, direct)) => read_file(file, cap, path, extent).map(|b| Some((b, direct))),
            None => Ok(None),
        }
    }

    /// The last `cap` bytes of the regular file at `path` (all of it when
    /// smaller) and how many bytes before them were left out; `None` when
    /// it does not exist.
    pub(crate) fn read_tail(&self, path: &str, cap: usize) -> Result<Option<Tail>, ReadError> {
        match self.open_regular(path)? {
            Some((file, _)) => read_tail(file, cap, path).map(Some),
            None => Ok(None),
        }
    }

    /// The regular file at `path`, open for reading, and whether its own
    /// directory entry named it (no link in the last component); `None`
    /// when it does not exist, an error for anything but a regular file.
    fn open_regular(&self, path: &str) -> Result<Option<(File, bool)>, ReadError> {
        if let Some(in_root) = &self.in_root {
            return match in_root.regular_file(path, watchdog::current_lane()) {
                // Its type was looked at through its directory a moment
                // before and the open did not follow a link: a file swapped
                // since is still read without waiting, and at most `cap`
                // bytes of it, so no second `fstat` is paid per file.
                Ok(Opened::File { file, direct }) => Ok(Some((file, direct))),
                Ok(Opened::Special(kind)) => Err(not_a_file(path, kind)),
                Err(err) => missing_or(path, &err),
            };
        }
        let Some(resolver) = &self.resolver else {
            // The live `/`: the open follows a link, so nothing is said.
            return Ok(open_checked(Path::new(path), path, false)?.map(|file| (file, false)));
        };
        // Most files are not symlinks: look at the last component without
        // following it, and resolve it only when it is a link.
        let mut real = resolver
            .resolve(path, false)
            .map_err(|err| resolve_error(path, &err))?;
        let mut meta = match fs::symlink_metadata(&real) {
            Ok(meta) => meta,
            Err(err) => return missing_or(path, &err),
        };
        let direct = !meta.file_type().is_symlink();
        if !direct {
            real = resolver
                .resolve(path, true)
                .map_err(|err| resolve_error(path, &err))?;
            meta = match fs::symlink_metadata(&real) {
                Ok(meta) => meta,
                Err(err) => return missing_or(path, &err),
            };
        }
        if let Some(kind) = FileKind::from_mode(meta.mode()) {
            return Err(not_a_file(path, kind));
        }
        Ok(open_checked(&real, path, true)?.map(|file| (file, direct)))
    }

    /// The names in the directory at `path`, unsorted; `None` when it does
    /// not exist.
    pub(crate) fn list(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        // Opening a directory never blocks on a FIFO or runs a driver: the
        // kernel refuses `O_DIRECTORY` on anything else before opening it.
        if let Some(in_root) = &self.in_root {
            return match in_root.names(path, MAX_DIR_ENTRIES) {
                Ok(Ok(names)) => Ok(Some(names)),
                Ok(Err(cap)) => Err(ReadError::TooManyEntries {
                    path: path.to_owned(),
                    cap,
                }),
                Err(err) => missing_or(path, &err),
            };
        }
        let real = self.real_path(path, true)?;
        let entries = match fs::read_dir(&real) {
            Ok(entries) => entries,
            Err(err) => return missing_or(path, &err),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| ReadError::io(path, &err))?;
            if names.len() == MAX_DIR_ENTRIES {
                return Err(ReadError::TooManyEntries {
                    path: path.to_owned(),
                    cap: MAX_DIR_ENTRIES,
                });
            }
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(Some(names))
    }

    /// The target of the symlink at `path`, as written; `None` when `path`
    /// is missing or not a symlink.
    pub(crate) fn read_link(&self, path: &str) -> Result<Option<String>, ReadError> {
        let target = match &self.in_root {
            Some(in_root) => in_root.read_link(path, watchdog::current_lane()),
            None => fs::read_link(self.real_path(path, false)?)
                .map(|target| target.to_string_lossy().into_owned()),
        };
        match target {
            Ok(target) => Ok(Some(target)),
            Err(err) if is_missing(&err) || err.kind() == io::ErrorKind::InvalidInput => Ok(None),
            // A loop on the way to the link, as every other read says it.
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => Err(ReadError::SymlinkLoop {
                path: path.to_owned(),
            }),
            Err(err) => Err(ReadError::io(path, &err)),
        }
    }

    /// `path` with every symlink resolved, as a host path; `None` when it
    /// does not exist.
    pub(crate) fn canonical(&self, path: &str) -> Result<Option<String>, ReadError> {
        match &self.resolver {
            Some(resolver) => {
                let host = resolver
                    .canonical(path)
                    .map_err(|err| resolve_error(path, &err))?;
                match fs::symlink_metadata(self.base.join(host.trim_start_matches('/'))) {
                    Ok(_) => Ok(Some(host)),
                    Err(err) if is_missing(&err) => Ok(None),
                    Err(err) => Err(ReadError::io(path, &err)),
                }
            }
            None => match fs::canonicalize(path) {
                Ok(real) => Ok(Some(real.to_string_lossy().into_owned())),
                Err(err) if is_missing(&err) => Ok(None),
                Err(err) => Err(ReadError::io(path, &err)),
            },
        }
    }

    /// Whether anything exists at `path` (a dangling symlink counts as
    /// absent).
    pub(crate) fn exists(&self, path: &str) -> Result<bool, ReadError> {
        // The resolved path has no symlink left to follow; following one
        // here would leave the tree.
        let found = match &self.resolver {
            Some(_) => fs::symlink_metadata(self.real_path(path, true)?),
            None => fs::metadata(path),
        };
        match found {
            Ok(_) => Ok(true),
            Err(err) if is_missing(&err) => Ok(false),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => Err(ReadError::SymlinkLoop {
                path: path.to_owned(),
            }),
            Err(err) => Err(ReadError::io(path, &err)),
        }
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

/// Opens `real` for reading without waiting, and refuses it unless it is
/// a regular file. With `no_follow`, a symlink in the last component (one
/// that replaced a resolved file since) is not followed out of the tree.
fn open_checked(real: &Path, shown: &str, no_follow: bool) -> Result<Option<File>, ReadError> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if no_follow {
        flags |= libc::O_NOFOLLOW;
    }
    let opened = OpenOptions::new().read(true).custom_flags(flags).open(real);
    match opened {
        Ok(file) => {
            let mode = rustix::fs::fstat(&file)
                .map_err(|err| ReadError::io(shown, &err.into()))?
                .st_mode;
            match FileKind::from_mode(mode) {
                Some(kind) => Err(not_a_file(shown, kind)),
                None => Ok(Some(file)),
            }
        }
        // A socket, or a device node without a driver, cannot be opened at
        // all: say what it is rather than pass on the errno.
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENXIO | libc::ENODEV)) => {
            match fs::metadata(real)
                .ok()
                .and_then(|meta| FileKind::from_mode(meta.mode()))
            {
                Some(kind) => Err(not_a_file(shown, kind)),
                None => Err(ReadError::io(shown, &err)),
            }
        }
        Err(err) => missing_or(shown, &err),
    }
}

/// The end of a file: its last bytes and how many came before them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The last bytes, at most the cap asked for.
    pub bytes: Vec<u8>,
    /// The bytes before them that were not read.
    pub skipped: u64,
}

/// Reads the last `cap` bytes of an open regular file. A file that grows
/// while it is read still yields at most `cap` bytes.
fn read_tail(mut file: File, cap: usize, shown: &str) -> Result<Tail, ReadError> {
    let cap64 = u64::try_from(cap).unwrap_or(u64::MAX);
    let length = file
        .metadata()
        .map_err(|err| ReadError::io(shown, &err))?
        .len();
    let skipped = length.saturating_sub(cap64);
    if skipped > 0 {
        file.seek(SeekFrom::Start(skipped))
            .map_err(|err| ReadError::io(shown, &err))?;
    }
    let mut bytes = Vec::with_capacity(cap.min(usize::try_from(length).unwrap_or(cap)));
    file.take(cap64)
        .read_to_end(&mut bytes)
        .map_err(|err| ReadError::io(shown, &err))?;
    Ok(Tail { bytes, skipped })
}

/// Reads an open file known to be a regular file: at most `cap` bytes, more
/// is an error.
fn read_file(
    mut file: File,
    cap: usize,
    shown: &str,
    extent: Extent,
) -> Result<Vec<u8>, ReadError> {
    // One page covers every sysfs attribute; reserving it avoids the small
    // probing reads `read_to_end` makes into an empty vector.
    let mut bytes = Vec::with_capacity(cap.min(4096) + 1);
    if extent == Extent::OneShot {
        bytes.resize(bytes.capacity(), 0);
        let read = file
            .read(&mut bytes)
            .map_err(|err| ReadError::io(shown, &err))?;
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
        // An attribute the driver refuses (EINVAL, EIO, ENODEV are common
        // in sysfs) is a read error with its reason.
        Err(err) => Err(ReadError::io(shown, &err)),
    }
}

fn not_a_file(path: &str, kind: FileKind) -> ReadError {
    ReadError::NotAFile {
        path: path.to_owned(),
        kind,
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
        Err(ReadError::io(shown, err))
    }
}

fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn resolve_error(path: &str, err: &ResolveError) -> ReadError {
    match err {
        ResolveError::TooManyLinks => ReadError::SymlinkLoop {
            path: path.to_owned(),
        },
    }
}

/// Opens the tree under `dir`, the live one when `dir` is `/`.
pub(crate) fn open_tree(dir: &Path) -> Result<Tree, RootError> {
    let meta = fs::metadata(dir).map_err(|_| RootError::Missing(dir.to_path_buf()))?;
    if !meta.is_dir() {
        return Err(RootError::NotADirectory(dir.to_path_buf()));
    }
    if fs::canonicalize(dir).is_ok_and(|real| real == Path::new("/")) {
        return Ok(Tree::live());
    }
    Ok(Tree::at(dir))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::os::unix::net::UnixListener;

    use super::*;

    /// The portable resolver, which reads when `openat2` is refused (Linux
    /// before 5.6, some seccomp profiles): it must refuse what the kernel
    /// path refuses.
    fn resolved(dir: &Path) -> Tree {
        Tree {
            base: dir.to_path_buf(),
            resolver: Some(Resolver::new(dir.to_path_buf())),
            in_root: None,
        }
    }

    #[test]
    fn the_portable_resolver_refuses_special_files_too() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        fs::create_dir_all(proc.join("dir")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            proc.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let _socket = UnixListener::bind(proc.join("socket")).unwrap();
        symlink("fifo", proc.join("to-fifo")).unwrap();
        symlink("/dev/zero", proc.join("to-zero")).unwrap();
        fs::write(proc.join("cmdline"), "ro\n").unwrap();
        let tree = resolved(dir.path());
        let kind = |path: &str| match tree.read_bytes(path, 64) {
            Err(ReadError::NotAFile { kind, .. }) => Some(kind),
            _ => None,
        };
        assert_eq!(kind("/proc/fifo"), Some(FileKind::Fifo));
        assert_eq!(kind("/proc/to-fifo"), Some(FileKind::Fifo));
        assert_eq!(kind("/proc/socket"), Some(FileKind::Socket));
        assert_eq!(kind("/proc/dir"), Some(FileKind::Directory));
        // `/dev/zero` of the tree, which has none, not of this machine.
        assert_eq!(tree.read_bytes("/proc/to-zero", 64), Ok(None));
        assert_eq!(
            tree.read_bytes("/proc/cmdline", 64),
            Ok(Some(b"ro\n".to_vec()))
        );
    }
}
