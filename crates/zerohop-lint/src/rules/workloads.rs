//! Workloads: pods and pod templates against the networks and resources
//! that the other objects define.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::Value as Json;
use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use super::container_env::{command_words, value_of};
use super::facts::quantity;
use super::resources::{self, Advertiser, Index, Request, advertised};
use crate::model::{Object, PodNetwork, PodTemplate, Workspace, pod_templates};
use crate::paths::last_with_same_key;
use crate::registry::declare_lint;
use crate::sink::{Sink, join_some, short};
use zerohop_known::operators::{NETWORK_ATTACHMENT_GROUP, NETWORK_OPERATOR_GROUP, SRIOV_GROUP};

const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";
const RESOURCE_ANNOTATION: &str = "k8s.v1.cni.cncf.io/resourceName";

/// A network a pod can attach to: a NetworkAttachmentDefinition, or an
/// operator network CR that renders one.
pub(super) struct Network<'a> {
    /// The object that defines (or renders) the NAD.
    pub(super) object: Object<'a>,
    /// The namespace the NAD lives (or will be rendered) in.
    pub(super) namespace: &'a str,
    /// The name of the NAD.
    pub(super) name: &'a str,
    /// The resource the NAD hands out: `Some((prefix, name))`, the prefix
    /// `None` when the operator decides it.
    resource: Option<(Option<&'a str>, &'a str)>,
}

/// Networks by the namespace and name a pod refers to them with. Looked up
/// once per reference of every pod: hashed with foldhash, faster than
/// SipHash on short names (its seed is random per process).
fn by_place<'x, 'a>(
    networks: &'x [Network<'a>],
) -> HashMap<(&'a str, &'a str), &'x Network<'a>, foldhash::fast::RandomState> {
    networks
        .iter()
        .map(|n| ((n.namespace, n.name), n))
        .collect()
}

/// Every network of the workspace: NADs and the operator networks that
/// render them, where pods find them.
pub(super) fn networks<'a>(workspace: &Workspace<'a>) -> Vec<Network<'a>> {
    let mut out = Vec::new();
    for object in &workspace.objects {
        let spec_str = |key: &str| object.str_at(&[PathStep::Key("spec"), PathStep::Key(key)]);
        let (namespace, resource) = match (object.group(), object.kind) {
            (NETWORK_ATTACHMENT_GROUP, "NetworkAttachmentDefinition") => {
                let resource = object
                    .str_at(&[
                        PathStep::Key("metadata"),
                        PathStep::Key("annotations"),
                        PathStep::Key(RESOURCE_ANNOTATION),
                    ])
                    .map(|full| match full.split_once('/') {
                        Some((prefix, name)) => (Some(prefix), name),
                        None => (None, full),
                    });
                (object.namespace_or_default(), resource)
            }
            (SRIOV_GROUP, "SriovNetwork" | "SriovIBNetwork" | "OVSNetwork") => (
                spec_str("networkNamespace")
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or(object.namespace_or_default()),
                spec_str("resourceName").map(|name| {
                    let prefix =
                        resources::sriov_operator_prefix(workspace, object.namespace_or_default());
                    (prefix, name)
                }),
            ),
            (NETWORK_OPERATOR_GROUP, "HostDeviceNetwork" | "MacvlanNetwork" | "IPoIBNetwork") => (
                spec_str("networkNamespace")
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or("default"),
                spec_str("resourceName").map(|name| match name.split_once('/') {
                    Some((prefix, name)) => (Some(prefix), name),
                    None => (None, name),
                }),
            ),
            _ => continue,
        };
        out.push(Network {
            object: *object,
            namespace,
            name: object.name,
            resource,
        });
    }
    out
}

/// One entry of a pod's networks annotation: borrowed from the annotation
/// where it is written out plainly (an annotation may name a million).
struct NetworkRef<'a> {
    namespace: Option<Cow<'a, str>>,
    name: Cow<'a, str>,
}

/// Parses the networks annotation: a JSON list of objects, or a comma list
/// of `[namespace/]name[@interface]`.
fn network_refs(annotation: &str) -> Vec<NetworkRef<'_>> {
    let trimmed = annotation.trim();
    if trimmed.starts_with('[') {
        let Ok(Json::Array(items)) = serde_json::from_str::<Json>(trimmed) else {
            return Vec::new();
        };
        return items
            .iter()
            .filter_map(|item| {
                Some(NetworkRef {
                    name: Cow::Owned(item.get("name")?.as_str()?.to_owned()),
                    namespace: item
                        .get("namespace")
                        .and_then(Json::as_str)
                        .map(|namespace| Cow::Owned(namespace.to_owned())),
                })
            })
            .collect();
    }
    trimmed
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let without_interface = part.split_once('@').map_or(part, |(name, _)| name);
            match without_interface.split_once('/') {
                Some((namespace, name)) => NetworkRef {
                    namespace: Some(Cow::Borrowed(namespace)),
                    name: Cow::Borrowed(name),
                },
                None => NetworkRef {
                    namespace: None,
                    name: Cow::Borrowed(without_interface),
                },
            }
        })
        .collect()
}

