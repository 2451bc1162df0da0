//! NVIDIA Network Operator: NicClusterPolicy, NicNodePolicy and the device
//! plugins they configure.

use std::collections::HashMap;

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::resource_name;

use super::facts::{self, DOCA_DRIVER_ENV};
use super::resources::{Advertiser, advertised};
use crate::model::{Object, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};
use zerohop_known::operators::{GPU_OPERATOR_GROUP, NETWORK_OPERATOR_GROUP, SRIOV_GROUP};

const GROUP: &str = NETWORK_OPERATOR_GROUP;

fn nic_policies<'w, 'a>(workspace: &'w Workspace<'a>) -> impl Iterator<Item = &'w Object<'a>> {
    workspace
        .objects
        .iter()
        .filter(|o| o.is(GROUP, "NicClusterPolicy") || o.is(GROUP, "NicNodePolicy"))
}

declare_lint! {
    /// A NicClusterPolicy not named `nic-cluster-policy`; the Network Operator ignores it.
    ///
    /// ## What it checks
    /// `metadata.name` of every NicClusterPolicy.
    ///
    /// ## Why it matters
    /// Only the instance named `nic-cluster-policy` is reconciled; any other
    /// gets status `ignore` ("Only instance with name nic-cluster-policy is
    /// supported"), so no DOCA driver or device plugin is deployed.
    ///
    /// ## How to fix
    /// Rename it to `nic-cluster-policy`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL030/fail/`:
    ///
    /// ```text
    /// error[ZL030]: NicClusterPolicy `my-nic-policy` is ignored: only `nic-cluster-policy` is reconciled
    ///  --> fail/input.yaml:4:3
    ///   |
    /// 4 |   name: my-nic-policy
    ///   |   ^^^^
    ///   = object: NicClusterPolicy/my-nic-policy
    ///   = help: rename it to `nic-cluster-policy`
    ///           metadata:
    ///             name: nic-cluster-policy
    /// ```
    pub(crate) static NICCLUSTERPOLICY_NAME_IGNORED = {
        id: "ZL030",
        name: "nicclusterpolicy-name-ignored",
        severity: Error,
        check: nicclusterpolicy_name_ignored,
    };
}

fn nicclusterpolicy_name_ignored(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind(GROUP, "NicClusterPolicy") {
        if object.name != "nic-cluster-policy" {
            sink.report(
                object,
                &[PathStep::Key("metadata"), PathStep::Key("name")],
                format!(
                    "NicClusterPolicy `{}` is ignored: only `nic-cluster-policy` is reconciled",
                    object.name
                ),
                Remediation::new("rename it to `nic-cluster-policy`")
                    .command("metadata:\n  name: nic-cluster-policy"),
            );
        }
    }
}

/// NicClusterPolicy fields removed from the API, with the release and what
/// to do instead.
const REMOVED_FIELDS: &[(&[&str], &str, &str)] = &[
    (
        &["nvPeerDriver"],
        "v23.7.0",
        "remove it; use the GPU Operator's `driver.rdma` (or DMA-BUF) for GPUDirect RDMA",
    ),
    (
        &["psp"],
        "v24.1.0",
        "remove it; pod security policies are gone from Kubernetes",
    ),
    (
        &["secondaryNetwork", "ipamPlugin"],
        "v25.10.0",
        "remove it; deploy nv-ipam (`spec.nvIpam`) or install whereabouts separately",
    ),
];

