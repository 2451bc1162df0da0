//! SR-IOV Network Operator: policies, networks, device IDs.

use std::collections::{HashMap, HashSet};

use serde_json::Value as Json;
use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use super::resources::{Advertiser, advertised};
use crate::model::{Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, join_some, short};
use zerohop_known::nic::{self, MELLANOX_MAX_VFS, MELLANOX_VENDOR_HEX};
use zerohop_known::operators::{NETWORK_OPERATOR_GROUP, SRIOV_GROUP};
use zerohop_known::operators::{is_gpu_feature_discovery_label, nfd_pci_vendor_label};

const GROUP: &str = SRIOV_GROUP;

fn policies<'w, 'a>(workspace: &'w Workspace<'a>) -> impl Iterator<Item = &'w Object<'a>> {
    workspace.of_kind(GROUP, "SriovNetworkNodePolicy")
}

fn spec<'a>(object: &Object<'a>) -> Option<&'a Node> {
    object.get(&[PathStep::Key("spec")])
}

/// A scalar as text: device IDs are often written unquoted (`1017`).
fn text(node: Option<&Node>) -> Option<String> {
    node.and_then(Node::scalar_text)
}

/// The namespaces in which the input runs an SR-IOV Network Operator: those
/// of its policies, pool configs and operator configs. The operator reads
/// its policies in its own namespace only ("is created or updated but not
/// used. Only policy in <namespace> namespace is respected",
/// k8snetworkplumbingwg/sriov-network-operator `pkg/webhook/validate.go`),
/// so two such namespaces are two operators, or two unrelated examples, and
/// one's policies say nothing about the other's networks.
struct OperatorNamespaces<'a>(HashSet<&'a str>);

