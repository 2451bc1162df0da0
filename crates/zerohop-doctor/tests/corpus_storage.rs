//! The storage checks on real captures from `../shared/corpus`, read in
//! place. Single-file captures are placed into a temporary root at the
//! path the doctor reads.

mod support;

use support::only;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::Profile;
use zerohop_host::{Facts, HostRoot};
use zerohop_known::cufile;

/// A temporary root holding `files`: (path in the root, capture name).
fn root_with(corpus: &Path, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, capture) in files {
        let real = dir.path().join(path);
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::copy(corpus.join(capture), real).unwrap();
    }
    dir
}

#[test]
fn nfs3_over_rdma_with_16_transports_passes() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = root_with(
        &corpus,
        &[(
            "proc/self/mountstats",
            "proc_self_mountstats_nfs3_proto_rdma_nconnect16.txt",
        )],
    );
    let facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    let nfs = facts.mounts.nfs_mounts();
    // One NFSv3 mount, known only from mountstats (no mountinfo in the capture).
    assert_eq!(nfs.len(), 1);
    let mount = &nfs[0];
    assert_eq!(mount.mount_point, "<mountpoint>");
    // Its opts: line says proto=rdma, nconnect=16, port=20049, 1 MiB transfers.
    assert!(mount.is_rdma());
    assert_eq!(mount.options.number("nconnect"), Some(16));
    // statvers=1.1 and sixteen `xprt: rdma` lines, one per transport.
    let stats = mount.stats.as_ref().unwrap();
    assert!(stats.known_version());
    assert_eq!(stats.transports_of("rdma"), 16);
    assert!(stats.transports.iter().all(|t| t.counters.len() >= 20));

    let report = support::doctor_with(dir.path(), &Profile::default(), &only(&["nfs"]));
    // Transport, port, nconnect, transfer size and hard mount all pass.
    for id in ["NFS001", "NFS002", "NFS003", "NFS004", "NFS006"] {
        assert_eq!(support::statuses(&report, id), vec![Status::Pass], "{id}");
    }
    let nconnect = &support::findings(&report, "NFS003")[0];
    assert_eq!(nconnect.message, "16 rdma transports for nconnect=16");
    // An RDMA mount exists, so rpcrdma is wanted; the capture has no module
    // list, which is unknown, not fail.
    assert_eq!(support::statuses(&report, "NFS005"), vec![Status::Unknown]);
}

#[test]
fn node_exporter_nfs_over_tcp_fails_when_declared_data_mounts() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = root_with(
        &corpus,
        &[
            (
                "proc/self/mountstats",
                "proc_10_mountstats_node_exporter.txt",
            ),
            ("proc/self/mountinfo", "proc_10_mountinfo_node_exporter.txt"),
        ],
    );
    let facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    let nfs = facts.mounts.nfs_mounts();
    // Three NFS entries in mountinfo: nfs4 on /mnt/nfs/test and test-dupe,
    // and an NFSv3 mount stacked over test-dupe; each joined to its block.
    assert_eq!(nfs.len(), 3);
    assert!(nfs.iter().all(|m| m.stats.is_some()));
    assert_eq!(nfs[0].proto(), Some("tcp"));
    assert_eq!(nfs[2].proto(), Some("udp"));
    assert_eq!(nfs[2].stats.as_ref().unwrap().transports_of("udp"), 1);

    // Undeclared, TCP mounts are information only.
    let report = support::doctor_with(dir.path(), &Profile::default(), &only(&["NFS001"]));
    assert_eq!(support::statuses(&report, "NFS001"), vec![Status::Info; 3]);

    // Declared as data mounts, both fail: the top mount of test-dupe is the
    // NFSv3 one over UDP.
    let profile = Profile {
        mounts: vec![
            "/mnt/nfs/test".to_owned(),
            "/mnt/nfs/test-dupe/shard".to_owned(),
        ],
        ..Profile::default()
    };
    let report = support::doctor_with(dir.path(), &profile, &only(&["nfs"]));
    let findings = support::findings(&report, "NFS001");
    assert_eq!(findings.len(), 2);
    assert!(findings.iter().all(|f| f.status == Status::Fail));
    assert!(
        findings[0].message.contains("over tcp"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[1].message.contains("over udp"),
        "{}",
        findings[1].message
    );
    // Evidence quotes the mount line.
    assert!(
        findings[0]
            .evidence
            .iter()
            .any(|e| e.value.contains("proto=tcp"))
    );
    // The RDMA-only checks are blocked by that root cause.
    assert_eq!(support::statuses(&report, "NFS003"), vec![Status::Blocked]);
    // The NFSv3 mount negotiated 32 KiB transfers: a warning.
    let sizes = support::statuses(&report, "NFS004");
    assert_eq!(sizes, vec![Status::Pass, Status::Warn]);
}