fn annotation_path(template: &PodTemplate<'_>) -> Vec<PathStep<'static>> {
    let mut path = template.prefix.clone();
    path.extend([
        PathStep::Key("metadata"),
        PathStep::Key("annotations"),
        PathStep::Key(NETWORKS_ANNOTATION),
    ]);
    path
}

/// The pod's network references with the namespace each resolves in,
/// read from the annotation once per run and shared by the rules.
pub(crate) fn pod_networks<'t, 'a>(template: &'t PodTemplate<'a>) -> &'t [PodNetwork<'a>] {
    template.networks.get_or_init(|| {
        let Some(annotation) = template
            .annotations()
            .and_then(|a| a.get(NETWORKS_ANNOTATION))
            .and_then(Node::as_str)
        else {
            return Vec::new();
        };
        let pod_namespace = template.object.namespace_or_default();
        network_refs(annotation)
            .into_iter()
            .map(|reference| {
                (
                    reference.namespace.unwrap_or(Cow::Borrowed(pod_namespace)),
                    reference.name,
                )
            })
            .collect()
    })
}

declare_lint! {
    /// A pod's network annotation names no network in reach.
    ///
    /// ## What it checks
    /// Each entry of the `k8s.v1.cni.cncf.io/networks` annotation of pods and
    /// pod templates, against the NetworkAttachmentDefinitions and the
    /// networks that render them (SriovNetwork, SriovIBNetwork, OVSNetwork
    /// in `spec.networkNamespace`; HostDeviceNetwork, MacvlanNetwork,
    /// IPoIBNetwork in `spec.networkNamespace`, default `default`) in the
    /// input. A name without a namespace resolves in the pod's namespace.
    /// Runs only when the input defines at least one network; a pod whose
    /// namespace gets no network from the input, naming a network the input
    /// does not define anywhere, is left alone (it belongs to something
    /// applied beside the input's networks, not to them).
    ///
    /// ## Why it matters
    /// Multus cannot find the NAD: the pod sandbox fails to start
    /// ("cannot find a network-attachment-definition").
    ///
    /// ## How to fix
    /// Create the network in the pod's namespace (set `networkNamespace` on
    /// the operator network), or write `<namespace>/<name>` in the
    /// annotation.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL050/fail/`:
    ///
    /// ```text
    /// error[ZL050]: network `rdma-net` is looked up in namespace `ml`, but the input has NetworkAttachmentDefinition `rdma-net` in namespace `default`
    ///   --> fail/input.yaml:17:5
    ///    |
    /// 17 |     k8s.v1.cni.cncf.io/networks: rdma-net
    ///    |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: set the network's `networkNamespace` to the pod's namespace, or write `<namespace>/<name>` in the annotation
    /// ```
    pub(crate) static UNRESOLVED_NETWORK_ANNOTATION = {
        id: "ZL050",
        name: "unresolved-network-annotation",
        severity: Error,
        check: unresolved_network_annotation,
    };
}

fn unresolved_network_annotation(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let networks = networks(workspace);
    if networks.is_empty() {
        return;
    }
    let places = by_place(&networks);
    let mut by_name: HashMap<&str, Vec<&Network<'_>>, foldhash::fast::RandomState> =
        HashMap::default();
    for network in &networks {
        by_name.entry(network.name).or_default().push(network);
    }
    // The namespaces the input defines networks for: a pod in another
    // namespace, naming a network the input does not have at all, belongs
    // to something else applied beside it (an example, another team's
    // workload), not to this set of networks.
    let served: HashSet<&str> = networks.iter().map(|n| n.namespace).collect();
    for template in pod_templates(workspace) {
        for (namespace, name) in pod_networks(template) {
            if places.contains_key(&(&**namespace, &**name))
                || sink.counted_only(template.object.file)
            {
                continue;
            }
            let elsewhere = by_name.get(&**name).map(Vec::as_slice).unwrap_or_default();
            if elsewhere.is_empty() && !served.contains(&**namespace) {
                continue;
            }
            let (message, fix) = if elsewhere.is_empty() {
                (
                    format!(
                        "network `{name}` is not defined in namespace `{namespace}` by any object in the input"
                    ),
                    Remediation::new(
                        "define the network (NetworkAttachmentDefinition or operator network) or fix the name",
                    ),
                )
            } else {
                (
                    format!(
                        "network `{name}` is looked up in namespace `{namespace}`, but the input has {}",
                        join_some(elsewhere.iter().map(|n| format!(
                            "{} `{}` in namespace `{}`",
                            short(n.object.kind),
                            short(n.name),
                            short(n.namespace)
                        )))
                    ),
                    Remediation::new(
                        "set the network's `networkNamespace` to the pod's namespace, or write `<namespace>/<name>` in the annotation",
                    ),
                )
            };
            sink.report(&template.object, &annotation_path(template), message, fix);
        }
    }
}