declare_lint! {
    /// A NicClusterPolicy sets a field removed from the Network Operator API.
    ///
    /// ## What it checks
    /// `spec.nvPeerDriver` (removed in v23.7.0), `spec.psp` (v24.1.0) and
    /// `spec.secondaryNetwork.ipamPlugin` (Whereabouts, v25.10.0).
    ///
    /// ## Why it matters
    /// The API server prunes the field (or rejects the object under strict
    /// validation): the component it configured is not deployed.
    ///
    /// ## How to fix
    /// Remove the field and use its replacement (GPU Operator `driver.rdma`
    /// for peer memory, `spec.nvIpam` for IPAM).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL031/fail/`:
    ///
    /// ```text
    /// error[ZL031]: `spec.nvPeerDriver` was removed from NicClusterPolicy in v23.7.0
    ///  --> fail/input.yaml:6:3
    ///   |
    /// 6 |   nvPeerDriver:
    ///   |   ^^^^^^^^^^^^
    ///   = object: NicClusterPolicy/nic-cluster-policy
    ///   = help: remove it; use the GPU Operator's `driver.rdma` (or DMA-BUF) for GPUDirect RDMA
    /// ```
    pub(crate) static REMOVED_NICCLUSTERPOLICY_FIELD = {
        id: "ZL031",
        name: "removed-nicclusterpolicy-field",
        severity: Error,
        check: removed_nicclusterpolicy_field,
    };
}

fn removed_nicclusterpolicy_field(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind(GROUP, "NicClusterPolicy") {
        for (field, release, fix) in REMOVED_FIELDS {
            let mut path = vec![PathStep::Key("spec")];
            path.extend(field.iter().map(|key| PathStep::Key(key)));
            if object.get(&path).is_some() {
                sink.report(
                    object,
                    &path,
                    format!(
                        "`spec.{}` was removed from NicClusterPolicy in {release}",
                        field.join(".")
                    ),
                    Remediation::new(*fix),
                );
            }
        }
    }
}

/// Every `env` list of a NicClusterPolicy/NicNodePolicy component, with the
/// component name.
fn component_envs<'a>(object: &Object<'a>) -> Vec<(&'a str, &'a Node)> {
    object
        .get(&[PathStep::Key("spec")])
        .map(|spec| {
            spec.entries()
                .iter()
                .filter_map(|entry| entry.value.get("env").map(|env| (entry.key.as_str(), env)))
                .collect()
        })
        .unwrap_or_default()
}

fn env_name(item: &Node) -> Option<&str> {
    item.get("name").and_then(Node::as_str)
}

declare_lint! {
    /// An `ofedDriver` environment variable the DOCA driver does not read.
    ///
    /// ## What it checks
    /// `spec.ofedDriver.env` of NicClusterPolicy and NicNodePolicy, for names
    /// that are near misses of the variables the DOCA driver container reads
    /// (`ENABLE_NFSRDMA`, `UNLOAD_STORAGE_MODULES`,
    /// `RESTORE_DRIVER_ON_POD_TERMINATION`, `CREATE_IFNAMES_UDEV`, ...), such
    /// as `NFSRDMA_ENABLE` from some guides.
    ///
    /// ## Why it matters
    /// The driver ignores unknown variables: with `NFSRDMA_ENABLE` it never
    /// loads `rpcrdma`, so NFS mounts with `proto=rdma` fail or fall back to
    /// TCP.
    ///
    /// ## How to fix
    /// Use the exact name the driver reads, e.g. `ENABLE_NFSRDMA: "true"`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL032/fail/`:
    ///
    /// ```text
    /// error[ZL032]: the doca driver does not read `NFSRDMA_ENABLE`; it reads `ENABLE_NFSRDMA`
    ///   --> fail/input.yaml:11:9
    ///    |
    /// 11 |       - name: NFSRDMA_ENABLE
    ///    |         ^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: rename the variable to `ENABLE_NFSRDMA`
    ///            - name: ENABLE_NFSRDMA
    ///              value: "true"
    ///    = see: https://docs.nvidia.com/networking/display/kubernetes/latest/advanced/doca-drivers.html
    /// ```
    pub(crate) static UNKNOWN_DOCA_DRIVER_ENV = {
        id: "ZL032",
        name: "unknown-doca-driver-env",
        severity: Error,
        check: unknown_doca_driver_env,
    };
}

