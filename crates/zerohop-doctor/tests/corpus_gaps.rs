//! What a capture does not hold is unknown, never a verdict: real captures
//! from `../shared/corpus` (see its SOURCES.md) that lack whole
//! directories, judged by the checks that read them.

mod support;

use support::{machine, only, place};

use zerohop_core::{Finding, Status};
use zerohop_doctor::Profile;
use zerohop_doctor::profile::{HugepagesExpectation, NicExpectation};

fn one<'a>(report: &'a zerohop_core::Report, id: &str) -> &'a Finding {
    let findings = support::findings(report, id);
    assert_eq!(findings.len(), 1, "{id}: {findings:#?}");
    findings[0]
}

/// The DGX Spark (GB10) snapshot holds `/proc` and parts of `/sys`, but
/// no `/sys/class/net`, no `/sys/class/infiniband` and no `/sys/kernel/mm`:
/// the NICs the intent names (by netdev, by RDMA device) and the
/// transparent hugepage policy are unknown there, not absent.
#[test]
fn gb10_capture_without_class_net_or_kernel_mm_is_unknown() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    assert!(!root.join("sys/class/net").exists());
    assert!(!root.join("sys/kernel/mm").exists());
    let profile = Profile {
        nics: vec![
            NicExpectation {
                pf: Some("enP2p1s0f0np0".to_owned()),
                ..NicExpectation::default()
            },
            NicExpectation {
                rdma_device: Some("rocep1s0f0".to_owned()),
                ..NicExpectation::default()
            },
        ],
        ..Profile::default()
    };
    let report = support::doctor_with(&root, &profile, &only(&["CONF002", "MEM002", "MEM003"]));
    let nics = support::findings(&report, "CONF002");
    assert_eq!(nics.len(), 2);
    for (nic, dir) in nics.iter().zip(["/sys/class/net", "/sys/class/infiniband"]) {
        assert_eq!(nic.status, Status::Unknown, "{}", nic.message);
        assert!(nic.message.contains(dir), "{}", nic.message);
    }
    for id in ["MEM002", "MEM003"] {
        let finding = one(&report, id);
        assert_eq!(finding.status, Status::Unknown, "{id}: {}", finding.message);
        assert!(
            finding.message.contains("not in the capture"),
            "{id}: {}",
            finding.message
        );
    }
}

/// The CSIT Grace testbed's `/proc/cmdline` requests
/// `hugepagesz=1G hugepages=32`: that agrees with an intent of 32 pages
/// of 1 GiB, and without `/sys/kernel/mm/hugepages` in the capture the
/// pool itself is unknown, not missing.
#[test]
fn csit_cmdline_without_hugepage_directories_is_unknown() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        &corpus,
        "proc_cmdline_grace_iommu_passthrough_hugepages_csit.txt",
        "proc/cmdline",
    );
    let intent = |pages| Profile {
        hugepages: Some(HugepagesExpectation {
            size_kib: 1 << 20,
            pages,
            from: Some("cluster.yaml:16".to_owned()),
        }),
        ..Profile::default()
    };
    let report = support::doctor_with(dir.path(), &intent(32), &only(&["CONF003"]));
    let pool = one(&report, "CONF003");
    assert_eq!(pool.status, Status::Unknown, "{}", pool.message);
    assert!(
        pool.message.contains("/sys/kernel/mm/hugepages is absent"),
        "{}",
        pool.message
    );
    // What the command line does show still decides: 64 pages were not
    // requested.
    let report = support::doctor_with(dir.path(), &intent(64), &only(&["CONF003"]));
    let pool = one(&report, "CONF003");
    assert_eq!(pool.status, Status::Fail, "{}", pool.message);
    assert!(
        !pool.message.contains("no 1 GiB hugepage pool"),
        "{}",
        pool.message
    );
}

/// gpud's GPU node mounts its root from `/dev/mapper/vgroot-lvroot`
/// (device 253:0): an LVM volume. The capture has no `/sys/block`, so the
/// target is unknown, but the mapper path says device-mapper: NVME006
/// warns, where it passed the mount as "not device-mapper".
#[test]
fn gpud_lvm_root_is_device_mapper_without_sys_block() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        &corpus,
        "proc_self_mountinfo_gpu_node_gpud.txt",
        "proc/self/mountinfo",
    );
    let profile = Profile {
        mounts: vec!["/".to_owned()],
        ..Profile::default()
    };
    let report = support::doctor_with(dir.path(), &profile, &only(&["NVME006"]));
    let root = one(&report, "NVME006");
    assert_eq!(root.status, Status::Warn, "{}", root.message);
    assert!(
        root.message.contains("/dev/mapper/vgroot-lvroot"),
        "{}",
        root.message
    );
    assert!(root.message.contains("253:0"), "{}", root.message);
    assert!(root.remediation.is_some());
}

/// The POWER9 snapshot runs `Linux version 4.14.0-49.el7a…`: older than
/// io_uring itself (5.1), so URING001 does not claim io_uring is allowed.
#[test]
fn linux_4_14_predates_io_uring() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join("hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2"));
    let root = machine(dir.path());
    let report = support::doctor_with(&root, &Profile::default(), &only(&["URING001"]));
    let uring = one(&report, "URING001");
    assert_eq!(uring.status, Status::Info);
    assert!(
        uring.message.contains("predates io_uring (5.1)"),
        "{}",
        uring.message
    );
    assert!(!uring.message.contains("allowed"), "{}", uring.message);
}

/// A capture of `/proc/cmdline` alone (the CSIT Icelake testbed's) holds
/// no mount table and no mountstats: it does not show that the host has
/// no NFS mounts.
#[test]
fn capture_without_mount_table_does_not_claim_no_nfs() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        &corpus,
        "proc_cmdline_icelake_intel_iommu_on_iommu_pt_hugepages_csit.txt",
        "proc/cmdline",
    );
    let report = support::doctor_with(dir.path(), &Profile::default(), &only(&["NFS001"]));
    let nfs = one(&report, "NFS001");
    assert_eq!(nfs.status, Status::Unknown, "{}", nfs.message);
    assert!(!nfs.message.contains("no nfs mounts"), "{}", nfs.message);
}
