//! The storage network seen from the pods' networks: the addresses of the
//! storage servers the set mounts, the whereabouts ranges that would hand
//! them out, the IPAM that must be installed, and the workloads that attach
//! to the storage rail.

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::Value as Json;
use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::operators::NETWORK_OPERATOR_GROUP;

use super::facts::is_openshift;
use super::machine_config::{self, data_url, directive, units};
use super::networks::ipam_field;
use super::whereabouts::{Address, Range, Whereabouts, ipam_blocks};
use super::workloads::{networks, pod_networks};
use crate::model::{Object, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, join_some, short};

/// A storage server's address the set names.
#[derive(Debug, Clone)]
pub(crate) struct StorageAddress {
    pub(crate) address: Address,
    /// The address as written.
    pub(crate) text: String,
    /// What it is, for messages: ``the nfs server of MachineConfig `x` ``.
    pub(crate) what: String,
}

/// The host of an NFS `What=` (`10.0.0.1:/export`, `[fd00::1]:/export`).
fn nfs_host(what: &str) -> Option<&str> {
    if let Some(rest) = what.strip_prefix('[') {
        return rest.split_once(']').map(|(host, _)| host);
    }
    what.rsplit_once(":/").map(|(host, _)| host)
}

/// The `--traddr` of an `nvme` argument list (`discovery.conf` line).
fn nvme_traddr(line: &str) -> Option<&str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.iter().enumerate().find_map(|(i, word)| {
        word.strip_prefix("--traddr=").or_else(|| {
            matches!(*word, "--traddr" | "-a")
                .then(|| words.get(i + 1).copied())
                .flatten()
        })
    })
}

/// Every storage server address the set names: the NFS servers of
/// MachineConfig mount units and host mount units, PersistentVolumes (`spec.nfs.server`, CSI
/// `volumeAttributes.server`) and StorageClasses (`parameters.server`), and
/// the NVMe-oF targets of an `/etc/nvme/discovery.conf` (a MachineConfig's
/// or a host file).
/// Host names are left out: lint cannot resolve them.
pub(crate) fn storage_addresses(workspace: &Workspace<'_>) -> Vec<StorageAddress> {
    let mut found = Vec::new();
    let mut add = |text: &str, what: String| {
        if let Ok(ip) = text.trim().parse::<IpAddr>() {
            found.push(StorageAddress {
                address: Address::of(ip),
                text: text.trim().to_owned(),
                what,
            });
        }
    };
    for object in workspace.of_kind(machine_config::GROUP, "MachineConfig") {
        for unit in units(object) {
            let is_nfs =
                directive(unit.contents, "Type").is_some_and(|kind| kind.starts_with("nfs"));
            if let Some(host) = directive(unit.contents, "What")
                .filter(|_| is_nfs)
                .and_then(nfs_host)
            {
                add(
                    host,
                    format!("the nfs server of MachineConfig `{}`", short(object.name)),
                );
            }
        }
        let files = [
            PathStep::Key("spec"),
            PathStep::Key("config"),
            PathStep::Key("storage"),
            PathStep::Key("files"),
        ];
        for file in object.get(&files).map(Node::items).unwrap_or_default() {
            if file.get("path").and_then(Node::as_str) != Some("/etc/nvme/discovery.conf") {
                continue;
            }
            let text = file
                .get("contents")
                .and_then(|c| c.get("source"))
                .and_then(Node::as_str)
                .and_then(data_url)
                .unwrap_or_default();
            for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
                if let Some(target) = nvme_traddr(line) {
                    add(
                        target,
                        format!(
                            "an nvme-of target of MachineConfig `{}`",
                            short(object.name)
                        ),
                    );
                }
            }
        }
    }
    for host in &workspace.host_files {
        let name = host.base_name();
        let is_nfs = directive(host.text, "Type").is_some_and(|kind| kind.starts_with("nfs"));
        if name.ends_with(".mount") && is_nfs {
            if let Some(server) = directive(host.text, "What").and_then(nfs_host) {
                add(
                    server,
                    format!("the nfs server of host file `{}`", short(host.file)),
                );
            }
        } else if name == "discovery.conf" {
            for line in host
                .text
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
            {
                if let Some(target) = nvme_traddr(line) {
                    add(
                        target,
                        format!("an nvme-of target of host file `{}`", short(host.file)),
                    );
                }
            }
        }
    }
    for object in &workspace.objects {
        let server = match (object.group(), object.kind) {
            ("", "PersistentVolume") => object
                .str_at(&[
                    PathStep::Key("spec"),
                    PathStep::Key("nfs"),
                    PathStep::Key("server"),
                ])
                .or_else(|| {
                    object.str_at(&[
                        PathStep::Key("spec"),
                        PathStep::Key("csi"),
                        PathStep::Key("volumeAttributes"),
                        PathStep::Key("server"),
                    ])
                }),
            ("storage.k8s.io", "StorageClass") => {
                object.str_at(&[PathStep::Key("parameters"), PathStep::Key("server")])
            }
            _ => None,
        };
        if let Some(server) = server {
            add(
                server,
                format!(
                    "the nfs server of {} `{}`",
                    short(object.kind),
                    short(object.name)
                ),
            );
        }
    }
    found
}

