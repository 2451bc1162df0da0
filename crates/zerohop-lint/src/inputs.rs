//! Reading what a run lints: files named on the command line, the manifests
//! under directories, standard input. The only module of this crate that
//! touches the file system.
//!
//! Linting runs on untrusted input (a pull request in CI), so reading is
//! defensive:
//! - only regular files are read. A FIFO, socket or device is refused
//!   without waiting on it: the type is checked before opening (opening a
//!   device can have effects of its own), the file is opened non-blocking,
//!   and the open descriptor is checked again (the path may have changed in
//!   between);
//! - inside a directory, a symlink is followed only when its target lies
//!   inside the directory, so that a link to `/proc/self/environ` or
//!   `/etc/shadow` committed to a repository is never read, let alone
//!   printed; symlinked directories are not followed at all (no loops, no
//!   file read twice);
//! - a path named on the command line is followed when it is a symlink
//!   whose target lies inside the directory the link sits in, and otherwise
//!   only when asked (`--follow-symlinks`): a shell glob in CI
//!   (`lint dir/*.yaml`) names every link committed there;
//! - every read stops one byte past the per-input limit, standard input
//!   included.

use std::fs::{self, FileType};
use std::io;
use std::path::Path;

use zerohop_input::{FileKind, Follow, NotRegular, read_capped};

use crate::{Input, NotRead};

/// Deepest directory nesting searched below a directory named on the
/// command line; deeper directories are reported as skipped.
pub const MAX_DIRECTORY_DEPTH: usize = 32;

/// Whether a file name is one lint reads inside a directory: `*.yaml`,
/// `*.yml` or `*.json`, in any case.
pub fn is_manifest_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json"))
}

/// Whether a file is a host file lint reads inside a directory, as the
/// node configuration of a set for plain Kubernetes, where MachineConfigs
/// do not exist: a systemd unit (`*.mount`, `*.automount`, `*.path`,
/// `*.service`) or an NVMe-oF `nvme/discovery.conf`; or the set's
/// instructions, a `README.md`, whose commands install what the set's
/// objects need but do not carry (whereabouts on Kubernetes).
pub fn is_host_file_name(path: &Path) -> bool {
    let unit = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "mount" | "automount" | "path" | "service"));
    let discovery = path
        .file_name()
        .is_some_and(|name| name == "discovery.conf")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|dir| dir == "nvme");
    unit || discovery || is_instructions(path)
}

/// Whether a file is a set's instructions: a `README.md`.
pub fn is_instructions(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.eq_ignore_ascii_case("readme.md"))
}

/// Reads standard input, at most `limit + 1` bytes.
pub fn stdin(limit: usize) -> Input {
    Input {
        name: "-".to_owned(),
        content: read_capped(io::stdin().lock(), limit).map_err(NotRead::failed),
    }
}

/// Reads the file at `path`, following symlinks: the user named it.
pub fn named_file(path: &Path, limit: usize) -> Input {
    Input {
        name: path.display().to_string(),
        content: read_regular(path, Follow::Links, limit),
    }
}

/// The input that stands for `path`, named on the command line, when it
/// is a symlink whose target leaves the directory the link sits in:
/// skipped as a link leaving a searched directory is. `None` for anything
/// else (a link inside, a link that does not resolve, not a link), which
/// is read as named.
pub fn named_link_leaving(path: &Path) -> Option<Input> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return None;
    }
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = fs::canonicalize(parent).ok()?;
    let target = fs::canonicalize(path).ok()?;
    if target.starts_with(&dir) {
        return None;
    }
    let written = fs::read_link(path)
        .map(|target| target.display().to_string())
        .unwrap_or_default();
    Some(Input {
        name: path.display().to_string(),
        content: Err(NotRead::LeavesTree { target: written }),
    })
}

/// What a directory search found, in path order.
#[derive(Debug, Default)]
pub struct Found {
    /// The manifests read (or refused, or unreadable), and the paths
    /// skipped with [`NotRead::is_skip`] reasons.
    pub inputs: Vec<Input>,
    /// How many manifest files (read or not) the search met: zero means the
    /// directory holds nothing to lint.
    pub manifests: usize,
}

