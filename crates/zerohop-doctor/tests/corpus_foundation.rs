//! The doctor on real captures from real hosts (`../shared/corpus`, see its
//! SOURCES.md): kernel command lines, hugepage pools, NUMA layouts and PCI
//! trees. Every assertion says what in the data justifies it.

mod support;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

use support::{assert_well_formed, corpus, doctor, machine, statuses, untar, unttar};

/// A temporary root holding `files` (corpus file name → host path).
fn root_with(corpus: &Path, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, host_path) in files {
        let target = dir.path().join(host_path.trim_start_matches('/'));
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(corpus.join(name), target).unwrap();
    }
    dir
}

#[test]
fn icelake_cmdline_has_iommu_on_in_passthrough() {
    let Some(corpus) = corpus() else { return };
    let root = root_with(
        &corpus,
        &[(
            "proc_cmdline_icelake_intel_iommu_on_iommu_pt_hugepages_csit.txt",
            "/proc/cmdline",
        )],
    );
    let report = doctor(root.path());
    assert_well_formed(&report);
    // The line has `intel_iommu=on` and `iommu=pt`.
    assert_eq!(statuses(&report, "KRN001"), vec![Status::Pass]);
    // `hugepagesz=1G hugepages=32` is requested, but the capture has no
    // /sys/kernel/mm/hugepages, so the reservation cannot be confirmed.
    assert_eq!(statuses(&report, "KRN002"), vec![Status::Unknown]);
    // isolcpus, nohz_full and rcu_nocbs all read 1-31,33-63,65-95,97-127:
    // consistent, so no warning; the effective sysfs sets were not captured.
    let krn003 = statuses(&report, "KRN003");
    assert!(
        !krn003.contains(&Status::Warn) && !krn003.contains(&Status::Fail),
        "{krn003:?}"
    );
    assert!(krn003.contains(&Status::Unknown));
}

#[test]
fn grace_cmdline_is_arm_passthrough() {
    let Some(corpus) = corpus() else { return };
    let root = root_with(
        &corpus,
        &[(
            "proc_cmdline_grace_iommu_passthrough_hugepages_csit.txt",
            "/proc/cmdline",
        )],
    );
    let report = doctor(root.path());
    assert_well_formed(&report);
    // `iommu.passthrough=1` exists only on arm64: SMMU on, in passthrough.
    assert_eq!(statuses(&report, "KRN001"), vec![Status::Pass]);
    let krn003 = statuses(&report, "KRN003");
    // isolcpus=1-71 nohz_full=1-71 rcu_nocbs=1-71 agree.
    assert!(!krn003.contains(&Status::Warn), "{krn003:?}");
}

#[test]
fn dgx_spark_arm_host_translates_dma() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor(&root);
    assert_well_formed(&report);
    // GB10 is Arm (`CPU implementer : 0x41`) and boots with
    // `iommu.passthrough=0`: the SMMU is on and translates host DMA.
    assert_eq!(statuses(&report, "KRN001"), vec![Status::Warn]);
    let facts = Facts::collect(&HostRoot::at(&root).unwrap());
    assert_eq!(
        facts.kernel.cpu_vendor,
        Ok(Some(zerohop_host::facts::CpuVendor::Arm))
    );
    // node0 holds cpus 0-19 and `isolated` is empty: nothing isolated.
    assert_eq!(facts.numa_nodes().len(), 1);
    assert_eq!(statuses(&report, "KRN004"), vec![Status::NotApplicable]);
}

