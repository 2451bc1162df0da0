//! The PCIe and GPU checks and the GPU↔NIC pairing tell the truth on real
//! hosts (`../shared/corpus`, see its SOURCES.md): one test per case, each
//! on a capture or on a root assembled from a host's own command output
//! (`support::builder`). Every assertion says what in the data justifies it.

mod support;

use std::fs;
use std::path::Path;

use zerohop_core::{Finding, Status};
use zerohop_doctor::profile::GpuDirect;
use zerohop_doctor::topology::{Distance, Topology};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::parse::nvidia::{ModuleFlavour, parse_version};
use zerohop_host::{Facts, HostRoot};

use support::builder::{self, Host};
use support::{corpus, doctor, doctor_with, findings, machine, untar};

fn facts(root: &Path) -> Facts {
    Facts::collect(&HostRoot::at(root).unwrap())
}

fn read(corpus: &Path, name: &str) -> String {
    fs::read_to_string(corpus.join(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

/// The single finding of check `id` about `subject`.
fn finding<'a>(report: &'a zerohop_core::Report, id: &str, subject: &str) -> &'a Finding {
    let matching: Vec<&Finding> = findings(report, id)
        .into_iter()
        .filter(|f| f.subject == subject)
        .collect();
    assert_eq!(matching.len(), 1, "{id} about {subject}: {matching:#?}");
    matching[0]
}

/// The value of the evidence read from `source`.
fn evidence<'a>(finding: &'a Finding, source: &str) -> &'a str {
    finding
        .evidence
        .iter()
        .find(|e| e.source == source)
        .map(|e| e.value.as_str())
        .unwrap_or_else(|| panic!("no evidence from {source} in {finding:#?}"))
}

/// A root holding the PCI functions of an `lspci -vvv` listing, each
/// where the bridges' bus numbers put it.
fn root_from_lspci(text: &str) -> (Host, Vec<builder::Function>) {
    let functions = builder::lspci_vvv(text);
    let tree = builder::tree_from_buses(&functions);
    let mut host = Host::new();
    for function in &functions {
        host.function(&tree[&function.address], function);
    }
    (host, functions)
}

#[test]
fn a_gpu_bound_to_nvidia_proves_the_driver_without_proc_modules() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let facts = facts(dir.path());
    // The snapshot has neither /proc/modules nor /sys/module, and no
    // /proc/driver/nvidia: nothing lists modules.
    assert_eq!(facts.modules, Ok(None));
    assert_eq!(facts.nvidia.version, Ok(None));
    let report = doctor(dir.path());
    support::assert_well_formed(&report);
    // 0000:06:00.0 is 10de:15f8, class 0x030200, and its `driver` link
    // points at bus/pci/drivers/nvidia: the module is loaded.
    let pci003 = finding(&report, "PCI003", "0000:06:00.0");
    assert_eq!(pci003.status, Status::Pass);
    let gpu001 = finding(&report, "GPU001", "0000:06:00.0");
    assert_eq!(gpu001.status, Status::Pass, "{gpu001:#?}");
    assert_eq!(
        evidence(gpu001, "/sys/bus/pci/devices/0000:06:00.0/driver"),
        "nvidia"
    );
    assert!(
        !findings(&report, "GPU001")
            .iter()
            .any(|f| f.status == Status::Fail)
    );
    // GPU002–004 run now. The flavour cannot be told: no
    // /sys/module/nvidia/taint and no version file in the snapshot.
    assert_eq!(support::statuses(&report, "GPU002"), vec![Status::Unknown]);
    // No RDMA device (no /sys/class/infiniband) and no expectation:
    // GPUDirect RDMA is not wanted; no GDS or GDRCopy expected either.
    assert_eq!(
        support::statuses(&report, "GPU003"),
        vec![Status::NotApplicable]
    );
    assert_eq!(
        support::statuses(&report, "GPU004"),
        vec![Status::NotApplicable]
    );
    assert!(report.findings.iter().all(|f| f.status != Status::Blocked));
}