declare_lint! {
    /// A pod requests an SR-IOV or RDMA resource that nothing in the input advertises.
    ///
    /// ## What it checks
    /// Container `resources` with the prefixes of network device plugins
    /// (`nvidia.com` other than GPUs, `openshift.io`, `intel.com`, `rdma`,
    /// `mellanox.com`) against the resources that SriovNetworkNodePolicies,
    /// NicClusterPolicy/NicNodePolicy device plugins and device plugin
    /// ConfigMaps in the input advertise. Runs only when the input
    /// advertises at least one resource.
    ///
    /// The prefix of a SriovNetworkNodePolicy's resource is the SR-IOV
    /// Network Operator's `RESOURCE_PREFIX` (k8snetworkplumbingwg/sriov-network-operator
    /// `api/v1/helper.go`): taken from the operator's Deployment when the
    /// input has it, `openshift.io` for policies in
    /// `openshift-sriov-network-operator` (OpenShift's operator; "the
    /// resource prefix in this case will be `openshift.io`",
    /// Mellanox/network-operator-docs
    /// `docs/openshift/deployment-guide-openshift.rst`), and any prefix
    /// otherwise (the upstream chart uses `openshift.io`, the Network
    /// Operator's `nvidia.com`).
    ///
    /// ## Why it matters
    /// The pod stays Pending with "Insufficient <resource>". The usual cause
    /// is a prefix mismatch: an SR-IOV device plugin resource without
    /// `resourcePrefix` is `intel.com/<name>`, not `nvidia.com/<name>`; on
    /// OpenShift the SR-IOV operator's VFs are `openshift.io/<name>`, and
    /// its network-resources injector adds that request as well, so a pod
    /// that also asks for `nvidia.com/<name>` can never be scheduled.
    ///
    /// ## How to fix
    /// Request the resource under the name it is advertised with, or
    /// configure the device plugin to advertise it.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL051/fail/`:
    ///
    /// ```text
    /// error[ZL051]: `nvidia.com/sriov_rdma` is not advertised; the input advertises intel.com/sriov_rdma
    ///   --> fail/input.yaml:29:11
    ///    |
    /// 29 |           nvidia.com/sriov_rdma: 1
    ///    |           ^^^^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: request the advertised name, or set the device plugin's (or the sr-iov operator's) resource prefix to match
    /// ```
    pub(crate) static UNADVERTISED_RESOURCE_REQUEST = {
        id: "ZL051",
        name: "unadvertised-resource-request",
        severity: Error,
        check: unadvertised_resource_request,
    };
}

fn unadvertised_resource_request(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // Indexing what is advertised is wasted on an input without pods.
    if pod_templates(workspace).is_empty() {
        return;
    }
    let all = advertised(workspace);
    let index = Index::new(all);
    if index.is_empty() {
        return;
    }
    for template in pod_templates(workspace) {
        for request in &template.requests {
            if !resources::is_network_resource(request.resource)
                || index.matching(request.resource).next().is_some()
                || sink.counted_only(template.object.file)
            {
                continue;
            }
            let same_name = index.named(request.resource);
            let (message, fix) = if same_name.is_empty() {
                (
                    format!(
                        "`{}` is not advertised by any device plugin or policy in the input",
                        request.resource
                    ),
                    Remediation::new(
                        "request a resource that a SriovNetworkNodePolicy or device plugin advertises",
                    ),
                )
            } else {
                (
                    format!(
                        "`{}` is not advertised; the input advertises {}",
                        request.resource,
                        join_some(same_name.iter().map(|a| a.full_name()))
                    ),
                    Remediation::new(
                        "request the advertised name, or set the device plugin's (or the sr-iov operator's) resource prefix to match",
                    ),
                )
            };
            sink.report(&template.object, &request.path(template), message, fix);
        }
    }
}

declare_lint! {
    /// A pod attaches to an SR-IOV network without requesting its resource.
    ///
    /// ## What it checks
    /// For each network in a pod's networks annotation that resolves in the
    /// input, whether some container requests the resource the network's NAD
    /// names (the `k8s.v1.cni.cncf.io/resourceName` annotation, or the
    /// `resourceName` of SriovNetwork, SriovIBNetwork and HostDeviceNetwork).
    ///
    /// ## Why it matters
    /// Multus passes no device to the SR-IOV CNI and the sandbox fails with
    /// "VF pci addr is required"; with the network-resources-injector off,
    /// nothing adds the request for you.
    ///
    /// ## How to fix
    /// Add the resource to the container's `requests` and `limits`, one per
    /// attachment of that network.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL052/fail/`:
    ///
    /// ```text
    /// error[ZL052]: network `rdma-net` hands out `nvidia.com/rdma_vfs` but no container requests it
    ///   --> fail/input.yaml:17:5
    ///    |
    /// 17 |     k8s.v1.cni.cncf.io/networks: rdma-net
    ///    |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: add `nvidia.com/rdma_vfs: 1` to the container's resources requests and limits
    /// ```
    pub(crate) static NAD_RESOURCE_NOT_REQUESTED = {
        id: "ZL052",
        name: "nad-resource-not-requested",
        severity: Error,
        check: nad_resource_not_requested,
    };
}

fn nad_resource_not_requested(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let networks = networks(workspace);
    let places = by_place(&networks);
    for template in pod_templates(workspace) {
        let requests = &template.requests;
        // What the pod requests, by prefix and name and by name alone: one
        // lookup per network, not a scan of the requests.
        let requested: HashSet<(&str, &str)> = requests
            .iter()
            .filter_map(|request| request.resource.split_once('/'))
            .collect();
        let requested_names: HashSet<&str> = requested.iter().map(|(_, name)| *name).collect();
        for (namespace, name) in pod_networks(template) {
            let Some(network) = places.get(&(&**namespace, &**name)) else {
                continue;
            };
            let Some((prefix, resource)) = network.resource else {
                continue;
            };
            let requested = match prefix {
                Some(prefix) => requested.contains(&(prefix, resource)),
                None => requested_names.contains(resource),
            };
            if !requested && !sink.counted_only(template.object.file) {
                let wanted = format!(
                    "{}/{}",
                    short(prefix.unwrap_or("<prefix>")),
                    short(resource)
                );
                sink.report(
                    &template.object,
                    &annotation_path(template),
                    format!("network `{name}` hands out `{wanted}` but no container requests it"),
                    Remediation::new(format!(
                        "add `{wanted}: 1` to the container's resources requests and limits"
                    )),
                );
            }
        }
    }
}

