//! Extended resources: who advertises which (device plugins, the SR-IOV
//! Network Operator) and what pods request.

use std::collections::HashMap;

use zerohop_k8s::yaml::{Node, PathStep};

use super::plugin_config;
use crate::model::{Object, PodTemplate, Workspace};
use crate::paths::first_of_each_key;
use crate::sink::short;
use zerohop_known::operators::{
    NETWORK_OPERATOR_GROUP, NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX,
    OPENSHIFT_SRIOV_RESOURCE_PREFIX, SRIOV_GROUP,
};
use zerohop_known::topology::GPU_RESOURCE;

/// What advertises a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advertiser {
    /// A SriovNetworkNodePolicy (prefix set by the operator's deployment).
    SriovOperator,
    /// The SR-IOV network device plugin configured by a NicClusterPolicy,
    /// NicNodePolicy or ConfigMap.
    SriovDevicePlugin,
    /// The RDMA shared device plugin.
    RdmaSharedDevicePlugin,
}

/// One advertised resource.
#[derive(Debug, Clone)]
pub(crate) struct Advertised<'a> {
    /// The object that configures it.
    pub object: Object<'a>,
    /// Where in the object (the resource name, or the JSON config string).
    pub path: &'static [PathStep<'static>],
    /// What advertises it.
    pub by: Advertiser,
    /// The prefix; `None` when the input does not say which the deployment
    /// uses (SR-IOV operator: `openshift.io` upstream and on OpenShift,
    /// `nvidia.com` with the Network Operator).
    pub prefix: Option<String>,
    /// Whether `resourcePrefix` was written (device plugins only).
    pub prefix_written: bool,
    /// The resource name without prefix.
    pub name: String,
    /// The device IDs of a device plugin's `selectors.devices`.
    pub devices: Vec<String>,
    /// Whether the devices are RDMA-capable.
    pub rdma: bool,
    /// Whether the devices are RoCE: a SriovNetworkNodePolicy with
    /// `linkType: eth` and `isRdma`.
    pub roce: bool,
}

impl Advertised<'_> {
    /// `prefix/name`, with `*` for a prefix the deployment decides, each
    /// clipped as messages clip what they quote.
    pub(crate) fn full_name(&self) -> String {
        format!(
            "{}/{}",
            short(self.prefix.as_deref().unwrap_or("*")),
            short(&self.name)
        )
    }

    /// Whether the pod resource `requested` (`prefix/name`) is this one.
    pub(crate) fn matches(&self, requested: &str) -> bool {
        let Some((prefix, name)) = requested.split_once('/') else {
            return false;
        };
        name == self.name && self.prefix.as_deref().is_none_or(|mine| mine == prefix)
    }
}

