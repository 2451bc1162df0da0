//! What `validate parse` tells from a capture alone, without options: the
//! real multi-node runs of `../shared/corpus/outputs/nccl-tests` that did
//! not use RDMA are flagged (`nccl-busbw-below-rdma`), those that did are
//! not called a fallback (a slow one that does not name its transport is
//! flagged for what the capture cannot tell), all-to-all is held to no
//! floor, and a gdscheck capture on a GPU GDS does not support is read for
//! what it says (`tests/fixtures`, with its source in `SOURCES.md`).

mod support;

use support::{capture, judge, judge_with, line, of, one};
use zerohop_core::Status;
use zerohop_validate::judge::Expectations;
use zerohop_validate::nccl::collective::Collective;

const DIR: &str = "outputs/nccl-tests/";

fn read(name: &str) -> Option<(String, String)> {
    let path = format!("{DIR}{name}");
    capture(&path).map(|text| (path, text))
}

#[test]
fn sockets_forced_by_nccl_ib_disable_without_debug_lines_warn() {
    // OpenShift, 2 pods × 1 L40S, `NCCL_IB_DISABLE=1` and only
    // `NCCL_DEBUG=VERSION`: nothing in the capture names the transport.
    let Some((name, text)) =
        read("all_reduce_perf_2xL40S_2pods_openshift_NCCL_IB_DISABLE1_socket_nccl2.27.3.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL101").status, Status::Unknown);
    let below = one(&findings, "VAL112");
    assert_eq!(below.status, Status::Warn, "{below:#?}");
    // Line 43: 8589934592 … in-place busbw 8.12, against one 100 Gb/s link.
    assert_eq!(line(below), 43);
    assert!(
        below.message.contains("busbw 8.12 GB/s")
            && below.message.contains("12.50 GB/s")
            && below.message.contains("Ada Lovelace")
            && below.message.contains("NCCL_DEBUG=INFO"),
        "{}",
        below.message
    );
    // Nothing in the capture names the transport: the verdict says so
    // rather than guess it.
    assert!(
        below.message.contains("cannot tell a fallback to TCP"),
        "{}",
        below.message
    );
    // Line 4: the first rank's device, the GPU the rate is taken for.
    assert!(
        below
            .evidence
            .iter()
            .any(|e| e.source.ends_with(":4") && e.value.contains("NVIDIA L40S")),
        "{below:#?}"
    );
    let fix = below.remediation.as_ref().unwrap();
    assert!(fix.summary.contains("--link-rate"), "{fix:?}");
}