fn unknown_doca_driver_env(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in nic_policies(workspace) {
        for (component, env) in component_envs(object) {
            if component != "ofedDriver" {
                continue;
            }
            for (index, item) in env.items().iter().enumerate() {
                let Some(name) = env_name(item) else {
                    continue;
                };
                if let Some(meant) = facts::doca_env_near_miss(name) {
                    sink.report(
                        object,
                        &[
                            PathStep::Key("spec"),
                            PathStep::Key("ofedDriver"),
                            PathStep::Key("env"),
                            PathStep::Index(index),
                            PathStep::Key("name"),
                        ],
                        format!("the doca driver does not read `{name}`; it reads `{meant}`"),
                        Remediation::new(format!("rename the variable to `{meant}`"))
                            .command(format!("- name: {meant}\n  value: \"true\""))
                            .doc("https://docs.nvidia.com/networking/display/kubernetes/latest/advanced/doca-drivers.html"),
                    );
                }
            }
        }
    }
}

/// The value of the DOCA driver variable `name` in an `env` list, as text,
/// with the item's index.
fn env_value(env: &Node, name: &str) -> Option<(usize, String)> {
    env.items()
        .iter()
        .enumerate()
        .rev()
        .find(|(_, item)| env_name(item) == Some(name))
        .map(|(index, item)| {
            let value = item
                .get("value")
                .and_then(Node::scalar_text)
                .unwrap_or_default();
            (index, value)
        })
}

declare_lint! {
    /// The DOCA driver loads NFS over RDMA without leave to unload storage modules on its next start.
    ///
    /// ## What it checks
    /// `spec.ofedDriver.env` of NicClusterPolicy and NicNodePolicy: with
    /// `ENABLE_NFSRDMA` set to `true`, `UNLOAD_STORAGE_MODULES` must be
    /// `true` as well.
    ///
    /// ## Why it matters
    /// At start the driver container counts the loaded storage modules
    /// (`rpcrdma`, `xprtrdma`, `nvme_rdma`, ...) and, unless
    /// `UNLOAD_STORAGE_MODULES` is `true`, stops without loading its
    /// driver: "Storage modules are loaded for current driver, terminating
    /// prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to
    /// \"true\"" (Mellanox/doca-driver-build `entrypoint.sh`; default
    /// `false`, `README.md`). With `ENABLE_NFSRDMA` the node mounts over
    /// RDMA, so `rpcrdma` is loaded whenever the container starts again
    /// (an upgrade, a restarted pod), and an inbox `rpcrdma` loaded by an
    /// early mount stops the very first start: the node keeps the inbox
    /// driver.
    ///
    /// ## How to fix
    /// Add `UNLOAD_STORAGE_MODULES: "true"` next to `ENABLE_NFSRDMA`, and
    /// mount NFS over RDMA only once the driver is ready (ZL075).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL038/fail/`:
    ///
    /// ```text
    /// error[ZL038]: `ENABLE_NFSRDMA` without `UNLOAD_STORAGE_MODULES`: the driver container stops at its next start, finding rpcrdma loaded
    ///   --> fail/nicclusterpolicy.yaml:11:9
    ///    |
    /// 11 |       - name: ENABLE_NFSRDMA
    ///    |         ^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: let the driver unload the storage modules
    ///            - name: UNLOAD_STORAGE_MODULES
    ///              value: "true"
    /// ```
    pub(crate) static NFSRDMA_WITHOUT_UNLOAD_STORAGE_MODULES = {
        id: "ZL038",
        name: "nfsrdma-without-unload-storage-modules",
        severity: Error,
        check: nfsrdma_without_unload_storage_modules,
    };
}