/// Where a SriovNetworkNodePolicy names its resource.
const POLICY_RESOURCE_PATH: &[PathStep<'static>] =
    &[PathStep::Key("spec"), PathStep::Key("resourceName")];

/// A ConfigMap's data: a key of it is borrowed from the document, and the
/// path keeps only static steps.
const CONFIG_MAP_DATA_PATH: &[PathStep<'static>] = &[PathStep::Key("data")];

/// The device plugin sections of a NicClusterPolicy or NicNodePolicy: the
/// section, what it deploys, the config's list key and the default prefix.
const NCP_SECTIONS: [(&[PathStep<'static>], Advertiser, &str, &str); 2] = [
    (
        &[
            PathStep::Key("spec"),
            PathStep::Key("sriovDevicePlugin"),
            PathStep::Key("config"),
        ],
        Advertiser::SriovDevicePlugin,
        "resourceList",
        "intel.com",
    ),
    (
        &[
            PathStep::Key("spec"),
            PathStep::Key("rdmaSharedDevicePlugin"),
            PathStep::Key("config"),
        ],
        Advertiser::RdmaSharedDevicePlugin,
        "configList",
        "rdma",
    ),
];

/// Every resource advertised by the objects of the workspace, found once
/// per run.
pub(crate) fn advertised<'w, 'a>(workspace: &'w Workspace<'a>) -> &'w [Advertised<'a>] {
    workspace
        .advertised
        .get_or_init(|| find_advertised(workspace))
}

fn find_advertised<'a>(workspace: &Workspace<'a>) -> Vec<Advertised<'a>> {
    let mut out = Vec::new();
    for object in &workspace.objects {
        if object.is(SRIOV_GROUP, "SriovNetworkNodePolicy") {
            if let Some(name) = object.str_at(POLICY_RESOURCE_PATH) {
                let spec = object.get(&[PathStep::Key("spec")]);
                let link_eth = spec
                    .and_then(|s| s.get("linkType"))
                    .and_then(Node::as_str)
                    .is_some_and(|t| t.eq_ignore_ascii_case("eth"));
                let is_rdma = spec
                    .and_then(|s| s.get("isRdma"))
                    .and_then(Node::as_bool)
                    .unwrap_or(false)
                    || spec
                        .and_then(|s| s.get("linkType"))
                        .and_then(Node::as_str)
                        .is_some_and(|t| t.eq_ignore_ascii_case("ib"));
                out.push(Advertised {
                    object: *object,
                    path: POLICY_RESOURCE_PATH,
                    by: Advertiser::SriovOperator,
                    prefix: sriov_operator_prefix(workspace, object.namespace_or_default())
                        .map(str::to_owned),
                    prefix_written: false,
                    name: name.to_owned(),
                    devices: Vec::new(),
                    rdma: is_rdma,
                    roce: is_rdma && link_eth,
                });
            }
        } else if object.is(NETWORK_OPERATOR_GROUP, "NicClusterPolicy")
            || object.is(NETWORK_OPERATOR_GROUP, "NicNodePolicy")
        {
            for (path, by, list_key, default_prefix) in NCP_SECTIONS {
                if let Some(config) = object.str_at(path) {
                    push_plugin_config(
                        &mut out,
                        object,
                        path,
                        config,
                        by,
                        list_key,
                        default_prefix,
                    );
                }
            }
        } else if object.is("", "ConfigMap") {
            let Some(data) = object.get(&[PathStep::Key("data")]) else {
                continue;
            };
            for entry in data.entries() {
                let Some(config) = entry.value.as_str() else {
                    continue;
                };
                for (_, by, list_key, default_prefix) in NCP_SECTIONS {
                    if config.contains(list_key) {
                        push_plugin_config(
                            &mut out,
                            object,
                            CONFIG_MAP_DATA_PATH,
                            config,
                            by,
                            list_key,
                            default_prefix,
                        );
                    }
                }
            }
        }
    }
    out
}

fn push_plugin_config<'a>(
    out: &mut Vec<Advertised<'a>>,
    object: &Object<'a>,
    path: &'static [PathStep<'static>],
    config: &str,
    by: Advertiser,
    list_key: &str,
    default_prefix: &str,
) {
    for resource in plugin_config::resources(config, list_key) {
        out.push(Advertised {
            object: *object,
            path,
            by,
            prefix_written: resource.prefix.is_some(),
            prefix: Some(resource.prefix.unwrap_or_else(|| default_prefix.to_owned())),
            name: resource.name,
            devices: resource.devices,
            rdma: by == Advertiser::RdmaSharedDevicePlugin || resource.is_rdma,
            roce: false,
        });
    }
}

/// The prefix of the resources an SR-IOV Network Operator in `namespace`
/// advertises, when the input says: the `RESOURCE_PREFIX` of its
/// Deployment (`helm template` output; the operator builds every resource
/// name from it, k8snetworkplumbingwg/sriov-network-operator
/// `api/v1/helper.go`), else `openshift.io` in OpenShift's operator
/// namespace (`openshift-sriov-network-operator`, where OperatorHub
/// installs Red Hat's operator with that prefix). `None` elsewhere: the
/// upstream chart says `openshift.io`, the Network Operator's `nvidia.com`.
pub(crate) fn sriov_operator_prefix<'a>(
    workspace: &Workspace<'a>,
    namespace: &str,
) -> Option<&'a str> {
    use zerohop_known::operators::{
        OPENSHIFT_SRIOV_NAMESPACE, OPENSHIFT_SRIOV_RESOURCE_PREFIX, SRIOV_RESOURCE_PREFIX_ENV,
    };
    let deployed = workspace
        .of_kind("apps", "Deployment")
        .filter(|d| d.namespace_or_default() == namespace)
        .filter_map(|d| {
            d.get(&[
                PathStep::Key("spec"),
                PathStep::Key("template"),
                PathStep::Key("spec"),
                PathStep::Key("containers"),
            ])
        })
        .flat_map(Node::items)
        .filter_map(|c| c.get("env"))
        .flat_map(Node::items)
        .find(|var| var.get("name").and_then(Node::as_str) == Some(SRIOV_RESOURCE_PREFIX_ENV))
        .and_then(|var| var.get("value").and_then(Node::as_str));
    deployed.or_else(|| {
        (namespace == OPENSHIFT_SRIOV_NAMESPACE).then_some(OPENSHIFT_SRIOV_RESOURCE_PREFIX)
    })
}

/// Advertised resources by name, for lookups from pod requests.
pub(crate) struct Index<'x, 'a> {
    by_name: HashMap<&'x str, Vec<&'x Advertised<'a>>>,
}

