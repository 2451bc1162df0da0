//! The checks that judge the running process and the kernel it runs on
//! (MEM004, GDS006, URING002), on the machine the tests run on: its own
//! `/proc/self`, a real `O_DIRECT` read and a real `io_uring_setup`. The
//! verdicts must agree with what the kernel answered.

use std::fs;

use zerohop_core::{Finding, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::probe::{self, DirectIo, ProbeState};
use zerohop_host::{Facts, HostRoot};

fn one<'a>(findings: &'a [Finding], id: &str) -> &'a Finding {
    let mine: Vec<&Finding> = findings.iter().filter(|f| f.id == id).collect();
    assert_eq!(mine.len(), 1, "{id}: {mine:#?}");
    mine[0]
}

#[test]
fn this_machine_is_judged_by_what_its_kernel_answered() {
    let root = HostRoot::live();
    let mut facts = Facts::collect(&root);
    // A file on the file system the build writes to, read back with O_DIRECT.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    fs::write(dir.path().join("block"), vec![7u8; 1 << 16]).unwrap();
    facts.probes = probe::run(&root, dir.path()).unwrap();
    let ProbeState::Done(probes) = facts.probes.clone() else {
        panic!(
            "the probes did not run on the live root: {:?}",
            facts.probes
        );
    };
    let profile = Profile {
        rdma: Some(true),
        gds: Some(true),
        ..Profile::default()
    };
    let selection = Selection::parse(["MEM004", "GDS006", "URING002"]).unwrap();
    let findings = zerohop_doctor::run(&facts, &profile, &selection).findings;

    // MEM004 quotes this process's soft limit from /proc/self/limits.
    let limits = fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))
        .unwrap();
    let soft = line.split_whitespace().nth(3).unwrap();
    let mem004 = one(&findings, "MEM004");
    assert_ne!(mem004.status, Status::Unknown, "{}", mem004.message);
    if soft == "unlimited" {
        assert_eq!(mem004.status, Status::Pass, "{}", mem004.message);
    }

    // GDS006 passes exactly when the kernel served the O_DIRECT read.
    let gds006 = one(&findings, "GDS006");
    match &probes.direct {
        DirectIo::Read { .. } => assert_eq!(gds006.status, Status::Pass, "{}", gds006.message),
        other => assert_ne!(gds006.status, Status::Pass, "{other:?}: {}", gds006.message),
    }

    // URING002 passes exactly when io_uring_setup succeeded, and names the
    // errno when it did not.
    let uring002 = one(&findings, "URING002");
    match &probes.io_uring {
        Ok(()) => assert_eq!(uring002.status, Status::Pass, "{}", uring002.message),
        Err(failure) => {
            assert_ne!(uring002.status, Status::Pass, "{}", uring002.message);
            assert!(
                uring002.message.contains(&failure.name),
                "{}: {}",
                failure.name,
                uring002.message
            );
        }
    }
}