#[test]
fn procfs_nvme_subsystems_with_fc_tcp_and_rdma() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let tree = support::unttar(&corpus.join("procfs_fixtures.ttar"));
    let root = tree.path().join("fixtures");
    let facts = Facts::collect(&HostRoot::at(&root).unwrap());
    let subsystems = facts.nvme.list();
    // Two subsystems: a Dell PowerStore over FC and a NetApp over TCP + RDMA.
    assert_eq!(subsystems.len(), 2);
    assert_eq!(subsystems[0].iopolicy.as_deref(), Some("round-robin"));
    assert_eq!(subsystems[1].iopolicy.as_deref(), Some("numa"));
    let transports: Vec<_> = subsystems[1]
        .controllers
        .iter()
        .map(|c| c.transport.as_deref().unwrap())
        .collect();
    assert_eq!(transports, vec!["tcp", "rdma"]);
    assert_eq!(
        subsystems[1].controllers[0].address.as_deref(),
        Some("traddr=10.0.0.1,trsvcid=4420")
    );
    // nvme0's namespace node carries `ana_state` = optimized.
    let path = &subsystems[0].controllers[0].paths[0];
    assert_eq!(path.ana_state.as_deref(), Some("optimized"));

    let report = support::doctor_with(&root, &Profile::default(), &only(&["nvme"]));
    // nvme2 is dead and nvme4 is connecting: two warnings.
    let degraded: Vec<_> = support::findings(&report, "NVME003")
        .iter()
        .map(|f| (f.status, f.subject.clone()))
        .collect();
    assert!(
        degraded.contains(&(Status::Warn, "nvme-subsys0/nvme2".to_owned())),
        "{degraded:?}"
    );
    assert!(
        degraded.contains(&(Status::Warn, "nvme-subsys1/nvme4".to_owned())),
        "{degraded:?}"
    );
    // Every namespace still has a live (optimized) way in.
    assert!(
        support::statuses(&report, "NVME002")
            .iter()
            .all(|s| *s == Status::Pass)
    );
    // numa over the two-controller tcp+rdma subsystem is worth knowing.
    assert_eq!(
        support::statuses(&report, "NVME004"),
        vec![Status::Pass, Status::Info]
    );
    // No nvme_core parameter and no per-path devices in the capture: unknown.
    assert_eq!(support::statuses(&report, "NVME001"), vec![Status::Unknown]);

    // Expecting RDMA and round-robin: nvme3 (tcp) and nvme0..2 (fc) fail
    // the transport, and subsys1's numa policy warns.
    let profile = Profile {
        nvme_transport: Some("rdma".to_owned()),
        nvme_iopolicy: Some("round-robin".to_owned()),
        ..Profile::default()
    };
    let report = support::doctor_with(&root, &profile, &only(&["NVME004", "NVME005"]));
    assert_eq!(
        support::statuses(&report, "NVME004"),
        vec![Status::Pass, Status::Warn]
    );
    let transport = support::findings(&report, "NVME005");
    assert!(transport.iter().all(|f| f.status == Status::Fail));
    assert!(
        transport
            .iter()
            .any(|f| f.message.starts_with("nvme3 over rdma, tcp")),
        "{transport:?}"
    );
}