/// Whether a requested resource is an RDMA device.
fn is_rdma_request(request: &Request<'_>, index: &Index<'_, '_>) -> bool {
    request.resource.starts_with("rdma/")
        || index.matching(request.resource).any(|a| a.rdma)
        || (resources::is_network_resource(request.resource)
            && request.resource.to_ascii_lowercase().contains("rdma"))
}

/// Whether a requested resource is a VF (SR-IOV), not a shared RDMA device.
fn is_vf_request(request: &Request<'_>, index: &Index<'_, '_>) -> bool {
    if !resources::is_network_resource(request.resource) || request.resource.starts_with("rdma/") {
        return false;
    }
    let mut advertisers = index.matching(request.resource).peekable();
    advertisers.peek().is_none() || advertisers.any(|a| a.by != Advertiser::RdmaSharedDevicePlugin)
}

declare_lint! {
    /// A container uses RDMA devices without the `IPC_LOCK` capability.
    ///
    /// ## What it checks
    /// Containers requesting an RDMA resource (`rdma/...`, a resource from an
    /// `isRdma` policy or selector, or one named `*rdma*`) whose
    /// `securityContext` neither adds `IPC_LOCK` nor is privileged.
    ///
    /// ## Why it matters
    /// RDMA registers (pins) memory; without `IPC_LOCK` the container's
    /// memlock limit stops registration ("Cannot allocate memory") and NCCL
    /// or the storage client falls back to TCP.
    ///
    /// ## How to fix
    /// Add `securityContext: {capabilities: {add: ["IPC_LOCK"]}}` to the
    /// container.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL060/fail/`:
    ///
    /// ```text
    /// error[ZL060]: container `trainer` requests rdma resource `rdma/rdma_shared_a` without the IPC_LOCK capability
    ///   --> fail/input.yaml:10:7
    ///    |
    /// 10 |     - name: trainer
    ///    |       ^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: add IPC_LOCK to the container's capabilities
    ///            securityContext:
    ///              capabilities:
    ///                add: ["IPC_LOCK"]
    /// ```
    pub(crate) static RDMA_WITHOUT_IPC_LOCK = {
        id: "ZL060",
        name: "rdma-without-ipc-lock",
        severity: Error,
        check: rdma_without_ipc_lock,
    };
}

fn rdma_without_ipc_lock(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // Indexing what is advertised is wasted on an input without pods.
    if pod_templates(workspace).is_empty() {
        return;
    }
    let all = advertised(workspace);
    let index = Index::new(all);
    for template in pod_templates(workspace) {
        let containers = &template.containers;
        // The first RDMA request of each container, in one pass over the
        // requests rather than one per container.
        let mut first_rdma: Vec<Option<&Request<'_>>> = vec![None; containers.len()];
        for request in &template.requests {
            if let Some(slot @ None) = first_rdma.get_mut(request.container)
                && is_rdma_request(request, &index)
            {
                *slot = Some(request);
            }
        }
        for ((container_path, container), rdma) in containers.iter().zip(&first_rdma) {
            let Some(rdma) = rdma else {
                continue;
            };
            let security = container.get("securityContext");
            let privileged = security
                .and_then(|s| s.get("privileged"))
                .and_then(Node::as_bool)
                == Some(true);
            let has_ipc_lock = security
                .and_then(|s| s.get("capabilities"))
                .and_then(|c| c.get("add"))
                .is_some_and(|add| {
                    add.items().iter().any(|cap| {
                        cap.as_str()
                            .is_some_and(|c| c.trim_start_matches("CAP_") == "IPC_LOCK")
                    })
                });
            if !privileged && !has_ipc_lock && !sink.counted_only(template.object.file) {
                let mut path = template.path(container_path);
                path.push(PathStep::Key("name"));
                let name = container.get("name").and_then(Node::as_str).unwrap_or("?");
                sink.report(
                    &template.object,
                    &path,
                    format!("container `{name}` requests rdma resource `{}` without the IPC_LOCK capability", rdma.resource),
                    Remediation::new("add IPC_LOCK to the container's capabilities")
                        .command("securityContext:\n  capabilities:\n    add: [\"IPC_LOCK\"]"),
                );
            }
        }
    }
}

declare_lint! {
    /// Hugepages requests that differ from their limits.
    ///
    /// ## What it checks
    /// `hugepages-<size>` in container `requests` and `limits`: both present
    /// must be equal, and requests need limits.
    ///
    /// ## Why it matters
    /// Hugepages cannot be overcommitted: the API server rejects the pod
    /// ("must be equal to limits" / "hugepages require limits").
    ///
    /// ## How to fix
    /// Set the same quantity in `requests` and `limits`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL061/fail/`:
    ///
    /// ```text
    /// error[ZL061]: `hugepages-1Gi` request 2Gi differs from its limit 4Gi
    ///   --> fail/input.yaml:18:11
    ///    |
    /// 18 |           hugepages-1Gi: 2Gi
    ///    |           ^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: set the same hugepages quantity in requests and limits
    /// ```
    pub(crate) static HUGEPAGES_REQUEST_LIMIT_MISMATCH = {
        id: "ZL061",
        name: "hugepages-request-limit-mismatch",
        severity: Error,
        check: hugepages_request_limit_mismatch,
    };
}

