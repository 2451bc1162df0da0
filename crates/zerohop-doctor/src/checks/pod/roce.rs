//! RoCE addressing in the pod: the netdev's address, the GID NCCL will use
//! for it, and the path MTU the netdev's MTU gives.

use std::net::IpAddr;

use zerohop_core::Remediation;
use zerohop_host::facts::rdma::GidEntry;
use zerohop_host::facts::{RdmaDevice, RdmaPort};
use zerohop_host::parse::rdma::{Gid, GidType};
use zerohop_known::{nccl, roce};

use crate::checks::pod::{ENVIRON, variable};
use crate::checks::rdma::port_name;
use crate::context::{Context, Outcome};
use crate::declare_check;

declare_check! {
    /// Each RoCE port of the pod has an address, and NCCL's GID carries it.
    ///
    /// ## What it checks
    /// For each Ethernet (RoCE) port of the pod's RDMA devices whose netdev
    /// is in the pod's namespace: the netdev has an IPv4 address (IPv6 under
    /// `NCCL_IB_ADDR_FAMILY=AF_INET6`); the GID NCCL will use, the one
    /// `NCCL_IB_GID_INDEX` names or else the one NCCL picks (the rules of
    /// `ncclIbGetGidIndex`: from index 0 on, a GID of the wanted address
    /// family replaces one of the other family, and a valid GID of
    /// `NCCL_IB_ROCE_VERSION_NUM`, 2 unless set, replaces one of another
    /// version or an invalid one), is RoCE v2 and carries one of the
    /// netdev's addresses; and the netdev's MTU gives RoCE the 4096-byte
    /// path MTU. A port whose netdev is elsewhere (the shared RDMA mode,
    /// where a pod lists the host's devices) is information: it is not the
    /// pod's to use. `NCCL_IB_ADDR_RANGE` is not modelled.
    ///
    /// ## Why it matters
    /// Without an address no RoCE v2 GID exists and NCCL, finding no valid
    /// GID, connects with a link-local or RoCE v1 one that does not route,
    /// or fails with `NET/IB : No usable GID`; a `NCCL_IB_GID_INDEX` copied
    /// from another node names another address or a RoCE v1 entry. A pod
    /// netdev at MTU 1500 cuts RoCE to 1024-byte packets, a quarter of the
    /// fabric's.
    ///
    /// ## How to fix
    /// Give the secondary network an IPAM (whereabouts, nv-ipam) so the
    /// pod's netdev gets its address; set `NCCL_IB_GID_INDEX` to the RoCE
    /// v2 entry the finding names, or leave it unset; set the network's MTU
    /// (`spec.mtu` of the `SriovNetwork`, `"mtu"` of the CNI config) to the
    /// node's 9000.
    ///
    /// ## Evidence
    /// `ports/<p>/gids/<i>`, `gid_attrs/types/<i>` and `gid_attrs/ndevs`
    /// of each device, the pod's addresses (`/proc/net/fib_trie`,
    /// `/proc/net/if_inet6`), `/sys/class/net/<netdev>/mtu`, and
    /// `NCCL_IB_GID_INDEX`, `NCCL_IB_ADDR_FAMILY` and
    /// `NCCL_IB_ROCE_VERSION_NUM` of `/proc/self/environ`. A type that
    /// cannot be read is `unknown`.
    ///
    /// ## Source
    /// NVIDIA/nccl `src/transport/net_ib/connect.cc` at
    /// 5067397c2676d5aed50042fc39e5c8ee96eb0027 (`ncclIbGetGidIndex`,
    /// `ncclUpdateGidIndex`, `validGid`, `getGidAddrFamily`,
    /// `NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1)`,
    /// `NCCL_PARAM(IbRoceVersionNum, "IB_ROCE_VERSION_NUM", 2)`); Linux
    /// v6.12 `drivers/infiniband/core/roce_gid_mgmt.c` (a netdev's
    /// addresses become GIDs of both RoCE types), `include/rdma/ib_addr.h`
    /// (`iboe_get_mtu`) and `drivers/infiniband/hw/mlx5/main.c`
    /// (`mlx5_query_port_roce`: `active_mtu` from the netdev's MTU).
    ///
    /// Real capture: crates/zerohop-doctor/tests/pod_view.rs::show_gids_capture_picks_the_roce_v2_ipv4_gid
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/POD002/fail-gid-index-names-roce-v1/`:
    ///
    /// ```text
    /// pod
    ///   fail           POD002  pod-roce-addressing  mlx5_3/1: NCCL_IB_GID_INDEX names gid 2, roce v1 with net1's address: not a roce v2 gid of 10.10.3.7
    ///                  /sys/class/infiniband/mlx5_3/ports/1/gids/2 = ::ffff:10.10.3.7
    ///                  /proc/self/environ = NCCL_IB_GID_INDEX=2
    ///   pass           POD002  pod-roce-addressing  mlx5_3/1 mtu: net1 mtu 9000: roce path mtu 4096
    ///
    /// what to fix first
    ///   1. POD002 pod-roce-addressing (mlx5_3/1): NCCL_IB_GID_INDEX names gid 2, roce v1 with net1's address: not a roce v2 gid of 10.10.3.7
    ///      fix: use gid 3, roce v2 ::ffff:10.10.3.7: set it in the pod spec's env
    ///        export NCCL_IB_GID_INDEX=3
    ///        # or leave NCCL_IB_GID_INDEX unset when nccl picks 3 itself
    /// ```
    pub static ROCE_ADDRESSING = {
        id: "POD002",
        name: "pod-roce-addressing",
        group: Pod,
        severity: Error,
        requires: [],
        run: roce_addressing,
    };
}

