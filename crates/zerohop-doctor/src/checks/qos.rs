//! RoCE lossless QoS: MTU, DCQCN congestion control, RoCE mode.

use std::collections::BTreeMap;

use zerohop_core::Remediation;
use zerohop_host::facts::rdma::CONFIGFS_DIR;
use zerohop_host::facts::{NetDevice, RdmaDevice, RdmaPort};
use zerohop_host::parse::rdma::GidType;

use crate::checks::rdma::{MODULE_CHAIN, no_devices, port_name, ports};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, write_to};

/// RoCE needs room for a 4096-byte RDMA MTU plus its headers (one fact, in `zerohop-known`).
const ROCE_MIN_MTU: u32 = zerohop_known::roce::MIN_MTU;

/// The priority RoCE traffic commonly uses when the profile does not say.
pub(crate) const DEFAULT_ROCE_PRIORITY: u8 = 3;

/// A RoCE port's netdev as `/sys/class/net` shows it.
struct RoceNetdev<'a> {
    device: &'a RdmaDevice,
    port: &'a RdmaPort,
    name: &'a str,
    net: Option<&'a NetDevice>,
    vf: bool,
}

/// The netdevs of Ethernet RDMA ports, each once.
fn roce_netdevs<'a>(ctx: &Context<'a>) -> Vec<RoceNetdev<'a>> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (device, port) in ports(ctx).filter(|(_, p)| p.is_ethernet()) {
        let Some(name) = port.netdev.as_deref() else {
            continue;
        };
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let vf = device
            .pci
            .as_deref()
            .and_then(|a| ctx.facts.pci.get(a))
            .is_some_and(|d| d.is_vf());
        out.push(RoceNetdev {
            device,
            port,
            name,
            net: ctx.facts.net.get(name),
            vf,
        });
    }
    out
}

/// The outcome when there is nothing RoCE to judge.
fn no_roce(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.facts.rdma.list().is_empty() {
        return vec![no_devices(ctx)];
    }
    vec![Outcome::not_applicable(
        "no roce (ethernet) rdma port with a netdev",
    )]
}

declare_check! {
    /// RoCE netdevs have an MTU of at least 4200 bytes.
    ///
    /// ## What it checks
    /// `/sys/class/net/<if>/mtu` of every netdev behind an Ethernet RDMA port
    /// (found through `gid_attrs/ndevs` or the function's `device/net`):
    /// below 4200 fails, and so does any MTU other than the profile's.
    ///
    /// ## Why it matters
    /// The RoCE path MTU is the largest of 256…4096 that fits in the
    /// Ethernet MTU minus RoCE headers. At the default 1500 bytes, RoCE runs
    /// with a 1024-byte MTU: four times the packets, and far lower bandwidth
    /// per queue pair for large transfers.
    ///
    /// ## How to fix
    /// Set the MTU on the host (`ip link set <if> mtu 9000`, persisted in
    /// netplan/NetworkManager) or in the SR-IOV network / NAD for VFs, and
    /// the same or larger MTU on every switch port of the fabric.
    ///
    /// ## Evidence
    /// `/sys/class/net/<if>/mtu` of the netdevs behind Ethernet RDMA ports;
    /// a netdev named by the port but absent from `/sys/class/net`, and a
    /// missing or unreadable `mtu`, are `unknown`.
    ///
    /// ## Source
    /// `include/rdma/ib_addr.h` (`iboe_get_mtu()`) and
    /// `drivers/infiniband/core/cma.c`, Linux v6.8 (the path MTU a netdev MTU
    /// allows); the floor is `zerohop_known::roce::MIN_MTU`.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/QOS001/fail-mtu-1500/`:
    ///
    /// ```text
    /// qos
    ///   fail           QOS001  roce-mtu-too-small  ens1f0 (mlx5_0/1): mtu 1500 below 4200: roce runs with a path mtu under 4096
    ///                  /sys/class/net/ens1f0/mtu = 1500
    ///
    /// what to fix first
    ///   1. QOS001 roce-mtu-too-small (ens1f0 (mlx5_0/1)): mtu 1500 below 4200: roce runs with a path mtu under 4096
    ///      fix: raise the mtu on the host or in the sr-iov network, and on the switch ports
    ///        ip link set ens1f0 mtu 9000
    /// ```
    pub static MTU_TOO_SMALL = {
        id: "QOS001",
        name: "roce-mtu-too-small",
        group: Qos,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: mtu_too_small,
    };
}