fn nfsrdma_without_unload_storage_modules(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let is_true = |value: &str| value.trim().eq_ignore_ascii_case("true");
    for object in nic_policies(workspace) {
        let path = [
            PathStep::Key("spec"),
            PathStep::Key("ofedDriver"),
            PathStep::Key("env"),
        ];
        let Some(env) = object.get(&path) else {
            continue;
        };
        let Some((index, _)) = env_value(env, "ENABLE_NFSRDMA").filter(|(_, v)| is_true(v)) else {
            continue;
        };
        let unload = env_value(env, "UNLOAD_STORAGE_MODULES");
        if unload.as_ref().is_some_and(|(_, v)| is_true(v)) {
            continue;
        }
        let (at, message) = match unload {
            Some((at, value)) => (
                at,
                format!("`ENABLE_NFSRDMA` with `UNLOAD_STORAGE_MODULES` `{}`: the driver container stops at its next start, finding rpcrdma loaded", short(&value)),
            ),
            None => (
                index,
                "`ENABLE_NFSRDMA` without `UNLOAD_STORAGE_MODULES`: the driver container stops at its next start, finding rpcrdma loaded".to_owned(),
            ),
        };
        let mut at_path = path.to_vec();
        at_path.extend([PathStep::Index(at), PathStep::Key("name")]);
        sink.report(
            object,
            &at_path,
            message,
            Remediation::new("let the driver unload the storage modules")
                .command("- name: UNLOAD_STORAGE_MODULES\n  value: \"true\""),
        );
    }
}

declare_lint! {
    /// A DOCA driver environment variable set on a component that does not read it.
    ///
    /// ## What it checks
    /// `ENABLE_NFSRDMA`, `UNLOAD_STORAGE_MODULES` and the other DOCA driver
    /// variables in the `env` of any NicClusterPolicy/NicNodePolicy component
    /// other than `ofedDriver`, in the GPU Operator's ClusterPolicy
    /// `driver.env`, or in pods.
    ///
    /// ## Why it matters
    /// Only the DOCA driver container reads them; anywhere else they do
    /// nothing, so for example `rpcrdma` is never loaded and NFS over RDMA
    /// does not work.
    ///
    /// ## How to fix
    /// Move the variable to `spec.ofedDriver.env` of the NicClusterPolicy.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL033/fail/`:
    ///
    /// ```text
    /// error[ZL033]: `ENABLE_NFSRDMA` is read by the doca driver (`ofedDriver`), not by `rdmaSharedDevicePlugin`
    ///   --> fail/input.yaml:13:9
    ///    |
    /// 13 |       - name: ENABLE_NFSRDMA
    ///    |         ^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: move `ENABLE_NFSRDMA` to `spec.ofedDriver.env` of the NicClusterPolicy
    /// ```
    pub(crate) static DOCA_ENV_ON_WRONG_COMPONENT = {
        id: "ZL033",
        name: "doca-env-on-wrong-component",
        severity: Error,
        check: doca_env_on_wrong_component,
    };
}

fn doca_env_on_wrong_component(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let fix = |name: &str| {
        Remediation::new(format!(
            "move `{name}` to `spec.ofedDriver.env` of the NicClusterPolicy"
        ))
    };
    // Only names about NFS-RDMA are taken as near misses here: other
    // variables of other components may resemble the driver's by chance.
    let is_doca = |name: &str| {
        DOCA_DRIVER_ENV.contains(&name)
            || (name.contains("NFSRDMA") && facts::doca_env_near_miss(name).is_some())
    };
    for object in nic_policies(workspace) {
        for (component, env) in component_envs(object) {
            if component == "ofedDriver" {
                continue;
            }
            for (index, item) in env.items().iter().enumerate() {
                if let Some(name) = env_name(item).filter(|name| is_doca(name)) {
                    sink.report(
                        object,
                        &[PathStep::Key("spec"), PathStep::Key(component), PathStep::Key("env"), PathStep::Index(index), PathStep::Key("name")],
                        format!("`{name}` is read by the doca driver (`ofedDriver`), not by `{component}`"),
                        fix(name),
                    );
                }
            }
        }
    }
    for object in workspace.of_kind(GPU_OPERATOR_GROUP, "ClusterPolicy") {
        let Some(env) = object.get(&[
            PathStep::Key("spec"),
            PathStep::Key("driver"),
            PathStep::Key("env"),
        ]) else {
            continue;
        };
        for (index, item) in env.items().iter().enumerate() {
            if let Some(name) = env_name(item).filter(|name| is_doca(name)) {
                sink.report(
                    object,
                    &[PathStep::Key("spec"), PathStep::Key("driver"), PathStep::Key("env"), PathStep::Index(index), PathStep::Key("name")],
                    format!("`{name}` is read by the network operator's doca driver, not by the gpu driver"),
                    fix(name),
                );
            }
        }
    }
    for template in pod_templates(workspace) {
        for (container_path, container) in &template.containers {
            for (index, item) in container
                .get("env")
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Some(name) = env_name(item).filter(|name| is_doca(name)) {
                    let mut path = template.path(container_path);
                    path.extend([
                        PathStep::Key("env"),
                        PathStep::Index(index),
                        PathStep::Key("name"),
                    ]);
                    sink.report(
                        &template.object,
                        &path,
                        format!("`{name}` in a workload does nothing; only the doca driver container reads it"),
                        fix(name),
                    );
                }
            }
        }
    }
}