#[test]
fn hgx_h100_management_lom_at_the_width_of_its_root_port_passes() {
    let Some(corpus) = corpus() else { return };
    let text = read(&corpus, "lspci_vvv_full_hgx_h100_8xcx7_gpud.txt");
    let (host, functions) = root_from_lspci(&text);
    let report = doctor_with(
        host.path(),
        &Profile::default(),
        &Selection::parse(["PCI001"]).unwrap(),
    );
    for lom in ["0000:01:00.0", "0000:01:00.1"] {
        // The BCM5720 LOM: `LnkCap: Speed 5GT/s, Width x2`,
        // `LnkSta: Speed 5GT/s (ok), Width x1 (downgraded)`; it sits on bus
        // 01, the secondary bus of root port 00:0c.0, whose `LnkCap` is
        // `Speed 8GT/s, Width x1`. The link cannot be wider than x1.
        let pci001 = finding(&report, "PCI001", lom);
        assert_eq!(pci001.status, Status::Pass, "{pci001:#?}");
        assert_eq!(
            evidence(pci001, "/sys/bus/pci/devices/0000:00:0c.0/max_link_width"),
            "1"
        );
        assert_eq!(
            evidence(
                pci001,
                &format!("/sys/bus/pci/devices/{lom}/max_link_width")
            ),
            "2"
        );
    }
    // Every H100 (`3D controller: NVIDIA Corporation Device 2330`) and every
    // ConnectX-7 (`MT2910 Family [ConnectX-7]`) runs at its `LnkCap`
    // (32GT/s x16) behind a x16 Gen5 switch port.
    let gpus: Vec<&builder::Function> = functions
        .iter()
        .filter(|f| f.description.contains("Device 2330") && f.description.starts_with("3D"))
        .collect();
    let cx7: Vec<&builder::Function> = functions
        .iter()
        .filter(|f| f.description.contains("[ConnectX-7]"))
        .collect();
    assert_eq!((gpus.len(), cx7.len()), (8, 8));
    for function in gpus.into_iter().chain(cx7) {
        let pci001 = finding(&report, "PCI001", &function.address);
        assert_eq!(pci001.status, Status::Pass, "{pci001:#?}");
    }
    // Nothing on this healthy host fails PCI001. The switchtec function
    // 81:00.1 (`Memory controller`, x2 of x16) and the NVSwitch bridges
    // (`Bridge: NVIDIA Corporation Device 22a3`) are not on the data path's
    // GPU/NIC/NVMe list and are not judged.
    assert!(
        findings(&report, "PCI001")
            .iter()
            .all(|f| f.status != Status::Fail),
        "{:#?}",
        findings(&report, "PCI001")
    );
    assert!(
        findings(&report, "PCI001")
            .iter()
            .all(|f| f.subject != "0000:81:00.1" && f.subject != "0000:83:00.0")
    );
}

#[test]
fn management_nics_without_locality_are_information() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_40intel64-2g2n4c+pcilocality.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(
        &root,
        &Profile::default(),
        &Selection::parse(["PCI002"]).unwrap(),
    );
    // Four nodes have cpus. The Broadcom functions 02:00.0/.1 and 03:00.0/.1
    // (class 0x020000, netdevs eth0–eth3) read numa_node -1 and back no RDMA
    // device: sys/class/infiniband holds only qib0, on 43:00.0.
    for nic in [
        "0000:02:00.0",
        "0000:02:00.1",
        "0000:03:00.0",
        "0000:03:00.1",
    ] {
        let pci002 = finding(&report, "PCI002", nic);
        assert_eq!(pci002.status, Status::Info, "{pci002:#?}");
        assert_eq!(
            evidence(pci002, &format!("/sys/bus/pci/devices/{nic}/numa_node")),
            "-1"
        );
    }
    // The QLogic HCA 43:00.0 (class 0x0c0600, backing qib0) is on the data
    // path and reads numa_node 2.
    let hca = finding(&report, "PCI002", "0000:43:00.0");
    assert_eq!(hca.status, Status::Pass);
    assert!(!support::statuses(&report, "PCI002").contains(&Status::Warn));
}

#[test]
fn a_connectx3_of_class_0280_is_checked() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"));
    let root = machine(dir.path());
    let facts = facts(&root);
    // 0000:82:00.0 is 15b3:1003 (ConnectX-3) with class 0x028000, and
    // sys/class/infiniband/mlx4_0 links to it.
    let cx3 = facts.pci.get("0000:82:00.0").unwrap();
    assert_eq!(cx3.class, Some(0x0280));
    assert_eq!(facts.rdma.on_pci("0000:82:00.0").count(), 1);
    let report = doctor_with(
        &root,
        &Profile::default(),
        &Selection::parse(["PCI001", "PCI002"]).unwrap(),
    );
    // The capture has no link files for it: judged, and unknown.
    let pci001 = finding(&report, "PCI001", "0000:82:00.0");
    assert_eq!(pci001.status, Status::Unknown);
    assert_eq!(
        evidence(pci001, "/sys/bus/pci/devices/0000:82:00.0/max_link_speed"),
        "<missing>"
    );
    // Nodes 0 and 1 have cpus 0-7 and 8-15; its numa_node reads 1.
    let pci002 = finding(&report, "PCI002", "0000:82:00.0");
    assert_eq!(pci002.status, Status::Pass);
    assert_eq!(
        evidence(pci002, "/sys/bus/pci/devices/0000:82:00.0/numa_node"),
        "1"
    );
}

