//! A host tree held in memory: what one recorded pass read, and the tree a
//! snapshot archive is opened into.
//!
//! A [`MemoryTree`] maps host paths to [`Node`]s: the files read with their
//! bytes, the directories listed with their names, the symlinks followed
//! with their targets, and what was looked for and not found, so that the
//! same reads give the same answers without the host. What was never
//! recorded is neither invented nor taken for absent: a read of it is an
//! error that says so.
//!
//! Paths are resolved the way [`HostRoot::at`] resolves them in a
//! directory: absolute link targets are refused when the tree is built,
//! `..` never climbs above the root, loops end after a fixed number of
//! links.
//!
//! [`HostRoot::at`]: crate::HostRoot::at

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use crate::kmsg_device::{CAPTURE, KmsgRead};
use crate::read_error::{FileKind, IoKind, ReadError};

/// The most symlinks one resolution follows (the kernel allows 40).
const MAX_LINKS: usize = 40;

/// The longest host path a tree holds, as the kernel's `PATH_MAX`.
pub const MAX_PATH_BYTES: usize = 4096;

/// What was found at one host path.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A regular file.
    File(Content),
    /// A directory.
    Dir(Listing),
    /// A symlink and its target, relative to the link's directory.
    Link(String),
    /// Something other than a file, a directory or a link (a FIFO, a
    /// device): never read.
    Special(FileKind),
    /// Looked for and not there.
    Absent,
    /// Looking at it failed, so what it is is not known.
    Unknown(Reason),
}

/// What is known of a regular file's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// The bytes a read returned.
    Read(Arc<[u8]>),
    /// The file exists; its content was not read.
    NotRead,
    /// Reading it failed.
    Failed(Reason),
}

/// What is known of a directory's names.
#[derive(Debug, Clone, PartialEq)]
pub enum Listing {
    /// Every name in it, sorted.
    Names(Vec<String>),
    /// It exists and was passed through; it was not listed.
    NotListed,
    /// Listing it failed.
    Failed(Reason),
}

/// Why a path that exists could not be read, without the path: the part of
/// a [`ReadError`] a tree keeps. A snapshot's manifest writes it as is
/// (`{"reason": "timeout", "seconds": 2.0}`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Reason {
    /// Larger than the read's cap.
    TooLarge,
    /// More entries than a listing returns.
    TooManyEntries {
        /// The most entries a listing returns.
        cap: usize,
    },
    /// The read did not finish within its deadline.
    Timeout {
        /// The deadline in seconds.
        seconds: f64,
    },
    /// Not attempted because of earlier stuck reads.
    GaveUp {
        /// How many reads were stuck.
        stuck: usize,
    },
    /// Another error, such as permission denied.
    Io {
        /// What kind of error it was. Archives written before it was kept
        /// read as [`IoKind::Other`], which is also left out when written.
        #[serde(default, skip_serializing_if = "IoKind::is_other")]
        kind: IoKind,
        /// The operating system's message.
        message: String,
    },
    /// Never put in a snapshot: see [`crate::record::withheld`].
    Withheld,
}

impl Reason {
    /// The reason of `err`; `None` for the errors a tree records as what the
    /// path is ([`ReadError::NotAFile`], [`ReadError::SymlinkLoop`]), that
    /// come after the read ([`ReadError::NotText`]), and a tree's own
    /// ([`ReadError::NotRecorded`]).
    pub fn of(err: &ReadError) -> Option<Reason> {
        Some(match err {
            ReadError::TooLarge { .. } => Reason::TooLarge,
            ReadError::TooManyEntries { cap, .. } => Reason::TooManyEntries { cap: *cap },
            ReadError::Timeout { seconds, .. } => Reason::Timeout { seconds: *seconds },
            ReadError::GaveUp { stuck, .. } => Reason::GaveUp { stuck: *stuck },
            ReadError::Io { kind, message, .. } => Reason::Io {
                kind: *kind,
                message: message.clone(),
            },
            ReadError::Withheld { .. } => Reason::Withheld,
            ReadError::NotText { .. }
            | ReadError::NotAFile { .. }
            | ReadError::SymlinkLoop { .. }
            | ReadError::NotRecorded { .. } => return None,
        })
    }

