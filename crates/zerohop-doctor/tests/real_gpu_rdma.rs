//! The GPU, RDMA and kernel-log checks on real captures: the shared
//! corpus (`../shared/corpus`, see its SOURCES.md) and the public
//! captures trimmed into `tests/captures` (see its SOURCES.md). Each test
//! is a verdict that once rested on a premise of our own; every assertion
//! says what in the data justifies it.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::{Finding, Status};
use zerohop_doctor::profile::GpuDirect;
use zerohop_doctor::{Profile, Selection};

use support::builder::{self, Host};
use support::{
    copy_tree, corpus, doctor_with, evidence, findings, only, proc_modules_from_lsmod, untar,
    unttar, write,
};

/// A public capture of `tests/captures`.
fn capture(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captures");
    fs::read_to_string(dir.join(name)).unwrap()
}

/// The NFS-over-RDMA client's `lsmod` (mikekatana), its lines by module.
fn nfs_client_lsmod(corpus: &Path) -> String {
    fs::read_to_string(corpus.join("lsmod_rpcrdma_mlx5_nfs_rdma_client_mikekatana.txt")).unwrap()
}

/// A GPU host with the RDMA stack: the ghw snapshot's GPU (0000:06:00.0,
/// bound to `nvidia`), the NFS/RDMA client's full mlx5 module list
/// (mikekatana) and the GPU Operator documentation's `lsmod | grep`
/// lines of the NVIDIA modules (`nvidia_peermem 16384 0`, used by no
/// module, and an `ib_core` whose users do not name it). Two real hosts'
/// listings, each as captured; the docs' `ib_core` line replaces the
/// client's.
fn gpu_host_with_peermem(corpus: &Path, peermem: bool) -> tempfile::TempDir {
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let docs = fs::read_to_string(
        corpus.join("lsmod_grep_nvidia_peermem_nvidia_fs_gpu-operator-docs.txt"),
    )
    .unwrap();
    let client = nfs_client_lsmod(corpus);
    let mut lines: Vec<&str> = client
        .lines()
        .filter(|l| !l.starts_with("ib_core "))
        .collect();
    lines.extend(
        docs.lines()
            .filter(|l| peermem || !l.trim_start().starts_with("nvidia_peermem ")),
    );
    write(
        dir.path(),
        "proc/modules",
        &proc_modules_from_lsmod(&lines.join(
            "
",
        )),
    );
    write(
        dir.path(),
        "proc/sys/kernel/osrelease",
        "5.4.0-150-generic\n",
    );
    dir
}

/// Issue item 1: GPU003 failed "nvidia_peermem loaded but not among
/// ib_core's users" on a healthy host. The module's `module_init`
/// (`nv_mem_client_init()` in `nvidia-peermem.c`) returns an error unless
/// `ib_register_peer_memory_client()` succeeds, and a module whose init
/// fails is unloaded: a listed module registered.
#[test]
fn gpu_operator_lsmod_peermem_is_registered() {
    let Some(corpus) = corpus() else { return };
    let dir = gpu_host_with_peermem(&corpus, true);
    let profile = Profile {
        gpudirect: Some(GpuDirect::Peermem),
        ..Profile::default()
    };
    let report = doctor_with(dir.path(), &profile, &only(&["RDMA001", "GPU003"]));
    // The mlx5 stack with ib_uverbs and rdma_ucm is loaded: the chain passes.
    let chain = &findings(&report, "RDMA001")[0];
    assert_eq!(chain.status, Status::Pass, "{}", chain.message);
    let gpu003 = findings(&report, "GPU003");
    assert_eq!(gpu003.len(), 1);
    // The docs' `ib_core ... 9 rdma_cm,ib_ipoib,iw_cm,ib_umad,rdma_ucm,
    // ib_uverbs,mlx5_ib,ib_cm` does not name nvidia_peermem; it is listed,
    // so it is live and registered.
    assert_eq!(gpu003[0].status, Status::Pass, "{:#?}", gpu003[0]);
    assert!(
        gpu003[0].message.contains("registered"),
        "{}",
        gpu003[0].message
    );
    assert_eq!(
        evidence(gpu003[0], "/proc/modules"),
        Some("nvidia_peermem: Live")
    );
    // No memory_peers directory in the capture: shown, not required.
    assert_eq!(
        evidence(gpu003[0], "/sys/kernel/mm/memory_peers"),
        Some("<missing>")
    );

    // The registered client in memory_peers is shown when present, named
    // as nvidia-peermem.c names it (`DRV_NAME "nv_mem"`).
    write(
        dir.path(),
        "sys/kernel/mm/memory_peers/nv_mem/version",
        "550.90.07\n",
    );
    let report = doctor_with(dir.path(), &profile, &only(&["GPU003"]));
    let gpu003 = &findings(&report, "GPU003")[0];
    assert_eq!(gpu003.status, Status::Pass);
    assert!(
        gpu003.message.contains("client nv_mem"),
        "{}",
        gpu003.message
    );
    assert_eq!(
        evidence(gpu003, "/sys/kernel/mm/memory_peers/nv_mem/version"),
        Some("550.90.07")
    );
}