declare_lint! {
    /// An SR-IOV device plugin resource without `resourcePrefix`, advertised as `intel.com/...`.
    ///
    /// ## What it checks
    /// Each resource in the `sriovDevicePlugin.config` of a NicClusterPolicy
    /// or NicNodePolicy.
    ///
    /// ## Why it matters
    /// The Network Operator starts the SR-IOV device plugin without
    /// `--resource-prefix`, so its default `intel.com` applies: pods asking
    /// for `nvidia.com/<name>` stay Pending with "Insufficient".
    ///
    /// ## How to fix
    /// Add `"resourcePrefix": "nvidia.com"` to the resource (as NVIDIA's
    /// examples do), and request `nvidia.com/<name>`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL034/fail/`:
    ///
    /// ```text
    /// warning[ZL034]: sriov device plugin resource `sriov_rdma` has no resourcePrefix and is advertised as `intel.com/sriov_rdma`
    ///   --> fail/input.yaml:10:5
    ///    |
    /// 10 |     config: |
    ///    |     ^^^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: add "resourcePrefix": "nvidia.com" to the resource and request nvidia.com/<name> in pods
    /// ```
    pub(crate) static SRIOV_DP_RESOURCE_WITHOUT_PREFIX = {
        id: "ZL034",
        name: "sriov-dp-resource-without-prefix",
        severity: Warning,
        check: sriov_dp_resource_without_prefix,
    };
}

fn sriov_dp_resource_without_prefix(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for resource in advertised(workspace) {
        let in_policy = resource.object.group() == GROUP;
        if resource.by == Advertiser::SriovDevicePlugin
            && in_policy
            && !resource.prefix_written
            && !sink.counted_only(resource.object.file)
        {
            sink.report(
                &resource.object,
                resource.path,
                format!("sriov device plugin resource `{}` has no resourcePrefix and is advertised as `intel.com/{}`", resource.name, resource.name),
                Remediation::new("add \"resourcePrefix\": \"nvidia.com\" to the resource and request nvidia.com/<name> in pods"),
            );
        }
    }
}

declare_lint! {
    /// A resource name that a component of the chain rejects.
    ///
    /// ## What it checks
    /// Resource names against each consumer's syntax: the RDMA shared device
    /// plugin accepts only letters, digits and `_`; the Network Operator
    /// webhook rejects `-` for the SR-IOV device plugin; the SR-IOV device
    /// plugin rejects `.`; the SR-IOV Network Operator webhook rejects `.`
    /// for SriovNetworkNodePolicy (and its Network Operator fork also `-`);
    /// HostDeviceNetwork must start and end with a letter or digit.
    ///
    /// ## Why it matters
    /// One validator accepts what the next rejects: the object is admitted,
    /// then the device plugin exits or advertises nothing.
    ///
    /// ## How to fix
    /// Use only letters, digits and `_`, starting and ending with a letter or
    /// digit (`rdma_shared_device_a`), which every component accepts.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL035/fail/`:
    ///
    /// ```text
    /// error[ZL035]: resource name `rdma-shared-a` is rejected: the rdma shared device plugin accepts only letters, digits and `_`
    ///   --> fail/input.yaml:10:5
    ///    |
    /// 10 |     config: |
    ///    |     ^^^^^^
    ///    = object: NicClusterPolicy/nic-cluster-policy
    ///    = help: rename it to `rdma_shared_a`
    /// ```
    pub(crate) static INVALID_RESOURCE_NAME = {
        id: "ZL035",
        name: "invalid-resource-name",
        severity: Error,
        check: invalid_resource_name,
    };
}