    /// The error a read of `path` with `cap` bytes gets.
    pub fn error(&self, path: &str, cap: usize) -> ReadError {
        let path = path.to_owned();
        match self {
            Reason::TooLarge => ReadError::TooLarge { path, cap },
            Reason::TooManyEntries { cap } => ReadError::TooManyEntries { path, cap: *cap },
            Reason::Timeout { seconds } => ReadError::Timeout {
                path,
                seconds: *seconds,
            },
            Reason::GaveUp { stuck } => ReadError::GaveUp {
                path,
                stuck: *stuck,
            },
            Reason::Io { kind, message } => ReadError::Io {
                path,
                kind: *kind,
                message: message.clone(),
            },
            Reason::Withheld => ReadError::Withheld { path },
        }
    }
}

/// Why a node cannot be part of a tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The path is not an absolute path of plain names.
    #[error("{path:?} is not a plain absolute path (no `.`, `..`, empty or over-long names)")]
    BadPath {
        /// The path as given.
        path: String,
    },
    /// The link target is absolute or climbs above the root.
    #[error("the link {path} points outside the tree ({target:?})")]
    LinkEscapes {
        /// The link.
        path: String,
        /// Its target.
        target: String,
    },
    /// The path was given twice.
    #[error("{path} appears twice")]
    Duplicate {
        /// The path.
        path: String,
    },
    /// A path lies below something that is not a directory.
    #[error("{path} lies below {parent}, which is not a directory")]
    NotUnderADirectory {
        /// The path.
        path: String,
        /// The ancestor that is not a directory.
        parent: String,
    },
}

/// A host tree in memory. Built node by node ([`MemoryTree::insert`]),
/// which refuses what a tree cannot hold, and read through
/// [`HostRoot::in_memory`](crate::HostRoot::in_memory).
///
/// Nodes are found by hashing the path of each component as resolution
/// walks it: a doctor pass makes some 50,000 reads of paths ten
/// components deep, which share long prefixes that an ordered map would
/// compare again at every level.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTree {
    nodes: HashMap<String, Node>,
    process_view: bool,
    kernel_log: Option<LiveLog>,
    /// For a file read from its end (the kernel-log capture), the bytes
    /// before the part kept, by path: a capture cut at its cap replays as
    /// cut.
    skipped: HashMap<String, u64>,
}

/// How a recording read the running kernel's log (`/dev/kmsg`), whose
/// window it keeps, in the device's own record format, as the file at
/// [`CAPTURE`]: a tree that holds one answers the kernel-log read the way
/// the device answered it, so that the doctor judges the same window with
/// the same wording. A snapshot's manifest writes it as is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveLog {
    /// The device read (`/dev/kmsg`, `/host/dev/kmsg`).
    pub device: String,
    /// Records were overwritten in the ring buffer while it was read.
    #[serde(default)]
    pub overrun: bool,
    /// Why the read stopped before the newest record, or left records of
    /// the window out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

impl Default for MemoryTree {
    fn default() -> MemoryTree {
        MemoryTree::new()
    }
}

impl MemoryTree {
    /// An empty tree: only the root directory, not listed.
    pub fn new() -> MemoryTree {
        MemoryTree::with_capacity(1)
    }

    /// An empty tree with room for `paths` nodes before it grows: one
    /// rebuilt from a list of known length (an archive's manifest).
    pub fn with_capacity(paths: usize) -> MemoryTree {
        let mut nodes = HashMap::with_capacity(paths);
        nodes.insert("/".to_owned(), Node::Dir(Listing::NotListed));
        MemoryTree {
            nodes,
            process_view: false,
            kernel_log: None,
            skipped: HashMap::new(),
        }
    }

    /// Whether `/proc/self` in this tree describes the zerohop process that
    /// recorded it on a live host (its memlock limits, its capabilities).
    pub fn process_view(&self) -> bool {
        self.process_view
    }

