//! Raw files that differ between two recorded trees: contents (with a
//! unified diff of text), link targets, directory listings, and what is
//! on one side only.
//!
//! `/proc/<pid>/…` is compared as `/proc/self/…`: each side read it
//! through its own process, whose number means nothing.
//!
//! Two snapshots may come from anyone, so what is compared and what is
//! written is bounded whatever their shape: files of more than
//! [`MAX_COMPARED_LINES`] lines are not diffed line by line, each line diff
//! has a deadline ([`FILE_DEADLINE`]) and all of them a budget
//! ([`TOTAL_DEADLINE`]), each diff keeps [`MAX_DIFF_LINES`] lines of at most
//! [`MAX_TEXT_CHARS`] characters, the whole diff [`MAX_TOTAL_DIFF_LINES`],
//! and at most [`MAX_CHANGES`] paths are listed. Where a diff was cut,
//! its `cut` says why.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use similar::{Algorithm, TextDiff};
use zerohop_host::memory::{Content, Listing, MemoryTree, Node};

use super::MAX_CHANGES;
use super::clip::{MAX_TEXT_CHARS, clip};
use super::volatile::is_volatile_path;

/// The most lines of unified diff kept per file.
const MAX_DIFF_LINES: usize = 200;

/// The most lines of unified diff kept for all files together; past it,
/// files are listed without their diff.
pub const MAX_TOTAL_DIFF_LINES: usize = 5_000;

/// The most lines either side of a file may have to be diffed line by
/// line: a line diff takes time in the product of the lines that differ.
pub const MAX_COMPARED_LINES: usize = 20_000;

/// How long one file's line diff may take; past it, the rest of the file
/// is shown as one change.
pub const FILE_DEADLINE: Duration = Duration::from_millis(500);

/// How long all line diffs together may take; past it, the remaining
/// files are listed without a line diff.
pub const TOTAL_DEADLINE: Duration = Duration::from_secs(5);

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
    /// Why the diff is not whole, or not there for two text files: lines
    /// or characters left out, a file too long or a diff too slow to
    /// compare line by line, the output's budget spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

/// What the line diffs of one comparison have used of their budgets.
struct Budget {
    /// When all line diffs must be done.
    deadline: Instant,
    /// Lines of diff that may still be kept.
    lines: usize,
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

/// What a node is, in a few words (a link's target and an error's message
/// clipped).
fn summary(node: &Node) -> Option<String> {
    let text = match node {
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
    };
    Some(clip(&text, MAX_TEXT_CHARS).into_owned())
}

/// The paths that differ between `a` and `b`, at most [`MAX_CHANGES`],
/// and how many more differ; volatile ones only when `all`.
pub(crate) fn changes(a: &MemoryTree, b: &MemoryTree, all: bool) -> (Vec<FileChange>, usize) {
    let a = paths(a);
    let b = paths(b);
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes = Vec::new();
    let mut left_out = 0;
    let mut budget = Budget {
        deadline: Instant::now() + TOTAL_DEADLINE,
        lines: MAX_TOTAL_DIFF_LINES,
    };
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
        if changes.len() == MAX_CHANGES {
            left_out += 1;
            continue;
        }
        let (diff, cut) = match (left, right) {
            (Some(Node::File(Content::Read(x))), Some(Node::File(Content::Read(y)))) => {
                unified(path, x, y, &mut budget)
            }
            (Some(Node::Dir(Listing::Names(x))), Some(Node::Dir(Listing::Names(y)))) => unified(
                path,
                x.join("\n").as_bytes(),
                y.join("\n").as_bytes(),
                &mut budget,
            ),
            _ => (None, None),
        };
        changes.push(FileChange {
            path: clip(path, MAX_TEXT_CHARS).into_owned(),
            change,
            a: sa,
            b: sb,
            diff,
            cut,
        });
    }
    (changes, left_out)
}

/// A unified diff of two texts, bounded as the module says, and why it
/// was cut if it was; no diff when either is not UTF-8.
fn unified(
    path: &str,
    a: &[u8],
    b: &[u8],
    budget: &mut Budget,
) -> (Option<String>, Option<String>) {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
        return (None, None);
    };
    let lines = a.lines().count().max(b.lines().count());
    if lines > MAX_COMPARED_LINES {
        return (
            None,
            Some(format!(
                "not compared line by line: {lines} lines, more than the \
                 {MAX_COMPARED_LINES} a diff compares"
            )),
        );
    }
    if budget.lines == 0 {
        return (
            None,
            Some(format!(
                "left out: the diff already shows {MAX_TOTAL_DIFF_LINES} lines"
            )),
        );
    }
    let started = Instant::now();
    if started >= budget.deadline {
        return (
            None,
            Some(format!(
                "left out: the line diffs took their {} s",
                TOTAL_DEADLINE.as_secs()
            )),
        );
    }
    let deadline = budget.deadline.min(started + FILE_DEADLINE);
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(a, b);
    // Past its deadline the algorithm stops refining: what it had not
    // compared yet is shown as removed and added whole.
    let slow = Instant::now() >= deadline;
    let text = diff
        .unified_diff()
        .context_radius(1)
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string();
    let keep = MAX_DIFF_LINES.min(budget.lines);
    let mut kept = String::new();
    let (mut shown, mut more, mut clipped) = (0, 0, 0);
    for line in text.lines() {
        if shown == keep {
            more += 1;
            continue;
        }
        shown += 1;
        let short = clip(line, MAX_TEXT_CHARS);
        clipped += usize::from(short.len() < line.len());
        kept.push_str(&short);
        kept.push('\n');
    }
    budget.lines -= shown;
    let mut why = Vec::new();
    if slow {
        why.push(format!(
            "the line diff took longer than {} ms, so lines after where it stopped are shown \
             as changed whole",
            FILE_DEADLINE.as_millis()
        ));
    }
    if more > 0 {
        why.push(format!("{more} more lines left out"));
    }
    if clipped > 0 {
        why.push(format!(
            "{clipped} lines cut at {MAX_TEXT_CHARS} characters"
        ));
    }
    let cut = (!why.is_empty()).then(|| why.join("; "));
    (Some(kept), cut)
}
