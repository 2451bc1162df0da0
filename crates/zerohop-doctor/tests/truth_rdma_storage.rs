//! The doctor tells the truth on real hosts: the kernel, memory, RDMA and
//! storage checks on real captures from `../shared/corpus` (see its
//! SOURCES.md), or on small roots the builders below assemble from real
//! command output. One test per defect; every assertion says what in the
//! data justifies it.

mod support;

use std::fs;

use serde_json::{Map, Value};
use zerohop_core::{Finding, Status};
use zerohop_doctor::Profile;
use zerohop_known::cufile::{self, Type};

use support::{
    copy_tree, corpus, doctor_with, evidence, findings, machine, only, place,
    proc_modules_from_lsmod, statuses, untar, write,
};

/// A `cufile.json` from the `CUFILE CONFIGURATION` section of `gdscheck -p`:
/// each `key : value` line becomes the key's value, typed as the schema
/// types the key (`gdscheck` prints a boolean as `0`/`1` or
/// `false`/`true`, a list as its items separated by spaces). The printed
/// name `use_compat_mode` stands for `allow_compat_mode`.
fn cufile_from_gdscheck(text: &str) -> Value {
    let mut root = Map::new();
    let lines = text
        .lines()
        .skip_while(|line| !line.contains("CUFILE CONFIGURATION"))
        .skip(2)
        .take_while(|line| !line.trim().starts_with("====="));
    for line in lines {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = cufile::from_gdscheck(key.trim());
        let parts: Vec<&str> = key.split('.').collect();
        let known = cufile::lookup(&parts).unwrap_or_else(|| panic!("{key} is no cufile key"));
        let value = value.trim();
        let typed = match known.ty {
            Type::Bool => Value::Bool(matches!(value, "true" | "1")),
            Type::Integer => Value::from(value.parse::<i64>().unwrap()),
            Type::Integers => Value::Array(
                value
                    .split_whitespace()
                    .map(|n| Value::from(n.parse::<i64>().unwrap()))
                    .collect(),
            ),
            Type::Strings => Value::Array(
                value
                    .split_whitespace()
                    .map(|s| Value::from(s.to_owned()))
                    .collect(),
            ),
            Type::String | Type::Section => Value::from(value.to_owned()),
        };
        let mut section = &mut root;
        for part in &parts[..parts.len() - 1] {
            section = section
                .entry((*part).to_owned())
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .unwrap();
        }
        section.insert(parts[parts.len() - 1].to_owned(), typed);
    }
    Value::Object(root)
}

fn commands(finding: &Finding) -> Vec<String> {
    finding
        .remediation
        .as_ref()
        .map(|r| r.commands.clone())
        .unwrap_or_default()
}

/// Defect 4: NFS004 warned on the rsize of home directories that NFS001
/// itself called "not declared data mounts".
#[test]
fn home_directories_over_tcp_are_not_data_mounts() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_40intel64-2g2n4c+pcilocality.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &Profile::default(), &only(&["nfs"]));
    // /proc/mounts holds two NFSv3 mounts over TCP, master:/cm/shared on
    // /cm/shared and nfsnode01:/home/users on /home, both rsize=32768.
    let nfs001 = findings(&report, "NFS001");
    let subjects: Vec<&str> = nfs001.iter().map(|f| f.subject.as_str()).collect();
    assert_eq!(subjects, vec!["/cm/shared", "/home"]);
    // Nothing declares them and they neither use nor ask for RDMA (proto=tcp,
    // no /etc/fstab in the capture): listed as information, not data mounts.
    for finding in &nfs001 {
        assert_eq!(finding.status, Status::Info);
        assert!(
            finding.message.contains("not a data mount"),
            "{}",
            finding.message
        );
    }
    // So the data-mount checks leave them alone instead of warning on their
    // 32 KiB transfers or judging their hard option.
    for id in ["NFS004", "NFS006"] {
        let judged = findings(&report, id);
        assert_eq!(statuses(&report, id), vec![Status::NotApplicable], "{id}");
        assert!(
            judged[0].message.contains("2 nfs mount(s)"),
            "{}",
            judged[0].message
        );
    }

    // Declared with --mount, /home is a data mount for every NFS check at
    // once: not over RDMA (fail) and rsize=32768 (warn).
    let profile = Profile {
        mounts: vec!["/home/users/alice".to_owned()],
        ..Profile::default()
    };
    let report = doctor_with(&root, &profile, &only(&["nfs"]));
    // /home is a mount point of its own: the declared path is on it.
    assert_eq!(statuses(&report, "NFS007"), vec![Status::Pass]);
    assert_eq!(statuses(&report, "NFS001"), vec![Status::Fail]);
    let sizes = findings(&report, "NFS004");
    assert_eq!(sizes.len(), 1);
    assert_eq!(
        (sizes[0].subject.as_str(), sizes[0].status),
        ("/home", Status::Warn)
    );
    assert!(
        sizes[0].message.contains("rsize 32 KiB"),
        "{}",
        sizes[0].message
    );
}

