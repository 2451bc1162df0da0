//! Every perftest capture of `../shared/corpus/outputs/perftest`, one test
//! each: the values the capture shows, and the judgements, each with the
//! line of the capture that justifies it.

mod support;

use support::{capture, judge, judge_with, line, one};
use zerohop_core::Status;
use zerohop_validate::judge::Expectations;
use zerohop_validate::perftest::{self, FailureKind};

const DIR: &str = "outputs/perftest/";

fn read(name: &str) -> Option<(String, String)> {
    let path = format!("{DIR}{name}");
    capture(&path).map(|text| (path, text))
}

fn rate(gbps: f64) -> Expectations {
    Expectations {
        link_rate_gbps: Some(gbps),
        ..Expectations::default()
    }
}

#[test]
fn ib_read_bw_on_hdr_all_sizes() {
    let Some((name, text)) = read("ib_read_bw_client_ib-200G_all-sizes_gbits_aks_table-only.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    let rows = &out.runs[0].bandwidth;
    // Lines 3-25: 2 B to 8 MiB.
    assert_eq!(rows.len(), 23);
    // Line 3: six decimals at small sizes, `0.045291`.
    assert_eq!(rows[0].average_gbps, 0.045291);
    // Line 25: 8388608 … 197.48 197.48.
    assert_eq!(
        (rows[22].line, rows[22].bytes, rows[22].average_gbps),
        (25, 8_388_608, 197.48)
    );

    // HDR: 200 Gb/s; 197.48 is 99%.
    let findings = judge_with(&name, &text, &rate(200.0));
    let bandwidth = one(&findings, "VAL201");
    assert_eq!((bandwidth.status, line(bandwidth)), (Status::Pass, 25));
    assert!(
        bandwidth.message.contains("99% of the 200.0 Gb/s"),
        "{}",
        bandwidth.message
    );
    assert_eq!(one(&findings, "VAL204").status, Status::Pass);
}

#[test]
fn ib_read_lat_percentiles() {
    let Some((name, text)) = read("ib_read_lat_client_ib_2B_aks_table-only.txt") else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 3: 2 B, 1000 iterations, typical 5.49, 99% 5.74, 99.9% 11.78.
    let row = out.runs[0].latency[0];
    assert_eq!((row.line, row.bytes, row.iterations), (3, 2, 1000));
    assert_eq!(
        (row.typical, row.p99, row.p999),
        (Some(5.49), Some(5.74), Some(11.78))
    );

    let findings = judge(&name, &text);
    // 11.78 is about twice 5.49: no long tail.
    let latency = one(&findings, "VAL202");
    assert_eq!((latency.status, line(latency)), (Status::Pass, 3));
}

#[test]
fn iwarp_send_bw_cannot_register_memory() {
    let Some((name, text)) = read(
        "ib_send_bw_client_rdma-cm_iwarp-cxgb4_fail_couldnt-allocate-MR_unable-to-init-socket_issue-perftest-26.txt",
    ) else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 1: `Couldn't allocate MR`; line 6: `Unable to init the socket connection`.
    assert_eq!(out.failures[0].kind, FailureKind::MemoryRegistration);
    assert_eq!(out.failures[5].kind, FailureKind::Socket);
    assert!(out.cuda.is_none());

    let findings = judge(&name, &text);
    // Line 1 is the root cause; without CUDA, the locked-memory limit.
    let failed = one(&findings, "VAL204");
    assert_eq!((failed.status, line(failed)), (Status::Fail, 1));
    assert!(
        failed.message.contains("locked-memory"),
        "{}",
        failed.message
    );
}

#[test]
fn roce_write_bw_from_a40_memory_over_rdma_cm() {
    let Some((name, text)) =
        read("ib_write_bw_client_A40_roce-gid3_rdma-cm_use-cuda-dmabuf_16qp_gbits_openshift.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 4: `Changing to active mtu - 3`: 1024 bytes.
    assert_eq!(out.mtu_lowered, Some((4, 1024)));
    // Line 10: `device name = [NVIDIA A40]`; line 14: `cuMemAlloc() of a 2097152 bytes GPU buffer`.
    let cuda = out.cuda.as_ref().unwrap();
    assert_eq!(
        (cuda.line, cuda.gpu.as_deref(), cuda.allocated),
        (5, Some("NVIDIA A40"), true)
    );
    let run = &out.runs[0];
    // Line 17: `RDMA_Write BW Test`; lines 18-29: the banner.
    assert_eq!(run.test.as_deref(), Some("RDMA_Write BW Test"));
    assert_eq!(run.device.as_deref(), Some("mlx5_1"));
    assert_eq!(run.qps, Some(16));
    assert_eq!(run.mtu, Some((25, 1024)));
    assert_eq!(run.gid_index, Some((27, 3)));
    assert_eq!(run.rdma_cm, Some(true));
    assert_eq!(run.tos, Some(41));
    // Line 33: the local GID 10.6.145.33; line 65: the remote one, .32.
    assert_eq!(
        run.local_gid.map(|(l, g)| (l, g.ipv4())),
        Some((33, Some("10.6.145.33".to_owned())))
    );
    assert_eq!(
        run.remote_gid.map(|(l, g)| (l, g.ipv4())),
        Some((65, Some("10.6.145.32".to_owned())))
    );
    // Line 98: duration mode, peak 0.00, average 181.46.
    let row = run.bandwidth[0];
    assert_eq!(
        (row.line, row.peak_gbps, row.average_gbps),
        (98, 0.0, 181.46)
    );

    // A 200 Gb/s VF: 181.46 is 91%.
    let findings = judge_with(&name, &text, &rate(200.0));
    let bandwidth = one(&findings, "VAL201");
    assert_eq!((bandwidth.status, line(bandwidth)), (Status::Pass, 98));
    assert!(
        bandwidth.message.contains("peak not measured"),
        "{}",
        bandwidth.message
    );
    // Line 25: `Mtu : 1024[B]` on Ethernet.
    let mtu = one(&findings, "VAL205");
    assert_eq!((mtu.status, line(mtu)), (Status::Warn, 25));
    // Line 33: an IPv4-mapped GID, RoCE v2.
    let gid = one(&findings, "VAL206");
    assert_eq!((gid.status, line(gid)), (Status::Pass, 33));
    // Line 5: GPU memory.
    let gpu = one(&findings, "VAL203");
    assert_eq!((gpu.status, line(gpu)), (Status::Pass, 5));
}

#[test]
fn roce_write_bw_between_oke_pods() {
    let Some((name, text)) =
        read("ib_write_bw_client_cx-mlx5_5_roce-gid3_rdma-cm_4qp_gbits_oke.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    let run = &out.runs[0];
    // Line 8: `Mtu : 4096[B]`; line 9: `Link type : Ethernet`; line 16: 10.224.4.233.
    assert_eq!(run.mtu, Some((8, 4096)));
    assert_eq!(
        run.link_type.as_ref().map(|(l, t)| (*l, t.as_str())),
        Some((9, "Ethernet"))
    );
    assert_eq!(
        run.local_gid.and_then(|(_, g)| g.ipv4()).as_deref(),
        Some("10.224.4.233")
    );
    // Line 33: 65536 … 98.01 98.01.
    assert_eq!(
        (run.bandwidth[0].line, run.bandwidth[0].average_gbps),
        (33, 98.01)
    );

    // A 100 Gb/s RoCE port: 98%.
    let findings = judge_with(&name, &text, &rate(100.0));
    assert_eq!(
        (
            one(&findings, "VAL201").status,
            line(one(&findings, "VAL201"))
        ),
        (Status::Pass, 33)
    );
    assert_eq!(
        (
            one(&findings, "VAL205").status,
            line(one(&findings, "VAL205"))
        ),
        (Status::Pass, 8)
    );
    // No CUDA lines: host memory.
    assert_eq!(one(&findings, "VAL203").status, Status::Info);
}

#[test]
fn ib_write_bw_on_hdr_all_sizes() {
    let Some((name, text)) = read("ib_write_bw_client_ib-200G_all-sizes_gbits_aks_table-only.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    let rows = &out.runs[0].bandwidth;
    // Line 25: 8388608 … 196.56 196.55.
    assert_eq!((rows[22].line, rows[22].average_gbps), (25, 196.55));
    // A 400 Gb/s expectation (NDR): 49% fails.
    let findings = judge_with(&name, &text, &rate(400.0));
    let bandwidth = one(&findings, "VAL201");
    assert_eq!((bandwidth.status, line(bandwidth)), (Status::Fail, 25));
    // Without a rate: reported only.
    let findings = judge(&name, &text);
    assert_eq!(one(&findings, "VAL201").status, Status::Info);
}

#[test]
fn roce_write_bw_without_a_server() {
    let Some((name, text)) = read(
        "ib_write_bw_client_roce-rocep133s0f0_fail_couldnt-connect_unable-to-init-socket_issue-perftest-pr228.txt",
    ) else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 1: `Couldn't connect to 192.168.125.211:18515`; line 2: the socket lines run together.
    assert_eq!(out.failures[0].kind, FailureKind::Connect);
    assert_eq!(out.failures[1].kind, FailureKind::Socket);
    let findings = judge(&name, &text);
    let failed = one(&findings, "VAL204");
    assert_eq!((failed.status, line(failed)), (Status::Fail, 1));
    assert!(
        failed.message.contains("192.168.125.211:18515"),
        "{}",
        failed.message
    );
}

#[test]
fn use_cuda_dmabuf_before_use_cuda_is_refused() {
    let Some((name, text)) = read(
        "ib_write_bw_fail_use-cuda-dmabuf-before-use-cuda_parser-error_issue-perftest-336.txt",
    ) else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 1: `CUDA DMA-BUF cannot be used without CUDA`.
    assert_eq!(
        (out.failures[0].line, out.failures[0].kind),
        (1, FailureKind::Options)
    );
    let findings = judge(&name, &text);
    let failed = one(&findings, "VAL204");
    assert_eq!((failed.status, line(failed)), (Status::Fail, 1));
    assert!(
        failed
            .message
            .contains("--use_cuda=<gpu> before --use_cuda_dmabuf"),
        "{}",
        failed.message
    );
}

#[test]
fn loopback_client_and_server_interleaved_in_mb_per_second() {
    let Some((name, text)) =
        read("ib_write_bw_loopback_ib_8M_MBsec_server-client-interleaved_superbench.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 1: the client's banner; line 20: `Waiting for client to connect`;
    // line 23: the server's banner.
    assert_eq!(out.runs.len(), 2);
    assert_eq!((out.runs[0].line, out.runs[0].server), (1, false));
    assert_eq!((out.runs[1].line, out.runs[1].server), (23, true));
    // Lines 18 and 39: 24056.72 MB/sec (MiB/s) = 201.8 Gb/s.
    for (run, at) in out.runs.iter().zip([18, 39]) {
        let row = run.bandwidth[0];
        assert_eq!(row.line, at);
        assert!(
            (row.average_gbps - 201.80).abs() < 0.01,
            "{}",
            row.average_gbps
        );
    }
    assert_eq!(out.runs[0].device.as_deref(), Some("ib0"));

    let findings = judge_with(&name, &text, &rate(200.0));
    let bandwidth: Vec<_> = findings.iter().filter(|f| f.id == "VAL201").collect();
    assert_eq!(bandwidth.len(), 2);
    assert_eq!(
        (bandwidth[0].status, line(bandwidth[0])),
        (Status::Pass, 18)
    );
    assert!(
        bandwidth[1].subject.ends_with("ib0 server"),
        "{}",
        bandwidth[1].subject
    );
    // Line 9: `Link type : IB`: no RoCE GID to judge.
    assert!(findings.iter().all(|f| f.id != "VAL206"));
}

#[test]
fn k80_server_cannot_register_gpu_memory() {
    let Some((name, text)) =
        read("ib_write_bw_server_use-cuda_TeslaK80_fail_couldnt-allocate-MR_issue-perftest-31.txt")
    else {
        return;
    };
    let out = perftest::parse(&text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Line 6: `device name = [Tesla K80]`; line 9: the GPU buffer.
    assert_eq!(out.cuda.as_ref().unwrap().gpu.as_deref(), Some("Tesla K80"));
    // Line 11: `Couldn't allocate MR`; line 14: `Couldn't create IB resources`.
    assert_eq!(
        (out.failures[0].line, out.failures[0].kind),
        (11, FailureKind::MemoryRegistration)
    );
    assert_eq!(out.failures.last().unwrap().kind, FailureKind::Resources);

    let findings = judge(&name, &text);
    // With GPU memory, the missing piece is peer memory or DMA-BUF.
    let failed = one(&findings, "VAL204");
    assert_eq!((failed.status, line(failed)), (Status::Fail, 11));
    assert!(
        failed
            .message
            .contains("GPUDirect RDMA has no way into GPU memory"),
        "{}",
        failed.message
    );
    // Line 4: CUDA was used, but registration failed.
    let gpu = one(&findings, "VAL203");
    assert_eq!((gpu.status, line(gpu)), (Status::Info, 4));
}
