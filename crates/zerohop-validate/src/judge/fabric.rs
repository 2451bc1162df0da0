//! Judgements of fabric settings other tools print: `show_gids`, `mount`.

use zerohop_core::{Finding, Remediation, Status};

use crate::declare_judgement;
use crate::gids::ShowGids;
use crate::judge::Capture;
use crate::mounts::Mounts;

declare_judgement! {
    /// Every RoCE port has a RoCE v2 GID with an IPv4 address.
    ///
    /// ## What it checks
    /// The rows of `show_gids`, per device and port: a `v2` GID with an
    /// IPv4 address passes and names its index; `v2` GIDs without an
    /// address warn; a RoCE port with `v1` GIDs only fails. InfiniBand
    /// ports (no version column) are not judged.
    /// `show_gids` prints the GID table the kernel publishes under
    /// `/sys/class/infiniband/*/ports/*/gids` and `gid_attrs/types`
    /// (`show_port_gid_attr_gid_type` in `drivers/infiniband/core/sysfs.c`,
    /// whose `IB/RoCE v1` and `RoCE v2` are `gid_type_str` of
    /// `drivers/infiniband/core/cache.c`, torvalds/linux
    /// 4ab7cb4bf362dc3b85fd8ddac3b16949404be96b).
    ///
    /// ## Why it matters
    /// NCCL and perftest address RoCE peers through a GID index. The RoCE
    /// v2 GID of the rail's IPv4 address is the one that is routable and
    /// that the switches' QoS (DSCP) applies to; a missing one means the
    /// netdev has no address or RoCE v2 is off.
    ///
    /// ## How to fix
    /// Give the RoCE netdev its rail address (`ip addr add …`, the
    /// secondary network of the pod), keep RoCE v2 enabled, then use the
    /// index `show_gids` prints: `NCCL_IB_GID_INDEX=N`, `ib_write_bw -x N`.
    /// `zerohop doctor --only RDMA007` checks the node.
    ///
    /// ## Example
    ///
    /// The capture `gids.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// DEV	PORT	INDEX	GID					IPv4  		VER	DEV
    /// mlx5_0	1	0	fe80:0000:0000:0000:0ac0:ebff:fe21:03da			v1	rdma0
    /// ```
    ///
    /// `zerohop validate parse gids.txt` says:
    ///
    /// ```text
    /// fabric
    ///   fail           VAL501  show-gids-no-roce-v2  gids.txt mlx5_0 port 1: no RoCE v2 GID: only RoCE v1, which does not cross subnets
    ///                  gids.txt:2 = 0 v1
    ///
    /// what to fix first
    ///   1. VAL501 show-gids-no-roce-v2 (gids.txt mlx5_0 port 1): no RoCE v2 GID: only RoCE v1, which does not cross subnets
    ///      fix: give the RoCE netdev its rail's IPv4 address and keep RoCE v2 on; then use the v2 GID's index
    ///        ip addr show IFACE
    ///        show_gids
    ///        zerohop doctor --only RDMA007
    /// ```
    pub static ROCE_GID_V2 = {
        id: "VAL501",
        name: "show-gids-no-roce-v2",
        group: Fabric,
        severity: Error,
    };
}

declare_judgement! {
    /// Reports whether NFS mounts use RDMA.
    ///
    /// ## What it checks
    /// The NFS mounts of `mount` output (or `/proc/mounts` lines) and their
    /// `proto=` option: `rdma` (port 20049 by default) or `tcp`.
    /// The options are those of the `nfs(5)` man page; NFS over RDMA listens on
    /// 20049 (`echo rdma 20049 > /proc/fs/nfsd/portlist`, `mount -o
    /// rdma,port=20049`: the kernel's
    /// `Documentation/admin-guide/nfs/nfs-rdma.rst`, torvalds/linux
    /// 0fdc50dfab47d525b71a9f0d8310746cdc0c09c5).
    ///
    /// ## Why it matters
    /// NFS over TCP copies every byte through the kernel's socket buffers;
    /// NFS over RDMA moves data with the NIC, and only then can GPUDirect
    /// Storage read an NFS data set into GPU memory.
    ///
    /// ## How to fix
    /// Mount with `proto=rdma,port=20049` (or the storage class's mount
    /// options), with `rpcrdma` loaded; `zerohop doctor --only nfs` checks
    /// the node.
    ///
    /// ## Example
    ///
    /// The capture `mounts.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// 10.0.0.1:/data on /data type nfs4 (rw,vers=4.1,proto=tcp,port=2049)
    /// ```
    ///
    /// `zerohop validate parse mounts.txt` says:
    ///
    /// ```text
    /// fabric
    ///   info           VAL502  nfs-not-over-rdma  mounts.txt /data: nfs4 from 10.0.0.1:/data over tcp: data goes through the kernel's socket buffers, GPUDirect Storage cannot read it directly
    /// ```
    pub static NFS_TRANSPORT = {
        id: "VAL502",
        name: "nfs-not-over-rdma",
        group: Fabric,
        severity: Info,
    };
}

