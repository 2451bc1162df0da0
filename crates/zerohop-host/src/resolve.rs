//! Path resolution that treats a directory as `/`.
//!
//! A captured tree (or a host mounted at `/host`) holds symlinks written for
//! the original machine: `/sys/bus/pci/devices/0000:3b:00.0` points to
//! `../../../devices/pci0000:3a/...`, and some captures hold absolute links.
//! Following them with the OS would leave the tree (or read this machine's
//! files), so every component is resolved here: absolute targets restart at
//! the root, `..` never climbs above it, and loops end after a fixed number of
//! links, as the kernel's own resolution does.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The most symlinks one resolution may follow (the kernel allows 40).
const MAX_LINKS: usize = 40;

/// Why a path could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResolveError {
    /// More than [`MAX_LINKS`] symlinks: a loop.
    TooManyLinks,
}

/// What `lstat` said about a path: absent, not a symlink, or a symlink.
#[derive(Clone)]
enum Entry {
    Missing,
    Plain,
    Link(String),
}

/// Resolves host paths inside a base directory, caching resolved
/// directories and what each visited component is: a doctor pass visits the
/// same switch and bridge directories for thousands of functions. Nothing
/// is ever dropped from the caches, so a resolver serves one pass: the next
/// takes a new one (see `HostRoot::fresh`), which sees links retargeted
/// and paths added or removed since.
pub(crate) struct Resolver {
    base: PathBuf,
    dirs: Mutex<HashMap<String, Arc<Dir>>>,
    entries: Mutex<HashMap<PathBuf, Entry>>,
}

/// A resolved directory: its components below the base and its real path.
struct Dir {
    components: Vec<String>,
    real: PathBuf,
}

impl Resolver {
    pub(crate) fn new(base: PathBuf) -> Resolver {
        Resolver {
            base,
            dirs: Mutex::new(HashMap::new()),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, real: PathBuf) -> Entry {
        if let Some(hit) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&real)
        {
            return hit.clone();
        }
        let entry = match fs::symlink_metadata(&real) {
            Err(_) => Entry::Missing,
            Ok(meta) if meta.file_type().is_symlink() => match fs::read_link(&real) {
                Ok(target) => Entry::Link(target.to_string_lossy().into_owned()),
                Err(_) => Entry::Missing,
            },
            Ok(_) => Entry::Plain,
        };
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(real, entry.clone());
        entry
    }

    /// The real path of `host_path` under the base, with every symlink on the
    /// way resolved inside the base. A component that does not exist ends the
    /// resolution; the rest is appended as is, so opening it finds nothing.
    pub(crate) fn resolve(
        &self,
        host_path: &str,
        follow_last: bool,
    ) -> Result<PathBuf, ResolveError> {
        let (parent, last) = split_last(host_path);
        let dir = self.resolve_dir(parent)?;
        if !follow_last {
            // The common case of a read: the parent is cached and the last
            // component is opened without following it.
            return Ok(match last {
                Some(last) => dir.real.join(last),
                None => dir.real.clone(),
            });
        }
        let mut components = dir.components.clone();
        if let Some(last) = last {
            let mut links = 0;
            self.walk(&mut components, &[last], follow_last, &mut links)?;
        }
        Ok(self.join(&components))
    }

    /// The host path (`/sys/devices/...`) that `host_path` really names.
    pub(crate) fn canonical(&self, host_path: &str) -> Result<String, ResolveError> {
        let (parent, last) = split_last(host_path);
        let mut components = self.resolve_dir(parent)?.components.clone();
        if let Some(last) = last {
            let mut links = 0;
            self.walk(&mut components, &[last], true, &mut links)?;
        }
        Ok(format!("/{}", components.join("/")))
    }

    fn resolve_dir(&self, dir: &str) -> Result<Arc<Dir>, ResolveError> {
        if let Some(hit) = self.dirs.lock().unwrap_or_else(|p| p.into_inner()).get(dir) {
            return Ok(Arc::clone(hit));
        }
        let mut components = Vec::new();
        let mut links = 0;
        let parts: Vec<&str> = dir.split('/').collect();
        self.walk(&mut components, &parts, true, &mut links)?;
        let resolved = Arc::new(Dir {
            real: self.join(&components),
            components,
        });
        self.dirs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_owned(), Arc::clone(&resolved));
        Ok(resolved)
    }

    fn walk(
        &self,
        resolved: &mut Vec<String>,
        parts: &[&str],
        follow_last: bool,
        links: &mut usize,
    ) -> Result<(), ResolveError> {
        for (index, part) in parts.iter().enumerate() {
            match *part {
                "" | "." => continue,
                ".." => {
                    resolved.pop();
                    continue;
                }
                name => {
                    resolved.push(name.to_owned());
                    let is_last = index + 1 == parts.len();
                    if is_last && !follow_last {
                        continue;
                    }
                    let target = match self.entry(self.join(resolved)) {
                        Entry::Plain => continue,
                        Entry::Missing => {
                            // Keep the remaining components verbatim: opening
                            // the result finds nothing.
                            resolved.extend(parts[index + 1..].iter().map(|p| (*p).to_owned()));
                            return Ok(());
                        }
                        Entry::Link(target) => target,
                    };
                    *links += 1;
                    if *links > MAX_LINKS {
                        return Err(ResolveError::TooManyLinks);
                    }
                    resolved.pop();
                    if target.starts_with('/') {
                        resolved.clear();
                    }
                    let target_parts: Vec<&str> = target.split('/').collect();
                    self.walk(resolved, &target_parts, true, links)?;
                }
            }
        }
        Ok(())
    }

    fn join(&self, components: &[String]) -> PathBuf {
        let mut path = self.base.clone();
        path.extend(components);
        path
    }
}

fn split_last(path: &str) -> (&str, Option<&str>) {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, last)) if !last.is_empty() && last != "." && last != ".." => {
            (parent, Some(last))
        }
        _ => (trimmed, None),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use super::*;

    fn is_inside(base: &Path, path: &Path) -> bool {
        path.starts_with(base)
    }

    #[test]
    fn links_stay_inside_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        fs::create_dir_all(base.join("sys/devices/pci0000:00/0000:00:01.0")).unwrap();
        fs::create_dir_all(base.join("sys/bus/pci/devices")).unwrap();
        symlink(
            "../../../devices/pci0000:00/0000:00:01.0",
            base.join("sys/bus/pci/devices/0000:00:01.0"),
        )
        .unwrap();
        // An absolute link must restart at the base, not at this machine's `/`.
        symlink("/sys/devices", base.join("sys/abs")).unwrap();
        // `..` above the root stays at the root.
        symlink("../../../../../../etc", base.join("sys/up")).unwrap();
        let resolver = Resolver::new(base.to_path_buf());

        let canonical = resolver
            .canonical("/sys/bus/pci/devices/0000:00:01.0")
            .unwrap();
        assert_eq!(canonical, "/sys/devices/pci0000:00/0000:00:01.0");
        let absolute = resolver.resolve("/sys/abs/pci0000:00", true).unwrap();
        assert_eq!(absolute, base.join("sys/devices/pci0000:00"));
        let up = resolver.resolve("/sys/up/passwd", true).unwrap();
        assert!(is_inside(base, &up));
        assert_eq!(up, base.join("etc/passwd"));
    }

    #[test]
    fn loops_end_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        let resolver = Resolver::new(dir.path().to_path_buf());
        assert_eq!(
            resolver.resolve("/a/x", true),
            Err(ResolveError::TooManyLinks)
        );
    }
}