#[test]
fn libnvme_pcie_tree_has_native_multipath_with_two_controllers() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let tree = support::untar(&corpus.join("libnvme_sysfs_tree_pcie_multipath.tar.xz"));
    let facts = Facts::collect(&HostRoot::at(tree.path()).unwrap());
    let subsystems = facts.nvme.list();
    assert_eq!(subsystems.len(), 2);
    // The NQN is trimmed of the kernel's padding.
    assert_eq!(
        subsystems[1].nqn.as_deref(),
        Some("nqn.1994-11.com.samsung:nvme:PM1735a:2.5-inch:S6RTNE0R900057")
    );
    // nvme-subsys1: namespace nvme1n1 through nvme1 and nvme2 (expected.out:
    // path nvme1c1n1 → ctrl nvme1, path nvme1c2n1 → ctrl nvme2).
    let paths: Vec<_> = subsystems[1]
        .paths_to("nvme1n1")
        .map(|(c, p)| (c.name.clone(), p.name.clone()))
        .collect();
    assert_eq!(
        paths,
        vec![
            ("nvme1".to_owned(), "nvme1c1n1".to_owned()),
            ("nvme2".to_owned(), "nvme1c2n1".to_owned())
        ]
    );
    // PCIe controllers report no ANA state (expected.out: `ana=-`).
    assert!(
        subsystems[1]
            .controllers
            .iter()
            .flat_map(|c| &c.paths)
            .all(|p| p.ana_state.is_none())
    );
    assert_eq!(subsystems[1].iopolicy.as_deref(), Some("numa"));

    let report = support::doctor_with(tree.path(), &Profile::default(), &only(&["nvme"]));
    // No nvme_core in the capture, but the nvme1c1n1 path devices prove native multipath.
    let multipath = &support::findings(&report, "NVME001")[0];
    assert_eq!(multipath.status, Status::Pass);
    assert!(
        multipath.message.contains("path device nvme1c1n1"),
        "{}",
        multipath.message
    );
    // Both namespaces have a live path; without ANA reporting that is enough.
    assert_eq!(
        support::statuses(&report, "NVME002"),
        vec![Status::Pass, Status::Pass]
    );
    // All controllers live.
    assert!(
        support::statuses(&report, "NVME003")
            .iter()
            .all(|s| *s == Status::Pass)
    );
    // PCIe only: no NVMe-oF transport to judge.
    assert_eq!(
        support::statuses(&report, "NVME005"),
        vec![Status::NotApplicable]
    );
    // numa on a two-controller PCIe subsystem is not a fabric problem.
    assert_eq!(support::statuses(&report, "NVME004"), vec![Status::Pass]);
}

/// The `key : value` lines of a `gdscheck -p` CUFILE CONFIGURATION section.
fn gdscheck_keys(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| !line.contains("CUFILE CONFIGURATION"))
        .skip(2)
        .take_while(|line| !line.trim().starts_with("====="))
        .filter_map(|line| line.split_once(':').map(|(key, _)| key.trim().to_owned()))
        .filter(|key| !key.is_empty())
        .collect()
}

#[test]
fn gdscheck_reports_only_keys_the_doctor_knows() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let captures = [
        corpus.join("gdscheck_p_gds1.0_quadroP1000_onizuka.txt"),
        corpus.join("stelline_validated_hardware/asus-esc8000a-e12__gdscheck_p.txt"),
        corpus.join("stelline_validated_hardware/puget-wrx90__gdscheck_p.txt"),
    ];
    for capture in captures {
        let text = fs::read_to_string(&capture).unwrap();
        let keys = gdscheck_keys(&text);
        // Each capture prints a CUFILE CONFIGURATION section of 18+ keys.
        assert!(keys.len() >= 18, "{}: {keys:?}", capture.display());
        for key in keys {
            // gdscheck prints `use_compat_mode` for the JSON key `allow_compat_mode`.
            let key = cufile::from_gdscheck(&key);
            let parts: Vec<&str> = key.split('.').collect();
            assert!(
                cufile::lookup(&parts).is_some(),
                "{}: `{key}` is printed by gdscheck but unknown to GDS002",
                capture.display()
            );
        }
    }
    // GDS 1.14 prints force_compat_mode: false, the setting GDS003 fails on when true.
    let text =
        fs::read_to_string(corpus.join("stelline_validated_hardware/puget-wrx90__gdscheck_p.txt"))
            .unwrap();
    assert!(text.contains("properties.force_compat_mode : false"));
    // And the guide's `nvfs` block is no cuFile key.
    assert!(cufile::lookup(&["nvfs"]).is_none());
}

