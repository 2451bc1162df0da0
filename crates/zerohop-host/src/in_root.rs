//! Opening paths inside a root with the kernel's own resolution.
//!
//! `openat2(2)` with `RESOLVE_IN_ROOT` (Linux 5.6 and later) resolves a path
//! as if the root directory were `/`: absolute symlinks restart at it, `..`
//! stops at it, loops end in `ELOOP`. That is exactly what [`Resolver`]
//! does by hand, in one system call instead of one per component, so file
//! reads and listings use it whenever the kernel (and seccomp) allow.
//!
//! A file is read through its directory: the directory is opened (and kept
//! open for the next files of the same directory), what the last component
//! names is looked at with `fstatat`, and only a regular file is opened, so
//! that no device node is ever opened (opening one runs its driver: a
//! watchdog device arms on open) while each file costs one short lookup
//! instead of a walk from the root.
//!
//! [`Resolver`]: crate::resolve::Resolver

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fd::OwnedFd;
use rustix::fs::{
    AtFlags, Dir, Mode, OFlags, ResolveFlags, fstat, openat, openat2, readlinkat, statat,
};

use crate::read_error::FileKind;

/// How many directories each thread keeps open: the files of one device
/// (a PCI function, an RDMA port) are read one after another.
const OPEN_DIRS: usize = 8;

static NEXT_ROOT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The directories this thread read files from last, for one root and
    /// one unit of work: the next unit reads a host that may have changed
    /// (a device directory removed and created again), so it starts afresh.
    static DIRS: RefCell<OpenDirs> = RefCell::new(OpenDirs::default());
}

#[derive(Default)]
struct OpenDirs {
    /// The root and the unit of work the directories belong to.
    owner: (u64, u64),
    /// Host path and descriptor, most recent first.
    dirs: VecDeque<(String, OwnedFd)>,
}

/// A directory descriptor that paths are opened beneath.
pub(crate) struct InRoot {
    root: OwnedFd,
    id: u64,
}

/// What opening a regular file found.
pub(crate) enum Opened {
    /// The regular file, open for reading.
    File {
        /// The file.
        file: File,
        /// Whether its directory entry names it directly, not through a
        /// link: what a recorder would otherwise look at again.
        direct: bool,
    },
    /// Something else, not opened.
    Special(FileKind),
}

impl InRoot {
    /// Opens `base` for resolution beneath it; `None` when this kernel (or a
    /// seccomp profile) refuses `openat2`.
    pub(crate) fn open(base: &Path) -> Option<InRoot> {
        let root = rustix::fs::open(
            base,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let in_root = InRoot {
            root,
            id: NEXT_ROOT.fetch_add(1, Ordering::Relaxed),
        };
        // A probe: ENOSYS on kernels before 5.6, EPERM or ENOSYS under some
        // container seccomp profiles.
        in_root.at(".", OFlags::PATH).ok()?;
        Some(in_root)
    }

    /// Opens the regular file at host path `path` for reading, without
    /// waiting and without becoming the controlling terminal; anything
    /// else is reported, not opened. `unit` names the unit of work, whose
    /// directories stay open for its next reads.
    pub(crate) fn regular_file(&self, path: &str, unit: u64) -> io::Result<Opened> {
        let Some((parent, name)) = split(path) else {
            return self.regular_file_by_path(path);
        };
        let opened = self.in_dir(parent, unit, |dir| {
            let stat = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
            if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
                // A link in the last component: resolved from the root.
                return Ok(None);
            }
            if let Some(kind) = FileKind::from_mode(stat.st_mode) {
                return Ok(Some(Opened::Special(kind)));
            }
            let flags = OFlags::RDONLY
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::NOFOLLOW
                | OFlags::CLOEXEC;
            let file = File::from(openat(dir, name, flags, Mode::empty())?);
            Ok(Some(Opened::File { file, direct: true }))
        })?;
        match opened {
            Some(opened) => Ok(opened),
            None => self.regular_file_by_path(path),
        }
    }

    /// The target of the symlink at host path `path` (its directory
    /// resolved inside the root, the link itself not followed).
    pub(crate) fn read_link(&self, path: &str, unit: u64) -> io::Result<String> {
        let (parent, name) =
            split(path).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.in_dir(parent, unit, |dir| {
            let target = readlinkat(dir, name, Vec::new())?;
            Ok(target.to_string_lossy().into_owned())
        })
    }

    /// Runs `work` on the directory at host path `parent`, opened (once per
    /// unit of work and thread) for lookups of one component.
    fn in_dir<T>(
        &self,
        parent: &str,
        unit: u64,
        work: impl FnOnce(&OwnedFd) -> io::Result<T>,
    ) -> io::Result<T> {
        DIRS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.owner != (self.id, unit) {
                cache.owner = (self.id, unit);
                cache.dirs.clear();
            }
            let index = match cache.dirs.iter().position(|(dir, _)| dir == parent) {
                Some(index) => index,
                None => {
                    let fd = self.at(parent, OFlags::PATH | OFlags::DIRECTORY)?;
                    if cache.dirs.len() == OPEN_DIRS {
                        cache.dirs.pop_back();
                    }
                    cache.dirs.push_front((parent.to_owned(), fd));
                    0
                }
            };
            work(&cache.dirs[index].1)
        })
    }

    /// [`InRoot::regular_file`] resolving the whole path from the root.
    fn regular_file_by_path(&self, path: &str) -> io::Result<Opened> {
        let target = self.at(path, OFlags::PATH)?;
        if let Some(kind) = FileKind::from_mode(fstat(&target)?.st_mode) {
            return Ok(Opened::Special(kind));
        }
        let file = self.at(path, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
        Ok(Opened::File {
            file: File::from(file),
            direct: false,
        })
    }

    /// The names in the directory at host path `path`, at most `cap` of them
    /// (more is `Ok(Err(cap))`).
    pub(crate) fn names(&self, path: &str, cap: usize) -> io::Result<Result<Vec<String>, usize>> {
        let fd = self.at(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut names = Vec::new();
        for entry in Dir::new(fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if names.len() == cap {
                return Ok(Err(cap));
            }
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        Ok(Ok(names))
    }

    fn at(&self, path: &str, flags: OFlags) -> io::Result<OwnedFd> {
        let relative = path.trim_start_matches('/');
        let relative = if relative.is_empty() { "." } else { relative };
        Ok(openat2(
            &self.root,
            relative,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
        )?)
    }
}

/// The directory and the last component of a host path; `None` when the
/// last component is not a name (`/`, `.`, `..`).
fn split(path: &str) -> Option<(&str, &str)> {
    path.rsplit_once('/')
        .filter(|(_, name)| !matches!(*name, "" | "." | ".."))
}
