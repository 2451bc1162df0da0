//! Opening paths inside a root with the kernel's own resolution.
//!
//! `openat2(2)` with `RESOLVE_IN_ROOT` (Linux 5.6 and later) resolves a path
//! as if the root directory were `/`: absolute symlinks restart at it, `..`
//! stops at it, loops end in `ELOOP`. That is exactly what [`Resolver`]
//! does by hand, in one system call instead of one per component, so file
//! reads and listings use it whenever the kernel (and seccomp) allow.
//!
//! [`Resolver`]: crate::resolve::Resolver

use std::fs::File;
use std::io;
use std::path::Path;

use rustix::fd::OwnedFd;
use rustix::fs::{Dir, Mode, OFlags, ResolveFlags, fstat, openat2};

use crate::read_error::FileKind;

/// A directory descriptor that paths are opened beneath.
pub(crate) struct InRoot {
    root: OwnedFd,
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
        let in_root = InRoot { root };
        // A probe: ENOSYS on kernels before 5.6, EPERM or ENOSYS under some
        // container seccomp profiles.
        in_root.at(".", OFlags::PATH).ok()?;
        Some(in_root)
    }

    /// What `path` names when it is not a regular file, found without
    /// opening it for reading: opening a device node runs its driver (a
    /// watchdog device arms on open), and a capture can hold one anywhere.
    pub(crate) fn kind(&self, path: &str) -> io::Result<Option<FileKind>> {
        let fd = self.at(path, OFlags::PATH)?;
        Ok(FileKind::from_mode(fstat(&fd)?.st_mode))
    }

    /// Opens the file at host path `path` for reading, without waiting (a
    /// FIFO or a terminal that slipped in after [`InRoot::kind`] opens at
    /// once, to be refused by the caller's check) and without becoming the
    /// controlling terminal.
    pub(crate) fn file(&self, path: &str) -> io::Result<File> {
        Ok(File::from(self.at(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        )?))
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
