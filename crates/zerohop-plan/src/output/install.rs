//! Putting a finished staging directory in the place of the output
//! directory, atomically where the file system allows it, and never over
//! anything but a previous output.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, RenameFlags};
use rustix::io::Errno;

use super::marker::{self, Existing, Foreign};

/// How often a replacement is tried again when other writers keep
/// replacing the same directory in between.
const ATTEMPTS: usize = 16;

/// Why the staging directory could not take the output's place.
pub(super) enum InstallError {
    /// What was at `dir` is not a previous output; it is left as it was.
    NotOurs(Foreign),
    /// What was at `dir` was moved to `path` and could not be put back;
    /// it is kept there, and the staging directory is left alone.
    Stranded {
        /// Where the previous contents of `dir` are.
        path: PathBuf,
        /// Why they could not be put back.
        source: io::Error,
    },
    /// A rename or removal failed.
    Io {
        /// The path the operation was about.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Moves `staging` (a complete output, private to this process) to `dir`.
///
/// Where `renameat2(2)` takes flags (ext4, xfs, btrfs, tmpfs, overlayfs),
/// `dir` is created with `RENAME_NOREPLACE` or swapped with
/// `RENAME_EXCHANGE`, so that at every instant `dir` is either the old
/// output or the new one. What was swapped out is checked against its
/// marker once it is private at the staging path: a previous output (or
/// an empty directory) is deleted, anything else is swapped back and
/// refused, so a file added between the caller's check and the swap is
/// never lost. With several writers at once, each swap hands the previous
/// writer's complete output to the next, which deletes it; the last one
/// stays, and no staging or old directory is left behind.
///
/// Where the file system has no such flags (NFS), the old output is
/// renamed aside, checked, and deleted before `staging` is renamed in;
/// `dir` is then absent for a moment.
pub(super) fn install(staging: &Path, dir: &Path, aside: &Path) -> Result<(), InstallError> {
    for _ in 0..ATTEMPTS {
        match renameat2(staging, dir, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(Errno::EXIST) => {}
            Err(errno) if unsupported(errno) => return install_by_rename(staging, dir, aside),
            Err(errno) => return Err(io_error(dir)(errno.into())),
        }
        match renameat2(staging, dir, RenameFlags::EXCHANGE) {
            Ok(()) => {}
            // Another writer moved it away in between: start again.
            Err(Errno::NOENT) => continue,
            Err(errno) if unsupported(errno) => return install_by_rename(staging, dir, aside),
            Err(errno) => return Err(io_error(dir)(errno.into())),
        }
        // `staging` now holds what `dir` held.
        let refusal = match marker::inspect(staging) {
            Ok(Existing::Ours | Existing::Empty | Existing::Missing) => {
                return remove_output(staging).map_err(io_error(staging));
            }
            Ok(Existing::Foreign(foreign)) => InstallError::NotOurs(foreign),
            Err(source) => InstallError::Io {
                path: dir.to_owned(),
                source,
            },
        };
        // Swap back, so that `dir` is as it was and `staging` holds the
        // new output again, for the caller to delete.
        if let Err(errno) = renameat2(staging, dir, RenameFlags::EXCHANGE) {
            return Err(stranded(staging, aside, errno.into()));
        }
        return Err(refusal);
    }
    Err(contended(dir))
}

/// Deletes a replaced output, its marker last. Another writer may be
/// listing it at that moment, through the directory it opened at the
/// output's path before the swap: it then sees a marked output with files
/// missing, which it may replace, and never files without their marker,
/// which it would refuse as someone else's directory.
fn remove_output(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == marker::MARKER {
            continue;
        }
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
        } else {
            fs::remove_file(entry.path())?;
        }
    }
    fs::remove_dir_all(dir)
}

/// When what was swapped out cannot be swapped back, it is moved from
/// `staging` to `aside` where it can, and the error says where it is.
fn stranded(staging: &Path, aside: &Path, source: io::Error) -> InstallError {
    let kept = match fs::rename(staging, aside) {
        Ok(()) => aside,
        Err(_) => staging,
    };
    InstallError::Stranded {
        path: kept.to_owned(),
        source,
    }
}