/// Most requests and limits of a container for each request's limit to be
/// looked up by a scan.
const SCANNED_RESOURCES: usize = 16;

fn hugepages_request_limit_mismatch(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for template in pod_templates(workspace) {
        for (container_path, container) in &template.containers {
            let Some(resources) = container.get("resources") else {
                continue;
            };
            let requests = resources
                .get("requests")
                .map(Node::entries)
                .unwrap_or_default();
            let limits = resources.get("limits");
            let limit_entries = limits.map(Node::entries).unwrap_or_default();
            // The limit of each request, the last of a repeated key winning
            // as in `Node::get`: the few of a usual container looked up,
            // many matched in one pass rather than one lookup each.
            let matched = if requests.len() + limit_entries.len() > SCANNED_RESOURCES {
                last_with_same_key(limit_entries, requests)
            } else {
                Vec::new()
            };
            for (index, entry) in requests.iter().enumerate() {
                if !entry.key.starts_with("hugepages-") {
                    continue;
                }
                let limit = match matched.get(index) {
                    Some(matched) => matched.map(|at| &limit_entries[at].value),
                    None => limits.and_then(|limits| limits.get(&entry.key)),
                };
                if limit.is_some_and(|limit| quantity(limit) == quantity(&entry.value))
                    || sink.counted_only(template.object.file)
                {
                    continue;
                }
                let message = match limit {
                    None => format!("`{}` is requested without a limit", entry.key),
                    Some(limit) => format!(
                        "`{}` request {} differs from its limit {}",
                        entry.key,
                        entry.value.scalar_text().unwrap_or_default(),
                        limit.scalar_text().unwrap_or_default()
                    ),
                };
                let mut path = template.path(container_path);
                path.extend([
                    PathStep::Key("resources"),
                    PathStep::Key("requests"),
                    PathStep::Key(&entry.key),
                ]);
                sink.report(
                    &template.object,
                    &path,
                    message,
                    Remediation::new("set the same hugepages quantity in requests and limits"),
                );
            }
        }
    }
}

declare_lint! {
    /// Hugepages requested without a cpu or memory request.
    ///
    /// ## What it checks
    /// Containers with `hugepages-<size>` in `limits` or `requests` but
    /// neither `cpu` nor `memory`.
    ///
    /// ## Why it matters
    /// The API server rejects the pod: "HugePages require cpu or memory".
    ///
    /// ## How to fix
    /// Add `memory` (and `cpu`) to the container's requests and limits.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL062/fail/`:
    ///
    /// ```text
    /// error[ZL062]: `hugepages-2Mi` is requested without a cpu or memory request
    ///   --> fail/input.yaml:12:7
    ///    |
    /// 12 |       resources:
    ///    |       ^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: add memory (and cpu) to the container's requests and limits
    /// ```
    pub(crate) static HUGEPAGES_WITHOUT_CPU_OR_MEMORY = {
        id: "ZL062",
        name: "hugepages-without-cpu-or-memory",
        severity: Error,
        check: hugepages_without_cpu_or_memory,
    };
}

fn hugepages_without_cpu_or_memory(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for template in pod_templates(workspace) {
        for (container_path, container) in &template.containers {
            let Some(resources) = container.get("resources") else {
                continue;
            };
            // An array, not a vector: this runs for every container.
            let maps = [resources.get("limits"), resources.get("requests")];
            let has = |key: &str| maps.iter().flatten().any(|m| m.get(key).is_some());
            let hugepages = maps
                .iter()
                .flatten()
                .flat_map(|m| m.entries())
                .find(|e| e.key.starts_with("hugepages-"));
            if let Some(hugepages) = hugepages
                && !has("cpu")
                && !has("memory")
                && !sink.counted_only(template.object.file)
            {
                let mut path = template.path(container_path);
                path.push(PathStep::Key("resources"));
                sink.report(
                    &template.object,
                    &path,
                    format!(
                        "`{}` is requested without a cpu or memory request",
                        hugepages.key
                    ),
                    Remediation::new("add memory (and cpu) to the container's requests and limits"),
                );
            }
        }
    }
}

fn total(requests: &[Request<'_>], select: impl Fn(&Request<'_>) -> bool) -> i64 {
    requests
        .iter()
        .filter(|r| select(r))
        .map(|r| r.count.unwrap_or(1))
        .sum()
}

declare_lint! {
    /// A pod gets fewer VFs than GPUs.
    ///
    /// ## What it checks
    /// Per pod, the GPUs requested (`nvidia.com/gpu`, MIG devices) against
    /// the SR-IOV VFs requested, when the pod requests both. A pod with a VF
    /// from each NIC the set's SriovNetworkNodePolicies take its VFs from
    /// (each naming its NICs by `pfNames` or `rootDevices`) passes, however
    /// many GPUs it has: a node with two NICs gives at most two rails.
    ///
    /// ## Why it matters
    /// GPUDirect RDMA is fastest when each GPU talks to a NIC under the same
    /// PCIe switch; with fewer VFs than GPUs, several GPUs share one NIC and
    /// traffic crosses the CPU interconnect. NVIDIA recommends one VF per
    /// GPU, on the rail-optimised nodes that have a NIC per GPU; where the
    /// node has fewer NICs, more VFs of the same NIC add nothing (they share
    /// its port and PCIe link), so one VF per NIC is the most to ask.
    ///
    /// ## How to fix
    /// Request one VF (from the rail's network) per GPU, with the topology
    /// manager set to `single-numa-node` or GPU/NIC affinity configured.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL063/fail/`:
    ///
    /// ```text
    /// warning[ZL063]: pod requests 8 gpus but 2 vfs; one vf per gpu is recommended for gpudirect rdma
    ///   --> fail/input.yaml:31:11
    ///    |
    /// 31 |           nvidia.com/gpu: 8
    ///    |           ^^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: request 8 vfs, one per gpu
    /// ```
    pub(crate) static FEWER_VFS_THAN_GPUS = {
        id: "ZL063",
        name: "fewer-vfs-than-gpus",
        severity: Warning,
        check: fewer_vfs_than_gpus,
    };
}