/// Defect 5: KRN001 warned "dma is translated" on a host whose IOMMU
/// groups are `identity`; the group types decide when present.
#[test]
fn iommu_group_types_decide_passthrough() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &Profile::default(), &only(&["KRN001"]));
    // As captured, the GB10's /proc/cmdline says `iommu.passthrough=0` and the
    // capture has no /sys/kernel/iommu_groups: the command line decides, and
    // asks for translation.
    let krn001 = &findings(&report, "KRN001")[0];
    assert_eq!(krn001.status, Status::Warn);
    assert!(
        krn001.message.contains("iommu.passthrough=0"),
        "{}",
        krn001.message
    );
    assert_eq!(
        evidence(krn001, "/sys/kernel/iommu_groups/*/type"),
        Some("<missing>")
    );

    // The kernel's own answer (drivers/iommu/iommu.c writes `identity` for
    // a passthrough default domain) overrides the command line: three
    // groups in passthrough and one owned by VFIO pass.
    for (group, kind) in [
        (0, "identity"),
        (1, "identity"),
        (5, "identity"),
        (9, "unmanaged"),
    ] {
        write(
            &root,
            &format!("sys/kernel/iommu_groups/{group}/type"),
            &format!("{kind}\n"),
        );
    }
    let report = doctor_with(&root, &Profile::default(), &only(&["KRN001"]));
    let krn001 = &findings(&report, "KRN001")[0];
    assert_eq!(krn001.status, Status::Pass, "{}", krn001.message);
    assert_eq!(
        evidence(krn001, "/sys/kernel/iommu_groups/*/type"),
        Some("3 identity, 1 unmanaged")
    );

    // One translated group is named, whatever the command line says.
    write(&root, "sys/kernel/iommu_groups/5/type", "DMA-FQ\n");
    let report = doctor_with(&root, &Profile::default(), &only(&["KRN001"]));
    let krn001 = &findings(&report, "KRN001")[0];
    assert_eq!(krn001.status, Status::Warn);
    assert!(
        krn001.message.contains("groups 5 (DMA-FQ)"),
        "{}",
        krn001.message
    );
}

/// Defect 6: URING001 said "kernel predates 6.6" of 6.8 and 6.17 kernels
/// whose /proc/sys was only not captured.
#[test]
fn absent_io_uring_sysctl_is_judged_by_the_release() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &Profile::default(), &only(&["URING001"]));
    // The GB10 capture has no /proc/sys; /proc/version reads
    // `Linux version 6.17.0-1014-nvidia`, a kernel that has the sysctl.
    let uring = &findings(&report, "URING001")[0];
    assert_eq!(uring.status, Status::Unknown, "{}", uring.message);
    assert!(!uring.message.contains("predates"), "{}", uring.message);
    assert_eq!(evidence(uring, "/proc/version"), Some("6.17.0-1014-nvidia"));
    assert_eq!(
        evidence(uring, "/proc/sys/kernel/io_uring_disabled"),
        Some("<missing>")
    );

    // The POWER9 snapshot's /proc/version reads `Linux version
    // 4.14.0-49.el7a…`: older than 6.6, so there is no switch to read.
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &Profile::default(), &only(&["URING001"]));
    let uring = &findings(&report, "URING001")[0];
    assert_eq!(uring.status, Status::Info);
    assert!(uring.message.contains("predates"), "{}", uring.message);
}

