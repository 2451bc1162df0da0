//! The kernel log judged on a snapshot gives the findings it gave on the
//! host that was recorded: from a root's capture, and from the live
//! `/dev/kmsg`, whose window the recording keeps.

use std::path::Path;
use std::time::SystemTime;

use zerohop_core::{Finding, Report};
use zerohop_doctor::{Group, Profile, Selection};
use zerohop_host::facts::kernel_log::CAPTURE;
use zerohop_host::{Facts, HostRoot};
use zerohop_snapshot::{Snapshot, encode, open};

/// The kernel-log group's findings of `report`, everything but the target.
fn kernel_log(report: &Report) -> Vec<Finding> {
    report
        .findings
        .iter()
        .filter(|finding| finding.group == Group::KernelLog.name())
        .cloned()
        .collect()
}

fn doctor(root: &HostRoot) -> Report {
    let selection = Selection::parse([Group::KernelLog.name()]).expect("the group");
    zerohop_doctor::run(&Facts::collect(root), &Profile::default(), &selection)
}

/// Records `root`, writes and reopens the archive: the root it opens to.
fn through_an_archive(root: &HostRoot) -> (Snapshot, HostRoot) {
    let snapshot = Snapshot::capture(root, SystemTime::now()).expect("recorded");
    let opened = open(&encode(&snapshot).expect("encoded")).expect("opened");
    let reopened = opened.root("node.zhsnap");
    (opened, reopened)
}

#[test]
fn a_roots_capture_gives_the_same_findings_on_its_snapshot() {
    // The capture logs `nvidia_peermem: Unknown symbol
    // ib_register_peer_memory_client (err -22)`: KLOG001 fails on it.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures/KLOG001/fail-registration-refused");
    let root = HostRoot::at(&dir).expect("a directory root");
    let on_tree = kernel_log(&doctor(&root));
    let (opened, on_snapshot) = through_an_archive(&root);
    assert!(
        opened.tree.kernel_log().is_none(),
        "a capture, not a device"
    );
    let on_snapshot = kernel_log(&doctor(&on_snapshot));
    assert!(
        on_tree
            .iter()
            .any(|f| f.id == "KLOG001" && f.status.is_problem()),
        "{on_tree:#?}"
    );
    assert_eq!(on_tree, on_snapshot);
}

#[test]
fn the_live_window_gives_the_same_findings_on_its_snapshot() {
    let live = HostRoot::live();
    let (opened, on_snapshot) = through_an_archive(&live);
    let recorded = kernel_log(&opened.recorded_report().expect("the recorded report"));
    let Some(log) = opened.tree.kernel_log() else {
        // No device here, or no permission to read it (neither root nor
        // CAP_SYSLOG): nothing was judged, nothing kept.
        assert!(opened.tree.node(CAPTURE).is_none());
        return;
    };
    assert!(log.device.ends_with("/dev/kmsg"), "{}", log.device);
    // The same statuses, subjects, messages and evidence: the window
    // ends at the uptime recorded, and records keep their sequence
    // numbers.
    assert!(!recorded.is_empty());
    assert_eq!(recorded, kernel_log(&doctor(&on_snapshot)));
}

/// A capture larger than any other read (6 MiB of records, under the
/// capture's own 8 MiB cap) is recorded whole and opened again: the
/// archive's per-file cap admits what the kernel-log reader reads.
#[test]
fn a_capture_larger_than_other_reads_is_recorded() {
    let dir = tempfile::tempdir().expect("temp");
    let capture = dir.path().join(CAPTURE.trim_start_matches('/'));
    std::fs::create_dir_all(capture.parent().expect("a directory")).expect("mkdir");
    let line = "6,1,1000,-;mlx5_core 0000:19:00.0: link up\n";
    let records = (6 << 20) / line.len();
    std::fs::write(&capture, line.repeat(records)).expect("write");
    let root = HostRoot::at(dir.path()).expect("a directory root");
    let on_tree = kernel_log(&doctor(&root));
    let (_, on_snapshot) = through_an_archive(&root);
    assert_eq!(on_tree, kernel_log(&doctor(&on_snapshot)));
}

/// A capture larger than the reader's cap is read from its end; the
/// snapshot keeps the part read and how much came before it, so that the
/// doctor on the snapshot says, as on the tree, that the start was not read.
#[test]
fn a_capture_cut_at_the_cap_replays_as_cut() {
    let dir = tempfile::tempdir().expect("temp");
    let capture = dir.path().join(CAPTURE.trim_start_matches('/'));
    std::fs::create_dir_all(capture.parent().expect("a directory")).expect("mkdir");
    let line = "6,1,1000,-;mlx5_core 0000:19:00.0: link up\n";
    let records = (9 << 20) / line.len();
    std::fs::write(&capture, line.repeat(records)).expect("write");
    let root = HostRoot::at(dir.path()).expect("a directory root");
    let on_tree = kernel_log(&doctor(&root));
    assert!(
        on_tree
            .iter()
            .any(|finding| format!("{finding:?}").contains("were not")),
        "{on_tree:#?}"
    );
    let (_, on_snapshot) = through_an_archive(&root);
    assert_eq!(on_tree, kernel_log(&doctor(&on_snapshot)));
}