/// Issue items 1 and 7: without the module, the kernel log's lines of its
/// load failing are the evidence: the legacy `nv_peer_mem` refused with
/// `Unknown symbol ib_register_peer_memory_client` (Mellanox/nv_peer_memory
/// issue 84).
#[test]
fn a_failed_peermem_load_in_the_log_is_the_reason_gpu003_fails() {
    let Some(corpus) = corpus() else { return };
    let dir = gpu_host_with_peermem(&corpus, false);
    write(
        dir.path(),
        "var/log/zerohop/kmsg",
        &capture("dmesg_nv_peer_mem_unknown_symbol.txt"),
    );
    let profile = Profile {
        gpudirect: Some(GpuDirect::Peermem),
        ..Profile::default()
    };
    let report = doctor_with(dir.path(), &profile, &only(&["GPU003"]));
    let gpu003 = &findings(&report, "GPU003")[0];
    assert_eq!(gpu003.status, Status::Fail);
    assert!(
        gpu003.message.contains("failing to load or register"),
        "{}",
        gpu003.message
    );
    // The two `ib_register_peer_memory_client` refusals are quoted (the
    // `ib_unregister…` ones too: each is the loader refusing the module).
    let quoted: Vec<&str> = gpu003
        .evidence
        .iter()
        .filter(|e| e.source.starts_with("/var/log/zerohop/kmsg"))
        .map(|e| e.value.as_str())
        .collect();
    assert_eq!(quoted.len(), 4, "{quoted:?}");
    assert!(quoted[0].contains("nv_peer_mem: Unknown symbol ib_register_peer_memory_client"));
}

/// Issue item 7: KLOG001 missed the legacy module's load failure.
#[test]
fn legacy_nv_peer_mem_load_failure_is_read() {
    let root = support::scratch();
    write(
        root.path(),
        "var/log/zerohop/kmsg",
        &capture("dmesg_nv_peer_mem_unknown_symbol.txt"),
    );
    let report = doctor_with(root.path(), &Profile::default(), &only(&["KLOG001"]));
    let klog = &findings(&report, "KLOG001")[0];
    assert_eq!(klog.status, Status::Fail, "{klog:#?}");
    // Four `nv_peer_mem: Unknown symbol …` lines, two minutes apart, all
    // within the day before the capture's last line.
    assert!(
        klog.message
            .starts_with("nv_peer_mem failed to load or to register"),
        "{}",
        klog.message
    );
    assert!(klog.message.contains("4 failures"), "{}", klog.message);
    assert!(
        klog.remediation
            .as_ref()
            .unwrap()
            .commands
            .iter()
            .any(|c| c.starts_with("modprobe -r nv_peer_mem;")),
        "{:?}",
        klog.remediation
    );
}