/// Defect 7: a flapping link passed: `counters/link_downed` saturated at
/// 255 on the H100 InfiniBand capture.
#[test]
fn saturated_link_downed_fails_the_port() {
    let Some(corpus) = corpus() else { return };
    let root = support::scratch();
    copy_tree(
        &corpus.join("sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0"),
        &root.path().join("sys/class/infiniband"),
    );
    let report = doctor_with(
        root.path(),
        &Profile::default(),
        &only(&["RDMA004", "RDMA008"]),
    );
    // Every port reads `4: ACTIVE` / `5: LinkUp`: the state alone passes.
    assert_eq!(statuses(&report, "RDMA004"), vec![Status::Pass; 9]);
    let ports = findings(&report, "RDMA008");
    assert_eq!(ports.len(), 9);
    // mlx5_1's ports/1/counters/link_downed reads 255, the most its 8 bits
    // hold: the link went down at least 255 times and no more are counted.
    let flapping = ports.iter().find(|f| f.subject == "mlx5_1/1").unwrap();
    assert_eq!(flapping.status, Status::Fail);
    assert!(
        flapping.message.contains("link_downed saturated at 255"),
        "{}",
        flapping.message
    );
    assert_eq!(
        evidence(
            flapping,
            "/sys/class/infiniband/mlx5_1/ports/1/counters/link_downed"
        ),
        Some("255")
    );
    assert!(
        commands(flapping)
            .iter()
            .any(|c| c.starts_with("mlxlink -d mlx5_1"))
    );
    // Every port's excessive_buffer_overrun_errors reads 15 (its 4 bits
    // full) and port_rcv_errors 14: counted trouble, a warning on each of
    // the others, saturation shown as "at least".
    for port in ports.iter().filter(|f| f.subject != "mlx5_1/1") {
        assert_eq!(port.status, Status::Warn, "{}", port.subject);
        assert!(
            port.message
                .contains("excessive_buffer_overrun_errors at least 15 (saturated)"),
            "{}",
            port.message
        );
        assert!(
            port.message.contains("port_rcv_errors 14"),
            "{}",
            port.message
        );
    }
    // The bond is RoCE (link_layer Ethernet) with hw_counters all zero but
    // roce_adp_retrans 3 and the rx counters: no loss, no ignored CNP.
    let bond = ports.iter().find(|f| f.subject == "mlx5_bond_0/1").unwrap();
    assert!(!bond.message.contains("lossless"), "{}", bond.message);
    assert!(!bond.message.contains("cnp"), "{}", bond.message);
}

/// Defect 11: RDMA counted as unwanted on an NFS-over-RDMA client.
#[test]
fn nfs_over_rdma_client_wants_rdma() {
    let Some(corpus) = corpus() else { return };
    let root = support::scratch();
    // The client's `lsmod` (rpcrdma, rdma_cm, mlx5_ib, ib_core, mlx5_core…)
    // as /proc/modules, and an NFSv3 mount with 16 `xprt: rdma` transports.
    let lsmod =
        fs::read_to_string(corpus.join("lsmod_rpcrdma_mlx5_nfs_rdma_client_mikekatana.txt"))
            .unwrap();
    write(
        root.path(),
        "proc/modules",
        &proc_modules_from_lsmod(&lsmod),
    );
    place(
        root.path(),
        &corpus,
        "proc_self_mountstats_nfs3_proto_rdma_nconnect16.txt",
        "proc/self/mountstats",
    );
    let report = doctor_with(
        root.path(),
        &Profile::default(),
        &only(&["RDMA001", "GPU003"]),
    );
    // Neither /sys/class/infiniband nor a PCI tree is captured, but the
    // mount runs over RDMA: RDMA is wanted and the chain is judged.
    let chain = &findings(&report, "RDMA001")[0];
    assert_eq!(chain.status, Status::Pass, "{}", chain.message);
    // lsmod lists mlx5_core, ib_core, mlx5_ib, ib_uverbs, rdma_cm, rdma_ucm.
    assert!(
        chain
            .message
            .starts_with("mlx5_core, ib_core, mlx5_ib, ib_uverbs, rdma_cm, rdma_ucm loaded"),
        "{}",
        chain.message
    );
    assert!(
        chain.message.contains("nfs mount <mountpoint> over rdma"),
        "{}",
        chain.message
    );
    // GPU003 no longer says RDMA is not wanted: the capture has no GPU.
    let gpu = &findings(&report, "GPU003")[0];
    assert!(!gpu.message.contains("not wanted"), "{}", gpu.message);
    assert_eq!(gpu.message, "no nvidia gpu");

    // The modules alone say so too: without the mount, rpcrdma and mlx5_ib
    // are loaded only to run RDMA.
    fs::remove_file(root.path().join("proc/self/mountstats")).unwrap();
    let report = doctor_with(root.path(), &Profile::default(), &only(&["RDMA001"]));
    let chain = &findings(&report, "RDMA001")[0];
    assert_eq!(chain.status, Status::Pass);
    assert!(
        chain.message.contains("module mlx5_ib loaded"),
        "{}",
        chain.message
    );
}

