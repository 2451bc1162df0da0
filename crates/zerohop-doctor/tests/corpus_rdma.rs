//! Acceptance on real captures (`../shared/corpus`): the RDMA, RoCE QoS,
//! GPU and SR-IOV checks on sysfs trees taken from real hosts. Every
//! assertion says what in the data justifies it.

mod support;

use support::copy_tree;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::parse::rdma::{LinkLayer, PhysState, PortState};
use zerohop_host::{Facts, HostRoot};

fn facts(root: &Path) -> Facts {
    Facts::collect(&HostRoot::at(root).unwrap())
}

fn my_groups() -> Selection {
    Selection::parse(["rdma", "qos", "gpu", "sriov"]).unwrap()
}

#[test]
fn h100_infiniband_class_tree() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    copy_tree(
        &corpus.join("sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0"),
        &root.path().join("sys/class/infiniband"),
    );
    let facts = facts(root.path());
    let devices = facts.rdma.list();
    // The capture holds mlx5_0, mlx5_1, mlx5_4 … mlx5_9 and mlx5_bond_0.
    assert_eq!(devices.len(), 9);
    for device in devices {
        let port = &device.port_list()[0];
        // Every ports/1/state reads `4: ACTIVE` and phys_state `5: LinkUp`.
        assert_eq!(port.state, Ok(Some(PortState::Active)), "{}", device.name);
        assert_eq!(
            port.phys_state,
            Ok(Some(PhysState::LinkUp)),
            "{}",
            device.name
        );
        let rate = port.rate.clone().unwrap().unwrap();
        if device.name == "mlx5_bond_0" {
            // The BlueField bond (hca_type MT41692) is RoCE at `200 Gb/sec (2X NDR)`.
            assert_eq!(device.hca_type.as_deref(), Some("MT41692"));
            assert_eq!(port.link_layer, Ok(Some(LinkLayer::Ethernet)));
            assert_eq!(rate.gbps, 200.0);
        } else {
            // The ConnectX-7s (MT4129) are InfiniBand at `400 Gb/sec (4X NDR)`.
            assert_eq!(device.hca_type.as_deref(), Some("MT4129"));
            assert_eq!(port.link_layer, Ok(Some(LinkLayer::InfiniBand)));
            assert_eq!(rate.gbps, 400.0);
        }
        // Only the class directory was captured: no `device` link, no PCI function.
        assert_eq!(device.pci, None);
    }

    let report = support::doctor_with(root.path(), &Profile::default(), &my_groups());
    // All nine ports are ACTIVE/LinkUp.
    assert_eq!(support::statuses(&report, "RDMA004"), vec![Status::Pass; 9]);
    // Each family runs at its fastest rate: the bond is compared with no ConnectX-7.
    assert_eq!(support::statuses(&report, "RDMA005"), vec![Status::Pass; 9]);
    // No /proc/modules in the capture: the module chain is unknown, not failed.
    assert_eq!(support::statuses(&report, "RDMA001"), vec![Status::Unknown]);
    // The bond's Ethernet port has no gids directory in the capture.
    assert_eq!(support::statuses(&report, "RDMA007"), vec![Status::Unknown]);
    // The bond's port maps to no netdev (no device/net), so carrier is unknown.
    assert_eq!(support::statuses(&report, "RDMA006"), vec![Status::Unknown]);
    // No DCQCN or MTU to judge without a RoCE netdev.
    assert_eq!(
        support::statuses(&report, "QOS003"),
        vec![Status::NotApplicable]
    );

    // Expecting 400 Gb/s everywhere, the 200 Gb/s bond fails and nothing else.
    let profile = Profile {
        rdma_rate_gbps: Some(400),
        ..Profile::default()
    };
    let report = support::doctor_with(
        root.path(),
        &profile,
        &Selection::parse(["RDMA005"]).unwrap(),
    );
    let fails: Vec<&str> = support::findings(&report, "RDMA005")
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.subject.as_str())
        .collect();
    assert_eq!(fails, vec!["mlx5_bond_0/1"]);
    support::assert_well_formed(&support::doctor(root.path()));
}

