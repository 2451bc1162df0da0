//! Recording what one pass reads, so that it can be read again without the
//! host.
//!
//! A recording root ([`HostRoot::recorded`]) reads the host as usual and
//! also notes, for every read, what each component of the path is: the
//! directories passed through, each symlink with its target (so that the
//! link and what it points to are both kept), what was not there, and at
//! the end of the path the bytes read, the names listed or the reason the
//! read failed. The result is a [`MemoryTree`] holding exactly what the
//! pass looked at and nothing else: nothing is walked that the pass did
//! not read.
//!
//! Some files are never kept even when read: the arguments, environment
//! and memory of processes, and key material ([`withheld`]). Their reads
//! are recorded as withheld, with no content.
//!
//! [`HostRoot::recorded`]: crate::HostRoot::recorded

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::kmsg_device::KmsgRead;
use crate::memory::{Content, Listing, MemoryTree, Node, Reason, relative_link};
use crate::read_error::{FileKind, IoKind, ReadError};
use crate::tree::Tail;

/// The most symlinks one resolution follows (the kernel allows 40).
const MAX_LINKS: usize = 40;

/// Files under `/proc/<pid>/` (and `/proc/<pid>/task/<tid>/`) that hold a
/// process's arguments, environment or memory: never kept.
const PROCESS_PRIVATE: &[&str] = &["environ", "cmdline", "mem", "auxv"];

/// Whether the content of host path `path` (resolved, without links) is
/// never kept in a recording, whoever reads it: process arguments,
/// environment and memory, `/proc/kcore`, password hashes and key
/// material. `/proc/cmdline`, the kernel's boot parameters, is kept.
pub fn withheld(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let Some(name) = parts.last() else {
        return false;
    };
    let process = |part: &str| {
        part == "self" || part == "thread-self" || part.bytes().all(|b| b.is_ascii_digit())
    };
    if parts[0] == "proc" {
        return path == "/proc/kcore"
            || (parts.len() >= 3 && process(parts[1]) && PROCESS_PRIVATE.contains(name));
    }
    matches!(path, "/etc/shadow" | "/etc/gshadow")
        || parts.contains(&".ssh")
        || name.starts_with("ssh_host_")
        || name.ends_with(".key")
        || name.ends_with(".pem")
}

/// What `lstat` said about a resolved path.
#[derive(Clone)]
enum Kind {
    Missing,
    Directory,
    File,
    Special(FileKind),
    Link(String),
    Failed(Reason),
}

/// What the read that leads to a path saw of its last component, through
/// its resolved directory, so that the recorder need not look again.
enum Seen {
    /// A regular file.
    File,
    /// A symlink, with its target as written.
    Link(String),
}

/// What a walk ended on: the resolved path and what it is.
struct Reached {
    key: String,
    kind: Kind,
}

/// Notes what a directory root's reads find.
pub(crate) struct Recorder {
    base: PathBuf,
    state: Mutex<State>,
}

struct State {
    tree: MemoryTree,
    kinds: HashMap<String, Kind>,
    /// Each directory path as given, resolved: a pass reads many files of
    /// one directory, whose path is walked once.
    dirs: HashMap<String, Option<(String, Kind)>>,
}