fn mtu_too_small(ctx: &Context<'_>) -> Vec<Outcome> {
    let netdevs = roce_netdevs(ctx);
    if netdevs.is_empty() {
        return no_roce(ctx);
    }
    let expected = ctx.profile.roce_mtu;
    netdevs
        .iter()
        .map(|roce| {
            let subject = format!("{} ({})", roce.name, port_name(roce.device, roce.port));
            let Some(net) = roce.net else {
                return Outcome::unknown(format!("netdev {} is not in /sys/class/net", roce.name))
                    .subject(subject);
            };
            let path = format!("{}/mtu", net.sysfs());
            let mtu = match &net.mtu {
                Err(gap) => return Outcome::gap(gap).subject(subject),
                Ok(None) => {
                    return Outcome::unknown("netdev has no mtu file")
                        .subject(subject)
                        .evidence(path, "<missing>");
                }
                Ok(Some(mtu)) => *mtu,
            };
            let want = expected.unwrap_or(9000).max(ROCE_MIN_MTU);
            let fix = Remediation::new(
                "raise the mtu on the host or in the sr-iov network, and on the switch ports",
            )
            .command(join([
                "ip",
                "link",
                "set",
                roce.name,
                "mtu",
                &want.to_string(),
            ]));
            let outcome = if mtu < ROCE_MIN_MTU {
                Outcome::fail(format!(
                    "mtu {mtu} below {ROCE_MIN_MTU}: roce runs with a path mtu under 4096"
                ))
                .fix(fix)
            } else if expected.is_some_and(|e| e != mtu) {
                Outcome::fail(format!("mtu {mtu}, expected {want}")).fix(fix)
            } else {
                Outcome::pass(format!("mtu {mtu}"))
            };
            outcome.subject(subject).evidence(path, mtu.to_string())
        })
        .collect()
}

declare_check! {
    /// RoCE netdevs of one role share one MTU.
    ///
    /// ## What it checks
    /// Groups the RoCE netdevs by role, the device family (`hca_type`) and
    /// whether they are physical or virtual functions, and compares their
    /// `mtu`. A group with more than one MTU warns and names the odd ones.
    ///
    /// ## Why it matters
    /// Peers negotiate the smaller path MTU, and a rail with a smaller MTU
    /// than its siblings is slower and drops jumbo frames at the switch. It
    /// usually means one interface missed the configuration.
    ///
    /// ## How to fix
    /// Set the same MTU on every interface of the role
    /// (`ip link set <if> mtu 9000`) and persist it in the host's network
    /// configuration or the SR-IOV network.
    ///
    /// ## Evidence
    /// `hca_type`, the function's `physfn` link and
    /// `/sys/class/net/<if>/mtu` of the RoCE netdevs.
    ///
    /// ## Source
    /// `net/core/net-sysfs.c` (`mtu`) and `drivers/pci/iov.c` (`physfn`),
    /// Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/QOS002/warn-mtu-differs/`:
    ///
    /// ```text
    /// qos
    ///   warn           QOS002  roce-mtu-inconsistent  MT4129 pf: mtu differs within the role: ens2f0 not at 9000
    ///                  /sys/class/net/*/mtu = ens1f0=9000 ens2f0=4200
    ///
    /// what to fix first
    ///   1. QOS002 roce-mtu-inconsistent (MT4129 pf): mtu differs within the role: ens2f0 not at 9000
    ///      fix: set the same mtu on every interface of the role
    ///        for i in ens2f0; do ip link set "$i" mtu 9000; done
    /// ```
    pub static MTU_INCONSISTENT = {
        id: "QOS002",
        name: "roce-mtu-inconsistent",
        group: Qos,
        severity: Warning,
        requires: [MODULE_CHAIN],
        run: mtu_inconsistent,
    };
}

