//! One RDMA NIC port of a pool: its names, model, VFs and rail network.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_known::names;

use super::Checker;
use super::values::{
    MALFORMED_ADDRESS, MALFORMED_INTERFACE_NAME, MALFORMED_RESOURCE_NAME, VALUE_OUT_OF_RANGE,
};
use crate::grammar;
use crate::intent::{DeviceType, LinkType, Nic, RdmaMode, VfCount};
use crate::plan::{NicPlan, RailPlan};
use crate::rule::declare_intent_rule;
use zerohop_known::nic::{self, MAX_LINK_RATE_GBPS, MELLANOX_MAX_VFS};
use zerohop_known::roce::MIN_MTU as ROCE_MIN_MTU;

declare_intent_rule! {
    /// A NIC's `deviceId` is not the PF device ID of an adapter the SR-IOV Network Operator supports.
    ///
    /// ## What it checks
    /// Every NIC's `deviceId` against the PF device IDs of the SR-IOV
    /// Network Operator's `supported-nic-ids` (k8snetworkplumbingwg/
    /// sriov-network-operator `deployment/sriov-network-operator-chart/
    /// templates/configmap.yaml`), ConnectX-4 to ConnectX-9 and BlueField;
    /// a VF device ID (`101e` and the older ones) is reported as such.
    /// Lint's ZL040 says the same of a hand-written policy.
    ///
    /// ## Why it matters
    /// The ID goes into each SriovNetworkNodePolicy's `nicSelector`, which
    /// selects physical functions: the operator's webhook rejects a device
    /// it does not support, and a VF ID matches no PF, so no VF is created.
    /// The model also decides what the port can run (InfiniBand or not)
    /// and how many VFs it takes.
    ///
    /// ## How to fix
    /// Give the PF's device ID as `lspci -nn -d 15b3:` shows it on a node
    /// (ConnectX-7: `1021`, ConnectX-6 Dx: `101d`); the VF ID is derived
    /// from it.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP030/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "101e", rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:57: device id "101e" is a virtual function id [ZP030]
    ///   help: give the physical function's device id, e.g. "1021" for connectx-7; the vf id is derived from it
    /// ```
    pub(crate) static UNKNOWN_NIC_DEVICE_ID = {
        id: "ZP030",
        name: "unknown-nic-device-id",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A NIC runs InfiniBand but its model has Ethernet ports only.
    ///
    /// ## What it checks
    /// NICs with `linkType: IB` whose `deviceId` is a model without
    /// InfiniBand (ConnectX-4 Lx, ConnectX-6 Dx, ConnectX-6 Lx, BlueField-2),
    /// by the models of `zerohop_known::nic`.
    ///
    /// ## Why it matters
    /// The plan renders an InfiniBand rail as a policy with `linkType: IB`
    /// and an `SriovIBNetwork`, whose `ib-sriov` CNI needs InfiniBand VFs;
    /// these adapters have Ethernet ports only (NVIDIA's product briefs;
    /// the InfiniBand column of the models in `zerohop_known::nic`), so the
    /// port can never be switched to InfiniBand and the rail never comes
    /// up.
    ///
    /// ## How to fix
    /// Use `linkType: ETH` (RoCE) on these adapters, or give the
    /// `deviceId` of the InfiniBand-capable adapter actually fitted.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP031/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ibp12s0, rdmaDevice: mlx5_0, deviceId: "101d", linkType: IB, mtu: 4092, rail: 0, subnet: 192.168.100.0/24}
    ///         - {pf: ibp75s0, rdmaDevice: mlx5_1, deviceId: "101d", linkType: IB, mtu: 4092, rail: 1, subnet: 192.168.101.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:55: ConnectX-6 Dx has no infiniband ports [ZP031]
    ///   help: use linkType: ETH
    /// fail/intent.yaml:16:55: ConnectX-6 Dx has no infiniband ports [ZP031]
    ///   help: use linkType: ETH
    /// ```
    pub(crate) static INFINIBAND_ON_ETHERNET_NIC = {
        id: "ZP031",
        name: "infiniband-on-ethernet-nic",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A VLAN on an InfiniBand rail.
    ///
    /// ## What it checks
    /// NICs with `linkType: IB` that set `vlan`.
    ///
    /// ## Why it matters
    /// InfiniBand has no VLANs: it isolates traffic with partitions
    /// (P_Keys). The `SriovIBNetwork` the plan renders for an InfiniBand
    /// rail has no VLAN field, so the VLAN would be silently dropped and
    /// the rail not isolated as planned.
    ///
    /// ## How to fix
    /// Remove `vlan`; partition the fabric with P_Keys on the subnet
    /// manager.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP032/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ibp12s0, rdmaDevice: mlx5_0, deviceId: "1021", linkType: IB, mtu: 4092, rail: 0, subnet: 192.168.100.0/24, vlan: 100}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:129: vlan on an infiniband rail [ZP032]
    ///   help: infiniband has partitions (pkeys), not vlans; remove vlan
    /// ```
    pub(crate) static VLAN_ON_INFINIBAND = {
        id: "ZP032",
        name: "vlan-on-infiniband",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A NIC asks for VFs bound to `vfio-pci`, which cannot give pods RDMA devices.
    ///
    /// ## What it checks
    /// NICs with `deviceType: vfio-pci`.
    ///
    /// ## Why it matters
    /// The plan renders its SR-IOV policies with `isRdma: true`, and the
    /// SR-IOV Network Operator's webhook rejects `vfio-pci` together with
    /// RDMA (k8snetworkplumbingwg/sriov-network-operator
    /// `pkg/webhook/validate.go`): a VF bound to `vfio-pci` has no kernel
    /// RDMA device for the pod. Lint's ZL043 says the same of a
    /// hand-written policy.
    ///
    /// ## How to fix
    /// Use `deviceType: netdevice` (the default), which RDMA in pods on
    /// bare metal needs.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP033/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", deviceType: vfio-pci, rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:77: deviceType vfio-pci with rdma is rejected by the sr-iov operator webhook [ZP033]
    ///   help: use deviceType: netdevice (isRdma needs a kernel netdevice on bare metal)
    /// ```
    pub(crate) static VFIO_PCI_DEVICE_TYPE = {
        id: "ZP033",
        name: "vfio-pci-device-type",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A NIC's VF count that cannot be created: none, more than the NIC or the operator allows, or VFs in shared mode.
    ///
    /// ## What it checks
    /// Every NIC's `vfs` (a number, or `one-per-gpu` for one VF per GPU of
    /// the pool plus 20 %): with `rdma.mode: sriov`, at least 1 and at most
    /// `totalVfs` and the SR-IOV Network Operator's cap of 128 VFs per
    /// Mellanox PF; with `rdma.mode: shared`, not set at all.
    ///
    /// ## Why it matters
    /// The operator's webhook rejects a policy over 128 VFs on a Mellanox
    /// PF (`MlxMaxVFs`, k8snetworkplumbingwg/sriov-network-operator
    /// `pkg/webhook/validate.go`) and the firmware creates no more than its
    /// `NUM_OF_VFS` (`sriov_totalvfs`); 0 VFs leave the rail nothing to
    /// give a pod. In shared mode the pods share the PF's RDMA device and no VF is
    /// created, so VFs asked for there would never exist. Lint's ZL045
    /// says the same of a hand-written policy.
    ///
    /// ## How to fix
    /// Ask for at most `totalVfs` and 128 VFs per PF, or raise
    /// `NUM_OF_VFS` in the NIC's firmware (`mlxconfig`); remove `vfs` in
    /// shared mode, or set `rdma.mode: sriov`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP034/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", vfs: 200, rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:70: 200 vfs exceed the sr-iov operator's cap of 128 vfs per mellanox pf [ZP034]
    ///   help: use at most 128 vfs, or raise sriov_totalvfs in the nic firmware (NUM_OF_VFS)
    /// ```
    pub(crate) static UNUSABLE_VF_COUNT = {
        id: "ZP034",
        name: "unusable-vf-count",
        severity: Error,
    };
}

declare_intent_rule! {
    /// Two NICs describe one rail differently, or two rails share a resource name.
    ///
    /// ## What it checks
    /// All NICs of all pools with the same `rail`: the same link type,
    /// MTU, subnet, VLAN and resource name; and across rails, no resource
    /// name used twice.
    ///
    /// ## Why it matters
    /// A rail is one network: one SR-IOV network (or
    /// NetworkAttachmentDefinition) with one IPAM range, and one device
    /// plugin resource that pods request. Two NICs that disagree cannot
    /// both be it, and two rails under one resource name make the device
    /// plugin pool their VFs, so a pod asking for one device of each rail
    /// may get two of the same.
    ///
    /// ## How to fix
    /// Give the NICs of one rail the same link type, MTU, subnet, VLAN and
    /// resource name, and each rail its own resource name (the default
    /// `rdma_rail<N>` is).
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP035/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0/24}
    ///         - {pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: "1021", rail: 0, subnet: 192.168.101.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:16:71: rail 0 is described differently by another nic [ZP035]
    ///   help: nics on one rail share link type, mtu, subnet, vlan and resource name
    /// ```
    pub(crate) static INCONSISTENT_RAIL = {
        id: "ZP035",
        name: "inconsistent-rail",
        severity: Error,
    };
}

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
        &MALFORMED_INTERFACE_NAME,
        &nic.pf,
        "pf",
        names::netdev,
        "give the physical function's netdev name as `ip link` shows it, e.g. ens1f0np0",
    );
    c.grammar(
        &MALFORMED_INTERFACE_NAME,
        &nic.rdma_device,
        "rdmaDevice",
        names::rdma_device,
        "give the rdma device as `rdma link` or `ibv_devices` shows it, e.g. mlx5_0",
    );
    let model = match nic::by_pf_id(&nic.device_id.value) {
        Some(model) => Some(model),
        None if nic::is_vf_id(&nic.device_id.value) => {
            c.error(&UNKNOWN_NIC_DEVICE_ID, &nic.device_id.referenced, format!("device id {:?} is a virtual function id", nic.device_id.value), "give the physical function's device id, e.g. \"1021\" for connectx-7; the vf id is derived from it");
            None
        }
        None => {
            let known: Vec<String> = nic::MODELS
                .iter()
                .map(|m| format!("{} ({})", m.pf_device_id, m.name))
                .collect();
            c.error(
                &UNKNOWN_NIC_DEVICE_ID,
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
            &INFINIBAND_ON_ETHERNET_NIC,
            &nic.device_id.referenced,
            format!("{} has no infiniband ports", model.name),
            "use linkType: ETH",
        );
    }
    if let Some(device_type) = &nic.device_type
        && device_type.value == DeviceType::VfioPci
    {
        c.error(
            &VFIO_PCI_DEVICE_TYPE,
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
                &UNUSABLE_VF_COUNT,
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
                    &UNUSABLE_VF_COUNT,
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
                c.error(&UNUSABLE_VF_COUNT, &location, format!("{wanted} vfs exceed {limit}"), format!("use at most {total} vfs, or raise sriov_totalvfs in the nic firmware (NUM_OF_VFS)"));
            }
            wanted
        }
    };
    let resource_name = match &nic.resource_name {
        Some(name) => {
            c.grammar(&MALFORMED_RESOURCE_NAME, name, "resource name", grammar::resource_name, "use letters, digits and '_' only, starting and ending with a letter or digit (e.g. rdma_rail0)");
            name.value.clone()
        }
        None => format!("rdma_rail{}", nic.rail.value),
    };
    c.grammar(
        &MALFORMED_ADDRESS,
        &nic.subnet,
        "subnet",
        grammar::cidr,
        "write the subnet as 192.168.10.0/24",
    );
    if let Some(vlan) = &nic.vlan {
        if nic.link_type == LinkType::Ib {
            c.error(
                &VLAN_ON_INFINIBAND,
                &vlan.referenced,
                "vlan on an infiniband rail",
                "infiniband has partitions (pkeys), not vlans; remove vlan",
            );
        } else if vlan.value == 0 || vlan.value > 4094 {
            c.error(
                &VALUE_OUT_OF_RANGE,
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
            &VALUE_OUT_OF_RANGE,
            &nic.mtu.referenced,
            format!("mtu {mtu} is out of range"),
            format!("use {range}"),
        );
    } else if nic.link_type == LinkType::Eth && mtu < ROCE_MIN_MTU {
        // Every Ethernet rail carries RoCE: below this floor the path MTU
        // drops under 4096 bytes and the doctor's QOS001 fails the port.
        c.error(
            &VALUE_OUT_OF_RANGE,
            &nic.mtu.referenced,
            format!(
                "mtu {mtu} is below {ROCE_MIN_MTU}, the least that carries roce's 4096-byte path mtu"
            ),
            format!("use {ROCE_MIN_MTU} to 9216 (9000 for roce)"),
        );
    }
    if let Some(rate) = &nic.link_rate_gbps
        && !(1..=MAX_LINK_RATE_GBPS).contains(&rate.value)
    {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &rate.referenced,
            format!("linkRateGbps {} is out of range", rate.value),
            format!(
                "give the port's rate in Gb/s, 1 to {MAX_LINK_RATE_GBPS}, as /sys/class/infiniband/DEVICE/ports/1/rate shows it (e.g. 400)"
            ),
        );
    }
    let rail = RailPlan {
        host_network: false,
        servers: Vec::new(),
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
                &INCONSISTENT_RAIL,
                &nic.rail.referenced,
                format!("rail {} is described differently by another nic", rail.rail),
                "nics on one rail share link type, mtu, subnet, vlan and resource name",
            );
        }
        Some(_) => {}
        None => {
            if !rails.resource_names.insert(rail.resource_name.clone()) {
                c.error(
                    &INCONSISTENT_RAIL,
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
        link_rate_gbps: nic.link_rate_gbps.map(|r| r.value),
        rail: nic.rail.value,
        numa_node: nic.numa_node.map(|n| n.value),
    })
}
