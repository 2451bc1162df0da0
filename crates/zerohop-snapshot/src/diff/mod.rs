//! What differs between two hosts (or one host at two times), most
//! telling first: the doctor's findings whose status changed, then the
//! typed facts by layer, then the raw files. Volatile data (counters,
//! free amounts, uptimes) is left out unless asked for; [`volatile`] lists
//! it.
//!
//! Both sides are snapshots, recorded or opened: a directory or the live
//! host is recorded first, so that the raw files compared are exactly what
//! the doctor read on each side.

mod clip;
mod facts;
mod files;
mod render;
pub mod volatile;

use serde::Serialize;
use std::collections::BTreeMap;

use zerohop_core::{Finding, Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::Facts;

use crate::snapshot::Snapshot;

pub use clip::MAX_TEXT_CHARS;
pub use files::{
    FILE_DEADLINE, FileChange, MAX_COMPARED_LINES, MAX_TOTAL_DIFF_LINES, TOTAL_DEADLINE,
};

/// The most findings, facts and paths a diff lists, each; the rest are
/// counted in [`Diff::left_out`].
pub const MAX_CHANGES: usize = 5_000;
pub use render::write_human;

/// One side of a diff: a snapshot and what the doctor makes of it.
pub struct Side {
    /// How the side was named (a file, a directory, `-`).
    pub label: String,
    /// What was read.
    pub snapshot: Snapshot,
    /// The facts read from it.
    pub facts: Facts,
    /// The doctor's report on it, with the default expectations.
    pub report: Report,
}

impl Side {
    /// Runs the doctor on `snapshot`, named `label`.
    pub fn new(label: impl Into<String>, snapshot: Snapshot) -> Side {
        let label = label.into();
        let facts = Facts::collect(&snapshot.root(label.clone()));
        let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
        Side {
            label,
            snapshot,
            facts,
            report,
        }
    }
}

/// A finding whose status differs (or that one side lacks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingChange {
    /// The check.
    pub id: String,
    /// The check's name.
    pub name: String,
    /// What the finding is about.
    pub subject: String,
    /// The status on side A, when it has the finding.
    pub a: Option<Status>,
    /// The status on side B.
    pub b: Option<Status>,
    /// B's message (A's when B lacks the finding).
    pub message: String,
}

/// A fact that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactChange {
    /// The layer (`kernel`, `pci`, `rdma`…).
    pub layer: &'static str,
    /// The fact within the layer.
    pub key: String,
    /// A's value, when A has it.
    pub a: Option<String>,
    /// B's value.
    pub b: Option<String>,
}

/// Everything that differs between two sides: the fields of `zerohop
/// diff`'s JSON document, which [`zerohop_core::Document`] versions.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// Side A as named.
    pub a: String,
    /// Side B as named.
    pub b: String,
    /// Whether volatile data was compared too.
    pub all: bool,
    /// Findings whose status changed, worst first.
    pub findings: Vec<FindingChange>,
    /// Facts that differ, by layer.
    pub facts: Vec<FactChange>,
    /// Files that differ, by path.
    pub files: Vec<FileChange>,
    /// How many more findings, facts and files differ than are listed
    /// (past [`MAX_CHANGES`] each).
    pub left_out: LeftOut,
}

/// Changes counted but not listed, per section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Findings.
    pub findings: usize,
    /// Facts.
    pub facts: usize,
    /// Files.
    pub files: usize,
}

impl Diff {
    /// Whether the two sides are the same as far as compared.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty() && self.facts.is_empty() && self.files.is_empty()
    }
}

/// Compares side `a` with side `b`; volatile data too when `all`.
pub fn compare(a: &Side, b: &Side, all: bool) -> Diff {
    let mut findings = findings(&a.report, &b.report);
    let mut facts = fact_changes(&a.facts, &b.facts, all);
    let (files, files_left_out) = files::changes(&a.snapshot.tree, &b.snapshot.tree, all);
    Diff {
        a: a.label.clone(),
        b: b.label.clone(),
        all,
        left_out: LeftOut {
            findings: keep_first(&mut findings),
            facts: keep_first(&mut facts),
            files: files_left_out,
        },
        findings,
        facts,
        files,
    }
}

/// Keeps the first [`MAX_CHANGES`] of `changes`; how many were dropped.
fn keep_first<T>(changes: &mut Vec<T>) -> usize {
    let dropped = changes.len().saturating_sub(MAX_CHANGES);
    changes.truncate(MAX_CHANGES);
    dropped
}

/// `text` clipped to [`MAX_TEXT_CHARS`].
fn clipped(text: &str) -> String {
    clip::clip(text, MAX_TEXT_CHARS).into_owned()
}

/// One finding (per check and subject) on each side.
type Pair<'a> = (Option<&'a Finding>, Option<&'a Finding>);

fn findings(a: &Report, b: &Report) -> Vec<FindingChange> {
    let mut by_key: BTreeMap<(&str, &str), Pair<'_>> = BTreeMap::new();
    for finding in &a.findings {
        by_key.entry((&finding.id, &finding.subject)).or_default().0 = Some(finding);
    }
    for finding in &b.findings {
        by_key.entry((&finding.id, &finding.subject)).or_default().1 = Some(finding);
    }
    let mut changes: Vec<FindingChange> = by_key
        .into_values()
        .filter(|(a, b)| a.map(|f| f.status) != b.map(|f| f.status))
        .filter_map(|(a, b)| {
            let shown = b.or(a)?;
            Some(FindingChange {
                id: shown.id.clone(),
                name: shown.name.clone(),
                subject: clipped(&shown.subject),
                a: a.map(|f| f.status),
                b: b.map(|f| f.status),
                message: clipped(&shown.message),
            })
        })
        .collect();
    // Worst first: by the worse of the two statuses.
    changes.sort_by(|x, y| {
        let worst = |c: &FindingChange| c.a.max(c.b);
        worst(y)
            .cmp(&worst(x))
            .then_with(|| (&x.id, &x.subject).cmp(&(&y.id, &y.subject)))
    });
    changes
}

fn fact_changes(a: &Facts, b: &Facts, all: bool) -> Vec<FactChange> {
    let a = facts::flatten(a, all);
    let b = facts::flatten(b, all);
    let mut keys: Vec<&(usize, String)> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| a.get(*key) != b.get(*key))
        .map(|key| FactChange {
            layer: facts::LAYERS[key.0],
            key: clipped(&key.1),
            a: a.get(key).map(|value| clipped(value)),
            b: b.get(key).map(|value| clipped(value)),
        })
        .collect()
}