/// The whereabouts configurations of a network object, with the path of the
/// field that holds them.
fn whereabouts_of(object: &Object<'_>) -> Option<([PathStep<'static>; 2], Vec<Whereabouts>)> {
    let field = ipam_field(object)?;
    let path = [PathStep::Key("spec"), PathStep::Key(field)];
    let json: Json = serde_json::from_str(object.str_at(&path)?).ok()?;
    let configs: Vec<Whereabouts> = ipam_blocks(&json)
        .into_iter()
        .filter_map(Whereabouts::parse)
        .collect();
    (!configs.is_empty()).then_some((path, configs))
}

/// Whether an IPAM block names the whereabouts type, valid or not.
fn names_whereabouts(object: &Object<'_>) -> bool {
    let Some(field) = ipam_field(object) else {
        return false;
    };
    let Some(Ok(json)) = object
        .str_at(&[PathStep::Key("spec"), PathStep::Key(field)])
        .map(serde_json::from_str::<Json>)
    else {
        return false;
    };
    ipam_blocks(&json)
        .into_iter()
        .any(|block| block.get("type").and_then(Json::as_str) == Some("whereabouts"))
}

declare_lint! {
    /// A whereabouts range that can hand a pod the address of a storage server, or its own gateway.
    ///
    /// ## What it checks
    /// The whereabouts IPAM of SriovNetwork, SriovIBNetwork, OVSNetwork,
    /// HostDeviceNetwork, MacvlanNetwork, IPoIBNetwork (`spec.ipam`) and
    /// NetworkAttachmentDefinitions (`spec.config`), against the storage
    /// servers the set names (the NFS server of a mount unit, in a
    /// MachineConfig or a host file of a Kubernetes set, of a
    /// PersistentVolume or a StorageClass; the NVMe-oF targets of an
    /// `/etc/nvme/discovery.conf`) and the configuration's
    /// own `gateway`: none of them may be an address the range hands out.
    ///
    /// ## Why it matters
    /// Whereabouts hands out every address from the first usable (network +
    /// 1) to the last usable (broadcast − 1) of `range`, narrowed only by
    /// `range_start`/`range_end` and `exclude`; it never keeps the gateway
    /// out (k8snetworkplumbingwg/whereabouts at
    /// 3a262bd0cd873e13d9b379342f8251b852a89b8f, `pkg/iphelpers/iphelpers.go`
    /// `GetIPRange`, `pkg/allocate/allocate.go` `IterateForAssignment`,
    /// `pkg/config/config.go`). A range that is the whole storage subnet
    /// gives some pod the NFS server's (or target's) address: that pod
    /// answers ARP for it on the rail, and the nodes' storage traffic goes to
    /// the pod, or the duplicate address takes the server off the network.
    ///
    /// ## How to fix
    /// Keep the servers out of the range: `exclude` their addresses, or
    /// start the range above them with `range_start`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL053/fail/`:
    ///
    /// ```text
    /// error[ZL053]: whereabouts range `10.10.0.0/24` can hand a pod `10.10.0.10`, the nfs server of MachineConfig `60-worker-nfs-rdma`
    ///   --> fail/input.yaml:29:3
    ///    |
    /// 29 |   ipam: '{"type": "whereabouts", "range": "10.10.0.0/24"}'
    ///    |   ^^^^
    ///    = object: SriovNetwork/nvidia-network-operator/storage
    ///    = help: keep the address out of the range
    ///            "exclude": ["10.10.0.10/32"]
    /// ```
    pub(crate) static WHEREABOUTS_RANGE_HOLDS_STORAGE_ADDRESS = {
        id: "ZL053",
        name: "whereabouts-range-holds-storage-address",
        severity: Error,
        check: whereabouts_range_holds_storage_address,
    };
}