/// How NCCL picks its GID: the address family and RoCE version it wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GidWanted {
    /// IPv4 (`AF_INET`, NCCL's default) or IPv6.
    pub ipv4: bool,
    /// The RoCE version, 2 unless `NCCL_IB_ROCE_VERSION_NUM` says.
    pub version: i64,
}

impl GidWanted {
    /// What the pod's environment asks for.
    fn of(ctx: &Context<'_>) -> GidWanted {
        GidWanted {
            ipv4: variable(ctx, nccl::IB_ADDR_FAMILY) != Some("AF_INET6"),
            version: variable(ctx, nccl::IB_ROCE_VERSION_NUM)
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(2),
        }
    }
}

/// NCCL's `configuredGid` and `linkLocalGid`: neither unset, nor `fe80::`
/// alone, nor link-local.
fn valid(gid: &Gid) -> bool {
    let g = &gid.0;
    let trailer = g[2..].iter().any(|x| *x != 0);
    let configured = !(g.iter().all(|x| *x == 0) || (g[0] == 0xfe80 && g[1] == 0 && !trailer));
    let link_local = g[0] == 0xfe80 && g[1] == 0 && g[2] == 0 && g[3] == 0;
    configured && !link_local
}

/// The RoCE version of an entry as NCCL reads `gid_attrs/types/<i>`.
fn version(entry: &GidEntry) -> Option<i64> {
    match entry.kind {
        Some(GidType::RoceV1) => Some(1),
        Some(GidType::RoceV2) => Some(2),
        _ => None,
    }
}

/// The index NCCL picks when `NCCL_IB_GID_INDEX` is unset, from the
/// table's entries (unused entries are absent from it): `ncclIbGetGidIndex`
/// and `ncclUpdateGidIndex`, without an `NCCL_IB_ADDR_RANGE`.
pub(crate) fn nccl_gid_index(entries: &[GidEntry], wanted: GidWanted) -> u32 {
    let mut current: Option<&GidEntry> = entries.iter().find(|e| e.index == 0);
    for candidate in entries.iter().filter(|e| e.index > 0) {
        // An unused entry reads as `::`, which is IPv6 to NCCL.
        let family = |entry: Option<&GidEntry>| entry.is_some_and(|e| e.gid.ipv4().is_some());
        let candidate_v4 = candidate.gid.ipv4().is_some();
        if candidate_v4 != family(current) && candidate_v4 == wanted.ipv4 {
            current = Some(candidate);
            continue;
        }
        if candidate_v4 != wanted.ipv4 || !valid(&candidate.gid) {
            continue;
        }
        let current_version = current.and_then(version);
        let current_valid = current.is_some_and(|e| valid(&e.gid));
        if (current_version != version(candidate) || !current_valid)
            && version(candidate) == Some(wanted.version)
        {
            current = Some(candidate);
        }
    }
    current.map_or(0, |e| e.index)
}

/// Whether `gid` carries `address`.
fn carries(gid: &Gid, address: &IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => gid.ipv4() == Some(v4.octets()),
        IpAddr::V6(v6) => gid.0 == v6.segments(),
    }
}

fn roce_addressing(ctx: &Context<'_>) -> Vec<Outcome> {
    let wanted = GidWanted::of(ctx);
    let mut outcomes = Vec::new();
    for device in ctx.facts.rdma.list() {
        for port in device.port_list().iter().filter(|p| p.is_ethernet()) {
            outcomes.extend(port_outcomes(ctx, device, port, wanted));
        }
    }
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable(
            "no roce (ethernet) rdma port in the pod",
        )];
    }
    if outcomes
        .iter()
        .all(|o| o.status == zerohop_core::Status::Info)
    {
        outcomes.push(
            Outcome::fail("no roce port's netdev is in the pod's network namespace")
                .fix(Remediation::new("attach the rdma device's network to the pod (a secondary network of its sr-iov or host-device resource)")),
        );
    }
    outcomes
}