fn mtu_inconsistent(ctx: &Context<'_>) -> Vec<Outcome> {
    let netdevs = roce_netdevs(ctx);
    if netdevs.is_empty() {
        return no_roce(ctx);
    }
    let mut roles: BTreeMap<String, Vec<(&str, u32)>> = BTreeMap::new();
    for roce in &netdevs {
        let Some(Ok(Some(mtu))) = roce.net.map(|n| &n.mtu) else {
            continue;
        };
        let role = format!(
            "{} {}",
            roce.device.family(),
            if roce.vf { "vf" } else { "pf" }
        );
        roles.entry(role).or_default().push((roce.name, *mtu));
    }
    if roles.is_empty() {
        return vec![Outcome::unknown("no roce netdev has a readable mtu")];
    }
    roles
        .into_iter()
        .map(|(role, members)| {
            let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
            for (_, mtu) in &members {
                *counts.entry(*mtu).or_default() += 1;
            }
            let shown = members
                .iter()
                .map(|(n, m)| format!("{n}={m}"))
                .collect::<Vec<_>>()
                .join(" ");
            let outcome = if counts.len() == 1 {
                Outcome::pass(format!(
                    "{} netdev(s), all mtu {}",
                    members.len(),
                    members[0].1
                ))
            } else {
                let common = counts
                    .iter()
                    .max_by_key(|(mtu, count)| (**count, **mtu))
                    .map_or(0, |(mtu, _)| *mtu);
                let odd: Vec<&str> = members
                    .iter()
                    .filter(|(_, m)| *m != common)
                    .map(|(n, _)| *n)
                    .collect();
                Outcome::warn(format!(
                    "mtu differs within the role: {} not at {common}",
                    odd.join(", ")
                ))
                .fix(
                    Remediation::new("set the same mtu on every interface of the role").command(
                        format!(
                            "for i in {}; do ip link set \"$i\" mtu {common}; done",
                            join(odd.iter().copied())
                        ),
                    ),
                )
            };
            outcome
                .subject(role)
                .evidence("/sys/class/net/*/mtu", shown)
        })
        .collect()
}

declare_check! {
    /// DCQCN congestion control is on for the RoCE priority.
    ///
    /// ## What it checks
    /// `/sys/class/net/<if>/ecn/roce_np/enable/<prio>` (notification point)
    /// and `/sys/class/net/<if>/ecn/roce_rp/enable/<prio>` (reaction point)
    /// on the RoCE netdevs of physical functions, for the profile's RoCE
    /// priority (3 unless set). Both `1` passes, a `0` fails. These files
    /// come from DOCA/MLNX_OFED and some vendor kernels; upstream `mlx5`
    /// does not create them (it keeps DCQCN parameters in debugfs), so an
    /// absent directory is `unknown`, not a failure.
    ///
    /// ## Why it matters
    /// Without DCQCN, congestion on a lossless (PFC) fabric is handled only
    /// by pause frames: head-of-line blocking and congestion spreading turn
    /// one hot receiver into a fabric-wide slowdown.
    ///
    /// ## How to fix
    /// `echo 1 > /sys/class/net/<if>/ecn/roce_np/enable/3` and the same for
    /// `roce_rp`, or `mlxconfig`'s `ROCE_CC_PRIO_MASK_P1`, persisted by the
    /// NIC Configuration Operator or a boot script; match the switch's ECN
    /// marking on the same priority.
    ///
    /// ## Evidence
    /// `/sys/class/net/<if>/ecn/roce_np/enable/<prio>` and
    /// `…/roce_rp/enable/<prio>` of the RoCE netdevs of physical functions;
    /// an absent `ecn` directory (upstream `mlx5`) is `unknown`.
    ///
    /// ## Source
    /// The `ecn` sysfs of MLNX_OFED's and vendor kernels' `mlx5`, e.g.
    /// oracle/linux-uek `drivers/net/ethernet/mellanox/mlx5/core/en_ecn.c` at
    /// f57c63071cbaba7e41da299408810531d3b54e49; upstream Linux v6.8 has no such
    /// file.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::h100_infiniband_class_tree
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/QOS003/fail-np-off/`:
    ///
    /// ```text
    /// qos
    ///   fail           QOS003  dcqcn-disabled  ens1f0: dcqcn notification point off for roce priority 3
    ///                  /sys/class/net/ens1f0/ecn/roce_np/enable/3 = 0
    ///                  /sys/class/net/ens1f0/ecn/roce_rp/enable/3 = 1
    ///
    /// what to fix first
    ///   1. QOS003 dcqcn-disabled (ens1f0): dcqcn notification point off for roce priority 3
    ///      fix: enable dcqcn on the roce priority and persist it
    ///        echo 1 > /sys/class/net/ens1f0/ecn/roce_np/enable/3
    ///        echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/enable/3
    /// ```
    pub static DCQCN_DISABLED = {
        id: "QOS003",
        name: "dcqcn-disabled",
        group: Qos,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: dcqcn,
    };
}

