//! Test support: a way to run the doctor on a root, a builder of fixture
//! roots, and (from `zerohop-testkit`, shared with every suite) the real
//! captures under `../shared/corpus`, unpacked into temporary host roots.
//!
//! The captures are read in place and never copied into the repository.
//! When `../shared` is absent, [`corpus`] returns `None` and the calling
//! test prints why and returns; in CI it fails.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the support module"
)]

pub mod builder;

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::{Finding, Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
pub use zerohop_testkit::shared_data::*;

/// The selection of the checks `ids`.
pub fn only(ids: &[&str]) -> Selection {
    Selection::parse(ids.iter().copied()).unwrap()
}

/// The one directory an archive unpacks to (an hwloc snapshot holds one
/// machine directory).
pub fn machine(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "one directory expected: {entries:?}");
    entries[0].clone()
}

/// Writes `text` at the host path `path` under `root`, making the
/// directories.
pub fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Copies the corpus file `capture` to the host path `path` under `root`.
pub fn place(root: &Path, corpus: &Path, capture: &str, path: &str) {
    write(
        root,
        path,
        &fs::read_to_string(corpus.join(capture)).unwrap(),
    );
}

/// `/proc/modules` from `lsmod` output: `lsmod` prints the same fields
/// (name, size, use count, users) under a header, without the state and
/// address the kernel file ends with; it lists what `/proc/modules` lists,
/// and a module whose `module_init` failed is not there, so every line is
/// `Live`. The header and short lines are skipped, leading blanks (the
/// docs indent their listings) ignored.
pub fn proc_modules_from_lsmod(lsmod: &str) -> String {
    let mut out = String::new();
    for line in lsmod.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 || fields[0] == "Module" {
            continue;
        }
        let users = fields.get(3).map_or("-".to_owned(), |u| format!("{u},"));
        out.push_str(&format!(
            "{} {} {} {users} Live 0x0000000000000000\n",
            fields[0], fields[1], fields[2]
        ));
    }
    out
}

/// The value of a finding's evidence read from `source`.
pub fn evidence<'a>(finding: &'a Finding, source: &str) -> Option<&'a str> {
    finding
        .evidence
        .iter()
        .find(|e| e.source == source)
        .map(|e| e.value.as_str())
}

/// Runs the whole doctor on `root` with the default profile.
pub fn doctor(root: &Path) -> Report {
    doctor_with(root, &Profile::default(), &Selection::all())
}

/// Runs the doctor on `root` with a profile and a selection.
pub fn doctor_with(root: &Path, profile: &Profile, selection: &Selection) -> Report {
    let host = HostRoot::at(root).expect("a directory root");
    let facts = Facts::collect(&host);
    zerohop_doctor::run(&facts, profile, selection)
}

/// The findings of check `id`.
pub fn findings<'a>(report: &'a Report, id: &str) -> Vec<&'a Finding> {
    report.findings.iter().filter(|f| f.id == id).collect()
}

/// The statuses of check `id`'s findings.
pub fn statuses(report: &Report, id: &str) -> Vec<Status> {
    findings(report, id).iter().map(|f| f.status).collect()
}

/// Asserts the invariants every run must keep, whatever the input: every
/// check reported (the pod's when any was), no finding without a message, every problem
/// with a remediation, every unknown with evidence or a reason.
pub fn assert_well_formed(report: &Report) {
    // A node's run leaves the pod checks out unless they were selected.
    let pod = report.findings.iter().any(|f| f.group == "pod");
    for check in zerohop_doctor::checks::CHECKS
        .iter()
        .filter(|check| pod || check.group != zerohop_doctor::Group::Pod)
    {
        assert!(
            report.findings.iter().any(|f| f.id == check.info.id),
            "{} reported nothing on {}",
            check.info.id,
            report.target
        );
    }
    for finding in &report.findings {
        assert!(
            !finding.message.is_empty(),
            "{} has an empty message",
            finding.id
        );
        if finding.status.is_problem() {
            assert!(
                finding.remediation.is_some(),
                "{} {:?} has no remediation: {}",
                finding.id,
                finding.status,
                finding.message
            );
        }
    }
}