/// The judgements of `show_gids`.
pub(crate) fn judge_gids(capture: &Capture<'_>, gids: &ShowGids) -> Vec<Finding> {
    let judgement = &ROCE_GID_V2;
    let mut ports: Vec<(&str, u32)> = Vec::new();
    for gid in &gids.gids {
        if !ports.contains(&(gid.device.as_str(), gid.port)) {
            ports.push((&gid.device, gid.port));
        }
    }
    ports
        .into_iter()
        .filter_map(|(device, port)| {
            let rows: Vec<_> = gids
                .gids
                .iter()
                .filter(|g| g.device == device && g.port == port)
                .collect();
            if rows.iter().all(|g| g.version.is_empty()) {
                return None;
            }
            let subject = format!("{device} port {port}");
            let v2: Vec<_> = rows.iter().filter(|g| g.version == "v2").collect();
            let addressed = v2.iter().find(|g| g.ipv4.is_some());
            let finding = match (addressed, v2.first()) {
                (Some(gid), _) => {
                    let address = gid.ipv4.as_deref().unwrap_or("");
                    let netdev = gid.netdev.as_deref().map_or(String::new(), |n| format!(" on {n}"));
                    judgement
                        .verdict(
                            capture,
                            Status::Pass,
                            &subject,
                            format!("RoCE v2 GID index {} for {address}{netdev}: NCCL_IB_GID_INDEX={} or perftest -x {}", gid.index, gid.index, gid.index),
                        )
                        .at(capture, gid.line, format!("{} {} v2", gid.index, gid.gid))
                        .done()
                }
                (None, Some(gid)) => judgement
                    .verdict(
                        capture,
                        Status::Warn,
                        &subject,
                        "RoCE v2 GIDs without an IPv4 address: the netdev has no rail address",
                    )
                    .at(capture, gid.line, format!("{} {} v2", gid.index, gid.gid))
                    .fix(gid_fix())
                    .done(),
                (None, None) => judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        &subject,
                        "no RoCE v2 GID: only RoCE v1, which does not cross subnets",
                    )
                    .at(capture, rows[0].line, format!("{} {}", rows[0].index, rows[0].version))
                    .fix(gid_fix())
                    .done(),
            };
            Some(finding)
        })
        .collect()
}

fn gid_fix() -> Remediation {
    Remediation::new("give the RoCE netdev its rail's IPv4 address and keep RoCE v2 on; then use the v2 GID's index")
        .command("ip addr show IFACE")
        .command("show_gids")
        .command("zerohop doctor --only RDMA007")
}

/// The judgements of mount output.
pub(crate) fn judge_mounts(capture: &Capture<'_>, mounts: &Mounts) -> Vec<Finding> {
    let judgement = &NFS_TRANSPORT;
    let nfs: Vec<_> = mounts
        .entries
        .iter()
        .filter(|(_, m)| m.fstype.starts_with("nfs"))
        .collect();
    if nfs.is_empty() {
        return vec![
            judgement
                .verdict(
                    capture,
                    Status::NotApplicable,
                    "",
                    format!("no NFS mount among {} mount(s)", mounts.entries.len()),
                )
                .done(),
        ];
    }
    nfs.into_iter()
        .map(|(line, mount)| {
            let proto = mount.options.get("proto").unwrap_or("tcp");
            let value = mount.options.show("proto").unwrap_or_else(|| "proto not set (tcp)".to_owned());
            if proto.starts_with("rdma") {
                let port = mount.options.get("port").unwrap_or("20049");
                judgement
                    .verdict(
                        capture,
                        Status::Pass,
                        &mount.mount_point,
                        format!("{} from {} over RDMA (port {port})", mount.fstype, mount.source),
                    )
                    .at(capture, *line, value)
                    .done()
            } else {
                judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        &mount.mount_point,
                        format!("{} from {} over {proto}: data goes through the kernel's socket buffers, GPUDirect Storage cannot read it directly", mount.fstype, mount.source),
                    )
                    .at(capture, *line, value)
                    .fix(
                        Remediation::new("mount with proto=rdma,port=20049 when the server offers NFS over RDMA")
                            .command("mount -t nfs -o vers=4.1,proto=rdma,port=20049 SERVER:/EXPORT /mnt")
                            .command("zerohop doctor --only nfs"),
                    )
                    .done()
            }
        })
        .collect()
}