    /// Marks whether `/proc/self` describes the recording process.
    pub fn set_process_view(&mut self, process_view: bool) {
        self.process_view = process_view;
    }

    /// The bytes a read from the end of the file at `path` left before
    /// the part this tree keeps (0 when it keeps the whole file).
    pub fn skipped(&self, path: &str) -> u64 {
        self.skipped.get(path).copied().unwrap_or(0)
    }

    /// Notes that the file at `path` is kept from its end, `skipped` bytes
    /// after its start.
    pub fn set_skipped(&mut self, path: &str, skipped: u64) {
        if skipped > 0 {
            self.skipped.insert(path.to_owned(), skipped);
        } else {
            self.skipped.remove(path);
        }
    }

    /// How the kernel log's window at [`CAPTURE`] was read, when it was
    /// read live from the device.
    pub fn kernel_log(&self) -> Option<&LiveLog> {
        self.kernel_log.as_ref()
    }

    /// Marks the file at [`CAPTURE`] as the window of the device read as
    /// `log` says.
    pub fn set_kernel_log(&mut self, log: Option<LiveLog>) {
        self.kernel_log = log;
    }

    /// Keeps `read`, the window a recording read from the device, as the
    /// file at [`CAPTURE`]: the directories above it are taken as
    /// directories where nothing else was recorded, and what was recorded
    /// at the path itself (an absence: the root held no capture) gives
    /// way. Nothing is kept when something other than a directory was
    /// recorded above it.
    pub(crate) fn keep_kernel_log(&mut self, read: &KmsgRead) {
        let mut end = 0;
        while let Some(next) = CAPTURE[end + 1..].find('/') {
            end += 1 + next;
            let parent = &CAPTURE[..end];
            match self.nodes.get(parent) {
                None | Some(Node::Absent) => {
                    self.nodes
                        .insert(parent.to_owned(), Node::Dir(Listing::NotListed));
                }
                Some(Node::Dir(_)) => {}
                Some(_) => return,
            }
        }
        let bytes = Arc::from(read.text.as_bytes());
        self.nodes
            .insert(CAPTURE.to_owned(), Node::File(Content::Read(bytes)));
        self.kernel_log = Some(LiveLog {
            device: read.path.clone(),
            overrun: read.overrun,
            cut: read.cut.clone(),
        });
    }

    /// The window of the device this tree keeps (see [`LiveLog`]), as the
    /// device gave it; `None` when it keeps none.
    pub(crate) fn kmsg(&self) -> Result<Option<KmsgRead>, ReadError> {
        let Some(log) = &self.kernel_log else {
            return Ok(None);
        };
        let Some(bytes) = self.read_bytes(CAPTURE, crate::kmsg_device::MAX_BYTES)? else {
            return Ok(None);
        };
        Ok(Some(KmsgRead {
            path: log.device.clone(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
            overrun: log.overrun,
            cut: log.cut.clone(),
        }))
    }

    /// Every node by path, sorted by path.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Node)> {
        let mut nodes: Vec<(&str, &Node)> = self
            .nodes
            .iter()
            .map(|(path, node)| (path.as_str(), node))
            .collect();
        nodes.sort_unstable_by_key(|(path, _)| *path);
        nodes.into_iter()
    }