fn port_outcomes(
    ctx: &Context<'_>,
    device: &RdmaDevice,
    port: &RdmaPort,
    wanted: GidWanted,
) -> Vec<Outcome> {
    let name = port_name(device, port);
    let dir = device.port_dir(port.number);
    let Some(netdev) = port.netdev.as_deref() else {
        return vec![
            Outcome::unknown("the port's gid table names no netdev")
                .subject(name)
                .evidence(format!("{dir}/gid_attrs/ndevs"), "<missing>"),
        ];
    };
    let Some(interface) = ctx.facts.net.get(netdev) else {
        return vec![
            Outcome::info(format!(
                "netdev {netdev} is not in the pod's network namespace: not the pod's to use (leave it out of NCCL_IB_HCA)"
            ))
            .subject(name)
            .evidence(format!("/sys/class/net/{netdev}"), "<missing>"),
        ];
    };
    let mut outcomes = vec![address_and_gid(ctx, device, port, netdev, wanted).subject(&name)];
    if let Ok(Some(mtu)) = interface.mtu {
        let path = roce::roce_path_mtu(mtu);
        let source = format!("{}/mtu", interface.sysfs());
        outcomes.push(if path >= 4096 {
            Outcome::pass(format!("{netdev} mtu {mtu}: roce path mtu 4096"))
                .subject(format!("{name} mtu"))
                .evidence(source, mtu.to_string())
        } else {
            Outcome::warn(format!(
                "{netdev} mtu {mtu} gives roce a {path}-byte path mtu: 4096 needs at least {}",
                roce::MIN_MTU
            ))
            .subject(format!("{name} mtu"))
            .evidence(source, mtu.to_string())
            .fix(
                Remediation::new("set the pod network's mtu to the node's 9000 (SriovNetwork spec.mtu, the cni config's \"mtu\")")
                    .command(format!("ip link show {}", zerohop_known::shell::quote(netdev))),
            )
        });
    }
    outcomes
}

fn address_and_gid(
    ctx: &Context<'_>,
    device: &RdmaDevice,
    port: &RdmaPort,
    netdev: &str,
    wanted: GidWanted,
) -> Outcome {
    let dir = device.port_dir(port.number);
    let family = if wanted.ipv4 { "ipv4" } else { "ipv6" };
    let addresses: Vec<IpAddr> = match &ctx.facts.gds.addresses {
        Ok(Some(addresses)) => addresses
            .iter()
            .filter(|a| a.iface.as_deref() == Some(netdev) && a.addr.is_ipv4() == wanted.ipv4)
            .filter(|a| !matches!(a.addr, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80))
            .map(|a| a.addr)
            .collect(),
        Ok(None) => Vec::new(),
        Err(gap) => return Outcome::gap(gap),
    };
    let table = match &port.gids {
        Err(gap) => return Outcome::gap(gap),
        Ok(None) => {
            return Outcome::unknown("roce port has no gids directory")
                .evidence(format!("{dir}/gids"), "<missing>");
        }
        Ok(Some(table)) => table,
    };
    let shown_addresses = addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    if addresses.is_empty() {
        return Outcome::fail(format!(
            "{netdev} has no {family} address: no roce v2 gid carries one, nccl has no routable gid"
        ))
        .evidence("/proc/net/fib_trie", format!("<no {family} address of {netdev}>"))
        .fix(
            Remediation::new("give the pod's secondary network an ipam (whereabouts, nv-ipam) so that its netdev gets an address")
                .command(format!("ip addr show {}", zerohop_known::shell::quote(netdev))),
        );
    }
    let good: Vec<&GidEntry> = table
        .entries
        .iter()
        .filter(|e| e.kind == Some(GidType::RoceV2) && addresses.iter().any(|a| carries(&e.gid, a)))
        .collect();
    let set = variable(ctx, nccl::IB_GID_INDEX);
    let (index, how) = match set.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(index) if index >= 0 => (
            u32::try_from(index).unwrap_or(u32::MAX),
            "NCCL_IB_GID_INDEX names",
        ),
        _ => (nccl_gid_index(&table.entries, wanted), "nccl picks"),
    };
    let chosen = table.entries.iter().find(|e| e.index == index);
    let gid_path = format!("{dir}/gids/{index}");
    let mut outcome = match chosen {
        Some(entry) if good.iter().any(|g| g.index == index) => {
            return Outcome::pass(format!(
                "{how} gid {index}: roce v2 {} of {netdev}",
                entry.gid
            ))
            .evidence(gid_path, entry.gid.to_string())
            .evidence(format!("{dir}/gid_attrs/types/{index}"), "RoCE v2");
        }
        Some(entry) if entry.kind.is_none() && carries_any(&entry.gid, &addresses) => {
            return Outcome::unknown(format!(
                "{how} gid {index}, which carries {netdev}'s address, but its roce type cannot be read"
            ))
            .evidence(format!("{dir}/gid_attrs/types/{index}"), "<unreadable>");
        }
        Some(entry) => {
            let kind = match &entry.kind {
                Some(GidType::RoceV1) => "roce v1".to_owned(),
                Some(GidType::RoceV2) => "roce v2".to_owned(),
                Some(GidType::Other(other)) => other.clone(),
                None => "of unknown type".to_owned(),
            };
            let address = if carries_any(&entry.gid, &addresses) {
                format!("{netdev}'s address")
            } else {
                "no address of the pod".to_owned()
            };
            Outcome::fail(format!(
                "{how} gid {index}, {kind} with {address}: not a roce v2 gid of {shown_addresses}"
            ))
            .evidence(gid_path, entry.gid.to_string())
        }
        None => Outcome::fail(format!(
            "{how} gid {index}, which is unused: not a roce v2 gid of {shown_addresses}"
        ))
        .evidence(gid_path, "<unused>"),
    };
    outcome = match good.first() {
        Some(entry) => {
            let line = format!("{}={}", nccl::IB_GID_INDEX, entry.index);
            let fix = Remediation::new(format!(
                "use gid {}, roce v2 {}: set it in the pod spec's env",
                entry.index, entry.gid
            ))
            .command(format!("export {line}"));
            let fix = if set.is_some() {
                fix.command(format!(
                    "# or leave {} unset when nccl picks {} itself",
                    nccl::IB_GID_INDEX,
                    nccl_gid_index(&table.entries, wanted)
                ))
            } else {
                fix
            };
            outcome.fix(fix)
        }
        None => outcome.fix(
            Remediation::new(
                "no roce v2 gid carries the pod's address: enable roce v2 on the node's port",
            )
            .command("show_gids   # on the node: the gid table with types"),
        ),
    };
    if let Some(value) = set {
        outcome = outcome.evidence(ENVIRON, format!("{}={value}", nccl::IB_GID_INDEX));
    }
    outcome
}

