//! Every GPUDirect Storage capture of `../shared/corpus/outputs/gds`, one
//! test each, and the `gdscheck -p` outputs elsewhere in the corpus.

mod support;

use support::{capture, judge, line, of, one};
use zerohop_core::Status;
use zerohop_validate::gds::{gdscheck, gdsio, nvfs_stats};

const DIR: &str = "outputs/gds/";

fn read(name: &str) -> Option<(String, String)> {
    let path = format!("{DIR}{name}");
    capture(&path).map(|text| (path, text))
}

#[test]
fn gdscheck_of_the_0_9_beta_with_its_legacy_layout() {
    let Some((name, text)) =
        read("gdscheck_p_gds0.9.1.5-beta_QuadroP400_pass_legacy-format_indented.txt")
    else {
        return;
    };
    let check = gdscheck::parse(&text);
    assert!(check.notes.is_empty(), "{:?}", check.notes);
    // Line 1: `GDS release version (beta): 0.9.1.5`; line 2: nvidia_fs 2.4, libcufile 2.3.
    assert_eq!(check.release, Some((1, "0.9.1.5".to_owned())));
    assert_eq!(
        (check.nvidia_fs.as_deref(), check.libcufile.as_deref()),
        (Some("2.4"), Some("2.3"))
    );
    // Line 12: `--MOFED peer direct : enabled`.
    assert_eq!(check.peer_direct, Some((12, true)));
    // Line 16: `properties.use_compat_mode : 0`.
    assert_eq!(check.setting("properties.use_compat_mode"), Some((16, "0")));
    let findings = judge(&name, &text);
    // Line 35: `Platform verification succeeded`; line 33: the GPU; line 34: the IOMMU.
    assert_eq!(
        (
            one(&findings, "VAL401").status,
            line(one(&findings, "VAL401"))
        ),
        (Status::Pass, 35)
    );
    assert_eq!(
        (
            one(&findings, "VAL402").status,
            line(one(&findings, "VAL402"))
        ),
        (Status::Pass, 33)
    );
    assert_eq!(
        (
            one(&findings, "VAL403").status,
            line(one(&findings, "VAL403"))
        ),
        (Status::Pass, 34)
    );
    // Line 16: compat mode off (`0`).
    assert_eq!(
        (
            one(&findings, "VAL404").status,
            line(one(&findings, "VAL404"))
        ),
        (Status::Pass, 16)
    );
}

#[test]
fn gdscheck_in_a_vm_with_a_passed_through_p400() {
    let Some((name, text)) =
        read("gdscheck_p_gds1.1.0.37_nvfs2.8_QuadroP400_vm-passthrough_pass.txt")
    else {
        return;
    };
    let check = gdscheck::parse(&text);
    assert!(check.notes.is_empty(), "{:?}", check.notes);
    // Line 9: `NVMe : Supported`; line 16: `NFS : Unsupported`.
    let nvme = &check.backends[0];
    assert_eq!(
        (nvme.line, nvme.name.as_str(), nvme.supported),
        (9, "NVMe", true)
    );
    assert!(
        check
            .backends
            .iter()
            .any(|b| b.line == 16 && b.name == "NFS" && !b.supported)
    );
    let findings = judge(&name, &text);
    // Line 26: `properties.use_compat_mode : true`.
    assert_eq!(
        (
            one(&findings, "VAL404").status,
            line(one(&findings, "VAL404"))
        ),
        (Status::Info, 26)
    );
    // Line 47: the GPU supports GDS; line 52: verified.
    assert_eq!(line(one(&findings, "VAL402")), 47);
    assert_eq!(line(one(&findings, "VAL401")), 52);
}

#[test]
fn gdscheck_on_openshift_with_nfs_supported() {
    let Some((name, text)) =
        read("gdscheck_p_gds1.13.1.3_nvfs2.20_L40S_r760xa_nfs-rdma-supported_openshift.txt")
    else {
        return;
    };
    let check = gdscheck::parse(&text);
    assert!(check.notes.is_empty(), "{:?}", check.notes);
    // Line 63: `GPU index 0 NVIDIA L40S bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled`.
    let gpu = &check.gpus[0];
    assert_eq!(
        (gpu.line, gpu.name.as_str(), gpu.bar_mib, gpu.supported),
        (63, "NVIDIA L40S", Some(65536), true)
    );
    // Line 22: `--Mellanox PeerDirect : Disabled`.
    assert_eq!(check.peer_direct, Some((22, false)));
    let findings = judge(&name, &text);
    // Line 10 is the first back end; NVMe, NVMeOF and NFS (line 18) are supported.
    let backends = one(&findings, "VAL405");
    assert_eq!((backends.status, line(backends)), (Status::Info, 10));
    assert!(
        backends
            .message
            .contains("NVMe, NVMeOF, NFS; peer direct disabled"),
        "{}",
        backends.message
    );
    assert_eq!(line(one(&findings, "VAL401")), 71);
}

