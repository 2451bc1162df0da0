//! The doctor on a snapshot gives the report it gives on the tree the
//! snapshot was recorded from: for every doctor fixture root and every
//! host root in the shared corpus.
//!
//! Only the report's `target` differs: it names what was read, the
//! directory or the archive.

#[path = "../../zerohop-doctor/tests/support/mod.rs"]
mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zerohop_core::Report;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
use zerohop_snapshot::{Snapshot, encode, open};

/// A fixed recording time, so that archives compare byte for byte.
fn when() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_599)
}

fn doctor(root: &HostRoot) -> (Report, String) {
    let facts = Facts::collect(root);
    let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
    // Everything the checks judge, less the root's name.
    let facts = format!(
        "{:?}",
        Facts {
            root: String::new(),
            ..facts
        }
    );
    (report, facts)
}

/// Records `dir`, writes and reopens the archive, and compares the doctor
/// on both; returns the archive.
fn assert_same(dir: &Path) -> Vec<u8> {
    let tree = HostRoot::at(dir).expect("a directory root");
    let (on_tree, tree_facts) = doctor(&tree);
    let snapshot = Snapshot::capture(&tree, when()).expect("recorded");
    let archive = encode(&snapshot).expect("encoded");
    // The same recording gives the same bytes.
    assert_eq!(archive, encode(&snapshot).unwrap(), "{}", dir.display());
    let opened = open(&archive).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    assert_eq!(opened.tree, snapshot.tree, "{}", dir.display());
    let (mut on_snapshot, snapshot_facts) = doctor(&opened.root("node.zhsnap"));
    assert_eq!(on_snapshot.target, "node.zhsnap");
    on_snapshot.target = on_tree.target.clone();
    assert_eq!(tree_facts, snapshot_facts, "facts of {}", dir.display());
    assert_eq!(
        serde_json::to_string_pretty(&on_tree).unwrap(),
        serde_json::to_string_pretty(&on_snapshot).unwrap(),
        "report of {}",
        dir.display()
    );
    // The report recorded with the snapshot is the tree's.
    assert_eq!(opened.recorded_report().unwrap(), on_tree);
    archive
}

fn fixture_roots() -> Vec<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zerohop-doctor/tests/fixtures");
    let mut roots = Vec::new();
    for check in fs::read_dir(fixtures).expect("the doctor's fixtures") {
        for case in fs::read_dir(check.unwrap().path()).unwrap() {
            roots.push(case.unwrap().path());
        }
    }
    roots.sort();
    roots
}

#[test]
fn every_doctor_fixture_reads_the_same_from_its_snapshot() {
    let roots = fixture_roots();
    // Two cases per check at least, for more than 50 checks.
    assert!(roots.len() > 100, "{} fixture roots", roots.len());
    for root in roots {
        assert_same(&root);
    }
}

/// The directory under `dir` that holds `sys` or `proc`, as the corpus
/// tests find it.
fn host_root(dir: &Path) -> PathBuf {
    let mut queue = vec![(dir.to_path_buf(), 0)];
    while let Some((path, depth)) = queue.pop() {
        if path.join("sys").is_dir() || path.join("proc").is_dir() {
            return path;
        }
        if depth < 3 {
            for entry in fs::read_dir(&path).unwrap() {
                let entry = entry.unwrap().path();
                if entry.is_dir() && !entry.is_symlink() {
                    queue.push((entry, depth + 1));
                }
            }
        }
    }
    dir.to_path_buf()
}

#[test]
fn every_corpus_host_reads_the_same_from_its_snapshot() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let mut archives: Vec<PathBuf> = fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            [".tar.gz", ".tar.bz2", ".tar.xz", ".ttar"]
                .iter()
                .any(|ext| name.ends_with(ext))
        })
        .collect();
    archives.sort();
    // SOURCES.md lists two ghw, five hwloc, one libnvme and two ttar trees.
    assert!(archives.len() >= 10, "{archives:?}");
    for archive in archives {
        let dir = if archive.extension().is_some_and(|e| e == "ttar") {
            support::unttar(&archive)
        } else {
            support::untar(&archive)
        };
        let root = host_root(dir.path());
        let snapshot = assert_same(&root);
        eprintln!(
            "{}: {} bytes",
            archive.file_name().unwrap().to_string_lossy(),
            snapshot.len()
        );
    }
}