impl<'x, 'a> Index<'x, 'a> {
    /// Indexes `all` by resource name.
    pub(crate) fn new(all: &'x [Advertised<'a>]) -> Index<'x, 'a> {
        let mut by_name: HashMap<&'x str, Vec<&'x Advertised<'a>>> = HashMap::new();
        for advertised in all {
            by_name
                .entry(advertised.name.as_str())
                .or_default()
                .push(advertised);
        }
        Index { by_name }
    }

    /// Whether nothing is advertised.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Everything advertised under the name part of `requested`, whatever
    /// the prefix.
    pub(crate) fn named(&self, requested: &str) -> &[&'x Advertised<'a>] {
        let name = requested
            .split_once('/')
            .map_or(requested, |(_, name)| name);
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// What advertises exactly `requested` (`prefix/name`).
    pub(crate) fn matching<'s>(
        &'s self,
        requested: &'s str,
    ) -> impl Iterator<Item = &'x Advertised<'a>> + 's {
        self.named(requested)
            .iter()
            .copied()
            .filter(move |a| a.matches(requested))
    }
}

/// Resource prefixes that device plugins of this data path use; requests
/// with other prefixes are left alone.
const NETWORK_PREFIXES: [&str; 5] = [
    NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX,
    OPENSHIFT_SRIOV_RESOURCE_PREFIX,
    "intel.com",
    "rdma",
    NETWORK_OPERATOR_GROUP,
];

/// Whether `resource` is a network (SR-IOV or RDMA) device resource rather
/// than a GPU or something unrelated.
pub(crate) fn is_network_resource(resource: &str) -> bool {
    let Some((prefix, name)) = resource.split_once('/') else {
        return false;
    };
    // The GPU Operator's resources share the Network Operator's prefix.
    let gpu = resource == GPU_RESOURCE
        || (prefix == NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX
            && ["mig-", "pgpu", "vgpu"].iter().any(|p| name.starts_with(p)));
    NETWORK_PREFIXES.contains(&prefix) && !gpu
}

/// Whether `resource` is a GPU.
pub(crate) fn is_gpu_resource(resource: &str) -> bool {
    resource == "nvidia.com/gpu" || resource.starts_with("nvidia.com/mig-")
}

/// One extended resource a container asks for.
#[derive(Debug, Clone)]
pub(crate) struct Request<'a> {
    /// `prefix/name`: the key in `limits` or `requests`.
    pub resource: &'a str,
    /// The quantity, when a plain integer.
    pub count: Option<i64>,
    /// Container index in `PodTemplate::containers`.
    pub container: usize,
    /// `limits` or `requests`, where the resource is named (`limits` when
    /// both).
    pub kind: &'static str,
}

impl<'a> Request<'a> {
    /// The path from the object's root to the resource's key (built only to
    /// report: most requests are never reported).
    pub(crate) fn path(&self, template: &PodTemplate<'_>) -> Vec<PathStep<'a>> {
        let container_path = template
            .containers
            .get(self.container)
            .map(|(path, _)| path.as_slice())
            .unwrap_or_default();
        let mut path = template.path(container_path);
        path.extend([
            PathStep::Key("resources"),
            PathStep::Key(self.kind),
            PathStep::Key(self.resource),
        ]);
        path
    }
}

/// Most resources a container names for them to be deduplicated by a scan
/// of those listed so far.
const LISTED_BY_SCAN: usize = 16;

/// Every resource named in the containers' `limits` and `requests` (a
/// resource in both is listed once, from `limits`).
pub(crate) fn requests<'a>(containers: &[(Vec<PathStep<'static>>, &'a Node)]) -> Vec<Request<'a>> {
    let mut out: Vec<Request<'a>> = Vec::new();
    for (index, (_, container)) in containers.iter().enumerate() {
        let resources = container.get("resources");
        let named = |kind| {
            resources
                .and_then(|r| r.get(kind))
                .map(Node::entries)
                .unwrap_or_default()
        };
        let (limits, requests) = (named("limits"), named("requests"));
        let all = || {
            limits
                .iter()
                .map(|entry| ("limits", entry))
                .chain(requests.iter().map(|entry| ("requests", entry)))
        };
        // Whether each resource is named for the first time: the few of a
        // usual container checked against those listed so far, many found
        // in one pass rather than one lookup each.
        let firsts = if limits.len() + requests.len() > LISTED_BY_SCAN {
            let keys: Vec<&str> = all().map(|(_, entry)| entry.key.as_str()).collect();
            first_of_each_key(keys.len(), |at| keys[at])
        } else {
            Vec::new()
        };
        let listed_before = out.len();
        for (at, (kind, entry)) in all().enumerate() {
            let new = match firsts.get(at) {
                Some(&earliest) => earliest == at,
                None => !out[listed_before..].iter().any(|r| r.resource == entry.key),
            };
            if !new {
                continue;
            }
            let count = entry
                .value
                .as_i64()
                .or_else(|| entry.value.as_str().and_then(|s| s.parse().ok()));
            out.push(Request {
                resource: &entry.key,
                count,
                container: index,
                kind,
            });
        }
    }
    out
}