fn dcqcn(ctx: &Context<'_>) -> Vec<Outcome> {
    let netdevs: Vec<RoceNetdev<'_>> = roce_netdevs(ctx).into_iter().filter(|r| !r.vf).collect();
    if netdevs.is_empty() {
        return no_roce(ctx);
    }
    let prio = ctx.profile.roce_priority.unwrap_or(DEFAULT_ROCE_PRIORITY);
    netdevs
        .iter()
        .map(|roce| {
            let Some(net) = roce.net else {
                return Outcome::unknown(format!("netdev {} is not in /sys/class/net", roce.name)).subject(roce.name);
            };
            let dir = format!("{}/ecn", net.sysfs());
            let np_path = format!("{dir}/roce_np/enable/{prio}");
            let rp_path = format!("{dir}/roce_rp/enable/{prio}");
            let (np, rp) = match (&net.ecn.np, &net.ecn.rp) {
                (Err(gap), _) | (_, Err(gap)) => return Outcome::gap(gap).subject(roce.name),
                (Ok(None), _) | (_, Ok(None)) => {
                    let pci = roce.device.pci.as_deref().unwrap_or("<pci>");
                    return Outcome::unknown(format!(
                        "inbox driver does not expose {dir}/roce_np|roce_rp: dcqcn state is only in debugfs"
                    ))
                    .subject(roce.name)
                    .evidence(format!("{dir}/roce_np/enable"), "<missing>")
                    .evidence(format!("/sys/kernel/debug/mlx5/{pci}/cc_params"), "<not read>");
                }
                (Ok(Some(np)), Ok(Some(rp))) => (np.get(&prio).copied(), rp.get(&prio).copied()),
            };
            let shown = |bit: Option<bool>| bit.map_or("<missing>", |b| if b { "1" } else { "0" });
            let outcome = match (np, rp) {
                (Some(true), Some(true)) => Outcome::pass(format!("dcqcn notification and reaction point on for priority {prio}")),
                (None, _) | (_, None) => Outcome::unknown(format!("no dcqcn enable file for priority {prio}")),
                (np, rp) => {
                    let off: Vec<&str> = [("notification point", np), ("reaction point", rp)]
                        .iter()
                        .filter(|(_, bit)| *bit == Some(false))
                        .map(|(name, _)| *name)
                        .collect();
                    Outcome::fail(format!("dcqcn {} off for roce priority {prio}", off.join(" and "))).fix(
                        Remediation::new("enable dcqcn on the roce priority and persist it")
                            .command(write_to("1", &np_path))
                            .command(write_to("1", &rp_path)),
                    )
                }
            };
            outcome.subject(roce.name).evidence(&np_path, shown(np)).evidence(&rp_path, shown(rp))
        })
        .collect()
}