    /// The node at `path`, as recorded (no link followed).
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// How many nodes the tree holds, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree holds only its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1
    }

    /// Adds the node at `path`, creating the directories above it. Refuses
    /// a path that is not plain, a link that leaves the tree, a path given
    /// twice and a path below something that is not a directory.
    pub fn insert(&mut self, path: impl Into<String>, node: Node) -> Result<(), TreeError> {
        let path: String = path.into();
        let node = sorted(node);
        if path == "/" && matches!(node, Node::Dir(_)) {
            // The root is always a directory, given in full at most once.
            return match self.nodes.insert(path.clone(), node) {
                Some(Node::Dir(Listing::NotListed)) => Ok(()),
                _ => Err(TreeError::Duplicate { path }),
            };
        }
        check_path(&path)?;
        if let Node::Link(target) = &node {
            check_link(&path, target)?;
        }
        self.make_parents(&path)?;
        match self.nodes.entry(path) {
            Entry::Vacant(vacant) => {
                vacant.insert(node);
            }
            // A directory passed through first and given in full later.
            // (One made for the paths below it cannot become anything else.)
            Entry::Occupied(mut occupied)
                if matches!(occupied.get(), Node::Dir(Listing::NotListed))
                    && matches!(node, Node::Dir(_)) =>
            {
                occupied.insert(node);
            }
            Entry::Occupied(occupied) => {
                return Err(TreeError::Duplicate {
                    path: occupied.key().clone(),
                });
            }
        }
        Ok(())
    }

    fn make_parents(&mut self, path: &str) -> Result<(), TreeError> {
        // Every directory in the tree has its own parents: start below the
        // deepest one that exists, which for paths added in order is
        // nearly always the immediate parent.
        let mut end = 0;
        let mut above = path.len();
        while let Some(slash) = path[..above].rfind('/').filter(|&slash| slash > 0) {
            match self.nodes.get(&path[..slash]) {
                Some(Node::Dir(_)) => {
                    end = slash;
                    break;
                }
                Some(_) => {
                    return Err(TreeError::NotUnderADirectory {
                        path: path.to_owned(),
                        parent: path[..slash].to_owned(),
                    });
                }
                None => above = slash,
            }
        }
        // Below it, none exists.
        while let Some(next) = path[end + 1..].find('/') {
            end += 1 + next;
            self.nodes
                .insert(path[..end].to_owned(), Node::Dir(Listing::NotListed));
        }
        Ok(())
    }

    /// Puts `node` at `path` as a recorder learns it: what is known already
    /// stays unless `node` knows more (content over none, a listing over
    /// none, a success over a failure). Paths come from resolution and are
    /// plain; a path below a non-directory (the host changed meanwhile) is
    /// dropped.
    pub(crate) fn merge(&mut self, path: &str, node: Node) {
        if self.make_parents(path).is_err() {
            return;
        }
        let node = sorted(node);
        let Some(old) = self.nodes.get_mut(path) else {
            self.nodes.insert(path.to_owned(), node);
            return;
        };
        let replace = match (&*old, &node) {
            (Node::Absent, _) => true,
            (Node::File(Content::Read(_)), _) => false,
            (Node::File(_), Node::File(Content::Read(_))) => true,
            (Node::File(Content::NotRead), Node::File(Content::Failed(_))) => true,
            (Node::Dir(Listing::Names(_)), _) => false,
            (Node::Dir(_), Node::Dir(Listing::Names(_))) => true,
            (Node::Dir(Listing::NotListed), Node::Dir(Listing::Failed(_))) => true,
            (Node::Unknown(_), Node::Unknown(_) | Node::Absent) => false,
            (Node::Unknown(_), _) => true,
            _ => false,
        };
        if replace {
            *old = node;
        }
    }

    /// What `path` names after resolution.
    fn find(&self, path: &str, follow_last: bool) -> Result<Found<'_>, ReadError> {
        let mut resolved = String::new();
        let mut links = 0;
        let parts: Vec<&str> = path.split('/').collect();
        let root = Found::Node(self.root_node());
        self.walk(path, &mut resolved, root, &parts, follow_last, &mut links)
    }

    fn walk<'a>(
        &'a self,
        path: &str,
        resolved: &mut String,
        start: Found<'a>,
        parts: &[&str],
        follow_last: bool,
        links: &mut usize,
    ) -> Result<Found<'a>, ReadError> {
        let mut found = start;
        for (index, part) in parts.iter().enumerate() {
            match *part {
                "" | "." => continue,
                ".." => {
                    pop(resolved);
                    found = Found::Node(self.nodes.get(key(resolved)).unwrap_or(&DIR));
                    continue;
                }
                _ => {}
            }
            // Only a directory has names below it.
            match found {
                Found::Node(Node::Dir(_)) => {}
                Found::Node(Node::Unknown(reason)) => {
                    return Err(reason.error(path, 0));
                }
                Found::Node(_) | Found::Missing => return Ok(Found::Missing),
            }
            let parent_end = resolved.len();
            resolved.push('/');
            resolved.push_str(part);
            let is_last = index + 1 == parts.len();
            found = match self.nodes.get(resolved.as_str()) {
                Some(Node::Absent) => Found::Missing,
                Some(Node::Link(target)) if !is_last || follow_last => {
                    *links += 1;
                    if *links > MAX_LINKS {
                        return Err(ReadError::SymlinkLoop {
                            path: path.to_owned(),
                        });
                    }
                    resolved.truncate(parent_end);
                    let parent = Found::Node(self.nodes.get(key(resolved)).unwrap_or(&DIR));
                    let target_parts: Vec<&str> = target.split('/').collect();
                    self.walk(path, resolved, parent, &target_parts, true, links)?
                }
                Some(node) => Found::Node(node),
                None => {
                    let parent = &resolved[..parent_end];
                    match self.nodes.get(key(parent)) {
                        Some(Node::Dir(Listing::Names(names)))
                            if names.binary_search_by(|n| n.as_str().cmp(part)).is_err() =>
                        {
                            Found::Missing
                        }
                        _ => return Err(not_recorded(path)),
                    }
                }
            };
        }
        Ok(found)
    }

    fn root_node(&self) -> &Node {
        self.nodes.get("/").unwrap_or(&DIR)
    }

    /// At most `cap` bytes of the file at `path`, as [`HostRoot::read`]
    /// reads a directory tree.
    ///
    /// [`HostRoot::read`]: crate::HostRoot::read
    pub(crate) fn read_bytes(&self, path: &str, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        match self.find(path, true)? {
            Found::Missing => Ok(None),
            Found::Node(node) => match node {
                Node::File(Content::Read(bytes)) if bytes.len() > cap => Err(ReadError::TooLarge {
                    path: path.to_owned(),
                    cap,
                }),
                Node::File(Content::Read(bytes)) => Ok(Some(bytes.to_vec())),
                Node::File(Content::NotRead) => Err(not_recorded(path)),
                Node::File(Content::Failed(reason)) | Node::Unknown(reason) => {
                    Err(reason.error(path, cap))
                }
                Node::Dir(_) => Err(not_a_file(path, FileKind::Directory)),
                Node::Special(kind) => Err(not_a_file(path, *kind)),
                Node::Link(_) | Node::Absent => Ok(None),
            },
        }
    }

    /// The names in the directory at `path`, unsorted as a tree gives them.
    pub(crate) fn list(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        match self.find(path, true)? {
            Found::Missing => Ok(None),
            Found::Node(node) => match node {
                Node::Dir(Listing::Names(names)) => Ok(Some(names.clone())),
                Node::Dir(Listing::NotListed) => Err(not_recorded(path)),
                Node::Dir(Listing::Failed(reason)) | Node::Unknown(reason) => {
                    Err(reason.error(path, 0))
                }
                _ => Ok(None),
            },
        }
    }

    /// The target of the symlink at `path`.
    pub(crate) fn read_link(&self, path: &str) -> Result<Option<String>, ReadError> {
        match self.find(path, false)? {
            Found::Node(Node::Link(target)) => Ok(Some(target.clone())),
            Found::Node(Node::Unknown(reason)) => Err(reason.error(path, 0)),
            _ => Ok(None),
        }
    }

    /// `path` with every link resolved.
    pub(crate) fn canonical(&self, path: &str) -> Result<Option<String>, ReadError> {
        let mut resolved = String::new();
        let mut links = 0;
        let parts: Vec<&str> = path.split('/').collect();
        let root = Found::Node(self.root_node());
        match self.walk(path, &mut resolved, root, &parts, true, &mut links)? {
            Found::Missing | Found::Node(Node::Absent | Node::Link(_)) => Ok(None),
            Found::Node(Node::Unknown(reason)) => Err(reason.error(path, 0)),
            Found::Node(_) => Ok(Some(key(&resolved).to_owned())),
        }
    }

    /// Whether anything exists at `path`.
    pub(crate) fn exists(&self, path: &str) -> Result<bool, ReadError> {
        match self.find(path, true)? {
            Found::Missing | Found::Node(Node::Absent | Node::Link(_)) => Ok(false),
            Found::Node(Node::Unknown(reason)) => Err(reason.error(path, 0)),
            Found::Node(_) => Ok(true),
        }
    }
}

