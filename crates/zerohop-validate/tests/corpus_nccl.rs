//! Every nccl-tests and `NCCL_DEBUG` capture of `../shared/corpus/outputs/nccl-tests`,
//! one test each: the values the capture shows, and the judgements, each
//! with the line of the capture that justifies it.

mod support;

use support::{capture, judge, judge_with, line, of, one};
use zerohop_core::Status;
use zerohop_validate::judge::Expectations;
use zerohop_validate::nccl::collective::Collective;
use zerohop_validate::nccl::{self, version::NcclVersion};

const DIR: &str = "outputs/nccl-tests/";

fn read(name: &str) -> Option<(String, String)> {
    let path = format!("{DIR}{name}");
    capture(&path).map(|text| (path, text))
}

#[test]
fn eighty_h100_all_collectives_with_reduced_max_bytes() {
    let Some((name, text)) =
        read("all-collectives_perf_80xH100_10nodes_nccl-tests2.17.8_reducing-maxBytes.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let runs = &output.tests.runs;
    // Lines 2, 109, 216, 323, 430: `# Collective test starting: …_perf`.
    let collectives: Vec<_> = runs.iter().map(|r| r.collective.unwrap()).collect();
    assert_eq!(
        collectives,
        vec![
            (2, Collective::AllReduce),
            (109, Collective::AllGather),
            (216, Collective::ReduceScatter),
            (323, Collective::AllToAll),
            (430, Collective::SendRecv),
        ]
    );
    let all_reduce = &runs[0];
    // Line 1: `nccl-library=22902`.
    assert_eq!(all_reduce.library, Some(NcclVersion::new(2, 29, 2)));
    // Line 87: `# Reducing maxBytes to 26549638485 due to memory limitation`.
    assert_eq!(all_reduce.reduced_max_bytes, Some((87, 26_549_638_485)));
    // Lines 6-85: 80 ranks on 10 hosts.
    assert_eq!(all_reduce.devices.len(), 80);
    assert_eq!(all_reduce.hosts().len(), 10);
    // Line 101: 17179869184 … in-place busbw 322.70.
    let largest = all_reduce.largest().unwrap();
    assert_eq!((largest.line, largest.size), (101, 17_179_869_184));
    assert_eq!(largest.busbw(), 322.70);
    // Line 103: `# Avg bus bandwidth : 265.631`.
    assert_eq!(all_reduce.avg_busbw.unwrap().value, 265.631);
    // Line 422: alltoall's largest row has `N/A` in its in-place #wrong.
    assert_eq!(runs[3].largest().unwrap().in_place.wrong, None);

    // Eight 400 Gb/s rails per node, as an H100 node has.
    let expectations = Expectations {
        link_rate_gbps: Some(400.0),
        rails: Some(8),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = of(&findings, "VAL109");
    assert_eq!(busbw.len(), 5);
    // Line 101: 322.70 GB/s of 8 × 400 / 8 = 400 GB/s is 81%: passes at 80%.
    assert_eq!((busbw[0].status, line(busbw[0])), (Status::Pass, 101));
    assert!(
        busbw[0].message.contains("81% of the 400.0 GB/s"),
        "{}",
        busbw[0].message
    );
    // Line 422: alltoall 50.58 GB/s of 400 × 79 / (8 × 72) = 54.86 GB/s,
    // nccl-tests' (n-1)/n busbw over the off-node share: reported, not
    // graded, as the point-to-point channels set its rate.
    assert_eq!((busbw[3].status, line(busbw[3])), (Status::Info, 422));
    assert!(
        busbw[3]
            .message
            .contains("92% of the 54.86 GB/s the fabric carries for alltoall"),
        "{}",
        busbw[3].message
    );
    assert!(
        busbw[3]
            .message
            .contains("not graded: nccl-tests runs it as ncclSend/ncclRecv pairs"),
        "{}",
        busbw[3].message
    );
    // Line 529: sendrecv 15.23 GB/s of one 400 Gb/s rail (50 GB/s): 30%
    // on a healthy fabric, one remote peer per rank: not a failure.
    assert_eq!((busbw[4].status, line(busbw[4])), (Status::Info, 529));
    assert!(
        busbw[4].message.contains("30% of the 50.00 GB/s"),
        "{}",
        busbw[4].message
    );
    // Not graded here, held to no floor there: the two judgements agree.
    for finding in of(&findings, "VAL112").iter().skip(3) {
        assert_eq!(finding.status, Status::NotApplicable, "{finding:#?}");
    }
    // No debug messages: the transport cannot be told.
    assert_eq!(one(&findings, "VAL101").status, Status::Unknown);
    // Line 104…533: every test reached its summary.
    assert_eq!(one(&findings, "VAL110").status, Status::Pass);
}

#[test]
fn two_gpus_on_one_host_with_interleaved_debug_lines() {
    let Some((name, text)) =
        read("all_gather_perf_2GPU_1node_lambda-hyperplane_NCCL_DEBUG-INFO_interleaved.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 4: the header; lines 1 and 6: `Init COMPLETE` between header and rows.
    assert_eq!(run.header_line, Some(4));
    assert_eq!(output.log.messages, 4);
    // Lines 7-36: 30 rows, from 0 B to 4 GiB.
    assert_eq!(run.rows.len(), 30);
    assert_eq!(run.rows[0].line, 7);
    // Line 36: 4294967296 … busbw 46.76 out of place, 65.30 in place.
    let largest = run.largest().unwrap();
    assert_eq!((largest.line, largest.busbw()), (36, 65.30));
    // Line 39: `# Avg bus bandwidth : 24.9041`.
    assert_eq!(run.avg_busbw.unwrap().value, 24.9041);

    let findings = judge(&name, &text);
    // Line 28: the best busbw (95.86 at 16 MiB); line 36: 65.30 at 4 GiB.
    let drop = one(&findings, "VAL111");
    assert_eq!(drop.status, Status::Pass);
    assert_eq!(line(drop), 36);
    // The output names no collective and lists no device: busbw is reported only.
    assert_eq!(one(&findings, "VAL109").status, Status::Info);
}

#[test]
fn eight_a100_all_gather_in_the_legacy_layout() {
    let Some((name, text)) =
        read("all_gather_perf_8xA100-SXM4-40GB_1node_legacy-error-column_superbench.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 14: `… time algbw busbw error …`, no root column.
    assert!(run.legacy_layout);
    // Line 1: `validation: 0`.
    assert_eq!(run.params.as_ref().unwrap().validation, Some(false));
    // Line 15: `NCCL INFO Launch mode Parallel` between header and rows.
    assert_eq!(output.log.messages, 1);
    // Line 50: 8589934592 … 223.39 / 230.07.
    let largest = run.largest().unwrap();
    assert_eq!(
        (largest.line, largest.busbw(), largest.root),
        (50, 230.07, None)
    );
    assert_eq!(largest.wrong(), None);

    let findings = judge(&name, &text);
    // Line 1: validation off.
    let wrong = one(&findings, "VAL108");
    assert_eq!((wrong.status, line(wrong)), (Status::Info, 1));
    // Lines 4-11: every rank on `localhost`: one node, the fabric is not used.
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Info, 50));
    assert!(busbw.message.contains("one node"), "{}", busbw.message);
    assert_eq!(one(&findings, "VAL101").status, Status::NotApplicable);
}

#[test]
fn polaris_all_gather_over_slingshot() {
    let Some((name, text)) = read("all_gather_perf_8xA100_2nodes_polaris-slingshot_nccl2.21.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Lines 4-11: 8 ranks on x3006c0s13b1n0 and x3006c0s19b0n0.
    assert_eq!(run.hosts(), vec!["x3006c0s13b1n0", "x3006c0s19b0n0"]);
    // Line 44: 1073741824 … 3.20 / 3.26.
    assert_eq!(run.largest().unwrap().busbw(), 3.26);

    // Two 200 Gb/s Slingshot rails per node: 50 GB/s; 3.26 is 7%.
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(2),
        collective: Some(Collective::AllGather),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Fail, 44));
    assert!(
        busbw.message.contains("7% of the 50.00 GB/s"),
        "{}",
        busbw.message
    );
}

#[test]
fn oke_mpijob_all_reduce_on_sixteen_a100() {
    let Some((name, text)) =
        read("all_reduce_perf_16xA100-SXM4-40GB_2nodes_oke-mpijob_8B-8G_pass.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Lines 1-3: kubectl and ssh lines before the preamble are not the test's.
    assert_eq!(run.line, 4);
    // Lines 7-22: 16 ranks, 8 per MPI worker, devices in the old `[0x0f]` form.
    assert_eq!(run.devices.len(), 16);
    assert_eq!(run.devices[0].name, "NVIDIA A100-SXM4-40GB");
    // Line 57: 8589934592 … 237.94 / 237.52.
    assert_eq!(run.largest().unwrap().busbw(), 237.94);

    // BM.GPU4.8 has 16 × 100 Gb/s RoCE: 200 GB/s; 237.94 is 119%.
    let expectations = Expectations {
        link_rate_gbps: Some(100.0),
        rails: Some(16),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Pass, 57));
    // Line 58: `# Out of bounds values : 0 OK`, every #wrong 0.
    let wrong = one(&findings, "VAL108");
    assert_eq!(wrong.status, Status::Pass);
    assert!(wrong.evidence.iter().any(|e| e.source.ends_with(":58")));
}

#[test]
fn aks_all_reduce_table_without_preamble() {
    let Some((name, text)) =
        read("all_reduce_perf_16xGPU_2nodes_aks_sriov-ib_validation-off_trimmed.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 2 is the header; no device list (trimmed by the author).
    assert_eq!(run.header_line, Some(2));
    assert!(run.devices.is_empty());
    // Line 19: 8589934592 … 187.22 / 187.05, `N/A` in #wrong.
    let largest = run.largest().unwrap();
    assert_eq!(
        (largest.line, largest.busbw(), largest.wrong()),
        (19, 187.22, None)
    );

    // 8 × 200 Gb/s HDR per node (ND A100 v4): 200 GB/s; 187.22 is 94%.
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(8),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Pass, 19));
    assert!(
        busbw.message.contains("assuming more than one node"),
        "{}",
        busbw.message
    );
    // Line 4: `N/A` in #wrong: not checked.
    assert_eq!(one(&findings, "VAL108").status, Status::Info);
}