/// Searches `dir` for manifests and host files ([`is_host_file_name`]):
/// recursively up to
/// [`MAX_DIRECTORY_DEPTH`] levels when `recursive`, else its own entries
/// only. Each input is handed to `visit` as soon as it is read, so that the
/// caller can load it and drop its bytes before the next one is read; an
/// error from `visit` ends the search.
///
/// # Errors
/// The first error `visit` returns.
pub fn search<E>(
    dir: &Path,
    recursive: bool,
    limit: usize,
    visit: &mut dyn FnMut(Input) -> Result<(), E>,
) -> Result<usize, E> {
    let root = match fs::canonicalize(dir) {
        Ok(root) => root,
        Err(err) => {
            visit(Input {
                name: dir.display().to_string(),
                content: Err(NotRead::failed(err)),
            })?;
            return Ok(0);
        }
    };
    let mut search = Search {
        root: &root,
        recursive,
        limit,
        manifests: 0,
        visit,
    };
    search.directory(dir, 0)?;
    Ok(search.manifests)
}

struct Search<'s, E> {
    /// The directory's canonical path: symlink targets must lie under it.
    root: &'s Path,
    recursive: bool,
    limit: usize,
    manifests: usize,
    visit: &'s mut dyn FnMut(Input) -> Result<(), E>,
}

impl<E> Search<'_, E> {
    fn directory(&mut self, dir: &Path, depth: usize) -> Result<(), E> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) => {
                return (self.visit)(Input {
                    name: dir.display().to_string(),
                    content: Err(NotRead::Failed(format!("cannot read directory: {err}"))),
                });
            }
        };
        // The entry's own type (not its target's), as the directory lists
        // it: a symlink is seen as a symlink.
        let mut entries: Vec<(std::path::PathBuf, Option<FileType>)> = entries
            .filter_map(Result::ok)
            .map(|entry| (entry.path(), entry.file_type().ok()))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, file_type) in entries {
            let Some(file_type) = file_type else {
                continue;
            };
            if file_type.is_dir() {
                if !self.recursive {
                    continue;
                }
                if depth >= MAX_DIRECTORY_DEPTH {
                    (self.visit)(Input {
                        name: path.display().to_string(),
                        content: Err(NotRead::TooDeep(MAX_DIRECTORY_DEPTH)),
                    })?;
                } else {
                    self.directory(&path, depth + 1)?;
                }
            } else if is_manifest_name(&path) || is_host_file_name(&path) {
                let input = if file_type.is_symlink() {
                    match self.symlink(&path) {
                        Some(input) => input,
                        None => continue,
                    }
                } else {
                    // Instructions alone are nothing to lint.
                    if !is_instructions(&path) {
                        self.manifests += 1;
                    }
                    Input {
                        name: path.display().to_string(),
                        content: read_regular(&path, Follow::NoLinks, self.limit),
                    }
                };
                (self.visit)(input)?;
            }
        }
        Ok(())
    }

    /// Reads a symlinked manifest when its target lies inside the searched
    /// directory; `None` for a link to a directory (not followed).
    fn symlink(&mut self, path: &Path) -> Option<Input> {
        let name = path.display().to_string();
        let written = fs::read_link(path)
            .map(|target| target.display().to_string())
            .unwrap_or_default();
        let target = match fs::canonicalize(path) {
            Ok(target) => target,
            Err(err) => {
                return Some(Input {
                    name,
                    content: Err(NotRead::Unresolved {
                        target: written,
                        reason: err.to_string(),
                    }),
                });
            }
        };
        if !target.starts_with(self.root) {
            return Some(Input {
                name,
                content: Err(NotRead::LeavesTree { target: written }),
            });
        }
        if target.is_dir() {
            return None;
        }
        self.manifests += 1;
        // The canonical path has no symlink left in it; not following one
        // at the end keeps a link swapped in meanwhile from being read.
        Some(Input {
            name,
            content: read_regular(&target, Follow::NoLinks, self.limit),
        })
    }
}

/// Reads a regular file, at most `limit + 1` bytes; refuses anything else
/// without blocking on it. The type is checked before opening too: opening
/// a device runs its driver, which a linter has no business doing.
fn read_regular(path: &Path, follow: Follow, limit: usize) -> Result<Vec<u8>, NotRead> {
    let metadata = match follow {
        Follow::Links => fs::metadata(path),
        Follow::NoLinks => fs::symlink_metadata(path),
    }
    .map_err(NotRead::failed)?;
    if let Some(kind) = FileKind::of(metadata.file_type()) {
        return Err(NotRead::NotRegular(kind));
    }
    zerohop_input::read_regular(path, follow, limit).map_err(|err| match err {
        NotRegular::Kind(kind) => NotRead::NotRegular(kind),
        NotRegular::Io(err) => NotRead::failed(err),
    })
}
