//! One RDMA NIC port of a pool: its names, model, VFs and rail network.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_known::names;

use super::Checker;
use crate::grammar;
use crate::intent::{DeviceType, LinkType, Nic, RdmaMode, VfCount};
use crate::plan::{NicPlan, RailPlan};
use zerohop_known::nic::{self, MELLANOX_MAX_VFS};

/// VF headroom over one per GPU, in percent.
const VF_HEADROOM_PERCENT: u32 = 20;

/// The rail networks met so far, and the resource names they use, so
/// that each NIC is checked against them in logarithmic time.
#[derive(Default)]
pub(super) struct Rails {
    /// The rails by number.
    pub(super) by_number: BTreeMap<u32, RailPlan>,
    resource_names: BTreeSet<String>,
}

/// Checks one NIC port and adds its rail to `rails` and its PF to
/// `all_pfs` (with whether its network has a VLAN). `None` when the model
/// is unknown; every problem is reported to `c`.
pub(super) fn nic(
    c: &mut Checker,
    nic: Nic,
    gpus: u32,
    rdma_mode: RdmaMode,
    rails: &mut Rails,
    all_pfs: &mut BTreeMap<String, bool>,
) -> Option<NicPlan> {
    // Both names are written into the RoCE QoS script that runs as root at
    // boot, into SR-IOV policies and into the shared device plugin's
    // selectors: each must be a name the kernel could have given.
    c.grammar(
        &nic.pf,
        "pf",
        names::netdev,
        "give the physical function's netdev name as `ip link` shows it, e.g. ens1f0np0",
    );
    c.grammar(
        &nic.rdma_device,
        "rdmaDevice",
        names::rdma_device,
        "give the rdma device as `rdma link` or `ibv_devices` shows it, e.g. mlx5_0",
    );
    let model = match nic::by_pf_id(&nic.device_id.value) {
        Some(model) => Some(model),
        None if nic::is_vf_id(&nic.device_id.value) => {
            c.error(&nic.device_id.referenced, format!("device id {:?} is a virtual function id", nic.device_id.value), "give the physical function's device id, e.g. \"1021\" for connectx-7; the vf id is derived from it");
            None
        }
        None => {
            let known: Vec<String> = nic::MODELS
                .iter()
                .map(|m| format!("{} ({})", m.pf_device_id, m.name))
                .collect();
            c.error(
                &nic.device_id.referenced,
                format!("unknown device id {:?}", nic.device_id.value),
                format!("the sr-iov operator supports {}", known.join(", ")),
            );
            None
        }
    };
    if let (Some(model), LinkType::Ib) = (model, nic.link_type)
        && !model.infiniband
    {
        c.error(
            &nic.device_id.referenced,
            format!("{} has no infiniband ports", model.name),
            "use linkType: ETH",
        );
    }
    if let Some(device_type) = &nic.device_type
        && device_type.value == DeviceType::VfioPci
    {
        c.error(
            &device_type.referenced,
            "deviceType vfio-pci with rdma is rejected by the sr-iov operator webhook",
            "use deviceType: netdevice (isRdma needs a kernel netdevice on bare metal)",
        );
    }
    let total = nic
        .total_vfs
        .as_ref()
        .map_or(MELLANOX_MAX_VFS, |t| t.value.min(MELLANOX_MAX_VFS));
    let num_vfs = match (&nic.vfs, rdma_mode) {
        (Some(vfs), RdmaMode::Shared) => {
            c.error(
                &vfs.referenced,
                "vfs are set but rdma.mode is shared",
                "remove vfs, or set rdma.mode: sriov",
            );
            0
        }
        (_, RdmaMode::Shared) => 0,
        (vfs, RdmaMode::Sriov) => {
            let wanted = match vfs.as_ref().map(|v| v.value) {
                Some(VfCount::Count(n)) => n,
                None | Some(VfCount::Keyword(_)) => {
                    gpus + (gpus * VF_HEADROOM_PERCENT).div_ceil(100)
                }
            };
            let location = vfs.as_ref().map_or(nic.pf.referenced, |v| v.referenced);
            if wanted == 0 {
                c.error(
                    &location,
                    "vfs is 0",
                    "give at least one vf per pf, or use rdma.mode: shared",
                );
            } else if wanted > total {
                let limit = if total == MELLANOX_MAX_VFS {
                    format!("the sr-iov operator's cap of {MELLANOX_MAX_VFS} vfs per mellanox pf")
                } else {
                    format!("totalVfs {total}")
                };
                c.error(&location, format!("{wanted} vfs exceed {limit}"), format!("use at most {total} vfs, or raise sriov_totalvfs in the nic firmware (NUM_OF_VFS)"));
            }
            wanted
        }
    };
    let resource_name = match &nic.resource_name {
        Some(name) => {
            c.grammar(name, "resource name", grammar::resource_name, "use letters, digits and '_' only, starting and ending with a letter or digit (e.g. rdma_rail0)");
            name.value.clone()
        }
        None => format!("rdma_rail{}", nic.rail.value),
    };
    c.grammar(
        &nic.subnet,
        "subnet",
        grammar::cidr,
        "write the subnet as 192.168.10.0/24",
    );
    if let Some(vlan) = &nic.vlan {
        if nic.link_type == LinkType::Ib {
            c.error(
                &vlan.referenced,
                "vlan on an infiniband rail",
                "infiniband has partitions (pkeys), not vlans; remove vlan",
            );
        } else if vlan.value == 0 || vlan.value > 4094 {
            c.error(
                &vlan.referenced,
                format!("vlan {} is out of range", vlan.value),
                "use 1 to 4094",
            );
        }
    }
    let mtu = nic.mtu.value;
    let mtu_ok = match nic.link_type {
        LinkType::Eth => (1280..=9216).contains(&mtu),
        LinkType::Ib => (256..=4092).contains(&mtu),
    };
    if !mtu_ok {
        let range = if nic.link_type == LinkType::Eth {
            "1280 to 9216 (9000 for roce)"
        } else {
            "up to 4092 for ipoib (4092 with a 4096 ib mtu)"
        };
        c.error(
            &nic.mtu.referenced,
            format!("mtu {mtu} is out of range"),
            format!("use {range}"),
        );
    }
    let rail = RailPlan {
        rail: nic.rail.value,
        link_type: nic.link_type,
        mtu,
        subnet: nic.subnet.value.clone(),
        vlan: nic.vlan.as_ref().map(|v| v.value),
        resource_name,
    };
    match rails.by_number.get(&rail.rail) {
        Some(existing)
            if (
                existing.link_type,
                existing.mtu,
                &existing.subnet,
                existing.vlan,
                &existing.resource_name,
            ) != (
                rail.link_type,
                rail.mtu,
                &rail.subnet,
                rail.vlan,
                &rail.resource_name,
            ) =>
        {
            c.error(
                &nic.rail.referenced,
                format!("rail {} is described differently by another nic", rail.rail),
                "nics on one rail share link type, mtu, subnet, vlan and resource name",
            );
        }
        Some(_) => {}
        None => {
            if !rails.resource_names.insert(rail.resource_name.clone()) {
                c.error(
                    &nic.rail.referenced,
                    format!(
                        "resource name {:?} is used by two rails",
                        rail.resource_name
                    ),
                    "give each rail its own resource name",
                );
            }
            rails.by_number.insert(rail.rail, rail);
        }
    }
    all_pfs.insert(nic.pf.value.clone(), nic.vlan.is_some());
    Some(NicPlan {
        pf: nic.pf.value,
        rdma_device: nic.rdma_device.value,
        model: model?,
        num_vfs,
        rail: nic.rail.value,
        numa_node: nic.numa_node.map(|n| n.value),
    })
}
