//! Raw files that differ between two recorded trees: contents (with a
//! unified diff of text), link targets, directory listings, and what is
//! on one side only.
//!
//! `/proc/<pid>/…` is compared as `/proc/self/…`: each side read it
//! through its own process, whose number means nothing.

use std::collections::BTreeMap;

use serde::Serialize;
use similar::TextDiff;
use zerohop_host::memory::{Content, Listing, MemoryTree, Node};

use super::volatile::is_volatile_path;

/// The most lines of unified diff kept per file.
const MAX_DIFF_LINES: usize = 200;

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Only side B has it.
    Added,
    /// Only side A has it.
    Removed,
    /// Both have it, with different contents, targets or names.
    Changed,
}

/// A path that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The host path.
    pub path: String,
    /// How.
    pub change: Change,
    /// What side A has there.
    pub a: Option<String>,
    /// What side B has there.
    pub b: Option<String>,
    /// A unified diff, when both are text files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The paths of `tree` with `/proc/<pid>` written as `/proc/self`, without
/// the link itself and without directories passed through unlisted (their
/// files are compared).
fn paths(tree: &MemoryTree) -> BTreeMap<String, &Node> {
    let own = match tree.node("/proc/self") {
        Some(Node::Link(pid)) if pid.bytes().all(|b| b.is_ascii_digit()) => {
            Some(format!("/proc/{pid}"))
        }
        _ => None,
    };
    let mut map = BTreeMap::new();
    for (path, node) in tree.nodes() {
        if path == "/proc/self" || matches!(node, Node::Dir(Listing::NotListed)) {
            continue;
        }
        let path = match &own {
            Some(own) if path == own || path.starts_with(&format!("{own}/")) => {
                format!("/proc/self{}", &path[own.len()..])
            }
            _ => path.to_owned(),
        };
        map.insert(path, node);
    }
    map
}

/// What a node is, in a few words.
fn summary(node: &Node) -> Option<String> {
    Some(match node {
        Node::File(Content::Read(bytes)) => format!("file of {} bytes", bytes.len()),
        Node::File(Content::NotRead) => "file (content not read)".to_owned(),
        Node::File(Content::Failed(reason)) => {
            format!(
                "unreadable: {}",
                reason.error("", 0).to_string().trim_start()
            )
        }
        Node::Dir(Listing::Names(names)) => format!("directory of {} names", names.len()),
        Node::Dir(Listing::NotListed) => "directory".to_owned(),
        Node::Dir(Listing::Failed(reason)) => {
            format!(
                "unlistable: {}",
                reason.error("", 0).to_string().trim_start()
            )
        }
        Node::Link(target) => format!("link to {target}"),
        Node::Special(kind) => kind.name().to_owned(),
        Node::Unknown(reason) => {
            format!("unknown: {}", reason.error("", 0).to_string().trim_start())
        }
        Node::Absent => return None,
    })
}

/// The paths that differ between `a` and `b`; volatile ones only when `all`.
pub(crate) fn changes(a: &MemoryTree, b: &MemoryTree, all: bool) -> Vec<FileChange> {
    let a = paths(a);
    let b = paths(b);
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes = Vec::new();
    for path in keys {
        if !all && is_volatile_path(path) {
            continue;
        }
        let (left, right) = (a.get(path).copied(), b.get(path).copied());
        let (sa, sb) = (left.and_then(summary), right.and_then(summary));
        let change = match (&sa, &sb) {
            (None, None) => continue,
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            (Some(_), Some(_)) if left == right => continue,
            (Some(_), Some(_)) => Change::Changed,
        };
        let diff = match (left, right) {
            (Some(Node::File(Content::Read(x))), Some(Node::File(Content::Read(y)))) => {
                unified(path, x, y)
            }
            (Some(Node::Dir(Listing::Names(x))), Some(Node::Dir(Listing::Names(y)))) => {
                unified(path, x.join("\n").as_bytes(), y.join("\n").as_bytes())
            }
            _ => None,
        };
        changes.push(FileChange {
            path: path.clone(),
            change,
            a: sa,
            b: sb,
            diff,
        });
    }
    changes
}

/// A unified diff of two texts, at most [`MAX_DIFF_LINES`] lines; `None`
/// when either is not UTF-8.
fn unified(path: &str, a: &[u8], b: &[u8]) -> Option<String> {
    let (a, b) = (std::str::from_utf8(a).ok()?, std::str::from_utf8(b).ok()?);
    let text = TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(1)
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= MAX_DIFF_LINES {
        return Some(text);
    }
    let mut kept = lines[..MAX_DIFF_LINES].join("\n");
    kept.push_str(&format!(
        "\n… {} more lines\n",
        lines.len() - MAX_DIFF_LINES
    ));
    Some(kept)
}
