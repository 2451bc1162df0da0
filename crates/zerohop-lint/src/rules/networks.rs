//! Secondary networks: how the networks of the SR-IOV and Network Operators
//! and plain NetworkAttachmentDefinitions hand out addresses and resources.

use serde_json::Value as Json;
use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use super::workloads::pod_networks;
use crate::model::{Object, PodTemplate, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};
use zerohop_known::operators::{NETWORK_ATTACHMENT_GROUP, NETWORK_OPERATOR_GROUP, SRIOV_GROUP};

const NAD_GROUP: &str = NETWORK_ATTACHMENT_GROUP;
const RESOURCE_ANNOTATION: &str = "k8s.v1.cni.cncf.io/resourceName";
/// The node label that names one node (kubelet sets it to the node name).
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The kinds of network that render a NetworkAttachmentDefinition, with
/// their API group and the `spec` field holding their IPAM configuration.
pub(super) fn ipam_field(object: &Object<'_>) -> Option<&'static str> {
    match (object.group(), object.kind) {
        (SRIOV_GROUP, "SriovNetwork" | "SriovIBNetwork" | "OVSNetwork")
        | (NETWORK_OPERATOR_GROUP, "HostDeviceNetwork" | "MacvlanNetwork" | "IPoIBNetwork") => {
            Some("ipam")
        }
        (NAD_GROUP, "NetworkAttachmentDefinition") => Some("config"),
        _ => None,
    }
}

/// The `host-local` IPAM blocks of a CNI configuration (or of an operator
/// network's `ipam`), with the subnet each allocates from when it says.
fn host_local_subnets(json: &Json) -> Vec<Option<String>> {
    let mut blocks: Vec<&Json> = Vec::new();
    // An operator network's `ipam` is the IPAM object itself; a NAD's
    // config holds it under `ipam`, or under each plugin of a list.
    blocks.push(json);
    blocks.extend(json.get("ipam"));
    if let Some(plugins) = json.get("plugins").and_then(Json::as_array) {
        blocks.extend(plugins.iter().filter_map(|plugin| plugin.get("ipam")));
    }
    blocks
        .into_iter()
        .filter(|block| block.get("type").and_then(Json::as_str) == Some("host-local"))
        .map(|block| {
            block
                .get("subnet")
                .or_else(|| block.pointer("/ranges/0/0/subnet"))
                .and_then(Json::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// Whether a node selector picks one node by name.
fn pins_one_node(selector: Option<&Node>) -> bool {
    selector.is_some_and(|selector| selector.get(HOSTNAME_LABEL).is_some())
}

/// Whether the pods of a template can run on more than one node: a
/// DaemonSet, or several replicas (Jobs: parallel pods) not pinned to a
/// node by `nodeName` or a hostname `nodeSelector`.
fn spans_nodes(template: &PodTemplate<'_>) -> bool {
    let spec = |key: &'static str| template.object.get(&template.path(&[PathStep::Key(key)]));
    if spec("nodeName").is_some() || pins_one_node(spec("nodeSelector")) {
        return false;
    }
    let count = |key: &str| {
        template
            .object
            .get(&[PathStep::Key("spec"), PathStep::Key(key)])
            .and_then(Node::as_i64)
    };
    match (template.object.group(), template.object.kind) {
        ("apps", "DaemonSet") => true,
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") | ("", "ReplicationController") => {
            count("replicas").unwrap_or(1) > 1
        }
        ("batch", "Job") => count("parallelism").unwrap_or(1) > 1,
        _ => false,
    }
}

/// Why the pods of a network can land on more than one node, when the
/// input says they can.
fn why_several_nodes(workspace: &Workspace<'_>, network: &Object<'_>) -> Option<String> {
    match network.group() {
        SRIOV_GROUP => {
            let resource = network.str_at(&[PathStep::Key("spec"), PathStep::Key("resourceName")]);
            let policies: Vec<&Object<'_>> = workspace
                .of_kind(SRIOV_GROUP, "SriovNetworkNodePolicy")
                .filter(|policy| {
                    policy.str_at(&[PathStep::Key("spec"), PathStep::Key("resourceName")])
                        == resource
                })
                .collect();
            let single = !policies.is_empty()
                && policies.iter().all(|policy| {
                    pins_one_node(
                        policy.get(&[PathStep::Key("spec"), PathStep::Key("nodeSelector")]),
                    )
                });
            (!single).then(|| "an SR-IOV network serves every node its policies select".to_owned())
        }
        NETWORK_OPERATOR_GROUP => Some(
            "the Network Operator's device plugins serve every node with an NVIDIA NIC".to_owned(),
        ),
        _ => {
            if network
                .str_at(&[
                    PathStep::Key("metadata"),
                    PathStep::Key("annotations"),
                    PathStep::Key(RESOURCE_ANNOTATION),
                ])
                .is_some()
            {
                return Some(
                    "its device resource is advertised by a device plugin on every node that has it"
                        .to_owned(),
                );
            }
            let place = (network.namespace_or_default(), network.name);
            pod_templates(workspace)
                .iter()
                .find(|template| {
                    spans_nodes(template)
                        && pod_networks(template)
                            .iter()
                            .any(|(namespace, name)| (&**namespace, &**name) == place)
                })
                .map(|template| {
                    format!(
                        "{} `{}` attaches pods on several nodes",
                        template.object.kind,
                        short(template.object.name)
                    )
                })
        }
    }
}

declare_lint! {
    /// A network that spans nodes allocates addresses with `host-local`, so pods on different nodes get the same IP.
    ///
    /// ## What it checks
    /// The IPAM of SriovNetwork, SriovIBNetwork and OVSNetwork (`spec.ipam`),
    /// HostDeviceNetwork, MacvlanNetwork and IPoIBNetwork (`spec.ipam`) and
    /// NetworkAttachmentDefinitions (`spec.config`, also each plugin of a
    /// list), for `"type": "host-local"` on a network whose pods can land on
    /// more than one node. Conservatively, that is: every SR-IOV network,
    /// unless each SriovNetworkNodePolicy of its resource selects a single
    /// node by `kubernetes.io/hostname`; every Network Operator network,
    /// since its device plugins run on every node with an NVIDIA NIC; a
    /// NetworkAttachmentDefinition with a `k8s.v1.cni.cncf.io/resourceName`
    /// (a device plugin resource), or one that a DaemonSet, or a workload of
    /// several replicas not pinned to one node, attaches to.
    ///
    /// ## Why it matters
    /// `host-local` keeps its allocations in files on the node it runs on
    /// ("It stores the state locally on the host filesystem, therefore
    /// ensuring uniqueness of IP addresses on a single host", CNI plugins
    /// documentation, <https://www.cni.dev/plugins/current/ipam/host-local/>,
    /// containernetworking/plugins `plugins/ipam/host-local/README.md`).
    /// Every node runs the same configuration from the same range, so the
    /// first pod on each node gets the same address: RDMA connections and
    /// NCCL bootstrap between those pods reach the wrong peer or fail with
    /// duplicate-address conflicts. The SR-IOV Network Operator's own
    /// examples (`README.md`, `doc/*.md`) use `host-local` for brevity on
    /// networks that serve every selected node, and get this warning: it is
    /// a warning, not an error, because a network used by one pod, or only
    /// on one node, is fine.
    ///
    /// ## How to fix
    /// Use cluster-wide IPAM (`whereabouts`, or `nv-ipam` with the Network
    /// Operator), or give each node its own range (one network per node,
    /// selected by `kubernetes.io/hostname`).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL097/fail/`:
    ///
    /// ```text
    /// warning[ZL097]: host-local ipam on a network that spans nodes (an SR-IOV network serves every node its policies select): each node hands out the same addresses from `10.56.217.0/24`
    ///   --> fail/input.yaml:26:3
    ///    |
    /// 26 |   ipam: |
    ///    |   ^^^^
    ///    = object: SriovNetwork/sriov-network-operator/rail0
    ///    = help: allocate cluster-wide with whereabouts (or nv-ipam), or give each node its own network and range
    ///            {"type": "whereabouts", "range": "192.168.100.0/24"}
    ///    = see: https://www.cni.dev/plugins/current/ipam/host-local/
    /// ```
    pub(crate) static HOST_LOCAL_IPAM_ACROSS_NODES = {
        id: "ZL097",
        name: "host-local-ipam-across-nodes",
        severity: Warning,
        check: host_local_ipam_across_nodes,
    };
}

fn host_local_ipam_across_nodes(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        let Some(field) = ipam_field(object) else {
            continue;
        };
        let path = [PathStep::Key("spec"), PathStep::Key(field)];
        let Some(Ok(json)) = object.str_at(&path).map(serde_json::from_str::<Json>) else {
            continue;
        };
        let Some(subnet) = host_local_subnets(&json).into_iter().next() else {
            continue;
        };
        let Some(why) = why_several_nodes(workspace, object) else {
            continue;
        };
        let range = subnet.map_or_else(String::new, |subnet| format!(" from `{}`", short(&subnet)));
        sink.report(
            object,
            &path,
            format!(
                "host-local ipam on a network that spans nodes ({why}): each node hands out the same addresses{range}"
            ),
            Remediation::new(
                "allocate cluster-wide with whereabouts (or nv-ipam), or give each node its own network and range",
            )
            .command("{\"type\": \"whereabouts\", \"range\": \"192.168.100.0/24\"}")
            .doc("https://www.cni.dev/plugins/current/ipam/host-local/"),
        );
    }
}

declare_lint! {
    /// An SR-IOV network's `resourceName` carries a prefix, which the SR-IOV Network Operator adds again.
    ///
    /// ## What it checks
    /// `spec.resourceName` of SriovNetwork, SriovIBNetwork and OVSNetwork,
    /// for a `/` (`openshift.io/mlnx_rdma`).
    ///
    /// ## Why it matters
    /// The operator writes the NetworkAttachmentDefinition's
    /// `k8s.v1.cni.cncf.io/resourceName` as its own `RESOURCE_PREFIX`, a
    /// `/` and `resourceName` (k8snetworkplumbingwg/sriov-network-operator
    /// `api/v1/helper.go`, `RenderNetAttDef`): `openshift.io/openshift.io/mlnx_rdma`,
    /// which no device plugin advertises and which is not even a valid
    /// resource name. The CRD does not check the field. Pods that attach get
    /// no VF: the network resources injector requests a resource that
    /// cannot exist, or the CNI finds no device for the annotation.
    ///
    /// ## How to fix
    /// Write the name alone, as in the SriovNetworkNodePolicy
    /// (`resourceName: mlnx_rdma`); the operator adds the prefix.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL099/fail/`:
    ///
    /// ```text
    /// error[ZL099]: resourceName carries the prefix `openshift.io`, which the sr-iov operator adds again: the NAD names `<prefix>/openshift.io/mlnx_rdma`
    ///  --> fail/input.yaml:9:3
    ///   |
    /// 9 |   resourceName: openshift.io/mlnx_rdma
    ///   |   ^^^^^^^^^^^^
    ///   = object: SriovNetwork/openshift-sriov-network-operator/rdma
    ///   = help: write the name alone (`mlnx_rdma`), as the SriovNetworkNodePolicy does
    ///           resourceName: mlnx_rdma
    /// ```
    pub(crate) static PREFIXED_SRIOV_NETWORK_RESOURCE = {
        id: "ZL099",
        name: "prefixed-sriov-network-resource",
        severity: Error,
        check: prefixed_sriov_network_resource,
    };
}

fn prefixed_sriov_network_resource(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        if object.group() != SRIOV_GROUP
            || !matches!(
                object.kind,
                "SriovNetwork" | "SriovIBNetwork" | "OVSNetwork"
            )
        {
            continue;
        }
        let path = [PathStep::Key("spec"), PathStep::Key("resourceName")];
        let Some((prefix, name)) = object.str_at(&path).and_then(|r| r.rsplit_once('/')) else {
            continue;
        };
        sink.report(
            object,
            &path,
            format!(
                "resourceName carries the prefix `{}`, which the sr-iov operator adds again: the NAD names `<prefix>/{}/{}`",
                short(prefix),
                short(prefix),
                short(name)
            ),
            Remediation::new(format!(
                "write the name alone (`{}`), as the SriovNetworkNodePolicy does",
                short(name)
            ))
            .command(format!("resourceName: {name}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_local_is_found_in_each_place_it_may_be() {
        let operator: Json =
            serde_json::from_str(r#"{"type":"host-local","subnet":"10.0.0.0/24"}"#).unwrap();
        assert_eq!(
            host_local_subnets(&operator),
            vec![Some("10.0.0.0/24".to_owned())]
        );
        let nad: Json = serde_json::from_str(
            r#"{"type":"macvlan","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/16"}]]}}"#,
        )
        .unwrap();
        assert_eq!(
            host_local_subnets(&nad),
            vec![Some("10.1.0.0/16".to_owned())]
        );
        let list: Json = serde_json::from_str(
            r#"{"plugins":[{"type":"sriov","ipam":{"type":"host-local"}},{"type":"rdma"}]}"#,
        )
        .unwrap();
        assert_eq!(host_local_subnets(&list), vec![None]);
        let whereabouts: Json = serde_json::from_str(r#"{"type":"whereabouts"}"#).unwrap();
        assert!(host_local_subnets(&whereabouts).is_empty());
    }
}