#[test]
fn procfs_fixtures() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::unttar(&corpus.join("procfs_fixtures.ttar"));
    let root = dir.path().join("fixtures");
    let facts = facts(&root);
    let names: Vec<&str> = facts.rdma.list().iter().map(|d| d.name.as_str()).collect();
    // sys/class/infiniband holds hfi1_0, mlx4_0 (two ports) and mlx5_0.
    assert_eq!(names, vec!["hfi1_0", "mlx4_0", "mlx5_0"]);
    assert_eq!(facts.rdma.list()[1].port_list().len(), 2);
    // eth0 carries the out-of-tree ecn tree: roce_np/enable/3 = 1, /2 = 0,
    // and roce_rp/enable/7 = 0 while roce_np/enable/7 = 1.
    let eth0 = facts.net.get("eth0").unwrap();
    let np = eth0.ecn.np.clone().unwrap().unwrap();
    let rp = eth0.ecn.rp.clone().unwrap().unwrap();
    assert_eq!((np[&3], np[&2], np[&7], rp[&7]), (true, false, true, false));
    // eth0 has mtu 1500 and carrier 1.
    assert_eq!(
        (eth0.mtu.clone(), eth0.carrier.clone()),
        (Ok(Some(1500)), Ok(Some(true)))
    );

    let report = support::doctor(&root);
    support::assert_well_formed(&report);
    let ports: Vec<(String, Status)> = support::findings(&report, "RDMA004")
        .iter()
        .map(|f| (f.subject.clone(), f.status))
        .collect();
    assert_eq!(
        ports,
        vec![
            // hfi1_0 and both mlx4_0 ports read `4: ACTIVE` / `5: LinkUp`.
            ("hfi1_0/1".to_owned(), Status::Pass),
            ("mlx4_0/1".to_owned(), Status::Pass),
            ("mlx4_0/2".to_owned(), Status::Pass),
            // mlx5_0's phys_state reads `4: ACTIVE`: code 4 is
            // PortConfigurationTraining, so the file contradicts itself.
            ("mlx5_0/1".to_owned(), Status::Unknown),
        ]
    );
    let unknown = &support::findings(&report, "RDMA004")[3];
    assert!(
        unknown.message.contains("PortConfigurationTraining"),
        "{}",
        unknown.message
    );
    // Rates 100 (hfi1), 40+40 (mlx4, MT4099) and 25 (mlx5, MT4118): each the
    // fastest of its own family.
    assert_eq!(support::statuses(&report, "RDMA005"), vec![Status::Pass; 4]);
    // eth0 backs no RDMA device (no infiniband link to it), so its ECN bits
    // are not a RoCE netdev's: the DCQCN check does not apply.
    assert_eq!(
        support::statuses(&report, "QOS003"),
        vec![Status::NotApplicable]
    );
}

#[test]
fn node_exporter_sys() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::unttar(&corpus.join("node_exporter_sys.ttar"));
    let root = dir.path();
    let facts = facts(root);
    let names: Vec<&str> = facts.rdma.list().iter().map(|d| d.name.as_str()).collect();
    // sys/class/infiniband holds i40iw0 and mlx4_0.
    assert_eq!(names, vec!["i40iw0", "mlx4_0"]);
    // No interface in sys/class/net has an ecn directory: an inbox-style tree.
    assert!(
        facts
            .net
            .list()
            .iter()
            .all(|n| n.ecn.np == Ok(None) && n.ecn.rp == Ok(None))
    );
    // bonding_masters is a file in sys/class/net, not an interface.
    assert!(facts.net.get("bonding_masters").is_none());

    let report = support::doctor(root);
    support::assert_well_formed(&report);
    // i40iw0/1 and mlx4_0/1-2 read `4: ACTIVE` / `5: LinkUp`.
    assert_eq!(support::statuses(&report, "RDMA004"), vec![Status::Pass; 3]);
    // The igb NIC 0000:45:00.0 has sriov_numvfs 0: SR-IOV is not in use.
    assert_eq!(
        support::statuses(&report, "SRIOV001"),
        vec![Status::NotApplicable]
    );

    // Asked for SR-IOV: the igb function allows 7 VFs (sriov_totalvfs 7) but
    // has none enabled (sriov_numvfs 0). The NVMe function's 4 VFs do not
    // count: it is not a NIC.
    let profile = Profile {
        sriov: Some(true),
        ..Profile::default()
    };
    let report = support::doctor_with(root, &profile, &my_groups());
    let capable = support::findings(&report, "SRIOV001");
    assert_eq!(capable.len(), 1);
    assert_eq!(
        (capable[0].subject.as_str(), capable[0].status),
        ("0000:45:00.0", Status::Pass)
    );
    assert!(capable[0].message.contains("up to 7 vfs"));
    assert_eq!(support::statuses(&report, "SRIOV002"), vec![Status::Fail]);
}