/// The storage addresses sorted, with the first server at each.
fn sorted_servers(storage: &[StorageAddress]) -> (Vec<Address>, HashMap<Address, &StorageAddress>) {
    let mut by_address: HashMap<Address, &StorageAddress> = HashMap::new();
    for server in storage {
        by_address.entry(server.address).or_insert(server);
    }
    let mut sorted: Vec<Address> = by_address.keys().copied().collect();
    sorted.sort_unstable();
    (sorted, by_address)
}

fn whereabouts_range_holds_storage_address(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let storage = storage_addresses(workspace);
    let (sorted, by_address) = sorted_servers(&storage);
    for object in &workspace.objects {
        let Some((path, configs)) = whereabouts_of(object) else {
            continue;
        };
        for config in &configs {
            let gateway = config
                .gateway
                .as_ref()
                .map(|(text, address)| StorageAddress {
                    address: *address,
                    text: text.clone(),
                    what: "its own gateway".to_owned(),
                });
            // Per range, the first server it hands out; then the gateway.
            let mut found: Vec<(&Range, &StorageAddress)> = Vec::new();
            for range in &config.ranges {
                if let Some(server) = range
                    .first_handed_out(&sorted)
                    .and_then(|address| by_address.get(&address))
                    && !found.iter().any(|(_, s)| s.address == server.address)
                {
                    found.push((range, server));
                }
            }
            if let Some(gateway) = &gateway
                && let Some(range) = config.ranges.iter().find(|r| r.hands_out(gateway.address))
            {
                found.push((range, gateway));
            }
            for (range, server) in found {
                let host_prefix = if server.text.contains(':') { 128 } else { 32 };
                let exclude = format!("\"exclude\": [\"{}/{host_prefix}\"]", server.text);
                sink.report(
                    object,
                    &path,
                    format!(
                        "whereabouts range `{}` can hand a pod `{}`, {}",
                        range.net.display(),
                        short(&server.text),
                        server.what
                    ),
                    Remediation::new("keep the address out of the range").command(exclude),
                );
            }
        }
    }
}

/// Whether the set installs whereabouts: its
/// CustomResourceDefinition or objects of its API group, a workload
/// running its image, or its instructions applying whereabouts' own
/// DaemonSet manifest (`doc/crds/daemonset-install.yaml`, as its README
/// and `zerohop plan` install it).
fn installs_whereabouts(workspace: &Workspace<'_>) -> bool {
    const GROUP: &str = "whereabouts.cni.cncf.io";
    let instructed = workspace.instructions.iter().any(|readme| {
        readme.text.lines().any(|line| {
            line.contains("kubectl apply")
                && line.contains("k8snetworkplumbingwg/whereabouts/")
                && line.contains("daemonset-install.yaml")
        })
    });
    workspace.objects.iter().any(|object| {
        object.group() == GROUP
            || (object.is("apiextensions.k8s.io", "CustomResourceDefinition")
                && object.name.ends_with(GROUP))
    }) || pod_templates(workspace).iter().any(|template| {
        template.containers.iter().any(|(_, container)| {
            container
                .get("image")
                .and_then(Node::as_str)
                .is_some_and(|image| image.contains("whereabouts"))
        })
    }) || instructed
}

