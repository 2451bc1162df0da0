//! What differs between two hosts (or one host at two times), most
//! telling first: the doctor's findings whose status changed, then the
//! typed facts by layer, then the raw files. Volatile data (counters,
//! free amounts, uptimes) is left out unless asked for; [`volatile`] lists
//! it.
//!
//! Both sides are snapshots, recorded or opened: a directory or the live
//! host is recorded first, so that the raw files compared are exactly what
//! the doctor read on each side.

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

pub use files::FileChange;
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
}

impl Diff {
    /// Whether the two sides are the same as far as compared.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty() && self.facts.is_empty() && self.files.is_empty()
    }
}

/// Compares side `a` with side `b`; volatile data too when `all`.
pub fn compare(a: &Side, b: &Side, all: bool) -> Diff {
    Diff {
        a: a.label.clone(),
        b: b.label.clone(),
        all,
        findings: findings(&a.report, &b.report),
        facts: fact_changes(&a.facts, &b.facts, all),
        files: files::changes(&a.snapshot.tree, &b.snapshot.tree, all),
    }
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
                subject: shown.subject.clone(),
                a: a.map(|f| f.status),
                b: b.map(|f| f.status),
                message: shown.message.clone(),
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
            key: key.1.clone(),
            a: a.get(key).cloned(),
            b: b.get(key).cloned(),
        })
        .collect()
}
