//! MEM004 judges the running process, so the fixture roots of
//! `tests/fixtures` cannot show it. These roots under `tests/live/MEM004`
//! hold the two files a process reads about itself, `/proc/self/limits`
//! and `/proc/self/status`, and are read by the same code as the live host.

use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::facts::kernel::memlock;
use zerohop_host::{Facts, HostRoot};

fn mem004(case: &str) -> (Status, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/live/MEM004")
        .join(case);
    let root = HostRoot::at(&dir).unwrap();
    let mut facts = Facts::collect(&root);
    facts.kernel.memlock = Some(memlock(&root));
    let profile = Profile {
        rdma: Some(true),
        ..Profile::default()
    };
    let report = zerohop_doctor::run(&facts, &profile, &Selection::parse(["MEM004"]).unwrap());
    let finding = report.findings.iter().find(|f| f.id == "MEM004").unwrap();
    (finding.status, finding.message.clone())
}

#[test]
fn cap_ipc_lock_lifts_a_small_memlock_limit() {
    // A container granted IPC_LOCK (the fix MEM004 recommends) with the
    // common 8 MiB limit: CapEff a80c65fb is the container default a80c25fb plus bit 14.
    let (status, message) = mem004("pass-cap-ipc-lock");
    assert_eq!(status, Status::Pass, "{message}");
    assert!(message.contains("CAP_IPC_LOCK"), "{message}");
}

#[test]
fn the_same_limit_without_the_capability_warns() {
    let (status, message) = mem004("warn-small-limit");
    assert_eq!(status, Status::Warn, "{message}");
    assert!(
        message.contains("8 MiB") || message.contains("8388608"),
        "{message}"
    );
}