impl<'a> OperatorNamespaces<'a> {
    fn of(workspace: &Workspace<'a>) -> OperatorNamespaces<'a> {
        OperatorNamespaces(
            workspace
                .objects
                .iter()
                .filter(|o| {
                    o.group() == GROUP
                        && matches!(
                            o.kind,
                            "SriovNetworkNodePolicy"
                                | "SriovNetworkPoolConfig"
                                | "SriovOperatorConfig"
                        )
                })
                .filter_map(|o| o.namespace)
                .collect(),
        )
    }

    /// Whether `configuring` (a policy or pool config) applies to
    /// `network`: unless both name their namespace, the network's is an
    /// operator's, and the two differ. A network outside every operator
    /// namespace (the operator accepts SriovNetworks in other namespaces,
    /// `controllers/generic_network_controller.go`) is served by any.
    fn serve(&self, configuring: &Object<'_>, network: &Object<'_>) -> bool {
        match (configuring.namespace, network.namespace) {
            (Some(theirs), Some(mine)) if self.0.contains(mine) => theirs == mine,
            _ => true,
        }
    }
}

const DEVICE_ID: [PathStep<'static>; 3] = [
    PathStep::Key("spec"),
    PathStep::Key("nicSelector"),
    PathStep::Key("deviceID"),
];

declare_lint! {
    /// A SriovNetworkNodePolicy selects NICs by a VF device ID.
    ///
    /// ## What it checks
    /// `spec.nicSelector.deviceID` against the VF device IDs of NVIDIA
    /// adapters (1014, 1016, 1018, 101a, 101c, 101e).
    ///
    /// ## Why it matters
    /// The policy selects physical functions: the webhook rejects a VF ID
    /// ("vendor/device ... is not supported") and without the webhook the
    /// policy matches no NIC, so no VFs are created.
    ///
    /// ## How to fix
    /// Use the PF device ID of the adapter (ConnectX-6 Dx: 101d,
    /// ConnectX-7: 1021), or select by `pfNames`/`rootDevices`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL040/fail/`:
    ///
    /// ```text
    /// error[ZL040]: deviceID `101e` is the vf id of ConnectX-6 Dx, ConnectX-6 Lx, ConnectX-7, ConnectX-8, ConnectX-9, BlueField-2 (ConnectX-6 Dx), BlueField-3 (ConnectX-7); a policy selects pfs
    ///   --> fail/input.yaml:13:5
    ///    |
    /// 13 |     deviceID: "101e"
    ///    |     ^^^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: use the pf device id: 101d for ConnectX-6 Dx, 101f for ConnectX-6 Lx, 1021 for ConnectX-7, 1023 for ConnectX-8, 1025 for ConnectX-9, a2d6 for BlueField-2 (ConnectX-6 Dx), a2dc for BlueField-3 (ConnectX-7)
    /// ```
    pub(crate) static VF_DEVICE_ID_IN_POLICY = {
        id: "ZL040",
        name: "vf-device-id-in-policy",
        severity: Error,
        check: vf_device_id_in_policy,
    };
}

fn vf_device_id_in_policy(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in policies(workspace) {
        let Some(id) = text(object.get(&DEVICE_ID)) else {
            continue;
        };
        let models = nic::with_vf_id(&id);
        if models.is_empty() {
            continue;
        }
        let adapters: Vec<&str> = models.iter().map(|model| model.name).collect();
        let pfs: Vec<String> = models
            .iter()
            .map(|model| format!("{} for {}", model.pf_device_id, model.name))
            .collect();
        sink.report(
            object,
            &DEVICE_ID,
            format!(
                "deviceID `{id}` is the vf id of {}; a policy selects pfs",
                adapters.join(", ")
            ),
            Remediation::new(format!("use the pf device id: {}", pfs.join(", "))),
        );
    }
}

declare_lint! {
    /// An SR-IOV device plugin selector for VFs lists a PF device ID.
    ///
    /// ## What it checks
    /// `selectors.devices` of the SR-IOV device plugin resources (in a
    /// NicClusterPolicy, NicNodePolicy or the plugin's ConfigMap) that also
    /// ask for RDMA or name Mellanox VFs elsewhere, for PF device IDs such
    /// as 1017 or 101d.
    ///
    /// ## Why it matters
    /// The plugin matches the devices it should hand to pods, the VFs; a PF
    /// ID matches no VF and the resource is advertised with 0 devices
    /// ("Insufficient ..." for every pod).
    ///
    /// ## How to fix
    /// Use the VF device ID (ConnectX-5: 1018, ConnectX-6 Dx/7/8: 101e), and
    /// `pciAddresses` rather than `devices` for addresses.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL041/fail/`:
    ///
    /// ```text
    /// warning[ZL041]: resource `sriov_rdma` selects device `1017`, the pf id of ConnectX-5; its vfs are `1018`
    ///   --> fail/input.yaml:10:5
    ///    |
    /// 10 |     config: |
    ///    |     ^^^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: select the vf device id `1018` in "devices"
    /// ```
    pub(crate) static PF_DEVICE_ID_IN_VF_SELECTOR = {
        id: "ZL041",
        name: "pf-device-id-in-vf-selector",
        severity: Warning,
        check: pf_device_id_in_vf_selector,
    };
}

/// The model whose PF has device ID `pf`, by name, with its VF device ID.
fn adapter_with_pf(pf: &str) -> Option<(&'static str, &'static str)> {
    nic::by_pf_id(pf).map(|model| (model.name, model.vf_device_id))
}

fn pf_device_id_in_vf_selector(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for resource in advertised(workspace) {
        if resource.by != Advertiser::SriovDevicePlugin {
            continue;
        }
        let devices = &resource.devices;
        let has_vf = devices.iter().any(|id| nic::is_vf_id(id));
        for id in devices {
            let Some((adapter, vf)) = adapter_with_pf(id) else {
                continue;
            };
            if (has_vf || resource.rdma) && !sink.counted_only(resource.object.file) {
                sink.report(
                    &resource.object,
                    resource.path,
                    format!(
                        "resource `{}` selects device `{id}`, the pf id of {adapter}; its vfs are `{vf}`",
                        short(&resource.name)
                    ),
                    Remediation::new(format!("select the vf device id `{vf}` in \"devices\"")),
                );
            }
        }
    }
}

declare_lint! {
    /// An SR-IOV device plugin selects VFs that no SriovNetworkNodePolicy in the input creates.
    ///
    /// ## What it checks
    /// When the input has SriovNetworkNodePolicies that select NICs by
    /// `nicSelector.deviceID`, whether the VF device IDs in each SR-IOV
    /// device plugin resource's `devices` belong to one of those PFs
    /// (ConnectX-5 1017 creates 1018 VFs, ConnectX-6 Dx/7/8 create 101e).
    ///
    /// ## Why it matters
    /// The policies create VFs with one device ID and the plugin looks for
    /// another: the resource stays at 0 devices and pods stay Pending.
    ///
    /// ## How to fix
    /// Put the VF ID of the policies' adapter in the plugin's `devices`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL042/fail/`:
    ///
    /// ```text
    /// error[ZL042]: resource `dp_vfs` selects vf devices 101e but the policies create vfs `1018` (ConnectX-5, policy `policy`)
    ///   --> fail/input.yaml:24:5
    ///    |
    /// 24 |     config: |
    ///    |     ^^^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: select the vf device id of the policies' adapter in "devices"
    /// ```
    pub(crate) static VF_SELECTOR_NEVER_MATCHES_POLICY = {
        id: "ZL042",
        name: "vf-selector-never-matches-policy",
        severity: Error,
        check: vf_selector_never_matches_policy,
    };
}

fn vf_selector_never_matches_policy(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let created: Vec<(String, &'static str, &'static str)> = policies(workspace)
        .filter_map(|policy| {
            let pf = text(policy.get(&DEVICE_ID))?;
            let (adapter, vf) = adapter_with_pf(&pf)?;
            Some((policy.name.to_owned(), adapter, vf))
        })
        .collect();
    if created.is_empty() {
        return;
    }
    // The VF device IDs the policies create (a handful: one per adapter
    // family), for one lookup per selected device.
    let created_vfs: HashSet<&str> = created.iter().map(|(_, _, vf)| *vf).collect();
    for plugin in advertised(workspace)
        .iter()
        .filter(|r| r.by == Advertiser::SriovDevicePlugin)
    {
        let devices = &plugin.devices;
        if devices.is_empty() || !devices.iter().all(|id| nic::is_vf_id(id)) {
            continue;
        }
        if devices
            .iter()
            .any(|id| created_vfs.contains(id.to_ascii_lowercase().as_str()))
        {
            continue;
        }
        let made = join_some(created.iter().map(|(policy, adapter, vf)| {
            format!("`{vf}` ({adapter}, policy `{}`)", short(policy))
        }));
        sink.report(
            &plugin.object,
            plugin.path,
            format!(
                "resource `{}` selects vf devices {} but the policies create vfs {}",
                short(&plugin.name),
                join_some(devices.iter().map(|device| short(device).to_string())),
                made
            ),
            Remediation::new("select the vf device id of the policies' adapter in \"devices\""),
        );
    }
}

declare_lint! {
    /// A SriovNetworkNodePolicy asks for RDMA on VFs bound to `vfio-pci`.
    ///
    /// ## What it checks
    /// `spec.deviceType: vfio-pci` together with `spec.isRdma: true`.
    ///
    /// ## Why it matters
    /// The webhook rejects it: a VF bound to vfio-pci has no kernel RDMA
    /// device. RoCE on bare metal uses `netdevice` with `isRdma: true`; in a
    /// VM, vfio-pci with `isRdma: false`.
    ///
    /// ## How to fix
    /// Use `deviceType: netdevice` for RDMA in pods, or drop `isRdma` for
    /// VM/DPDK use.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL043/fail/`:
    ///
    /// ```text
    /// error[ZL043]: `isRdma: true` with `deviceType: vfio-pci` is rejected: vfio-pci vfs have no rdma device
    ///   --> fail/input.yaml:15:3
    ///    |
    /// 15 |   isRdma: true
    ///    |   ^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: use `deviceType: netdevice` for rdma in pods, or set `isRdma: false`
    /// ```
    pub(crate) static VFIO_PCI_WITH_RDMA = {
        id: "ZL043",
        name: "vfio-pci-with-rdma",
        severity: Error,
        check: vfio_pci_with_rdma,
    };
}

fn vfio_pci_with_rdma(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in policies(workspace) {
        let Some(spec) = spec(object) else {
            continue;
        };
        let vfio = spec.get("deviceType").and_then(Node::as_str) == Some("vfio-pci");
        if vfio && spec.get("isRdma").and_then(Node::as_bool) == Some(true) {
            sink.report(
                object,
                &[PathStep::Key("spec"), PathStep::Key("isRdma")],
                "`isRdma: true` with `deviceType: vfio-pci` is rejected: vfio-pci vfs have no rdma device",
                Remediation::new("use `deviceType: netdevice` for rdma in pods, or set `isRdma: false`"),
            );
        }
    }
}

declare_lint! {
    /// An InfiniBand policy's resource is used by a `SriovNetwork` instead of a `SriovIBNetwork`.
    ///
    /// ## What it checks
    /// SriovNetwork objects whose `resourceName` belongs to a
    /// SriovNetworkNodePolicy with `linkType: IB` of the same operator: a
    /// policy in another operator's namespace (another install, or an
    /// unrelated example linted alongside) does not count: the operator
    /// uses only the policies in its own namespace
    /// (k8snetworkplumbingwg/sriov-network-operator `pkg/webhook/validate.go`,
    /// "Only policy in <namespace> namespace is respected").
    ///
    /// ## Why it matters
    /// SriovNetwork renders an Ethernet `sriov` CNI config; on IB VFs the
    /// pod's network setup fails or gets no usable interface. IB needs the
    /// `ib-sriov` CNI that SriovIBNetwork renders.
    ///
    /// ## How to fix
    /// Change the kind to `SriovIBNetwork` (drop Ethernet-only fields such as
    /// `vlan`, `spoofChk`, `trust`).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL044/fail/`:
    ///
    /// ```text
    /// error[ZL044]: resource `rdma_vfs` comes from infiniband policy `policy`; a SriovNetwork renders ethernet config
    ///   --> fail/input.yaml:22:3
    ///    |
    /// 22 |   resourceName: rdma_vfs
    ///    |   ^^^^^^^^^^^^
    ///    = object: SriovNetwork/sriov-network-operator/ib-net
    ///    = help: use kind SriovIBNetwork for infiniband vfs
    /// ```
    pub(crate) static IB_POLICY_WITH_ETHERNET_NETWORK = {
        id: "ZL044",
        name: "ib-policy-with-ethernet-network",
        severity: Error,
        check: ib_policy_with_ethernet_network,
    };
}

fn ib_policy_with_ethernet_network(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let namespaces = OperatorNamespaces::of(workspace);
    // Resource name → the InfiniBand policies creating it.
    let mut ib_resources: HashMap<&str, Vec<&Object<'_>>> = HashMap::new();
    for policy in policies(workspace).filter(|p| {
        spec(p)
            .and_then(|s| s.get("linkType"))
            .and_then(Node::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("ib"))
    }) {
        if let Some(resource) = spec(policy)
            .and_then(|s| s.get("resourceName"))
            .and_then(Node::as_str)
        {
            ib_resources.entry(resource).or_default().push(policy);
        }
    }
    for object in workspace.of_kind(GROUP, "SriovNetwork") {
        let path = [PathStep::Key("spec"), PathStep::Key("resourceName")];
        let Some(resource) = object.str_at(&path) else {
            continue;
        };
        let policy = ib_resources
            .get(resource)
            .and_then(|policies| policies.iter().find(|p| namespaces.serve(p, object)));
        if let Some(policy) = policy {
            sink.report(
                object,
                &path,
                format!(
                    "resource `{}` comes from infiniband policy `{}`; a SriovNetwork renders ethernet config",
                    short(resource),
                    short(policy.name)
                ),
                Remediation::new("use kind SriovIBNetwork for infiniband vfs"),
            );
        }
    }
}

declare_lint! {
    /// More than 128 VFs requested on an NVIDIA/Mellanox NIC.
    ///
    /// ## What it checks
    /// `spec.numVfs` of SriovNetworkNodePolicies that select vendor `15b3`
    /// or an NVIDIA adapter's device ID.
    ///
    /// ## Why it matters
    /// The SR-IOV Network Operator caps Mellanox NICs at 128 VFs
    /// (`MlxMaxVFs`) and rejects the policy; the firmware cannot create more.
    ///
    /// ## How to fix
    /// Request at most 128 VFs per PF (for InfiniBand, NVIDIA recommends at
    /// most 16).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL045/fail/`:
    ///
    /// ```text
    /// error[ZL045]: numVfs 256 is above the 128 vfs the operator allows on nvidia/mellanox nics
    ///   --> fail/input.yaml:10:3
    ///    |
    /// 10 |   numVfs: 256
    ///    |   ^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: request at most 128 vfs per pf
    /// ```
    pub(crate) static TOO_MANY_MELLANOX_VFS = {
        id: "ZL045",
        name: "too-many-mellanox-vfs",
        severity: Error,
        check: too_many_mellanox_vfs,
    };
}

fn too_many_mellanox_vfs(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in policies(workspace) {
        let vendor = text(object.get(&[
            PathStep::Key("spec"),
            PathStep::Key("nicSelector"),
            PathStep::Key("vendor"),
        ]));
        let device = text(object.get(&DEVICE_ID));
        let mellanox = vendor.as_deref() == Some(MELLANOX_VENDOR_HEX)
            || device
                .as_deref()
                .is_some_and(|id| nic::by_pf_id(id).is_some() || nic::is_vf_id(id));
        let path = [PathStep::Key("spec"), PathStep::Key("numVfs")];
        let Some(count) = object.get(&path).and_then(Node::as_i64) else {
            continue;
        };
        if mellanox && count > i64::from(MELLANOX_MAX_VFS) {
            sink.report(
                object,
                &path,
                format!("numVfs {count} is above the {MELLANOX_MAX_VFS} vfs the operator allows on nvidia/mellanox nics"),
                Remediation::new(format!("request at most {MELLANOX_MAX_VFS} vfs per pf")),
            );
        }
    }
}

declare_lint! {
    /// A `pfNames` VF range that is malformed or reaches beyond `numVfs`.
    ///
    /// ## What it checks
    /// Entries `<pf>#<first>-<last>` of `spec.nicSelector.pfNames`: exactly
    /// one `#` and one `-`, integer bounds, `last ≥ first` and
    /// `last < numVfs`.
    ///
    /// ## Why it matters
    /// The webhook rejects the policy; without the webhook, the VFs beyond
    /// `numVfs` do not exist and the pool is smaller than planned.
    ///
    /// ## How to fix
    /// Keep the range within `0..numVfs-1` (`ens1f0#0-7` for `numVfs: 8`), or
    /// raise `numVfs`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL046/fail/`:
    ///
    /// ```text
    /// error[ZL046]: `ens1f0#0-8`: vf 8 does not exist with numVfs 8 (vfs are 0..7)
    ///   --> fail/input.yaml:13:9
    ///    |
    /// 13 |       - "ens1f0#0-8"
    ///    |         ^^^^^^^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: keep the range within 0..numVfs-1, or raise numVfs
    /// ```
    pub(crate) static PF_NAMES_RANGE_BEYOND_NUM_VFS = {
        id: "ZL046",
        name: "pf-names-range-beyond-num-vfs",
        severity: Error,
        check: pf_names_range_beyond_num_vfs,
    };
}

fn pf_names_range_beyond_num_vfs(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in policies(workspace) {
        let num_vfs = object
            .get(&[PathStep::Key("spec"), PathStep::Key("numVfs")])
            .and_then(Node::as_i64);
        let Some(names) = object.get(&[
            PathStep::Key("spec"),
            PathStep::Key("nicSelector"),
            PathStep::Key("pfNames"),
        ]) else {
            continue;
        };
        for (index, name) in names.items().iter().enumerate() {
            let Some(name) = name.as_str() else {
                continue;
            };
            let Some((_, range)) = name.split_once('#') else {
                continue;
            };
            let path = [
                PathStep::Key("spec"),
                PathStep::Key("nicSelector"),
                PathStep::Key("pfNames"),
                PathStep::Index(index),
            ];
            let bounds = range
                .split_once('-')
                .and_then(|(first, last)| {
                    Some((first.parse::<i64>().ok()?, last.parse::<i64>().ok()?))
                })
                .filter(|_| !range.contains('#'));
            let problem = match (bounds, num_vfs) {
                (None, _) => Some(format!(
                    "`{name}` is not `<pf>#<first>-<last>` with integer bounds"
                )),
                (Some((first, last)), _) if last < first => Some(format!(
                    "`{name}`: range end {last} is below its start {first}"
                )),
                (Some((_, last)), Some(count)) if last >= count => Some(format!(
                    "`{name}`: vf {last} does not exist with numVfs {count} (vfs are 0..{})",
                    count - 1
                )),
                _ => None,
            };
            if let Some(message) = problem {
                sink.report(
                    object,
                    &path,
                    message,
                    Remediation::new("keep the range within 0..numVfs-1, or raise numVfs"),
                );
            }
        }
    }
}

declare_lint! {
    /// An SR-IOV network of RDMA VFs does not chain the `rdma` CNI plugin, so pods get no RDMA device.
    ///
    /// ## What it checks
    /// When a SriovNetworkPoolConfig in the input puts the RDMA subsystem in
    /// `exclusive` mode: every SriovNetwork and SriovIBNetwork whose
    /// `resourceName` is advertised by an `isRdma` (or InfiniBand)
    /// SriovNetworkNodePolicy must list `{"type": "rdma"}` in
    /// `metaPlugins`. The pool config and the policy must be of the
    /// network's operator (not in another operator's namespace). In any
    /// mode, `capabilities` must not name `rdma`.
    ///
    /// ## Why it matters
    /// In exclusive mode an RDMA device lives in one network namespace.
    /// sriov-cni and ib-sriov-cni move the VF's netdev into the pod, not
    /// its RDMA device: that is the `rdma` CNI plugin's job ("moving the
    /// associated RDMA interfaces of the provided network interface to the
    /// container's network namespace path", k8snetworkplumbingwg/rdma-cni
    /// `README.md`), chained after it (sriov-network-operator
    /// `doc/rdma-configuration.md`, step 3 "Define network with RDMA CNI
    /// plugin"). The operator copies `metaPlugins` verbatim into the NAD's
    /// plugin list (`bindata/manifests/cni-config/sriov/sriov-cni-config.yaml`)
    /// and adds nothing itself, so without it the pod has the VF's netdev
    /// and no `mlx5_*` device: `ibv_devinfo` finds nothing and NCCL falls
    /// back to TCP. A `capabilities: '{"rdma": true}'` changes nothing:
    /// `capabilities` declares which runtime configuration (`mac`, `ips`)
    /// Multus passes to the plugin, and no plugin has an `rdma` one.
    ///
    /// ## How to fix
    /// Add the plugin to `metaPlugins` (after any other, comma-separated,
    /// without brackets), and remove an `rdma` capability.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL047/fail/`:
    ///
    /// ```text
    /// error[ZL047]: `rdma` is not a cni capability: it moves no rdma device into the pod
    ///   --> fail/input.yaml:37:3
    ///    |
    /// 37 |   capabilities: '{"rdma": true}'
    ///    |   ^^^^^^^^^^^^
    ///    = object: SriovNetwork/sriov-network-operator/rail0
    ///    = help: remove it; chain the rdma plugin in metaPlugins instead
    ///            metaPlugins: |
    ///              {"type": "rdma"}
    /// ```
    pub(crate) static RDMA_NETWORK_WITHOUT_RDMA_CNI = {
        id: "ZL047",
        name: "rdma-network-without-rdma-cni",
        severity: Error,
        check: rdma_network_without_rdma_cni,
    };
}

/// Whether a `metaPlugins` text chains the `rdma` plugin. The operator
/// writes it into a JSON list, so it is read as one; text that does not
/// parse is judged by its words.
fn chains_rdma(meta_plugins: &str) -> bool {
    match serde_json::from_str::<Json>(&format!("[{meta_plugins}]")) {
        Ok(Json::Array(plugins)) => plugins
            .iter()
            .any(|p| p.get("type") == Some(&Json::from("rdma"))),
        _ => {
            let compact: String = meta_plugins.split_whitespace().collect();
            compact.contains(r#""type":"rdma""#)
        }
    }
}

fn rdma_network_without_rdma_cni(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let namespaces = OperatorNamespaces::of(workspace);
    let exclusive: Vec<&Object<'_>> = workspace
        .of_kind(GROUP, "SriovNetworkPoolConfig")
        .filter(|pool| {
            pool.str_at(&[PathStep::Key("spec"), PathStep::Key("rdmaMode")]) == Some("exclusive")
        })
        .collect();
    // Resource name → the RDMA policies creating it.
    let mut rdma_resources: HashMap<&str, Vec<&Object<'_>>> = HashMap::new();
    for resource in advertised(workspace)
        .iter()
        .filter(|a| a.by == Advertiser::SriovOperator && a.rdma)
    {
        rdma_resources
            .entry(resource.name.as_str())
            .or_default()
            .push(&resource.object);
    }
    let networks = workspace
        .of_kind(GROUP, "SriovNetwork")
        .chain(workspace.of_kind(GROUP, "SriovIBNetwork"));
    for network in networks {
        let capabilities = [PathStep::Key("spec"), PathStep::Key("capabilities")];
        if let Some(text) = network.str_at(&capabilities)
            && serde_json::from_str::<Json>(text)
                .ok()
                .is_some_and(|c| c.get("rdma").is_some())
        {
            sink.report(
                network,
                &capabilities,
                "`rdma` is not a cni capability: it moves no rdma device into the pod",
                Remediation::new("remove it; chain the rdma plugin in metaPlugins instead")
                    .command("metaPlugins: |\n  {\"type\": \"rdma\"}"),
            );
        }
        let Some(resource) =
            network.str_at(&[PathStep::Key("spec"), PathStep::Key("resourceName")])
        else {
            continue;
        };
        let meta = [PathStep::Key("spec"), PathStep::Key("metaPlugins")];
        let exclusive = exclusive.iter().any(|pool| namespaces.serve(pool, network));
        let rdma = rdma_resources
            .get(resource)
            .is_some_and(|policies| policies.iter().any(|p| namespaces.serve(p, network)));
        if !exclusive || !rdma || network.str_at(&meta).is_some_and(chains_rdma) {
            continue;
        }
        let at: &[PathStep<'_>] = if network.get(&meta).is_some() {
            &meta
        } else {
            &[PathStep::Key("spec"), PathStep::Key("resourceName")]
        };
        sink.report(
            network,
            at,
            format!(
                "{} `{}` hands out rdma vfs of `{}` in exclusive rdma mode without the rdma cni plugin: pods get the netdev and no rdma device",
                network.kind,
                short(network.name),
                short(resource)
            ),
            Remediation::new("chain the rdma plugin after the others in metaPlugins")
                .command("metaPlugins: |\n  {\"type\": \"rdma\"}"),
        );
    }
}

/// Where a node label key is written in a node selector of `node`: the keys
/// of `nodeSelector`-like maps, of `matchLabels`, and the `key` of
/// `matchExpressions` (a LabelSelector or a node affinity's terms). `path`
/// is where `node` is; found keys are pushed with the path to them.
fn selector_keys<'a>(
    node: &'a Node,
    path: &mut Vec<PathStep<'a>>,
    found: &mut Vec<(Vec<PathStep<'a>>, &'a str)>,
) {
    for (index, item) in node.items().iter().enumerate() {
        path.push(PathStep::Index(index));
        selector_keys(item, path, found);
        path.pop();
    }
    for entry in node.entries() {
        path.push(PathStep::Key(&entry.key));
        match entry.key.as_str() {
            "nodeSelector" | "configDaemonNodeSelector" | "matchLabels" => {
                for label in entry.value.entries() {
                    let mut at = path.clone();
                    at.push(PathStep::Key(&label.key));
                    found.push((at, &label.key));
                }
                // A LabelSelector under `nodeSelector` has its own maps.
                selector_keys(&entry.value, path, found);
            }
            "matchExpressions" => {
                for (index, expression) in entry.value.items().iter().enumerate() {
                    if let Some(key) = expression.get("key").and_then(Node::as_str) {
                        let mut at = path.clone();
                        at.extend([PathStep::Index(index), PathStep::Key("key")]);
                        found.push((at, key));
                    }
                }
            }
            _ => selector_keys(&entry.value, path, found),
        }
        path.pop();
    }
}

declare_lint! {
    /// An SR-IOV or Network Operator object selects nodes by a GPU Feature Discovery label, which appears only after the GPU stack is up.
    ///
    /// ## What it checks
    /// The node selectors and node affinities of SR-IOV Network Operator
    /// objects (SriovNetworkNodePolicy, SriovNetworkPoolConfig,
    /// SriovOperatorConfig) and Network Operator objects (NicClusterPolicy,
    /// NicNodePolicy), for labels that GPU Feature Discovery sets:
    /// `nvidia.com/gpu.product`, `nvidia.com/gpu.count`,
    /// `nvidia.com/cuda.*` and the others of its "Generated Labels"
    /// (NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery/README.md`).
    /// `nvidia.com/gpu.present` and `nvidia.com/gpu.deploy.*`, which the GPU
    /// Operator sets as soon as it runs, are not counted.
    ///
    /// ## Why it matters
    /// GFD is a component of the GPU Operator's ClusterPolicy; it starts
    /// once the GPU driver is up, which with GPUDirect RDMA waits for the
    /// NIC driver that the Network Operator installs. Until then the label
    /// is on no node: the policy selects nothing, no VFs are created and no
    /// driver is deployed, and the GPU driver keeps waiting for it.
    ///
    /// ## How to fix
    /// Select on Node Feature Discovery's PCI labels
    /// (`feature.node.kubernetes.io/pci-15b3.present: "true"` for nodes
    /// with NVIDIA NICs, `pci-10de` for GPUs) or on a label of your own.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL048/fail/`:
    ///
    /// ```text
    /// error[ZL048]: SriovNetworkPoolConfig selects nodes by `nvidia.com/gpu.product`, a gpu feature discovery label that no node has until the gpu stack is up
    ///   --> fail/sriov.yaml:10:7
    ///    |
    /// 10 |       nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    ///    |       ^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: SriovNetworkPoolConfig/nvidia-network-operator/rdma-exclusive
    ///    = help: select on node feature discovery's pci label, e.g. `feature.node.kubernetes.io/pci-15b3.present: "true"`, or on a label of your own
    /// ```
    pub(crate) static SELECTOR_ON_GPU_FEATURE_DISCOVERY_LABEL = {
        id: "ZL048",
        name: "selector-on-gpu-feature-discovery-label",
        severity: Error,
        check: selector_on_gpu_feature_discovery_label,
    };
}

fn selector_on_gpu_feature_discovery_label(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let networking = |object: &Object<'_>| match object.group() {
        GROUP => matches!(
            object.kind,
            "SriovNetworkNodePolicy" | "SriovNetworkPoolConfig" | "SriovOperatorConfig"
        ),
        NETWORK_OPERATOR_GROUP => matches!(object.kind, "NicClusterPolicy" | "NicNodePolicy"),
        _ => false,
    };
    for object in workspace.objects.iter().filter(|o| networking(o)) {
        let Some(spec) = spec(object) else {
            continue;
        };
        let mut found = Vec::new();
        selector_keys(spec, &mut vec![PathStep::Key("spec")], &mut found);
        for (path, key) in found {
            if !is_gpu_feature_discovery_label(key) || sink.counted_only(object.file) {
                continue;
            }
            sink.report(
                object,
                &path,
                format!(
                    "{} selects nodes by `{}`, a gpu feature discovery label that no node has until the gpu stack is up",
                    object.kind,
                    short(key)
                ),
                Remediation::new(format!(
                    "select on node feature discovery's pci label, e.g. `{}: \"true\"`, or on a label of your own",
                    nfd_pci_vendor_label(MELLANOX_VENDOR_HEX)
                )),
            );
        }
    }
}