#[test]
fn p5_efa_debug_log_with_open_mpi_tags_inside_rows() {
    let Some((name, text)) = read(
        "all_reduce_perf_16xH100_2nodes_aws-p5-efa_NCCL_DEBUG-INFO_nccl2.22.3_mpirun-prefixed.txt",
    ) else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 2936: `[1,0]<stdout>:` three times inside the row.
    let largest = run.largest().unwrap();
    assert_eq!(
        (largest.line, largest.size, largest.busbw()),
        (2936, 17_179_869_184, 488.14)
    );
    assert_eq!(run.rows.len(), 32);
    let log = &output.log;
    // Line 38: `NCCL version 2.22.3+cuda12.2`.
    assert_eq!(log.version, Some((38, NcclVersion::new(2, 22, 3))));
    // Line 292: `NET/OFI Selected Provider is efa (found 32 nics)`.
    assert_eq!(log.ofi_provider, Some((292, "efa".to_owned(), 32)));
    // 512 channel lines `via NET/AWS Libfabric/N/GDRDMA`.
    assert_eq!(log.net_channels.len(), 1);
    assert_eq!(
        (log.net_channels[0].count, log.net_channels[0].gdr),
        (512, 512)
    );

    // p5.48xlarge: 32 EFA devices of 100 Gb/s.
    let expectations = Expectations {
        link_rate_gbps: Some(100.0),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    assert_eq!(one(&findings, "VAL101").status, Status::Pass);
    assert_eq!(line(one(&findings, "VAL102")), 292);
    assert_eq!(one(&findings, "VAL105").status, Status::Pass);
    let busbw = one(&findings, "VAL109");
    // 488.14 of 32 × 100 / 8 = 400 GB/s.
    assert_eq!((busbw.status, line(busbw)), (Status::Pass, 2936));
    assert!(busbw.message.contains("122%"), "{}", busbw.message);
}

#[test]
fn gcp_k80_pair_over_tcp_with_validation_off() {
    let Some((name, text)) = read("all_reduce_perf_2x1-TeslaK80_2nodes_gcp_validation-off_pkb.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Lines 4-5: two hosts; line 20: 1073741824 … 0.61 / 0.61.
    assert_eq!(run.hosts().len(), 2);
    assert_eq!(run.largest().unwrap().busbw(), 0.61);
    // Line 1: `iters: 1 agg iters: 1 validation: 0`.
    let params = run.params.as_ref().unwrap();
    assert_eq!((params.iters, params.validation), (Some(1), Some(false)));

    // A 32 Gb/s VM NIC: 4 GB/s; 0.61 is 15%.
    let expectations = Expectations {
        link_rate_gbps: Some(32.0),
        rails: Some(1),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Fail, 20));
    assert_eq!(line(one(&findings, "VAL108")), 1);
}

#[test]
fn a100_pcie_pair_with_gpudirect_disabled_and_rows_cut_by_messages() {
    let Some((name, text)) = read(
        "all_reduce_perf_2xA100-PCIe_1node_roce-2xmlx5_NCCL_DEBUG-INFO_GDR-disabled_nccl2.27.7.txt",
    ) else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 1: `# Collective test starting: all_reduce_perf`.
    assert_eq!(run.collective, Some((1, Collective::AllReduce)));
    // Lines 2996 and 3128: the 8 GiB row starts in line 2996 and ends in
    // line 3128, with debug messages in between.
    assert_eq!(run.rows.len(), 11);
    let largest = run.largest().unwrap();
    assert_eq!((largest.line, largest.size), (2996, 8_589_934_592));
    assert_eq!(largest.in_place.busbw, 216.61);
    let log = &output.log;
    // Line 19: `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE`; line 15: speed=100000.
    assert_eq!(log.ib_devices.len(), 2);
    assert_eq!(log.ib_devices[0].speed_mbps, Some(100_000));
    // Line 146: `nNodes 1`.
    assert_eq!(log.shape.unwrap().nodes, 1);
    // Line 14: `dlvsym failed on mlx5dv_reg_dmabuf_mr`.
    assert!(
        log.missing_symbols
            .iter()
            .any(|(l, s)| *l == 14 && s == "mlx5dv_reg_dmabuf_mr")
    );

    let findings = judge(&name, &text);
    // Lines 43 and 45: `GPU Direct RDMA Disabled for HCA 0 'mlx5_0'` / `1 'mlx5_1'`;
    // the merged `mlx5_0+mlx5_1` (line 62) is judged through its parts.
    let gdr = of(&findings, "VAL103");
    assert_eq!(gdr.len(), 2);
    assert_eq!((gdr[0].status, line(gdr[0])), (Status::Fail, 43));
    assert_eq!((gdr[1].status, line(gdr[1])), (Status::Fail, 45));
    assert!(
        gdr[0].message.contains("NCCL reported DMA-BUF on no GPU"),
        "{}",
        gdr[0].message
    );
    // One node (line 146): busbw measures NVLink, not the fabric.
    assert_eq!(one(&findings, "VAL109").status, Status::Info);
    // Line 22: `Using network IB`.
    assert_eq!(line(one(&findings, "VAL101")), 22);
}

#[test]
fn openshift_l40s_pair_forced_to_sockets() {
    let Some((name, text)) =
        read("all_reduce_perf_2xL40S_2pods_openshift_NCCL_IB_DISABLE1_socket_nccl2.27.3.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 7: `# Reducing maxBytes to 15534478677`; line 8: `NCCL version 2.27.3+cuda12.9`.
    assert_eq!(run.reduced_max_bytes, Some((7, 15_534_478_677)));
    assert_eq!(run.library, Some(NcclVersion::new(2, 27, 3)));
    assert_eq!(output.log.version.map(|(l, _)| l), Some(8));
    // Line 43: 8589934592 … 8.11 / 8.12.
    assert_eq!(run.largest().unwrap().busbw(), 8.12);

    // One 200 Gb/s RoCE VF per pod: 25 GB/s; 8.12 over sockets is 32%.
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(1),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Fail, 43));
    // Line 7 is cited too: the sizes stopped short of maxBytes.
    assert!(busbw.evidence.iter().any(|e| e.source.ends_with(":7")));
}