impl Recorder {
    /// A recorder for the tree under `base` (`/` for the live host).
    pub(crate) fn new(base: PathBuf, live: bool) -> Recorder {
        let mut tree = MemoryTree::new();
        tree.set_process_view(live);
        Recorder {
            base,
            state: Mutex::new(State {
                tree,
                kinds: HashMap::new(),
                dirs: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What was recorded, taken out: the recorder starts afresh.
    pub(crate) fn take(&self) -> MemoryTree {
        let mut state = self.state();
        let process_view = state.tree.process_view();
        state.kinds.clear();
        state.dirs.clear();
        let mut fresh = MemoryTree::new();
        fresh.set_process_view(process_view);
        std::mem::replace(&mut state.tree, fresh)
    }

    /// Notes a file read and its result. `direct` says that the read saw
    /// the file's own directory entry, a regular file: the last component
    /// is then not looked at again.
    pub(crate) fn read(
        &self,
        path: &str,
        result: &Result<Option<Vec<u8>>, ReadError>,
        direct: bool,
    ) {
        let seen = direct.then_some(Seen::File);
        let Some(reached) = self.reach(path, true, seen) else {
            return;
        };
        let node = if withheld(&reached.key) {
            match reached.kind {
                Kind::File => Node::File(Content::Failed(Reason::Withheld)),
                _ => return,
            }
        } else {
            match (result, &reached.kind) {
                (Ok(Some(bytes)), _) => Node::File(Content::Read(Arc::from(bytes.as_slice()))),
                (Err(ReadError::NotAFile { kind, .. }), _) if *kind != FileKind::Directory => {
                    Node::Special(*kind)
                }
                (Err(err), Kind::File) => match Reason::of(err) {
                    Some(reason) => Node::File(Content::Failed(reason)),
                    None => return,
                },
                _ => return,
            }
        };
        self.state().tree.merge(&reached.key, node);
    }

    /// Notes a read of a file's end (see [`Source::read_tail`]): the part
    /// read, as [`Recorder::read`] does, and the bytes before it.
    ///
    /// [`Source::read_tail`]: crate::source::Source::read_tail
    pub(crate) fn tail(&self, path: &str, result: &Result<Option<Tail>, ReadError>) {
        let read = match result {
            Ok(tail) => Ok(tail.as_ref().map(|tail| tail.bytes.clone())),
            Err(err) => Err(err.clone()),
        };
        self.read(path, &read, false);
        if let Ok(Some(tail)) = result
            && tail.skipped > 0
            && let Some(reached) = self.reach(path, true, None)
        {
            self.state().tree.set_skipped(&reached.key, tail.skipped);
        }
    }

    /// Notes a directory listing and its result.
    pub(crate) fn list(&self, path: &str, result: &Result<Option<Vec<String>>, ReadError>) {
        let Some(reached) = self.reach(path, true, None) else {
            return;
        };
        let node = match (result, &reached.kind) {
            (Ok(Some(names)), _) => Node::Dir(Listing::Names(names.clone())),
            (Err(err), Kind::Directory) => match Reason::of(err) {
                Some(reason) => Node::Dir(Listing::Failed(reason)),
                None => return,
            },
            _ => return,
        };
        self.state().tree.merge(&reached.key, node);
    }

    /// Notes the path of a link lookup, with the target the lookup read:
    /// the link itself is what is kept.
    pub(crate) fn link(&self, path: &str, target: Option<&str>) {
        self.reach(path, false, target.map(|t| Seen::Link(t.to_owned())));
    }

    /// Notes a path that is resolved to the end (an existence test, a
    /// canonical path): every link on the way is kept.
    pub(crate) fn resolved(&self, path: &str) {
        self.reach(path, true, None);
    }

    /// Keeps the window a read of `/dev/kmsg` returned, so that the
    /// recording judges the same records without the device (see
    /// [`MemoryTree`]'s kernel log). The window is bounded as the read
    /// is: its time span and `kmsg_device::MAX_BYTES`.
    pub(crate) fn kmsg(&self, read: &KmsgRead) {
        self.state().tree.keep_kernel_log(read);
    }

    /// Notes a read that missed its deadline. Nothing more is looked at on
    /// a host that is stuck, so the path is kept as written, where nothing
    /// recorded stands in its way.
    pub(crate) fn timed_out(&self, err: &ReadError) {
        let Some(reason) = Reason::of(err) else {
            return;
        };
        let mut key = String::new();
        for part in err.path().split('/') {
            match part {
                "" | "." => {}
                ".." => key.truncate(key.rfind('/').unwrap_or(0)),
                name => {
                    key.push('/');
                    key.push_str(name);
                }
            }
        }
        if !key.is_empty() {
            self.state()
                .tree
                .merge(&key, Node::File(Content::Failed(reason)));
        }
    }

    /// Walks `path` component by component as resolution does, noting
    /// each one; `None` when the walk ends before the last (a missing or
    /// unreadable component, a loop). `seen` is what the last component
    /// is, when the read that led here saw its directory entry.
    fn reach(&self, path: &str, follow_last: bool, seen: Option<Seen>) -> Option<Reached> {
        let mut links = 0;
        let (mut resolved, kind) = match path.rsplit_once('/') {
            // The directory is walked once and remembered; only the last
            // name is walked for each file in it.
            Some((dir, name)) if !matches!(name, "" | "." | "..") => {
                let (mut resolved, start) = self.dir(dir)?;
                let kind = match (seen, &start) {
                    // A link seen is kept as the link, not followed.
                    (Some(seen), Kind::Directory) if !follow_last || matches!(seen, Seen::File) => {
                        resolved.push('/');
                        resolved.push_str(name);
                        let kind = match seen {
                            Seen::File => Kind::File,
                            Seen::Link(target) => Kind::Link(relative_link(&resolved, &target)),
                        };
                        self.note(&resolved, kind)
                    }
                    _ => self.walk(&mut resolved, start, &[name], follow_last, &mut links)?,
                };
                (resolved, kind)
            }
            _ => {
                let mut resolved = String::new();
                let parts: Vec<&str> = path.split('/').collect();
                let kind = self.walk(
                    &mut resolved,
                    Kind::Directory,
                    &parts,
                    follow_last,
                    &mut links,
                )?;
                (resolved, kind)
            }
        };
        if resolved.is_empty() {
            resolved.push('/');
        }
        Some(Reached {
            key: resolved,
            kind,
        })
    }

    /// The directory path `dir` resolved, and what it ends on; `None`
    /// when its walk ends early.
    fn dir(&self, dir: &str) -> Option<(String, Kind)> {
        if let Some(known) = self.state().dirs.get(dir) {
            return known.clone();
        }
        let mut resolved = String::new();
        let mut links = 0;
        let parts: Vec<&str> = dir.split('/').collect();
        let found = self
            .walk(&mut resolved, Kind::Directory, &parts, true, &mut links)
            .map(|kind| (resolved, kind));
        self.state().dirs.insert(dir.to_owned(), found.clone());
        found
    }

    fn walk(
        &self,
        resolved: &mut String,
        start: Kind,
        parts: &[&str],
        follow_last: bool,
        links: &mut usize,
    ) -> Option<Kind> {
        let mut current = start;
        for (index, part) in parts.iter().enumerate() {
            match *part {
                "" | "." => continue,
                ".." => {
                    resolved.truncate(resolved.rfind('/').unwrap_or(0));
                    current = Kind::Directory;
                    continue;
                }
                _ => {}
            }
            if !matches!(current, Kind::Directory) {
                return None;
            }
            let parent_end = resolved.len();
            resolved.push('/');
            resolved.push_str(part);
            let is_last = index + 1 == parts.len();
            current = match self.kind(resolved) {
                Kind::Link(target) if !is_last || follow_last => {
                    *links += 1;
                    if *links > MAX_LINKS {
                        return None;
                    }
                    resolved.truncate(parent_end);
                    let target_parts: Vec<&str> = target.split('/').collect();
                    self.walk(resolved, Kind::Directory, &target_parts, true, links)?
                }
                other => other,
            };
        }
        Some(current)
    }

    /// What the resolved path `key` is, looked at once per recording and
    /// noted in the tree.
    fn kind(&self, key: &str) -> Kind {
        if let Some(kind) = self.state().kinds.get(key) {
            return kind.clone();
        }
        let kind = self.look(key);
        self.note(key, kind)
    }

    /// What `lstat` says the resolved path `key` is on the host.
    fn look(&self, key: &str) -> Kind {
        let real = self.base.join(key.trim_start_matches('/'));
        match fs::symlink_metadata(&real) {
            Err(err) if is_missing(&err) => Kind::Missing,
            Err(err) => Kind::Failed(io_reason(&err)),
            Ok(meta) if meta.file_type().is_symlink() => match fs::read_link(&real) {
                Ok(target) => Kind::Link(relative_link(key, &target.to_string_lossy())),
                Err(err) => Kind::Failed(io_reason(&err)),
            },
            Ok(meta) => match FileKind::from_mode(meta.mode()) {
                None => Kind::File,
                Some(FileKind::Directory) => Kind::Directory,
                Some(kind) => Kind::Special(kind),
            },
        }
    }

    /// Notes that the resolved path `key` is `kind`, unless it was noted
    /// already: what was seen first stands. Returns what is noted.
    fn note(&self, key: &str, kind: Kind) -> Kind {
        let mut state = self.state();
        if let Some(known) = state.kinds.get(key) {
            return known.clone();
        }
        let node = match &kind {
            Kind::Missing => Node::Absent,
            Kind::Directory => Node::Dir(Listing::NotListed),
            Kind::File => Node::File(Content::NotRead),
            Kind::Special(kind) => Node::Special(*kind),
            Kind::Link(target) => Node::Link(target.clone()),
            Kind::Failed(reason) => Node::Unknown(reason.clone()),
        };
        state.tree.merge(key, node);
        state.kinds.insert(key.to_owned(), kind.clone());
        kind
    }
}

fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn io_reason(err: &io::Error) -> Reason {
    Reason::Io {
        kind: IoKind::of(err.kind()),
        message: err.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_secrets_and_keys_are_withheld() {
        for path in [
            "/proc/1/environ",
            "/proc/self/cmdline",
            "/proc/42/task/42/environ",
            "/proc/7/mem",
            "/proc/kcore",
            "/etc/shadow",
            "/root/.ssh/id_ed25519",
            "/etc/ssh/ssh_host_rsa_key",
            "/etc/pki/server.key",
        ] {
            assert!(withheld(path), "{path}");
        }
        for path in [
            "/proc/cmdline",
            "/proc/self/mountinfo",
            "/proc/1/limits",
            "/sys/class/net/eth0/mtu",
            "/etc/cufile.json",
        ] {
            assert!(!withheld(path), "{path}");
        }
    }
}