fn invalid_resource_name(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for resource in advertised(workspace) {
        let (allowed, who): (&[char], &str) = match resource.by {
            Advertiser::RdmaSharedDevicePlugin => (
                resource_name::RDMA_SHARED_DEVICE_PLUGIN,
                "the rdma shared device plugin accepts only letters, digits and `_`",
            ),
            Advertiser::SriovDevicePlugin => (
                resource_name::SRIOV_DEVICE_PLUGIN,
                "the network operator webhook rejects `-` and the sriov device plugin rejects `.`",
            ),
            Advertiser::SriovOperator => (
                resource_name::SRIOV_OPERATOR,
                "the sriov network operator webhook accepts only letters, digits, `_` and `-`",
            ),
        };
        if !resource_name::matches(&resource.name, allowed)
            && !sink.counted_only(resource.object.file)
        {
            sink.report(
                &resource.object,
                resource.path,
                format!("resource name `{}` is rejected: {who}", resource.name),
                Remediation::new(format!("rename it to `{}`", suggested_name(&resource.name))),
            );
        }
    }
    for object in workspace.of_kind(GROUP, "HostDeviceNetwork") {
        let path = [PathStep::Key("spec"), PathStep::Key("resourceName")];
        if let Some(name) = object.str_at(&path) {
            let bare = name.rsplit('/').next().unwrap_or(name);
            if !resource_name::matches(bare, resource_name::HOST_DEVICE_NETWORK) {
                sink.report(
                    object,
                    &path,
                    format!("resource name `{name}` is rejected by the network operator webhook"),
                    Remediation::new(format!("rename it to `{}`", suggested_name(bare))),
                );
            }
        }
    }
}

fn suggested_name(name: &str) -> String {
    let replaced: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    replaced.trim_matches('_').to_owned()
}

declare_lint! {
    /// The RDMA shared device plugin with the RDMA subsystem in exclusive mode.
    ///
    /// ## What it checks
    /// A NicClusterPolicy/NicNodePolicy `rdmaSharedDevicePlugin` (or its
    /// ConfigMap) together with a SriovNetworkPoolConfig `rdmaMode:
    /// exclusive`.
    ///
    /// ## Why it matters
    /// The RDMA shared device plugin refuses to run when the RDMA netns mode
    /// is exclusive, and one cluster cannot mix modes: its resources are
    /// never advertised.
    ///
    /// ## How to fix
    /// Use `rdmaMode: shared`, or use SR-IOV VFs (exclusive mode) without the
    /// shared device plugin.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL036/fail/`:
    ///
    /// ```text
    /// error[ZL036]: rdmaMode exclusive conflicts with the rdma shared device plugin configured in NicClusterPolicy `nic-cluster-policy`
    ///   --> fail/input.yaml:19:3
    ///    |
    /// 19 |   rdmaMode: exclusive
    ///    |   ^^^^^^^^
    ///    = object: SriovNetworkPoolConfig/sriov-network-operator/pool
    ///    = help: set `rdmaMode: shared`, or drop the rdma shared device plugin
    /// ```
    pub(crate) static RDMA_SHARED_PLUGIN_WITH_EXCLUSIVE_MODE = {
        id: "ZL036",
        name: "rdma-shared-plugin-with-exclusive-mode",
        severity: Error,
        check: rdma_shared_plugin_with_exclusive_mode,
    };
}