/// Defect 14: `cufile.json` values were not judged by their type and range.
#[test]
fn cufile_values_are_judged_by_type_and_range() {
    let Some(corpus) = corpus() else { return };
    let gdscheck =
        fs::read_to_string(corpus.join("stelline_validated_hardware/puget-wrx90__gdscheck_p.txt"))
            .unwrap();
    // The 33 settings GDS 1.14 printed on the Puget host, as the JSON it read.
    let real = cufile_from_gdscheck(&gdscheck);
    let root = support::scratch();
    write(root.path(), "proc/.keep", "");
    let judge = |document: &Value| {
        write(root.path(), "etc/cufile.json", &document.to_string());
        doctor_with(root.path(), &Profile::default(), &only(&["GDS002"]))
    };
    let report = judge(&real);
    // Every printed value has its key's type and range: cufile_stats 0 is a
    // level from 0 to 3, and the POSIX pool's 3 sizes (4 1024 16384) pair
    // with its 3 counts (128 64 64).
    assert_eq!(statuses(&report, "GDS002"), vec![Status::Pass]);

    // The same file with `"logging": {"level": 2}`, cufile_stats 4 and a
    // count dropped from the pool: each is named.
    let mut wrong = real.clone();
    wrong["logging"] = serde_json::json!({"level": 2});
    wrong["profile"]["cufile_stats"] = Value::from(4);
    wrong["properties"]["posix_pool_slab_count"] = serde_json::json!([128, 64]);
    let report = judge(&wrong);
    let gds002 = &findings(&report, "GDS002")[0];
    assert_eq!(gds002.status, Status::Warn);
    for said in [
        "`logging.level` should be a string",
        "`profile.cufile_stats` is 4, not from 0 to 3",
        "`properties.posix_pool_slab_count` has 2 items but `properties.posix_pool_slab_size_kb` has 3",
    ] {
        assert!(gds002.message.contains(said), "{said}: {}", gds002.message);
    }
}

/// Defect 15: NVME004 said "kernel without native multipath" beside an
/// NVME001 pass on a `nvme<S>c<C>n<N>` path device.
#[test]
fn missing_iopolicy_names_the_missing_file() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("libnvme_sysfs_tree_pcie_multipath.tar.xz"));
    let root = dir.path();
    // The capture without nvme-subsys1's iopolicy file, as a partial
    // capture (or a tool that skipped it) leaves it.
    let iopolicy = root.join("sys/class/nvme-subsystem/nvme-subsys1/iopolicy");
    let real = fs::canonicalize(&iopolicy).unwrap();
    fs::remove_file(real).unwrap();
    let report = doctor_with(root, &Profile::default(), &only(&["NVME001", "NVME004"]));
    // The path device nvme1c1n1 shows native multipath on.
    assert_eq!(statuses(&report, "NVME001"), vec![Status::Pass]);
    let policy = &findings(&report, "NVME004")[0];
    assert_eq!(policy.status, Status::Unknown);
    assert!(
        !policy.message.contains("kernel without"),
        "{}",
        policy.message
    );
    assert!(
        policy
            .message
            .contains("native multipath is on (path device nvme1c1n1"),
        "{}",
        policy.message
    );
    // The evidence names the files that were missing.
    assert_eq!(
        evidence(policy, "/sys/class/nvme-subsystem/nvme-subsys1/iopolicy"),
        Some("<missing>")
    );
    assert_eq!(
        evidence(policy, "/sys/module/nvme_core/parameters/iopolicy"),
        Some("<missing>")
    );
}