/// The agent's mode (no `--mount`): an NFS-over-RDMA mount that
/// `/etc/fstab` asks for but that is not in the real node_exporter mount
/// table (the mount that did not come up after a driver reload) fails
/// NFS007; the fstab entry the table does hold passes. The fstab lines
/// use the options of the kernel's NFS/RDMA guide
/// (`Documentation/admin-guide/nfs/nfs-rdma.rst`, v6.12: `rdma,port=20049`).
#[test]
fn fstab_rdma_mount_missing_from_node_exporter_table_fails_without_mount() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = root_with(
        &corpus,
        &[("proc/self/mountinfo", "proc_10_mountinfo_node_exporter.txt")],
    );
    fs::create_dir_all(dir.path().join("etc")).unwrap();
    fs::write(
        dir.path().join("etc/fstab"),
        "/dev/sda1 / ext4 errors=remount-ro 0 1\n\
         192.168.1.1:/srv/test /mnt/nfs/test nfs4 proto=rdma,port=20049,_netdev 0 0\n\
         192.168.1.1:/srv/ai /mnt/ai-data nfs4 rdma,port=20049,_netdev 0 0\n\
         192.168.1.1:/srv/scratch /mnt/scratch nfs4 rdma,port=20049,noauto 0 0\n",
    )
    .unwrap();
    let report = support::doctor_with(dir.path(), &Profile::default(), &only(&["NFS007"]));
    let findings = support::findings(&report, "NFS007");
    let verdicts: Vec<(&str, Status)> = findings
        .iter()
        .map(|f| (f.subject.as_str(), f.status))
        .collect();
    // The noauto entry is mounted on demand only and is not judged.
    assert_eq!(
        verdicts,
        [
            ("/mnt/nfs/test", Status::Pass),
            ("/mnt/ai-data", Status::Fail)
        ]
    );
    assert!(
        findings[1]
            .message
            .contains("the path reads ext4 /dev/sda1 at / instead"),
        "{}",
        findings[1].message
    );
    let fix = findings[1].remediation.as_ref().unwrap();
    assert!(
        fix.commands
            .iter()
            .any(|c| c.starts_with("modprobe rpcrdma"))
    );
}

/// CONF005 on the real node_exporter mount table: the intent's NFS mount
/// `/mnt/nfs/test` is there, `hard` as expected, but over TCP where the
/// intent asks `proto=rdma`.
#[test]
fn node_exporter_nfs_mount_against_the_intent() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = root_with(
        &corpus,
        &[("proc/self/mountinfo", "proc_10_mountinfo_node_exporter.txt")],
    );
    let expect = |options: &[&str]| Profile {
        nfs_mounts: vec![zerohop_doctor::profile::NfsExpectation {
            mount_point: "/mnt/nfs/test".to_owned(),
            source: Some("192.168.1.1:/srv/test".to_owned()),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            from: Some("cluster.yaml:30".to_owned()),
        }],
        ..Profile::default()
    };
    let report = support::doctor_with(dir.path(), &expect(&["hard"]), &only(&["CONF005"]));
    assert_eq!(support::statuses(&report, "CONF005"), vec![Status::Pass]);
    let report = support::doctor_with(
        dir.path(),
        &expect(&["proto=rdma", "hard"]),
        &only(&["CONF005"]),
    );
    let finding = &support::findings(&report, "CONF005")[0];
    assert_eq!(finding.status, Status::Fail, "{}", finding.message);
    assert!(finding.message.contains("proto"), "{}", finding.message);
}

/// CONF006 on procfs' NVMe-oF subsystems: the NetApp target 10.0.0.1 is
/// live over TCP; 10.0.0.2 (RDMA, nvme4) is still `connecting`.
#[test]
fn procfs_nvme_targets_against_the_intent() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let tree = support::unttar(&corpus.join("procfs_fixtures.ttar"));
    let root = tree.path().join("fixtures");
    let target = |address: &str, transport: &str| Profile {
        nvme_targets: vec![zerohop_doctor::profile::NvmeTargetExpectation {
            address: address.to_owned(),
            transport: Some(transport.to_owned()),
            from: None,
        }],
        ..Profile::default()
    };
    let report = support::doctor_with(&root, &target("10.0.0.1", "tcp"), &only(&["CONF006"]));
    assert_eq!(support::statuses(&report, "CONF006"), vec![Status::Pass]);
    let report = support::doctor_with(&root, &target("10.0.0.2", "rdma"), &only(&["CONF006"]));
    let finding = &support::findings(&report, "CONF006")[0];
    assert_eq!(finding.status, Status::Fail, "{}", finding.message);
}