#[test]
fn tcp_between_cloud_vms_warns() {
    // Two GCP VMs with one Tesla K80 each, over the VMs' TCP network.
    let Some((name, text)) = read("all_reduce_perf_2x1-TeslaK80_2nodes_gcp_validation-off_pkb.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    let below = one(&findings, "VAL112");
    assert_eq!(below.status, Status::Warn, "{below:#?}");
    assert!(
        below.message.contains("busbw 0.610 GB/s") && below.message.contains("Kepler"),
        "{}",
        below.message
    );
}

#[test]
fn slingshot_without_its_libfabric_plugin_warns() {
    // ALCF Polaris, 2 nodes × 4 A100 on HPE Slingshot, NCCL without the
    // aws-ofi-nccl plugin: the socket transport (the NCCL_DEBUG capture of
    // the same system shows `Using network Socket`).
    let Some((name, text)) = read("all_reduce_perf_8xA100_2nodes_polaris-slingshot_nccl2.18.txt")
    else {
        return;
    };
    let below = judge(&name, &text)
        .into_iter()
        .find(|f| f.id == "VAL112")
        .unwrap();
    assert_eq!(below.status, Status::Warn, "{below:#?}");
    assert!(
        below.message.contains("busbw 9.45 GB/s") && below.message.contains("Ampere"),
        "{}",
        below.message
    );
}

#[test]
fn an_unnamed_collective_that_reduces_nothing_waits_for_its_name() {
    // The all-gather of the same Polaris nodes: its table does not name
    // the collective and its rows reduce nothing, like all-to-all's, which
    // has no floor. Named, it is held to one link and flagged.
    let Some((name, text)) = read("all_gather_perf_8xA100_2nodes_polaris-slingshot_nccl2.21.txt")
    else {
        return;
    };
    let unnamed = judge(&name, &text);
    let below = one(&unnamed, "VAL112");
    assert_eq!(below.status, Status::Unknown, "{below:#?}");
    let fix = below.remediation.as_ref().unwrap();
    assert!(
        fix.commands.iter().any(|c| c.contains("--collective")),
        "{fix:?}"
    );
    let named = judge_with(
        &name,
        &text,
        &Expectations {
            collective: Some(Collective::AllGather),
            ..Expectations::default()
        },
    );
    let below = one(&named, "VAL112");
    assert_eq!(below.status, Status::Warn, "{below:#?}");
    assert!(
        below.message.contains("busbw 3.26 GB/s") && below.message.contains("Ampere"),
        "{}",
        below.message
    );
}

#[test]
fn a_roce_run_without_debug_lines_is_not_called_tcp() {
    // The same OpenShift L40S pods with `NCCL_IB_DISABLE=0` over SR-IOV
    // RoCE: 9.63 GB/s, below one 100 Gb/s link, and as silent about its
    // transport as the socket run beside it. The verdict names what would
    // tell them apart instead of calling either TCP.
    let Some((name, text)) =
        read("all_reduce_perf_4xL40S_2pods_openshift_sriov-roce_IB-enabled_nccl2.27.3.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    let below = one(&findings, "VAL112");
    assert!(
        below.message.contains("busbw 9.63 GB/s")
            && below.message.contains("cannot tell a fallback to TCP")
            && below
                .message
                .contains("from RDMA running below its link rate")
            && !below.message.contains("most likely"),
        "{}",
        below.message
    );
    let fix = below.remediation.as_ref().unwrap();
    assert!(
        fix.commands.iter().any(|c| c.contains("NCCL_DEBUG=INFO")),
        "{fix:?}"
    );
}

#[test]
fn all_to_all_is_held_to_no_floor_like_send_receive() {
    // 2 nodes × 1 H100 on 400 Gb/s: alltoall_perf and sendrecv_perf both
    // reach 13.6 GB/s, the rate of one point-to-point pair. nccl-tests
    // runs all-to-all as ncclSend/ncclRecv to every peer.
    let Some((name, text)) = read("alltoall-sendrecv_perf_2xH100_2nodes_nccl-tests2.17.6_pass.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    let below = of(&findings, "VAL112");
    assert_eq!(below.len(), 2, "{below:#?}");
    for (finding, collective) in below.iter().zip(["alltoall", "sendrecv"]) {
        assert_eq!(finding.status, Status::NotApplicable, "{finding:#?}");
        assert!(
            finding.message.contains(&format!(
                "no floor for {collective}: nccl-tests runs it as ncclSend/ncclRecv"
            )),
            "{}",
            finding.message
        );
    }
}

#[test]
fn rdma_runs_are_not_taken_for_a_fallback() {
    // 16 A100 on OKE over RoCE SR-IOV VFs (237.9 GB/s), 80 H100 over eight
    // 400 Gb/s rails (322.7 GB/s), 16 H100 on AWS p5 over EFA (488.1 GB/s).
    for file in [
        "all_reduce_perf_16xA100-SXM4-40GB_2nodes_oke-mpijob_8B-8G_pass.txt",
        "all-collectives_perf_80xH100_10nodes_nccl-tests2.17.8_reducing-maxBytes.txt",
        "all_reduce_perf_16xH100_2nodes_aws-p5-efa_NCCL_DEBUG-INFO_nccl2.22.3_mpirun-prefixed.txt",
    ] {
        let Some((name, text)) = read(file) else {
            return;
        };
        let findings = judge(&name, &text);
        let below: Vec<_> = findings.iter().filter(|f| f.id == "VAL112").collect();
        assert!(
            below.iter().any(|f| f.status == Status::Pass),
            "{file}: {below:#?}"
        );
        // Send/receive has no floor: not applicable, never a problem.
        for finding in below {
            assert!(
                matches!(finding.status, Status::Pass | Status::NotApplicable),
                "{file}: {finding:#?}"
            );
        }
    }
}

#[test]
fn a_capture_that_names_neither_hosts_nor_gpus_says_what_it_could_not_see() {
    // AKS: the author cut the device list; only the table is left.
    let Some((name, text)) =
        read("all_reduce_perf_16xGPU_2nodes_aks_sriov-ib_validation-off_trimmed.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    let below = one(&findings, "VAL112");
    assert_eq!(below.status, Status::Unknown, "{below:#?}");
    assert!(
        below.message.contains("cannot be seen"),
        "{}",
        below.message
    );
}

#[test]
fn one_node_is_not_held_to_a_fabric() {
    let Some((name, text)) = read(
        "all_reduce_perf_2xA100-PCIe_1node_roce-2xmlx5_NCCL_DEBUG-INFO_GDR-disabled_nccl2.27.7.txt",
    ) else {
        return;
    };
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL112").status, Status::NotApplicable);
}

#[test]
fn the_socket_fallback_a_debug_log_shows_is_reported_once() {
    // Polaris, `Using network Socket` in the NCCL_DEBUG log: the
    // fallback is VAL101's, not a second alarm.
    let Some((name, text)) =
        read("nccl_debug_pytorch_8xA100_2nodes_polaris_NET-IB-no-device_NET-Socket-fallback.txt")
    else {
        return;
    };
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL101").status, Status::Fail);
    assert!(
        findings
            .iter()
            .all(|f| f.id != "VAL112" || !f.status.is_problem())
    );
}

#[test]
fn gdscheck_on_a_gpu_below_compute_capability_6_cites_libcufile() {
    let name = "tests/fixtures/gdscheck_p_gds0.9.1.5_QuadroK1200_unsupported-architecture.txt";
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap();
    let findings = judge(name, &text);
    // Every line is understood: the architecture line is a GPU, the lines
    // below the verdict are libcufile's, not unreadable.
    assert_eq!(
        one(&findings, "VAL001").status,
        Status::Pass,
        "{findings:#?}"
    );
    let gpu = one(&findings, "VAL402");
    assert_eq!((gpu.status, line(gpu)), (Status::Fail, 9));
    assert!(
        gpu.message
            .contains("Quadro K1200 has compute capability 5, GDS requires 6 or later"),
        "{}",
        gpu.message
    );
    let platform = one(&findings, "VAL401");
    assert_eq!((platform.status, line(platform)), (Status::Fail, 11));
    assert!(
        platform
            .evidence
            .iter()
            .any(|e| e.value == "Platform does not have any supported GPU!"),
        "{platform:#?}"
    );
    // No fix of a gdscheck capture suggests another tool's command.
    for finding in &findings {
        if let Some(fix) = &finding.remediation {
            assert!(
                fix.commands.iter().all(|c| !c.contains("all_reduce_perf")),
                "{finding:#?}"
            );
        }
    }
}

#[test]
fn a_cut_capture_is_recaptured_with_its_own_tool() {
    let name = "tests/fixtures/gdscheck_p_gds0.9.1.5_QuadroK1200_unsupported-architecture.txt";
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap();
    // Cut before the verdict: the first nine lines.
    let cut: String = text.lines().take(9).map(|l| format!("{l}\n")).collect();
    let findings = judge(name, &cut);
    let partial = one(&findings, "VAL001");
    assert_eq!(partial.status, Status::Warn);
    let fix = partial.remediation.as_ref().unwrap();
    assert_eq!(
        fix.commands,
        ["/usr/local/cuda/gds/tools/gdscheck -p > gdscheck.txt 2>&1"]
    );
}

#[test]
fn a_table_that_does_not_name_its_collective_is_judged_only_where_it_can_be() {
    // The 80-H100 run of every collective, each section with its
    // `# Collective test starting/concluded` lines taken out, as older
    // nccl-tests print it. All-reduce's busbw is 2(n-1)/n of its algbw:
    // it is still held to one link. Send/receive prints `sum` too, but
    // its busbw is its algbw, as reduce's is; all-to-all reduces nothing,
    // as all-gather does: neither is called slow without its name.
    let Some((name, text)) =
        read("all-collectives_perf_80xH100_10nodes_nccl-tests2.17.8_reducing-maxBytes.txt")
    else {
        return;
    };
    let section = |collective: &str| -> String {
        let start = format!("# Collective test starting: {collective}_perf");
        let end = format!("# Collective test concluded: {collective}_perf");
        text.lines()
            .skip_while(|l| l.trim() != start)
            .skip(1)
            .take_while(|l| l.trim() != end)
            .map(|l| format!("{l}\n"))
            .collect()
    };
    for (collective, status, says) in [
        ("all_reduce", Status::Pass, "across 10 nodes"),
        ("sendrecv", Status::Unknown, "its busbw equals its algbw"),
        ("alltoall", Status::Unknown, "its rows reduce nothing"),
    ] {
        let unnamed = section(collective);
        assert!(unnamed.lines().count() > 20, "{collective}: {unnamed}");
        let findings = judge(&name, &unnamed);
        let below = one(&findings, "VAL112");
        assert_eq!(below.status, status, "{collective}: {below:#?}");
        assert!(
            below.message.contains(says),
            "{collective}: {}",
            below.message
        );
    }
}