/// Issue item 2: RDMA001 demanded `ib_uverbs`/`rdma_ucm` because an NFS
/// mount runs over RDMA. `rpcrdma` needs `ib_core` and `rdma_cm`
/// (`SUNRPC_XPRT_RDMA` depends on `INFINIBAND && INFINIBAND_ADDR_TRANS`),
/// as the client's own `lsmod` shows: `rpcrdma` among the users of
/// `rdma_cm`, `ib_core` and `sunrpc`, of no user-space module.
#[test]
fn nfs_over_rdma_needs_no_user_space_verbs() {
    let Some(corpus) = corpus() else { return };
    let lsmod = nfs_client_lsmod(&corpus);
    // rpcrdma's line: used by 2 (the mount's transports), using nothing
    // but what the users of rdma_cm, ib_core and sunrpc name.
    assert!(
        lsmod
            .lines()
            .any(|l| l.starts_with("rdma_cm ") && l.contains("rpcrdma"))
    );
    assert!(
        lsmod
            .lines()
            .any(|l| l.starts_with("ib_uverbs ") && !l.contains("rpcrdma"))
    );
    // The same client without rdma_ucm (which only librdmacm opens): its
    // line removed, and the two users lists that name it.
    let without: Vec<String> = lsmod
        .lines()
        .filter(|l| !l.starts_with("rdma_ucm "))
        .map(|l| l.replace("rdma_ucm,", "").replace(",rdma_ucm", ""))
        .collect();
    let lines: Vec<&str> = without.iter().map(String::as_str).collect();
    let root = support::scratch();
    write(
        root.path(),
        "proc/modules",
        &proc_modules_from_lsmod(&lines.join(
            "
",
        )),
    );
    fs::copy(
        corpus.join("proc_self_mountstats_nfs3_proto_rdma_nconnect16.txt"),
        {
            let path = root.path().join("proc/self/mountstats");
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            path
        },
    )
    .unwrap();
    let report = doctor_with(root.path(), &Profile::default(), &only(&["RDMA001"]));
    let chain = &findings(&report, "RDMA001")[0];
    assert_eq!(chain.status, Status::Pass, "{}", chain.message);
    assert!(
        chain.message.contains("nfs mount <mountpoint> over rdma"),
        "{}",
        chain.message
    );
    assert!(
        chain.message.contains("rdma_ucm not required"),
        "{}",
        chain.message
    );
    // Where user space wants RDMA (a GPUDirect RDMA path), rdma_ucm is
    // required again, and its absence fails as the root cause.
    let profile = Profile {
        gpudirect: Some(GpuDirect::DmaBuf),
        ..Profile::default()
    };
    let report = doctor_with(root.path(), &profile, &only(&["RDMA001"]));
    let chain = &findings(&report, "RDMA001")[0];
    assert_eq!(chain.status, Status::Fail);
    assert_eq!(chain.subject, "rdma_ucm");
}

/// The H100 node of gpud's HGX capture (`lspci -vvv`), with the PCI
/// functions where the bridges' bus numbers put them.
fn hgx_h100(corpus: &Path) -> Host {
    let text = fs::read_to_string(corpus.join("lspci_vvv_full_hgx_h100_8xcx7_gpud.txt")).unwrap();
    let functions = builder::lspci_vvv(&text);
    let tree = builder::tree_from_buses(&functions);
    let mut host = Host::new();
    for function in &functions {
        host.function(&tree[&function.address], function);
    }
    host
}

/// Issue item 17: GPU faults in the kernel log. GPUd's capture of an H100
/// node: three Xid 13 (graphics engine exception, `RESTART_APP`) and an
/// Xid 109 (context switch timeout, `RESET_GPU`) on `PCI:0000:cb:00`, the
/// H100 at `cb:00.0` of gpud's HGX `lspci`.
#[test]
fn gpud_xid_capture_needs_a_gpu_reset() {
    let Some(corpus) = corpus() else { return };
    let host = hgx_h100(&corpus);
    host.file(
        "/var/log/zerohop/kmsg",
        capture("xid_dmesg_ctime_gpud.txt").trim_end(),
    );
    let report = doctor_with(host.path(), &Profile::default(), &only(&["KLOG006"]));
    let xids = findings(&report, "KLOG006");
    assert_eq!(xids.len(), 1, "{xids:#?}");
    let gpu = xids[0];
    // The driver's `0000:cb:00` is the function 0000:cb:00.0 (10de:2330).
    assert_eq!(gpu.subject, "0000:cb:00.0");
    assert_eq!(gpu.status, Status::Fail, "{}", gpu.message);
    assert!(
        gpu.message
            .contains("xid 13 x3 (graphics engine exception: restart the application)"),
        "{}",
        gpu.message
    );
    assert!(
        gpu.message
            .contains("xid 109 (context switch timeout error: reset the gpu)"),
        "{}",
        gpu.message
    );
    assert!(gpu.message.contains("drain it"), "{}", gpu.message);
    let fix = gpu.remediation.as_ref().unwrap();
    assert!(
        fix.commands
            .iter()
            .any(|c| c == "nvidia-smi -r -i 0000:cb:00.0")
    );
    // The four Xid lines are the evidence; the peermem line is not.
    let lines = gpu
        .evidence
        .iter()
        .filter(|e| e.value.contains("NVRM: Xid"))
        .count();
    assert_eq!(lines, 4);

    // The same node's page fault (Xid 31, `RESTART_APP`): the job's
    // fault, a warning; the GPU recovers by itself.
    host.file(
        "/var/log/zerohop/kmsg",
        capture("xid_dmesg_ctime_app_fault_gpud.txt").trim_end(),
    );
    let report = doctor_with(host.path(), &Profile::default(), &only(&["KLOG006"]));
    let gpu = &findings(&report, "KLOG006")[0];
    assert_eq!(gpu.status, Status::Warn, "{}", gpu.message);
    assert!(
        gpu.message.contains("xid 31 (gpu memory page fault"),
        "{}",
        gpu.message
    );
}