#[test]
fn hwloc_snapshots() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let snapshots = [
        "hwloc_linux_snapshot_2i386-2t-hugepagesizecount.tar.bz2",
        "hwloc_linux_snapshot_32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2",
        "hwloc_linux_snapshot_40intel64-2g2n4c+pcilocality.tar.bz2",
        "hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2",
        "hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2",
    ];
    for name in snapshots {
        let dir = support::untar(&corpus.join(name));
        let top: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(top.len(), 1, "{name} has one top-level directory");
        let root = &top[0];
        let report = support::doctor(root);
        support::assert_well_formed(&report);
        let facts = facts(root);
        match name {
            n if n.contains("32em64t") => {
                // class/infiniband has mlx4_0 and scif0; scif0 links to
                // devices/scif_dma_0, which the capture left out (dangling).
                let names: Vec<&str> = facts.rdma.list().iter().map(|d| d.name.as_str()).collect();
                assert_eq!(names, vec!["mlx4_0"]);
                let mlx4 = &facts.rdma.list()[0];
                // The device link points at 0000:82:00.0, whose net/ holds ib0.
                assert_eq!(mlx4.pci.as_deref(), Some("0000:82:00.0"));
                assert_eq!(mlx4.port_list()[0].netdev.as_deref(), Some("ib0"));
                // ports/1: `4: ACTIVE`, `5: LinkUp`, `56 Gb/sec (4X FDR)`, InfiniBand.
                assert_eq!(support::statuses(&report, "RDMA004"), vec![Status::Pass]);
                assert!(
                    support::findings(&report, "RDMA005")[0]
                        .message
                        .contains("56 Gb/sec")
                );
                // ib0 reads carrier 1.
                assert_eq!(support::statuses(&report, "RDMA006"), vec![Status::Pass]);
            }
            n if n.contains("40intel64") => {
                // qib0 (QLogic) on 0000:43:00.0 with IPoIB ib0, ACTIVE at 40 Gb/s.
                let qib = &facts.rdma.list()[0];
                assert_eq!(
                    (qib.name.as_str(), qib.pci.as_deref()),
                    ("qib0", Some("0000:43:00.0"))
                );
                assert_eq!(support::statuses(&report, "RDMA004"), vec![Status::Pass]);
                // dev/ holds only a cpuset mount (no dev/null): device nodes unknown, not failed.
                assert_eq!(support::statuses(&report, "RDMA003"), vec![Status::Unknown]);
            }
            n if n.contains("nvidiagpunumanodes") => {
                // proc/driver/nvidia/gpus lists six GPUs (0004:05:00.0 …), without a version file.
                assert_eq!(facts.nvidia.gpus.clone().unwrap().unwrap().len(), 6);
                assert_eq!(facts.nvidia.version, Ok(None));
                assert_eq!(support::statuses(&report, "GPU001"), vec![Status::Pass]);
                // No taint file and no version line: open or proprietary cannot be told.
                assert_eq!(support::statuses(&report, "GPU002"), vec![Status::Unknown]);
                // No RDMA device in the snapshot: the RDMA checks do not apply.
                assert_eq!(
                    support::statuses(&report, "RDMA001"),
                    vec![Status::NotApplicable]
                );
            }
            _ => {
                // The 2i386 and GB10 snapshots have no class/infiniband at all.
                assert_eq!(facts.rdma.devices, Ok(None));
            }
        }
    }
}