#[test]
fn a_proprietary_version_line_is_proprietary() {
    let Some(corpus) = corpus() else { return };
    let name = "proc_driver_nvidia_version_proprietary_525.60.13_T4_gvisor_blog_line1only.txt";
    let line = read(&corpus, name);
    // `NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13 …`: a
    // kernel module and a version, without "Open".
    let parsed = parse_version(&line).unwrap();
    assert_eq!(parsed.flavour, Some(ModuleFlavour::Proprietary));
    assert_eq!(parsed.version.as_deref(), Some("525.60.13"));
    // The ghw snapshot's GPU (bound to nvidia, no /sys/module) with that
    // version file: the line alone decides.
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let version = dir.path().join("proc/driver/nvidia/version");
    fs::create_dir_all(version.parent().unwrap()).unwrap();
    fs::write(&version, &line).unwrap();
    let report = doctor_with(
        dir.path(),
        &Profile::default(),
        &Selection::parse(["GPU002"]).unwrap(),
    );
    let gpu002 = findings(&report, "GPU002");
    assert_eq!(gpu002.len(), 1);
    // No expectation: the proprietary module warns.
    assert_eq!(gpu002[0].status, Status::Warn, "{gpu002:#?}");
    assert_eq!(
        evidence(gpu002[0], "/proc/driver/nvidia/version"),
        line.trim()
    );
}

#[test]
fn an_expected_gpudirect_path_is_judged_without_rdma_devices() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let gpu003 = |gpudirect| {
        let profile = Profile {
            gpudirect,
            ..Profile::default()
        };
        let report = doctor_with(dir.path(), &profile, &Selection::parse(["GPU003"]).unwrap());
        findings(&report, "GPU003")
            .into_iter()
            .cloned()
            .collect::<Vec<Finding>>()
    };
    // No /sys/class/infiniband and no expectation: not wanted.
    assert_eq!(gpu003(None)[0].status, Status::NotApplicable);
    // `--expect-gpudirect peermem`: judged. Neither /proc/modules nor
    // /sys/module is in the snapshot, so whether nvidia_peermem is loaded
    // is unknown, and said so.
    let peermem = gpu003(Some(GpuDirect::Peermem));
    assert_eq!(peermem.len(), 1);
    assert_eq!(peermem[0].status, Status::Unknown, "{peermem:#?}");
    assert_eq!(evidence(&peermem[0], "/proc/modules"), "<missing>");
    // `--expect-gpudirect dma-buf`: judged. No /proc/sys/kernel/osrelease
    // in the snapshot: the kernel's DMA-BUF support is unknown, not absent.
    let dma_buf = gpu003(Some(GpuDirect::DmaBuf));
    assert_eq!(dma_buf[0].status, Status::Unknown, "{dma_buf:#?}");
    assert!(dma_buf[0].message.contains("kernel release unknown"));
    // `--expect-gpudirect none`: the expectation is that it is not used.
    assert_eq!(
        gpu003(Some(GpuDirect::None))[0].status,
        Status::NotApplicable
    );
}