static DIR: Node = Node::Dir(Listing::NotListed);

/// `node` with a listing's names sorted, as lookups in it expect.
fn sorted(node: Node) -> Node {
    match node {
        Node::Dir(Listing::Names(mut names)) => {
            names.sort_unstable();
            Node::Dir(Listing::Names(names))
        }
        other => other,
    }
}

/// What a resolution ended on.
enum Found<'a> {
    Node(&'a Node),
    Missing,
}

/// The map key of a resolved path (`""` is the root).
fn key(resolved: &str) -> &str {
    if resolved.is_empty() { "/" } else { resolved }
}

fn pop(resolved: &mut String) {
    let end = resolved.rfind('/').unwrap_or(0);
    resolved.truncate(end);
}

fn not_recorded(path: &str) -> ReadError {
    ReadError::NotRecorded {
        path: path.to_owned(),
    }
}

fn not_a_file(path: &str, kind: FileKind) -> ReadError {
    ReadError::NotAFile {
        path: path.to_owned(),
        kind,
    }
}

/// Refuses a path that is not `/` followed by plain names.
pub fn check_path(path: &str) -> Result<(), TreeError> {
    let bad = || TreeError::BadPath {
        path: path.chars().take(200).collect(),
    };
    let rest = path.strip_prefix('/').ok_or_else(bad)?;
    if rest.is_empty() || path.len() > MAX_PATH_BYTES || path.contains('\0') {
        return Err(bad());
    }
    if rest
        .split('/')
        .any(|name| matches!(name, "" | "." | "..") || name.len() > 255)
    {
        return Err(bad());
    }
    Ok(())
}