/// Defect 16: a declared data mount that is not mounted passed as its
/// parent (`--mount /does/not/exist` fell back to `/`).
#[test]
fn declared_data_mounts_must_be_mounted() {
    let Some(corpus) = corpus() else { return };
    let root = support::scratch();
    place(
        root.path(),
        &corpus,
        "proc_10_mountinfo_node_exporter.txt",
        "proc/self/mountinfo",
    );
    let profile = Profile {
        mounts: vec!["/does/not/exist".to_owned()],
        gds: Some(true),
        ..Profile::default()
    };
    let report = doctor_with(
        root.path(),
        &profile,
        &only(&["NFS007", "GDS005", "NVME006", "NFS001"]),
    );
    // Only `/` (ext4 /dev/sda1) holds the path: not a data mount.
    let missing = &findings(&report, "NFS007")[0];
    assert_eq!(missing.status, Status::Fail);
    assert!(
        missing
            .message
            .contains("root file system (ext4 /dev/sda1)"),
        "{}",
        missing.message
    );
    assert!(missing.remediation.is_some());
    // GDS005 no longer passes ext4 on /dev/sda1: it waits for the mount.
    for id in ["GDS005", "NVME006", "NFS001"] {
        assert_eq!(statuses(&report, id), vec![Status::Blocked], "{id}");
    }

    // A declared NFS-over-RDMA mount point that is in /etc/fstab but not
    // mounted, on the containerised GPU node of the gpud capture (its `/`
    // is ext4 on /dev/mapper/vgroot-lvroot).
    let root = support::scratch();
    place(
        root.path(),
        &corpus,
        "proc_self_mountinfo_gpu_node_gpud.txt",
        "proc/self/mountinfo",
    );
    write(
        root.path(),
        "etc/fstab",
        "storage:/datasets /mnt/datasets nfs proto=rdma,port=20049,nconnect=16,_netdev 0 0\n",
    );
    let profile = Profile {
        mounts: vec!["/mnt/datasets".to_owned()],
        ..Profile::default()
    };
    let report = doctor_with(root.path(), &profile, &only(&["NFS007", "NFS001"]));
    let missing = &findings(&report, "NFS007")[0];
    assert_eq!(missing.status, Status::Fail);
    assert!(
        missing.message.contains(
            "/etc/fstab mounts nfs storage:/datasets at /mnt/datasets, but it is not mounted"
        ),
        "{}",
        missing.message
    );
    assert!(
        missing.message.contains("ext4 /dev/mapper/vgroot-lvroot"),
        "{}",
        missing.message
    );
    // The fstab line asks for RDMA: rpcrdma comes first in the fix.
    assert_eq!(
        commands(missing)[0],
        "modprobe rpcrdma   # nfs over rdma needs it before mounting"
    );
    assert_eq!(statuses(&report, "NFS001"), vec![Status::Blocked]);
}