#[test]
fn topo_pairs_each_h100_with_its_active_400g_nic() {
    let Some(corpus) = corpus() else { return };
    let (host, functions) =
        root_from_lspci(&read(&corpus, "lspci_vvv_full_hgx_h100_8xcx7_gpud.txt"));
    let cas = builder::ibstat(&read(&corpus, "ibstat_h100_some_ports_down_gpud.txt"));
    // The kernel names mlx5 devices in probe order, the PCI address order
    // of the Mellanox functions: 1a:00.0, 1b:00.0, 1b:00.1, 3c:00.0, 4d:00.0,
    // 5e:00.0, 9c:00.0, 9d:00.0, 9d:00.1, bc:00.0, cc:00.0, dc:00.0. The
    // `CA type` of each ibstat device (decimal device ID: MT4129 = 0x1021
    // ConnectX-7, MT4125 = 0x101d ConnectX-6 Dx) matches that order.
    let mellanox: Vec<&builder::Function> = functions
        .iter()
        .filter(|f| f.description.contains("Mellanox"))
        .collect();
    assert_eq!(mellanox.len(), cas.len());
    for ca in &cas {
        let index: usize = ca.name.trim_start_matches("mlx5_").parse().unwrap();
        assert_eq!(mellanox[index].device, Some(ca.device), "{}", ca.name);
        host.rdma(&mellanox[index].address, ca);
    }
    let topology = Topology::of(&facts(host.path()));
    assert_eq!(topology.pairings.len(), 8);
    for pairing in &topology.pairings {
        let nic = pairing.nic.as_deref().unwrap();
        let ca = cas.iter().find(|c| c.name == nic).unwrap();
        // Each H100 shares its PCIe switch with one ConnectX-7; two GPUs'
        // switches also hold a dual-port ConnectX-6 Dx (1b:00.x, 9d:00.x). The
        // ConnectX-7s are all `State: Active`, `Rate: 400`,
        // `Link layer: InfiniBand`; mlx5_2, mlx5_7 and mlx5_8 (ConnectX-6
        // Dx) are `Down`/`Disabled`, and mlx5_1 is Active at 100 Ethernet.
        assert_eq!(ca.device, 0x1021, "{} got {nic}", pairing.gpu);
        assert_eq!(pairing.distance, Some(Distance::Pix), "{}", pairing.gpu);
    }
    let at = |gpu: &str| {
        topology
            .pairings
            .iter()
            .find(|p| p.gpu == gpu)
            .and_then(|p| p.nic.clone())
            .unwrap()
    };
    // 9b:00.0 sits under switch port 98:00.0 with 9c:00.0 (mlx5_6, Active
    // 400) and 9d:00.0/.1 (mlx5_7, mlx5_8, both Down).
    assert_eq!(at("0000:9b:00.0"), "mlx5_6");
    // 19:00.0 sits with 1a:00.0 (mlx5_0, Active 400 InfiniBand), 1b:00.0
    // (mlx5_1, Active 100 Ethernet) and 1b:00.1 (mlx5_2, Down).
    assert_eq!(at("0000:19:00.0"), "mlx5_0");
    // NCCL_IB_HCA names the eight ConnectX-7s and no down port.
    assert_eq!(
        topology.nccl_ib_hca,
        "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    );
    // Every pair is PIX, within NCCL's default GDR level.
    assert_eq!(topology.nccl_net_gdr_level(), None);
}

#[test]
fn every_gpu_nic_pair_at_node_warns_that_nccl_stages_through_host_memory() {
    let Some(corpus) = corpus() else { return };
    let dir = "stelline_validated_hardware/asus-esc8000a-e12__";
    let tree = builder::lspci_tree(&read(&corpus, &format!("{dir}lspci_tv.txt")));
    // The four functions with `lspci -vvv` output give their class, NUMA
    // node, driver and link; the tree gives every function's place.
    let mut detailed = Vec::new();
    for file in [
        "lspci_vvv_41-00.0_rtx6000ada.txt",
        "lspci_vvv_21-00.0_connectx7.txt",
        "lspci_vvv_81-00.0_connectx7.txt",
    ] {
        detailed.extend(builder::lspci_vvv(&read(&corpus, &format!("{dir}{file}"))));
    }
    // `nvidia-smi topo -m` lists GPU0–GPU3 (PCI order: 01, 41, c1, e1) with
    // NUMA affinity 0, 0, 1, 1, and NIC0–NIC3 = mlx5_0–mlx5_3 with GPU0/1 at
    // NODE to NIC0/1: 21:00.x sit on node 0 (their `NUMA node: 0`), 81:00.x
    // on node 1.
    // `nvidia-smi` lists all four GPUs (the driver holds each) and
    // ibv_devinfo four mlx5 devices (mlx5_core holds each function).
    let placed = [
        ("0000:01:00.0", 0, "nvidia"),
        ("0000:41:00.0", 0, "nvidia"),
        ("0000:c1:00.0", 1, "nvidia"),
        ("0000:e1:00.0", 1, "nvidia"),
        ("0000:21:00.0", 0, "mlx5_core"),
        ("0000:21:00.1", 0, "mlx5_core"),
        ("0000:81:00.0", 1, "mlx5_core"),
        ("0000:81:00.1", 1, "mlx5_core"),
    ];
    let mut host = Host::new();
    for (function, chain) in &tree {
        // A function without `-vvv` output takes the class and IDs of the
        // same model that has it (the RTX 6000 Ada is a `VGA compatible
        // controller`, the ConnectX-7 an `Ethernet controller`).
        let mut function = detailed
            .iter()
            .find(|d| d.address == function.address)
            .cloned()
            .unwrap_or_else(|| {
                let model = detailed.iter().find(|d| {
                    !function.description.is_empty()
                        && d.description.contains(&function.description)
                });
                builder::Function {
                    class: model.and_then(|m| m.class),
                    vendor: model.and_then(|m| m.vendor),
                    device: model.and_then(|m| m.device),
                    ..function.clone()
                }
            });
        if let Some((_, node, driver)) = placed.iter().find(|(a, ..)| *a == function.address) {
            function.numa_node = Some(*node);
            function.driver = Some((*driver).to_owned());
        }
        host.function(chain, &function);
    }
    for (node, cpus) in builder::numactl(&read(&corpus, &format!("{dir}numactl_hardware.txt"))) {
        host.numa_node(node, &cpus);
    }
    // ibv_devinfo: mlx5_0 and mlx5_1 share sys_image_guid …20f0, mlx5_2 and
    // mlx5_3 share …deb0: one dual-port card each, named in PCI order.
    let cas = builder::ibv_devinfo(&read(&corpus, &format!("{dir}ibv_devinfo.txt")));
    for (ca, address) in cas.iter().zip([
        "0000:21:00.0",
        "0000:21:00.1",
        "0000:81:00.0",
        "0000:81:00.1",
    ]) {
        // vendor_part_id 4129: ConnectX-7 (0x1021).
        assert_eq!(ca.device, 0x1021);
        host.rdma(address, ca);
    }
    let facts = facts(host.path());
    let topology = Topology::of(&facts);
    assert_eq!(topology.pairings.len(), 4);
    // The classes `nvidia-smi topo -m` printed on this host, row by row.
    let expected = [
        ("0000:01:00.0", ["NODE", "NODE", "SYS", "SYS"]),
        ("0000:41:00.0", ["NODE", "NODE", "SYS", "SYS"]),
        ("0000:c1:00.0", ["SYS", "SYS", "NODE", "NODE"]),
        ("0000:e1:00.0", ["SYS", "SYS", "NODE", "NODE"]),
    ];
    for (gpu, classes) in expected {
        let pairing = topology.pairings.iter().find(|p| p.gpu == gpu).unwrap();
        let shown: Vec<&str> = pairing
            .all
            .iter()
            .map(|d| d.map_or("?", Distance::as_str))
            .collect();
        assert_eq!(shown, classes, "{gpu}");
        assert_eq!(pairing.distance, Some(Distance::Node), "{gpu}");
    }
    // NODE is beyond NCCL's default NCCL_NET_GDR_LEVEL (PXB): every GPU's
    // traffic is staged through host memory, and PHB is the level to raise
    // it to.
    assert_eq!(topology.nccl_net_gdr_level(), Some("PHB"));
    assert_eq!(topology.beyond_default_gdr().count(), 4);
    let report = doctor_with(
        host.path(),
        &Profile::default(),
        &Selection::parse(["GPU005"]).unwrap(),
    );
    for (gpu, _) in expected {
        let gpu005 = finding(&report, "GPU005", gpu);
        assert_eq!(gpu005.status, Status::Warn, "{gpu005:#?}");
        assert!(gpu005.message.contains("host memory"), "{}", gpu005.message);
        let fix = gpu005.remediation.as_ref().unwrap();
        assert!(
            fix.commands
                .iter()
                .any(|c| c == "export NCCL_NET_GDR_LEVEL=PHB"),
            "{fix:#?}"
        );
    }
}

#[test]
fn a_missing_max_link_file_is_named_as_missing() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_40intel64-2g2n4c+pcilocality.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(
        &root,
        &Profile::default(),
        &Selection::parse(["PCI001"]).unwrap(),
    );
    // 03:00.1 has current_link_speed and current_link_width but neither
    // max_link_speed nor max_link_width (an older kernel).
    let device = "/sys/bus/pci/devices/0000:03:00.1";
    let pci001 = finding(&report, "PCI001", "0000:03:00.1");
    // Off the data path (a network function), what cannot be judged is
    // information; the files are named all the same.
    assert_eq!(pci001.status, Status::Info, "{}", pci001.message);
    assert_eq!(
        evidence(pci001, &format!("{device}/max_link_speed")),
        "<missing>"
    );
    assert_eq!(
        evidence(pci001, &format!("{device}/max_link_width")),
        "<missing>"
    );
    let current =
        fs::read_to_string(root.join("sys/bus/pci/devices/0000:03:00.1/current_link_speed"))
            .unwrap();
    assert_eq!(
        evidence(pci001, &format!("{device}/current_link_speed")),
        current.trim()
    );
    assert!(
        pci001.message.contains("max_link_speed"),
        "{}",
        pci001.message
    );
}