/// Issue item 17: Xid 79, the GPU fell off the bus (NVSentinel issue
/// 155): only a reboot brings it back. Without a PCI tree the GPU is
/// named as the driver wrote it.
#[test]
fn a_gpu_fallen_off_the_bus_needs_a_reboot() {
    let root = support::scratch();
    write(
        root.path(),
        "var/log/zerohop/kmsg",
        &capture("xid79_nvsentinel.txt"),
    );
    let report = doctor_with(root.path(), &Profile::default(), &only(&["KLOG006"]));
    let gpu = &findings(&report, "KLOG006")[0];
    assert_eq!(gpu.status, Status::Fail);
    assert_eq!(gpu.subject, "0000:44:00");
    assert!(
        gpu.message
            .contains("xid 79 (gpu has fallen off the bus: reboot the node)"),
        "{}",
        gpu.message
    );
    assert!(
        gpu.remediation
            .as_ref()
            .unwrap()
            .commands
            .iter()
            .any(|c| c == "systemctl reboot")
    );
}

/// Issue item 10: RDMA008 passed "no error counted in 0 counters" when
/// every counter read `N/A (no PMA)` (node_exporter's i40iw0 capture).
#[test]
fn counters_without_a_pma_are_unknown() {
    let Some(corpus) = corpus() else { return };
    let dir = unttar(&corpus.join("node_exporter_sys.ttar"));
    let report = doctor_with(dir.path(), &Profile::default(), &only(&["RDMA008"]));
    let i40iw = findings(&report, "RDMA008")
        .into_iter()
        .find(|f| f.subject == "i40iw0/1")
        .expect("i40iw0 port 1");
    assert_eq!(i40iw.status, Status::Unknown, "{}", i40iw.message);
    assert!(i40iw.message.contains("N/A (no PMA)"), "{}", i40iw.message);
    let unreadable = evidence(i40iw, "/sys/class/infiniband/i40iw0/ports/1/counters").unwrap();
    assert!(unreadable.contains("port_xmit_discards"), "{unreadable}");
    assert!(unreadable.contains("VL15_dropped"), "{unreadable}");
}

/// Issue item 10: the counters `ibqueryerrors` judges by default, but not
/// the one `--suppress-common` suppresses: every port of GPUd's healthy
/// H100 capture counts `port_rcv_switch_relay_errors` (1 or 2), and none
/// of them is reported for it.
#[test]
fn switch_relay_errors_are_not_judged() {
    let Some(corpus) = corpus() else { return };
    let root = support::scratch();
    let from = corpus.join("sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0");
    copy_tree(&from, &root.path().join("sys/class/infiniband"));
    let relay =
        fs::read_to_string(from.join("mlx5_0/ports/1/counters/port_rcv_switch_relay_errors"))
            .unwrap();
    assert_ne!(relay.trim().trim_start_matches('0'), "");
    let report = doctor_with(root.path(), &Profile::default(), &only(&["RDMA008"]));
    for port in findings(&report, "RDMA008") {
        assert!(!port.message.contains("relay"), "{}", port.message);
        // port_xmit_discards, the constraint errors and VL15_dropped all
        // read 0 on this capture: nothing new is reported.
        assert!(!port.message.contains("discards"), "{}", port.message);
    }
}

