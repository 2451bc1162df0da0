//! The doctor on a snapshot gives the report it gives on the tree the
//! snapshot was recorded from: for every doctor fixture root and every
//! host root in the shared corpus.
//!
//! Only the report's `target` differs: it names what was read, the
//! directory or the archive.

use zerohop_testkit::shared_data as support;

mod hosts;

use std::path::Path;
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
    // Everything the checks judge, less the root's name and the process's
    // environment, which a snapshot never keeps (`record::withheld`).
    let facts = format!(
        "{:?}",
        Facts {
            root: String::new(),
            pod: zerohop_host::facts::PodFacts {
                environment: Ok(None),
                ..facts.pod
            },
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

#[test]
fn every_doctor_fixture_reads_the_same_from_its_snapshot() {
    let roots = hosts::fixture_roots();
    // Two cases per check at least, for more than 50 checks.
    assert!(roots.len() > 100, "{} fixture roots", roots.len());
    for root in roots {
        assert_same(&root);
    }
}

#[test]
fn every_corpus_host_reads_the_same_from_its_snapshot() {
    let mut count = 0;
    for host in hosts::corpus_hosts() {
        let snapshot = assert_same(&host.root);
        eprintln!("{}: {} bytes", host.name, snapshot.len());
        count += 1;
    }
    // None only without ../shared, which `support::corpus` allows only
    // when ../shared is absent altogether.
    assert!(count >= 10 || support::corpus().is_none(), "{count} hosts");
}

#[test]
fn a_snapshot_reads_the_host_name_the_host_gives() {
    // Only the name: no check reads it, but `topo` and `doctor --format
    // html` title the drawing and the page with it, from a snapshot too.
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("proc/sys/kernel");
    std::fs::create_dir_all(&kernel).unwrap();
    std::fs::create_dir_all(dir.path().join("sys")).unwrap();
    std::fs::write(kernel.join("hostname"), "gpu-node-17\n").unwrap();
    let tree = HostRoot::at(dir.path()).expect("a directory root");
    let snapshot = Snapshot::capture(&tree, when()).expect("recorded");
    let opened = open(&encode(&snapshot).unwrap()).unwrap();
    assert_eq!(
        opened
            .root("node.zhsnap")
            .read_value("/proc/sys/kernel/hostname")
            .unwrap()
            .as_deref(),
        Some("gpu-node-17")
    );
}