/// The fallback without `renameat2` flags: move the old output aside,
/// check it, delete it, and rename `staging` in.
fn install_by_rename(staging: &Path, dir: &Path, aside: &Path) -> Result<(), InstallError> {
    for _ in 0..ATTEMPTS {
        // A rename onto an empty directory replaces it; onto anything
        // else it fails and leaves both in place.
        match fs::rename(staging, dir) {
            Ok(()) => return Ok(()),
            Err(err)
                if !matches!(
                    err.raw_os_error().map(Errno::from_raw_os_error),
                    Some(Errno::EXIST | Errno::NOTEMPTY)
                ) =>
            {
                return Err(io_error(dir)(err));
            }
            Err(_) => {}
        }
        match fs::rename(dir, aside) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(io_error(dir)(err)),
        }
        let refusal = match marker::inspect(aside) {
            Ok(Existing::Ours | Existing::Empty | Existing::Missing) => {
                remove_output(aside).map_err(io_error(aside))?;
                continue;
            }
            Ok(Existing::Foreign(foreign)) => InstallError::NotOurs(foreign),
            Err(source) => InstallError::Io {
                path: dir.to_owned(),
                source,
            },
        };
        // Put it back; if another writer took the place meanwhile, the
        // error says where it is rather than lose it.
        return Err(match fs::rename(aside, dir) {
            Ok(()) => refusal,
            Err(source) => InstallError::Stranded {
                path: aside.to_owned(),
                source,
            },
        });
    }
    Err(contended(dir))
}

fn renameat2(from: &Path, to: &Path, flags: RenameFlags) -> Result<(), Errno> {
    rustix::fs::renameat_with(CWD, from, CWD, to, flags)
}

/// The errors of a `renameat2` whose flags the kernel or the file system
/// does not support.
fn unsupported(errno: Errno) -> bool {
    matches!(errno, Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)
}

fn contended(dir: &Path) -> InstallError {
    InstallError::Io {
        path: dir.to_owned(),
        source: io::Error::other(format!(
            "other writers replaced it {ATTEMPTS} times in a row"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::marker::{MARKER, marker_text};

    /// A complete output with one file at `dir`.
    fn output(dir: &Path, contents: &str) {
        fs::create_dir(dir).expect("mkdir");
        fs::write(dir.join("a.yaml"), contents).expect("write");
        let marker = marker_text([("a.yaml", contents.as_bytes())]);
        fs::write(dir.join(MARKER), marker).expect("marker");
    }

    /// The check before the swap is not the only one: a directory that
    /// turned foreign after it (a user adding a file at that moment) is
    /// swapped back untouched, and the staging directory holds the new
    /// output again.
    #[test]
    fn what_turned_foreign_after_the_check_is_swapped_back() {
        let root = tempfile::tempdir().expect("temp");
        let (dir, staging, aside) = (
            root.path().join("plan"),
            root.path().join("s"),
            root.path().join("o"),
        );
        output(&dir, "old");
        fs::write(dir.join("notes.txt"), "mine").expect("user file");
        output(&staging, "new");
        let result = install(&staging, &dir, &aside);
        assert!(matches!(
            result,
            Err(InstallError::NotOurs(Foreign::Changed { .. }))
        ));
        assert_eq!(
            fs::read_to_string(dir.join("notes.txt")).expect("kept"),
            "mine"
        );
        assert_eq!(
            fs::read_to_string(staging.join("a.yaml")).expect("new"),
            "new"
        );
        assert!(!aside.exists());
    }

    #[test]
    fn a_previous_output_is_replaced_by_exchange_and_by_rename() {
        for by_rename in [false, true] {
            let root = tempfile::tempdir().expect("temp");
            let (dir, staging, aside) = (
                root.path().join("plan"),
                root.path().join("s"),
                root.path().join("o"),
            );
            output(&dir, "old");
            output(&staging, "new");
            let result = if by_rename {
                install_by_rename(&staging, &dir, &aside)
            } else {
                install(&staging, &dir, &aside)
            };
            assert!(result.is_ok(), "by rename: {by_rename}");
            assert_eq!(fs::read_to_string(dir.join("a.yaml")).expect("new"), "new");
            let left: Vec<_> = fs::read_dir(root.path()).expect("list").collect();
            assert_eq!(
                left.len(),
                1,
                "by rename: {by_rename}: staging or old directory left"
            );
        }
    }

    #[test]
    fn the_rename_fallback_puts_a_foreign_directory_back() {
        let root = tempfile::tempdir().expect("temp");
        let (dir, staging, aside) = (
            root.path().join("plan"),
            root.path().join("s"),
            root.path().join("o"),
        );
        fs::create_dir(&dir).expect("mkdir");
        fs::write(dir.join("app.yaml"), "mine").expect("user file");
        output(&staging, "new");
        let result = install_by_rename(&staging, &dir, &aside);
        assert!(matches!(
            result,
            Err(InstallError::NotOurs(Foreign::NoMarker))
        ));
        assert_eq!(
            fs::read_to_string(dir.join("app.yaml")).expect("kept"),
            "mine"
        );
        assert!(!aside.exists());
    }
}