/// Issue item 9: a root without a kernel-log capture and without a boot
/// id was said to be "not the running kernel's (its boot id differs)",
/// shown as `<unreadable>`. The ghw snapshot has neither.
#[test]
fn a_root_without_a_log_or_a_boot_id_says_which_gap() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    assert!(!dir.path().join("proc/sys/kernel/random/boot_id").exists());
    let report = doctor_with(
        dir.path(),
        &Profile::default(),
        &Selection::parse(["kernel-log"]).unwrap(),
    );
    let klog = findings(&report, "KLOG001");
    assert_eq!(klog.len(), 1);
    assert_eq!(klog[0].status, Status::Unknown);
    assert!(
        klog[0].message.contains("no boot id"),
        "{}",
        klog[0].message
    );
    assert!(!klog[0].message.contains("differs"), "{}", klog[0].message);
    assert_eq!(
        evidence(klog[0], "/var/log/zerohop/kmsg"),
        Some("<missing>")
    );
    // Every kernel-log check says the same, KLOG006 included.
    for id in ["KLOG002", "KLOG003", "KLOG004", "KLOG005", "KLOG006"] {
        let finding = &findings(&report, id)[0];
        assert_eq!(finding.status, Status::Unknown, "{id}");
        assert_eq!(
            evidence(finding, "/var/log/zerohop/kmsg"),
            Some("<missing>"),
            "{id}"
        );
    }
}

/// Issue items 11 and 12: hwloc's capture of a POWER host whose six
/// class-0x0300 functions have no `vendor` file, while the driver lists
/// six GPUs in `/proc/driver/nvidia/gpus`. GPU001 counts them; GPU005
/// said "no nvidia gpu on the pci bus".
#[test]
fn gpus_the_driver_lists_are_not_called_absent() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2"));
    let root = fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let report = doctor_with(
        &root,
        &Profile::default(),
        &Selection::parse(["gpu"]).unwrap(),
    );
    let gpu001 = findings(&report, "GPU001");
    assert_eq!(gpu001.len(), 1);
    assert_eq!(gpu001[0].status, Status::Pass);
    assert!(
        gpu001[0].message.contains("lists 6 gpu(s)"),
        "{}",
        gpu001[0].message
    );
    let gpu005 = &findings(&report, "GPU005")[0];
    assert!(
        !gpu005.message.contains("no nvidia gpu"),
        "{}",
        gpu005.message
    );
    // No /sys/class/infiniband: nothing to pair the six with.
    assert_eq!(gpu005.status, Status::NotApplicable, "{}", gpu005.message);
    assert!(
        gpu005
            .message
            .starts_with("the nvidia driver lists 6 gpu(s)"),
        "{}",
        gpu005.message
    );
    // GPU002: neither /sys/module/nvidia/taint nor the version file is in
    // the capture: unknown, each named as missing; nothing fails.
    let gpu002 = &findings(&report, "GPU002")[0];
    assert_eq!(gpu002.status, Status::Unknown);
    assert_eq!(
        evidence(gpu002, "/sys/module/nvidia/taint"),
        Some("<missing>")
    );
    assert!(
        report
            .findings
            .iter()
            .filter(|f| f.id.starts_with("GPU"))
            .all(|f| f.status != Status::Fail)
    );
}

/// The kernel-log checks on public `dmesg` captures of what each judges
/// (see `tests/captures/SOURCES.md`).
fn kernel_log_on(capture_name: &str, id: &str) -> Vec<Finding> {
    let root = support::scratch();
    write(root.path(), "var/log/zerohop/kmsg", &capture(capture_name));
    let report = doctor_with(root.path(), &Profile::default(), &only(&[id]));
    findings(&report, id).into_iter().cloned().collect()
}

/// KLOG003 on linux-surface issue 1494: a soft mount timed out six
/// times, a hard one retried, and the server answered: a warning, since
/// its last word is `OK`.
#[test]
fn nfs_server_that_answered_again_warns() {
    let found = kernel_log_on("dmesg_nfs_not_responding_linux_surface.txt", "KLOG003");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].subject, "thinkcentre");
    assert_eq!(found[0].status, Status::Warn, "{}", found[0].message);
    assert!(
        found[0].message.contains("stopped responding 7 times"),
        "{}",
        found[0].message
    );
}

/// KLOG004 on gds-nvidia-fs issues 66 and 72: a pinning error printed
/// without a level warns (the driver also writes information under the
/// same prefix); a healthy initialisation is not an error.
#[test]
fn nvidia_fs_lines_are_judged_by_level() {
    let found = kernel_log_on("dmesg_nvidia_fs_incompatible_page_table_gds.txt", "KLOG004");
    assert_eq!(found[0].status, Status::Warn, "{}", found[0].message);
    assert!(
        found[0].message.contains("1 message without a level"),
        "{}",
        found[0].message
    );
    let found = kernel_log_on("dmesg_nvidia_fs_init_gds.txt", "KLOG004");
    assert_eq!(found[0].status, Status::Pass, "{}", found[0].message);
}

