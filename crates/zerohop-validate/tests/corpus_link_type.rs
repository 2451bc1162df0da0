//! `nccl-link-type-mismatch` on real `NCCL_DEBUG=INFO` logs: the link
//! layer NCCL printed for each device (`/IB`, `/RoCE`) or the socket
//! transport, against the link type an intent plans.

mod support;

use std::path::Path;

use support::{capture, judge, judge_with, line, one};
use zerohop_core::Status;
use zerohop_validate::judge::{Expectations, LinkLayer, PlannedFabric};

/// An intent's pool of two rails of `layer`.
fn planned(layer: LinkLayer) -> Expectations {
    Expectations {
        planned: Some(PlannedFabric {
            source: "intent cluster.yaml, pool gpu".to_owned(),
            rails: 2,
            gpus_per_node: Some(8),
            link_layer: Some(layer),
            link_rate_gbps: None,
        }),
        ..Expectations::default()
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

#[test]
fn infiniband_ports_with_the_sharp_plugin_match_an_infiniband_plan_only() {
    // NVIDIA/nccl#1357: two H100 nodes, four `/IB/SHARP` ports.
    let name = "tests/fixtures/nccl_debug_4xIB-SHARP_2nodes_H100_issue-nccl-1357.txt";
    let text = fixture(name);
    let findings = judge_with(name, &text, &planned(LinkLayer::InfiniBand));
    let link = one(&findings, "VAL113");
    assert_eq!((link.status, line(link)), (Status::Pass, 1), "{link:#?}");
    assert!(
        link.message
            .contains("NCCL used 4 device(s) over IB, as the plan has"),
        "{}",
        link.message
    );
    let findings = judge_with(name, &text, &planned(LinkLayer::Ethernet));
    let link = one(&findings, "VAL113");
    assert_eq!((link.status, line(link)), (Status::Fail, 1), "{link:#?}");
    assert!(
        link.message.contains(
            "the plan has RoCE rails (intent cluster.yaml, pool gpu), NCCL used mlx5_0:1/IB mlx5_1:1/IB mlx5_4:1/IB mlx5_5:1/IB"
        ),
        "{}",
        link.message
    );
    assert!(link.remediation.is_some());
    // Without a plan the link type is not judged.
    let findings = judge_with(name, &text, &Expectations::default());
    assert_eq!(one(&findings, "VAL113").status, Status::NotApplicable);
}

#[test]
fn roce_ports_match_a_roce_plan_and_fail_an_infiniband_one() {
    // NVIDIA/nccl#1537: a 16-rank job over `mlx5_0:1/RoCE mlx5_1:1/RoCE`.
    let name = "outputs/nccl-tests/nccl_debug_roce_2xmlx5_GDR-disabled-for-HCA_issue-nccl-1537.txt";
    let Some(text) = capture(name) else {
        return;
    };
    let findings = judge_with(name, &text, &planned(LinkLayer::Ethernet));
    let link = one(&findings, "VAL113");
    assert_eq!((link.status, line(link)), (Status::Pass, 1), "{link:#?}");
    assert!(
        link.message.contains("2 device(s) over RoCE"),
        "{}",
        link.message
    );
    let findings = judge_with(name, &text, &planned(LinkLayer::InfiniBand));
    let link = one(&findings, "VAL113");
    assert_eq!((link.status, line(link)), (Status::Fail, 1), "{link:#?}");
    assert!(
        link.message
            .contains("the plan has IB rails (intent cluster.yaml, pool gpu), NCCL used mlx5_0:1/RoCE mlx5_1:1/RoCE"),
        "{}",
        link.message
    );
}

#[test]
fn a_socket_fallback_is_not_the_planned_link() {
    // ALCF Polaris without its plugin: `NET/IB : No device found.`, then
    // `NET/Socket : Using [0]bond0:… [1]hsn1:… [2]hsn0:…` at line 19 and
    // `Using network Socket` at line 21, across 2 nodes.
    let name = "outputs/nccl-tests/nccl_debug_pytorch_8xA100_2nodes_polaris_NET-IB-no-device_NET-Socket-fallback.txt";
    let Some(text) = capture(name) else {
        return;
    };
    let findings = judge_with(name, &text, &planned(LinkLayer::InfiniBand));
    let link = one(&findings, "VAL113");
    assert_eq!(link.status, Status::Fail, "{link:#?}");
    assert!(
        link.message
            .contains("the plan has IB rails (intent cluster.yaml, pool gpu), NCCL moved data with NET/Socket: TCP sockets, not RDMA"),
        "{}",
        link.message
    );
    assert!(
        link.evidence
            .iter()
            .any(|e| e.source.ends_with(":19") && e.value.contains("hsn0")),
        "{link:#?}"
    );
}

#[test]
fn roce_ports_grouped_into_virtual_nics_are_each_judged() {
    // NVIDIA/nccl-tests#373: HPC-X's plugin lists four RoCE ports in two
    // virtual NICs on line 5; three nodes, channels over NET/IBext_v8.
    let name = "tests/fixtures/nccl_debug_4xRoCE-merged-vNICs_3nodes_issue-nccl-tests-373.txt";
    let text = fixture(name);
    let findings = judge_with(name, &text, &planned(LinkLayer::Ethernet));
    let link = one(&findings, "VAL113");
    assert_eq!((link.status, line(link)), (Status::Pass, 5), "{link:#?}");
    assert!(
        link.message.contains("4 device(s) over RoCE"),
        "{}",
        link.message
    );
    let devices = one(&findings, "VAL102");
    assert_eq!(
        (devices.status, line(devices)),
        (Status::Pass, 5),
        "{devices:#?}"
    );
    assert!(
        devices
            .message
            .contains("mlx5_2:1/RoCE mlx5_3:1/RoCE mlx5_0:1/RoCE mlx5_1:1/RoCE"),
        "{}",
        devices.message
    );
    let findings = judge_with(name, &text, &planned(LinkLayer::InfiniBand));
    assert_eq!(one(&findings, "VAL113").status, Status::Fail);
}

#[test]
fn sockets_over_ipoib_fail_by_default_and_are_named() {
    // NVIDIA/nccl-tests#188: `NCCL_IB_DISABLE=1` on InfiniBand nodes, so
    // NCCL's sockets ran over the IPoIB interfaces `ibs85f0` and `ib0`
    // (line 2) and `Using network Socket` (line 3).
    let name = "tests/fixtures/nccl_debug_socket-over-IPoIB_IB-disabled_issue-nccl-tests-188.txt";
    let text = fixture(name);
    // Without any option: the transport judgement fails and says IPoIB.
    let findings = judge(name, &text);
    let transport = one(&findings, "VAL101");
    assert_eq!(transport.status, Status::Fail, "{transport:#?}");
    assert!(
        transport
            .message
            .contains("TCP over IPoIB (ibs85f0, ib0), not RDMA"),
        "{}",
        transport.message
    );
    // With an InfiniBand plan: the link type NCCL used is not the plan's.
    let findings = judge_with(name, &text, &planned(LinkLayer::InfiniBand));
    let link = one(&findings, "VAL113");
    assert_eq!(link.status, Status::Fail, "{link:#?}");
    assert!(
        link.message
            .ends_with("NCCL moved data with NET/Socket: TCP over IPoIB (ibs85f0, ib0), not RDMA"),
        "{}",
        link.message
    );
}
