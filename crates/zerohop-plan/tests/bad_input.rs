//! Bad intent files: a clear error with file:line:column, nothing rendered.

use zerohop_plan::load;

fn cluster() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cluster.yaml");
    std::fs::read_to_string(path).expect("example readable")
}

fn error_for(text: &str) -> String {
    match load("cluster.yaml", text, None) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn unknown_key_with_a_suggestion() {
    let text = cluster().replace("    gpusPerPod: 8", "    gpusPerPd: 8");
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn pf_listed_twice() {
    let text = cluster().replace("{pf: ens2f0np0", "{pf: ens1f0np0");
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn more_vfs_than_the_nic_supports() {
    let text = cluster().replace("vfs: 4, rail: 8", "vfs: 200, rail: 8");
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn vlan_on_the_nfs_over_rdma_network() {
    let text = cluster().replace(
        "rail: 8, subnet: 10.10.0.0/24,",
        "rail: 8, subnet: 10.10.0.0/24, vlan: 100,",
    );
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn unknown_and_vf_device_ids() {
    let text = cluster().replace(
        r#"{pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021""#,
        r#"{pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "abcd""#,
    );
    let text = text.replace(
        r#"{pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: "1021""#,
        r#"{pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: "101e""#,
    );
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn webhook_rules() {
    let text = cluster()
        .replace(
            "vfs: 4, rail: 8",
            "vfs: 4, rail: 8, deviceType: vfio-pci, resourceName: rdma-storage",
        )
        .replace(
            "    ipam: whereabouts",
            "    ipam: whereabouts\n    resourcePrefix: intel.com",
        );
    insta::assert_snapshot!(error_for(&text));
}

#[test]
fn yaml_syntax_and_type_errors() {
    insta::assert_snapshot!(error_for(
        "apiVersion: zerohop.dev/v1alpha1\nkind: [unclosed\n"
    ));
    insta::assert_snapshot!(error_for(&cluster().replace("gpus: 8", "gpus: eight")));
    insta::assert_snapshot!(error_for(
        &cluster().replace("platform: kubernetes", "platform: kubernets")
    ));
}

mod never_panics {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = zerohop_plan::load("x.yaml", &text, None);
        }

        #[test]
        fn on_mutated_examples(cut in 0usize..3000, insert in "[ :\\-\\[\\]{}a-z0-9\n]{0,8}") {
            let text = super::cluster();
            let at = text.char_indices().map(|(i, _)| i).nth(cut % text.chars().count()).unwrap_or(0);
            let mutated = format!("{}{}{}", &text[..at], insert, &text[at..]);
            if let Ok(plan) = zerohop_plan::load("x.yaml", &mutated, None) {
                let _ = zerohop_plan::render(&plan);
            }
        }
    }
}

/// Issue #14, defect 7: on OpenShift a node pool becomes a
/// MachineConfigPool; `worker` is one of the cluster's own.
#[test]
fn openshift_pool_named_like_a_cluster_pool() {
    let text = cluster()
        .replace("platform: kubernetes", "platform: openshift")
        .replace("- name: h100", "- name: worker");
    insta::assert_snapshot!(error_for(&text));
}

/// Issue #14, defect 7: two pools whose selectors select the same nodes
/// cannot both be MachineConfigPools of those nodes.
#[test]
fn openshift_pools_selecting_the_same_nodes() {
    let cluster = cluster().replace("platform: kubernetes", "platform: openshift");
    let start = cluster.find("    - name: h100").expect("pool");
    let end = cluster.find("  rdma:").expect("rdma");
    let second = cluster[start..end]
        .replace("- name: h100", "- name: h100-b")
        .replace("{pf: ens", "{pf: enx");
    let text = format!("{}{second}{}", &cluster[..end], &cluster[end..]);
    insta::assert_snapshot!(error_for(&text));
}

/// Issue #14, defect 4: a pod no node of the pool can hold (200 exclusive
/// CPUs where the layout has 104 outside `reservedCpus`) is refused with
/// the reason, not rendered to stay Pending.
#[test]
fn workload_cpus_that_no_node_has() {
    let text = cluster().replace("    memory: 512Gi", "    cpus: 200\n    memory: 512Gi");
    insta::assert_snapshot!(error_for(&text));
}

/// A NUMA layout whose GPUs do not add up to the pool's, and a NIC on a
/// NUMA node the pool does not have.
#[test]
fn numa_layout_that_contradicts_the_pool() {
    let text = cluster()
        .replace(
            "{cpus: \"28-55,84-111\", gpus: 4}",
            "{cpus: \"28-55,84-111\", gpus: 2}",
        )
        .replace(
            "rail: 7, subnet: 192.168.107.0/24, numaNode: 1}",
            "rail: 7, subnet: 192.168.107.0/24, numaNode: 2}",
        );
    insta::assert_snapshot!(error_for(&text));
}

/// `host-local` IPAM on rail networks that span the pool's nodes: every
/// node would hand out the same addresses (lint ZL097 says the same of
/// hand-written networks).
#[test]
fn host_local_ipam_is_refused() {
    let text = cluster().replace("    ipam: whereabouts", "    ipam: host-local");
    assert_ne!(text, cluster());
    insta::assert_snapshot!(error_for(&text));
}

/// Issue #24, item 14: a RoCE rail below `zerohop_known::roce::MIN_MTU`
/// (4096-byte path MTU) is refused, as the doctor's QOS001 would fail every
/// such port; the floor itself is accepted, and InfiniBand keeps its own
/// range.
#[test]
fn roce_mtu_below_the_4096_byte_path_mtu() {
    let floor = zerohop_known::roce::MIN_MTU;
    let text = cluster().replace(
        "linkType: ETH, mtu: 9000, vfs: one-per-gpu, rail: 0,",
        "linkType: ETH, mtu: 1500, vfs: one-per-gpu, rail: 0,",
    );
    let err = error_for(&text);
    assert!(err.contains(&format!("mtu 1500 is below {floor}")), "{err}");
    assert!(err.contains("[ZP"), "{err}");
    let at_floor = cluster().replace("mtu: 9000", &format!("mtu: {floor}"));
    assert!(load("cluster.yaml", &at_floor, None).is_ok());
}

/// A NIC's `linkRateGbps` is a port rate Linux can report, in Gb/s: 0 and
/// anything above `zerohop_known::nic::MAX_LINK_RATE_GBPS` (a rate typed in
/// Mb/s, say) are refused at the value's line and column; 400 is accepted
/// and reaches the plan.
#[test]
fn link_rate_outside_what_a_port_reports() {
    let nic = "linkType: ETH, mtu: 9000, vfs: one-per-gpu, rail: 0,";
    for rate in ["0", "400000"] {
        let text = cluster().replace(
            nic,
            &format!("linkType: ETH, linkRateGbps: {rate}, mtu: 9000, vfs: one-per-gpu, rail: 0,"),
        );
        let err = error_for(&text);
        assert!(
            err.contains(&format!("linkRateGbps {rate} is out of range [ZP019]")),
            "{err}"
        );
        assert!(err.contains("cluster.yaml:26:"), "{err}");
        assert!(err.contains("1 to 1600"), "{err}");
    }
    let text = cluster().replace(
        nic,
        "linkType: ETH, linkRateGbps: 400, mtu: 9000, vfs: one-per-gpu, rail: 0,",
    );
    let plan = load("cluster.yaml", &text, None).expect("accepted");
    let rates: Vec<Option<u32>> = plan.pools[0]
        .nics
        .iter()
        .map(|n| n.link_rate_gbps)
        .collect();
    assert_eq!(rates[0], Some(400));
    assert_eq!(rates[1], None);
}