fn rdma_shared_plugin_with_exclusive_mode(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let shared = advertised(workspace)
        .iter()
        .find(|resource| resource.by == Advertiser::RdmaSharedDevicePlugin);
    let Some(shared) = shared else {
        return;
    };
    for object in workspace.of_kind(SRIOV_GROUP, "SriovNetworkPoolConfig") {
        let path = [PathStep::Key("spec"), PathStep::Key("rdmaMode")];
        if object.str_at(&path) == Some("exclusive") {
            sink.report(
                object,
                &path,
                format!(
                    "rdmaMode exclusive conflicts with the rdma shared device plugin configured in {} `{}`",
                    short(shared.object.kind),
                    short(shared.object.name)
                ),
                Remediation::new("set `rdmaMode: shared`, or drop the rdma shared device plugin"),
            );
        }
    }
}

declare_lint! {
    /// The same resource is advertised by two device plugins.
    ///
    /// ## What it checks
    /// Resource names configured both in a NicClusterPolicy/NicNodePolicy
    /// `sriovDevicePlugin` and in a SriovNetworkNodePolicy (whose device
    /// plugin the SR-IOV Network Operator deploys), or twice in device
    /// plugin configs with the same prefix.
    ///
    /// ## Why it matters
    /// Two device plugins register the same resource on the node; the
    /// kubelet keeps whichever registered last, so the VF count flips and
    /// pods get devices from the wrong pool.
    ///
    /// ## How to fix
    /// Configure each resource in one place: either the SR-IOV Network
    /// Operator or the NicClusterPolicy device plugin.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL037/fail/`:
    ///
    /// ```text
    /// error[ZL037]: resource `rdma_vfs` is also advertised by NicClusterPolicy `nic-cluster-policy` (fail/input.yaml:1)
    ///   --> fail/input.yaml:19:3
    ///    |
    /// 19 |   resourceName: rdma_vfs
    ///    |   ^^^^^^^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: configure the resource in one place only
    /// ```
    pub(crate) static RESOURCE_ADVERTISED_TWICE = {
        id: "ZL037",
        name: "resource-advertised-twice",
        severity: Error,
        check: resource_advertised_twice,
    };
}

fn resource_advertised_twice(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let all = advertised(workspace);
    // Per resource name, the first advertiser of each kind that can clash:
    // the SR-IOV operator (any policy), a device plugin (any prefix), and a
    // device plugin per prefix. One pass instead of a scan of the earlier
    // ones per resource.
    #[derive(Default)]
    struct First<'x> {
        operator: Option<usize>,
        plugin: Option<usize>,
        plugin_by_prefix: HashMap<Option<&'x str>, usize>,
    }
    let mut firsts: HashMap<&str, First<'_>> = HashMap::new();
    for (index, later) in all.iter().enumerate() {
        let first = firsts.entry(later.name.as_str()).or_default();
        // Two SR-IOV policies may share a resource (one per node group);
        // two device plugin entries clash only with the same prefix.
        let earlier = match later.by {
            Advertiser::RdmaSharedDevicePlugin => continue,
            Advertiser::SriovOperator => {
                first.operator.get_or_insert(index);
                first.plugin
            }
            Advertiser::SriovDevicePlugin => {
                let same_prefix = *first
                    .plugin_by_prefix
                    .entry(later.prefix.as_deref())
                    .or_insert(index);
                first.plugin.get_or_insert(index);
                [
                    first.operator,
                    (same_prefix != index).then_some(same_prefix),
                ]
                .into_iter()
                .flatten()
                .min()
            }
        };
        // A copy of the same object replaces it rather than adding to it.
        let earlier = earlier
            .filter(|&earlier| earlier < index)
            .map(|i| &all[i])
            .filter(|earlier| !earlier.object.is_same_object(&later.object));
        if let Some(earlier) = earlier
            && !sink.counted_only(later.object.file)
        {
            sink.report(
                &later.object,
                later.path,
                format!(
                    "resource `{}` is also advertised by {} `{}` ({}:{})",
                    short(&later.name),
                    short(earlier.object.kind),
                    short(earlier.object.name),
                    short(earlier.object.file),
                    earlier.object.node.span.start.line
                ),
                Remediation::new("configure the resource in one place only"),
            );
        }
    }
}