/// Defect 17: GDS005 passed any ext4/XFS on any device.
#[test]
fn gds_filesystem_follows_the_mount_to_its_disk() {
    let Some(corpus) = corpus() else { return };
    let expect_gds = |mount: &str| Profile {
        mounts: vec![mount.to_owned()],
        gds: Some(true),
        ..Profile::default()
    };
    // The ghw VM snapshot: / is ext4 on /dev/root (/proc/self/mounts), and
    // /sys/block holds only sda, behind virtio-scsi: no NVMe disk at all.
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let report = doctor_with(dir.path(), &expect_gds("/"), &only(&["GDS005"]));
    let gds = &findings(&report, "GDS005")[0];
    assert_eq!(gds.status, Status::Fail, "{}", gds.message);
    assert!(
        gds.message.contains("this host has no nvme disk"),
        "{}",
        gds.message
    );
    assert_eq!(evidence(gds, "/sys/block"), Some("sda"));

    // The libnvme tree with an xfs mount on its namespace head nvme1n1:
    // nvme-subsys1's controllers nvme1 and nvme2 read transport `pcie`.
    let dir = untar(&corpus.join("libnvme_sysfs_tree_pcie_multipath.tar.xz"));
    write(
        dir.path(),
        "proc/self/mountinfo",
        "21 0 8:1 / / rw - ext4 /dev/sda1 rw\n60 21 259:4 / /data rw - xfs /dev/nvme1n1 rw\n",
    );
    let report = doctor_with(dir.path(), &expect_gds("/data"), &only(&["GDS005"]));
    let gds = &findings(&report, "GDS005")[0];
    assert_eq!(gds.status, Status::Pass, "{}", gds.message);
    assert_eq!(gds.message, "xfs on nvme nvme1n1 over pcie");

    // The GB10: / is ext4 on /dev/nvme0n1p2, an NVMe namespace by its
    // name, but the capture has no /sys/class/nvme-subsystem to say over
    // which transport: unknown, not a pass.
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &expect_gds("/"), &only(&["GDS005"]));
    let gds = &findings(&report, "GDS005")[0];
    assert_eq!(gds.status, Status::Unknown, "{}", gds.message);
    assert!(
        gds.message.contains("nvme namespace nvme0n1p2"),
        "{}",
        gds.message
    );
    assert_eq!(
        evidence(gds, "/sys/class/nvme-subsystem"),
        Some("<missing>")
    );
}

/// Defect 18: KRN001's fix said `iommu=pt` on Arm, which arm64 ignores.
#[test]
fn iommu_fix_fits_the_architecture() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    let report = doctor_with(&root, &Profile::default(), &only(&["KRN001"]));
    let krn001 = &findings(&report, "KRN001")[0];
    // /proc/cpuinfo reads `CPU implementer : 0x41` (Arm).
    assert_eq!(evidence(krn001, "/proc/cpuinfo"), Some("arm"));
    let fix = commands(krn001);
    assert_eq!(
        fix[0],
        "grubby --update-kernel=ALL --args=iommu.passthrough=1   # RHEL, then reboot"
    );
    assert!(fix.iter().all(|c| !c.contains("iommu=pt")), "{fix:?}");

    // The Icelake command line (`intel_iommu=on iommu=pt`) passes: x86
    // takes iommu=pt.
    let root = support::scratch();
    place(
        root.path(),
        &corpus,
        "proc_cmdline_icelake_intel_iommu_on_iommu_pt_hugepages_csit.txt",
        "proc/cmdline",
    );
    let report = doctor_with(root.path(), &Profile::default(), &only(&["KRN001"]));
    assert_eq!(statuses(&report, "KRN001"), vec![Status::Pass]);
}

/// Defect 19: `--expect-gds true` on a host without a GPU was silently
/// not applicable.
#[test]
fn gds_expected_without_a_gpu_fails() {
    let Some(corpus) = corpus() else { return };
    let profile = Profile {
        gds: Some(true),
        ..Profile::default()
    };
    // The ghw laptop snapshot: 23 PCI functions, none of vendor 10de.
    let dir =
        untar(&corpus.join("ghw_snapshot_linux-amd64-415ee03b8c4d1c4f07ae2e9d8b3d3d6d.tar.gz"));
    let report = doctor_with(dir.path(), &profile, &only(&["GDS007"]));
    let gds = &findings(&report, "GDS007")[0];
    assert_eq!(gds.status, Status::Fail);
    assert!(gds.message.contains("no nvidia gpu"), "{}", gds.message);
    assert_eq!(
        evidence(gds, "/sys/bus/pci/devices"),
        Some("23 function(s), no nvidia gpu")
    );

    // The ghw VM snapshot has 10de:15f8 at 0000:06:00.0.
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let report = doctor_with(dir.path(), &profile, &only(&["GDS007"]));
    assert_eq!(statuses(&report, "GDS007"), vec![Status::Pass]);

    // The GB10 snapshot has neither /sys/bus/pci/devices nor the driver's
    // list: nothing says there is no GPU.
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let report = doctor_with(&machine(dir.path()), &profile, &only(&["GDS007"]));
    assert_eq!(statuses(&report, "GDS007"), vec![Status::Unknown]);
}