fn carries_any(gid: &Gid, addresses: &[IpAddr]) -> bool {
    addresses.iter().any(|a| carries(gid, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u32, gid: &str, kind: Option<GidType>) -> GidEntry {
        GidEntry {
            index,
            gid: Gid::parse(gid).unwrap(),
            kind,
            ndev: None,
        }
    }

    const V4: GidWanted = GidWanted {
        ipv4: true,
        version: 2,
    };

    #[test]
    fn nccl_picks_the_ipv4_roce_v2_entry() {
        let link_local = "fe80:0000:0000:0000:0ac0:ebff:fe21:03da";
        let mapped = "0000:0000:0000:0000:0000:ffff:c0a8:d3f2";
        let table = [
            entry(0, link_local, Some(GidType::RoceV1)),
            entry(1, link_local, Some(GidType::RoceV2)),
            entry(2, mapped, Some(GidType::RoceV1)),
            entry(3, mapped, Some(GidType::RoceV2)),
        ];
        assert_eq!(nccl_gid_index(&table, V4), 3);
        let v1 = GidWanted { version: 1, ..V4 };
        assert_eq!(nccl_gid_index(&table, v1), 2);
        // Only link-local entries: NCCL stays at index 0.
        assert_eq!(nccl_gid_index(&table[..2], V4), 0);
    }

    #[test]
    fn an_ipv6_pod_takes_the_ipv6_entry() {
        let table = [
            entry(
                0,
                "fe80:0000:0000:0000:0ac0:ebff:fe21:03da",
                Some(GidType::RoceV1),
            ),
            entry(
                2,
                "0000:0000:0000:0000:0000:ffff:c0a8:d3f2",
                Some(GidType::RoceV2),
            ),
            entry(
                4,
                "fd00:0000:0000:0000:0000:0000:0000:0002",
                Some(GidType::RoceV1),
            ),
            entry(
                5,
                "fd00:0000:0000:0000:0000:0000:0000:0002",
                Some(GidType::RoceV2),
            ),
        ];
        let v6 = GidWanted {
            ipv4: false,
            version: 2,
        };
        assert_eq!(nccl_gid_index(&table, v6), 5);
        assert_eq!(nccl_gid_index(&table, V4), 2);
    }
}