#[test]
fn gdsio_usage_text_has_no_results() {
    let Some((name, text)) = read("gdsio_h_usage_gdsio1.12_cuda12.8.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 1: `gdsio version :1.12`.
    assert_eq!(out.usage, Some((1, "1.12".to_owned())));
    assert!(out.results.is_empty());
    let findings = judge(&name, &text);
    let throughput = one(&findings, "VAL406");
    assert_eq!(
        (throughput.status, line(throughput)),
        (Status::NotApplicable, 1)
    );
}

#[test]
fn gdsio_random_reads_over_nfs_rdma() {
    let Some((name, text)) = read("gdsio_randread_4K_32threads_GPUD_nfs-rdma_L40S.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    // Line 1: `IoType: RANDREAD XferType: GPUD Threads: 32 … IOSize: 4(KiB) Throughput: 0.569229 GiB/sec, Avg_Latency: 214.448246 usecs`.
    let result = &out.results[0];
    assert_eq!(
        (
            result.io_type.as_str(),
            result.xfer_type.as_str(),
            result.threads
        ),
        ("RANDREAD", "GPUD", Some(32))
    );
    assert_eq!(
        (
            result.io_size_kib,
            result.throughput_gib_s,
            result.latency_us
        ),
        (Some(4), 0.569229, Some(214.448246))
    );
    let findings = judge(&name, &text);
    let throughput = one(&findings, "VAL406");
    assert_eq!((throughput.status, line(throughput)), (Status::Info, 1));
}

#[test]
fn gdsio_random_writes_over_nfs_rdma() {
    let Some((name, text)) = read("gdsio_randwrite_4K_32threads_GPUD_nfs-rdma_L40S.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    // Line 1: `IoType: RANDWRITE … Throughput: 0.344940 GiB/sec`.
    assert_eq!(
        (
            out.results[0].io_type.as_str(),
            out.results[0].throughput_gib_s
        ),
        ("RANDWRITE", 0.34494)
    );
    let findings = judge(&name, &text);
    assert!(one(&findings, "VAL406").message.starts_with("0.345 GiB/s"));
}

#[test]
fn gdsio_reads_in_a_vm() {
    let Some((name, text)) = read("gdsio_read_GPUD_256K_10s_vm-passthrough_P400.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    // Line 1: `IoType: READ XferType: GPUD Threads: 1 … IOSize: 256(KiB) Throughput: 1.564272 GiB/sec`.
    assert_eq!(
        (out.results[0].io_size_kib, out.results[0].throughput_gib_s),
        (Some(256), 1.564272)
    );
    let findings = judge(&name, &text);
    assert_eq!(line(one(&findings, "VAL406")), 1);
}

#[test]
fn gdsio_transcript_of_gpudirect_against_the_cpu_path() {
    let Some((name, text)) =
        read("gdsio_transcript_8GPUs_GPUD-vs-CPUONLY_write_50G_asus-esc8000a_stelline.txt")
    else {
        return;
    };
    let out = gdsio::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Lines 2, 4, …, 34: 17 results, each after its command.
    assert_eq!(out.results.len(), 17);
    assert_eq!(out.results[0].line, 2);
    assert!(
        out.results[0]
            .command
            .as_deref()
            .unwrap()
            .contains("-x 0 -d 0")
    );
    // Line 33's command starts with a stray `$ ` prompt; its result is line 34.
    let last = out.results.last().unwrap();
    assert_eq!((last.line, last.xfer_type.as_str()), (34, "CPUONLY"));
    assert!(last.command.as_deref().unwrap().contains("-x 1 -d 4"));
    let findings = judge(&name, &text);
    // The WRITE comparison: GPUD averages 23.4 GiB/s against CPUONLY's 25.1 (93%).
    let comparison: Vec<_> = of(&findings, "VAL406")
        .into_iter()
        .filter(|f| f.status != Status::Info)
        .collect();
    assert_eq!(comparison.len(), 1);
    assert_eq!(
        (comparison[0].status, line(comparison[0])),
        (Status::Pass, 2)
    );
    assert!(
        comparison[0].message.contains("(93%)"),
        "{}",
        comparison[0].message
    );
}

#[test]
fn gdsio_verify_succeeds() {
    let Some((name, text)) = read("gdsio_verify_data-verification-success_indented.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    // Line 4: `   Data Verification Success`.
    assert_eq!(out.verification, Some((4, true)));
    let findings = judge(&name, &text);
    assert_eq!(
        (
            one(&findings, "VAL407").status,
            line(one(&findings, "VAL407"))
        ),
        (Status::Pass, 4)
    );
}

#[test]
fn gdsio_writes_to_xfs_on_nvme_raid() {
    let Some((name, text)) = read("gdsio_write_5G_GPUD_xfs-nvme-raid_stelline.txt") else {
        return;
    };
    let out = gdsio::parse(&text);
    // Line 1: `… IOSize: 1024(KiB) Throughput: 7.473484 GiB/sec, Avg_Latency: 130.389453 usecs`.
    assert_eq!(
        (out.results[0].io_size_kib, out.results[0].throughput_gib_s),
        (Some(1024), 7.473484)
    );
    let findings = judge(&name, &text);
    assert!(
        one(&findings, "VAL406")
            .message
            .starts_with("7.47 GiB/s with 1024 KiB I/Os")
    );
}

#[test]
fn nvidia_fs_stats_with_io_statistics_off() {
    let Some((name, text)) =
        read("proc_driver_nvidia-fs_stats_gds1.14.0.31_nvfs2.25.7_io-stats-disabled_stelline.txt")
    else {
        return;
    };
    let stats = nvfs_stats::parse(&text);
    assert!(stats.notes.is_empty(), "{:?}", stats.notes);
    // Lines 1, 3, 4, 5: versions, peer direct, `IO stats: Disabled`.
    assert_eq!(stats.gds_version.as_deref(), Some("1.14.0.31"));
    assert_eq!(stats.driver_version.as_deref(), Some("2.25.7"));
    assert_eq!(stats.peer_direct, Some((4, true)));
    assert_eq!(stats.io_stats, Some((5, false)));
    // Line 17: the GPU line's counters, under `GPU 0000:01:00.0`.
    assert!(stats.counters.iter().any(|c| c.line == 17
        && c.section == "GPU 0000:01:00.0"
        && c.name == "max_pinned_MiB"
        && c.value == "1"));
    // Line 15: the `Error` line's four counters, all zero.
    let findings = judge(&name, &text);
    let errors = one(&findings, "VAL408");
    assert_eq!((errors.status, line(errors)), (Status::Pass, 5));
    assert!(
        errors.message.contains("I/O statistics are off"),
        "{}",
        errors.message
    );
}

/// `gdscheck -p` outputs of the corpus outside `outputs/`: GDS 1.0 and 1.14.
#[test]
fn gdscheck_outputs_the_parser_was_not_written_against() {
    for (path, gpus, compat) in [
        ("gdscheck_p_gds1.0_quadroP1000_onizuka.txt", 1, Status::Info),
        (
            "stelline_validated_hardware/asus-esc8000a-e12__gdscheck_p.txt",
            4,
            Status::Pass,
        ),
        (
            "stelline_validated_hardware/puget-wrx90__gdscheck_p.txt",
            2,
            Status::Pass,
        ),
    ] {
        let Some(text) = capture(path) else {
            return;
        };
        let check = gdscheck::parse(&text);
        assert!(check.notes.is_empty(), "{path}: {:?}", check.notes);
        assert_eq!(check.gpus.len(), gpus, "{path}");
        let findings = judge(path, &text);
        assert_eq!(one(&findings, "VAL401").status, Status::Pass, "{path}");
        assert_eq!(one(&findings, "VAL404").status, compat, "{path}");
        assert!(
            of(&findings, "VAL402")
                .iter()
                .all(|f| f.status == Status::Pass)
        );
    }
}