/// Defect 20: KRN002's fix suggested more 1 GiB pages than the machine
/// has memory.
#[test]
fn hugepage_suggestions_fit_the_memory() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidia-dgx-gb10.tar.bz2"));
    let root = machine(dir.path());
    // Asked for 200 pages per node on the GB10, whose one node's meminfo
    // reads `Node 0 MemTotal: 125508468 kB` (119.7 GiB).
    let profile = Profile {
        hugepages_1g_per_node: Some(200),
        ..Profile::default()
    };
    let report = doctor_with(&root, &profile, &only(&["KRN002", "MEM001"]));
    let krn002 = &findings(&report, "KRN002")[0];
    // The command line asks for no 1 GiB pages: the expectation fails.
    assert_eq!(krn002.status, Status::Fail);
    assert_eq!(
        evidence(krn002, "/sys/devices/system/node/node*/meminfo"),
        Some("MemTotal node0 119.7 GiB")
    );
    // The fix reserves half of the node, 59 pages, not 200.
    assert_eq!(
        commands(krn002)[0],
        "grubby --update-kernel=ALL '--args=default_hugepagesz=1G hugepagesz=1G hugepages=59'   # then reboot"
    );
    // MEM001 does not tell the node to reserve 200 pages it cannot hold.
    let mem001 = &findings(&report, "MEM001")[0];
    assert_eq!(mem001.status, Status::Fail);
    let remediation = mem001.remediation.as_ref().unwrap();
    assert!(
        remediation.summary.contains("do not fit"),
        "{}",
        remediation.summary
    );
    assert!(
        remediation.commands.is_empty(),
        "{:?}",
        remediation.commands
    );
}

/// The `cufile.json` the Puget host's GDS 1.14 read (its 33 settings, as
/// `gdscheck -p` printed them): valid (GDS001), not forcing compat mode
/// (GDS003), and with no RDMA devices configured (`rdma devices : Not
/// configured`), so no address to judge (GDS004).
#[test]
fn puget_cufile_json_is_valid_and_not_forced_to_compat() {
    let Some(corpus) = corpus() else { return };
    let gdscheck =
        fs::read_to_string(corpus.join("stelline_validated_hardware/puget-wrx90__gdscheck_p.txt"))
            .unwrap();
    let real = cufile_from_gdscheck(&gdscheck);
    let root = support::scratch();
    write(
        root.path(),
        "etc/cufile.json",
        &serde_json::to_string_pretty(&real).unwrap(),
    );
    let report = doctor_with(
        root.path(),
        &Profile::default(),
        &only(&["GDS001", "GDS003", "GDS004"]),
    );
    assert_eq!(statuses(&report, "GDS001"), vec![Status::Pass]);
    assert_eq!(statuses(&report, "GDS003"), vec![Status::Pass]);
    assert_eq!(statuses(&report, "GDS004"), vec![Status::NotApplicable]);
}

/// The NFS-over-RDMA client's own `lsmod` lists `rpcrdma` (used by 2):
/// with its mount over 16 RDMA transports, NFS005 passes.
#[test]
fn nfs_over_rdma_client_has_rpcrdma() {
    let Some(corpus) = corpus() else { return };
    let root = support::scratch();
    let lsmod =
        fs::read_to_string(corpus.join("lsmod_rpcrdma_mlx5_nfs_rdma_client_mikekatana.txt"))
            .unwrap();
    write(
        root.path(),
        "proc/modules",
        &proc_modules_from_lsmod(&lsmod),
    );
    place(
        root.path(),
        &corpus,
        "proc_self_mountstats_nfs3_proto_rdma_nconnect16.txt",
        "proc/self/mountstats",
    );
    let report = doctor_with(root.path(), &Profile::default(), &only(&["NFS005"]));
    let finding = &findings(&report, "NFS005")[0];
    assert_eq!(finding.status, Status::Pass, "{}", finding.message);
    assert_eq!(finding.message, "rpcrdma loaded");
}