#[test]
fn telegraf_hugepage_pools_per_node() {
    let Some(corpus) = corpus() else { return };
    let base = "sysfs_hugepages_per_node_telegraf/valid";
    let mut files = vec![(format!("{base}/meminfo"), "/proc/meminfo".to_owned())];
    for size in ["1048576kB", "2048kB"] {
        for file in ["nr_hugepages", "free_hugepages"] {
            files.push((
                format!("{base}/mm/hugepages/hugepages-{size}/{file}"),
                format!("/sys/kernel/mm/hugepages/hugepages-{size}/{file}"),
            ));
            for node in ["node0", "node1"] {
                files.push((
                    format!("{base}/node/{node}/hugepages/hugepages-{size}/{file}"),
                    format!("/sys/devices/system/node/{node}/hugepages/hugepages-{size}/{file}"),
                ));
            }
        }
    }
    let pairs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let root = root_with(&corpus, &pairs);
    let facts = Facts::collect(&HostRoot::at(root.path()).unwrap());
    // mm/hugepages-1048576kB/nr_hugepages is 8 and free_hugepages 0;
    // the 2048kB pool has 2048 pages, 883 free.
    let gig = facts.memory.pool(1 << 20).unwrap();
    assert_eq!((gig.total_known(), gig.free_known()), (Some(8), Some(0)));
    let two_mib = facts.memory.pool(2048).unwrap();
    assert_eq!(
        (two_mib.total_known(), two_mib.free_known()),
        (Some(2048), Some(883))
    );
    // Each node holds 4 of the 1 GiB pages and 1024 of the 2 MiB pages.
    for node in facts.numa_nodes() {
        assert_eq!(
            node.pool(1 << 20).unwrap().total_known(),
            Some(4),
            "node{}",
            node.id
        );
        assert_eq!(
            node.pool(2048).unwrap().total_known(),
            Some(1024),
            "node{}",
            node.id
        );
    }
    assert_eq!(facts.numa_nodes().len(), 2);
    // meminfo's HugePages_Total is 2048 (the default 2 MiB size).
    let meminfo = facts.memory.meminfo.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(meminfo.get("HugePages_Total"), Some(2048));

    let report = doctor(root.path());
    // The 1 GiB pool has no free page: exhausted. The 2 MiB pool has 883.
    let mem002 = support::findings(&report, "MEM002");
    let gig_finding = mem002.iter().find(|f| f.subject == "1 GiB pool").unwrap();
    assert_eq!(gig_finding.status, Status::Warn);
    let small = mem002.iter().find(|f| f.subject == "2 MiB pool").unwrap();
    assert_eq!(small.status, Status::Pass);
    // Both nodes have 1 GiB pages (no GPU or NIC in the capture, so every node counts).
    assert_eq!(
        statuses(&report, "MEM001"),
        vec![Status::Pass, Status::Pass]
    );
}

#[test]
fn hwloc_four_node_host_has_nics_without_locality() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_40intel64-2g2n4c+pcilocality.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor(&root);
    assert_well_formed(&report);
    let pci002 = support::findings(&report, "PCI002");
    // Four nodes have cpus (0,4,8…; 1,5,9…; 2,6,…; 3,7,…). The Broadcom NIC
    // functions 02:00.0/.1 and 03:00.0/.1 (class 0x020000) report
    // numa_node -1; the QLogic HCA 43:00.0 (class 0x0c0600) reports node 2.
    // The Broadcom functions back no RDMA device (only qib0, on 43:00.0, is
    // in sys/class/infiniband): off the data path, their unknown locality
    // is information (tests/truth_pci_gpu.rs has the whole case).
    for nic in [
        "0000:02:00.0",
        "0000:02:00.1",
        "0000:03:00.0",
        "0000:03:00.1",
    ] {
        let finding = pci002
            .iter()
            .find(|f| f.subject == nic)
            .unwrap_or_else(|| panic!("{nic} missing"));
        assert_eq!(finding.status, Status::Info, "{nic}");
    }
    let hca = pci002.iter().find(|f| f.subject == "0000:43:00.0").unwrap();
    assert_eq!(hca.status, Status::Pass);
    // 03:00.1, a network function off the data path, has current_link_*
    // but no max_link_* files (an older kernel): the link cannot be judged,
    // which off the data path is information, not unknown or a failure.
    let pci001 = support::findings(&report, "PCI001");
    let partial = pci001.iter().find(|f| f.subject == "0000:03:00.1").unwrap();
    assert_eq!(partial.status, Status::Info, "{}", partial.message);
    assert!(
        partial
            .message
            .contains("not on the gpu, rdma or nvme data path")
    );
    assert!(!pci001.iter().any(|f| f.status == Status::Fail));
}

#[test]
fn power9_host_with_gpu_memory_nodes() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2"));
    let root = machine(dir.path());
    let facts = Facts::collect(&HostRoot::at(&root).unwrap());
    // Nodes 0 and 8 hold cpus 0-87 and 88-175; nodes 250-255 are GPU memory
    // exposed as cpu-less NUMA nodes.
    let nodes = facts.numa_nodes();
    assert_eq!(nodes.len(), 8);
    let with_cpus: Vec<u32> = nodes
        .iter()
        .filter(|n| matches!(&n.cpus, Ok(Some(c)) if !c.is_empty()))
        .map(|n| n.id)
        .collect();
    assert_eq!(with_cpus, vec![0, 8]);
    assert_eq!(
        facts.kernel.cpu_vendor,
        Ok(Some(zerohop_host::facts::CpuVendor::Power))
    );
    // The 1 GiB pool exists with 0 pages, and nothing asks for any.
    assert_eq!(facts.memory.pool(1 << 20).unwrap().total_known(), Some(0));
    let report = doctor(&root);
    assert_well_formed(&report);
    assert_eq!(statuses(&report, "KRN002"), vec![Status::Info]);
}