/// Refuses a link target that is absolute, empty, or climbs above the root
/// from the link's directory (the link at `path`).
pub fn check_link(path: &str, target: &str) -> Result<(), TreeError> {
    let escapes = || TreeError::LinkEscapes {
        path: path.to_owned(),
        target: target.chars().take(200).collect(),
    };
    if target.is_empty()
        || target.starts_with('/')
        || target.contains('\0')
        || target.len() > MAX_PATH_BYTES
    {
        return Err(escapes());
    }
    // The link's directory is as deep as the link's path less one name.
    let mut depth = path.matches('/').count() - 1;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => depth = depth.checked_sub(1).ok_or_else(escapes)?,
            _ => depth += 1,
        }
    }
    Ok(())
}

/// `target`, a link target at `path` as the host wrote it, rewritten to
/// stay inside the tree the way resolution reads it: an absolute target
/// becomes relative to the link's directory, and `..` above the root is
/// dropped.
pub(crate) fn relative_link(path: &str, target: &str) -> String {
    let parent_depth = path.matches('/').count().saturating_sub(1);
    let mut parts: Vec<&str> = Vec::new();
    let mut depth = parent_depth;
    if target.starts_with('/') {
        parts.extend(std::iter::repeat_n("..", parent_depth));
        depth = 0;
    }
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if depth == 0 => {}
            ".." => {
                depth -= 1;
                parts.push("..");
            }
            name => {
                depth += 1;
                parts.push(name);
            }
        }
    }
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> MemoryTree {
        let mut tree = MemoryTree::new();
        let file = |text: &str| Node::File(Content::Read(Arc::from(text.as_bytes())));
        tree.insert("/proc/cmdline", file("ro quiet\n")).unwrap();
        tree.insert(
            "/sys/devices/pci0000:00/0000:00:01.0/numa_node",
            file("1\n"),
        )
        .unwrap();
        tree.insert(
            "/sys/bus/pci/devices/0000:00:01.0",
            Node::Link("../../../devices/pci0000:00/0000:00:01.0".to_owned()),
        )
        .unwrap();
        tree.insert(
            "/sys/bus/pci/devices",
            Node::Dir(Listing::Names(vec!["0000:00:01.0".to_owned()])),
        )
        .unwrap();
        tree.insert("/sys/absent", Node::Absent).unwrap();
        tree.insert("/sys/loop", Node::Link("loop".to_owned()))
            .unwrap();
        tree
    }

    #[test]
    fn reads_follow_links_inside_the_tree() {
        let tree = tree();
        let read = |path| tree.read_bytes(path, 64).unwrap();
        assert_eq!(
            read("/sys/bus/pci/devices/0000:00:01.0/numa_node").as_deref(),
            Some(&b"1\n"[..])
        );
        assert_eq!(
            tree.canonical("/sys/bus/pci/devices/0000:00:01.0")
                .unwrap()
                .as_deref(),
            Some("/sys/devices/pci0000:00/0000:00:01.0")
        );
        assert_eq!(read("/sys/absent"), None);
        // Listed, and the name is not there: absent.
        assert_eq!(read("/sys/bus/pci/devices/0000:00:02.0"), None);
        // Never looked at: an error, not an absence.
        assert!(tree.read_bytes("/sys/other", 64).is_err());
        assert!(matches!(
            tree.read_bytes("/sys/loop", 64),
            Err(ReadError::SymlinkLoop { .. })
        ));
        assert!(matches!(
            tree.read_bytes("/proc/cmdline", 4),
            Err(ReadError::TooLarge { cap: 4, .. })
        ));
        assert!(matches!(
            tree.read_bytes("/proc", 4),
            Err(ReadError::NotAFile {
                kind: FileKind::Directory,
                ..
            })
        ));
        assert!(tree.exists("/sys/bus/pci/devices/0000:00:01.0").unwrap());
        assert!(!tree.exists("/sys/absent").unwrap());
    }

    #[test]
    fn a_tree_refuses_what_it_cannot_hold() {
        let mut tree = tree();
        let link = |target: &str| Node::Link(target.to_owned());
        for path in ["sys", "/", "/a/../b", "/a//b", "/a/./b", "/a/"] {
            assert!(matches!(
                tree.insert(path, Node::Absent),
                Err(TreeError::BadPath { .. })
            ));
        }
        for target in ["/", "/etc/passwd", "../../etc", "", "a/../../.."] {
            assert!(matches!(
                tree.insert("/sys/x", link(target)),
                Err(TreeError::LinkEscapes { .. })
            ));
        }
        assert!(matches!(
            tree.insert("/proc/cmdline", Node::Absent),
            Err(TreeError::Duplicate { .. })
        ));
        assert!(matches!(
            tree.insert("/proc/cmdline/x", Node::Absent),
            Err(TreeError::NotUnderADirectory { .. })
        ));
        // Below a link: the link is followed when reading, never written
        // through.
        assert!(matches!(
            tree.insert("/sys/bus/pci/devices/0000:00:01.0/x", Node::Absent),
            Err(TreeError::NotUnderADirectory { .. })
        ));
    }

    #[test]
    fn host_links_are_kept_inside() {
        assert_eq!(
            relative_link("/sys/bus/pci/devices/x", "/sys/devices/y"),
            "../../../../sys/devices/y"
        );
        assert_eq!(relative_link("/sys/up", "../../../../etc"), "../etc");
        assert_eq!(relative_link("/proc/self", "4242"), "4242");
        for (path, target) in [
            ("/sys/bus/pci/devices/x", "/sys/devices/y"),
            ("/sys/up", "../../../../etc"),
            ("/a", "/"),
        ] {
            check_link(path, &relative_link(path, target)).unwrap();
        }
    }
}