#[test]
fn openshift_l40s_pods_over_sriov_roce() {
    let Some((name, text)) =
        read("all_reduce_perf_4xL40S_2pods_openshift_sriov-roce_IB-enabled_nccl2.27.3.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 1: `nGpus 2`; lines 4-7: two GPUs in each of two pods.
    assert_eq!(run.params.as_ref().unwrap().gpus_per_process, Some(2));
    assert_eq!(run.hosts().len(), 2);
    // Line 45: 8589934592 … 9.63 / 9.62.
    assert_eq!(run.largest().unwrap().busbw(), 9.63);

    // NCCL_IB_HCA=mlx5_2,mlx5_8: two 200 Gb/s VFs: 50 GB/s; 9.63 is 19%.
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(2),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Fail, 45));
    // Lines 14-45: busbw rises to 9.6 and stays: no collapse.
    assert_eq!(one(&findings, "VAL111").status, Status::Pass);
}

#[test]
fn eight_a100_all_reduce_in_the_legacy_layout() {
    let Some((name, text)) =
        read("all_reduce_perf_8xA100-SXM4-40GB_1node_legacy-error-column_superbench.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 14: `size count type redop time …`: a redop column, no root.
    let largest = run.largest().unwrap();
    assert_eq!(largest.redop.as_deref(), Some("sum"));
    assert_eq!(largest.root, None);
    // Line 50: 8589934592 … 235.26 / 235.03.
    assert_eq!((largest.line, largest.busbw()), (50, 235.26));
    // Line 52: `# Avg bus bandwidth : 68.4048`.
    assert_eq!(run.avg_busbw.unwrap().line, 52);
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL110").status, Status::Pass);
}

#[test]
fn polaris_all_reduce_over_slingshot() {
    let Some((name, text)) = read("all_reduce_perf_8xA100_2nodes_polaris-slingshot_nccl2.18.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 44: 1073741824 … 9.45 / 9.45.
    assert_eq!(run.largest().unwrap().busbw(), 9.45);
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(2),
        collective: Some(Collective::AllReduce),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    // 9.45 of 50 GB/s: 19%.
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Fail, 44));
}