declare_lint! {
    /// Networks allocate with whereabouts, but nothing in a Kubernetes set installs it.
    ///
    /// ## What it checks
    /// On a set that deploys the NVIDIA Network Operator (a NicClusterPolicy)
    /// and is not OpenShift (no MachineConfig, SecurityContextConstraints or
    /// `config.openshift.io` object): the networks whose IPAM is
    /// `whereabouts`, when nothing in the set installs it (its
    /// CustomResourceDefinitions or `whereabouts.cni.cncf.io` objects, or a
    /// DaemonSet running its image).
    ///
    /// ## Why it matters
    /// The Network Operator does not ship whereabouts: its NicClusterPolicy
    /// deploys `cniPlugins`, `multus`, `ipoib` and `nvIpam`
    /// (Mellanox/network-operator `config/crd/bases/mellanox.com_nicclusterpolicies.yaml`,
    /// `spec.secondaryNetwork`, at b06827e085c59726b699faffcc526342d4d8e395);
    /// OpenShift's cluster network operator installs it with Multus, plain
    /// Kubernetes does not. Without the plugin binary and its `IPPool` CRDs,
    /// Multus fails every pod that attaches ("failed to find plugin
    /// \"whereabouts\" in path"), and the pods stay in ContainerCreating.
    ///
    /// ## How to fix
    /// Install whereabouts (its DaemonSet and CRDs, from
    /// k8snetworkplumbingwg/whereabouts `doc/crds/`) before the workloads, or
    /// use the Network Operator's `nvIpam`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL054/fail/`:
    ///
    /// ```text
    /// error[ZL054]: SriovNetwork `rail0` allocates with whereabouts, which nothing in this kubernetes set installs (the network operator does not ship it)
    ///   --> fail/input.yaml:20:3
    ///    |
    /// 20 |   ipam: '{"type": "whereabouts", "range": "192.168.100.0/24"}'
    ///    |   ^^^^
    ///    = object: SriovNetwork/nvidia-network-operator/rail0
    ///    = help: install whereabouts (daemonset and crds) before the workloads, or allocate with the network operator's nv-ipam
    ///            base=https://raw.githubusercontent.com/k8snetworkplumbingwg/whereabouts/v0.9.4/doc/crds
    ///            kubectl apply -f $base/daemonset-install.yaml -f $base/whereabouts.cni.cncf.io_ippools.yaml \
    ///              -f $base/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml -f $base/reconciler-deployment.yaml
    ///    = see: https://github.com/k8snetworkplumbingwg/whereabouts#installing-whereabouts
    /// ```
    pub(crate) static WHEREABOUTS_NOT_INSTALLED = {
        id: "ZL054",
        name: "whereabouts-not-installed",
        severity: Error,
        check: whereabouts_not_installed,
    };
}

/// How whereabouts' README installs it (k8snetworkplumbingwg/whereabouts
/// `README.md`, "Installing Whereabouts"), pinned to a release.
const INSTALL_WHEREABOUTS: &str = "base=https://raw.githubusercontent.com/k8snetworkplumbingwg/whereabouts/v0.9.4/doc/crds
kubectl apply -f $base/daemonset-install.yaml -f $base/whereabouts.cni.cncf.io_ippools.yaml \\
  -f $base/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml -f $base/reconciler-deployment.yaml";

fn whereabouts_not_installed(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let deploys_network_operator = workspace
        .of_kind(NETWORK_OPERATOR_GROUP, "NicClusterPolicy")
        .next()
        .is_some();
    if !deploys_network_operator || is_openshift(workspace) || installs_whereabouts(workspace) {
        return;
    }
    for object in &workspace.objects {
        if !names_whereabouts(object) {
            continue;
        }
        let Some(field) = ipam_field(object) else {
            continue;
        };
        sink.report(
            object,
            &[PathStep::Key("spec"), PathStep::Key(field)],
            format!(
                "{} `{}` allocates with whereabouts, which nothing in this kubernetes set installs (the network operator does not ship it)",
                short(object.kind),
                short(object.name)
            ),
            Remediation::new(
                "install whereabouts (daemonset and crds) before the workloads, or allocate with the network operator's nv-ipam",
            )
            .command(INSTALL_WHEREABOUTS)
            .doc("https://github.com/k8snetworkplumbingwg/whereabouts#installing-whereabouts"),
        );
    }
}