/// The NICs each resource's SR-IOV policies take their VFs from, by
/// resource name: the distinct PFs they name (`pfNames`, a range such as
/// `ens1f0#0-3` counting its PF once, `rootDevices`), or `None` when a
/// policy of the resource selects by vendor or device ID only.
fn nics_by_resource<'a>(workspace: &Workspace<'a>) -> HashMap<&'a str, Option<HashSet<&'a str>>> {
    let mut by_resource: HashMap<&str, Option<HashSet<&str>>> = HashMap::new();
    for policy in workspace.of_kind(SRIOV_GROUP, "SriovNetworkNodePolicy") {
        let Some(name) = policy.str_at(&[PathStep::Key("spec"), PathStep::Key("resourceName")])
        else {
            continue;
        };
        let selector = |key: &'static str| {
            policy
                .get(&[
                    PathStep::Key("spec"),
                    PathStep::Key("nicSelector"),
                    PathStep::Key(key),
                ])
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::as_str)
                .collect::<Vec<&str>>()
        };
        let named: Vec<&str> = selector("pfNames")
            .into_iter()
            .map(|pf| pf.split_once('#').map_or(pf, |(pf, _)| pf))
            .chain(selector("rootDevices"))
            .collect();
        let entry = by_resource
            .entry(name)
            .or_insert_with(|| Some(HashSet::new()));
        match (entry.as_mut(), named.is_empty()) {
            (Some(_), true) => *entry = None,
            (Some(pfs), false) => pfs.extend(named),
            (None, _) => {}
        }
    }
    by_resource
}

/// How many NICs the VFs of `resources` come from, when every policy of
/// each names its NICs; `None` when one does not, or none serves them.
fn nics_behind(nics: &HashMap<&str, Option<HashSet<&str>>>, resources: &[&str]) -> Option<usize> {
    let mut all: HashSet<&str> = HashSet::new();
    for resource in resources {
        let name = resource
            .rsplit_once('/')
            .map_or(*resource, |(_, name)| name);
        all.extend(nics.get(name)?.as_ref()?);
    }
    Some(all.len())
}

fn fewer_vfs_than_gpus(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // Indexing what is advertised is wasted on an input without pods.
    if pod_templates(workspace).is_empty() {
        return;
    }
    let all = advertised(workspace);
    let index = Index::new(all);
    let nics = nics_by_resource(workspace);
    for template in pod_templates(workspace) {
        let requests = &template.requests;
        let gpus = total(requests, |r| resources::is_gpu_resource(r.resource));
        let vfs = total(requests, |r| is_vf_request(r, &index));
        if gpus == 0 || vfs == 0 || vfs >= gpus {
            continue;
        }
        // A VF per NIC is all a node with fewer NICs than GPUs can give:
        // two VFs of one NIC share its port and its PCIe link.
        let vf_resources: Vec<&str> = requests
            .iter()
            .filter(|r| is_vf_request(r, &index))
            .map(|r| r.resource)
            .collect();
        let behind = nics_behind(&nics, &vf_resources);
        if behind.is_some_and(|nics| i64::try_from(nics).is_ok_and(|nics| vfs >= nics)) {
            continue;
        }
        let Some(gpu) = requests
            .iter()
            .find(|r| resources::is_gpu_resource(r.resource))
        else {
            continue;
        };
        sink.report(
            &template.object,
            &gpu.path(template),
            format!("pod requests {gpus} gpus but {vfs} vfs; one vf per gpu is recommended for gpudirect rdma"),
            Remediation::new(format!("request {gpus} vfs, one per gpu")),
        );
    }
}

/// The perftest binaries (linux-rdma/perftest `README`): a pod that runs
/// one tests the RDMA path itself and does not use NCCL.
const PERFTEST_BINARIES: &[&str] = &[
    "ib_write_bw",
    "ib_write_lat",
    "ib_read_bw",
    "ib_read_lat",
    "ib_send_bw",
    "ib_send_lat",
    "ib_atomic_bw",
    "ib_atomic_lat",
    "raw_ethernet_bw",
    "raw_ethernet_lat",
];

/// Whether the container runs a perftest binary.
fn runs_perftest(container: &Node) -> bool {
    command_words(container).any(|word| {
        word.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|token| PERFTEST_BINARIES.contains(&token))
    })
}

/// Whether the container sets any `NCCL_*` variable, in `env` or in its
/// `command`/`args`.
fn sets_any_nccl(container: &Node) -> bool {
    let in_env = container.get("env").is_some_and(|env| {
        env.items().iter().any(|item| {
            item.get("name")
                .and_then(Node::as_str)
                .is_some_and(|n| n.starts_with("NCCL_"))
        })
    });
    in_env
        || command_words(container).any(|word| {
            word.match_indices("NCCL_").any(|(at, _)| {
                let after = &word[at..];
                let name_end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                name_end > "NCCL_".len() && after[name_end..].starts_with('=')
                    || word[..at].trim_end().ends_with("-x")
            })
        })
}

