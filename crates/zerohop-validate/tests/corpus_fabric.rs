//! The RDMA NIC captures of `../shared/corpus/outputs/rdma-nic`, one test
//! each, and the other `show_gids` output of the corpus.

mod support;

use support::{capture, judge, line, one};
use zerohop_core::Status;
use zerohop_validate::{gids, mounts};

#[test]
fn nfs_over_rdma_mounted_on_openshift() {
    let name = "outputs/rdma-nic/mount_grep_nfs_nfs4_proto-rdma_port20049_openshift.txt";
    let Some(text) = capture(name) else {
        return;
    };
    let parsed = mounts::parse(&text);
    assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    // Line 1: `… on /mnt type nfs4 (rw,…,proto=rdma,max_connect=16,port=20049,…)`.
    let (at, mount) = &parsed.entries[0];
    assert_eq!(
        (*at, mount.mount_point.as_str(), mount.fstype.as_str()),
        (1, "/mnt", "nfs4")
    );
    assert_eq!(mount.options.get("proto"), Some("rdma"));
    assert_eq!(mount.options.get("port"), Some("20049"));
    let findings = judge(name, &text);
    let nfs = one(&findings, "VAL502");
    assert_eq!((nfs.status, line(nfs)), (Status::Pass, 1));
    assert!(
        nfs.message.contains("over RDMA (port 20049)"),
        "{}",
        nfs.message
    );
}

#[test]
fn show_gids_of_an_sriov_vf_in_a_pod() {
    let name = "outputs/rdma-nic/show_gids_mlx5_3_roce-v1-v2_sriov-vf-net1_openshift.txt";
    let Some(text) = capture(name) else {
        return;
    };
    let parsed = gids::parse(&text);
    assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    // Lines 3-6: four GIDs of mlx5_3 port 1; line 7: `n_gids_found=4`.
    assert_eq!(parsed.gids.len(), 4);
    assert_eq!(parsed.found, Some(4));
    // Line 6: index 3, 192.168.10.2, v2, net1.
    let v2 = &parsed.gids[3];
    assert_eq!(
        (
            v2.line,
            v2.index,
            v2.ipv4.as_deref(),
            v2.version.as_str(),
            v2.netdev.as_deref()
        ),
        (6, 3, Some("192.168.10.2"), "v2", Some("net1"))
    );
    let findings = judge(name, &text);
    let gid = one(&findings, "VAL501");
    assert_eq!((gid.status, line(gid)), (Status::Pass, 6));
    assert!(
        gid.message.contains("NCCL_IB_GID_INDEX=3"),
        "{}",
        gid.message
    );
}

#[test]
fn show_gids_of_a_bare_metal_host() {
    let name = "show_gids_mlx5_roce_v1_v2_host-bench.txt";
    let Some(text) = capture(name) else {
        return;
    };
    let parsed = gids::parse(&text);
    assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    let findings = judge(name, &text);
    // Line 6: index 3, 192.168.211.242, v2, rdma0.
    let gid = one(&findings, "VAL501");
    assert_eq!((gid.status, line(gid)), (Status::Pass, 6));
    assert!(
        gid.message.contains("192.168.211.242 on rdma0"),
        "{}",
        gid.message
    );
}