declare_check! {
    /// RDMA-CM uses RoCE v2 on every RoCE port.
    ///
    /// ## What it checks
    /// `default_roce_mode` in RDMA-CM's configfs,
    /// `/sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_mode`, for
    /// every Ethernet port: `RoCE v2` passes, `IB/RoCE v1` fails. The
    /// directory exists only when configfs is mounted and someone created
    /// the device's entry, so its absence is `unknown`: the kernel's default
    /// (RoCE v2 on current kernels) applies.
    ///
    /// ## Why it matters
    /// RoCE v1 is layer 2 only: not routable across subnets and without ECN,
    /// so DCQCN cannot work. Connections made through RDMA-CM (NFS over RDMA,
    /// NVMe over RDMA, UCX) use this default.
    ///
    /// ## How to fix
    /// `cma_roce_mode -d <dev> -p <port> -m 2` (from DOCA/MLNX_OFED), or
    /// `mkdir /sys/kernel/config/rdma_cm/<dev>` and
    /// `echo "RoCE v2" > /sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_mode`.
    ///
    /// ## Evidence
    /// `/sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_mode`; an
    /// absent entry is `unknown` (the kernel's default applies).
    ///
    /// ## Source
    /// `drivers/infiniband/core/cma_configfs.c` (`default_roce_mode`) and
    /// `drivers/infiniband/core/cma.c` (`cma_get_default_gid_type()`),
    /// Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/QOS004/fail-roce-v1/`:
    ///
    /// ```text
    /// qos
    ///   fail           QOS004  roce-mode-not-v2  mlx5_0/1: default roce mode IB/RoCE v1: not routable, no ecn
    ///                  /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode = IB/RoCE v1
    ///
    /// what to fix first
    ///   1. QOS004 roce-mode-not-v2 (mlx5_0/1): default roce mode IB/RoCE v1: not routable, no ecn
    ///      fix: set rdma-cm's default roce mode to v2
    ///        echo 'RoCE v2' > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode
    ///        cma_roce_mode -d mlx5_0 -p 1 -m 2   # doca-ofed
    /// ```
    pub static ROCE_MODE = {
        id: "QOS004",
        name: "roce-mode-not-v2",
        group: Qos,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: roce_mode,
    };
}

fn roce_mode(ctx: &Context<'_>) -> Vec<Outcome> {
    let ethernet: Vec<(&RdmaDevice, &RdmaPort)> =
        ports(ctx).filter(|(_, p)| p.is_ethernet()).collect();
    if ethernet.is_empty() {
        return no_roce(ctx);
    }
    let configfs = ctx.facts.rdma.configfs;
    if !configfs {
        return vec![Outcome::unknown(format!(
            "{CONFIGFS_DIR} is absent (configfs not mounted or rdma_cm not loaded): the kernel default roce mode applies, v2 on current kernels"
        ))
        .evidence(CONFIGFS_DIR, "<missing>")];
    }
    ethernet
        .into_iter()
        .map(|(device, port)| {
            let path = format!("{CONFIGFS_DIR}/{}/ports/{}/default_roce_mode", device.name, port.number);
            let outcome = match &port.roce_mode {
                Err(gap) => Outcome::gap(gap),
                Ok(None) => Outcome::unknown(format!(
                    "no configfs entry for {}: the kernel default roce mode applies, v2 on current kernels",
                    device.name
                ))
                .evidence(&path, "<missing>"),
                Ok(Some(GidType::RoceV2)) => Outcome::pass("default roce mode RoCE v2").evidence(&path, "RoCE v2"),
                Ok(Some(other)) => {
                    let shown = match other {
                        GidType::RoceV1 => "IB/RoCE v1".to_owned(),
                        GidType::Other(text) => text.clone(),
                        GidType::RoceV2 => "RoCE v2".to_owned(),
                    };
                    Outcome::fail(format!("default roce mode {shown}: not routable, no ecn"))
                        .evidence(&path, shown)
                        .fix(Remediation::new("set rdma-cm's default roce mode to v2")
                            .command(write_to("RoCE v2", &path))
                            .command(format!("{}   # doca-ofed", join(["cma_roce_mode", "-d", &device.name, "-p", &port.number.to_string(), "-m", "2"]))))
                }
            };
            outcome.subject(port_name(device, port))
        })
        .collect()
}