declare_lint! {
    /// A GPU pod with RDMA devices sets no NCCL environment: advice, NCCL finds its devices itself.
    ///
    /// ## What it checks
    /// Pods requesting both GPUs and RDMA or SR-IOV resources whose
    /// containers set no `NCCL_*` variable, in `env` or in their `command`
    /// or `args` (`export NCCL_IB_HCA=…`, `NCCL_IB_HCA=… torchrun`, `mpirun
    /// -x NCCL_IB_HCA`). Pods that run perftest (`ib_write_bw`, …) do not
    /// use NCCL and are left alone.
    ///
    /// ## Why it matters
    /// It is information, not a fault: NCCL takes every RDMA device with an
    /// active InfiniBand or Ethernet port it can open, and `NCCL_IB_HCA`
    /// only narrows that list (NVIDIA/nccl `src/transport/net_ib.cc`,
    /// `ncclIbInit`, at 48bb7fec7953112ff37499a272317f6663f8f600: without
    /// the variable every device matches); in a pod, those are the devices
    /// of its VFs. Setting the variables makes the choice explicit and
    /// `NCCL_DEBUG=INFO` shows it: a pod whose devices are not usable
    /// falls back to TCP sockets silently otherwise.
    ///
    /// ## How to fix
    /// Optionally set `NCCL_IB_HCA` to the pod's RDMA devices (e.g. `mlx5`)
    /// and `NCCL_DEBUG=INFO`, and check the log for `NET/IB`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL064/fail/`:
    ///
    /// ```text
    /// info[ZL064]: pod requests gpus and `rdma/rdma_shared_a` but sets no NCCL_* environment
    ///   --> fail/input.yaml:18:11
    ///    |
    /// 18 |           rdma/rdma_shared_a: 1
    ///    |           ^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: set NCCL_IB_HCA to the pod's rdma devices and verify NET/IB with NCCL_DEBUG=INFO
    ///            env:
    ///              - name: NCCL_IB_HCA
    ///                value: mlx5
    ///              - name: NCCL_DEBUG
    ///                value: INFO
    /// ```
    pub(crate) static RDMA_WITHOUT_NCCL_ENV = {
        id: "ZL064",
        name: "rdma-without-nccl-env",
        severity: Info,
        check: rdma_without_nccl_env,
    };
}

fn rdma_without_nccl_env(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // Indexing what is advertised is wasted on an input without pods.
    if pod_templates(workspace).is_empty() {
        return;
    }
    let all = advertised(workspace);
    let index = Index::new(all);
    for template in pod_templates(workspace) {
        let requests = &template.requests;
        let has_gpu = requests
            .iter()
            .any(|r| resources::is_gpu_resource(r.resource));
        let Some(rdma) = requests
            .iter()
            .find(|r| is_rdma_request(r, &index) || is_vf_request(r, &index))
        else {
            continue;
        };
        if !has_gpu
            || template
                .containers
                .iter()
                .any(|(_, container)| runs_perftest(container))
        {
            continue;
        }
        let sets_nccl = template
            .containers
            .iter()
            .any(|(_, container)| sets_any_nccl(container));
        if !sets_nccl {
            sink.report(
                &template.object,
                &rdma.path(template),
                format!("pod requests gpus and `{}` but sets no NCCL_* environment", rdma.resource),
                Remediation::new("set NCCL_IB_HCA to the pod's rdma devices and verify NET/IB with NCCL_DEBUG=INFO")
                    .command("env:\n  - name: NCCL_IB_HCA\n    value: mlx5\n  - name: NCCL_DEBUG\n    value: INFO"),
            );
        }
    }
}

declare_lint! {
    /// A RoCE GPU pod leaves NCCL's traffic on traffic class 0, off the lossless priority.
    ///
    /// ## What it checks
    /// Pods that request GPUs and a RoCE RDMA device (a resource of a
    /// SriovNetworkNodePolicy with `linkType: eth` and `isRdma`, or a pod
    /// that sets `NCCL_IB_GID_INDEX`, a RoCE setting) and use NCCL (set an
    /// `NCCL_*` variable): `NCCL_IB_TC`, in `env` or exported in `command`
    /// or `args`, must be set to a traffic class on the lossless priority
    /// (priority = DSCP / 8 = traffic class / 32 under the NIC's default
    /// DSCP-to-priority table; the usual lossless class is 106, DSCP 26 on
    /// priority 3). The lossless priority is the one the host scripts of the
    /// same input turn PFC on for (`mlnx_qos --pfc`, `dcb pfc set …
    /// prio-pfc`, in MachineConfig files and units or ConfigMaps); where no
    /// script says, any priority but 0.
    ///
    /// ## Why it matters
    /// NCCL sets a traffic class only when `NCCL_IB_TC` is given
    /// (NVIDIA/nccl `src/transport/net_ib/connect.cc`, `NCCL_PARAM(IbTc,
    /// "IB_TC", -1)`); verbs traffic otherwise leaves with class 0, DSCP 0,
    /// priority 0, where no RoCE QoS configuration enables PFC or DCQCN.
    /// The traffic class the host's QoS tools set on a PF
    /// (`/sys/class/infiniband/<dev>/tc/1/traffic_class`, `cma_roce_tos`)
    /// applies to RDMA-CM connections of that device only, never to the VFs
    /// pods use. Under congestion the packets are dropped instead of paused,
    /// and NCCL bandwidth collapses with retransmissions.
    ///
    /// ## How to fix
    /// Set `NCCL_IB_TC` to the lossless class of the fabric (DSCP × 4 + 2
    /// for ECN: 106 for DSCP 26 on priority 3), and the same with perftest
    /// (`--tclass=106`).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL065/fail/`:
    ///
    /// ```text
    /// warning[ZL065]: container `trainer` requests roce device `nvidia.com/rdma_rail0` but sets no NCCL_IB_TC: nccl traffic leaves on traffic class 0, priority 0, without pfc
    ///   --> fail/input.yaml:26:7
    ///    |
    /// 26 |     - name: trainer
    ///    |       ^^^^
    ///    = object: Pod/ml/trainer
    ///    = help: set NCCL_IB_TC to the fabric's lossless traffic class (170 for dscp 42 on priority 5)
    ///            env:
    ///              - name: NCCL_IB_TC
    ///                value: "170"
    /// ```
    pub(crate) static ROCE_WITHOUT_LOSSLESS_TRAFFIC_CLASS = {
        id: "ZL065",
        name: "roce-without-lossless-traffic-class",
        severity: Warning,
        check: roce_without_lossless_traffic_class,
    };
}