/// Whether a pod template runs NCCL: a container sets an `NCCL_*` variable.
fn runs_nccl(containers: &[(Vec<PathStep<'static>>, &Node)]) -> bool {
    containers.iter().any(|(_, container)| {
        container
            .get("env")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter_map(|item| item.get("name").and_then(Node::as_str))
            .any(|name| name.starts_with("NCCL_"))
    })
}

declare_lint! {
    /// An NCCL workload attaches to the storage network, so its collectives share the storage rail.
    ///
    /// ## What it checks
    /// Pods and pod templates (MPIJob workers included) whose containers set
    /// `NCCL_*` variables, against the networks they attach
    /// (`k8s.v1.cni.cncf.io/networks`): none may be a network whose
    /// whereabouts subnet holds a storage server the set names (see ZL053).
    ///
    /// ## Why it matters
    /// NCCL uses every RDMA device it is given and that `NCCL_IB_HCA`
    /// matches (`mlx5` matches them all), and spreads its channels over
    /// them: attached to the storage rail, the all-reduce traffic of every
    /// GPU competes with the NFS or NVMe-oF reads of the same nodes, and a
    /// benchmark measures a rail that is not a GPU rail. The storage rail's
    /// VFs are also few, so the pods take VFs the storage clients need.
    ///
    /// ## How to fix
    /// Attach only the GPU rails to NCCL workloads; leave the storage
    /// network to the pods that read storage through it.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL055/fail/`:
    ///
    /// ```text
    /// warning[ZL055]: nccl workload attaches network `storage`, whose subnet `10.10.0.0/24` holds the nfs server of PersistentVolume `ai-data`: collectives share the storage rail
    ///   --> fail/input.yaml:39:5
    ///    |
    /// 39 |     k8s.v1.cni.cncf.io/networks: rail0,storage
    ///    |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ai-training/trainer
    ///    = help: attach only the gpu rails to nccl workloads
    /// ```
    pub(crate) static NCCL_POD_ON_STORAGE_NETWORK = {
        id: "ZL055",
        name: "nccl-pod-on-storage-network",
        severity: Warning,
        check: nccl_pod_on_storage_network,
    };
}

fn nccl_pod_on_storage_network(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let storage = storage_addresses(workspace);
    if storage.is_empty() {
        return;
    }
    let (sorted, by_address) = sorted_servers(&storage);
    // Each network that reaches a storage server, by where pods find it:
    // its subnet and the server.
    let mut storage_networks: HashMap<(&str, &str), (String, &StorageAddress)> = HashMap::new();
    for network in networks(workspace) {
        let Some((_, configs)) = whereabouts_of(&network.object) else {
            continue;
        };
        let reached = configs.iter().flat_map(|c| &c.ranges).find_map(|range| {
            let (low, high) = range.net.block();
            let at = sorted.partition_point(|a| *a < low);
            sorted
                .get(at)
                .filter(|a| **a <= high)
                .and_then(|a| by_address.get(a))
                .map(|server| (range.net.display(), *server))
        });
        if let Some(reached) = reached {
            storage_networks
                .entry((network.namespace, network.name))
                .or_insert(reached);
        }
    }
    for template in pod_templates(workspace) {
        if !runs_nccl(&template.containers) {
            continue;
        }
        let attached = pod_networks(template);
        let hits: Vec<(&str, &(String, &StorageAddress))> = attached
            .iter()
            .filter_map(|(namespace, name)| {
                storage_networks
                    .get(&(&**namespace, &**name))
                    .map(|hit| (&**name, hit))
            })
            .collect();
        let Some((name, (subnet, server))) = hits.first() else {
            continue;
        };
        let mut path = template.prefix.clone();
        path.extend([
            PathStep::Key("metadata"),
            PathStep::Key("annotations"),
            PathStep::Key("k8s.v1.cni.cncf.io/networks"),
        ]);
        let more = if hits.len() > 1 {
            format!(
                " (also {})",
                join_some(hits.iter().skip(1).map(|(n, _)| format!("`{}`", short(n))))
            )
        } else {
            String::new()
        };
        sink.report(
            &template.object,
            &path,
            format!(
                "nccl workload attaches network `{}`, whose subnet `{subnet}` holds {}: collectives share the storage rail{more}",
                short(name),
                server.what
            ),
            Remediation::new("attach only the gpu rails to nccl workloads"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_read_as_mount_and_nvme_write_them() {
        assert_eq!(nfs_host("10.10.0.10:/export/ai-data"), Some("10.10.0.10"));
        assert_eq!(nfs_host("[fd00::10]:/export"), Some("fd00::10"));
        assert_eq!(nfs_host("nfs.example.com:/export"), Some("nfs.example.com"));
        assert_eq!(
            nvme_traddr("--transport=rdma --traddr=10.10.0.20 --trsvcid=4420"),
            Some("10.10.0.20")
        );
        assert_eq!(
            nvme_traddr("-t rdma -a 10.10.0.21 -s 4420"),
            Some("10.10.0.21")
        );
        assert_eq!(nvme_traddr("--transport=rdma"), None);
    }
}
