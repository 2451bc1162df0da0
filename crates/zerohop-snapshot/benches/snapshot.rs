//! Recording a snapshot of a large host, and the doctor on the snapshot
//! against the doctor on the tree, in one run.
//!
//! The host is the doctor's synthetic large host (2,080 PCI functions,
//! 2,064 RDMA devices and netdevs), built by its `full_pass` benchmark:
//!
//! ```sh
//! ZEROHOP_BENCH_TREE=/dev/shm/zh-snap cargo bench -p zerohop-doctor --bench full_pass
//! ZEROHOP_BENCH_TREE=/dev/shm/zh-snap cargo bench -p zerohop-snapshot --bench snapshot
//! ```
//!
//! It prints the medians of: recording and writing the archive; one doctor
//! pass on the tree (opening the root included); opening the archive from
//! its file and one doctor pass on it; and their ratio, with the archive's
//! size in all and per PCI function.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
use zerohop_snapshot::{Kind, Replace, Snapshot, encode, open_file, save};

const PASSES: usize = 11;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn doctor(root: &HostRoot) -> usize {
    let facts = Facts::collect(root);
    zerohop_doctor::run(&facts, &Profile::default(), &Selection::all())
        .findings
        .len()
}

fn main() {
    let Some(tree) = std::env::var_os("ZEROHOP_BENCH_TREE").map(PathBuf::from) else {
        eprintln!(
            "set ZEROHOP_BENCH_TREE to a host tree kept by the doctor's full_pass benchmark \
             (see this file's documentation)"
        );
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let archive = scratch.path().join("host.zhsnap");
    let functions = std::fs::read_dir(tree.join("sys/bus/pci/devices"))
        .map(|dir| dir.count())
        .unwrap_or(0);

    let (mut record, mut on_tree, mut on_snapshot) = (Vec::new(), Vec::new(), Vec::new());
    let (mut capture, mut write, mut open) = (Vec::new(), Vec::new(), Vec::new());
    let (mut bytes, mut paths, mut findings) = (0, 0, (0, 0));
    for _ in 0..PASSES {
        let start = Instant::now();
        let root = HostRoot::at(&tree).unwrap();
        let snapshot = Snapshot::capture(&root, SystemTime::now()).unwrap();
        let captured = start.elapsed();
        let encoded = encode(&snapshot).unwrap();
        save(&archive, &encoded, Kind::Archive, Replace::AnyRegularFile).unwrap();
        record.push(start.elapsed());
        capture.push(captured);
        write.push(start.elapsed() - captured);
        bytes = encoded.len();
        paths = snapshot.tree.len();

        let start = Instant::now();
        findings.0 = doctor(&HostRoot::at(&tree).unwrap());
        on_tree.push(start.elapsed());

        let start = Instant::now();
        let opened = open_file(&archive).unwrap();
        open.push(start.elapsed());
        findings.1 = doctor(&opened.root("host.zhsnap"));
        on_snapshot.push(start.elapsed());
    }
    assert_eq!(findings.0, findings.1, "the same findings on both");
    let (record, on_tree, on_snapshot) = (median(record), median(on_tree), median(on_snapshot));
    println!(
        "host: {functions} pci functions, {paths} paths recorded, {} findings",
        findings.0
    );
    println!("snapshot                     median {record:>10.2?}");
    println!(
        "  of which the recorded pass median {:>10.2?}",
        median(capture)
    );
    println!(
        "  of which encode and write  median {:>10.2?}",
        median(write)
    );
    println!("doctor on the tree           median {on_tree:>10.2?}");
    println!("doctor --snapshot            median {on_snapshot:>10.2?}");
    println!(
        "  of which opening the file  median {:>10.2?}",
        median(open)
    );
    println!(
        "ratio doctor --snapshot / doctor on tree: {:.2}",
        on_snapshot.as_secs_f64() / on_tree.as_secs_f64()
    );
    println!(
        "archive: {bytes} bytes, {:.0} bytes per pci function",
        bytes as f64 / functions.max(1) as f64
    );
}