fn roce_without_lossless_traffic_class(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    use zerohop_known::roce::{LOSSLESS_DSCP, priority_of_traffic_class, traffic_class};
    // Indexing what is advertised is wasted on an input without pods.
    if pod_templates(workspace).is_empty() {
        return;
    }
    let (lossless_set, configured_in) = super::machine_config::configured_pfc(workspace);
    let all = advertised(workspace);
    let index = Index::new(all);
    for template in pod_templates(workspace) {
        let requests = &template.requests;
        if !requests
            .iter()
            .any(|r| resources::is_gpu_resource(r.resource))
        {
            continue;
        }
        let roce_request = requests
            .iter()
            .find(|r| index.matching(r.resource).any(|a| a.roce));
        for (index_in_pod, (container_path, container)) in template.containers.iter().enumerate() {
            if !sets_any_nccl(container) || runs_perftest(container) {
                continue;
            }
            let own_roce = roce_request.filter(|r| r.container == index_in_pod);
            let gid_index = value_of(container, "NCCL_IB_GID_INDEX").is_some();
            if own_roce.is_none() && !gid_index {
                continue;
            }
            let tc = value_of(container, "NCCL_IB_TC");
            let tc = tc.as_deref();
            let priority = tc
                .and_then(|v| v.parse::<u8>().ok())
                .map(priority_of_traffic_class);
            let on_lossless = priority.is_some_and(|p| {
                if lossless_set.is_empty() {
                    p != 0
                } else {
                    lossless_set.contains(&p)
                }
            });
            if on_lossless || tc == Some("") || sink.counted_only(template.object.file) {
                continue;
            }
            let why = match own_roce {
                Some(request) => format!("requests roce device `{}`", request.resource),
                None => "sets NCCL_IB_GID_INDEX (roce)".to_owned(),
            };
            let name = container.get("name").and_then(Node::as_str).unwrap_or("?");
            let message = match tc {
                None => format!(
                    "container `{name}` {why} but sets no NCCL_IB_TC: nccl traffic leaves on traffic class 0, priority 0, without pfc"
                ),
                Some(value) => match (priority, configured_in) {
                    (Some(p), Some(config)) => format!(
                        "container `{name}` {why} with NCCL_IB_TC `{value}` (priority {p}), but {} `{}` enables pfc on priority {} only",
                        config.kind,
                        short(config.name),
                        join_some(lossless_set.iter().map(u8::to_string))
                    ),
                    _ => format!(
                        "container `{name}` {why} with NCCL_IB_TC `{value}`, which is not on a lossless priority"
                    ),
                },
            };
            // The class of the configured priority (DSCP 8p + 2, the
            // middle of its DSCP range, as 26 is for 3), else the usual.
            let lossless = match lossless_set.first() {
                Some(&p) if p != priority_of_traffic_class(traffic_class(LOSSLESS_DSCP)) => {
                    traffic_class(p * 8 + 2)
                }
                _ => traffic_class(LOSSLESS_DSCP),
            };
            let mut path = template.path(container_path);
            path.push(PathStep::Key("name"));
            sink.report(
                &template.object,
                &path,
                message,
                Remediation::new(format!(
                    "set NCCL_IB_TC to the fabric's lossless traffic class ({lossless} for dscp {} on priority {})",
                    lossless >> 2,
                    priority_of_traffic_class(lossless)
                ))
                .command(format!("env:\n  - name: NCCL_IB_TC\n    value: \"{lossless}\"")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_annotation_forms_parse() {
        let refs = network_refs("a, other/b@net2");
        assert_eq!(refs.len(), 2);
        assert_eq!(
            (refs[1].namespace.as_deref(), refs[1].name.as_ref()),
            (Some("other"), "b")
        );
        let refs = network_refs(r#"[{"name": "c", "namespace": "x", "interface": "net1"}]"#);
        assert_eq!(
            (refs[0].namespace.as_deref(), refs[0].name.as_ref()),
            (Some("x"), "c")
        );
        assert!(network_refs("[not json").is_empty());
    }
}