#[test]
fn hugepage_sizes_other_than_2m_and_1g() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_2i386-2t-hugepagesizecount.tar.bz2"));
    let root = machine(dir.path());
    let facts = Facts::collect(&HostRoot::at(&root).unwrap());
    // The capture has hugepages-2048kB and hugepages-16777216kB, one page each.
    let pools = facts.memory.hugepages.as_ref().unwrap().as_ref().unwrap();
    let sizes: Vec<u64> = pools.iter().map(|p| p.size_kib).collect();
    assert_eq!(sizes, vec![2048, 16_777_216]);
    assert!(pools.iter().all(|p| p.total_known() == Some(1)));
    assert_well_formed(&doctor(&root));
}

#[test]
fn ghw_snapshot_with_an_nvidia_gpu() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let report = doctor(dir.path());
    assert_well_formed(&report);
    // 0000:06:00.0 is 10de, class 0x030200, bound to `nvidia`.
    let pci003 = support::findings(&report, "PCI003");
    let gpu = pci003.iter().find(|f| f.subject == "0000:06:00.0").unwrap();
    assert_eq!(gpu.status, Status::Pass);
    // The VM's virtio NIC (1af4, class 0x020000) has no PCIe link files:
    // off the data path, that is information, not an unknown check.
    let pci001 = support::findings(&report, "PCI001");
    let nic = pci001.iter().find(|f| f.subject == "0000:05:00.0").unwrap();
    assert_eq!(nic.status, Status::Info, "{}", nic.message);
    assert!(nic.message.contains("exposes no link speed or width files"));
}

#[test]
fn ghw_laptop_groups_links_without_group_directory() {
    let Some(corpus) = corpus() else { return };
    let dir =
        untar(&corpus.join("ghw_snapshot_linux-amd64-415ee03b8c4d1c4f07ae2e9d8b3d3d6d.tar.gz"));
    let facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    // Every device has an `iommu_group` link (0000:00:02.0 → group 0,
    // 0000:04:00.0 → group 14), but /sys/kernel/iommu_groups was not captured.
    assert_eq!(facts.pci.get("0000:00:02.0").unwrap().iommu_group, Some(0));
    assert_eq!(facts.pci.get("0000:04:00.0").unwrap().iommu_group, Some(14));
    assert_eq!(facts.pci.iommu_groups, Ok(None));
    assert_well_formed(&doctor(dir.path()));
}

#[test]
fn every_archive_runs_clean() {
    let Some(corpus) = corpus() else { return };
    let mut archives: Vec<_> = fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".tar.gz")
                || name.ends_with(".tar.bz2")
                || name.ends_with(".tar.xz")
                || name.ends_with(".ttar")
        })
        .collect();
    archives.sort();
    assert!(
        archives.len() >= 9,
        "expected the corpus archives, found {archives:?}"
    );
    for archive in archives {
        let dir = if archive.extension().is_some_and(|e| e == "ttar") {
            unttar(&archive)
        } else {
            untar(&archive)
        };
        // Archives hold the host tree at different depths; run the doctor on
        // the directory that holds `sys` or `proc`.
        let root = find_host_root(dir.path()).unwrap_or_else(|| dir.path().to_path_buf());
        let report = support::doctor_with(&root, &Profile::default(), &Selection::all());
        assert_well_formed(&report);
        let json = serde_json::to_string(&report).unwrap();
        let again = serde_json::to_string(&support::doctor(&root)).unwrap();
        assert_eq!(
            json,
            again,
            "{} gives a different report on a second run",
            archive.display()
        );
    }
}

fn find_host_root(dir: &Path) -> Option<std::path::PathBuf> {
    let mut queue = vec![dir.to_path_buf()];
    while let Some(path) = queue.pop() {
        if path.join("sys").is_dir() || path.join("proc").is_dir() {
            return Some(path);
        }
        if path
            .strip_prefix(dir)
            .map(|p| p.components().count())
            .unwrap_or(0)
            < 3
            && let Ok(entries) = fs::read_dir(&path)
        {
            queue.extend(
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_dir() && !p.is_symlink()),
            );
        }
    }
    None
}