/// KLOG005 on coreboot issue 4: two ports report corrected AER errors;
/// each warns under its own address.
#[test]
fn corrected_aer_errors_warn_per_port() {
    let found = kernel_log_on("dmesg_aer_corrected_coreboot.txt", "KLOG005");
    let subjects: Vec<&str> = found.iter().map(|f| f.subject.as_str()).collect();
    assert_eq!(subjects, ["0000:00:01.0", "0000:01:00.0"]);
    assert!(found.iter().all(|f| f.status == Status::Warn));
    assert!(
        found[0].message.contains("all corrected"),
        "{}",
        found[0].message
    );
}

/// node_exporter's real `/sys` (an mlx4 InfiniBand HCA and an i40iw
/// iWARP device, no RoCE netdev, no VF, no IOMMU group, no `/dev`, no
/// module list): what these checks judge is not in the capture, so each
/// says not applicable or unknown, naming why, and none fails.
#[test]
fn a_real_sys_without_roce_vfs_or_dev_fails_nothing() {
    let Some(corpus) = corpus() else { return };
    let dir = unttar(&corpus.join("node_exporter_sys.ttar"));
    let ids = [
        "RDMA002", "RDMA003", "QOS001", "QOS002", "QOS003", "QOS004", "SRIOV001", "SRIOV002",
        "SRIOV003", "SRIOV004", "SRIOV005", "PCI004", "PCI005",
    ];
    let report = doctor_with(dir.path(), &Profile::default(), &only(&ids));
    for id in ids {
        let found = findings(&report, id);
        assert!(!found.is_empty(), "{id}");
        for finding in found {
            assert!(
                matches!(finding.status, Status::NotApplicable | Status::Unknown),
                "{id}: {:?} {}",
                finding.status,
                finding.message
            );
        }
    }
    // The ABI files are absent and no module list says whether ib_uverbs
    // is loaded: unknown, not "no verbs abi".
    let verbs = findings(&report, "RDMA002")
        .into_iter()
        .find(|f| f.subject == "verbs")
        .unwrap();
    assert_eq!(verbs.status, Status::Unknown);
    assert!(
        verbs.message.contains("partial capture"),
        "{}",
        verbs.message
    );
    // No /dev/null: the capture has no /dev, so device nodes are unknown.
    let nodes = &findings(&report, "RDMA003")[0];
    assert_eq!(nodes.status, Status::Unknown);
    // mlx4_0's ports are InfiniBand: no RoCE port for the QoS checks.
    assert!(findings(&report, "QOS001")[0].message.contains("no roce"));
}

/// Issue item 12: a capture's `/sys/module` may hold only the modules
/// someone copied. The ghw snapshot's GPU host (bound to `nvidia`) with
/// only `/sys/module/nvidia` and no `/proc/modules`: nothing shows that
/// `nvidia_peermem` or `nvidia_fs` is absent, so neither is said to be.
#[test]
fn a_partial_sys_module_proves_no_absence() {
    let Some(corpus) = corpus() else { return };
    let dir = untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    write(dir.path(), "sys/module/nvidia/version", "550.90.07\n");
    let profile = Profile {
        gpudirect: Some(GpuDirect::Peermem),
        gds: Some(true),
        ..Profile::default()
    };
    let report = doctor_with(dir.path(), &profile, &only(&["GPU001", "GPU003", "GPU004"]));
    // The GPU's driver link is `nvidia`: the driver is loaded.
    assert_eq!(findings(&report, "GPU001")[0].status, Status::Pass);
    let gpu003 = &findings(&report, "GPU003")[0];
    assert_eq!(gpu003.status, Status::Unknown, "{}", gpu003.message);
    assert!(
        gpu003.message.contains("/proc/modules is not in the root"),
        "{}",
        gpu003.message
    );
    let gpu004 = &findings(&report, "GPU004")[0];
    assert_eq!(gpu004.subject, "nvidia_fs");
    assert_eq!(gpu004.status, Status::Unknown, "{}", gpu004.message);
}