#[test]
fn aws_batch_all_reduce_with_tagged_lines() {
    let Some((name, text)) = read("all_reduce_perf_aws-batch_p5-efa_mpirun-prefixed_trimmed.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 2: the header with long runs of trailing spaces; line 35:
    // 17179869184 … 483.05 / 483.35; line 37: `# Avg bus bandwidth : 156.742`.
    assert_eq!(run.header_line, Some(2));
    let largest = run.largest().unwrap();
    assert_eq!((largest.line, largest.busbw()), (35, 483.35));
    assert_eq!(run.avg_busbw.unwrap().value, 156.742);
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL108").status, Status::Pass);
}

#[test]
fn sixteen_h100_tests_failing_on_every_rank() {
    let Some((name, text)) =
        read("alltoall-sendrecv_perf_16xH100_2nodes_fail_network-error_all-ranks.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    // Lines 22-32 and 55-69: 14 `Test NCCL failure` lines, each followed by
    // one ` .. cnode2-016 pid N: Test failure common.cu:1100` line.
    let failures = &output.tests.failures;
    assert_eq!(failures.len(), 14);
    assert_eq!(failures[0].line, 22);
    assert_eq!(failures[0].host, "cnode2-016");
    assert_eq!(
        failures[0].message,
        "remote process exited or there was a network error"
    );
    assert!(failures.iter().all(|f| f.trace_lines == 1));
    // Neither test got to its table.
    assert!(output.tests.runs.iter().all(|r| r.rows.is_empty()));

    let findings = judge(&name, &text);
    let aborted = one(&findings, "VAL110");
    assert_eq!((aborted.status, line(aborted)), (Status::Fail, 22));
    assert!(
        aborted.message.contains("14 time(s) from cnode2-016"),
        "{}",
        aborted.message
    );
    assert!(of(&findings, "VAL109").is_empty());
}

#[test]
fn two_h100_alltoall_and_sendrecv_pass() {
    let Some((name, text)) = read("alltoall-sendrecv_perf_2xH100_2nodes_nccl-tests2.17.6_pass.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let runs = &output.tests.runs;
    assert_eq!(runs.len(), 2);
    // Line 21: alltoall at 16 GiB, 13.51 / 13.60 (#wrong 0, then N/A).
    let alltoall = runs[0].largest().unwrap();
    assert_eq!(
        (alltoall.line, alltoall.busbw(), alltoall.wrong()),
        (21, 13.60, Some(0))
    );
    // Line 47: sendrecv at 16 GiB, 13.59 / 13.61.
    assert_eq!(runs[1].largest().unwrap().busbw(), 13.61);

    // One 200 Gb/s rail per node: alltoall n=2, G=1: 25 GB/s × 1/(1·1).
    let expectations = Expectations {
        link_rate_gbps: Some(200.0),
        rails: Some(1),
        ..Expectations::default()
    };
    let findings = judge_with(&name, &text, &expectations);
    let busbw = of(&findings, "VAL109");
    // 13.60 of 25 GB/s: 54%; sendrecv the same on one rail. One remote
    // peer per rank: reported, not graded.
    assert_eq!((busbw[0].status, line(busbw[0])), (Status::Info, 21));
    assert_eq!((busbw[1].status, line(busbw[1])), (Status::Info, 47));
    assert!(
        busbw[0].message.contains("54% of the 25.00 GB/s"),
        "{}",
        busbw[0].message
    );
    assert_eq!(busbw[0].subject, format!("{name} alltoall"));
}

#[test]
fn eight_h100_alltoall_aborts_and_sendrecv_collapses() {
    let Some((name, text)) = read(
        "alltoall-sendrecv_perf_8xH100_2nodes_fail_remote-process-exited-or-network-error.txt",
    ) else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let runs = &output.tests.runs;
    // Line 16: alltoall's header; line 18: the failure right after it.
    assert_eq!(runs[0].header_line, Some(16));
    assert!(runs[0].rows.is_empty());
    assert_eq!(output.tests.failures[0].line, 18);
    // Line 18 is followed by six ` .. cnode2-001 pid 441581: Test failure` lines.
    assert_eq!(output.tests.failures[0].trace_lines, 6);
    // Line 51: `1.6e+07` µs at 16 GiB, busbw 1.09 / 1.03.
    let largest = runs[1].largest().unwrap();
    assert_eq!(
        (largest.line, largest.out_of_place.as_ref().unwrap().time_us),
        (51, 1.6e7)
    );

    let findings = judge(&name, &text);
    let aborted = one(&findings, "VAL110");
    assert_eq!((aborted.status, line(aborted)), (Status::Fail, 18));
    // Line 44: 9.40 GB/s at 128 MiB; line 51: 1.09 at 16 GiB (12%).
    let drop = one(&findings, "VAL111");
    assert_eq!(drop.status, Status::Warn);
    assert_eq!(line(drop), 44);
    assert!(drop.evidence.iter().any(|e| e.source.ends_with(":51")));
}

#[test]
fn eight_a100_alltoall_with_an_empty_redop_cell() {
    let Some((name, text)) =
        read("alltoall_perf_8xA100-SXM4-40GB_1node_legacy-error-column_superbench.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let run = &output.tests.runs[0];
    // Line 15: `0 0 float 1.63 …`: the redop cell is empty.
    assert_eq!(run.rows[0].redop, None);
    assert_eq!(run.rows.len(), 34);
    // Line 49: 8589934592 … 224.31 / 226.16.
    let largest = run.largest().unwrap();
    assert_eq!((largest.line, largest.busbw()), (49, 226.16));
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL109").status, Status::Info);
}

#[test]
fn pytorch_on_polaris_falls_back_to_sockets() {
    let Some((name, text)) =
        read("nccl_debug_pytorch_8xA100_2nodes_polaris_NET-IB-no-device_NET-Socket-fallback.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    assert!(output.tests.runs.is_empty());
    let log = &output.log;
    // Line 4: `NCCL version 2.20.5+cuda12.4` printed without a header.
    assert_eq!(log.version, Some((4, NcclVersion::new(2, 20, 5))));
    // Line 18: `NET/IB : No device found.`; line 21: `Using network Socket`.
    assert_eq!(log.no_ib_device, Some(18));
    assert_eq!(log.networks, vec![(21, "Socket".to_owned())]);
    // Line 25: `nRanks 8 nNodes 2 localRanks 4`.
    let shape = log.shape.unwrap();
    assert_eq!((shape.line, shape.nodes, shape.local_ranks), (25, 2, 4));
    // 23 whole `via NET/Socket` channel lines (a 24th is cut by another process).
    let socket = &log.net_channels[0];
    assert_eq!(
        (socket.net.as_str(), socket.count, socket.line),
        ("Socket", 23, 80)
    );
    // Line 1 and line 15: the two nodes' hosts. Line 30 starts with a host
    // name garbled by another process (`x3006c0s25b0x3006c0s25b0n0:…`): the
    // host seen before is recognised at its end.
    assert!(log.hosts.iter().any(|h| h == "x3006c0s1b1n0"));
    assert!(log.hosts.iter().any(|h| h == "x3006c0s25b0n0"));
    assert!(!log.hosts.iter().any(|h| h == "x3006c0s25b0x3006c0s25b0n0"));

    let findings = judge(&name, &text);
    let transport = one(&findings, "VAL101");
    assert_eq!((transport.status, line(transport)), (Status::Fail, 80));
    let device = one(&findings, "VAL102");
    assert_eq!((device.status, line(device)), (Status::Fail, 18));
}

#[test]
fn roce_pair_with_gpudirect_disabled_for_both_hcas() {
    let Some((name, text)) =
        read("nccl_debug_roce_2xmlx5_GDR-disabled-for-HCA_issue-nccl-1537.txt")
    else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let log = &output.log;
    // Line 1: `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]`.
    let names: Vec<_> = log
        .ib_devices
        .iter()
        .map(|d| (d.name.as_str(), d.link_layer.as_str()))
        .collect();
    assert_eq!(names, vec![("mlx5_0", "RoCE"), ("mlx5_1", "RoCE")]);

    let findings = judge(&name, &text);
    // Lines 5 and 6: `GPU Direct RDMA Disabled for HCA 0 'mlx5_0'` / `1 'mlx5_1'`.
    let gdr = of(&findings, "VAL103");
    assert_eq!(gdr.len(), 2);
    assert_eq!(
        (
            gdr[0].status,
            line(gdr[0]),
            gdr[0].subject.ends_with("mlx5_0")
        ),
        (Status::Fail, 5, true)
    );
    assert_eq!((gdr[1].status, line(gdr[1])), (Status::Fail, 6));
    // Line 3: `Using network IB`; line 1: the devices in use.
    assert_eq!(
        (
            one(&findings, "VAL101").status,
            line(one(&findings, "VAL101"))
        ),
        (Status::Pass, 3)
    );
    assert_eq!(line(one(&findings, "VAL102")), 1);
}

#[test]
fn roce_completion_errors_retry_exceeded_then_flushes() {
    let Some((name, text)) = read(
        "nccl_warn_ib_completion_status12-vendor-err129_then_status5-vendor-err249_roce_issue-nccl-1814.txt",
    ) else {
        return;
    };
    let output = nccl::parse(&text);
    assert!(output.notes.is_empty(), "{:?}", output.notes);
    let errors = &output.log.completion_errors;
    // Line 1: `status=12 … vendor err 129`; lines 6 and 11: `status=5 … vendor err 249`.
    assert_eq!(errors.len(), 2);
    assert_eq!(
        (errors[0].line, errors[0].status, errors[0].vendor_err),
        (1, 12, Some(129))
    );
    assert_eq!(
        (
            errors[1].line,
            errors[1].status,
            errors[1].vendor_err,
            errors[1].count
        ),
        (6, 5, Some(249), 2)
    );

    let findings = judge(&name, &text);
    let completion = of(&findings, "VAL106");
    // Line 1: the cause, transport retry counter exceeded.
    assert_eq!(
        (completion[0].status, line(completion[0])),
        (Status::Fail, 1)
    );
    assert!(
        completion[0].message.contains("IBV_WC_RETRY_EXC_ERR"),
        "{}",
        completion[0].message
    );
    // Line 6: the flushes that follow are its consequence.
    assert_eq!(
        (completion[1].status, line(completion[1])),
        (Status::Info, 6)
    );
}
